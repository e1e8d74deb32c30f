/*
 * The egress proxy of a `local.network: proxy` sandbox (proxy.h). One
 * listener thread per sandbox accepts on a unix socket in the sandbox's
 * directory; each connection gets a small thread that reads one request
 * head (capped), decides it on the live policy and either refuses it
 * (400, 403, 502) or connects upstream and relays (common/relay.c). It
 * serves one request per connection (`Connection: close` both ways), so
 * every request and every CONNECT is decided alone.
 *
 * The policy: a host may be reached when a seed entry covers it (the
 * core's baseline, already filtered by policy.deny except for the
 * control plane, which the core keeps open on purpose), or when a live
 * grant covers it and no policy.deny pattern does. Coverage is
 * common/policy_patterns.c's, compiled into this module. Names
 * only: an IP literal is refused whatever the policy says, and so is a
 * port other than 443 for CONNECT and 80 for absolute-URI requests.
 *
 * Called by local.c only; the registry lets the granter instance find
 * the proxies the provider instance of the same process started.
 */
#include "config.h"

#include "proxy.h"
#include "httphead.h"

#include "common/relay.h"
#include "common/policy_patterns.h"

#include <sbxloop/events.h>
#include <sbxloop/sandbox.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A request head larger than this is refused (431). */
#define HEAD_MAX 16384
/* Seconds a client may take to send its head, and to connect upstream */
#define HEAD_TIMEOUT_S 30
#define CONNECT_TIMEOUT_MS 10000
/* Domains kept in the record; later ones are counted under "(other)" */
#define RECORD_MAX 512
/* Blocked attempts kept for the next flush; later ones only counted */
#define PENDING_MAX 256
#define HOST_MAX LP_HOST_MAX
#define CONN_STACK (256 * 1024)
/* Connections served at once per sandbox; more wait in the backlog. */
#define CONN_MAX 256

struct plist {
	char **v;
	size_t n, cap;
};

struct record {
	char domain[HOST_MAX];
	unsigned long long allowed, blocked;
	unsigned long long allowed_told; /* allowed already reported */
	double first, last;
};

/* Allowed connections to one domain since the last flush. */
struct used {
	char domain[HOST_MAX];
	unsigned long long count;
	double last;
};

struct blocked {
	char domain[HOST_MAX];
	char method[16];
	char reason[96];
	unsigned port;
	double ts;
};

struct conn {
	struct lproxy *p;
	int fd;              /* the client (the bridge in the sandbox) */
	int upstream;        /* -1 until connected */
	char host[HOST_MAX]; /* what it was allowed to; "" once cut */
	pthread_t thread;
	int finished; /* the thread returned: join and free */
	struct conn *next;
};

struct lproxy {
	const struct sbxloop_host *host;
	char *state_dir, *sandbox, *sock_path, *dir;
	int listen_fd;
	int wake[2];
	pthread_t listener;
	int have_listener;

	pthread_mutex_t lock; /* everything below */
	int stopping;
	struct plist seed, grants, deny;
	struct conn *conns;
	size_t n_conns;
	struct record records[RECORD_MAX];
	size_t n_records;
	struct record other;
	struct blocked pending[PENDING_MAX];
	size_t n_pending;
	unsigned long long unreported;
	int record_dirty;

	struct lproxy *next; /* in the registry */
};

/* ---- the registry: proxies of this process ---------------------------- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lproxy *registry;

static struct lproxy *registry_find(const char *state_dir, const char *sandbox)
{
	struct lproxy *p;

	for (p = registry; p; p = p->next)
		if (strcmp(p->state_dir, state_dir) == 0 &&
		    strcmp(p->sandbox, sandbox) == 0)
			return p;
	return NULL;
}

/* ---- policy ---------------------------------------------------------- */

static int plist_add(struct plist *l, const char *s)
{
	char *copy;

	if (l->n + 2 > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return SBXLOOP_ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	copy = strdup(s);
	if (!copy)
		return SBXLOOP_ENOMEM;
	l->v[l->n++] = copy;
	l->v[l->n] = NULL;
	return 0;
}

static void plist_remove(struct plist *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (strcasecmp(l->v[i], s) != 0)
			continue;
		free(l->v[i]);
		memmove(&l->v[i], &l->v[i + 1], (l->n - i) * sizeof(*l->v));
		l->n--;
		return;
	}
}

static void plist_free(struct plist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int plist_covers(const struct plist *l, const char *host)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (sl_pattern_covers(l->v[i], host))
			return 1;
	return 0;
}

/* Under p->lock. */
static int allows_locked(const struct lproxy *p, const char *host)
{
	if (plist_covers(&p->seed, host))
		return 1;
	return plist_covers(&p->grants, host) && !plist_covers(&p->deny, host);
}

/* ---- the record -------------------------------------------------------- */

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Count one attempt on `domain`; a blocked one is queued for the flush. */
static void note(struct lproxy *p, const char *domain, int allowed,
		 const char *method, unsigned port, const char *reason)
{
	struct record *r = NULL;
	double ts = wall_now();
	size_t i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->n_records; i++)
		if (strcmp(p->records[i].domain, domain) == 0) {
			r = &p->records[i];
			break;
		}
	if (!r && p->n_records < RECORD_MAX) {
		r = &p->records[p->n_records++];
		snprintf(r->domain, sizeof(r->domain), "%s", domain);
		r->first = ts;
	}
	if (!r) {
		r = &p->other;
		if (!r->first)
			r->first = ts;
	}
	if (allowed)
		r->allowed++;
	else
		r->blocked++;
	r->last = ts;
	p->record_dirty = 1;
	if (!allowed && p->n_pending < PENDING_MAX) {
		struct blocked *b = &p->pending[p->n_pending++];

		snprintf(b->domain, sizeof(b->domain), "%s", domain);
		snprintf(b->method, sizeof(b->method), "%s", method);
		snprintf(b->reason, sizeof(b->reason), "%s", reason);
		b->port = port;
		b->ts = ts;
	} else if (!allowed) {
		p->unreported++;
	}
	pthread_mutex_unlock(&p->lock);
}

/* `s` as a JSON string body: the names here are checked, but be safe */
static void json_text(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

static void write_record(struct lproxy *p, const struct record *recs, size_t n,
			 const struct record *other)
{
	char path[SBXLOOP_PATH_MAX + 64], tmp[SBXLOOP_PATH_MAX + 80];
	FILE *f;
	size_t i;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", p->dir, LPROXY_RECORD);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	fputs("# domain\tallowed\tblocked\tfirst_ts\tlast_ts\n", f);
	for (i = 0; i <= n; i++) {
		const struct record *r = i < n ? &recs[i] : other;

		if (i == n && !r->allowed && !r->blocked)
			break;
		fprintf(f, "%s\t%llu\t%llu\t%.3f\t%.3f\n",
			i < n ? r->domain : "(other)", r->allowed, r->blocked,
			r->first, r->last);
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		unlink(tmp);
}

/* policy.connect per domain allowed since the last flush (the caller's
 * thread); the catch-all record's domains are unnamed, so not told. */
static void report_used(struct lproxy *p, const struct used *u, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char dom[HOST_MAX * 6], sbx[SBXLOOP_NAME_MAX * 6];
		char data[2 * (HOST_MAX * 6 + SBXLOOP_NAME_MAX * 6) + 256];

		json_text(dom, sizeof(dom), u[i].domain);
		json_text(sbx, sizeof(sbx), p->sandbox);
		snprintf(data, sizeof(data),
			 "{\"domain\":\"%s\",\"sandbox\":\"%s\","
			 "\"count\":%llu,\"last_ts\":%.3f}",
			 dom, sbx, u[i].count, u[i].last);
		p->host->emit(p->host, SBXLOOP_EV_POLICY_CONNECT, NULL, data);
	}
}

void lproxy_flush(struct lproxy *p)
{
	struct blocked *pending = NULL;
	struct record *recs = NULL, other;
	struct used *used = NULL;
	unsigned long long unreported;
	size_t n = 0, n_recs = 0, n_used = 0, i;
	int dirty;

	pthread_mutex_lock(&p->lock);
	used = malloc((p->n_records + 1) * sizeof(*used));
	for (i = 0; used && i < p->n_records; i++) {
		struct record *r = &p->records[i];

		if (r->allowed == r->allowed_told)
			continue;
		snprintf(used[n_used].domain, sizeof(used[n_used].domain),
			 "%s", r->domain);
		used[n_used].count = r->allowed - r->allowed_told;
		used[n_used].last = r->last;
		r->allowed_told = r->allowed;
		n_used++;
	}
	dirty = p->record_dirty;
	p->record_dirty = 0;
	if (p->n_pending) {
		pending = malloc(p->n_pending * sizeof(*pending));
		if (pending) {
			n = p->n_pending;
			memcpy(pending, p->pending, n * sizeof(*pending));
		}
		p->n_pending = 0;
	}
	unreported = p->unreported;
	p->unreported = 0;
	if (dirty) {
		recs = malloc((p->n_records + 1) * sizeof(*recs));
		if (recs) {
			n_recs = p->n_records;
			memcpy(recs, p->records, n_recs * sizeof(*recs));
		}
		other = p->other;
	}
	pthread_mutex_unlock(&p->lock);

	for (i = 0; i < n; i++) {
		const struct blocked *b = &pending[i];
		char dom[HOST_MAX * 6], sbx[SBXLOOP_NAME_MAX * 6];
		char data[2 * (HOST_MAX * 6 + SBXLOOP_NAME_MAX * 6) + 1024];

		json_text(dom, sizeof(dom), b->domain);
		json_text(sbx, sizeof(sbx), p->sandbox);
		snprintf(data, sizeof(data),
			 "{\"domain\":\"%s\",\"sandbox\":\"%s\","
			 "\"method\":\"%s\",\"port\":%u,\"reason\":\"%s\","
			 "\"attempt_ts\":%.3f,\"unreported\":%llu,"
			 "\"message\":\"egress to '%s' blocked in sandbox "
			 "'%s': %s\"}",
			 dom, sbx, b->method, b->port, b->reason, b->ts,
			 i + 1 == n ? unreported : 0ULL, dom, sbx, b->reason);
		p->host->emit(p->host, SBXLOOP_EV_POLICY_BLOCKED, NULL, data);
	}
	if (!n && unreported)
		p->host->log(p->host, SBXLOOP_LOG_WARN,
			     "local: %llu more blocked egress attempts in "
			     "sandbox '%s' (see its %s)",
			     unreported, p->sandbox, LPROXY_RECORD);
	if (dirty && recs)
		write_record(p, recs, n_recs, &other);
	report_used(p, used, n_used);
	free(used);
	free(pending);
	free(recs);
}

/* ---- upstream ---------------------------------------------------------- */

/*
 * The resolver override of LPROXY_RESOLVE_ENV for host:port, into *ss:
 * 1 found, 0 not listed, -1 listed but unusable.
 */
static int resolve_override(const char *host, unsigned port,
			    struct sockaddr_in *sa)
{
	const char *spec = getenv(LPROXY_RESOLVE_ENV);
	char entry[512];

	while (spec && *spec) {
		size_t n = strcspn(spec, ",");
		char *eq, *colon, *name_port;
		unsigned want = 0, to_port;

		snprintf(entry, sizeof(entry), "%.*s",
			 (int)(n < sizeof(entry) - 1 ? n : sizeof(entry) - 1),
			 spec);
		spec += n + (spec[n] == ',');
		eq = strchr(entry, '=');
		if (!eq)
			continue;
		*eq = '\0';
		name_port = strchr(entry, ':');
		if (name_port) {
			*name_port = '\0';
			if (lp_take_port(name_port + 1, strlen(name_port + 1),
					 &want) < 0)
				continue;
		}
		if (strcasecmp(entry, host) != 0 || (want && want != port))
			continue;
		colon = strrchr(eq + 1, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		if (lp_take_port(colon + 1, strlen(colon + 1), &to_port) < 0)
			return -1;
		memset(sa, 0, sizeof(*sa));
		sa->sin_family = AF_INET;
		sa->sin_port = htons((uint16_t)to_port);
		return inet_pton(AF_INET, eq + 1, &sa->sin_addr) == 1 ? 1 : -1;
	}
	return 0;
}

static int connect_timed(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int fl, e = 0;
	socklen_t el = sizeof(e);
	struct pollfd pf;

	if (fd < 0)
		return -1;
	fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS)
			goto fail;
		pf.fd = fd;
		pf.events = POLLOUT;
		pf.revents = 0;
		if (poll(&pf, 1, CONNECT_TIMEOUT_MS) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e)
			goto fail;
	}
	fcntl(fd, F_SETFL, fl);
	return fd;
fail:
	close(fd);
	return -1;
}

static int connect_upstream(const char *host, unsigned port)
{
	struct sockaddr_in over;
	struct addrinfo hints, *res = NULL, *ai;
	char service[8];
	int fd = -1, o = resolve_override(host, port, &over);

	if (o > 0)
		return connect_timed((struct sockaddr *)&over, sizeof(over));
	if (o < 0)
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &res) != 0)
		return -1;
	for (ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_timed(ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(res);
	return fd;
}

/* ---- one connection ---------------------------------------------------- */

static void send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void respond(int fd, int status, const char *host, const char *why)
{
	const char *text = status == 403   ? "Forbidden"
			   : status == 431 ? "Request Header Fields Too Large"
			   : status == 502 ? "Bad Gateway"
					   : "Bad Request";
	char body[HOST_MAX + 256], msg[HOST_MAX + 512];
	int bl, ml;

	bl = snprintf(body, sizeof(body), "sbxloop egress proxy: %s%s%s%s\n",
		      why, host && *host ? " ('" : "", host ? host : "",
		      host && *host ? "')" : "");
	if (bl < 0 || (size_t)bl >= sizeof(body))
		bl = (int)strlen(body);
	ml = snprintf(msg, sizeof(msg),
		      "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n"
		      "X-Sbxloop-Egress: blocked\r\n\r\n%s",
		      status, text, bl, body);
	if (ml > 0)
		send_all(fd, msg, strlen(msg));
}

/* Read up to the blank line; the bytes after it stay in buf too. */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *head_len)
{
	size_t got = 0;

	while (got < cap) {
		ssize_t n = recv(fd, buf + got, cap - got, 0);
		char *end;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
		end = memmem(buf, got, "\r\n\r\n", 4);
		if (end) {
			*head_len = (size_t)(end - buf) + 4;
			return (ssize_t)got;
		}
	}
	return -2; /* too large */
}

/* The head upstream: origin-form target, hop-by-hop headers dropped. */
static char *upstream_head(const struct lp_request *q, const char *extra,
			   size_t extra_len, size_t *out_len)
{
	static const char *const drop[] = {"proxy-connection:",
					   "proxy-authorization:",
					   "connection:",
					   "keep-alive:",
					   "te:",
					   "upgrade:",
					   NULL};
	size_t cap = q->path_len + q->headers_len + extra_len + 256, o;
	const char *line, *end = q->headers + q->headers_len;
	char *h = malloc(cap);
	size_t i;

	if (!h)
		return NULL;
	o = (size_t)snprintf(h, cap, "%s %.*s %.8s\r\n", q->method,
			     (int)q->path_len, q->path, q->version);
	for (line = q->headers; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		size_t ll = (size_t)(eol - line) + 1;
		int keep = 1;

		if (ll == 2)
			break;
		for (i = 0; drop[i]; i++)
			if (ll > strlen(drop[i]) &&
			    strncasecmp(line, drop[i], strlen(drop[i])) == 0)
				keep = 0;
		if (keep) {
			memcpy(h + o, line, ll);
			o += ll;
		}
		line = eol + 1;
	}
	o += (size_t)snprintf(h + o, cap - o, "Connection: close\r\n\r\n");
	memcpy(h + o, extra, extra_len);
	*out_len = o + extra_len;
	return h;
}

static void conn_serve(struct conn *c)
{
	struct lproxy *p = c->p;
	struct timeval tv = {HEAD_TIMEOUT_S, 0};
	struct lp_refusal why = {0, NULL};
	struct lp_request q;
	size_t head_len = 0;
	char *buf = malloc(HEAD_MAX + 1), *up_head = NULL;
	ssize_t got;
	int up = -1, ok;

	if (!buf)
		return;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	got = read_head(c->fd, buf, HEAD_MAX, &head_len);
	if (got == -2) {
		respond(c->fd, 431, NULL, "request head too large");
		goto out;
	}
	if (got < 0)
		goto out;
	if (lp_parse_head(buf, head_len, &q, &why) < 0) {
		/* a host was named: the attempt goes on the record */
		if (q.host[0])
			note(p, q.host, 0, q.method, q.port, why.why);
		respond(c->fd, why.status, q.host, why.why);
		goto out;
	}
	if (q.port != (q.connect ? 443u : 80u)) {
		note(p, q.host, 0, q.method, q.port,
		     q.connect ? "CONNECT is allowed to port 443 only"
			       : "plain http is allowed to port 80 only");
		respond(c->fd, 403, q.host,
			q.connect ? "CONNECT is allowed to port 443 only"
				  : "plain http is allowed to port 80 only");
		goto out;
	}
	pthread_mutex_lock(&p->lock);
	ok = allows_locked(p, q.host);
	if (ok)
		snprintf(c->host, sizeof(c->host), "%s", q.host);
	pthread_mutex_unlock(&p->lock);
	if (!ok) {
		note(p, q.host, 0, q.method, q.port,
		     "not allowed by the sandbox's egress policy");
		respond(c->fd, 403, q.host,
			"egress not allowed by the sandbox's policy");
		goto out;
	}
	up = connect_upstream(q.host, q.port);
	if (up < 0) {
		respond(c->fd, 502, q.host, "cannot connect upstream");
		goto out;
	}
	pthread_mutex_lock(&p->lock);
	c->upstream = up;
	ok = !p->stopping && c->host[0];
	pthread_mutex_unlock(&p->lock);
	if (!ok)
		goto out;
	note(p, q.host, 1, q.method, q.port, "");
	tv.tv_sec = 0;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (q.connect) {
		static const char est[] =
			"HTTP/1.1 200 Connection established\r\n\r\n";

		send_all(c->fd, est, sizeof(est) - 1);
		sl_relay(c->fd, up, buf + head_len, (size_t)got - head_len,
			 NULL);
	} else {
		size_t ul;

		up_head = upstream_head(&q, buf + head_len,
					(size_t)got - head_len, &ul);
		if (up_head)
			sl_relay(c->fd, up, up_head, ul, NULL);
	}
out:
	pthread_mutex_lock(&p->lock);
	c->upstream = -1;
	pthread_mutex_unlock(&p->lock);
	if (up >= 0)
		close(up);
	free(up_head);
	free(buf);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct lproxy *p = c->p;

	conn_serve(c);
	pthread_mutex_lock(&p->lock);
	close(c->fd);
	c->fd = -1;
	c->finished = 1;
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Join and free the finished connections (all of them with `all`,
 * waiting for each). Threads are joined, never detached, so none runs
 * this module's code once lproxy_stop returns.
 */
static void reap(struct lproxy *p, int all)
{
	struct conn **pp, *c;

	pthread_mutex_lock(&p->lock);
	pp = &p->conns;
	while ((c = *pp) != NULL) {
		if (!all && !c->finished) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		p->n_conns--;
		pthread_mutex_unlock(&p->lock);
		pthread_join(c->thread, NULL);
		free(c);
		pthread_mutex_lock(&p->lock);
		pp = &p->conns;
	}
	pthread_mutex_unlock(&p->lock);
}

static void *listener_main(void *arg)
{
	struct lproxy *p = arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, CONN_STACK);
	for (;;) {
		struct pollfd pf[2] = {{p->listen_fd, POLLIN, 0},
				       {p->wake[0], POLLIN, 0}};
		struct conn *c;
		int fd, busy;

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			break;
		reap(p, 0);
		pthread_mutex_lock(&p->lock);
		busy = p->n_conns >= CONN_MAX;
		pthread_mutex_unlock(&p->lock);
		if (busy) {
			/* a job holding every slot slows only itself */
			poll(NULL, 0, 10);
			continue;
		}
		fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->p = p;
		c->fd = fd;
		c->upstream = -1;
		pthread_mutex_lock(&p->lock);
		if (pthread_create(&c->thread, &attr, conn_main, c) != 0) {
			pthread_mutex_unlock(&p->lock);
			close(fd);
			free(c);
			continue;
		}
		c->next = p->conns;
		p->conns = c;
		p->n_conns++;
		pthread_mutex_unlock(&p->lock);
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

/* ---- lifecycle ----------------------------------------------------------- */

static void lproxy_free(struct lproxy *p)
{
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	plist_free(&p->seed);
	plist_free(&p->grants);
	plist_free(&p->deny);
	pthread_mutex_destroy(&p->lock);
	free(p->state_dir);
	free(p->sandbox);
	free(p->sock_path);
	free(p->dir);
	free(p);
}

/* bind() through /proc/self/fd: a sun_path holds 108 bytes at most */
static int listen_unix(const char *path)
{
	struct sockaddr_un sa;
	char dir[SBXLOOP_PATH_MAX];
	const char *base = strrchr(path, '/');
	int fd, dfd = -1, rc = -1;

	if (!base)
		return -1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
	base++;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) < sizeof(sa.sun_path)) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	} else {
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 ||
		    (size_t)snprintf(sa.sun_path, sizeof(sa.sun_path),
				     "/proc/self/fd/%d/%s", dfd,
				     base) >= sizeof(sa.sun_path))
			goto out;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 128) < 0)
		goto out;
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	if (rc < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int lproxy_start(const struct sbxloop_host *host, const char *state_dir,
		 const char *sandbox, const char *sock_path,
		 const char *const *seed, const char *const *deny,
		 struct lproxy **out, struct sbxloop_error *err)
{
	struct lproxy *p = calloc(1, sizeof(*p));
	const char *slash;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (!p)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "local: out of memory");
	p->host = host;
	p->listen_fd = p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->lock, NULL);
	p->state_dir = strdup(state_dir);
	p->sandbox = strdup(sandbox);
	p->sock_path = strdup(sock_path);
	slash = strrchr(sock_path, '/');
	p->dir = strndup(sock_path, slash ? (size_t)(slash - sock_path) : 0);
	for (i = 0; seed && seed[i] && !rc; i++)
		rc = plist_add(&p->seed, seed[i]);
	for (i = 0; deny && deny[i] && !rc; i++)
		rc = plist_add(&p->deny, deny[i]);
	if (rc || !p->state_dir || !p->sandbox || !p->sock_path || !p->dir) {
		lproxy_free(p);
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "local: out of memory");
	}
	p->listen_fd = listen_unix(sock_path);
	if (p->listen_fd < 0 || pipe2(p->wake, O_CLOEXEC) < 0) {
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "local: cannot listen on '%s' for the "
				     "egress proxy of sandbox '%s': %s",
				     sock_path, sandbox, strerror(errno));
		lproxy_free(p);
		return rc;
	}
	if (pthread_create(&p->listener, NULL, listener_main, p) != 0) {
		unlink(sock_path);
		lproxy_free(p);
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "local: cannot start the egress proxy "
				       "of sandbox '%s'",
				       sandbox);
	}
	p->have_listener = 1;
	pthread_mutex_lock(&registry_lock);
	p->next = registry;
	registry = p;
	pthread_mutex_unlock(&registry_lock);
	*out = p;
	return 0;
}

/* End the connections (all, or those the policy no longer allows). */
static void cut_locked(struct lproxy *p, int all)
{
	struct conn *c;

	for (c = p->conns; c; c = c->next) {
		if (c->finished ||
		    (!all && (!c->host[0] || allows_locked(p, c->host))))
			continue;
		c->host[0] = '\0';
		shutdown(c->fd, SHUT_RDWR);
		if (c->upstream >= 0)
			shutdown(c->upstream, SHUT_RDWR);
	}
}

void lproxy_stop(struct lproxy *p)
{
	struct lproxy **pp;

	if (!p)
		return;
	pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_mutex_unlock(&p->lock);
	if (p->have_listener) {
		if (write(p->wake[1], "x", 1) < 0) {
			/* the pipe is empty and open: cannot fail */
		}
		pthread_join(p->listener, NULL);
	}
	pthread_mutex_lock(&p->lock);
	cut_locked(p, 1);
	pthread_mutex_unlock(&p->lock);
	reap(p, 1);
	unlink(p->sock_path);
	lproxy_flush(p);
	lproxy_free(p);
}

/* ---- the granter's entry points ------------------------------------------ */

int lproxy_grant(const char *state_dir, const char *sandbox,
		 const char *pattern)
{
	struct lproxy *p;
	int rc;

	pthread_mutex_lock(&registry_lock);
	p = registry_find(state_dir, sandbox);
	if (!p) {
		pthread_mutex_unlock(&registry_lock);
		return SBXLOOP_ENOTFOUND;
	}
	pthread_mutex_lock(&p->lock);
	rc = plist_add(&p->grants, pattern);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

int lproxy_revoke(const char *state_dir, const char *sandbox,
		  const char *pattern)
{
	struct lproxy *p;

	pthread_mutex_lock(&registry_lock);
	p = registry_find(state_dir, sandbox);
	if (!p) {
		pthread_mutex_unlock(&registry_lock);
		return SBXLOOP_ENOTFOUND;
	}
	pthread_mutex_lock(&p->lock);
	plist_remove(&p->grants, pattern);
	cut_locked(p, 0);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

int lproxy_seed(const char *state_dir, const char *sandbox,
		const char *const *domains)
{
	struct plist fresh = {NULL, 0, 0};
	struct lproxy *p;
	size_t i;
	int rc = 0;

	for (i = 0; domains && domains[i] && !rc; i++)
		rc = plist_add(&fresh, domains[i]);
	if (rc) {
		plist_free(&fresh);
		return rc;
	}
	pthread_mutex_lock(&registry_lock);
	p = registry_find(state_dir, sandbox);
	if (!p) {
		pthread_mutex_unlock(&registry_lock);
		plist_free(&fresh);
		return SBXLOOP_ENOTFOUND;
	}
	pthread_mutex_lock(&p->lock);
	plist_free(&p->seed);
	p->seed = fresh;
	cut_locked(p, 0);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

/*
 * http.c - the HTTP/1.1 side of the fake GitHub server
 * (tests/fakes/github-server): listening on 127.0.0.1, one poll loop
 * over persistent connections, request heads, Content-Length and chunked
 * bodies of any size (read as they arrive, no rescans), Expect:
 * 100-continue, and writing answers. What a request means is main.c's
 * business (through the handler it passes to gh_http_serve).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "github.h"

#define MAX_CONNS 128
#define MAX_HEAD (64 * 1024)
#define MAX_BODY ((size_t)256 * 1024 * 1024)

enum chunk_state { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

struct conn {
	int fd;
	long no;
	struct buf in;
	size_t scanned; /* bytes of IN searched for the end of the head */
	size_t head;    /* length of the head, 0 until it is whole */
	size_t clen;
	int chunked, expect;
	enum chunk_state cs;
	size_t cpos, cleft; /* chunked: next byte of IN to decode */
	struct buf body;
	struct request rq;
};

static void reset_request(struct conn *c)
{
	free(c->rq.path);
	free(c->rq.query);
	free(c->rq.auth);
	free(c->rq.host);
	buf_free(&c->body);
	memset(&c->rq, 0, sizeof(c->rq));
	c->scanned = c->head = c->clen = c->cpos = c->cleft = 0;
	c->chunked = c->expect = 0;
	c->cs = CH_SIZE;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode N bytes of S ('+' too when FORM). */
static char *pct_decode(const char *s, size_t n, int form)
{
	char *out = gh_xmalloc(n + 1), *o = out;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
		    hexval(s[i + 2]) >= 0) {
			*o++ = (char)(hexval(s[i + 1]) * 16 +
				      hexval(s[i + 2]));
			i += 2;
		} else if (form && s[i] == '+') {
			*o++ = ' ';
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

char *gh_query(const struct request *rq, const char *name)
{
	const char *p = rq->query, *amp, *eq;
	size_t nlen = strlen(name);

	while (p && *p) {
		amp = strchr(p, '&');
		if (!amp)
			amp = p + strlen(p);
		eq = memchr(p, '=', (size_t)(amp - p));
		if (eq && (size_t)(eq - p) == nlen && !strncmp(p, name, nlen))
			return pct_decode(eq + 1, (size_t)(amp - eq - 1), 1);
		if (!eq && (size_t)(amp - p) == nlen &&
		    !strncmp(p, name, nlen))
			return gh_xstrdup("");
		p = *amp ? amp + 1 : amp;
	}
	return NULL;
}

/* Parse the head (C->head bytes of C->in): 0, or -1 when it is not an
 * HTTP/1.x request we can read. */
static int parse_head(struct conn *c)
{
	char *p = c->in.p, *end = p + c->head - 2, *eol, *colon, *v, *q;
	char target[8192], ver[16];
	size_t vlen;

	eol = strstr(p, "\r\n");
	*eol = '\0';
	if (sscanf(p, "%15[A-Z] %8191s %15s", c->rq.method, target, ver) !=
		    3 ||
	    strncmp(ver, "HTTP/1.", 7))
		return -1;
	c->rq.keep_alive = strcmp(ver, "HTTP/1.0") != 0;
	q = strchr(target, '?');
	c->rq.query = gh_xstrdup(q ? q + 1 : "");
	c->rq.path = pct_decode(target,
				q ? (size_t)(q - target) : strlen(target), 0);
	for (p = eol + 2; p < end; p = eol + 2) {
		eol = strstr(p, "\r\n");
		*eol = '\0';
		colon = strchr(p, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		vlen = strlen(v);
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			v[--vlen] = '\0';
		if (!strcasecmp(p, "content-length")) {
			char *e;
			unsigned long long l = strtoull(v, &e, 10);

			if (e == v || *e || l > MAX_BODY)
				return -1;
			c->clen = (size_t)l;
		} else if (!strcasecmp(p, "transfer-encoding")) {
			c->chunked = strcasestr(v, "chunked") != NULL;
		} else if (!strcasecmp(p, "connection")) {
			if (strcasestr(v, "close"))
				c->rq.keep_alive = 0;
			else if (strcasestr(v, "keep-alive"))
				c->rq.keep_alive = 1;
		} else if (!strcasecmp(p, "expect")) {
			c->expect = !strcasecmp(v, "100-continue");
		} else if (!strcasecmp(p, "authorization")) {
			free(c->rq.auth);
			c->rq.auth = gh_xstrdup(v);
		} else if (!strcasecmp(p, "host")) {
			free(c->rq.host);
			c->rq.host = gh_xstrdup(v);
		}
	}
	return 0;
}

/* Decode what has arrived of a chunked body: 1 when it is whole, 0 when
 * more must arrive, -1 when it is malformed. */
static int dechunk(struct conn *c)
{
	const char *p = c->in.p;
	size_t n = c->in.n, take;
	const char *eol;
	char *e;

	for (;;) {
		switch (c->cs) {
		case CH_SIZE:
			eol = memchr(p + c->cpos, '\n', n - c->cpos);
			if (!eol)
				return n - c->cpos > 64 ? -1 : 0;
			errno = 0;
			c->cleft = strtoul(p + c->cpos, &e, 16);
			if (e == p + c->cpos || errno ||
			    c->body.n + c->cleft > MAX_BODY)
				return -1;
			c->cpos = (size_t)(eol - p) + 1;
			c->cs = c->cleft ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA:
			take = n - c->cpos < c->cleft ? n - c->cpos : c->cleft;
			buf_add(&c->body, p + c->cpos, take);
			c->cpos += take;
			c->cleft -= take;
			if (c->cleft)
				return 0;
			c->cs = CH_DATA_END;
			break;
		case CH_DATA_END:
			eol = memchr(p + c->cpos, '\n', n - c->cpos);
			if (!eol)
				return n - c->cpos > 2 ? -1 : 0;
			if ((size_t)(eol - p) - c->cpos > 1)
				return -1;
			c->cpos = (size_t)(eol - p) + 1;
			c->cs = CH_SIZE;
			break;
		case CH_TRAILER:
			eol = memchr(p + c->cpos, '\n', n - c->cpos);
			if (!eol)
				return 0;
			take = (size_t)(eol - p) - c->cpos;
			c->cpos = (size_t)(eol - p) + 1;
			if (take == 0 || (take == 1 && eol[-1] == '\r'))
				c->cs = CH_DONE;
			break;
		case CH_DONE:
			return 1;
		}
	}
}

static const char *reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 409:
		return "Conflict";
	case 422:
		return "Unprocessable Entity";
	case 429:
		return "Too Many Requests";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	default:
		return "Status";
	}
}

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write R, first telling SENT (when not NULL) its size: a client that
 * has its answer finds it in the log. 0, or -1 when the connection
 * failed. */
static int send_response(int fd, const struct request *rq,
			 const struct response *r, int keep_alive,
			 gh_sent sent)
{
	struct buf h = {0};
	int rc;

	buf_printf(&h, "HTTP/1.1 %d %s\r\n", r->status, reason(r->status));
	buf_puts(&h, "Server: github-fake\r\n"
		     "Content-Type: application/json; charset=utf-8\r\n"
		     "X-GitHub-Api-Version-Selected: 2022-11-28\r\n"
		     "X-GitHub-Media-Type: github.v3; format=json\r\n");
	if (r->headers.n)
		buf_add(&h, r->headers.p, r->headers.n);
	buf_printf(&h, "Content-Length: %zu\r\n", r->body.n);
	if (!keep_alive)
		buf_puts(&h, "Connection: close\r\n");
	buf_puts(&h, "\r\n");
	if (sent)
		sent(rq, r, h.n + r->body.n);
	rc = send_all(fd, h.p, h.n);
	if (rc == 0 && r->body.n)
		rc = send_all(fd, r->body.p, r->body.n);
	buf_free(&h);
	return rc;
}

static void bad_request(struct conn *c)
{
	struct response r = {0};

	gh_error(&r, 400, "Problems parsing the request");
	send_response(c->fd, NULL, &r, 0, NULL);
	buf_free(&r.body);
}

/* Serve what has arrived on C; -1 when it is to be closed. */
static int serve(struct conn *c, gh_handler handle, gh_sent sent)
{
	struct response r;
	const char *end;
	size_t from, used;
	int rc, keep;

	for (;;) {
		if (!c->head) {
			from = c->scanned > 3 ? c->scanned - 3 : 0;
			end = c->in.n > from
				      ? memmem(c->in.p + from, c->in.n - from,
					       "\r\n\r\n", 4)
				      : NULL;
			if (!end) {
				c->scanned = c->in.n;
				if (c->in.n > MAX_HEAD) {
					bad_request(c);
					return -1;
				}
				return 0;
			}
			c->head = (size_t)(end - c->in.p) + 4;
			if (memchr(c->in.p, 0, c->head) || parse_head(c) < 0) {
				bad_request(c);
				return -1;
			}
			c->cpos = c->head;
			if (c->expect &&
			    (c->chunked || c->in.n - c->head < c->clen) &&
			    send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n",
				     25) < 0)
				return -1;
		}
		if (c->chunked) {
			rc = dechunk(c);
			if (rc < 0) {
				bad_request(c);
				return -1;
			}
			if (rc == 0)
				return 0;
			used = c->cpos;
		} else {
			if (c->in.n - c->head < c->clen)
				return 0;
			buf_add(&c->body, c->in.p + c->head, c->clen);
			used = c->head + c->clen;
		}
		if (!c->body.p)
			buf_add(&c->body, "", 0);
		c->rq.body = c->body.p;
		c->rq.body_len = c->body.n;
		c->rq.bytes_in = used;
		c->rq.conn = c->no;
		memset(&r, 0, sizeof(r));
		handle(&c->rq, &r);
		keep = c->rq.keep_alive;
		rc = send_response(c->fd, &c->rq, &r, keep, sent);
		buf_free(&r.body);
		buf_free(&r.headers);
		reset_request(c);
		memmove(c->in.p, c->in.p + used, c->in.n - used);
		c->in.n -= used;
		if (rc < 0 || !keep)
			return -1;
	}
}

static void write_port_file(const char *path, int port)
{
	char *tmp = gh_xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");

	if (!f)
		gh_die("cannot write '%s': %s", tmp, strerror(errno));
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		gh_die("cannot write '%s': %s", path, strerror(errno));
	free(tmp);
}

static int listen_loopback(int *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		gh_die("socket: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		gh_die("cannot listen on 127.0.0.1: %s", strerror(errno));
	*port = ntohs(sa.sin_port);
	return fd;
}

static void close_conn(struct conn *c)
{
	close(c->fd);
	reset_request(c);
	buf_free(&c->in);
}

void gh_http_serve(const char *port_file, gh_handler handle, gh_sent sent,
		   volatile sig_atomic_t *stop)
{
	static struct conn conns[MAX_CONNS];
	struct pollfd pfd[MAX_CONNS + 1];
	int lfd, port, nconn = 0, i, n, fd;
	long accepted = 0;
	char chunk[65536];
	ssize_t got;

	lfd = listen_loopback(&port);
	write_port_file(port_file, port);
	while (!*stop) {
		pfd[0].fd = lfd;
		pfd[0].events = nconn < MAX_CONNS ? POLLIN : 0;
		for (i = 0; i < nconn; i++) {
			pfd[i + 1].fd = conns[i].fd;
			pfd[i + 1].events = POLLIN;
		}
		/* a bounded wait: a signal between the test and poll() must
		 * not leave the loop asleep */
		n = poll(pfd, (nfds_t)nconn + 1, 250);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			gh_die("poll: %s", strerror(errno));
		for (i = nconn - 1; i >= 0; i--) {
			if (!pfd[i + 1].revents)
				continue;
			got = recv(conns[i].fd, chunk, sizeof(chunk), 0);
			if (got < 0 && errno == EINTR)
				continue;
			if (got > 0) {
				buf_add(&conns[i].in, chunk, (size_t)got);
				if (serve(&conns[i], handle, sent) == 0)
					continue;
			}
			close_conn(&conns[i]);
			conns[i] = conns[--nconn];
		}
		if (pfd[0].revents & POLLIN) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				memset(&conns[nconn], 0, sizeof(conns[nconn]));
				conns[nconn].fd = fd;
				conns[nconn].no = ++accepted;
				nconn++;
			}
		}
	}
	for (i = 0; i < nconn; i++)
		close_conn(&conns[i]);
	close(lfd);
}

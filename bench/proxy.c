/*
 * bench/proxy: figures for the egress proxy of `local.network: proxy`
 * (plugins/local/proxy.c, compiled in, on a fake host), printed, never
 * asserted. Against loopback servers named through the resolver
 * override, in one run:
 *   1. latency per request: N small HTTP requests (default 2,000), each
 *      on a fresh connection, direct over TCP, through the proxy's unix
 *      socket, and through `sbxloop-worker bridge` on loopback in front
 *      of the proxy (the whole path a job sees, minus bubblewrap); mean
 *      and median, the time the proxy adds and the ratio to direct;
 *   2. CONNECT throughput: MB bytes (default 1024 MiB) downloaded and
 *      uploaded through one tunnel, direct and through proxy (and
 *      bridge), in MiB/s.
 * Upstream's targets: < 1 ms added per request, >= 500 MB/s through
 * CONNECT. The bridge leg needs SBXLOOP_WORKER (the built worker; the
 * default suits the top of the build tree) and is skipped without it.
 *
 *   bench/proxy [REQUESTS] [MIB]
 */
#include "config.h"

#include "fakehost.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugins/local/proxy.h"

static char chunk[1 << 16];
static unsigned long long xfer_bytes;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "bench/proxy: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int listen_loopback(unsigned *port)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)*port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 256) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		die("listen");
	*port = ntohs(sa.sin_port);
	return fd;
}

/* ---- the servers ------------------------------------------------------- */

enum kind { HTTP, SOURCE, SINK };

struct server {
	int fd;
	unsigned port;
	enum kind kind;
};

struct served {
	int fd;
	enum kind kind;
};

static void *serve(void *arg)
{
	struct served *s = arg;
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
				 "Connection: close\r\n\r\nok\n";
	char buf[1 << 16];
	unsigned long long left = xfer_bytes;
	ssize_t n;

	if (s->kind == HTTP) {
		size_t got = 0;

		while ((n = recv(s->fd, buf + got, sizeof(buf) - 1 - got, 0)) >
		       0) {
			got += (size_t)n;
			buf[got] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		if (send(s->fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL) < 0) {
			/* the client left: nothing to do */
		}
	} else if (s->kind == SOURCE) {
		while (left) {
			size_t w = left < sizeof(chunk) ? left : sizeof(chunk);

			n = send(s->fd, chunk, w, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			left -= (unsigned long long)n;
		}
	} else {
		while (recv(s->fd, buf, sizeof(buf), 0) > 0)
			;
		/* acknowledge the end of the upload */
		if (send(s->fd, "k", 1, MSG_NOSIGNAL) < 0) {
			/* the client left */
		}
	}
	close(s->fd);
	free(s);
	return NULL;
}

static void *server_main(void *arg)
{
	struct server *srv = arg;

	for (;;) {
		struct served *s;
		pthread_t t;
		int c = accept(srv->fd, NULL, NULL);

		if (c < 0)
			continue;
		s = malloc(sizeof(*s));
		if (!s)
			die("malloc");
		s->fd = c;
		s->kind = srv->kind;
		if (pthread_create(&t, NULL, serve, s) != 0)
			die("pthread_create");
		pthread_detach(t);
	}
	return NULL;
}

static void server_start(struct server *srv, enum kind kind)
{
	pthread_t t;

	srv->port = 0;
	srv->kind = kind;
	srv->fd = listen_loopback(&srv->port);
	if (pthread_create(&t, NULL, server_main, srv) != 0)
		die("pthread_create");
	pthread_detach(t);
}

/* ---- clients ------------------------------------------------------------- */

/* How a client reaches its target: direct, the proxy, or the bridge. */
struct route {
	const char *name;
	int unix_sock;    /* the proxy's socket */
	const char *path; /* its path */
	unsigned port;    /* else TCP 127.0.0.1:port */
	int via_proxy;    /* speak proxy requests */
};

static int dial(const struct route *r, unsigned port)
{
	int fd, one = 1;

	if (r->unix_sock) {
		struct sockaddr_un su;

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		memset(&su, 0, sizeof(su));
		su.sun_family = AF_UNIX;
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", r->path);
		if (connect(fd, (struct sockaddr *)&su, sizeof(su)) < 0)
			die("connect unix");
	} else {
		struct sockaddr_in sa;

		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons((uint16_t)(r->via_proxy ? r->port : port));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			die("connect tcp");
	}
	return fd;
}

static void send_str(int fd, const char *s)
{
	size_t len = strlen(s);

	if (send(fd, s, len, MSG_NOSIGNAL) != (ssize_t)len)
		die("send");
}

/* Read to the end of the response; the bytes read. */
static size_t drain(int fd)
{
	char buf[1 << 16];
	size_t total = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		total += (size_t)n;
	return total;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Mean and median microseconds of n requests on fresh connections. */
static void latency(const struct route *r, unsigned http_port, int n,
		    double *mean, double *median)
{
	double *t = calloc((size_t)n, sizeof(*t)), sum = 0;
	const char *req =
		r->via_proxy ? "GET http://bench.test/ HTTP/1.1\r\n"
			       "Host: bench.test\r\n\r\n"
			     : "GET / HTTP/1.1\r\nHost: bench.test\r\n\r\n";
	int i;

	if (!t)
		die("calloc");
	for (i = 0; i < n; i++) {
		double t0 = now_s();
		int fd = dial(r, http_port);

		send_str(fd, req);
		if (drain(fd) == 0)
			die("empty response");
		close(fd);
		t[i] = (now_s() - t0) * 1e6;
		sum += t[i];
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	*mean = sum / n;
	*median = t[n / 2];
	free(t);
}

/* A tunnel (or a direct connection) to the source or sink server. */
static int open_pipe(const struct route *r, unsigned port, const char *host)
{
	int fd = dial(r, port);
	char req[256], buf[256];
	size_t got = 0;

	if (!r->via_proxy)
		return fd;
	snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\r\n\r\n", host);
	send_str(fd, req);
	while (got < sizeof(buf) - 1 && recv(fd, buf + got, 1, 0) == 1) {
		buf[++got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[got] = '\0';
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0) {
		fprintf(stderr, "bench/proxy: CONNECT refused: %s\n", buf);
		exit(1);
	}
	return fd;
}

static double download_mbs(const struct route *r, unsigned port)
{
	double t0 = now_s();
	int fd = open_pipe(r, port, "source.test");
	size_t got = drain(fd);

	close(fd);
	if (got != xfer_bytes)
		fprintf(stderr, "bench/proxy: %s: %zu of %llu bytes\n",
			r->name, got, xfer_bytes);
	return (double)got / (1024.0 * 1024.0) / (now_s() - t0);
}

static double upload_mbs(const struct route *r, unsigned port)
{
	unsigned long long left = xfer_bytes;
	double t0 = now_s();
	int fd = open_pipe(r, port, "sink.test");
	char ack;

	while (left) {
		size_t w = left < sizeof(chunk) ? left : sizeof(chunk);
		ssize_t n = send(fd, chunk, w, MSG_NOSIGNAL);

		if (n <= 0)
			die("upload");
		left -= (unsigned long long)n;
	}
	shutdown(fd, SHUT_WR);
	if (recv(fd, &ack, 1, 0) != 1)
		die("upload: no acknowledgement");
	close(fd);
	return (double)xfer_bytes / (1024.0 * 1024.0) / (now_s() - t0);
}

/* ---- the bridge ----------------------------------------------------------- */

static pid_t bridge_start(const char *worker, const char *sock, unsigned *port)
{
	char p[16];
	pid_t pid;
	int fd, i;

	/* a free port: take one, release it, hand it to the bridge */
	*port = 0;
	fd = listen_loopback(port);
	close(fd);
	snprintf(p, sizeof(p), "%u", *port);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		setpgid(0, 0); /* the bench ends the bridge and its sleep */
		execl(worker, worker, "bridge", "--port", p, "--socket", sock,
		      "--", "sleep", "3600", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		struct sockaddr_in sa;

		fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons((uint16_t)*port);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			return pid;
		}
		close(fd);
		usleep(10000);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	long mib = argc > 2 ? atol(argv[2]) : 1024;
	const char *worker = getenv("SBXLOOP_WORKER");
	const char *seed[] = {"bench.test", "source.test", "sink.test", NULL};
	char dir[] = "/tmp/bench-proxy.XXXXXX", sock[256], spec[512];
	struct server http, source, sink;
	struct sbxloop_error err = {0, ""};
	struct route direct = {"direct", 0, NULL, 0, 0};
	struct route proxy = {"proxy", 1, NULL, 0, 1};
	struct route bridge = {"bridge+proxy", 0, NULL, 0, 1};
	struct route *routes[3] = {&direct, &proxy, NULL};
	struct fakehost *fh;
	struct lproxy *p;
	pid_t bridge_pid = -1;
	double mean[3], median[3];
	int i, nr = 2;

	if (n < 1 || mib < 1)
		return fprintf(stderr,
			       "usage: bench/proxy [REQUESTS] [MIB]\n"),
		       2;
	signal(SIGPIPE, SIG_IGN);
	xfer_bytes = (unsigned long long)mib << 20;
	if (!worker || !*worker)
		worker = "worker/sbxloop-worker";
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(sock, sizeof(sock), "%s/proxy.sock", dir);
	server_start(&http, HTTP);
	server_start(&source, SOURCE);
	server_start(&sink, SINK);
	snprintf(spec, sizeof(spec),
		 "bench.test=127.0.0.1:%u,source.test=127.0.0.1:%u,"
		 "sink.test=127.0.0.1:%u",
		 http.port, source.port, sink.port);
	setenv(LPROXY_RESOLVE_ENV, spec, 1);
	fh = fakehost_new(dir);
	if (lproxy_start(fakehost_host(fh), dir, "bench", sock, seed, NULL, &p,
			 &err) != 0) {
		fprintf(stderr, "bench/proxy: %s\n", err.message);
		return 1;
	}
	proxy.path = sock;
	if (access(worker, X_OK) == 0)
		bridge_pid = bridge_start(worker, sock, &bridge.port);
	if (bridge_pid > 0)
		routes[nr++] = &bridge;
	else
		printf("(no bridge leg: SBXLOOP_WORKER '%s' not usable)\n",
		       worker);

	printf("latency per request, %d requests each on a fresh "
	       "connection:\n",
	       n);
	for (i = 0; i < nr; i++) {
		latency(routes[i], http.port, n < 100 ? n : 100, &mean[i],
			&median[i]); /* warm up */
		latency(routes[i], http.port, n, &mean[i], &median[i]);
		printf("  %-13s mean %7.1f us  median %7.1f us",
		       routes[i]->name, mean[i], median[i]);
		if (i)
			printf("  added %6.1f us (median %6.1f)  ratio %.2fx",
			       mean[i] - mean[0], median[i] - median[0],
			       mean[i] / mean[0]);
		printf("\n");
	}
	printf("CONNECT throughput, %ld MiB one way per tunnel:\n", mib);
	for (i = 0; i < nr; i++) {
		double down = download_mbs(routes[i], source.port);
		double up = upload_mbs(routes[i], sink.port);

		printf("  %-13s download %7.0f MiB/s  upload %7.0f MiB/s\n",
		       routes[i]->name, down, up);
	}
	if (bridge_pid > 0) {
		kill(-bridge_pid, SIGTERM);
		waitpid(bridge_pid, NULL, 0);
	}
	lproxy_stop(p);
	fakehost_free(fh);
	rmdir(dir);
	return 0;
}

/*
 * The fixture of the egress proxy suites (proxy-support.h): loopback
 * servers as named hosts, proxy sandboxes and a raw proxy client.
 */
#include "config.h"

#include "host/core.h"
#include "host/loader.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxy-support.h"

struct sl_instance pinst;
const struct sbxloop_policy_ops *pops;
char emitted[16384];

static int listen_on(unsigned *port, int any)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

struct served {
	int fd;
	struct test_server *s;
};

static void *serve_one(void *arg)
{
	struct served *j = arg;
	struct test_server *s = j->s;
	int c = j->fd;
	char buf[65536];
	ssize_t n;

	free(j);
	if (s->echo) {
		while ((n = recv(c, buf, sizeof(buf), 0)) > 0)
			if (send(c, buf, (size_t)n, MSG_NOSIGNAL) != n)
				break;
	} else {
		size_t got = 0;
		char body[512], head[1024];

		while (got < sizeof(buf) - 1 &&
		       (n = recv(c, buf + got, sizeof(buf) - 1 - got, 0)) >
			       0) {
			got += (size_t)n;
			buf[got] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		buf[got] = '\0';
		snprintf(s->last_head, sizeof(s->last_head), "%.4000s", buf);
		snprintf(body, sizeof(body), "hello from %s\n", s->name);
		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 strlen(body), body);
		if (send(c, head, strlen(head), MSG_NOSIGNAL) < 0) {
			/* the client left */
		}
	}
	close(c);
	return NULL;
}

static void *server_main(void *arg)
{
	struct test_server *s = arg;

	for (;;) {
		int c = accept(s->fd, NULL, NULL);
		struct served *j;
		pthread_t t;

		if (c < 0)
			return NULL;
		s->hits++;
		j = malloc(sizeof(*j));
		ck_assert_ptr_nonnull(j);
		j->fd = c;
		j->s = s;
		if (pthread_create(&t, NULL, serve_one, j) == 0)
			pthread_detach(t);
	}
}

void server_start(struct test_server *s, const char *name, int echo)
{
	server_start_on(s, name, echo, 0);
}

void server_start_on(struct test_server *s, const char *name, int echo,
		     int any)
{
	pthread_t t;

	memset(s, 0, sizeof(*s));
	s->echo = echo;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->fd = listen_on(&s->port, any);
	ck_assert_int_eq(pthread_create(&t, NULL, server_main, s), 0);
	pthread_detach(t);
}

pid_t tls_server_start(unsigned *port)
{
	char key[600], cert[600], cmd[2000], p[16];
	int fd, i;
	pid_t pid;

	snprintf(key, sizeof(key), "%s/key.pem", tmpdir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
		 "-subj /CN=allowed.test -keyout '%s' -out '%s' "
		 ">/dev/null 2>&1",
		 key, cert);
	ck_assert_int_eq(system(cmd), 0);
	/* a free port: bind one, release it, let s_server take it */
	fd = listen_on(port, 0);
	close(fd);
	snprintf(p, sizeof(p), "%u", *port);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execlp("openssl", "openssl", "s_server", "-accept", p, "-www",
		       "-key", key, "-cert", cert, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {
		struct sockaddr_in sa;
		int c = socket(AF_INET, SOCK_STREAM, 0);

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons((uint16_t)*port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(c);
			return pid;
		}
		close(c);
		usleep(50000);
	}
	ck_abort_msg("openssl s_server did not start");
	return pid;
}

void tls_server_stop(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}

void resolve_set(const char *spec)
{
	ck_assert_int_eq(setenv("SBXLOOP_PROXY_RESOLVE", spec, 1), 0);
}

static int on_emit(struct sl_core *c, const char *type, const char *job_id,
		   const char *data_json)
{
	size_t used = strlen(emitted);

	(void)c;
	(void)job_id;
	snprintf(emitted + used, sizeof(emitted) - used, "%s\t%s\n", type,
		 data_json ? data_json : "{}");
	return 0;
}

void capture_events(void)
{
	emitted[0] = '\0';
	core->emit = on_emit;
}

void start_proxy_core(const char *body)
{
	char text[2048];
	int rc;

	snprintf(text, sizeof(text),
		 "local:\n  isolation: bwrap\n  network: proxy\n%s",
		 body ? body : "");
	start("local", text);
	capture_events();
	memset(&pinst, 0, sizeof(pinst));
	rc = sl_core_instantiate(core, SBXLOOP_KIND_POLICY, "local", &pinst,
				 &err);
	ck_assert_msg(rc == 0, "%s", err.message);
	pops = pinst.ops;
}

int make_proxy_sandbox(const char *name, const char *const *seed,
		       struct sbxloop_sandbox_info *info)
{
	struct sbxloop_sandbox_spec spec;
	const char *worker = getenv("SBXLOOP_WORKER");

	ck_assert_msg(worker && access(worker, X_OK) == 0,
		      "SBXLOOP_WORKER must name the built worker");
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = name;
	spec.role = "agent";
	spec.run_id = "r1";
	spec.workspace = ws;
	spec.worker_path = worker;
	spec.allow_domains = seed;
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	return ops->sandbox_create(inst.ctx, &spec, info, &err);
}

void proxy_socket(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/proxy.sock", sl_root, name);
}

static int change(const char *sandbox, const char *domain, int undo)
{
	struct sbxloop_grant g;

	memset(&g, 0, sizeof(g));
	g.struct_size = sizeof(g);
	g.sandbox = sandbox;
	g.domain = domain;
	g.reason = "test";
	g.task_id = "t1";
	g.phase = "execute";
	return undo ? pops->revoke(pinst.ctx, &g, &err)
		    : pops->grant(pinst.ctx, &g, &err);
}

int give(const char *sandbox, const char *domain)
{
	return change(sandbox, domain, 0);
}

int take_back(const char *sandbox, const char *domain)
{
	return change(sandbox, domain, 1);
}

int proxy_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
		      "connect '%s': %s", path, strerror(errno));
	return fd;
}

int proxy_ask(const char *path, const char *req, char *resp, size_t len)
{
	int fd = proxy_connect(path), status = -1;
	size_t got = 0, rl = strlen(req);
	struct pollfd pf;
	ssize_t n;

	/* a refused head may be answered before it is all sent */
	while (rl) {
		n = send(fd, req, rl, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		req += n;
		rl -= (size_t)n;
	}
	pf.fd = fd;
	pf.events = POLLIN;
	while (got < len - 1 && poll(&pf, 1, 10000) == 1 &&
	       (n = recv(fd, resp + got, len - 1 - got, 0)) > 0)
		got += (size_t)n;
	resp[got] = '\0';
	close(fd);
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
	return status;
}

/*
 * What the egress proxy suites (test-local-proxy*.c) share: loopback
 * servers standing in for named hosts (an HTTP server that names itself
 * and records what it got, a TCP echo server, `openssl s_server`), the
 * resolver override that makes them those hosts, proxy sandboxes with
 * their granter, and a raw client of a proxy's unix socket.
 */
#ifndef SBXLOOP_TESTS_PROXY_SUPPORT_H
#define SBXLOOP_TESTS_PROXY_SUPPORT_H

#include <stddef.h>
#include <sys/types.h>

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>

#include <ftw.h>

#include "local-support.h"

struct test_server {
	int fd;
	unsigned port;
	int echo; /* echo bytes back, else answer one HTTP request */
	char name[64];
	char last_head[4096]; /* the last request head the HTTP server got */
	unsigned long hits;
};

/* Start an HTTP (echo = 0) or echo server on 127.0.0.1, a thread. */
void server_start(struct test_server *s, const char *name, int echo);
/* The same, on every address of this host with `any`. */
void server_start_on(struct test_server *s, const char *name, int echo,
		     int any);

/* `openssl s_server -www` on a fresh key and cert; its pid. */
pid_t tls_server_start(unsigned *port);
void tls_server_stop(pid_t pid);

/* SBXLOOP_PROXY_RESOLVE for the given "name:port=127.0.0.1:P" list. */
void resolve_set(const char *spec);

/*
 * The core on `body` with local under bubblewrap and network: proxy,
 * the provider in `inst` and the granter in `pinst` (pops).
 */
extern struct sl_instance pinst;
extern const struct sbxloop_policy_ops *pops;
void start_proxy_core(const char *body);

/* A proxy sandbox with the real worker and seed `seed`. */
int make_proxy_sandbox(const char *name, const char *const *seed,
		       struct sbxloop_sandbox_info *info);
/* Its proxy's socket path into buf. */
void proxy_socket(const char *name, char *buf, size_t len);

int give(const char *sandbox, const char *domain);
int take_back(const char *sandbox, const char *domain);

/* Connect to the unix socket at `path`; the fd. */
int proxy_connect(const char *path);
/*
 * Send `req` over a fresh connection to `path` and read the answer to
 * its end (at most len - 1 bytes, NUL-terminated); the status code or
 * -1.
 */
int proxy_ask(const char *path, const char *req, char *resp, size_t len);

/* What the host emitted (type "\t" data, one a line) since the start. */
extern char emitted[16384];
void capture_events(void);

#endif

/*
 * github-support.h - start and drive tests/fakes/github-server (a fake
 * of the GitHub REST API, 2022-11-28) from a Check suite: start it with
 * repositories and a token, read its state and request log, inject
 * faults, put a TLS front before it, stop it. The binary is found as
 * $SBXLOOP_BUILDDIR/tests/fakes/github-server (make check sets it).
 * Every suite that talks to GitHub may include it.
 */
#ifndef SBXLOOP_TESTS_GITHUB_SUPPORT_H
#define SBXLOOP_TESTS_GITHUB_SUPPORT_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

struct gh_fake {
	pid_t pid;       /* the server; 0 once reaped */
	pid_t tls_pid;   /* socat of gh_fake_tls_start, or 0 */
	int port;        /* the server's port on 127.0.0.1 */
	int exit_status; /* the server's, after gh_fake_stop (0: clean) */
	char dir[512];   /* temp dir: port file, log, state, TLS files */
	char log[600];   /* DIR/requests.jsonl, the --log file */
	char url[64];    /* http://127.0.0.1:PORT */
};

/* Start the fake in a fresh temp dir: TOKEN NULL for no auth; REPOS
 * "o/r", "o/r:empty" or "o/r:private", NULL-terminated (may be NULL).
 * 0, or -1 with a message on stderr. */
int gh_fake_start(struct gh_fake *f, const char *token,
		  const char *const *repos);
/* SIGTERM the server (and the TLS front), reap them, keep the server's
 * exit status in f->exit_status, remove the temp dir. Safe to call
 * twice. (A test that dies first leaves the dir: the server gets
 * SIGTERM when its parent dies; keep $TMPDIR per suite to clean up.) */
void gh_fake_stop(struct gh_fake *f);
/* GET /_fake/state (caller frees), or NULL. */
cJSON *gh_fake_state(const struct gh_fake *f);
/* POST /_fake/faults: replace the fault list with JSON_ARRAY (see
 * tests/fakes/github/main.c). 0 or -1. */
int gh_fake_set_faults(const struct gh_fake *f, const char *json_array);
/* The --log lines so far as an array (caller frees); never NULL. */
cJSON *gh_fake_requests(const struct gh_fake *f);
/* Of the logged requests from index FROM on: how many, and over how
 * many connections (a change of the connection number counts one; a
 * client that reuses no connection makes as many as requests). Returns
 * the number of requests logged in all, for the next FROM. */
int gh_fake_count(const struct gh_fake *f, int from, int *requests,
		  int *connections);
/* A TLS front: a throwaway CA and a server certificate for 127.0.0.1
 * made with the openssl CLI, and socat OPENSSL-LISTEN forwarding to the
 * fake. HTTPS_URL gets https://127.0.0.1:PORT, CA_FILE the CA to trust.
 * 0, or -1 with a message on stderr. */
int gh_fake_tls_start(struct gh_fake *f, char *https_url, size_t n,
		      char *ca_file, size_t m);

#endif

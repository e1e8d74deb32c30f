/*
 * Helpers for the Check suites: temporary directories, files, and
 * running a program (usually the real sbxloop binary) to completion
 * with its output captured.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stddef.h>

struct tu_run {
	int status; /* exit code, or 128 + signal */
	char *out;  /* stdout, NUL-terminated */
	char *err;  /* stderr, NUL-terminated */
};

/* A fresh directory under $TMPDIR (caller frees the string). */
char *tu_tmpdir(void);
/* rm -rf */
void tu_rmtree(const char *path);
void tu_write(const char *path, const char *text);
/* Whole file (caller frees) or NULL. */
char *tu_read(const char *path);
/* Run argv in cwd (NULL = current) with extra env "K=V" entries
 * (NULL-terminated, may be NULL); wait; capture output. */
void tu_exec(struct tu_run *r, const char *cwd, const char *const *env,
	     const char *const *argv);
void tu_run_free(struct tu_run *r);
/*
 * Hold run `run`'s driver lock under `state_dir` as a live `sbxloop run`
 * does (<state_dir>/runs/RUN/driver.lock, flock, "PID run SINCE"): the
 * descriptor; closing it lets go.
 */
int tu_hold_run_lock(const char *state_dir, const char *run);
/* `sh -c` of the formatted command; the test fails unless it exits 0. */
void tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Standard output of the formatted shell command, trailing newlines
 * trimmed (caller frees). */
char *tu_capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Environment variable that must be set (the suite fails otherwise). */
const char *tu_env(const char *name);

#endif

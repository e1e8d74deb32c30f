/*
 * What the local module suites (test-local-*.c) share: a core with a
 * temporary sbxloop.yaml and state_dir, the provider instance under
 * test, and helpers to make sandboxes, run commands in them and watch
 * their processes. Only they include it.
 */
#ifndef SBXLOOP_TESTS_LOCAL_SUPPORT_H
#define SBXLOOP_TESTS_LOCAL_SUPPORT_H

#include <check.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <sbxloop/sandbox.h>

#include "host/core.h"

#define PATHBUF 4400
extern char tmpdir[256];
extern char ws[512];
extern char state[512];
extern char sl_root[600];
extern struct sl_core *core;
extern struct sl_instance inst;
extern const struct sbxloop_sandbox_ops *ops;
extern struct sbxloop_error err;
struct lines {
	char out[8192];
	char err[8192];
	int n_out;
};

void on_out(void *user, const char *line, size_t len);
void on_err(void *user, const char *line, size_t len);
int rm_entry(const char *path, const struct stat *st, int flag,
	     struct FTW *ftw);
void write_text(const char *path, const char *text, mode_t mode);
char *read_text(const char *path);
int exists(const char *path);
void setup(void);
void teardown(void);
struct sl_core *open_core(const char *body);
void start(const char *provider, const char *body);
int make_sandbox_ro(const char *name, int read_only,
		    struct sbxloop_sandbox_info *info);
int make_sandbox(const char *name, struct sbxloop_sandbox_info *info);
int run_sh(const char *name, const char *script, double timeout,
	   const char *stdin_data, struct lines *l,
	   struct sbxloop_proc_result *res);
void clear(struct sbxloop_proc_result *res);
int alive(pid_t pid);
int sleeper_running(const char *arg);
double now(void);
TCase *tcase(const char *name, int timeout);

#endif

/*
 * What the worker contract suites (test-worker-*.c) share: a scratch
 * directory per test, a run of the real sbxloop-worker and readers of
 * what it left (result, events, stdout, stderr). Only they include it.
 */
#ifndef SBXLOOP_TESTS_WORKER_SUPPORT_H
#define SBXLOOP_TESTS_WORKER_SUPPORT_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

extern char dir[256];
struct run {
	int rc;
	double elapsed;
	char *out;    /* stdout */
	char *err;    /* stderr */
	char *events; /* events file */
	cJSON *result;
	cJSON *events_list; /* parsed events file lines */
};

char *slurp(const char *path);
char *path_in(const char *name);
void put(const char *name, const char *fmt, ...);
double now(void);
void setup(void);
void teardown(void);
void run_free(struct run *r);
int worker_argv(const char **argv);
void exec_worker_quietly(void);
void run_worker(struct run *r, const char *job, ...);
const char *rstr(const struct run *r, const char *key);
const char *errfield(const struct run *r, const char *key);
int rint_(const struct run *r, const char *key);
int count_events(const struct run *r, const char *type, const cJSON **first);
const char *dstr(const cJSON *data, const char *key);
int pid_gone(pid_t pid);
int wait_gone(pid_t pid, double seconds);
pid_t read_pid(const char *name);
#define JOB_HEAD "{\"v\":1,\"job_id\":\"job-1\",\"run_id\":\"run-1\","
void agent_job(char *buf, size_t n, const char *extra);

#endif

/*
 * Helpers of the suites that drive the real `sbxloop` binary
 * ($SBXLOOP_BIN) in a scratch directory and read what it stored through
 * the store plugin's vtable: test-engine, test-policy-run and
 * test-redact. Raw SQL on <dir>/state/state.db (q_*) remains for the
 * tests whose point is the file itself and for the ones not yet moved to
 * the vtable. Failures are Check assertions.
 */
#ifndef SL_TEST_RUNTEST_H
#define SL_TEST_RUNTEST_H

#include <sys/types.h>

#define RT_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* The scratch directory every helper works in (borrowed). */
void rt_set_dir(const char *dir);

/* A file of the scratch dir, or "" when missing (caller frees). */
char *read_file(const char *rel);
/* Write (create or replace) a file of the scratch dir. */
void put_file(const char *rel, const char *text);
/* tests/scenarios/NAME.json as the scratch dir's scenario.json. */
void copy_scenario(const char *name);

/* $name when set and non-empty, else dflt. */
const char *env_or(const char *name, const char *dflt);
void sleep_ms(long ms);

/*
 * Start `sbxloop ARGS...` (NULL-terminated, at most 14) in the scratch
 * dir with extra NAME=VALUE `env` entries (may be NULL); stdin is
 * /dev/null, output goes to out.txt and err.txt there.
 */
pid_t spawn_sbxloop(const char *const *env, const char *const *args);
/* The exit code of `pid`, 128 + N when killed by signal N. */
int wait_code(pid_t pid);
/* sbxloop with up to three arguments, to completion: its exit code. */
int sbxloop(const char *a1, const char *a2, const char *a3);

/* First column of the first row, or "" (caller frees). */
char *q_str(const char *fmt, ...) RT_PRINTF(1, 2);
long q_int(const char *fmt, ...) RT_PRINTF(1, 2);
void q_exec(const char *sql);
/* A count, 0 while the store does not exist yet; never fails. */
long soft_count(const char *sql);
/* Poll until `sql` (a count) is positive: 1, or 0 after `secs`. */
int wait_for(const char *sql, double secs);

/*
 * The store read through the sqlite module's vtable, by a core opened on
 * the scratch dir's sbxloop.yaml: what the commands read, not the
 * schema. Failures to read are Check failures.
 */
/* The newest run's id, "" when none (caller frees). */
char *last_run(void);
/* A run's row; strings are "" when NULL (release with rt_run_release). */
struct rt_run {
	char *state;
	char *reason;
	char *workspace;
	char *kept_reason;
	int mounted;
};
void rt_run_get(const char *run, struct rt_run *r);
void rt_run_release(struct rt_run *r);
void assert_run_state(const char *run, const char *state);
/* One task of a run; strings "" when NULL (release with rt_task_release). */
struct rt_task {
	char *state;
	char *spec_json;
	char *last_feedback;
	char *session_id;
	int revisions;
	int replans;
};
/* 0 when the run has `task` (then t is filled), else -1. */
int rt_task_get(const char *run, const char *task, struct rt_task *t);
void rt_task_release(struct rt_task *t);
long rt_task_count(const char *run);
/*
 * The statuses of the attempts of `phase` by `task` ("" for the run's
 * own, decompose) oldest first, comma-separated (caller frees).
 */
char *rt_attempt_statuses(const char *run, const char *task,
			  const char *phase);
/* The run's events of exactly `type`. */
long count_events(const char *run, const char *type);

#endif

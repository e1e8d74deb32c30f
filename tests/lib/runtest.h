/*
 * Helpers of the suites that drive the real `sbxloop` binary
 * ($SBXLOOP_BIN) in a scratch directory and read its SQLite store
 * (<dir>/state/state.db): test-engine and test-policy-run. Failures are
 * Check assertions.
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

/* The newest run's id (caller frees). */
char *last_run(void);
void assert_run_state(const char *run, const char *state);
long count_events(const char *run, const char *type);

#endif

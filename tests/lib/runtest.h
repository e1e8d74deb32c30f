/*
 * Helpers of the suites that drive the real `sbxloop` binary
 * ($SBXLOOP_BIN) in a scratch directory and read what it stored through
 * the store plugin's vtable: test-engine, test-policy-run and
 * test-redact. Raw SQL on <dir>/state/state.db (q_*) remains only for
 * the tests whose point is the file itself and for writes no store
 * operation makes. Failures are Check assertions.
 */
#ifndef SL_TEST_RUNTEST_H
#define SL_TEST_RUNTEST_H

#include <sys/types.h>

#define RT_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* The scratch directory every helper works in (borrowed). */
void rt_set_dir(const char *dir);

/* Checked fixture: a fresh scratch dir under $TMPDIR, made the
 * helpers' dir, removed after (unless SBXLOOP_KEEP_TEST_DIRS is set). */
void rt_setup(void);
void rt_teardown(void);
/* The scratch dir. */
const char *rt_dir(void);
/* <scratch>/repo: a git project with one commit (README). */
void rt_git_repo(void);
/* A path under the scratch dir (caller frees). */
char *rt_path(const char *fmt, ...) RT_PRINTF(1, 2);
/*
 * The scratch dir's sbxloop.yaml: the script backend on scenario.json,
 * `provider`, plugins.policy `policy` (a YAML flow sequence; NULL: no
 * such line) and `extra` YAML. Resource limits are off unless `extra`
 * sets them.
 */
void rt_write_config(const char *provider, const char *policy,
		     const char *extra);

/* A file of the scratch dir, or "" when missing (caller frees). */
char *read_file(const char *rel);
/* Does `path` exist (a dangling symlink does)? */
int rt_exists(const char *path);
/* The scratch dir's file `rel` holds (lacks) `needle`. */
void assert_file_has(const char *rel, const char *needle);
void assert_file_lacks(const char *rel, const char *needle);
/* Write (create or replace) a file of the scratch dir. */
void put_file(const char *rel, const char *text);
/* tests/scenarios/NAME.json as the scratch dir's scenario.json. */
void copy_scenario(const char *name);

/* $name when set and non-empty, else dflt. */
/* How many leading replies of scenario.json the agents have taken (its
 * cursor file): a test that kills a run in a slow reply waits for it. */
long rt_replies_taken(void);
const char *env_or(const char *name, const char *dflt);
void sleep_ms(long ms);

/*
 * Start `sbxloop ARGS...` (NULL-terminated, at most 14) in the scratch
 * dir with extra NAME=VALUE `env` entries (may be NULL); stdin is
 * /dev/null, output goes to out.txt and err.txt there.
 */
pid_t spawn_sbxloop(const char *const *env, const char *const *args);
/* The same with standard input read from `in_path` (a terminal, say). */
pid_t spawn_sbxloop_in(const char *in_path, const char *const *env,
		       const char *const *args);
/* The exit code of `pid`, 128 + N when killed by signal N. */
int wait_code(pid_t pid);
struct tu_run;
/* sbxloop ARGS (NULL-terminated, at most 14) to completion in the
 * scratch dir, output captured (tu_run_free it). */
void rt_capture(struct tu_run *r, const char *const *args);
/*
 * `sbxloop steer RUN TEXT` from another process, beside a run: its exit
 * code; its output in steer.txt and steer-err.txt of the scratch dir.
 */
int rt_steer(const char *run, const char *text);
/* sbxloop with up to three arguments, to completion: its exit code. */
int sbxloop(const char *a1, const char *a2, const char *a3);

/*
 * Raw SQL on the store file, for the tests whose point is the file or
 * that change what no store operation changes (a run's saved config).
 */
/* First column of the first row as a number, 0 when none. */
long q_int(const char *fmt, ...) RT_PRINTF(1, 2);
void q_exec(const char *sql);

/*
 * The store read through the sqlite module's vtable, by a core opened on
 * the scratch dir's sbxloop.yaml: what the commands read, not the
 * schema. Failures to read are Check failures.
 */
/* The newest run's id, "" when none (caller frees). */
char *last_run(void);
/* A run's row; strings are "" when NULL (release with rt_run_release). */
struct rt_run {
	char *outcome;
	char *state;
	char *reason;
	char *workspace;
	char *kept_reason;
	char *guidance_json;
	int mounted;
};
void rt_run_get(const char *run, struct rt_run *r);
void rt_run_release(struct rt_run *r);
void assert_run_state(const char *run, const char *state);
/* One task of a run; strings "" when NULL (release with rt_task_release). */
struct rt_task {
	char *state;
	char *spec_json;
	char *plan_json;
	char *last_feedback;
	char *session_id;
	int revisions;
	int replans;
};
/* The run's workspace directory, "" before it has one (caller frees). */
char *rt_workspace(const char *run);
/* 0 when the run has `task` (then t is filled), else -1. */
int rt_task_get(const char *run, const char *task, struct rt_task *t);
void rt_task_release(struct rt_task *t);
void assert_task_state(const char *run, const char *task, const char *state);
long rt_task_count(const char *run);
/* A text field of a task that must exist: "spec_json", "plan_json",
 * "session_id" or "last_feedback" (caller frees). */
char *rt_task_field(const char *run, const char *task, const char *which);
/* The run's task ids in their order (order_idx), comma-separated
 * (caller frees). */
char *rt_task_ids(const char *run);
/*
 * The statuses of the attempts of `phase` by `task` ("" for the run's
 * own, decompose) oldest first, comma-separated (caller frees).
 */
char *rt_attempt_statuses(const char *run, const char *task,
			  const char *phase);
/*
 * The attempts of `task` ("" the run's own, decompose), `phase` and
 * `status`, each NULL for any, whose output_json holds `output_has`
 * (NULL: any).
 */
long rt_attempt_count(const char *run, const char *task, const char *phase,
		      const char *status, const char *output_has);
/*
 * `what` of the attempts of `task` and `phase` (as above) oldest first,
 * joined by `sep` (caller frees): "status", "attempt", "trail"
 * (phase:attempt:status), "output" (the output_json) or a member of the
 * output ("-" when missing).
 */
char *rt_attempt_trail(const char *run, const char *task, const char *phase,
		       const char *what, const char *sep);

/*
 * Events, read in seq order. The variadic arguments are KEY, GLOB pairs
 * and a NULL: an event matches when it is of `type` (NULL: any) and
 * each data member KEY (the whole data_json when KEY is ""), in text as
 * SQLite's json_extract gives it (strings bare, true 1, false 0, else
 * compact JSON; missing never matches), fnmatch()es GLOB.
 */
long rt_event_count(const char *run, const char *type, ...)
	__attribute__((sentinel));
/* The run's events of exactly `type`. */
long count_events(const char *run, const char *type);
/* The seq of the first (last: the last) matching event, 0 when none. */
long rt_event_seq(const char *run, int last, const char *type, ...)
	__attribute__((sentinel));
/* Data member `key` (NULL: the data_json) of the first matching event,
 * "" when none (caller frees). */
char *rt_event_text(const char *run, const char *key, const char *type, ...)
	__attribute__((sentinel));
/*
 * The events whose type starts with `prefix`, comma-separated: each the
 * type past the prefix and ':' (nothing when the type is the prefix),
 * then data member `key` (caller frees).
 */
char *rt_event_trail(const char *run, const char *prefix, const char *key);

/*
 * Poll the newest run every 50 ms until `what` ("run": its state,
 * "task": one of its tasks' state, "event": an event type) is `value`:
 * 1, or 0 after `secs`. The store is opened (read-only) only once the
 * run has created it.
 */
int wait_until(const char *what, const char *value, double secs);

#endif

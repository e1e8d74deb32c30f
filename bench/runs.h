/*
 * What the whole-run benches (bench/run, bench/sbx, bench/chat,
 * bench/lanes) share: the build tree's environment, a monotonic clock,
 * one measured `sbxloop run`, and the scripted run they drive: a scenario of N independent tasks with instant replies
 * (or an EXECUTE that takes a while, and a STEER reply after it) and
 * the sbxloop.yaml around it.
 */
#ifndef BENCH_RUNS_H
#define BENCH_RUNS_H

/* $name when set and non-empty, else dflt. */
const char *bench_env_or(const char *name, const char *dflt);
/* Seconds on the monotonic clock. */
double bench_now(void);

/*
 * tests' script backend scenario at `path`: DECOMPOSE into t1..tN, then
 * per task PLAN, EXECUTE (taking `execute_s` seconds when > 0), a STEER
 * reply when `steer`, SCRUTINIZE pass and VALIDATE accept. 0, or -1.
 */
int bench_write_scenario(const char *path, int n, double execute_s, int steer);

/*
 * The same for parallel lanes: every reply keyed to its task (so lanes
 * may ask in any order), every job taking `job_s` seconds, and each
 * task's VERIFY `test -f out-tI.txt`, the file its EXECUTE writes.
 */
int bench_write_keyed_scenario(const char *path, int n, double job_s);

/*
 * sbxloop.yaml at `path` for a run of n tasks on scenario.json, the
 * prompts and worker of the build tree, resource limits off; `plugins`
 * is the YAML body of `plugins:` (indented two spaces), `extra` more
 * top-level YAML (may be NULL). 0, or -1.
 */
int bench_write_config(const char *path, int n, const char *plugins,
		       const char *extra);

/* What one `sbxloop run` cost (bench_run_sbxloop). */
struct bench_proc {
	double wall_s;  /* fork to exit */
	double user_ms; /* sbxloop's own CPU, not its children's */
	double sys_ms;
	double tree_ms; /* CPU of sbxloop and every child it reaped */
	double rss_mb;  /* peak RSS of sbxloop */
	int status;     /* wait status */
};

/*
 * `sbxloop run benchmark --no-tui` ($SBXLOOP_BIN) in `dir`, its output
 * to /dev/null, `env` (NULL-terminated "NAME=value", may be NULL) set
 * in the child; measured into *m (its own CPU read while it is a
 * zombie). 0 when it exited 0, else -1 with m->status.
 */
int bench_run_sbxloop(const char *dir, const char *const *env,
		      struct bench_proc *m);

#endif

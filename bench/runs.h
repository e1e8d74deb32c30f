/*
 * What the whole-run benches (bench/run, bench/sbx, bench/chat) share:
 * the build tree's environment, a monotonic clock, and the scripted run
 * they drive: a scenario of N independent tasks with instant replies
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
 * sbxloop.yaml at `path` for a run of n tasks on scenario.json, the
 * prompts and worker of the build tree, resource limits off; `plugins`
 * is the YAML body of `plugins:` (indented two spaces), `extra` more
 * top-level YAML (may be NULL). 0, or -1.
 */
int bench_write_config(const char *path, int n, const char *plugins,
		       const char *extra);

#endif

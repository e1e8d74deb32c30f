/*
 * One driver per run: `run` and `resume` hold an exclusive lock on
 * <state_dir>/runs/<run>/driver.lock for as long as they drive the run
 * (until its sandboxes are gone), `deliver` while it delivers. A second
 * `resume` of the same run is refused instead of driving it beside the
 * first; the kernel drops the
 * lock when its holder dies, kill -9 included, so a crashed run is
 * resumable at once. `status` asks who drives a run to tell a live run
 * from an interrupted one.
 */
#ifndef SL_RUNLOCK_H
#define SL_RUNLOCK_H

#include <sbxloop/plugin.h>

/* A held lock; fd -1 when none. */
struct sl_runlock {
	int fd;
	char *path; /* the lock file, owned */
	char *dir;  /* the run's directory, owned */
};

#define SL_RUNLOCK_INIT                                                       \
	{                                                                     \
		-1, NULL, NULL                                                \
	}

/* Who holds a run's lock, as its holder wrote it. */
struct sl_run_driver {
	long pid;
	char command[16]; /* "run" or "resume" */
	double since;     /* epoch seconds */
};

/*
 * Take run `run_id`'s lock for `command` ("run" or "resume"), creating
 * the run's directory under `state_dir` when needed. 0; SBXLOOP_ESTATE
 * when another process drives the run, or what a dead driver started
 * still runs after SL_RUNLOCK_ORPHAN_WAIT_S (err says which and what to
 * do);
 * another negative code when the lock file cannot be made.
 */
int sl_runlock_take(const char *state_dir, const char *run_id,
		    const char *command, struct sl_runlock *lk,
		    struct sbxloop_error *err);
/*
 * How long a taker waits for what a dead driver started (its git, which
 * holds the lock: common/launch.c) to end before it refuses, seconds.
 */
#define SL_RUNLOCK_ORPHAN_WAIT_S 10.0
/* sl_runlock_take with that wait given (tests). */
int sl_runlock_take_wait(const char *state_dir, const char *run_id,
			 const char *command, double orphan_wait_s,
			 struct sl_runlock *lk, struct sbxloop_error *err);

/*
 * Let go of a lock taken by sl_runlock_take, removing its file, and the
 * run's directory when nothing else is in it (no-op when none is held).
 */
void sl_runlock_release(struct sl_runlock *lk);
/*
 * Is run `run_id` driven now? 1 with *who filled (pid 0 when the holder
 * wrote nothing readable), 0 when nobody holds its lock (or it has none:
 * never driven by this sbxloop, or the directory is gone). Never creates
 * anything.
 */
int sl_runlock_driver(const char *state_dir, const char *run_id,
		      struct sl_run_driver *who);

#endif

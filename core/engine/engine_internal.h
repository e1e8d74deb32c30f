/*
 * What the pieces of the run engine share: the engine and task structs,
 * the task state table and the functions one piece calls in another.
 * Private to core/engine/{run,task,persist,setup,harvest,summary}.c;
 * everyone else uses engine.h.
 */
#ifndef SL_ENGINE_INTERNAL_H
#define SL_ENGINE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "engine/engine.h"
#include "common/json.h"
#include "engine/egress.h"
#include "engine/provision.h"
#include "phases/phases.h"

#define STATE_LEN 24

/*
 * The task states. The persisted names (the store's rows, task.state
 * and task.end events) are the SDK's, from sl_task_states[].
 */
enum sl_task_state {
	SL_TASK_UNKNOWN = -1, /* a stored name this engine does not know */
	SL_TASK_PENDING,
	SL_TASK_PLANNING,
	SL_TASK_EXECUTING,
	SL_TASK_SCRUTINIZING,
	SL_TASK_VERIFYING,
	SL_TASK_VALIDATING,
	SL_TASK_DONE,
	SL_TASK_FAILED,
	SL_TASK_SKIPPED,
	SL_TASK_N_STATES
};

struct task {
	cJSON *spec;
	const char *id; /* borrowed from spec */
	const char *title;
	enum sl_task_state state;
	char unknown[STATE_LEN]; /* the stored name when SL_TASK_UNKNOWN */
	cJSON *plan;
	int revisions;
	int replans;
	char *feedback;
	char *session_id;
	int order;
	struct sl_lane *lane; /* its lane while one runs it (lanes.c) */
	/* its work died with a resumed run's old sandbox: EXECUTE again,
	 * whatever was committed after the plan (harvest.c, task.c) */
	int redo;
};

struct sl_engine {
	struct sl_core *core;
	const struct sbxloop_store_ops *st;
	void *sctx;
	const struct sbxloop_sandbox_ops *box;
	char run_id[32];
	char *outcome;
	char *workspace;
	char state[STATE_LEN];
	struct sl_pair *pair; /* the run's sandboxes and their secrets */
	struct sbxloop_sandbox_info info; /* the agent sandbox's, copied */
	char box_name[SBXLOOP_NAME_MAX];
	int have_box;
	const char *kept_reason;
	struct task *tasks;
	size_t n_tasks;
	double deadline;
	double started;
	volatile sig_atomic_t cancel;
	char **live; /* session ids this process created */
	size_t n_live;
	char *prompts_dir;
	/* egress: policy granters and the agent sandbox's grant ledger */
	struct sl_instance *granters;
	size_t n_granters;
	struct sl_egress_ledger *ledger;
	struct sl_egress_granter *chain;
	/* the signal path revokes open grants from the main thread */
	pthread_mutex_t ledger_lock;
	/* for the summary */
	char *fetch_cmd;
	char *artifacts_dir;
	char *artifacts_note;
	char **artifact_files;
	size_t n_artifact_files;
	size_t n_artifacts;
	/* reporters (borrowed instances) and whether this drive resumed */
	struct sl_instance **reporters;
	size_t n_reporters;
	int resumed;
	/* a resumed unmounted run's fresh sandbox before its work is put
	 * back (sl_engine_reclaim): no harvest may copy it over the last */
	int stale_box;
	/* lanes (lanes.c): tasks run in parallel worktrees */
	int lanes_active;
	volatile sig_atomic_t lanes_halt; /* a lane failed: stop the others */
	char *lanes_git;    /* the lanes' shadow git dir, or NULL (lanes.c) */
	char *lanes_common; /* git's common dir of the lanes, or NULL */
	/* the workspace's own git's common dir, HEAD file and info/exclude
	 * (absolute, a line each), as sl_lanes_mode found them, or NULL */
	char *lanes_paths;
	/* the lanes' git on the host in process (lanes_git2.c), not the git
	 * command: its config names no extension libgit2 lacks */
	int lanes_g2;
	/* the common dir whose config passed the check last, and the
	 * job stamp then (sl_worker_jobs_quiet): no need to read it again
	 * while no job ran (lanes_fs.c) */
	char *lanes_checked;
	unsigned long lanes_checked_stamp;
	/* the user's git config sets a filter (said once); its includes
	 * were read (lanes_fs.c) */
	int lanes_user_filter, lanes_user_included;
	pthread_mutex_t mu;         /* live session ids, between lanes */
	pthread_mutex_t steer_lock; /* one lane answers the inbox at a time */
	/* steering: the task under way, the standing guidance (strings) */
	struct task *current;
	cJSON *guidance;
	int steer_attempts;
	/* what a reporter delivered, for the summary (or why it did not) */
	long long delivered_number;
	char *delivered_url;
	char *delivery_error;
};

/*
 * One row of the task state table (task.c). A working state names the
 * phase whose committed attempt ends it, how that attempt is numbered,
 * the step that runs the phase and the function that applies its
 * result (just produced, or found committed on resume). Whether a state
 * is terminal is the SDK's sbxloop_task_state_is_terminal().
 */
struct sl_task_state_def {
	enum sl_task_state state;
	const char *name;  /* persisted */
	const char *phase; /* attempt phase; NULL: no phase runs here */
	int by_replan;     /* attempts numbered by replan, else revision */
	int (*step)(struct sl_engine *e, struct task *t,
		    struct sbxloop_error *err);
	int (*apply)(struct sl_engine *e, struct task *t, const cJSON *out,
		     struct sbxloop_error *err);
};

/* Indexed by enum sl_task_state. */
extern const struct sl_task_state_def sl_task_states[SL_TASK_N_STATES];

/* The state called `name`, or SL_TASK_UNKNOWN. */
enum sl_task_state sl_task_state_parse(const char *name);
/* The task's state name as stored (borrowed). */
const char *sl_task_state_name(const struct task *t);
int sl_task_terminal(const struct task *t);

/* ---- persist.c ---------------------------------------------------------- */

/* Emit `type` for the run; takes `data`. */
int sl_engine_emit(struct sl_engine *e, const char *type, cJSON *data);
/* Store the run's state (+ reason, may be NULL), then run.state. */
int sl_engine_set_run_state(struct sl_engine *e, const char *state,
			    const char *reason, struct sbxloop_error *err);
/* Note on the run row why it stopped (`reason` alone, state kept). */
void sl_engine_note_stop(struct sl_engine *e, const char *why);
/* Store the task in `state`, then task.state (task.end for skipped). */
int sl_engine_set_task_state(struct sl_engine *e, struct task *t,
			     enum sl_task_state state,
			     struct sbxloop_error *err);
/* task.state's data (caller frees). */
cJSON *sl_engine_task_event(const struct task *t, int with_title);
void sl_task_set_feedback(struct task *t, const char *fb);
/* Forget the plan, its revisions and its session: the task plans again. */
void sl_task_discard_plan(struct task *t);

/* Commit a phase attempt; `output` borrowed, NULL stores {}. */
int sl_engine_record_attempt(struct sl_engine *e, const char *task_id,
			     const char *phase, int attempt,
			     const char *status, const cJSON *output,
			     double started, struct sbxloop_error *err);

/* An attempt row as read back; release with sl_latest_release. */
struct latest {
	int found;
	int64_t id;
	int attempt;
	double started_at;
	char *status;
	cJSON *output;
};

/* The newest attempt of `phase` for a task; l->found 0 when none. */
int sl_engine_latest_attempt(struct sl_engine *e, const char *task_id,
			     const char *phase, struct latest *l,
			     struct sbxloop_error *err);
void sl_latest_release(struct latest *l);

/* Replace e->tasks with the stored rows of the run. */
int sl_engine_load_tasks(struct sl_engine *e, struct sbxloop_error *err);
void sl_engine_tasks_clear(struct sl_engine *e);
/* The task with id `id` (borrowed), or NULL. */
struct task *sl_engine_find_task(struct sl_engine *e, const char *id);

/* ---- run.c -------------------------------------------------------------- */

/*
 * The phase boundary: SBXLOOP_ECANCELLED on a cancel request or a run
 * cancelled from outside, SBXLOOP_ETIMEDOUT (run failed) past the wall
 * clock, else 0.
 */
int sl_engine_boundary(struct sl_engine *e, struct sbxloop_error *err);
/* A phase context for task `t` (NULL outside tasks); borrows from e. */
void sl_engine_phase_ctx(struct sl_engine *e, const struct task *t,
			 struct sl_phase_ctx *pc);
int sl_engine_budget(const struct sl_engine *e, const char *key, int dflt);

/* ---- task.c ------------------------------------------------------------- */

/* task.end for `t` in its current state. */
/* task.end; `harvested`: a per-task harvest holding its work just ran */
void sl_engine_task_end(struct sl_engine *e, const struct task *t,
			int harvested);
/* Drive one task from its stored state to a terminal one. */
int sl_engine_run_task(struct sl_engine *e, struct task *t,
		       struct sbxloop_error *err);

/* ---- setup.c ------------------------------------------------------------ */

/* Tokens, workspace (`pinned` on resume, else fresh), pair, egress. */
int sl_engine_provision(struct sl_engine *e, const char *pinned,
			struct sbxloop_error *err);
/* keep_on_failure: mark the pair kept for debugging; best effort. */
void sl_engine_keep_on_failure(struct sl_engine *e);
/* Revoke the open grants (task_id NULL: each its own); ledger_lock held. */
void sl_engine_revoke_grants(struct sl_engine *e,
			     struct sl_egress_ledger *ledger,
			     const char *task_id);
/* run.attest on the pair (`lane` NULL) or on lane sandbox "laneN". */
int sl_engine_attest(struct sl_engine *e, const char *lane,
		     struct sbxloop_error *err);
/* A grant ledger for another agent sandbox (a lane's), on the run's
 * granter chain; free with sl_egress_ledger_free. */
struct sl_egress_ledger *sl_engine_ledger_new(struct sl_engine *e,
					      const char *sandbox);

/* ---- report.c ----------------------------------------------------------- */

/* Route host->sandbox_job() to the pair's sandboxes, or stop routing. */
void sl_engine_jobs_open(struct sl_engine *e);
void sl_engine_jobs_close(struct sl_engine *e);
/* run_start of every reporter; SBXLOOP_EINVAL from one fails the run. */
int sl_engine_reporters_start(struct sl_engine *e, struct sbxloop_error *err);
/* deliver (when `final` is completed), then run_end; failures logged. */
void sl_engine_reporters_end(struct sl_engine *e, const char *final);

/* ---- lanes.c ------------------------------------------------------------ */

/*
 * budgets.max_parallel_tasks > 1 on a mounted git workspace: run ready
 * tasks at once, each in its own worktree, merging each accepted task
 * back. 1 when lanes do not apply (the caller runs tasks one by one),
 * else 0 or the first run-level error.
 */
int sl_engine_schedule_lanes(struct sl_engine *e, struct sbxloop_error *err);
/* A lane's sandbox view and host directory of task `t` (NULL: none). */
const struct sbxloop_sandbox_info *sl_lane_info(const struct task *t);
const char *sl_lane_dir(const struct task *t);
/* The grant ledger of the lane's own sandbox (per-lane), else NULL. */
struct sl_egress_ledger *sl_lane_ledger(const struct task *t);
/*
 * The review's evidence of task `t` read in its worktree in process
 * (lanes_git2.c) where the lanes' git works so; 0, or -1 (*ev empty):
 * a job gathers it.
 */
int sl_lanes_evidence(struct sl_engine *e, const struct task *t, double since,
		      struct sl_evidence *ev);

/* ---- steer.c ------------------------------------------------------------ */

/* Route host->chat_post() to this run's inbox, or stop routing. */
void sl_engine_chat_open(struct sl_engine *e);
void sl_engine_chat_close(struct sl_engine *e);
/* e->guidance from the run row's JSON list (NULL or bad: empty). */
int sl_engine_load_guidance(struct sl_engine *e, const char *json);
/* Answer the pending steering messages, oldest first (a boundary). */
int sl_engine_steer(struct sl_engine *e, struct sbxloop_error *err);

/* ---- harvest.c ---------------------------------------------------------- */

/*
 * harvest_mode per-task: keep each finished task's work on the host.
 * 1 harvested, 0 nothing to do (mounted, final mode), -1 failed (logged).
 */
int sl_engine_harvest_task(struct sl_engine *e);
/*
 * A resumed run whose sandbox does not mount the workspace: the fresh
 * sandbox gets the last harvest, and every task whose work that harvest
 * lacks is done again from its plan (sandbox.workspace_seed).
 */
int sl_engine_reclaim(struct sl_engine *e, struct sbxloop_error *err);
/* run.artifacts and the summary's artifact list; best effort. */
void sl_engine_report_artifacts(struct sl_engine *e);

#endif

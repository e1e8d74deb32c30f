/*
 * The phase runners: DECOMPOSE, PLAN, EXECUTE, SCRUTINIZE, VERIFY and
 * VALIDATE. Each renders its prompt, submits worker jobs and returns
 * validated output; the engine owns state, budgets and persistence.
 *
 * Every runner returns 0 or a negative code. A negative code is an
 * infrastructure error (the run stops, resumable) with the message in
 * `err`; verdicts and verify failures are ordinary results.
 */
#ifndef SL_PHASES_H
#define SL_PHASES_H

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>

#include "host/core.h"
#include "common/util.h"

/*
 * A job failed because the sandbox crossed limits.disk_abort or
 * limits.mem_abort: the message is the diagnosis; the task fails.
 */
#define SL_PHASE_ERESOURCES (-64)
/*
 * An agent went past budgets.max_tool_calls_per_phase and was stopped
 * (ToolCallCeiling): a budget exhausted, so the task fails like one.
 */
#define SL_PHASE_EBUDGET (-65)

struct sl_phase_ctx {
	struct sl_core *core;
	const struct sbxloop_sandbox_info *info;
	const char *outcome;
	const char *prompts_dir;
	const char *workspace; /* host path of the workspace */
	const char *task_id;   /* tags relayed events; NULL outside tasks */
	const cJSON *guidance; /* the run's standing guidance (strings) */
};

/* Clip to the last 6000 chars with a marker; caller frees. */
char *sl_clip(const char *text);

/*
 * The script backend's scenario file (agent.script) as an absolute path,
 * a relative one taken from the project file's directory; NULL when
 * unset. Caller frees.
 */
char *sl_phase_script_path(const struct sl_core *core);

/*
 * DECOMPOSE. *graph (caller frees) is {"tasks":[...]} with every task
 * normalised (all six fields present) and in execution order. Task ids
 * must pass sl_task_id_valid (else the agent is asked again); more tasks
 * than budgets.max_tasks fail the phase before any task is looked at.
 */
int sl_phase_decompose(const struct sl_phase_ctx *pc, cJSON **graph,
		       struct sbxloop_error *err);

/* PLAN. *plan (caller frees): steps, expected_artifacts,
 * verify_commands, egress. */
int sl_phase_plan(const struct sl_phase_ctx *pc, const cJSON *spec,
		  const char *feedback, cJSON **plan,
		  struct sbxloop_error *err);

/*
 * EXECUTE. `resume_id` may be NULL (fresh session). *report and
 * *session_id: caller frees (session_id may come back NULL).
 */
int sl_phase_execute(const struct sl_phase_ctx *pc, const cJSON *spec,
		     const cJSON *plan, const char *feedback,
		     const char *prior_report, const char *resume_id,
		     char **report, char **session_id,
		     struct sbxloop_error *err);

/*
 * The review's evidence as its three commands print it in the task's
 * work tree: `git status --short`, `git diff HEAD` and the files changed
 * since EXECUTE began (`./PATH` lines). The engine reads it itself where
 * it can (lanes working in process, engine/lanes.c); otherwise SCRUTINIZE
 * gathers it with a job in the sandbox.
 */
struct sl_evidence {
	char *status;
	char *diff;
	char *recent;
};

/* Free what `ev` holds and empty it. */
void sl_evidence_clear(struct sl_evidence *ev);

/* SCRUTINIZE. *verdict (caller frees): verdict, issues, feedback,
 * verify_suspect, verify_suspect_reason, and maybe tooling_health and
 * downgraded. `evidence`: NULL to gather it with a job. */
int sl_phase_scrutinize(const struct sl_phase_ctx *pc, const cJSON *spec,
			const cJSON *plan, const char *feedback,
			const char *report, const struct sl_evidence *evidence,
			cJSON **verdict, struct sbxloop_error *err);

/* VERIFY. *out (caller frees): {"passed","feedback","results",
 * "failed":K}. */
int sl_phase_verify(const struct sl_phase_ctx *pc, const cJSON *spec,
		    const cJSON *plan, cJSON **out, struct sbxloop_error *err);

/* VALIDATE with the stored verify transcript. */
int sl_phase_validate(const struct sl_phase_ctx *pc, const cJSON *spec,
		      const char *verify_results, cJSON **verdict,
		      struct sbxloop_error *err);

/*
 * STEER: a read-only, fresh session answers the user's `message` about
 * the run. `board` and `current` are the rendered task board and current
 * task block. *verdict (caller frees): reply, action (continue,
 * steer_task or steer_run) and guidance (non-blank unless continue).
 */
int sl_phase_steer(const struct sl_phase_ctx *pc, const char *board,
		   const char *current, const char *message, cJSON **verdict,
		   struct sbxloop_error *err);

/*
 * The STEER reply's check, alone: 0 and *out (caller frees) normalised
 * (reply, action, guidance), or -1 and *problem (caller frees).
 */
int sl_phase_steer_verdict(const cJSON *in, cJSON **out, char **problem);

/* Verify-command lint: appends "- <prefix><message>" lines to `out`. */
void sl_verify_lint(const struct sl_core *core, const cJSON *commands,
		    const char *prefix, struct sl_buf *out);

#endif

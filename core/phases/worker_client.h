/*
 * Submitting one job to the sbxloop-worker inside the active sandbox and
 * collecting its JobResult, and finding the worker binary. Used by the
 * phase runners, the engine, provisioning and `sandbox doctor`.
 */
#ifndef SL_WORKER_CLIENT_H
#define SL_WORKER_CLIENT_H

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>

#include "host/core.h"

struct sl_job_tags {
	const char *role;    /* "agent" */
	const char *persona; /* "planner", "executor", ..., or NULL */
	const char *task_id; /* or NULL */
	/* run the job with the workspace read-only (a critic's, a probe's) */
	int read_only_workspace;
};

/*
 * A copy of the data of the newest sandbox.resources event a job in the
 * agent sandbox `box` relayed (any agent sandbox's when `box` is NULL;
 * caller frees; NULL before the first), and a way to drop them all.
 * Safe from concurrent lanes.
 */
cJSON *sl_worker_last_resources_copy(const char *box);
void sl_worker_forget_resources(void);

/* The phase a job of `persona` ("planner", ...) belongs to, or NULL. */
const char *sl_persona_phase(const char *persona);

/* Does `job` ask for a read-only workspace (permission_mode)? */
int sl_worker_job_read_only(const cJSON *job);

/*
 * Run `job` (borrowed; v, job_id and run_id are filled in here) in the
 * sandbox described by `info`. Every stdout line of the worker is relayed
 * to the event bus. On 0, *result (caller frees) is the JobResult object,
 * whatever its status. A job that produced no usable result is
 * SBXLOOP_EINFRA (or SBXLOOP_ETIMEDOUT past the host deadline) with the
 * diagnostics in `err`.
 */
int sl_worker_submit(struct sl_core *core,
		     const struct sbxloop_sandbox_info *info, cJSON *job,
		     const struct sl_job_tags *tags, cJSON **result,
		     struct sbxloop_error *err);

/*
 * No job running now: 1, and *stamp says how many had started (a later
 * call with the same stamp: none ran in between). 0 while one runs.
 */
int sl_worker_jobs_quiet(unsigned long *stamp);

/*
 * Where the sbxloop-worker binary is on the host (caller frees): the
 * worker_path setting, $SBXLOOP_WORKER, next to this executable, or the
 * installed one.
 */
char *sl_worker_path(const struct sl_core *core);

#endif

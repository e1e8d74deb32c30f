/*
 * What the phase runners share: prompt variables, agent jobs and their
 * results (common.c), the schema checks (schemas.c) and the two-attempt
 * JSON loop (json_loop.c). Private to core/phases/; the engine and
 * everyone else use phases.h.
 */
#ifndef SL_PHASES_INTERNAL_H
#define SL_PHASES_INTERNAL_H

#include <cjson/cJSON.h>

#include "phases/phases.h"
#include "common/json.h"
#include "common/util.h"

/* ---- common.c ----------------------------------------------------------- */

/* "- a\n- b" from a list of strings, or `none`; caller frees. */
char *sl_phase_render_list(const cJSON *list, const char *none);
/* Set prompt variable `name` (NULL: ""); var_take also frees `value`. */
void sl_phase_var_set(cJSON *vars, const char *name, const char *value);
void sl_phase_var_take(cJSON *vars, const char *name, char *value);
/* The variables every prompt has (caller frees), and a task's. */
cJSON *sl_phase_base_vars(const struct sl_phase_ctx *pc);
void sl_phase_task_vars(cJSON *vars, const cJSON *spec);
/* The spec's verify commands, then the plan's, first occurrence kept;
 * caller frees. */
cJSON *sl_phase_verify_commands(const cJSON *spec, const cJSON *plan);

/* budgets.per_job_timeout_s */
double sl_phase_job_timeout(const struct sl_core *core);
/* An agent.session job for `prompt` (caller frees). */
cJSON *sl_phase_agent_job(const struct sl_phase_ctx *pc, const char *prompt,
			  int read_only, int expect_json);
/* Submit `job` (borrowed) tagged with `persona`; *res: caller frees. */
int sl_phase_submit(const struct sl_phase_ctx *pc, cJSON *job,
		    const char *persona, cJSON **res,
		    struct sbxloop_error *err);
int sl_phase_result_ok(const cJSON *res);
/* The error type and message of a failed JobResult (borrowed). */
void sl_phase_result_error(const cJSON *res, const char **type,
			   const char **msg);
/*
 * A failed agent job as a code: SL_PHASE_ERESOURCES or SL_PHASE_EBUDGET
 * (the task's problem), else SBXLOOP_EINFRA (the run's).
 */
int sl_phase_job_failed(const char *type, const char *msg,
			struct sbxloop_error *err);

/* ---- schemas.c ---------------------------------------------------------- */

/*
 * Each returns 0, or -1 with the problem appended to `msg`; `what` names
 * the object in the message. The copies go into `dst`.
 */
int sl_schema_only_keys(const cJSON *obj, const char *const *allowed,
			const char *what, struct sl_buf *msg);
/* A list of strings (absent = []); copies it into `dst` under `key`. */
int sl_schema_str_list(const cJSON *obj, const char *key, int required,
		       const char *what, cJSON *dst, struct sl_buf *msg);
/* A string (absent = `dflt`, which NULL makes required). */
int sl_schema_str_field(const cJSON *obj, const char *key, const char *dflt,
			int nonblank, const char *what, cJSON *dst,
			struct sl_buf *msg);
int sl_schema_is_blank(const char *s);

/*
 * A validator normalises `in` into *out (0) or explains in `msg` what is
 * wrong: -1 asks the agent again, 1 fails the phase at once (a budget).
 */
typedef int sl_validate_fn(const struct sl_phase_ctx *pc, const cJSON *in,
			   cJSON **out, struct sl_buf *msg);

/* ---- json_loop.c -------------------------------------------------------- */

/*
 * Run a JSON phase. `vars` gets retry_context set per attempt. On 0,
 * *out is the normalised output and *health (may be NULL) the job's
 * health object; both caller frees.
 */
int sl_phase_json(const struct sl_phase_ctx *pc, const char *phase,
		  const char *persona, int read_only, cJSON *vars,
		  const char *preamble, sl_validate_fn *validate, cJSON **out,
		  cJSON **health, struct sbxloop_error *err);

#endif

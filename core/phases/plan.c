/*
 * PLAN and EXECUTE: a task's plan with its strict schema (steps,
 * artifacts, verify commands, egress inside the operator's bounds), and
 * the executor's session that carries it out. Called by the engine
 * through phases.h.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "phases/phases_internal.h"
#include "engine/egress.h"
#include "phases/prompt.h"
#include "host/redact.h"

/* ---- PLAN --------------------------------------------------------------- */

static int validate_plan(const struct sl_phase_ctx *pc, const cJSON *in,
			 cJSON **out, struct sl_buf *msg)
{
	static const char *const keys[] = {"steps", "expected_artifacts",
					   "verify_commands", "egress", NULL};
	static const char *const ekeys[] = {"domain", "reason", NULL};
	const cJSON *eg = cJSON_GetObjectItemCaseSensitive(in, "egress");
	const cJSON *e;
	cJSON *plan = cJSON_CreateObject(), *egress;
	struct sl_buf lint = SL_BUF_INIT;

	if (sl_schema_only_keys(in, keys, "the plan", msg) < 0 ||
	    sl_schema_str_list(in, "steps", 1, "the plan", plan, msg) < 0 ||
	    sl_schema_str_list(in, "expected_artifacts", 0, "the plan", plan,
			       msg) < 0 ||
	    sl_schema_str_list(in, "verify_commands", 0, "the plan", plan,
			       msg) < 0)
		goto fail;
	if (eg && !cJSON_IsArray(eg)) {
		sl_buf_adds(msg, "the plan: 'egress' must be a list");
		goto fail;
	}
	egress = cJSON_AddArrayToObject(plan, "egress");
	cJSON_ArrayForEach (e, eg) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToArray(egress, o);
		if (sl_schema_only_keys(e, ekeys, "an egress entry", msg) <
			    0 ||
		    sl_schema_str_field(e, "domain", NULL, 1,
					"an egress entry", o, msg) < 0 ||
		    sl_schema_str_field(e, "reason", "", 0, "an egress entry",
					o, msg) < 0)
			goto fail;
	}
	/* well-formed and inside the operator's bounds (normalised here) */
	if (sl_egress_validate_plan(pc->core->cfg, egress, msg) < 0)
		goto fail;
	sl_verify_lint(
		pc->core,
		cJSON_GetObjectItemCaseSensitive(plan, "verify_commands"), "",
		&lint);
	if (lint.len) {
		sl_buf_adds(msg, "verify commands break the rules:\n");
		sl_buf_adds(msg, sl_buf_str(&lint));
		goto fail;
	}
	sl_buf_release(&lint);
	*out = plan;
	return 0;
fail:
	sl_buf_release(&lint);
	cJSON_Delete(plan);
	return -1;
}

int sl_phase_plan(const struct sl_phase_ctx *pc, const cJSON *spec,
		  const char *feedback, cJSON **plan,
		  struct sbxloop_error *err)
{
	cJSON *vars = sl_phase_base_vars(pc);
	int rc;

	sl_phase_task_vars(vars, spec);
	sl_phase_var_set(vars, "feedback",
			 feedback && *feedback
				 ? feedback
				 : "(none: this is the first attempt)");
	sl_phase_var_take(
		vars, "verify_commands",
		sl_phase_render_list(cJSON_GetObjectItemCaseSensitive(
					     spec, "verify_commands"),
				     "(none)"));
	rc = sl_phase_json(pc, "plan", "planner", 0, vars, "", validate_plan,
			   plan, NULL, err);
	cJSON_Delete(vars);
	return rc;
}

/* ---- EXECUTE ------------------------------------------------------------ */

int sl_phase_execute(const struct sl_phase_ctx *pc, const cJSON *spec,
		     const cJSON *plan, const char *feedback,
		     const char *prior_report, const char *resume_id,
		     char **report, char **session_id,
		     struct sbxloop_error *err)
{
	cJSON *vars = sl_phase_base_vars(pc), *job = NULL, *res = NULL, *cmds;
	char *prompt = NULL;
	const char *type, *msg, *sid;
	int rc;

	*report = *session_id = NULL;
	sl_phase_task_vars(vars, spec);
	sl_phase_var_take(
		vars, "plan_steps",
		sl_phase_render_list(
			cJSON_GetObjectItemCaseSensitive(plan, "steps"),
			"(no steps)"));
	sl_phase_var_take(
		vars, "expected_artifacts",
		sl_phase_render_list(cJSON_GetObjectItemCaseSensitive(
					     plan, "expected_artifacts"),
				     "(none listed)"));
	cmds = sl_phase_verify_commands(spec, plan);
	sl_phase_var_take(vars, "verify_commands",
			  sl_phase_render_list(cmds, "(none)"));
	cJSON_Delete(cmds);
	sl_phase_var_set(vars, "feedback",
			 feedback && *feedback
				 ? feedback
				 : "(none: this is the first attempt)");
	sl_phase_var_set(vars, "prior_attempt",
			 prior_report && *prior_report
				 ? prior_report
				 : "(none: this is the first attempt)");
	rc = sl_prompt_render(pc->prompts_dir, "execute", vars, &prompt, err);
	if (rc < 0)
		goto out;
	job = sl_phase_agent_job(pc, prompt, 0, 0);
	if (resume_id && *resume_id)
		cJSON_AddStringToObject(job, "resume_session_id", resume_id);
	rc = sl_phase_submit(pc, job, "executor", &res, err);
	if (rc < 0)
		goto out;
	if (!sl_phase_result_ok(res)) {
		sl_phase_result_error(res, &type, &msg);
		rc = sl_phase_job_failed(type, msg, err);
		goto out;
	}
	sid = sl_json_str(res, "session_id", NULL);
	if (resume_id && *resume_id && (!sid || strcmp(sid, resume_id)))
		sl_log(SBXLOOP_LOG_INFO,
		       "phase.resume_missed: asked to resume %s, got %s",
		       resume_id, sid ? sid : "no session");
	*report = sl_clip(sl_json_str(res, "output_text", ""));
	*session_id = sl_xstrdup(sid);
out:
	free(prompt);
	cJSON_Delete(job);
	cJSON_Delete(res);
	cJSON_Delete(vars);
	return rc;
}

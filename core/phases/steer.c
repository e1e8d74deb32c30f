/*
 * STEER (UPSTREAM 4.8): the user's chat message, answered by a
 * read-only, fresh agent session that sees the task board and the
 * current task, and decides whether the run goes on as it is
 * (continue), the current task plans again with the user's feedback
 * (steer_task) or the run keeps standing guidance (steer_run). Called by
 * the engine's steering drain (core/engine/steer.c) through phases.h.
 */
#include "config.h"

#include <string.h>

#include "phases/phases_internal.h"

static int validate_steer(const struct sl_phase_ctx *pc, const cJSON *in,
			  cJSON **out, struct sl_buf *msg)
{
	static const char *const keys[] = {"reply", "action", "guidance",
					   NULL};
	cJSON *o = cJSON_CreateObject();
	const char *action;

	(void)pc;
	if (sl_schema_only_keys(in, keys, "the response", msg) < 0 ||
	    sl_schema_str_field(in, "reply", "", 0, "the response", o, msg) <
		    0 ||
	    sl_schema_str_field(in, "action", "continue", 0, "the response", o,
				msg) < 0 ||
	    sl_schema_str_field(in, "guidance", "", 0, "the response", o,
				msg) < 0)
		goto fail;
	action = sl_json_str(o, "action", "");
	if (strcmp(action, "continue") != 0 &&
	    strcmp(action, "steer_task") != 0 &&
	    strcmp(action, "steer_run") != 0) {
		sl_buf_addf(msg,
			    "'action' must be continue, steer_task or "
			    "steer_run, not '%.40s'",
			    action);
		goto fail;
	}
	if (strcmp(action, "continue") != 0 &&
	    sl_schema_is_blank(sl_json_str(o, "guidance", ""))) {
		sl_buf_addf(msg, "action %s needs non-blank 'guidance'",
			    action);
		goto fail;
	}
	*out = o;
	return 0;
fail:
	cJSON_Delete(o);
	return -1;
}

int sl_phase_steer_verdict(const cJSON *in, cJSON **out, char **problem)
{
	struct sl_buf msg = SL_BUF_INIT;
	int rc = validate_steer(NULL, in, out, &msg);

	*problem = rc < 0 ? sl_buf_detach(&msg) : NULL;
	sl_buf_release(&msg);
	return rc;
}

int sl_phase_steer(const struct sl_phase_ctx *pc, const char *board,
		   const char *current, const char *message, cJSON **verdict,
		   struct sbxloop_error *err)
{
	cJSON *vars = sl_phase_base_vars(pc);
	int rc;

	sl_phase_var_set(vars, "task_board", board);
	sl_phase_var_set(vars, "current_task", current);
	sl_phase_var_set(vars, "message", message);
	rc = sl_phase_json(pc, "steer", "steering", 1, vars, "",
			   validate_steer, verdict, NULL, err);
	cJSON_Delete(vars);
	return rc;
}

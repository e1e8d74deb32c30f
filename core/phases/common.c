/*
 * What every phase runner shares: clipping, prompt variables, the agent
 * job each phase submits and reading a failed JobResult, the verify
 * commands of a task and the script backend's scenario path. Called by
 * the phase runners in phases/ (phases_internal.h), and by others for
 * what phases.h exports.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "phases/phases_internal.h"
#include "engine/egress.h"
#include "phases/worker_client.h"

#define CLIP_KEEP 6000

char *sl_clip(const char *text)
{
	size_t n = text ? strlen(text) : 0;

	if (n <= CLIP_KEEP)
		return sl_xstrdup(text ? text : "");
	return sl_xasprintf("...(clipped)...\n%s", text + n - CLIP_KEEP);
}

/* "- a\n- b" or the placeholder. */
char *sl_phase_render_list(const cJSON *list, const char *none)
{
	struct sl_buf b = SL_BUF_INIT;
	const cJSON *it;

	cJSON_ArrayForEach (it, list) {
		if (!cJSON_IsString(it))
			continue;
		if (b.len)
			sl_buf_addc(&b, '\n');
		sl_buf_addf(&b, "- %s", it->valuestring);
	}
	if (!b.len)
		sl_buf_adds(&b, none);
	return sl_buf_detach(&b);
}

void sl_phase_var_set(cJSON *vars, const char *name, const char *value)
{
	cJSON_DeleteItemFromObjectCaseSensitive(vars, name);
	cJSON_AddStringToObject(vars, name, value ? value : "");
}

void sl_phase_var_take(cJSON *vars, const char *name, char *value)
{
	sl_phase_var_set(vars, name, value);
	free(value);
}

/* `a`, `b`, ... or (none); caller frees. */
static char *domain_list(const char *const *domains)
{
	struct sl_buf b = SL_BUF_INIT;

	for (; domains && *domains; domains++)
		sl_buf_addf(&b, "%s`%s`", b.len ? ", " : "", *domains);
	if (!b.len)
		sl_buf_adds(&b, "(none)");
	return sl_buf_detach(&b);
}

cJSON *sl_phase_base_vars(const struct sl_phase_ctx *pc)
{
	cJSON *v = cJSON_CreateObject();

	sl_phase_var_set(v, "outcome", pc->outcome);
	sl_phase_var_set(v, "retry_context", "");
	sl_phase_var_take(v, "baseline_registries",
			  domain_list(sl_egress_registries));
	sl_phase_var_take(v, "declarable_registries",
			  domain_list(sl_egress_declarable));
	sl_phase_var_take(v, "guidance",
			  sl_phase_render_list(pc->guidance, "(none)"));
	return v;
}

void sl_phase_task_vars(cJSON *vars, const cJSON *spec)
{
	const char *desc = sl_json_str(spec, "description", "");

	sl_phase_var_set(vars, "task_id", sl_json_str(spec, "id", ""));
	sl_phase_var_set(vars, "task_title", sl_json_str(spec, "title", ""));
	sl_phase_var_set(vars, "task_description",
			 *desc ? desc : "(no further description)");
	sl_phase_var_take(
		vars, "acceptance_criteria",
		sl_phase_render_list(cJSON_GetObjectItemCaseSensitive(
					     spec, "acceptance_criteria"),
				     "(no explicit criteria)"));
}

/* agent.script, a relative path taken from the project file's dir. */
char *sl_phase_script_path(const struct sl_core *core)
{
	const char *path = sl_config_str(core->cfg, "agent.script");
	const char *proj;
	const char *slash;

	if (!path || path[0] == '/')
		return sl_xstrdup(path);
	proj = sl_config_project_file(core->cfg);
	if (proj && (slash = strrchr(proj, '/')) != NULL) {
		char *dir = sl_xstrndup(proj, (size_t)(slash - proj));
		char *abs = NULL, *joined = sl_xasprintf("%s/%s", dir, path);

		abs = realpath(joined, NULL);
		free(dir);
		if (abs) {
			free(joined);
			return abs;
		}
		return joined;
	}
	{
		char *abs = realpath(path, NULL);

		return abs ? abs : sl_xstrdup(path);
	}
}

double sl_phase_job_timeout(const struct sl_core *core)
{
	return sl_config_double(core->cfg, "budgets.per_job_timeout_s",
				1800.0);
}

cJSON *sl_phase_agent_job(const struct sl_phase_ctx *pc, const char *prompt,
			  int read_only, int expect_json)
{
	const struct sl_config *cfg = pc->core->cfg;
	const char *model = sl_config_str(cfg, "model");
	const char *backend = sl_config_str(cfg, "agent.backend");
	long long calls =
		sl_config_int(cfg, "budgets.max_tool_calls_per_phase", 40);
	cJSON *job = cJSON_CreateObject();

	cJSON_AddStringToObject(job, "kind", "agent.session");
	cJSON_AddNumberToObject(job, "timeout_s",
				sl_phase_job_timeout(pc->core));
	cJSON_AddStringToObject(job, "cwd", pc->info->workdir);
	cJSON_AddStringToObject(job, "prompt", prompt);
	cJSON_AddStringToObject(job, "permission_mode",
				read_only ? "read_only" : "auto");
	cJSON_AddStringToObject(job, "expect", expect_json ? "json" : "text");
	if (model && *model && strcmp(model, "auto"))
		cJSON_AddStringToObject(job, "model", model);
	if (calls > 0)
		cJSON_AddNumberToObject(job, "max_tool_calls", (double)calls);
	if (backend && *backend) {
		cJSON_AddStringToObject(job, "backend", backend);
		if (strcmp(backend, "script") == 0) {
			char *s = sl_phase_script_path(pc->core);

			if (s)
				cJSON_AddStringToObject(job, "script", s);
			free(s);
		} else if (sl_config_str(cfg, "agent.preset")) {
			cJSON_AddStringToObject(
				job, "preset",
				sl_config_str(cfg, "agent.preset"));
		}
	}
	return job;
}

int sl_phase_submit(const struct sl_phase_ctx *pc, cJSON *job,
		    const char *persona, cJSON **res,
		    struct sbxloop_error *err)
{
	struct sl_job_tags tags = {"agent", persona, pc->task_id, 0};
	const char *phase = sl_persona_phase(persona);

	/* the script backend's replies can be keyed by task and phase */
	if (cJSON_GetObjectItemCaseSensitive(job, "script") &&
	    !cJSON_GetObjectItemCaseSensitive(job, "script_key")) {
		char *key =
			sl_xasprintf("%s/%s", pc->task_id ? pc->task_id : "",
				     phase ? phase : "");

		cJSON_AddStringToObject(job, "script_key", key);
		free(key);
	}
	return sl_worker_submit(pc->core, pc->info, job, &tags, res, err);
}

/* The error type and message of a failed JobResult. */
void sl_phase_result_error(const cJSON *res, const char **type,
			   const char **msg)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");

	*type = sl_json_str(e, "type", sl_json_str(res, "status", "error"));
	*msg = sl_json_str(e, "message", "no message");
}

/* A failed agent job: the sandbox running out of room or the agent out
 * of tool calls is the task's problem, anything else the run's. */
int sl_phase_job_failed(const char *type, const char *msg,
			struct sbxloop_error *err)
{
	if (strcmp(type, "SandboxResourcesExhausted") == 0)
		return sl_error(err, SL_PHASE_ERESOURCES, "%s", msg);
	if (strcmp(type, "ToolCallCeiling") == 0)
		return sl_error(err, SL_PHASE_EBUDGET, "%s", msg);
	return sl_error(err, SBXLOOP_EINFRA, "agent job failed (%s): %s", type,
			msg);
}

int sl_phase_result_ok(const cJSON *res)
{
	return strcmp(sl_json_str(res, "status", ""), "ok") == 0;
}

/* spec verify commands, then the plan's, first occurrence kept. */
cJSON *sl_phase_verify_commands(const cJSON *spec, const cJSON *plan)
{
	const cJSON *lists[2] = {
		cJSON_GetObjectItemCaseSensitive(spec, "verify_commands"),
		cJSON_GetObjectItemCaseSensitive(plan, "verify_commands")};
	cJSON *out = cJSON_CreateArray();
	const cJSON *c, *o;
	int i;

	for (i = 0; i < 2; i++) {
		cJSON_ArrayForEach (c, lists[i]) {
			int seen = 0;

			if (!cJSON_IsString(c))
				continue;
			cJSON_ArrayForEach (o, out)
				if (strcmp(o->valuestring, c->valuestring) ==
				    0)
					seen = 1;
			if (!seen)
				cJSON_AddItemToArray(
					out,
					cJSON_CreateString(c->valuestring));
		}
	}
	return out;
}

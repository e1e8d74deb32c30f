/*
 * agent.c - the agent.session kind: backend choice and the answer.
 *
 * Owns picking the backend (job field, then SBXLOOP_WORKER_BACKEND, then
 * `script` when a scenario is named, else `command`), the expect=json
 * contract shared by every backend, and the helpers both backends use to
 * shape tool events and merge usage samples.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "worker.h"
#include "common/json.h"

/* A tool call's arguments as one short line for the transcript. */
char *wk_tool_args_display(const cJSON *args)
{
	static const char *const keys[] = {"command", "cmd",     "input",
					   "query",   "pattern", "path"};
	char *s = NULL, *clipped;
	size_t i;

	if (!args || cJSON_IsNull(args))
		return wk_strdup("");
	if (cJSON_IsString(args)) {
		s = wk_strdup(args->valuestring);
	} else if (cJSON_IsObject(args)) {
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]) && !s; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(
				args, keys[i]);

			if (cJSON_IsString(v))
				s = wk_strdup(v->valuestring);
		}
	}
	if (!s) {
		cJSON *dup = cJSON_Duplicate(args, 1);

		s = sl_json_print_sorted(dup);
		cJSON_Delete(dup);
	}
	if (strlen(s) <= WK_TOOL_ARGS_MAX)
		return s;
	clipped = strndup(s, WK_TOOL_ARGS_MAX);
	free(s);
	if (!clipped)
		abort();
	return clipped;
}

static const char *const usage_ints[] = {"input_tokens", "output_tokens",
					 "cache_read_tokens",
					 "cache_write_tokens"};

/*
 * Merge one usage sample into *into: integer counters sum (null stays
 * null), cost sums when either side has one, the latest model wins.
 */
void wk_usage_merge(cJSON **into, const cJSON *sample)
{
	cJSON *u = *into;
	const cJSON *v;
	size_t i;

	if (!cJSON_IsObject(sample))
		return;
	if (!u) {
		u = *into = cJSON_CreateObject();
		cJSON_AddNullToObject(u, "model");
		for (i = 0; i < 4; i++)
			cJSON_AddNullToObject(u, usage_ints[i]);
		cJSON_AddNullToObject(u, "cost");
	}
	for (i = 0; i < 5; i++) {
		const char *k = i < 4 ? usage_ints[i] : "cost";
		cJSON *cur = cJSON_GetObjectItemCaseSensitive(u, k);

		v = cJSON_GetObjectItemCaseSensitive(sample, k);
		if (!cJSON_IsNumber(v))
			continue;
		cJSON_ReplaceItemInObjectCaseSensitive(
			u, k,
			cJSON_CreateNumber(
				v->valuedouble +
				(cJSON_IsNumber(cur) ? cur->valuedouble : 0)));
	}
	v = cJSON_GetObjectItemCaseSensitive(sample, "model");
	if (cJSON_IsString(v))
		cJSON_ReplaceItemInObjectCaseSensitive(
			u, "model", cJSON_CreateString(v->valuestring));
}

void wk_agent_session(struct wk_ctx *ctx, const struct wk_job *job,
		      struct wk_result *res)
{
	const char *backend = job->backend;
	int rc;

	if (!backend)
		backend = getenv("SBXLOOP_WORKER_BACKEND");
	if (!backend || !*backend)
		backend = (job->script || getenv("SBXLOOP_SCRIPT"))
				  ? "script"
				  : "command";
	if (!strcmp(backend, "script")) {
		rc = wk_backend_script(ctx, job, res);
	} else if (!strcmp(backend, "command")) {
		rc = wk_backend_command(ctx, job, res);
	} else {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "unknown agent backend '%s'", backend);
		return;
	}
	if (rc < 0 || res->status != WK_OK)
		return;
	if (job->expect_json && !res->output_json) {
		res->output_json = wk_extract_json(res->output_text);
		if (!res->output_json) {
			const char *t =
				res->output_text ? res->output_text : "";

			wk_result_set_error(
				res, WK_ERROR, "ExpectedJsonMissing",
				wk_utf8_tail(t, strlen(t), WK_SHELL_TAIL),
				"agent response contained no parseable JSON");
		}
	}
}

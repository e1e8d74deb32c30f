/*
 * VERIFY: the task's verify commands run as one shell batch in the
 * sandbox; the transcript and the failures' feedback are its result.
 * Called by the engine through phases.h.
 */
#include "config.h"

#include <stdlib.h>

#include "phases/phases_internal.h"

int sl_phase_verify(const struct sl_phase_ctx *pc, const cJSON *spec,
		    const cJSON *plan, cJSON **out, struct sbxloop_error *err)
{
	struct sl_buf transcript = SL_BUF_INIT, failures = SL_BUF_INIT;
	cJSON *cmds = sl_phase_verify_commands(spec, plan), *job = NULL,
	      *res = NULL;
	const cJSON *it;
	const char *type, *msg;
	double per = sl_phase_job_timeout(pc->core);
	int n = cJSON_GetArraySize(cmds), failed = 0, rc = 0;
	char *fb;

	*out = NULL;
	if (n == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddBoolToObject(*out, "passed", 1);
		cJSON_AddStringToObject(*out, "feedback", "");
		cJSON_AddStringToObject(*out, "results",
					"(no verify commands)");
		cJSON_AddNumberToObject(*out, "failed", 0);
		goto out;
	}
	job = cJSON_CreateObject();
	cJSON_AddStringToObject(job, "kind", "shell.batch");
	cJSON_AddNumberToObject(job, "timeout_s", per * n);
	cJSON_AddNumberToObject(job, "command_timeout_s", per);
	cJSON_AddStringToObject(job, "cwd", pc->info->workdir);
	cJSON_AddItemToObject(job, "commands", cJSON_Duplicate(cmds, 1));
	rc = sl_phase_submit(pc, job, "verifier", &res, err);
	if (rc < 0)
		goto out;
	if (!sl_phase_result_ok(res)) {
		sl_phase_result_error(res, &type, &msg);
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "verify batch job failed (%s): %s", type, msg);
		goto out;
	}
	cJSON_ArrayForEach (
		it, cJSON_GetObjectItemCaseSensitive(res, "output_json")) {
		const char *cmd = sl_json_str(it, "command", "?");
		const char *text = sl_json_str(it, "output", "");
		const cJSON *code =
			cJSON_GetObjectItemCaseSensitive(it, "exit_code");
		int c = cJSON_IsNumber(code) ? code->valueint : -1;

		if (transcript.len)
			sl_buf_adds(&transcript, "\n\n");
		sl_buf_addf(&transcript, "$ %s\n(exit %d)\n%s", cmd, c, text);
		if (c != 0) {
			if (failures.len)
				sl_buf_adds(&failures, "\n\n");
			sl_buf_addf(
				&failures,
				"verify command failed: `%s` (exit %d)\n%s",
				cmd, c, text);
			failed++;
		}
	}
	*out = cJSON_CreateObject();
	cJSON_AddBoolToObject(*out, "passed", failed == 0);
	fb = sl_clip(sl_buf_str(&failures));
	cJSON_AddStringToObject(*out, "feedback", fb);
	free(fb);
	cJSON_AddStringToObject(*out, "results", sl_buf_str(&transcript));
	cJSON_AddNumberToObject(*out, "failed", failed);
out:
	sl_buf_release(&transcript);
	sl_buf_release(&failures);
	cJSON_Delete(cmds);
	cJSON_Delete(job);
	cJSON_Delete(res);
	return rc;
}

/*
 * The two-attempt JSON loop (4.1) of the structured phases: render the
 * prompt, run the agent, validate its JSON and ask once more with the
 * problem quoted; twice invalid is an infrastructure error. Called by
 * DECOMPOSE, PLAN and the critics (phases_internal.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "phases/phases_internal.h"
#include "phases/prompt.h"

/*
 * Run a JSON phase. `vars` gets retry_context set per attempt. On 0,
 * *out is the normalised output and *health (may be NULL) the job's
 * health object; both caller frees.
 */
int sl_phase_json(const struct sl_phase_ctx *pc, const char *phase,
		  const char *persona, int read_only, cJSON *vars,
		  const char *preamble, sl_validate_fn *validate, cJSON **out,
		  cJSON **health, struct sbxloop_error *err)
{
	struct sl_buf problem = SL_BUF_INIT;
	char *prompt = NULL;
	cJSON *res = NULL, *job = NULL;
	int attempt, rc = 0;

	*out = NULL;
	if (health)
		*health = NULL;
	for (attempt = 1; attempt <= 2; attempt++) {
		const char *type, *msg;

		if (attempt == 1) {
			sl_phase_var_set(vars, "retry_context", preamble);
		} else {
			sl_phase_var_take(
				vars, "retry_context",
				sl_xasprintf("%s## Previous attempt was "
					     "invalid\n\n%s\n",
					     preamble, sl_buf_str(&problem)));
		}
		rc = sl_prompt_render(pc->prompts_dir, phase, vars, &prompt,
				      err);
		if (rc < 0)
			goto out;
		job = sl_phase_agent_job(pc, prompt, read_only, 1);
		free(prompt);
		prompt = NULL;
		rc = sl_phase_submit(pc, job, persona, &res, err);
		cJSON_Delete(job);
		job = NULL;
		if (rc < 0)
			goto out;
		sl_buf_reset(&problem);
		if (!sl_phase_result_ok(res)) {
			sl_phase_result_error(res, &type, &msg);
			if (strcmp(type, "ExpectedJsonMissing") != 0) {
				rc = sl_phase_job_failed(type, msg, err);
				goto out;
			}
			sl_buf_adds(&problem,
				    "Your response contained no JSON that "
				    "could be parsed. Reply with ONLY one "
				    "fenced ```json block holding the "
				    "object described above.");
		} else if ((rc = validate(pc,
					  cJSON_GetObjectItemCaseSensitive(
						  res, "output_json"),
					  out, &problem)) > 0) {
			/* past a budget: asking again would not help */
			rc = sl_error(err, SBXLOOP_EINVAL, "%s",
				      sl_buf_str(&problem));
			goto out;
		} else if (rc == 0) {
			if (health) {
				const cJSON *h =
					cJSON_GetObjectItemCaseSensitive(
						res, "health");

				*health = h ? cJSON_Duplicate(h, 1) : NULL;
			}
			rc = 0;
			goto out;
		} else {
			char *quoted = sl_xasprintf(
				"The response did not pass validation:\n\n"
				"```\n%s\n```\n\nFix the structure and reply "
				"again with the complete JSON.",
				sl_buf_str(&problem));

			sl_buf_reset(&problem);
			sl_buf_adds(&problem, quoted);
			free(quoted);
		}
		cJSON_Delete(res);
		res = NULL;
	}
	{
		/* the bare reason, without the advice around it */
		const char *p = sl_buf_str(&problem);
		const char *s = strstr(p, "```\n");
		const char *e = s ? strstr(s + 4, "\n```") : NULL;

		if (s && e)
			rc = sl_error(err, SBXLOOP_EINFRA,
				      "%s produced invalid output twice: %.*s",
				      phase, (int)(e - s - 4), s + 4);
		else
			rc = sl_error(err, SBXLOOP_EINFRA,
				      "%s produced invalid output twice: "
				      "no parseable JSON",
				      phase);
	}
out:
	cJSON_Delete(res);
	free(prompt);
	sl_buf_release(&problem);
	return rc;
}

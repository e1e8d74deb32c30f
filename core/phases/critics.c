/*
 * The critics, SCRUTINIZE and VALIDATE: the verdict schema, the
 * degraded-tooling guard (a clean verdict given while tools failed is
 * asked again, then downgraded) and SCRUTINIZE's mechanically gathered
 * evidence. Called by the engine through phases.h.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "phases/phases_internal.h"
#include "host/redact.h"

#define DIFF_BUDGET 20000
#define EVIDENCE_BUDGET 1500

/* Head + tail within `budget` chars; caller frees. */
static char *clip_head_tail(const char *text, size_t budget)
{
	size_t n = strlen(text), head = budget / 3;

	if (n <= budget)
		return sl_xstrdup(text);
	return sl_xasprintf("%.*s\n...(clipped %zu chars)...\n%s", (int)head,
			    text, n - budget, text + n - (budget - head));
}

static int validate_verdict(const cJSON *in, cJSON **out, struct sl_buf *msg,
			    int scrutiny)
{
	static const char *const skeys[] = {"verdict",
					    "issues",
					    "feedback",
					    "verify_suspect",
					    "verify_suspect_reason",
					    NULL};
	static const char *const vkeys[] = {"verdict", "issues", "feedback",
					    NULL};
	static const char *const ikeys[] = {"severity", "detail", NULL};
	const cJSON *v, *issues, *it;
	cJSON *o = cJSON_CreateObject(), *arr;
	const char *verdict;

	if (sl_schema_only_keys(in, scrutiny ? skeys : vkeys, "the verdict",
				msg) < 0 ||
	    sl_schema_str_field(in, "verdict", NULL, 1, "the verdict", o,
				msg) < 0)
		goto fail;
	verdict = sl_json_str(o, "verdict", "");
	if (strcmp(verdict, "pass") && strcmp(verdict, "revise") &&
	    strcmp(verdict, "accept") && strcmp(verdict, "reject")) {
		sl_buf_addf(msg, "'verdict' must be one of %s, not '%s'",
			    scrutiny ? "pass, revise" : "accept, reject",
			    verdict);
		goto fail;
	}
	issues = cJSON_GetObjectItemCaseSensitive(in, "issues");
	if (issues && !cJSON_IsArray(issues)) {
		sl_buf_adds(msg, "'issues' must be a list");
		goto fail;
	}
	arr = cJSON_AddArrayToObject(o, "issues");
	cJSON_ArrayForEach (it, issues) {
		cJSON *i = cJSON_CreateObject();
		const char *sev;

		cJSON_AddItemToArray(arr, i);
		if (sl_schema_only_keys(it, ikeys, "an issue", msg) < 0 ||
		    sl_schema_str_field(it, "severity", "medium", 1,
					"an issue", i, msg) < 0 ||
		    sl_schema_str_field(it, "detail", "", 0, "an issue", i,
					msg) < 0)
			goto fail;
		sev = sl_json_str(i, "severity", "");
		if (strcmp(sev, "low") && strcmp(sev, "medium") &&
		    strcmp(sev, "high")) {
			sl_buf_addf(msg,
				    "issue severity must be low, medium "
				    "or high, not '%s'",
				    sev);
			goto fail;
		}
	}
	if (sl_schema_str_field(in, "feedback", "", 0, "the verdict", o, msg) <
	    0)
		goto fail;
	if (scrutiny) {
		const char *reason;

		v = cJSON_GetObjectItemCaseSensitive(in, "verify_suspect");
		if (v && !cJSON_IsBool(v)) {
			sl_buf_adds(msg, "'verify_suspect' must be true or "
					 "false");
			goto fail;
		}
		cJSON_AddBoolToObject(o, "verify_suspect", cJSON_IsTrue(v));
		if (sl_schema_str_field(in, "verify_suspect_reason", "", 0,
					"the verdict", o, msg) < 0)
			goto fail;
		reason = sl_json_str(o, "verify_suspect_reason", "");
		if (cJSON_IsTrue(v) && sl_schema_is_blank(reason)) {
			sl_buf_adds(msg,
				    "'verify_suspect' is true, so "
				    "'verify_suspect_reason' must say why "
				    "the check is wrong");
			goto fail;
		}
	}
	*out = o;
	return 0;
fail:
	cJSON_Delete(o);
	return -1;
}

static int validate_scrutiny(const struct sl_phase_ctx *pc, const cJSON *in,
			     cJSON **out, struct sl_buf *msg)
{
	(void)pc;
	return validate_verdict(in, out, msg, 1);
}

static int validate_validation(const struct sl_phase_ctx *pc, const cJSON *in,
			       cJSON **out, struct sl_buf *msg)
{
	(void)pc;
	return validate_verdict(in, out, msg, 0);
}

static int health_degraded(const cJSON *health)
{
	const cJSON *tf =
		cJSON_GetObjectItemCaseSensitive(health, "tool_failures");

	return cJSON_IsObject(tf) && tf->child != NULL;
}

static char *health_summary(const cJSON *health)
{
	static const char *const parts[] = {
		"tool_failures", "permission_denials", "tool_refusals"};
	static const char *const names[] = {
		"tool failures", "permission denials", "tool refusals"};
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	for (i = 0; i < 3; i++) {
		const cJSON *o =
			cJSON_GetObjectItemCaseSensitive(health, parts[i]);
		const cJSON *it;
		int first = 1;

		if (!cJSON_IsObject(o) || !o->child)
			continue;
		if (b.len)
			sl_buf_adds(&b, "; ");
		sl_buf_addf(&b, "%s: ", names[i]);
		cJSON_ArrayForEach (it, o) {
			sl_buf_addf(&b, "%s%s x%d", first ? "" : ", ",
				    it->string, it->valueint);
			first = 0;
		}
	}
	if (!b.len)
		sl_buf_adds(&b, "healthy");
	return sl_buf_detach(&b);
}

/*
 * A critic session with the degraded-tooling guard: a clean verdict
 * given while tools were failing is asked again, and a second such
 * verdict is downgraded to the dirty one. A verdict that is neither
 * `clean` nor `dirty` is an error of the phase (SBXLOOP_EINFRA).
 */
static int critic(const struct sl_phase_ctx *pc, const char *phase,
		  const char *persona, cJSON *vars, sl_validate_fn *validate,
		  const char *clean, const char *dirty, cJSON **verdict,
		  struct sbxloop_error *err)
{
	cJSON *v = NULL, *health = NULL, *issues;
	char *summary = NULL, *pre = NULL;
	const char *got;
	int rc;

	*verdict = NULL;
	rc = sl_phase_json(pc, phase, persona, 1, vars, "", validate, &v,
			   &health, err);
	if (rc < 0)
		goto out;
	got = sl_json_str(v, "verdict", "");
	if (strcmp(got, clean) || !health_degraded(health))
		goto accept;
	summary = health_summary(health);
	pre = sl_xasprintf(
		"## Degraded tooling warning\n\nYour previous session "
		"reported tool trouble (%s), so its '%s' verdict was "
		"discarded. If you cannot actually inspect the work, answer "
		"'%s' and say what you could not check.\n\n",
		summary, clean, dirty);
	cJSON_Delete(v);
	cJSON_Delete(health);
	v = health = NULL;
	rc = sl_phase_json(pc, phase, persona, 1, vars, pre, validate, &v,
			   &health, err);
	if (rc < 0)
		goto out;
	got = sl_json_str(v, "verdict", "");
	if (strcmp(got, clean) || !health_degraded(health))
		goto accept;
	free(summary);
	summary = health_summary(health);
	cJSON_ReplaceItemInObjectCaseSensitive(v, "verdict",
					       cJSON_CreateString(dirty));
	issues = cJSON_GetObjectItemCaseSensitive(v, "issues");
	{
		cJSON *i = cJSON_CreateObject();
		char *d = sl_xasprintf("the reviewer's tools failed twice "
				       "(%s); its '%s' verdict was "
				       "downgraded",
				       summary, clean);

		cJSON_AddStringToObject(i, "severity", "high");
		cJSON_AddStringToObject(i, "detail", d);
		free(d);
		cJSON_AddItemToArray(issues, i);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(
		v, "feedback",
		cJSON_CreateString("The review could not inspect this work "
				   "because its tools kept failing, so the "
				   "work counts as unreviewed. Report "
				   "concrete evidence (commands run and their "
				   "output) that it meets the criteria."));
	cJSON_AddBoolToObject(v, "downgraded", 1);
accept:
	got = sl_json_str(v, "verdict", "");
	if (strcmp(got, clean) && strcmp(got, dirty)) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "%s returned the verdict '%s' (expected %s or "
			      "%s)",
			      phase, got, clean, dirty);
		goto out;
	}
	if (health && health_degraded(health))
		cJSON_AddItemToObject(v, "tooling_health",
				      cJSON_Duplicate(health, 1));
	*verdict = v;
	v = NULL;
out:
	cJSON_Delete(v);
	cJSON_Delete(health);
	free(summary);
	free(pre);
	return rc;
}

/* `text` cut after its first `n` lines, in place. */
static void first_lines(char *text, size_t n)
{
	char *p = text;

	while (n-- && (p = strchr(p, '\n')) != NULL)
		p++;
	if (p)
		*p = '\0';
}

void sl_evidence_clear(struct sl_evidence *ev)
{
	free(ev->status);
	free(ev->diff);
	free(ev->recent);
	memset(ev, 0, sizeof(*ev));
}

static const char *const evidence_labels[] = {"git status", "git diff HEAD",
					      "recently changed files"};

/*
 * The evidence's three texts (NULL: none) clipped, each to its budget
 * and line cap, under its label; the same whoever gathered them.
 */
static void format_evidence(struct sl_buf *b, const char *const texts[3])
{
	static const size_t budgets[] = {EVIDENCE_BUDGET, DIFF_BUDGET,
					 EVIDENCE_BUDGET};
	static const size_t max_lines[] = {50, 0, 30};
	size_t i;

	for (i = 0; i < 3; i++) {
		char *clipped, *trimmed;
		size_t n;

		if (!texts[i])
			continue;
		clipped = clip_head_tail(texts[i], budgets[i]);
		if (max_lines[i])
			first_lines(clipped, max_lines[i]);
		trimmed = clipped;
		while (isspace((unsigned char)*trimmed))
			trimmed++;
		n = strlen(trimmed);
		while (n && isspace((unsigned char)trimmed[n - 1]))
			trimmed[--n] = '\0';
		if (n)
			sl_buf_addf(b, "### %s\n\n```\n%s\n```\n\n",
				    evidence_labels[i], trimmed);
		free(clipped);
	}
}

/*
 * Evidence for the reviewer, gathered mechanically; never fails. Given
 * by the engine, or a job in the sandbox whose commands go as argv
 * lists, run without a shell (three processes where pipes through sh
 * made eight).
 */
static char *gather_evidence(const struct sl_phase_ctx *pc,
			     const struct sl_evidence *given)
{
	static const char *const cmds[][10] = {
		{"git", "status", "--short", NULL},
		{"git", "diff", "HEAD", NULL},
		{"find", ".", "-type", "f", "-newer", "/tmp", "-not", "-path",
		 "./.git/*", NULL}};
	struct sbxloop_error err = {0, ""};
	struct sl_buf b = SL_BUF_INIT;
	const char *texts[3] = {NULL, NULL, NULL};
	cJSON *job, *arr, *res = NULL;
	const cJSON *it;
	size_t i = 0;

	if (given) {
		texts[0] = given->status;
		texts[1] = given->diff;
		texts[2] = given->recent;
		format_evidence(&b, texts);
		goto out;
	}
	job = cJSON_CreateObject();
	cJSON_AddStringToObject(job, "kind", "shell.batch");
	cJSON_AddNumberToObject(job, "timeout_s", 120);
	cJSON_AddNumberToObject(job, "command_timeout_s", 60);
	/* an agent's FIFO where git reads must not cost the review its
	 * evidence (the command's minute, then nothing) */
	cJSON_AddTrueToObject(job, "release_fifos");
	cJSON_AddStringToObject(job, "cwd", pc->info->workdir);
	arr = cJSON_AddArrayToObject(job, "commands");
	for (i = 0; i < 3; i++) {
		cJSON *argv = cJSON_CreateArray();
		size_t k;

		for (k = 0; cmds[i][k]; k++)
			cJSON_AddItemToArray(argv,
					     cJSON_CreateString(cmds[i][k]));
		cJSON_AddItemToArray(arr, argv);
	}
	if (sl_phase_submit(pc, job, "scrutinizer", &res, &err) < 0 ||
	    !sl_phase_result_ok(res)) {
		sl_log(SBXLOOP_LOG_WARN, "cannot gather review evidence: %s",
		       err.message[0] ? err.message : "batch job failed");
	} else {
		i = 0;
		cJSON_ArrayForEach (it, cJSON_GetObjectItemCaseSensitive(
						res, "output_json")) {
			if (i >= 3)
				break;
			texts[i++] = sl_json_str(it, "output", "");
		}
		format_evidence(&b, texts);
	}
	cJSON_Delete(job);
	cJSON_Delete(res);
out:
	if (!b.len)
		sl_buf_adds(&b, "(no evidence gathered)");
	return sl_buf_detach(&b);
}

int sl_phase_scrutinize(const struct sl_phase_ctx *pc, const cJSON *spec,
			const cJSON *plan, const char *feedback,
			const char *report, const struct sl_evidence *evidence,
			cJSON **verdict, struct sbxloop_error *err)
{
	cJSON *vars = sl_phase_base_vars(pc), *cmds;
	int rc;

	sl_phase_task_vars(vars, spec);
	sl_phase_var_take(
		vars, "plan_steps",
		sl_phase_render_list(
			cJSON_GetObjectItemCaseSensitive(plan, "steps"),
			"(no steps)"));
	sl_phase_var_take(
		vars, "feedback",
		sl_clip(feedback && *feedback ? feedback : "(none)"));
	sl_phase_var_take(vars, "report",
			  sl_clip(report && *report
					  ? report
					  : "(executor produced no report)"));
	sl_phase_var_take(vars, "evidence", gather_evidence(pc, evidence));
	cmds = sl_phase_verify_commands(spec, plan);
	sl_phase_var_take(vars, "verify_commands",
			  sl_phase_render_list(cmds, "(no verify commands)"));
	cJSON_Delete(cmds);
	rc = critic(pc, "scrutinize", "scrutinizer", vars, validate_scrutiny,
		    "pass", "revise", verdict, err);
	cJSON_Delete(vars);
	return rc;
}

int sl_phase_validate(const struct sl_phase_ctx *pc, const cJSON *spec,
		      const char *verify_results, cJSON **verdict,
		      struct sbxloop_error *err)
{
	cJSON *vars = sl_phase_base_vars(pc);
	int rc;

	sl_phase_task_vars(vars, spec);
	sl_phase_var_set(vars, "verify_results", verify_results);
	rc = critic(pc, "validate", "validator", vars, validate_validation,
		    "accept", "reject", verdict, err);
	cJSON_Delete(vars);
	return rc;
}

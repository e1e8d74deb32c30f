/*
 * Prompt rendering (core/phases/prompt.c), specified in process: `$name`
 * placeholders are substituted, `$$` stays a literal dollar, comments
 * are stripped, a missing variable or a malformed placeholder is an
 * error, and every prompt shipped in prompts/ renders with the
 * variables the engine provides.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "phases/phases.h"
#include "phases/prompt.h"
#include "testutil.h"

static char *render(const char *text, struct sbxloop_error *err)
{
	cJSON *vars = cJSON_CreateObject();
	char *out = NULL;

	cJSON_AddStringToObject(vars, "name", "fib");
	cJSON_AddStringToObject(vars, "n_2", "$x");
	if (sl_prompt_render_text(text, vars, &out, err) < 0)
		out = NULL;
	cJSON_Delete(vars);
	return out;
}

START_TEST(test_prompt_substitutes_and_keeps_literal_dollars)
{
	struct sbxloop_error err = {0, ""};
	char *out = render("<!-- contract: $nothing -->\n\nbuild $name for "
			   "$$5 ($n_2)\n",
			   &err);

	ck_assert_ptr_nonnull(out);
	ck_assert_str_eq(out, "build fib for $5 ($x)\n");
	free(out);
}
END_TEST

START_TEST(test_prompt_missing_variable_is_an_error)
{
	struct sbxloop_error err = {0, ""};
	char *out = render("hello $who", &err);

	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(err.message, "'who' is not set"));
	out = render("costs $5", &err);
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(err.message, "invalid placeholder"));
}
END_TEST

START_TEST(test_shipped_prompts_render_with_the_engine_variables)
{
	static const char *const names[] = {"decompose", "plan",
					    "execute",   "scrutinize",
					    "validate",  "steer"};
	static const char *const vars[] = {"outcome",
					   "max_tasks",
					   "retry_context",
					   "task_id",
					   "task_title",
					   "task_description",
					   "acceptance_criteria",
					   "verify_commands",
					   "feedback",
					   "guidance",
					   "plan_steps",
					   "expected_artifacts",
					   "prior_attempt",
					   "report",
					   "evidence",
					   "verify_results",
					   "baseline_registries",
					   "declarable_registries",
					   "task_board",
					   "current_task",
					   "message"};
	struct sbxloop_error err = {0, ""};
	char dirname[4200];
	cJSON *v = cJSON_CreateObject();
	size_t i;

	snprintf(dirname, sizeof(dirname), "%s/prompts",
		 tu_env("SBXLOOP_SRCDIR"));
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		cJSON_AddStringToObject(v, vars[i], "x");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *out = NULL;

		ck_assert_msg(sl_prompt_render(dirname, names[i], v, &out,
					       &err) == 0,
			      "%s: %s", names[i], err.message);
		ck_assert_ptr_null(strstr(out, "<!--"));
		free(out);
	}
	cJSON_Delete(v);
}
END_TEST

/* The STEER reply `json` checked: its normalised form or "!problem". */
static char *verdict(const char *json)
{
	cJSON *in = cJSON_Parse(json), *out = NULL;
	char *problem = NULL, *r;

	ck_assert_ptr_nonnull(in);
	if (sl_phase_steer_verdict(in, &out, &problem) < 0) {
		ck_assert_ptr_null(out);
		r = malloc(strlen(problem) + 2);
		sprintf(r, "!%s", problem);
		free(problem);
	} else {
		ck_assert_ptr_null(problem);
		r = cJSON_PrintUnformatted(out);
		cJSON_Delete(out);
	}
	cJSON_Delete(in);
	return r;
}

static void assert_verdict(const char *json, const char *want)
{
	char *got = verdict(json);

	ck_assert_msg(want[0] == '!' ? strncmp(got, want, strlen(want)) == 0
				     : strcmp(got, want) == 0,
		      "%s gave %s, not %s", json, got, want);
	free(got);
}

START_TEST(test_steer_verdicts_are_checked_strictly)
{
	/* defaults: continue, no guidance, no reply */
	assert_verdict("{}", "{\"reply\":\"\",\"action\":\"continue\","
			     "\"guidance\":\"\"}");
	assert_verdict("{\"reply\":\"ok\",\"action\":\"steer_run\","
		       "\"guidance\":\"use tabs\"}",
		       "{\"reply\":\"ok\",\"action\":\"steer_run\","
		       "\"guidance\":\"use tabs\"}");
	assert_verdict("{\"action\":\"steer_task\"}",
		       "!action steer_task needs non-blank 'guidance'");
	assert_verdict("{\"action\":\"steer_run\",\"guidance\":\"  \\n\"}",
		       "!action steer_run needs non-blank 'guidance'");
	assert_verdict("{\"action\":\"reboot\",\"guidance\":\"x\"}",
		       "!'action' must be continue, steer_task or steer_run");
	assert_verdict("{\"reply\":\"ok\",\"mood\":\"happy\"}", "!");
	assert_verdict("{\"reply\":7}", "!");
	assert_verdict("{\"action\":null}", "!");
}
END_TEST

static Suite *prompt_suite(void)
{
	Suite *s = suite_create("prompt");
	TCase *tc = tcase_create("render");

	tcase_add_test(tc, test_prompt_substitutes_and_keeps_literal_dollars);
	tcase_add_test(tc, test_prompt_missing_variable_is_an_error);
	tcase_add_test(tc, test_steer_verdicts_are_checked_strictly);
	tcase_add_test(tc,
		       test_shipped_prompts_render_with_the_engine_variables);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(prompt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Identifiers (core/engine/ids.c), specified in process: the run and job
 * ids the engine mints, the rule a task id proposed by an agent must
 * follow, and the one builder and parser of sandbox names
 * (`sbxloop-<run>-agent`, `sbxloop-<run>-github`).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ids.h"

START_TEST(test_ids_use_the_alphabet)
{
	char run[SL_RUN_ID_LEN + 1], job[SL_JOB_ID_LEN + 1];

	sl_run_id_new(run);
	sl_job_id_new(job);
	ck_assert_int_eq(strlen(run), 9);
	ck_assert_int_eq(strlen(job), 11);
	ck_assert(sl_run_id_valid(run));
	ck_assert_int_eq(job[0], 'j');
	ck_assert(strspn(run + 1, "0123456789abcdefghjkmnpqrstvwxyz") == 8);
	ck_assert(!sl_run_id_valid("rILOU0000"));
}
END_TEST

START_TEST(test_task_ids_are_short_path_safe_names)
{
	static const char *const good[] = {"a", "task-1", "T_2.x", "0"};
	static const char *const bad[] = {"",    ".hidden", "-rf",
					  "a/b", "../x",    "a\nb",
					  "a b", "\xc3\xa9"};
	char id[SL_TASK_ID_MAX + 2];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(sl_task_id_valid(good[i]), "'%s' is refused",
			      good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!sl_task_id_valid(bad[i]), "'%s' is accepted",
			      bad[i]);
	ck_assert(!sl_task_id_valid(NULL));
	memset(id, 'a', SL_TASK_ID_MAX);
	id[SL_TASK_ID_MAX] = '\0';
	ck_assert(sl_task_id_valid(id));
	id[SL_TASK_ID_MAX] = 'a';
	id[SL_TASK_ID_MAX + 1] = '\0';
	ck_assert(!sl_task_id_valid(id));
}
END_TEST

START_TEST(test_sandbox_names_round_trip_for_both_roles)
{
	static const char *const roles[] = {"agent", "github"};
	char run[SL_RUN_ID_LEN + 1], name[64], want[64],
		back[SL_RUN_ID_LEN + 1];
	size_t i;

	sl_run_id_new(run);
	for (i = 0; i < 2; i++) {
		const char *role = NULL;

		ck_assert_int_eq(
			sl_sandbox_name(name, sizeof(name), run, roles[i]), 0);
		snprintf(want, sizeof(want), "sbxloop-%s-%s", run, roles[i]);
		ck_assert_str_eq(name, want);
		ck_assert_int_eq(strncmp(name, SL_SANDBOX_PREFIX,
					 strlen(SL_SANDBOX_PREFIX)),
				 0);
		ck_assert_int_eq(
			sl_sandbox_name_parse(name, back, sizeof(back), &role),
			0);
		ck_assert_str_eq(back, run);
		ck_assert_ptr_nonnull(role);
		ck_assert_str_eq(role, roles[i]);
	}
}
END_TEST

/* sl_sandbox_name_parse(name) fails and leaves role alone. */
static void assert_not_a_pair_name(const char *name)
{
	static const char *const untouched = "untouched";
	char run[SL_RUN_ID_LEN + 1];
	const char *role = untouched;

	ck_assert_msg(sl_sandbox_name_parse(name, run, sizeof(run), &role) ==
			      -1,
		      "'%s' parses as a pair name", name);
	ck_assert_ptr_eq(role, untouched);
}

START_TEST(test_sandbox_name_parse_rejects_a_foreign_prefix)
{
	assert_not_a_pair_name("sbx-rabcdefgh-agent");
	assert_not_a_pair_name("Sbxloop-rabcdefgh-agent");
	assert_not_a_pair_name("other-rabcdefgh-agent");
	assert_not_a_pair_name("rabcdefgh-agent");
	assert_not_a_pair_name("sbxloop");
	assert_not_a_pair_name("");
}
END_TEST

START_TEST(test_sandbox_name_parse_rejects_an_unknown_role)
{
	assert_not_a_pair_name("sbxloop-rabcdefgh-proxy");
	assert_not_a_pair_name("sbxloop-rabcdefgh-agents");
	assert_not_a_pair_name("sbxloop-rabcdefgh-Agent");
	assert_not_a_pair_name("sbxloop-rabcdefgh-");
	assert_not_a_pair_name("sbxloop-rabcdefgh");
	assert_not_a_pair_name("sbxloop-rabcdefgh-lane");
	assert_not_a_pair_name("sbxloop-rabcdefgh-lanex");
	assert_not_a_pair_name("sbxloop-rabcdefgh-lane1x");
}
END_TEST

/* A lane's agent sandbox (sandbox.lanes: per-lane) is the run's, role
 * agent, so `sandbox rm --run` and prune find it. */
START_TEST(test_sandbox_name_parse_takes_a_lane_box)
{
	char run[SL_RUN_ID_LEN + 1], name[128];
	const char *role = NULL;

	ck_assert_int_eq(
		sl_sandbox_name(name, sizeof(name), "rabcdefgh", "lane12"), 0);
	ck_assert_int_eq(sl_sandbox_name_parse(name, run, sizeof(run), &role),
			 0);
	ck_assert_str_eq(run, "rabcdefgh");
	ck_assert_str_eq(role, "agent");
}
END_TEST

START_TEST(test_sandbox_name_parse_rejects_an_invalid_run_id)
{
	assert_not_a_pair_name("sbxloop--agent");
	assert_not_a_pair_name("sbxloop-rILOU0000-agent");
	assert_not_a_pair_name("sbxloop-rabcdefg-agent");
	assert_not_a_pair_name("sbxloop-xabcdefgh-github");
	assert_not_a_pair_name("sbxloop-rabcdefgh-x-agent");
}
END_TEST

START_TEST(test_sandbox_name_parse_refuses_a_run_buffer_too_small)
{
	char run[SL_RUN_ID_LEN + 1];
	const char *role = NULL;

	ck_assert_int_eq(sl_sandbox_name_parse("sbxloop-rabcdefgh-agent", run,
					       SL_RUN_ID_LEN, &role),
			 -1);
	ck_assert_ptr_null(role);
	ck_assert_int_eq(sl_sandbox_name_parse("sbxloop-rabcdefgh-agent", run,
					       SL_RUN_ID_LEN + 1, &role),
			 0);
	ck_assert_str_eq(run, "rabcdefgh");
}
END_TEST

START_TEST(test_sandbox_name_refuses_a_buffer_too_small)
{
	const char *want = "sbxloop-rabcdefgh-github";
	char name[64];

	ck_assert_int_eq(
		sl_sandbox_name(name, strlen(want), "rabcdefgh", "github"),
		-1);
	ck_assert_int_eq(sl_sandbox_name(name, 1, "rabcdefgh", "github"), -1);
	ck_assert_int_eq(
		sl_sandbox_name(name, strlen(want) + 1, "rabcdefgh", "github"),
		0);
	ck_assert_str_eq(name, want);
}
END_TEST

static Suite *ids_suite(void)
{
	Suite *s = suite_create("ids");
	TCase *tc;

	tc = tcase_create("minted");
	tcase_add_test(tc, test_ids_use_the_alphabet);
	tcase_add_test(tc, test_task_ids_are_short_path_safe_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("sandbox names");
	tcase_add_test(tc, test_sandbox_names_round_trip_for_both_roles);
	tcase_add_test(tc, test_sandbox_name_parse_rejects_a_foreign_prefix);
	tcase_add_test(tc, test_sandbox_name_parse_rejects_an_unknown_role);
	tcase_add_test(tc, test_sandbox_name_parse_rejects_an_invalid_run_id);
	tcase_add_test(tc, test_sandbox_name_parse_takes_a_lane_box);
	tcase_add_test(tc,
		       test_sandbox_name_parse_refuses_a_run_buffer_too_small);
	tcase_add_test(tc, test_sandbox_name_refuses_a_buffer_too_small);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ids_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

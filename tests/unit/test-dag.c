/*
 * The task graph (core/engine/dag.c), specified in process: the order
 * the engine runs a decomposition in (by depth, then by the position the
 * agent wrote the task at) and the graphs it refuses, each with the
 * reason it gives.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/dag.h"

/* The ids of `json`'s tasks in run order, comma-separated, into got. */
static int order_of(const char *json, char *got, size_t len,
		    struct sbxloop_error *err)
{
	cJSON *tasks = cJSON_Parse(json);
	size_t *order = NULL, n = 0, i;
	int rc = sl_dag_order(tasks, &order, &n, err);

	got[0] = '\0';
	for (i = 0; rc == 0 && i < n; i++) {
		const cJSON *t = cJSON_GetArrayItem(tasks, (int)order[i]);

		snprintf(got + strlen(got), len - strlen(got), "%s%s",
			 i ? "," : "",
			 cJSON_GetObjectItem(t, "id")->valuestring);
	}
	free(order);
	cJSON_Delete(tasks);
	return rc;
}

START_TEST(test_dag_orders_by_depth_then_authored_position)
{
	struct sbxloop_error err = {0, ""};
	char got[128];

	ck_assert_int_eq(order_of("[{\"id\":\"c\",\"depends_on\":[\"b\"]},"
				  "{\"id\":\"b\",\"depends_on\":[\"a\"]},"
				  "{\"id\":\"x\",\"depends_on\":[]},"
				  "{\"id\":\"a\",\"depends_on\":[]}]",
				  got, sizeof(got), &err),
			 0);
	ck_assert_str_eq(got, "x,a,b,c");
}
END_TEST

START_TEST(test_dag_rejects_bad_graphs)
{
	static const char *const bad[][2] = {
		{"[]", "empty"},
		{"[{\"id\":\"a\",\"depends_on\":[]},{\"id\":\"a\","
		 "\"depends_on\":[]}]",
		 "more than once"},
		{"[{\"id\":\"a\",\"depends_on\":[\"z\"]}]",
		 "which is not a task"},
		{"[{\"id\":\"a\",\"depends_on\":[\"a\"]}]",
		 "depends on itself"},
		{"[{\"id\":\"a\",\"depends_on\":[\"b\"]},{\"id\":\"b\","
		 "\"depends_on\":[\"a\"]}]",
		 "cycle"},
	};
	struct sbxloop_error err = {0, ""};
	char got[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(order_of(bad[i][0], got, sizeof(got), &err),
				 SBXLOOP_EINVAL);
		ck_assert_msg(strstr(err.message, bad[i][1]), "%s: %s",
			      bad[i][0], err.message);
	}
}
END_TEST

static Suite *dag_suite(void)
{
	Suite *s = suite_create("dag");
	TCase *tc = tcase_create("order");

	tcase_add_test(tc, test_dag_orders_by_depth_then_authored_position);
	tcase_add_test(tc, test_dag_rejects_bad_graphs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dag_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

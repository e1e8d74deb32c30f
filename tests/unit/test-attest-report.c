/*
 * The security probes' vocabulary and reports, in process: run.attest
 * levels, capability names, the canaries' shape, the sandbox.attested
 * data and the failure reason. The probes themselves run against real
 * providers in tests/e2e/test-attest.c.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>

#include "engine/attest.h"
#include "engine/attest_cmds.h"

START_TEST(test_levels_parse_and_anything_else_is_refused)
{
	enum sl_attest_level l = SL_ATTEST_FULL;

	ck_assert_int_eq(sl_attest_level_parse("off", &l), 0);
	ck_assert_int_eq(l, SL_ATTEST_OFF);
	ck_assert_int_eq(sl_attest_level_parse("quick", &l), 0);
	ck_assert_int_eq(l, SL_ATTEST_QUICK);
	ck_assert_int_eq(sl_attest_level_parse("full", &l), 0);
	ck_assert_int_eq(l, SL_ATTEST_FULL);
	ck_assert_int_eq(sl_attest_level_parse("sometimes", &l),
			 SBXLOOP_EINVAL);
}
END_TEST

START_TEST(test_capabilities_are_named_and_zero_is_the_split)
{
	ck_assert_str_eq(sl_attest_cap_name(SBXLOOP_CAP_FILESYSTEM_CONFINED),
			 "filesystem_confined");
	ck_assert_str_eq(sl_attest_cap_name(SBXLOOP_CAP_WORKSPACE_READ_ONLY),
			 "workspace_read_only");
	ck_assert_str_eq(sl_attest_cap_name(0), "credential_split");
}
END_TEST

START_TEST(test_canaries_share_a_public_nonce_and_differ_in_secret)
{
	char model[64], gh[64], nonce[SL_CANARY_NONCE_LEN + 1];
	size_t p = strlen(SL_CANARY_PREFIX);

	ck_assert_int_eq(sl_attest_canaries(model, gh, nonce, NULL), 0);
	ck_assert_uint_eq(strlen(nonce), SL_CANARY_NONCE_LEN);
	ck_assert_uint_eq(strlen(model), p + 1 + SL_CANARY_NONCE_LEN + 32);
	ck_assert(!strncmp(model, SL_CANARY_PREFIX "m", p + 1));
	ck_assert(!strncmp(gh, SL_CANARY_PREFIX "g", p + 1));
	ck_assert(!strncmp(model + p + 1, nonce, SL_CANARY_NONCE_LEN));
	ck_assert(!strncmp(gh + p + 1, nonce, SL_CANARY_NONCE_LEN));
	ck_assert_str_ne(model + p + 1 + SL_CANARY_NONCE_LEN,
			 gh + p + 1 + SL_CANARY_NONCE_LEN);
}
END_TEST

START_TEST(test_the_event_and_reason_name_the_probe_and_capability)
{
	struct sl_attest *a = calloc(1, sizeof(*a));
	struct sl_probe *p = &a->probes[a->n++];
	cJSON *d;
	char *why, *text;

	a->claimed[0] = SBXLOOP_CAP_FILESYSTEM_CONFINED |
			SBXLOOP_CAP_WORKSPACE_MOUNTED;
	a->measured[0] = SBXLOOP_CAP_WORKSPACE_MOUNTED;
	p->name = "host_fs_write";
	p->role = "agent";
	p->capability = SBXLOOP_CAP_FILESYSTEM_CONFINED;
	p->claimed = p->ran = 1;
	snprintf(p->measured, sizeof(p->measured), "wrote a file");
	ck_assert_ptr_eq(sl_attest_failure(a), p);

	d = sl_attest_event(a, "agent");
	text = cJSON_PrintUnformatted(d);
	ck_assert_msg(strstr(text, "\"claimed\":[\"filesystem_confined\","
				   "\"workspace_mounted\"]") &&
			      strstr(text, "\"measured\":[\"workspace_"
					   "mounted\"]") &&
			      strstr(text, "\"pass\":false"),
		      "%s", text);
	why = sl_attest_reason(p);
	ck_assert_str_eq(why, "sandbox attestation failed: the agent sandbox "
			      "claims filesystem_confined but probe "
			      "host_fs_write measured: wrote a file");
	p->pass = 1;
	ck_assert_ptr_null(sl_attest_failure(a));
	free(why);
	free(text);
	cJSON_Delete(d);
	free(a);
}
END_TEST

/*
 * The filesystem probes' script under the system's sh (dash on Debian),
 * with the first target refused: the others are still tried.
 */
START_TEST(test_the_write_script_goes_on_past_a_refused_target)
{
	char dir[] = "/tmp/sbxloop-attest-XXXXXX", t[3][96], cmd[160];
	char out[256] = "", *targets[3], *script;
	size_t got;
	FILE *f;
	int i, status;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(t[0], sizeof(t[0]), "%s/missing/a", dir); /* refused */
	snprintf(t[1], sizeof(t[1]), "%s/b", dir);
	snprintf(t[2], sizeof(t[2]), "%s/c", dir);
	for (i = 0; i < 3; i++)
		targets[i] = t[i];
	script = sl_attest_write_script(targets, 3);
	snprintf(cmd, sizeof(cmd), "%s/probe.sh", dir);
	f = fopen(cmd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(script, f);
	fclose(f);
	free(script);
	snprintf(cmd, sizeof(cmd), "/bin/sh %s/probe.sh 2>&1", dir);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	got = fread(out, 1, sizeof(out) - 1, f);
	out[got] = '\0';
	status = pclose(f);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "status %d: %s", status, out);
	ck_assert_msg(!strstr(out, "wrote 0") && strstr(out, "wrote 1") &&
			      strstr(out, "wrote 2"),
		      "%s", out);
	ck_assert_int_eq(access(t[1], F_OK), 0);
	ck_assert_int_eq(access(t[2], F_OK), 0);
	unlink(t[1]);
	unlink(t[2]);
	snprintf(cmd, sizeof(cmd), "%s/probe.sh", dir);
	unlink(cmd);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *attest_report_suite(void)
{
	Suite *s = suite_create("attest-report");
	TCase *tc = tcase_create("report");

	tcase_add_test(tc, test_levels_parse_and_anything_else_is_refused);
	tcase_add_test(tc, test_capabilities_are_named_and_zero_is_the_split);
	tcase_add_test(tc,
		       test_the_write_script_goes_on_past_a_refused_target);
	tcase_add_test(
		tc, test_canaries_share_a_public_nonce_and_differ_in_secret);
	tcase_add_test(
		tc, test_the_event_and_reason_name_the_probe_and_capability);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(attest_report_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

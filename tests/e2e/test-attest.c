/*
 * The security conformance suite against every provider, through the
 * real binary: `sbxloop doctor --deep` on local (isolation none, bwrap,
 * bwrap with the egress proxy), the mock, a mock that claims what it
 * does not enforce (mock.claim), and the fake sbx; run.attest at
 * provisioning. No canary ever shows in what a test leaves behind.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

#include "runtest.h"
#include "testutil.h"

static const char *const deep[] = {"doctor", "--deep", NULL};

/* The row of probe `name` in `role` from doctor --deep's table ("" none) */
static char *probe_row(const char *out, const char *name, const char *role)
{
	const char *line = out;
	size_t n = strlen(name);

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (!strncmp(line, name, n) && line[n] == ' ') {
			char *row = sl_xasprintf("%.*s", (int)len, line);

			if (strstr(row, role))
				return row;
			free(row);
		}
		line = nl ? nl + 1 : NULL;
	}
	return sl_xstrdup("");
}

static void assert_probe(const char *out, const char *name, const char *role,
			 const char *result)
{
	char *row = probe_row(out, name, role);
	char *want = sl_xasprintf(" %s ", result);

	ck_assert_msg(strstr(row, want),
		      "probe %s (%s): want %s, row '%s'\n%s", name, role,
		      result, row, out);
	free(want);
	free(row);
}

/*
 * No full canary (prefix, role, 8 + 32 hex) under the scratch dir (the
 * state dir, the store, the workspace) or in the output. The fake sbx's
 * record of what its CLI was handed is left out: it is the substrate's
 * side (`sbx secret set-custom` takes its value in argv, a known limit
 * of sbx-proxy, docs/sbx.md).
 */
static void assert_no_canary(const struct tu_run *r)
{
	const char *argv[] = {"grep",
			      "-rqaE",
			      "--exclude=invocations.jsonl",
			      "sbxattest[mg][0-9a-f]{40}",
			      rt_dir(),
			      NULL};
	struct tu_run g;

	tu_exec(&g, NULL, NULL, argv);
	ck_assert_msg(g.status != 0, "a canary was left under %s", rt_dir());
	tu_run_free(&g);
	ck_assert_msg(!strstr(r->out, "sbxattestm") &&
			      !strstr(r->out, "sbxattestg") &&
			      !strstr(r->err, "sbxattestm") &&
			      !strstr(r->err, "sbxattestg"),
		      "a canary's half in the output:\n%s%s", r->out, r->err);
}

static void doctor_deep(struct tu_run *r, const char *provider,
			const char *policy, const char *extra)
{
	rt_write_config(provider, policy, extra);
	setenv("COPILOT_GITHUB_TOKEN", "doctor-deep-dummy", 1);
	rt_capture(r, deep);
	unsetenv("COPILOT_GITHUB_TOKEN");
	assert_no_canary(r);
}

START_TEST(test_deep_on_bare_local_reports_unclaimed_and_passes)
{
	struct tu_run r;

	doctor_deep(&r, "local", NULL, NULL);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	assert_probe(r.out, "github_token_not_in_agent", "agent", "pass");
	assert_probe(r.out, "model_token_not_in_github", "github", "pass");
	/* nothing confines a bare local sandbox, and it claims nothing */
	assert_probe(r.out, "host_fs_write", "agent", "n/a");
	assert_probe(r.out, "critic_workspace_write", "agent", "n/a");
	assert_probe(r.out, "network_out", "agent", "n/a");
	assert_probe(r.out, "process_after_removal", "agent", "n/a");
	assert_probe(r.out, "lanes_git_write", "agent", "n/a");
	assert_probe(r.out, "workspace_mounted", "agent", "pass");
	ck_assert(strstr(r.out, "every claimed capability held"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_deep_on_bwrap_holds_every_claim)
{
	struct tu_run r;

	doctor_deep(&r, "local", NULL, "local:\n  isolation: bwrap\n");
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	assert_probe(r.out, "host_fs_write", "agent", "pass");
	assert_probe(r.out, "state_dir_write", "agent", "pass");
	assert_probe(r.out, "sandbox_meta_write", "github", "pass");
	assert_probe(r.out, "critic_workspace_write", "agent", "pass");
	assert_probe(r.out, "network_out", "agent", "pass");
	assert_probe(r.out, "process_after_removal", "agent", "pass");
	assert_probe(r.out, "lanes_git_write", "agent", "pass");
	tu_run_free(&r);
}
END_TEST

START_TEST(test_deep_on_the_egress_proxy_grants_and_revokes)
{
	struct tu_run r;

	doctor_deep(&r, "local", "[local]",
		    "local:\n  isolation: bwrap\n  network: proxy\n");
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	assert_probe(r.out, "egress_denied", "agent", "pass");
	assert_probe(r.out, "egress_granted", "agent", "pass");
	assert_probe(r.out, "egress_revoked", "agent", "pass");
	assert_probe(r.out, "host_fs_write", "agent", "pass");
	tu_run_free(&r);
}
END_TEST

START_TEST(test_deep_on_the_mock_passes)
{
	struct tu_run r;

	doctor_deep(&r, "mock", NULL, NULL);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	assert_probe(r.out, "workspace_mounted", "agent", "pass");
	tu_run_free(&r);
}
END_TEST

START_TEST(test_deep_fails_a_provider_that_claims_what_it_does_not_enforce)
{
	struct tu_run r;

	doctor_deep(&r, "mock", NULL,
		    "mock:\n  claim: "
		    "filesystem_confined,workspace_read_only,git_read_only\n");
	ck_assert_int_eq(r.status, 1);
	assert_probe(r.out, "host_fs_write", "agent", "FAIL");
	assert_probe(r.out, "critic_workspace_write", "agent", "FAIL");
	assert_probe(r.out, "lanes_git_write", "agent", "FAIL");
	ck_assert_msg(strstr(r.err, "claims filesystem_confined but probe "
				    "host_fs_write measured"),
		      "%s", r.err);
	tu_run_free(&r);
}
END_TEST

START_TEST(test_a_lying_provider_fails_the_run_before_any_agent_job)
{
	const char *args[] = {"run", "make a thing", "--no-tui", NULL};
	struct rt_run row;
	struct tu_run r;
	char *run, *cursor;

	copy_scenario("happy1");
	rt_write_config("mock", NULL, "mock:\n  claim: workspace_read_only\n");
	rt_capture(&r, args);
	/* stopped with an error, like a wall-clock failure; not resumable */
	ck_assert_int_eq(r.status, 2);
	ck_assert(!strstr(r.err, "resume"));
	run = last_run();
	rt_run_get(run, &row);
	ck_assert_str_eq(row.state, "failed");
	ck_assert_msg(strstr(row.reason, "workspace_read_only") &&
			      strstr(row.reason, "critic_workspace_write"),
		      "%s", row.reason);
	ck_assert_int_eq(rt_event_count(run, "sandbox.attested", "role",
					"agent", "pass", "0", NULL),
			 1);
	ck_assert_int_eq(rt_event_count(run, "agent.session_start", NULL), 0);
	ck_assert_int_eq(rt_task_count(run), 0);
	/* the script backend never ran: its cursor did not move */
	cursor = read_file("scenario.json.cursor");
	ck_assert_msg(!*cursor || !strcmp(cursor, "0") ||
			      !strcmp(cursor, "0\n"),
		      "cursor '%s'", cursor);
	free(cursor);
	rt_run_release(&row);
	free(run);
	tu_run_free(&r);
}
END_TEST

START_TEST(test_a_run_records_its_attestation_and_attest_off_skips_it)
{
	const char *args[] = {"run", "make a thing", "--no-tui", NULL};
	struct tu_run r;
	char *run;

	copy_scenario("happy1");
	rt_write_config("local", NULL, "local:\n  isolation: bwrap\n");
	rt_capture(&r, args);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	run = last_run();
	ck_assert_int_eq(rt_event_count(run, "sandbox.attested", "role",
					"agent", "pass", "1", "claimed",
					"*git_read_only*", NULL),
			 1);
	/* the git probe put back what it made: no .sbxloop, no leftover */
	{
		char *ws = rt_path("state/runs/%s/workspace", run);
		const char *argv[] = {"find", ws, "-name", "*sbxloop*", NULL};
		struct tu_run f;

		tu_exec(&f, NULL, NULL, argv);
		ck_assert_msg(f.status == 0 && !*f.out, "left: %s", f.out);
		tu_run_free(&f);
		free(ws);
	}
	free(run);

	put_file("scenario.json.cursor", "");
	rt_write_config("local", NULL, "run:\n  attest: off\n");
	rt_capture(&r, args);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	run = last_run();
	ck_assert_int_eq(count_events(run, "sandbox.attested"), 0);
	free(run);
}
END_TEST

/*
 * A linked worktree's .git is a file naming its git dir: an agent that
 * could replace it would hand the lanes' git on the host a repository
 * of its own. The run's git probe tries to rename it away.
 */
START_TEST(test_a_linked_worktrees_dot_git_file_holds_under_bwrap)
{
	const char *args[] = {"run", "make a thing", "--no-tui", NULL};
	char *sbx, *before, *after, *run, *cmd;
	struct tu_run r;

	rt_git_repo();
	cmd = sl_xasprintf("cd '%s/repo' && git worktree add -q ../wt",
			   rt_dir());
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	sbx = rt_path("wt/.sbxloop");
	before = read_file("wt/.git");
	copy_scenario("happy1");
	rt_write_config("local", NULL,
			"local:\n  isolation: bwrap\n"
			"sandbox:\n  workspace: wt\n"
			"  workspace_isolation: in-place\n");
	rt_capture(&r, args);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	run = last_run();
	ck_assert_int_eq(rt_event_count(run, "sandbox.attested", "role",
					"agent", "pass", "1", NULL),
			 1);
	after = read_file("wt/.git");
	ck_assert_str_eq(after, before);
	ck_assert_msg(!rt_exists(sbx), "the probe left .sbxloop");
	free(after);
	free(before);
	free(run);
	free(sbx);
}
END_TEST

START_TEST(test_an_unknown_attest_level_is_refused)
{
	const char *args[] = {"run", "make a thing", "--no-tui", NULL};
	struct tu_run r;

	copy_scenario("happy1");
	rt_write_config("local", NULL, "run:\n  attest: sometimes\n");
	rt_capture(&r, args);
	ck_assert_int_ne(r.status, 0);
	ck_assert_msg(strstr(r.err, "run.attest"), "%s", r.err);
	tu_run_free(&r);
}
END_TEST

/*
 * The fake sbx runs each command on this host: the probes see through
 * its filesystem_confined claim, and the token split still holds.
 */
START_TEST(test_deep_measures_the_fake_sbx)
{
	char *fake = rt_path("fake");
	char *path =
		sl_xasprintf("%s/tests/fakes/bin:%s",
			     env_or("SBXLOOP_BUILDDIR", "."), getenv("PATH"));
	char *old = sl_xstrdup(getenv("PATH"));
	struct tu_run r;

	setenv("PATH", path, 1);
	setenv("SBX_FAKE_DIR", fake, 1);
	doctor_deep(&r, "sbx", "[sbx]\n  secrets: [sbx-proxy, plain-env]",
		    NULL);
	setenv("PATH", old, 1);
	unsetenv("SBX_FAKE_DIR");
	ck_assert_int_eq(r.status, 1);
	assert_probe(r.out, "github_token_not_in_agent", "agent", "pass");
	assert_probe(r.out, "model_token_not_in_github", "github", "pass");
	assert_probe(r.out, "host_fs_write", "agent", "FAIL");
	ck_assert(strstr(r.err, "filesystem_confined"));
	tu_run_free(&r);
	free(old);
	free(path);
	free(fake);
}
END_TEST

static Suite *attest_suite(void)
{
	Suite *s = suite_create("attest");
	TCase *tc = tcase_create("deep");

	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
		       test_deep_on_bare_local_reports_unclaimed_and_passes);
	tcase_add_test(tc, test_deep_on_bwrap_holds_every_claim);
	tcase_add_test(tc, test_deep_on_the_egress_proxy_grants_and_revokes);
	tcase_add_test(tc, test_deep_on_the_mock_passes);
	tcase_add_test(
		tc,
		test_deep_fails_a_provider_that_claims_what_it_does_not_enforce);
	tcase_add_test(tc, test_deep_measures_the_fake_sbx);
	suite_add_tcase(s, tc);

	tc = tcase_create("run");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(
		tc, test_a_lying_provider_fails_the_run_before_any_agent_job);
	tcase_add_test(
		tc,
		test_a_run_records_its_attestation_and_attest_off_skips_it);
	tcase_add_test(tc,
		       test_a_linked_worktrees_dot_git_file_holds_under_bwrap);
	tcase_add_test(tc, test_an_unknown_attest_level_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(attest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

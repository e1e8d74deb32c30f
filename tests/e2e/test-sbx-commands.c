/*
 * The sandbox/shell/secrets/doctor commands of the real sbxloop binary
 * on the sbx module, against the fake sbx (whole runs on it:
 * test-sbx-runs.c).
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>
#include <sbxloop/store.h>

#include "host/core.h"
#include "common/proc.h"
#include "host/redact.h"
#include "common/util.h"

#include "testutil.h"

#include "sbx-support.h"
#include "github-support.h"

/* ------------------------------------------------------------- commands */

static void fake_create(const char *name)
{
	const char *argv[] = {"sbx", "create", NULL, "shell", ws, NULL};
	char *arg = sl_xasprintf("--name=%s", name);
	struct tu_run r;

	argv[2] = arg;
	tu_exec(&r, NULL, NULL, argv);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	free(arg);
}

/* Runs in the store as `sbxloop run` leaves them. */
static void store_run(const char *id, const char *state, double age_s,
		      const char *kept)
{
	struct sbxloop_error err = {0, ""};
	struct sl_instance st;
	const struct sbxloop_store_ops *so;
	struct sbxloop_run_row row;

	if (!core)
		core_up();
	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_STORE, "sqlite",
					  &st, &err) == 0,
		      "%s", err.message);
	so = st.ops;
	memset(&row, 0, sizeof(row));
	row.struct_size = sizeof(row);
	row.run_id = id;
	row.outcome = "test";
	row.state = state;
	row.created_at = sl_now() - age_s;
	row.kept_reason = kept;
	ck_assert_msg(so->run_create(st.ctx, &row, &err) == 0, "%s",
		      err.message);
	sl_instance_destroy(&st);
}

static const char *line_of(const char *out, const char *name)
{
	const char *p = strstr(out, name);

	ck_assert_msg(p != NULL, "no line for %s in:\n%s", name, out);
	return p;
}

static int verdict_is(const char *out, const char *name, const char *v)
{
	const char *p = line_of(out, name), *nl = strchr(p, '\n');
	char *line = sl_xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
	int ok = strstr(line, v) != NULL;

	free(line);
	return ok;
}

START_TEST(test_prune_classifies_orphans_kept_and_live)
{
	const char *dry[] = {"sandbox", "prune", NULL};
	const char *force[] = {"sandbox", "prune", "--force", NULL};
	const char *kept[] = {"sandbox", "prune", "--force", "--include-kept",
			      NULL};
	struct tu_run r;
	char live[64], *state;
	int driver;

	store_run("raaaaaaaa", "completed", 7200, NULL);
	store_run("rbbbbbbbb", "running", 0, NULL);
	store_run("rcccccccc", "failed", 7200, "debug");
	store_run("reeeeeeee", "running", 7200, NULL);
	/* silent as long as reeeeeeee, but an sbxloop drives it */
	store_run("rffffffff", "running", 7200, NULL);
	state = sl_xasprintf("%s/state", dir);
	driver = tu_hold_run_lock(state, "rffffffff");
	free(state);
	fake_create("sbxloop-raaaaaaaa-agent");
	fake_create("sbxloop-rffffffff-agent");
	fake_create("sbxloop-rbbbbbbbb-agent");
	fake_create("sbxloop-rcccccccc-agent");
	fake_create("sbxloop-rdddddddd-github");
	fake_create("sbxloop-reeeeeeee-agent");
	fake_create("sbxloop-daemon-github-x");
	fake_create("sbxloop-scratch");

	sbxloop(&r, dry);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(verdict_is(r.out, "sbxloop-raaaaaaaa-agent", "orphan"));
	ck_assert(verdict_is(r.out, "sbxloop-rbbbbbbbb-agent",
			     "keep - interrupted, younger than --min-age"));
	snprintf(live, sizeof(live), "keep - live: driven by pid %ld",
		 (long)getpid());
	ck_assert(verdict_is(r.out, "sbxloop-rffffffff-agent", live));
	ck_assert(verdict_is(r.out, "sbxloop-rcccccccc-agent",
			     "keep - kept (debug)"));
	ck_assert(verdict_is(r.out, "sbxloop-rdddddddd-github",
			     "orphan - run unknown here"));
	ck_assert(verdict_is(r.out, "sbxloop-reeeeeeee-agent",
			     "orphan - interrupted, silent for 2.0h"));
	ck_assert(verdict_is(r.out, "sbxloop-daemon-github-x",
			     "keep - daemon-owned"));
	ck_assert(verdict_is(r.out, "sbxloop-scratch", "unrecognized"));
	ck_assert(strstr(r.out, "dry run: 3 orphan(s)"));
	tu_run_free(&r);
	ck_assert(box_exists("sbxloop-raaaaaaaa-agent"));

	sbxloop(&r, force);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-raaaaaaaa-agent"));
	ck_assert(!box_exists("sbxloop-rdddddddd-github"));
	ck_assert(!box_exists("sbxloop-reeeeeeee-agent"));
	ck_assert(box_exists("sbxloop-rffffffff-agent"));
	ck_assert(box_exists("sbxloop-rbbbbbbbb-agent"));
	ck_assert(box_exists("sbxloop-rcccccccc-agent"));
	ck_assert(box_exists("sbxloop-daemon-github-x"));
	ck_assert(box_exists("sbxloop-scratch"));
	/* the removed github sandbox's service secret goes too */
	ck_assert_int_eq(count_calls("secret rm github --sandbox "
				     "sbxloop-rdddddddd-github -f"),
			 1);

	sbxloop(&r, kept);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-rcccccccc-agent"));
	ck_assert(box_exists("sbxloop-rbbbbbbbb-agent"));
	/* once its driver is gone, it is an interrupted run like any */
	close(driver);
	sbxloop(&r, force);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-rffffffff-agent"));
}
END_TEST

START_TEST(test_sandbox_ls_and_rm)
{
	const char *ls[] = {"sandbox", "ls", NULL};
	const char *none[] = {"sandbox", "rm", NULL};
	const char *run[] = {"sandbox", "rm", "--run", "raaaaaaaa", NULL};
	const char *all[] = {"sandbox", "rm", "--all", NULL};
	struct tu_run r;

	fake_create("sbxloop-raaaaaaaa-agent");
	fake_create("sbxloop-rbbbbbbbb-agent");
	fake_create("unrelated");
	sbxloop(&r, ls);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "sbxloop-raaaaaaaa-agent"));
	ck_assert(!strstr(r.out, "unrelated"));
	tu_run_free(&r);

	sbxloop(&r, none);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "nothing to remove"));
	tu_run_free(&r);

	sbxloop(&r, run);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "removed sbxloop-raaaaaaaa-agent"));
	ck_assert(strstr(r.out, "skip sbxloop-raaaaaaaa-github"));
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-raaaaaaaa-agent"));
	ck_assert(box_exists("sbxloop-rbbbbbbbb-agent"));

	sbxloop(&r, all);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-rbbbbbbbb-agent"));
	ck_assert(box_exists("unrelated"));
}
END_TEST

START_TEST(test_shell_runs_a_command_in_the_pair)
{
	const char *ok[] = {"shell", "raaaaaaaa", "-c", "echo hi; exit 3",
			    NULL};
	const char *gh[] = {"shell", "raaaaaaaa", "--role", "github",
			    "-c",    "true",      NULL};
	const char *bad_role[] = {"shell", "raaaaaaaa", "--role", "boss",
				  NULL};
	const char *unknown[] = {"shell", "rzzzzzzzz", "-c", "true", NULL};
	struct tu_run r;

	store_run("raaaaaaaa", "failed", 0, "debug");
	fake_create("sbxloop-raaaaaaaa-agent");
	sbxloop(&r, ok);
	ck_assert_msg(r.status == 3, "%d %s%s", r.status, r.out, r.err);
	ck_assert_str_eq(r.out, "hi\n");
	tu_run_free(&r);

	sbxloop(&r, gh);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "removed when a run ends"));
	tu_run_free(&r);
	sbxloop(&r, bad_role);
	ck_assert_int_eq(r.status, 2);
	tu_run_free(&r);
	sbxloop(&r, unknown);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "unknown run"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_shell_without_a_command_execs_the_providers_shell)
{
	const char *interactive[] = {"shell", "raaaaaaaa", NULL};
	const char *other[] = {"shell", "raaaaaaaa", NULL};
	struct tu_run r;

	store_run("raaaaaaaa", "failed", 0, "debug");
	fake_create("sbxloop-raaaaaaaa-agent");
	/* the argv comes from the sbx provider's interactive_argv slot */
	sbxloop(&r, interactive);
	ck_assert_msg(r.status == 0, "%d %s%s", r.status, r.out, r.err);
	tu_run_free(&r);
	ck_assert_int_eq(count_calls("exec -it sbxloop-raaaaaaaa-agent sh "
				     "-c command -v bash"),
			 1);

	/* a provider without the slot says so and names the way out */
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: local\n");
	sbxloop(&r, other);
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "provider 'local' does not support an "
				    "interactive shell"),
		      "%s", r.err);
	ck_assert(strstr(r.err, "pass -c CMD"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_secrets_walk_the_configured_strategies)
{
	const char *list[] = {"secrets", "list", NULL};
	struct tu_run r;

	/* plain-env keeps nothing to list: said, and an error when no
	 * strategy of the chain can list */
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: sbx\n"
			   "  secrets: [plain-env]\n");
	sbxloop(&r, list);
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "'plain-env' keeps no registrations"),
		      "%s", r.err);
	ck_assert(strstr(r.err, "no secret strategy of plugins.secrets"));
	ck_assert_int_eq(count_calls("secret ls"), 0);
	tu_run_free(&r);

	/* the chain is walked in order: plain-env skipped, sbx-proxy read */
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: sbx\n"
			   "  secrets: [plain-env, sbx-proxy]\n");
	sbxloop(&r, list);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(strstr(r.out, "no registrations"));
	ck_assert_int_eq(count_calls("secret ls"), 1);
	tu_run_free(&r);
}
END_TEST

START_TEST(test_doctor_reports_each_failure_row)
{
	const char *doc[] = {"doctor", NULL};
	struct tu_run r;

	setenv("COPILOT_GITHUB_TOKEN", AGENT_TOKEN, 1);
	sbxloop(&r, doc);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(strstr(r.out, "argv-only"));
	ck_assert(!strstr(r.out, AGENT_TOKEN));
	tu_run_free(&r);

	/* a blocked host is a soft failure */
	script("[{\"prefix\":\"policy check network api.github.com\","
	       "\"returncode\":0,\"stdout\":\"denied by rule 3\\n\"}]");
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 0);
	ck_assert(verdict_is(r.out, "policy: api.github.com", "warn"));
	ck_assert(strstr(r.out, "sbx policy init balanced"));
	tu_run_free(&r);

	/* not logged in */
	script("[{\"prefix\":\"ls\",\"returncode\":1,"
	       "\"stderr\":\"ERROR: not logged in\\n\"}]");
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 1);
	ck_assert(verdict_is(r.out, "sbx login", "FAIL"));
	tu_run_free(&r);

	/* no sbx at all, no token, a repo without its token */
	script("[{\"prefix\":\"version\",\"returncode\":127}]");
	unsetenv("COPILOT_GITHUB_TOKEN");
	write_config("github:\n  repo: octo/demo\n");
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 1);
	ck_assert(verdict_is(r.out, "sbx binary", "FAIL"));
	ck_assert(verdict_is(r.out, "COPILOT_GITHUB_TOKEN", "FAIL"));
	ck_assert(verdict_is(r.out, "GH_TOKEN/GITHUB_TOKEN", "FAIL"));
	tu_run_free(&r);

	/* a worker of another version */
	{
		char *w = sl_xasprintf("%s/old-worker", dir);
		char *extra = sl_xasprintf("worker_path: %s\n", w);

		tu_write(w, "#!/bin/sh\necho 'sbxloop-worker 0.0.1'\n");
		chmod(w, 0755);
		script("[]");
		write_config(extra);
		setenv("COPILOT_GITHUB_TOKEN", AGENT_TOKEN, 1);
		sbxloop(&r, doc);
		ck_assert_int_eq(r.status, 1);
		ck_assert(verdict_is(r.out, "worker binary", "FAIL"));
		tu_run_free(&r);
		free(w);
		free(extra);
	}
}
END_TEST

/*
 * Where the agent runs on this host (the local provider) doctor checks
 * its CLI against the versions the preset was verified with.
 */
START_TEST(test_doctor_checks_the_local_agent_cli)
{
	const char *doc[] = {"doctor", NULL};
	char *bin = sl_xasprintf("%s/agentbin", dir);
	char *link = sl_xasprintf("%s/claude", bin);
	char *fake = sl_xasprintf("%s/tests/fakes/fake-agent",
				  tu_env("SBXLOOP_BUILDDIR"));
	char *presets =
		sl_xasprintf("%s/worker/presets", tu_env("SBXLOOP_SRCDIR"));
	char *path = sl_xasprintf("%s:%s", bin, getenv("PATH"));
	char *old_path = strdup(getenv("PATH")), *cache;
	struct tu_run r;

	mkdir(bin, 0755);
	ck_assert_int_eq(symlink(fake, link), 0);
	setenv("SBXLOOP_PRESET_DIR", presets, 1);
	setenv("PATH", path, 1);
	setenv("HOME", dir, 1);
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: local\n"
			   "agent:\n  backend: command\n  preset: claude\n"
			   "local:\n  isolation: none\n");
	sbxloop(&r, doc);
	ck_assert_msg(verdict_is(r.out, "agent CLI", "ok"), "%s", r.out);
	ck_assert(strstr(r.out, "claude 2.1.332 (verified 2.1.332"));
	tu_run_free(&r);

	/* another version of the same file: the probe's cache goes */
	cache = sl_xasprintf("%s/.cache/sbxloop", dir);
	tu_rmtree(cache);
	free(cache);
	setenv("SBXLOOP_FAKE_AGENT_VERSION", "3.0.1", 1);
	sbxloop(&r, doc);
	unsetenv("SBXLOOP_FAKE_AGENT_VERSION");
	ck_assert_msg(verdict_is(r.out, "agent CLI", "warn"), "%s", r.out);
	ck_assert(strstr(r.out, "claude 3.0.1 is outside"));
	tu_run_free(&r);

	unlink(link);
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(verdict_is(r.out, "agent CLI", "FAIL"), "%s", r.out);
	ck_assert(strstr(r.out, "'claude' is not on PATH"));
	tu_run_free(&r);
	setenv("PATH", old_path, 1);
	free(old_path);
	free(path);
	free(presets);
	free(fake);
	free(link);
	free(bin);
}
END_TEST

START_TEST(test_secrets_list_and_clean_stale)
{
	const char *list[] = {"secrets", "list", NULL};
	const char *dry[] = {"secrets", "clean", NULL};
	const char *apply[] = {"secrets", "clean", "--apply", NULL};
	const char *stale[] = {"sbx",
			       "secret",
			       "set-custom",
			       "--sandbox",
			       "sbxloop-rgggggggg-agent",
			       "--host",
			       "api.github.com",
			       "--env",
			       "COPILOT_GITHUB_TOKEN",
			       "--value",
			       "ghp_leftover",
			       NULL};
	struct tu_run r;
	cJSON *st;

	fake_create("sbxloop-rgggggggg-github");
	tu_exec(&r, NULL, NULL, stale);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);

	sbxloop(&r, list);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(verdict_is(r.out, "sbxloop-rgggggggg-agent", "stale"));
	ck_assert(!strstr(r.out, "ghp_leftover"));
	tu_run_free(&r);

	sbxloop(&r, dry);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "would remove"));
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 1);
	cJSON_Delete(st);

	sbxloop(&r, apply);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
}
END_TEST

/* An sbx that prints `SCOPE TYPE NAME HOST`: read by header, not column. */
START_TEST(test_secrets_list_and_clean_read_a_type_column)
{
	const char *list[] = {"secrets", "list", NULL};
	const char *apply[] = {"secrets", "clean", "--apply", NULL};
	const char *stale[] = {"sbx",
			       "secret",
			       "set-custom",
			       "--sandbox",
			       "sbxloop-rgggggggg-agent",
			       "--host",
			       "api.github.com",
			       "--env",
			       "COPILOT_GITHUB_TOKEN",
			       "--value",
			       "ghp_leftover",
			       NULL};
	const char *ls[] = {"sbx", "secret", "ls", NULL};
	struct tu_run r;
	cJSON *st;

	setenv("SBX_FAKE_SECRET_LS", "type", 1);
	tu_exec(&r, NULL, NULL, stale);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	tu_exec(&r, NULL, NULL, ls);
	ck_assert_msg(strstr(r.out, "SCOPE") && strstr(r.out, "TYPE") &&
			      strstr(r.out, "custom"),
		      "%s", r.out);
	tu_run_free(&r);

	sbxloop(&r, list);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert_msg(!strstr(r.out, "no registrations"), "%s", r.out);
	ck_assert(verdict_is(r.out, "sbxloop-rgggggggg-agent", "stale"));
	tu_run_free(&r);

	sbxloop(&r, apply);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.out, "removed COPILOT_GITHUB_TOKEN in scope "
				    "sbxloop-rgggggggg-agent"),
		      "%s", r.out);
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
}
END_TEST

static Suite *sbx_commands_suite(void)
{
	Suite *s = suite_create("sbx commands");
	TCase *tc = tcase_create("commands");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_prune_classifies_orphans_kept_and_live);
	tcase_add_test(tc, test_sandbox_ls_and_rm);
	tcase_add_test(tc, test_shell_runs_a_command_in_the_pair);
	tcase_add_test(tc, test_doctor_reports_each_failure_row);
	tcase_add_test(tc, test_doctor_checks_the_local_agent_cli);
	tcase_add_test(tc,
		       test_shell_without_a_command_execs_the_providers_shell);
	tcase_add_test(tc, test_secrets_walk_the_configured_strategies);
	tcase_add_test(tc, test_secrets_list_and_clean_stale);
	tcase_add_test(tc, test_secrets_list_and_clean_read_a_type_column);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sbx_commands_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

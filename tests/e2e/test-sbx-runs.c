/*
 * Whole runs of the real sbxloop binary on the sbx module against the
 * fake sbx: one exec per job, the sandbox pair and its token split,
 * reporting and delivery, rollback, signals, per-lane sandboxes,
 * unmounted workspaces (kill and resume included) and observed egress.
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

#define RUN_TOKEN "ghp_e2eRUNtoken0123456789abcdefXYZ"

/* The run's config and its own copy of a scenario (the script backend
 * keeps its cursor next to the file). */
static void write_run_config_with(const char *scenario, const char *more)
{
	char *src = sl_xasprintf("%s/tests/scenarios/%s.json",
				 tu_env("SBXLOOP_SRCDIR"), scenario);
	char *dst = sl_xasprintf("%s/scenario.json", dir);
	char *body = tu_read(src);

	ck_assert_msg(body != NULL, "cannot read %s", src);
	tu_write(dst, body);
	free(body);
	free(src);
	free(dst);
	char *extra = sl_xasprintf("prompts_dir: %s/prompts\n"
				   "worker_path: %s\n"
				   "agent:\n"
				   "  backend: script\n"
				   "  script: %s/scenario.json\n"
				   "limits:\n"
				   "  disk_warn: 0\n"
				   "  disk_abort: 0\n"
				   "  mem_warn: 0\n"
				   "  mem_abort: 0\n",
				   tu_env("SBXLOOP_SRCDIR"),
				   tu_env("SBXLOOP_WORKER"), dir);
	/*
	 * run.attest off: the fake runs each command on this host, so it
	 * cannot keep sbx's filesystem_confined claim and the probes would
	 * (rightly) fail every run; test-attest.c measures the fake
	 */
	char *text = sl_xasprintf("state_dir: %s/state\n"
				  "run:\n"
				  "  attest: off\n"
				  "plugins:\n"
				  "  sandbox: sbx\n"
				  "  secrets: [sbx-proxy, plain-env]\n"
				  "  policy: [sbx]\n"
				  "  sinks: []\n"
				  "%s%s",
				  dir, extra, more);

	tu_write(cfg_path, text);
	free(text);
	free(extra);
	setenv("COPILOT_GITHUB_TOKEN", RUN_TOKEN, 1);
}

static void write_run_config(const char *scenario)
{
	write_run_config_with(scenario, "");
}

/* $dir/repo: a git project of one commit. */
static void git_project(void)
{
	char *cmd =
		sl_xasprintf("mkdir '%s/repo' && cd '%s/repo' && git init "
			     "-q && echo hi > README && git add . && git -c "
			     "user.name=t -c user.email=t@t commit -qm init",
			     dir, dir);

	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
}

/*
 * $dir/repo a git project, the run on `scenario` on two lanes with the
 * workspace mounted (the fake's default).
 */
static void mounted_lanes(const char *scenario)
{
	char *more = sl_xasprintf("sandbox:\n  workspace: %s/repo\n"
				  "budgets:\n  max_parallel_tasks: 2\n",
				  dir);

	git_project();
	write_run_config_with(scenario, more);
	free(more);
}

/* The run's clone of the repository holds all four tasks' files, and
 * `more` (shell, in it) holds. */
static void assert_run_workspace(const char *more)
{
	char *cmd = sl_xasprintf("cd '%s'/state/runs/*/workspace && test -f "
				 "out-t1.txt && test -f out-t2.txt && test -f "
				 "out-t3.txt && test -f out-t4.txt && %s",
				 dir, more);

	ck_assert_msg(system(cmd) == 0, "%s", cmd);
	free(cmd);
}

static int sandboxes_left(void)
{
	char *p = sl_xasprintf("%s/sandboxes", fake_dir);
	char *cmd = sl_xasprintf("ls -A '%s' 2>/dev/null | wc -l", p);
	FILE *f = popen(cmd, "r");
	int n = 0;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	free(cmd);
	free(p);
	return n;
}

/* Does any file under `root` contain `needle`? (grep -r) */
static int tree_contains(const char *root, const char *needle)
{
	const char *argv[] = {"grep", "-rqaF", needle, root, NULL};
	struct tu_run r;
	int hit;

	tu_exec(&r, NULL, NULL, argv);
	hit = r.status == 0;
	tu_run_free(&r);
	return hit;
}

START_TEST(test_run_completes_on_sbx_with_one_exec_per_job)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	char *state = sl_xasprintf("%s/state", dir);
	struct tu_run r;
	cJSON *all, *rec;
	int execs = 0, with_stdin = 0, custom = 0;

	write_run_config("happy1");
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert(strstr(r.out, "completed"));
	ck_assert(!strstr(r.err, RUN_TOKEN));
	ck_assert(!strstr(r.out, RUN_TOKEN));
	tu_run_free(&r);
	ck_assert_int_eq(sandboxes_left(), 0);
	/* every job is one exec with its request on stdin */
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);
		const char *in = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "stdin"));

		/* set-custom is the one call sbx gives no stdin for */
		if (strstr(j, RUN_TOKEN)) {
			ck_assert_msg(sl_starts_with(j, "secret set-custom "),
				      "argv: %s", j);
			custom++;
		}
		ck_assert(!in || !strstr(in, RUN_TOKEN) ||
			  sl_starts_with(j, "secret set "));
		if (sl_starts_with(j, "exec -i ") &&
		    strstr(j, "sbxloop-worker run")) {
			execs++;
			with_stdin += in && *in == '{';
		}
		free(j);
	}
	cJSON_Delete(all);
	ck_assert_int_ge(execs, 5);
	ck_assert_int_eq(with_stdin, execs);
	/* the model token went to the agent sandbox, once */
	ck_assert_int_eq(custom, 1);
	/* nothing the host wrote holds the token */
	ck_assert(!tree_contains(state, RUN_TOKEN));
	free(state);
}
END_TEST

#define RUN_GH_TOKEN "ghs_e2eGITHUBtoken9876543210zyxwVU"

/* Does any recorded call start with `prefix` and name `sandbox`? */
static int call_names(const char *prefix, const char *sandbox)
{
	cJSON *all = invocations(), *rec;
	int hit = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		hit |= sl_starts_with(j, prefix) && strstr(j, sandbox);
		free(j);
	}
	cJSON_Delete(all);
	return hit;
}

/*
 * With github.repo set a run provisions the pair: the model token goes
 * to the agent sandbox only, the GitHub token to the github sandbox
 * only and on stdin; at the end both sandboxes and every registered
 * secret are gone, and no file the host wrote holds either token.
 */
START_TEST(test_run_with_a_repo_provisions_the_pair_and_splits_tokens)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	char *state = sl_xasprintf("%s/state", dir);
	struct tu_run r;
	cJSON *all, *rec, *st;
	int gh_stdin = 0;

	write_run_config_with("happy1", "github:\n  repo: octo/demo\n");
	setenv("GH_TOKEN", RUN_GH_TOKEN, 1);
	sbxloop(&r, run);
	unsetenv("GH_TOKEN");
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert(!strstr(r.out, RUN_GH_TOKEN) &&
		  !strstr(r.err, RUN_GH_TOKEN));
	tu_run_free(&r);
	ck_assert(call_names("create --name=sbxloop-", "-agent "));
	ck_assert(call_names("create --name=sbxloop-", "-github "));
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);
		const char *in = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "stdin"));

		ck_assert_msg(!strstr(j, RUN_GH_TOKEN), "argv: %s", j);
		/* the model token is registered for the agent sandbox only */
		if (strstr(j, RUN_TOKEN))
			ck_assert_msg(strstr(j, "-agent "), "argv: %s", j);
		if (in && strstr(in, RUN_GH_TOKEN)) {
			ck_assert_msg(sl_starts_with(j, "secret set ") &&
					      strstr(j, "-github github"),
				      "the GitHub token went to: %s", j);
			gh_stdin++;
		}
		free(j);
	}
	cJSON_Delete(all);
	ck_assert_int_eq(gh_stdin, 1);
	ck_assert_int_eq(sandboxes_left(), 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(st, "service")), 0);
	cJSON_Delete(st);
	ck_assert(!tree_contains(state, RUN_GH_TOKEN));
	ck_assert(!tree_contains(state, RUN_TOKEN));
	free(state);
}
END_TEST

/*
 * GitHub through the sbx provider: the reporter's jobs run in the github
 * sandbox (one `sbx exec` each), which alone got the GitHub token; the
 * fake GitHub ends up with the tracking issue, closed, and the pull
 * request of the delivered branch.
 */
START_TEST(test_run_reports_and_delivers_through_the_github_sandbox)
{
	static const char *const repos[] = {"octo/demo", NULL};
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	char *state = sl_xasprintf("%s/state", dir), *more, *j;
	struct gh_fake gh;
	struct tu_run r;
	cJSON *st, *repo, *all, *rec, *issue;
	int gh_execs = 0;

	memset(&gh, 0, sizeof(gh));
	ck_assert_int_eq(gh_fake_start(&gh, RUN_GH_TOKEN, repos), 0);
	more = sl_xasprintf("github:\n  repo: octo/demo\n  report: true\n"
			    "  deliver: true\n  api_url: %s\n",
			    gh.url);
	write_run_config_with("happy1", more);
	free(more);
	setenv("GH_TOKEN", RUN_GH_TOKEN, 1);
	sbxloop(&r, run);
	unsetenv("GH_TOKEN");
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert(!strstr(r.out, RUN_GH_TOKEN) &&
		  !strstr(r.err, RUN_GH_TOKEN));
	tu_run_free(&r);
	st = gh_fake_state(&gh);
	gh_fake_stop(&gh);
	ck_assert_ptr_nonnull(st);
	repo = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "repos"),
				   "octo/demo");
	issue = cJSON_GetArrayItem(cJSON_GetObjectItem(repo, "issues"), 0);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(issue, "state")),
		"closed");
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(repo, "pulls")), 1);
	cJSON_Delete(st);
	/* every GitHub call was a worker job in the github sandbox */
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		j = argv_joined(rec);
		ck_assert_msg(!strstr(j, RUN_GH_TOKEN), "argv: %s", j);
		if (sl_starts_with(j, "exec -i ") && strstr(j, "-github ") &&
		    strstr(j, "sbxloop-worker run"))
			gh_execs++;
		free(j);
	}
	cJSON_Delete(all);
	/* probe, search, issue, comment, delivery (2), summary, close */
	ck_assert_int_ge(gh_execs, 7);
	ck_assert_int_le(gh_execs, 9);
	ck_assert_int_eq(sandboxes_left(), 0);
	ck_assert(!tree_contains(state, RUN_GH_TOKEN));
	free(state);
}
END_TEST

/* A missing token stops the run before any sandbox exists. */
START_TEST(test_run_missing_token_creates_nothing)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	struct tu_run r;

	write_run_config_with("happy1", "github:\n  repo: octo/demo\n");
	unsetenv("GH_TOKEN");
	unsetenv("GITHUB_TOKEN");
	if (_i == 1) {
		setenv("GH_TOKEN", RUN_GH_TOKEN, 1);
		unsetenv("COPILOT_GITHUB_TOKEN");
	}
	sbxloop(&r, run);
	unsetenv("GH_TOKEN");
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, _i ? "COPILOT_GITHUB_TOKEN" : "GH_TOKEN"),
		      "%s", r.err);
	tu_run_free(&r);
	ck_assert_int_eq(count_calls("create "), 0);
	ck_assert_int_eq(count_calls("secret set"), 0);
	ck_assert_int_eq(sandboxes_left(), 0);
}
END_TEST

START_TEST(test_run_provision_failure_rolls_back)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	struct tu_run r;

	write_run_config("happy1");
	/* the worker probe breaks after the sandbox exists */
	script("[{\"prefix\":\"exec -w /home/agent sbxloop-\","
	       "\"returncode\":0},"
	       "{\"prefix\":\"cp \",\"returncode\":1,"
	       "\"stderr\":\"ERROR: copy failed: disk full\\n\"}]");
	sbxloop(&r, run);
	ck_assert_msg(r.status != 0, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.err, "disk full"), "%s", r.err);
	tu_run_free(&r);
	ck_assert_int_eq(sandboxes_left(), 0);
	ck_assert_int_ge(count_calls("rm --force sbxloop-"), 1);
}
END_TEST

/* The id of the one run in the state dir (caller frees). */
static char *only_run_id(void)
{
	const char *status[] = {"status", NULL};
	struct tu_run r;
	char id[64] = "";
	const char *nl;

	sbxloop(&r, status);
	ck_assert_int_eq(r.status, 0);
	nl = strchr(r.out, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_int_eq(sscanf(nl + 1, "%63s", id), 1);
	tu_run_free(&r);
	return sl_xstrdup(id);
}

/*
 * plugins.secrets is [sbx-proxy, plain-env]: when sbx refuses the
 * registration, the run says so and goes on with plain-env.
 */
START_TEST(test_run_falls_back_to_the_next_strategy_when_registration_fails)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	const char *logs[] = {"logs",           NULL,     "--type",
			      "sandbox.secret", "--json", NULL};
	struct tu_run r;
	char *id;

	write_run_config("happy1");
	script("[{\"prefix\":\"secret set-custom\",\"returncode\":1,"
	       "\"stderr\":\"ERROR: the proxy refused the host\\n\"}]");
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert_msg(strstr(r.err, "secret strategy sbx-proxy failed to "
				    "hand COPILOT_GITHUB_TOKEN") &&
			      strstr(r.err, "the proxy refused the host") &&
			      strstr(r.err, "trying plain-env"),
		      "%s", r.err);
	ck_assert(!strstr(r.err, RUN_TOKEN));
	tu_run_free(&r);
	ck_assert_int_eq(count_calls("secret set-custom "), 1);
	id = only_run_id();
	logs[1] = id;
	sbxloop(&r, logs);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.out, "sandbox.secret_env_fallback"), "%s",
		      r.out);
	/* the handover names both strategies; plain-env took the token */
	ck_assert_msg(strstr(r.out, "\"strategy\":\"sbx-proxy\"") &&
			      strstr(r.out, "\"next\":\"plain-env\"") &&
			      strstr(r.out, "\"strategy\":\"plain-env\""),
		      "%s", r.out);
	tu_run_free(&r);
	free(id);
	ck_assert_int_eq(sandboxes_left(), 0);
}
END_TEST

START_TEST(test_run_sigterm_leaves_no_sandbox_and_no_secret)
{
	const char *argv[] = {
		tu_env("SBXLOOP_BIN"), "--config", cfg_path, "run",
		"interrupt me",        "--no-tui", NULL};
	double deadline;
	pid_t pid;
	int status, i;
	cJSON *st;

	write_run_config("kill_execute");
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (chdir(dir) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	/* wait for the third job (decompose, plan, execute) to start */
	deadline = sl_monotonic() + 30;
	while (count_calls("exec -i ") < 3 && sl_monotonic() < deadline)
		usleep(50000);
	ck_assert_int_ge(count_calls("exec -i "), 3);
	usleep(300000);
	kill(pid, SIGTERM);
	for (i = 0; i < 400 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(50000);
	ck_assert_msg(i < 400, "sbxloop did not exit after SIGTERM");
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	ck_assert_int_eq(sandboxes_left(), 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(st, "service")), 0);
	cJSON_Delete(st);
}
END_TEST

/*
 * sandbox.lanes: per-lane on sbx: four independent tasks on two lanes
 * of a git project; each lane gets an agent sandbox of its own with the
 * model token (as the run's sandbox does), its jobs exec there, and at
 * the end every sandbox and secret is gone and no host file holds the
 * token; also (_i 1) when three lanes were killed (-9) with their
 * sandboxes up and the run resumed on two.
 */
START_TEST(test_run_with_per_lane_sandboxes)
{
	const char *run[] = {"run", "four files", "--no-tui", NULL};
	char *state = sl_xasprintf("%s/state", dir), *more, *cmd;
	struct tu_run r;
	cJSON *all, *rec, *st;
	int custom = 0, lane_execs = 0, strays = 0;
	char id[16] = "";

	git_project();
	more = sl_xasprintf("sandbox:\n  workspace: %s/repo\n"
			    "  lanes: per-lane\n"
			    "budgets:\n  max_parallel_tasks: %d\n",
			    dir, 2 + _i);
	write_run_config_with("lanes_wide", more);
	free(more);
	/* _i 1: three lanes killed (-9) after the fourth VALIDATE, every
	 * lane's sandbox up; resumed on two lanes, so lane3's sandbox is
	 * one this process never makes, yet none is left behind */
	if (_i)
		setenv("SBXLOOP_TEST_KILL_AFTER", "validate:4", 1);
	sbxloop(&r, run);
	unsetenv("SBXLOOP_TEST_KILL_AFTER");
	if (_i) {
		const char *ls[] = {"ls", state, NULL};
		const char *resume[] = {"resume", id, "--no-tui", NULL};
		const char *logs[] = {"logs",   id,
				      "--type", "sandbox.removed",
				      "--json", NULL};
		const char *p;

		ck_assert_msg(r.status == 128 + SIGKILL, "%d\n%s", r.status,
			      r.err);
		ck_assert_int_eq(sandboxes_left(), 4);
		tu_run_free(&r);
		ls[1] = cmd = sl_xasprintf("%s/runs", state);
		tu_exec(&r, NULL, NULL, ls);
		free(cmd);
		ck_assert_int_eq(sscanf(r.out, "%15s", id), 1);
		tu_run_free(&r);
		setenv("SBXLOOP_BUDGETS__MAX_PARALLEL_TASKS", "2", 1);
		sbxloop(&r, resume);
		unsetenv("SBXLOOP_BUDGETS__MAX_PARALLEL_TASKS");
		ck_assert_msg(r.status == 0, "%d\n%s", r.status, r.err);
		tu_run_free(&r);
		sbxloop(&r, logs);
		for (p = r.out; (p = strstr(p, "\"stray\":true")); p++)
			strays++;
	}
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert(!strstr(r.err, RUN_TOKEN));
	tu_run_free(&r);
	/* the resumed run removed the lanes' sandboxes it did not make */
	ck_assert_int_ge(strays, _i);
	ck_assert_int_le(strays, 3 * _i);
	ck_assert(call_names("create ", "-lane1"));
	ck_assert(call_names("create ", "-lane2"));
	ck_assert(call_names("create ", "-lane3") == _i);
	ck_assert(call_names("rm ", "-lane1"));
	ck_assert(call_names("rm ", "-lane2"));
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		if (strstr(j, RUN_TOKEN))
			custom += sl_starts_with(j, "secret set-custom ");
		if (sl_starts_with(j, "exec -i ") && strstr(j, "-lane") &&
		    strstr(j, "sbxloop-worker run"))
			lane_execs++;
		free(j);
	}
	cJSON_Delete(all);
	/* the run's agent sandbox and the lanes' (resumed: again the
	 * agent's, and the lanes' the resumed run made) */
	if (_i)
		ck_assert_int_eq(custom, 4 + 1 + 3 - strays);
	else
		ck_assert_int_eq(custom, 3);
	/* four tasks of plan, execute, scrutinize, verify, validate */
	ck_assert_int_ge(lane_execs, 16);
	ck_assert_int_eq(sandboxes_left(), 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
	ck_assert(!tree_contains(state, RUN_TOKEN));
	free(state);
}
END_TEST

/*
 * sbx without the workspace mounted (the fake's SBX_FAKE_NO_MOUNT): two
 * lanes work inside the sandbox (git there, on a shadow repository) and
 * the harvested copy holds all four tasks' files and no lanes' files;
 * also (_i 1) when killed (-9) after the second VALIDATE and resumed:
 * the new sandbox gets the last harvest back (sandbox.workspace_seed)
 * and the tasks whose work died with the old one run again.
 */
START_TEST(test_unmounted_lanes_on_sbx)
{
	const char *run[] = {"run", "four files", "--no-tui", NULL};
	char *cmd;
	struct tu_run r;

	/* lanes_kill: every reply twice, for the tasks a resume redoes */
	write_run_config_with(_i ? "lanes_kill" : "lanes_wide",
			      "budgets:\n  max_parallel_tasks: 2\n");
	setenv("SBX_FAKE_NO_MOUNT", "1", 1);
	if (_i)
		setenv("SBXLOOP_TEST_KILL_AFTER", "validate:2", 1);
	sbxloop(&r, run);
	unsetenv("SBXLOOP_TEST_KILL_AFTER");
	if (_i) {
		const char *again[] = {"resume", NULL, "--no-tui", NULL};
		const char *seed[] = {"logs", NULL, "--type",
				      "sandbox.workspace_seed", NULL};

		ck_assert_msg(r.status == 128 + SIGKILL, "%d", r.status);
		tu_run_free(&r);
		again[1] = seed[1] = only_run_id();
		sbxloop(&r, again);
		ck_assert_msg(r.status == 0, "%d\n%s", r.status, r.err);
		tu_run_free(&r);
		sbxloop(&r, seed);
		free((char *)again[1]);
		ck_assert_msg(strstr(r.out, "executing again"), "%s", r.out);
	}
	unsetenv("SBX_FAKE_NO_MOUNT");
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	if (!_i) {
		ck_assert_msg(strstr(r.err, "inside the sandbox"), "%s",
			      r.err);
		ck_assert_msg(strstr(r.out, "(harvested)"), "%s", r.out);
	}
	tu_run_free(&r);
	cmd = sl_xasprintf("cd '%s'/state/runs/*/artifacts && test -f "
			   "out-t1.txt && test -f out-t2.txt && test -f "
			   "out-t3.txt && test -f out-t4.txt && ! test -e "
			   ".sbxloop",
			   dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	ck_assert_int_eq(sandboxes_left(), 0);
}
END_TEST

/*
 * Lanes on sbx with the workspace mounted: the microVM sees the whole
 * workspace read-write (no read-only .git), so t1's agent defines a
 * clean filter in the repository's config and asks for it in
 * .gitattributes; the lanes' commits and merges would run it. They run
 * in the sandbox (sbx claims no git_read_only), so the filter runs
 * there, confined, never in sbxloop's git on the host: each run of it
 * records whether it ran inside the fake's sandbox (SBX_FAKE_FS set).
 * Before, every lane commit ran it on the host.
 */
START_TEST(test_mounted_lanes_on_sbx_keep_agents_filters_in_the_box)
{
	const char *run[] = {"run", "four files", "--no-tui", NULL};
	char *mark = sl_xasprintf("%s/filter-ran", dir);
	char *filter = sl_xasprintf("%s/filter.sh", dir);
	char *cmd, *text, *attack;
	cJSON *arr, *it;
	struct tu_run r;

	text = sl_xasprintf("if [ -n \"$SBX_FAKE_FS\" ]; then echo box; "
			    "else echo host; fi >> '%s'; cat\n",
			    mark);
	tu_write(filter, text);
	free(text);
	mounted_lanes("lanes_wide");
	/* t1's EXECUTE runs the attack */
	attack = sl_xasprintf("git config filter.pwn.clean 'sh %s' && "
			      "printf '* filter=pwn\\n' > .gitattributes",
			      filter);
	cmd = sl_xasprintf("%s/scenario.json", dir);
	text = tu_read(cmd);
	arr = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(arr);
	cJSON_ArrayForEach (it, arr) {
		const char *t = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "task"));

		if (t && !strcmp(t, "t1") &&
		    cJSON_GetObjectItemCaseSensitive(it, "text"))
			cJSON_AddItemToArray(cJSON_AddArrayToObject(it, "run"),
					     cJSON_CreateString(attack));
	}
	text = cJSON_PrintUnformatted(arr);
	tu_write(cmd, text);
	free(text);
	free(cmd);
	cJSON_Delete(arr);
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	tu_run_free(&r);
	text = tu_read(mark);
	/* the attack was live: the lanes' git ran the filter, in the box */
	ck_assert_msg(text && strstr(text, "box"), "%s", text ? text : "");
	ck_assert_msg(
		!strstr(text, "host"),
		"an agent's filter ran in sbxloop's git on the host:\n%s",
		text);
	free(text);
	assert_run_workspace("test -z \"$(git worktree list | sed 1d)\" && "
			     "! test -e .sbxloop/lanes");
	ck_assert_int_eq(sandboxes_left(), 0);
	free(attack);
	free(filter);
	free(mark);
}
END_TEST

/*
 * The lanes' own jobs in the sbx sandbox: the worker's shell.batch jobs
 * other than the review's evidence and VERIFY (a string command). Each
 * is an `sbx exec`, which costs the substrate far more than a process.
 */
static int lanes_jobs(void)
{
	cJSON *all = invocations(), *rec;
	int n = 0;

	cJSON_ArrayForEach (rec, all) {
		const char *in = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(rec, "stdin"));
		cJSON *job = in ? cJSON_Parse(in) : NULL;
		const cJSON *first = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(job, "commands"), 0);
		char *shown = cJSON_IsArray(first)
				      ? cJSON_PrintUnformatted(first)
				      : NULL;

		if (shown && strcmp(shown, "[\"git\",\"status\",\"--short\"]"))
			n++;
		free(shown);
		cJSON_Delete(job);
	}
	cJSON_Delete(all);
	return n;
}

/*
 * Four tasks on two lanes in the sandbox: a task's worktree, commit,
 * merge and removal are a job each, and the lanes' bookkeeping at
 * their start and end five in all (the git there is and where it
 * stands, git's paths, the exclude, the tidy, the empty directories;
 * a fresh run has nothing to recover).
 */
START_TEST(test_mounted_lanes_on_sbx_take_four_jobs_a_task_and_five_a_run)
{
	const char *run[] = {"run", "four files", "--no-tui", NULL};
	struct tu_run r;
	int n;

	mounted_lanes("lanes_wide");
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	tu_run_free(&r);
	assert_run_workspace(
		"test -z \"$(git worktree list | sed 1d)\" && "
		"! test -e .sbxloop && "
		"test -z \"$(git branch --list 'sbxloop/lanes/*')\"");
	n = lanes_jobs();
	ck_assert_msg(n == 4 * 4 + 5, "%d lanes jobs, want %d", n, 4 * 4 + 5);
}
END_TEST

/*
 * Lanes on a mounted sbx workspace killed (-9) right after t1's and
 * t2's EXECUTE were committed, then resumed: the lanes' git is in the
 * sandbox, and the resume recovers the lanes there, keeping each
 * in-flight task's worktree (its EXECUTE's files), so no task executes
 * again: a worktree made afresh would fail VERIFY and revise.
 */
START_TEST(test_mounted_lanes_on_sbx_resume_in_their_worktrees)
{
	const char *run[] = {"run", "four files", "--no-tui", NULL};
	const char *again[] = {"resume", NULL, "--no-tui", NULL};
	const char *logs[] = {"logs",       NULL,     "--type",
			      "task.state", "--json", NULL};
	struct tu_run r;

	mounted_lanes("lanes_kill");
	setenv("SBXLOOP_TEST_KILL_AFTER", "execute:2", 1);
	sbxloop(&r, run);
	unsetenv("SBXLOOP_TEST_KILL_AFTER");
	ck_assert_msg(r.status == 128 + SIGKILL, "%d\n%s", r.status, r.err);
	tu_run_free(&r);
	again[1] = logs[1] = only_run_id();
	sbxloop(&r, again);
	ck_assert_msg(r.status == 0, "%d\n%s", r.status, r.err);
	tu_run_free(&r);
	sbxloop(&r, logs);
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(strstr(r.out, "\"state\":\"done\""), "%s", r.out);
	ck_assert_msg(!strstr(r.out, "\"revisions\":1"),
		      "a task revised after the resume:\n%s", r.out);
	tu_run_free(&r);
	free((char *)again[1]);
	assert_run_workspace("test -z \"$(git worktree list | sed 1d)\" && "
			     "test -z \"$(git branch --list "
			     "'sbxloop/lanes/*')\"");
	ck_assert_int_eq(sandboxes_left(), 0);
}
END_TEST

/*
 * The same on an sbx image without git: the lanes' git cannot run in
 * the sandbox and must not run on the host, so the run says why and
 * runs one task at a time to the same end.
 */
START_TEST(test_mounted_lanes_on_sbx_without_git_run_one_at_a_time)
{
	const char *run[] = {"run", "four files", "--no-tui", NULL};
	char *bin = sl_xasprintf("%s/image-bin", dir), *cmd;
	struct tu_run r;

	mounted_lanes("lanes_wide");
	/* the image's PATH: everything of this host's but git */
	cmd = sl_xasprintf("mkdir '%s' && for f in /usr/bin/* /usr/sbin/* "
			   "/usr/local/bin/*; do b=${f##*/}; [ \"$b\" = git ] "
			   "|| ln -sf \"$f\" '%s'/\"$b\"; done",
			   bin, bin);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	setenv("SBX_FAKE_PATH", bin, 1);
	sbxloop(&r, run);
	unsetenv("SBX_FAKE_PATH");
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert_msg(strstr(r.err, "running one task at a time") &&
			      strstr(r.err, "has no git to run the lanes"),
		      "%s", r.err);
	tu_run_free(&r);
	assert_run_workspace("test -z \"$(git log --merges --oneline)\" && "
			     "! test -e .sbxloop/lanes");
	ck_assert_int_eq(sandboxes_left(), 0);
	free(bin);
}
END_TEST

/*
 * Observed egress on sbx: the fake's host proxy decides the sandbox's
 * curl by the rules the run set (policy allow/rm network), logs each
 * decision, and the provider reads `sbx policy log NAME --json` before
 * removing the sandbox; `sbxloop egress` places each entry in the phase
 * it was first seen in.
 */
START_TEST(test_run_records_what_sbx_saw_and_egress_reports_it)
{
	const char *run[] = {"run", "fetch the fixture", "--no-tui", NULL};
	struct tu_run r;
	char id[40] = "", *log, *fin;
	cJSON *rep, *t, *o;
	int seen = 0;

	write_run_config_with("egress_observed",
			      "policy:\n  allow: [\"allowed.test\", "
			      "\"unused.test\"]\n  deny: [\"*.evil.test\"]\n");
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert_msg(strstr(r.out, "egress: 2 attempt(s) to 2 host(s) no "
				    "plan declared were blocked (other.test, "
				    "x.evil.test)"),
		      "%s", r.out);
	fin = strstr(r.out, " finished: ");
	ck_assert_ptr_nonnull(fin);
	while (fin > r.out && fin[-1] != ' ')
		fin--;
	ck_assert_int_eq(sscanf(fin, "%39s", id), 1);
	tu_run_free(&r);
	ck_assert(call_names("policy log ", "sbxloop-"));
	fin = sl_xasprintf("%s/netlog.jsonl", fake_dir);
	log = tu_read(fin);
	free(fin);
	ck_assert_msg(log && strstr(log, "\"host\":\"allowed.test\","
					 "\"decision\":\"allow\""),
		      "netlog: %s", log ? log : "(none)");
	free(log);
	{
		const char *eg[] = {"egress", id, "--json", NULL};

		sbxloop(&r, eg);
	}
	ck_assert_int_eq(r.status, 0);
	rep = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(rep);
	tu_run_free(&r);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "tasks"), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(t, "task_id")->valuestring, "t1");
	cJSON_ArrayForEach (o, cJSON_GetObjectItem(t, "observed")) {
		const char *h = cJSON_GetObjectItem(o, "host")->valuestring;
		cJSON *ph = cJSON_GetObjectItem(o, "phases");

		if (!strcmp(h, "allowed.test")) {
			seen++;
			ck_assert_int_eq(
				cJSON_GetObjectItem(o, "allowed")->valueint,
				1);
			ck_assert_ptr_nonnull(
				cJSON_GetObjectItem(ph, "execute"));
			/* tried again in SCRUTINIZE, after the revoke */
			ck_assert_ptr_nonnull(
				cJSON_GetObjectItem(ph, "scrutinize"));
		} else if (!strcmp(h, "other.test")) {
			seen++;
			ck_assert_int_eq(
				cJSON_GetObjectItem(o, "blocked")->valueint,
				1);
		}
	}
	ck_assert_int_eq(seen, 2);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
				 rep, "blocked_undeclared")),
			 2);
	cJSON_Delete(rep);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static Suite *sbx_runs_suite(void)
{
	Suite *s = suite_create("sbx runs");
	TCase *tc;

	tc = tcase_create("runs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_run_completes_on_sbx_with_one_exec_per_job);
	tcase_add_test(
		tc, test_run_reports_and_delivers_through_the_github_sandbox);
	tcase_add_test(tc, test_run_provision_failure_rolls_back);
	tcase_add_test(
		tc,
		test_run_with_a_repo_provisions_the_pair_and_splits_tokens);
	tcase_add_loop_test(tc, test_run_missing_token_creates_nothing, 0, 2);
	tcase_add_test(tc, test_run_sigterm_leaves_no_sandbox_and_no_secret);
	tcase_add_loop_test(tc, test_run_with_per_lane_sandboxes, 0, 2);
	tcase_add_loop_test(tc, test_unmounted_lanes_on_sbx, 0, 2);
	tcase_add_test(
		tc, test_mounted_lanes_on_sbx_keep_agents_filters_in_the_box);
	tcase_add_test(
		tc,
		test_mounted_lanes_on_sbx_take_four_jobs_a_task_and_five_a_run);
	tcase_add_test(
		tc, test_mounted_lanes_on_sbx_without_git_run_one_at_a_time);
	tcase_add_test(tc,
		       test_mounted_lanes_on_sbx_resume_in_their_worktrees);
	tcase_add_test(tc,
		       test_run_records_what_sbx_saw_and_egress_reports_it);
	tcase_add_test(
		tc,
		test_run_falls_back_to_the_next_strategy_when_registration_fails);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sbx_runs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

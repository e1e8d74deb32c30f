/*
 * End-to-end attacks on the lanes' git (budgets.max_parallel_tasks):
 * the real `sbxloop` ($SBXLOOP_BIN) on the local provider, its agents
 * (the script backend's `run` commands) trying to make the lanes' git on
 * the host run their programs (a filter or merge driver in the
 * repository's config, a worktree `.git` file pointing elsewhere, the
 * user's hooks) or block it (a FIFO where it reads). Each test fails
 * when the attack succeeds: a marker file outside the sandbox, a run
 * that does not end. The runs themselves: tests/e2e/test-lanes.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "runtest.h"
#include "testutil.h"
#include "lanes-common.h"

/*
 * The four-task project on `lanes` lanes under bubblewrap, t1's and
 * t2's EXECUTE running `cmd1` and `cmd2` (shell source) in their trees.
 */
static void two_attacks(const char *cmd1, const char *cmd2, int lanes)
{
	char extra[256];

	char *scen;
	cJSON *arr, *it;

	rt_git_repo();
	copy_scenario("lanes_wide");
	scen = read_file("scenario.json");
	arr = cJSON_Parse(scen);
	cJSON_ArrayForEach (it, arr) {
		const char *t = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "task"));

		if (!t || !cJSON_GetObjectItemCaseSensitive(it, "text") ||
		    (strcmp(t, "t1") && strcmp(t, "t2")))
			continue;
		cJSON_AddItemToArray(
			cJSON_AddArrayToObject(it, "run"),
			cJSON_CreateString(strcmp(t, "t1") ? cmd2 : cmd1));
	}
	free(scen);
	scen = cJSON_PrintUnformatted(arr);
	put_file("scenario.json", scen);
	free(scen);
	cJSON_Delete(arr);
	snprintf(extra, sizeof(extra),
		 "sandbox:\n  workspace: repo\n"
		 "local:\n  isolation: bwrap\n"
		 "budgets:\n  max_parallel_tasks: %d\n",
		 lanes);
	rt_write_config("local", NULL, extra);
}

/*
 * An agent in the bubblewrap sandbox tries to make sbxloop's own git
 * run a program of its choosing on the host, where lanes commit and
 * merge: t1's agent defines a clean filter in the repository's config
 * (and asks for it in .gitattributes), t2's makes a git directory of
 * its own with such a filter and points its worktree's .git file at
 * it. The filters would write a file under the test directory, outside
 * the sandbox (which sees the host read-only). Neither runs: the config
 * is read-only in the sandbox, and the lanes' git never follows a
 * worktree's .git file. (Both ran before.) The run still completes.
 */
START_TEST(test_agents_cannot_make_the_lanes_git_run_their_programs)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	char *marker = rt_path("outside/pwned"), *outside = rt_path("outside");
	char filter[600], cmd1[1400], cmd2[1400], *run;
	int code;

	ck_assert_int_eq(mkdir(outside, 0755), 0);
	snprintf(filter, sizeof(filter), "sh -c 'echo pwned >> %s; cat'",
		 marker);
	snprintf(cmd1, sizeof(cmd1),
		 "git config filter.pwn.clean \"%s\"; "
		 "printf '* filter=pwn\\n' > .gitattributes",
		 filter);
	snprintf(cmd2, sizeof(cmd2),
		 "git init -q \"$PWD/.evil\" && cd .evil && "
		 "git config core.worktree \"${PWD%%/.evil}\" && "
		 "git config filter.pwn.clean \"%s\" && "
		 "git -c user.name=a -c user.email=a@a commit -q "
		 "--allow-empty -m x && cd .. && "
		 "printf 'gitdir: %%s/.evil/.git\\n' \"$PWD\" > .git; "
		 "printf '* filter=pwn\\n' > .gitattributes",
		 filter);
	/* t1's and t2's EXECUTE run the attacks */
	two_attacks(cmd1, cmd2, 2);
	code = sbxloop(args[0], args[1], args[2]);
	ck_assert_msg(!rt_exists(marker), "an agent's filter ran on the host");
	ck_assert_int_eq(code, 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, four);
	/* the agents did try: t1 met a read-only config */
	ck_assert_int_gt(rt_event_count(run, "agent.tool_end", "output",
					"*config*Read-only file system*",
					NULL),
			 0);
	free(run);
	free(marker);
	free(outside);
}
END_TEST

/*
 * FIFOs agents leave where git reads (a .gitignore and a .gitattributes
 * in t1's tree, a .gitattributes at the top of the run's workspace)
 * hold nothing: the run completes well within the test's limit, every
 * task done, no job timed out (each review had its evidence). _i 0: two lanes, whose
 * libgit2 on the host commits, merges and reads the evidence (t1's
 * commit blocked the run for good before); _i 1: one lane, whose
 * evidence is a job in the sandbox and whose artifacts list comes from
 * git on the host (the evidence's git status took its minute, and the
 * artifacts' git its two, before).
 */
START_TEST(test_fifos_agents_leave_do_not_hold_the_lanes)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	static const char *const cmd1 =
		"mkfifo .gitignore && mkdir -p d && mkfifo d/.gitattributes "
		"&& echo x > d/x.txt";
	static const char *const cmd2 =
		"cd \"$(git rev-parse --git-common-dir)/..\" && "
		"mkfifo .gitattributes";
	char *run;
	double t0;
	int code;

	two_attacks(cmd1, cmd2, _i ? 1 : 2);
	t0 = sl_monotonic();
	code = sbxloop(args[0], args[1], args[2]);
	ck_assert_int_eq(code, 0);
	ck_assert_double_lt(sl_monotonic() - t0, 50.0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	/* no job ran out of time (the evidence's did, on one lane) */
	ck_assert_int_eq(rt_event_count(run, "worker.result", "status",
					"timeout", NULL),
			 0);
	free(run);
}
END_TEST

/*
 * A driver already in the repository's config when lanes (re)start,
 * written while nothing kept it read-only (one task at a time, before a
 * resume, by hand): the resume refuses to touch the workspace with it,
 * names the key and the file, runs nothing of it, and keeps the run
 * resumable; without the key the resume completes. _i 0: killed with
 * lanes in flight (the resume recovers them); _i 1: killed before the
 * lanes started, README touched so that the `git status` that decides
 * the lanes' repository would run the clean filter (it did, before the
 * check came first).
 */
START_TEST(test_lanes_refuse_a_repository_config_that_runs_programs)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	const char *env[] = {_i ? "SBXLOOP_TEST_KILL_AFTER=decompose:1"
				: "SBXLOOP_TEST_KILL_AFTER=validate:1",
			     NULL};
	const char *resume[] = {"resume", NULL, "--no-tui", NULL};
	char *marker = rt_path("pwned"), *run, *ws, cfg[8400], line[9000];
	struct tu_run r;

	project("lanes_kill", 2);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	ws = rt_workspace(run);
	snprintf(cfg, sizeof(cfg), "%s/.git/config", ws);
	snprintf(line, sizeof(line),
		 "[filter \"pwn\"]\n\tclean = sh -c 'echo x >> %s; cat'\n"
		 "[merge \"pwn\"]\n\tdriver = sh -c 'echo x >> %s'\n",
		 marker, marker);
	{
		FILE *f = fopen(cfg, "a");

		ck_assert_ptr_nonnull(f);
		fputs(line, f);
		ck_assert_int_eq(fclose(f), 0);
	}
	snprintf(line, sizeof(line), "%s/.gitattributes", ws);
	tu_write(line, "* filter=pwn merge=pwn\n");
	snprintf(line, sizeof(line), "touch -d '+1 hour' '%s/README'", ws);
	ck_assert_int_eq(system(line), 0);
	resume[1] = run;
	rt_capture(&r, resume);
	ck_assert_msg(!rt_exists(marker), "the config's program ran");
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "sets 'filter.pwn.clean'") &&
			      strstr(r.err, cfg),
		      "%s", r.err);
	tu_run_free(&r);
	/* the user takes it out (the attributes too: an untracked file
	 * would move the resumed lanes onto a shadow repository): the run
	 * goes on */
	snprintf(line, sizeof(line),
		 "git --git-dir='%s/.git' config --remove-section filter.pwn "
		 "&& git --git-dir='%s/.git' config --remove-section "
		 "merge.pwn && rm '%s/.gitattributes'",
		 ws, ws, ws);
	ck_assert_int_eq(system(line), 0);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_done(run, four);
	ck_assert(!rt_exists(marker));
	free(ws);
	free(run);
	free(marker);
}
END_TEST

/*
 * The user's own git hooks (a global core.hooksPath, as linters install
 * them) never run on the lanes' commits, merges and checkouts: a
 * pre-commit that refuses everything does not stop the run, and no
 * post-merge or post-checkout hook leaves its mark.
 */
START_TEST(test_user_git_hooks_never_run_on_lanes)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	char home_env[4200], cfg[4200], *run, *mark;
	const char *env[] = {home_env, NULL};
	static const char *const hooks[] = {
		"pre-commit",    "post-commit",      "post-merge",
		"post-checkout", "pre-merge-commit", NULL};
	const char *const *h;

	project("lanes_wide", 2);
	for (h = hooks; *h; h++) {
		char rel[64], text[4400];

		snprintf(rel, sizeof(rel), "hooks/%s", *h);
		snprintf(text, sizeof(text),
			 "#!/bin/sh\necho %s >> '%s/hook-ran'\nexit 1\n", *h,
			 rt_dir());
		put_script(rel, text);
	}
	snprintf(cfg, sizeof(cfg), "[core]\n\thooksPath = %s/hooks\n",
		 rt_dir());
	put_script("home/.gitconfig", cfg);
	snprintf(home_env, sizeof(home_env), "HOME=%s/home", rt_dir());
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_files(run, four_files);
	mark = rt_path("hook-ran");
	ck_assert_msg(!rt_exists(mark), "a user hook ran: %s",
		      read_file("hook-ran"));
	free(mark);
	free(run);
}
END_TEST

/*
 * FIFOs in the workspace's git directory, left by an agent while nothing
 * kept it read-only (here: put there by hand after a kill before the
 * lanes started): info/exclude, which `git status` reads as the lanes
 * decide where they go and sbxloop itself reads on the host to add
 * .sbxloop/ to it. The resume completes in time; the exclude is a file
 * again, naming .sbxloop/ (sbxloop's read waited for a writer for good,
 * before).
 */
START_TEST(test_a_fifo_in_git_does_not_hold_the_lanes_start)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	const char *env[] = {"SBXLOOP_TEST_KILL_AFTER=decompose:1", NULL};
	const char *resume[] = {"resume", NULL, "--no-tui", NULL};
	char *run, *ws, path[8400], *text;
	struct tu_run r;
	double t0;

	project("lanes_kill", 2);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/.git/info/exclude", ws);
	ck_assert_int_eq(unlink(path) == 0 || errno == ENOENT, 1);
	ck_assert_int_eq(mkfifo(path, 0644), 0);
	resume[1] = run;
	t0 = sl_monotonic();
	rt_capture(&r, resume);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_double_lt(sl_monotonic() - t0, 60.0);
	assert_run_state(run, "completed");
	assert_done(run, four);
	text = sl_read_regular_file(path, NULL, 1 << 20);
	ck_assert_msg(text && strstr(text, "/.sbxloop/"), "%s",
		      text ? text : "not a regular file");
	free(text);
	tu_run_free(&r);
	free(ws);
	free(run);
}
END_TEST

static Suite *guard_suite(void)
{
	Suite *s = suite_create("lanes-guard");
	TCase *tc = tcase_create("guard");

	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(
		tc, test_agents_cannot_make_the_lanes_git_run_their_programs);
	tcase_add_loop_test(tc, test_fifos_agents_leave_do_not_hold_the_lanes,
			    0, 2);
	tcase_add_loop_test(
		tc, test_lanes_refuse_a_repository_config_that_runs_programs,
		0, 2);
	tcase_add_test(tc, test_user_git_hooks_never_run_on_lanes);
	tcase_add_test(tc, test_a_fifo_in_git_does_not_hold_the_lanes_start);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(guard_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

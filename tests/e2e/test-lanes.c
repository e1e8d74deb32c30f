/*
 * End-to-end suite of parallel lanes (budgets.max_parallel_tasks): the
 * real `sbxloop` ($SBXLOOP_BIN) on the local provider with a git project
 * (so the run works in a per-run clone) and the script backend, whose
 * replies are keyed by task (tests/scenarios/lanes_*.json) so each
 * lane's jobs get their own whatever the timing. Overlap is read from
 * the phase attempts' start and end times; the merged tree from git.
 */
#include "config.h"

#include <check.h>
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
 * The same, worked on in place with a repository extension libgit2 1.5
 * cannot open (a partial clone's): the lanes commit and merge with the
 * git command, and a git on PATH sees every call.
 */
static void git_command_project_set(const char *scenario, int lanes,
				    const char *settings)
{
	char extra[256], cmd[4400];

	project(scenario, lanes);
	snprintf(extra, sizeof(extra),
		 "sandbox:\n  workspace: repo\n"
		 "  workspace_isolation: in-place\n"
		 "budgets:\n  max_parallel_tasks: %d\n",
		 lanes);
	rt_write_config("local", NULL, extra);
	snprintf(cmd, sizeof(cmd), "cd '%s/repo' && %s", rt_dir(), settings);
	ck_assert_int_eq(system(cmd), 0);
}

static void git_command_project(const char *scenario, int lanes)
{
	git_command_project_set(scenario, lanes,
				"git config core.repositoryformatversion 1 && "
				"git config extensions.partialclone origin");
}

/* Pairs of different tasks whose `phase` attempts overlap in time. */
static long overlaps(const char *phase)
{
	return q_int("SELECT count(*) FROM phase_attempts a, phase_attempts b"
		     " WHERE a.phase = '%s' AND b.phase = '%s'"
		     " AND a.task_id < b.task_id"
		     " AND a.started_at < b.ended_at"
		     " AND b.started_at < a.ended_at",
		     phase, phase);
}

/* `git -C WS CMD` output of the run's workspace (caller frees). */
static char *git_out(const char *run, const char *cmd)
{
	char *ws = rt_workspace(run), line[8700], *text;
	FILE *p;
	size_t len = 0, cap = 4096, n;

	snprintf(line, sizeof(line), "git -C '%s' %s 2>&1", ws, cmd);
	free(ws);
	p = popen(line, "r");
	ck_assert_ptr_nonnull(p);
	text = malloc(cap);
	while ((n = fread(text + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 >= cap)
			text = realloc(text, cap *= 2);
	}
	text[len] = '\0';
	pclose(p);
	return text;
}

/* 1, 2 and 4 lanes on four independent tasks of 1 s each. */
START_TEST(test_wide_dag_runs_as_many_tasks_at_once_as_lanes)
{
	static const int lanes[] = {1, 2, 4};
	char *run, *log;
	long merges, pairs;

	project("lanes_wide", lanes[_i]);
	ck_assert_int_eq(sbxloop("run", "four files", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	pairs = overlaps("execute");
	/* 1 lane: none overlap; 2: pairs within two waves; 4: all six */
	if (lanes[_i] == 1)
		ck_assert_int_eq(pairs, 0);
	else if (lanes[_i] == 2)
		ck_assert_int_ge(pairs, 2);
	else
		ck_assert_int_eq(pairs, 6);
	log = git_out(run, "log --oneline --merges");
	merges = 0;
	for (char *p = log; (p = strstr(p, "sbxloop: merge task")); p++)
		merges++;
	ck_assert_int_eq(merges, lanes[_i] == 1 ? 0 : 4);
	free(log);
	/* no lane worktree or branch is left */
	log = git_out(run, "worktree list");
	ck_assert_msg(!strstr(log, ".sbxloop/lanes"), "%s", log);
	free(log);
	log = git_out(run, "branch --list 'sbxloop/lanes/*'");
	ck_assert_str_eq(log, "");
	free(log);
	free(run);
}
END_TEST

/* t1, then t2 and t3 at once, then t4 on the merged tree of both. */
START_TEST(test_diamond_starts_dependents_from_the_merged_tree)
{
	char *run;

	project("lanes_diamond", 2);
	ck_assert_int_eq(sbxloop("run", "a diamond", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, four);
	ck_assert_int_eq(q_int("SELECT count(*) FROM phase_attempts a,"
			       " phase_attempts b WHERE a.phase = 'execute'"
			       " AND b.phase = 'execute' AND a.task_id = 't2'"
			       " AND b.task_id = 't3'"
			       " AND a.started_at < b.ended_at"
			       " AND b.started_at < a.ended_at"),
			 1);
	/* t4 planned after t2 and t3 were accepted */
	ck_assert_int_eq(q_int("SELECT count(*) FROM phase_attempts p,"
			       " phase_attempts v WHERE p.task_id = 't4'"
			       " AND p.phase = 'plan' AND v.phase = 'validate'"
			       " AND v.task_id IN ('t2', 't3')"
			       " AND p.started_at >= v.ended_at"),
			 2);
	/* and its worktree had both: its VERIFY ran where out-t2/t3 are */
	assert_files(run, four_files);
	free(run);
}
END_TEST

/*
 * Sixteen independent tasks on eight lanes, jobs of uneven length: a
 * lane starts its next task while earlier tasks merge. No task may see
 * a conflict it did not make, and no commit may delete another task's
 * file (a worktree filled from one tip on a branch made at the next).
 */
START_TEST(test_merges_and_new_worktrees_overlap_cleanly)
{
	static const char *const many[] = {
		"t1",  "t2",  "t3",  "t4",  "t5",  "t6",  "t7",  "t8", "t9",
		"t10", "t11", "t12", "t13", "t14", "t15", "t16", NULL};
	char *run, *out, name[32];
	const char *files[2] = {name, NULL};
	size_t i;

	project("lanes_many", 8);
	ck_assert_int_eq(sbxloop("run", "sixteen files", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, many);
	for (i = 0; many[i]; i++) {
		snprintf(name, sizeof(name), "out-%s.txt", many[i]);
		assert_files(run, files);
	}
	ck_assert_int_eq(count_events(run, "task.conflict"), 0);
	out = git_out(run, "log --diff-filter=D --name-only --format=");
	ck_assert_msg(!*out, "files deleted by the tasks' commits:\n%s", out);
	free(out);
	out = git_out(run, "log --oneline --merges");
	for (i = 0; many[i]; i++) {
		snprintf(name, sizeof(name), "merge task %s\n", many[i]);
		ck_assert_msg(strstr(out, name), "no merge of %s:\n%s",
			      many[i], out);
	}
	free(out);
	free(run);
}
END_TEST

/* Two tasks write the same file: the later merge conflicts, re-plans
 * on the merged tree (a replan spent) and finishes. */
START_TEST(test_a_merge_conflict_replans_on_the_merged_tree)
{
	char *run, *shared, *ws, rel[8400];

	project("lanes_conflict", 2);
	ck_assert_int_eq(sbxloop("run", "one file, twice", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	ck_assert_int_eq(rt_event_count(run, "task.conflict", "task_id", "t2",
					"files", "*shared.txt*", NULL),
			 1);
	ck_assert_int_eq(rt_attempt_count(run, "t2", "plan", NULL, NULL), 2);
	{
		struct rt_task t;

		ck_assert_int_eq(rt_task_get(run, "t2", &t), 0);
		ck_assert_int_eq(t.replans, 1);
		rt_task_release(&t);
	}
	/* the second plan was told which file collided */
	shared = read_file("scenario.json.prompt.10");
	ck_assert_msg(strstr(shared, "merge conflict") &&
			      strstr(shared, "shared.txt"),
		      "%s", shared);
	free(shared);
	ws = rt_workspace(run);
	snprintf(rel, sizeof(rel), "%s/shared.txt", ws + strlen(rt_dir()) + 1);
	shared = read_file(rel);
	ck_assert_str_eq(shared, "one\ntwo\n");
	free(shared);
	free(ws);
	/* the conflict never reached the tree: no markers, no merge left */
	shared = git_out(run, "status --porcelain");
	ck_assert_str_eq(shared, "");
	free(shared);
	free(run);
}
END_TEST

/*
 * The lanes' checkouts, commits and merges, and the review's evidence,
 * happen in process (libgit2) on the host: a git on PATH that notes its
 * arguments sees none of them, no job gathers the evidence in the
 * sandbox (VERIFY's is the one batch job a task), git itself finds the
 * workspace clean with four merges, and each SCRUTINIZE prompt holds
 * its task's evidence (the untracked file, and as written since
 * EXECUTE); the repository's config is checked once. Without
 * libgit2 (_i = 1: SBXLOOP_LIBGIT2 names no library), and on a
 * repository with a split index, which libgit2 cannot read (_i = 2, in
 * place), and with a filter in the user's global git config, which
 * libgit2 would not run (_i = 3: it marks every file it cleans; _i =
 * 4: the same filter in a file the global config includes), the git
 * command does each of them (the evidence: a job in the sandbox), and
 * the run is the same. With libgit2 the lanes' branches and records go
 * in process too (no `branch -D`, no `worktree prune`), and so does the
 * look at whether the workspace is clean as they start (no `status`).
 */
START_TEST(test_lanes_run_no_git_process_for_a_task)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	char path_env[4200], home_env[4200], *run, *calls, *out;
	const char *env[] = {path_env, "SBXLOOP_LIBGIT2=libgit2-missing.so.0",
			     NULL};
	/* the lanes' own (the run's clone checks out its branch once), and
	 * their look at whether the workspace is clean as they start */
	static const char *const per_task[] = {
		"checkout -q -f -B",
		"commit -q",
		"merge -q",
		"add -A",
		"worktree prune",
		"branch -q -D",
		"status --porcelain --untracked-files=all",
		NULL};
	const char *const *w;
	int n, reviews = 0;

	if (_i >= 3) {
		char cfg[4400];

		snprintf(cfg, sizeof(cfg),
			 "[filter \"mark\"]\n\tclean = \"sh -c 'cat; echo "
			 ">> %s/filtered' --\"\n",
			 rt_dir());
		put_script(_i == 3 ? "home/.gitconfig" : "home/filters.inc",
			   cfg);
		if (_i == 4)
			put_script("home/.gitconfig",
				   "[include]\n\tpath = filters.inc\n");
		snprintf(home_env, sizeof(home_env), "HOME=%s/home", rt_dir());
		env[1] = home_env;
	} else if (_i != 1) {
		env[1] = NULL;
	}
	if (_i == 2)
		git_command_project_set("lanes_wide", 2,
					"git config core.splitIndex true && "
					"git update-index --split-index");
	else
		project("lanes_wide", 2);
	if (_i >= 3) { /* every file of the project's, the tasks' too */
		char cmd[4400];

		snprintf(
			cmd, sizeof(cmd),
			"cd '%s/repo' && echo '* filter=mark' > .gitattributes "
			"&& git add .gitattributes && git commit -qm attrs",
			rt_dir());
		ck_assert_int_eq(system(cmd), 0);
	}
	put_script("bin/git", "#!/bin/sh\n"
			      "[ -z \"$LANES_GIT_CALLS_LOG\" ] || "
			      "echo \"$*\" >> \"$LANES_GIT_CALLS_LOG\"\n"
			      "exec /usr/bin/git \"$@\"\n");
	calls = rt_path("git-calls");
	setenv("LANES_GIT_CALLS_LOG", calls, 1);
	snprintf(path_env, sizeof(path_env), "PATH=%s/bin:%s", rt_dir(),
		 getenv("PATH"));
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 0);
	unsetenv("LANES_GIT_CALLS_LOG");
	free(calls);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	calls = read_file("git-calls");
	/* the wrapper saw sbxloop's git: its look at the workspace */
	ck_assert_msg(strstr(calls, "rev-parse"), "no git call noted:\n%s",
		      calls);
	for (w = per_task; *w; w++)
		ck_assert_msg(!strstr(calls, *w) == !_i, "git %s %s:\n%s", *w,
			      _i ? "did not run" : "ran", calls);
	/* the repository's config is read once as the lanes start (where
	 * they go, then their worktrees' paths: no job ran between) */
	n = 0;
	for (const char *p = calls; (p = strstr(p, "config --list --no-inc"));
	     p++)
		n++;
	ck_assert_msg(n == 1, "the config was read %d times:\n%s", n, calls);
	free(calls);
	for (n = 1; n < 40; n++) {
		char rel[64], *path, *p;
		int there;

		snprintf(rel, sizeof(rel), "scenario.json.prompt.%d", n);
		path = rt_path("%s", rel);
		there = rt_exists(path);
		free(path);
		if (!there) /* numbered by reply, not by job */
			continue;
		p = read_file(rel);
		if (strstr(p, "### git status\n\n```\n?? out-t")) {
			reviews++;
			ck_assert_msg(_i || strstr(p, "### recently changed "
						      "files\n\n```\n./out-t"),
				      "%s", p);
		}
		free(p);
	}
	ck_assert_int_eq(reviews, 4);
	/* the sandbox's jobs: VERIFY's a task, and the evidence's without
	 * libgit2 */
	ck_assert_int_eq(rt_event_count(run, "worker.start", "kind",
					"shell.batch", "task_id", "t*", NULL),
			 _i ? 8 : 4);
	if (_i >= 3) { /* git obeyed the user's filter */
		char *mark = rt_path("filtered");

		ck_assert_msg(rt_exists(mark), "the user's filter never ran");
		free(mark);
	}
	out = git_out(run, "status --porcelain");
	ck_assert_str_eq(out, "");
	free(out);
	out = git_out(run, "log --merges --format=%s");
	ck_assert_msg(strstr(out, "merge task t1") &&
			      strstr(out, "merge task t4"),
		      "%s", out);
	free(out);
	free(run);
}
END_TEST

/*
 * An accepted task leaves its lane at once: the lane takes the next
 * task while the merger commits and merges the last one, here with the
 * git command (git_command_project), whose every lane commit takes 2 s
 * more (a git on PATH that waits before the merger's `commit
 * --allow-empty`). The wait is in the commit, not the
 * merge: a merge holds the tip lock, which a new worktree waits for, so
 * a lane whose acceptance lagged the other's past the (fast) commit saw
 * its next task start after the first merge (a flake under sanitizers
 * in CI). With two lanes all four tasks have started before the first
 * task.end (a merged task's end); when a lane waited for its own
 * commit and merge, only two had.
 */
START_TEST(test_a_lane_takes_its_next_task_while_the_last_is_merged)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	char path_env[4200], *run;
	const char *env[] = {path_env, NULL};
	long first_end;

	git_command_project("lanes_wide", 2);
	put_script("bin/git",
		   "#!/bin/sh\n"
		   "for a; do [ \"$a\" = --allow-empty ] && sleep 2; "
		   "done\n"
		   "exec /usr/bin/git \"$@\"\n");
	snprintf(path_env, sizeof(path_env), "PATH=%s/bin:%s", rt_dir(),
		 getenv("PATH"));
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	first_end = rt_event_seq(run, 0, "task.end", NULL);
	ck_assert_int_gt(first_end, 0);
	ck_assert_int_eq(q_int("SELECT count(*) FROM events WHERE run_id = "
			       "'%s' AND type = 'task.start' AND seq < %ld",
			       run, first_end),
			 4);
	free(run);
}
END_TEST

/*
 * kill -9 while the merge thread's git runs (the git command:
 * git_command_project; libgit2's merge dies with sbxloop): that git
 * outlives the driver, and the resume, started at once, waits for it
 * to end before it touches the workspace (before, it cleared git's
 * locks and merged beside it). Here the killed run's merge git (a git on PATH) goes on
 * for 3 s after the merge and then notes when it ended; the kill comes
 * with t3's EXECUTE, 1 s after t1's acceptance; the resume's run.start
 * comes after the note, and the run completes.
 */
START_TEST(test_a_resume_waits_for_the_git_a_killed_run_left)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	char path_env[4200], *run, *ended;
	const char *env[] = {path_env, "SBXLOOP_TEST_KILL_AFTER=execute:3",
			     NULL};
	double end;
	long resumed;

	/* replies keyed by phase: a job the kill cut off takes another */
	git_command_project("lanes_kill", 2);
	put_script("bin/git",
		   "#!/bin/sh\n"
		   "for a; do [ \"$a\" = --no-ff ] && slow=1; done\n"
		   "[ -z \"$slow\" ] && exec /usr/bin/git \"$@\"\n"
		   "/usr/bin/git \"$@\"; rc=$?\n"
		   "sleep 3\n"
		   "date +%s.%N >> \"$MERGE_ENDS\"\n"
		   "exit $rc\n");
	ended = rt_path("merge-ends");
	setenv("MERGE_ENDS", ended, 1);
	snprintf(path_env, sizeof(path_env), "PATH=%s/bin:%s", rt_dir(),
		 getenv("PATH"));
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	/* the resume runs the real git: only the killed run's is slow */
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	unsetenv("MERGE_ENDS");
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	free(ended);
	ended = read_file("merge-ends");
	ck_assert_msg(*ended, "the resume was over while the killed run's "
			      "git still ran");
	end = strtod(ended, NULL) * 1000;
	/* the second run.start is the resume's, in ms */
	resumed = q_int("SELECT CAST(max(ts) * 1000 AS INTEGER) FROM events "
			"WHERE run_id = '%s' AND type = 'run.start'",
			run);
	ck_assert_msg(resumed > end,
		      "the resume started %.0f ms before the killed run's "
		      "git ended",
		      end - (double)resumed);
	free(ended);
	free(run);
}
END_TEST

/*
 * Lanes killed while they worked on the workspace's own git; before the
 * resume the user leaves an untracked file there, which would send new
 * lanes to a shadow repository. The resume goes on with the workspace's
 * git, whose worktrees and branches the killed lanes left: all four
 * tasks done, none of the lanes' worktrees or branches left in the
 * user's git, the user's file kept. Before, the resume made a shadow
 * repository and left the killed lanes' branches and records behind.
 */
START_TEST(test_a_resume_keeps_the_lanes_on_the_git_they_ran_on)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	const char *env[] = {"SBXLOOP_TEST_KILL_AFTER=execute:2", NULL};
	const char *resume[] = {"resume", NULL, "--no-tui", NULL};
	char *run, *ws, *text, path[8400];
	struct tu_run r;

	project("lanes_kill", 2);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/notes.txt", ws);
	tu_write(path, "mine\n");
	resume[1] = run;
	rt_capture(&r, resume);
	ck_assert_msg(r.status == 0, "%d\n%s", r.status, r.err);
	ck_assert_msg(!strstr(r.err, "repository of their own"), "%s", r.err);
	tu_run_free(&r);
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	text = tu_read(path);
	ck_assert_str_eq(text ? text : "", "mine\n");
	free(text);
	text = git_out(run, "branch --list 'sbxloop/lanes/*'");
	ck_assert_msg(!*text, "left: %s", text);
	free(text);
	text = git_out(run, "worktree list --porcelain");
	ck_assert_msg(!strstr(text, ".sbxloop"), "left: %s", text);
	free(text);
	snprintf(path, sizeof(path), "%s/.sbxloop/git", ws);
	ck_assert_int_ne(access(path, F_OK), 0);
	free(ws);
	free(run);
}
END_TEST

/* kill -9 with lanes in flight, then resume: the same end. */
START_TEST(test_kill_with_lanes_in_flight_then_resume)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	const char *env[] = {"SBXLOOP_TEST_KILL_AFTER=execute:2", NULL};
	char *run, *log;

	project("lanes_kill", 4);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	/* status names the tasks the lanes had under way */
	{
		const char *sargs[] = {"status", run, NULL};
		struct tu_run r;

		rt_capture(&r, sargs);
		ck_assert_int_eq(r.status, 0);
		ck_assert_msg(strstr(r.out, "under way: t"), "%s", r.out);
		tu_run_free(&r);
	}
	/* the kill may cut a merge off: leave one in progress */
	{
		char *ws = rt_workspace(run), cmd[9000];

		snprintf(
			cmd, sizeof(cmd),
			"cd '%s' && git checkout -q -b cut-off && "
			"echo junk > junk.txt && git add junk.txt && "
			"git -c user.name=t -c user.email=t@t commit -qm junk "
			"&& git checkout -q - && git merge -q --no-commit "
			"--no-ff cut-off && test -f junk.txt",
			ws);
		free(ws);
		ck_assert_int_eq(system(cmd), 0);
	}
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	/* the cut-off merge was undone, the lanes merged every task */
	{
		char *ws = rt_workspace(run), path[8400];

		snprintf(path, sizeof(path), "%s/junk.txt", ws);
		ck_assert_int_ne(access(path, F_OK), 0);
		free(ws);
	}
	log = git_out(run, "log --oneline --merges");
	ck_assert_msg(strstr(log, "merge task t1") &&
			      strstr(log, "merge task t4"),
		      "%s", log);
	free(log);
	/* no committed EXECUTE ran twice */
	ck_assert_int_eq(rt_attempt_count(run, NULL, "execute", NULL, NULL),
			 4);
	log = git_out(run, "worktree list");
	ck_assert_msg(!strstr(log, ".sbxloop/lanes"), "%s", log);
	free(log);
	free(run);
}
END_TEST

/* cancel from another process stops every lane at its boundary. */
START_TEST(test_cancel_stops_every_lane_and_resume_finishes)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	pid_t pid;
	char *run;

	project("lanes_wide", 4);
	pid = spawn_sbxloop(NULL, args);
	ck_assert(wait_until("task", "executing", 20));
	run = last_run();
	ck_assert_int_eq(sbxloop("cancel", run, NULL), 0);
	ck_assert_int_eq(wait_code(pid), 2);
	assert_run_state(run, "cancelled");
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_files(run, four_files);
	free(run);
}
END_TEST

/* Lanes need a git checkout: a plain directory runs one at a time. */
/*
 * No git: the lanes work on a shadow repository under .sbxloop/ (the
 * run says so), all four tasks at once, and it is gone at the end.
 */
START_TEST(test_without_git_lanes_run_on_a_shadow_repository)
{
	char *run, *ws, path[8400];

	copy_scenario("lanes_wide");
	rt_write_config("local", NULL, "budgets:\n  max_parallel_tasks: 4\n");
	ck_assert_int_eq(sbxloop("run", "four files", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_file_has("err.txt", "the workspace is not a git checkout, so "
				   "the lanes work on a repository of their "
				   "own");
	ck_assert_int_eq(overlaps("execute"), 6);
	assert_done(run, four);
	assert_files(run, four_files);
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/.sbxloop", ws);
	ck_assert_msg(access(path, F_OK) != 0, "%s is left", path);
	snprintf(path, sizeof(path), "%s/.git", ws);
	ck_assert_msg(access(path, F_OK) != 0, "%s appeared", path);
	free(ws);
	free(run);
}
END_TEST

/* The same on a shadow repository: kill -9 mid-lanes, then resume. */
START_TEST(test_kill_and_resume_on_a_shadow_repository)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	const char *env[] = {"SBXLOOP_TEST_KILL_AFTER=execute:2", NULL};
	char *run, *ws, path[8400];

	copy_scenario("lanes_kill");
	rt_write_config("local", NULL, "budgets:\n  max_parallel_tasks: 4\n");
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/.sbxloop/git", ws);
	ck_assert_msg(access(path, F_OK) == 0, "no shadow at the kill");
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_done(run, four);
	assert_files(run, four_files);
	ck_assert_int_eq(rt_attempt_count(run, NULL, "execute", NULL, NULL),
			 4);
	snprintf(path, sizeof(path), "%s/.sbxloop", ws);
	ck_assert_msg(access(path, F_OK) != 0, "%s is left", path);
	free(ws);
	free(run);
}
END_TEST

/*
 * A sandbox that does not mount the workspace (the mock's unmounted):
 * the lanes work inside it (git there, on a shadow repository of the
 * sandbox's copy), all four at once, and the harvested result holds
 * every task's file and nothing of the lanes' machinery.
 */
START_TEST(test_unmounted_lanes_run_inside_the_sandbox)
{
	char *run, *p;
	const char *const *f;

	copy_scenario("lanes_wide");
	rt_write_config("mock", "[]",
			"mock:\n  unmounted: true\n"
			"budgets:\n  max_parallel_tasks: 4\n");
	ck_assert_int_eq(sbxloop("run", "four files", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_file_has("err.txt", "inside the sandbox");
	ck_assert_int_eq(overlaps("execute"), 6);
	assert_done(run, four);
	for (f = four_files; *f; f++) {
		p = rt_path("state/runs/%s/artifacts/%s", run, *f);
		ck_assert_msg(rt_exists(p), "%s was not harvested", *f);
		free(p);
	}
	p = rt_path("state/runs/%s/artifacts/.sbxloop", run);
	ck_assert_msg(!rt_exists(p), "the lanes' files were harvested");
	free(p);
	free(run);
}
END_TEST

/*
 * kill -9 in a harvested run (the sandbox does not mount the workspace),
 * then resume. The work done before the kill lived only in the dead
 * sandbox and in its harvests; the resume's fresh sandbox gets the last
 * harvest back, and a task whose work that harvest lacks executes again
 * on its plan. Nothing done is lost, nothing harvested is done twice.
 */
static char *kill_unmounted(int lanes, const char *kill_after,
			    const char *more)
{
	const char *args[] = {"run", "four files", "--no-tui", NULL};
	char kill_env[64], extra[256];
	const char *env[] = {kill_env, NULL};

	snprintf(kill_env, sizeof(kill_env), "SBXLOOP_TEST_KILL_AFTER=%s",
		 kill_after);
	snprintf(extra, sizeof(extra),
		 "mock:\n  unmounted: true\n%s"
		 "budgets:\n  max_parallel_tasks: %d\n",
		 more, lanes);
	copy_scenario("lanes_kill");
	rt_write_config("mock", "[]", extra);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	return last_run();
}

/* The run finished whole: every task done, its file in the harvest. */
static void assert_whole(const char *run)
{
	const char *const *f;
	char *p;

	assert_run_state(run, "completed");
	assert_done(run, four);
	for (f = four_files; *f; f++) {
		p = rt_path("state/runs/%s/artifacts/%s", run, *f);
		ck_assert_msg(rt_exists(p), "%s is lost", *f);
		free(p);
	}
}

/* How many tasks the resume did again, by its sandbox.workspace_seed. */
static long redone(const char *run)
{
	char *list =
		rt_event_text(run, "redone", "sandbox.workspace_seed", NULL);
	long n = 0;
	const char *p;

	for (p = list; (p = strchr(p, '"')) != NULL; p++)
		n++;
	free(list);
	return n / 2;
}

START_TEST(test_unmounted_kill_then_resume_keeps_the_work_done)
{
	char *run = kill_unmounted(1, "execute:2", ""), *text;

	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_whole(run);
	/* t1's harvest went in, t2 (in flight) executed again */
	text = rt_event_text(run, NULL, "sandbox.workspace_seed", NULL);
	ck_assert_msg(strstr(text, "\"redone\":[\"t2\"]") &&
			      strstr(text, "\"files\":1"),
		      "%s", text);
	free(text);
	ck_assert_int_eq(rt_attempt_count(run, "t1", "execute", NULL, NULL),
			 1);
	ck_assert_int_eq(rt_attempt_count(run, "t2", "execute", NULL, NULL),
			 2);
	free(run);
}
END_TEST

/* Lanes inside the sandbox, killed with tasks done and in flight. */
START_TEST(test_unmounted_lanes_kill_then_resume_keep_the_work_done)
{
	char *run = kill_unmounted(4, "validate:2", ""), *list, quoted[16];
	const char *const *t;

	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_whole(run);
	ck_assert_int_ge(redone(run), 1);
	/* a task the last harvest held executed once */
	list = rt_event_text(run, "redone", "sandbox.workspace_seed", NULL);
	for (t = four; *t; t++) {
		snprintf(quoted, sizeof(quoted), "\"%s\"", *t);
		if (!strstr(list, quoted))
			ck_assert_int_eq(rt_attempt_count(run, *t, "execute",
							  NULL, NULL),
					 1);
	}
	free(list);
	free(run);
}
END_TEST

/* harvest_mode final: no harvest before the kill, so all is done again. */
START_TEST(test_unmounted_final_harvest_kill_then_resume_redoes_the_work)
{
	char *run = kill_unmounted(1, "execute:2",
				   "artifacts:\n  harvest_mode: final\n");

	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_whole(run);
	ck_assert_int_eq(redone(run), 2);
	ck_assert_int_eq(rt_attempt_count(run, "t1", "execute", NULL, NULL),
			 2);
	free(run);
}
END_TEST

/*
 * A task state this sbxloop does not know (a newer one wrote it) is
 * never taken for work in flight: the resume refuses it by name and the
 * store keeps it as it was.
 */
START_TEST(test_unmounted_resume_keeps_a_state_it_does_not_know)
{
	const char *args[] = {"resume", NULL, "--no-tui", NULL};
	char *run = kill_unmounted(1, "execute:2", "");
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "UPDATE tasks SET state = 'reviewing' WHERE run_id = '%s' "
		 "AND task_id = 't2'",
		 run);
	q_exec(sql);
	args[1] = run;
	ck_assert_int_ne(wait_code(spawn_sbxloop(NULL, args)), 0);
	assert_file_has("err.txt",
			"task t2 has the unknown state 'reviewing'");
	assert_task_state(run, "t2", "reviewing");
	free(run);
}
END_TEST

/*
 * The harvest cannot go back in: the resume stops with the reason, and
 * the harvest on the host is what it was (the fresh sandbox, lacking
 * it, is never harvested over it); the next resume finishes.
 */
START_TEST(test_unmounted_resume_that_cannot_seed_keeps_the_harvest)
{
	const char *args[] = {"resume", NULL, "--no-tui", NULL};
	char *run = kill_unmounted(1, "execute:2", ""), *p, path_env[4200];
	const char *env[] = {path_env, NULL};

	/* a tar on PATH that cannot write the archive of the harvest */
	p = rt_path("bin");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	free(p);
	put_file("bin/tar", "#!/bin/sh\n"
			    "case \"$2\" in *seed.tar) echo \"tar: $2: No "
			    "space left on device\" >&2; exit 2;; esac\n"
			    "exec /usr/bin/tar \"$@\"\n");
	p = rt_path("bin/tar");
	ck_assert_int_eq(chmod(p, 0755), 0);
	free(p);
	snprintf(path_env, sizeof(path_env), "PATH=%s/bin:%s", rt_dir(),
		 getenv("PATH"));
	args[1] = run;
	ck_assert_int_ne(wait_code(spawn_sbxloop(env, args)), 0);
	assert_file_has("err.txt", "cannot put the harvested work of run");
	assert_file_has("err.txt", "No space left on device");
	p = rt_path("state/runs/%s/artifacts/out-t1.txt", run);
	ck_assert_msg(rt_exists(p), "the failed resume harvested over t1");
	free(p);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_whole(run);
	free(run);
}
END_TEST

/*
 * A git checkout with uncommitted changes: the lanes see them (a
 * shadow repository records the files as they stand), the work lands
 * in the workspace, and the user's own git is untouched: the same
 * HEAD, no new branch, the change still uncommitted.
 */
START_TEST(test_a_dirty_checkout_gets_lanes_and_keeps_its_git)
{
	char cmd[4400], *run, *out, *head;

	project("lanes_wide", 2);
	rt_write_config("local", NULL,
			"sandbox:\n  workspace: repo\n"
			"  workspace_isolation: in-place\n"
			"budgets:\n  max_parallel_tasks: 2\n");
	snprintf(cmd, sizeof(cmd),
		 "cd '%s/repo' && echo mine >> README && "
		 "git rev-parse HEAD > ../head.txt",
		 rt_dir());
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(sbxloop("run", "four files", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_file_has("err.txt", "uncommitted changes, so the lanes work");
	ck_assert_int_ge(overlaps("execute"), 2);
	assert_files(run, four_files);
	head = read_file("head.txt");
	out = git_out(run, "rev-parse HEAD");
	ck_assert_msg(!strncmp(out, head, 40), "HEAD moved: %s", out);
	free(out);
	free(head);
	out = git_out(run, "status --porcelain");
	ck_assert_msg(strstr(out, " M README") &&
			      strstr(out, "?? out-t1.txt") &&
			      !strstr(out, ".sbxloop"),
		      "%s", out);
	free(out);
	out = git_out(run, "branch --list");
	ck_assert_msg(!strstr(out, "lanes"), "%s", out);
	free(out);
	free(run);
}
END_TEST

/*
 * An accepted task whose work git will not commit (its EXECUTE left a
 * repository with no commit in the worktree): the run stops with git's
 * own reason, exit 2, and t1 is never merged as if its work were in;
 * its worktree stays, with the work, for the user and a resume.
 */
START_TEST(test_work_git_cannot_commit_stops_the_run)
{
	const char *args[] = {"run", "two files", "--no-tui", NULL};
	struct tu_run r;
	char *run, *ws, path[8400];

	project("lanes_uncommittable", 2);
	rt_capture(&r, args);
	ck_assert_msg(r.status == 2, "%d\n%s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "cannot commit the work of task t1") &&
			      strstr(r.err, "does not have a commit") &&
			      strstr(r.err, "can be resumed"),
		      "%s", r.err);
	tu_run_free(&r);
	run = last_run();
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/out-t1.txt", ws);
	ck_assert_int_ne(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/.sbxloop/lanes/t1/out-t1.txt", ws);
	ck_assert_int_eq(access(path, F_OK), 0);
	free(ws);
	free(run);
}
END_TEST

static Suite *lanes_suite(void)
{
	Suite *s = suite_create("lanes");
	TCase *tc = tcase_create("lanes");

	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(
		tc, test_wide_dag_runs_as_many_tasks_at_once_as_lanes, 0, 3);
	tcase_add_test(tc,
		       test_diamond_starts_dependents_from_the_merged_tree);
	tcase_add_loop_test(tc, test_merges_and_new_worktrees_overlap_cleanly,
			    0, 3);
	tcase_add_test(tc, test_a_merge_conflict_replans_on_the_merged_tree);
	tcase_add_loop_test(tc, test_lanes_run_no_git_process_for_a_task, 0,
			    5);
	tcase_add_test(
		tc, test_a_lane_takes_its_next_task_while_the_last_is_merged);
	tcase_add_test(tc, test_a_resume_waits_for_the_git_a_killed_run_left);
	tcase_add_test(tc, test_kill_with_lanes_in_flight_then_resume);
	tcase_add_test(tc,
		       test_a_resume_keeps_the_lanes_on_the_git_they_ran_on);
	tcase_add_test(tc, test_cancel_stops_every_lane_and_resume_finishes);
	tcase_add_test(tc, test_without_git_lanes_run_on_a_shadow_repository);
	tcase_add_test(tc, test_a_dirty_checkout_gets_lanes_and_keeps_its_git);
	tcase_add_test(tc, test_kill_and_resume_on_a_shadow_repository);
	tcase_add_test(tc, test_unmounted_lanes_run_inside_the_sandbox);
	tcase_add_test(tc,
		       test_unmounted_kill_then_resume_keeps_the_work_done);
	tcase_add_test(
		tc, test_unmounted_lanes_kill_then_resume_keep_the_work_done);
	tcase_add_test(
		tc,
		test_unmounted_final_harvest_kill_then_resume_redoes_the_work);
	tcase_add_test(
		tc, test_unmounted_resume_that_cannot_seed_keeps_the_harvest);
	tcase_add_test(tc,
		       test_unmounted_resume_keeps_a_state_it_does_not_know);
	tcase_add_test(tc, test_work_git_cannot_commit_stops_the_run);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(lanes_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

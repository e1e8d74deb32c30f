/*
 * End-to-end suite of the resource guardrails, the artifact harvest and
 * workspace isolation (issue 6): the real `sbxloop` binary
 * ($SBXLOOP_BIN) runs scripted scenarios in a scratch directory with the
 * local or mock provider and the real worker, as in test-policy-run.
 * Assertions read the store through its vtable (task and run rows,
 * attempts, events), `sbxloop artifacts`, the files, git, and exit
 * codes.
 */
#include "config.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtest.h"
#include "testutil.h"

/* ---- resource guardrails ------------------------------------------------ */

/*
 * The worker's real sampler reads figures from SBXLOOP_FAKE_RESOURCES
 * (relative to the workspace), which t1's scripted EXECUTE fills: the
 * next sample is at abort level, and at the next phase boundary t1 fails
 * with the diagnosis, t2 (its dependent) is skipped, t3 (done first) is
 * untouched, and run.artifacts says the disk was full.
 */
START_TEST(test_a_disk_abort_fails_the_task_and_skips_its_dependents)
{
	const char *env[] = {"SBXLOOP_FAKE_RESOURCES=fake-resources.txt",
			     NULL};
	const char *args[] = {"run", "fill the disk", "--no-tui", NULL};
	char *run, *fb, *data;

	copy_scenario("policy_disk_abort");
	rt_write_config("local", "[]",
			"limits:\n  disk_warn: 90\n  disk_abort: 95\n"
			"  mem_warn: 0\n  mem_abort: 0\n");
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 1);
	run = last_run();
	assert_run_state(run, "failed");
	assert_task_state(run, "t3", "done");
	assert_task_state(run, "t1", "failed");
	assert_task_state(run, "t2", "skipped");
	fb = rt_task_field(run, "t1", "last_feedback");
	ck_assert_str_eq(fb, "sandbox disk exhausted: 97.5% of the workspace "
			     "filesystem is used (limits.disk_abort=95%)");
	free(fb);
	/* the sample came from the worker, after the EXECUTE that filled
	 * the disk; t1 never reached VERIFY, t2 never started */
	ck_assert_int_gt(rt_event_count(run, "sandbox.resources_warning",
					"task_id", "t1", "level", "abort",
					NULL),
			 0);
	ck_assert_int_eq(rt_attempt_count(run, "t1", "verify", NULL, NULL), 0);
	ck_assert_int_eq(rt_attempt_count(run, "t2", NULL, NULL, NULL), 0);
	ck_assert_int_eq(
		rt_attempt_count(run, "t3", "validate", "accept", NULL), 1);
	data = rt_event_text(run, "disk_used_pct", "run.artifacts", NULL);
	ck_assert_str_eq(data, "97.5");
	free(data);
	data = rt_event_text(run, "resources_level", "run.artifacts", NULL);
	ck_assert_str_eq(data, "abort");
	free(data);
	assert_file_has("out.txt", "finished: failed");
	free(run);
}
END_TEST

/*
 * sandbox.lanes: per-lane gives each lane a sandbox of its own, so each
 * lane's guard reads its own sandbox's samples: t1's EXECUTE fills its
 * lane's disk (the sampler reads fake-resources.txt from the job's
 * worktree) and t1 fails, while t2, executing for 3 s in the other
 * lane's sandbox, is done. With one sample for the whole process, t2's
 * boundary read t1's and failed it too.
 */
START_TEST(test_a_full_lane_sandbox_fails_only_its_own_task)
{
	const char *env[] = {"SBXLOOP_FAKE_RESOURCES=fake-resources.txt",
			     NULL};
	const char *args[] = {"run", "two files", "--no-tui", NULL};
	char *run, *fb, *ws, path[8400];

	rt_git_repo();
	copy_scenario("lanes_disk");
	rt_write_config("local", "[]",
			"limits:\n  disk_warn: 90\n  disk_abort: 95\n"
			"  mem_warn: 0\n  mem_abort: 0\n"
			"sandbox:\n  workspace: repo\n  lanes: per-lane\n"
			"budgets:\n  max_parallel_tasks: 2\n");
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 1);
	run = last_run();
	assert_run_state(run, "failed");
	assert_task_state(run, "t1", "failed");
	assert_task_state(run, "t2", "done");
	fb = rt_task_field(run, "t1", "last_feedback");
	ck_assert_msg(strstr(fb, "sandbox disk exhausted: 97.5%"),
		      "t1's feedback: %s", fb);
	free(fb);
	ck_assert_int_eq(rt_event_count(run, "sandbox.resources_warning",
					"task_id", "t2", "level", "abort",
					NULL),
			 0);
	/* t2's work is merged, t1's is not */
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/out-t2.txt", ws);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/out-t1.txt", ws);
	ck_assert_int_ne(access(path, F_OK), 0);
	free(ws);
	free(run);
}
END_TEST

/*
 * An agent stopped at its tool-call ceiling (ToolCallCeiling) has used
 * up a budget: the task fails with the worker's message, its dependents
 * are skipped, an independent task still completes, the run ends failed.
 */
START_TEST(test_a_tool_call_ceiling_fails_the_task_and_skips_dependents)
{
	char *run, *fb;

	copy_scenario("tool_ceiling");
	rt_write_config("local", "[]", NULL);
	ck_assert_int_eq(sbxloop("run", "too many tools", "--no-tui"), 1);
	run = last_run();
	assert_run_state(run, "failed");
	assert_task_state(run, "t3", "done");
	assert_task_state(run, "t1", "failed");
	assert_task_state(run, "t2", "skipped");
	fb = rt_task_field(run, "t1", "last_feedback");
	ck_assert_msg(strstr(fb, "tool-call ceiling of 40 "
				 "(budgets.max_tool_calls_per_phase)"),
		      "t1's feedback: %s", fb);
	free(fb);
	ck_assert_int_eq(rt_attempt_count(run, "t2", NULL, NULL, NULL), 0);
	free(run);
}
END_TEST

/* ---- artifacts ---------------------------------------------------------- */

/*
 * A sandbox that does not mount the workspace (the mock's `unmounted`):
 * the run's results are harvested out of it, and what the exclusions
 * left out is counted in run.artifacts and by `sbxloop artifacts`.
 */
START_TEST(test_an_unmounted_run_harvests_and_counts_what_it_left_out)
{
	const char *tree[] = {"artifacts", NULL, "--tree", NULL};
	char *run, *adir, *p, *ex, *real;
	struct tu_run r;

	copy_scenario("policy_harvest");
	rt_write_config("mock", "[]", "mock:\n  unmounted: true\n");
	ck_assert_int_eq(sbxloop("run", "harvest", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	{
		struct rt_run row;

		rt_run_get(run, &row);
		ck_assert_int_eq(row.mounted, 0);
		rt_run_release(&row);
	}
	real = realpath(rt_dir(), NULL);
	adir = rt_event_text(run, "path", "run.artifacts", NULL);
	p = rt_path("state/runs/%s/artifacts", run);
	ck_assert_int_eq(strncmp(adir, real, strlen(real)), 0);
	ck_assert_str_eq(adir + strlen(real), p + strlen(rt_dir()));
	free(p);
	ex = rt_event_text(run, "files", "run.artifacts", NULL);
	ck_assert_str_eq(ex, "2");
	free(ex);
	ex = rt_event_text(run, "mounted", "run.artifacts", NULL);
	ck_assert_str_eq(ex, "0");
	free(ex);
	ex = rt_event_text(run, "excluded", "run.artifacts", NULL);
	ck_assert_str_eq(ex, "{\"*.egg-info\":1,\".venv\":1,"
			     "\"__pycache__\":1,\"node_modules\":2}");
	free(ex);
	/* the copy holds the work and none of what was left out */
	p = rt_path("state/runs/%s/artifacts/out-t1.txt", run);
	ck_assert(rt_exists(p));
	free(p);
	p = rt_path("state/runs/%s/artifacts/node_modules", run);
	ck_assert(!rt_exists(p));
	free(p);
	/* the host workspace was never the sandbox's */
	p = rt_path("state/runs/%s/workspace/out-t1.txt", run);
	ck_assert(!rt_exists(p));
	free(p);
	assert_file_has("out.txt", "(harvested)");
	assert_file_has("out.txt", "5 file(s) excluded");

	tree[1] = run;
	rt_capture(&r, tree);
	ck_assert_msg(r.status == 0, "artifacts exited %d: %s", r.status,
		      r.err);
	ck_assert_msg(strstr(r.out, "(harvested copy)") &&
			      strstr(r.out, "  src/\n    m.py\n") &&
			      strstr(r.out, "  out-t1.txt\n") &&
			      strstr(r.out, "5 file(s) excluded (*.egg-info: "
					    "1, .venv: 1, __pycache__: 1, "
					    "node_modules: 2)"),
		      "artifacts --tree printed:\n%s", r.out);
	ck_assert_ptr_null(strstr(r.out, "left-pad"));
	tu_run_free(&r);
	free(adir);
	free(real);
	free(run);
}
END_TEST

/* ---- workspace isolation ------------------------------------------------ */

/* `git -C repo ARGS...` must succeed: its stdout, trimmed (caller frees). */
static char *git(const char *repo, ...)
{
	const char *argv[32];
	struct tu_run r;
	size_t n = 0, len;
	va_list ap;
	char *out;

	argv[n++] = "git";
	argv[n++] = "-C";
	argv[n++] = repo;
	va_start(ap, repo);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	tu_exec(&r, NULL, NULL, argv);
	ck_assert_msg(r.status == 0, "git %s %s failed: %s", argv[3],
		      argv[4] ? argv[4] : "", r.err);
	out = r.out;
	r.out = NULL;
	tu_run_free(&r);
	len = strlen(out);
	while (len && out[len - 1] == '\n')
		out[--len] = '\0';
	return out;
}

#define GIT_ID "-c", "user.name=t", "-c", "user.email=t@example.org"

/* src/: a checkout with one commit and an origin holding credentials
 * (returns the absolute path; caller frees). */
static char *make_checkout(void)
{
	char *src = rt_path("src"), *real;

	ck_assert_int_eq(mkdir(src, 0755), 0);
	free(git(src, "init", "-q", NULL));
	put_file("src/a.txt", "a\n");
	free(git(src, "add", "a.txt", NULL));
	free(git(src, GIT_ID, "commit", "-qm", "init", NULL));
	free(git(src, "remote", "add", "origin",
		 "https://user:s3cret@example.com/o/r.git", NULL));
	real = realpath(src, NULL);
	free(src);
	return real;
}

/* Everything of a checkout a run could disturb (caller frees). */
static char *snapshot(const char *src)
{
	char *parts[7], *all;
	size_t i;

	parts[0] = git(src, "rev-parse", "HEAD", "HEAD^{tree}", NULL);
	parts[1] = git(src, "symbolic-ref", "HEAD", NULL);
	parts[2] = git(src, "for-each-ref", NULL);
	parts[3] = git(src, "--no-optional-locks", "status", "--porcelain",
		       "--untracked-files=all", NULL);
	parts[4] = git(src, "ls-files", "-s", NULL);
	parts[5] = git(src, "config", "--local", "--list", NULL);
	parts[6] = git(src, "stash", "list", NULL);
	if (asprintf(&all,
		     "%s\n--\n%s\n--\n%s\n--\n%s\n--\n%s\n--\n%s\n--\n%s",
		     parts[0], parts[1], parts[2], parts[3], parts[4],
		     parts[5], parts[6]) < 0)
		abort();
	for (i = 0; i < 7; i++)
		free(parts[i]);
	return all;
}

/* Where a run's clone goes: <state_dir>/runs/<run>/workspace, real. */
static char *clone_path(const char *run)
{
	char *real = realpath(rt_dir(), NULL), *path;

	ck_assert_ptr_nonnull(real);
	if (asprintf(&path, "%s/state/runs/%s/workspace", real, run) < 0)
		abort();
	free(real);
	return path;
}

static void workspace_config(const char *mode)
{
	char extra[256];

	snprintf(extra, sizeof(extra),
		 "sandbox:\n  workspace: src\n  workspace_isolation: %s\n",
		 mode);
	rt_write_config("local", "[]", extra);
}

START_TEST(test_auto_refuses_a_dirty_checkout_and_creates_nothing)
{
	char *src = make_checkout(), *before, *after, *run, *p, *ws;

	put_file("src/notes.txt", "untracked\n");
	before = snapshot(src);
	copy_scenario("happy1");
	workspace_config("auto");
	ck_assert_int_eq(sbxloop("run", "dirty", "--no-tui"), 2);
	assert_file_has("err.txt", "has uncommitted changes; commit or stash "
				   "them, or set "
				   "sandbox.workspace_isolation to clone");
	run = last_run();
	/* no clone, no sandbox, no workspace recorded */
	p = rt_path("state/runs/%s", run);
	ck_assert(!rt_exists(p));
	free(p);
	p = rt_path("state/sandboxes/sbxloop-%s-agent", run);
	ck_assert(!rt_exists(p));
	free(p);
	ws = rt_workspace(run);
	ck_assert_str_eq(ws, "");
	free(ws);
	ck_assert_int_eq(count_events(run, "sandbox.provision_start"), 0);
	ck_assert_int_eq(count_events(run, "sandbox.workspace_clone"), 0);
	after = snapshot(src);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	free(run);
	free(src);
}
END_TEST

/*
 * workspace_isolation: clone needs git and a checkout, and says which
 * is missing: git not on PATH (a PATH of one empty directory), then a
 * project that is no checkout (its .git removed). Nothing is made.
 */
START_TEST(test_clone_mode_says_whether_git_or_the_checkout_is_missing)
{
	const char *args[] = {"run", "no git", "--no-tui", NULL};
	char *src = make_checkout(), *empty = rt_path("empty-bin"), *dotgit;
	char path_env[4200], *run, *p;
	const char *env[] = {path_env, NULL};

	copy_scenario("happy1");
	workspace_config("clone");
	ck_assert_int_eq(mkdir(empty, 0755), 0);
	snprintf(path_env, sizeof(path_env), "PATH=%s", empty);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 2);
	assert_file_has("err.txt", "src': git is not on PATH");
	dotgit = rt_path("src/.git");
	tu_rmtree(dotgit);
	ck_assert_int_eq(sbxloop("run", "no checkout", "--no-tui"), 2);
	assert_file_has("err.txt", "src': not inside a git checkout");
	run = last_run();
	p = rt_path("state/runs/%s", run);
	ck_assert(!rt_exists(p));
	free(p);
	free(run);
	free(dotgit);
	free(empty);
	free(src);
}
END_TEST

START_TEST(test_clone_mode_proceeds_from_head_with_a_warning)
{
	char *src = make_checkout(), *before, *after, *run, *clone, *text;
	char *want;

	put_file("src/a.txt", "changed\n");
	put_file("src/notes.txt", "untracked\n");
	before = snapshot(src);
	copy_scenario("happy1");
	workspace_config("clone");
	ck_assert_int_eq(sbxloop("run", "dirty clone", "--no-tui"), 0);
	assert_file_has("err.txt", "has uncommitted changes; the run starts "
				   "from HEAD (");
	run = last_run();
	ck_assert_int_eq(rt_event_count(run, "sandbox.workspace_clone",
					"dirty", "1", "message",
					"*uncommitted changes in the source "
					"were not included*",
					NULL),
			 1);
	clone = rt_workspace(run);
	want = clone_path(run);
	ck_assert_str_eq(clone, want);
	free(want);
	{
		char *a, *notes, *out;

		if (asprintf(&a, "%s/a.txt", clone) < 0 ||
		    asprintf(&notes, "%s/notes.txt", clone) < 0 ||
		    asprintf(&out, "%s/out-t1.txt", clone) < 0)
			abort();
		text = tu_read(a);
		ck_assert_str_eq(text, "a\n");
		free(text);
		ck_assert(!rt_exists(notes));
		ck_assert(rt_exists(out));
		free(a);
		free(notes);
		free(out);
	}
	after = snapshot(src);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	free(clone);
	free(run);
	free(src);
}
END_TEST

START_TEST(test_in_place_works_on_the_source_checkout)
{
	char *src = make_checkout(), *run, *ws, *p, *status;

	copy_scenario("happy1");
	workspace_config("in-place");
	ck_assert_int_eq(sbxloop("run", "in place", "--no-tui"), 0);
	run = last_run();
	ws = rt_workspace(run);
	ck_assert_str_eq(ws, src);
	free(ws);
	p = rt_path("src/out-t1.txt");
	ck_assert(rt_exists(p));
	free(p);
	status = git(src, "status", "--porcelain", NULL);
	ck_assert_str_eq(status, "?? out-t1.txt");
	free(status);
	p = rt_path("state/runs/%s/workspace", run);
	ck_assert(!rt_exists(p));
	free(p);
	ck_assert_int_eq(count_events(run, "sandbox.workspace_clone"), 0);
	assert_file_lacks("out.txt", "bring the work back");
	free(run);
	free(src);
}
END_TEST

/*
 * The default on a clean checkout: the run works in a clone whose branch
 * sbxloop/<run> carries the work (the scripted executor commits), the
 * source is the same before and after, and the summary's fetch command
 * brings the commit back.
 */
START_TEST(test_auto_clones_and_leaves_the_source_checkout_untouched)
{
	char *src = make_checkout(), *before, *after, *run, *clone, *want;
	char *head, *base, *subject, *origin, *out, *cmd, *nl, *fetched;
	struct tu_run r;

	before = snapshot(src);
	copy_scenario("policy_commit");
	workspace_config("auto");
	ck_assert_int_eq(sbxloop("run", "commit it", "--no-tui"), 0);
	run = last_run();
	after = snapshot(src);
	ck_assert_str_eq(before, after);

	clone = rt_workspace(run);
	want = clone_path(run);
	ck_assert_str_eq(clone, want);
	free(want);
	if (asprintf(&want, "refs/heads/sbxloop/%s", run) < 0)
		abort();
	head = git(clone, "symbolic-ref", "HEAD", NULL);
	ck_assert_str_eq(head, want);
	free(head);
	subject = git(clone, "log", "-1", "--format=%s", NULL);
	ck_assert_str_eq(subject, "add out-t1.txt");
	free(subject);
	base = git(clone, "rev-parse", "refs/sbxloop/base", NULL);
	head = git(src, "rev-parse", "HEAD", NULL);
	ck_assert_str_eq(base, head);
	free(base);
	origin = git(clone, "remote", "get-url", "origin", NULL);
	ck_assert_str_eq(origin, "https://example.com/o/r.git");
	free(origin);

	/* the summary's command brings the branch's commit back */
	out = read_file("out.txt");
	cmd = strstr(out, "bring the work back with: ");
	ck_assert_msg(cmd != NULL, "no fetch command in:\n%s", out);
	cmd += strlen("bring the work back with: ");
	nl = strchr(cmd, '\n');
	if (nl)
		*nl = '\0';
	ck_assert_msg(strstr(cmd, src) && strstr(cmd, clone) &&
			      strstr(cmd, want + strlen("refs/heads/")),
		      "fetch command: %s", cmd);
	{
		const char *argv[] = {"sh", "-c", cmd, NULL};

		tu_exec(&r, NULL, NULL, argv);
		ck_assert_msg(r.status == 0, "%s: %s", cmd, r.err);
		tu_run_free(&r);
	}
	fetched = git(src, "log", "-1", "--format=%s", "FETCH_HEAD", NULL);
	ck_assert_str_eq(fetched, "add out-t1.txt");
	free(fetched);
	free(out);
	free(head);
	free(want);
	free(clone);
	free(before);
	free(after);
	free(run);
	free(src);
}
END_TEST

static Suite *workspace_run_suite(void)
{
	Suite *s = suite_create("workspace-run");
	TCase *tc;

	tc = tcase_create("guardrails");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, test_a_full_lane_sandbox_fails_only_its_own_task);
	tcase_add_test(
		tc, test_a_disk_abort_fails_the_task_and_skips_its_dependents);
	tcase_add_test(
		tc,
		test_a_tool_call_ceiling_fails_the_task_and_skips_dependents);
	tcase_add_test(
		tc,
		test_an_unmounted_run_harvests_and_counts_what_it_left_out);
	suite_add_tcase(s, tc);

	tc = tcase_create("workspace");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc,
		       test_auto_refuses_a_dirty_checkout_and_creates_nothing);
	tcase_add_test(tc, test_clone_mode_proceeds_from_head_with_a_warning);
	tcase_add_test(
		tc,
		test_clone_mode_says_whether_git_or_the_checkout_is_missing);
	tcase_add_test(tc, test_in_place_works_on_the_source_checkout);
	tcase_add_test(
		tc, test_auto_clones_and_leaves_the_source_checkout_untouched);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(workspace_run_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The lanes' in-process git (core/engine/lanes_git2.c) against real git:
 * every result is read back with the git command line, which must find
 * the worktree, the commits and the workspace exactly as its own
 * `checkout -f -B`, `add -A` + `commit` and `merge --no-ff` leave them
 * (clean status, the right files and parents, `git fsck` quiet). Also
 * what the lanes rely on: a conflict changes nothing and names its
 * files; a merge done already is not done twice; a merge a kill cut
 * off half-way through the work tree is completed; what libgit2 cannot
 * do (a nested repository) is left to the git command. (A repository
 * libgit2 cannot open, a partial clone, is never handed to it: the
 * lanes use the git command there, tests/e2e/test-lanes.c.)
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "testutil.h"
#include "engine/lanes_git2.h"

static char dir[256];
static char ws[512];     /* the run's workspace, on branch "run" */
static char common[600]; /* its .git */

/* `cmd` (freed here) prints `want` */
static void assert_output(const char *want, char *cmd)
{
	char *got = tu_capture("%s", cmd);

	ck_assert_msg(!strcmp(got, want), "%s:\n  got  [%s]\n  want [%s]", cmd,
		      got, want);
	free(got);
	free(cmd);
}

static void setup(void)
{
	char tmpl[] = "/tmp/sbx-g2-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(common, sizeof(common), "%s/.git", ws);
	setenv("GIT_AUTHOR_NAME", "Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "test@example.invalid", 1);
	setenv("GIT_COMMITTER_NAME", "Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "test@example.invalid", 1);
	setenv("HOME", dir, 1);
	tu_sh("cd %s && git init -q -b run ws && cd ws && "
	      "printf 'one\\ntwo\\nthree\\n' > shared.txt && echo a > a.txt && "
	      "echo gone > gone.txt && mkdir -p sub && echo s > sub/s.txt && "
	      "printf '.sbxloop/\\n' >> .git/info/exclude && "
	      "git add -A && git commit -qm init",
	      dir);
	ck_assert_int_eq(sl_g2_available(), 1);
}

static void teardown(void)
{
	tu_sh("rm -rf %s", dir);
}

/*
 * A lane's worktree for task `id`, its records written the way lanes.c
 * writes them (HEAD at the run branch), then filled in process.
 */
static void lane(const char *id, char *wt, size_t n)
{
	char *msg = NULL;
	char *admin = sl_xasprintf("%s/worktrees/%s", common, id);
	char *branch = sl_xasprintf("sbxloop/lanes/r/%s", id);

	snprintf(wt, n, "%s/.sbxloop/lanes/%s", ws, id);
	tu_sh("mkdir -p %s %s && echo 'ref: refs/heads/run' > %s/HEAD && "
	      "echo ../.. > %s/commondir && echo %s/.git > %s/gitdir && "
	      "echo 'gitdir: %s' > %s/.git",
	      admin, wt, admin, admin, wt, admin, admin, wt);
	ck_assert_int_eq(sl_g2_checkout(admin, wt, branch, &msg), 0);
	ck_assert_ptr_null(msg);
	free(admin);
	free(branch);
}

static int commit(const char *id, const char *wt)
{
	char *msg = NULL, *admin = sl_xasprintf("%s/worktrees/%s", common, id);
	char *text = sl_xasprintf("sbxloop: task %s", id);
	int rc = sl_g2_commit(admin, wt, text, &msg);

	ck_assert_msg(rc == 0, "commit: %s", msg ? msg : "");
	free(admin);
	free(text);
	return rc;
}

static int merge(const char *id, char **files)
{
	char *msg = NULL, *branch = sl_xasprintf("sbxloop/lanes/r/%s", id);
	char *text = sl_xasprintf("sbxloop: merge task %s", id);
	int rc = sl_g2_merge(NULL, ws, branch, text, files, &msg);

	ck_assert_msg(rc >= 0, "merge: %s", msg ? msg : "");
	free(msg);
	free(branch);
	free(text);
	return rc;
}

START_TEST(test_a_checkout_is_a_clean_worktree_on_its_branch)
{
	char wt[700], *tip;

	lane("t1", wt, sizeof(wt));
	tip = tu_capture("git -C %s rev-parse run", ws);
	/* git finds the worktree, on the lane branch at the run's tip */
	assert_output("", sl_xasprintf("git -C %s status --porcelain", wt));
	assert_output("refs/heads/sbxloop/lanes/r/t1",
		      sl_xasprintf("git -C %s symbolic-ref HEAD", wt));
	assert_output(tip, sl_xasprintf("git -C %s rev-parse HEAD", wt));
	free(tip);
	assert_output("one\ntwo\nthree",
		      sl_xasprintf("cat %s/shared.txt", wt));
	assert_output("s", sl_xasprintf("cat %s/sub/s.txt", wt));
	assert_output("2",
		      sl_xasprintf("git -C %s worktree list | wc -l", ws));
	/* the workspace itself is untouched */
	assert_output("refs/heads/run",
		      sl_xasprintf("git -C %s symbolic-ref HEAD", ws));
	assert_output("", sl_xasprintf("git -C %s status --porcelain", ws));
}
END_TEST

START_TEST(test_a_commit_takes_what_add_all_takes)
{
	char wt[700];

	lane("t1", wt, sizeof(wt));
	tu_sh("cd %s && echo new > new.txt && echo changed >> a.txt && "
	      "rm gone.txt && echo '*.log' > .gitignore && echo x > x.log && "
	      "mkdir -p deep/er && echo d > deep/er/d.txt",
	      wt);
	commit("t1", wt);
	/* nothing left uncommitted but the ignored file; the .git file of
	 * the worktree is never taken */
	assert_output("", sl_xasprintf("git -C %s status --porcelain", wt));
	assert_output(
		".gitignore\na.txt\ndeep/er/d.txt\nnew.txt\n"
		"shared.txt\nsub/s.txt",
		sl_xasprintf("git -C %s ls-tree -r --name-only HEAD", wt));
	assert_output("sbxloop <sbxloop@localhost> sbxloop: task t1",
		      sl_xasprintf("git -C %s log -1 --format='%%an <%%ae> "
				   "%%s' sbxloop/lanes/r/t1",
				   ws));
	/* a commit with nothing new is still a commit (--allow-empty) */
	commit("t1", wt);
	assert_output("3",
		      sl_xasprintf("git -C %s rev-list --count HEAD", wt));
}
END_TEST

START_TEST(test_two_lanes_on_different_files_merge_clean)
{
	char w1[700], w2[700], *files = NULL, *lane2;

	lane("t1", w1, sizeof(w1));
	lane("t2", w2, sizeof(w2));
	tu_sh("echo one > %s/one.txt && echo A >> %s/a.txt", w1, w1);
	tu_sh("echo two > %s/two.txt && rm %s/sub/s.txt", w2, w2);
	commit("t1", w1);
	commit("t2", w2);
	ck_assert_int_eq(merge("t1", &files), 0);
	ck_assert_int_eq(merge("t2", &files), 0);
	ck_assert_ptr_null(files);
	/* the workspace: both tasks' work, its index and HEAD agreeing */
	assert_output("", sl_xasprintf("git -C %s status --porcelain", ws));
	assert_output("one", sl_xasprintf("cat %s/one.txt", ws));
	assert_output("two", sl_xasprintf("cat %s/two.txt", ws));
	assert_output("a\nA", sl_xasprintf("cat %s/a.txt", ws));
	assert_output("no", sl_xasprintf("test -e %s/sub/s.txt && echo yes "
					 "|| echo no",
					 ws));
	/* two merge commits of the run branch and each lane */
	assert_output(
		"sbxloop: merge task t2\nsbxloop: merge task t1",
		sl_xasprintf("git -C %s log --merges --format=%%s run", ws));
	lane2 = tu_capture("git -C %s rev-parse sbxloop/lanes/r/t2", ws);
	assert_output(lane2, sl_xasprintf("git -C %s rev-parse run^2", ws));
	free(lane2);
	assert_output("",
		      sl_xasprintf("git -C %s fsck --no-progress 2>&1", ws));
}
END_TEST

START_TEST(test_a_conflict_changes_nothing_and_names_the_files)
{
	char w1[700], w2[700], *files = NULL, *tip;

	lane("t1", w1, sizeof(w1));
	lane("t2", w2, sizeof(w2));
	tu_sh("sed -i s/two/TWO/ %s/shared.txt && echo x > %s/x.txt", w1, w1);
	tu_sh("sed -i s/two/deux/ %s/shared.txt && echo a2 > %s/a.txt", w2,
	      w2);
	commit("t1", w1);
	commit("t2", w2);
	ck_assert_int_eq(merge("t1", &files), 0);
	tip = tu_capture("git -C %s rev-parse run", ws);
	ck_assert_int_eq(merge("t2", &files), 1);
	ck_assert_str_eq(files, "shared.txt\n");
	free(files);
	assert_output(tip, sl_xasprintf("git -C %s rev-parse run", ws));
	assert_output("", sl_xasprintf("git -C %s status --porcelain", ws));
	assert_output("one\nTWO\nthree",
		      sl_xasprintf("cat %s/shared.txt", ws));
	assert_output("no", sl_xasprintf("test -e %s/.git/MERGE_HEAD && echo "
					 "yes || echo no",
					 ws));
	free(tip);
}
END_TEST

START_TEST(test_a_merge_done_already_is_not_done_again)
{
	char w1[700], *files = NULL, *tip;

	lane("t1", w1, sizeof(w1));
	tu_sh("echo one > %s/one.txt", w1);
	commit("t1", w1);
	ck_assert_int_eq(merge("t1", &files), 0);
	tip = tu_capture("git -C %s rev-parse run", ws);
	ck_assert_int_eq(merge("t1", &files), 0);
	assert_output(tip, sl_xasprintf("git -C %s rev-parse run", ws));
	free(tip);
}
END_TEST

START_TEST(test_a_merge_cut_off_in_the_work_tree_is_completed)
{
	char w1[700], *files = NULL;

	lane("t1", w1, sizeof(w1));
	tu_sh("echo one > %s/one.txt && sed -i s/two/TWO/ %s/shared.txt", w1,
	      w1);
	commit("t1", w1);
	/* a kill after the merge wrote one file and before it moved the
	 * branch: the workspace holds half of the merge */
	tu_sh("cp %s/shared.txt %s/shared.txt", w1, ws);
	ck_assert_int_eq(merge("t1", &files), 0);
	assert_output("", sl_xasprintf("git -C %s status --porcelain", ws));
	assert_output("one", sl_xasprintf("cat %s/one.txt", ws));
	assert_output("sbxloop: merge task t1",
		      sl_xasprintf("git -C %s log -1 --format=%%s run", ws));
}
END_TEST

START_TEST(test_a_shadow_repository_merges_into_its_work_tree)
{
	char *files = NULL, *msg = NULL, *shadow, wt[700];

	/* a plain directory, its git elsewhere (.sbxloop/git) */
	shadow = sl_xasprintf("%s/.sbxloop/git", ws);
	tu_sh("rm -rf %s/.git && git init -q -b run --bare %s && "
	      "git --git-dir=%s config core.bare false && "
	      "printf '.sbxloop/\\n' >> %s/info/exclude && "
	      "git --git-dir=%s --work-tree=%s add -A && "
	      "git --git-dir=%s --work-tree=%s commit -qm base",
	      ws, shadow, shadow, shadow, shadow, ws, shadow, ws);
	snprintf(common, sizeof(common), "%s", shadow);
	lane("t1", wt, sizeof(wt));
	tu_sh("echo one > %s/one.txt", wt);
	commit("t1", wt);
	ck_assert_int_eq(sl_g2_merge(shadow, ws, "sbxloop/lanes/r/t1",
				     "sbxloop: merge task t1", &files, &msg),
			 0);
	ck_assert_ptr_null(msg);
	assert_output("one", sl_xasprintf("cat %s/one.txt", ws));
	assert_output("", sl_xasprintf("git --git-dir=%s --work-tree=%s "
				       "status --porcelain",
				       shadow, ws));
	assert_output("no", sl_xasprintf("test -e %s/.git && echo yes || "
					 "echo no",
					 ws));
	free(shadow);
}
END_TEST

/*
 * What libgit2 1.5 cannot do and git can: add a repository an agent
 * cloned into its worktree (git takes it as a gitlink). The call says
 * SL_G2_FALLBACK and leaves nothing the git command minds: its add and
 * commit then go through.
 */
START_TEST(test_a_nested_repository_is_left_to_the_git_command)
{
	char wt[700], *msg = NULL, *admin, *tip;

	lane("t1", wt, sizeof(wt));
	admin = sl_xasprintf("%s/worktrees/t1", common);
	tu_sh("cd %s && echo top > top.txt && mkdir vendored && cd vendored && "
	      "git init -q && echo v > v.txt && git add v.txt && "
	      "git commit -qm v",
	      wt);
	tip = tu_capture("git -C %s rev-parse HEAD", wt);
	ck_assert_int_eq(sl_g2_commit(admin, wt, "m", &msg), SL_G2_FALLBACK);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "vendored"), "%s", msg);
	free(msg);
	assert_output(tip, sl_xasprintf("git -C %s rev-parse HEAD", wt));
	tu_sh("git --git-dir=%s --work-tree=%s add -A 2>/dev/null && "
	      "git --git-dir=%s --work-tree=%s commit -qm t1",
	      admin, wt, admin, wt);
	assert_output("160000 commit",
		      sl_xasprintf("git -C %s ls-tree HEAD vendored | "
				   "cut -d' ' -f1,2",
				   wt));
	free(tip);
	free(admin);
}
END_TEST

/*
 * A workspace whose index is split (`git update-index --split-index`,
 * which libgit2 1.5 cannot read) with no config saying so: the merge
 * says SL_G2_FALLBACK before writing anything, and git merges.
 */
START_TEST(test_a_split_index_leaves_the_merge_to_the_git_command)
{
	char w1[700], *msg = NULL, *files = NULL, *tip;

	lane("t1", w1, sizeof(w1));
	tu_sh("echo one > %s/one.txt", w1);
	commit("t1", w1);
	tu_sh("git -C %s update-index --split-index", ws);
	tip = tu_capture("git -C %s rev-parse run", ws);
	ck_assert_int_eq(
		sl_g2_merge(NULL, ws, "sbxloop/lanes/r/t1", "m", &files, &msg),
		SL_G2_FALLBACK);
	ck_assert_ptr_nonnull(msg);
	free(msg);
	assert_output(tip, sl_xasprintf("git -C %s rev-parse run", ws));
	assert_output("", sl_xasprintf("git -C %s status --porcelain", ws));
	tu_sh("git -C %s merge -q --no-ff -m m sbxloop/lanes/r/t1", ws);
	assert_output("one", sl_xasprintf("cat %s/one.txt", ws));
	free(tip);
}
END_TEST

/*
 * An agent's FIFO where libgit2 reads (a .gitignore, a .gitattributes)
 * does not hold a call: its caller opens it for writing, libgit2 reads
 * an empty file and goes on; the FIFO itself is never committed (as
 * git's add -A skips it). Before, the commit blocked for good.
 */
START_TEST(test_a_fifo_in_the_work_tree_does_not_hold_a_commit)
{
	char wt[700];

	lane("t1", wt, sizeof(wt));
	tu_sh("cd %s && mkfifo .gitignore && mkdir d && mkfifo "
	      "d/.gitattributes && echo x > d/x.txt && echo n > new.txt",
	      wt);
	commit("t1", wt);
	assert_output(
		"a.txt\nd/x.txt\ngone.txt\nnew.txt\nshared.txt\nsub/s.txt",
		sl_xasprintf("git -C %s ls-tree -r --name-only HEAD", wt));
	ck_assert_uint_eq(sl_g2_calls_running(), 0);
}
END_TEST

/* The same in the run's workspace, which the merge brings up to date. */
START_TEST(test_a_fifo_in_the_workspace_does_not_hold_a_merge)
{
	char wt[700], *files = NULL;

	lane("t1", wt, sizeof(wt));
	tu_sh("echo x > %s/x.txt && echo y >> %s/sub/s.txt", wt, wt);
	commit("t1", wt);
	tu_sh("mkfifo %s/.gitattributes %s/sub/.gitattributes "
	      "%s/sub/.gitignore",
	      ws, ws, ws);
	ck_assert_int_eq(merge("t1", &files), 0);
	assert_output("x", sl_xasprintf("cat %s/x.txt", ws));
	assert_output("s\ny", sl_xasprintf("cat %s/sub/s.txt", ws));
	assert_output("sbxloop: merge task t1",
		      sl_xasprintf("git -C %s log -1 --format=%%s run", ws));
}
END_TEST

/*
 * A FIFO out of the release's reach (deeper than it looks) holds the
 * call past its limit: the call fails, says why, and, once the FIFO
 * lets it go on, changes nothing: no commit, no index written.
 */
START_TEST(test_a_call_held_too_long_is_given_up_and_changes_nothing)
{
	char wt[700], deep[1200], *msg = NULL, *tip, *admin, *fifo;
	double t0;
	int fd, i;
	size_t n;

	lane("t1", wt, sizeof(wt));
	tip = tu_capture("git -C %s rev-parse HEAD", wt);
	n = (size_t)snprintf(deep, sizeof(deep), "%s", wt);
	for (i = 0; i < 70; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/d");
	tu_sh("mkdir -p %s && mkfifo %s/.gitignore && echo x > %s/x.txt && "
	      "echo n > %s/new.txt",
	      deep, deep, deep, wt);
	sl_g2_set_patience(0.1, 1.0);
	admin = sl_xasprintf("%s/worktrees/t1", common);
	t0 = sl_monotonic();
	ck_assert_int_eq(sl_g2_commit(admin, wt, "m", &msg), -1);
	ck_assert_double_lt(sl_monotonic() - t0, 3.0);
	ck_assert_msg(msg && strstr(msg, "did not finish in 1 s") &&
			      strstr(msg, "FIFO"),
		      "%s", msg ? msg : "(no message)");
	/* let the call go on; it ends without a change */
	fifo = sl_xasprintf("%s/.gitignore", deep);
	fd = open(fifo, O_WRONLY | O_NONBLOCK);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (i = 0; i < 500 && sl_g2_calls_running(); i++)
		usleep(10000);
	ck_assert_uint_eq(sl_g2_calls_running(), 0);
	assert_output(tip, sl_xasprintf("git -C %s rev-parse HEAD", wt));
	assert_output("",
		      sl_xasprintf("git -C %s diff --cached --name-only", wt));
	free(fifo);
	free(admin);
	free(msg);
	free(tip);
}
END_TEST

/* `text` without its last newline (tu_capture drops it), in place. */
static char *chomp(char *text)
{
	size_t n = strlen(text);

	if (n && text[n - 1] == '\n')
		text[n - 1] = '\0';
	return text;
}

/* Sorted lines of `text` (freed here), for an order-free comparison. */
static char *sorted(char *text)
{
	char *path = sl_xasprintf("%s/sort.txt", dir), *out;

	ck_assert_int_eq(sl_write_file_atomic(path, text, strlen(text), 0644),
			 0);
	out = tu_capture("LC_ALL=C sort %s", path);
	free(path);
	free(text);
	return out;
}

/*
 * The review's evidence read in process is what its commands print in
 * the worktree: `git status --short` and `git diff HEAD` byte for byte
 * (a change, a deletion, a staged file, a rename, untracked files and
 * directories, a binary file, names git quotes), and the regular files
 * written since EXECUTE began (not the ones the checkout wrote, nor the
 * one only renamed, as `find -newer`; not the worktree's .git file,
 * never through a symbolic link). Nothing is written: the index stays
 * as it was.
 */
START_TEST(test_the_evidence_is_what_git_prints)
{
	char wt[700], *status, *diff, *recent, *msg = NULL, *admin, *want;
	char *index_before;
	double since;

	lane("t1", wt, sizeof(wt));
	admin = sl_xasprintf("%s/worktrees/t1", common);
	usleep(20000);
	since = sl_now();
	usleep(20000);
	tu_sh("cd %s && echo more >> a.txt && rm gone.txt && echo n > new.txt "
	      "&& mkdir -p newdir/deep && echo x > newdir/deep/x && "
	      "echo staged > staged.txt && git add staged.txt && "
	      "git mv sub/s.txt sub/moved.txt && "
	      "printf 'a\\tb' > \"$(printf 'tab\\tname')\" && "
	      "echo q > 'quo\"te' && echo u > 'ünï' && "
	      "printf '\\000\\001\\002' > bin.dat && "
	      "ln -s /etc outside && printf 'one\\nTWO\\nthree\\n' > "
	      "shared.txt",
	      wt);
	index_before = tu_capture("md5sum < %s/index", admin);
	ck_assert_int_eq(sl_g2_evidence(admin, wt, since, &status, &diff,
					&recent, &msg),
			 0);
	ck_assert_ptr_null(msg);
	/* (before git's own status, which refreshes the index) */
	assert_output(index_before, sl_xasprintf("md5sum < %s/index", admin));
	want = tu_capture("git -C %s status --short", wt);
	ck_assert_msg(!strcmp(chomp(status), want),
		      "status:\n[%s]\nwant\n[%s]", status, want);
	free(want);
	want = tu_capture("git -C %s diff HEAD", wt);
	ck_assert_msg(!strcmp(chomp(diff), want), "diff:\n[%s]\nwant\n[%s]",
		      diff, want);
	free(want);
	recent = sorted(recent);
	ck_assert_str_eq(recent, "\"./\\303\\274n\\303\\257\"\n"
				 "\"./quo\\\"te\"\n"
				 "\"./tab\\tname\"\n"
				 "./a.txt\n"
				 "./bin.dat\n"
				 "./new.txt\n"
				 "./newdir/deep/x\n"
				 "./shared.txt\n"
				 "./staged.txt");
	ck_assert_uint_eq(sl_g2_calls_running(), 0);
	free(index_before);
	free(status);
	free(diff);
	free(recent);
	free(admin);
}
END_TEST

/*
 * The lanes' branches deleted in process as `git branch -D` deletes
 * them: the loose one and the one `git pack-refs` packed (an agent may
 * run it), their reflogs with them; a name that is no branch is passed
 * over, and every other ref stays.
 */
/*
 * The lanes' clean check in process says what `git status --porcelain
 * --untracked-files=all -- . ':!.sbxloop'` says: dirty for a change git
 * shows (staged, unstaged, deleted, a mode, a file in an untracked
 * directory), clean for what it does not (ignored files, a touched but
 * unchanged file, the lanes' own .sbxloop/ even where nothing excludes
 * it). Each state from a clean checkout.
 */
START_TEST(test_the_clean_check_sees_what_git_status_sees)
{
	static const struct {
		const char *change;
		int dirty;
	} cases[] = {
		{"true", 0},
		{"echo x >> a.txt", 1},
		{"echo n > new.txt && git add new.txt", 1},
		{"mkdir -p u/v && echo n > u/v/n.txt", 1},
		{"rm gone.txt", 1},
		{"git rm -q --cached a.txt", 1},
		{"chmod +x a.txt", 1},
		{"touch -d '2001-01-01' a.txt sub/s.txt", 0},
		{"printf 'ign/\\n*.log\\n' > .gitignore && git add .gitignore "
		 "&& git commit -qm ign && mkdir -p ign d && echo i > ign/i && "
		 "echo l > x.log && echo l > d/only.log",
		 0},
		{"sed -i '/sbxloop/d' .git/info/exclude && mkdir -p "
		 ".sbxloop/lanes/t1 && echo w > .sbxloop/lanes/t1/w",
		 0},
		{"sed -i '/sbxloop/d' .git/info/exclude && echo w > .sbxloop",
		 0},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(cases); i++) {
		char *msg = NULL, *git;
		int rc;

		tu_sh("cd %s && git reset -q --hard && git clean -qfdx && "
		      "grep -qx '.sbxloop/' .git/info/exclude || "
		      "printf '.sbxloop/\\n' >> .git/info/exclude",
		      ws);
		tu_sh("cd %s && %s", ws, cases[i].change);
		git = tu_capture("cd %s && git status --porcelain "
				 "--untracked-files=all -- . ':!.sbxloop'",
				 ws);
		rc = sl_g2_clean(ws, &msg);
		ck_assert_msg(rc == cases[i].dirty,
			      "%s: sl_g2_clean %d (%s), want %d",
			      cases[i].change, rc, msg ? msg : "",
			      cases[i].dirty);
		ck_assert_msg((*git != '\0') == cases[i].dirty,
			      "%s: git status says [%s]", cases[i].change,
			      git);
		free(git);
		free(msg);
	}
}
END_TEST

START_TEST(test_branches_go_as_git_branch_d_leaves_them)
{
	char w1[700], w2[700], w3[700], *msg = NULL;

	lane("t1", w1, sizeof(w1));
	lane("t2", w2, sizeof(w2));
	lane("t3", w3, sizeof(w3));
	commit("t1", w1);
	/* t1 packed only; t3 packed, then loose as well */
	tu_sh("git -C %s pack-refs --all", ws);
	commit("t3", w3);
	tu_sh("rm -rf %s %s %s/worktrees/t1 %s/worktrees/t3", w1, w3, common,
	      common);
	ck_assert_int_eq(sl_g2_delete_branches(common, ws,
					       "sbxloop/lanes/r/t1\n"
					       "sbxloop/lanes/r/none\n"
					       "sbxloop/lanes/r/t3\n",
					       &msg),
			 0);
	ck_assert_ptr_null(msg);
	assert_output("refs/heads/sbxloop/lanes/r/t2",
		      sl_xasprintf("git -C %s for-each-ref "
				   "--format='%%(refname)' refs/heads/sbxloop",
				   ws));
	assert_output(
		"t2\n0",
		sl_xasprintf("cd %s && ls logs/refs/heads/sbxloop/lanes/r"
			     " && grep -c 'lanes/r/t[13]' packed-refs",
			     common));
	assert_output(
		"", sl_xasprintf(
			    "git -C %s fsck --no-progress --no-dangling 2>&1; "
			    "git -C %s status --porcelain",
			    ws, ws));
	assert_output("run",
		      sl_xasprintf("git -C %s branch --show-current", ws));
}
END_TEST

static Suite *g2_suite(void)
{
	Suite *s = suite_create("lanes-git2");
	TCase *tc = tcase_create("git");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_a_checkout_is_a_clean_worktree_on_its_branch);
	tcase_add_test(tc, test_a_commit_takes_what_add_all_takes);
	tcase_add_test(tc, test_two_lanes_on_different_files_merge_clean);
	tcase_add_test(tc,
		       test_a_conflict_changes_nothing_and_names_the_files);
	tcase_add_test(tc, test_a_merge_done_already_is_not_done_again);
	tcase_add_test(tc, test_a_merge_cut_off_in_the_work_tree_is_completed);
	tcase_add_test(tc, test_a_shadow_repository_merges_into_its_work_tree);
	tcase_add_test(tc,
		       test_a_nested_repository_is_left_to_the_git_command);
	tcase_add_test(tc,
		       test_a_split_index_leaves_the_merge_to_the_git_command);
	tcase_add_test(tc,
		       test_a_fifo_in_the_work_tree_does_not_hold_a_commit);
	tcase_add_test(tc, test_a_fifo_in_the_workspace_does_not_hold_a_merge);
	tcase_add_test(
		tc, test_a_call_held_too_long_is_given_up_and_changes_nothing);
	tcase_add_test(tc, test_the_evidence_is_what_git_prints);
	tcase_add_test(tc, test_branches_go_as_git_branch_d_leaves_them);
	tcase_add_test(tc, test_the_clean_check_sees_what_git_status_sees);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(g2_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The lanes' git on the host, in process (libgit2): a new worktree's
 * checkout, a task's commit in it and the merge of its branch into the
 * run's workspace. The same records and results as the git commands
 * they replace (`checkout -f -B`, `add -A` and `commit`, `merge
 * --no-ff`), without the five git processes a task cost on the host
 * (docs/bench-lanes.md); libgit2 runs no hook, no filter or merge driver
 * named in a config, and reads no .git file of a worktree: the git
 * directory is always named. Each call opens a repository handle of its
 * own (lanes call from their threads). Private to the engine.
 *
 * Every call returns 0 when done; SL_G2_FALLBACK when libgit2 cannot do
 * what git can (open a repository with an extension it lacks, add a
 * nested repository, ...) and nothing was changed that the git command
 * minds: the caller runs it instead; -1 on an error. *msg (caller frees)
 * says what failed.
 *
 * A work tree is the agents': a FIFO where libgit2 reads (`mkfifo
 * .gitignore`) would block a call for good. Each call runs on a thread
 * of its own; while it is not done, the caller opens every FIFO under
 * the work tree for writing, without blocking, each second (a reader
 * blocked opening one reads an empty file), and gives the call up
 * after ten minutes (-1; the call starts no further change).
 */
#ifndef SL_LANES_GIT2_H
#define SL_LANES_GIT2_H

#define SL_G2_FALLBACK (-2)

/*
 * Can the calls below be made? The first call loads libgit2 (dlopen of
 * SL_GIT2_SONAME, or $SBXLOOP_LIBGIT2) and initialises it for the rest
 * of the process; 0 when it cannot be loaded (said once, at the info
 * level): the git command does it all then.
 */
int sl_g2_available(void);

/*
 * `git --git-dir=G --work-tree=W checkout -f -B BRANCH`: BRANCH made (or
 * moved) at the commit G's HEAD names, G's HEAD made BRANCH, and W and
 * G's index filled from its tree.
 */
int sl_g2_checkout(const char *git_dir, const char *work_tree,
		   const char *branch, char **msg);

/*
 * `git add -A && git commit --allow-empty -m MESSAGE` in W (G's index,
 * G's HEAD), as sbxloop <sbxloop@localhost>.
 */
int sl_g2_commit(const char *git_dir, const char *work_tree,
		 const char *message, char **msg);

/*
 * `git merge --no-ff -m MESSAGE BRANCH` into W, whose git directory is
 * `git_dir` (NULL: W/.git, W being the top of its checkout): a merge
 * commit of HEAD and BRANCH, W and its index brought to its tree (over
 * whatever a cut-off merge left there), then HEAD's branch moved to it,
 * if it is still where the merge began. Nothing to do when BRANCH is
 * merged already. 1 on a conflict: nothing is changed, *files (caller
 * frees) names each conflicting path on a line of its own. A failure
 * before the work tree is touched is SL_G2_FALLBACK.
 */
int sl_g2_merge(const char *git_dir, const char *work_tree, const char *branch,
		const char *message, char **files, char **msg);

/*
 * Is W, the top of its checkout (W/.git its git directory), clean, as
 * `git status --porcelain --untracked-files=all -- . ':!.sbxloop'`
 * printing nothing says? 0 clean, 1 not. Reads only.
 */
int sl_g2_clean(const char *work_tree, char **msg);

/*
 * The review's evidence in W (G's index, G's HEAD), as the commands the
 * review otherwise runs in the sandbox print it: `git status --short`
 * (*status), `git diff HEAD` (*diff; files over 4 MiB count as binary)
 * and `./PATH` lines of the regular files changed after `since` (epoch
 * seconds; *recent, 1,000 lines at most, the top's .git left out).
 * Paths are C-quoted as git's core.quotePath does. Reads only: no index
 * or ref is written. Each caller frees.
 */
int sl_g2_evidence(const char *git_dir, const char *work_tree, double since,
		   char **status, char **diff, char **recent, char **msg);

/*
 * `git branch -D` of each branch named in `names` (a line each) that
 * exists in G, its reflog with it, as the lanes end: W is the work tree
 * whose FIFOs are released while it runs (G is inside it). 0, or -1
 * with *msg saying the first that failed (the others still go).
 */
int sl_g2_delete_branches(const char *git_dir, const char *work_tree,
			  const char *names, char **msg);

/*
 * How long a call runs before its caller releases the FIFOs of its work
 * tree (1 s), and before it is given up (600 s). For tests.
 */
void sl_g2_set_patience(double release_after_s, double give_up_s);

/* Calls not ended yet, given up or not (a test waits for none). */
unsigned sl_g2_calls_running(void);

#endif

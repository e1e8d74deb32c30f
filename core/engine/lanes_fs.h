/*
 * Where parallel lanes keep their git and their files (lanes.c): on the
 * host, in the run's workspace, when the sandbox mounts it and cannot
 * write its git directories; inside the run's agent sandbox when it
 * does not mount it (a harvested run) or mounts it whole (sbx), every
 * git command and file change then a job there (shell.batch, argv
 * commands, no shell quoting). lanes.c calls these and never the host
 * directly, so both places run the same worktree and merge code; which
 * git they run (the workspace's own or a shadow repository) is decided
 * here too.
 * Private to the engine.
 */
#ifndef SL_LANES_FS_H
#define SL_LANES_FS_H

#include <stddef.h>

#include "engine/workspace.h"

struct sl_engine;
struct task;

/*
 * Do the lanes work inside the sandbox? When it does not mount the
 * workspace, and when it confines its agents but lets them write the
 * workspace's .git (no SBXLOOP_CAP_GIT_READ_ONLY): a filter or merge
 * driver an agent puts into the repository's config would run in
 * sbxloop's own git on the host; in the sandbox it runs confined.
 */
int sl_lanes_in_box(const struct sl_engine *e);
/* Is the run harvested (the sandbox works on a copy of the workspace)? */
int sl_lanes_harvested(const struct sl_engine *e);

/* The workspace the lanes work on: the host's, or the sandbox's workdir. */
const char *sl_lanes_root(const struct sl_engine *e);

/*
 * `argv` (git first) in `cwd`, where the lanes work: sl_git on the host,
 * or a job in the sandbox, whose output (standard output and error
 * together) lands in both g->out and g->err. 0 on exit 0, else nonzero.
 */
int sl_lanes_git(struct sl_git_out *g, const struct sl_engine *e,
		 const char *cwd, const char *const *argv);

/* Is `path` a directory? */
int sl_lanes_isdir(const struct sl_engine *e, const char *path);
/* The most paths sl_lanes_isdirs and sl_lanes_rmdirs take at once. */
#define SL_LANES_PATHS_MAX 4
/* is[i]: is paths[i] (NULL-terminated) a directory? (one job in the box) */
void sl_lanes_isdirs(const struct sl_engine *e, const char *const *paths,
		     int *is);
/* The file's text (caller frees), or NULL. */
char *sl_lanes_read(const struct sl_engine *e, const char *path, size_t max);
/*
 * Write `text` to `path` (replaced whole, never seen half-written; not
 * fsynced: the lanes' records are remade when lost, and the worktrees
 * they describe are not synced either); 0, or -1.
 */
int sl_lanes_write(const struct sl_engine *e, const char *path,
		   const char *text);
/* mkdir -p; 0, or -1. */
int sl_lanes_mkdirs(const struct sl_engine *e, const char *path);
/* rm -rf, quietly. */
void sl_lanes_rmtree(const struct sl_engine *e, const char *path);
/* rmdir each of `paths` (NULL-terminated) in turn when empty, quietly. */
void sl_lanes_rmdirs(const struct sl_engine *e, const char *const *paths);
/*
 * The index locks a killed git command leaves: `common`/index.lock and
 * `common`/worktrees/(each)/index.lock, where the lanes work (a
 * harvested run resumes in a fresh sandbox: nothing to clear there).
 */
void sl_lanes_clear_locks(const struct sl_engine *e, const char *common);

/*
 * Refuse (SBXLOOP_ESTATE, err says which key of which file) a
 * repository config under `common` that would make the lanes' git on
 * the host run a program named there (a filter, merge or diff driver),
 * read more config (include) or work elsewhere (core.worktree): checked
 * before the lanes start and when a resume recovers them, with no agent
 * job running; during lanes the local sandbox keeps it read-only
 * (docs/security.md). 0 when in the sandbox (git runs confined there).
 * Also sets e->lanes_g2: no repository extension (extensions.*, but
 * noop) that would keep libgit2 from opening it.
 */
int sl_lanes_config_check(struct sl_engine *e, const char *common,
			  struct sbxloop_error *err);

#define LANES_DIR ".sbxloop/lanes"
/*
 * The lanes' commits, merges and checkouts are bookkeeping, not the
 * user's: no hook of theirs runs (a global core.hooksPath would lint,
 * reject or slow each one; test_user_git_hooks_never_run_on_lanes).
 */
#define NO_HOOKS "-c", "core.hooksPath=/dev/null"
/* who the lanes' commits and merges are by, as git and libgit2 make them */
#define LANES_GIT_NAME "sbxloop"
#define LANES_GIT_EMAIL "sbxloop@localhost"
#define GIT_ID                                                                \
	"-c", "user.name=" LANES_GIT_NAME, "-c",                              \
		"user.email=" LANES_GIT_EMAIL, "-c",                          \
		"maintenance.auto=false", "-c", "gc.auto=0", NO_HOOKS
/* a lane's branch lives for one task: no reflog files to make and drop */
#define NO_REFLOG "-c", "core.logAllRefUpdates=false"
/* the lanes' own repository of a workspace that is no clean git top */
#define SHADOW_DIR ".sbxloop/git"

/*
 * git in `work_tree`: `argv` is "git", then its arguments; with
 * `git_dir` (NULL: found from work_tree) --git-dir and --work-tree are
 * named, so no .git in the work tree is followed. 0 on exit 0.
 */
int sl_lanes_git_in(struct sl_git_out *g, const struct sl_engine *e,
		    const char *git_dir, const char *work_tree,
		    const char *const *argv);
/*
 * git on the run's workspace: `argv` is "git", then its arguments; with
 * a shadow repository (e->lanes_git) --git-dir and --work-tree are
 * named on every call. 0 on exit 0.
 */
int sl_lanes_ws_git(struct sl_git_out *g, const struct sl_engine *e,
		    const char *const *argv);
/*
 * Several git commands on the run's workspace, as sl_lanes_ws_git runs
 * each (at most SL_LANES_PATHS_MAX, NULL-terminated), whatever they
 * exit with: one job in the sandbox.
 */
void sl_lanes_ws_gits(const struct sl_engine *e,
		      const char *const *const *argvs);
#define WS_GIT(g, e, ...)                                                     \
	sl_lanes_ws_git((g), (e),                                             \
			(const char *const[]){"git", __VA_ARGS__, NULL})

/*
 * How may lanes run here? 0: on the workspace's own git; 1: with a
 * shadow repository (.sbxloop/git, the workspace its work tree), *why
 * says why (2: the workspace is a git top with uncommitted changes, 1:
 * anything else); -1: not at all, *why says why; -2: the workspace's git
 * config is refused (sl_lanes_config_check, before any git that may run
 * a driver), err says why. Caller frees *why.
 */
int sl_lanes_mode(struct sl_engine *e, char **why, struct sbxloop_error *err);
/* .sbxloop/ into the workspace's info/exclude (`known`: its path). */
void sl_lanes_exclude(struct sl_engine *e, const char *known);
/*
 * Task t's lane branch (sbxloop/lanes/RUN/TASK), worktree directory
 * (.sbxloop/lanes/TASK where the lanes work) and worktree records (under
 * git's common dir, e->lanes_common). Caller frees each.
 */
char *sl_lanes_branch(const struct sl_engine *e, const struct task *t);
char *sl_lanes_dir(const struct sl_engine *e, const struct task *t);
char *sl_lanes_records(const struct sl_engine *e, const struct task *t);
/* Do the lanes' git in process (libgit2, loaded the first time asked)? */
int sl_lanes_in_process(const struct sl_engine *e);
/*
 * In process: the branch, then the records, of task `only` (NULL: each
 * task) whose worktree is gone. 0, or -1 (the git command does it).
 */
int sl_lanes_forget(struct sl_engine *e, const struct task *only);
/* The lanes' branches and records, when they end or are recovered. */
void sl_lanes_tidy(struct sl_engine *e);
/* Make (or take up) the shadow repository: e->lanes_git. 0, or an error. */
int sl_lanes_shadow_open(struct sl_engine *e, struct sbxloop_error *err);
/* Remove the shadow repository, if any. */
void sl_lanes_shadow_drop(struct sl_engine *e);

#endif

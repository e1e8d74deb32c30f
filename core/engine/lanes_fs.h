/*
 * Where parallel lanes keep their git and their files (lanes.c): on the
 * host, in the run's workspace, when the sandbox mounts it; inside the
 * run's agent sandbox when it does not (a harvested run), every git
 * command and file change then a job there (shell.batch, argv commands,
 * no shell quoting). lanes.c calls these and never the host directly,
 * so both places run the same worktree and merge code. Private to the
 * engine.
 */
#ifndef SL_LANES_FS_H
#define SL_LANES_FS_H

#include <stddef.h>

#include "engine/workspace.h"

struct sl_engine;

/* Do the lanes work inside the sandbox (the workspace is not mounted)? */
int sl_lanes_in_box(const struct sl_engine *e);

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
/* The file's text (caller frees), or NULL. */
char *sl_lanes_read(const struct sl_engine *e, const char *path, size_t max);
/* Write `text` to `path` (replaced whole); 0, or -1. */
int sl_lanes_write(const struct sl_engine *e, const char *path,
		   const char *text);
/* mkdir -p; 0, or -1. */
int sl_lanes_mkdirs(const struct sl_engine *e, const char *path);
/* rm -rf, quietly. */
void sl_lanes_rmtree(const struct sl_engine *e, const char *path);
/* rmdir when empty, quietly. */
void sl_lanes_rmdir(const struct sl_engine *e, const char *path);
/*
 * The index locks a killed git command leaves: `common`/index.lock and
 * `common`/worktrees/(each)/index.lock. On the host only: a harvested
 * run resumes in a fresh sandbox, so nothing there is ever recovered.
 */
void sl_lanes_clear_locks(const char *common);

#endif

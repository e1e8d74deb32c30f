/*
 * A walk of a directory tree that an agent may have written: never
 * through a symbolic link (not even the root), bounded in depth and in
 * entries. Shared by the FIFO release (fifo.c) and the review's
 * evidence (engine/lanes_git2.c). libc only.
 */
#ifndef SL_WALK_H
#define SL_WALK_H

#include <sys/stat.h>

/* What a visit asks of the walk. */
enum sl_walk_next {
	SL_WALK_ON = 0,   /* go on (into it, if a directory) */
	SL_WALK_SKIP = 1, /* not into this directory */
	SL_WALK_STOP = 2, /* no further entry at all */
};

/*
 * Visit every entry under directory `root` (lstat'ed: `st`), `dir_fd`
 * and `name` to reach it, `rel` its path from the root ("./a/b"),
 * `depth` 0 at the top; a directory met at depth `max_depth` is not
 * entered, and the walk stops after `max_entries` entries.
 */
void sl_walk_tree(const char *root, int max_depth, unsigned max_entries,
		  enum sl_walk_next (*visit)(void *user, int dir_fd,
					     const char *name, const char *rel,
					     const struct stat *st, int depth),
		  void *user);

#endif

/* Releasing FIFOs that hold a reader: see fifo.h. */
#include "config.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/fifo.h"
#include "common/walk.h"

#define RELEASE_DEPTH 64        /* directories below the root */
#define RELEASE_ENTRIES 200000u /* entries looked at, per pass */
#define RELEASE_AFTER_S 1.0

/* A FIFO: opened for writing without blocking, and closed. */
static enum sl_walk_next release(void *user, int dir_fd, const char *name,
				 const char *rel, const struct stat *st,
				 int depth)
{
	int fd;

	(void)user;
	(void)rel;
	(void)depth;
	if (S_ISFIFO(st->st_mode)) {
		fd = openat(dir_fd, name,
			    O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
				    O_CLOEXEC);
		if (fd >= 0)
			close(fd);
	}
	return SL_WALK_ON;
}

void sl_release_fifos(const char *root)
{
	sl_walk_tree(root, RELEASE_DEPTH, RELEASE_ENTRIES, release, NULL);
}

void sl_release_fifos_tick(const char *root, double start, double now,
			   double *next)
{
	if (!*next)
		*next = start + RELEASE_AFTER_S;
	if (now < *next)
		return;
	sl_release_fifos(root);
	*next = now + 1.0;
}

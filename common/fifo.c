/* Releasing FIFOs that hold a reader: see fifo.h. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fifo.h"

#define RELEASE_DEPTH 64        /* directories below the root */
#define RELEASE_ENTRIES 200000u /* entries looked at, per pass */
#define RELEASE_AFTER_S 1.0

/* Directory `fd` (closed here) and below. */
static void release_dir(int fd, int depth, unsigned *budget)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) && *budget) {
		struct stat st;
		int sub;

		(*budget)--;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			    0)
			continue;
		if (S_ISFIFO(st.st_mode)) {
			sub = openat(dirfd(d), de->d_name,
				     O_WRONLY | O_NONBLOCK | O_NOFOLLOW |
					     O_NOCTTY | O_CLOEXEC);
			if (sub >= 0)
				close(sub);
		} else if (S_ISDIR(st.st_mode) && depth < RELEASE_DEPTH) {
			sub = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (sub >= 0)
				release_dir(sub, depth + 1, budget);
		}
	}
	closedir(d);
}

void sl_release_fifos(const char *root)
{
	unsigned budget = RELEASE_ENTRIES;
	int fd = root ? open(root,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		      : -1;

	if (fd >= 0)
		release_dir(fd, 0, &budget);
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

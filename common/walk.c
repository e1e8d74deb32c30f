/* A bounded walk of a tree that follows no link: see walk.h. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/walk.h"

struct walk {
	int max_depth;
	unsigned budget;
	int stop;
	enum sl_walk_next (*visit)(void *user, int dir_fd, const char *name,
				   const char *rel, const struct stat *st,
				   int depth);
	void *user;
};

/* Directory `fd` (closed here), reached as `rel`, and below. */
static void walk_dir(struct walk *w, int fd, const char *rel, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while (!w->stop && w->budget && (de = readdir(d))) {
		enum sl_walk_next next;
		struct stat st;
		size_t n;
		char *path;
		int sub;

		w->budget--;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			    0)
			continue;
		n = strlen(rel) + strlen(de->d_name) + 2;
		path = malloc(n);
		if (!path)
			abort();
		snprintf(path, n, "%s/%s", rel, de->d_name);
		next = w->visit(w->user, dirfd(d), de->d_name, path, &st,
				depth);
		if (next == SL_WALK_STOP)
			w->stop = 1;
		else if (next == SL_WALK_ON && S_ISDIR(st.st_mode) &&
			 depth < w->max_depth) {
			sub = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (sub >= 0)
				walk_dir(w, sub, path, depth + 1);
		}
		free(path);
	}
	closedir(d);
}

void sl_walk_tree(const char *root, int max_depth, unsigned max_entries,
		  enum sl_walk_next (*visit)(void *user, int dir_fd,
					     const char *name, const char *rel,
					     const struct stat *st, int depth),
		  void *user)
{
	struct walk w = {max_depth, max_entries, 0, visit, user};
	int fd = root ? open(root,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		      : -1;

	if (fd >= 0)
		walk_dir(&w, fd, ".", 0);
}

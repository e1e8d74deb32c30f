/*
 * The PATH search of execvp, run in the parent before posix_spawn, so a
 * missing program is reported the same way everywhere: under valgrind,
 * posix_spawnp's own search reports an exec failure only as the child's
 * exit status 127. Used by core/proc.c and worker/proc.c.
 */
#include "config.h"

#include "findprog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *sbx_find_program(const char *name, const char *path)
{
	const char *dir, *end;
	int denied = 0;

	if (strchr(name, '/'))
		return strdup(name);
	if (*name == '\0') {
		errno = ENOENT;
		return NULL;
	}
	if (path == NULL)
		path = "/bin:/usr/bin";
	for (dir = path;; dir = end + 1) {
		size_t dlen, len;
		struct stat st;
		char *full;

		end = strchr(dir, ':');
		if (end == NULL)
			end = dir + strlen(dir);
		dlen = (size_t)(end - dir);
		len = dlen + strlen(name) + 3;
		full = malloc(len);
		if (full == NULL)
			return NULL;
		snprintf(full, len, "%.*s%s%s", (int)dlen, dir,
			 dlen ? "/" : "./", name);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(full, X_OK) == 0)
				return full;
			denied = 1;
		}
		free(full);
		if (*end == '\0')
			break;
	}
	errno = denied ? EACCES : ENOENT;
	return NULL;
}

/*
 * Starting a program for the host (common/proc.c) and the worker
 * (worker/proc.c). posix_spawn, not fork+exec: the parent is suspended
 * only until the exec (vfork-style, no copy of its page tables) and an
 * exec failure comes back as the return value. The PATH search of
 * execvp runs here, in the parent, so a missing program is reported the
 * same way everywhere: under valgrind, posix_spawnp's own search reports
 * an exec failure only as the child's exit status 127.
 */
#include "config.h"

#include "common/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static int held_fd = -1;
static _Thread_local int holding;

void sl_launch_hold_fd(int fd)
{
	held_fd = fd;
}

void sl_launch_holding(int on)
{
	holding = on;
}

/*
 * The file `name` names: a copy of `name` when it holds a '/' (checked
 * here when absolute; a relative one is left to the exec, after the
 * child's chdir), else the first executable regular file `name` in
 * `path` (NULL means "/bin:/usr/bin"; an empty entry is the current
 * directory). NULL with errno ENOENT, EACCES (only non-executable files
 * match) or ENOMEM.
 */
char *sl_launch_find(const char *name, const char *path)
{
	const char *dir, *end;
	int denied = 0;

	if (strchr(name, '/')) {
		struct stat st;

		if (name[0] == '/') {
			if (stat(name, &st) < 0)
				return NULL;
			if (!S_ISREG(st.st_mode) || access(name, X_OK) < 0) {
				errno = EACCES;
				return NULL;
			}
		}
		return strdup(name);
	}
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

/* The attributes and file actions of `sp`; 0 or an errno value. */
static int spawn_setup(const struct sl_launch *sp, posix_spawnattr_t *at,
		       posix_spawn_file_actions_t *fa)
{
	sigset_t dfl;
	const int *sig;
	int rc;

	sigemptyset(&dfl);
	for (sig = sp->signals; sig && *sig; sig++)
		sigaddset(&dfl, *sig);
	rc = posix_spawnattr_setflags(
		at, POSIX_SPAWN_SETSIGDEF |
			    (sp->new_session ? POSIX_SPAWN_SETSID
					     : POSIX_SPAWN_SETPGROUP));
	if (rc == 0 && !sp->new_session)
		rc = posix_spawnattr_setpgroup(at, 0);
	if (rc == 0)
		rc = posix_spawnattr_setsigdefault(at, &dfl);
	if (rc == 0)
		rc = sp->in_fd < 0 ? posix_spawn_file_actions_addopen(
					     fa, 0, "/dev/null", O_RDONLY, 0)
				   : posix_spawn_file_actions_adddup2(
					     fa, sp->in_fd, 0);
	if (rc == 0)
		rc = posix_spawn_file_actions_adddup2(fa, sp->out_fd, 1);
	if (rc == 0)
		rc = posix_spawn_file_actions_adddup2(fa, sp->err_fd, 2);
	if (rc == 0 && sp->cwd)
		rc = posix_spawn_file_actions_addchdir_np(fa, sp->cwd);
	/* dup2 onto itself: the child's copy is not close-on-exec */
	if (rc == 0 && holding && held_fd > 2)
		rc = posix_spawn_file_actions_adddup2(fa, held_fd, held_fd);
	return rc;
}

int sl_launch(const struct sl_launch *sp, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *file;
	int rc;

	file = sl_launch_find(sp->argv[0], getenv("PATH"));
	if (file == NULL)
		return errno;
	if ((rc = posix_spawnattr_init(&at)) != 0)
		goto out;
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		posix_spawnattr_destroy(&at);
		goto out;
	}
	rc = spawn_setup(sp, &at, &fa);
	if (rc == 0)
		rc = posix_spawn(pid, file, &fa, &at, sp->argv,
				 sp->envp ? sp->envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
out:
	free(file);
	return rc;
}

/*
 * Starting a program: posix_spawn with the PATH search of execvp done
 * first. Shared by the host (common/proc.c) and sbxloop-worker
 * (worker/proc.c); libc only.
 */
#ifndef SBXLOOP_LAUNCH_H
#define SBXLOOP_LAUNCH_H

#include <sys/types.h>

struct sl_launch {
	char *const *argv;  /* argv[0] is searched in PATH unless it has a / */
	char *const *envp;  /* NULL: the caller's environment */
	const char *cwd;    /* NULL: the caller's */
	int in_fd;          /* the child's stdin; -1: /dev/null */
	int out_fd;         /* its stdout */
	int err_fd;         /* its stderr */
	int new_session;    /* setsid(); else a process group of its own */
	const int *signals; /* back to SIG_DFL in the child; 0-ended */
};

/*
 * Start `sp` and set `*pid`: 0, or an errno value (ENOENT or EACCES when
 * no executable file matches argv[0]) with no child left behind.
 */
int sl_launch(const struct sl_launch *sp, pid_t *pid);

/*
 * The file that running `name` with search path `path` would start (the
 * PATH search of sl_launch; NULL `path` means "/bin:/usr/bin"). Caller
 * frees; NULL with errno ENOENT, EACCES or ENOMEM.
 */
char *sl_launch_find(const char *name, const char *path);

#endif

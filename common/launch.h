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
 * A descriptor that chosen children inherit (not close-on-exec in
 * them): the host's run driver lock (core/host/runlock.c), so that git
 * a killed driver started still holds the run until it ends.
 * sl_launch_hold_fd names it for the process (-1: none; set it before
 * the threads that launch start, clear it after they end); a thread
 * passes 1 to sl_launch_holding for its next launches to inherit it,
 * 0 to stop. The worker never sets one.
 */
void sl_launch_hold_fd(int fd);
void sl_launch_holding(int on);

/*
 * The file that running `name` with search path `path` would start (the
 * PATH search of sl_launch; NULL `path` means "/bin:/usr/bin"). Caller
 * frees; NULL with errno ENOENT, EACCES or ENOMEM.
 */
char *sl_launch_find(const char *name, const char *path);

#endif

/*
 * The one subprocess loop of the tree, shared by the host's helper
 * (common/proc.c) and the worker's (worker/proc.c): start a program with
 * its output on pipes, feed it stdin, hand every chunk of output to a
 * callback, enforce a deadline (SIGTERM to the process group, SIGKILL
 * after a grace period), reap it, and optionally kill what it left
 * behind. libc only.
 */
#ifndef SL_CHILD_H
#define SL_CHILD_H

#include <stddef.h>
#include <sys/types.h>

/* What a tick callback asks of the running child. */
enum sl_child_action {
	SL_CHILD_GO_ON = 0,
	SL_CHILD_TERM = 1, /* SIGTERM to the group, SIGKILL after the grace */
	SL_CHILD_KILL = 2, /* SIGKILL to the group now */
};

struct sl_child {
	/* the program: argv, envp, cwd, new_session and signals are read;
	 * the fds are set by sl_child_run */
	char *const *argv;
	char *const *envp;      /* NULL: the caller's environment */
	const char *cwd;        /* NULL: the caller's */
	int new_session;        /* setsid(); else a process group of its own */
	const int *signals;     /* back to SIG_DFL in the child; 0-ended */
	const char *stdin_data; /* NULL or empty: /dev/null */
	size_t stdin_len;
	int merge_stderr; /* stderr onto the stdout pipe */

	double timeout_s;    /* 0: none */
	double kill_grace_s; /* from SIGTERM to SIGKILL */
	/* after the child is reaped: SIGKILL to its group (what it left
	 * running dies with it) */
	int kill_group_on_exit;
	/* after the child is reaped, how long pipes still held open by a
	 * grandchild are read; < 0: until they close */
	double drain_s;

	/* output: stream 1 is stdout, 2 stderr; data is borrowed */
	void (*on_output)(void *user, int stream, const char *data,
			  size_t len);
	/* called once the child runs, with its pid (its group's id) */
	void (*on_start)(void *user, pid_t pid);
	/* called at least every tick_s while waiting (0: no ticks) */
	enum sl_child_action (*on_tick)(void *user);
	double tick_s;
	void *user;

	/* results */
	int status;      /* as waitpid() gives it */
	int timed_out;   /* the deadline passed */
	int spawn_errno; /* nonzero: the program never started */
};

/*
 * Run `c` to its end. 0 when the program ran (c->status holds its wait
 * status); -1 when it could not start (c->spawn_errno) or a pipe could
 * not be made (errno in c->spawn_errno too). Never leaves a zombie.
 */
int sl_child_run(struct sl_child *c);

#endif

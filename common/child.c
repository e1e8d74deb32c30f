/*
 * The subprocess loop (child.h). One poll loop for the host and the
 * worker: the host's helper (common/proc.c) adds line splitting and
 * bounded tails on top, the worker's (worker/proc.c) its capture buffers,
 * heartbeats and stop requests. libc only.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/child.h"
#include "common/launch.h"

/* While pipes are closed but the child is not reaped yet, waits grow
 * from the first to the last: the exit status is usually microseconds
 * away, but a child may close its output and run on. */
#define IDLE_FIRST_S 0.0001
#define IDLE_LAST_S 0.05
/* While draining after the exit, pipes are polled this often. */
#define DRAIN_POLL_S 0.02

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The smaller of a wait and the time until `at` (ignored when 0). */
static double until(double wait, double now, double at)
{
	double left;

	if (at <= 0)
		return wait;
	left = at > now ? at - now : 0;
	return wait < 0 || left < wait ? left : wait;
}

/*
 * A descriptor that becomes readable when `pid` exits (pidfd_open,
 * Linux 5.3), so the loop wakes for the exit even while a grandchild
 * keeps the pipes open; -1 where the kernel has none, and the loop then
 * checks at most every IDLE_LAST_S.
 */
static int exit_fd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

static void sleep_s(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int sl_child_run(struct sl_child *c)
{
	int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
	int pid_fd = -1;
	int has_stdin = c->stdin_data && c->stdin_len > 0;
	double deadline = 0, kill_at = 0, drain_until = 0, idle = IDLE_FIRST_S;
	int reaped = 0, term_sent = 0, rc = -1;
	size_t in_off = 0;
	char buf[16384];
	pid_t pid = 0;

	c->status = 0;
	c->timed_out = 0;
	c->spawn_errno = 0;
	if (pipe2(out_p, O_CLOEXEC) < 0 ||
	    (!c->merge_stderr && pipe2(err_p, O_CLOEXEC) < 0) ||
	    (has_stdin && pipe2(in_p, O_CLOEXEC) < 0)) {
		c->spawn_errno = errno;
		goto out;
	}
	{
		struct sl_launch sp = {
			.argv = c->argv,
			.envp = c->envp,
			.cwd = c->cwd,
			.in_fd = in_p[0],
			.out_fd = out_p[1],
			.err_fd = c->merge_stderr ? out_p[1] : err_p[1],
			.new_session = c->new_session,
			.signals = c->signals,
		};

		c->spawn_errno = sl_launch(&sp, &pid);
	}
	close_fd(&in_p[0]);
	close_fd(&out_p[1]);
	close_fd(&err_p[1]);
	if (c->spawn_errno)
		goto out;
	pid_fd = exit_fd(pid);
	if (c->on_start)
		c->on_start(c->user, pid);
	if (in_p[1] >= 0)
		fcntl(in_p[1], F_SETFL, O_NONBLOCK);
	if (c->timeout_s > 0)
		deadline = now_s() + c->timeout_s;

	for (;;) {
		struct pollfd pfd[4];
		int fds[4], n = 0, n_io, i;
		double now = now_s(), wait = c->tick_s > 0 ? c->tick_s : -1;

		if (c->on_tick) {
			enum sl_child_action a = c->on_tick(c->user);

			if (a == SL_CHILD_KILL) {
				kill(-pid, SIGKILL);
				kill_at = 0;
			} else if (a == SL_CHILD_TERM && !term_sent) {
				kill(-pid, SIGTERM);
				term_sent = 1;
				kill_at = now + c->kill_grace_s;
			}
		}
		if (deadline > 0 && !c->timed_out && now >= deadline) {
			c->timed_out = 1;
			if (!term_sent) {
				kill(-pid, SIGTERM);
				term_sent = 1;
				kill_at = now + c->kill_grace_s;
			}
		}
		if (kill_at > 0 && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		if (!reaped && waitpid(pid, &c->status, WNOHANG) == pid) {
			reaped = 1;
			/* nothing it forked outlives it when asked, or after
			 * a timeout */
			if (c->kill_group_on_exit || c->timed_out)
				kill(-pid, SIGKILL);
			drain_until = now + c->drain_s;
			close_fd(&pid_fd);
		}
		/* a grandchild that left the group may hold a pipe */
		if (reaped && c->drain_s >= 0 && now > drain_until)
			break;
		if (in_p[1] >= 0) {
			fds[n] = in_p[1];
			pfd[n++] = (struct pollfd){in_p[1], POLLOUT, 0};
		}
		if (out_p[0] >= 0) {
			fds[n] = out_p[0];
			pfd[n++] = (struct pollfd){out_p[0], POLLIN, 0};
		}
		if (err_p[0] >= 0) {
			fds[n] = err_p[0];
			pfd[n++] = (struct pollfd){err_p[0], POLLIN, 0};
		}
		if (!n && reaped)
			break;
		n_io = n;
		wait = until(wait, now,
			     deadline > 0 && !c->timed_out ? deadline : 0);
		wait = until(wait, now, kill_at);
		if (!n_io && pid_fd < 0) {
			/* pipes closed: the exit status is near */
			wait = wait < 0 || idle < wait ? idle : wait;
			if (idle < IDLE_LAST_S)
				idle *= 2;
			sleep_s(wait);
			continue;
		}
		if (reaped && (wait < 0 || wait > DRAIN_POLL_S))
			wait = DRAIN_POLL_S;
		if (!reaped) {
			if (pid_fd >= 0) {
				fds[n] = pid_fd;
				pfd[n++] = (struct pollfd){pid_fd, POLLIN, 0};
			} else if (wait < 0 || wait > IDLE_LAST_S) {
				wait = IDLE_LAST_S;
			}
		}
		if (poll(pfd, (nfds_t)n,
			 wait < 0 ? -1 : (int)(wait * 1000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < n; i++) {
			ssize_t got;

			if (fds[i] == pid_fd ||
			    !(pfd[i].revents &
			      (POLLIN | POLLOUT | POLLHUP | POLLERR)))
				continue; /* an exit is reaped at the top */
			if (fds[i] == in_p[1]) {
				got = write(in_p[1], c->stdin_data + in_off,
					    c->stdin_len - in_off);
				if (got > 0)
					in_off += (size_t)got;
				if ((got < 0 && errno != EAGAIN &&
				     errno != EINTR) ||
				    in_off >= c->stdin_len)
					close_fd(&in_p[1]);
				continue;
			}
			got = read(fds[i], buf, sizeof(buf));
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) {
				close_fd(fds[i] == out_p[0] ? &out_p[0]
							    : &err_p[0]);
				continue;
			}
			if (c->on_output)
				c->on_output(c->user,
					     fds[i] == out_p[0] ? 1 : 2, buf,
					     (size_t)got);
		}
	}
	if (!reaped) {
		kill(-pid, SIGKILL);
		while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR)
			;
	}
	rc = 0;
out:
	close_fd(&pid_fd);
	close_fd(&in_p[0]);
	close_fd(&in_p[1]);
	close_fd(&out_p[0]);
	close_fd(&out_p[1]);
	close_fd(&err_p[0]);
	close_fd(&err_p[1]);
	return rc;
}

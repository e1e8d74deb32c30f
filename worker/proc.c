/*
 * proc.c - the worker's one subprocess helper and its capture buffer.
 *
 * Owns spawning (own session, so the child leads a process group), the
 * bounded head+tail capture of its output, line delivery for streamed
 * output, timeouts (SIGTERM to the group, SIGKILL after a grace period)
 * and reaping whatever the child left behind in its group. Every kind and
 * backend that runs a program goes through wk_proc_run.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/launch.h"
#include "worker.h"

void wk_buf_init(struct wk_buf *b, size_t head_cap, size_t tail_cap)
{
	memset(b, 0, sizeof(*b));
	b->head_cap = head_cap;
	b->tail_cap = tail_cap;
	b->head = malloc(head_cap + 1);
	b->tail = malloc(tail_cap * 2 + 1);
	if (!b->head || !b->tail)
		abort();
}

void wk_buf_add(struct wk_buf *b, const char *data, size_t len)
{
	size_t n;

	b->total += len;
	n = b->head_cap - b->head_len;
	if (n > len)
		n = len;
	memcpy(b->head + b->head_len, data, n);
	b->head_len += n;
	data += n;
	len -= n;
	while (len) {
		/* the tail area is twice the cap: compact only when full */
		n = b->tail_cap * 2 - b->tail_len;
		if (n > len)
			n = len;
		memcpy(b->tail + b->tail_len, data, n);
		b->tail_len += n;
		data += n;
		len -= n;
		if (b->tail_len > b->tail_cap) {
			size_t drop = b->tail_len - b->tail_cap;

			memmove(b->tail, b->tail + drop, b->tail_cap);
			b->tail_len = b->tail_cap;
		}
	}
}

/* Head, then a marker if bytes were dropped, then the tail. */
char *wk_buf_render(const struct wk_buf *b)
{
	size_t kept = b->head_len + b->tail_len;
	const char *t = b->tail;
	size_t tl = b->tail_len;
	char *s;

	if (kept < b->total) {
		char *tail = malloc(tl + 1);

		if (!tail)
			abort();
		memcpy(tail, b->tail, tl);
		tail[tl] = '\0';
		t = wk_utf8_tail(tail, tl, tl);
		s = wk_printf("%.*s%s...(clipped %zu bytes)...\n%s",
			      (int)b->head_len, b->head,
			      b->head_len ? "\n" : "", b->total - kept, t);
		free(tail);
		return s;
	}
	s = malloc(kept + 1);
	if (!s)
		abort();
	memcpy(s, b->head, b->head_len);
	memcpy(s + b->head_len, t, tl);
	s[kept] = '\0';
	return s;
}

void wk_buf_free(struct wk_buf *b)
{
	free(b->head);
	free(b->tail);
	memset(b, 0, sizeof(*b));
}

struct line_acc {
	char *buf;
	size_t len;
	int overflow;
};

static void feed_lines(struct wk_proc *p, struct line_acc *la,
		       const char *data, size_t len)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;

		if (!la->overflow) {
			if (la->len + n > WK_EVENT_LINE_MAX) {
				la->overflow = 1; /* drop the whole line */
			} else {
				memcpy(la->buf + la->len, data, n);
				la->len += n;
			}
		}
		if (nl) {
			if (!la->overflow) {
				la->buf[la->len] = '\0';
				p->on_line(p->arg, la->buf, la->len);
			}
			la->len = 0;
			la->overflow = 0;
			n++;
		}
		data += n;
		len -= n;
	}
}

/*
 * Start p->argv in a session of its own (so it leads a process group)
 * with stdin on /dev/null, stdout/stderr on the pipes, the signals the
 * worker handles back at their defaults, in p->cwd (common/launch.c). 0 or
 * an errno value.
 */
static int spawn_child(const struct wk_proc *p, int out_w, int err_w,
		       pid_t *pid)
{
	static const int dfl[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, 0};
	struct sl_launch sp = {
		.argv = p->argv,
		.envp = p->envp,
		.cwd = p->cwd,
		.in_fd = -1,
		.out_fd = out_w,
		.err_fd = p->merge_stderr ? out_w : err_w,
		.new_session = 1,
		.signals = dfl,
	};

	return sl_launch(&sp, pid);
}

static void kill_group(pid_t pgid, int sig)
{
	if (pgid > 0)
		kill(-pgid, sig);
}

/*
 * Run p->argv to completion or timeout. Returns 0 when the program ran
 * (p->exit_code holds its status, 128+N for a signal, p->timed_out set on
 * timeout) and -1 when it could not be started (p->spawn_errno). Whatever
 * the child left running in its process group is killed before return.
 */
int wk_proc_run(struct wk_ctx *ctx, struct wk_proc *p)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1};
	struct line_acc la = {0};
	double deadline, kill_at = 0, drain_until = 0;
	int status = 0, reaped = 0, rc = -1;
	pid_t pid;
	char buf[16384];

	p->exit_code = -1;
	p->term_signal = 0;
	p->timed_out = 0;
	p->spawn_errno = 0;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		p->spawn_errno = errno;
		goto out;
	}
	p->spawn_errno = spawn_child(p, out[1], err[1], &pid);
	close(out[1]);
	close(err[1]);
	out[1] = err[1] = -1;
	if (p->spawn_errno)
		goto out;
	ctx->child_pgid = pid;
	if (p->on_line) {
		la.buf = malloc(WK_EVENT_LINE_MAX + 1);
		if (!la.buf)
			abort();
	}
	deadline = wk_now() + p->timeout_s;
	while (out[0] >= 0 || err[0] >= 0 || !reaped) {
		struct pollfd fds[2];
		struct timespec wait = {0, 250000000L};
		int nfds = 0, i;
		double now = wk_now();

		if (p->stop == 1) {
			p->stop = 2; /* asked once */
			kill_group(pid, SIGTERM);
			kill_at = now + WK_KILL_GRACE_S;
		}
		if (!p->timed_out && now >= deadline) {
			p->timed_out = 1;
			kill_group(pid, SIGTERM);
			kill_at = now + WK_KILL_GRACE_S;
		}
		if (kill_at && now >= kill_at) {
			kill_group(pid, SIGKILL);
			kill_at = 0;
		}
		if (wk_stop_signal) {
			kill_group(pid, SIGKILL);
			kill_at = 0;
		}
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
			reaped = 1;
			/* leftovers in the group die with their leader */
			kill_group(pid, SIGKILL);
			drain_until = now + 1.0;
		}
		if (reaped && now > drain_until) {
			/* a grandchild that left the group holds a pipe */
			if (out[0] >= 0)
				close(out[0]);
			if (err[0] >= 0)
				close(err[0]);
			out[0] = err[0] = -1;
			break;
		}
		if (out[0] >= 0)
			fds[nfds++] = (struct pollfd){out[0], POLLIN, 0};
		if (err[0] >= 0)
			fds[nfds++] = (struct pollfd){err[0], POLLIN, 0};
		/* pipes closed and the child reaped: nothing to wait for */
		if (!nfds && reaped)
			break;
		/* pipes closed: the exit status is microseconds away */
		if (!nfds)
			wait.tv_nsec = 100000L;
		else if (reaped)
			wait.tv_nsec = 20000000L;
		if (ppoll(fds, (nfds_t)nfds, &wait, NULL) < 0 &&
		    errno != EINTR)
			break;
		for (i = 0; i < nfds; i++) {
			ssize_t n;
			int is_out = fds[i].fd == out[0];

			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(fds[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				close(fds[i].fd);
				if (is_out)
					out[0] = -1;
				else
					err[0] = -1;
				continue;
			}
			if (is_out) {
				if (p->out)
					wk_buf_add(p->out, buf, (size_t)n);
				if (p->on_line)
					feed_lines(p, &la, buf, (size_t)n);
			} else if (p->err) {
				wk_buf_add(p->err, buf, (size_t)n);
			}
		}
		wk_tick(ctx);
	}
	if (p->on_line && la.len && !la.overflow) {
		la.buf[la.len] = '\0';
		p->on_line(p->arg, la.buf, la.len);
	}
	if (!reaped) {
		kill_group(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	ctx->child_pgid = 0;
	if (WIFEXITED(status)) {
		p->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		p->exit_code = 128 + WTERMSIG(status);
		p->term_signal = WTERMSIG(status);
	}
	rc = 0;
out:
	free(la.buf);
	if (out[0] >= 0)
		close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (err[0] >= 0)
		close(err[0]);
	if (err[1] >= 0)
		close(err[1]);
	return rc;
}

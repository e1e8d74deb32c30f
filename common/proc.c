/*
 * Subprocess execution: posix_spawnp with stdin/stdout/stderr pipes,
 * a poll loop that feeds line callbacks and keeps a tail of each stream,
 * and a deadline after which the child's process group gets SIGTERM and,
 * two seconds later, SIGKILL.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/launch.h"
#include "common/util.h"

#define KILL_GRACE_S 2.0

struct stream {
	int fd;
	struct sl_buf line; /* current partial line */
	struct sl_buf tail; /* bounded tail */
	void (*cb)(void *user, const char *line, size_t len);
};

static void tail_add(struct sl_buf *tail, size_t max, const char *s, size_t n)
{
	sl_buf_add(tail, s, n);
	if (tail->len > max * 2) {
		memmove(tail->buf, tail->buf + tail->len - max, max);
		tail->len = max;
		tail->buf[max] = '\0';
	}
}

static void stream_feed(struct stream *st, void *user, size_t max,
			const char *data, size_t n)
{
	size_t i, start = 0;

	tail_add(&st->tail, max, data, n);
	if (!st->cb)
		return;
	for (i = 0; i < n; i++) {
		if (data[i] != '\n')
			continue;
		sl_buf_add(&st->line, data + start, i - start);
		st->cb(user, sl_buf_str(&st->line), st->line.len);
		sl_buf_reset(&st->line);
		start = i + 1;
	}
	if (start < n)
		sl_buf_add(&st->line, data + start, n - start);
}

static void stream_finish(struct stream *st, void *user)
{
	if (st->cb && st->line.len)
		st->cb(user, sl_buf_str(&st->line), st->line.len);
	sl_buf_release(&st->line);
}

static char *tail_take(struct sl_buf *tail, size_t max, size_t *len)
{
	char *s;

	if (tail->len > max) {
		memmove(tail->buf, tail->buf + tail->len - max, max);
		tail->len = max;
		tail->buf[max] = '\0';
	}
	*len = tail->len;
	s = sl_buf_detach(tail);
	return s;
}

/*
 * Start spec->argv leading a process group of its own, on the given
 * pipe ends, SIGPIPE at its default, in spec->cwd. 0 or an errno.
 */
static int spawn_child(const struct sbxloop_proc_spec *spec, int in_fd,
		       int out_fd, int err_fd, pid_t *pid)
{
	static const int dfl[] = {SIGPIPE, 0};
	struct sl_launch sp = {
		.argv = (char *const *)spec->argv,
		.envp = (char *const *)spec->envp,
		.cwd = spec->cwd,
		.in_fd = in_fd,
		.out_fd = out_fd,
		.err_fd = err_fd,
		.signals = dfl,
	};

	return sl_launch(&sp, pid);
}

int sl_proc_run(const struct sbxloop_proc_spec *spec,
		struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
	struct stream streams[2];
	size_t max = spec->tail_max ? spec->tail_max : 65536;
	size_t in_off = 0;
	double deadline = 0, kill_at = 0;
	int status = 0, child_errno = 0, rc = 0, term_sent = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);
	memset(streams, 0, sizeof(streams));
	if (!spec->argv || !spec->argv[0])
		return sl_error(err, SBXLOOP_EINVAL, "empty command line");
	if (pipe2(in_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0 ||
	    pipe2(err_p, O_CLOEXEC) < 0) {
		rc = sl_error(err, SBXLOOP_ERR, "cannot create pipes: %s",
			      strerror(errno));
		goto out;
	}
	child_errno = spawn_child(spec, in_p[0], out_p[1], err_p[1], &pid);
	close(in_p[0]);
	close(out_p[1]);
	close(err_p[1]);
	in_p[0] = out_p[1] = err_p[1] = -1;
	if (child_errno) {
		rc = sl_error(err,
			      child_errno == ENOENT ? SBXLOOP_ENOTFOUND
						    : SBXLOOP_ERR,
			      "cannot run '%s': %s", spec->argv[0],
			      strerror(child_errno));
		res->exit_code = 127;
		goto out;
	}

	if (!spec->stdin_data || spec->stdin_len == 0) {
		close(in_p[1]);
		in_p[1] = -1;
	} else {
		fcntl(in_p[1], F_SETFL, O_NONBLOCK);
	}
	streams[0].fd = out_p[0];
	streams[0].cb = spec->on_stdout_line;
	streams[1].fd = err_p[0];
	streams[1].cb = spec->on_stderr_line;
	if (spec->timeout_s > 0)
		deadline = sl_monotonic() + spec->timeout_s;

	for (;;) {
		struct pollfd pfd[3];
		int nfds = 0, i, timeout_ms = -1, idx_in = -1;
		int idx[2] = {-1, -1};

		for (i = 0; i < 2; i++) {
			if (streams[i].fd < 0)
				continue;
			idx[i] = nfds;
			pfd[nfds].fd = streams[i].fd;
			pfd[nfds++].events = POLLIN;
		}
		if (in_p[1] >= 0) {
			idx_in = nfds;
			pfd[nfds].fd = in_p[1];
			pfd[nfds++].events = POLLOUT;
		}
		if (nfds == 0)
			break;
		if (deadline > 0) {
			double now = sl_monotonic();
			double next = term_sent ? kill_at : deadline;

			if (now >= next) {
				if (!term_sent) {
					kill(-pid, SIGTERM);
					term_sent = 1;
					res->timed_out = 1;
					kill_at = now + KILL_GRACE_S;
				} else {
					kill(-pid, SIGKILL);
					kill_at = now + 3600;
				}
				continue;
			}
			timeout_ms = (int)((next - now) * 1000) + 1;
		}
		if (poll(pfd, (nfds_t)nfds, timeout_ms) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (idx_in >= 0 &&
		    (pfd[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(in_p[1], spec->stdin_data + in_off,
					  spec->stdin_len - in_off);

			if (w > 0)
				in_off += (size_t)w;
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				in_off = spec->stdin_len;
			if (in_off >= spec->stdin_len) {
				close(in_p[1]);
				in_p[1] = -1;
			}
		}
		for (i = 0; i < 2; i++) {
			char chunk[16384];
			ssize_t n;

			if (idx[i] < 0 || !(pfd[idx[i]].revents &
					    (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(streams[i].fd, chunk, sizeof(chunk));
			if (n > 0) {
				stream_feed(&streams[i], spec->user, max,
					    chunk, (size_t)n);
			} else if (n == 0 ||
				   (errno != EINTR && errno != EAGAIN)) {
				close(streams[i].fd);
				streams[i].fd = -1;
			}
		}
	}
	if (in_p[1] >= 0) {
		close(in_p[1]);
		in_p[1] = -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* Nothing the command forked may outlive it after a timeout. */
	if (res->timed_out)
		kill(-pid, SIGKILL);
	stream_finish(&streams[0], spec->user);
	stream_finish(&streams[1], spec->user);
	res->out = tail_take(&streams[0].tail, max, &res->out_len);
	res->err = tail_take(&streams[1].tail, max, &res->err_len);
	if (WIFEXITED(status)) {
		res->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->exit_code = -1;
		res->term_signal = WTERMSIG(status);
	}
out:
	if (in_p[0] >= 0)
		close(in_p[0]);
	if (in_p[1] >= 0)
		close(in_p[1]);
	if (out_p[1] >= 0)
		close(out_p[1]);
	if (err_p[1] >= 0)
		close(err_p[1]);
	if (rc) {
		if (out_p[0] >= 0)
			close(out_p[0]);
		if (err_p[0] >= 0)
			close(err_p[0]);
	}
	sl_buf_release(&streams[0].tail);
	sl_buf_release(&streams[1].tail);
	return rc;
}

void sl_proc_result_clear(struct sbxloop_proc_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}

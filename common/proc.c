/*
 * The host's subprocess helper: the shared loop of common/child.c with
 * line callbacks and a bounded tail of each stream on top; a deadline
 * after which the child's process group gets SIGTERM and, two seconds
 * later, SIGKILL.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/proc.h"
#include "common/child.h"
#include "common/fifo.h"
#include "common/util.h"

#define KILL_GRACE_S 2.0

struct stream {
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

/* Both streams of one run, for the output callback. */
struct streams {
	const struct sbxloop_proc_spec *spec;
	size_t max;
	struct stream s[2];
	/* sl_proc_run_releasing: the work tree, when it started, next pass */
	const char *release_root;
	double start, next;
};

static enum sl_child_action on_tick(void *user)
{
	struct streams *ss = user;

	sl_release_fifos_tick(ss->release_root, ss->start, sl_monotonic(),
			      &ss->next);
	return SL_CHILD_GO_ON;
}

static void on_output(void *user, int stream, const char *data, size_t len)
{
	struct streams *ss = user;

	stream_feed(&ss->s[stream == 1 ? 0 : 1], ss->spec->user, ss->max, data,
		    len);
}

int sl_proc_run(const struct sbxloop_proc_spec *spec,
		struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	return sl_proc_run_releasing(spec, NULL, res, err);
}

int sl_proc_run_releasing(const struct sbxloop_proc_spec *spec,
			  const char *release_root,
			  struct sbxloop_proc_result *res,
			  struct sbxloop_error *err)
{
	/* the child leads a process group of its own, SIGPIPE at default */
	static const int dfl[] = {SIGPIPE, 0};
	struct streams ss;
	struct sl_child c;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);
	if (!spec->argv || !spec->argv[0])
		return sl_error(err, SBXLOOP_EINVAL, "empty command line");
	memset(&ss, 0, sizeof(ss));
	ss.spec = spec;
	ss.max = spec->tail_max ? spec->tail_max : 65536;
	ss.s[0].cb = spec->on_stdout_line;
	ss.s[1].cb = spec->on_stderr_line;
	memset(&c, 0, sizeof(c));
	c.argv = (char *const *)spec->argv;
	c.envp = (char *const *)spec->envp;
	c.cwd = spec->cwd;
	c.signals = dfl;
	c.stdin_data = spec->stdin_data;
	c.stdin_len = spec->stdin_len;
	c.timeout_s = spec->timeout_s > 0 ? spec->timeout_s : 0;
	c.kill_grace_s = KILL_GRACE_S;
	c.drain_s = -1; /* read until the pipes close, as before */
	c.on_output = on_output;
	c.user = &ss;
	if (release_root) {
		ss.release_root = release_root;
		ss.start = sl_monotonic();
		c.on_tick = on_tick;
		c.tick_s = 0.5;
	}
	if (sl_child_run(&c) < 0) {
		rc = sl_error(err,
			      c.spawn_errno == ENOENT ? SBXLOOP_ENOTFOUND
						      : SBXLOOP_ERR,
			      "cannot run '%s': %s", spec->argv[0],
			      strerror(c.spawn_errno));
		res->exit_code = 127;
		goto out;
	}
	res->timed_out = c.timed_out;
	stream_finish(&ss.s[0], spec->user);
	stream_finish(&ss.s[1], spec->user);
	res->out = tail_take(&ss.s[0].tail, ss.max, &res->out_len);
	res->err = tail_take(&ss.s[1].tail, ss.max, &res->err_len);
	if (WIFEXITED(c.status)) {
		res->exit_code = WEXITSTATUS(c.status);
	} else if (WIFSIGNALED(c.status)) {
		res->exit_code = -1;
		res->term_signal = WTERMSIG(c.status);
	}
out:
	sl_buf_release(&ss.s[0].line);
	sl_buf_release(&ss.s[1].line);
	sl_buf_release(&ss.s[0].tail);
	sl_buf_release(&ss.s[1].tail);
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

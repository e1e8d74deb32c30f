/*
 * proc.c - the worker's one subprocess helper and its capture buffer.
 *
 * Owns the bounded head+tail capture of a program's output, line
 * delivery for streamed output, and the worker's side of running it:
 * heartbeats while it runs and the stops a backend or a signal asks
 * for. Spawning, timeouts (SIGTERM to the group, SIGKILL after a grace
 * period) and reaping what the child left behind are the shared loop of
 * common/child.c. Every kind and backend that runs a program goes
 * through wk_proc_run.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/child.h"
#include "common/fifo.h"
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

/* What the shared loop calls back with, for one wk_proc_run. */
struct run {
	struct wk_ctx *ctx;
	struct wk_proc *p;
	struct line_acc la;
	double start, next; /* p->release_root's passes */
};

static void on_output(void *user, int stream, const char *data, size_t len)
{
	struct run *r = user;

	if (stream == 1) {
		if (r->p->out)
			wk_buf_add(r->p->out, data, len);
		if (r->p->on_line) {
			/* one read's events leave in one write per channel */
			wk_events_hold(r->ctx);
			feed_lines(r->p, &r->la, data, len);
			wk_events_flush(r->ctx);
		}
	} else if (r->p->err) {
		wk_buf_add(r->p->err, data, len);
	}
}

static void on_start(void *user, pid_t pid)
{
	struct run *r = user;

	r->ctx->child_pgid = pid;
}

/* Heartbeats, the stop a backend asked for, and the worker's own stop. */
static enum sl_child_action on_tick(void *user)
{
	struct run *r = user;

	wk_tick(r->ctx);
	if (wk_stop_signal)
		return SL_CHILD_KILL;
	if (r->p->release_root)
		sl_release_fifos_tick(r->p->release_root, r->start, wk_now(),
				      &r->next);
	if (r->p->stop == 1) {
		r->p->stop = 2; /* asked once */
		return SL_CHILD_TERM;
	}
	return SL_CHILD_GO_ON;
}

/*
 * Run p->argv to completion or timeout, in a session of its own (so it
 * leads a process group) with stdin on /dev/null, the signals the worker
 * handles back at their defaults, in p->cwd. Returns 0 when the program
 * ran (p->exit_code holds its status, 128+N for a signal, p->timed_out
 * set on timeout) and -1 when it could not be started (p->spawn_errno).
 * Whatever the child left running in its process group is killed before
 * return (common/child.c).
 */
int wk_proc_run(struct wk_ctx *ctx, struct wk_proc *p)
{
	static const int dfl[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, 0};
	struct run r;
	struct sl_child c;
	int rc;

	p->exit_code = -1;
	p->term_signal = 0;
	p->timed_out = 0;
	p->spawn_errno = 0;
	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	r.p = p;
	r.start = wk_now();
	if (p->on_line) {
		r.la.buf = malloc(WK_EVENT_LINE_MAX + 1);
		if (!r.la.buf)
			abort();
	}
	memset(&c, 0, sizeof(c));
	c.argv = p->argv;
	c.envp = p->envp;
	c.cwd = p->cwd;
	c.new_session = 1;
	c.signals = dfl;
	c.merge_stderr = p->merge_stderr;
	c.timeout_s = p->timeout_s;
	c.kill_grace_s = WK_KILL_GRACE_S;
	c.kill_group_on_exit = 1;
	c.drain_s = 1.0;
	c.on_output = on_output;
	c.on_start = on_start;
	c.on_tick = on_tick;
	c.tick_s = 0.25;
	c.user = &r;
	rc = sl_child_run(&c);
	ctx->child_pgid = 0;
	if (rc < 0) {
		p->spawn_errno = c.spawn_errno;
		free(r.la.buf);
		return -1;
	}
	if (p->on_line && r.la.len && !r.la.overflow) {
		r.la.buf[r.la.len] = '\0';
		p->on_line(p->arg, r.la.buf, r.la.len);
	}
	p->timed_out = c.timed_out;
	if (WIFEXITED(c.status)) {
		p->exit_code = WEXITSTATUS(c.status);
	} else if (WIFSIGNALED(c.status)) {
		p->exit_code = 128 + WTERMSIG(c.status);
		p->term_signal = WTERMSIG(c.status);
	}
	free(r.la.buf);
	return 0;
}

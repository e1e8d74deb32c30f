/*
 * The `tui` sink: the live dashboard on a terminal. The transcript (the
 * rules of plugins/sinks/render.c, shared with `plain`) goes into the
 * normal scrollback and is never rewritten; a compact status panel
 * (model.c) is pinned below it and redrawn. event() runs on the engine's
 * thread (and others): it only updates the model and queues transcript
 * text under the mutex. Every terminal write happens in write_frame(),
 * on the one render thread this sink owns, at most ten times a second
 * and only when something changed. Crash signals restore the terminal;
 * SIGINT and SIGTERM stay cmd_run's. Also the module's descriptor.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tui.h"
#include "term.h"
/* compiled into this module too (libc only) */
#include "common/termsafe.h"

#define TICK_MS 100
#define FLUSH_WAIT_S 3
#define ERR_LINE_MAX 4096

struct buf {
	char *p;
	size_t len, cap;
	int oom;
};

struct tui {
	const struct sbxloop_host *host;
	int fd;
	struct tui_term term;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int started;
	/* under lock */
	struct tui_model model;
	struct render entry; /* the transcript entry being built */
	struct buf queue;    /* styled transcript text not yet written */
	int dirty;
	int stop;
	int final_req;
	int final_done;
	unsigned long redraws;
	/* keyboard and stderr: the reader thread (in and the model's
	 * chat under lock) */
	struct tui_input in;
	int chat_on;            /* the input line is shown and read */
	int err_rd;             /* the stderr pipe's read end, -1 none */
	struct buf err_partial; /* a stderr line not yet ended */
	struct buf outbox;      /* lines to send, each NUL-ended */
	pthread_t reader;
	int reader_started;
	int reader_stop;
	/* render thread only */
	struct buf frame;
	struct buf panel;             /* the panel as last written */
	size_t line_w[TUI_MAX_LINES]; /* its lines' widths */
	size_t shown;                 /* its lines on screen, 0 none */
	int width;
	int closed; /* the final panel is written: transcript only */
};

static volatile sig_atomic_t resized;
/* sgr0 and cnorm, written by the crash handler with write(2) */
static char reset_seq[128];
static size_t reset_len;
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
static struct sigaction old_crash[4], old_winch;
/* put back by destroy and by the crash handler (async-signal-safe) */
static struct termios saved_tio;
static volatile sig_atomic_t tio_changed;
static volatile sig_atomic_t saved_err = -1; /* the real stderr, dup'ed */

/* --------------------------------------------------------------- bytes */

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *grown = realloc(b->p, cap);

		if (!grown) {
			b->oom = 1;
			return;
		}
		b->p = grown;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* A RENDER_* style as this terminal's sequences (after an sgr0). */
static void add_style(struct buf *b, const struct tui_term *t, int style)
{
	buf_adds(b, t->sgr0);
	if (style & RENDER_DIM)
		buf_adds(b, t->dim);
	if (style & RENDER_BOLD)
		buf_adds(b, t->bold);
	if (t->color && (style & RENDER_COLOR_MASK))
		buf_adds(b, t->fg[(style & RENDER_COLOR_MASK) - 1]);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int term_width(int fd, const struct tui_term *t)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return t->cols > 0 ? t->cols : 80;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------- signals */

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

static void on_crash(int sig)
{
	if (tio_changed)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	if (saved_err >= 0)
		dup2(saved_err, STDERR_FILENO);
	if (write(STDOUT_FILENO, reset_seq, reset_len) < 0) {
		/* nothing left to try */
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_signals(void)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, &old_winch);
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND;
	for (i = 0; i < 4; i++)
		sigaction(crash_signals[i], &sa, &old_crash[i]);
}

static void restore_signals(void)
{
	size_t i;

	sigaction(SIGWINCH, &old_winch, NULL);
	for (i = 0; i < 4; i++)
		sigaction(crash_signals[i], &old_crash[i], NULL);
}

/* -------------------------------------------------- keyboard, stderr */

/* Queue one line of stderr for the transcript (lock held). */
static void queue_err_line(struct tui *u, const char *line, size_t n)
{
	char *safe = sl_term_safe_n(line, n, 0);

	if (!safe)
		return;
	add_style(&u->queue, &u->term, 0);
	buf_adds(&u->queue, safe);
	buf_adds(&u->queue, u->term.sgr0);
	buf_adds(&u->queue, "\r\n");
	free(safe);
	u->dirty = 1;
}

/* Split what stderr gave into lines for the transcript (lock held). */
static void take_err(struct tui *u, const char *p, size_t n, int final)
{
	struct buf *b = &u->err_partial;
	size_t i, start = 0;

	buf_add(b, p, n);
	if (b->oom) {
		buf_free(b);
		return;
	}
	for (i = 0; i < b->len; i++)
		if (b->p[i] == '\n') {
			queue_err_line(u, b->p + start, i - start);
			start = i + 1;
		}
	if (start < b->len && (final || b->len - start > ERR_LINE_MAX)) {
		queue_err_line(u, b->p + start, b->len - start);
		start = b->len;
	}
	memmove(b->p, b->p + start, b->len - start);
	b->len -= start;
	if (b->p)
		b->p[b->len] = '\0';
}

/*
 * The lines Enter queued, sent through the host on the render thread:
 * the reader thread never waits for the store, so it always drains the
 * stderr pipe (a writer blocked on a full pipe could hold the store).
 */
static void send_lines(struct tui *u)
{
	struct buf out;
	size_t at = 0;

	pthread_mutex_lock(&u->lock);
	out = u->outbox;
	memset(&u->outbox, 0, sizeof(u->outbox));
	pthread_mutex_unlock(&u->lock);
	while (at < out.len) {
		const char *text = out.p + at;
		struct sbxloop_error err = {0, ""};
		int64_t id = 0;
		int rc = u->host->chat_post(u->host, text, &id, &err);

		pthread_mutex_lock(&u->lock);
		if (rc < 0)
			tui_model_set_notice(&u->model, err.message);
		else
			tui_model_chat_queued(&u->model, (long long)id, text);
		u->dirty = 1;
		pthread_mutex_unlock(&u->lock);
		at += strlen(text) + 1;
	}
	buf_free(&out);
}

static void read_keys(struct tui *u)
{
	unsigned char keys[256];
	ssize_t n = read(STDIN_FILENO, keys, sizeof(keys)), i;

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			u->chat_on = 0; /* the terminal went away */
		return;
	}
	pthread_mutex_lock(&u->lock);
	for (i = 0; i < n; i++) {
		int k = tui_input_feed(&u->in, keys[i]);

		if (k == TUI_KEY_ENTER) {
			buf_add(&u->outbox, u->in.text, u->in.len + 1);
			tui_input_clear(&u->in);
			pthread_cond_broadcast(&u->cond);
		}
		if (k != TUI_KEY_NONE)
			u->dirty = 1;
	}
	pthread_mutex_unlock(&u->lock);
}

static void read_err(struct tui *u)
{
	char chunk[4096];
	ssize_t n = read(u->err_rd, chunk, sizeof(chunk));

	if (n <= 0)
		return;
	pthread_mutex_lock(&u->lock);
	take_err(u, chunk, (size_t)n, 0);
	pthread_mutex_unlock(&u->lock);
}

static void *reader_main(void *arg)
{
	struct tui *u = arg;

	for (;;) {
		struct pollfd p[2];
		nfds_t n = 0;
		int stop;

		pthread_mutex_lock(&u->lock);
		stop = u->reader_stop;
		pthread_mutex_unlock(&u->lock);
		if (stop)
			break;
		if (u->chat_on)
			p[n++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
		if (u->err_rd >= 0)
			p[n++] = (struct pollfd){u->err_rd, POLLIN, 0};
		if (poll(p, n, TICK_MS) <= 0)
			continue;
		for (nfds_t i = 0; i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP)))
				continue;
			if (p[i].fd == STDIN_FILENO)
				read_keys(u);
			else
				read_err(u);
		}
	}
	return NULL;
}

/*
 * cbreak on a terminal stdin when chat is on and the host can take a
 * message: keys come one at a time, unechoed; Ctrl-C still signals.
 */
static void keyboard_open(struct tui *u)
{
	struct termios raw;

	if (!SBXLOOP_HAS_SLOT(u->host, struct sbxloop_host, chat_post) ||
	    !u->host->config_bool(u->host, "chat", 1) ||
	    !isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return;
	raw = saved_tio;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) < 0)
		return;
	tio_changed = 1;
	u->chat_on = 1;
	u->model.input = u->in.text;
}

static void keyboard_close(struct tui *u)
{
	if (tio_changed) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		tio_changed = 0;
	}
	u->chat_on = 0;
	u->model.input = NULL;
}

/* fd 2 becomes a pipe this sink reads; the real one is kept aside. */
static void stderr_open(struct tui *u)
{
	int fds[2], keep;

	u->err_rd = -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	keep = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (keep < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		if (keep >= 0)
			close(keep);
		close(fds[0]);
		close(fds[1]);
		return;
	}
	close(fds[1]);
	saved_err = keep;
	u->err_rd = fds[0];
}

/* The real stderr back, and what the pipe still held into the queue. */
static void stderr_close(struct tui *u)
{
	char chunk[4096];
	ssize_t n;

	if (u->err_rd < 0)
		return;
	dup2(saved_err, STDERR_FILENO);
	close(saved_err);
	saved_err = -1;
	fcntl(u->err_rd, F_SETFL, O_NONBLOCK);
	pthread_mutex_lock(&u->lock);
	while ((n = read(u->err_rd, chunk, sizeof(chunk))) > 0)
		take_err(u, chunk, (size_t)n, 0);
	take_err(u, "", 0, 1);
	pthread_mutex_unlock(&u->lock);
	close(u->err_rd);
	u->err_rd = -1;
}

/* --------------------------------------------------------------- frame */

/* The panel as bytes, each line clipped to width - 1 characters. */
static void compose_panel(struct tui *u, const struct tui_lines *lines)
{
	size_t i, max = u->width > 1 ? (size_t)u->width - 1 : 1;

	u->panel.len = 0;
	u->panel.oom = 0;
	for (i = 0; i < lines->n; i++) {
		const char *text = lines->line[i].text, *from;
		char *safe = sl_term_safe(text, 0);
		size_t n, chars;

		if (!safe) {
			u->panel.oom = 1;
			return;
		}
		n = strlen(safe);
		chars = render_utf8_len(safe, n);
		from = safe;
		if (chars > max && lines->line[i].tail) {
			/* keep the end: where the user types */
			from += render_utf8_bytes(safe, n, chars - (max - 1));
			n = strlen(from);
			chars = max;
		} else if (chars > max) {
			n = render_utf8_bytes(safe, n, max - 1);
			chars = max;
		}
		if (i)
			buf_adds(&u->panel, "\r\n");
		add_style(&u->panel, &u->term, lines->line[i].style);
		if (from != safe)
			buf_adds(&u->panel, "\xe2\x80\xa6");
		buf_add(&u->panel, from, n);
		if (from == safe && n < strlen(safe))
			buf_adds(&u->panel, "\xe2\x80\xa6");
		buf_adds(&u->panel, u->term.sgr0);
		u->line_w[i] = chars;
		free(safe);
	}
}

/*
 * Rows the panel on screen takes now: its lines, rewrapped when the
 * terminal got narrower than they were drawn for.
 */
static size_t shown_rows(const struct tui *u, size_t n, int width)
{
	size_t i, rows = 0;

	for (i = 0; i < n; i++) {
		size_t w = u->line_w[i];

		rows += w && width > 0
				? (w + (size_t)width - 1) / (size_t)width
				: 1;
	}
	return rows;
}

/*
 * The one place that writes to the terminal: the queued transcript
 * above a fresh copy of the panel, skipped when nothing changed. The
 * cursor is hidden only while the frame is written.
 */
static void write_frame(struct tui *u)
{
	struct tui_lines lines;
	struct buf queue = {0};
	size_t old_n = u->shown, i, up = 0;
	char *old_panel = NULL;
	int final, width_changed = 0;

	pthread_mutex_lock(&u->lock);
	if (resized) {
		int w;

		resized = 0;
		w = term_width(u->fd, &u->term);
		width_changed = w != u->width;
		if (width_changed)
			up = shown_rows(u, old_n, w);
		u->width = w;
	}
	queue = u->queue;
	memset(&u->queue, 0, sizeof(u->queue));
	final = u->final_req && !u->closed;
	tui_model_panel(&u->model, now_s(), &lines);
	u->dirty = 0;
	pthread_mutex_unlock(&u->lock);

	if (u->closed) {
		if (queue.len)
			write_all(u->fd, queue.p, queue.len);
		buf_free(&queue);
		return;
	}
	if (u->panel.len)
		old_panel = strdup(u->panel.p);
	compose_panel(u, &lines);
	if (!queue.len && !final && !width_changed && old_panel &&
	    !u->panel.oom && !strcmp(old_panel, u->panel.p)) {
		free(old_panel);
		buf_free(&queue);
		return;
	}
	free(old_panel);
	if (!width_changed)
		up = old_n;
	u->frame.len = 0;
	u->frame.oom = 0;
	buf_adds(&u->frame, u->term.civis);
	if (old_n) {
		buf_adds(&u->frame, u->term.cr);
		for (i = 1; i < up; i++)
			buf_adds(&u->frame, u->term.cuu1);
		buf_adds(&u->frame, u->term.ed);
	}
	if (queue.len)
		buf_add(&u->frame, queue.p, queue.len);
	buf_add(&u->frame, u->panel.p ? u->panel.p : "", u->panel.len);
	if (final)
		buf_adds(&u->frame, "\r\n");
	buf_adds(&u->frame, u->term.cnorm);
	if (!u->frame.oom)
		write_all(u->fd, u->frame.p, u->frame.len);
	buf_free(&queue);
	u->shown = final ? 0 : lines.n;
	pthread_mutex_lock(&u->lock);
	u->redraws++;
	if (final) {
		u->closed = 1;
		u->final_done = 1;
		pthread_cond_broadcast(&u->cond);
	}
	pthread_mutex_unlock(&u->lock);
}

static void *render_main(void *arg)
{
	struct tui *u = arg;
	int stop = 0;

	while (!stop) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&u->lock);
		while (!u->stop && !(u->final_req && !u->final_done) &&
		       !u->outbox.len &&
		       pthread_cond_timedwait(&u->cond, &u->lock, &until) == 0)
			;
		stop = u->stop;
		if (stop)
			u->final_req = 1; /* the last frame keeps its panel */
		pthread_mutex_unlock(&u->lock);
		send_lines(u);
		write_frame(u);
	}
	return NULL;
}

/* ---------------------------------------------------------------- sink */

static void tui_destroy(void *ctx)
{
	struct tui *u = ctx;

	if (!u)
		return;
	if (u->reader_started) {
		pthread_mutex_lock(&u->lock);
		u->reader_stop = 1;
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->reader, NULL);
	}
	stderr_close(u);
	pthread_mutex_lock(&u->lock);
	keyboard_close(u);
	u->dirty = 1;
	pthread_mutex_unlock(&u->lock);
	if (u->started) {
		pthread_mutex_lock(&u->lock);
		u->stop = 1;
		pthread_cond_broadcast(&u->cond);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
		restore_signals();
		write_all(u->fd, reset_seq, reset_len);
		u->host->log(u->host, SBXLOOP_LOG_DEBUG,
			     "dashboard: %lu frames written", u->redraws);
	}
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	tui_model_release(&u->model);
	render_release(&u->entry);
	buf_free(&u->queue);
	buf_free(&u->frame);
	buf_free(&u->panel);
	buf_free(&u->err_partial);
	buf_free(&u->outbox);
	tui_term_release(&u->term);
	free(u);
}

static int tui_create(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err)
{
	const char *term = getenv("TERM");
	const char *nc = getenv("NO_COLOR");
	struct tui *u;
	int rc = 0;

	*ctx = NULL;
	if (!isatty(STDOUT_FILENO))
		return host->error_set(host, err, SBXLOOP_ERR,
				       "standard output is not a terminal");
	if (!term || !*term || !strcmp(term, "dumb"))
		return host->error_set(host, err, SBXLOOP_ERR, "TERM is %s",
				       term && *term ? "dumb" : "unset");
	u = calloc(1, sizeof(*u));
	if (!u)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "out of memory");
	u->host = host;
	u->fd = STDOUT_FILENO;
	u->err_rd = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	if (tui_term_load(&u->term, u->fd, !(nc && *nc)) < 0) {
		rc = host->error_set(host, err, SBXLOOP_ERR,
				     "terminal '%s' cannot draw the dashboard "
				     "(unknown to terminfo, or no cursor "
				     "movement)",
				     term);
		goto out;
	}
	snprintf(reset_seq, sizeof(reset_seq), "%s%s", u->term.sgr0,
		 u->term.cnorm);
	reset_len = strlen(reset_seq);
	u->width = term_width(u->fd, &u->term);
	u->model.budget_s =
		host->config_double(host, "budgets.max_wall_clock_s", 0);
	install_signals();
	if (pthread_create(&u->thread, NULL, render_main, u) != 0) {
		restore_signals();
		rc = host->error_set(host, err, SBXLOOP_ERR,
				     "cannot start the dashboard's thread");
		goto out;
	}
	u->started = 1;
	keyboard_open(u);
	stderr_open(u);
	if ((u->chat_on || u->err_rd >= 0) &&
	    pthread_create(&u->reader, NULL, reader_main, u) == 0)
		u->reader_started = 1;
	else {
		stderr_close(u);
		keyboard_close(u);
	}
	*ctx = u;
	return 0;
out:
	tui_destroy(u);
	return rc;
}

static int tui_event(void *ctx, const struct sbxloop_event *ev,
		     struct sbxloop_error *err)
{
	struct tui *u = ctx;
	cJSON *data = cJSON_Parse(ev->data_json ? ev->data_json : "{}");
	int style = 0, rc = 0;

	pthread_mutex_lock(&u->lock);
	if (tui_model_update(&u->model, ev, data))
		u->dirty = 1;
	render_reset(&u->entry);
	render_transcript(&u->entry, ev, data, &style);
	if (u->entry.oom) {
		rc = u->host->error_set(u->host, err, SBXLOOP_ENOMEM,
					"out of memory");
	} else if (u->entry.len) {
		/* agent text may carry escapes, \r or bidi overrides */
		char *safe = sl_term_safe_n(u->entry.text, u->entry.len,
					    SL_TERM_KEEP_NL);

		if (!safe) {
			rc = u->host->error_set(u->host, err, SBXLOOP_ENOMEM,
						"out of memory");
		} else {
			add_style(&u->queue, &u->term, style);
			buf_adds(&u->queue, safe);
			buf_adds(&u->queue, u->term.sgr0);
			buf_adds(&u->queue, "\r\n");
			free(safe);
		}
	}
	pthread_mutex_unlock(&u->lock);
	cJSON_Delete(data);
	return rc;
}

/* Write everything pending and leave the final panel, then a newline. */
static int tui_flush(void *ctx, struct sbxloop_error *err)
{
	struct tui *u = ctx;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FLUSH_WAIT_S;
	pthread_mutex_lock(&u->lock);
	if (!u->final_done) {
		u->final_req = 1;
		pthread_cond_broadcast(&u->cond);
		while (!u->final_done &&
		       pthread_cond_timedwait(&u->cond, &u->lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&u->lock);
	(void)err;
	return 0;
}

const struct sbxloop_sink_ops tui_sink_ops = {
	.struct_size = sizeof(struct sbxloop_sink_ops),
	.create = tui_create,
	.destroy = tui_destroy,
	.event = tui_event,
	.flush = tui_flush,
};

static const struct sbxloop_config_key tui_keys[] = {
	{NULL, 0, NULL, NULL, NULL},
};

static const struct sbxloop_component components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SINK,
		.name = "tui",
		.ops = &tui_sink_ops,
		.config_keys = tui_keys,
		.summary = "the live dashboard: the transcript above a "
			   "status panel pinned at the bottom of the terminal",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "tui",
		.version = "1.0",
		.components = components,
		.n_components = sizeof(components) / sizeof(components[0]),
};

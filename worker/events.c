/*
 * events.c - the worker's event stream and its small shared helpers.
 *
 * Owns the event envelope, the sorted compact JSON encoding every line
 * uses, the line-size cap and the two channels: the events file (append,
 * flushed per line) and the stdout mirror. Also holds the few string and
 * file helpers the rest of the worker shares. Called from every file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"
#include "common/json.h"

double wk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Round half away from zero to 1/scale; no libm needed. */
double wk_round(double v, double scale)
{
	double t = v * scale;
	long long k = (long long)(t >= 0 ? t + 0.5 : t - 0.5);

	return (double)k / scale;
}

char *wk_strdup(const char *s)
{
	char *p;

	if (!s)
		return NULL;
	p = strdup(s);
	if (!p)
		abort();
	return p;
}

char *wk_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

/*
 * Read a whole file (or stdin for "-") into a NUL-terminated buffer. More
 * than `max` bytes sets *too_big and fails, so a huge job never gets
 * buffered.
 */
char *wk_read_file(const char *path, size_t max, size_t *len, int *too_big)
{
	int fd, own = 0;
	char *buf = NULL;
	size_t used = 0, cap = 0;

	*too_big = 0;
	if (!strcmp(path, "-")) {
		fd = 0;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return NULL;
		own = 1;
	}
	for (;;) {
		ssize_t n;

		if (used + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;

			free(buf);
			if (own)
				close(fd);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > max) {
			*too_big = 1;
			free(buf);
			if (own)
				close(fd);
			errno = EFBIG;
			return NULL;
		}
	}
	if (own)
		close(fd);
	buf[used] = '\0';
	if (len)
		*len = used;
	return buf;
}

/* Start of the last `keep` bytes, moved forward past UTF-8 continuation
 * bytes so a clipped string never opens with half a character. */
const char *wk_utf8_tail(const char *s, size_t len, size_t keep)
{
	const char *p;

	if (len <= keep)
		return s;
	p = s + (len - keep);
	while (*p && ((unsigned char)*p & 0xC0) == 0x80)
		p++;
	return p;
}

int wk_events_open(struct wk_ctx *ctx, const char *path)
{
	ctx->events_fd =
		open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	return ctx->events_fd < 0 ? -1 : 0;
}

static void write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* a lost channel never fails the job */
		s += n;
		len -= (size_t)n;
	}
}

/* Replace every long string under `item` with its tail. */
static void clip_strings(cJSON *item, size_t keep)
{
	cJSON *c;

	for (c = item ? item->child : NULL; c; c = c->next) {
		if (cJSON_IsString(c) && strlen(c->valuestring) > keep) {
			const char *t = wk_utf8_tail(
				c->valuestring, strlen(c->valuestring), keep);
			char *s = wk_printf("...(clipped)...%s", t);

			cJSON_SetValuestring(c, s);
			free(s);
		} else {
			clip_strings(c, keep);
		}
	}
}

/*
 * The envelope, written directly in sorted key order (data, job_id,
 * run_id, ts, type, v): only `data` goes through cJSON, so an event
 * costs one print of its own data (the parse of an agent's stream is
 * mostly this).
 */
static char *encode(struct wk_ctx *ctx, const char *type, cJSON *data)
{
	const struct wk_job *job = ctx->job;
	char *body, *job_id, *run_id, *type_q, *line;

	sl_json_sort(data);
	body = cJSON_PrintUnformatted(data);
	job_id = sl_json_quote(job ? job->job_id : NULL);
	run_id = sl_json_quote(job ? job->run_id : "");
	type_q = sl_json_quote(type);
	if (!body || !job_id || !run_id || !type_q)
		abort();
	{
		char ts[48];
		const char *parts[] = {
			"{\"data\":",   body,   ",\"job_id\":", job_id,
			",\"run_id\":", run_id, ",\"ts\":",     ts,
			",\"type\":",   type_q, ",\"v\":1}"};
		size_t i, n = 0, len[11];

		snprintf(ts, sizeof(ts), "%.3f", wk_round(wk_now(), 1000.0));
		for (i = 0; i < 11; i++)
			n += len[i] = strlen(parts[i]);
		line = malloc(n + 2); /* room for the newline wk_emit adds */
		if (!line)
			abort();
		for (n = 0, i = 0; i < 11; i++) {
			memcpy(line + n, parts[i], len[i]);
			n += len[i];
		}
		line[n] = '\0';
	}
	free(body);
	free(job_id);
	free(run_id);
	free(type_q);
	return line;
}

/*
 * Emit one event; `data` is consumed (NULL means {}). A line over the cap
 * is retried with long strings clipped, then reduced to a marker, so no
 * consumer ever sees an unbounded line.
 */
void wk_emit(struct wk_ctx *ctx, const char *type, cJSON *data)
{
	char *line;

	if (!data)
		data = cJSON_CreateObject();
	line = encode(ctx, type, data);
	if (strlen(line) + 1 > WK_EVENT_LINE_MAX) {
		free(line);
		clip_strings(data, 4096);
		line = encode(ctx, type, data);
	}
	if (strlen(line) + 1 > WK_EVENT_LINE_MAX) {
		free(line);
		cJSON_Delete(data);
		data = cJSON_CreateObject();
		cJSON_AddTrueToObject(data, "clipped");
		line = encode(ctx, type, data);
	}
	cJSON_Delete(data);
	{
		size_t n = strlen(line);

		line[n] = '\n';
		if (ctx->holding && !ctx->fsync) {
			if (ctx->held_len + n + 1 > ctx->held_cap) {
				ctx->held_cap = (ctx->held_len + n + 1) * 2;
				ctx->held = realloc(ctx->held, ctx->held_cap);
				if (!ctx->held)
					abort();
			}
			memcpy(ctx->held + ctx->held_len, line, n + 1);
			ctx->held_len += n + 1;
		} else {
			if (ctx->events_fd >= 0) {
				write_all(ctx->events_fd, line, n + 1);
				if (ctx->fsync)
					fsync(ctx->events_fd);
			}
			write_all(1, line, n + 1);
		}
	}
	free(line);
}

void wk_events_hold(struct wk_ctx *ctx)
{
	ctx->holding = 1;
}

void wk_events_flush(struct wk_ctx *ctx)
{
	ctx->holding = 0;
	if (!ctx->held_len)
		return;
	if (ctx->events_fd >= 0)
		write_all(ctx->events_fd, ctx->held, ctx->held_len);
	write_all(1, ctx->held, ctx->held_len);
	ctx->held_len = 0;
}

/*
 * Files are synced only when SBXLOOP_WORKER_FSYNC asks (see write_result
 * in main.c): the host's store is what survives a crash.
 */
void wk_events_close(struct wk_ctx *ctx)
{
	wk_events_flush(ctx);
	free(ctx->held);
	ctx->held = NULL;
	ctx->held_cap = 0;
	if (ctx->events_fd >= 0) {
		if (ctx->fsync)
			fsync(ctx->events_fd);
		close(ctx->events_fd);
		ctx->events_fd = -1;
	}
}

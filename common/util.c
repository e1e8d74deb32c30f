/*
 * Core helpers: allocation, string buffers, files, clocks. Everything in
 * the core may call these; plugins never see them (they use the host
 * services table).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "common/json.h"

static void out_of_memory(size_t n)
{
	fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", n);
	abort();
}

void *sl_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		out_of_memory(n);
	return p;
}

void *sl_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory(n * size);
	return p;
}

void *sl_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		out_of_memory(n);
	return q;
}

char *sl_xstrdup(const char *s)
{
	return s ? sl_xstrndup(s, strlen(s)) : NULL;
}

char *sl_xstrndup(const char *s, size_t n)
{
	char *p = sl_xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *sl_xasprintf(const char *fmt, ...)
{
	struct sl_buf b = SL_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sl_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (!b.buf)
		return sl_xstrdup("");
	return sl_buf_detach(&b);
}

static void buf_grow(struct sl_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (b->cap * 2 > need)
		need = b->cap * 2;
	if (need < 64)
		need = 64;
	b->buf = sl_xrealloc(b->buf, need);
	b->cap = need;
}

void sl_buf_add(struct sl_buf *b, const char *s, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void sl_buf_add_json_str(struct sl_buf *b, const char *s)
{
	size_t len, n;

	if (!s) {
		sl_buf_add(b, "null", 4);
		return;
	}
	len = strlen(s);
	n = sl_json_escape(NULL, s, len);
	buf_grow(b, n + 2);
	b->buf[b->len++] = '"';
	b->len += sl_json_escape(b->buf + b->len, s, len);
	b->buf[b->len++] = '"';
	b->buf[b->len] = '\0';
}

void sl_buf_adds(struct sl_buf *b, const char *s)
{
	sl_buf_add(b, s, strlen(s));
}

void sl_buf_addc(struct sl_buf *b, char c)
{
	sl_buf_add(b, &c, 1);
}

void sl_buf_vaddf(struct sl_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sl_buf_addf(struct sl_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sl_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

const char *sl_buf_str(const struct sl_buf *b)
{
	return b->buf ? b->buf : "";
}

char *sl_buf_detach(struct sl_buf *b)
{
	char *p = b->buf ? b->buf : sl_xstrdup("");

	b->buf = NULL;
	b->len = b->cap = 0;
	return p;
}

void sl_buf_reset(struct sl_buf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

void sl_buf_release(struct sl_buf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

int sl_starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int sl_ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

size_t sl_levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t *row = sl_xcalloc(lb + 1, sizeof(*row));
	size_t result;

	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = diag + cost;

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	result = row[lb];
	free(row);
	return result;
}

double sl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double sl_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int sl_mkdirs(const char *path, unsigned mode)
{
	char *p = sl_xstrdup(path);
	char *s;
	int rc = 0;

	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		rc = -errno;
out:
	free(p);
	return rc;
}

/* All of `fd` (closed here), at most `max` bytes (0: no bound). */
static char *read_fd(int fd, size_t *len, size_t max)
{
	struct sl_buf b = SL_BUF_INIT;
	char chunk[8192];
	ssize_t n;
	int e;

	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (max && b.len + (size_t)n > max) {
			errno = EFBIG;
			goto fail;
		}
		sl_buf_add(&b, chunk, (size_t)n);
	}
	close(fd);
	if (len)
		*len = b.len;
	return sl_buf_detach(&b);
fail:
	e = errno;
	close(fd);
	sl_buf_release(&b);
	errno = e;
	return NULL;
}

char *sl_read_file(const char *path, size_t *len, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? NULL : read_fd(fd, len, max);
}

char *sl_read_regular_file(const char *path, size_t *len, size_t max)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	return read_fd(fd, len, max);
}

static int write_file(const char *path, const char *data, size_t len,
		      unsigned mode, int sync)
{
	char *tmp = sl_xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd, rc = 0;
	size_t off = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			close(fd);
			unlink(tmp);
			goto out;
		}
		off += (size_t)w;
	}
	if ((sync && fsync(fd) < 0) || close(fd) < 0) {
		rc = -errno;
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) < 0) {
		rc = -errno;
		unlink(tmp);
	}
out:
	free(tmp);
	return rc;
}

int sl_write_file_atomic(const char *path, const char *data, size_t len,
			 unsigned mode)
{
	return write_file(path, data, len, mode, 1);
}

int sl_write_file_replace(const char *path, const char *data, size_t len,
			  unsigned mode)
{
	return write_file(path, data, len, mode, 0);
}

int sl_error(struct sbxloop_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

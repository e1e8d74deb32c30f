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

static void out_of_memory(size_t n)
{
	fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", n);
	abort();
}

void *sbx_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		out_of_memory(n);
	return p;
}

void *sbx_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory(n * size);
	return p;
}

void *sbx_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		out_of_memory(n);
	return q;
}

char *sbx_xstrdup(const char *s)
{
	return s ? sbx_xstrndup(s, strlen(s)) : NULL;
}

char *sbx_xstrndup(const char *s, size_t n)
{
	char *p = sbx_xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *sbx_xasprintf(const char *fmt, ...)
{
	struct sbx_buf b = SBX_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbx_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (!b.buf)
		return sbx_xstrdup("");
	return sbx_buf_detach(&b);
}

static void buf_grow(struct sbx_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (b->cap * 2 > need)
		need = b->cap * 2;
	if (need < 64)
		need = 64;
	b->buf = sbx_xrealloc(b->buf, need);
	b->cap = need;
}

void sbx_buf_add(struct sbx_buf *b, const char *s, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void sbx_buf_adds(struct sbx_buf *b, const char *s)
{
	sbx_buf_add(b, s, strlen(s));
}

void sbx_buf_addc(struct sbx_buf *b, char c)
{
	sbx_buf_add(b, &c, 1);
}

void sbx_buf_vaddf(struct sbx_buf *b, const char *fmt, va_list ap)
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

void sbx_buf_addf(struct sbx_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbx_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

const char *sbx_buf_str(const struct sbx_buf *b)
{
	return b->buf ? b->buf : "";
}

char *sbx_buf_detach(struct sbx_buf *b)
{
	char *p = b->buf ? b->buf : sbx_xstrdup("");

	b->buf = NULL;
	b->len = b->cap = 0;
	return p;
}

void sbx_buf_reset(struct sbx_buf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

void sbx_buf_release(struct sbx_buf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

int sbx_starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int sbx_ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

size_t sbx_levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t *row = sbx_xcalloc(lb + 1, sizeof(*row));
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

double sbx_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double sbx_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int sbx_mkdirs(const char *path, unsigned mode)
{
	char *p = sbx_xstrdup(path);
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

char *sbx_read_file(const char *path, size_t *len, size_t max)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char chunk[8192];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (max && b.len + n > max) {
			fclose(f);
			sbx_buf_release(&b);
			errno = EFBIG;
			return NULL;
		}
		sbx_buf_add(&b, chunk, n);
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		sbx_buf_release(&b);
		errno = e;
		return NULL;
	}
	fclose(f);
	if (len)
		*len = b.len;
	return sbx_buf_detach(&b);
}

int sbx_write_file_atomic(const char *path, const char *data, size_t len,
			  unsigned mode)
{
	char *tmp = sbx_xasprintf("%s.tmp.%ld", path, (long)getpid());
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
	if (fsync(fd) < 0 || close(fd) < 0) {
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

int sbx_error(struct sbxloop_error *err, int code, const char *fmt, ...)
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

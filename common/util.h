/*
 * Small helpers shared by the core: allocation that dies on exhaustion,
 * a growable string buffer, string utilities. Private to the core.
 */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdarg.h>
#include <stddef.h>

#include <sbxloop/plugin.h>

#define SBX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Allocation: these never return NULL; out of memory ends the process. */
void *sbx_xmalloc(size_t n);
void *sbx_xcalloc(size_t n, size_t size);
void *sbx_xrealloc(void *p, size_t n);
char *sbx_xstrdup(const char *s); /* NULL in, NULL out */
char *sbx_xstrndup(const char *s, size_t n);
char *sbx_xasprintf(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);

struct sbx_buf {
	char *buf; /* always NUL-terminated once anything was added */
	size_t len;
	size_t cap;
};
#define SBX_BUF_INIT                                                          \
	{                                                                     \
		NULL, 0, 0                                                    \
	}

void sbx_buf_add(struct sbx_buf *b, const char *s, size_t n);
void sbx_buf_adds(struct sbx_buf *b, const char *s);
void sbx_buf_addc(struct sbx_buf *b, char c);
void sbx_buf_addf(struct sbx_buf *b, const char *fmt, ...)
	SBXLOOP_PRINTF(2, 3);
void sbx_buf_vaddf(struct sbx_buf *b, const char *fmt, va_list ap)
	SBXLOOP_PRINTF(2, 0);
const char *sbx_buf_str(const struct sbx_buf *b); /* "" when empty */
char *sbx_buf_detach(struct sbx_buf *b);          /* caller frees */
void sbx_buf_reset(struct sbx_buf *b);
void sbx_buf_release(struct sbx_buf *b);

int sbx_starts_with(const char *s, const char *prefix);
int sbx_ends_with(const char *s, const char *suffix);
/* Edit distance, for "did you mean" suggestions. */
size_t sbx_levenshtein(const char *a, const char *b);
/* Wall clock as Unix epoch seconds. */
double sbx_now(void);
/* Monotonic seconds. */
double sbx_monotonic(void);
/* mkdir -p; 0 or -errno. */
int sbx_mkdirs(const char *path, unsigned mode);
/* Read a whole file (caller frees); NULL and errno on failure. */
char *sbx_read_file(const char *path, size_t *len, size_t max);
/* Write a file atomically (temp + fsync + rename); 0 or -errno. */
int sbx_write_file_atomic(const char *path, const char *data, size_t len,
			  unsigned mode);

/* Fill an error object without a host (core-internal use). */
int sbx_error(struct sbxloop_error *err, int code, const char *fmt, ...)
	SBXLOOP_PRINTF(3, 4);

#endif

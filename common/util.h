/*
 * Small helpers shared by the core: allocation that dies on exhaustion,
 * a growable string buffer, string utilities. Private to the core.
 */
#ifndef SL_UTIL_H
#define SL_UTIL_H

#include <stdarg.h>
#include <stddef.h>

#include <sbxloop/plugin.h>

#define SL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Allocation: these never return NULL; out of memory ends the process. */
void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t n, size_t size);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s); /* NULL in, NULL out */
char *sl_xstrndup(const char *s, size_t n);
char *sl_xasprintf(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);

struct sl_buf {
	char *buf; /* always NUL-terminated once anything was added */
	size_t len;
	size_t cap;
};
#define SL_BUF_INIT                                                           \
	{                                                                     \
		NULL, 0, 0                                                    \
	}

void sl_buf_add(struct sl_buf *b, const char *s, size_t n);
void sl_buf_adds(struct sl_buf *b, const char *s);
void sl_buf_addc(struct sl_buf *b, char c);
void sl_buf_addf(struct sl_buf *b, const char *fmt, ...) SBXLOOP_PRINTF(2, 3);
void sl_buf_vaddf(struct sl_buf *b, const char *fmt, va_list ap)
	SBXLOOP_PRINTF(2, 0);
/* `s` as a quoted JSON string ("null" for NULL), escaped by json.h. */
void sl_buf_add_json_str(struct sl_buf *b, const char *s);
const char *sl_buf_str(const struct sl_buf *b); /* "" when empty */
char *sl_buf_detach(struct sl_buf *b);          /* caller frees */
void sl_buf_reset(struct sl_buf *b);
void sl_buf_release(struct sl_buf *b);

int sl_starts_with(const char *s, const char *prefix);
int sl_ends_with(const char *s, const char *suffix);
/* Edit distance, for "did you mean" suggestions. */
size_t sl_levenshtein(const char *a, const char *b);
/* Wall clock as Unix epoch seconds. */
double sl_now(void);
/* Monotonic seconds. */
double sl_monotonic(void);
/* mkdir -p; 0 or -errno. */
int sl_mkdirs(const char *path, unsigned mode);
/* Read a whole file (caller frees); NULL and errno on failure. */
char *sl_read_file(const char *path, size_t *len, size_t max);
/*
 * The same for a file someone else may have put there (an agent): only a
 * regular file is read (symbolic links followed), and a FIFO or device
 * in its place is refused (EINVAL) without waiting for a writer.
 */
char *sl_read_regular_file(const char *path, size_t *len, size_t max);
/* Write a file atomically (temp + fsync + rename); 0 or -errno. */
int sl_write_file_atomic(const char *path, const char *data, size_t len,
			 unsigned mode);
/*
 * The same without the fsync: a reader never sees half the file, and a
 * kill of any process loses nothing, but a power loss may leave the old
 * text (or none). For what is remade when lost; 0 or -errno.
 */
int sl_write_file_replace(const char *path, const char *data, size_t len,
			  unsigned mode);

/* Fill an error object without a host (core-internal use). */
int sl_error(struct sbxloop_error *err, int code, const char *fmt, ...)
	SBXLOOP_PRINTF(3, 4);

#endif

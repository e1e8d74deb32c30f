/*
 * Private to the sinks and tui modules: the transcript rules both
 * compile in (render.c). A style is a set of RENDER_* bits; each sink
 * turns it into its own terminal sequences.
 */
#ifndef SBXLOOP_SINKS_RENDER_H
#define SBXLOOP_SINKS_RENDER_H

#include <stddef.h>

#include <cjson/cJSON.h>
#include <sbxloop/sink.h>

/* colours are the ANSI numbers plus one; 0 is no colour */
#define RENDER_COLOR_MASK 0x0f
#define RENDER_RED (1 + 1)
#define RENDER_GREEN (2 + 1)
#define RENDER_YELLOW (3 + 1)
#define RENDER_BLUE (4 + 1)
#define RENDER_MAGENTA (5 + 1)
#define RENDER_CYAN (6 + 1)
#define RENDER_DIM 0x10
#define RENDER_BOLD 0x20

/* The text being built; zero-initialise, render_release() when done. */
struct render {
	char *text; /* NUL-terminated once anything was added */
	size_t len;
	size_t cap;
	int oom; /* an allocation failed: the text is incomplete */
};

void render_reset(struct render *r);
void render_release(struct render *r);

/*
 * Append the transcript entry of `ev` (data parsed from ev->data_json),
 * or nothing when a person watching the run is not shown it; *style is
 * set whenever text is added.
 */
void render_transcript(struct render *r, const struct sbxloop_event *ev,
		       const cJSON *data, int *style);
/* Append the dense line of `ev`; its style is render_dense_style(). */
void render_dense(struct render *r, const struct sbxloop_event *ev,
		  const cJSON *data);
int render_dense_style(const char *type, const cJSON *data);
/* The colour of a task state (pending dim, executing cyan, ...). */
int render_task_style(const char *state);

/* Bytes of the first `chars` UTF-8 characters of s[0..n). */
size_t render_utf8_bytes(const char *s, size_t n, size_t chars);
/* UTF-8 characters in s[0..n). */
size_t render_utf8_len(const char *s, size_t n);
/*
 * One line of at most `max` characters: whitespace runs become one
 * space when `collapse`, else each newline becomes a space; longer text
 * is cut (`elide` = 0) or loses its middle to "…". Malloc'd (caller
 * frees); NULL on exhaustion.
 */
char *render_one_line(const char *s, size_t max, int collapse, int elide);

#endif

/*
 * Text made safe to write to a terminal: control characters, bidi
 * overrides and invalid UTF-8 become visible escapes. Shared by the host
 * (every print of agent or stored text) and the sinks plugin (the
 * transcript and `logs`); libc only, so a plugin can compile it in.
 */
#ifndef SBXLOOP_TERMSAFE_H
#define SBXLOOP_TERMSAFE_H

#include <stddef.h>

/* Keep '\n' and '\t' as they are (text of several lines). */
#define SL_TERM_KEEP_NL 1u
/*
 * The text is JSON: write the escapes as JSON \uXXXX escapes, so the
 * JSON still means the same text (an invalid byte becomes \ufffd).
 */
#define SL_TERM_JSON 2u

/*
 * A copy of text[0..len) in which every C0 control (but '\n' and '\t'
 * with SL_TERM_KEEP_NL), DEL, every C1 control (U+0080..U+009F), the
 * bidi embeddings, overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069), the line and paragraph separators (U+2028, U+2029)
 * and every byte that is not part of valid UTF-8 is written as a
 * visible escape: `\r`, `\n`, `\t`, `\x1b`, `\u202e`. Other valid UTF-8
 * is copied unchanged, and so is the backslash. Malloc'd, NUL-terminated
 * (caller frees with free()); NULL when memory is exhausted.
 */
char *sl_term_safe_n(const char *text, size_t len, unsigned flags);
/* The same for a NUL-terminated text; NULL in, NULL out. */
char *sl_term_safe(const char *text, unsigned flags);
/* Nonzero when sl_term_safe() would change nothing. */
int sl_term_is_safe(const char *text, size_t len, unsigned flags);

#endif

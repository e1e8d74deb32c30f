/*
 * Secret redaction and logging for the whole process. Every line that
 * leaves the host (log, error, event, stored row) passes through
 * sl_redact() first.
 */
#ifndef SL_REDACT_H
#define SL_REDACT_H

#include <stdio.h>

#include <sbxloop/plugin.h>

#include "common/termsafe.h"

#define SL_REDACTED "***"

/*
 * Register a secret value (copied); values under 4 bytes are ignored.
 * Its JSON-escaped form, when different, is masked too.
 */
void sl_secret_register(const char *value);
/* Register the values of the token variables the host knows about. */
void sl_secret_register_env(void);
/* Newly allocated copy of text with every known secret masked. */
char *sl_redact(const char *text);
/* The same, or NULL when text holds no known secret (nothing copied). */
char *sl_redact_if_needed(const char *text);
/*
 * Text as it may be shown on a terminal: secrets masked, then control
 * characters escaped (termsafe.h; flags SL_TERM_*). Caller frees.
 */
char *sl_shown(const char *text, unsigned flags);
/*
 * Print to f, formatted, through sl_shown(..., SL_TERM_KEEP_NL): the
 * call for every line of agent or stored text the CLI prints.
 */
void sl_print(FILE *f, const char *fmt, ...) SBXLOOP_PRINTF(2, 3);
/* Mask secrets in place within a fixed buffer (error messages). */
void sl_redact_inplace(char *buf, size_t size);
/* Forget every registered secret (tests, exit). */
void sl_secret_clear(void);

void sl_log_set_level(enum sbxloop_log_level lvl);
void sl_log(enum sbxloop_log_level lvl, const char *fmt, ...)
	SBXLOOP_PRINTF(2, 3);
void sl_vlog(enum sbxloop_log_level lvl, const char *fmt, va_list ap)
	SBXLOOP_PRINTF(2, 0);

#endif

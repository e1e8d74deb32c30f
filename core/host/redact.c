/*
 * The process-wide secret registry and the logging call. Secrets are
 * registered by the CLI at start (token variables) and by plugins through
 * the host table; sl_redact() masks them everywhere output is produced.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/redact.h"
#include "common/agents.h"
#include "common/termsafe.h"
#include "common/util.h"

/* Tokens besides the agents' model tokens (common/agents.h). */
static const char *const other_token_env_names[] = {
	SL_GH_TOKEN_ENV,
	SL_GH_TOKEN_ENV_ALT,
	"DISCORD_BOT_TOKEN",
	NULL,
};

static pthread_mutex_t secrets_lock = PTHREAD_MUTEX_INITIALIZER;
static char **secrets;
static size_t n_secrets;
static enum sbxloop_log_level log_threshold = SBXLOOP_LOG_WARN;

static void add_locked(const char *value)
{
	size_t i;

	for (i = 0; i < n_secrets; i++)
		if (strcmp(secrets[i], value) == 0)
			return;
	secrets = sl_xrealloc(secrets, (n_secrets + 1) * sizeof(*secrets));
	secrets[n_secrets++] = sl_xstrdup(value);
}

/*
 * The value as it appears inside a JSON string (cJSON's escapes), or
 * NULL when that is the value itself: stored rows and events are JSON
 * text, and a secret holding a quote or a backslash must match there.
 */
static char *json_form(const char *value)
{
	static const char short_escaped[] = "\b\f\n\r\t";
	static const char short_letters[] = "bfnrt";
	struct sl_buf b = SL_BUF_INIT;
	const unsigned char *p;
	int changed = 0;

	for (p = (const unsigned char *)value; *p; p++) {
		if (*p == '"' || *p == '\\') {
			sl_buf_addc(&b, '\\');
			sl_buf_addc(&b, (char)*p);
		} else if (*p < 0x20) {
			const char *shortform =
				strchr(short_escaped, (char)*p);

			if (shortform)
				sl_buf_addf(&b, "\\%c",
					    short_letters[shortform -
							  short_escaped]);
			else
				sl_buf_addf(&b, "\\u%04x", *p);
		} else {
			sl_buf_addc(&b, (char)*p);
			continue;
		}
		changed = 1;
	}
	if (!changed) {
		sl_buf_release(&b);
		return NULL;
	}
	return sl_buf_detach(&b);
}

void sl_secret_register(const char *value)
{
	char *json;

	if (!value || strlen(value) < 4)
		return;
	json = json_form(value);
	pthread_mutex_lock(&secrets_lock);
	add_locked(value);
	if (json)
		add_locked(json);
	pthread_mutex_unlock(&secrets_lock);
	free(json);
}

void sl_secret_register_env(void)
{
	size_t i;

	for (i = 0; sl_model_tokens[i].env; i++)
		sl_secret_register(getenv(sl_model_tokens[i].env));
	for (i = 0; other_token_env_names[i]; i++)
		sl_secret_register(getenv(other_token_env_names[i]));
}

void sl_secret_clear(void)
{
	size_t i;

	pthread_mutex_lock(&secrets_lock);
	for (i = 0; i < n_secrets; i++)
		free(secrets[i]);
	free(secrets);
	secrets = NULL;
	n_secrets = 0;
	pthread_mutex_unlock(&secrets_lock);
}

char *sl_redact(const char *text)
{
	char *r = sl_redact_if_needed(text);

	return r ? r : sl_xstrdup(text);
}

char *sl_redact_if_needed(const char *text)
{
	struct sl_buf b = SL_BUF_INIT;
	const char *p;
	size_t i;

	if (!text)
		return NULL;
	pthread_mutex_lock(&secrets_lock);
	/* Fast path: most text holds no secret at all. */
	for (i = 0; i < n_secrets; i++)
		if (strstr(text, secrets[i]))
			break;
	if (i == n_secrets) {
		pthread_mutex_unlock(&secrets_lock);
		return NULL;
	}
	p = text;
	while (*p) {
		int hit = 0;

		for (i = 0; i < n_secrets; i++) {
			size_t n = strlen(secrets[i]);

			if (*p == secrets[i][0] &&
			    strncmp(p, secrets[i], n) == 0) {
				sl_buf_adds(&b, SL_REDACTED);
				p += n;
				hit = 1;
				break;
			}
		}
		if (!hit) {
			/* copy up to the next byte that starts a secret */
			const char *q = p + 1;

			while (*q) {
				for (i = 0; i < n_secrets; i++)
					if (*q == secrets[i][0])
						break;
				if (i < n_secrets)
					break;
				q++;
			}
			sl_buf_add(&b, p, (size_t)(q - p));
			p = q;
		}
	}
	pthread_mutex_unlock(&secrets_lock);
	return b.buf ? sl_buf_detach(&b) : sl_xstrdup("");
}

char *sl_shown(const char *text, unsigned flags)
{
	char *clean = sl_redact(text ? text : "");
	char *safe = sl_term_safe(clean, flags);

	free(clean);
	if (!safe) {
		fputs("fatal: out of memory\n", stderr);
		abort();
	}
	return safe;
}

void sl_print(FILE *f, const char *fmt, ...)
{
	struct sl_buf b = SL_BUF_INIT;
	char *safe;
	va_list ap;

	va_start(ap, fmt);
	sl_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	safe = sl_shown(sl_buf_str(&b), SL_TERM_KEEP_NL);
	fputs(safe, f);
	free(safe);
	sl_buf_release(&b);
}

void sl_redact_inplace(char *buf, size_t size)
{
	char *r = sl_redact(buf);

	snprintf(buf, size, "%s", r);
	free(r);
}

void sl_log_set_level(enum sbxloop_log_level lvl)
{
	log_threshold = lvl;
}

void sl_vlog(enum sbxloop_log_level lvl, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {"debug", "info", "warning",
					     "error"};
	struct sl_buf b = SL_BUF_INIT;
	char *clean;

	if (lvl < log_threshold)
		return;
	sl_buf_vaddf(&b, fmt, ap);
	clean = sl_shown(sl_buf_str(&b), SL_TERM_KEEP_NL);
	fprintf(stderr, "%s: %s\n", prefix[lvl], clean);
	free(clean);
	sl_buf_release(&b);
}

void sl_log(enum sbxloop_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sl_vlog(lvl, fmt, ap);
	va_end(ap);
}

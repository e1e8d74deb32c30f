/*
 * The process-wide secret registry and the logging call. Secrets are
 * registered by the CLI at start (token variables) and by plugins through
 * the host table; sbx_redact() masks them everywhere output is produced.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/redact.h"
#include "common/termsafe.h"
#include "common/util.h"

const char *const sbx_token_env_names[] = {
	"COPILOT_GITHUB_TOKEN", "GH_TOKEN",
	"GITHUB_TOKEN",         "ANTHROPIC_API_KEY",
	"OPENAI_API_KEY",       "GEMINI_API_KEY",
	"DISCORD_BOT_TOKEN",    NULL,
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
	secrets = sbx_xrealloc(secrets, (n_secrets + 1) * sizeof(*secrets));
	secrets[n_secrets++] = sbx_xstrdup(value);
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
	struct sbx_buf b = SBX_BUF_INIT;
	const unsigned char *p;
	int changed = 0;

	for (p = (const unsigned char *)value; *p; p++) {
		if (*p == '"' || *p == '\\') {
			sbx_buf_addc(&b, '\\');
			sbx_buf_addc(&b, (char)*p);
		} else if (*p < 0x20) {
			const char *shortform =
				strchr(short_escaped, (char)*p);

			if (shortform)
				sbx_buf_addf(&b, "\\%c",
					     short_letters[shortform -
							   short_escaped]);
			else
				sbx_buf_addf(&b, "\\u%04x", *p);
		} else {
			sbx_buf_addc(&b, (char)*p);
			continue;
		}
		changed = 1;
	}
	if (!changed) {
		sbx_buf_release(&b);
		return NULL;
	}
	return sbx_buf_detach(&b);
}

void sbx_secret_register(const char *value)
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

void sbx_secret_register_env(void)
{
	size_t i;

	for (i = 0; sbx_token_env_names[i]; i++)
		sbx_secret_register(getenv(sbx_token_env_names[i]));
}

void sbx_secret_clear(void)
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

char *sbx_redact(const char *text)
{
	char *r = sbx_redact_if_needed(text);

	return r ? r : sbx_xstrdup(text);
}

char *sbx_redact_if_needed(const char *text)
{
	struct sbx_buf b = SBX_BUF_INIT;
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
				sbx_buf_adds(&b, SBX_REDACTED);
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
			sbx_buf_add(&b, p, (size_t)(q - p));
			p = q;
		}
	}
	pthread_mutex_unlock(&secrets_lock);
	return b.buf ? sbx_buf_detach(&b) : sbx_xstrdup("");
}

char *sbx_shown(const char *text, unsigned flags)
{
	char *clean = sbx_redact(text ? text : "");
	char *safe = sbx_term_safe(clean, flags);

	free(clean);
	if (!safe) {
		fputs("fatal: out of memory\n", stderr);
		abort();
	}
	return safe;
}

void sbx_print(FILE *f, const char *fmt, ...)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char *safe;
	va_list ap;

	va_start(ap, fmt);
	sbx_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	safe = sbx_shown(sbx_buf_str(&b), SBX_TERM_KEEP_NL);
	fputs(safe, f);
	free(safe);
	sbx_buf_release(&b);
}

void sbx_redact_inplace(char *buf, size_t size)
{
	char *r = sbx_redact(buf);

	snprintf(buf, size, "%s", r);
	free(r);
}

void sbx_log_set_level(enum sbxloop_log_level lvl)
{
	log_threshold = lvl;
}

void sbx_vlog(enum sbxloop_log_level lvl, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {"debug", "info", "warning",
					     "error"};
	struct sbx_buf b = SBX_BUF_INIT;
	char *clean;

	if (lvl < log_threshold)
		return;
	sbx_buf_vaddf(&b, fmt, ap);
	clean = sbx_shown(sbx_buf_str(&b), SBX_TERM_KEEP_NL);
	fprintf(stderr, "%s: %s\n", prefix[lvl], clean);
	free(clean);
	sbx_buf_release(&b);
}

void sbx_log(enum sbxloop_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbx_vlog(lvl, fmt, ap);
	va_end(ap);
}

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

#include "redact.h"
#include "util.h"

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

void sbx_secret_register(const char *value)
{
	size_t i;

	if (!value || strlen(value) < 4)
		return;
	pthread_mutex_lock(&secrets_lock);
	for (i = 0; i < n_secrets; i++)
		if (strcmp(secrets[i], value) == 0)
			goto out;
	secrets = sbx_xrealloc(secrets, (n_secrets + 1) * sizeof(*secrets));
	secrets[n_secrets++] = sbx_xstrdup(value);
out:
	pthread_mutex_unlock(&secrets_lock);
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
	struct sbx_buf b = SBX_BUF_INIT;
	const char *p;
	size_t i;

	if (!text)
		return NULL;
	pthread_mutex_lock(&secrets_lock);
	if (n_secrets == 0) {
		pthread_mutex_unlock(&secrets_lock);
		return sbx_xstrdup(text);
	}
	/* Fast path: most text holds no secret at all. */
	for (i = 0; i < n_secrets; i++)
		if (strstr(text, secrets[i]))
			break;
	if (i == n_secrets) {
		pthread_mutex_unlock(&secrets_lock);
		return sbx_xstrdup(text);
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
	clean = sbx_redact(sbx_buf_str(&b));
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

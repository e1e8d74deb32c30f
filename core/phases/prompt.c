/*
 * Prompt template loading and strict `$name` substitution. Owned by the
 * phase runners (core/phases/); nothing else renders prompts.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "phases/prompt.h"
#include "common/util.h"

#define PROMPT_MAX (1u << 20)

const char *sl_prompt_dir(const struct sl_config *cfg)
{
	const char *dir = cfg ? sl_config_str(cfg, "prompts_dir") : NULL;

	if (dir && *dir)
		return dir;
	dir = getenv("SBXLOOP_PROMPTS_DIR");
	if (dir && *dir)
		return dir;
	return SBXLOOP_PKGDATADIR "/prompts";
}

/* Skip a leading `<!-- ... -->` block and the blank lines after it. */
static const char *skip_header(const char *text)
{
	const char *p = text, *end;

	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (strncmp(p, "<!--", 4) != 0)
		return text;
	end = strstr(p + 4, "-->");
	if (!end)
		return text;
	p = end + 3;
	while (*p == '\n' || *p == '\r')
		p++;
	return p;
}

static int name_char(int c, int first)
{
	return c == '_' || isalpha(c) || (!first && isdigit(c));
}

int sl_prompt_render_text(const char *text, const cJSON *vars, char **out,
			  struct sbxloop_error *err)
{
	struct sl_buf b = SL_BUF_INIT;
	const char *p = skip_header(text);
	int rc = 0;

	*out = NULL;
	while (*p) {
		const char *dollar = strchr(p, '$');
		const cJSON *v;
		size_t n;
		char *name;

		if (!dollar) {
			sl_buf_adds(&b, p);
			break;
		}
		sl_buf_add(&b, p, (size_t)(dollar - p));
		p = dollar + 1;
		if (*p == '$') {
			sl_buf_addc(&b, '$');
			p++;
			continue;
		}
		for (n = 0; p[n] && name_char((unsigned char)p[n], n == 0);
		     n++)
			;
		if (n == 0) {
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "invalid placeholder at '$%.10s' (write "
				      "'$$' for a dollar)",
				      p);
			goto out;
		}
		name = sl_xstrndup(p, n);
		v = cJSON_GetObjectItemCaseSensitive(vars, name);
		if (!cJSON_IsString(v)) {
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "prompt variable '%s' is not set", name);
			free(name);
			goto out;
		}
		free(name);
		sl_buf_adds(&b, v->valuestring);
		p += n;
	}
	*out = sl_buf_detach(&b);
	if (!*out)
		*out = sl_xstrdup("");
out:
	sl_buf_release(&b);
	return rc;
}

int sl_prompt_render(const char *dir, const char *name, const cJSON *vars,
		     char **out, struct sbxloop_error *err)
{
	char *path = sl_xasprintf("%s/%s.md", dir, name);
	char *text = sl_read_file(path, NULL, PROMPT_MAX);
	int rc;

	*out = NULL;
	if (!text) {
		rc = sl_error(err, SBXLOOP_EINVAL,
			      "cannot read prompt template '%s': %s", path,
			      strerror(errno));
		goto out;
	}
	rc = sl_prompt_render_text(text, vars, out, err);
	if (rc < 0) {
		char msg[SBXLOOP_ERROR_MAX];

		snprintf(msg, sizeof(msg), "%s", err->message);
		sl_error(err, rc, "template '%s': %s", path, msg);
	}
out:
	free(text);
	free(path);
	return rc;
}

/*
 * env.c - the worker's environment: env files in, allowlist out.
 *
 * Owns loading `[export ]NAME=VALUE` files (the sandbox's plain-env
 * secrets and its persistent profile) into the worker's environment, and
 * the allowlisted environment handed to agent subprocesses. main.c loads
 * the files at startup; the agent backends ask for the allowlist.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"
#include "common/agents.h"

extern char **environ;

/*
 * Shell-unquote the first word of `s` into a new string: single quotes are
 * literal, double quotes honour backslash escapes, a bare backslash
 * escapes the next character, unquoted whitespace or '#' ends the word.
 */
static char *first_word(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n + 1), *o = out;
	char q = 0;

	if (!out)
		abort();
	for (; *s; s++) {
		if (q == '\'') {
			if (*s == '\'')
				q = 0;
			else
				*o++ = *s;
		} else if (q == '"') {
			if (*s == '"')
				q = 0;
			else if (*s == '\\' && s[1] && strchr("\\\"$`", s[1]))
				*o++ = *++s;
			else
				*o++ = *s;
		} else if (*s == '\'' || *s == '"') {
			q = *s;
		} else if (*s == '\\' && s[1]) {
			*o++ = *++s;
		} else if (isspace((unsigned char)*s) || *s == '#') {
			break;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

static int valid_name(const char *s, size_t n)
{
	size_t i;

	if (!n || isdigit((unsigned char)s[0]))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* A value the sandbox proxy substitutes; the file's real value wins. */
static int is_sentinel(const char *v)
{
	return !strncmp(v, "sbx-cs-", 7) || !strcmp(v, "proxy-managed");
}

/*
 * Apply a file's assignments to variables that are unset or hold a proxy
 * sentinel. A missing file is not an error: most sandboxes have none.
 */
void wk_env_load_file(const char *path)
{
	size_t len;
	int big;
	char *text = wk_read_file(path, 1024 * 1024, &len, &big);
	char *line, *save;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq, *name, *value;
		const char *cur;

		while (isspace((unsigned char)*line))
			line++;
		if (!*line || *line == '#')
			continue;
		if (!strncmp(line, "export", 6) &&
		    isspace((unsigned char)line[6])) {
			line += 7;
			while (isspace((unsigned char)*line))
				line++;
		}
		eq = strchr(line, '=');
		if (!eq || !valid_name(line, (size_t)(eq - line)))
			continue;
		name = strndup(line, (size_t)(eq - line));
		if (!name)
			abort();
		cur = getenv(name);
		if (!cur || is_sentinel(cur)) {
			value = first_word(eq + 1);
			setenv(name, value, 1);
			free(value);
		}
		free(name);
	}
	free(text);
}

static const char *const allowed_exact[] = {
	"PATH",
	"HOME",
	"USER",
	"LOGNAME",
	"SHELL",
	"LANG",
	"TERM",
	"TMPDIR",
	"TZ",
	SL_GH_TOKEN_ENV,
	SL_GH_TOKEN_ENV_ALT,
	"http_proxy",
	"https_proxy",
	"no_proxy",
	"HTTP_PROXY",
	"HTTPS_PROXY",
	"NO_PROXY",
};

static int allowed(const char *entry)
{
	size_t n = strcspn(entry, "="), i;

	if (!strncmp(entry, "LC_", 3) || !strncmp(entry, "SBXLOOP_", 8))
		return 1;
	for (i = 0; i < sizeof(allowed_exact) / sizeof(allowed_exact[0]); i++)
		if (strlen(allowed_exact[i]) == n &&
		    !strncmp(entry, allowed_exact[i], n))
			return 1;
	/* every preset's model token (common/agents.h) */
	for (i = 0; sl_model_tokens[i].env; i++)
		if (strlen(sl_model_tokens[i].env) == n &&
		    !strncmp(entry, sl_model_tokens[i].env, n))
			return 1;
	return 0;
}

static int listed(const char *entry, const cJSON *names)
{
	size_t n = strcspn(entry, "=");
	const cJSON *v;

	/* an array lists names; an object's members are named by key */
	cJSON_ArrayForEach (v, names) {
		const char *name = cJSON_IsObject(names) ? v->string
				   : cJSON_IsString(v)   ? v->valuestring
							 : NULL;

		if (name && strlen(name) == n && !strncmp(entry, name, n))
			return 1;
	}
	return 0;
}

/*
 * The environment agent subprocesses see: only allowlisted variables,
 * plus those `pass` names (a JSON array of strings, a preset's
 * "pass_env", may be NULL), with each member of `set` (a JSON object of
 * strings, a preset's "env", may be NULL) set to its value.
 */
char **wk_env_agent(const cJSON *pass, const cJSON *set)
{
	size_t n = 0, i, k = 0;
	const cJSON *v;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + (size_t)cJSON_GetArraySize(set) + 1, sizeof(*envp));
	if (!envp)
		abort();
	for (i = 0; i < n; i++)
		if ((allowed(environ[i]) || listed(environ[i], pass)) &&
		    !listed(environ[i], set))
			envp[k++] = wk_strdup(environ[i]);
	cJSON_ArrayForEach (v, set)
		if (cJSON_IsString(v) && v->string)
			envp[k++] =
				wk_printf("%s=%s", v->string, v->valuestring);
	return envp;
}

void wk_env_free(char **envp)
{
	size_t i;

	for (i = 0; envp && envp[i]; i++)
		free(envp[i]);
	free(envp);
}

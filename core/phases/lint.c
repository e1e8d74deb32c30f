/*
 * Verify-command lint (4.9): verify commands run under POSIX sh and must
 * only check, so bashisms, environment changes, nested shells and bare
 * Python tools are refused before a plan or a task graph is accepted.
 * Called by the DECOMPOSE and PLAN validators (phases.h).
 */
#include "config.h"

#include <string.h>

#include "phases/phases_internal.h"
#include "common/policy_patterns.h"

static const char *const env_mutators[] = {"sudo", "apt", "apt-get", "dnf",
					   "yum",  "apk", NULL};
static const char *const bash_heads[] = {"[[",    "source", "declare", "local",
					 "pushd", "popd",   NULL};
static const char *const python_bare[] = {"python", "python3", "pip",
					  "pip3",   "pytest",  NULL};

static int in_list(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(w, *list) == 0)
			return 1;
	return 0;
}

static int lang_selected(const struct sl_core *core, const char *lang)
{
	size_t i, n = sl_config_list_len(core->cfg, "sandbox.languages");

	if (n == 0)
		return strcmp(lang, "python") == 0;
	for (i = 0; i < n; i++) {
		const char *c = sl_language_canonical(sl_config_list_item(
			core->cfg, "sandbox.languages", i));

		if (c && strcmp(c, lang) == 0)
			return 1;
	}
	return 0;
}

/* Mark quoted regions so separators inside quotes are ignored. */
static void lint_one(const struct sl_core *core, const char *cmd,
		     const char *prefix, struct sl_buf *out)
{
	size_t n = strlen(cmd), i = 0;
	char quote = 0;
	int py = lang_selected(core, "python");

	for (i = 0; i < n; i++) {
		char c = cmd[i];

		if (quote) {
			if (c == quote)
				quote = 0;
			continue;
		}
		if (c == '"' || (c == '\'' && !(i && cmd[i - 1] == '$'))) {
			quote = c;
			continue;
		}
		if (c == '$' && cmd[i + 1] == '\'') {
			sl_buf_addf(out,
				    "- %suses ANSI-C quoting ($'...'), "
				    "which POSIX sh lacks: `%s`\n",
				    prefix, cmd);
			return;
		}
		if (c == '<' && strncmp(cmd + i, "<<<", 3) == 0) {
			sl_buf_addf(out,
				    "- %suses a here-string (<<<), "
				    "which POSIX sh lacks: `%s`\n",
				    prefix, cmd);
			return;
		}
	}
	/* command heads */
	i = 0;
	while (i < n) {
		size_t s, e;
		char word[64];

		while (i < n && strchr(" \t\n(!{;|&`", cmd[i]))
			i++;
		if (cmd[i] == '$' && cmd[i + 1] == '(') {
			i += 2;
			continue;
		}
		s = i;
		while (i < n && !strchr(" \t\n;|&`)", cmd[i]))
			i++;
		e = i;
		if (e > s && e - s < sizeof(word)) {
			memcpy(word, cmd + s, e - s);
			word[e - s] = '\0';
			if (strchr(word, '=') && word[0] != '=' &&
			    word[0] != '[') {
				continue; /* env assignment: look further */
			}
			if (in_list(word, env_mutators))
				sl_buf_addf(out,
					    "- %s`%s` changes the "
					    "environment (%s); verify "
					    "commands must only check\n",
					    prefix, cmd, word);
			else if (in_list(word, bash_heads))
				sl_buf_addf(out,
					    "- %s`%s` uses '%s', which "
					    "POSIX sh lacks\n",
					    prefix, cmd, word);
			else if (py && in_list(word, python_bare))
				sl_buf_addf(out,
					    "- %s`%s` runs a bare '%s'; "
					    "use the project's environment "
					    "(e.g. .venv/bin/%s or uv run "
					    "%s)\n",
					    prefix, cmd, word, word, word);
			else if ((!strcmp(word, "sh") ||
				  !strcmp(word, "bash") ||
				  !strcmp(word, "dash") ||
				  !strcmp(word, "zsh") ||
				  !strcmp(word, "/bin/sh") ||
				  !strcmp(word, "/bin/bash")) &&
				 i + 2 < n && cmd[i + 1] == '-' &&
				 strchr(cmd + i + 1, 'c') &&
				 strchr(cmd + i + 1, 'c') <
					 cmd + i + 1 +
						 strcspn(cmd + i + 1, " \t"))
				sl_buf_addf(out,
					    "- %s`%s` nests a shell; "
					    "commands already run under "
					    "sh -c\n",
					    prefix, cmd);
		}
		/* skip to the next separator */
		quote = 0;
		while (i < n) {
			char c = cmd[i];

			if (quote) {
				if (c == quote)
					quote = 0;
			} else if (c == '"' || c == '\'') {
				quote = c;
			} else if (strchr(";|&`\n", c) ||
				   (c == '$' && cmd[i + 1] == '(')) {
				break;
			}
			i++;
		}
	}
}

void sl_verify_lint(const struct sl_core *core, const cJSON *commands,
		    const char *prefix, struct sl_buf *out)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, commands)
		if (cJSON_IsString(c))
			lint_one(core, c->valuestring, prefix, out);
}

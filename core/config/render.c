/*
 * Rendering a configuration: a value as YAML, the commented starter file
 * of `sbxloop init`, and the JSON object of `sbxloop config show --json`.
 * Called by the CLI.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/conf.h"
#include "config/conf_internal.h"
#include "common/util.h"

static int needs_quotes(const char *s)
{
	int b;

	if (!*s || strpbrk(s, ":#,[]{}&*!|>'\"%@`") ||
	    isspace((unsigned char)*s) ||
	    isspace((unsigned char)s[strlen(s) - 1]) || *s == '-' || *s == '?')
		return 1;
	if (!strcmp(s, "~") || !strcasecmp(s, "null") ||
	    sl_conf_parse_bool(s, &b) == 0)
		return 1;
	return 0;
}

static void yaml_scalar(struct sl_buf *b, const char *s, int is_string)
{
	const char *p;

	if (!is_string || !needs_quotes(s)) {
		sl_buf_adds(b, s);
		return;
	}
	sl_buf_addc(b, '"');
	for (p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sl_buf_addc(b, '\\');
		sl_buf_addc(b, *p);
	}
	sl_buf_addc(b, '"');
}

char *sl_config_value_yaml(const struct sl_config_value *v)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	if (v->spec->type == SBXLOOP_VALUE_LIST) {
		sl_buf_addc(&b, '[');
		for (i = 0; i < v->n_items; i++) {
			if (i)
				sl_buf_adds(&b, ", ");
			yaml_scalar(&b, v->items[i], 1);
		}
		sl_buf_addc(&b, ']');
	} else if (!v->str) {
		sl_buf_adds(&b, "null");
	} else {
		yaml_scalar(&b, v->str, v->spec->type == SBXLOOP_VALUE_STRING);
	}
	return sl_buf_detach(&b);
}

void sl_config_write_starter(const struct sl_config *cfg, FILE *out)
{
	char section[128] = "";
	size_t i;

	fprintf(out,
		"# sbxloop configuration. Every key is listed with its "
		"default.\n"
		"# Precedence: SBXLOOP_SECTION__KEY environment variables > "
		"this file\n"
		"# > $XDG_CONFIG_HOME/sbxloop/config.yaml > built-in "
		"defaults.\n"
		"# `sbxloop config show` prints every resolved key and its "
		"source.\n");
	for (i = 0; i < cfg->n_values; i++) {
		const struct sl_config_value *v = &cfg->values[i];
		const char *path = v->spec->path;
		const char *dot = strchr(path, '.');
		const char *key = dot ? dot + 1 : path;
		const char *indent = dot ? "  " : "";
		char *text;

		if (dot) {
			size_t n = (size_t)(dot - path);

			if (strlen(section) != n ||
			    strncmp(section, path, n) != 0) {
				snprintf(section, sizeof(section), "%.*s",
					 (int)n, path);
				fprintf(out, "\n%s:\n", section);
			}
		} else if (i == 0) {
			fputc('\n', out);
		}
		if (v->spec->help)
			fprintf(out, "%s# %s%s%s\n", indent, v->spec->help,
				v->spec->choices ? " (" : "",
				v->spec->choices ? v->spec->choices : "");
		if (v->spec->type != SBXLOOP_VALUE_LIST && !v->str) {
			fprintf(out, "%s# %s:\n", indent, key);
			continue;
		}
		/* the default as written in the schema ("~/.sbxloop"),
		 * not as resolved for this machine */
		if (v->source == SL_SRC_DEFAULT && v->spec->dflt &&
		    *v->spec->dflt)
			text = sl_xstrdup(v->spec->dflt);
		else
			text = sl_config_value_yaml(v);
		fprintf(out, "%s%s: %s\n", indent, key, text);
		free(text);
	}
}

char *sl_config_to_json(const struct sl_config *cfg)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t i, j;

	sl_buf_addc(&b, '{');
	for (i = 0; i < cfg->n_values; i++) {
		const struct sl_config_value *v = &cfg->values[i];

		if (i)
			sl_buf_addc(&b, ',');
		sl_buf_add_json_str(&b, v->spec->path);
		sl_buf_addc(&b, ':');
		if (v->spec->type == SBXLOOP_VALUE_LIST) {
			sl_buf_addc(&b, '[');
			for (j = 0; j < v->n_items; j++) {
				if (j)
					sl_buf_addc(&b, ',');
				sl_buf_add_json_str(&b, v->items[j]);
			}
			sl_buf_addc(&b, ']');
		} else if (!v->str) {
			sl_buf_adds(&b, "null");
		} else if (v->spec->type == SBXLOOP_VALUE_STRING) {
			sl_buf_add_json_str(&b, v->str);
		} else {
			sl_buf_adds(&b, v->str);
		}
	}
	sl_buf_addc(&b, '}');
	return sl_buf_detach(&b);
}

/*
 * Typed conversion: checks a raw entry read from a file, a variable or
 * the command line against its schema entry (type, choices, the key's own
 * check) and stores the canonical text in its value. Called by the layers
 * in conf.c; sl_conf_parse_bool and sl_conf_trim_dup also serve the
 * renderer and the .env reader.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/conf.h"
#include "config/conf_internal.h"
#include "common/util.h"

static const char *type_name(enum sbxloop_value_type t)
{
	switch (t) {
	case SBXLOOP_VALUE_STRING:
		return "a string";
	case SBXLOOP_VALUE_INT:
		return "an integer";
	case SBXLOOP_VALUE_FLOAT:
		return "a number";
	case SBXLOOP_VALUE_BOOL:
		return "true or false";
	case SBXLOOP_VALUE_LIST:
		return "a list";
	}
	return "a value";
}

int sl_conf_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static int in_choices(const char *choices, const char *v)
{
	size_t n = strlen(v);
	const char *p = choices;

	while (*p) {
		size_t len = strcspn(p, "|");

		if (len == n && strncmp(p, v, n) == 0)
			return 1;
		p += len;
		if (*p == '|')
			p++;
	}
	return 0;
}

char *sl_conf_trim_dup(const char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return sl_xstrndup(s, n);
}

/* Check one scalar against a spec; returns the canonical text or NULL. */
static char *convert_scalar(const struct sl_config_spec *spec, const char *s,
			    const char *origin, struct sl_buf *errs)
{
	char buf[512], *end;
	const char *why, *canon = buf;
	int b;

	switch (spec->type) {
	case SBXLOOP_VALUE_INT: {
		long long v;

		errno = 0;
		v = strtoll(s, &end, 10);
		if (!*s || *end || errno) {
			sl_conf_error(errs, origin,
				      "%s: expected an integer, found '%s'",
				      spec->path, s);
			return NULL;
		}
		snprintf(buf, sizeof(buf), "%lld", v);
		break;
	}
	case SBXLOOP_VALUE_FLOAT: {
		double v;

		errno = 0;
		v = strtod(s, &end);
		if (!*s || *end || errno || !isfinite(v)) {
			sl_conf_error(errs, origin,
				      "%s: expected a number, found '%s'",
				      spec->path, s);
			return NULL;
		}
		snprintf(buf, sizeof(buf), "%s", s);
		break;
	}
	case SBXLOOP_VALUE_BOOL:
		if (sl_conf_parse_bool(s, &b) < 0) {
			sl_conf_error(errs, origin,
				      "%s: expected true or false, found '%s'",
				      spec->path, s);
			return NULL;
		}
		snprintf(buf, sizeof(buf), "%s", b ? "true" : "false");
		break;
	default:
		canon = s; /* strings are taken as written, at any length */
		break;
	}
	if (spec->choices && !in_choices(spec->choices, canon)) {
		struct sl_buf c = SL_BUF_INIT;
		const char *p;

		for (p = spec->choices; *p; p++)
			if (*p == '|')
				sl_buf_adds(&c, ", ");
			else
				sl_buf_addc(&c, *p);
		sl_conf_error(errs, origin,
			      "%s: expected one of %s, found '%s'", spec->path,
			      sl_buf_str(&c), canon);
		sl_buf_release(&c);
		return NULL;
	}
	if (spec->check) {
		char msg[512];

		why = spec->check(spec, canon, msg, sizeof(msg));
		if (why) {
			sl_conf_error(errs, origin, "%s: %s", spec->path, why);
			return NULL;
		}
	}
	return sl_xstrdup(canon);
}

/* Apply a raw entry to its value; errors go to errs. */
void sl_conf_apply_raw(struct sl_config_value *v, const struct raw *r,
		       struct sl_buf *errs)
{
	const struct sl_config_spec *spec = v->spec;
	char **items = NULL;
	size_t n = 0, i;
	int bad = 0;

	if (r->is_null) {
		/* null unsets a string, which a checked key with a default
		 * (state_dir) cannot be: check it as empty */
		if (spec->type == SBXLOOP_VALUE_STRING && spec->dflt &&
		    spec->check) {
			char *t = convert_scalar(spec, "", r->origin, errs);

			if (!t)
				return;
			free(t);
		}
		if (spec->type != SBXLOOP_VALUE_STRING) {
			sl_conf_error(errs, r->origin,
				      "%s: expected %s, found null",
				      spec->path, type_name(spec->type));
			return;
		}
		sl_conf_value_release(v);
		goto done;
	}
	if (spec->type != SBXLOOP_VALUE_LIST) {
		char *s;

		if (r->is_list) {
			sl_conf_error(errs, r->origin,
				      "%s: expected %s, found a list",
				      spec->path, type_name(spec->type));
			return;
		}
		s = convert_scalar(spec, r->scalar, r->origin, errs);
		if (!s)
			return;
		sl_conf_value_release(v);
		v->str = s;
		goto done;
	}
	/* lists */
	if (!r->is_list && !r->from_env) {
		sl_conf_error(errs, r->origin,
			      "%s: expected a list, found '%s'", spec->path,
			      r->scalar);
		return;
	}
	if (!r->is_list) {
		/* environment: comma-separated */
		const char *p = r->scalar;

		while (*p) {
			size_t len = strcspn(p, ",");
			char *t = sl_xstrndup(p, len),
			     *tt = sl_conf_trim_dup(t);

			free(t);
			if (*tt) {
				items = sl_xrealloc(items,
						    (n + 1) * sizeof(*items));
				items[n++] = tt;
			} else {
				free(tt);
			}
			p += len;
			if (*p == ',')
				p++;
		}
	} else {
		items = sl_xcalloc(r->n_items + 1, sizeof(*items));
		for (i = 0; i < r->n_items; i++)
			items[n++] = sl_conf_trim_dup(r->items[i]);
	}
	for (i = 0; i < n; i++) {
		char msg[512];
		const char *why;

		if (spec->check) {
			/* policy patterns are case-insensitive: lowercase */
			if (strncmp(spec->path, "policy.", 7) == 0 ||
			    strstr(spec->path, "domains")) {
				char *c;

				for (c = items[i]; *c; c++)
					*c = (char)tolower((unsigned char)*c);
			}
			why = spec->check(spec, items[i], msg, sizeof(msg));
			if (why) {
				sl_conf_error(errs, r->origin, "%s[%zu]: %s",
					      spec->path, i, why);
				bad = 1;
			}
		}
	}
	if (bad) {
		for (i = 0; i < n; i++)
			free(items[i]);
		free(items);
		return;
	}
	sl_conf_value_release(v);
	v->items = items;
	v->n_items = n;
done:
	v->source = r->source;
	free(v->origin);
	v->origin = sl_xstrdup(r->origin);
}

/*
 * Configuration loading: defaults, the user file, the project file and
 * SBXLOOP_SECTION__KEY environment variables, in rising precedence, read
 * with libyaml and validated against the schema (core keys plus the keys
 * plugins declare for their own mappings). Every error names where the
 * value came from (file:line:column or the variable) and the key path.
 * Called by the CLI before anything else starts.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "conf.h"
#include "util.h"

extern char **environ;

/* A value read from a file or the environment, not yet matched. */
struct raw {
	char *path;   /* "section.key" or "key" */
	char *scalar; /* NULL for lists and nulls */
	char **items;
	size_t n_items;
	int is_list;
	int is_null;
	int from_env; /* scalars may be comma lists */
	enum sbx_source source;
	char *origin;      /* "file:line:col" or "SBXLOOP_X" */
	char *key_origin;  /* where the key itself is, or NULL */
	char *sect_origin; /* where its section's key is, or NULL */
};

struct sbx_config {
	struct sbx_config_value *values;
	size_t n_values;
	struct sbx_config_spec *owned_specs[64]; /* per component, owned */
	size_t n_owned;
	char **sections; /* claimed top-level mapping names */
	size_t n_sections;
	struct raw *pending; /* entries of unclaimed sections, in order */
	size_t n_pending;
	char *project_file;
	char *cwd;
};

static void raw_clear(struct raw *r)
{
	size_t i;

	free(r->path);
	free(r->scalar);
	for (i = 0; i < r->n_items; i++)
		free(r->items[i]);
	free(r->items);
	free(r->origin);
	free(r->key_origin);
	free(r->sect_origin);
	memset(r, 0, sizeof(*r));
}

static void value_clear(struct sbx_config_value *v)
{
	size_t i;

	free(v->str);
	for (i = 0; i < v->n_items; i++)
		free(v->items[i]);
	free(v->items);
	free(v->origin);
	v->str = NULL;
	v->items = NULL;
	v->n_items = 0;
	v->origin = NULL;
}

const char *sbx_source_name(enum sbx_source src)
{
	switch (src) {
	case SBX_SRC_DEFAULT:
		return "default";
	case SBX_SRC_USER:
		return "user file";
	case SBX_SRC_PROJECT:
		return "project file";
	case SBX_SRC_ENV:
		return "env";
	case SBX_SRC_CLI:
		return "command line";
	}
	return "?";
}

static void add_error(struct sbx_buf *errs, const char *origin,
		      const char *fmt, ...) SBXLOOP_PRINTF(3, 4);

static void add_error(struct sbx_buf *errs, const char *origin,
		      const char *fmt, ...)
{
	va_list ap;

	if (origin)
		sbx_buf_addf(errs, "%s: ", origin);
	va_start(ap, fmt);
	sbx_buf_vaddf(errs, fmt, ap);
	va_end(ap);
	sbx_buf_addc(errs, '\n');
}

/* ---- the schema ------------------------------------------------------- */

static struct sbx_config_value *find_value(const struct sbx_config *cfg,
					   const char *path)
{
	size_t i;

	for (i = 0; i < cfg->n_values; i++)
		if (strcmp(cfg->values[i].spec->path, path) == 0)
			return &cfg->values[i];
	return NULL;
}

static int section_is_core(const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < sbx_core_schema_len; i++) {
		const char *p = sbx_core_schema[i].path;

		if (strncmp(p, name, n) == 0 && p[n] == '.')
			return 1;
	}
	return 0;
}

static int section_is_claimed(const struct sbx_config *cfg, const char *name)
{
	size_t i;

	if (section_is_core(name))
		return 1;
	for (i = 0; i < cfg->n_sections; i++)
		if (strcmp(cfg->sections[i], name) == 0)
			return 1;
	return 0;
}

/*
 * The nearest known name to `key` among the keys of `section` ("" for
 * top level), for "did you mean". Returns a pointer into the schema or
 * NULL when nothing is close.
 */
static const char *suggest(const struct sbx_config *cfg, const char *section,
			   const char *key, char *buf, size_t len)
{
	size_t i, best = (size_t)-1, seclen = strlen(section);
	const char *winner = NULL;

	for (i = 0; i < cfg->n_values; i++) {
		const char *p = cfg->values[i].spec->path;
		const char *name;
		char top[128];
		size_t d;

		if (seclen) {
			if (strncmp(p, section, seclen) != 0 ||
			    p[seclen] != '.')
				continue;
			name = p + seclen + 1;
		} else {
			size_t n = strcspn(p, ".");

			if (n >= sizeof(top))
				continue;
			memcpy(top, p, n);
			top[n] = '\0';
			name = top;
		}
		d = sbx_levenshtein(key, name);
		if (d < best) {
			best = d;
			snprintf(buf, len, "%s", name);
			winner = buf;
		}
	}
	if (!winner || best > (strlen(key) + 2) / 3 + 1)
		return NULL;
	return winner;
}

static void unknown_key_error(const struct sbx_config *cfg,
			      struct sbx_buf *errs, const struct raw *r)
{
	char section[128] = "", buf[128];
	const char *dot = strchr(r->path, '.');
	const char *key = r->path;
	const char *hint;

	if (dot && (size_t)(dot - r->path) < sizeof(section)) {
		memcpy(section, r->path, (size_t)(dot - r->path));
		section[dot - r->path] = '\0';
		key = dot + 1;
	}
	const char *where = r->key_origin ? r->key_origin : r->origin;

	hint = suggest(cfg, section, key, buf, sizeof(buf));
	if (hint)
		add_error(errs, where, "unknown key '%s' (did you mean '%s'?)",
			  r->path, hint);
	else
		add_error(errs, where, "unknown key '%s'", r->path);
}

/* ---- typed conversion --------------------------------------------------- */

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

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	size_t i;

	for (i = 0; i < SBX_ARRAY_SIZE(yes); i++) {
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

static char *trim_dup(const char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return sbx_xstrndup(s, n);
}

/* Check one scalar against a spec; returns the canonical text or NULL. */
static char *convert_scalar(const struct sbx_config_spec *spec, const char *s,
			    const char *origin, struct sbx_buf *errs)
{
	char buf[512], *end;
	const char *why;
	int b;

	switch (spec->type) {
	case SBXLOOP_VALUE_INT: {
		long long v;

		errno = 0;
		v = strtoll(s, &end, 10);
		if (!*s || *end || errno) {
			add_error(errs, origin,
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
			add_error(errs, origin,
				  "%s: expected a number, found '%s'",
				  spec->path, s);
			return NULL;
		}
		snprintf(buf, sizeof(buf), "%s", s);
		break;
	}
	case SBXLOOP_VALUE_BOOL:
		if (parse_bool(s, &b) < 0) {
			add_error(errs, origin,
				  "%s: expected true or false, found '%s'",
				  spec->path, s);
			return NULL;
		}
		snprintf(buf, sizeof(buf), "%s", b ? "true" : "false");
		break;
	default:
		snprintf(buf, sizeof(buf), "%s", s);
		if (strlen(s) >= sizeof(buf)) {
			if (spec->choices || spec->check) {
				add_error(errs, origin, "%s: value too long",
					  spec->path);
				return NULL;
			}
			return sbx_xstrdup(s);
		}
		break;
	}
	if (spec->choices && !in_choices(spec->choices, buf)) {
		struct sbx_buf c = SBX_BUF_INIT;
		const char *p;

		for (p = spec->choices; *p; p++)
			if (*p == '|')
				sbx_buf_adds(&c, ", ");
			else
				sbx_buf_addc(&c, *p);
		add_error(errs, origin, "%s: expected one of %s, found '%s'",
			  spec->path, sbx_buf_str(&c), buf);
		sbx_buf_release(&c);
		return NULL;
	}
	if (spec->check) {
		char msg[512];

		why = spec->check(spec, buf, msg, sizeof(msg));
		if (why) {
			add_error(errs, origin, "%s: %s", spec->path, why);
			return NULL;
		}
	}
	return sbx_xstrdup(buf);
}

/* Apply a raw entry to its value; errors go to errs. */
static void apply_raw(struct sbx_config_value *v, const struct raw *r,
		      struct sbx_buf *errs)
{
	const struct sbx_config_spec *spec = v->spec;
	char **items = NULL;
	size_t n = 0, i;
	int bad = 0;

	if (r->is_null) {
		if (spec->type != SBXLOOP_VALUE_STRING) {
			add_error(errs, r->origin,
				  "%s: expected %s, found null", spec->path,
				  type_name(spec->type));
			return;
		}
		value_clear(v);
		goto done;
	}
	if (spec->type != SBXLOOP_VALUE_LIST) {
		char *s;

		if (r->is_list) {
			add_error(errs, r->origin,
				  "%s: expected %s, found a list", spec->path,
				  type_name(spec->type));
			return;
		}
		s = convert_scalar(spec, r->scalar, r->origin, errs);
		if (!s)
			return;
		value_clear(v);
		v->str = s;
		goto done;
	}
	/* lists */
	if (!r->is_list && !r->from_env) {
		add_error(errs, r->origin, "%s: expected a list, found '%s'",
			  spec->path, r->scalar);
		return;
	}
	if (!r->is_list) {
		/* environment: comma-separated */
		const char *p = r->scalar;

		while (*p) {
			size_t len = strcspn(p, ",");
			char *t = sbx_xstrndup(p, len), *tt = trim_dup(t);

			free(t);
			if (*tt) {
				items = sbx_xrealloc(items,
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
		items = sbx_xcalloc(r->n_items + 1, sizeof(*items));
		for (i = 0; i < r->n_items; i++)
			items[n++] = trim_dup(r->items[i]);
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
				add_error(errs, r->origin, "%s[%zu]: %s",
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
	value_clear(v);
	v->items = items;
	v->n_items = n;
done:
	v->source = r->source;
	free(v->origin);
	v->origin = sbx_xstrdup(r->origin);
}

/* ---- YAML ------------------------------------------------------------- */

static char *mark_origin(const char *file, yaml_mark_t m)
{
	return sbx_xasprintf("%s:%zu:%zu", file, m.line + 1, m.column + 1);
}

static int scalar_is_null(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") ||
	       !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* Turn a value node into a raw entry; 0 or -1 with an error added. */
static int node_to_raw(yaml_document_t *doc, yaml_node_t *node,
		       const char *file, const char *path, struct raw *r,
		       struct sbx_buf *errs)
{
	yaml_node_item_t *it;

	memset(r, 0, sizeof(*r));
	r->path = sbx_xstrdup(path);
	r->origin = mark_origin(file, node->start_mark);
	switch (node->type) {
	case YAML_SCALAR_NODE:
		if (scalar_is_null(node))
			r->is_null = 1;
		else
			r->scalar = sbx_xstrdup(
				(const char *)node->data.scalar.value);
		return 0;
	case YAML_SEQUENCE_NODE:
		r->is_list = 1;
		for (it = node->data.sequence.items.start;
		     it < node->data.sequence.items.top; it++) {
			yaml_node_t *item = yaml_document_get_node(doc, *it);

			if (!item || item->type != YAML_SCALAR_NODE) {
				char *o = mark_origin(file,
						      item ? item->start_mark
							   : node->start_mark);

				add_error(
					errs, o,
					"%s: list items must be plain values",
					path);
				free(o);
				raw_clear(r);
				return -1;
			}
			r->items = sbx_xrealloc(
				r->items, (r->n_items + 1) * sizeof(char *));
			r->items[r->n_items++] = sbx_xstrdup(
				(const char *)item->data.scalar.value);
		}
		return 0;
	default:
		add_error(errs, r->origin,
			  "%s: expected a value or a list, found a mapping",
			  path);
		raw_clear(r);
		return -1;
	}
}

/*
 * Walk a mapping at `prefix` ("" at the top), appending raw entries.
 * Nested mappings one level down become "section.key" entries.
 */
static void walk_mapping(yaml_document_t *doc, yaml_node_t *map,
			 const char *file, const char *prefix,
			 const char *sect_origin, int depth, struct raw **out,
			 size_t *n_out, struct sbx_buf *errs)
{
	yaml_node_pair_t *pair, *other;

	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(doc, pair->value);
		char *path, *o;
		const char *key;
		struct raw r;
		int dup = 0;

		if (!k || !v)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			o = mark_origin(file, k->start_mark);
			add_error(errs, o, "keys must be plain names");
			free(o);
			continue;
		}
		key = (const char *)k->data.scalar.value;
		for (other = map->data.mapping.pairs.start; other < pair;
		     other++) {
			yaml_node_t *ok =
				yaml_document_get_node(doc, other->key);

			if (ok && ok->type == YAML_SCALAR_NODE &&
			    strcmp((const char *)ok->data.scalar.value, key) ==
				    0) {
				o = mark_origin(file, k->start_mark);
				add_error(errs, o,
					  "duplicate key '%s%s%s' (first "
					  "defined at line %zu)",
					  prefix, *prefix ? "." : "", key,
					  ok->start_mark.line + 1);
				free(o);
				dup = 1;
				break;
			}
		}
		if (dup)
			continue;
		path = *prefix ? sbx_xasprintf("%s.%s", prefix, key)
			       : sbx_xstrdup(key);
		if (v->type == YAML_MAPPING_NODE) {
			if (depth > 0) {
				o = mark_origin(file, v->start_mark);
				add_error(errs, o,
					  "%s: expected a value or a list, "
					  "found a mapping",
					  path);
				free(o);
			} else {
				o = mark_origin(file, k->start_mark);
				walk_mapping(doc, v, file, path, o, depth + 1,
					     out, n_out, errs);
				free(o);
			}
			free(path);
			continue;
		}
		if (depth == 0 && section_is_core(key)) {
			o = mark_origin(file, v->start_mark);
			add_error(errs, o,
				  "%s: expected a mapping of settings", key);
			free(o);
			free(path);
			continue;
		}
		if (node_to_raw(doc, v, file, path, &r, errs) == 0) {
			r.key_origin = mark_origin(file, k->start_mark);
			r.sect_origin = sbx_xstrdup(sect_origin);
			*out = sbx_xrealloc(*out,
					    (*n_out + 1) * sizeof(**out));
			(*out)[(*n_out)++] = r;
		}
		free(path);
	}
}

static void parser_error(const yaml_parser_t *p, const char *file,
			 struct sbx_buf *errs)
{
	yaml_mark_t m = p->problem_mark;

	if (p->context)
		sbx_buf_addf(errs, "%s:%zu:%zu: invalid YAML: %s %s\n", file,
			     m.line + 1, m.column + 1, p->problem, p->context);
	else
		sbx_buf_addf(errs, "%s:%zu:%zu: invalid YAML: %s\n", file,
			     m.line + 1, m.column + 1,
			     p->problem ? p->problem : "parse error");
}

/* Parse one file; a missing optional file is not an error. */
static int parse_file(const char *file, int required, enum sbx_source src,
		      struct raw **out, size_t *n_out, struct sbx_buf *errs)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	size_t first = *n_out, i;
	FILE *f = fopen(file, "rb");
	int rc = 0;

	if (!f) {
		if (errno == ENOENT && !required)
			return 0;
		sbx_buf_addf(errs, "cannot open '%s': %s\n", file,
			     strerror(errno));
		return -1;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		parser_error(&parser, file, errs);
		rc = -1;
		goto out_parser;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type == YAML_SCALAR_NODE && scalar_is_null(root))
		root = NULL;
	if (root && root->type != YAML_MAPPING_NODE) {
		sbx_buf_addf(errs,
			     "%s:%zu:%zu: expected a mapping of settings at "
			     "the top level\n",
			     file, root->start_mark.line + 1,
			     root->start_mark.column + 1);
		rc = -1;
	} else if (root) {
		walk_mapping(&doc, root, file, "", NULL, 0, out, n_out, errs);
	}
	for (i = first; i < *n_out; i++)
		(*out)[i].source = src;
	yaml_document_delete(&doc);
	/* a second document is not allowed */
	if (rc == 0 && yaml_parser_load(&parser, &doc)) {
		if (yaml_document_get_root_node(&doc)) {
			sbx_buf_addf(errs,
				     "%s: more than one YAML document; "
				     "sbxloop reads exactly one\n",
				     file);
			rc = -1;
		}
		yaml_document_delete(&doc);
	}
out_parser:
	yaml_parser_delete(&parser);
	fclose(f);
	return rc;
}

/* Parse a default or environment value as a YAML flow value. */
static int parse_inline(const char *text, const char *path, const char *origin,
			struct raw *r, struct sbx_buf *errs)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct sbx_buf tmp = SBX_BUF_INIT;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     strlen(text));
	if (!yaml_parser_load(&parser, &doc)) {
		/* not YAML: take the raw text as a string */
		r->path = sbx_xstrdup(path);
		r->origin = sbx_xstrdup(origin);
		r->scalar = sbx_xstrdup(text);
		rc = 0;
		goto out;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		r->path = sbx_xstrdup(path);
		r->origin = sbx_xstrdup(origin);
		r->scalar = sbx_xstrdup("");
		rc = 0;
	} else if (root->type == YAML_MAPPING_NODE) {
		add_error(errs, origin,
			  "%s: expected a value or a list, found a mapping",
			  path);
	} else if (node_to_raw(&doc, root, origin, path, r, &tmp) == 0) {
		free(r->origin);
		r->origin = sbx_xstrdup(origin);
		rc = 0;
	} else {
		add_error(errs, origin, "%s: cannot parse value '%s'", path,
			  text);
	}
	yaml_document_delete(&doc);
out:
	yaml_parser_delete(&parser);
	sbx_buf_release(&tmp);
	return rc;
}

/* ---- layers ------------------------------------------------------------ */

static void add_spec(struct sbx_config *cfg, const struct sbx_config_spec *s)
{
	struct sbx_config_value *v;
	struct sbx_buf errs = SBX_BUF_INIT;
	struct raw r;

	cfg->values = sbx_xrealloc(cfg->values,
				   (cfg->n_values + 1) * sizeof(*cfg->values));
	v = &cfg->values[cfg->n_values++];
	memset(v, 0, sizeof(*v));
	v->spec = s;
	v->source = SBX_SRC_DEFAULT;
	if (!s->dflt)
		return;
	if (parse_inline(s->dflt, s->path, "default", &r, &errs) == 0) {
		apply_raw(v, &r, &errs);
		raw_clear(&r);
	}
	v->source = SBX_SRC_DEFAULT;
	free(v->origin);
	v->origin = NULL;
	if (errs.len) /* a broken built-in default is a programming error */
		fprintf(stderr, "bug: default of %s: %s", s->path,
			sbx_buf_str(&errs));
	sbx_buf_release(&errs);
}

static void env_layer(struct sbx_config *cfg, struct raw **out, size_t *n,
		      struct sbx_buf *errs)
{
	char **e;

	for (e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char *name, *path, *p;
		size_t i, len;
		struct raw r;

		if (!eq || strncmp(*e, "SBXLOOP_", 8) != 0)
			continue;
		name = sbx_xstrndup(*e, (size_t)(eq - *e));
		len = strlen(name + 8);
		path = sbx_xcalloc(len + 1, 1);
		for (i = 0, p = path; i < len; i++) {
			char c = name[8 + i];

			if (c == '_' && name[8 + i + 1] == '_') {
				*p++ = '.';
				i++;
			} else {
				*p++ = (char)tolower((unsigned char)c);
			}
		}
		/* Single-segment variables that are not keys belong to the
		 * tool itself (SBXLOOP_PLUGIN_PATH, ...), not the config. */
		if (!strchr(path, '.') && !find_value(cfg, path)) {
			free(name);
			free(path);
			continue;
		}
		if (path[0] == '.' || strstr(path, "..") ||
		    path[strlen(path) - 1] == '.') {
			free(name);
			free(path);
			continue;
		}
		if (parse_inline(eq + 1, path, name, &r, errs) == 0) {
			r.source = SBX_SRC_ENV;
			r.from_env = 1;
			*out = sbx_xrealloc(*out, (*n + 1) * sizeof(**out));
			(*out)[(*n)++] = r;
		}
		free(name);
		free(path);
	}
}

/* Apply the raw entries the schema knows; keep the rest pending. */
static void apply_all(struct sbx_config *cfg, struct raw *raws, size_t n,
		      struct sbx_buf *errs)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct raw *r = &raws[i];
		struct sbx_config_value *v = find_value(cfg, r->path);
		char top[128];
		size_t tl = strcspn(r->path, ".");

		if (v) {
			apply_raw(v, r, errs);
			raw_clear(r);
			continue;
		}
		snprintf(top, sizeof(top), "%.*s", (int)tl, r->path);
		/* "name:" with nothing under it: an empty section */
		if (!strchr(r->path, '.') && r->is_null &&
		    section_is_claimed(cfg, top)) {
			raw_clear(r);
			continue;
		}
		if (!strchr(r->path, '.') && r->is_null) {
			char *marker = sbx_xasprintf("%s.", r->path);

			free(r->path);
			r->path = marker;
			free(r->sect_origin);
			r->sect_origin = sbx_xstrdup(r->key_origin);
		} else if (!strchr(r->path, '.') ||
			   section_is_claimed(cfg, top)) {
			unknown_key_error(cfg, errs, r);
			raw_clear(r);
			continue;
		}
		cfg->pending = sbx_xrealloc(cfg->pending,
					    (cfg->n_pending + 1) * sizeof(*r));
		cfg->pending[cfg->n_pending++] = *r;
		memset(r, 0, sizeof(*r));
	}
}

static char *home_dir(void)
{
	const char *h = getenv("HOME");

	return sbx_xstrdup(h && *h ? h : "/");
}

static void resolve_state_dir(struct sbx_config *cfg)
{
	struct sbx_config_value *v = find_value(cfg, "state_dir");
	char *home, *s;

	if (!v || !v->str)
		return;
	home = home_dir();
	if (strcmp(v->str, "~") == 0)
		s = sbx_xstrdup(home);
	else if (strncmp(v->str, "~/", 2) == 0)
		s = sbx_xasprintf("%s/%s", home, v->str + 2);
	else if (v->str[0] != '/')
		s = sbx_xasprintf("%s/%s", cfg->cwd, v->str);
	else
		s = sbx_xstrdup(v->str);
	free(v->str);
	v->str = s;
	free(home);
}

static void cross_checks(struct sbx_config *cfg, struct sbx_buf *errs)
{
	static const char *const pairs[][2] = {
		{"limits.disk_warn", "limits.disk_abort"},
		{"limits.mem_warn", "limits.mem_abort"},
	};
	size_t i;

	for (i = 0; i < SBX_ARRAY_SIZE(pairs); i++) {
		const struct sbx_config_value *w =
			find_value(cfg, pairs[i][0]);
		const struct sbx_config_value *a =
			find_value(cfg, pairs[i][1]);
		double wv = sbx_config_double(cfg, pairs[i][0], 0);
		double av = sbx_config_double(cfg, pairs[i][1], 0);

		if (av > 0 && !(av > wv)) {
			const struct sbx_config_value *blame =
				a->source >= w->source ? a : w;

			add_error(errs, blame->origin,
				  "%s (%g) must be greater than %s (%g), or 0 "
				  "to disable it",
				  pairs[i][1], av, pairs[i][0], wv);
		}
	}
}

int sbx_config_load(struct sbx_config **out, const struct sbx_config_opts *o,
		    char **errors)
{
	struct sbx_config *cfg = sbx_xcalloc(1, sizeof(*cfg));
	struct sbx_buf errs = SBX_BUF_INIT;
	struct raw *raws = NULL;
	size_t n = 0, i;
	char cwd[4096];
	char *user_file = NULL;
	const char *xdg;

	*out = NULL;
	*errors = NULL;
	if (o && o->cwd)
		cfg->cwd = sbx_xstrdup(o->cwd);
	else
		cfg->cwd = sbx_xstrdup(getcwd(cwd, sizeof(cwd)) ? cwd : ".");
	for (i = 0; i < sbx_core_schema_len; i++)
		add_spec(cfg, &sbx_core_schema[i]);

	if (!o || !o->no_user_file) {
		xdg = getenv("XDG_CONFIG_HOME");
		if (xdg && *xdg) {
			user_file =
				sbx_xasprintf("%s/sbxloop/config.yaml", xdg);
		} else {
			char *home = home_dir();

			user_file = sbx_xasprintf(
				"%s/.config/sbxloop/config.yaml", home);
			free(home);
		}
		parse_file(user_file, 0, SBX_SRC_USER, &raws, &n, &errs);
	}
	if (o && o->config_file) {
		cfg->project_file = sbx_xstrdup(o->config_file);
		parse_file(o->config_file, 1, SBX_SRC_PROJECT, &raws, &n,
			   &errs);
	} else {
		char *p = sbx_xasprintf("%s/sbxloop.yaml", cfg->cwd);

		if (access(p, F_OK) == 0)
			cfg->project_file = sbx_xstrdup("sbxloop.yaml");
		parse_file(cfg->project_file ? "sbxloop.yaml" : p, 0,
			   SBX_SRC_PROJECT, &raws, &n, &errs);
		free(p);
	}
	if (!o || !o->no_env)
		env_layer(cfg, &raws, &n, &errs);
	apply_all(cfg, raws, n, &errs);
	for (i = 0; i < n; i++)
		raw_clear(&raws[i]);
	free(raws);
	free(user_file);
	resolve_state_dir(cfg);
	cross_checks(cfg, &errs);
	*out = cfg;
	if (errs.len) {
		*errors = sbx_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

int sbx_config_add_component(struct sbx_config *cfg, const char *section,
			     const struct sbxloop_config_key *keys,
			     char **errors)
{
	struct sbx_buf errs = SBX_BUF_INIT;
	struct sbx_config_spec *specs;
	size_t nk = 0, i, j, sl = strlen(section);

	*errors = NULL;
	if (section_is_claimed(cfg, section))
		return 0; /* core sections and repeats are not re-declared */
	while (keys && keys[nk].name)
		nk++;
	if (cfg->n_owned >= SBX_ARRAY_SIZE(cfg->owned_specs))
		return SBXLOOP_ENOMEM;
	specs = sbx_xcalloc(nk + 1, sizeof(*specs));
	cfg->owned_specs[cfg->n_owned++] = specs;
	cfg->sections = sbx_xrealloc(cfg->sections,
				     (cfg->n_sections + 1) * sizeof(char *));
	cfg->sections[cfg->n_sections++] = sbx_xstrdup(section);
	for (i = 0; i < nk; i++) {
		specs[i].path = sbx_xasprintf("%s.%s", section, keys[i].name);
		specs[i].type = keys[i].type;
		specs[i].dflt = keys[i].default_value;
		specs[i].choices = keys[i].choices;
		specs[i].help = keys[i].help;
		add_spec(cfg, &specs[i]);
	}
	/* claim this section's pending entries, in layer order */
	for (i = 0, j = 0; i < cfg->n_pending; i++) {
		struct raw *r = &cfg->pending[i];

		if (strncmp(r->path, section, sl) == 0 && r->path[sl] == '.') {
			struct sbx_config_value *v = find_value(cfg, r->path);

			if (r->path[sl + 1] == '\0')
				; /* an empty mapping of this section */
			else if (v)
				apply_raw(v, r, &errs);
			else
				unknown_key_error(cfg, &errs, r);
			raw_clear(r);
		} else {
			cfg->pending[j++] = *r;
		}
	}
	cfg->n_pending = j;
	if (errs.len) {
		*errors = sbx_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

int sbx_config_finish(struct sbx_config *cfg, char **errors)
{
	struct sbx_buf errs = SBX_BUF_INIT;
	size_t i;

	*errors = NULL;
	for (i = 0; i < cfg->n_pending; i++) {
		struct raw *r = &cfg->pending[i];
		char top[128], buf[128];
		size_t tl = strcspn(r->path, ".");
		const char *hint;

		snprintf(top, sizeof(top), "%.*s", (int)tl, r->path);
		/* report each unknown section once */
		if (i > 0 &&
		    strncmp(cfg->pending[i - 1].path, r->path, tl + 1) == 0)
			continue;
		hint = suggest(cfg, "", top, buf, sizeof(buf));
		if (hint)
			add_error(&errs,
				  r->sect_origin ? r->sect_origin : r->origin,
				  "unknown section '%s' (did you mean '%s'?)",
				  top, hint);
		else
			add_error(&errs,
				  r->sect_origin ? r->sect_origin : r->origin,
				  "unknown section '%s': no core setting or "
				  "loaded plugin component has that name",
				  top);
	}
	if (errs.len) {
		*errors = sbx_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

void sbx_config_free(struct sbx_config *cfg)
{
	size_t i, j;

	if (!cfg)
		return;
	for (i = 0; i < cfg->n_values; i++)
		value_clear(&cfg->values[i]);
	free(cfg->values);
	for (i = 0; i < cfg->n_owned; i++) {
		for (j = 0; cfg->owned_specs[i][j].path; j++)
			free((char *)cfg->owned_specs[i][j].path);
		free(cfg->owned_specs[i]);
	}
	for (i = 0; i < cfg->n_sections; i++)
		free(cfg->sections[i]);
	free(cfg->sections);
	for (i = 0; i < cfg->n_pending; i++)
		raw_clear(&cfg->pending[i]);
	free(cfg->pending);
	free(cfg->project_file);
	free(cfg->cwd);
	free(cfg);
}

/* ---- accessors ---------------------------------------------------------- */

const struct sbx_config_value *sbx_config_get(const struct sbx_config *cfg,
					      const char *path)
{
	return find_value(cfg, path);
}

const char *sbx_config_str(const struct sbx_config *cfg, const char *path)
{
	const struct sbx_config_value *v = find_value(cfg, path);

	return v ? v->str : NULL;
}

long long sbx_config_int(const struct sbx_config *cfg, const char *path,
			 long long dflt)
{
	const char *s = sbx_config_str(cfg, path);

	return s ? strtoll(s, NULL, 10) : dflt;
}

double sbx_config_double(const struct sbx_config *cfg, const char *path,
			 double dflt)
{
	const char *s = sbx_config_str(cfg, path);

	return s ? strtod(s, NULL) : dflt;
}

int sbx_config_bool(const struct sbx_config *cfg, const char *path, int dflt)
{
	const char *s = sbx_config_str(cfg, path);

	return s ? strcmp(s, "true") == 0 : dflt;
}

size_t sbx_config_list_len(const struct sbx_config *cfg, const char *path)
{
	const struct sbx_config_value *v = find_value(cfg, path);

	return v ? v->n_items : 0;
}

const char *sbx_config_list_item(const struct sbx_config *cfg,
				 const char *path, size_t i)
{
	const struct sbx_config_value *v = find_value(cfg, path);

	return v && i < v->n_items ? v->items[i] : NULL;
}

int sbx_config_set(struct sbx_config *cfg, const char *path, const char *value,
		   char **error)
{
	struct sbx_config_value *v = find_value(cfg, path);
	struct sbx_buf errs = SBX_BUF_INIT;
	struct raw r;

	*error = NULL;
	if (!v) {
		*error = sbx_xasprintf("unknown key '%s'", path);
		return SBXLOOP_EINVAL;
	}
	if (parse_inline(value, path, "command line", &r, &errs) == 0) {
		r.source = SBX_SRC_CLI;
		r.from_env = 1;
		apply_raw(v, &r, &errs);
		raw_clear(&r);
	}
	if (strcmp(path, "state_dir") == 0)
		resolve_state_dir(cfg);
	if (errs.len) {
		*error = sbx_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

size_t sbx_config_count(const struct sbx_config *cfg)
{
	return cfg->n_values;
}

const struct sbx_config_value *sbx_config_at(const struct sbx_config *cfg,
					     size_t i)
{
	return i < cfg->n_values ? &cfg->values[i] : NULL;
}

const char *sbx_config_project_file(const struct sbx_config *cfg)
{
	return cfg->project_file;
}

/* ---- rendering ---------------------------------------------------------- */

static int needs_quotes(const char *s)
{
	int b;

	if (!*s || strpbrk(s, ":#,[]{}&*!|>'\"%@`") ||
	    isspace((unsigned char)*s) ||
	    isspace((unsigned char)s[strlen(s) - 1]) || *s == '-' || *s == '?')
		return 1;
	if (!strcmp(s, "~") || !strcasecmp(s, "null") ||
	    parse_bool(s, &b) == 0)
		return 1;
	return 0;
}

static void yaml_scalar(struct sbx_buf *b, const char *s, int is_string)
{
	const char *p;

	if (!is_string || !needs_quotes(s)) {
		sbx_buf_adds(b, s);
		return;
	}
	sbx_buf_addc(b, '"');
	for (p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sbx_buf_addc(b, '\\');
		sbx_buf_addc(b, *p);
	}
	sbx_buf_addc(b, '"');
}

char *sbx_config_value_yaml(const struct sbx_config_value *v)
{
	struct sbx_buf b = SBX_BUF_INIT;
	size_t i;

	if (v->spec->type == SBXLOOP_VALUE_LIST) {
		sbx_buf_addc(&b, '[');
		for (i = 0; i < v->n_items; i++) {
			if (i)
				sbx_buf_adds(&b, ", ");
			yaml_scalar(&b, v->items[i], 1);
		}
		sbx_buf_addc(&b, ']');
	} else if (!v->str) {
		sbx_buf_adds(&b, "null");
	} else {
		yaml_scalar(&b, v->str, v->spec->type == SBXLOOP_VALUE_STRING);
	}
	return sbx_buf_detach(&b);
}

void sbx_config_write_starter(const struct sbx_config *cfg, FILE *out)
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
		const struct sbx_config_value *v = &cfg->values[i];
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
		if (v->source == SBX_SRC_DEFAULT && v->spec->dflt &&
		    *v->spec->dflt)
			text = sbx_xstrdup(v->spec->dflt);
		else
			text = sbx_config_value_yaml(v);
		fprintf(out, "%s%s: %s\n", indent, key, text);
		free(text);
	}
}

static void json_string(struct sbx_buf *b, const char *s)
{
	const unsigned char *p;

	sbx_buf_addc(b, '"');
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			sbx_buf_adds(b, "\\\"");
			break;
		case '\\':
			sbx_buf_adds(b, "\\\\");
			break;
		case '\n':
			sbx_buf_adds(b, "\\n");
			break;
		case '\t':
			sbx_buf_adds(b, "\\t");
			break;
		case '\r':
			sbx_buf_adds(b, "\\r");
			break;
		default:
			if (*p < 0x20)
				sbx_buf_addf(b, "\\u%04x", *p);
			else
				sbx_buf_addc(b, (char)*p);
		}
	}
	sbx_buf_addc(b, '"');
}

char *sbx_config_to_json(const struct sbx_config *cfg)
{
	struct sbx_buf b = SBX_BUF_INIT;
	size_t i, j;

	sbx_buf_addc(&b, '{');
	for (i = 0; i < cfg->n_values; i++) {
		const struct sbx_config_value *v = &cfg->values[i];

		if (i)
			sbx_buf_addc(&b, ',');
		json_string(&b, v->spec->path);
		sbx_buf_addc(&b, ':');
		if (v->spec->type == SBXLOOP_VALUE_LIST) {
			sbx_buf_addc(&b, '[');
			for (j = 0; j < v->n_items; j++) {
				if (j)
					sbx_buf_addc(&b, ',');
				json_string(&b, v->items[j]);
			}
			sbx_buf_addc(&b, ']');
		} else if (!v->str) {
			sbx_buf_adds(&b, "null");
		} else if (v->spec->type == SBXLOOP_VALUE_STRING) {
			json_string(&b, v->str);
		} else {
			sbx_buf_adds(&b, v->str);
		}
	}
	sbx_buf_addc(&b, '}');
	return sbx_buf_detach(&b);
}

/* ---- .env --------------------------------------------------------------- */

int sbx_dotenv_load(const char *path, char **error)
{
	size_t len;
	char *data = sbx_read_file(path, &len, 1 << 20);
	char *line, *save = NULL;
	int lineno = 0;

	*error = NULL;
	if (!data)
		return errno == ENOENT ? 0 : -errno;
	for (line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *eq, *name, *val;
		size_t vl;

		lineno++;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		if (strncmp(p, "export ", 7) == 0)
			p += 7;
		eq = strchr(p, '=');
		if (!eq)
			continue;
		*eq = '\0';
		name = trim_dup(p);
		val = trim_dup(eq + 1);
		vl = strlen(val);
		if (vl >= 2 && (val[0] == '"' || val[0] == '\'') &&
		    val[vl - 1] == val[0]) {
			memmove(val, val + 1, vl - 2);
			val[vl - 2] = '\0';
		} else {
			char *hash = strstr(val, " #");

			if (hash) {
				*hash = '\0';
				vl = strlen(val);
				while (vl &&
				       isspace((unsigned char)val[vl - 1]))
					val[--vl] = '\0';
			}
		}
		if (*name && !getenv(name))
			setenv(name, val, 0);
		free(name);
		free(val);
	}
	free(data);
	return 0;
}

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

#include "config/conf.h"
#include "common/util.h"

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
	enum sl_source source;
	char *origin;      /* "file:line:col" or "SBXLOOP_X" */
	char *key_origin;  /* where the key itself is, or NULL */
	char *sect_origin; /* where its section's key is, or NULL */
};

struct sl_config {
	struct sl_config_value *values;
	size_t n_values;
	struct sl_config_spec *owned_specs[64]; /* per component, owned */
	size_t n_owned;
	char **sections; /* claimed top-level mapping names */
	size_t n_sections;
	struct raw *pending; /* entries of unclaimed sections, in order */
	size_t n_pending, cap_pending;
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

static void value_clear(struct sl_config_value *v)
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

const char *sl_source_name(enum sl_source src)
{
	switch (src) {
	case SL_SRC_DEFAULT:
		return "default";
	case SL_SRC_USER:
		return "user file";
	case SL_SRC_PROJECT:
		return "project file";
	case SL_SRC_ENV:
		return "env";
	case SL_SRC_CLI:
		return "command line";
	}
	return "?";
}

static void add_error(struct sl_buf *errs, const char *origin, const char *fmt,
		      ...) SBXLOOP_PRINTF(3, 4);

static void add_error(struct sl_buf *errs, const char *origin, const char *fmt,
		      ...)
{
	va_list ap;

	if (origin)
		sl_buf_addf(errs, "%s: ", origin);
	va_start(ap, fmt);
	sl_buf_vaddf(errs, fmt, ap);
	va_end(ap);
	sl_buf_addc(errs, '\n');
}

/* ---- the schema ------------------------------------------------------- */

static struct sl_config_value *find_value(const struct sl_config *cfg,
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

	for (i = 0; i < sl_core_schema_len; i++) {
		const char *p = sl_core_schema[i].path;

		if (strncmp(p, name, n) == 0 && p[n] == '.')
			return 1;
	}
	return 0;
}

static int section_is_claimed(const struct sl_config *cfg, const char *name)
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
static const char *suggest(const struct sl_config *cfg, const char *section,
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
		d = sl_levenshtein(key, name);
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

static void unknown_key_error(const struct sl_config *cfg, struct sl_buf *errs,
			      const struct raw *r)
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

static char *trim_dup(const char *s)
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
		add_error(errs, origin, "%s: expected one of %s, found '%s'",
			  spec->path, sl_buf_str(&c), canon);
		sl_buf_release(&c);
		return NULL;
	}
	if (spec->check) {
		char msg[512];

		why = spec->check(spec, canon, msg, sizeof(msg));
		if (why) {
			add_error(errs, origin, "%s: %s", spec->path, why);
			return NULL;
		}
	}
	return sl_xstrdup(canon);
}

/* Apply a raw entry to its value; errors go to errs. */
static void apply_raw(struct sl_config_value *v, const struct raw *r,
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
			char *t = sl_xstrndup(p, len), *tt = trim_dup(t);

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
	v->origin = sl_xstrdup(r->origin);
}

/* ---- YAML ------------------------------------------------------------- */

/*
 * The file is read into a tree of our own rather than libyaml's document:
 * an alias stays a node with its own position (errors through it point at
 * the alias, not at the anchor), anchors are found through a hash table,
 * and what aliases add to the document is counted while it is read, so a
 * "billion laughs" file is refused before anything is expanded.
 */
#define ALIAS_EXPANSION_MAX ((size_t)1 << 20) /* bytes, see ynode.size */
#define YNODE_COST 16 /* what one node weighs beyond its text */

enum ykind { Y_SCALAR, Y_SEQUENCE, Y_MAPPING, Y_ALIAS };

struct ynode {
	enum ykind kind;
	yaml_mark_t mark;
	char *value; /* scalars: the text (may hold NULs), NUL-terminated */
	size_t len;
	int plain;           /* a plain scalar: may be null */
	struct ynode **kids; /* sequence items; mapping key, value, ... */
	size_t n_kids, cap_kids;
	struct ynode *target; /* aliases */
	size_t size;          /* weight with every alias expanded */
	int open;             /* a collection still being read */
};

struct yanchor {
	char *name;
	struct ynode *node;
	struct yanchor *next;
};

struct ydoc {
	struct ynode **all; /* every node, owned */
	size_t n_all, cap_all;
	struct yanchor **buckets;
	size_t n_buckets, n_anchors;
	struct ynode *root;
	size_t expanded; /* what aliases added, saturating */
};

static void grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;

	if (need <= *cap)
		return;
	*cap = *cap ? *cap * 2 : 8;
	if (*cap < need)
		*cap = need;
	*p = sl_xrealloc(*p, *cap * elem);
}

static size_t sat_add(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t anchor_hash(const char *s, size_t nb)
{
	size_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h % nb;
}

static void anchor_set(struct ydoc *d, const char *name, struct ynode *n)
{
	struct yanchor *a;
	size_t i;

	if (d->n_anchors + 1 > d->n_buckets * 2) {
		size_t nb = d->n_buckets ? d->n_buckets * 4 : 64;
		struct yanchor **b = sl_xcalloc(nb, sizeof(*b));

		for (i = 0; i < d->n_buckets; i++) {
			while (d->buckets[i]) {
				size_t h;

				a = d->buckets[i];
				d->buckets[i] = a->next;
				h = anchor_hash(a->name, nb);
				a->next = b[h];
				b[h] = a;
			}
		}
		free(d->buckets);
		d->buckets = b;
		d->n_buckets = nb;
	}
	/* a redefined anchor shadows the earlier one: newest first */
	a = sl_xcalloc(1, sizeof(*a));
	a->name = sl_xstrdup(name);
	a->node = n;
	i = anchor_hash(name, d->n_buckets);
	a->next = d->buckets[i];
	d->buckets[i] = a;
	d->n_anchors++;
}

static struct ynode *anchor_get(const struct ydoc *d, const char *name)
{
	const struct yanchor *a;

	if (!d->n_buckets)
		return NULL;
	for (a = d->buckets[anchor_hash(name, d->n_buckets)]; a; a = a->next)
		if (strcmp(a->name, name) == 0)
			return a->node;
	return NULL;
}

static void ydoc_free(struct ydoc *d)
{
	size_t i;

	for (i = 0; i < d->n_all; i++) {
		free(d->all[i]->value);
		free(d->all[i]->kids);
		free(d->all[i]);
	}
	free(d->all);
	for (i = 0; i < d->n_buckets; i++) {
		while (d->buckets[i]) {
			struct yanchor *a = d->buckets[i];

			d->buckets[i] = a->next;
			free(a->name);
			free(a);
		}
	}
	free(d->buckets);
	memset(d, 0, sizeof(*d));
}

static struct ynode *ynode_new(struct ydoc *d, enum ykind kind,
			       yaml_mark_t mark)
{
	struct ynode *n = sl_xcalloc(1, sizeof(*n));

	n->kind = kind;
	n->mark = mark;
	n->size = YNODE_COST;
	grow(&d->all, &d->cap_all, d->n_all + 1, sizeof(*d->all));
	d->all[d->n_all++] = n;
	return n;
}

/* Line and column of a byte offset, for reader errors libyaml gives so. */
static yaml_mark_t offset_mark(const char *text, size_t len, size_t off)
{
	yaml_mark_t m = {0, 0, 0};
	size_t i;

	for (i = 0; i < off && i < len; i++) {
		if (text[i] == '\n') {
			m.line++;
			m.column = 0;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			m.column++;
		}
	}
	m.index = off;
	return m;
}

static void parser_error(const yaml_parser_t *p, const char *file,
			 const char *text, size_t len, struct sl_buf *errs)
{
	yaml_mark_t m = p->problem_mark;

	if (p->error == YAML_READER_ERROR)
		m = offset_mark(text, len, p->problem_offset);
	if (p->context)
		sl_buf_addf(errs, "%s:%zu:%zu: invalid YAML: %s %s\n", file,
			    m.line + 1, m.column + 1, p->problem, p->context);
	else
		sl_buf_addf(errs, "%s:%zu:%zu: invalid YAML: %s\n", file,
			    m.line + 1, m.column + 1,
			    p->problem ? p->problem : "parse error");
}

static void yerror(struct sl_buf *errs, const char *file, yaml_mark_t m,
		   const char *fmt, ...) SBXLOOP_PRINTF(4, 5);

static void yerror(struct sl_buf *errs, const char *file, yaml_mark_t m,
		   const char *fmt, ...)
{
	va_list ap;

	sl_buf_addf(errs, "%s:%zu:%zu: ", file, m.line + 1, m.column + 1);
	va_start(ap, fmt);
	sl_buf_vaddf(errs, fmt, ap);
	va_end(ap);
	sl_buf_addc(errs, '\n');
}

/*
 * Read exactly one YAML document from `text` into `d` (root NULL when the
 * stream holds none). 0, or -1 with one error added to errs.
 */
static int ydoc_load(struct ydoc *d, const char *text, size_t len,
		     const char *file, struct sl_buf *errs)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct ynode **stack = NULL, *n;
	size_t depth = 0, cap = 0;
	int docs = 0, rc = 0, done = 0;

	memset(d, 0, sizeof(*d));
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     len);
	while (!done && rc == 0) {
		const char *anchor = NULL;

		if (!yaml_parser_parse(&parser, &ev)) {
			parser_error(&parser, file, text, len, errs);
			rc = -1;
			break;
		}
		n = NULL;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				sl_buf_addf(errs,
					    "%s: more than one YAML document; "
					    "sbxloop reads exactly one\n",
					    file);
				rc = -1;
			}
			break;
		case YAML_SCALAR_EVENT:
			n = ynode_new(d, Y_SCALAR, ev.start_mark);
			n->len = ev.data.scalar.length;
			n->value = sl_xstrndup(
				(const char *)ev.data.scalar.value, n->len);
			n->plain = ev.data.scalar.style ==
				   YAML_PLAIN_SCALAR_STYLE;
			n->size = sat_add(n->size, n->len);
			anchor = (const char *)ev.data.scalar.anchor;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			n = ynode_new(d,
				      ev.type == YAML_SEQUENCE_START_EVENT
					      ? Y_SEQUENCE
					      : Y_MAPPING,
				      ev.start_mark);
			n->open = 1;
			anchor =
				(const char
					 *)(ev.type == YAML_SEQUENCE_START_EVENT
						    ? ev.data.sequence_start
							      .anchor
						    : ev.data.mapping_start
							      .anchor);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT: {
			struct ynode *c = stack[--depth];
			size_t i;

			for (i = 0; i < c->n_kids; i++)
				c->size = sat_add(c->size, c->kids[i]->size);
			c->open = 0;
			break;
		}
		case YAML_ALIAS_EVENT: {
			const char *name = (const char *)ev.data.alias.anchor;
			struct ynode *t = anchor_get(d, name);

			if (!t || t->open) {
				if (t)
					yerror(errs, file, ev.start_mark,
					       "invalid YAML: alias '*%s' is "
					       "inside its own anchor",
					       name);
				else
					yerror(errs, file, ev.start_mark,
					       "invalid YAML: alias '*%s' names "
					       "no anchor defined before it",
					       name);
				rc = -1;
				break;
			}
			n = ynode_new(d, Y_ALIAS, ev.start_mark);
			n->target = t;
			n->size = t->size;
			d->expanded = sat_add(d->expanded, t->size);
			if (d->expanded > ALIAS_EXPANSION_MAX) {
				yerror(errs, file, ev.start_mark,
				       "alias '*%s' expands the document past "
				       "1 MiB, the limit for what YAML aliases "
				       "may add",
				       name);
				rc = -1;
			}
			break;
		}
		default:
			break;
		}
		if (n && rc == 0) {
			if (anchor)
				anchor_set(d, anchor, n);
			if (depth) {
				struct ynode *p = stack[depth - 1];

				grow(&p->kids, &p->cap_kids, p->n_kids + 1,
				     sizeof(*p->kids));
				p->kids[p->n_kids++] = n;
			} else {
				d->root = n;
			}
			if (n->open) {
				grow(&stack, &cap, depth + 1, sizeof(*stack));
				stack[depth++] = n;
			}
		}
		yaml_event_delete(&ev);
	}
	free(stack);
	yaml_parser_delete(&parser);
	if (rc < 0)
		ydoc_free(d);
	return rc;
}

/* An alias's target; the first alias on the way is where errors point. */
static struct ynode *deref(struct ynode *n, const yaml_mark_t **via)
{
	if (n->kind != Y_ALIAS)
		return n;
	if (!*via)
		*via = &n->mark;
	return n->target;
}

/* Where values come from: a file, or a variable (no line and column). */
struct ysrc {
	const char *name;
	int marks;
};

static char *node_origin(const struct ysrc *src, const struct ynode *n,
			 const yaml_mark_t *via)
{
	yaml_mark_t m = via ? *via : n->mark;

	if (!src->marks)
		return sl_xstrdup(src->name);
	return sl_xasprintf("%s:%zu:%zu", src->name, m.line + 1, m.column + 1);
}

static int scalar_is_null(const struct ynode *n)
{
	const char *s = n->value;

	if (!n->plain)
		return 0;
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") ||
	       !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/*
 * The first character a value or key may not hold: C0 controls (a tab is
 * allowed in values), DEL, and C1 controls (U+0080 to U+009F in UTF-8).
 * No key takes multi-line text, so a line break is refused too. Returns
 * the code point and sets *at to its byte offset, or returns -1.
 */
static long find_control(const char *s, size_t len, int allow_tab, size_t *at)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(c == '\t' && allow_tab)) || c == 0x7f) {
			*at = i;
			return c;
		}
		if (c == 0xc2 && i + 1 < len &&
		    (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f) {
			*at = i;
			return (unsigned char)s[i + 1];
		}
	}
	return -1;
}

/* 0, or -1 with an error naming `what` ("budgets.max_tasks", a key...). */
static int reject_controls(const char *s, size_t len, int is_key,
			   const char *origin, const char *what,
			   struct sl_buf *errs)
{
	size_t at;
	long c = find_control(s, len, !is_key, &at);

	if (c < 0)
		return 0;
	if (is_key)
		add_error(errs, origin,
			  "control character U+%04lX in a key (byte %zu)", c,
			  at + 1);
	else
		add_error(errs, origin,
			  "%s: control character U+%04lX in the value (byte "
			  "%zu)",
			  what, c, at + 1);
	return -1;
}

/* Turn a value node into a raw entry; 0 or -1 with an error added. */
static int node_to_raw(struct ynode *node, const yaml_mark_t *via,
		       const struct ysrc *file, const char *path,
		       struct raw *r, struct sl_buf *errs)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	node = deref(node, &via);
	r->path = sl_xstrdup(path);
	r->origin = node_origin(file, node, via);
	switch (node->kind) {
	case Y_SCALAR:
		if (reject_controls(node->value, node->len, 0, r->origin, path,
				    errs) < 0) {
			raw_clear(r);
			return -1;
		}
		if (scalar_is_null(node))
			r->is_null = 1;
		else
			r->scalar = sl_xstrdup(node->value);
		return 0;
	case Y_SEQUENCE:
		r->is_list = 1;
		r->items = sl_xcalloc(node->n_kids + 1, sizeof(char *));
		for (i = 0; i < node->n_kids; i++) {
			const yaml_mark_t *ivia = via;
			struct ynode *item = deref(node->kids[i], &ivia);
			char *o, what[160];

			if (item->kind != Y_SCALAR) {
				o = node_origin(file, item, ivia);
				add_error(
					errs, o,
					"%s: list items must be plain values",
					path);
				free(o);
				raw_clear(r);
				return -1;
			}
			snprintf(what, sizeof(what), "%s[%zu]", path, i);
			if (reject_controls(item->value, item->len, 0,
					    r->origin, what, errs) < 0) {
				raw_clear(r);
				return -1;
			}
			r->items[r->n_items++] = sl_xstrdup(item->value);
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

struct keyref {
	const char *key;
	size_t pair;
};

static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->pair < y->pair ? -1 : x->pair > y->pair;
}

/*
 * For each pair of a mapping, the pair whose key it repeats, or SIZE_MAX:
 * sorted, so a mapping of n keys costs n log n. Caller frees.
 */
static size_t *find_duplicates(struct ynode *map, const yaml_mark_t *via)
{
	size_t np = map->n_kids / 2, i, m = 0;
	size_t *first = sl_xcalloc(np + 1, sizeof(*first));
	struct keyref *refs = sl_xcalloc(np + 1, sizeof(*refs));

	for (i = 0; i < np; i++) {
		const yaml_mark_t *kvia = via;
		struct ynode *k = deref(map->kids[2 * i], &kvia);

		first[i] = SIZE_MAX;
		if (k->kind == Y_SCALAR) {
			refs[m].key = k->value;
			refs[m++].pair = i;
		}
	}
	qsort(refs, m, sizeof(*refs), keyref_cmp);
	for (i = 1; i < m; i++) {
		if (strcmp(refs[i].key, refs[i - 1].key) != 0)
			continue;
		first[refs[i].pair] = first[refs[i - 1].pair] != SIZE_MAX
					      ? first[refs[i - 1].pair]
					      : refs[i - 1].pair;
	}
	free(refs);
	return first;
}

static void push_raw(struct raw **out, size_t *n_out, size_t *cap,
		     struct raw *r)
{
	grow(out, cap, *n_out + 1, sizeof(**out));
	(*out)[(*n_out)++] = *r;
}

/*
 * Walk a mapping at `prefix` ("" at the top), appending raw entries.
 * Nested mappings one level down become "section.key" entries. `via` is
 * the alias the mapping was reached through, if any.
 */
static void walk_mapping(struct ynode *map, const yaml_mark_t *via,
			 const struct ysrc *file, const char *prefix,
			 const char *sect_origin, int depth, struct raw **out,
			 size_t *n_out, size_t *cap_out, struct sl_buf *errs)
{
	size_t *first = find_duplicates(map, via);
	size_t i, np = map->n_kids / 2;

	for (i = 0; i < np; i++) {
		const yaml_mark_t *kvia = via, *vvia = via;
		struct ynode *k = deref(map->kids[2 * i], &kvia);
		struct ynode *v = deref(map->kids[2 * i + 1], &vvia);
		char *path, *o;
		const char *key;
		struct raw r;

		o = node_origin(file, k, kvia);
		if (k->kind != Y_SCALAR) {
			add_error(errs, o, "keys must be plain names");
			free(o);
			continue;
		}
		if (reject_controls(k->value, k->len, 1, o, NULL, errs) < 0) {
			free(o);
			continue;
		}
		key = k->value;
		if (first[i] != SIZE_MAX) {
			const yaml_mark_t *fvia = via;
			struct ynode *fk =
				deref(map->kids[2 * first[i]], &fvia);

			add_error(errs, o,
				  "duplicate key '%s%s%s' (first defined at "
				  "line %zu)",
				  prefix, *prefix ? "." : "", key,
				  (fvia ? *fvia : fk->mark).line + 1);
			free(o);
			continue;
		}
		free(o);
		path = *prefix ? sl_xasprintf("%s.%s", prefix, key)
			       : sl_xstrdup(key);
		if (v->kind == Y_MAPPING) {
			if (depth > 0) {
				o = node_origin(file, v, vvia);
				add_error(errs, o,
					  "%s: expected a value or a list, "
					  "found a mapping",
					  path);
			} else {
				o = node_origin(file, k, kvia);
				walk_mapping(v, vvia, file, path, o, depth + 1,
					     out, n_out, cap_out, errs);
			}
			free(o);
			free(path);
			continue;
		}
		if (depth == 0 && section_is_core(key)) {
			o = node_origin(file, v, vvia);
			add_error(errs, o,
				  "%s: expected a mapping of settings", key);
			free(o);
			free(path);
			continue;
		}
		if (node_to_raw(v, vvia, file, path, &r, errs) == 0) {
			r.key_origin = node_origin(file, k, kvia);
			r.sect_origin = sl_xstrdup(sect_origin);
			push_raw(out, n_out, cap_out, &r);
		}
		free(path);
	}
	free(first);
}

/* Read a whole file; NULL with errno set on failure. Caller frees. */
static char *slurp(FILE *f, size_t *len)
{
	struct sl_buf b = SL_BUF_INIT;
	char chunk[8192];
	size_t n;

	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sl_buf_add(&b, chunk, n);
	if (ferror(f)) {
		int e = errno ? errno : EIO;

		sl_buf_release(&b);
		errno = e;
		return NULL;
	}
	*len = b.len;
	return b.buf ? sl_buf_detach(&b) : sl_xstrdup("");
}

/* Parse one file; a missing optional file is not an error. */
static int parse_file(const char *file, int required, enum sl_source src,
		      struct raw **out, size_t *n_out, size_t *cap_out,
		      struct sl_buf *errs)
{
	struct ydoc doc;
	struct ynode *root;
	struct ysrc ys = {file, 1};
	size_t first = *n_out, i, len = 0;
	FILE *f = fopen(file, "rb");
	char *text;
	int rc = 0;

	if (!f) {
		if (errno == ENOENT && !required)
			return 0;
		sl_buf_addf(errs, "cannot open '%s': %s\n", file,
			    strerror(errno));
		return -1;
	}
	errno = 0;
	text = slurp(f, &len);
	fclose(f);
	if (!text) {
		/* a directory opens, and fails at the first read */
		sl_buf_addf(errs, "cannot read config '%s': %s\n", file,
			    strerror(errno));
		return -1;
	}
	if (ydoc_load(&doc, text, len, file, errs) < 0) {
		free(text);
		return -1;
	}
	root = doc.root;
	if (root && root->kind == Y_SCALAR && scalar_is_null(root))
		root = NULL;
	if (root && root->kind != Y_MAPPING) {
		sl_buf_addf(errs,
			    "%s:%zu:%zu: expected a mapping of settings at "
			    "the top level\n",
			    file, root->mark.line + 1, root->mark.column + 1);
		rc = -1;
	} else if (root) {
		walk_mapping(root, NULL, &ys, "", NULL, 0, out, n_out, cap_out,
			     errs);
	}
	for (i = first; i < *n_out; i++)
		(*out)[i].source = src;
	ydoc_free(&doc);
	free(text);
	return rc;
}

/* Parse a default or environment value as a YAML flow value. */
static int parse_inline(const char *text, const char *path, const char *origin,
			struct raw *r, struct sl_buf *errs)
{
	struct ysrc ys = {origin, 0};
	const yaml_mark_t *via = NULL;
	struct ydoc doc;
	struct sl_buf tmp = SL_BUF_INIT;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (ydoc_load(&doc, text, strlen(text), origin, &tmp) < 0) {
		/* not YAML: take the raw text as a string */
		sl_buf_release(&tmp);
		if (reject_controls(text, strlen(text), 0, origin, path,
				    errs) < 0)
			return -1;
		r->path = sl_xstrdup(path);
		r->origin = sl_xstrdup(origin);
		r->scalar = sl_xstrdup(text);
		return 0;
	}
	if (!doc.root) {
		r->path = sl_xstrdup(path);
		r->origin = sl_xstrdup(origin);
		r->scalar = sl_xstrdup("");
		rc = 0;
	} else if (deref(doc.root, &via)->kind == Y_MAPPING) {
		add_error(errs, origin,
			  "%s: expected a value or a list, found a mapping",
			  path);
	} else {
		rc = node_to_raw(doc.root, NULL, &ys, path, r, errs);
	}
	ydoc_free(&doc);
	return rc;
}

/* ---- layers ------------------------------------------------------------ */

static void add_spec(struct sl_config *cfg, const struct sl_config_spec *s)
{
	struct sl_config_value *v;
	struct sl_buf errs = SL_BUF_INIT;
	struct raw r;

	cfg->values = sl_xrealloc(cfg->values,
				  (cfg->n_values + 1) * sizeof(*cfg->values));
	v = &cfg->values[cfg->n_values++];
	memset(v, 0, sizeof(*v));
	v->spec = s;
	v->source = SL_SRC_DEFAULT;
	if (!s->dflt)
		return;
	if (parse_inline(s->dflt, s->path, "default", &r, &errs) == 0) {
		apply_raw(v, &r, &errs);
		raw_clear(&r);
	}
	v->source = SL_SRC_DEFAULT;
	free(v->origin);
	v->origin = NULL;
	if (errs.len) /* a broken built-in default is a programming error */
		fprintf(stderr, "bug: default of %s: %s", s->path,
			sl_buf_str(&errs));
	sl_buf_release(&errs);
}

/*
 * SBXLOOP_ variables: each one is a key (SBXLOOP_KEY, SBXLOOP_SECTION__KEY)
 * or one of the variables sbxloop, its worker or its test harness read
 * (sl_tool_variable); anything else is a mistake and is reported.
 */
static void env_layer(struct sl_config *cfg, struct raw **out, size_t *n,
		      size_t *cap, struct sl_buf *errs)
{
	char **e;

	for (e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char *name, *path, *p, buf[128];
		const char *hint;
		size_t i, len;
		int bad = 0;
		struct raw r;

		if (!eq || strncmp(*e, "SBXLOOP_", 8) != 0)
			continue;
		name = sl_xstrndup(*e, (size_t)(eq - *e));
		if (sl_tool_variable(name)) {
			free(name);
			continue;
		}
		len = strlen(name + 8);
		path = sl_xcalloc(len + 1, 1);
		for (i = 0, p = path; i < len; i++) {
			char c = name[8 + i];

			if (!isalnum((unsigned char)c) && c != '_') {
				name[8 + i] = '?'; /* never echo controls */
				bad = 1;
			}
			if (c == '_' && name[8 + i + 1] == '_') {
				*p++ = '.';
				i++;
			} else {
				*p++ = (char)tolower((unsigned char)c);
			}
		}
		if (!*path) {
			add_error(
				errs, name,
				"no key after the prefix: set SBXLOOP_KEY or "
				"SBXLOOP_SECTION__KEY, or unset it");
		} else if (bad || path[0] == '.' || strstr(path, "..") ||
			   path[strlen(path) - 1] == '.') {
			add_error(errs, name,
				  "not a key name: set SBXLOOP_KEY or "
				  "SBXLOOP_SECTION__KEY, or unset it");
		} else if (!strchr(path, '.') && !find_value(cfg, path)) {
			if (section_is_core(path))
				add_error(errs, name,
					  "'%s' is a section: set one of its "
					  "keys as %s__KEY",
					  path, name);
			else if ((hint = suggest(cfg, "", path, buf,
						 sizeof(buf))))
				add_error(errs, name,
					  "unknown key '%s' (did you mean "
					  "'%s'?)",
					  path, hint);
			else
				add_error(errs, name,
					  "unknown key '%s', and not a "
					  "variable sbxloop reads",
					  path);
		} else if (parse_inline(eq + 1, path, name, &r, errs) == 0) {
			r.source = SL_SRC_ENV;
			r.from_env = 1;
			push_raw(out, n, cap, &r);
		}
		free(name);
		free(path);
	}
}

/* Apply the raw entries the schema knows; keep the rest pending. */
static void apply_all(struct sl_config *cfg, struct raw *raws, size_t n,
		      struct sl_buf *errs)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct raw *r = &raws[i];
		struct sl_config_value *v = find_value(cfg, r->path);
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
			char *marker = sl_xasprintf("%s.", r->path);

			free(r->path);
			r->path = marker;
			free(r->sect_origin);
			r->sect_origin = sl_xstrdup(r->key_origin);
		} else if (!strchr(r->path, '.') ||
			   section_is_claimed(cfg, top)) {
			unknown_key_error(cfg, errs, r);
			raw_clear(r);
			continue;
		}
		push_raw(&cfg->pending, &cfg->n_pending, &cfg->cap_pending, r);
		memset(r, 0, sizeof(*r));
	}
}

static char *home_dir(void)
{
	const char *h = getenv("HOME");

	return sl_xstrdup(h && *h ? h : "/");
}

static void resolve_state_dir(struct sl_config *cfg)
{
	struct sl_config_value *v = find_value(cfg, "state_dir");
	char *home, *s;

	if (!v || !v->str)
		return;
	home = home_dir();
	if (strcmp(v->str, "~") == 0)
		s = sl_xstrdup(home);
	else if (strncmp(v->str, "~/", 2) == 0)
		s = sl_xasprintf("%s/%s", home, v->str + 2);
	else if (v->str[0] != '/')
		s = sl_xasprintf("%s/%s", cfg->cwd, v->str);
	else
		s = sl_xstrdup(v->str);
	free(v->str);
	v->str = s;
	free(home);
}

static void cross_checks(struct sl_config *cfg, struct sl_buf *errs)
{
	static const char *const pairs[][2] = {
		{"limits.disk_warn", "limits.disk_abort"},
		{"limits.mem_warn", "limits.mem_abort"},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(pairs); i++) {
		const struct sl_config_value *w = find_value(cfg, pairs[i][0]);
		const struct sl_config_value *a = find_value(cfg, pairs[i][1]);
		double wv = sl_config_double(cfg, pairs[i][0], 0);
		double av = sl_config_double(cfg, pairs[i][1], 0);

		if (av > 0 && !(av > wv)) {
			const struct sl_config_value *blame =
				a->source >= w->source ? a : w;

			add_error(errs, blame->origin,
				  "%s (%g) must be greater than %s (%g), or 0 "
				  "to disable it",
				  pairs[i][1], av, pairs[i][0], wv);
		}
	}
}

int sl_config_load(struct sl_config **out, const struct sl_config_opts *o,
		   char **errors)
{
	struct sl_config *cfg = sl_xcalloc(1, sizeof(*cfg));
	struct sl_buf errs = SL_BUF_INIT;
	struct raw *raws = NULL;
	size_t n = 0, cap = 0, i;
	char cwd[4096];
	char *user_file = NULL;
	const char *xdg;

	*out = NULL;
	*errors = NULL;
	if (o && o->cwd)
		cfg->cwd = sl_xstrdup(o->cwd);
	else
		cfg->cwd = sl_xstrdup(getcwd(cwd, sizeof(cwd)) ? cwd : ".");
	for (i = 0; i < sl_core_schema_len; i++)
		add_spec(cfg, &sl_core_schema[i]);

	if (!o || !o->no_user_file) {
		xdg = getenv("XDG_CONFIG_HOME");
		if (xdg && *xdg) {
			user_file =
				sl_xasprintf("%s/sbxloop/config.yaml", xdg);
		} else {
			char *home = home_dir();

			user_file = sl_xasprintf(
				"%s/.config/sbxloop/config.yaml", home);
			free(home);
		}
		parse_file(user_file, 0, SL_SRC_USER, &raws, &n, &cap, &errs);
	}
	if (o && o->config_file) {
		cfg->project_file = sl_xstrdup(o->config_file);
		parse_file(o->config_file, 1, SL_SRC_PROJECT, &raws, &n, &cap,
			   &errs);
	} else {
		char *p = sl_xasprintf("%s/sbxloop.yaml", cfg->cwd);

		if (access(p, F_OK) == 0)
			cfg->project_file = sl_xstrdup("sbxloop.yaml");
		parse_file(cfg->project_file ? "sbxloop.yaml" : p, 0,
			   SL_SRC_PROJECT, &raws, &n, &cap, &errs);
		free(p);
	}
	if (!o || !o->no_env)
		env_layer(cfg, &raws, &n, &cap, &errs);
	apply_all(cfg, raws, n, &errs);
	for (i = 0; i < n; i++)
		raw_clear(&raws[i]);
	free(raws);
	free(user_file);
	resolve_state_dir(cfg);
	cross_checks(cfg, &errs);
	*out = cfg;
	if (errs.len) {
		*errors = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

int sl_config_add_component(struct sl_config *cfg, const char *section,
			    const struct sbxloop_config_key *keys,
			    char **errors)
{
	struct sl_buf errs = SL_BUF_INIT;
	struct sl_config_spec *specs;
	size_t nk = 0, i, j, sl = strlen(section);

	*errors = NULL;
	if (section_is_claimed(cfg, section))
		return 0; /* core sections and repeats are not re-declared */
	while (keys && keys[nk].name)
		nk++;
	if (cfg->n_owned >= SL_ARRAY_SIZE(cfg->owned_specs))
		return SBXLOOP_ENOMEM;
	specs = sl_xcalloc(nk + 1, sizeof(*specs));
	cfg->owned_specs[cfg->n_owned++] = specs;
	cfg->sections = sl_xrealloc(cfg->sections,
				    (cfg->n_sections + 1) * sizeof(char *));
	cfg->sections[cfg->n_sections++] = sl_xstrdup(section);
	for (i = 0; i < nk; i++) {
		specs[i].path = sl_xasprintf("%s.%s", section, keys[i].name);
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
			struct sl_config_value *v = find_value(cfg, r->path);

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
		*errors = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

int sl_config_finish(struct sl_config *cfg, char **errors)
{
	struct sl_buf errs = SL_BUF_INIT;
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
		*errors = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

void sl_config_free(struct sl_config *cfg)
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

const struct sl_config_value *sl_config_get(const struct sl_config *cfg,
					    const char *path)
{
	return find_value(cfg, path);
}

const char *sl_config_str(const struct sl_config *cfg, const char *path)
{
	const struct sl_config_value *v = find_value(cfg, path);

	return v ? v->str : NULL;
}

long long sl_config_int(const struct sl_config *cfg, const char *path,
			long long dflt)
{
	const char *s = sl_config_str(cfg, path);

	return s ? strtoll(s, NULL, 10) : dflt;
}

double sl_config_double(const struct sl_config *cfg, const char *path,
			double dflt)
{
	const char *s = sl_config_str(cfg, path);

	return s ? strtod(s, NULL) : dflt;
}

int sl_config_bool(const struct sl_config *cfg, const char *path, int dflt)
{
	const char *s = sl_config_str(cfg, path);

	return s ? strcmp(s, "true") == 0 : dflt;
}

size_t sl_config_list_len(const struct sl_config *cfg, const char *path)
{
	const struct sl_config_value *v = find_value(cfg, path);

	return v ? v->n_items : 0;
}

const char *sl_config_list_item(const struct sl_config *cfg, const char *path,
				size_t i)
{
	const struct sl_config_value *v = find_value(cfg, path);

	return v && i < v->n_items ? v->items[i] : NULL;
}

int sl_config_set(struct sl_config *cfg, const char *path, const char *value,
		  char **error)
{
	struct sl_config_value *v = find_value(cfg, path);
	struct sl_buf errs = SL_BUF_INIT;
	struct raw r;

	*error = NULL;
	if (!v) {
		*error = sl_xasprintf("unknown key '%s'", path);
		return SBXLOOP_EINVAL;
	}
	if (parse_inline(value, path, "command line", &r, &errs) == 0) {
		r.source = SL_SRC_CLI;
		r.from_env = 1;
		apply_raw(v, &r, &errs);
		raw_clear(&r);
	}
	if (strcmp(path, "state_dir") == 0)
		resolve_state_dir(cfg);
	if (errs.len) {
		*error = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

size_t sl_config_count(const struct sl_config *cfg)
{
	return cfg->n_values;
}

const struct sl_config_value *sl_config_at(const struct sl_config *cfg,
					   size_t i)
{
	return i < cfg->n_values ? &cfg->values[i] : NULL;
}

const char *sl_config_project_file(const struct sl_config *cfg)
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

static void json_string(struct sl_buf *b, const char *s)
{
	const unsigned char *p;

	sl_buf_addc(b, '"');
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			sl_buf_adds(b, "\\\"");
			break;
		case '\\':
			sl_buf_adds(b, "\\\\");
			break;
		case '\n':
			sl_buf_adds(b, "\\n");
			break;
		case '\t':
			sl_buf_adds(b, "\\t");
			break;
		case '\r':
			sl_buf_adds(b, "\\r");
			break;
		default:
			if (*p < 0x20)
				sl_buf_addf(b, "\\u%04x", *p);
			else
				sl_buf_addc(b, (char)*p);
		}
	}
	sl_buf_addc(b, '"');
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
		json_string(&b, v->spec->path);
		sl_buf_addc(&b, ':');
		if (v->spec->type == SBXLOOP_VALUE_LIST) {
			sl_buf_addc(&b, '[');
			for (j = 0; j < v->n_items; j++) {
				if (j)
					sl_buf_addc(&b, ',');
				json_string(&b, v->items[j]);
			}
			sl_buf_addc(&b, ']');
		} else if (!v->str) {
			sl_buf_adds(&b, "null");
		} else if (v->spec->type == SBXLOOP_VALUE_STRING) {
			json_string(&b, v->str);
		} else {
			sl_buf_adds(&b, v->str);
		}
	}
	sl_buf_addc(&b, '}');
	return sl_buf_detach(&b);
}

/* ---- .env --------------------------------------------------------------- */

int sl_dotenv_load(const char *path, char **error)
{
	size_t len;
	char *data = sl_read_file(path, &len, 1 << 20);
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

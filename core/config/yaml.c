/*
 * Reading YAML with libyaml: a config file or an inline value (a default,
 * a variable, a command-line flag) becomes a list of raw entries
 * ("section.key" with its text and file:line:column). Caps what aliases
 * may add while the file is read, refuses duplicate keys and control
 * characters, and points errors through an alias at the alias. Called by
 * the layers in conf.c only (sl_conf_parse_file, sl_conf_parse_inline).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/conf.h"
#include "config/conf_internal.h"
#include "common/util.h"

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
	sl_conf_grow(&d->all, &d->cap_all, d->n_all + 1, sizeof(*d->all));
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

				sl_conf_grow(&p->kids, &p->cap_kids,
					     p->n_kids + 1, sizeof(*p->kids));
				p->kids[p->n_kids++] = n;
			} else {
				d->root = n;
			}
			if (n->open) {
				sl_conf_grow(&stack, &cap, depth + 1,
					     sizeof(*stack));
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
		sl_conf_error(errs, origin,
			      "control character U+%04lX in a key (byte %zu)",
			      c, at + 1);
	else
		sl_conf_error(
			errs, origin,
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
			sl_conf_raw_release(r);
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
				sl_conf_error(
					errs, o,
					"%s: list items must be plain values",
					path);
				free(o);
				sl_conf_raw_release(r);
				return -1;
			}
			snprintf(what, sizeof(what), "%s[%zu]", path, i);
			if (reject_controls(item->value, item->len, 0,
					    r->origin, what, errs) < 0) {
				sl_conf_raw_release(r);
				return -1;
			}
			r->items[r->n_items++] = sl_xstrdup(item->value);
		}
		return 0;
	default:
		sl_conf_error(
			errs, r->origin,
			"%s: expected a value or a list, found a mapping",
			path);
		sl_conf_raw_release(r);
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
			sl_conf_error(errs, o, "keys must be plain names");
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

			sl_conf_error(
				errs, o,
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
				sl_conf_error(
					errs, o,
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
		if (depth == 0 && sl_conf_section_is_core(key)) {
			o = node_origin(file, v, vvia);
			sl_conf_error(errs, o,
				      "%s: expected a mapping of settings",
				      key);
			free(o);
			free(path);
			continue;
		}
		if (node_to_raw(v, vvia, file, path, &r, errs) == 0) {
			r.key_origin = node_origin(file, k, kvia);
			r.sect_origin = sl_xstrdup(sect_origin);
			sl_conf_raw_push(out, n_out, cap_out, &r);
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
int sl_conf_parse_file(const char *file, int required, enum sl_source src,
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
int sl_conf_parse_inline(const char *text, const char *path,
			 const char *origin, struct raw *r,
			 struct sl_buf *errs)
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
		sl_conf_error(
			errs, origin,
			"%s: expected a value or a list, found a mapping",
			path);
	} else {
		rc = node_to_raw(doc.root, NULL, &ys, path, r, errs);
	}
	ydoc_free(&doc);
	return rc;
}

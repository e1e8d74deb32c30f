/*
 * What the files of core/config/ share with one another and with nothing
 * else: the loaded configuration's layout, the raw entries the YAML reader
 * produces and the layers apply, and the helpers between them. The rest
 * of the core includes config/conf.h only.
 */
#ifndef SL_CONF_INTERNAL_H
#define SL_CONF_INTERNAL_H

#include <stddef.h>

#include "config/conf.h"
#include "common/util.h"

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

/* ---- conf.c ---------------------------------------------------------- */

/* Free what a raw entry owns and zero it. */
void sl_conf_raw_release(struct raw *r);
/* Append *r to (*out)[0..*n_out); the array takes what r owns. */
void sl_conf_raw_push(struct raw **out, size_t *n_out, size_t *cap,
		      struct raw *r);
/* Free what a value owns (text, items, origin) and unset it. */
void sl_conf_value_release(struct sl_config_value *v);
/* Grow the array *pp of *cap elements of `elem` bytes to hold `need`. */
void sl_conf_grow(void *pp, size_t *cap, size_t need, size_t elem);
/* Append "origin: message\n" (no prefix when origin is NULL) to errs. */
void sl_conf_error(struct sl_buf *errs, const char *origin, const char *fmt,
		   ...) SBXLOOP_PRINTF(3, 4);
/* The value of a key path, or NULL; borrowed from cfg. */
struct sl_config_value *sl_conf_find(const struct sl_config *cfg,
				     const char *path);
/* Whether `name` is a section of the core schema ("budgets"). */
int sl_conf_section_is_core(const char *name);

/* ---- convert.c ------------------------------------------------------- */

/* true/yes/on/1 or false/no/off/0, any case: 0 and *out, or -1. */
int sl_conf_parse_bool(const char *s, int *out);
/* A copy of s without leading and trailing white space; caller frees. */
char *sl_conf_trim_dup(const char *s);
/* Check a raw entry against v's spec and store it; errors go to errs. */
void sl_conf_apply_raw(struct sl_config_value *v, const struct raw *r,
		       struct sl_buf *errs);

/* ---- yaml.c ---------------------------------------------------------- */

/*
 * Append the entries of one YAML file to (*out)[0..*n_out), each marked
 * with `src`; a missing file is an error only when `required`. Errors go
 * to errs, an entry in error is left out; -1 when the file as a whole
 * could not be opened, read or parsed as a mapping, else 0.
 */
int sl_conf_parse_file(const char *file, int required, enum sl_source src,
		       struct raw **out, size_t *n_out, size_t *cap_out,
		       struct sl_buf *errs);
/*
 * Parse a default, a variable or a flag as a YAML flow value (text that
 * is not YAML is taken as a string) into *r for key `path`; `origin`
 * names where it came from. 0 (r filled, caller clears), or -1.
 */
int sl_conf_parse_inline(const char *text, const char *path,
			 const char *origin, struct raw *r,
			 struct sl_buf *errs);

#endif

/*
 * The JSON helpers shared by the core, the worker and the plugins that
 * compile them in: string escaping (jsonstr.c, libc only), and on top
 * of cJSON (json.c) the getters with defaults and the canonical, key-
 * sorted encoding every event line and stored document uses.
 */
#ifndef SL_JSON_H
#define SL_JSON_H

#include <stddef.h>

struct cJSON;

/* ---- jsonstr.c: libc only ------------------------------------------ */

/* The most bytes sl_json_escape writes for `len` input bytes. */
#define SL_JSON_ESCAPE_MAX(len) ((len)*6)
/*
 * Escape `len` bytes of `s` for the inside of a JSON string (no quotes)
 * into `out`, which has room for SL_JSON_ESCAPE_MAX(len) bytes; returns
 * the bytes written (with `out` NULL: the bytes it would write). ", \
 * and the controls are escaped (\n \t \r by name, the rest as \u00XX);
 * everything else, UTF-8 included, is kept.
 */
size_t sl_json_escape(char *out, const char *s, size_t len);
/* `s` as a quoted JSON string ("null" for NULL); malloc'd, NULL only
 * when memory runs out. */
char *sl_json_quote(const char *s);

/* ---- json.c: cJSON -------------------------------------------------- */

/* Member `key` (matched case-sensitively) of object `o` when it is a
 * string, else `dflt`; borrowed from `o`. */
const char *sl_json_str(const struct cJSON *o, const char *key,
			const char *dflt);
/* Member `key` (case-sensitive) of `o` when it is a number, else `dflt`. */
double sl_json_num(const struct cJSON *o, const char *key, double dflt);
/*
 * Sort every object's members by key, recursively (arrays keep their
 * order), so a document always encodes to the same text. Objects
 * already in order (the usual case) are left without allocating; a
 * reference is left alone (it shares its children with the original).
 */
void sl_json_sort(struct cJSON *node);
/* sl_json_sort, then the compact encoding; free() it. Never NULL. */
char *sl_json_print_sorted(struct cJSON *node);

#endif

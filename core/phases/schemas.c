/*
 * The strict schemas of the structured phases: the checks every
 * validator is built from (known keys only, typed fields and string
 * lists, normalised into a fresh object). Each phase's validator sits
 * with its phase. Called by the phase runners (phases_internal.h).
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "phases/phases_internal.h"

int sl_schema_only_keys(const cJSON *obj, const char *const *allowed,
			const char *what, struct sl_buf *msg)
{
	const cJSON *it;

	if (!cJSON_IsObject(obj)) {
		sl_buf_addf(msg, "%s must be a JSON object", what);
		return -1;
	}
	cJSON_ArrayForEach (it, obj) {
		const char *const *k;

		for (k = allowed; *k; k++)
			if (strcmp(*k, it->string) == 0)
				break;
		if (!*k) {
			sl_buf_addf(msg, "%s has an unknown key '%s'", what,
				    it->string);
			return -1;
		}
	}
	return 0;
}

/* A list of strings (absent = []); copies it into `dst` under `key`. */
int sl_schema_str_list(const cJSON *obj, const char *key, int required,
		       const char *what, cJSON *dst, struct sl_buf *msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *it;
	cJSON *out = cJSON_CreateArray();

	if (!v && required) {
		sl_buf_addf(msg, "%s is missing '%s'", what, key);
		goto fail;
	}
	if (v && !cJSON_IsArray(v)) {
		sl_buf_addf(msg, "%s: '%s' must be a list of strings", what,
			    key);
		goto fail;
	}
	cJSON_ArrayForEach (it, v) {
		if (!cJSON_IsString(it)) {
			sl_buf_addf(msg, "%s: '%s' must be a list of strings",
				    what, key);
			goto fail;
		}
		cJSON_AddItemToArray(out, cJSON_CreateString(it->valuestring));
	}
	cJSON_AddItemToObject(dst, key, out);
	return 0;
fail:
	cJSON_Delete(out);
	return -1;
}

int sl_schema_str_field(const cJSON *obj, const char *key, const char *dflt,
			int nonblank, const char *what, cJSON *dst,
			struct sl_buf *msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	const char *s = dflt;

	if (v && !cJSON_IsString(v)) {
		sl_buf_addf(msg, "%s: '%s' must be a string", what, key);
		return -1;
	}
	if (v)
		s = v->valuestring;
	if (!s || (nonblank && !*s)) {
		sl_buf_addf(msg, "%s needs a non-empty '%s'", what, key);
		return -1;
	}
	cJSON_AddStringToObject(dst, key, s);
	return 0;
}

int sl_schema_is_blank(const char *s)
{
	for (; s && *s; s++)
		if (!isspace((unsigned char)*s))
			return 0;
	return 1;
}

/*
 * JSON string escaping (json.h): the one escaper of the tree, libc only,
 * so that plugins which do not link cJSON (the sbx module) compile it
 * in as the core and the worker do.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* How many bytes byte `c` takes inside a JSON string. */
static size_t width(unsigned char c)
{
	if (c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r')
		return 2;
	return c < 0x20 ? 6 : 1;
}

size_t sl_json_escape(char *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char *o = out;
	size_t i, n = 0;

	if (!out) {
		for (i = 0; i < len; i++)
			n += width(p[i]);
		return n;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = p[i];

		if (c >= 0x20 && c != '"' && c != '\\') {
			*o++ = (char)c;
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '"':
		case '\\':
			*o++ = (char)c;
			break;
		case '\n':
			*o++ = 'n';
			break;
		case '\t':
			*o++ = 't';
			break;
		case '\r':
			*o++ = 'r';
			break;
		default:
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 0xf];
		}
	}
	return (size_t)(o - out);
}

char *sl_json_quote(const char *s)
{
	size_t len;
	char *out;

	if (!s)
		return strdup("null");
	len = strlen(s);
	out = malloc(SL_JSON_ESCAPE_MAX(len) + 3);
	if (!out)
		return NULL;
	out[0] = '"';
	len = 1 + sl_json_escape(out + 1, s, len);
	out[len++] = '"';
	out[len] = '\0';
	return out;
}

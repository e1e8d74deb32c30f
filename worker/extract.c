/*
 * extract.c - finding the JSON answer in an agent's text (expect=json).
 *
 * Order of preference: fenced ``` blocks (optionally tagged json), last
 * block first; then the whole text; then the last top-level object or
 * array embedded in prose. Only objects and arrays count. Used by the
 * agent.session kind for every backend.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

#define EXTRACT_MAX (1024u * 1024)

static int is_container(const cJSON *v)
{
	return v && (cJSON_IsObject(v) || cJSON_IsArray(v));
}

/* Parse [s, s+n) trimmed; the whole span must be one object/array. */
static cJSON *parse_exact(const char *s, size_t n)
{
	const char *end = NULL;
	cJSON *v;

	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (!n)
		return NULL;
	v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
	if (!v || !is_container(v) || end != s + n) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

struct span {
	const char *s;
	size_t n;
};

/*
 * A fence is ``` plus an optional "json" tag, optional blanks and a
 * newline; it closes at the next ```.
 */
static size_t find_fences(const char *text, struct span **out)
{
	const char *p = text;
	struct span *v = NULL;
	size_t n = 0, cap = 0;

	while ((p = strstr(p, "```")) != NULL) {
		const char *body = p + 3, *close;

		if (!strncmp(body, "json", 4))
			body += 4;
		while (*body == ' ' || *body == '\t' || *body == '\r')
			body++;
		if (*body != '\n') {
			p += 3;
			continue;
		}
		body++;
		close = strstr(body, "```");
		if (!close)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n].s = body;
		v[n].n = (size_t)(close - body);
		n++;
		p = close + 3;
	}
	*out = v;
	return n;
}

/* Returns the extracted value (caller frees) or NULL when there is none. */
cJSON *wk_extract_json(const char *text)
{
	struct span *fences = NULL;
	size_t nf, i, len;
	cJSON *found = NULL;

	if (!text)
		return NULL;
	len = strlen(text);
	if (len > EXTRACT_MAX)
		text = wk_utf8_tail(text, len, EXTRACT_MAX);
	len = strlen(text);
	nf = find_fences(text, &fences);
	for (i = nf; i-- > 0 && !found;)
		found = parse_exact(fences[i].s, fences[i].n);
	free(fences);
	if (found)
		return found;
	found = parse_exact(text, len);
	if (found)
		return found;
	for (i = 0; i < len;) {
		const char *end = NULL;
		cJSON *v;

		if (text[i] != '{' && text[i] != '[') {
			i++;
			continue;
		}
		v = cJSON_ParseWithLengthOpts(text + i, len - i, &end, 0);
		if (v && is_container(v) && end > text + i) {
			cJSON_Delete(found);
			found = v;
			i = (size_t)(end - text);
		} else {
			cJSON_Delete(v);
			i++;
		}
	}
	return found;
}

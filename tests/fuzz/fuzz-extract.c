/*
 * libFuzzer target for JSON extraction from agent text
 * (wk_extract_json, worker/extract.c): any text, NUL-ended as the
 * worker passes it. It must not crash or leak, what it returns must
 * print and parse back as JSON, and on short texts without fences it
 * must agree with the reference search (cJSON tried at every '{' and '['
 * in turn), which the linear scan replaces.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int container(const cJSON *v)
{
	return v && (cJSON_IsObject(v) || cJSON_IsArray(v));
}

/* The search the scan replaces, for a text without fences. */
static cJSON *reference(const char *text, size_t len)
{
	const char *s = text, *end = NULL;
	size_t n = len, i;
	cJSON *found = NULL, *v;

	while (n && strchr(" \t\r\n\f\v", *s))
		s++, n--;
	while (n && strchr(" \t\r\n\f\v", s[n - 1]))
		n--;
	if (n) {
		v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
		if (container(v) && end == s + n)
			return v;
		cJSON_Delete(v);
	}
	for (i = 0; i < len;) {
		if (text[i] != '{' && text[i] != '[') {
			i++;
			continue;
		}
		v = cJSON_ParseWithLengthOpts(text + i, len - i, &end, 0);
		if (container(v) && end > text + i) {
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	cJSON *j;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	j = wk_extract_json(text);
	if (size <= 4096 && strlen(text) == size && !strstr(text, "```")) {
		cJSON *want = reference(text, size);

		char *a = want ? cJSON_PrintUnformatted(want) : NULL;
		char *b = j ? cJSON_PrintUnformatted(j) : NULL;

		/* printed: cJSON_Compare is wrong on duplicate keys */
		if (!!a != !!b || (a && strcmp(a, b))) {
			fprintf(stderr, "fuzz-extract: the scan and the "
					"reference disagree\n");
			abort();
		}
		cJSON_Delete(want);
		free(a);
		free(b);
	}
	if (j) {
		char *out = cJSON_PrintUnformatted(j);
		cJSON *back = out ? cJSON_Parse(out) : NULL;

		if (!back) {
			fprintf(stderr, "fuzz-extract: result does not "
					"print as JSON\n");
			abort();
		}
		cJSON_Delete(back);
		free(out);
		cJSON_Delete(j);
	}
	free(text);
	return 0;
}

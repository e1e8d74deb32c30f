/*
 * libFuzzer target for JSON extraction from agent text
 * (wk_extract_json, worker/extract.c): any text, NUL-ended as the
 * worker passes it. It must not crash or leak, and what it returns must
 * print and parse back as JSON.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	cJSON *j;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	j = wk_extract_json(text);
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

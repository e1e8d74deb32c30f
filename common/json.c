/*
 * The cJSON helpers of json.h: getters with defaults and the canonical
 * key-sorted encoding. Compiled into the core and into sbxloop-worker
 * (both link libcjson).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/json.h"

const char *sl_json_str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && v->valuestring ? v->valuestring : dflt;
}

double sl_json_num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(n) ? n->valuedouble : dflt;
}

static int key_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a;
	const cJSON *y = *(const cJSON *const *)b;

	return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

void sl_json_sort(cJSON *node)
{
	cJSON *c, **v;
	size_t n = 0, i;
	int sorted = 1;

	if (!node || (node->type & cJSON_IsReference) ||
	    !(cJSON_IsObject(node) || cJSON_IsArray(node)))
		return;
	for (c = node->child; c; c = c->next) {
		sl_json_sort(c);
		if (cJSON_IsObject(node) && c->next &&
		    strcmp(c->string ? c->string : "",
			   c->next->string ? c->next->string : "") > 0)
			sorted = 0;
		n++;
	}
	if (sorted || n < 2)
		return;
	v = malloc(n * sizeof(*v));
	if (!v)
		abort();
	for (i = 0, c = node->child; c; c = c->next)
		v[i++] = c;
	qsort(v, n, sizeof(*v), key_cmp);
	for (i = 0; i < n; i++) {
		/* cJSON keeps the tail in the head's prev */
		v[i]->prev = i ? v[i - 1] : v[n - 1];
		v[i]->next = i + 1 < n ? v[i + 1] : NULL;
	}
	node->child = v[0];
	free(v);
}

char *sl_json_print_sorted(cJSON *node)
{
	char *s;

	sl_json_sort(node);
	s = cJSON_PrintUnformatted(node);
	if (!s)
		abort();
	return s;
}

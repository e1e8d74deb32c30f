/*
 * The GitHub options `run` and `deliver` share (UPSTREAM.md 1.1, 1.14),
 * each turned into the github.* config override it stands for, so that
 * one validation (the config schema's) applies to flags and files alike.
 */
#include "config.h"

#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "common/util.h"

void sl_github_option(int i, const char *arg, char **kv)
{
	static const struct {
		const char *key;
		const char *value; /* NULL: the argument, as a string */
	} map[SL_GITHUB_N_OPTIONS] = {
		{"github.repo", NULL},
		{"github.report", "true"},
		{"github.report", "false"},
		{"github.deliver", "true"},
		{"github.deliver", "false"},
		{"github.deliver_base", NULL},
		{"github.deliver_draft", "true"},
		{"github.deliver_draft", "false"},
		{"github.create_repo", "true"},
		{"github.create_repo", "false"},
		{"github.create_public", "true"},
		{"github.create_public", "false"},
	};
	cJSON *q;

	kv[0] = sl_xstrdup(map[i].key);
	if (map[i].value) {
		kv[1] = sl_xstrdup(map[i].value);
		return;
	}
	q = cJSON_CreateString(arg ? arg : "");
	kv[1] = cJSON_PrintUnformatted(q);
	cJSON_Delete(q);
}

/*
 * Resource guardrails (UPSTREAM 3.8 step 3, 11.2): the diagnosis that
 * fails a task whose sandbox ran out of disk or memory, and the disk
 * figures of `run.artifacts`. The worker classifies each sample against
 * the limits the host passed; this file only reads the verdict and
 * words it, using the operator's limits from the config.
 */
#include "config.h"

#include <string.h>

#include "engine/guard.h"
#include "common/util.h"

static int number(const cJSON *o, const char *key, double *v)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(j))
		return 0;
	*v = j->valuedouble;
	return 1;
}

static const char *level_of(const cJSON *sample)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(sample, "level");

	return cJSON_IsString(j) ? j->valuestring : "ok";
}

char *sl_guard_diagnosis(const cJSON *sample, const struct sl_config *cfg)
{
	double disk_abort = sl_config_double(cfg, "limits.disk_abort", 0);
	double mem_abort = sl_config_double(cfg, "limits.mem_abort", 0);
	double disk = 0, mem = 0;
	int has_disk, has_mem;

	if (!sample || strcmp(level_of(sample), "abort") != 0)
		return NULL;
	has_disk = number(sample, "disk_used_pct", &disk);
	has_mem = number(sample, "mem_used_pct", &mem);
	if (has_disk && disk_abort > 0 && disk >= disk_abort)
		return sl_xasprintf("sandbox disk exhausted: %.1f%% of the "
				    "workspace filesystem is used "
				    "(limits.disk_abort=%g%%)",
				    disk, disk_abort);
	if (has_mem && mem_abort > 0 && mem >= mem_abort)
		return sl_xasprintf("sandbox memory exhausted: %.1f%% of "
				    "memory is used (limits.mem_abort=%g%%)",
				    mem, mem_abort);
	/* the worker judged by limits this config no longer has */
	if (has_disk)
		return sl_xasprintf("sandbox disk exhausted: %.1f%% of the "
				    "workspace filesystem is used "
				    "(limits.disk_abort=%g%%)",
				    disk, disk_abort);
	return sl_xstrdup("sandbox resources exhausted: the worker "
			  "reported level abort");
}

int sl_guard_artifact_fields(const cJSON *sample, cJSON *data)
{
	const char *level;
	double disk;

	if (!sample || !data)
		return 0;
	level = level_of(sample);
	if (strcmp(level, "warn") != 0 && strcmp(level, "abort") != 0)
		return 0;
	if (number(sample, "disk_used_pct", &disk))
		cJSON_AddNumberToObject(data, "disk_used_pct", disk);
	cJSON_AddStringToObject(data, "resources_level", level);
	return 1;
}

/*
 * The typed getters over a loaded configuration: values by key path, in
 * schema order, and the project file it came from. Read-only; anything
 * in the core holding a struct sl_config may call them.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "config/conf.h"
#include "config/conf_internal.h"
#include "common/util.h"

const struct sl_config_value *sl_config_get(const struct sl_config *cfg,
					    const char *path)
{
	return sl_conf_find(cfg, path);
}

const char *sl_config_str(const struct sl_config *cfg, const char *path)
{
	const struct sl_config_value *v = sl_conf_find(cfg, path);

	return v ? v->str : NULL;
}

long long sl_config_int(const struct sl_config *cfg, const char *path,
			long long dflt)
{
	const char *s = sl_config_str(cfg, path);

	return s ? strtoll(s, NULL, 10) : dflt;
}

double sl_config_double(const struct sl_config *cfg, const char *path,
			double dflt)
{
	const char *s = sl_config_str(cfg, path);

	return s ? strtod(s, NULL) : dflt;
}

int sl_config_bool(const struct sl_config *cfg, const char *path, int dflt)
{
	const char *s = sl_config_str(cfg, path);

	return s ? strcmp(s, "true") == 0 : dflt;
}

size_t sl_config_list_len(const struct sl_config *cfg, const char *path)
{
	const struct sl_config_value *v = sl_conf_find(cfg, path);

	return v ? v->n_items : 0;
}

const char *sl_config_list_item(const struct sl_config *cfg, const char *path,
				size_t i)
{
	const struct sl_config_value *v = sl_conf_find(cfg, path);

	return v && i < v->n_items ? v->items[i] : NULL;
}

size_t sl_config_count(const struct sl_config *cfg)
{
	return cfg->n_values;
}

const struct sl_config_value *sl_config_at(const struct sl_config *cfg,
					   size_t i)
{
	return i < cfg->n_values ? &cfg->values[i] : NULL;
}

const char *sl_config_project_file(const struct sl_config *cfg)
{
	return cfg->project_file;
}

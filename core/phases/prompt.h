/*
 * Phase prompt templates: located in the prompts directory (config key
 * `prompts_dir`, else $SBXLOOP_PROMPTS_DIR, else the installed copy) and
 * rendered strictly: `$name` must be a known variable, `$$` is a dollar.
 */
#ifndef SL_PROMPT_H
#define SL_PROMPT_H

#include <cjson/cJSON.h>

#include <sbxloop/plugin.h>

#include "config/conf.h"

/* The prompts directory for this config (borrowed or static). */
const char *sl_prompt_dir(const struct sl_config *cfg);

/*
 * Render `text` with the string members of `vars`. A leading HTML comment
 * is dropped first. On success *out is newly allocated (caller frees).
 */
int sl_prompt_render_text(const char *text, const cJSON *vars, char **out,
			  struct sbxloop_error *err);

/* Load <dir>/<name>.md and render it; *out: caller frees. */
int sl_prompt_render(const char *dir, const char *name, const cJSON *vars,
		     char **out, struct sbxloop_error *err);

#endif

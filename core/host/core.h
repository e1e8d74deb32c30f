/*
 * The core context of one sbxloop process: resolved config, plugin
 * registry, the host services table handed to plugins, and the component
 * instances created from config. Owned by the CLI command that runs.
 */
#ifndef SL_CORE_H
#define SL_CORE_H

#include <sbxloop/plugin.h>

#include "config/conf.h"
#include "host/loader.h"

struct sl_core;

/* Where host->emit() goes (set by the event bus). */
typedef int sl_emit_fn(struct sl_core *core, const char *type,
		       const char *job_id, const char *data_json);

/* An instantiated component: its ops table and instance context. */
struct sl_instance {
	const struct sbxloop_component *component;
	const struct sl_module *module;
	const void *ops;
	void *ctx;
};

struct sl_core {
	struct sl_config *cfg;
	struct sl_registry reg;
	struct sbxloop_host host;
	char *run_id;
	sl_emit_fn *emit;
	void *emit_user;
	struct sl_instance sandbox; /* the active provider, when created */
	int state_read_only;        /* the command only reads the store */
};

/*
 * Load config (o may be NULL), discover plugins, declare their keys and
 * check the whole config. On a config error: SBXLOOP_EINVAL and the
 * messages in *errors (caller frees).
 */
int sl_core_open(struct sl_core **out, const struct sl_config_opts *o,
		 char **errors);
void sl_core_close(struct sl_core *core);

/* Create an instance of component kind:name; errors name the module. */
int sl_core_instantiate(struct sl_core *core, enum sbxloop_kind kind,
			const char *name, struct sl_instance *inst,
			struct sbxloop_error *err);
void sl_instance_destroy(struct sl_instance *inst);

/* The state directory (created on demand); NULL on failure. */
const char *sl_core_state_dir(struct sl_core *core);
void sl_core_set_run(struct sl_core *core, const char *run_id);

#endif

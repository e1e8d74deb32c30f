/*
 * The core context of one sbxloop process: resolved config, plugin
 * registry, the host services table handed to plugins, and the component
 * instances created from config. Owned by the CLI command that runs.
 */
#ifndef SBX_CORE_H
#define SBX_CORE_H

#include <sbxloop/plugin.h>

#include "config/conf.h"
#include "host/loader.h"

struct sbx_core;

/* Where host->emit() goes (set by the event bus). */
typedef int sbx_emit_fn(struct sbx_core *core, const char *type,
			const char *job_id, const char *data_json);

/* An instantiated component: its ops table and instance context. */
struct sbx_instance {
	const struct sbxloop_component *component;
	const struct sbx_module *module;
	const void *ops;
	void *ctx;
};

struct sbx_core {
	struct sbx_config *cfg;
	struct sbx_registry reg;
	struct sbxloop_host host;
	char *run_id;
	sbx_emit_fn *emit;
	void *emit_user;
	struct sbx_instance sandbox; /* the active provider, when created */
	int state_read_only;         /* the command only reads the store */
};

/*
 * Load config (o may be NULL), discover plugins, declare their keys and
 * check the whole config. On a config error: SBXLOOP_EINVAL and the
 * messages in *errors (caller frees).
 */
int sbx_core_open(struct sbx_core **out, const struct sbx_config_opts *o,
		  char **errors);
void sbx_core_close(struct sbx_core *core);

/* Create an instance of component kind:name; errors name the module. */
int sbx_core_instantiate(struct sbx_core *core, enum sbxloop_kind kind,
			 const char *name, struct sbx_instance *inst,
			 struct sbxloop_error *err);
void sbx_instance_destroy(struct sbx_instance *inst);

/* The state directory (created on demand); NULL on failure. */
const char *sbx_core_state_dir(struct sbx_core *core);
void sbx_core_set_run(struct sbx_core *core, const char *run_id);

#endif

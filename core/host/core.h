/*
 * The core context of one sbxloop process: resolved config, plugin
 * registry, the host services table handed to plugins, and the component
 * instances created from config. Owned by the CLI command that runs.
 */
#ifndef SL_CORE_H
#define SL_CORE_H

#include <pthread.h>

#include <cjson/cJSON.h>

#include <sbxloop/plugin.h>

#include "config/conf.h"
#include "host/loader.h"

struct sl_core;

/* Where host->emit() goes (set by the event bus). */
typedef int sl_emit_fn(struct sl_core *core, const char *type,
		       const char *job_id, const char *data_json);

/*
 * Where host->sandbox_job() goes (set by whoever holds the sandboxes: the
 * engine during a run, `deliver` around its github sandbox). `job` is
 * borrowed and completed in place; *result is the caller's.
 */
typedef int sl_job_fn(void *user, const char *role, cJSON *job, cJSON **result,
		      struct sbxloop_error *err);

/*
 * Where host->chat_post() goes (set by the engine while it drives a run):
 * queue `text` for the run, *id its message id.
 */
typedef int sl_chat_fn(void *user, const char *text, int64_t *id,
		       struct sbxloop_error *err);

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
	sl_job_fn *job;             /* NULL: no sandbox takes jobs */
	void *job_user;
	sl_chat_fn *chat; /* NULL: no run takes messages */
	void *chat_user;
	pthread_mutex_t job_lock; /* guards job, chat and their users */
	int state_read_only;      /* the command only reads the store */
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

/*
 * Route host->sandbox_job() to `fn` (NULL: refuse jobs from now on). A
 * job already in flight keeps its target: whoever clears the hook keeps
 * `user` alive until the plugins that may call it are destroyed.
 */
void sl_core_set_job_hook(struct sl_core *core, sl_job_fn *fn, void *user);
/*
 * The task and phase of the job this thread is running (NULL, NULL: none
 * now). An event a plugin emits on this thread meanwhile (a provider's
 * policy.blocked as the job's exec returns) is attributed to them when
 * its data names no task. Thread-local, so concurrent jobs keep theirs.
 */
void sl_core_job_context(const char *task_id, const char *phase);

/* Route host->chat_post() to `fn` (NULL: refuse messages from now on). */
void sl_core_set_chat_hook(struct sl_core *core, sl_chat_fn *fn, void *user);

#endif

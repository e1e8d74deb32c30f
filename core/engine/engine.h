/*
 * The run engine: one run from creation (or resume) to its final state,
 * single lane. It persists every transition through the store before
 * taking the next step and reports through the event bus.
 */
#ifndef SL_ENGINE_H
#define SL_ENGINE_H

#include <signal.h>
#include <stdio.h>

#include <sbxloop/store.h>

#include "host/core.h"

struct sl_engine;

/* `store` is borrowed; core->sandbox must be the active provider. */
struct sl_engine *sl_engine_new(struct sl_core *core,
				struct sl_instance *store);
void sl_engine_free(struct sl_engine *e);

/*
 * Feed a reporter (borrowed; it outlives the engine's run): run_start
 * after provisioning, deliver and run_end before teardown.
 */
struct sl_instance;
void sl_engine_add_reporter(struct sl_engine *e, struct sl_instance *rep);

/* Create run `run_id` for `outcome` and drive it. */
int sl_engine_start(struct sl_engine *e, const char *run_id,
		    const char *outcome, struct sbxloop_error *err);
/*
 * Take up run `run_id` again. The run row must exist and not be
 * completed (SBXLOOP_ESTATE). The caller has already rehydrated the
 * run's config into core->cfg.
 */
int sl_engine_resume(struct sl_engine *e, const char *run_id,
		     struct sbxloop_error *err);

/* Ask the engine to stop at the next phase boundary (signal-safe). */
void sl_engine_request_cancel(struct sl_engine *e);
/* Remove the run's sandbox unless it is kept; idempotent. */
void sl_engine_teardown(struct sl_engine *e);

/* The final (or current) run state (borrowed, lives with the engine). */
const char *sl_engine_state(const struct sl_engine *e);
/* The summary printed after a run: state, tasks, duration, paths. */
void sl_engine_print_summary(struct sl_engine *e, FILE *out);

#endif

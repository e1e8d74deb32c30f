/*
 * The run engine: one run from creation (or resume) to its final state,
 * single lane. It persists every transition through the store before
 * taking the next step and reports through the event bus.
 */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <signal.h>
#include <stdio.h>

#include <sbxloop/store.h>

#include "host/core.h"

struct sbx_engine;

/* `store` is borrowed; core->sandbox must be the active provider. */
struct sbx_engine *sbx_engine_new(struct sbx_core *core,
				  struct sbx_instance *store);
void sbx_engine_free(struct sbx_engine *e);

/* Create run `run_id` for `outcome` and drive it. */
int sbx_engine_start(struct sbx_engine *e, const char *run_id,
		     const char *outcome, struct sbxloop_error *err);
/*
 * Take up run `run_id` again. The run row must exist and not be
 * completed (SBXLOOP_ESTATE). The caller has already rehydrated the
 * run's config into core->cfg.
 */
int sbx_engine_resume(struct sbx_engine *e, const char *run_id,
		      struct sbxloop_error *err);

/* Ask the engine to stop at the next phase boundary (signal-safe). */
void sbx_engine_request_cancel(struct sbx_engine *e);
/* Remove the run's sandbox unless it is kept; idempotent. */
void sbx_engine_teardown(struct sbx_engine *e);

/* The final (or current) run state; the state is static storage. */
const char *sbx_engine_state(const struct sbx_engine *e);
/* The summary printed after a run: state, tasks, duration, paths. */
void sbx_engine_print_summary(struct sbx_engine *e, FILE *out);

/* Where the sbxloop-worker binary is (caller frees). */
char *sbx_worker_path(const struct sbx_core *core);

#endif

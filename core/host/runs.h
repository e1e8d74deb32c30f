/*
 * One run's row, copied out of the store's callback so that it outlives
 * the call: the one run-row accessor of the commands and the engine.
 */
#ifndef SL_RUNS_H
#define SL_RUNS_H

#include <sbxloop/store.h>

#include "host/core.h"

/* Every string is owned (never NULL: "" where the store had none). */
struct sl_run {
	char *run_id;
	char *outcome;
	char *state;
	char *config_json;
	char *workspace;   /* "" until provisioned */
	char *kept_reason; /* "" unless kept */
	char *reason;      /* "" unless terminal with a reason */
	char *guidance_json;
	double created_at;
	double updated_at;
	int mounted;
	int tasks_total;
	int tasks_done;
	int attempts;
};

/*
 * Fetch run `run_id` from `store` into *out (released first). Returns
 * the store's code: 0, SBXLOOP_ENOTFOUND for an unknown run, or another
 * negative code with err filled. *out is empty unless 0 is returned.
 */
int sl_run_fetch(const struct sl_instance *store, const char *run_id,
		 struct sl_run *out, struct sbxloop_error *err);
/* The same on a store's ops and context (the engine's view of it). */
int sl_run_fetch_ops(const struct sbxloop_store_ops *ops, void *ctx,
		     const char *run_id, struct sl_run *out,
		     struct sbxloop_error *err);
/* Copy a row handed to a store callback (run_get, run_list) into *out. */
void sl_run_copy_row(struct sl_run *out, const struct sbxloop_run_row *row);
/* Free what *r holds and empty it; r may be reused. */
void sl_run_release(struct sl_run *r);

#endif

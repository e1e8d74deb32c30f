/*
 * Declared versus observed egress of a run, from the store
 * (egress_report.c): `sbxloop egress RUN` and the summary's line.
 */
#ifndef SL_EGRESS_REPORT_H
#define SL_EGRESS_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include <sbxloop/store.h>

/*
 * *out (caller frees): {run_id, tasks: [{task_id, title, declared:
 * [{domain, reason, decision, why?, used}], observed: [{host, allowed,
 * blocked, phases: {PHASE: {allowed, blocked}}, reason?, declared_by}]}],
 * declared_unused: [{domain, task_id}], blocked_undeclared: [{host,
 * task_id, attempts}]}. Task "(run)" holds what no task owns.
 */
int sl_egress_report(const struct sbxloop_store_ops *st, void *sctx,
		     const char *run_id, cJSON **out,
		     struct sbxloop_error *err);
/* The report as text (agent text in it: the caller escapes). */
void sl_egress_report_print(const cJSON *report, FILE *f);
/* One line when hosts no plan declared were blocked, else NULL. */
char *sl_egress_report_blocked_line(const cJSON *report);

#endif

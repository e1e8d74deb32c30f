/*
 * Resource guardrails: turn the latest `sandbox.resources` sample of the
 * agent sandbox into the diagnosis that fails a task at a phase
 * boundary, and into the disk figures `run.artifacts` carries. Pure
 * functions; the engine keeps the sample and calls them.
 */
#ifndef SL_GUARD_H
#define SL_GUARD_H

#include <cjson/cJSON.h>

#include "config/conf.h"

/*
 * NULL when `sample` (the data of a sandbox.resources event, borrowed,
 * may be NULL) is not at level "abort"; else the diagnosis (caller
 * frees): the disk form when disk crossed limits.disk_abort, else the
 * memory form.
 */
char *sl_guard_diagnosis(const cJSON *sample, const struct sl_config *cfg);

/*
 * When `sample` is at level warn or abort, add `disk_used_pct` and
 * `resources_level` to `data` (a run.artifacts object): the artifacts
 * may be incomplete. Returns 1 when it added them.
 */
int sl_guard_artifact_fields(const cJSON *sample, cJSON *data);

#endif

/*
 * The host event bus. Every event gets the envelope {v, ts, run_id,
 * job_id?, type, data}, is redacted, appended to the store and fanned out
 * to the configured sinks and reporters, in that order. A sink that fails
 * is logged once and detached; the run goes on.
 *
 * Callers: the engine, the CLI and, through host->emit(), plugins.
 */
#ifndef SL_EVENTS_H
#define SL_EVENTS_H

#include <cjson/cJSON.h>

#include "host/core.h"
#include <sbxloop/events.h>

struct sl_bus;

/*
 * Open the bus for `core` and route host->emit() into it. `store` may be
 * NULL (no persistence: `sbxloop plugins`, tests). The bus borrows the
 * instances; the caller destroys them after sl_bus_close().
 */
int sl_bus_open(struct sl_core *core, struct sl_instance *store,
		struct sl_bus **out, struct sbxloop_error *err);
void sl_bus_close(struct sl_bus *bus);

/* Fan out to a sink or reporter instance too (borrowed). */
void sl_bus_add_sink(struct sl_bus *bus, struct sl_instance *sink);
void sl_bus_add_reporter(struct sl_bus *bus, struct sl_instance *rep);
/* Stop feeding `inst` (before it is destroyed while the bus lives on). */
void sl_bus_detach(struct sl_bus *bus, struct sl_instance *inst);

/*
 * Emit an event of the current run (core->run_id). `data` is consumed
 * (may be NULL for {}). Returns 0, or a negative code when the store
 * failed to accept it (sinks never make it fail).
 */
int sl_emit(struct sl_core *core, const char *type, const char *job_id,
	    cJSON *data);

/* 1 when `type` is one a worker emits (the relay's allowlist). */
int sl_event_is_worker_type(const char *type);

/*
 * Relay one line a worker printed. Parsed lines keep their own ts and
 * type; `enrich` (may be NULL) adds keys absent from data (role, agent).
 * An unparseable line, or one claiming a type no worker emits or another
 * run's id, becomes worker.stdout{line}. Returns 1 when the
 * line was the worker's final result line (copied into *result, caller
 * frees with cJSON_Delete), else 0.
 */
int sl_bus_relay_worker_line(struct sl_core *core, const char *line,
			     size_t len, const cJSON *enrich, cJSON **result);

/* Make buffered events durable (at exit, before a summary). */
int sl_bus_flush(struct sl_core *core, struct sbxloop_error *err);

#endif

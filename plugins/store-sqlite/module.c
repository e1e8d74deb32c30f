/*
 * The store-sqlite module's descriptor: one store component, "sqlite",
 * whose ops are spread over the files of this directory by table
 * (store_sqlite.h lists them). The only exported symbol of the module.
 */
#include "config.h"

#include "store_sqlite.h"

static const struct sbxloop_store_ops store_sqlite_ops = {
	.struct_size = sizeof(struct sbxloop_store_ops),
	.create = sq_create,
	.destroy = sq_destroy,
	.run_create = sq_run_create,
	.run_update = sq_run_update,
	.run_get = sq_run_get,
	.run_list = sq_run_list,
	.tasks_save = sq_tasks_save,
	.task_update = sq_task_update,
	.tasks_list = sq_tasks_list,
	.attempt_record = sq_attempt_record,
	.attempt_latest = sq_attempt_latest,
	.attempts_list = sq_attempts_list,
	.event_append = sq_event_append,
	.flush = sq_flush,
	.events_query = sq_events_query,
	.event_last_ts = sq_event_last_ts,
	.inbox_push = sq_inbox_push,
	.inbox_pending = sq_inbox_pending,
	.inbox_done = sq_inbox_done,
};

static const struct sbxloop_component store_sqlite_components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_STORE,
		.name = "sqlite",
		.ops = &store_sqlite_ops,
		.config_keys = NULL,
		.summary = "runs, tasks, attempts and events in SQLite (WAL)",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "store_sqlite",
		.version = "1.0",
		.components = store_sqlite_components,
		.n_components = 1,
};

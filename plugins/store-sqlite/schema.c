/*
 * The store's SQL schema and its migrations, as text. Only store.c uses
 * it. History:
 *   v1  runs, tasks, phase_attempts, events with idx_events_run only.
 *   v2  runs.kept_reason and runs.reason; events.task_id (copied from
 *       data.task_id at insert) so `logs --task` is an index lookup;
 *       indexes for every query the commands make (the task one
 *       partial: events without a task_id cost it nothing).
 * Never edit a shipped step: add a new version and a new step instead.
 */
#include "config.h"

#include "schema.h"

#include <stddef.h>

/* The indexes of v2, shared by the fresh schema and the v1 -> v2 step. */
#define STORE_V2_INDEXES                                                      \
	"CREATE INDEX IF NOT EXISTS idx_runs_created"                         \
	" ON runs(created_at);"                                               \
	"CREATE INDEX IF NOT EXISTS idx_tasks_order"                          \
	" ON tasks(run_id, order_idx);"                                       \
	"CREATE INDEX IF NOT EXISTS idx_attempts_phase"                       \
	" ON phase_attempts(run_id, task_id, phase, id);"                     \
	"CREATE INDEX IF NOT EXISTS idx_events_run ON events(run_id, seq);"   \
	"CREATE INDEX IF NOT EXISTS idx_events_type"                          \
	" ON events(run_id, type, seq);"                                      \
	"CREATE INDEX IF NOT EXISTS idx_events_task"                          \
	" ON events(run_id, task_id, seq) WHERE task_id IS NOT NULL;"

const char store_schema_current[] =
	"CREATE TABLE IF NOT EXISTS runs ("
	" run_id TEXT PRIMARY KEY,"
	" outcome TEXT NOT NULL,"
	" state TEXT NOT NULL,"
	" config_json TEXT NOT NULL DEFAULT '{}',"
	" created_at REAL NOT NULL,"
	" updated_at REAL NOT NULL,"
	" workspace TEXT,"
	" mounted INTEGER NOT NULL DEFAULT 0,"
	" kept_reason TEXT,"
	" user_guidance TEXT NOT NULL DEFAULT '[]',"
	" reason TEXT);"
	"CREATE TABLE IF NOT EXISTS tasks ("
	" run_id TEXT NOT NULL,"
	" task_id TEXT NOT NULL,"
	" order_idx INTEGER NOT NULL,"
	" state TEXT NOT NULL,"
	" spec_json TEXT NOT NULL DEFAULT '{}',"
	" plan_json TEXT,"
	" revisions INTEGER NOT NULL DEFAULT 0,"
	" replans INTEGER NOT NULL DEFAULT 0,"
	" last_feedback TEXT NOT NULL DEFAULT '',"
	" session_id TEXT,"
	" PRIMARY KEY (run_id, task_id));"
	"CREATE TABLE IF NOT EXISTS phase_attempts ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL,"
	" task_id TEXT,"
	" phase TEXT NOT NULL,"
	" attempt INTEGER NOT NULL DEFAULT 0,"
	" status TEXT NOT NULL,"
	" output_json TEXT NOT NULL DEFAULT '{}',"
	" started_at REAL NOT NULL,"
	" ended_at REAL NOT NULL);"
	"CREATE TABLE IF NOT EXISTS events ("
	" seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL,"
	" ts REAL NOT NULL,"
	" type TEXT NOT NULL,"
	" job_id TEXT,"
	" data_json TEXT NOT NULL DEFAULT '{}',"
	" task_id TEXT);" STORE_V2_INDEXES;

const struct store_column store_v2_columns[] = {
	{"runs", "config_json", "TEXT NOT NULL DEFAULT '{}'"},
	{"runs", "workspace", "TEXT"},
	{"runs", "mounted", "INTEGER NOT NULL DEFAULT 0"},
	{"runs", "kept_reason", "TEXT"},
	{"runs", "user_guidance", "TEXT NOT NULL DEFAULT '[]'"},
	{"runs", "reason", "TEXT"},
	{"events", "task_id", "TEXT"},
	{NULL, NULL, NULL},
};

static const char store_upgrade_v1[] =
	"UPDATE events SET task_id = json_extract(data_json, '$.task_id')"
	" WHERE json_valid(data_json);" STORE_V2_INDEXES;

const char *const store_schema_upgrade[STORE_SCHEMA_VERSION + 1] = {
	NULL,
	store_upgrade_v1,
	NULL,
};

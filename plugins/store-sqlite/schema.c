/*
 * The store's SQL schema and its migrations, as text. Only store.c uses
 * it. History:
 *   v1  runs, tasks, phase_attempts, events with idx_events_run only.
 *   v2  runs.kept_reason and runs.reason; events.task_id (copied from
 *       data.task_id at insert) so `logs --task` is an index lookup;
 *       indexes for every query the commands make (the task one
 *       partial: events without a task_id cost it nothing).
 *   v3  events move to event_rows, keyed by small integers: the run id,
 *       the type and the task id are names in event_names, and one
 *       covering index (run, seq, type, task) replaces the three event
 *       indexes, so an append touches one index page instead of four.
 *       `events` is now a view with the v2 columns (and an INSTEAD OF
 *       INSERT trigger), so readers and writers of v2 keep working.
 * Never edit a shipped step: add a new version and a new step instead.
 */
#include "config.h"

#include "schema.h"

#include <stddef.h>

/* The indexes of runs, tasks and attempts since v2. */
#define STORE_STATE_INDEXES                                                   \
	"CREATE INDEX IF NOT EXISTS idx_runs_created"                         \
	" ON runs(created_at);"                                               \
	"CREATE INDEX IF NOT EXISTS idx_tasks_order"                          \
	" ON tasks(run_id, order_idx);"                                       \
	"CREATE INDEX IF NOT EXISTS idx_attempts_phase"                       \
	" ON phase_attempts(run_id, task_id, phase, id);"

/* The event indexes of v2, made by the v1 -> v2 step only. */
#define STORE_V2_EVENT_INDEXES                                                \
	"CREATE INDEX IF NOT EXISTS idx_events_run ON events(run_id, seq);"   \
	"CREATE INDEX IF NOT EXISTS idx_events_type"                          \
	" ON events(run_id, type, seq);"                                      \
	"CREATE INDEX IF NOT EXISTS idx_events_task"                          \
	" ON events(run_id, task_id, seq) WHERE task_id IS NOT NULL;"

/*
 * The events of v3. A name's kind is STORE_NAME_RUN, _TYPE or _TASK. The
 * task of an event written through the view is data.task_id, as the
 * store takes it.
 */
#define STORE_V3_EVENTS                                                       \
	"CREATE TABLE event_names ("                                          \
	" name_key INTEGER PRIMARY KEY,"                                      \
	" kind INTEGER NOT NULL,"                                             \
	" name TEXT NOT NULL,"                                                \
	" UNIQUE (kind, name));"                                              \
	"CREATE TABLE event_rows ("                                           \
	" seq INTEGER PRIMARY KEY,"                                           \
	" run_key INTEGER NOT NULL,"                                          \
	" ts REAL NOT NULL,"                                                  \
	" type_key INTEGER NOT NULL,"                                         \
	" task_key INTEGER,"                                                  \
	" job_id TEXT,"                                                       \
	" data_json TEXT NOT NULL DEFAULT '{}');"                             \
	"CREATE INDEX idx_event_rows_run"                                     \
	" ON event_rows(run_key, seq, type_key, task_key);"                   \
	"CREATE VIEW events (seq, run_id, ts, type, job_id, data_json,"       \
	" task_id) AS SELECT e.seq, r.name, e.ts, t.name, e.job_id,"          \
	" e.data_json, k.name FROM event_rows e"                              \
	" JOIN event_names r ON r.name_key = e.run_key"                       \
	" JOIN event_names t ON t.name_key = e.type_key"                      \
	" LEFT JOIN event_names k ON k.name_key = e.task_key;"                \
	"CREATE TRIGGER events_insert INSTEAD OF INSERT ON events BEGIN"      \
	" INSERT OR IGNORE INTO event_names (kind, name)"                     \
	" VALUES (1, NEW.run_id), (2, NEW.type);"                             \
	" INSERT OR IGNORE INTO event_names (kind, name)"                     \
	" SELECT 3, x FROM (SELECT coalesce(NEW.task_id, CASE WHEN"           \
	" json_valid(NEW.data_json) THEN json_extract(NEW.data_json,"         \
	" '$.task_id') END) AS x) WHERE typeof(x) = 'text';"                  \
	" INSERT INTO event_rows"                                             \
	" (seq, run_key, ts, type_key, task_key, job_id, data_json) SELECT"   \
	" NEW.seq,"                                                           \
	" (SELECT name_key FROM event_names WHERE kind = 1"                   \
	" AND name = NEW.run_id),"                                            \
	" NEW.ts,"                                                            \
	" (SELECT name_key FROM event_names WHERE kind = 2"                   \
	" AND name = NEW.type),"                                              \
	" (SELECT name_key FROM event_names WHERE kind = 3 AND name ="        \
	" coalesce(NEW.task_id, CASE WHEN json_valid(NEW.data_json)"          \
	" THEN json_extract(NEW.data_json, '$.task_id') END)),"               \
	" NEW.job_id, coalesce(NEW.data_json, '{}');"                         \
	" END;"

/*
 * v4: the steering inbox. A message is pending while taken_at is NULL;
 * the partial index keeps the engine's per-boundary look a single probe.
 */
#define STORE_V4_INBOX                                                        \
	"CREATE TABLE IF NOT EXISTS chat_inbox ("                             \
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"                              \
	" run_id TEXT NOT NULL,"                                              \
	" text TEXT NOT NULL,"                                                \
	" created_at REAL NOT NULL,"                                          \
	" taken_at REAL);"                                                    \
	"CREATE INDEX IF NOT EXISTS idx_chat_pending"                         \
	" ON chat_inbox(run_id, id) WHERE taken_at IS NULL;"

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
	" ended_at REAL NOT NULL);" STORE_STATE_INDEXES STORE_V3_EVENTS
		STORE_V4_INBOX;

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
	" WHERE json_valid(data_json);" STORE_STATE_INDEXES
		STORE_V2_EVENT_INDEXES;

/*
 * v2 -> v3: name every run, type and task the events use, copy the
 * events with their seq, then put the view where the table was. The
 * table's sqlite_sequence row goes with it: a new event takes the
 * highest seq + 1, so a run's events still only ever grow.
 */
static const char store_upgrade_v2[] =
	"ALTER TABLE events RENAME TO events_v2;" STORE_V3_EVENTS
	"INSERT OR IGNORE INTO event_names (kind, name)"
	" SELECT DISTINCT 1, run_id FROM events_v2;"
	"INSERT OR IGNORE INTO event_names (kind, name)"
	" SELECT DISTINCT 2, type FROM events_v2;"
	"INSERT OR IGNORE INTO event_names (kind, name)"
	" SELECT DISTINCT 3, task_id FROM events_v2"
	" WHERE typeof(task_id) = 'text';"
	"INSERT INTO event_rows"
	" (seq, run_key, ts, type_key, task_key, job_id, data_json)"
	" SELECT e.seq, r.name_key, e.ts, t.name_key, k.name_key, e.job_id,"
	" coalesce(e.data_json, '{}') FROM events_v2 e"
	" JOIN event_names r ON r.kind = 1 AND r.name = e.run_id"
	" JOIN event_names t ON t.kind = 2 AND t.name = e.type"
	" LEFT JOIN event_names k ON k.kind = 3 AND k.name = e.task_id"
	" ORDER BY e.seq;"
	"DROP TABLE events_v2;";

const char *const store_schema_upgrade[STORE_SCHEMA_VERSION + 1] = {
	NULL, store_upgrade_v1, store_upgrade_v2, STORE_V4_INBOX, NULL,
};

/*
 * The SQLite store plugin's file: schema and migrations, indexes,
 * refusal of a corrupt or unreadable one, sharing between connections
 * and processes, and the SIGKILL durability trials.
 */
#include "config.h"

#include "fakehost.h"
#include "store-torture.h"

#include <sbxloop/store.h>

#include <check.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store-support.h"

/* ------------------------------------------------------------------ */

static const char schema_v1[] =
	"CREATE TABLE runs (run_id TEXT PRIMARY KEY, outcome TEXT NOT NULL,"
	" state TEXT NOT NULL, config_json TEXT NOT NULL DEFAULT '{}',"
	" created_at REAL NOT NULL, updated_at REAL NOT NULL,"
	" workspace TEXT, mounted INTEGER NOT NULL DEFAULT 0,"
	" user_guidance TEXT NOT NULL DEFAULT '[]');"
	"CREATE TABLE tasks (run_id TEXT NOT NULL, task_id TEXT NOT NULL,"
	" order_idx INTEGER NOT NULL, state TEXT NOT NULL,"
	" spec_json TEXT NOT NULL DEFAULT '{}', plan_json TEXT,"
	" revisions INTEGER NOT NULL DEFAULT 0,"
	" replans INTEGER NOT NULL DEFAULT 0,"
	" last_feedback TEXT NOT NULL DEFAULT '', session_id TEXT,"
	" PRIMARY KEY (run_id, task_id));"
	"CREATE TABLE phase_attempts (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL, task_id TEXT, phase TEXT NOT NULL,"
	" attempt INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,"
	" output_json TEXT NOT NULL DEFAULT '{}', started_at REAL NOT NULL,"
	" ended_at REAL NOT NULL);"
	"CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL, ts REAL NOT NULL, type TEXT NOT NULL,"
	" job_id TEXT, data_json TEXT NOT NULL DEFAULT '{}');"
	"CREATE INDEX idx_events_run ON events(run_id, seq);"
	"PRAGMA user_version = 1;"
	"INSERT INTO runs (run_id, outcome, state, created_at, updated_at)"
	" VALUES ('rold', 'legacy outcome', 'running', 10, 20);"
	"INSERT INTO tasks (run_id, task_id, order_idx, state)"
	" VALUES ('rold', 't1', 0, 'done');"
	"INSERT INTO phase_attempts (run_id, task_id, phase, status,"
	" started_at, ended_at) VALUES ('rold', 't1', 'plan', 'ok', 11, 12);"
	"INSERT INTO events (run_id, ts, type, data_json) VALUES"
	" ('rold', 11, 'task.state', '{\"task_id\":\"t1\"}'),"
	" ('rold', 12, 'run.state', '{}');";

START_TEST(test_v1_database_is_migrated_in_place_with_data_intact)
{
	struct seen s = {0};
	sqlite3 *db = raw_open();
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};

	raw_exec(db, schema_v1);
	sqlite3_close(db);
	ck_assert_msg(ops->create(fakehost_host(fh), &store, &err) == 0, "%s",
		      err.message);
	ck_assert_int_eq(ops->run_get(store, "rold", seen_run, &s, &err), 0);
	ck_assert_str_eq(s.items[0], "rold|running|-|-|-|0|[]|1/1|1");
	/* Old events are found by the new task_id column. */
	ck_assert_int_eq(query(NULL, "t1", 0, 0, &s), SBXLOOP_ENOTFOUND);
	{
		struct sbxloop_event_query q = {.struct_size = sizeof(q)};

		memset(&s, 0, sizeof(s));
		q.run_id = "rold";
		q.task_id = "t1";
		ck_assert_int_eq(
			ops->events_query(store, &q, seen_event, &s, &err), 0);
		ck_assert_int_eq(s.n, 1);
		ck_assert_str_eq(s.items[0], "task.state");
	}
	/* The new columns work. */
	u.run_id = "rold";
	u.fields = SBXLOOP_RUN_STATE | SBXLOOP_RUN_KEPT;
	u.state = "failed";
	u.reason = "reconciled";
	u.kept_reason = "manual";
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err), 0);
	db = raw_open();
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 4);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"), 2);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM runs WHERE"
				     " reason = 'reconciled'"
				     " AND kept_reason = 'manual'"),
			 1);
	sqlite3_close(db);
	ck_assert(strstr(fakehost_log(fh), "from schema 1 to 2") != NULL);
	ck_assert(strstr(fakehost_log(fh), "from schema 2 to 3") != NULL);
}
END_TEST

/* The original tool's layout: no version, some later columns present. */
static const char schema_unversioned[] =
	"CREATE TABLE runs (run_id TEXT PRIMARY KEY, outcome TEXT NOT NULL,"
	" state TEXT NOT NULL, config_json TEXT NOT NULL DEFAULT '{}',"
	" created_at REAL NOT NULL, updated_at REAL NOT NULL,"
	" reason TEXT);"
	"CREATE TABLE tasks (run_id TEXT NOT NULL, task_id TEXT NOT NULL,"
	" order_idx INTEGER NOT NULL, state TEXT NOT NULL,"
	" spec_json TEXT NOT NULL DEFAULT '{}', plan_json TEXT,"
	" revisions INTEGER NOT NULL DEFAULT 0,"
	" replans INTEGER NOT NULL DEFAULT 0,"
	" last_feedback TEXT NOT NULL DEFAULT '', session_id TEXT,"
	" PRIMARY KEY (run_id, task_id));"
	"CREATE TABLE phase_attempts (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL, task_id TEXT, phase TEXT NOT NULL,"
	" attempt INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,"
	" output_json TEXT NOT NULL DEFAULT '{}', started_at REAL NOT NULL,"
	" ended_at REAL NOT NULL);"
	"CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL, ts REAL NOT NULL, type TEXT NOT NULL,"
	" job_id TEXT, data_json TEXT NOT NULL DEFAULT '{}');"
	"INSERT INTO runs (run_id, outcome, state, created_at, updated_at,"
	" reason) VALUES ('rup', 'x', 'failed', 1, 2, 'crashed');"
	"INSERT INTO events (run_id, ts, type, data_json) VALUES"
	" ('rup', 1, 'task.state', '{\"task_id\":\"t7\"}');";

START_TEST(test_an_unversioned_database_gains_the_missing_columns)
{
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};
	struct seen s = {0};
	sqlite3 *db = raw_open();

	raw_exec(db, schema_unversioned);
	sqlite3_close(db);
	ck_assert_msg(ops->create(fakehost_host(fh), &store, &err) == 0, "%s",
		      err.message);
	ck_assert_int_eq(ops->run_get(store, "rup", seen_run, &s, &err), 0);
	ck_assert_str_eq(s.items[0], "rup|failed|crashed|-|-|0|[]|0/0|0");
	q.run_id = "rup";
	q.task_id = "t7";
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ops->events_query(store, &q, seen_event, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
	db = raw_open();
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 4);
	sqlite3_close(db);
}
END_TEST

/* The layout v2 shipped (schema.c's history), with every kind of row. */
static const char schema_v2[] =
	"CREATE TABLE runs (run_id TEXT PRIMARY KEY, outcome TEXT NOT NULL,"
	" state TEXT NOT NULL, config_json TEXT NOT NULL DEFAULT '{}',"
	" created_at REAL NOT NULL, updated_at REAL NOT NULL,"
	" workspace TEXT, mounted INTEGER NOT NULL DEFAULT 0,"
	" kept_reason TEXT, user_guidance TEXT NOT NULL DEFAULT '[]',"
	" reason TEXT);"
	"CREATE TABLE tasks (run_id TEXT NOT NULL, task_id TEXT NOT NULL,"
	" order_idx INTEGER NOT NULL, state TEXT NOT NULL,"
	" spec_json TEXT NOT NULL DEFAULT '{}', plan_json TEXT,"
	" revisions INTEGER NOT NULL DEFAULT 0,"
	" replans INTEGER NOT NULL DEFAULT 0,"
	" last_feedback TEXT NOT NULL DEFAULT '', session_id TEXT,"
	" PRIMARY KEY (run_id, task_id));"
	"CREATE TABLE phase_attempts (id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL, task_id TEXT, phase TEXT NOT NULL,"
	" attempt INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,"
	" output_json TEXT NOT NULL DEFAULT '{}', started_at REAL NOT NULL,"
	" ended_at REAL NOT NULL);"
	"CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	" run_id TEXT NOT NULL, ts REAL NOT NULL, type TEXT NOT NULL,"
	" job_id TEXT, data_json TEXT NOT NULL DEFAULT '{}', task_id TEXT);"
	"CREATE INDEX idx_runs_created ON runs(created_at);"
	"CREATE INDEX idx_tasks_order ON tasks(run_id, order_idx);"
	"CREATE INDEX idx_attempts_phase"
	" ON phase_attempts(run_id, task_id, phase, id);"
	"CREATE INDEX idx_events_run ON events(run_id, seq);"
	"CREATE INDEX idx_events_type ON events(run_id, type, seq);"
	"CREATE INDEX idx_events_task ON events(run_id, task_id, seq)"
	" WHERE task_id IS NOT NULL;"
	"PRAGMA user_version = 2;"
	"INSERT INTO runs (run_id, outcome, state, created_at, updated_at,"
	" kept_reason) VALUES ('r1', 'one', 'done', 1, 2, 'manual'),"
	" ('r2', 'two', 'running', 3, 4, NULL);"
	"INSERT INTO tasks (run_id, task_id, order_idx, state)"
	" VALUES ('r1', 't1', 0, 'done');"
	"INSERT INTO events (run_id, ts, type, job_id, data_json, task_id)"
	" VALUES ('r1', 1.25, 'run.start', NULL, '{}', NULL),"
	" ('r2', 1.5, 'run.start', NULL, '{}', NULL),"
	" ('r1', 2, 'task.state', NULL, '{\"task_id\":\"t1\"}', 't1'),"
	" ('r1', 3, 'agent.tool_start', 'job-1',"
	" '{\"task_id\":\"t1\",\"tool\":\"sh\"}', 't1'),"
	" ('r1', 4, 'agent%x', 'job-2', '{\"task_id\":7}', 7),"
	" ('r2', 5, 'policy.allow', NULL, '{\"task_id\":\"t2\"}', 't2'),"
	" ('r1', 6, 'run.end', NULL, '{}', NULL),"
	" ('r1', 7, 'gone', NULL, '{}', NULL);"
	/* The newest event deleted: AUTOINCREMENT remembered seq 8. */
	"DELETE FROM events WHERE seq = 8;";

#define EVENTS_DIGEST                                                         \
	"SELECT group_concat(line, ';') FROM (SELECT seq || '|' || run_id"    \
	" || '|' || ts || '|' || type || '|' || ifnull(job_id, '-') || '|'"   \
	" || data_json || '|' || ifnull(task_id, '-') AS line FROM events"    \
	" ORDER BY seq)"

/* The text of the one-row query `sql` on `db`, malloc'd. */
static char *raw_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	char *v;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
		      "%s: %s", sql, sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

START_TEST(test_v2_database_moves_its_events_to_keyed_rows)
{
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};
	struct seen s = {0};
	sqlite3 *db = raw_open();
	char *before, *after;
	int64_t seq = 0;

	raw_exec(db, schema_v2);
	before = raw_text(db, EVENTS_DIGEST);
	sqlite3_close(db);
	ck_assert_msg(ops->create(fakehost_host(fh), &store, &err) == 0, "%s",
		      err.message);
	ck_assert(strstr(fakehost_log(fh), "from schema 2 to 3") != NULL);
	/* Every event, through the view, exactly as it was. */
	db = raw_open();
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 4);
	after = raw_text(db, EVENTS_DIGEST);
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM sqlite_master"
				     " WHERE name LIKE 'idx_events_%'"
				     " OR name = 'events_v2'"),
			 0);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM"
				     " pragma_integrity_check"
				     " WHERE integrity_check != 'ok'"),
			 0);
	sqlite3_close(db);
	/* The commands' queries find them. */
	q.run_id = "r1";
	q.task_id = "t1";
	ck_assert_int_eq(ops->events_query(store, &q, seen_event, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[1], "agent.tool_start");
	memset(&s, 0, sizeof(s));
	q.task_id = NULL;
	q.type_prefix = "agent%";
	ck_assert_int_eq(ops->events_query(store, &q, seen_event, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
	memset(&s, 0, sizeof(s));
	q.run_id = "r2";
	q.type_prefix = "policy.";
	ck_assert_int_eq(ops->events_query(store, &q, seen_event, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
	/* A new event comes after every old one, in its run. */
	{
		struct sbxloop_event ev = {.struct_size = sizeof(ev)};

		ev.run_id = "r1";
		ev.type = "run.resume";
		ev.ts = 9;
		ck_assert_int_eq(ops->event_append(store, &ev, NULL, &err), 0);
		ck_assert_int_eq(ops->flush(store, &err), 0);
	}
	memset(&s, 0, sizeof(s));
	q.run_id = "r1";
	q.type_prefix = NULL;
	q.after_seq = 6;
	ck_assert_int_eq(ops->events_query(store, &q, seen_event, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[1], "run.resume");
	db = raw_open();
	seq = raw_int(db, "SELECT max(seq) FROM events");
	ck_assert_int_ge(seq, 8);
	sqlite3_close(db);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_v3_database_gains_the_steering_inbox)
{
	int64_t id = 0;
	sqlite3 *db;

	ck_assert_int_eq(ops->create(fakehost_host(fh), &store, &err), 0);
	make_run("r1", NULL, 0);
	ops->destroy(store);
	store = NULL;
	db = raw_open();
	raw_exec(db, "DROP TABLE chat_inbox; PRAGMA user_version = 3");
	sqlite3_close(db);
	ck_assert_msg(ops->create(fakehost_host(fh), &store, &err) == 0, "%s",
		      err.message);
	ck_assert(strstr(fakehost_log(fh), "from schema 3 to 4") != NULL);
	ck_assert_int_eq(ops->inbox_push(store, "r1", "hi", &id, &err), 0);
	ck_assert_int_gt(id, 0);
	db = raw_open();
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 4);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM runs"), 1);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_a_newer_schema_is_refused)
{
	sqlite3 *db = raw_open();

	raw_exec(db, "CREATE TABLE x (a); PRAGMA user_version = 9");
	sqlite3_close(db);
	ck_assert_int_eq(ops->create(fakehost_host(fh), &store, &err),
			 SBXLOOP_EUNSUPPORTED);
	ck_assert(strstr(err.message, "schema version 9") != NULL);
	ck_assert_ptr_null(store);
}
END_TEST

START_TEST(test_a_fresh_database_is_wal_and_current)
{
	sqlite3 *db = raw_open();
	sqlite3_stmt *st = NULL;

	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 4);
	ck_assert_int_eq(
		sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL),
		SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

#define EVENTS_SELECT                                                         \
	"SELECT e.seq, e.ts, e.job_id, t.name, e.data_json"                   \
	" FROM event_rows e CROSS JOIN event_names t"                         \
	" ON t.name_key = e.type_key WHERE e.run_key = (SELECT name_key"      \
	" FROM event_names WHERE kind = 1 AND name = ?1) AND e.seq > ?2"

/* The plan SQLite picks for `sql` must mention `index` and no scan. */
static void assert_plan(sqlite3 *db, const char *sql, const char *index)
{
	char eqp[1024], plan[4096] = "";
	sqlite3_stmt *st = NULL;

	snprintf(eqp, sizeof(eqp), "EXPLAIN QUERY PLAN %s", sql);
	ck_assert_msg(sqlite3_prepare_v2(db, eqp, -1, &st, NULL) == SQLITE_OK,
		      "%s: %s", sql, sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		strncat(plan, (const char *)sqlite3_column_text(st, 3),
			sizeof(plan) - strlen(plan) - 2);
		strcat(plan, ";");
	}
	sqlite3_finalize(st);
	ck_assert_msg(strstr(plan, index) != NULL, "%s\nplan: %s", sql, plan);
	ck_assert_msg(strstr(plan, "SCAN event") == NULL &&
			      strstr(plan, "SCAN tasks") == NULL &&
			      strstr(plan, "SCAN phase_attempts") == NULL,
		      "%s\nplan: %s", sql, plan);
}

START_TEST(test_every_command_query_uses_an_index)
{
	sqlite3 *db = raw_open();

	/* The shapes store_events_query() and event_last_ts() build. */
	assert_plan(db, EVENTS_SELECT " ORDER BY e.seq", "idx_event_rows_run");
	assert_plan(db,
		    EVENTS_SELECT
		    " AND e.type_key IN (?10, ?11) ORDER BY e.seq",
		    "idx_event_rows_run");
	assert_plan(db,
		    EVENTS_SELECT " AND e.type_key IN (SELECT name_key FROM"
				  " event_names WHERE kind = 2 AND name >= ?3"
				  " AND name < ?4) ORDER BY e.seq LIMIT ?6",
		    "idx_event_rows_run");
	assert_plan(
		db,
		EVENTS_SELECT
		" AND e.task_key = (SELECT name_key FROM"
		" event_names WHERE kind = 3 AND name = ?5) ORDER BY e.seq",
		"idx_event_rows_run");
	assert_plan(db,
		    "SELECT ts FROM event_rows WHERE run_key ="
		    " (SELECT name_key FROM event_names"
		    " WHERE kind = 1 AND name = ?1)"
		    " ORDER BY seq DESC LIMIT 1",
		    "idx_event_rows_run");
	assert_plan(db,
		    "SELECT name_key FROM event_names"
		    " WHERE kind = ?1 AND name >= ?2 AND name < ?3",
		    "sqlite_autoindex_event_names_1");
	assert_plan(db,
		    "SELECT * FROM tasks WHERE run_id = 'r'"
		    " ORDER BY order_idx",
		    "idx_tasks_order");
	assert_plan(db,
		    "SELECT * FROM phase_attempts WHERE run_id = 'r'"
		    " AND task_id = 't' AND phase = 'plan'"
		    " ORDER BY id DESC LIMIT 1",
		    "idx_attempts_phase");
	assert_plan(db,
		    "SELECT * FROM phase_attempts WHERE run_id = 'r'"
		    " AND task_id IS NULL AND phase = 'decompose'"
		    " ORDER BY id DESC LIMIT 1",
		    "idx_attempts_phase");
	assert_plan(db, "SELECT * FROM runs ORDER BY created_at DESC",
		    "idx_runs_created");
	assert_plan(db,
		    "SELECT (SELECT count(*) FROM tasks t"
		    " WHERE t.run_id = r.run_id),"
		    " (SELECT count(*) FROM phase_attempts a"
		    " WHERE a.run_id = r.run_id) FROM runs r"
		    " ORDER BY created_at DESC",
		    "idx_attempts_phase");
	sqlite3_close(db);
}
END_TEST

/* ------------------------------------------------------------------ */

START_TEST(test_a_garbage_file_is_refused_and_left_alone)
{
	static const char garbage[] = "this is not an sqlite database, "
				      "just some bytes that fill a page....";
	char path[512], buf[256];
	struct stat sb;
	ssize_t n;
	int fd;

	db_path(path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, garbage, sizeof(garbage)),
			 (ssize_t)sizeof(garbage));
	close(fd);
	ck_assert_int_eq(ops->create(fakehost_host(fh), &store, &err),
			 SBXLOOP_ECORRUPT);
	ck_assert_ptr_null(store);
	ck_assert_msg(strstr(err.message, path) != NULL, "%s", err.message);
	ck_assert_msg(strstr(err.message, "file is not a database") != NULL,
		      "%s", err.message);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, (off_t)sizeof(garbage));
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	ck_assert_int_eq(n, (ssize_t)sizeof(garbage));
	ck_assert(memcmp(buf, garbage, sizeof(garbage)) == 0);
}
END_TEST

START_TEST(test_an_unreadable_state_dir_is_refused)
{
	char path[512];

	/* A file where the directory should be. */
	snprintf(path, sizeof(path), "%s/file", tmpdir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	fakehost_free(fh);
	fh = fakehost_new(path);
	ck_assert_int_ne(ops->create(fakehost_host(fh), &store, &err), 0);
	ck_assert_msg(strstr(err.message, path) != NULL, "%s", err.message);
	ck_assert_ptr_null(store);
}
END_TEST

/* ------------------------------------------------------------------ */

START_TEST(test_two_instances_interleave_writes)
{
	struct fakehost *fh2 = fakehost_new(tmpdir);
	void *other = NULL;
	struct seen s;
	int i;

	ck_assert_int_eq(ops->create(fakehost_host(fh2), &other, &err), 0);
	make_run("r1", "running", 0);
	for (i = 0; i < 50; i++) {
		struct sbxloop_run_update u = {.struct_size = sizeof(u)};
		struct sbxloop_event ev = {.struct_size = sizeof(ev)};

		append("r1", "mine", NULL);
		ev.run_id = "r1";
		ev.type = "theirs";
		ck_assert_int_eq(ops->event_append(other, &ev, NULL, &err), 0);
		u.run_id = "r1";
		u.fields = SBXLOOP_RUN_GUIDANCE;
		u.guidance_json = "[]";
		ck_assert_msg(ops->run_update(i % 2 ? store : other, &u, NULL,
					      0, &err) == 0,
			      "%s", err.message);
		ck_assert_int_eq(ops->flush(other, &err), 0);
	}
	ck_assert_int_eq(query(NULL, NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 100);
	ops->destroy(other);
	fakehost_free(fh2);
}
END_TEST

/* A child process hammering the store; exit status = failures. */
static int hammer(const char *run_id, int steps)
{
	struct fakehost *h = fakehost_new(tmpdir);
	struct sbxloop_error e = {0};
	void *st = NULL;
	int i, failures = 0;

	if (ops->create(fakehost_host(h), &st, &e))
		return 100;
	for (i = 0; i < steps; i++) {
		struct sbxloop_attempt_row a = {.struct_size = sizeof(a)};
		struct sbxloop_event ev = {.struct_size = sizeof(ev)};
		struct seen s = {0};

		ev.run_id = run_id;
		ev.type = "tick";
		a.run_id = run_id;
		a.phase = "execute";
		a.status = "ok";
		a.attempt = i;
		if (ops->event_append(st, &ev, NULL, &e) ||
		    ops->attempt_record(st, &a, &e) ||
		    ops->run_list(st, seen_run, &s, &e)) {
			fprintf(stderr, "hammer: %s\n", e.message);
			failures++;
		}
	}
	ops->destroy(st);
	fakehost_free(h);
	return failures;
}

START_TEST(test_concurrent_processes_never_see_a_locked_database)
{
	pid_t pids[3];
	char run_id[3][8];
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};
	struct seen s;
	int i, status;

	for (i = 0; i < 3; i++) {
		snprintf(run_id[i], sizeof(run_id[i]), "p%d", i);
		make_run(run_id[i], "running", 0);
	}
	ops->destroy(store);
	store = NULL;
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			_exit(hammer(run_id[i], 150));
	}
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
	ck_assert_int_eq(ops->create(fakehost_host(fh), &store, &err), 0);
	for (i = 0; i < 3; i++) {
		memset(&s, 0, sizeof(s));
		q.run_id = run_id[i];
		ck_assert_int_eq(
			ops->events_query(store, &q, seen_event, &s, &err), 0);
		ck_assert_int_eq(s.n, 150);
	}
}
END_TEST

/*
 * N processes open the same fresh state directory at one instant (they
 * block on a pipe until the parent closes it), 20 times: creating the
 * schema and switching to WAL race, and none of them may fail.
 */
START_TEST(test_processes_opening_a_fresh_state_dir_at_once_all_succeed)
{
	enum { N = 8, ROUNDS = 20 };
	char dir[400];
	int round, i, failures = 0;

	for (round = 0; round < ROUNDS; round++) {
		pid_t pids[N];
		int gate[2];

		snprintf(dir, sizeof(dir), "%s/fresh%d", tmpdir, round);
		ck_assert_int_eq(pipe(gate), 0);
		for (i = 0; i < N; i++) {
			pids[i] = fork();
			ck_assert_int_ge(pids[i], 0);
			if (pids[i] == 0) {
				struct fakehost *h;
				struct sbxloop_error e = {0, ""};
				void *st = NULL;
				char c;

				close(gate[1]);
				if (read(gate[0], &c, 1) != 0)
					_exit(99);
				h = fakehost_new(dir);
				if (ops->create(fakehost_host(h), &st, &e)) {
					fprintf(stderr, "open %d: %s\n", i,
						e.message);
					_exit(1);
				}
				make_run_in(st, i);
				ops->destroy(st);
				fakehost_free(h);
				_exit(0);
			}
		}
		close(gate[0]);
		close(gate[1]); /* the barrier opens */
		for (i = 0; i < N; i++) {
			int status;

			ck_assert_int_eq(waitpid(pids[i], &status, 0),
					 pids[i]);
			ck_assert(WIFEXITED(status));
			if (WEXITSTATUS(status) != 0)
				failures++;
		}
	}
	ck_assert_int_eq(failures, 0);
	/* and every run each process wrote is there */
	ops->destroy(store);
	store = NULL;
	fakehost_free(fh);
	fh = fakehost_new(dir);
	ck_assert_int_eq(ops->create(fakehost_host(fh), &store, &err), 0);
	{
		struct seen s = {0};

		ck_assert_int_eq(ops->run_list(store, seen_run, &s, &err), 0);
		ck_assert_int_eq(s.n, N);
	}
}
END_TEST

/* ------------------------------------------------------------------ */

START_TEST(test_sigkilled_writer_loses_no_committed_transition)
{
	struct store_torture_result res;
	char dir[300];
	const char *env = getenv("STORE_TORTURE_TRIALS");
	int trials = env ? atoi(env) : 30;

	snprintf(dir, sizeof(dir), "%s/torture", tmpdir);
	ck_assert_int_eq(store_torture_run(dir, trials, (unsigned)getpid(),
					   120, 1, &res),
			 0);
	ck_assert_int_eq(res.trials, trials);
	ck_assert_int_eq(res.lost, 0);
	/* The kills must have landed after real work, not only before. */
	ck_assert_int_gt(res.committed, trials / 3);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *schema_suite(void)
{
	TCase *tc, *fresh;
	Suite *s = suite_with("schema", &tc, 0);

	tcase_add_test(tc,
		       test_v1_database_is_migrated_in_place_with_data_intact);
	tcase_add_test(tc,
		       test_an_unversioned_database_gains_the_missing_columns);
	tcase_add_test(tc, test_v2_database_moves_its_events_to_keyed_rows);
	tcase_add_test(tc, test_v3_database_gains_the_steering_inbox);
	tcase_add_test(tc, test_a_newer_schema_is_refused);
	tcase_add_test(tc, test_a_garbage_file_is_refused_and_left_alone);
	tcase_add_test(tc, test_an_unreadable_state_dir_is_refused);
	fresh = tcase_create("fresh");
	tcase_add_checked_fixture(fresh, setup, teardown);
	tcase_add_test(fresh, test_a_fresh_database_is_wal_and_current);
	tcase_add_test(fresh, test_every_command_query_uses_an_index);
	suite_add_tcase(s, fresh);
	return s;
}

static Suite *sharing_suite(void)
{
	TCase *tc;
	Suite *s = suite_with("sharing and durability", &tc, 1);

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_two_instances_interleave_writes);
	tcase_add_test(tc,
		       test_concurrent_processes_never_see_a_locked_database);
	tcase_add_test(
		tc,
		test_processes_opening_a_fresh_state_dir_at_once_all_succeed);
	tcase_add_test(tc,
		       test_sigkilled_writer_loses_no_committed_transition);
	return s;
}
int main(void)
{
	SRunner *sr = srunner_create(schema_suite());
	int failed;

	srunner_add_suite(sr, sharing_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

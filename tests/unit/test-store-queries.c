/*
 * The SQLite store plugin's reads and writes, through its vtable on the
 * fake host: runs, tasks and attempts, and events (order, filters,
 * envelopes and the write buffer).
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

START_TEST(test_run_create_then_get_returns_the_row)
{
	struct seen s = {0};

	make_run("r1", NULL, 0);
	ck_assert_int_eq(ops->run_get(store, "r1", seen_run, &s, &err), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "r1|created|-|-|-|0|[]|0/0|0");
}
END_TEST

START_TEST(test_duplicate_run_id_is_eexist)
{
	struct sbxloop_run_row r = {.struct_size = sizeof(r)};

	make_run("r1", NULL, 0);
	r.run_id = "r1";
	r.outcome = "again";
	ck_assert_int_eq(ops->run_create(store, &r, &err), SBXLOOP_EEXIST);
	ck_assert_str_eq(err.message, "run 'r1' already exists");
}
END_TEST

START_TEST(test_unknown_run_is_enotfound_everywhere)
{
	struct seen s = {0};
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};

	ck_assert_int_eq(ops->run_get(store, "nope", seen_run, &s, &err),
			 SBXLOOP_ENOTFOUND);
	ck_assert_str_eq(err.message, "unknown run 'nope'");
	u.run_id = "nope";
	u.fields = SBXLOOP_RUN_STATE;
	u.state = "cancelled";
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err),
			 SBXLOOP_ENOTFOUND);
	ck_assert_int_eq(ops->tasks_save(store, "nope", NULL, 0, &err),
			 SBXLOOP_ENOTFOUND);
	ck_assert_int_eq(ops->tasks_list(store, "nope", seen_task, &s, &err),
			 SBXLOOP_ENOTFOUND);
	ck_assert_int_eq(ops->attempts_list(store, "nope", NULL, seen_attempt,
					    &s, &err),
			 SBXLOOP_ENOTFOUND);
	q.run_id = "nope";
	ck_assert_int_eq(ops->events_query(store, &q, seen_event, &s, &err),
			 SBXLOOP_ENOTFOUND);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(test_run_list_is_newest_first_and_stops_on_request)
{
	struct seen s = {0};

	make_run("old", NULL, 100);
	make_run("new", NULL, 300);
	make_run("mid", NULL, 200);
	ck_assert_int_eq(ops->run_list(store, seen_run, &s, &err), 0);
	ck_assert_int_eq(s.n, 3);
	ck_assert(strncmp(s.items[0], "new|", 4) == 0);
	ck_assert(strncmp(s.items[1], "mid|", 4) == 0);
	ck_assert(strncmp(s.items[2], "old|", 4) == 0);
	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	ck_assert_int_eq(ops->run_list(store, seen_run, &s, &err), 0);
	ck_assert_int_eq(s.n, 1);
}
END_TEST

START_TEST(test_run_update_sets_only_flagged_fields)
{
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};
	struct seen s = {0};
	double before;

	make_run("r1", NULL, 0);
	u.run_id = "r1";
	u.fields = SBXLOOP_RUN_WORKSPACE | SBXLOOP_RUN_GUIDANCE;
	u.state = "ignored";
	u.workspace = "/w/r1";
	u.mounted = 1;
	u.guidance_json = "[\"be brief\"]";
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err), 0);
	u.fields = SBXLOOP_RUN_STATE;
	u.state = "failed";
	u.reason = "budget";
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err), 0);
	ck_assert_int_eq(ops->run_get(store, "r1", seen_run, &s, &err), 0);
	ck_assert_str_eq(s.items[0],
			 "r1|failed|budget|/w/r1|-|1|[\"be brief\"]|0/0|0");
	before = s.num[0];
	/* The kept marker does not count as activity. */
	u.fields = SBXLOOP_RUN_KEPT;
	u.kept_reason = "debug";
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err), 0);
	ck_assert_int_eq(ops->run_get(store, "r1", seen_run, &s, &err), 0);
	ck_assert_str_eq(s.items[1],
			 "r1|failed|budget|/w/r1|debug|1|[\"be brief\"]|"
			 "0/0|0");
	ck_assert(s.num[1] == before);
}
END_TEST

START_TEST(test_conditional_update_refused_reports_the_state_found)
{
	static const char *const live[] = {"created", "running", NULL};
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};
	struct seen s = {0};
	char prev[32];

	make_run("r1", "completed", 0);
	u.run_id = "r1";
	u.fields = SBXLOOP_RUN_STATE;
	u.state = "cancelled";
	u.only_if_state = live;
	ck_assert_int_eq(ops->run_update(store, &u, prev, sizeof(prev), &err),
			 SBXLOOP_ESTATE);
	ck_assert_str_eq(prev, "completed");
	ck_assert_str_eq(err.message, "run 'r1' is completed");
	ck_assert_int_eq(ops->run_get(store, "r1", seen_run, &s, &err), 0);
	ck_assert(strncmp(s.items[0], "r1|completed|", 13) == 0);
}
END_TEST

START_TEST(test_conditional_update_applies_in_an_allowed_state)
{
	static const char *const live[] = {"created", "running", NULL};
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};
	struct seen s = {0};
	char prev[32];

	make_run("r1", "running", 0);
	u.run_id = "r1";
	u.fields = SBXLOOP_RUN_STATE;
	u.state = "cancelled";
	u.reason = "cancelled by user";
	u.only_if_state = live;
	ck_assert_int_eq(ops->run_update(store, &u, prev, sizeof(prev), &err),
			 0);
	ck_assert_str_eq(prev, "running");
	ck_assert_int_eq(ops->run_get(store, "r1", seen_run, &s, &err), 0);
	ck_assert(strncmp(s.items[0], "r1|cancelled|cancelled by user|", 31) ==
		  0);
}
END_TEST

/* ------------------------------------------------------------------ */

static void save_three_tasks(void)
{
	struct sbxloop_task_row t[3];
	static const char *const ids[] = {"t1", "t2", "t3"};
	int i;

	memset(t, 0, sizeof(t));
	for (i = 0; i < 3; i++) {
		t[i].struct_size = sizeof(t[i]);
		t[i].task_id = ids[i];
		t[i].order_idx = 2 - i;
		t[i].spec_json = "{}";
	}
	ck_assert_msg(ops->tasks_save(store, "r1", t, 3, &err) == 0, "%s",
		      err.message);
}

START_TEST(test_tasks_list_in_stored_order_with_defaults)
{
	struct seen s = {0};

	make_run("r1", NULL, 0);
	save_three_tasks();
	ck_assert_int_eq(ops->tasks_list(store, "r1", seen_task, &s, &err), 0);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.items[0], "t3|0|pending|0|0||-");
	ck_assert_str_eq(s.items[2], "t1|2|pending|0|0||-");
}
END_TEST

START_TEST(test_tasks_save_replaces_the_previous_set)
{
	struct sbxloop_task_row t = {.struct_size = sizeof(t)};
	struct seen s = {0};

	make_run("r1", NULL, 0);
	save_three_tasks();
	t.task_id = "only";
	ck_assert_int_eq(ops->tasks_save(store, "r1", &t, 1, &err), 0);
	ck_assert_int_eq(ops->tasks_list(store, "r1", seen_task, &s, &err), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "only|0|pending|0|0||-");
}
END_TEST

START_TEST(test_task_update_and_run_counts)
{
	struct sbxloop_task_row t = {.struct_size = sizeof(t)};
	struct sbxloop_attempt_row a = {.struct_size = sizeof(a)};
	struct seen s = {0};

	make_run("r1", NULL, 0);
	save_three_tasks();
	t.run_id = "r1";
	t.task_id = "t2";
	t.state = "done";
	t.revisions = 2;
	t.replans = 1;
	t.last_feedback = "fix the test";
	t.plan_json = "{\"steps\":[]}";
	ck_assert_int_eq(ops->task_update(store, &t, &err), 0);
	a.run_id = "r1";
	a.task_id = "t2";
	a.phase = "execute";
	a.status = "ok";
	ck_assert_int_eq(ops->attempt_record(store, &a, &err), 0);
	ck_assert_int_eq(ops->tasks_list(store, "r1", seen_task, &s, &err), 0);
	ck_assert_str_eq(s.items[1],
			 "t2|1|done|2|1|fix the test|{\"steps\":[]}");
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ops->run_list(store, seen_run, &s, &err), 0);
	ck_assert(strstr(s.items[0], "|1/3|1") != NULL);
	t.task_id = "t9";
	ck_assert_int_eq(ops->task_update(store, &t, &err), SBXLOOP_ENOTFOUND);
}
END_TEST

/* ------------------------------------------------------------------ */

static void record(const char *task, const char *phase, int attempt,
		   const char *status)
{
	struct sbxloop_attempt_row a = {.struct_size = sizeof(a)};

	a.run_id = "r1";
	a.task_id = task;
	a.phase = phase;
	a.attempt = attempt;
	a.status = status;
	a.output_json = "{}";
	ck_assert_int_eq(ops->attempt_record(store, &a, &err), 0);
	ck_assert(a.id > 0);
}

START_TEST(test_attempt_latest_is_the_highest_id)
{
	struct seen s = {0};

	make_run("r1", NULL, 0);
	record(NULL, "decompose", 0, "ok");
	record("t1", "scrutinize", 0, "revise");
	record("t1", "scrutinize", 1, "pass");
	record("t2", "scrutinize", 0, "fail");
	ck_assert_int_eq(ops->attempt_latest(store, "r1", "t1", "scrutinize",
					     seen_attempt, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "t1|scrutinize|1|pass");
	ck_assert_int_eq(ops->attempt_latest(store, "r1", NULL, "decompose",
					     seen_attempt, &s, &err),
			 0);
	ck_assert_str_eq(s.items[1], "-|decompose|0|ok");
	ck_assert_int_eq(ops->attempt_latest(store, "r1", "t1", "plan",
					     seen_attempt, &s, &err),
			 SBXLOOP_ENOTFOUND);
}
END_TEST

START_TEST(test_attempts_list_by_id_all_or_per_task)
{
	struct seen s = {0};

	make_run("r1", NULL, 0);
	record(NULL, "decompose", 0, "ok");
	record("t1", "plan", 0, "ok");
	record("t2", "plan", 0, "ok");
	record("t1", "execute", 0, "ok");
	ck_assert_int_eq(
		ops->attempts_list(store, "r1", NULL, seen_attempt, &s, &err),
		0);
	ck_assert_int_eq(s.n, 4);
	ck_assert(s.num[0] < s.num[1] && s.num[1] < s.num[2] &&
		  s.num[2] < s.num[3]);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(
		ops->attempts_list(store, "r1", "t1", seen_attempt, &s, &err),
		0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[0], "t1|plan|0|ok");
	ck_assert_str_eq(s.items[1], "t1|execute|0|ok");
}
END_TEST

/* ------------------------------------------------------------------ */

START_TEST(test_events_come_back_in_append_order_after_a_seq)
{
	struct seen s;

	make_run("r1", NULL, 0);
	make_run("r2", NULL, 0);
	append("r1", "run.start", NULL);
	append("r2", "other", NULL);
	append("r1", "task.state", "{\"task_id\":\"t1\"}");
	append("r1", "run.state", "{}");
	ck_assert_int_eq(query(NULL, NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.items[0], "run.start");
	ck_assert_str_eq(s.items[1], "task.state");
	ck_assert_str_eq(s.items[2], "run.state");
	ck_assert(s.num[0] < s.num[1] && s.num[1] < s.num[2]);
	ck_assert_int_eq(query(NULL, NULL, (int64_t)s.num[1], 0, &s), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "run.state");
	ck_assert_int_eq(query(NULL, NULL, 0, 2, &s), 0);
	ck_assert_int_eq(s.n, 2);
}
END_TEST

START_TEST(test_type_prefix_is_literal_underscore_and_percent)
{
	struct seen s;

	make_run("r1", NULL, 0);
	append("r1", "a_b.x", NULL);
	append("r1", "axb.x", NULL);
	append("r1", "p%q", NULL);
	append("r1", "pzzq", NULL);
	append("r1", "policy.allow", NULL);
	append("r1", "policyx", NULL);
	append("r1", "policy.deny", NULL);
	ck_assert_int_eq(query("a_b", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "a_b.x");
	ck_assert_int_eq(query("p%", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "p%q");
	ck_assert_int_eq(query("policy.", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[0], "policy.allow");
	ck_assert_str_eq(s.items[1], "policy.deny");
	ck_assert_int_eq(query("", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 7);
	/* Case matters: a prefix is bytes, not a pattern. */
	ck_assert_int_eq(query("POLICY", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(test_task_filter_matches_data_task_id_exactly)
{
	struct seen s;

	make_run("r1", NULL, 0);
	append("r1", "task.state", "{\"task_id\":\"t1\",\"state\":\"x\"}");
	append("r1", "task.state", "{\"task_id\":\"t10\"}");
	append("r1", "note", "{\"text\":\"task_id t1\"}");
	append("r1", "bad", "not json \"task_id\"");
	append("r1", "task.end", "{\"task_id\":\"t1\"}");
	ck_assert_int_eq(query(NULL, "t1", 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[0], "task.state");
	ck_assert_str_eq(s.items[1], "task.end");
	ck_assert_int_eq(query("task.e", "t1", 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 1);
}
END_TEST

/* Whether SQLite's own JSON functions say `data` has task_id "t1". */
static int sqlite_says_t1(sqlite3 *mem, const char *data)
{
	sqlite3_stmt *st = NULL;
	int yes;

	ck_assert_int_eq(sqlite3_prepare_v2(mem,
					    "SELECT CASE WHEN json_valid(?1)"
					    " THEN json_extract(?1,"
					    " '$.task_id') END IS 't1'",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, data, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	yes = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return yes;
}

/*
 * The store reads data.task_id without SQLite's JSON functions; it must
 * agree with json_extract() on every shape, the top level only.
 */
START_TEST(test_task_filter_agrees_with_json_extract)
{
	static const char *const data[][2] = {
		{"plain", "{\"task_id\":\"t1\"}"},
		{"nested", "{\"plan\":{\"task_id\":\"t1\"}}"},
		{"in-string", "{\"text\":\"\\\"task_id\\\":\\\"t1\"}"},
		{"number", "{\"task_id\":1}"},
		{"unclosed", "{\"task_id\":\"t1\""},
		{"trailing", "{\"task_id\":\"t1\"} x"},
		{"array", "[{\"task_id\":\"t1\"}]"},
		{"escaped", "{\"task_id\":\"t\\u0031\"}"},
		{"escaped-key", "{\"task\\u005fid\":\"t1\"}"},
		{"after", "{\"a\":[1,{\"b\":\"]}\"}],\"task_id\":\"t1\"}"},
		{"first", "{\"task_id\":\"t1\",\"task_id\":\"t2\"}"},
		{"spaced", " { \"task_id\" : \"t1\" } "},
		{"null", "{\"task_id\":null,\"x\":\"t1\"}"},
	};
	size_t n = sizeof(data) / sizeof(data[0]), i;
	int k = 0, want = 0;
	struct seen s;
	sqlite3 *mem = NULL;

	ck_assert_int_eq(sqlite3_open(":memory:", &mem), SQLITE_OK);
	make_run("r1", NULL, 0);
	for (i = 0; i < n; i++)
		append("r1", data[i][0], data[i][1]);
	ck_assert_int_eq(query(NULL, "t1", 0, 0, &s), 0);
	for (i = 0; i < n; i++) {
		if (!sqlite_says_t1(mem, data[i][1]))
			continue;
		want++;
		ck_assert_msg(k < s.n && strcmp(s.items[k], data[i][0]) == 0,
			      "'%s' should match task t1", data[i][0]);
		k++;
	}
	ck_assert_int_eq(s.n, want);
	sqlite3_close(mem);
	/* What any JSON reader agrees on. */
	ck_assert_int_ge(want, 5);
	ck_assert_str_eq(s.items[0], "plain");
	ck_assert_str_eq(s.items[1], "escaped");
	ck_assert_int_eq(query(NULL, "t9", 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

/* A type prefix matching more types than the store lists inline. */
START_TEST(test_type_prefix_over_many_types)
{
	char type[32];
	struct seen s;
	int i;

	make_run("r1", NULL, 0);
	for (i = 0; i < 40; i++) {
		snprintf(type, sizeof(type), "many.t%02d", i);
		append("r1", type, NULL);
		append("r1", "other", NULL);
	}
	ck_assert_int_eq(query("many.", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 40);
	ck_assert_str_eq(s.items[0], "many.t00");
	ck_assert_str_eq(s.items[39], "many.t39");
	ck_assert_int_eq(query("many.t1", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 10);
	ck_assert_int_eq(query("nomatch.", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

/* Another tool writing through the `events` view is read like our own. */
START_TEST(test_events_inserted_through_the_view_are_read_back)
{
	struct seen s;
	sqlite3 *db;

	make_run("r1", NULL, 0);
	append("r1", "ours", "{\"task_id\":\"t1\"}");
	ck_assert_int_eq(ops->flush(store, &err), 0);
	db = raw_open();
	raw_exec(db, "INSERT INTO events (run_id, ts, type, data_json)"
		     " VALUES ('r1', 5, 'theirs', '{\"task_id\":\"t1\"}'),"
		     " ('r1', 6, 'new.kind', '{}')");
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"
				     " WHERE task_id = 't1'"),
			 2);
	sqlite3_close(db);
	ck_assert_int_eq(query(NULL, "t1", 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[1], "theirs");
	ck_assert_int_eq(query("new.", NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 1);
	append("r1", "after", NULL);
	ck_assert_int_eq(query(NULL, NULL, 0, 0, &s), 0);
	ck_assert_int_eq(s.n, 4);
	ck_assert_str_eq(s.items[3], "after");
}
END_TEST

START_TEST(test_event_envelope_is_the_sorted_compact_line)
{
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};
	struct sbxloop_event ev = {.struct_size = sizeof(ev)};
	struct seen s = {0};

	make_run("r1", NULL, 0);
	ev.run_id = "r1";
	ev.type = "agent.delta";
	ev.job_id = "j\"1";
	ev.data_json = "{\"text\":\"hi\"}";
	ev.ts = 1700000000.25;
	ck_assert_int_eq(ops->event_append(store, &ev, NULL, &err), 0);
	append("r1", "x", NULL);
	q.run_id = "r1";
	ck_assert_int_eq(
		ops->events_query(store, &q, seen_event_json, &s, &err), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[0],
			 "{\"data\":{\"text\":\"hi\"},\"job_id\":\"j\\\"1\","
			 "\"run_id\":\"r1\",\"ts\":1700000000.25,"
			 "\"type\":\"agent.delta\",\"v\":1}");
	ck_assert_str_eq(s.items[1],
			 "{\"data\":{},\"job_id\":null,\"run_id\":\"r1\","
			 "\"ts\":1000.5,\"type\":\"x\",\"v\":1}");
}
END_TEST

START_TEST(test_buffered_events_are_durable_with_the_next_transition)
{
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};
	sqlite3 *db;
	int64_t seq = -1;
	struct sbxloop_event ev = {.struct_size = sizeof(ev)};

	make_run("r1", NULL, 0);
	db = raw_open();
	ev.run_id = "r1";
	ev.type = "before";
	ck_assert_int_eq(ops->event_append(store, &ev, &seq, &err), 0);
	ck_assert_int_eq(seq, 0); /* buffered, no seq yet */
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"), 0);
	u.run_id = "r1";
	u.fields = SBXLOOP_RUN_STATE;
	u.state = "running";
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err), 0);
	/* Another connection sees the event as soon as the state. */
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"
				     " WHERE type = 'before'"),
			 1);
	ck_assert_int_eq(
		raw_int(db,
			"SELECT count(*) FROM runs WHERE state = 'running'"),
		1);
	append("r1", "later", NULL);
	ck_assert_int_eq(ops->flush(store, &err), 0);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"), 2);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_a_refused_update_still_commits_buffered_events)
{
	static const char *const live[] = {"running", NULL};
	struct sbxloop_run_update u = {.struct_size = sizeof(u)};
	sqlite3 *db;

	make_run("r1", "completed", 0);
	append("r1", "gc.marker", NULL);
	u.run_id = "r1";
	u.fields = SBXLOOP_RUN_STATE;
	u.state = "cancelled";
	u.only_if_state = live;
	ck_assert_int_eq(ops->run_update(store, &u, NULL, 0, &err),
			 SBXLOOP_ESTATE);
	db = raw_open();
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"), 1);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_a_full_buffer_is_written_without_a_transition)
{
	sqlite3 *db;
	int i;

	make_run("r1", NULL, 0);
	db = raw_open();
	/* Never more than 511 wait in memory, however slow the host. */
	for (i = 1; i <= 600; i++) {
		append("r1", "tick", NULL);
		ck_assert_int_ge(raw_int(db, "SELECT count(*) FROM events"),
				 i - 511);
	}
	sqlite3_close(db);
	ops->destroy(store);
	store = NULL;
	db = raw_open();
	/* destroy() flushes the rest. */
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"), 600);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_an_old_buffer_is_written_on_the_next_append)
{
	struct sbxloop_event ev = {.struct_size = sizeof(ev)};
	int64_t seq = 0;
	sqlite3 *db;

	make_run("r1", NULL, 0);
	append("r1", "first", NULL);
	usleep(150 * 1000);
	ev.run_id = "r1";
	ev.type = "second";
	ck_assert_int_eq(ops->event_append(store, &ev, &seq, &err), 0);
	ck_assert(seq > 0);
	db = raw_open();
	ck_assert_int_eq(raw_int(db, "SELECT max(seq) FROM events"), seq);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM events"), 2);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_event_last_ts_is_the_newest_event)
{
	double ts = -1;

	make_run("r1", NULL, 0);
	ck_assert_int_eq(ops->event_last_ts(store, "r1", &ts, &err), 0);
	ck_assert(ts == 0);
	append("r1", "x", NULL);
	ck_assert_int_eq(ops->event_last_ts(store, "r1", &ts, &err), 0);
	ck_assert(ts == 1000.5);
}
END_TEST

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */

static int seen_chat(void *user, const struct sbxloop_chat_row *m)
{
	struct seen *s = user;

	snprintf(s->items[s->n], sizeof(s->items[0]), "%lld|%s|%s",
		 (long long)m->id, m->run_id, m->text);
	s->num[s->n] = m->created_at;
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

START_TEST(test_inbox_is_fifo_per_run_until_marked_done)
{
	struct seen s = {0};
	int64_t a = 0, b = 0, c = 0;

	make_run("r1", NULL, 0);
	make_run("r2", NULL, 0);
	ck_assert_int_eq(ops->inbox_push(store, "r1", "first", &a, &err), 0);
	ck_assert_int_eq(ops->inbox_push(store, "r2", "other run", &b, &err),
			 0);
	ck_assert_int_eq(ops->inbox_push(store, "r1", "second", &c, &err), 0);
	ck_assert(a > 0 && b > a && c > b);
	ck_assert_int_eq(ops->inbox_pending(store, "r1", seen_chat, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.items[0], "1|r1|first");
	ck_assert_str_eq(s.items[1], "3|r1|second");
	ck_assert(s.num[0] > 0);
	/* done once, done again: still fine, and gone from pending */
	ck_assert_int_eq(ops->inbox_done(store, "r1", a, &err), 0);
	ck_assert_int_eq(ops->inbox_done(store, "r1", a, &err), 0);
	/* another run's id does not take this run's message */
	ck_assert_int_eq(ops->inbox_done(store, "r2", c, &err), 0);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ops->inbox_pending(store, "r1", seen_chat, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.items[0], "3|r1|second");
	/* a callback may stop the walk */
	ck_assert_int_eq(ops->inbox_push(store, "r1", "third", NULL, &err), 0);
	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	ck_assert_int_eq(ops->inbox_pending(store, "r1", seen_chat, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
}
END_TEST

START_TEST(test_inbox_of_an_unknown_run_is_enotfound)
{
	struct seen s = {0};
	int64_t id = 7;

	ck_assert_int_eq(ops->inbox_push(store, "nope", "hi", &id, &err),
			 SBXLOOP_ENOTFOUND);
	ck_assert_int_eq(id, 7);
	ck_assert_int_eq(
		ops->inbox_pending(store, "nope", seen_chat, &s, &err), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(ops->inbox_push(store, NULL, "hi", NULL, &err),
			 SBXLOOP_EINVAL);
}
END_TEST

static Suite *runs_suite(void)
{
	TCase *tc;
	Suite *s = suite_with("runs", &tc, 1);

	tcase_add_test(tc, test_run_create_then_get_returns_the_row);
	tcase_add_test(tc, test_duplicate_run_id_is_eexist);
	tcase_add_test(tc, test_unknown_run_is_enotfound_everywhere);
	tcase_add_test(tc, test_run_list_is_newest_first_and_stops_on_request);
	tcase_add_test(tc, test_run_update_sets_only_flagged_fields);
	tcase_add_test(
		tc, test_conditional_update_refused_reports_the_state_found);
	tcase_add_test(tc,
		       test_conditional_update_applies_in_an_allowed_state);
	tcase_add_test(tc, test_inbox_is_fifo_per_run_until_marked_done);
	tcase_add_test(tc, test_inbox_of_an_unknown_run_is_enotfound);
	return s;
}

static Suite *tasks_suite(void)
{
	TCase *tc;
	Suite *s = suite_with("tasks and attempts", &tc, 1);

	tcase_add_test(tc, test_tasks_list_in_stored_order_with_defaults);
	tcase_add_test(tc, test_tasks_save_replaces_the_previous_set);
	tcase_add_test(tc, test_task_update_and_run_counts);
	tcase_add_test(tc, test_attempt_latest_is_the_highest_id);
	tcase_add_test(tc, test_attempts_list_by_id_all_or_per_task);
	return s;
}

static Suite *events_suite(void)
{
	TCase *tc;
	Suite *s = suite_with("events", &tc, 1);

	tcase_add_test(tc, test_events_come_back_in_append_order_after_a_seq);
	tcase_add_test(tc, test_type_prefix_is_literal_underscore_and_percent);
	tcase_add_test(tc, test_task_filter_matches_data_task_id_exactly);
	tcase_add_test(tc, test_task_filter_agrees_with_json_extract);
	tcase_add_test(tc, test_type_prefix_over_many_types);
	tcase_add_test(tc,
		       test_events_inserted_through_the_view_are_read_back);
	tcase_add_test(tc, test_event_envelope_is_the_sorted_compact_line);
	tcase_add_test(
		tc, test_buffered_events_are_durable_with_the_next_transition);
	tcase_add_test(tc,
		       test_a_refused_update_still_commits_buffered_events);
	tcase_add_test(tc, test_a_full_buffer_is_written_without_a_transition);
	tcase_add_test(tc, test_an_old_buffer_is_written_on_the_next_append);
	tcase_add_test(tc, test_event_last_ts_is_the_newest_event);
	return s;
}
int main(void)
{
	SRunner *sr = srunner_create(runs_suite());
	int failed;

	srunner_add_suite(sr, tasks_suite());
	srunner_add_suite(sr, events_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

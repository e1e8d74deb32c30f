/*
 * Specification of the SQLite store plugin, driven through its vtable on
 * the fake host: runs, tasks, attempts, events, schema and migrations,
 * sharing between connections and processes, refusal of a corrupt file,
 * and the SIGKILL durability trials.
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

extern const struct sbxloop_plugin_descriptor sbxloop_plugin_descriptor;

static const struct sbxloop_store_ops *ops;
static char tmpdir[256];
static struct fakehost *fh;
static void *store;
static struct sbxloop_error err;

static void setup(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/test-store.XXXXXX",
		 base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ops = sbxloop_plugin_descriptor.components[0].ops;
	fh = fakehost_new(tmpdir);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ops->create(fakehost_host(fh), &store, &err), 0);
}

static void teardown(void)
{
	if (store)
		ops->destroy(store);
	store = NULL;
	fakehost_free(fh);
	fh = NULL;
	store_torture_rmtree(tmpdir);
}

/* A bare setup for tests that open the store themselves. */
static void setup_dir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/test-store.XXXXXX",
		 base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ops = sbxloop_plugin_descriptor.components[0].ops;
	fh = fakehost_new(tmpdir);
	store = NULL;
	memset(&err, 0, sizeof(err));
}

static void db_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/state.db", tmpdir);
}

/* A raw connection on the same file, as another process would have. */
static sqlite3 *raw_open(void)
{
	char path[512];
	sqlite3 *db = NULL;

	db_path(path, sizeof(path));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	return db;
}

static long long raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	long long v;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
		      "%s: %s", sql, sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK,
		      "%s: %s", sql, msg ? msg : "?");
}

static void make_run(const char *id, const char *state, double created)
{
	struct sbxloop_run_row r = {.struct_size = sizeof(r)};

	r.run_id = id;
	r.outcome = "add tests";
	r.state = state;
	r.config_json = "{\"k\":1}";
	r.created_at = created;
	ck_assert_msg(ops->run_create(store, &r, &err) == 0, "%s",
		      err.message);
}

static void append(const char *run_id, const char *type, const char *data)
{
	struct sbxloop_event ev = {.struct_size = sizeof(ev)};

	ev.run_id = run_id;
	ev.type = type;
	ev.data_json = data;
	ev.ts = 1000.5;
	ck_assert_msg(ops->event_append(store, &ev, NULL, &err) == 0, "%s",
		      err.message);
}

/* Run "o<i>" in the store `st` (a child's own); exits 2 on failure. */
static void make_run_in(void *st, int i)
{
	struct sbxloop_run_row r = {.struct_size = sizeof(r)};
	struct sbxloop_error e = {0, ""};
	char id[16];

	snprintf(id, sizeof(id), "o%d", i);
	r.run_id = id;
	r.outcome = "race";
	r.state = "created";
	r.config_json = "{}";
	if (ops->run_create(st, &r, &e)) {
		fprintf(stderr, "run %d: %s\n", i, e.message);
		_exit(2);
	}
}

/* Collected copies of rows handed to callbacks. */
struct seen {
	int n;
	char items[64][256];
	double num[64];
	int stop_after; /* 0 = never */
};

static int seen_run(void *user, const struct sbxloop_run_row *r)
{
	struct seen *s = user;

	snprintf(s->items[s->n], sizeof(s->items[0]),
		 "%s|%s|%s|%s|%s|%d|%s|%d/%d|%d", r->run_id, r->state,
		 r->reason ? r->reason : "-",
		 r->workspace ? r->workspace : "-",
		 r->kept_reason ? r->kept_reason : "-", r->mounted,
		 r->guidance_json, r->tasks_done, r->tasks_total, r->attempts);
	s->num[s->n] = r->updated_at;
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

static int seen_task(void *user, const struct sbxloop_task_row *t)
{
	struct seen *s = user;

	snprintf(s->items[s->n++], sizeof(s->items[0]), "%s|%d|%s|%d|%d|%s|%s",
		 t->task_id, t->order_idx, t->state, t->revisions, t->replans,
		 t->last_feedback, t->plan_json ? t->plan_json : "-");
	return 0;
}

static int seen_attempt(void *user, const struct sbxloop_attempt_row *a)
{
	struct seen *s = user;

	snprintf(s->items[s->n], sizeof(s->items[0]), "%s|%s|%d|%s",
		 a->task_id ? a->task_id : "-", a->phase, a->attempt,
		 a->status);
	s->num[s->n++] = (double)a->id;
	return 0;
}

static int seen_event(void *user, const struct sbxloop_event *ev)
{
	struct seen *s = user;

	if (s->n < 64) {
		snprintf(s->items[s->n], sizeof(s->items[0]), "%s", ev->type);
		s->num[s->n] = (double)ev->seq;
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

static int seen_event_json(void *user, const struct sbxloop_event *ev)
{
	struct seen *s = user;

	snprintf(s->items[s->n++], sizeof(s->items[0]), "%s", ev->json);
	return 0;
}

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

static int query(const char *prefix, const char *task, int64_t after,
		 int64_t limit, struct seen *s)
{
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};

	memset(s, 0, sizeof(*s));
	q.run_id = "r1";
	q.type_prefix = prefix;
	q.task_id = task;
	q.after_seq = after;
	q.limit = limit;
	return ops->events_query(store, &q, seen_event, s, &err);
}

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
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 3);
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
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 3);
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
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 3);
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

	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 3);
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

static Suite *suite_with(const char *name, TCase **tc, int fixture)
{
	Suite *s = suite_create(name);

	*tc = tcase_create("core");
	if (fixture)
		tcase_add_checked_fixture(*tc, setup, teardown);
	else
		tcase_add_checked_fixture(*tc, setup_dir, teardown);
	suite_add_tcase(s, *tc);
	return s;
}

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

static Suite *schema_suite(void)
{
	TCase *tc, *fresh;
	Suite *s = suite_with("schema", &tc, 0);

	tcase_add_test(tc,
		       test_v1_database_is_migrated_in_place_with_data_intact);
	tcase_add_test(tc,
		       test_an_unversioned_database_gains_the_missing_columns);
	tcase_add_test(tc, test_v2_database_moves_its_events_to_keyed_rows);
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
	SRunner *sr = srunner_create(runs_suite());
	int failed;

	srunner_add_suite(sr, tasks_suite());
	srunner_add_suite(sr, events_suite());
	srunner_add_suite(sr, schema_suite());
	srunner_add_suite(sr, sharing_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

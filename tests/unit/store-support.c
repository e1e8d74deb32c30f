/*
 * The fixture and helpers of the SQLite store suites (test-store-*.c):
 * the plugin driven through its vtable on the fake host, one scratch
 * state directory per test.
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

const struct sbxloop_store_ops *ops;
char tmpdir[256];
struct fakehost *fh;
void *store;
struct sbxloop_error err;

void setup(void)
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

void teardown(void)
{
	if (store)
		ops->destroy(store);
	store = NULL;
	fakehost_free(fh);
	fh = NULL;
	store_torture_rmtree(tmpdir);
}

/* A bare setup for tests that open the store themselves. */
void setup_dir(void)
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

void db_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/state.db", tmpdir);
}

/* A raw connection on the same file, as another process would have. */
sqlite3 *raw_open(void)
{
	char path[512];
	sqlite3 *db = NULL;

	db_path(path, sizeof(path));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	return db;
}

long long raw_int(sqlite3 *db, const char *sql)
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

void raw_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK,
		      "%s: %s", sql, msg ? msg : "?");
}

void make_run(const char *id, const char *state, double created)
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

void append(const char *run_id, const char *type, const char *data)
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
void make_run_in(void *st, int i)
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

int seen_run(void *user, const struct sbxloop_run_row *r)
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

int seen_task(void *user, const struct sbxloop_task_row *t)
{
	struct seen *s = user;

	snprintf(s->items[s->n++], sizeof(s->items[0]), "%s|%d|%s|%d|%d|%s|%s",
		 t->task_id, t->order_idx, t->state, t->revisions, t->replans,
		 t->last_feedback, t->plan_json ? t->plan_json : "-");
	return 0;
}

int seen_attempt(void *user, const struct sbxloop_attempt_row *a)
{
	struct seen *s = user;

	snprintf(s->items[s->n], sizeof(s->items[0]), "%s|%s|%d|%s",
		 a->task_id ? a->task_id : "-", a->phase, a->attempt,
		 a->status);
	s->num[s->n++] = (double)a->id;
	return 0;
}

int seen_event(void *user, const struct sbxloop_event *ev)
{
	struct seen *s = user;

	if (s->n < 64) {
		snprintf(s->items[s->n], sizeof(s->items[0]), "%s", ev->type);
		s->num[s->n] = (double)ev->seq;
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

int seen_event_json(void *user, const struct sbxloop_event *ev)
{
	struct seen *s = user;

	snprintf(s->items[s->n++], sizeof(s->items[0]), "%s", ev->json);
	return 0;
}

int query(const char *prefix, const char *task, int64_t after, int64_t limit,
	  struct seen *s)
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

Suite *suite_with(const char *name, TCase **tc, int fixture)
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

/*
 * What the store suites (test-store-*.c) share: the plugin's vtable on a
 * fake host in a scratch state directory, raw SQLite access to its file,
 * row builders and list callbacks. Only they include it.
 */
#ifndef SBXLOOP_TESTS_STORE_SUPPORT_H
#define SBXLOOP_TESTS_STORE_SUPPORT_H

#include <check.h>
#include <sqlite3.h>
#include <stddef.h>

#include <sbxloop/store.h>

#include "fakehost.h"

extern const struct sbxloop_plugin_descriptor sbxloop_plugin_descriptor;

extern const struct sbxloop_store_ops *ops;
extern char tmpdir[256];
extern struct fakehost *fh;
extern void *store;
extern struct sbxloop_error err;
void setup(void);
void teardown(void);
void setup_dir(void);
void db_path(char *buf, size_t len);
sqlite3 *raw_open(void);
long long raw_int(sqlite3 *db, const char *sql);
void raw_exec(sqlite3 *db, const char *sql);
void make_run(const char *id, const char *state, double created);
void append(const char *run_id, const char *type, const char *data);
void make_run_in(void *st, int i);
struct seen {
	int n;
	char items[64][256];
	double num[64];
	int stop_after; /* 0 = never */
};

int seen_run(void *user, const struct sbxloop_run_row *r);
int seen_task(void *user, const struct sbxloop_task_row *t);
int seen_attempt(void *user, const struct sbxloop_attempt_row *a);
int seen_event(void *user, const struct sbxloop_event *ev);
int seen_event_json(void *user, const struct sbxloop_event *ev);
int query(const char *prefix, const char *task, int64_t after, int64_t limit,
	  struct seen *s);
Suite *suite_with(const char *name, TCase **tc, int fixture);

#endif

/*
 * bench/db.c and the readings bench/lanes takes of a run's store: the
 * tasks' span and the jobs started, on an events table of the store's
 * view's columns holding a known run; and -1 for what cannot be read.
 */
#include "config.h"

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/db.h"

static char dir[32];
static char path[64];

/* A store whose events are `sql` (INSERTs), or none when NULL. */
static void store(const char *sql)
{
	sqlite3 *db;

	snprintf(dir, sizeof(dir), "/tmp/bench-db-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state.db", dir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_exec(db,
			     "CREATE TABLE events (seq INTEGER PRIMARY KEY, "
			     "run_id TEXT, ts REAL, type TEXT, job_id TEXT, "
			     "data_json TEXT, task_id TEXT)",
			     NULL, NULL, NULL),
		SQLITE_OK);
	if (sql)
		ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL),
				 SQLITE_OK);
	sqlite3_close(db);
}

static void drop(void)
{
	unlink(path);
	rmdir(dir);
}

/* Two tasks: the first starts at 100.25, the last ends at 103.75. */
START_TEST(test_lanes_readings_of_a_run)
{
	store("INSERT INTO events (ts, type, task_id) VALUES"
	      " (100.0, 'run.start', NULL),"
	      " (100.1, 'worker.start', NULL),"
	      " (100.2, 'worker.end', NULL),"
	      " (100.25, 'task.start', 't1'),"
	      " (100.3, 'worker.start', 't1'),"
	      " (100.5, 'task.start', 't2'),"
	      " (100.6, 'worker.start', 't2'),"
	      " (102.0, 'task.end', 't1'),"
	      " (103.75, 'task.end', 't2'),"
	      " (104.5, 'run.end', NULL)");
	ck_assert_double_eq_tol(bench_db_value(path, BENCH_SQL_TASKS_SPAN),
				3.5, 1e-9);
	ck_assert_double_eq(bench_db_value(path, BENCH_SQL_JOBS), 3);
	drop();
}
END_TEST

/* No task ran: no span (-1); no job: 0, which bench/lanes refuses. */
START_TEST(test_an_empty_run_gives_no_span_and_no_jobs)
{
	store(NULL);
	ck_assert_double_eq(bench_db_value(path, BENCH_SQL_TASKS_SPAN), -1);
	ck_assert_double_eq(bench_db_value(path, BENCH_SQL_JOBS), 0);
	/* a query the store cannot answer */
	ck_assert_double_eq(bench_db_value(path, "SELECT nope FROM events"),
			    -1);
	drop();
}
END_TEST

START_TEST(test_a_missing_store_reads_as_minus_one)
{
	ck_assert_double_eq(
		bench_db_value("/nonexistent/state.db", BENCH_SQL_JOBS), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bench-db");
	TCase *tc = tcase_create("db");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_lanes_readings_of_a_run);
	tcase_add_test(tc, test_an_empty_run_gives_no_span_and_no_jobs);
	tcase_add_test(tc, test_a_missing_store_reads_as_minus_one);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

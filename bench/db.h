/*
 * The benches' one read of a run's store: the first column of the first
 * row of a query on state.db, opened read-only.
 */
#ifndef BENCH_DB_H
#define BENCH_DB_H

/* The value as a double, or -1 when the query gives no row or NULL. */
double bench_db_value(const char *db_path, const char *sql);

/* bench/lanes' two readings of a run's events (tests/unit/test-bench-db):
 * the tasks' span, first task.start to last task.end, in seconds... */
#define BENCH_SQL_TASKS_SPAN                                                  \
	"SELECT max(ts) - min(ts) FROM events "                               \
	"WHERE type IN ('task.start', 'task.end')"
/* ...and how many jobs the run started. */
#define BENCH_SQL_JOBS                                                        \
	"SELECT count(*) FROM events WHERE type = 'worker.start'"

#endif

/*
 * The benches' one read of a run's store: the first column of the first
 * row of a query on state.db, opened read-only.
 */
#ifndef BENCH_DB_H
#define BENCH_DB_H

/* The value as a double, or -1 when the query gives no row or NULL. */
double bench_db_value(const char *db_path, const char *sql);

#endif

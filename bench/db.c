/*
 * The benches' one read of a run's store (db.h).
 */
#include "config.h"

#include <sqlite3.h>
#include <stddef.h>

#include "db.h"

double bench_db_value(const char *db_path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	double v = -1;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) ==
		    SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

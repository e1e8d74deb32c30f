/*
 * The plumbing under every other file of the store: clocks, SQLite
 * errors turned into sbxloop codes and messages, the prepared-statement
 * cache, and sq_write_tx(), the one shape of a write transaction. Only
 * the files of this plugin call it (store_sqlite.h).
 */
#include "config.h"

#include "store_sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double sq_now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double sq_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The sbxloop code for what SQLite last reported on the connection. */
static int db_code(sqlite3 *db)
{
	switch (sqlite3_errcode(db) & 0xff) {
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_CANTOPEN:
		return SBXLOOP_ECORRUPT;
	case SQLITE_NOMEM:
		return SBXLOOP_ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return SBXLOOP_ETIMEDOUT;
	default:
		return SBXLOOP_ERR;
	}
}

int sq_damaged(struct store *s, struct sbxloop_error *err, const char *why,
	       int at_open)
{
	return s->host->error_set(
		s->host, err, SBXLOOP_ECORRUPT,
		"database '%s' is damaged: %s;%s recover what it holds with "
		"`sqlite3 '%s' .recover | sqlite3 '%s/state-recovered.db'`, "
		"then move '%s' away and the recovered file in its place",
		s->path, why, at_open ? " nothing was written to it;" : "",
		s->path, s->dir, s->path);
}

int sq_db_fail(struct store *s, struct sbxloop_error *err, const char *what)
{
	int code = sqlite3_errcode(s->db) & 0xff;

	if ((code == SQLITE_CORRUPT || code == SQLITE_NOTADB) && s->dir) {
		char why[SBXLOOP_ERROR_MAX / 2];

		snprintf(why, sizeof(why), "cannot %s it: %s", what,
			 sqlite3_errmsg(s->db));
		return sq_damaged(s, err, why, 0);
	}
	return s->host->error_set(s->host, err, db_code(s->db),
				  "cannot %s '%s': %s", what, s->path,
				  sqlite3_errmsg(s->db));
}

/*
 * A callback may re-enter the store while a statement is out, so a
 * cached one is handed out only when free. Statements are reused because
 * a transition costs a handful of them and parsing was a visible share
 * of its time.
 */
int sq_db_prepare(struct store *s, const char *sql, sqlite3_stmt **st,
		  struct sbxloop_error *err)
{
	struct store_stmt *c;
	size_t i;

	for (i = 0; i < s->n_stmts; i++) {
		c = &s->stmts[i];
		if (!c->busy && strcmp(c->sql, sql) == 0) {
			c->busy = 1;
			*st = c->st;
			return 0;
		}
	}
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
			       NULL) != SQLITE_OK) {
		*st = NULL;
		return sq_db_fail(s, err, "prepare a query on");
	}
	if (s->n_stmts < STORE_STMT_CACHE &&
	    (s->stmts[s->n_stmts].sql = strdup(sql)) != NULL) {
		c = &s->stmts[s->n_stmts++];
		c->st = *st;
		c->busy = 1;
	}
	return 0;
}

void sq_db_release(struct store *s, sqlite3_stmt *st)
{
	size_t i;

	if (st == NULL)
		return;
	for (i = 0; i < s->n_stmts; i++) {
		if (s->stmts[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			s->stmts[i].busy = 0;
			return;
		}
	}
	sqlite3_finalize(st);
}

int sq_db_run(struct store *s, const char *sql, const char *what,
	      struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sq_db_prepare(s, sql, &st, err);

	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = sq_db_fail(s, err, what);
	sq_db_release(s, st);
	return rc;
}

int sq_bad_argument(struct store *s, const char *what,
		    struct sbxloop_error *err)
{
	return s->host->error_set(s->host, err, SBXLOOP_EINVAL,
				  "invalid store call: %s", what);
}

/* ---------------------------------------------------------------------
 * The write transaction
 */

void sq_tx_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	/* It may have taken names the map remembers. */
	sq_names_clear(s);
}

/* Open a write transaction and put the buffered events in it first. */
static int tx_begin(struct store *s, struct sbxloop_error *err)
{
	int rc =
		sq_db_run(s, "BEGIN IMMEDIATE", "start a transaction on", err);

	if (rc)
		return rc;
	rc = sq_pending_write(s, err);
	if (rc)
		sq_tx_rollback(s);
	return rc;
}

/*
 * Finish what tx_begin() started. `rc` is the outcome of the work: 0 or a
 * refusal (the row was missing, in the wrong state, a duplicate) commits,
 * since the buffered events in the transaction are good either way; any
 * other failure rolls back and keeps the events buffered.
 */
static int tx_end(struct store *s, int rc, struct sbxloop_error *err)
{
	if (rc == 0 || rc == SBXLOOP_ENOTFOUND || rc == SBXLOOP_ESTATE ||
	    rc == SBXLOOP_EEXIST) {
		struct sbxloop_error cerr;
		int crc = sq_db_run(s, "COMMIT", "commit to", &cerr);

		if (crc) {
			sq_tx_rollback(s);
			if (err)
				*err = cerr;
			return crc;
		}
		sq_pending_clear(s);
		return rc;
	}
	sq_tx_rollback(s);
	return rc;
}

/*
 * The lock is recursive: sq_pending_flush() runs this from callers that
 * already hold it, and a query callback may append events.
 */
int sq_write_tx(struct store *s,
		int (*work)(struct store *s, void *arg,
			    struct sbxloop_error *err),
		void *arg, struct sbxloop_error *err)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = tx_begin(s, err);
	if (rc == 0) {
		if (work)
			rc = work(s, arg, err);
		rc = tx_end(s, rc, err);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

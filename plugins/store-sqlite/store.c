/*
 * The store's life: create() makes or opens <state_dir>/state.db (in
 * WAL mode, checked page by page, its schema upgraded to the current
 * version), read-only for status and logs where the directory cannot be
 * written; destroy() writes what is still buffered and closes it. The
 * core calls both through the ops table (module.c); nothing else may.
 */
#include "config.h"

#include "schema.h"
#include "store_sqlite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int db_exec(struct store *s, const char *sql, const char *what,
		   struct sbxloop_error *err)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_db_fail(s, err, what);
	return 0;
}

/* mkdir -p; 0 or -1 with errno. */
static int make_dirs(const char *dir)
{
	char *copy = strdup(dir);
	char *p;
	int rc = 0;

	if (copy == NULL)
		return -1;
	for (p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0700) != 0 && errno != EEXIST) {
			rc = -1;
			goto out;
		}
		*p = '/';
	}
	if (mkdir(copy, 0700) != 0 && errno != EEXIST)
		rc = -1;
out:
	free(copy);
	return rc;
}

static int read_user_version(struct store *s, int *version,
			     struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sq_db_prepare(s, "PRAGMA user_version", &st, err);

	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = sq_db_fail(s, err, "read the schema version of");
		goto out;
	}
	*version = sqlite3_column_int(st, 0);
out:
	sq_db_release(s, st);
	return rc;
}

/* `*n` = the integer the one-row query `sql` gives with `a` and `b`. */
static int query_int(struct store *s, const char *sql, const char *a,
		     const char *b, int *n, struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sq_db_prepare(s, sql, &st, err);

	if (rc)
		return rc;
	sq_bind_text(st, 1, a);
	sq_bind_text(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = sqlite3_column_int(st, 0);
	else
		rc = sq_db_fail(s, err, "read the schema of");
	sq_db_release(s, st);
	return rc;
}

/* Add each column of `cols` its table lacks. */
static int add_missing_columns(struct store *s,
			       const struct store_column *cols,
			       struct sbxloop_error *err)
{
	char sql[256];
	int n = 0, rc = 0;

	for (; cols->table && rc == 0; cols++) {
		rc = query_int(s,
			       "SELECT count(*) FROM pragma_table_info(?1)"
			       " WHERE name = ?2",
			       cols->table, cols->name, &n, err);
		if (rc || n > 0)
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s",
			 cols->table, cols->name, cols->decl);
		rc = db_exec(s, sql, "migrate the schema of", err);
	}
	return rc;
}

/*
 * v2 -> v3 rewrites every event (about 10 s for a million on a 2-core
 * VM): say so before a long one instead of sitting silent.
 */
static int warn_long_upgrade(struct store *s, struct sbxloop_error *err)
{
	int n = 0;
	int rc = query_int(s, "SELECT count(*) FROM events", NULL, NULL, &n,
			   err);

	if (rc == 0 && n >= 100000)
		s->host->log(
			s->host, SBXLOOP_LOG_WARN,
			"store: upgrading '%s' to schema %d: rewriting "
			"%d events, which takes a while; do not interrupt "
			"it (an interrupted upgrade is rolled back)",
			s->path, STORE_SCHEMA_VERSION, n);
	return rc;
}

/* Create or upgrade the schema to STORE_SCHEMA_VERSION, atomically. */
static int schema_apply(struct store *s, struct sbxloop_error *err)
{
	char sql[64];
	int version = 0, rc;

	rc = read_user_version(s, &version, err);
	if (rc || version == STORE_SCHEMA_VERSION)
		return rc;
	rc = db_exec(s, "BEGIN IMMEDIATE", "start a transaction on", err);
	if (rc)
		return rc;
	/* Another process may have migrated it while we waited. */
	rc = read_user_version(s, &version, err);
	if (rc)
		goto out;
	if (version > STORE_SCHEMA_VERSION) {
		rc = s->host->error_set(s->host, err, SBXLOOP_EUNSUPPORTED,
					"database '%s' has schema version %d, "
					"newer than this store knows (%d)",
					s->path, version,
					STORE_SCHEMA_VERSION);
		goto out;
	}
	if (version == 0) {
		int n = 0;

		/* Tables without a version: the original tool's layout. */
		rc = query_int(s,
			       "SELECT count(*) FROM sqlite_master"
			       " WHERE type = 'table' AND name = ?1",
			       "runs", NULL, &n, err);
		if (rc)
			goto out;
		version = n ? 1 : 0;
	}
	if (version == 0) {
		rc = db_exec(s, store_schema_current, "create the schema in",
			     err);
		if (rc)
			goto out;
		version = STORE_SCHEMA_VERSION;
	}
	for (; version < STORE_SCHEMA_VERSION; version++) {
		if (version == 1)
			rc = add_missing_columns(s, store_v2_columns, err);
		if (version == 2)
			rc = warn_long_upgrade(s, err);
		if (rc)
			goto out;
		rc = db_exec(s, store_schema_upgrade[version],
			     "migrate the schema of", err);
		if (rc)
			goto out;
		s->host->log(s->host, SBXLOOP_LOG_INFO,
			     "store: migrated '%s' from schema %d to %d",
			     s->path, version, version + 1);
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 STORE_SCHEMA_VERSION);
	rc = db_exec(s, sql, "set the schema version of", err);
	if (rc)
		goto out;
	rc = db_exec(s, "COMMIT", "commit the schema of", err);
out:
	if (rc)
		sq_tx_rollback(s);
	return rc;
}

static int set_wal(struct store *s, struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *mode;
	int rc = sq_db_prepare(s, "PRAGMA journal_mode = WAL", &st, err);

	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = sq_db_fail(s, err, "open");
		goto out;
	}
	mode = sq_col_text(st, 0);
	if (mode == NULL || strcmp(mode, "wal") != 0)
		rc = s->host->error_set(s->host, err, SBXLOOP_EINFRA,
					"cannot use WAL mode on '%s': "
					"journal mode is '%s'",
					s->path, mode ? mode : "?");
out:
	sq_db_release(s, st);
	return rc;
}

/* The one-row and the STORE_INSERT_ROWS-row INSERTs of sq_pending_write. */
static int prepare_inserts(struct store *s, struct sbxloop_error *err)
{
	static const char head[] =
		"INSERT INTO event_rows"
		" (run_key, ts, type_key, task_key, job_id, data_json) VALUES";
	static const char row[] = " (?, ?, ?, ?, ?, ?),";
	char sql[sizeof(head) + STORE_INSERT_ROWS * (sizeof(row) - 1)];
	size_t len = sizeof(head) - 1;
	int i, rc;

	memcpy(sql, head, len);
	for (i = 0; i < STORE_INSERT_ROWS; i++) {
		memcpy(sql + len, row, sizeof(row) - 1);
		len += sizeof(row) - 1;
		if (i == 0) {
			sql[len - 1] = '\0';
			rc = sq_db_prepare(s, sql, &s->insert_event, err);
			if (rc)
				return rc;
			sql[len - 1] = ',';
		}
	}
	sql[len - 1] = '\0';
	return sq_db_prepare(s, sql, &s->insert_events, err);
}

/* Drop every cached statement (they belong to the connection). */
static void stmts_clear(struct store *s)
{
	size_t i;

	for (i = 0; i < s->n_stmts; i++) {
		sqlite3_finalize(s->stmts[i].st);
		free(s->stmts[i].sql);
	}
	s->n_stmts = 0;
}

/*
 * Run an opening step again while SQLite answers SQLITE_BUSY. It does so
 * without calling the busy handler where waiting could deadlock (two
 * connections switching a fresh file to WAL at once), so the handler
 * alone does not cover the open. Pauses grow from 1 ms to 64 ms, with a
 * per-process jitter; gives up after STORE_BUSY_MS like the handler.
 */
static int open_retry(struct store *s,
		      int (*step)(struct store *s, struct sbxloop_error *err),
		      struct sbxloop_error *err)
{
	double give_up = sq_now_mono() + STORE_BUSY_MS / 1000.0;
	unsigned jitter = (unsigned)getpid() * 2654435761u;
	long pause_us = 1000;
	int rc;

	while ((rc = step(s, err)) == SBXLOOP_ETIMEDOUT &&
	       sq_now_mono() < give_up) {
		long us = pause_us + (long)(jitter % (unsigned)pause_us);
		struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

		jitter = jitter * 1103515245u + 12345u;
		nanosleep(&ts, NULL);
		if (pause_us < 64000)
			pause_us *= 2;
	}
	return rc;
}

/* One quick_check statement: 0, or why the file is damaged. */
static int check_one(struct store *s, const char *sql,
		     struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *res;
	char why[512], *p;
	int rc, step;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		step = sqlite3_errcode(s->db);
	else
		step = sqlite3_step(st);
	if (step == SQLITE_BUSY || step == SQLITE_LOCKED) {
		sqlite3_finalize(st);
		return sq_db_fail(s, err, "check");
	}
	if (step != SQLITE_ROW) {
		rc = sq_damaged(s, err, sqlite3_errmsg(s->db), 1);
		sqlite3_finalize(st);
		return rc;
	}
	res = sq_col_text(st, 0);
	if (res && strcmp(res, "ok") == 0) {
		sqlite3_finalize(st);
		return 0;
	}
	snprintf(why, sizeof(why), "quick_check says %s", res ? res : "?");
	for (p = why; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	sqlite3_finalize(st);
	return sq_damaged(s, err, why, 1);
}

/*
 * PRAGMA quick_check at open, so nothing is written into a damaged file
 * and nothing is shown from one without saying so. A writer checks every
 * page (0.17-0.21 s for a 156 MB file of a million events); `status`
 * and `logs` check the run and task tables only, and damage elsewhere
 * is reported when a query meets it (sq_db_fail).
 */
static int check_pages(struct store *s, struct sbxloop_error *err)
{
	static const char *const tables[] = {"runs", "tasks", NULL};
	char sql[64];
	size_t i;
	int rc = 0, n;

	if (!s->reader)
		return check_one(s, "PRAGMA quick_check(1)", err);
	for (i = 0; tables[i] && rc == 0; i++) {
		n = 0;
		rc = query_int(s,
			       "SELECT count(*) FROM sqlite_master"
			       " WHERE type = 'table' AND name = ?1",
			       tables[i], NULL, &n, err);
		if (rc == 0 && n > 0) {
			snprintf(sql, sizeof(sql), "PRAGMA quick_check(%s)",
				 tables[i]);
			rc = check_one(s, sql, err);
		}
	}
	return rc;
}

static int open_rw(struct store *s, const char *path, int create)
{
	int rc = sqlite3_open_v2(path, &s->db,
				 SQLITE_OPEN_READWRITE |
					 (create ? SQLITE_OPEN_CREATE : 0) |
					 SQLITE_OPEN_FULLMUTEX,
				 NULL);

	if (s->db) {
		sqlite3_extended_result_codes(s->db, 0);
		/* first: every later step may meet another process's lock */
		sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	}
	return rc;
}

static int open_failed(struct store *s, const char *path,
		       struct sbxloop_error *err)
{
	return s->host->error_set(
		s->host, err, SBXLOOP_ECORRUPT, "cannot open '%s': %s", path,
		s->db ? sqlite3_errmsg(s->db) : "out of memory");
}

/*
 * A new state.db appears complete or not at all: the schema is made in
 * a private <path>.new-<pid> (in WAL mode), which is then linked into
 * place; a process that loses the race opens the winner's file. So no
 * sbxloop leaves an empty state.db behind, and one found is damage or
 * someone else's file, not a store to start over in (sq_create).
 * Returns 0, or 1 when the file system cannot link (then the caller
 * creates the file in place).
 */
static int create_fresh(struct store *s, struct sbxloop_error *err)
{
	char *final = s->path, *tmp;
	size_t len = strlen(final) + 32;
	int rc, linked;

	tmp = malloc(len);
	if (tmp == NULL)
		return s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	snprintf(tmp, len, "%s.new-%ld", final, (long)getpid());
	unlink(tmp);
	s->path = tmp;
	if (open_rw(s, tmp, 1) != SQLITE_OK) {
		rc = open_failed(s, tmp, err);
	} else {
		rc = set_wal(s, err);
		if (rc == 0)
			rc = schema_apply(s, err);
	}
	stmts_clear(s);
	sqlite3_close(s->db); /* checkpoints, removes -wal and -shm */
	s->db = NULL;
	s->path = final;
	if (rc == 0) {
		linked = link(tmp, final);
		if (linked != 0 && errno != EEXIST)
			rc = 1;
	}
	unlink(tmp);
	free(tmp);
	return rc;
}

/* The file's size, -1 when it does not exist. */
static long long file_size(const char *path, const char *suffix)
{
	char buf[4096];
	struct stat sb;

	snprintf(buf, sizeof(buf), "%s%s", path, suffix);
	if (stat(buf, &sb) != 0)
		return -1;
	return (long long)sb.st_size;
}

/* Nonzero when `path` exists and cannot be written (EROFS, EACCES). */
static int not_writable(const char *path)
{
	return access(path, W_OK) != 0 && (errno == EROFS || errno == EACCES);
}

/*
 * A read-only open for status and logs in a state directory they cannot
 * write: the WAL's -shm is used when it exists; without it (and without
 * WAL content, which a clean close leaves) the file is read immutable. A
 * missing database is an empty store in memory: there are no runs.
 */
static int version_current(struct store *s, struct sbxloop_error *err);

static int open_read_only(struct store *s, struct sbxloop_error *err)
{
	static const char hex[] = "0123456789abcdef";
	char uri[4200], *p = uri, *end = uri + sizeof(uri) - 32;
	const char *c;
	int rc;

	s->read_only = 1;
	if (file_size(s->path, "") < 0) {
		if (open_rw(s, ":memory:", 1) != SQLITE_OK)
			return open_failed(s, s->path, err);
		return schema_apply(s, err);
	}
	p += snprintf(uri, sizeof(uri), "file:");
	for (c = s->path; *c && p < end; c++) {
		if (*c == '%' || *c == '?' || *c == '#') {
			*p++ = '%';
			*p++ = hex[(unsigned char)*c >> 4];
			*p++ = hex[*c & 15];
		} else {
			*p++ = *c;
		}
	}
	*p = '\0';
	if (file_size(s->path, "-shm") < 0 && file_size(s->path, "-wal") <= 0)
		snprintf(p, (size_t)(uri + sizeof(uri) - p), "?immutable=1");
	else
		snprintf(p, (size_t)(uri + sizeof(uri) - p), "?mode=ro");
	if (sqlite3_open_v2(uri, &s->db,
			    SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
				    SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK)
		return open_failed(s, s->path, err);
	sqlite3_extended_result_codes(s->db, 0);
	sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	rc = open_retry(s, version_current, err);
	return rc ? rc : check_pages(s, err);
}

/* The schema is current: a read-only connection cannot upgrade it. */
static int version_current(struct store *s, struct sbxloop_error *err)
{
	int version = 0;
	int rc = read_user_version(s, &version, err);

	if (rc == 0 && version != STORE_SCHEMA_VERSION)
		rc = s->host->error_set(
			s->host, err, SBXLOOP_EUNSUPPORTED,
			"database '%s' has schema version %d, not %d, and the "
			"state directory '%s' is read-only, so it cannot be "
			"upgraded; run sbxloop once where it is writable",
			s->path, version, STORE_SCHEMA_VERSION, s->dir);
	return rc;
}

int sq_create(const struct sbxloop_host *host, void **ctx,
	      struct sbxloop_error *err)
{
	struct store *s = NULL;
	pthread_mutexattr_t attr;
	const char *dir;
	long long size;
	size_t len;
	int rc = 0, reader;

	*ctx = NULL;
	dir = host->state_dir ? host->state_dir(host) : NULL;
	if (dir == NULL || *dir == '\0')
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "the store needs a state directory");
	reader =
		SBXLOOP_HAS_SLOT(host, struct sbxloop_host, state_read_only) &&
		host->state_read_only(host);
	s = calloc(1, sizeof(*s));
	len = strlen(dir) + sizeof("/state.db");
	if (s == NULL || (s->path = malloc(len)) == NULL ||
	    (s->dir = strdup(dir)) == NULL) {
		if (s)
			free(s->path);
		free(s);
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "out of memory");
	}
	snprintf(s->path, len, "%s/state.db", dir);
	s->host = host;
	s->reader = reader;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&s->lock, &attr);
	pthread_mutexattr_destroy(&attr);

	if (make_dirs(dir) != 0 && !(errno == EROFS && reader)) {
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "cannot create '%s': %s", dir,
				     strerror(errno));
		goto out;
	}
	size = file_size(s->path, "");
	if (size == 0 && file_size(s->path, "-wal") <= 0) {
		rc = host->error_set(
			host, err, SBXLOOP_ECORRUPT,
			"database '%s' is empty (0 bytes, no WAL): sbxloop "
			"never leaves an empty database, so it was truncated "
			"or made by something else; nothing was written to "
			"it. Restore it from a backup, or move it away to "
			"start afresh",
			s->path);
		goto out;
	}
	if (not_writable(dir) || (size >= 0 && not_writable(s->path))) {
		int dir_ro = not_writable(dir);

		if (reader) {
			rc = open_read_only(s, err);
			goto opened;
		}
		rc = host->error_set(
			host, err, SBXLOOP_EINFRA,
			"%s '%s' is read-only: sbxloop needs to write '%s' "
			"(and its -wal and -shm files) for this command; "
			"point state_dir (or SBXLOOP_STATE_DIR) at a writable "
			"directory; status and logs work read-only",
			dir_ro ? "state directory" : "database",
			dir_ro ? dir : s->path, s->path);
		goto out;
	}
	if (size < 0) {
		rc = create_fresh(s, err);
		if (rc < 0)
			goto out;
	}
	if (open_rw(s, s->path, rc == 1) != SQLITE_OK) {
		rc = open_failed(s, s->path, err);
		goto out;
	}
	rc = open_retry(s, check_pages, err);
	if (rc == 0)
		rc = open_retry(s, set_wal, err);
	if (rc)
		goto out;
	/*
	 * A 2 MiB page cache: appends touch a few tail pages, and a query
	 * reads each page once. A 16 MiB one cost a cold `logs --type` a
	 * third of its time in fresh memory (bench/events).
	 */
	rc = db_exec(s,
		     "PRAGMA synchronous = FULL;"
		     "PRAGMA foreign_keys = OFF;"
		     "PRAGMA cache_size = -2048;"
		     "PRAGMA temp_store = MEMORY",
		     "configure", err);
	if (rc)
		goto out;
	rc = open_retry(s, schema_apply, err);
opened:
	if (rc == 0)
		rc = prepare_inserts(s, err);
out:
	if (rc) {
		/* The file stays as it was: never recreated or truncated. */
		if (err && err->code == SBXLOOP_ERR)
			err->code = rc = SBXLOOP_ECORRUPT;
		sq_destroy(s);
		return rc;
	}
	*ctx = s;
	return 0;
}

void sq_destroy(void *ctx)
{
	struct store *s = ctx;
	struct sbxloop_error err;
	size_t i;

	if (s == NULL)
		return;
	if (s->db && s->insert_events && s->n_pending &&
	    sq_pending_flush(s, 1, &err) != 0)
		s->host->log(s->host, SBXLOOP_LOG_ERROR,
			     "store: %zu events lost: %s", s->n_pending,
			     err.message);
	sq_pending_clear(s);
	free(s->pending);
	/* The inserts live in the cache, checked out for good. */
	for (i = 0; i < s->n_stmts; i++) {
		sqlite3_finalize(s->stmts[i].st);
		free(s->stmts[i].sql);
	}
	if (s->db)
		sqlite3_close(s->db);
	sq_names_clear(s);
	pthread_mutex_destroy(&s->lock);
	free(s->envelope.p);
	free(s->path);
	free(s->dir);
	free(s);
}

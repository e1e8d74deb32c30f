/*
 * The SQLite store: runs, tasks, phase attempts and events in
 * <state_dir>/state.db, behind the store vtable of sbxloop/store.h. The
 * core calls it through the module descriptor; nothing else may.
 *
 * Durability: WAL with synchronous=FULL, so a COMMIT has reached the disk
 * when it returns. Events are buffered in memory and written in the same
 * transaction as the next run/task/attempt change (or on flush(), a full
 * buffer, or an old one), so the event log never lags the state while
 * most events cost no fsync of their own; a buffer written only because
 * it is full or old commits without one (the next transition's fsync
 * covers it). Measured: a transition costs one WAL fdatasync, which on a
 * slow disk bounds the append rate (bench/events prints both).
 *
 * Events are rows of small integers (schema.c, v3): the run, the type and
 * the task are keys into event_names, remembered in a hash map, and one
 * covering index (run_key, seq, type_key, task_key) serves every query,
 * so an append dirties the table's tail and one index page. Rows go in
 * STORE_INSERT_ROWS to a statement. The `events` view shows them as v2
 * did. Measured by bench/events against the v2 layout (three text
 * indexes, a json_extract per row, AUTOINCREMENT, one row per INSERT):
 * 110k -> 245k events/s, 219 -> 124 MiB for a million events.
 *
 * Sharing: every write is one short BEGIN IMMEDIATE transaction and the
 * connection waits up to STORE_BUSY_MS for a lock, so other processes
 * (status, logs --follow, cancel) never see "database is locked". A
 * recursive mutex serialises threads of one process on the connection
 * and the buffer (a query callback may append events).
 */
#include "config.h"

#include "schema.h"

#include <sbxloop/store.h>

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STORE_BUSY_MS 10000
#define STORE_BUFFER_MAX 512   /* events held before a forced write */
#define STORE_BUFFER_AGE 0.100 /* seconds an event may wait in memory */
#define STORE_STATE_MAX 64
#define STORE_STMT_CACHE 48  /* prepared statements kept per store */
#define STORE_INSERT_ROWS 16 /* events per multi-row INSERT */
#define STORE_NAME_SLOTS 256 /* names remembered (a power of two) */
#define STORE_TYPE_KEYS 16   /* type keys a --type filter lists inline */

/* One buffered event; its strings live in the same allocation. */
struct store_pending {
	double ts;
	const char *run_id;
	const char *job_id; /* NULL when none */
	const char *type;
	const char *data_json;
	/* The event_names keys, set when the event is written. */
	sqlite3_int64 run_key, type_key, task_key; /* task_key 0: none */
};

/*
 * A name's key, remembered: run ids, types and task ids repeat on almost
 * every event, so each costs a hash probe instead of a query. Keys are
 * never reused or changed once committed; the whole map is dropped when
 * a transaction that may have added one rolls back.
 */
struct store_name {
	char *name; /* NULL: free slot */
	size_t len;
	unsigned hash;
	int kind;
	sqlite3_int64 key;
};

/* A prepared statement kept for reuse; `busy` while checked out. */
struct store_stmt {
	char *sql;
	sqlite3_stmt *st;
	int busy;
};

/* A growable text buffer for the envelopes handed to query callbacks. */
struct store_text {
	char *p;
	size_t len;
	size_t cap;
};

struct store {
	const struct sbxloop_host *host;
	sqlite3 *db;
	char *path;    /* <state_dir>/state.db, for messages */
	char *dir;     /* the state directory */
	int reader;    /* the command only reads (status, logs) */
	int read_only; /* opened for status and logs in a read-only dir */
	pthread_mutex_t lock;

	struct store_pending **pending;
	size_t n_pending;
	size_t cap_pending;
	double pending_since; /* monotonic time of the oldest */

	/* Kept prepared, checked out for good: the hot path. */
	sqlite3_stmt *insert_event;  /* one row */
	sqlite3_stmt *insert_events; /* STORE_INSERT_ROWS rows */
	struct store_name names[STORE_NAME_SLOTS];
	size_t n_names;
	struct store_stmt stmts[STORE_STMT_CACHE];
	size_t n_stmts;
	struct store_text envelope;
};

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
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

/* A damaged file: say which, why, and how to get its rows back. */
static int damaged(struct store *s, struct sbxloop_error *err, const char *why,
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

/*
 * "cannot <what> '<path>': <sqlite message>" with the mapped code; a
 * damaged file gets the recovery hint.
 */
static int db_fail(struct store *s, struct sbxloop_error *err,
		   const char *what)
{
	int code = sqlite3_errcode(s->db) & 0xff;

	if ((code == SQLITE_CORRUPT || code == SQLITE_NOTADB) && s->dir) {
		char why[SBXLOOP_ERROR_MAX / 2];

		snprintf(why, sizeof(why), "cannot %s it: %s", what,
			 sqlite3_errmsg(s->db));
		return damaged(s, err, why, 0);
	}
	return s->host->error_set(s->host, err, db_code(s->db),
				  "cannot %s '%s': %s", what, s->path,
				  sqlite3_errmsg(s->db));
}

static int db_exec(struct store *s, const char *sql, const char *what,
		   struct sbxloop_error *err)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(s, err, what);
	return 0;
}

/*
 * A prepared statement for `sql`, from the cache when one is free (a
 * callback may re-enter the store while a statement is out). Give it back
 * with db_release(). Statements are reused because a transition costs a
 * handful of them and parsing was a visible share of its time.
 */
static int db_prepare(struct store *s, const char *sql, sqlite3_stmt **st,
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
		return db_fail(s, err, "prepare a query on");
	}
	if (s->n_stmts < STORE_STMT_CACHE &&
	    (s->stmts[s->n_stmts].sql = strdup(sql)) != NULL) {
		c = &s->stmts[s->n_stmts++];
		c->st = *st;
		c->busy = 1;
	}
	return 0;
}

static void db_release(struct store *s, sqlite3_stmt *st)
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

/* Run a statement that returns no rows, e.g. BEGIN or COMMIT. */
static int db_run(struct store *s, const char *sql, const char *what,
		  struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = db_prepare(s, sql, &st, err);

	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, err, what);
	db_release(s, st);
	return rc;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static int unknown_run(struct store *s, const char *run_id,
		       struct sbxloop_error *err)
{
	return s->host->error_set(s->host, err, SBXLOOP_ENOTFOUND,
				  "unknown run '%s'", run_id);
}

static int bad_argument(struct store *s, const char *what,
			struct sbxloop_error *err)
{
	return s->host->error_set(s->host, err, SBXLOOP_EINVAL,
				  "invalid store call: %s", what);
}

static void pending_clear(struct store *s)
{
	size_t i;

	for (i = 0; i < s->n_pending; i++)
		free(s->pending[i]);
	s->n_pending = 0;
}

/* ---------------------------------------------------------------------
 * Names: event_names keys for run ids, types and task ids
 */

static unsigned name_hash(int kind, const char *name, size_t len)
{
	unsigned h = 2166136261u ^ (unsigned)kind;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h;
}

static void names_clear(struct store *s)
{
	size_t i;

	for (i = 0; i < STORE_NAME_SLOTS; i++) {
		free(s->names[i].name);
		s->names[i].name = NULL;
	}
	s->n_names = 0;
}

/* The slot holding (kind, name), or the free slot where it would go. */
static struct store_name *names_slot(struct store *s, int kind,
				     const char *name, size_t len,
				     unsigned hash)
{
	size_t i = hash & (STORE_NAME_SLOTS - 1);

	for (;; i = (i + 1) & (STORE_NAME_SLOTS - 1)) {
		struct store_name *n = &s->names[i];

		if (n->name == NULL ||
		    (n->hash == hash && n->kind == kind && n->len == len &&
		     memcmp(n->name, name, len) == 0))
			return n;
	}
}

static void names_remember(struct store *s, int kind, const char *name,
			   size_t len, sqlite3_int64 key)
{
	unsigned hash = name_hash(kind, name, len);
	struct store_name *n;

	/* Full enough to slow probing: start over, it refills at once. */
	if (s->n_names >= STORE_NAME_SLOTS / 2)
		names_clear(s);
	n = names_slot(s, kind, name, len, hash);
	if (n->name != NULL || (n->name = malloc(len + 1)) == NULL)
		return;
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->len = len;
	n->hash = hash;
	n->kind = kind;
	n->key = key;
	s->n_names++;
}

/*
 * The key of (kind, name) in event_names, added when missing. The caller
 * holds a write transaction.
 */
static int names_key(struct store *s, int kind, const char *name, size_t len,
		     sqlite3_int64 *key, struct sbxloop_error *err)
{
	struct store_name *n =
		names_slot(s, kind, name, len, name_hash(kind, name, len));
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (n->name != NULL) {
		*key = n->key;
		return 0;
	}
	*key = 0;
	rc = db_prepare(s,
			"SELECT name_key FROM event_names"
			" WHERE kind = ?1 AND name = ?2",
			&st, err);
	if (rc)
		return rc;
	sqlite3_bind_int(st, 1, kind);
	sqlite3_bind_text(st, 2, name, (int)len, SQLITE_STATIC);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		*key = sqlite3_column_int64(st, 0);
	else if (step != SQLITE_DONE)
		rc = db_fail(s, err, "read event names from");
	db_release(s, st);
	if (rc == 0 && *key == 0) {
		rc = db_prepare(s,
				"INSERT INTO event_names (kind, name)"
				" VALUES (?1, ?2)",
				&st, err);
		if (rc)
			return rc;
		sqlite3_bind_int(st, 1, kind);
		sqlite3_bind_text(st, 2, name, (int)len, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_DONE)
			*key = sqlite3_last_insert_rowid(s->db);
		else
			rc = db_fail(s, err, "name an event in");
		db_release(s, st);
	}
	if (rc == 0 && *key != 0)
		names_remember(s, kind, name, len, *key);
	return rc;
}

/* ---------------------------------------------------------------------
 * The task of an event: data.task_id when it is a string
 */

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* The closing quote of the string opening at `p`; NULL if unterminated. */
static const char *json_string_end(const char *p, int *escaped)
{
	for (p++; *p; p++) {
		if (*p == '"')
			return p;
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			*escaped = 1;
			if (*++p == '\0')
				return NULL;
		}
	}
	return NULL;
}

/* Past one value: at the ',', '}' or ']' that ends it; NULL if none. */
static const char *json_skip_value(const char *p)
{
	int depth = 0, escaped;

	for (;; p++) {
		switch (*p) {
		case '\0':
			return NULL;
		case '"':
			p = json_string_end(p, &escaped);
			if (p == NULL)
				return NULL;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (depth-- == 0)
				return p;
			break;
		case ',':
			if (depth == 0)
				return p;
			break;
		default:
			break;
		}
	}
}

/*
 * Find the top-level "task_id" of the JSON object `json` without
 * building it: 1 with the raw string in `*task`/`*len`, 0 when there is
 * none (or it is not a string), -1 when this quick scan cannot say (an
 * escape, text that is not one object) and SQLite's own JSON functions
 * must decide. The scan checks structure, not every literal. Events
 * are written far more often than read, and a parse per event was a
 * visible part of an append.
 */
static int event_task_scan(const char *json, const char **task, size_t *len)
{
	const char *p = json_ws(json), *key, *end;
	int escaped, found = 0;

	if (*p != '{')
		return -1;
	p = json_ws(p + 1);
	if (*p == '}')
		return 0;
	for (;;) {
		escaped = 0;
		if (*p != '"' || (end = json_string_end(p, &escaped)) == NULL)
			return -1;
		key = p + 1;
		p = json_ws(end + 1);
		if (*p != ':' || escaped)
			return -1;
		p = json_ws(p + 1);
		/* The first one counts, as with json_extract(). */
		if (!found && end - key == 7 &&
		    memcmp(key, "task_id", 7) == 0) {
			found = -1; /* present, not a string */
			if (*p == '"') {
				end = json_string_end(p, &escaped);
				if (end == NULL || escaped)
					return -1;
				*task = p + 1;
				*len = (size_t)(end - p - 1);
				found = 1;
			}
		}
		p = json_skip_value(p);
		if (p == NULL || *p == ']')
			return -1;
		if (*p == '}')
			break;
		p = json_ws(p + 1);
	}
	/* The object must end the text, or it is not JSON. */
	return *json_ws(p + 1) == '\0' ? found > 0 : -1;
}

/* Set p->task_key from data.task_id (0: none), naming it if new. */
static int event_task_key(struct store *s, struct store_pending *p,
			  struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *task = NULL;
	size_t len = 0;
	int rc;

	p->task_key = 0;
	switch (event_task_scan(p->data_json, &task, &len)) {
	case 1:
		return names_key(s, STORE_NAME_TASK, task, len, &p->task_key,
				 err);
	case 0:
		return 0;
	default:
		break;
	}
	rc = db_prepare(s,
			"SELECT CASE WHEN json_valid(?1)"
			" THEN json_extract(?1, '$.task_id') END",
			&st, err);
	if (rc)
		return rc;
	bind_text(st, 1, p->data_json);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = db_fail(s, err, "read an event's task in");
	else if (sqlite3_column_type(st, 0) == SQLITE_TEXT)
		rc = names_key(s, STORE_NAME_TASK, col_text(st, 0),
			       (size_t)sqlite3_column_bytes(st, 0),
			       &p->task_key, err);
	db_release(s, st);
	return rc;
}

/* Bind event `p` to the six parameters from `first` on. */
static void bind_event(sqlite3_stmt *st, int first,
		       const struct store_pending *p)
{
	sqlite3_bind_int64(st, first, p->run_key);
	sqlite3_bind_double(st, first + 1, p->ts);
	sqlite3_bind_int64(st, first + 2, p->type_key);
	if (p->task_key)
		sqlite3_bind_int64(st, first + 3, p->task_key);
	else
		sqlite3_bind_null(st, first + 3);
	bind_text(st, first + 4, p->job_id);
	bind_text(st, first + 5, p->data_json);
}

/*
 * Write the buffered events; the caller holds a write transaction. Names
 * first, then the rows STORE_INSERT_ROWS to a statement: one statement
 * per row cost a third of an append.
 */
static int pending_write(struct store *s, struct sbxloop_error *err)
{
	size_t i, j, n;
	int rc = 0;

	for (i = 0; i < s->n_pending && rc == 0; i++) {
		struct store_pending *p = s->pending[i];

		rc = names_key(s, STORE_NAME_RUN, p->run_id, strlen(p->run_id),
			       &p->run_key, err);
		if (rc == 0)
			rc = names_key(s, STORE_NAME_TYPE, p->type,
				       strlen(p->type), &p->type_key, err);
		if (rc == 0)
			rc = event_task_key(s, p, err);
	}
	for (i = 0; i < s->n_pending && rc == 0; i += n) {
		sqlite3_stmt *st = s->insert_event;

		n = 1;
		if (s->n_pending - i >= STORE_INSERT_ROWS) {
			st = s->insert_events;
			n = STORE_INSERT_ROWS;
		}
		for (j = 0; j < n; j++)
			bind_event(st, (int)j * 6 + 1, s->pending[i + j]);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_fail(s, err, "append an event to");
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	return rc;
}

static void tx_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	/* It may have taken names the map remembers. */
	names_clear(s);
}

/* Open a write transaction and put the buffered events in it first. */
static int tx_begin(struct store *s, struct sbxloop_error *err)
{
	int rc = db_run(s, "BEGIN IMMEDIATE", "start a transaction on", err);

	if (rc)
		return rc;
	rc = pending_write(s, err);
	if (rc)
		tx_rollback(s);
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
		int crc = db_run(s, "COMMIT", "commit to", &cerr);

		if (crc) {
			tx_rollback(s);
			if (err)
				*err = cerr;
			return crc;
		}
		pending_clear(s);
		return rc;
	}
	tx_rollback(s);
	return rc;
}

/*
 * Write the buffered events in a transaction of their own. `durable`
 * says whether the caller needs them on disk now (flush(), destroy) or
 * only visible (a full or old buffer, a query): then the commit skips its
 * fsync (synchronous=NORMAL for that one transaction). The WAL is
 * written in order, so the next FULL commit, a transition's, syncs these
 * frames too: the log still never lags the state.
 */
static int pending_flush(struct store *s, int durable,
			 struct sbxloop_error *err)
{
	int rc;

	if (s->n_pending == 0)
		return 0;
	if (!durable) {
		rc = db_run(s, "PRAGMA synchronous = NORMAL", "configure",
			    err);
		if (rc)
			return rc;
	}
	rc = tx_end(s, tx_begin(s, err), err);
	if (!durable) {
		struct sbxloop_error serr;
		int src = db_run(s, "PRAGMA synchronous = FULL", "configure",
				 rc ? &serr : err);

		if (rc == 0)
			rc = src;
	}
	return rc;
}

/* ---------------------------------------------------------------------
 * Open, schema, close
 */

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
	int rc = db_prepare(s, "PRAGMA user_version", &st, err);

	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = db_fail(s, err, "read the schema version of");
		goto out;
	}
	*version = sqlite3_column_int(st, 0);
out:
	db_release(s, st);
	return rc;
}

/* `*n` = the integer the one-row query `sql` gives with `a` and `b`. */
static int query_int(struct store *s, const char *sql, const char *a,
		     const char *b, int *n, struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = db_prepare(s, sql, &st, err);

	if (rc)
		return rc;
	bind_text(st, 1, a);
	bind_text(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = sqlite3_column_int(st, 0);
	else
		rc = db_fail(s, err, "read the schema of");
	db_release(s, st);
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
		tx_rollback(s);
	return rc;
}

static int set_wal(struct store *s, struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *mode;
	int rc = db_prepare(s, "PRAGMA journal_mode = WAL", &st, err);

	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = db_fail(s, err, "open");
		goto out;
	}
	mode = col_text(st, 0);
	if (mode == NULL || strcmp(mode, "wal") != 0)
		rc = s->host->error_set(s->host, err, SBXLOOP_EINFRA,
					"cannot use WAL mode on '%s': "
					"journal mode is '%s'",
					s->path, mode ? mode : "?");
out:
	db_release(s, st);
	return rc;
}

/* The one-row and the STORE_INSERT_ROWS-row INSERTs of pending_write. */
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
			rc = db_prepare(s, sql, &s->insert_event, err);
			if (rc)
				return rc;
			sql[len - 1] = ',';
		}
	}
	sql[len - 1] = '\0';
	return db_prepare(s, sql, &s->insert_events, err);
}

static void store_destroy(void *ctx);

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
	double give_up = now_mono() + STORE_BUSY_MS / 1000.0;
	unsigned jitter = (unsigned)getpid() * 2654435761u;
	long pause_us = 1000;
	int rc;

	while ((rc = step(s, err)) == SBXLOOP_ETIMEDOUT &&
	       now_mono() < give_up) {
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
		return db_fail(s, err, "check");
	}
	if (step != SQLITE_ROW) {
		rc = damaged(s, err, sqlite3_errmsg(s->db), 1);
		sqlite3_finalize(st);
		return rc;
	}
	res = col_text(st, 0);
	if (res && strcmp(res, "ok") == 0) {
		sqlite3_finalize(st);
		return 0;
	}
	snprintf(why, sizeof(why), "quick_check says %s", res ? res : "?");
	for (p = why; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	sqlite3_finalize(st);
	return damaged(s, err, why, 1);
}

/*
 * PRAGMA quick_check at open, so nothing is written into a damaged file
 * and nothing is shown from one without saying so. A writer checks every
 * page (0.17-0.21 s for a 156 MB file of a million events); `status`
 * and `logs` check the run and task tables only, and damage elsewhere
 * is reported when a query meets it (db_fail).
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
 * someone else's file, not a store to start over in (store_create).
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

static int store_create(const struct sbxloop_host *host, void **ctx,
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
		store_destroy(s);
		return rc;
	}
	*ctx = s;
	return 0;
}

static void store_destroy(void *ctx)
{
	struct store *s = ctx;
	struct sbxloop_error err;
	size_t i;

	if (s == NULL)
		return;
	if (s->db && s->insert_events && s->n_pending &&
	    pending_flush(s, 1, &err) != 0)
		s->host->log(s->host, SBXLOOP_LOG_ERROR,
			     "store: %zu events lost: %s", s->n_pending,
			     err.message);
	pending_clear(s);
	free(s->pending);
	/* The inserts live in the cache, checked out for good. */
	for (i = 0; i < s->n_stmts; i++) {
		sqlite3_finalize(s->stmts[i].st);
		free(s->stmts[i].sql);
	}
	if (s->db)
		sqlite3_close(s->db);
	names_clear(s);
	pthread_mutex_destroy(&s->lock);
	free(s->envelope.p);
	free(s->path);
	free(s->dir);
	free(s);
}

/* ---------------------------------------------------------------------
 * Runs
 */

#define RUN_COLUMNS                                                           \
	"SELECT r.run_id, r.outcome, r.state, r.config_json, r.created_at,"   \
	" r.updated_at, r.workspace, r.mounted, r.kept_reason, r.reason,"     \
	" r.user_guidance,"                                                   \
	" (SELECT count(*) FROM tasks t WHERE t.run_id = r.run_id),"          \
	" (SELECT count(*) FROM tasks t WHERE t.run_id = r.run_id"            \
	" AND t.state = 'done'),"                                             \
	" (SELECT count(*) FROM phase_attempts a"                             \
	" WHERE a.run_id = r.run_id)"                                         \
	" FROM runs r"

static void run_from_row(sqlite3_stmt *st, struct sbxloop_run_row *r)
{
	memset(r, 0, sizeof(*r));
	r->struct_size = sizeof(*r);
	r->run_id = col_text(st, 0);
	r->outcome = col_text(st, 1);
	r->state = col_text(st, 2);
	r->config_json = col_text(st, 3);
	r->created_at = sqlite3_column_double(st, 4);
	r->updated_at = sqlite3_column_double(st, 5);
	r->workspace = col_text(st, 6);
	r->mounted = sqlite3_column_int(st, 7);
	r->kept_reason = col_text(st, 8);
	r->reason = col_text(st, 9);
	r->guidance_json = col_text(st, 10);
	r->tasks_total = sqlite3_column_int(st, 11);
	r->tasks_done = sqlite3_column_int(st, 12);
	r->attempts = sqlite3_column_int(st, 13);
}

static int store_run_create(void *ctx, const struct sbxloop_run_row *run,
			    struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	double now = now_wall();
	int rc;

	if (run == NULL || run->run_id == NULL || run->outcome == NULL)
		return bad_argument(s, "run_create needs run_id and outcome",
				    err);
	pthread_mutex_lock(&s->lock);
	rc = tx_begin(s, err);
	if (rc)
		goto out;
	rc = db_prepare(s,
			"INSERT INTO runs (run_id, outcome, state,"
			" config_json,"
			" created_at, updated_at, workspace, mounted,"
			" kept_reason, user_guidance, reason)"
			" VALUES (?1, ?2, coalesce(?3, 'created'),"
			" coalesce(?4, '{}'), ?5, ?5, ?6, ?7, ?8,"
			" coalesce(?9, '[]'), ?10)",
			&st, err);
	if (rc)
		goto end;
	bind_text(st, 1, run->run_id);
	bind_text(st, 2, run->outcome);
	bind_text(st, 3, run->state);
	bind_text(st, 4, run->config_json);
	sqlite3_bind_double(st, 5,
			    run->created_at > 0 ? run->created_at : now);
	bind_text(st, 6, run->workspace);
	sqlite3_bind_int(st, 7, run->mounted);
	bind_text(st, 8, run->kept_reason);
	bind_text(st, 9, run->guidance_json);
	bind_text(st, 10, run->reason);
	if (sqlite3_step(st) != SQLITE_DONE) {
		if ((sqlite3_errcode(s->db) & 0xff) == SQLITE_CONSTRAINT)
			rc = s->host->error_set(s->host, err, SBXLOOP_EEXIST,
						"run '%s' already exists",
						run->run_id);
		else
			rc = db_fail(s, err, "insert a run into");
	}
end:
	db_release(s, st);
	rc = tx_end(s, rc, err);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Is `state` one of the NULL-terminated `set`? */
static int state_in(const char *state, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(state, *set) == 0)
			return 1;
	return 0;
}

/* Read the run's state into `buf` inside the current transaction. */
static int run_state_read(struct store *s, const char *run_id, char *buf,
			  size_t len, struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = db_prepare(s, "SELECT state FROM runs WHERE run_id = ?1", &st,
			    err);

	if (rc)
		return rc;
	bind_text(st, 1, run_id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		snprintf(buf, len, "%s", col_text(st, 0));
		break;
	case SQLITE_DONE:
		rc = unknown_run(s, run_id, err);
		break;
	default:
		rc = db_fail(s, err, "read a run from");
	}
	db_release(s, st);
	return rc;
}

static int store_run_update(void *ctx, const struct sbxloop_run_update *upd,
			    char *prev_state, size_t prev_state_len,
			    struct sbxloop_error *err)
{
	struct store *s = ctx;
	char state[STORE_STATE_MAX];
	char sql[512];
	sqlite3_stmt *st = NULL;
	unsigned f;
	int rc;

	if (upd == NULL || upd->run_id == NULL)
		return bad_argument(s, "run_update needs a run_id", err);
	f = upd->fields;
	if ((f & SBXLOOP_RUN_STATE) && upd->state == NULL)
		return bad_argument(s, "run_update without a state", err);
	if (prev_state && prev_state_len)
		prev_state[0] = '\0';
	pthread_mutex_lock(&s->lock);
	rc = tx_begin(s, err);
	if (rc)
		goto out;
	rc = run_state_read(s, upd->run_id, state, sizeof(state), err);
	if (rc)
		goto end;
	if (prev_state && prev_state_len)
		snprintf(prev_state, prev_state_len, "%s", state);
	if (upd->only_if_state && !state_in(state, upd->only_if_state)) {
		rc = s->host->error_set(s->host, err, SBXLOOP_ESTATE,
					"run '%s' is %s", upd->run_id, state);
		goto end;
	}
	if ((f &
	     (SBXLOOP_RUN_STATE | SBXLOOP_RUN_WORKSPACE | SBXLOOP_RUN_KEPT |
	      SBXLOOP_RUN_GUIDANCE | SBXLOOP_RUN_REASON)) == 0)
		goto end;
	/* Every column is always bound; the flags pick which are set. */
	snprintf(sql, sizeof(sql),
		 "UPDATE runs SET run_id = run_id%s%s%s%s%s%s"
		 " WHERE run_id = ?1",
		 f & SBXLOOP_RUN_STATE ? ", state = ?2" : "",
		 f & (SBXLOOP_RUN_STATE | SBXLOOP_RUN_REASON) ? ", reason = ?3"
							      : "",
		 f & SBXLOOP_RUN_WORKSPACE ? ", workspace = ?4, mounted = ?5"
					   : "",
		 f & SBXLOOP_RUN_KEPT ? ", kept_reason = ?6" : "",
		 f & SBXLOOP_RUN_GUIDANCE
			 ? ", user_guidance = coalesce(?7, '[]')"
			 : "",
		 f & ~(unsigned)SBXLOOP_RUN_KEPT ? ", updated_at = ?8" : "");
	rc = db_prepare(s, sql, &st, err);
	if (rc)
		goto end;
	bind_text(st, 1, upd->run_id);
	bind_text(st, 2, upd->state);
	bind_text(st, 3, upd->reason);
	bind_text(st, 4, upd->workspace);
	sqlite3_bind_int(st, 5, upd->mounted);
	bind_text(st, 6, upd->kept_reason);
	bind_text(st, 7, upd->guidance_json);
	sqlite3_bind_double(st, 8, now_wall());
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, err, "update a run in");
end:
	db_release(s, st);
	rc = tx_end(s, rc, err);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int store_run_get(void *ctx, const char *run_id,
			 int (*cb)(void *user,
				   const struct sbxloop_run_row *run),
			 void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_run_row row;
	sqlite3_stmt *st = NULL;
	int rc;

	if (run_id == NULL || cb == NULL)
		return bad_argument(s, "run_get needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = db_prepare(s, RUN_COLUMNS " WHERE r.run_id = ?1", &st, err);
	if (rc)
		goto out;
	bind_text(st, 1, run_id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		run_from_row(st, &row);
		cb(user, &row);
		break;
	case SQLITE_DONE:
		rc = unknown_run(s, run_id, err);
		break;
	default:
		rc = db_fail(s, err, "read a run from");
	}
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int store_run_list(void *ctx,
			  int (*cb)(void *user,
				    const struct sbxloop_run_row *run),
			  void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_run_row row;
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (cb == NULL)
		return bad_argument(s, "run_list needs a callback", err);
	pthread_mutex_lock(&s->lock);
	rc = db_prepare(s, RUN_COLUMNS " ORDER BY r.created_at DESC", &st,
			err);
	if (rc)
		goto out;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		run_from_row(st, &row);
		if (cb(user, &row))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = db_fail(s, err, "list the runs of");
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* 0 when the run exists, ENOTFOUND when not. */
static int run_must_exist(struct store *s, const char *run_id,
			  struct sbxloop_error *err)
{
	char state[STORE_STATE_MAX];

	return run_state_read(s, run_id, state, sizeof(state), err);
}

/* ---------------------------------------------------------------------
 * Tasks
 */

static int store_tasks_save(void *ctx, const char *run_id,
			    const struct sbxloop_task_row *tasks, size_t n,
			    struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *del = NULL, *ins = NULL;
	size_t i;
	int rc;

	if (run_id == NULL || (n && tasks == NULL))
		return bad_argument(s, "tasks_save needs a run_id", err);
	for (i = 0; i < n; i++)
		if (tasks[i].task_id == NULL)
			return bad_argument(s, "a task without an id", err);
	pthread_mutex_lock(&s->lock);
	rc = tx_begin(s, err);
	if (rc)
		goto out;
	rc = run_must_exist(s, run_id, err);
	if (rc)
		goto end;
	rc = db_prepare(s, "DELETE FROM tasks WHERE run_id = ?1", &del, err);
	if (rc)
		goto end;
	bind_text(del, 1, run_id);
	if (sqlite3_step(del) != SQLITE_DONE) {
		rc = db_fail(s, err, "replace the tasks in");
		goto end;
	}
	rc = db_prepare(s,
			"INSERT INTO tasks (run_id, task_id, order_idx, state,"
			" spec_json, plan_json, revisions, replans,"
			" last_feedback, session_id)"
			" VALUES (?1, ?2, ?3, coalesce(?4, 'pending'),"
			" coalesce(?5, '{}'), ?6, ?7, ?8, coalesce(?9, ''),"
			" ?10)",
			&ins, err);
	if (rc)
		goto end;
	for (i = 0; i < n; i++) {
		const struct sbxloop_task_row *t = &tasks[i];

		sqlite3_reset(ins);
		bind_text(ins, 1, run_id);
		bind_text(ins, 2, t->task_id);
		sqlite3_bind_int(ins, 3, t->order_idx);
		bind_text(ins, 4, t->state);
		bind_text(ins, 5, t->spec_json);
		bind_text(ins, 6, t->plan_json);
		sqlite3_bind_int(ins, 7, t->revisions);
		sqlite3_bind_int(ins, 8, t->replans);
		bind_text(ins, 9, t->last_feedback);
		bind_text(ins, 10, t->session_id);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			if ((sqlite3_errcode(s->db) & 0xff) ==
			    SQLITE_CONSTRAINT)
				rc = s->host->error_set(
					s->host, err, SBXLOOP_EINVAL,
					"task '%s' appears twice in run '%s'",
					t->task_id, run_id);
			else
				rc = db_fail(s, err, "save a task in");
			goto end;
		}
	}
end:
	db_release(s, del);
	db_release(s, ins);
	rc = tx_end(s, rc, err);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int store_task_update(void *ctx, const struct sbxloop_task_row *task,
			     struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc;

	if (task == NULL || task->run_id == NULL || task->task_id == NULL ||
	    task->state == NULL)
		return bad_argument(
			s, "task_update needs run_id, task_id, state", err);
	pthread_mutex_lock(&s->lock);
	rc = tx_begin(s, err);
	if (rc)
		goto out;
	rc = db_prepare(s,
			"UPDATE tasks SET state = ?3,"
			" spec_json = coalesce(?4, spec_json), plan_json = ?5,"
			" revisions = ?6, replans = ?7,"
			" last_feedback = coalesce(?8, ''), session_id = ?9"
			" WHERE run_id = ?1 AND task_id = ?2",
			&st, err);
	if (rc)
		goto end;
	bind_text(st, 1, task->run_id);
	bind_text(st, 2, task->task_id);
	bind_text(st, 3, task->state);
	bind_text(st, 4, task->spec_json);
	bind_text(st, 5, task->plan_json);
	sqlite3_bind_int(st, 6, task->revisions);
	sqlite3_bind_int(st, 7, task->replans);
	bind_text(st, 8, task->last_feedback);
	bind_text(st, 9, task->session_id);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, err, "update a task in");
	else if (sqlite3_changes(s->db) == 0)
		rc = s->host->error_set(s->host, err, SBXLOOP_ENOTFOUND,
					"unknown task '%s' in run '%s'",
					task->task_id, task->run_id);
end:
	db_release(s, st);
	rc = tx_end(s, rc, err);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int store_tasks_list(void *ctx, const char *run_id,
			    int (*cb)(void *user,
				      const struct sbxloop_task_row *task),
			    void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_task_row t;
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (run_id == NULL || cb == NULL)
		return bad_argument(s, "tasks_list needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = run_must_exist(s, run_id, err);
	if (rc)
		goto out;
	rc = db_prepare(s,
			"SELECT run_id, task_id, order_idx, state, spec_json,"
			" plan_json, revisions, replans, last_feedback,"
			" session_id FROM tasks WHERE run_id = ?1"
			" ORDER BY order_idx",
			&st, err);
	if (rc)
		goto out;
	bind_text(st, 1, run_id);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&t, 0, sizeof(t));
		t.struct_size = sizeof(t);
		t.run_id = col_text(st, 0);
		t.task_id = col_text(st, 1);
		t.order_idx = sqlite3_column_int(st, 2);
		t.state = col_text(st, 3);
		t.spec_json = col_text(st, 4);
		t.plan_json = col_text(st, 5);
		t.revisions = sqlite3_column_int(st, 6);
		t.replans = sqlite3_column_int(st, 7);
		t.last_feedback = col_text(st, 8);
		t.session_id = col_text(st, 9);
		if (cb(user, &t))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = db_fail(s, err, "list the tasks in");
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---------------------------------------------------------------------
 * Phase attempts
 */

static int store_attempt_record(void *ctx, struct sbxloop_attempt_row *a,
				struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	double now = now_wall();
	int rc;

	if (a == NULL || a->run_id == NULL || a->phase == NULL ||
	    a->status == NULL)
		return bad_argument(s,
				    "attempt_record needs run_id, phase,"
				    " status",
				    err);
	pthread_mutex_lock(&s->lock);
	rc = tx_begin(s, err);
	if (rc)
		goto out;
	rc = db_prepare(s,
			"INSERT INTO phase_attempts (run_id, task_id, phase,"
			" attempt, status, output_json, started_at, ended_at)"
			" VALUES (?1, ?2, ?3, ?4, ?5, coalesce(?6, '{}'), ?7,"
			" ?8)",
			&st, err);
	if (rc)
		goto end;
	bind_text(st, 1, a->run_id);
	bind_text(st, 2, a->task_id);
	bind_text(st, 3, a->phase);
	sqlite3_bind_int(st, 4, a->attempt);
	bind_text(st, 5, a->status);
	bind_text(st, 6, a->output_json);
	sqlite3_bind_double(st, 7, a->started_at > 0 ? a->started_at : now);
	sqlite3_bind_double(st, 8, a->ended_at > 0 ? a->ended_at : now);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(s, err, "record a phase attempt in");
	else
		a->id = sqlite3_last_insert_rowid(s->db);
end:
	db_release(s, st);
	rc = tx_end(s, rc, err);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

#define ATTEMPT_COLUMNS                                                       \
	"SELECT id, run_id, task_id, phase, attempt, status, output_json,"    \
	" started_at, ended_at FROM phase_attempts"

/* Step `st` and hand each row to `cb`; `max` rows at most (0 = all). */
static int attempts_each(struct store *s, sqlite3_stmt *st,
			 int (*cb)(void *user,
				   const struct sbxloop_attempt_row *a),
			 void *user, int *seen, struct sbxloop_error *err)
{
	struct sbxloop_attempt_row a;
	int step;

	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&a, 0, sizeof(a));
		a.struct_size = sizeof(a);
		a.id = sqlite3_column_int64(st, 0);
		a.run_id = col_text(st, 1);
		a.task_id = col_text(st, 2);
		a.phase = col_text(st, 3);
		a.attempt = sqlite3_column_int(st, 4);
		a.status = col_text(st, 5);
		a.output_json = col_text(st, 6);
		a.started_at = sqlite3_column_double(st, 7);
		a.ended_at = sqlite3_column_double(st, 8);
		(*seen)++;
		if (cb(user, &a))
			return 0;
	}
	if (step != SQLITE_DONE)
		return db_fail(s, err, "read phase attempts from");
	return 0;
}

static int store_attempt_latest(void *ctx, const char *run_id,
				const char *task_id, const char *phase,
				int (*cb)(void *user,
					  const struct sbxloop_attempt_row *a),
				void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc, seen = 0;

	if (run_id == NULL || phase == NULL || cb == NULL)
		return bad_argument(s, "attempt_latest needs run_id and phase",
				    err);
	pthread_mutex_lock(&s->lock);
	rc = db_prepare(
		s,
		task_id ? ATTEMPT_COLUMNS
			" WHERE run_id = ?1 AND task_id = ?2 AND phase = ?3"
			" ORDER BY id DESC LIMIT 1"
			: ATTEMPT_COLUMNS
			" WHERE run_id = ?1 AND task_id IS NULL"
			" AND phase = ?3 ORDER BY id DESC LIMIT 1",
		&st, err);
	if (rc)
		goto out;
	bind_text(st, 1, run_id);
	if (task_id)
		bind_text(st, 2, task_id);
	bind_text(st, 3, phase);
	rc = attempts_each(s, st, cb, user, &seen, err);
	if (rc == 0 && seen == 0)
		rc = s->host->error_set(s->host, err, SBXLOOP_ENOTFOUND,
					"no %s attempt for %s '%s'", phase,
					task_id ? "task" : "run",
					task_id ? task_id : run_id);
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int store_attempts_list(void *ctx, const char *run_id,
			       const char *task_id,
			       int (*cb)(void *user,
					 const struct sbxloop_attempt_row *a),
			       void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc, seen = 0;

	if (run_id == NULL || cb == NULL)
		return bad_argument(s, "attempts_list needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = run_must_exist(s, run_id, err);
	if (rc)
		goto out;
	rc = db_prepare(
		s,
		task_id ? ATTEMPT_COLUMNS
			" WHERE run_id = ?1 AND task_id = ?2 ORDER BY id"
			: ATTEMPT_COLUMNS " WHERE run_id = ?1 ORDER BY id",
		&st, err);
	if (rc)
		goto out;
	bind_text(st, 1, run_id);
	if (task_id)
		bind_text(st, 2, task_id);
	rc = attempts_each(s, st, cb, user, &seen, err);
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---------------------------------------------------------------------
 * Events
 */

static int store_event_append(void *ctx, const struct sbxloop_event *ev,
			      int64_t *seq_out, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct store_pending *p;
	size_t lr, lj, lt, ld;
	char *cur;
	int rc = 0;

	if (seq_out)
		*seq_out = 0;
	if (ev == NULL || ev->run_id == NULL || ev->type == NULL)
		return bad_argument(s, "an event needs run_id and type", err);
	lr = strlen(ev->run_id) + 1;
	lj = ev->job_id ? strlen(ev->job_id) + 1 : 0;
	lt = strlen(ev->type) + 1;
	ld = strlen(ev->data_json ? ev->data_json : "{}") + 1;
	p = malloc(sizeof(*p) + lr + lj + lt + ld);
	if (p == NULL)
		return s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	cur = (char *)(p + 1);
	p->ts = ev->ts > 0 ? ev->ts : now_wall();
	p->run_id = memcpy(cur, ev->run_id, lr);
	cur += lr;
	p->job_id = lj ? memcpy(cur, ev->job_id, lj) : NULL;
	cur += lj;
	p->type = memcpy(cur, ev->type, lt);
	cur += lt;
	p->data_json = memcpy(cur, ev->data_json ? ev->data_json : "{}", ld);

	pthread_mutex_lock(&s->lock);
	if (s->n_pending == s->cap_pending) {
		size_t cap = s->cap_pending ? s->cap_pending * 2 : 64;
		struct store_pending **grown =
			realloc(s->pending, cap * sizeof(*grown));

		if (grown == NULL) {
			free(p);
			rc = s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
						"out of memory");
			goto out;
		}
		s->pending = grown;
		s->cap_pending = cap;
	}
	if (s->n_pending == 0)
		s->pending_since = now_mono();
	s->pending[s->n_pending++] = p;
	if (s->n_pending >= STORE_BUFFER_MAX ||
	    now_mono() - s->pending_since >= STORE_BUFFER_AGE) {
		rc = pending_flush(s, 0, err);
		/* This event was the last one written. */
		if (rc == 0 && seq_out)
			*seq_out = sqlite3_last_insert_rowid(s->db);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int store_flush(void *ctx, struct sbxloop_error *err)
{
	struct store *s = ctx;
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = pending_flush(s, 1, err);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int text_reserve(struct store_text *t, size_t more)
{
	size_t cap;
	char *p;

	if (t->len + more + 1 <= t->cap)
		return 0;
	cap = t->cap ? t->cap : 256;
	while (cap < t->len + more + 1)
		cap *= 2;
	p = realloc(t->p, cap);
	if (p == NULL)
		return -1;
	t->p = p;
	t->cap = cap;
	return 0;
}

static int text_add(struct store_text *t, const char *s, size_t n)
{
	if (text_reserve(t, n))
		return -1;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
	return 0;
}

/* Append `s` as a JSON string literal, or null. */
static int text_add_json_string(struct store_text *t, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *c;
	char esc[7];

	if (s == NULL)
		return text_add(t, "null", 4);
	if (text_add(t, "\"", 1))
		return -1;
	for (c = (const unsigned char *)s; *c; c++) {
		const unsigned char *run = c;

		while (*c && *c >= 0x20 && *c != '"' && *c != '\\')
			c++;
		if (c > run &&
		    text_add(t, (const char *)run, (size_t)(c - run)))
			return -1;
		if (*c == '\0')
			break;
		esc[0] = '\\';
		switch (*c) {
		case '"':
			esc[1] = '"';
			break;
		case '\\':
			esc[1] = '\\';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[*c >> 4];
			esc[5] = hex[*c & 15];
			if (text_add(t, esc, 6))
				return -1;
			continue;
		}
		if (text_add(t, esc, 2))
			return -1;
	}
	return text_add(t, "\"", 1);
}

/* The shortest %g text that reads back as `v`. */
static void format_double(char *buf, size_t len, double v)
{
	int prec;

	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, len, "%.17g", v);
}

/*
 * The envelope line of UPSTREAM 6.1, keys sorted, compact:
 * {"data":..,"job_id":..,"run_id":..,"ts":..,"type":..,"v":1}
 */
static int envelope_build(struct store_text *t, const struct sbxloop_event *e)
{
	char num[40];

	t->len = 0;
	format_double(num, sizeof(num), e->ts);
	if (text_add(t, "{\"data\":", 8) ||
	    text_add(t, e->data_json, strlen(e->data_json)) ||
	    text_add(t, ",\"job_id\":", 10) ||
	    text_add_json_string(t, e->job_id) ||
	    text_add(t, ",\"run_id\":", 10) ||
	    text_add_json_string(t, e->run_id) || text_add(t, ",\"ts\":", 6) ||
	    text_add(t, num, strlen(num)) || text_add(t, ",\"type\":", 8) ||
	    text_add_json_string(t, e->type) || text_add(t, ",\"v\":1}", 7))
		return -1;
	return 0;
}

/*
 * The smallest string greater than every string starting with `prefix`:
 * the prefix with its last byte below 0xff incremented and the rest cut.
 * 0 when there is none (all bytes 0xff): then no upper bound applies.
 */
static size_t prefix_successor(const char *prefix, char *out, size_t len)
{
	size_t n = strlen(prefix);

	if (n + 1 > len)
		return 0;
	memcpy(out, prefix, n + 1);
	while (n > 0) {
		unsigned char c = (unsigned char)out[n - 1];

		if (c < 0xff) {
			out[n - 1] = (char)(c + 1);
			out[n] = '\0';
			return n;
		}
		n--;
	}
	return 0;
}

/*
 * The keys of the types starting with `prefix` (below `upper` when
 * `ulen`), at most STORE_TYPE_KEYS of them: `*n` is their count, or
 * STORE_TYPE_KEYS + 1 when there are more.
 */
static int type_keys(struct store *s, const char *prefix, const char *upper,
		     size_t ulen, sqlite3_int64 *keys, size_t *n,
		     struct sbxloop_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, step;

	*n = 0;
	rc = db_prepare(s,
			ulen ? "SELECT name_key FROM event_names"
			       " WHERE kind = ?1 AND name >= ?2 AND name < ?3"
			     : "SELECT name_key FROM event_names"
			       " WHERE kind = ?1 AND name >= ?2",
			&st, err);
	if (rc)
		return rc;
	sqlite3_bind_int(st, 1, STORE_NAME_TYPE);
	bind_text(st, 2, prefix);
	if (ulen)
		sqlite3_bind_text(st, 3, upper, (int)ulen, SQLITE_STATIC);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == STORE_TYPE_KEYS) {
			(*n)++;
			break;
		}
		keys[(*n)++] = sqlite3_column_int64(st, 0);
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = db_fail(s, err, "read event names from");
	db_release(s, st);
	return rc;
}

/*
 * The SQL of an events query. Everything is answered by the covering
 * index (run_key, seq, type_key, task_key): the filters test the index
 * entry and only the rows that pass are read. A type prefix becomes the
 * list of the type keys it matches (bound from ?10 on), or a subquery
 * when there are more than STORE_TYPE_KEYS; the prefix is a byte range,
 * never LIKE, so '_' and '%' match only themselves.
 */
static void events_sql(char *sql, size_t len,
		       const struct sbxloop_event_query *q, size_t n_types,
		       size_t ulen)
{
	char in[16 * STORE_TYPE_KEYS] = "", task[96] = "";
	size_t i, off = 0;

	if (n_types > STORE_TYPE_KEYS) {
		snprintf(in, sizeof(in),
			 " AND e.type_key IN (SELECT name_key FROM"
			 " event_names WHERE kind = %d AND name >= ?3%s)",
			 STORE_NAME_TYPE, ulen ? " AND name < ?4" : "");
	} else if (n_types > 0) {
		off = (size_t)snprintf(in, sizeof(in), " AND e.type_key IN (");
		for (i = 0; i < n_types; i++)
			off += (size_t)snprintf(in + off, sizeof(in) - off,
						"%s?%zu", i ? ", " : "",
						10 + i);
		snprintf(in + off, sizeof(in) - off, ")");
	}
	if (q->task_id)
		snprintf(task, sizeof(task),
			 " AND e.task_key = (SELECT name_key FROM event_names"
			 " WHERE kind = %d AND name = ?5)",
			 STORE_NAME_TASK);
	snprintf(sql, len,
		 "SELECT e.seq, e.ts, e.job_id, t.name, e.data_json"
		 " FROM event_rows e CROSS JOIN event_names t"
		 " ON t.name_key = e.type_key"
		 " WHERE e.run_key = (SELECT name_key FROM event_names"
		 " WHERE kind = %d AND name = ?1) AND e.seq > ?2%s%s"
		 " ORDER BY e.seq%s",
		 STORE_NAME_RUN, in, task, q->limit > 0 ? " LIMIT ?6" : "");
}

static int store_events_query(void *ctx, const struct sbxloop_event_query *q,
			      int (*cb)(void *user,
					const struct sbxloop_event *ev),
			      void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_event ev;
	sqlite3_int64 keys[STORE_TYPE_KEYS];
	char sql[1024], *upper = NULL;
	size_t ulen = 0, n_types = 0, i;
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (q == NULL || q->run_id == NULL || cb == NULL)
		return bad_argument(s, "events_query needs a run_id", err);
	if (q->type_prefix && *q->type_prefix) {
		ulen = strlen(q->type_prefix) + 1;
		upper = malloc(ulen);
		if (upper == NULL)
			return s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
						  "out of memory");
		ulen = prefix_successor(q->type_prefix, upper, ulen);
	}
	pthread_mutex_lock(&s->lock);
	/* Our own buffered events are part of the log the caller sees. */
	rc = pending_flush(s, 0, err);
	if (rc)
		goto out;
	rc = run_must_exist(s, q->run_id, err);
	if (rc)
		goto out;
	if (upper) {
		rc = type_keys(s, q->type_prefix, upper, ulen, keys, &n_types,
			       err);
		/* No type matches: there is nothing to read. */
		if (rc || n_types == 0)
			goto out;
	}
	events_sql(sql, sizeof(sql), q, n_types, ulen);
	rc = db_prepare(s, sql, &st, err);
	if (rc)
		goto out;
	bind_text(st, 1, q->run_id);
	sqlite3_bind_int64(st, 2, q->after_seq);
	if (n_types > STORE_TYPE_KEYS) {
		bind_text(st, 3, q->type_prefix);
		if (ulen)
			sqlite3_bind_text(st, 4, upper, (int)ulen,
					  SQLITE_STATIC);
	}
	for (i = 0; i < n_types && i < STORE_TYPE_KEYS; i++)
		sqlite3_bind_int64(st, 10 + (int)i, keys[i]);
	if (q->task_id)
		bind_text(st, 5, q->task_id);
	if (q->limit > 0)
		sqlite3_bind_int64(st, 6, q->limit);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&ev, 0, sizeof(ev));
		ev.struct_size = sizeof(ev);
		ev.seq = sqlite3_column_int64(st, 0);
		ev.ts = sqlite3_column_double(st, 1);
		ev.run_id = q->run_id;
		ev.job_id = col_text(st, 2);
		ev.type = col_text(st, 3);
		ev.data_json = col_text(st, 4);
		if (envelope_build(&s->envelope, &ev)) {
			rc = s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
						"out of memory");
			goto out;
		}
		ev.json = s->envelope.p;
		if (cb(user, &ev))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = db_fail(s, err, "read events from");
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	free(upper);
	return rc;
}

static int store_event_last_ts(void *ctx, const char *run_id, double *ts,
			       struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc;

	if (run_id == NULL || ts == NULL)
		return bad_argument(s, "event_last_ts needs a run_id", err);
	*ts = 0;
	pthread_mutex_lock(&s->lock);
	rc = pending_flush(s, 0, err);
	if (rc)
		goto out;
	/* The newest by sequence: one index probe, not a scan for MAX(ts). */
	rc = db_prepare(s,
			"SELECT ts FROM event_rows WHERE run_key ="
			" (SELECT name_key FROM event_names"
			" WHERE kind = 1 AND name = ?1)"
			" ORDER BY seq DESC LIMIT 1",
			&st, err);
	if (rc)
		goto out;
	bind_text(st, 1, run_id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*ts = sqlite3_column_double(st, 0);
		break;
	case SQLITE_DONE:
		break;
	default:
		rc = db_fail(s, err, "read events from");
	}
out:
	db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---------------------------------------------------------------------
 * The module
 */

static const struct sbxloop_store_ops store_sqlite_ops = {
	.struct_size = sizeof(struct sbxloop_store_ops),
	.create = store_create,
	.destroy = store_destroy,
	.run_create = store_run_create,
	.run_update = store_run_update,
	.run_get = store_run_get,
	.run_list = store_run_list,
	.tasks_save = store_tasks_save,
	.task_update = store_task_update,
	.tasks_list = store_tasks_list,
	.attempt_record = store_attempt_record,
	.attempt_latest = store_attempt_latest,
	.attempts_list = store_attempts_list,
	.event_append = store_event_append,
	.flush = store_flush,
	.events_query = store_events_query,
	.event_last_ts = store_event_last_ts,
};

static const struct sbxloop_component store_sqlite_components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_STORE,
		.name = "sqlite",
		.ops = &store_sqlite_ops,
		.config_keys = NULL,
		.summary = "runs, tasks, attempts and events in SQLite (WAL)",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "store_sqlite",
		.version = "1.0",
		.components = store_sqlite_components,
		.n_components = 1,
};

/*
 * Private to the store-sqlite plugin: the per-store ctx every file of it
 * shares, its tunables, and the sq_ functions one file offers another.
 * Nothing outside plugins/store-sqlite/ includes it; the core sees only
 * the descriptor (module.c).
 *
 * Files:
 *   module.c         the ops table and the descriptor
 *   store.c          open, checks, schema upgrade, close
 *   db.c             errors, the statement cache, the write transaction
 *   names.c          event_names keys for run ids, types and task ids
 *   runs.c, tasks.c, attempts.c
 *                    one table each: its writes and its queries
 *   events.c         the event buffer: append, flush, writing it out
 *   events_query.c   reading events back, as envelopes
 *   inbox.c          the steering inbox (chat_inbox)
 *   schema.c         the SQL text of the schema and its migrations
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
 * Sharing: every write is one short BEGIN IMMEDIATE transaction
 * (sq_write_tx) and the connection waits up to STORE_BUSY_MS for a lock,
 * so other processes (status, logs --follow, cancel) never see "database
 * is locked". A recursive mutex serialises threads of one process on the
 * connection and the buffer (a query callback may append events).
 */
#ifndef SBXLOOP_STORE_SQLITE_H
#define SBXLOOP_STORE_SQLITE_H

#include <sbxloop/store.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>

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

/* The ctx of one store: made by store.c, freed by its destroy. */
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

/* Column `i` of the current row; borrowed until the statement moves. */
static inline const char *sq_col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* Bind `v` (borrowed until the statement is reset), or NULL. */
static inline void sq_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* db.c: clocks, errors, statements, the write transaction. */
double sq_now_wall(void);
double sq_now_mono(void);

/*
 * A damaged file: say which, why, and how to get its rows back.
 * `at_open` adds that nothing was written to it.
 */
int sq_damaged(struct store *s, struct sbxloop_error *err, const char *why,
	       int at_open);

/*
 * "cannot <what> '<path>': <sqlite message>" with the mapped code; a
 * damaged file gets the recovery hint.
 */
int sq_db_fail(struct store *s, struct sbxloop_error *err, const char *what);

/*
 * A prepared statement for `sql` (copied when cached), from the cache
 * when one is free. Give it back with sq_db_release(); *st is NULL after
 * a failure.
 */
int sq_db_prepare(struct store *s, const char *sql, sqlite3_stmt **st,
		  struct sbxloop_error *err);
/* Give back (or finalize) a statement of sq_db_prepare(); NULL is fine. */
void sq_db_release(struct store *s, sqlite3_stmt *st);
/* Run a statement that returns no rows, e.g. BEGIN or COMMIT. */
int sq_db_run(struct store *s, const char *sql, const char *what,
	      struct sbxloop_error *err);

/* SBXLOOP_EINVAL, "invalid store call: <what>". */
int sq_bad_argument(struct store *s, const char *what,
		    struct sbxloop_error *err);

/*
 * Roll back the open transaction, if any, and forget the names it may
 * have taken. The caller holds the lock or is opening the store.
 */
void sq_tx_rollback(struct store *s);

/*
 * One write transaction, the only way the store writes rows: take the
 * lock, BEGIN IMMEDIATE, write the buffered events, run `work` (NULL:
 * nothing more), then COMMIT when it returns 0 or a refusal
 * (SBXLOOP_ENOTFOUND, _ESTATE, _EEXIST: the buffered events are good
 * either way) and ROLLBACK on any other failure, keeping the events
 * buffered; unlock. Returns what `work` returned, or the failure of
 * BEGIN, the event writes or COMMIT. `work` releases its statements
 * before it returns; `arg` is borrowed.
 */
int sq_write_tx(struct store *s,
		int (*work)(struct store *s, void *arg,
			    struct sbxloop_error *err),
		void *arg, struct sbxloop_error *err);

/* names.c: the event_names map. */

/* Forget every remembered key (they stay in the table). */
void sq_names_clear(struct store *s);
/*
 * The key of (kind, name) in event_names, added when missing; `name` is
 * `len` bytes, not NUL-terminated, and borrowed. The caller holds a
 * write transaction.
 */
int sq_names_key(struct store *s, int kind, const char *name, size_t len,
		 sqlite3_int64 *key, struct sbxloop_error *err);

/* events.c: the event buffer. */

/* Write the buffered events; the caller holds a write transaction. */
int sq_pending_write(struct store *s, struct sbxloop_error *err);
/* Free the buffered events (after they are committed, or at close). */
void sq_pending_clear(struct store *s);
/*
 * Write the buffered events in a transaction of their own; `durable`:
 * on disk now, else only visible (the commit skips its fsync).
 */
int sq_pending_flush(struct store *s, int durable, struct sbxloop_error *err);
int sq_event_append(void *ctx, const struct sbxloop_event *ev,
		    int64_t *seq_out, struct sbxloop_error *err);
int sq_flush(void *ctx, struct sbxloop_error *err);

/* events_query.c: reading the log back. */
int sq_events_query(void *ctx, const struct sbxloop_event_query *q,
		    int (*cb)(void *user, const struct sbxloop_event *ev),
		    void *user, struct sbxloop_error *err);
int sq_event_last_ts(void *ctx, const char *run_id, double *ts,
		     struct sbxloop_error *err);

/* runs.c */

/* 0 when the run exists, SBXLOOP_ENOTFOUND when not. */
int sq_run_must_exist(struct store *s, const char *run_id,
		      struct sbxloop_error *err);
int sq_run_create(void *ctx, const struct sbxloop_run_row *run,
		  struct sbxloop_error *err);
int sq_run_update(void *ctx, const struct sbxloop_run_update *upd,
		  char *prev_state, size_t prev_state_len,
		  struct sbxloop_error *err);
int sq_run_get(void *ctx, const char *run_id,
	       int (*cb)(void *user, const struct sbxloop_run_row *run),
	       void *user, struct sbxloop_error *err);
int sq_run_list(void *ctx,
		int (*cb)(void *user, const struct sbxloop_run_row *run),
		void *user, struct sbxloop_error *err);

/* tasks.c */
int sq_tasks_save(void *ctx, const char *run_id,
		  const struct sbxloop_task_row *tasks, size_t n,
		  struct sbxloop_error *err);
int sq_task_update(void *ctx, const struct sbxloop_task_row *task,
		   struct sbxloop_error *err);
int sq_tasks_list(void *ctx, const char *run_id,
		  int (*cb)(void *user, const struct sbxloop_task_row *task),
		  void *user, struct sbxloop_error *err);

/* attempts.c */
int sq_attempt_record(void *ctx, struct sbxloop_attempt_row *a,
		      struct sbxloop_error *err);
int sq_attempt_latest(void *ctx, const char *run_id, const char *task_id,
		      const char *phase,
		      int (*cb)(void *user,
				const struct sbxloop_attempt_row *a),
		      void *user, struct sbxloop_error *err);
int sq_attempts_list(void *ctx, const char *run_id, const char *task_id,
		     int (*cb)(void *user,
			       const struct sbxloop_attempt_row *a),
		     void *user, struct sbxloop_error *err);

/* store.c: the store's life. */
/* inbox.c: the steering inbox. */
int sq_inbox_push(void *ctx, const char *run_id, const char *text,
		  int64_t *id_out, struct sbxloop_error *err);
int sq_inbox_pending(void *ctx, const char *run_id,
		     int (*cb)(void *user, const struct sbxloop_chat_row *msg),
		     void *user, struct sbxloop_error *err);
int sq_inbox_done(void *ctx, const char *run_id, int64_t id,
		  struct sbxloop_error *err);

int sq_create(const struct sbxloop_host *host, void **ctx,
	      struct sbxloop_error *err);
void sq_destroy(void *ctx);

#endif

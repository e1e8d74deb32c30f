/*
 * The chat_inbox table: steering messages queued for a run by `sbxloop
 * steer` (another process) or a sink's input line, read by the run's
 * engine at each phase boundary and marked taken once answered. The
 * core reaches it through the ops table only (ABI 1.6).
 */
#include "config.h"

#include "store_sqlite.h"

#include <string.h>

struct push_arg {
	const char *run_id;
	const char *text;
	int64_t id;
};

static int push_tx(struct store *s, void *arg, struct sbxloop_error *err)
{
	struct push_arg *p = arg;
	sqlite3_stmt *st = NULL;
	int rc = sq_run_must_exist(s, p->run_id, err);

	if (rc)
		return rc;
	rc = sq_db_prepare(s,
			   "INSERT INTO chat_inbox (run_id, text, created_at)"
			   " VALUES (?1, ?2, ?3)",
			   &st, err);
	if (rc)
		return rc;
	sq_bind_text(st, 1, p->run_id);
	sq_bind_text(st, 2, p->text);
	sqlite3_bind_double(st, 3, sq_now_wall());
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = sq_db_fail(s, err, "queue a steering message in");
	else
		p->id = sqlite3_last_insert_rowid(s->db);
	sq_db_release(s, st);
	return rc;
}

int sq_inbox_push(void *ctx, const char *run_id, const char *text,
		  int64_t *id_out, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct push_arg p = {run_id, text, 0};
	int rc;

	if (run_id == NULL || text == NULL)
		return sq_bad_argument(s, "inbox_push needs run_id and text",
				       err);
	rc = sq_write_tx(s, push_tx, &p, err);
	if (rc == 0 && id_out)
		*id_out = p.id;
	return rc;
}

int sq_inbox_pending(void *ctx, const char *run_id,
		     int (*cb)(void *user, const struct sbxloop_chat_row *msg),
		     void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (run_id == NULL || cb == NULL)
		return sq_bad_argument(s, "inbox_pending needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = sq_db_prepare(
		s,
		"SELECT id, run_id, text, created_at FROM chat_inbox"
		" WHERE run_id = ?1 AND taken_at IS NULL"
		" ORDER BY id",
		&st, err);
	if (rc)
		goto out;
	sq_bind_text(st, 1, run_id);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct sbxloop_chat_row m;

		memset(&m, 0, sizeof(m));
		m.struct_size = sizeof(m);
		m.id = sqlite3_column_int64(st, 0);
		m.run_id = sq_col_text(st, 1);
		m.text = sq_col_text(st, 2);
		m.created_at = sqlite3_column_double(st, 3);
		if (cb(user, &m))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = sq_db_fail(s, err, "read the steering inbox of");
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

struct done_arg {
	const char *run_id;
	int64_t id;
};

static int done_tx(struct store *s, void *arg, struct sbxloop_error *err)
{
	const struct done_arg *d = arg;
	sqlite3_stmt *st = NULL;
	int rc = sq_db_prepare(s,
			       "UPDATE chat_inbox SET taken_at = ?3"
			       " WHERE id = ?1 AND run_id = ?2"
			       " AND taken_at IS NULL",
			       &st, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, d->id);
	sq_bind_text(st, 2, d->run_id);
	sqlite3_bind_double(st, 3, sq_now_wall());
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = sq_db_fail(s, err, "mark a steering message taken in");
	sq_db_release(s, st);
	return rc;
}

int sq_inbox_done(void *ctx, const char *run_id, int64_t id,
		  struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct done_arg d = {run_id, id};

	if (run_id == NULL)
		return sq_bad_argument(s, "inbox_done needs a run_id", err);
	return sq_write_tx(s, done_tx, &d, err);
}

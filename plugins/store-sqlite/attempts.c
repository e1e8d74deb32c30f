/*
 * The phase_attempts table: one row per phase attempt, recorded once and
 * read back as the latest of a phase or as a run's (or task's) list. The
 * core reaches it through the ops table only.
 */
#include "config.h"

#include "store_sqlite.h"

#include <string.h>

/* What attempt_record() hands its transaction. */
struct attempt_record_arg {
	struct sbxloop_attempt_row *a; /* its id is set */
	double now;                    /* the times the row leaves at 0 */
};

static int attempt_record_tx(struct store *s, void *arg,
			     struct sbxloop_error *err)
{
	const struct attempt_record_arg *r = arg;
	struct sbxloop_attempt_row *a = r->a;
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sq_db_prepare(
		s,
		"INSERT INTO phase_attempts (run_id, task_id, phase,"
		" attempt, status, output_json, started_at, ended_at)"
		" VALUES (?1, ?2, ?3, ?4, ?5, coalesce(?6, '{}'), ?7,"
		" ?8)",
		&st, err);
	if (rc)
		return rc;
	sq_bind_text(st, 1, a->run_id);
	sq_bind_text(st, 2, a->task_id);
	sq_bind_text(st, 3, a->phase);
	sqlite3_bind_int(st, 4, a->attempt);
	sq_bind_text(st, 5, a->status);
	sq_bind_text(st, 6, a->output_json);
	sqlite3_bind_double(st, 7, a->started_at > 0 ? a->started_at : r->now);
	sqlite3_bind_double(st, 8, a->ended_at > 0 ? a->ended_at : r->now);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = sq_db_fail(s, err, "record a phase attempt in");
	else
		a->id = sqlite3_last_insert_rowid(s->db);
	sq_db_release(s, st);
	return rc;
}

int sq_attempt_record(void *ctx, struct sbxloop_attempt_row *a,
		      struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct attempt_record_arg r = {a, sq_now_wall()};

	if (a == NULL || a->run_id == NULL || a->phase == NULL ||
	    a->status == NULL)
		return sq_bad_argument(s,
				       "attempt_record needs run_id, phase,"
				       " status",
				       err);
	return sq_write_tx(s, attempt_record_tx, &r, err);
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
		a.run_id = sq_col_text(st, 1);
		a.task_id = sq_col_text(st, 2);
		a.phase = sq_col_text(st, 3);
		a.attempt = sqlite3_column_int(st, 4);
		a.status = sq_col_text(st, 5);
		a.output_json = sq_col_text(st, 6);
		a.started_at = sqlite3_column_double(st, 7);
		a.ended_at = sqlite3_column_double(st, 8);
		(*seen)++;
		if (cb(user, &a))
			return 0;
	}
	if (step != SQLITE_DONE)
		return sq_db_fail(s, err, "read phase attempts from");
	return 0;
}

int sq_attempt_latest(void *ctx, const char *run_id, const char *task_id,
		      const char *phase,
		      int (*cb)(void *user,
				const struct sbxloop_attempt_row *a),
		      void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc, seen = 0;

	if (run_id == NULL || phase == NULL || cb == NULL)
		return sq_bad_argument(
			s, "attempt_latest needs run_id and phase", err);
	pthread_mutex_lock(&s->lock);
	rc = sq_db_prepare(
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
	sq_bind_text(st, 1, run_id);
	if (task_id)
		sq_bind_text(st, 2, task_id);
	sq_bind_text(st, 3, phase);
	rc = attempts_each(s, st, cb, user, &seen, err);
	if (rc == 0 && seen == 0)
		rc = s->host->error_set(s->host, err, SBXLOOP_ENOTFOUND,
					"no %s attempt for %s '%s'", phase,
					task_id ? "task" : "run",
					task_id ? task_id : run_id);
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int sq_attempts_list(void *ctx, const char *run_id, const char *task_id,
		     int (*cb)(void *user,
			       const struct sbxloop_attempt_row *a),
		     void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc, seen = 0;

	if (run_id == NULL || cb == NULL)
		return sq_bad_argument(s, "attempts_list needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = sq_run_must_exist(s, run_id, err);
	if (rc)
		goto out;
	rc = sq_db_prepare(
		s,
		task_id ? ATTEMPT_COLUMNS
			" WHERE run_id = ?1 AND task_id = ?2 ORDER BY id"
			: ATTEMPT_COLUMNS " WHERE run_id = ?1 ORDER BY id",
		&st, err);
	if (rc)
		goto out;
	sq_bind_text(st, 1, run_id);
	if (task_id)
		sq_bind_text(st, 2, task_id);
	rc = attempts_each(s, st, cb, user, &seen, err);
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/*
 * The tasks table: a run's task list saved whole, one task updated, and
 * the list read back in topological order. The core reaches it through
 * the ops table only.
 */
#include "config.h"

#include "store_sqlite.h"

#include <string.h>

/* What tasks_save() hands its transaction. */
struct tasks_save_arg {
	const char *run_id;
	const struct sbxloop_task_row *tasks;
	size_t n;
};

static int tasks_save_tx(struct store *s, void *arg, struct sbxloop_error *err)
{
	const struct tasks_save_arg *a = arg;
	sqlite3_stmt *del = NULL, *ins = NULL;
	size_t i;
	int rc;

	rc = sq_run_must_exist(s, a->run_id, err);
	if (rc)
		goto out;
	rc = sq_db_prepare(s, "DELETE FROM tasks WHERE run_id = ?1", &del,
			   err);
	if (rc)
		goto out;
	sq_bind_text(del, 1, a->run_id);
	if (sqlite3_step(del) != SQLITE_DONE) {
		rc = sq_db_fail(s, err, "replace the tasks in");
		goto out;
	}
	rc = sq_db_prepare(
		s,
		"INSERT INTO tasks (run_id, task_id, order_idx, state,"
		" spec_json, plan_json, revisions, replans,"
		" last_feedback, session_id)"
		" VALUES (?1, ?2, ?3, coalesce(?4, 'pending'),"
		" coalesce(?5, '{}'), ?6, ?7, ?8, coalesce(?9, ''),"
		" ?10)",
		&ins, err);
	if (rc)
		goto out;
	for (i = 0; i < a->n; i++) {
		const struct sbxloop_task_row *t = &a->tasks[i];

		sqlite3_reset(ins);
		sq_bind_text(ins, 1, a->run_id);
		sq_bind_text(ins, 2, t->task_id);
		sqlite3_bind_int(ins, 3, t->order_idx);
		sq_bind_text(ins, 4, t->state);
		sq_bind_text(ins, 5, t->spec_json);
		sq_bind_text(ins, 6, t->plan_json);
		sqlite3_bind_int(ins, 7, t->revisions);
		sqlite3_bind_int(ins, 8, t->replans);
		sq_bind_text(ins, 9, t->last_feedback);
		sq_bind_text(ins, 10, t->session_id);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			if ((sqlite3_errcode(s->db) & 0xff) ==
			    SQLITE_CONSTRAINT)
				rc = s->host->error_set(
					s->host, err, SBXLOOP_EINVAL,
					"task '%s' appears twice in run '%s'",
					t->task_id, a->run_id);
			else
				rc = sq_db_fail(s, err, "save a task in");
			goto out;
		}
	}
out:
	sq_db_release(s, del);
	sq_db_release(s, ins);
	return rc;
}

int sq_tasks_save(void *ctx, const char *run_id,
		  const struct sbxloop_task_row *tasks, size_t n,
		  struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct tasks_save_arg a = {run_id, tasks, n};
	size_t i;

	if (run_id == NULL || (n && tasks == NULL))
		return sq_bad_argument(s, "tasks_save needs a run_id", err);
	for (i = 0; i < n; i++)
		if (tasks[i].task_id == NULL)
			return sq_bad_argument(s, "a task without an id", err);
	return sq_write_tx(s, tasks_save_tx, &a, err);
}

static int task_update_tx(struct store *s, void *arg,
			  struct sbxloop_error *err)
{
	const struct sbxloop_task_row *task = arg;
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sq_db_prepare(
		s,
		"UPDATE tasks SET state = ?3,"
		" spec_json = coalesce(?4, spec_json), plan_json = ?5,"
		" revisions = ?6, replans = ?7,"
		" last_feedback = coalesce(?8, ''), session_id = ?9"
		" WHERE run_id = ?1 AND task_id = ?2",
		&st, err);
	if (rc)
		return rc;
	sq_bind_text(st, 1, task->run_id);
	sq_bind_text(st, 2, task->task_id);
	sq_bind_text(st, 3, task->state);
	sq_bind_text(st, 4, task->spec_json);
	sq_bind_text(st, 5, task->plan_json);
	sqlite3_bind_int(st, 6, task->revisions);
	sqlite3_bind_int(st, 7, task->replans);
	sq_bind_text(st, 8, task->last_feedback);
	sq_bind_text(st, 9, task->session_id);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = sq_db_fail(s, err, "update a task in");
	else if (sqlite3_changes(s->db) == 0)
		rc = s->host->error_set(s->host, err, SBXLOOP_ENOTFOUND,
					"unknown task '%s' in run '%s'",
					task->task_id, task->run_id);
	sq_db_release(s, st);
	return rc;
}

int sq_task_update(void *ctx, const struct sbxloop_task_row *task,
		   struct sbxloop_error *err)
{
	struct store *s = ctx;

	if (task == NULL || task->run_id == NULL || task->task_id == NULL ||
	    task->state == NULL)
		return sq_bad_argument(
			s, "task_update needs run_id, task_id, state", err);
	/* The row is only read: sq_write_tx's `arg` is not const. */
	return sq_write_tx(s, task_update_tx, (void *)task, err);
}

int sq_tasks_list(void *ctx, const char *run_id,
		  int (*cb)(void *user, const struct sbxloop_task_row *task),
		  void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_task_row t;
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (run_id == NULL || cb == NULL)
		return sq_bad_argument(s, "tasks_list needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = sq_run_must_exist(s, run_id, err);
	if (rc)
		goto out;
	rc = sq_db_prepare(
		s,
		"SELECT run_id, task_id, order_idx, state, spec_json,"
		" plan_json, revisions, replans, last_feedback,"
		" session_id FROM tasks WHERE run_id = ?1"
		" ORDER BY order_idx",
		&st, err);
	if (rc)
		goto out;
	sq_bind_text(st, 1, run_id);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&t, 0, sizeof(t));
		t.struct_size = sizeof(t);
		t.run_id = sq_col_text(st, 0);
		t.task_id = sq_col_text(st, 1);
		t.order_idx = sqlite3_column_int(st, 2);
		t.state = sq_col_text(st, 3);
		t.spec_json = sq_col_text(st, 4);
		t.plan_json = sq_col_text(st, 5);
		t.revisions = sqlite3_column_int(st, 6);
		t.replans = sqlite3_column_int(st, 7);
		t.last_feedback = sq_col_text(st, 8);
		t.session_id = sq_col_text(st, 9);
		if (cb(user, &t))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = sq_db_fail(s, err, "list the tasks in");
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

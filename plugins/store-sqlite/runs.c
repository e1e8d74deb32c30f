/*
 * The runs table: create, update (with the state check the engine's
 * transitions rely on), get and list, each row with its task and attempt
 * counts. The core reaches it through the ops table; the other tables'
 * files call sq_run_must_exist().
 */
#include "config.h"

#include "store_sqlite.h"

#include <stdio.h>
#include <string.h>

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
	r->run_id = sq_col_text(st, 0);
	r->outcome = sq_col_text(st, 1);
	r->state = sq_col_text(st, 2);
	r->config_json = sq_col_text(st, 3);
	r->created_at = sqlite3_column_double(st, 4);
	r->updated_at = sqlite3_column_double(st, 5);
	r->workspace = sq_col_text(st, 6);
	r->mounted = sqlite3_column_int(st, 7);
	r->kept_reason = sq_col_text(st, 8);
	r->reason = sq_col_text(st, 9);
	r->guidance_json = sq_col_text(st, 10);
	r->tasks_total = sqlite3_column_int(st, 11);
	r->tasks_done = sqlite3_column_int(st, 12);
	r->attempts = sqlite3_column_int(st, 13);
}

/* What run_create() hands its transaction. */
struct run_create_arg {
	const struct sbxloop_run_row *run;
	double now; /* created_at when the row has none */
};

static int run_create_tx(struct store *s, void *arg, struct sbxloop_error *err)
{
	const struct run_create_arg *a = arg;
	const struct sbxloop_run_row *run = a->run;
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sq_db_prepare(s,
			   "INSERT INTO runs (run_id, outcome, state,"
			   " config_json,"
			   " created_at, updated_at, workspace, mounted,"
			   " kept_reason, user_guidance, reason)"
			   " VALUES (?1, ?2, coalesce(?3, 'created'),"
			   " coalesce(?4, '{}'), ?5, ?5, ?6, ?7, ?8,"
			   " coalesce(?9, '[]'), ?10)",
			   &st, err);
	if (rc)
		return rc;
	sq_bind_text(st, 1, run->run_id);
	sq_bind_text(st, 2, run->outcome);
	sq_bind_text(st, 3, run->state);
	sq_bind_text(st, 4, run->config_json);
	sqlite3_bind_double(st, 5,
			    run->created_at > 0 ? run->created_at : a->now);
	sq_bind_text(st, 6, run->workspace);
	sqlite3_bind_int(st, 7, run->mounted);
	sq_bind_text(st, 8, run->kept_reason);
	sq_bind_text(st, 9, run->guidance_json);
	sq_bind_text(st, 10, run->reason);
	if (sqlite3_step(st) != SQLITE_DONE) {
		if ((sqlite3_errcode(s->db) & 0xff) == SQLITE_CONSTRAINT)
			rc = s->host->error_set(s->host, err, SBXLOOP_EEXIST,
						"run '%s' already exists",
						run->run_id);
		else
			rc = sq_db_fail(s, err, "insert a run into");
	}
	sq_db_release(s, st);
	return rc;
}

int sq_run_create(void *ctx, const struct sbxloop_run_row *run,
		  struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct run_create_arg a = {run, sq_now_wall()};

	if (run == NULL || run->run_id == NULL || run->outcome == NULL)
		return sq_bad_argument(
			s, "run_create needs run_id and outcome", err);
	return sq_write_tx(s, run_create_tx, &a, err);
}

static int unknown_run(struct store *s, const char *run_id,
		       struct sbxloop_error *err)
{
	return s->host->error_set(s->host, err, SBXLOOP_ENOTFOUND,
				  "unknown run '%s'", run_id);
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
	int rc = sq_db_prepare(s, "SELECT state FROM runs WHERE run_id = ?1",
			       &st, err);

	if (rc)
		return rc;
	sq_bind_text(st, 1, run_id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		snprintf(buf, len, "%s", sq_col_text(st, 0));
		break;
	case SQLITE_DONE:
		rc = unknown_run(s, run_id, err);
		break;
	default:
		rc = sq_db_fail(s, err, "read a run from");
	}
	sq_db_release(s, st);
	return rc;
}

/* What run_update() hands its transaction. */
struct run_update_arg {
	const struct sbxloop_run_update *upd;
	char *prev_state; /* the caller's, may be NULL */
	size_t prev_state_len;
};

static int run_update_tx(struct store *s, void *arg, struct sbxloop_error *err)
{
	const struct run_update_arg *a = arg;
	const struct sbxloop_run_update *upd = a->upd;
	unsigned f = upd->fields;
	char state[STORE_STATE_MAX];
	char sql[512];
	sqlite3_stmt *st = NULL;
	int rc;

	rc = run_state_read(s, upd->run_id, state, sizeof(state), err);
	if (rc)
		return rc;
	if (a->prev_state && a->prev_state_len)
		snprintf(a->prev_state, a->prev_state_len, "%s", state);
	if (upd->only_if_state && !state_in(state, upd->only_if_state))
		return s->host->error_set(s->host, err, SBXLOOP_ESTATE,
					  "run '%s' is %s", upd->run_id,
					  state);
	if ((f &
	     (SBXLOOP_RUN_STATE | SBXLOOP_RUN_WORKSPACE | SBXLOOP_RUN_KEPT |
	      SBXLOOP_RUN_GUIDANCE | SBXLOOP_RUN_REASON)) == 0)
		return 0;
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
	rc = sq_db_prepare(s, sql, &st, err);
	if (rc)
		return rc;
	sq_bind_text(st, 1, upd->run_id);
	sq_bind_text(st, 2, upd->state);
	sq_bind_text(st, 3, upd->reason);
	sq_bind_text(st, 4, upd->workspace);
	sqlite3_bind_int(st, 5, upd->mounted);
	sq_bind_text(st, 6, upd->kept_reason);
	sq_bind_text(st, 7, upd->guidance_json);
	sqlite3_bind_double(st, 8, sq_now_wall());
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = sq_db_fail(s, err, "update a run in");
	sq_db_release(s, st);
	return rc;
}

int sq_run_update(void *ctx, const struct sbxloop_run_update *upd,
		  char *prev_state, size_t prev_state_len,
		  struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct run_update_arg a = {upd, prev_state, prev_state_len};

	if (upd == NULL || upd->run_id == NULL)
		return sq_bad_argument(s, "run_update needs a run_id", err);
	if ((upd->fields & SBXLOOP_RUN_STATE) && upd->state == NULL)
		return sq_bad_argument(s, "run_update without a state", err);
	if (prev_state && prev_state_len)
		prev_state[0] = '\0';
	return sq_write_tx(s, run_update_tx, &a, err);
}

int sq_run_get(void *ctx, const char *run_id,
	       int (*cb)(void *user, const struct sbxloop_run_row *run),
	       void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_run_row row;
	sqlite3_stmt *st = NULL;
	int rc;

	if (run_id == NULL || cb == NULL)
		return sq_bad_argument(s, "run_get needs a run_id", err);
	pthread_mutex_lock(&s->lock);
	rc = sq_db_prepare(s, RUN_COLUMNS " WHERE r.run_id = ?1", &st, err);
	if (rc)
		goto out;
	sq_bind_text(st, 1, run_id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		run_from_row(st, &row);
		cb(user, &row);
		break;
	case SQLITE_DONE:
		rc = unknown_run(s, run_id, err);
		break;
	default:
		rc = sq_db_fail(s, err, "read a run from");
	}
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int sq_run_list(void *ctx,
		int (*cb)(void *user, const struct sbxloop_run_row *run),
		void *user, struct sbxloop_error *err)
{
	struct store *s = ctx;
	struct sbxloop_run_row row;
	sqlite3_stmt *st = NULL;
	int rc, step;

	if (cb == NULL)
		return sq_bad_argument(s, "run_list needs a callback", err);
	pthread_mutex_lock(&s->lock);
	rc = sq_db_prepare(s, RUN_COLUMNS " ORDER BY r.created_at DESC", &st,
			   err);
	if (rc)
		goto out;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		run_from_row(st, &row);
		if (cb(user, &row))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = sq_db_fail(s, err, "list the runs of");
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* 0 when the run exists, ENOTFOUND when not. */
int sq_run_must_exist(struct store *s, const char *run_id,
		      struct sbxloop_error *err)
{
	char state[STORE_STATE_MAX];

	return run_state_read(s, run_id, state, sizeof(state), err);
}

/*
 * The event buffer: event_append() copies an event into memory, and the
 * buffer goes to event_rows inside the next write transaction (db.c calls
 * sq_pending_write), on flush(), when full or old, before a query, and at
 * close. The core reaches it through the ops table; the other files of
 * the plugin through sq_pending_*.
 */
#include "config.h"

#include "schema.h"
#include "store_sqlite.h"

#include <stdlib.h>
#include <string.h>

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
		return sq_names_key(s, STORE_NAME_TASK, task, len,
				    &p->task_key, err);
	case 0:
		return 0;
	default:
		break;
	}
	rc = sq_db_prepare(s,
			   "SELECT CASE WHEN json_valid(?1)"
			   " THEN json_extract(?1, '$.task_id') END",
			   &st, err);
	if (rc)
		return rc;
	sq_bind_text(st, 1, p->data_json);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = sq_db_fail(s, err, "read an event's task in");
	else if (sqlite3_column_type(st, 0) == SQLITE_TEXT)
		rc = sq_names_key(s, STORE_NAME_TASK, sq_col_text(st, 0),
				  (size_t)sqlite3_column_bytes(st, 0),
				  &p->task_key, err);
	sq_db_release(s, st);
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
	sq_bind_text(st, first + 4, p->job_id);
	sq_bind_text(st, first + 5, p->data_json);
}

/*
 * Write the buffered events; the caller holds a write transaction. Names
 * first, then the rows STORE_INSERT_ROWS to a statement: one statement
 * per row cost a third of an append.
 */
int sq_pending_write(struct store *s, struct sbxloop_error *err)
{
	size_t i, j, n;
	int rc = 0;

	for (i = 0; i < s->n_pending && rc == 0; i++) {
		struct store_pending *p = s->pending[i];

		rc = sq_names_key(s, STORE_NAME_RUN, p->run_id,
				  strlen(p->run_id), &p->run_key, err);
		if (rc == 0)
			rc = sq_names_key(s, STORE_NAME_TYPE, p->type,
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
			rc = sq_db_fail(s, err, "append an event to");
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	return rc;
}

void sq_pending_clear(struct store *s)
{
	size_t i;

	for (i = 0; i < s->n_pending; i++)
		free(s->pending[i]);
	s->n_pending = 0;
}

/*
 * Write the buffered events in a transaction of their own. `durable`
 * says whether the caller needs them on disk now (flush(), destroy) or
 * only visible (a full or old buffer, a query): then the commit skips its
 * fsync (synchronous=NORMAL for that one transaction). The WAL is
 * written in order, so the next FULL commit, a transition's, syncs these
 * frames too: the log still never lags the state.
 */
int sq_pending_flush(struct store *s, int durable, struct sbxloop_error *err)
{
	int rc;

	if (s->n_pending == 0)
		return 0;
	if (!durable) {
		rc = sq_db_run(s, "PRAGMA synchronous = NORMAL", "configure",
			       err);
		if (rc)
			return rc;
	}
	rc = sq_write_tx(s, NULL, NULL, err);
	if (!durable) {
		struct sbxloop_error serr;
		int src = sq_db_run(s, "PRAGMA synchronous = FULL",
				    "configure", rc ? &serr : err);

		if (rc == 0)
			rc = src;
	}
	return rc;
}

/* ---------------------------------------------------------------------
 * The ops
 */

int sq_event_append(void *ctx, const struct sbxloop_event *ev,
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
		return sq_bad_argument(s, "an event needs run_id and type",
				       err);
	lr = strlen(ev->run_id) + 1;
	lj = ev->job_id ? strlen(ev->job_id) + 1 : 0;
	lt = strlen(ev->type) + 1;
	ld = strlen(ev->data_json ? ev->data_json : "{}") + 1;
	p = malloc(sizeof(*p) + lr + lj + lt + ld);
	if (p == NULL)
		return s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	cur = (char *)(p + 1);
	p->ts = ev->ts > 0 ? ev->ts : sq_now_wall();
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
		s->pending_since = sq_now_mono();
	s->pending[s->n_pending++] = p;
	if (s->n_pending >= STORE_BUFFER_MAX ||
	    sq_now_mono() - s->pending_since >= STORE_BUFFER_AGE) {
		rc = sq_pending_flush(s, 0, err);
		/* This event was the last one written. */
		if (rc == 0 && seq_out)
			*seq_out = sqlite3_last_insert_rowid(s->db);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int sq_flush(void *ctx, struct sbxloop_error *err)
{
	struct store *s = ctx;
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = sq_pending_flush(s, 1, err);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

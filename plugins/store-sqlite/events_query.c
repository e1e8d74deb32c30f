/*
 * Reading the event log back: `logs` queries by run, type prefix, task
 * and sequence, each row handed over as its UPSTREAM 6.1 envelope, and
 * the time of a run's newest event. Buffered events are written first so
 * a process sees its own. The core reaches it through the ops table only.
 */
#include "config.h"

#include "schema.h"
#include "store_sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	rc = sq_db_prepare(
		s,
		ulen ? "SELECT name_key FROM event_names"
		       " WHERE kind = ?1 AND name >= ?2 AND name < ?3"
		     : "SELECT name_key FROM event_names"
		       " WHERE kind = ?1 AND name >= ?2",
		&st, err);
	if (rc)
		return rc;
	sqlite3_bind_int(st, 1, STORE_NAME_TYPE);
	sq_bind_text(st, 2, prefix);
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
		rc = sq_db_fail(s, err, "read event names from");
	sq_db_release(s, st);
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

int sq_events_query(void *ctx, const struct sbxloop_event_query *q,
		    int (*cb)(void *user, const struct sbxloop_event *ev),
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
		return sq_bad_argument(s, "events_query needs a run_id", err);
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
	rc = sq_pending_flush(s, 0, err);
	if (rc)
		goto out;
	rc = sq_run_must_exist(s, q->run_id, err);
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
	rc = sq_db_prepare(s, sql, &st, err);
	if (rc)
		goto out;
	sq_bind_text(st, 1, q->run_id);
	sqlite3_bind_int64(st, 2, q->after_seq);
	if (n_types > STORE_TYPE_KEYS) {
		sq_bind_text(st, 3, q->type_prefix);
		if (ulen)
			sqlite3_bind_text(st, 4, upper, (int)ulen,
					  SQLITE_STATIC);
	}
	for (i = 0; i < n_types && i < STORE_TYPE_KEYS; i++)
		sqlite3_bind_int64(st, 10 + (int)i, keys[i]);
	if (q->task_id)
		sq_bind_text(st, 5, q->task_id);
	if (q->limit > 0)
		sqlite3_bind_int64(st, 6, q->limit);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&ev, 0, sizeof(ev));
		ev.struct_size = sizeof(ev);
		ev.seq = sqlite3_column_int64(st, 0);
		ev.ts = sqlite3_column_double(st, 1);
		ev.run_id = q->run_id;
		ev.job_id = sq_col_text(st, 2);
		ev.type = sq_col_text(st, 3);
		ev.data_json = sq_col_text(st, 4);
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
		rc = sq_db_fail(s, err, "read events from");
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	free(upper);
	return rc;
}

int sq_event_last_ts(void *ctx, const char *run_id, double *ts,
		     struct sbxloop_error *err)
{
	struct store *s = ctx;
	sqlite3_stmt *st = NULL;
	int rc;

	if (run_id == NULL || ts == NULL)
		return sq_bad_argument(s, "event_last_ts needs a run_id", err);
	*ts = 0;
	pthread_mutex_lock(&s->lock);
	rc = sq_pending_flush(s, 0, err);
	if (rc)
		goto out;
	/* The newest by sequence: one index probe, not a scan for MAX(ts). */
	rc = sq_db_prepare(s,
			   "SELECT ts FROM event_rows WHERE run_key ="
			   " (SELECT name_key FROM event_names"
			   " WHERE kind = 1 AND name = ?1)"
			   " ORDER BY seq DESC LIMIT 1",
			   &st, err);
	if (rc)
		goto out;
	sq_bind_text(st, 1, run_id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*ts = sqlite3_column_double(st, 0);
		break;
	case SQLITE_DONE:
		break;
	default:
		rc = sq_db_fail(s, err, "read events from");
	}
out:
	sq_db_release(s, st);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

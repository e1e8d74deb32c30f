/*
 * The event_names keys of run ids, types and task ids (schema v3), and
 * the in-memory map that spares a query per name. Only the event files
 * ask for keys; db.c drops the map when a transaction rolls back and
 * store.c when the store closes.
 */
#include "config.h"

#include "store_sqlite.h"

#include <stdlib.h>
#include <string.h>

static unsigned name_hash(int kind, const char *name, size_t len)
{
	unsigned h = 2166136261u ^ (unsigned)kind;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h;
}

void sq_names_clear(struct store *s)
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
		sq_names_clear(s);
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

/* A miss costs a SELECT, and an INSERT for a name never seen. */
int sq_names_key(struct store *s, int kind, const char *name, size_t len,
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
	rc = sq_db_prepare(s,
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
		rc = sq_db_fail(s, err, "read event names from");
	sq_db_release(s, st);
	if (rc == 0 && *key == 0) {
		rc = sq_db_prepare(s,
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
			rc = sq_db_fail(s, err, "name an event in");
		sq_db_release(s, st);
	}
	if (rc == 0 && *key != 0)
		names_remember(s, kind, name, len, *key);
	return rc;
}

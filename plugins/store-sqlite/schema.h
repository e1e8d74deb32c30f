/*
 * Private to the store-sqlite plugin: the schema versions it knows. The
 * SQL text lives in schema.c; store.c applies it on open.
 */
#ifndef SBXLOOP_STORE_SQLITE_SCHEMA_H
#define SBXLOOP_STORE_SQLITE_SCHEMA_H

/* The version this build writes (PRAGMA user_version). */
#define STORE_SCHEMA_VERSION 4

/*
 * The kinds of event_names (v3): what an event's key columns name. The
 * numbers are stored and written into the schema's SQL: never renumber.
 */
enum store_name_kind {
	STORE_NAME_RUN = 1,
	STORE_NAME_TYPE = 2,
	STORE_NAME_TASK = 3,
};

/* A whole schema of the current version, for an empty database. */
extern const char store_schema_current[];

/* A column a version needs, added when an older table lacks it. */
struct store_column {
	const char *table;
	const char *name;
	const char *decl; /* "TEXT", "INTEGER NOT NULL DEFAULT 0", ... */
};

/*
 * The columns v2 needs beyond the oldest layouts; NULL-ended. Added one by
 * one, only when missing, so a pre-versioned database from the original
 * tool (user_version 0, some of them present) upgrades too.
 */
extern const struct store_column store_v2_columns[];

/*
 * Migration steps: store_schema_upgrade[v] turns version v into v + 1.
 * Entries 0 and STORE_SCHEMA_VERSION are NULL. The v1 step runs after
 * store_v2_columns are in place.
 */
extern const char *const store_schema_upgrade[STORE_SCHEMA_VERSION + 1];

#endif

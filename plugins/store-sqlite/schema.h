/*
 * Private to the store-sqlite plugin: the schema versions it knows. The
 * SQL text lives in schema.c; store.c applies it on open.
 */
#ifndef SBXLOOP_STORE_SQLITE_SCHEMA_H
#define SBXLOOP_STORE_SQLITE_SCHEMA_H

/* The version this build writes (PRAGMA user_version). */
#define STORE_SCHEMA_VERSION 2

/* A whole schema of the current version, for an empty database. */
extern const char store_schema_current[];

/*
 * Migration steps: store_schema_upgrade[v] turns version v into v + 1.
 * Entries 0 and STORE_SCHEMA_VERSION are NULL.
 */
extern const char *const store_schema_upgrade[STORE_SCHEMA_VERSION + 1];

#endif

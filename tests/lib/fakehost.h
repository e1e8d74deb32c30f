/*
 * A fake host services table for unit-testing one plugin alone, without
 * the core: logging into a buffer, a small path -> value config table the
 * test fills, recorded emit() calls, a state directory, secret redaction.
 * proc_run and the sandbox services answer SBXLOOP_EUNSUPPORTED.
 *
 * Ownership: everything the fake hands out is owned by it and freed by
 * fakehost_free(); strings passed in are copied.
 */
#ifndef SBXLOOP_TESTS_FAKEHOST_H
#define SBXLOOP_TESTS_FAKEHOST_H

#include <sbxloop/plugin.h>

struct fakehost;

/* One recorded emit() call. */
struct fakehost_event {
	char *type;
	char *job_id;    /* NULL when none */
	char *data_json; /* "{}" when the plugin passed NULL */
};

/* `state_dir` may be NULL (then host->state_dir() answers NULL). */
struct fakehost *fakehost_new(const char *state_dir);
void fakehost_free(struct fakehost *fh);

/* The table to hand to a plugin's create(); valid until fakehost_free. */
const struct sbxloop_host *fakehost_host(struct fakehost *fh);

/* Config: a scalar value (textual) or a list of strings at `path`. */
void fakehost_config_set(struct fakehost *fh, const char *path,
			 const char *value);
void fakehost_config_set_list(struct fakehost *fh, const char *path,
			      const char *const *items, size_t n);

/* The current run id host->run_id() answers (NULL outside a run). */
void fakehost_set_run_id(struct fakehost *fh, const char *run_id);

/* Everything logged so far, one line per call ("warn: ..."). */
const char *fakehost_log(const struct fakehost *fh);
void fakehost_log_clear(struct fakehost *fh);

size_t fakehost_n_events(const struct fakehost *fh);
const struct fakehost_event *fakehost_event(const struct fakehost *fh,
					    size_t i);

#endif

/*
 * Artifacts: where a run's results are on the host, which files count
 * (the exclusion list matched per path component, plus gitignored
 * files), the tally of what was left out, and the harvest that copies
 * an unmounted workspace out of the sandbox.
 */
#ifndef SL_ARTIFACTS_H
#define SL_ARTIFACTS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/store.h>

#include "config/conf.h"

/* Tally key of files the tree's own .gitignore rules ignore. */
#define SL_ARTIFACTS_GITIGNORED "gitignored"

struct sl_artifact_file {
	char *relpath;
	long long size;
};

struct sl_artifact_tally {
	char *key; /* the exclude entry (the pattern for globs) */
	size_t count;
};

/* A scan result; release with sl_artifacts_scan_release. */
struct sl_artifact_scan {
	struct sl_artifact_file *files; /* kept files, sorted */
	size_t n_files;
	long long bytes;                 /* of the kept files */
	struct sl_artifact_tally *tally; /* sorted by key */
	size_t n_tally;
	size_t excluded; /* sum of the tally */
};

/*
 * The exclude entry `relpath` falls under (borrowed from `exclude`), or
 * NULL. An entry with `*`, `?` or `[` is an fnmatch glob on one whole
 * path component; any other entry must equal a component.
 */
const char *sl_artifacts_match(const char *relpath, const char *const *exclude,
			       size_t n);

/* Count one excluded file under `key` (keeps the tally sorted). */
void sl_artifacts_tally_add(struct sl_artifact_scan *scan, const char *key,
			    size_t count);

/*
 * Every regular file under `root`, minus excluded ones and, when `root`
 * is a git checkout or holds a .gitignore, the files the tree's own
 * .gitignore rules ignore. 0, or a negative code when `root` cannot be
 * read.
 */
int sl_artifacts_scan(const char *root, const char *const *exclude,
		      size_t n_exclude, struct sl_artifact_scan *scan,
		      struct sbxloop_error *err);
void sl_artifacts_scan_release(struct sl_artifact_scan *scan);

/* "N file(s) excluded (k1, k2)" (caller frees), or NULL when none. */
char *sl_artifacts_note(const struct sl_artifact_scan *scan);

/* The config's artifacts.exclude as an array (borrowed strings;
 * caller frees the array only). */
const char **sl_artifacts_excludes(const struct sl_config *cfg, size_t *n);

/*
 * UPSTREAM 11.1: NULL when the run never recorded a workspace; the
 * workspace when it is mounted; else <state_dir>/runs/<run>/artifacts.
 * Caller frees.
 */
char *sl_artifacts_dir(const char *state_dir, const char *run_id,
		       const char *workspace, int mounted);

/* Sorted entry names of a directory (caller frees each and the array);
 * 0 or -errno. */
int sl_artifacts_list_dir(const char *path, char ***names, size_t *n);
/* rm -rf without following links; 0 or the first -errno. */
int sl_artifacts_rmtree(const char *path);
void sl_artifacts_rmtree_quiet(const char *path);
/* Bytes under `path` by lstat (links counted, not followed). */
long long sl_artifacts_du(const char *path);

/* The sandbox a harvest copies from, borrowed. */
struct sl_harvest {
	const struct sbxloop_sandbox_ops *ops;
	void *ctx;
	const char *sandbox; /* its name */
	const char *workdir; /* the workspace, inside */
	const char *home;    /* a writable dir inside for the tar file */
	const char *dest;    /* host: <state_dir>/runs/<run>/artifacts */
	const char *const *exclude;
	size_t n_exclude;
	double timeout_s; /* per sandbox call; 0 = 120 */
};

/*
 * Copy the workspace out of the sandbox into `dest` (replaced whole,
 * only once the new copy is complete), leaving out excluded files and
 * links; `scan` (an output, release it with sl_artifacts_scan_release)
 * gets the kept files and the tally, what stayed inside included. Best
 * effort: a negative code means nothing changed in `dest`; the caller
 * logs it and goes on.
 */
int sl_artifacts_harvest(const struct sl_harvest *h,
			 struct sl_artifact_scan *scan,
			 struct sbxloop_error *err);

/*
 * The other way: put the last harvest (`dest` on the host) back into the
 * sandbox's workspace, over what is there. A resumed unmounted run
 * starts in a fresh sandbox whose workspace holds none of the work done
 * in the old one. *files says how many files went in. Not best effort:
 * a run that went on without its work would harvest over it.
 */
int sl_artifacts_seed(const struct sl_harvest *h, size_t *files,
		      struct sbxloop_error *err);

/*
 * The data of a run.artifacts event: {path, files, mounted, excluded?
 * {key: count}, disk_used_pct?, resources_level?}. `sample` is the
 * agent's last sandbox.resources data (may be NULL). Caller owns it.
 */
cJSON *sl_artifacts_event_data(const char *path, int mounted,
			       const struct sl_artifact_scan *scan,
			       const cJSON *sample);

/*
 * Did `sbxloop gc` remove the run's recorded workspace (a daemon.gc
 * event with workspace_removed:true)? 1 yes, 0 no, negative when the
 * store failed (err says why). A resume must refuse such a run.
 */
int sl_gc_workspace_removed(const struct sbxloop_store_ops *ops, void *ctx,
			    const char *run_id, struct sbxloop_error *err);

#endif

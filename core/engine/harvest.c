/*
 * Where a run's results end up: the workspace harvested out of an
 * unmounted sandbox (after each task in per-task mode, and at the end),
 * run.artifacts, and the artifact list kept for the summary. Best
 * effort throughout. Called by run.c and task.c (engine_internal.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/artifacts.h"
#include "host/events.h"
#include "host/redact.h"
#include "common/util.h"
#include "phases/worker_client.h"

#define SUMMARY_FILES 50

/* Copy an unmounted workspace out of the sandbox into `dest`. */
static int harvest(struct sl_engine *e, const char *dest,
		   const char *const *ex, size_t n_ex,
		   struct sl_artifact_scan *scan, struct sbxloop_error *err)
{
	struct sl_harvest h;

	memset(&h, 0, sizeof(h));
	h.ops = e->box;
	h.ctx = e->core->sandbox.ctx;
	h.sandbox = e->box_name;
	h.workdir = e->info.workdir;
	h.home = e->info.home;
	h.dest = dest;
	h.exclude = ex;
	h.n_exclude = n_ex;
	return sl_artifacts_harvest(&h, scan, err);
}

/* harvest_mode per-task: keep each finished task's work on the host. */
void sl_engine_harvest_task(struct sl_engine *e)
{
	struct sl_artifact_scan scan;
	struct sbxloop_error err = {0, ""};
	const char *sd = sl_core_state_dir(e->core);
	const char *mode =
		sl_config_str(e->core->cfg, "artifacts.harvest_mode");
	const char **ex;
	size_t n_ex = 0;
	char *dest;

	if (e->info.mounted || !e->have_box || !sd ||
	    (mode && strcmp(mode, "per-task") != 0))
		return;
	dest = sl_artifacts_dir(sd, e->run_id, e->workspace, 0);
	if (!dest)
		return;
	memset(&scan, 0, sizeof(scan));
	ex = sl_artifacts_excludes(e->core->cfg, &n_ex);
	if (harvest(e, dest, ex, n_ex, &scan, &err) < 0)
		sl_log(SBXLOOP_LOG_WARN, "cannot harvest the workspace: %s",
		       err.message);
	sl_artifacts_scan_release(&scan);
	free(ex);
	free(dest);
}

/*
 * Where the run's results are, and run.artifacts: the live workspace
 * when it is mounted, else a harvest out of the sandbox. Best effort.
 */
void sl_engine_report_artifacts(struct sl_engine *e)
{
	struct sl_artifact_scan scan;
	cJSON *sample;
	struct sbxloop_error err = {0, ""};
	const char *sd = sl_core_state_dir(e->core);
	const char **ex = NULL;
	size_t n_ex = 0, i;
	int rc = 0;

	memset(&scan, 0, sizeof(scan));
	if (!sd || !e->workspace)
		return;
	free(e->artifacts_dir);
	e->artifacts_dir =
		sl_artifacts_dir(sd, e->run_id, e->workspace, e->info.mounted);
	if (!e->artifacts_dir)
		return;
	ex = sl_artifacts_excludes(e->core->cfg, &n_ex);
	if (e->info.mounted)
		rc = sl_artifacts_scan(e->workspace, ex, n_ex, &scan, &err);
	else if (e->have_box)
		rc = harvest(e, e->artifacts_dir, ex, n_ex, &scan, &err);
	if (rc < 0)
		sl_log(SBXLOOP_LOG_WARN, "cannot collect the artifacts: %s",
		       err.message);
	/* the newest of any agent sandbox: with per-lane sandboxes the
	 * run's own did only DECOMPOSE */
	sample = sl_worker_last_resources_copy(NULL);
	sl_engine_emit(e, SBXLOOP_EV_RUN_ARTIFACTS,
		       sl_artifacts_event_data(e->artifacts_dir,
					       e->info.mounted, &scan,
					       sample));
	cJSON_Delete(sample);
	e->n_artifacts = scan.n_files;
	free(e->artifacts_note);
	e->artifacts_note = sl_artifacts_note(&scan);
	for (i = 0; i < e->n_artifact_files; i++)
		free(e->artifact_files[i]);
	free(e->artifact_files);
	e->n_artifact_files =
		scan.n_files < SUMMARY_FILES ? scan.n_files : SUMMARY_FILES;
	e->artifact_files =
		sl_xcalloc(e->n_artifact_files + 1, sizeof(char *));
	for (i = 0; i < e->n_artifact_files; i++)
		e->artifact_files[i] = sl_xstrdup(scan.files[i].relpath);
	sl_artifacts_scan_release(&scan);
	free(ex);
}

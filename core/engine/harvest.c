/*
 * Where a run's results end up: the workspace harvested out of an
 * unmounted sandbox (after each task in per-task mode, and at the end),
 * run.artifacts, and the artifact list kept for the summary. Best
 * effort throughout. Called by run.c and task.c (engine_internal.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/engine_internal.h"
#include "engine/artifacts.h"
#include "host/events.h"
#include "host/redact.h"
#include "common/util.h"
#include "phases/worker_client.h"

#define SUMMARY_FILES 50

/* The run's agent sandbox and `dest` on the host, for the copies. */
static void harvest_of(struct sl_engine *e, const char *dest,
		       struct sl_harvest *h)
{
	memset(h, 0, sizeof(*h));
	h->ops = e->box;
	h->ctx = e->core->sandbox.ctx;
	h->sandbox = e->box_name;
	h->workdir = e->info.workdir;
	h->home = e->info.home;
	h->dest = dest;
}

/* Copy an unmounted workspace out of the sandbox into `dest`. */
static int harvest(struct sl_engine *e, const char *dest,
		   const char *const *ex, size_t n_ex,
		   struct sl_artifact_scan *scan, struct sbxloop_error *err)
{
	struct sl_harvest h;

	harvest_of(e, dest, &h);
	h.exclude = ex;
	h.n_exclude = n_ex;
	return sl_artifacts_harvest(&h, scan, err);
}

/* harvest_mode per-task: keep each finished task's work on the host. */
int sl_engine_harvest_task(struct sl_engine *e)
{
	struct sl_artifact_scan scan;
	struct sbxloop_error err = {0, ""};
	const char *sd = sl_core_state_dir(e->core);
	const char *mode =
		sl_config_str(e->core->cfg, "artifacts.harvest_mode");
	const char **ex;
	size_t n_ex = 0;
	char *dest;
	int rc = 1;

	if (e->info.mounted || !e->have_box || e->stale_box || !sd ||
	    (mode && strcmp(mode, "per-task") != 0))
		return 0;
	dest = sl_artifacts_dir(sd, e->run_id, e->workspace, 0);
	if (!dest)
		return 0;
	memset(&scan, 0, sizeof(scan));
	ex = sl_artifacts_excludes(e->core->cfg, &n_ex);
	if (harvest(e, dest, ex, n_ex, &scan, &err) < 0) {
		sl_log(SBXLOOP_LOG_WARN, "cannot harvest the workspace: %s",
		       err.message);
		rc = -1;
	}
	sl_artifacts_scan_release(&scan);
	free(ex);
	free(dest);
	return rc;
}

/* ---- a resumed unmounted run -------------------------------------------- */

/* Where the events say the last good harvest is, and each task ended. */
struct coverage {
	struct sl_engine *e;
	int64_t harvested; /* seq of the newest event of a good harvest */
	int64_t *ended;    /* per task: seq of its newest task.end, or 0 */
};

static int coverage_cb(void *user, const struct sbxloop_event *ev)
{
	struct coverage *c = user;
	cJSON *d = cJSON_Parse(ev->data_json ? ev->data_json : "");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(d, "harvested");
	struct task *t;

	if (cJSON_IsTrue(h) && ev->seq > c->harvested)
		c->harvested = ev->seq;
	if (!strcmp(ev->type, SBXLOOP_EV_TASK_END) &&
	    (t = sl_engine_find_task(c->e, sl_json_str(d, "task_id", ""))))
		c->ended[t - c->e->tasks] = ev->seq;
	cJSON_Delete(d);
	return 0;
}

static int read_coverage(struct sl_engine *e, struct coverage *c,
			 struct sbxloop_error *err)
{
	static const char *const types[] = {SBXLOOP_EV_TASK_END,
					    SBXLOOP_EV_RUN_ARTIFACTS};
	struct sbxloop_event_query q;
	size_t i;
	int rc = 0;

	c->e = e;
	c->harvested = 0;
	c->ended = sl_xcalloc(e->n_tasks ? e->n_tasks : 1, sizeof(int64_t));
	for (i = 0; i < 2 && rc == 0; i++) {
		memset(&q, 0, sizeof(q));
		q.struct_size = sizeof(q);
		q.run_id = e->run_id;
		q.type_prefix = types[i];
		rc = e->st->events_query(e->sctx, &q, coverage_cb, c, err);
	}
	return rc;
}

/*
 * Work lives in a sandbox that does not mount the workspace until a
 * harvest copies it out: after every task (task.end {harvested: true})
 * and at the end (run.artifacts {harvested: true}), each holding all the
 * work merged before it. The old sandbox is gone; what the newest good
 * harvest holds goes into the fresh one, and a task whose work it lacks
 * (in flight at the kill, or accepted after that harvest) executes
 * again on its committed plan: no budget is spent, no result is lost.
 */
int sl_engine_reclaim(struct sl_engine *e, struct sbxloop_error *err)
{
	const char *sd = sl_core_state_dir(e->core);
	struct coverage c;
	struct sl_harvest h;
	struct stat st;
	size_t i, files = 0;
	char *from = NULL;
	cJSON *d, *redone;
	int rc, seeded = 0;

	if (!e->stale_box || !sd)
		return 0;
	rc = read_coverage(e, &c, err);
	if (rc < 0)
		goto out;
	from = sl_artifacts_dir(sd, e->run_id, e->workspace, 0);
	/* a copy with no marker (its event cut off by the kill, or made by
	 * an older sbxloop) goes in too; only the marks decide the redo */
	if (from && stat(from, &st) == 0 && S_ISDIR(st.st_mode)) {
		harvest_of(e, from, &h);
		rc = sl_artifacts_seed(&h, &files, err);
		if (rc < 0) {
			char *why = sl_xstrdup(err->message);

			rc = sl_error(err, rc,
				      "cannot put the harvested work of run "
				      "%s (%s) into its new sandbox: %s; the "
				      "harvest is kept as it was: resume "
				      "again once that is fixed",
				      e->run_id, from, why);
			free(why);
			goto out;
		}
		seeded = 1;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", e->box_name);
	cJSON_AddStringToObject(d, "path", seeded ? from : "");
	cJSON_AddNumberToObject(d, "files", (double)files);
	redone = cJSON_AddArrayToObject(d, "redone");
	for (i = 0; i < e->n_tasks && rc == 0; i++) {
		struct task *t = &e->tasks[i];
		int lost;

		if (t->state == SL_TASK_DONE)
			lost = !c.ended[i] || c.ended[i] > c.harvested;
		else /* a state this sbxloop does not know stays as stored */
			lost = t->state != SL_TASK_PENDING &&
			       t->state != SL_TASK_PLANNING &&
			       t->state != SL_TASK_UNKNOWN &&
			       !sl_task_terminal(t);
		if (!lost)
			continue;
		cJSON_AddItemToArray(redone, cJSON_CreateString(t->id));
		t->redo = 1;
		rc = sl_engine_set_task_state(e, t, SL_TASK_EXECUTING, err);
	}
	if (seeded || cJSON_GetArraySize(redone)) {
		struct sl_buf m = SL_BUF_INIT;
		const cJSON *id;

		if (seeded)
			sl_buf_addf(&m,
				    "the new sandbox got the last harvest "
				    "back (%zu file(s))",
				    files);
		else
			sl_buf_adds(&m, "no harvest holds work yet");
		cJSON_ArrayForEach (id, redone)
			sl_buf_addf(&m, "%s%s",
				    id == redone->child
					    ? "; executing again, their work "
					      "died with the old sandbox: "
					    : ", ",
				    id->valuestring);
		cJSON_AddStringToObject(d, "message", m.buf);
		sl_buf_release(&m);
		sl_engine_emit(e, SBXLOOP_EV_SANDBOX_WORKSPACE_SEED, d);
	} else {
		cJSON_Delete(d);
	}
	if (rc == 0)
		e->stale_box = 0;
out:
	free(c.ended);
	free(from);
	return rc;
}

/*
 * Where the run's results are, and run.artifacts: the live workspace
 * when it is mounted, else a harvest out of the sandbox. Best effort.
 */
void sl_engine_report_artifacts(struct sl_engine *e)
{
	struct sl_artifact_scan scan;
	cJSON *sample, *d;
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
	else if (e->have_box && !e->stale_box)
		rc = harvest(e, e->artifacts_dir, ex, n_ex, &scan, &err);
	else if (e->have_box) /* the last harvest stands, not the fresh
				 sandbox that lacks its work */
		rc = sl_artifacts_scan(e->artifacts_dir, ex, n_ex, &scan,
				       &err);
	if (rc < 0)
		sl_log(SBXLOOP_LOG_WARN, "cannot collect the artifacts: %s",
		       err.message);
	/* the newest of any agent sandbox: with per-lane sandboxes the
	 * run's own did only DECOMPOSE */
	sample = sl_worker_last_resources_copy(NULL);
	d = sl_artifacts_event_data(e->artifacts_dir, e->info.mounted, &scan,
				    sample);
	/* what a resume puts back into a fresh sandbox (sl_engine_reclaim) */
	if (!e->info.mounted && e->have_box && !e->stale_box && rc == 0)
		cJSON_AddBoolToObject(d, "harvested", 1);
	sl_engine_emit(e, SBXLOOP_EV_RUN_ARTIFACTS, d);
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

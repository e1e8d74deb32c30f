/*
 * The run driver (single lane): an engine's life, a run from creation or
 * resume to its final state through provisioning, DECOMPOSE, the tasks
 * in stored order and finalizing; the phase boundary (cancellation and
 * the wall clock). Tasks are driven by task.c, the sandbox pair set up
 * by setup.c. Called by the `run` and `resume` commands (cmd_run.c)
 * through engine.h.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "host/runs.h"
#include "engine/artifacts.h"
#include "host/events.h"
#include "phases/prompt.h"
#include "common/util.h"
#include "phases/worker_client.h"

/* ---- the engine --------------------------------------------------------- */

struct sl_engine *sl_engine_new(struct sl_core *core,
				struct sl_instance *store)
{
	struct sl_engine *e = sl_xcalloc(1, sizeof(*e));

	e->core = core;
	e->st = store->ops;
	e->sctx = store->ctx;
	e->box = core->sandbox.ops;
	e->pair = sl_pair_new(core);
	pthread_mutex_init(&e->ledger_lock, NULL);
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->steer_lock, NULL);
	e->started = sl_monotonic();
	snprintf(e->state, sizeof(e->state), "%s", SBXLOOP_RUN_CREATED);
	e->prompts_dir = sl_xstrdup(sl_prompt_dir(core->cfg));
	return e;
}

void sl_engine_free(struct sl_engine *e)
{
	size_t i;

	if (!e)
		return;
	sl_engine_chat_close(e);
	cJSON_Delete(e->guidance);
	sl_engine_tasks_clear(e);
	sl_pair_free(e->pair);
	sl_worker_forget_resources();
	for (i = 0; i < e->n_live; i++)
		free(e->live[i]);
	free(e->live);
	free(e->outcome);
	free(e->workspace);
	free(e->lanes_git);
	free(e->lanes_common);
	free(e->lanes_checked);
	free(e->lanes_paths);
	free(e->prompts_dir);
	sl_egress_ledger_free(e->ledger);
	pthread_mutex_destroy(&e->ledger_lock);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->steer_lock);
	for (i = 0; i < e->n_granters; i++)
		sl_instance_destroy(&e->granters[i]);
	free(e->granters);
	free(e->chain);
	free(e->fetch_cmd);
	free(e->artifacts_dir);
	free(e->artifacts_note);
	for (i = 0; i < e->n_artifact_files; i++)
		free(e->artifact_files[i]);
	free(e->artifact_files);
	free(e->reporters);
	free(e->delivered_url);
	free(e->delivery_error);
	free(e);
}

void sl_engine_request_cancel(struct sl_engine *e)
{
	e->cancel = 1;
}

const char *sl_engine_state(const struct sl_engine *e)
{
	return e->state;
}

/* ---- the phase boundary ------------------------------------------------- */

struct state_probe {
	char state[STATE_LEN];
};

static int probe_cb(void *user, const struct sbxloop_run_row *run)
{
	struct state_probe *p = user;

	snprintf(p->state, sizeof(p->state), "%s", run->state);
	return 0;
}

int sl_engine_boundary(struct sl_engine *e, struct sbxloop_error *err)
{
	struct state_probe p = {""};
	int rc;

	if (e->cancel)
		return sl_error(err, SBXLOOP_ECANCELLED,
				"run %s interrupted; resume with `sbxloop "
				"resume %s`",
				e->run_id, e->run_id);
	if (e->lanes_halt)
		return sl_error(err, SBXLOOP_EINFRA,
				"stopped at a phase boundary: another lane "
				"failed");
	rc = e->st->run_get(e->sctx, e->run_id, probe_cb, &p, err);
	if (rc < 0)
		return rc;
	if (strcmp(p.state, SBXLOOP_RUN_CANCELLED) == 0) {
		snprintf(e->state, sizeof(e->state), "%s",
			 SBXLOOP_RUN_CANCELLED);
		return sl_error(err, SBXLOOP_ECANCELLED,
				"run %s was cancelled", e->run_id);
	}
	if (sl_monotonic() > e->deadline) {
		double budget = sl_config_double(
			e->core->cfg, "budgets.max_wall_clock_s", 7200.0);
		char *why =
			sl_xasprintf("exceeded max_wall_clock_s=%g", budget);

		sl_engine_set_run_state(e, SBXLOOP_RUN_FAILED, why, err);
		rc = sl_error(err, SBXLOOP_ETIMEDOUT, "%s", why);
		free(why);
		return rc;
	}
	return sl_engine_steer(e, err);
}

int sl_engine_budget(const struct sl_engine *e, const char *key, int dflt)
{
	return (int)sl_config_int(e->core->cfg, key, dflt);
}

void sl_engine_phase_ctx(struct sl_engine *e, const struct task *t,
			 struct sl_phase_ctx *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->core = e->core;
	pc->info = &e->info;
	pc->outcome = e->outcome;
	pc->prompts_dir = e->prompts_dir;
	pc->workspace = e->workspace;
	pc->task_id = t ? t->id : NULL;
	pc->guidance = e->guidance;
	if (t && t->lane) {
		pc->info = sl_lane_info(t);
		pc->workspace = sl_lane_dir(t);
	}
}

/* ---- the run ------------------------------------------------------------ */

static int decompose(struct sl_engine *e, struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct sbxloop_task_row *rows = NULL;
	double t0 = sl_now();
	cJSON *graph = NULL, *list;
	char **specs = NULL;
	long long max_tasks =
		sl_config_int(e->core->cfg, "budgets.max_tasks", 20);
	size_t n, i;
	int rc;

	rc = sl_engine_set_run_state(e, SBXLOOP_RUN_DECOMPOSING, NULL, err);
	if (rc < 0)
		return rc;
	sl_engine_phase_ctx(e, NULL, &pc);
	rc = sl_phase_decompose(&pc, &graph, err);
	if (rc < 0)
		return rc;
	list = cJSON_GetObjectItemCaseSensitive(graph, "tasks");
	n = (size_t)cJSON_GetArraySize(list);
	if ((long long)n > max_tasks) {
		rc = sl_error(err, SBXLOOP_EINVAL,
			      "decomposition produced %zu tasks, more than "
			      "budgets.max_tasks=%lld",
			      n, max_tasks);
		goto out;
	}
	rows = sl_xcalloc(n, sizeof(*rows));
	specs = sl_xcalloc(n, sizeof(*specs));
	for (i = 0; i < n; i++) {
		specs[i] = cJSON_PrintUnformatted(
			cJSON_GetArrayItem(list, (int)i));
		rows[i].struct_size = sizeof(rows[i]);
		rows[i].run_id = e->run_id;
		rows[i].task_id = sl_json_str(cJSON_GetArrayItem(list, (int)i),
					      "id", "?");
		rows[i].order_idx = (int)i;
		rows[i].state = sl_task_states[SL_TASK_PENDING].name;
		rows[i].spec_json = specs[i];
		rows[i].last_feedback = "";
	}
	rc = e->st->tasks_save(e->sctx, e->run_id, rows, n, err);
	if (rc < 0)
		goto out;
	rc = sl_engine_record_attempt(e, NULL, "decompose", 1, "ok", graph, t0,
				      err);
	if (rc < 0)
		goto out;
	rc = sl_engine_load_tasks(e, err);
out:
	for (i = 0; specs && i < n; i++)
		free(specs[i]);
	free(specs);
	free(rows);
	cJSON_Delete(graph);
	return rc;
}

static void announce_roster(struct sl_engine *e)
{
	cJSON *d = cJSON_CreateObject(), *arr;
	size_t i;
	char *msg;

	for (i = 0; i < e->n_tasks; i++)
		sl_engine_emit(e, SBXLOOP_EV_TASK_STATE,
			       sl_engine_task_event(&e->tasks[i], 1));
	msg = sl_xasprintf("%zu task(s)", e->n_tasks);
	cJSON_AddStringToObject(d, "message", msg);
	free(msg);
	arr = cJSON_AddArrayToObject(d, "tasks");
	for (i = 0; i < e->n_tasks; i++) {
		const struct task *t = &e->tasks[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "id", t->id);
		cJSON_AddStringToObject(o, "title", t->title);
		cJSON_AddStringToObject(o, "state", sl_task_state_name(t));
		cJSON_AddItemToObject(
			o, "depends_on",
			cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
						t->spec, "depends_on"),
					1));
		cJSON_AddItemToArray(arr, o);
	}
	sl_engine_emit(e, SBXLOOP_EV_RUN_TASKS, d);
}

static int schedule(struct sl_engine *e, struct sbxloop_error *err)
{
	size_t i;
	int rc = sl_engine_schedule_lanes(e, err);

	if (rc <= 0)
		return rc;

	for (i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		const cJSON *dep;
		int blocked = 0;

		if (sl_task_terminal(t))
			continue;
		cJSON_ArrayForEach (dep, cJSON_GetObjectItemCaseSensitive(
						 t->spec, "depends_on")) {
			struct task *d =
				sl_engine_find_task(e, dep->valuestring);

			if (d && (d->state == SL_TASK_FAILED ||
				  d->state == SL_TASK_SKIPPED))
				blocked = 1;
		}
		if (blocked) {
			rc = sl_engine_boundary(e, err);
			if (rc < 0)
				return rc;
			rc = sl_engine_set_task_state(e, t, SL_TASK_SKIPPED,
						      err);
		} else {
			rc = sl_engine_run_task(e, t, err);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int drive(struct sl_engine *e, const char *pinned,
		 struct sbxloop_error *err)
{
	const char *final;
	size_t i;
	int rc, failed = 0;
	cJSON *d;

	e->deadline = sl_monotonic() +
		      sl_config_double(e->core->cfg,
				       "budgets.max_wall_clock_s", 7200.0);
	if (!e->guidance)
		sl_engine_load_guidance(e, NULL);
	sl_engine_chat_open(e);
	rc = sl_engine_set_run_state(e, SBXLOOP_RUN_PROVISIONING, NULL, err);
	if (rc < 0)
		return rc;
	rc = sl_engine_provision(e, pinned, err);
	e->stale_box = e->resumed && e->have_box && !e->info.mounted;
	if (rc < 0)
		goto fail;
	sl_engine_jobs_open(e);
	rc = sl_engine_reporters_start(e, err);
	if (rc < 0) {
		struct sbxloop_error serr = {0, ""};

		sl_engine_set_run_state(e, SBXLOOP_RUN_FAILED, err->message,
					&serr);
		goto fail;
	}
	rc = sl_engine_load_tasks(e, err);
	if (rc == 0)
		rc = sl_engine_reclaim(e, err);
	if (rc < 0)
		goto fail;
	if (e->n_tasks == 0) {
		rc = sl_engine_boundary(e, err);
		if (rc < 0)
			goto fail;
		rc = decompose(e, err);
		if (rc < 0)
			goto fail;
	}
	rc = sl_engine_set_run_state(e, SBXLOOP_RUN_RUNNING, NULL, err);
	if (rc < 0)
		goto fail;
	announce_roster(e);
	rc = schedule(e, err);
	if (rc < 0)
		goto fail;
	/* what came in during the last task is still answered */
	rc = sl_engine_steer(e, err);
	if (rc < 0)
		goto fail;
	rc = sl_engine_set_run_state(e, SBXLOOP_RUN_FINALIZING, NULL, err);
	if (rc < 0)
		goto fail;
	for (i = 0; i < e->n_tasks; i++)
		if (e->tasks[i].state != SL_TASK_DONE)
			failed = 1;
	final = failed ? SBXLOOP_RUN_FAILED : SBXLOOP_RUN_COMPLETED;
	sl_engine_report_artifacts(e);
	sl_engine_reporters_end(e, final);
	if (failed)
		sl_engine_keep_on_failure(e);
	sl_engine_teardown(e);
	rc = sl_engine_set_run_state(
		e, final, failed ? "some tasks did not finish" : NULL, err);
	if (rc < 0)
		return rc;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "state", final);
	sl_engine_emit(e, SBXLOOP_EV_RUN_END, d);
	sl_bus_flush(e->core, err);
	return 0;
fail:
	if (!e->cancel)
		sl_engine_report_artifacts(e);
	/* a run that stopped resumable is not over: no summary yet */
	if (!e->cancel && !strcmp(e->state, SBXLOOP_RUN_FAILED))
		sl_engine_reporters_end(e, SBXLOOP_RUN_FAILED);
	if (rc != SBXLOOP_ECANCELLED || !e->cancel)
		sl_engine_keep_on_failure(e);
	sl_engine_teardown(e);
	if (rc != SBXLOOP_ECANCELLED && strcmp(e->state, SBXLOOP_RUN_FAILED))
		sl_engine_note_stop(e, err->message);
	{
		struct sbxloop_error ferr = {0, ""};

		sl_bus_flush(e->core, &ferr);
	}
	return rc;
}

int sl_engine_start(struct sl_engine *e, const char *run_id,
		    const char *outcome, struct sbxloop_error *err)
{
	struct sbxloop_run_row row;
	char *cfg = sl_config_to_json(e->core->cfg);
	cJSON *d;
	int rc;

	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	e->outcome = sl_xstrdup(outcome);
	memset(&row, 0, sizeof(row));
	row.struct_size = sizeof(row);
	row.run_id = e->run_id;
	row.outcome = outcome;
	row.state = SBXLOOP_RUN_CREATED;
	row.config_json = cfg;
	row.created_at = row.updated_at = sl_now();
	row.guidance_json = "[]";
	rc = e->st->run_create(e->sctx, &row, err);
	free(cfg);
	if (rc < 0)
		return rc;
	sl_core_set_run(e->core, e->run_id);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", outcome);
	sl_engine_emit(e, SBXLOOP_EV_RUN_START, d);
	return drive(e, NULL, err);
}

/* Did a gc sweep remove this run's workspace? Then it cannot resume. */
static int gc_guard(struct sl_engine *e, struct sbxloop_error *err)
{
	int rc = sl_gc_workspace_removed(e->st, e->sctx, e->run_id, err);

	if (rc <= 0)
		return rc;
	return sl_error(err, SBXLOOP_ESTATE,
			"run %s cannot be resumed: a gc sweep removed its "
			"workspace (see `sbxloop logs %s --type %s`)",
			e->run_id, e->run_id, SBXLOOP_EV_GC);
}

int sl_engine_resume(struct sl_engine *e, const char *run_id,
		     struct sbxloop_error *err)
{
	static const char *const again[] = {SBXLOOP_RUN_FAILED,
					    SBXLOOP_RUN_CANCELLED, NULL};
	struct sl_run ri = {0};
	cJSON *d;
	int rc;

	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	rc = sl_run_fetch_ops(e->st, e->sctx, run_id, &ri, err);
	if (rc == SBXLOOP_ENOTFOUND) {
		rc = sl_error(err, SBXLOOP_ENOTFOUND, "unknown run %s",
			      run_id);
		goto out;
	}
	if (rc < 0)
		goto out;
	snprintf(e->state, sizeof(e->state), "%s", ri.state);
	if (strcmp(ri.state, SBXLOOP_RUN_COMPLETED) == 0) {
		rc = sl_error(err, SBXLOOP_ESTATE,
			      "run %s is already completed; nothing to "
			      "resume",
			      run_id);
		goto out;
	}
	rc = gc_guard(e, err);
	if (rc < 0)
		goto out;
	if (!strcmp(ri.state, SBXLOOP_RUN_FAILED) ||
	    !strcmp(ri.state, SBXLOOP_RUN_CANCELLED)) {
		struct sbxloop_run_update u;
		char prev[STATE_LEN] = "";

		memset(&u, 0, sizeof(u));
		u.struct_size = sizeof(u);
		u.run_id = run_id;
		u.fields = SBXLOOP_RUN_STATE;
		u.state = SBXLOOP_RUN_PROVISIONING;
		u.only_if_state = again;
		rc = e->st->run_update(e->sctx, &u, prev, sizeof(prev), err);
		if (rc == SBXLOOP_ESTATE) {
			rc = sl_error(err, SBXLOOP_ESTATE,
				      "run %s changed to '%s' meanwhile; "
				      "not resuming",
				      run_id, prev);
			goto out;
		}
		if (rc < 0)
			goto out;
		/* gc and resume exclude each other: check again */
		rc = gc_guard(e, err);
		if (rc < 0) {
			struct sbxloop_error ignored = {0, ""};

			u.state = ri.state;
			u.only_if_state = NULL;
			e->st->run_update(e->sctx, &u, NULL, 0, &ignored);
			goto out;
		}
	}
	e->outcome = ri.outcome;
	ri.outcome = NULL;
	sl_engine_load_guidance(e, ri.guidance_json);
	e->resumed = 1;
	sl_core_set_run(e->core, e->run_id);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", e->outcome);
	cJSON_AddBoolToObject(d, "resumed", 1);
	sl_engine_emit(e, SBXLOOP_EV_RUN_START, d);
	rc = drive(e, *ri.workspace ? ri.workspace : NULL, err);
out:
	sl_run_release(&ri);
	return rc;
}

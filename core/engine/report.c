/*
 * The engine's side of reporting: the job hook through which plugins run
 * worker jobs in the run's sandboxes (host->sandbox_job), and the calls
 * into reporters at run start, at delivery and at run end. A reporter's
 * failure is logged and never changes the run, except a run_start that
 * reports a configuration error (SBXLOOP_EINVAL: a delivery repository
 * that does not exist), which fails the run before any phase.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <sbxloop/reporter.h>

#include "engine/engine_internal.h"
#include "host/loader.h"
#include "host/redact.h"
#include "common/util.h"
#include "phases/worker_client.h"

void sl_engine_add_reporter(struct sl_engine *e, struct sl_instance *rep)
{
	if (!rep || !rep->ops)
		return;
	e->reporters = sl_xrealloc(
		e->reporters, (e->n_reporters + 1) * sizeof(*e->reporters));
	e->reporters[e->n_reporters++] = rep;
}

/* host->sandbox_job() during the run: a job in the pair's sandbox. */
static int engine_job(void *user, const char *role, cJSON *job, cJSON **result,
		      struct sbxloop_error *err)
{
	struct sl_engine *e = user;
	struct sbxloop_sandbox_info info;
	struct sl_job_tags tags = {role, NULL, NULL, 0};

	if (!sl_pair_box(e->pair, role, &info))
		return sl_error(err, SBXLOOP_ENOTFOUND,
				"run %s has no %s sandbox", e->run_id, role);
	return sl_worker_submit(e->core, &info, job, &tags, result, err);
}

void sl_engine_jobs_open(struct sl_engine *e)
{
	sl_core_set_job_hook(e->core, engine_job, e);
}

void sl_engine_jobs_close(struct sl_engine *e)
{
	sl_core_set_job_hook(e->core, NULL, NULL);
}

/* [{id, title, state, verify_commands}] of the tasks (caller frees). */
static char *tasks_json(const struct sl_engine *e)
{
	cJSON *arr = cJSON_CreateArray();
	char *text;
	size_t i;

	for (i = 0; i < e->n_tasks; i++) {
		const struct task *t = &e->tasks[i];
		cJSON *o = cJSON_CreateObject();
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(
			t->plan, "verify_commands");

		cJSON_AddStringToObject(o, "id", t->id);
		cJSON_AddStringToObject(o, "title", t->title ? t->title : "");
		cJSON_AddStringToObject(o, "state", sl_task_state_name(t));
		cJSON_AddItemToObject(o, "verify_commands",
				      v ? cJSON_Duplicate(v, 1)
					: cJSON_CreateArray());
		cJSON_AddItemToArray(arr, o);
	}
	text = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	return text;
}

static void run_info(struct sl_engine *e, const char *state,
		     struct sbxloop_run_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->struct_size = sizeof(*ri);
	ri->run_id = e->run_id;
	ri->outcome = e->outcome;
	ri->state = state;
	ri->workspace = e->workspace;
	ri->artifacts_dir = e->artifacts_dir;
	ri->resumed = e->resumed;
	ri->mounted = e->info.mounted;
}

static const char *rep_name(const struct sl_instance *rep)
{
	return rep->component ? rep->component->name : "?";
}

int sl_engine_reporters_start(struct sl_engine *e, struct sbxloop_error *err)
{
	struct sbxloop_run_info ri;
	size_t i;

	run_info(e, e->state, &ri);
	for (i = 0; i < e->n_reporters; i++) {
		struct sl_instance *rep = e->reporters[i];
		const struct sbxloop_reporter_ops *ops = rep->ops;
		struct sbxloop_error rerr = {0, ""};
		struct sl_plugin_call call;
		int rc;

		sl_plugin_enter(&call, rep->module, "run_start()");
		rc = ops->run_start(rep->ctx, &ri, &rerr);
		sl_plugin_leave(&call);
		if (rc == SBXLOOP_EINVAL)
			return sl_error(err, SBXLOOP_EINVAL, "%s",
					rerr.message[0] ? rerr.message
							: "reporter refused "
							  "the run");
		if (rc < 0)
			sl_log(SBXLOOP_LOG_WARN,
			       "reporter '%s' could not start: %s",
			       rep_name(rep),
			       rerr.message[0] ? rerr.message
					       : "no reason given");
	}
	return 0;
}

void sl_engine_reporters_end(struct sl_engine *e, const char *final)
{
	struct sbxloop_run_info ri;
	char *tasks = tasks_json(e);
	size_t i;

	run_info(e, final, &ri);
	ri.tasks_json = tasks;
	for (i = 0; i < e->n_reporters; i++) {
		struct sl_instance *rep = e->reporters[i];
		const struct sbxloop_reporter_ops *ops = rep->ops;
		struct sbxloop_error rerr = {0, ""};
		struct sl_plugin_call call;
		int rc;

		if (!strcmp(final, SBXLOOP_RUN_COMPLETED) &&
		    SBXLOOP_HAS_SLOT(ops, struct sbxloop_reporter_ops,
				     deliver) &&
		    ops->deliver) {
			struct sbxloop_delivery d;

			memset(&d, 0, sizeof(d));
			d.struct_size = sizeof(d);
			sl_plugin_enter(&call, rep->module, "deliver()");
			rc = ops->deliver(rep->ctx, &ri, &d, &rerr);
			sl_plugin_leave(&call);
			if (rc < 0 && rc != SBXLOOP_EUNSUPPORTED) {
				sl_log(SBXLOOP_LOG_WARN,
				       "reporter '%s' did not deliver: %s",
				       rep_name(rep), rerr.message);
				free(e->delivery_error);
				e->delivery_error = sl_xstrdup(rerr.message);
			} else if (rc == 0 && d.url[0]) {
				e->delivered_number = d.number;
				free(e->delivered_url);
				e->delivered_url = sl_xstrdup(d.url);
			}
			memset(&rerr, 0, sizeof(rerr));
		}
		sl_plugin_enter(&call, rep->module, "run_end()");
		rc = ops->run_end(rep->ctx, &ri, &rerr);
		sl_plugin_leave(&call);
		if (rc < 0)
			sl_log(SBXLOOP_LOG_WARN,
			       "reporter '%s' failed at run "
			       "end: %s",
			       rep_name(rep), rerr.message);
	}
	free(tasks);
}

/*
 * What the engine persists, and when: run and task rows, phase attempts
 * and the events that go with each state change, read back on resume.
 * Every transition is committed through the store before the next step.
 * Called by the other engine pieces (engine_internal.h) only.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "host/events.h"
#include "host/redact.h"
#include "common/util.h"

static void task_clear(struct task *t)
{
	cJSON_Delete(t->spec);
	cJSON_Delete(t->plan);
	free(t->feedback);
	free(t->session_id);
	memset(t, 0, sizeof(*t));
}

void sl_engine_tasks_clear(struct sl_engine *e)
{
	size_t i;

	for (i = 0; i < e->n_tasks; i++)
		task_clear(&e->tasks[i]);
	free(e->tasks);
	e->tasks = NULL;
	e->n_tasks = 0;
}

int sl_engine_emit(struct sl_engine *e, const char *type, cJSON *data)
{
	return sl_emit(e->core, type, NULL, data);
}

int sl_engine_set_run_state(struct sl_engine *e, const char *state,
			    const char *reason, struct sbxloop_error *err)
{
	struct sbxloop_run_update u;
	cJSON *d;
	int rc;

	memset(&u, 0, sizeof(u));
	u.struct_size = sizeof(u);
	u.run_id = e->run_id;
	u.fields = SBXLOOP_RUN_STATE;
	u.state = state;
	u.reason = reason;
	rc = e->st->run_update(e->sctx, &u, NULL, 0, err);
	if (rc < 0)
		return rc;
	snprintf(e->state, sizeof(e->state), "%s", state);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "state", state);
	if (reason)
		cJSON_AddStringToObject(d, "reason", reason);
	sl_engine_emit(e, SBXLOOP_EV_RUN_STATE, d);
	return 0;
}

/*
 * Say on the run row why the run stopped without changing its state: an
 * infrastructure error leaves the run where it was, to be resumed, and
 * `sbxloop status` would otherwise show a stopped run as, say,
 * decomposing with no word of why. The next state change clears it.
 * Best effort: the store may be what failed.
 */
void sl_engine_note_stop(struct sl_engine *e, const char *why)
{
	struct sbxloop_run_update u;
	struct sbxloop_error ignored = {0, ""};
	char *shown = sl_redact(why ? why : "");
	char *reason = sl_xasprintf("stopped: %s", shown);

	memset(&u, 0, sizeof(u));
	u.struct_size = sizeof(u);
	u.run_id = e->run_id;
	u.fields = SBXLOOP_RUN_REASON;
	u.reason = reason;
	e->st->run_update(e->sctx, &u, NULL, 0, &ignored);
	free(reason);
	free(shown);
}

static int task_persist(struct sl_engine *e, const struct task *t,
			struct sbxloop_error *err)
{
	struct sbxloop_task_row row;
	char *spec = cJSON_PrintUnformatted(t->spec);
	char *plan = t->plan ? cJSON_PrintUnformatted(t->plan) : NULL;
	int rc;

	memset(&row, 0, sizeof(row));
	row.struct_size = sizeof(row);
	row.run_id = e->run_id;
	row.task_id = t->id;
	row.order_idx = t->order;
	row.state = sl_task_state_name(t);
	row.spec_json = spec;
	row.plan_json = plan;
	row.revisions = t->revisions;
	row.replans = t->replans;
	row.last_feedback = t->feedback ? t->feedback : "";
	row.session_id = t->session_id;
	rc = e->st->task_update(e->sctx, &row, err);
	free(spec);
	free(plan);
	return rc;
}

cJSON *sl_engine_task_event(const struct task *t, int with_title)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "task_id", t->id);
	if (with_title)
		cJSON_AddStringToObject(d, "title", t->title);
	cJSON_AddStringToObject(d, "state", sl_task_state_name(t));
	cJSON_AddNumberToObject(d, "revisions", t->revisions);
	cJSON_AddNumberToObject(d, "replans", t->replans);
	return d;
}

int sl_engine_set_task_state(struct sl_engine *e, struct task *t,
			     enum sl_task_state state,
			     struct sbxloop_error *err)
{
	int rc;

	/* lanes: the steering board reads other tasks' states */
	pthread_mutex_lock(&e->mu);
	t->state = state;
	pthread_mutex_unlock(&e->mu);
	rc = task_persist(e, t, err);
	if (rc < 0)
		return rc;
	if (state == SL_TASK_SKIPPED) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "task_id", t->id);
		cJSON_AddStringToObject(d, "title", t->title);
		cJSON_AddStringToObject(d, "state", sl_task_state_name(t));
		sl_engine_emit(e, SBXLOOP_EV_TASK_END, d);
	} else {
		sl_engine_emit(e, SBXLOOP_EV_TASK_STATE,
			       sl_engine_task_event(t, 0));
	}
	return 0;
}

void sl_task_set_feedback(struct task *t, const char *fb)
{
	free(t->feedback);
	t->feedback = sl_xstrdup(fb ? fb : "");
}

void sl_task_discard_plan(struct task *t)
{
	cJSON_Delete(t->plan);
	t->plan = NULL;
	t->revisions = 0;
	free(t->session_id);
	t->session_id = NULL;
}

/*
 * Test hook (docs/engine.md): SBXLOOP_TEST_KILL_AFTER=PHASE[:N] dies by
 * SIGKILL right after the N-th (default first) commit of a PHASE result
 * in this process, before the state change that follows it.
 */
static void kill_point(const char *phase)
{
	static int seen;
	const char *want = getenv("SBXLOOP_TEST_KILL_AFTER");
	size_t len = strlen(phase);

	if (!want || strncmp(want, phase, len) != 0 ||
	    (want[len] != '\0' && want[len] != ':'))
		return;
	if (++seen >= (want[len] == ':' ? atoi(want + len + 1) : 1))
		raise(SIGKILL);
}

int sl_engine_record_attempt(struct sl_engine *e, const char *task_id,
			     const char *phase, int attempt,
			     const char *status, const cJSON *output,
			     double started, struct sbxloop_error *err)
{
	struct sbxloop_attempt_row a;
	char *text =
		output ? cJSON_PrintUnformatted(output) : sl_xstrdup("{}");
	int rc;

	memset(&a, 0, sizeof(a));
	a.struct_size = sizeof(a);
	a.run_id = e->run_id;
	a.task_id = task_id;
	a.phase = phase;
	a.attempt = attempt;
	a.status = status;
	a.output_json = text;
	a.started_at = started;
	a.ended_at = sl_now();
	rc = e->st->attempt_record(e->sctx, &a, err);
	free(text);
	if (rc == 0)
		kill_point(phase);
	return rc;
}

static int latest_cb(void *user, const struct sbxloop_attempt_row *a)
{
	struct latest *l = user;

	l->found = 1;
	l->id = a->id;
	l->attempt = a->attempt;
	l->started_at = a->started_at;
	l->status = sl_xstrdup(a->status);
	l->output = a->output_json ? cJSON_Parse(a->output_json) : NULL;
	return 1;
}

int sl_engine_latest_attempt(struct sl_engine *e, const char *task_id,
			     const char *phase, struct latest *l,
			     struct sbxloop_error *err)
{
	int rc;

	memset(l, 0, sizeof(*l));
	rc = e->st->attempt_latest(e->sctx, e->run_id, task_id, phase,
				   latest_cb, l, err);
	if (rc == SBXLOOP_ENOTFOUND)
		return 0;
	return rc;
}

void sl_latest_release(struct latest *l)
{
	free(l->status);
	cJSON_Delete(l->output);
	memset(l, 0, sizeof(*l));
}

static int load_task_cb(void *user, const struct sbxloop_task_row *row)
{
	struct sl_engine *e = user;
	struct task *t;

	e->tasks = sl_xrealloc(e->tasks, (e->n_tasks + 1) * sizeof(*t));
	t = &e->tasks[e->n_tasks];
	memset(t, 0, sizeof(*t));
	t->spec = row->spec_json ? cJSON_Parse(row->spec_json) : NULL;
	if (!t->spec)
		t->spec = cJSON_CreateObject();
	if (!cJSON_GetObjectItemCaseSensitive(t->spec, "id"))
		cJSON_AddStringToObject(t->spec, "id", row->task_id);
	t->id = sl_json_str(t->spec, "id", "?");
	t->title = sl_json_str(t->spec, "title", t->id);
	t->state = sl_task_state_parse(row->state);
	if (t->state == SL_TASK_UNKNOWN)
		snprintf(t->unknown, sizeof(t->unknown), "%s",
			 row->state ? row->state : "");
	t->plan = row->plan_json ? cJSON_Parse(row->plan_json) : NULL;
	t->revisions = row->revisions;
	t->replans = row->replans;
	t->feedback = sl_xstrdup(row->last_feedback ? row->last_feedback : "");
	t->session_id = sl_xstrdup(row->session_id);
	t->order = row->order_idx;
	e->n_tasks++;
	return 0;
}

int sl_engine_load_tasks(struct sl_engine *e, struct sbxloop_error *err)
{
	sl_engine_tasks_clear(e);
	return e->st->tasks_list(e->sctx, e->run_id, load_task_cb, e, err);
}

struct task *sl_engine_find_task(struct sl_engine *e, const char *id)
{
	size_t i;

	for (i = 0; i < e->n_tasks; i++)
		if (strcmp(e->tasks[i].id, id) == 0)
			return &e->tasks[i];
	return NULL;
}

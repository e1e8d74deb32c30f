/*
 * The run driver and the per-task state machine (single lane). Owns run
 * and task states, budgets, revisions and replans, cancellation and the
 * wall clock, when the run's sandbox pair is provisioned and torn down
 * (provision.c does the work), and what is persisted when. Phase work is
 * delegated to phases.c. Called by the `run` and `resume` commands
 * (cmd_run.c).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>

#include "engine/engine.h"
#include "engine/artifacts.h"
#include "engine/egress.h"
#include "host/events.h"
#include "engine/guard.h"
#include "phases/phases.h"
#include "phases/prompt.h"
#include "engine/provision.h"
#include "host/redact.h"
#include "common/util.h"
#include "phases/worker_client.h"
#include "engine/workspace.h"

#define STATE_LEN 24

struct task {
	cJSON *spec;
	const char *id; /* borrowed from spec */
	const char *title;
	char state[STATE_LEN];
	cJSON *plan;
	int revisions;
	int replans;
	char *feedback;
	char *session_id;
	int order;
};

struct sl_engine {
	struct sl_core *core;
	const struct sbxloop_store_ops *st;
	void *sctx;
	const struct sbxloop_sandbox_ops *box;
	char run_id[32];
	char *outcome;
	char *workspace;
	char state[STATE_LEN];
	struct sl_pair *pair; /* the run's sandboxes and their secrets */
	struct sbxloop_sandbox_info info; /* the agent sandbox's, copied */
	char box_name[SBXLOOP_NAME_MAX];
	int have_box;
	const char *kept_reason;
	struct task *tasks;
	size_t n_tasks;
	double deadline;
	double started;
	volatile sig_atomic_t cancel;
	char **live; /* session ids this process created */
	size_t n_live;
	char *prompts_dir;
	/* egress: policy granters and the agent sandbox's grant ledger */
	struct sl_instance *granters;
	size_t n_granters;
	struct sl_egress_ledger *ledger;
	struct sl_egress_granter *chain;
	/* the signal path revokes open grants from the main thread */
	pthread_mutex_t ledger_lock;
	/* for the summary */
	char *fetch_cmd;
	char *artifacts_dir;
	char *artifacts_note;
	char **artifact_files;
	size_t n_artifact_files;
	size_t n_artifacts;
};

static const char *const terminal_task[] = {"done", "failed", "skipped"};

static int task_terminal(const struct task *t)
{
	size_t i;

	for (i = 0; i < 3; i++)
		if (strcmp(t->state, terminal_task[i]) == 0)
			return 1;
	return 0;
}

static const char *jstr(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

static void task_clear(struct task *t)
{
	cJSON_Delete(t->spec);
	cJSON_Delete(t->plan);
	free(t->feedback);
	free(t->session_id);
	memset(t, 0, sizeof(*t));
}

static void tasks_clear(struct sl_engine *e)
{
	size_t i;

	for (i = 0; i < e->n_tasks; i++)
		task_clear(&e->tasks[i]);
	free(e->tasks);
	e->tasks = NULL;
	e->n_tasks = 0;
}

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
	e->started = sl_monotonic();
	snprintf(e->state, sizeof(e->state), "created");
	e->prompts_dir = sl_xstrdup(sl_prompt_dir(core->cfg));
	return e;
}

void sl_engine_free(struct sl_engine *e)
{
	size_t i;

	if (!e)
		return;
	tasks_clear(e);
	sl_pair_free(e->pair);
	sl_worker_forget_resources();
	for (i = 0; i < e->n_live; i++)
		free(e->live[i]);
	free(e->live);
	free(e->outcome);
	free(e->workspace);
	free(e->prompts_dir);
	sl_egress_ledger_free(e->ledger);
	pthread_mutex_destroy(&e->ledger_lock);
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

/* ---- persistence -------------------------------------------------------- */

static int emit(struct sl_engine *e, const char *type, cJSON *data)
{
	return sl_emit(e->core, type, NULL, data);
}

static int run_set_state(struct sl_engine *e, const char *state,
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
	emit(e, SBXLOOP_EV_RUN_STATE, d);
	return 0;
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
	row.state = t->state;
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

static cJSON *task_event(const struct task *t, int with_title)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "task_id", t->id);
	if (with_title)
		cJSON_AddStringToObject(d, "title", t->title);
	cJSON_AddStringToObject(d, "state", t->state);
	cJSON_AddNumberToObject(d, "revisions", t->revisions);
	cJSON_AddNumberToObject(d, "replans", t->replans);
	return d;
}

static int task_set_state(struct sl_engine *e, struct task *t,
			  const char *state, struct sbxloop_error *err)
{
	int rc;

	snprintf(t->state, sizeof(t->state), "%s", state);
	rc = task_persist(e, t, err);
	if (rc < 0)
		return rc;
	if (strcmp(state, "skipped") == 0) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "task_id", t->id);
		cJSON_AddStringToObject(d, "title", t->title);
		cJSON_AddStringToObject(d, "state", state);
		emit(e, SBXLOOP_EV_TASK_END, d);
	} else {
		emit(e, SBXLOOP_EV_TASK_STATE, task_event(t, 0));
	}
	return 0;
}

static void set_feedback(struct task *t, const char *fb)
{
	free(t->feedback);
	t->feedback = sl_xstrdup(fb ? fb : "");
}

static void discard_plan(struct task *t)
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

static int record_attempt(struct sl_engine *e, const char *task_id,
			  const char *phase, int attempt, const char *status,
			  const cJSON *output, double started,
			  struct sbxloop_error *err)
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

struct latest {
	int found;
	int64_t id;
	int attempt;
	char *status;
	cJSON *output;
};

static int latest_cb(void *user, const struct sbxloop_attempt_row *a)
{
	struct latest *l = user;

	l->found = 1;
	l->id = a->id;
	l->attempt = a->attempt;
	l->status = sl_xstrdup(a->status);
	l->output = a->output_json ? cJSON_Parse(a->output_json) : NULL;
	return 1;
}

/* The newest attempt of `phase` for a task; l->found 0 when none. */
static int latest_attempt(struct sl_engine *e, const char *task_id,
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

static void latest_clear(struct latest *l)
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
	t->id = jstr(t->spec, "id", "?");
	t->title = jstr(t->spec, "title", t->id);
	snprintf(t->state, sizeof(t->state), "%s", row->state);
	t->plan = row->plan_json ? cJSON_Parse(row->plan_json) : NULL;
	t->revisions = row->revisions;
	t->replans = row->replans;
	t->feedback = sl_xstrdup(row->last_feedback ? row->last_feedback : "");
	t->session_id = sl_xstrdup(row->session_id);
	t->order = row->order_idx;
	e->n_tasks++;
	return 0;
}

static int load_tasks(struct sl_engine *e, struct sbxloop_error *err)
{
	tasks_clear(e);
	return e->st->tasks_list(e->sctx, e->run_id, load_task_cb, e, err);
}

static struct task *find_task(struct sl_engine *e, const char *id)
{
	size_t i;

	for (i = 0; i < e->n_tasks; i++)
		if (strcmp(e->tasks[i].id, id) == 0)
			return &e->tasks[i];
	return NULL;
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

static int boundary(struct sl_engine *e, struct sbxloop_error *err)
{
	struct state_probe p = {""};
	int rc;

	if (e->cancel)
		return sl_error(err, SBXLOOP_ECANCELLED,
				"run %s interrupted; resume with `sbxloop "
				"resume %s`",
				e->run_id, e->run_id);
	rc = e->st->run_get(e->sctx, e->run_id, probe_cb, &p, err);
	if (rc < 0)
		return rc;
	if (strcmp(p.state, "cancelled") == 0) {
		snprintf(e->state, sizeof(e->state), "cancelled");
		return sl_error(err, SBXLOOP_ECANCELLED,
				"run %s was cancelled", e->run_id);
	}
	if (sl_monotonic() > e->deadline) {
		double budget = sl_config_double(
			e->core->cfg, "budgets.max_wall_clock_s", 7200.0);
		char *why =
			sl_xasprintf("exceeded max_wall_clock_s=%g", budget);

		run_set_state(e, "failed", why, err);
		rc = sl_error(err, SBXLOOP_ETIMEDOUT, "%s", why);
		free(why);
		return rc;
	}
	return 0;
}

/* ---- the task state machine --------------------------------------------- */

static int session_live(const struct sl_engine *e, const char *sid)
{
	size_t i;

	for (i = 0; sid && i < e->n_live; i++)
		if (strcmp(e->live[i], sid) == 0)
			return 1;
	return 0;
}

static int budget(const struct sl_engine *e, const char *key, int dflt)
{
	return (int)sl_config_int(e->core->cfg, key, dflt);
}

static int register_revision(struct sl_engine *e, struct task *t,
			     const char *feedback, int verify_failure,
			     struct sbxloop_error *err)
{
	int max_rev = budget(e, "budgets.max_revisions_per_task", 2);
	int max_replans = budget(e, "budgets.max_replans_per_task", 1);

	t->revisions++;
	set_feedback(t, feedback);
	if (t->revisions <= max_rev)
		return task_set_state(e, t, "executing", err);
	if (verify_failure && t->replans < max_replans) {
		char *fb = sl_xasprintf(
			"every revision failed the same verify commands; "
			"write a plan whose steps and verify_commands agree "
			"on file locations and setup:\n\n%s",
			feedback);

		t->replans++;
		discard_plan(t);
		set_feedback(t, fb);
		free(fb);
		return task_set_state(e, t, "planning", err);
	}
	return task_set_state(e, t, "failed", err);
}

static void phase_ctx(struct sl_engine *e, const struct task *t,
		      struct sl_phase_ctx *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->core = e->core;
	pc->info = &e->info;
	pc->outcome = e->outcome;
	pc->prompts_dir = e->prompts_dir;
	pc->workspace = e->workspace;
	pc->task_id = t ? t->id : NULL;
}

static void emit_verdict(struct sl_engine *e, const struct task *t,
			 const char *phase, const cJSON *v)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "phase", phase);
	cJSON_AddStringToObject(d, "verdict", jstr(v, "verdict", ""));
	cJSON_AddStringToObject(d, "feedback", jstr(v, "feedback", ""));
	{
		const char *fb = jstr(v, "feedback", "");
		char *m = sl_xasprintf("%s: %s%s%s", phase,
				       jstr(v, "verdict", ""), *fb ? ": " : "",
				       fb);

		cJSON_AddStringToObject(d, "message", m);
		free(m);
	}
	cJSON_AddItemToObject(
		d, "issues",
		cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(v, "issues"),
				1));
	emit(e, SBXLOOP_EV_PHASE_VERDICT, d);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "downgraded"))) {
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "task_id", t->id);
		cJSON_AddStringToObject(d, "phase", phase);
		cJSON_AddStringToObject(d, "status", "degraded");
		cJSON_AddStringToObject(d, "message",
					"the reviewer's tools failed; its "
					"clean verdict was downgraded");
		emit(e, SBXLOOP_EV_PHASE_END, d);
	}
}

/*
 * The newest attempt of `phase` for the task when it is attempt `n` of
 * the current cycle, else l->found is 0. Plan and validate are numbered
 * by replan, so their numbers never repeat; execute, scrutinize and
 * verify are numbered by revision, which starts again with each plan, so
 * only an attempt newer than the newest plan attempt counts.
 */
static int committed(struct sl_engine *e, const struct task *t,
		     const char *phase, int n, struct latest *l,
		     struct sbxloop_error *err)
{
	int64_t after = 0;
	int rc;

	if (strcmp(phase, "plan") != 0 && strcmp(phase, "validate") != 0) {
		struct latest plan;

		rc = latest_attempt(e, t->id, "plan", &plan, err);
		if (rc < 0)
			return rc;
		after = plan.found ? plan.id : 0;
		latest_clear(&plan);
	}
	rc = latest_attempt(e, t->id, phase, l, err);
	if (rc < 0)
		return rc;
	if (l->found && (l->attempt != n || l->id <= after || !l->output))
		latest_clear(l);
	return 0;
}

/* A committed plan: the task executes it. Takes `plan`. */
static int apply_plan(struct sl_engine *e, struct task *t, cJSON *plan,
		      struct sbxloop_error *err)
{
	cJSON_Delete(t->plan);
	t->plan = plan;
	return task_set_state(e, t, "executing", err);
}

static int step_plan(struct sl_engine *e, struct task *t,
		     struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	double t0 = sl_now();
	cJSON *plan = NULL, *d;
	const cJSON *steps;
	int rc;

	phase_ctx(e, t, &pc);
	rc = sl_phase_plan(&pc, t->spec, t->feedback, &plan, err);
	if (rc < 0)
		return rc;
	steps = cJSON_GetObjectItemCaseSensitive(plan, "steps");
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddNumberToObject(d, "attempt", t->replans + 1);
	{
		char *m =
			sl_xasprintf("%d step(s)", cJSON_GetArraySize(steps));

		cJSON_AddStringToObject(d, "message", m);
		free(m);
	}
	cJSON_AddItemToObject(d, "steps", cJSON_Duplicate(steps, 1));
	cJSON_AddItemToObject(
		d, "expected_artifacts",
		cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
					plan, "expected_artifacts"),
				1));
	cJSON_AddItemToObject(d, "verify_commands",
			      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
						      plan, "verify_commands"),
					      1));
	cJSON_AddItemToObject(
		d, "egress",
		cJSON_Duplicate(
			cJSON_GetObjectItemCaseSensitive(plan, "egress"), 1));
	emit(e, SBXLOOP_EV_PHASE_PLAN, d);
	rc = record_attempt(e, t->id, "plan", t->replans + 1, "ok", plan, t0,
			    err);
	if (rc < 0) {
		cJSON_Delete(plan);
		return rc;
	}
	return apply_plan(e, t, plan, err);
}

/* verify_suspect (3.11): whether the flag is honoured, and why. */
struct suspect {
	int honored;
	const char *message;
	char *feedback; /* the replan's feedback when honoured */
};

static int suspect_judge(struct sl_engine *e, const struct task *t,
			 const cJSON *v, struct suspect *j,
			 struct sbxloop_error *err)
{
	int max_replans = budget(e, "budgets.max_replans_per_task", 1);
	const char *verdict = jstr(v, "verdict", "");
	const char *reason = jstr(v, "verify_suspect_reason", "");
	struct latest l;
	int evidence, rc;

	memset(j, 0, sizeof(*j));
	rc = latest_attempt(e, t->id, "verify", &l, err);
	if (rc < 0)
		return rc;
	evidence = l.found && l.status && strcmp(l.status, "failed") == 0 &&
		   l.attempt == t->revisions;
	j->honored = strcmp(verdict, "pass") == 0 && evidence &&
		     t->replans < max_replans;
	if (j->honored)
		j->message = "the reviewer judged the work right and the "
			     "check wrong; re-planning the verify commands";
	else if (strcmp(verdict, "pass") != 0)
		j->message = "not honoured: the verdict was revise";
	else if (!evidence)
		j->message = "not honoured: the check has not failed yet";
	else
		j->message = "not honoured: no replan budget left";
	if (j->honored)
		j->feedback = sl_xasprintf(
			"The reviewer judged the work correct and the verify "
			"check wrong: %s\nWrite verify commands that test "
			"what the task requires (prefer the project's own "
			"test runner).\n\nThe failing check:\n%s",
			reason, jstr(l.output, "feedback", ""));
	latest_clear(&l);
	return 0;
}

static int suspect_flagged(const cJSON *v)
{
	return cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(v, "verify_suspect"));
}

/* The verdict's events, appended before the verdict is committed. */
static int scrutiny_events(struct sl_engine *e, const struct task *t,
			   const cJSON *v, struct sbxloop_error *err)
{
	struct suspect j;
	cJSON *d;
	int rc;

	emit_verdict(e, t, "scrutinize", v);
	if (!suspect_flagged(v))
		return 0;
	rc = suspect_judge(e, t, v, &j, err);
	if (rc < 0)
		return rc;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "phase", "scrutinize");
	cJSON_AddStringToObject(d, "status", "verify_suspect");
	cJSON_AddBoolToObject(d, "honored", j.honored);
	cJSON_AddStringToObject(d, "message", j.message);
	emit(e, SBXLOOP_EV_PHASE_END, d);
	free(j.feedback);
	return 0;
}

/* A committed scrutiny verdict: replan, revise or go on to VERIFY. */
static int apply_scrutiny(struct sl_engine *e, struct task *t,
			  const cJSON *verdict, struct sbxloop_error *err)
{
	const char *fb;
	int rc;

	if (suspect_flagged(verdict)) {
		struct suspect j;

		rc = suspect_judge(e, t, verdict, &j, err);
		if (rc < 0)
			return rc;
		if (j.honored) {
			t->replans++;
			discard_plan(t);
			set_feedback(t, j.feedback);
			free(j.feedback);
			return task_set_state(e, t, "planning", err);
		}
	}
	if (strcmp(jstr(verdict, "verdict", ""), "revise") == 0) {
		fb = jstr(verdict, "feedback", "");
		return register_revision(
			e, t, *fb ? fb : "scrutiny found issues", 0, err);
	}
	set_feedback(t, "");
	return task_set_state(e, t, "verifying", err);
}

static int scrutinize(struct sl_engine *e, struct task *t, const char *report,
		      struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	double t0 = sl_now();
	cJSON *verdict = NULL;
	int rc;

	phase_ctx(e, t, &pc);
	rc = sl_phase_scrutinize(&pc, t->spec, t->plan, t->feedback, report,
				 &verdict, err);
	if (rc < 0)
		return rc;
	rc = scrutiny_events(e, t, verdict, err);
	if (rc == 0)
		rc = record_attempt(e, t->id, "scrutinize", t->revisions + 1,
				    jstr(verdict, "verdict", "?"), verdict, t0,
				    err);
	if (rc == 0)
		rc = apply_scrutiny(e, t, verdict, err);
	cJSON_Delete(verdict);
	return rc;
}

/* Revoke the open grants (task_id NULL: each its own); ledger_lock held. */
static void revoke_grants(struct sl_engine *e, const char *task_id)
{
	struct sbxloop_error rerr = {0, ""};

	if (sl_egress_revoke_all(e->ledger, task_id, &rerr) < 0)
		sl_log(SBXLOOP_LOG_WARN, "cannot revoke egress grants%s%s: %s",
		       task_id ? " of task " : "", task_id ? task_id : "",
		       rerr.message);
}

/* A committed EXECUTE: its session is the task's; its report is
 * reviewed next. */
static int apply_execute(struct sl_engine *e, struct task *t, const cJSON *out,
			 struct sbxloop_error *err)
{
	free(t->session_id);
	t->session_id = sl_xstrdup(jstr(out, "session_id", NULL));
	return task_set_state(e, t, "scrutinizing", err);
}

static int step_execute(struct sl_engine *e, struct task *t,
			struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct latest prior;
	char *report = NULL, *sid = NULL, *resume = NULL;
	cJSON *out = NULL;
	double t0 = sl_now();
	int rc;

	phase_ctx(e, t, &pc);
	/* only sessions this process started can be taken up again */
	if (t->session_id && session_live(e, t->session_id))
		resume = sl_xstrdup(t->session_id);
	rc = latest_attempt(e, t->id, "execute", &prior, err);
	if (rc < 0)
		goto out;
	if (e->ledger) {
		pthread_mutex_lock(&e->ledger_lock);
		rc = sl_egress_grant_all(
			e->ledger, t->id,
			cJSON_GetObjectItemCaseSensitive(t->plan, "egress"),
			err);
		if (rc < 0) /* take back what this entry opened */
			revoke_grants(e, t->id);
		pthread_mutex_unlock(&e->ledger_lock);
		if (rc < 0) {
			latest_clear(&prior);
			goto out;
		}
	}
	rc = sl_phase_execute(&pc, t->spec, t->plan, t->feedback,
			      jstr(prior.output, "report", ""), resume,
			      &report, &sid, err);
	latest_clear(&prior);
	if (e->ledger) {
		pthread_mutex_lock(&e->ledger_lock);
		revoke_grants(e, t->id);
		pthread_mutex_unlock(&e->ledger_lock);
	}
	if (rc < 0)
		goto out;
	if (sid && !session_live(e, sid)) {
		e->live = sl_xrealloc(e->live,
				      (e->n_live + 1) * sizeof(*e->live));
		e->live[e->n_live++] = sl_xstrdup(sid);
	}
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "report", report);
	if (sid)
		cJSON_AddStringToObject(out, "session_id", sid);
	else
		cJSON_AddNullToObject(out, "session_id");
	if (resume)
		cJSON_AddStringToObject(out, "resumed_session", resume);
	else
		cJSON_AddNullToObject(out, "resumed_session");
	rc = record_attempt(e, t->id, "execute", t->revisions + 1, "ok", out,
			    t0, err);
	if (rc < 0)
		goto out;
	rc = apply_execute(e, t, out, err);
	if (rc < 0)
		goto out;
	rc = scrutinize(e, t, report, err);
out:
	free(report);
	free(sid);
	free(resume);
	cJSON_Delete(out);
	return rc;
}

/* SCRUTINIZE after a resume: the report is the committed EXECUTE's. */
static int step_scrutinize(struct sl_engine *e, struct task *t,
			   struct sbxloop_error *err)
{
	struct latest l;
	int rc;

	rc = committed(e, t, "execute", t->revisions + 1, &l, err);
	if (rc < 0)
		return rc;
	if (!l.found) /* nothing committed to review */
		return task_set_state(e, t, "executing", err);
	rc = scrutinize(e, t, jstr(l.output, "report", ""), err);
	latest_clear(&l);
	return rc;
}

/* A committed VERIFY: on to VALIDATE, or a revision. */
static int apply_verify(struct sl_engine *e, struct task *t, const cJSON *out,
			struct sbxloop_error *err)
{
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "passed")))
		return task_set_state(e, t, "validating", err);
	return register_revision(e, t, jstr(out, "feedback", ""), 1, err);
}

static void verify_failed_event(struct sl_engine *e, const struct task *t,
				const cJSON *out)
{
	const char *fb = jstr(out, "feedback", "");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(out, "failed");
	int failed = f ? f->valueint : 1;
	const char *nl;
	char *msg;
	cJSON *d;

	if (strncmp(fb, "...(clipped)...\n", 16) == 0)
		fb += 16;
	nl = strchr(fb, '\n');
	msg = failed > 1 ? sl_xasprintf("%.*s (+%d more)",
					(int)(nl ? nl - fb : (long)strlen(fb)),
					fb, failed - 1)
			 : sl_xasprintf("%.*s",
					(int)(nl ? nl - fb : (long)strlen(fb)),
					fb);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "phase", "verify");
	cJSON_AddStringToObject(d, "status", "failed");
	cJSON_AddStringToObject(d, "message", msg);
	free(msg);
	emit(e, SBXLOOP_EV_PHASE_END, d);
}

static int step_verify(struct sl_engine *e, struct task *t,
		       struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	double t0 = sl_now();
	cJSON *out = NULL;
	int rc, passed;

	phase_ctx(e, t, &pc);
	rc = sl_phase_verify(&pc, t->spec, t->plan, &out, err);
	if (rc < 0)
		return rc;
	passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "passed"));
	if (!passed)
		verify_failed_event(e, t, out);
	rc = record_attempt(e, t->id, "verify", t->revisions + 1,
			    passed ? "ok" : "failed", out, t0, err);
	if (rc == 0)
		rc = apply_verify(e, t, out, err);
	cJSON_Delete(out);
	return rc;
}

/* A committed VALIDATE verdict: done, a replan, or failed. */
static int apply_validate(struct sl_engine *e, struct task *t,
			  const cJSON *verdict, struct sbxloop_error *err)
{
	const char *fb = jstr(verdict, "feedback", "");

	if (strcmp(jstr(verdict, "verdict", ""), "accept") == 0)
		return task_set_state(e, t, "done", err);
	t->replans++;
	if (t->replans > budget(e, "budgets.max_replans_per_task", 1)) {
		set_feedback(t, fb);
		return task_set_state(e, t, "failed", err);
	}
	set_feedback(t, *fb ? fb : "validation rejected the result");
	discard_plan(t);
	return task_set_state(e, t, "planning", err);
}

static int step_validate(struct sl_engine *e, struct task *t,
			 struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct latest l;
	double t0 = sl_now();
	cJSON *verdict = NULL;
	int rc;

	rc = latest_attempt(e, t->id, "verify", &l, err);
	if (rc < 0)
		return rc;
	if (!l.found || !l.output) {
		latest_clear(&l);
		return task_set_state(e, t, "verifying", err);
	}
	phase_ctx(e, t, &pc);
	rc = sl_phase_validate(&pc, t->spec, jstr(l.output, "results", ""),
			       &verdict, err);
	latest_clear(&l);
	if (rc < 0)
		return rc;
	emit_verdict(e, t, "validate", verdict);
	rc = record_attempt(e, t->id, "validate", t->replans + 1,
			    jstr(verdict, "verdict", "?"), verdict, t0, err);
	if (rc == 0)
		rc = apply_validate(e, t, verdict, err);
	cJSON_Delete(verdict);
	return rc;
}

/*
 * Resume: a phase whose result was committed is never run again. When
 * the process died between a phase's attempt row and the task's next
 * state, the stored result is applied as if the phase had just ended
 * (its events were appended before the row, so none are repeated). A
 * task in a later state whose plan row is missing takes the committed
 * plan, else plans again. Called once per task as it (re)starts.
 */
static int resume_committed(struct sl_engine *e, struct task *t,
			    struct sbxloop_error *err)
{
	int planning = strcmp(t->state, "planning") == 0;
	int later = !strcmp(t->state, "executing") ||
		    !strcmp(t->state, "scrutinizing") ||
		    !strcmp(t->state, "verifying") ||
		    !strcmp(t->state, "validating");
	struct latest l;
	int rc = 0;

	if (planning || (later && !t->plan)) {
		rc = committed(e, t, "plan", t->replans + 1, &l, err);
		if (rc < 0)
			return rc;
		if (l.found && planning) {
			rc = apply_plan(e, t, l.output, err);
			l.output = NULL;
		} else if (l.found) {
			t->plan = l.output;
			l.output = NULL;
		} else if (!planning) {
			rc = task_set_state(e, t, "planning", err);
		}
		latest_clear(&l);
		if (rc < 0 || planning || !t->plan)
			return rc;
	}
	if (!strcmp(t->state, "executing"))
		rc = committed(e, t, "execute", t->revisions + 1, &l, err);
	else if (!strcmp(t->state, "scrutinizing"))
		rc = committed(e, t, "scrutinize", t->revisions + 1, &l, err);
	else if (!strcmp(t->state, "verifying"))
		rc = committed(e, t, "verify", t->revisions + 1, &l, err);
	else if (!strcmp(t->state, "validating"))
		rc = committed(e, t, "validate", t->replans + 1, &l, err);
	else
		return 0;
	if (rc < 0 || !l.found)
		return rc;
	if (!strcmp(t->state, "executing"))
		rc = apply_execute(e, t, l.output, err);
	else if (!strcmp(t->state, "scrutinizing"))
		rc = apply_scrutiny(e, t, l.output, err);
	else if (!strcmp(t->state, "verifying"))
		rc = apply_verify(e, t, l.output, err);
	else
		rc = apply_validate(e, t, l.output, err);
	latest_clear(&l);
	return rc;
}

/*
 * The resource guard: when the sandbox's newest sample crossed an abort
 * limit, the task fails with a diagnosis instead of running on.
 */
static int resources_exhausted(struct sl_engine *e, struct task *t)
{
	char *why =
		sl_guard_diagnosis(sl_worker_last_resources(), e->core->cfg);

	if (!why)
		return 0;
	set_feedback(t, why);
	free(why);
	return 1;
}

static void harvest_task(struct sl_engine *e);

static int run_task(struct sl_engine *e, struct task *t,
		    struct sbxloop_error *err)
{
	cJSON *d;
	int rc = 0;

	if (strcmp(t->state, "pending") == 0) {
		rc = task_set_state(e, t, "planning", err);
		if (rc < 0)
			return rc;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "title", t->title);
	emit(e, SBXLOOP_EV_TASK_START, d);
	rc = resume_committed(e, t, err);
	if (rc < 0)
		return rc;

	while (!task_terminal(t)) {
		rc = boundary(e, err);
		if (rc < 0)
			return rc;
		if (resources_exhausted(e, t)) {
			rc = task_set_state(e, t, "failed", err);
			if (rc < 0)
				return rc;
			break;
		}
		if (!strcmp(t->state, "planning"))
			rc = step_plan(e, t, err);
		else if (!strcmp(t->state, "executing"))
			rc = step_execute(e, t, err);
		else if (!strcmp(t->state, "scrutinizing"))
			rc = step_scrutinize(e, t, err);
		else if (!strcmp(t->state, "verifying"))
			rc = step_verify(e, t, err);
		else if (!strcmp(t->state, "validating"))
			rc = step_validate(e, t, err);
		else
			rc = sl_error(err, SBXLOOP_ECORRUPT,
				      "task %s has the unknown state '%s'",
				      t->id, t->state);
		if (rc == SL_PHASE_ERESOURCES || rc == SL_PHASE_EBUDGET) {
			set_feedback(t, err->message);
			rc = task_set_state(e, t, "failed", err);
		}
		if (rc < 0)
			return rc;
	}
	harvest_task(e);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "title", t->title);
	cJSON_AddStringToObject(d, "state", t->state);
	emit(e, SBXLOOP_EV_TASK_END, d);
	return 0;
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

	rc = run_set_state(e, "decomposing", NULL, err);
	if (rc < 0)
		return rc;
	phase_ctx(e, NULL, &pc);
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
		rows[i].task_id =
			jstr(cJSON_GetArrayItem(list, (int)i), "id", "?");
		rows[i].order_idx = (int)i;
		rows[i].state = "pending";
		rows[i].spec_json = specs[i];
		rows[i].last_feedback = "";
	}
	rc = e->st->tasks_save(e->sctx, e->run_id, rows, n, err);
	if (rc < 0)
		goto out;
	rc = record_attempt(e, NULL, "decompose", 1, "ok", graph, t0, err);
	if (rc < 0)
		goto out;
	rc = load_tasks(e, err);
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
		emit(e, SBXLOOP_EV_TASK_STATE, task_event(&e->tasks[i], 1));
	msg = sl_xasprintf("%zu task(s)", e->n_tasks);
	cJSON_AddStringToObject(d, "message", msg);
	free(msg);
	arr = cJSON_AddArrayToObject(d, "tasks");
	for (i = 0; i < e->n_tasks; i++) {
		const struct task *t = &e->tasks[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "id", t->id);
		cJSON_AddStringToObject(o, "title", t->title);
		cJSON_AddStringToObject(o, "state", t->state);
		cJSON_AddItemToObject(
			o, "depends_on",
			cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
						t->spec, "depends_on"),
					1));
		cJSON_AddItemToArray(arr, o);
	}
	emit(e, SBXLOOP_EV_RUN_TASKS, d);
}

static int schedule(struct sl_engine *e, struct sbxloop_error *err)
{
	size_t i;
	int rc;

	for (i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		const cJSON *dep;
		int blocked = 0;

		if (task_terminal(t))
			continue;
		cJSON_ArrayForEach (dep, cJSON_GetObjectItemCaseSensitive(
						 t->spec, "depends_on")) {
			struct task *d = find_task(e, dep->valuestring);

			if (d && (!strcmp(d->state, "failed") ||
				  !strcmp(d->state, "skipped")))
				blocked = 1;
		}
		if (blocked) {
			rc = boundary(e, err);
			if (rc < 0)
				return rc;
			rc = task_set_state(e, t, "skipped", err);
		} else {
			rc = run_task(e, t, err);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

char *sl_worker_path(const struct sl_core *core)
{
	const char *p = sl_config_str(core->cfg, "worker_path");
	char self[PATH_MAX], *slash, *cand;
	static const char *const rel[] = {"sbxloop-worker",
					  "worker/sbxloop-worker",
					  "../worker/sbxloop-worker"};
	ssize_t n;
	size_t i;

	if (p && *p)
		return sl_xstrdup(p);
	p = getenv("SBXLOOP_WORKER");
	if (p && *p)
		return sl_xstrdup(p);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		for (i = 0; i < 3; i++) {
			cand = sl_xasprintf("%s/%s", self, rel[i]);
			if (access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
	}
	return sl_xstrdup(SBXLOOP_LIBEXECDIR "/sbxloop-worker");
}

/* A fresh run's workspace, resolved and isolated (a per-run clone). */
static char *fresh_workspace(struct sl_engine *e, struct sbxloop_error *err)
{
	const char *sd = sl_core_state_dir(e->core);
	struct sl_workspace ws;
	char *path;

	if (!sd) {
		sl_error(err, SBXLOOP_EINFRA,
			 "cannot create the state directory");
		return NULL;
	}
	if (sl_workspace_resolve(e->core->cfg, sd, e->run_id, &ws, err) < 0)
		return NULL;
	if (ws.warning)
		sl_log(SBXLOOP_LOG_WARN, "%s", ws.warning);
	if (ws.clone_event) {
		emit(e, SBXLOOP_EV_SANDBOX_WORKSPACE_CLONE, ws.clone_event);
		ws.clone_event = NULL;
	}
	free(e->fetch_cmd);
	e->fetch_cmd = ws.fetch_cmd;
	ws.fetch_cmd = NULL;
	path = ws.path;
	ws.path = NULL;
	sl_workspace_clear(&ws);
	return path;
}

static char *choose_workspace(struct sl_engine *e, const char *pinned,
			      struct sbxloop_error *err)
{
	char *path, *abs;
	int rc;

	if (!pinned || !*pinned)
		return fresh_workspace(e, err);
	path = sl_xstrdup(pinned);
	rc = sl_mkdirs(path, 0755);
	if (rc < 0) {
		sl_error(err, SBXLOOP_EINFRA,
			 "cannot create workspace '%s': %s", path,
			 strerror(-rc));
		free(path);
		return NULL;
	}
	abs = realpath(path, NULL);
	if (abs) {
		free(path);
		path = abs;
	}
	if (strcmp(path, pinned) != 0) {
		sl_error(err, SBXLOOP_ESTATE,
			 "workspace mismatch: the run used '%s' but it now "
			 "resolves to '%s'; refusing to continue in a "
			 "relocated workspace",
			 pinned, path);
		free(path);
		return NULL;
	}
	return path;
}

static void policy_event(void *user, const char *type, cJSON *data)
{
	struct sl_engine *e = user;

	emit(e, type, data);
}

/* The policy granters of plugins.policy and the agent's grant ledger. */
static int open_egress(struct sl_engine *e, struct sbxloop_error *err)
{
	struct sl_egress_granter *chain;
	const char **names;
	size_t n, i;
	int rc;

	names = sl_chain_names(e->core, "plugins.policy", SBXLOOP_KIND_POLICY,
			       1, &n);
	/* even an empty chain gets a ledger: its refusals are audited */
	e->granters = sl_xcalloc(n ? n : 1, sizeof(*e->granters));
	chain = sl_xcalloc(n ? n : 1, sizeof(*chain));
	for (i = 0; i < n; i++) {
		const char *name = names[i];

		rc = sl_core_instantiate(e->core, SBXLOOP_KIND_POLICY, name,
					 &e->granters[i], err);
		if (rc < 0) {
			free(chain);
			free(names);
			return rc;
		}
		e->n_granters++;
		chain[i].name = name;
		chain[i].ops = e->granters[i].ops;
		chain[i].ctx = e->granters[i].ctx;
	}
	/* the ledger borrows the chain for its life: keep it there */
	e->ledger = sl_egress_ledger_new(e->core->cfg, e->box_name, chain, n,
					 policy_event, e);
	e->chain = chain;
	free(names);
	return 0;
}

/*
 * Tokens first (nothing exists yet when one is missing), then the
 * workspace, then the pair with its secrets. A resume provisions a fresh
 * pair and hands it the tokens again.
 */
static int provision(struct sl_engine *e, const char *pinned,
		     struct sbxloop_error *err)
{
	const struct sbxloop_sandbox_info *agent;
	struct sbxloop_run_update u;
	int rc;

	if (!e->box)
		return sl_error(err, SBXLOOP_EINFRA,
				"no sandbox provider is active");
	rc = sl_pair_check_tokens(e->pair, err);
	if (rc < 0)
		return rc;
	e->workspace = choose_workspace(e, pinned, err);
	if (!e->workspace)
		return err->code ? err->code : SBXLOOP_EINFRA;
	/* decided before the pair exists: the signal path reads it */
	if (sl_config_bool(e->core->cfg, "keep_sandboxes", 0))
		e->kept_reason = "manual";
	rc = sl_pair_up(e->pair, e->run_id, e->workspace, &e->cancel, err);
	if (rc < 0)
		return rc;
	agent = sl_pair_agent(e->pair);
	e->info = *agent;
	snprintf(e->box_name, sizeof(e->box_name), "%s", agent->name);
	e->have_box = 1;
	rc = open_egress(e, err);
	if (rc < 0)
		return rc;

	memset(&u, 0, sizeof(u));
	u.struct_size = sizeof(u);
	u.run_id = e->run_id;
	u.fields = SBXLOOP_RUN_WORKSPACE;
	u.workspace = e->workspace;
	u.mounted = e->info.mounted;
	if (e->kept_reason) {
		u.fields |= SBXLOOP_RUN_KEPT;
		u.kept_reason = e->kept_reason;
	}
	return e->st->run_update(e->sctx, &u, NULL, 0, err);
}

static void keep_on_failure(struct sl_engine *e)
{
	struct sbxloop_run_update u;
	struct sbxloop_error err = {0, ""};
	const char *names[2];
	size_t n;
	cJSON *d;

	if (e->kept_reason || !e->have_box ||
	    !sl_config_bool(e->core->cfg, "keep_on_failure", 0))
		return;
	e->kept_reason = "debug";
	memset(&u, 0, sizeof(u));
	u.struct_size = sizeof(u);
	u.run_id = e->run_id;
	u.fields = SBXLOOP_RUN_KEPT;
	u.kept_reason = "debug";
	e->st->run_update(e->sctx, &u, NULL, 0, &err);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "reason", "debug");
	n = sl_pair_names(e->pair, names);
	cJSON_AddItemToObject(d, "sandboxes",
			      cJSON_CreateStringArray(names, (int)n));
	emit(e, SBXLOOP_EV_RUN_KEEP, d);
}

/*
 * Every secret revoked, then both sandboxes removed. Also called from the
 * signal path's thread while provisioning may be under way: the pair
 * then waits for it (cut short by the cancel flag) and removes what it
 * made.
 */
void sl_engine_teardown(struct sl_engine *e)
{
	/* an interrupted EXECUTE leaves no grant open, kept pair or not */
	if (e->ledger) {
		pthread_mutex_lock(&e->ledger_lock);
		revoke_grants(e, NULL);
		pthread_mutex_unlock(&e->ledger_lock);
	}
	if (e->kept_reason)
		return;
	e->have_box = 0;
	sl_pair_down(e->pair);
}

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
static void harvest_task(struct sl_engine *e)
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
	sl_artifacts_scan_clear(&scan);
	free(ex);
	free(dest);
}

/*
 * Where the run's results are, and run.artifacts: the live workspace
 * when it is mounted, else a harvest out of the sandbox. Best effort.
 */
static void report_artifacts(struct sl_engine *e)
{
	struct sl_artifact_scan scan;
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
	emit(e, SBXLOOP_EV_RUN_ARTIFACTS,
	     sl_artifacts_event_data(e->artifacts_dir, e->info.mounted, &scan,
				     sl_worker_last_resources()));
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
	sl_artifacts_scan_clear(&scan);
	free(ex);
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
	rc = run_set_state(e, "provisioning", NULL, err);
	if (rc < 0)
		return rc;
	rc = provision(e, pinned, err);
	if (rc < 0)
		goto fail;
	rc = load_tasks(e, err);
	if (rc < 0)
		goto fail;
	if (e->n_tasks == 0) {
		rc = boundary(e, err);
		if (rc < 0)
			goto fail;
		rc = decompose(e, err);
		if (rc < 0)
			goto fail;
	}
	rc = run_set_state(e, "running", NULL, err);
	if (rc < 0)
		goto fail;
	announce_roster(e);
	rc = schedule(e, err);
	if (rc < 0)
		goto fail;
	rc = run_set_state(e, "finalizing", NULL, err);
	if (rc < 0)
		goto fail;
	for (i = 0; i < e->n_tasks; i++)
		if (strcmp(e->tasks[i].state, "done") != 0)
			failed = 1;
	final = failed ? "failed" : "completed";
	report_artifacts(e);
	if (failed)
		keep_on_failure(e);
	sl_engine_teardown(e);
	rc = run_set_state(e, final,
			   failed ? "some tasks did not finish" : NULL, err);
	if (rc < 0)
		return rc;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "state", final);
	emit(e, SBXLOOP_EV_RUN_END, d);
	sl_bus_flush(e->core, err);
	return 0;
fail:
	if (!e->cancel)
		report_artifacts(e);
	if (rc != SBXLOOP_ECANCELLED || !e->cancel)
		keep_on_failure(e);
	sl_engine_teardown(e);
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
	row.state = "created";
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
	emit(e, SBXLOOP_EV_RUN_START, d);
	return drive(e, NULL, err);
}

struct run_info {
	int found;
	char state[STATE_LEN];
	char *outcome;
	char *workspace;
};

static int run_info_cb(void *user, const struct sbxloop_run_row *run)
{
	struct run_info *ri = user;

	ri->found = 1;
	snprintf(ri->state, sizeof(ri->state), "%s", run->state);
	ri->outcome = sl_xstrdup(run->outcome);
	ri->workspace = sl_xstrdup(run->workspace);
	return 0;
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
	static const char *const again[] = {"failed", "cancelled", NULL};
	struct run_info ri;
	cJSON *d;
	int rc;

	memset(&ri, 0, sizeof(ri));
	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	rc = e->st->run_get(e->sctx, run_id, run_info_cb, &ri, err);
	if (rc == SBXLOOP_ENOTFOUND || (rc == 0 && !ri.found)) {
		rc = sl_error(err, SBXLOOP_ENOTFOUND, "unknown run %s",
			      run_id);
		goto out;
	}
	if (rc < 0)
		goto out;
	snprintf(e->state, sizeof(e->state), "%s", ri.state);
	if (strcmp(ri.state, "completed") == 0) {
		rc = sl_error(err, SBXLOOP_ESTATE,
			      "run %s is already completed; nothing to "
			      "resume",
			      run_id);
		goto out;
	}
	rc = gc_guard(e, err);
	if (rc < 0)
		goto out;
	if (!strcmp(ri.state, "failed") || !strcmp(ri.state, "cancelled")) {
		struct sbxloop_run_update u;
		char prev[STATE_LEN] = "";

		memset(&u, 0, sizeof(u));
		u.struct_size = sizeof(u);
		u.run_id = run_id;
		u.fields = SBXLOOP_RUN_STATE;
		u.state = "provisioning";
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
	sl_core_set_run(e->core, e->run_id);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", e->outcome);
	cJSON_AddBoolToObject(d, "resumed", 1);
	emit(e, SBXLOOP_EV_RUN_START, d);
	rc = drive(e, ri.workspace, err);
out:
	free(ri.outcome);
	free(ri.workspace);
	return rc;
}

void sl_engine_print_summary(struct sl_engine *e, FILE *dest)
{
	size_t i, len = 0;
	double secs = sl_monotonic() - e->started;
	char *text = NULL, *shown;
	/*
	 * Titles and file names are agent text: the summary is built here
	 * and shown with secrets masked and control characters escaped.
	 */
	FILE *out = open_memstream(&text, &len);

	if (!out) {
		fputs("fatal: out of memory\n", stderr);
		abort();
	}
	fprintf(out, "run %s finished: %s\n", e->run_id, e->state);
	for (i = 0; i < e->n_tasks; i++) {
		char *id = sl_shown(e->tasks[i].id, 0);
		char *title = sl_shown(e->tasks[i].title, 0);

		fprintf(out, "  %s: %s  (%s)\n", id, e->tasks[i].state, title);
		free(id);
		free(title);
	}
	fprintf(out, "duration: %.1fs\n", secs);
	if (e->artifacts_dir && e->n_artifacts) {
		fprintf(out, "artifacts: %zu file(s) in %s (%s)\n",
			e->n_artifacts, e->artifacts_dir,
			e->info.mounted ? "live workspace" : "harvested");
		for (i = 0; i < e->n_artifact_files; i++) {
			char *name = sl_shown(e->artifact_files[i], 0);

			fprintf(out, "  %s\n", name);
			free(name);
		}
		if (e->n_artifacts > e->n_artifact_files)
			fprintf(out, "  ... +%zu more\n",
				e->n_artifacts - e->n_artifact_files);
		if (e->artifacts_note)
			fprintf(out, "  %s\n", e->artifacts_note);
	} else if (e->workspace) {
		fprintf(out, "artifacts: none produced (workspace: %s)\n",
			e->workspace);
	}
	if (e->workspace &&
	    (!e->artifacts_dir || strcmp(e->artifacts_dir, e->workspace) != 0))
		fprintf(out, "workspace: %s\n", e->workspace);
	if (e->fetch_cmd)
		fprintf(out, "bring the work back with: %s\n", e->fetch_cmd);
	if (e->kept_reason) {
		const char *names[2];
		size_t n = sl_pair_names(e->pair, names);

		fprintf(out,
			"kept sandbox%s: %s%s%s (sbxloop shell %s; sbxloop "
			"sandbox rm --run %s)\n",
			n > 1 ? "es" : "", n ? names[0] : e->box_name,
			n > 1 ? ", " : "", n > 1 ? names[1] : "", e->run_id,
			e->run_id);
	}
	fprintf(out, "events: sbxloop logs %s\n", e->run_id);
	fclose(out);
	shown = sl_shown(text, SL_TERM_KEEP_NL);
	fputs(shown, dest);
	free(shown);
	free(text);
}

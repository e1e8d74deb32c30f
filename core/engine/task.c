/*
 * The task state machine (single lane): one task from its stored state
 * to done, failed or skipped through the state table, with revisions,
 * replans, verify_suspect, the resource guard and resume of committed
 * phases. Phase work is delegated to phases/; what is stored, to
 * persist.c. Called by run.c (engine_internal.h) only.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/egress.h"
#include "engine/guard.h"
#include "host/events.h"
#include "common/util.h"
#include "phases/worker_client.h"

/* ---- the phases --------------------------------------------------------- */

static int session_live(struct sl_engine *e, const char *sid)
{
	size_t i;
	int live = 0;

	pthread_mutex_lock(&e->mu);
	for (i = 0; sid && i < e->n_live && !live; i++)
		live = strcmp(e->live[i], sid) == 0;
	pthread_mutex_unlock(&e->mu);
	return live;
}

static int register_revision(struct sl_engine *e, struct task *t,
			     const char *feedback, int verify_failure,
			     struct sbxloop_error *err)
{
	int max_rev = sl_engine_budget(e, "budgets.max_revisions_per_task", 2);
	int max_replans =
		sl_engine_budget(e, "budgets.max_replans_per_task", 1);

	t->revisions++;
	sl_task_set_feedback(t, feedback);
	if (t->revisions <= max_rev)
		return sl_engine_set_task_state(e, t, SL_TASK_EXECUTING, err);
	if (verify_failure && t->replans < max_replans) {
		char *fb = sl_xasprintf(
			"every revision failed the same verify commands; "
			"write a plan whose steps and verify_commands agree "
			"on file locations and setup:\n\n%s",
			feedback);

		t->replans++;
		sl_task_discard_plan(t);
		sl_task_set_feedback(t, fb);
		free(fb);
		return sl_engine_set_task_state(e, t, SL_TASK_PLANNING, err);
	}
	return sl_engine_set_task_state(e, t, SL_TASK_FAILED, err);
}

static void emit_verdict(struct sl_engine *e, const struct task *t,
			 const char *phase, const cJSON *v)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "phase", phase);
	cJSON_AddStringToObject(d, "verdict", sl_json_str(v, "verdict", ""));
	cJSON_AddStringToObject(d, "feedback", sl_json_str(v, "feedback", ""));
	{
		const char *fb = sl_json_str(v, "feedback", "");
		char *m = sl_xasprintf("%s: %s%s%s", phase,
				       sl_json_str(v, "verdict", ""),
				       *fb ? ": " : "", fb);

		cJSON_AddStringToObject(d, "message", m);
		free(m);
	}
	cJSON_AddItemToObject(
		d, "issues",
		cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(v, "issues"),
				1));
	sl_engine_emit(e, SBXLOOP_EV_PHASE_VERDICT, d);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "downgraded"))) {
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "task_id", t->id);
		cJSON_AddStringToObject(d, "phase", phase);
		cJSON_AddStringToObject(d, "status", "degraded");
		cJSON_AddStringToObject(d, "message",
					"the reviewer's tools failed; its "
					"clean verdict was downgraded");
		sl_engine_emit(e, SBXLOOP_EV_PHASE_END, d);
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
		     enum sl_task_state state, struct latest *l,
		     struct sbxloop_error *err)
{
	const struct sl_task_state_def *def = &sl_task_states[state];
	int n = (def->by_replan ? t->replans : t->revisions) + 1;
	int64_t after = 0;
	int rc;

	if (!def->by_replan) {
		struct latest plan;

		rc = sl_engine_latest_attempt(
			e, t->id, sl_task_states[SL_TASK_PLANNING].phase,
			&plan, err);
		if (rc < 0)
			return rc;
		after = plan.found ? plan.id : 0;
		sl_latest_release(&plan);
	}
	rc = sl_engine_latest_attempt(e, t->id, def->phase, l, err);
	if (rc < 0)
		return rc;
	if (l->found && (l->attempt != n || l->id <= after || !l->output))
		sl_latest_release(l);
	return 0;
}

/* A committed plan: the task executes it. Takes `plan`. */
static int apply_plan(struct sl_engine *e, struct task *t, cJSON *plan,
		      struct sbxloop_error *err)
{
	cJSON_Delete(t->plan);
	t->plan = plan;
	return sl_engine_set_task_state(e, t, SL_TASK_EXECUTING, err);
}

/* The table's form of apply_plan: `out` is borrowed, so copied. */
static int apply_committed_plan(struct sl_engine *e, struct task *t,
				const cJSON *out, struct sbxloop_error *err)
{
	return apply_plan(e, t, cJSON_Duplicate(out, 1), err);
}

static int step_plan(struct sl_engine *e, struct task *t,
		     struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	double t0 = sl_now();
	cJSON *plan = NULL, *d;
	const cJSON *steps;
	int rc;

	sl_engine_phase_ctx(e, t, &pc);
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
	sl_engine_emit(e, SBXLOOP_EV_PHASE_PLAN, d);
	rc = sl_engine_record_attempt(e, t->id, "plan", t->replans + 1, "ok",
				      plan, t0, err);
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
	int max_replans =
		sl_engine_budget(e, "budgets.max_replans_per_task", 1);
	const char *verdict = sl_json_str(v, "verdict", "");
	const char *reason = sl_json_str(v, "verify_suspect_reason", "");
	struct latest l;
	int evidence, rc;

	memset(j, 0, sizeof(*j));
	rc = sl_engine_latest_attempt(e, t->id, "verify", &l, err);
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
			reason, sl_json_str(l.output, "feedback", ""));
	sl_latest_release(&l);
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
	sl_engine_emit(e, SBXLOOP_EV_PHASE_END, d);
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
			sl_task_discard_plan(t);
			sl_task_set_feedback(t, j.feedback);
			free(j.feedback);
			return sl_engine_set_task_state(e, t, SL_TASK_PLANNING,
							err);
		}
	}
	if (strcmp(sl_json_str(verdict, "verdict", ""), "revise") == 0) {
		fb = sl_json_str(verdict, "feedback", "");
		return register_revision(
			e, t, *fb ? fb : "scrutiny found issues", 0, err);
	}
	sl_task_set_feedback(t, "");
	return sl_engine_set_task_state(e, t, SL_TASK_VERIFYING, err);
}

/*
 * The review of the EXECUTE that began at `since` (epoch seconds): its
 * evidence read by the lanes in process where they can, else by a job.
 */
static int scrutinize(struct sl_engine *e, struct task *t, const char *report,
		      double since, struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct sl_evidence ev;
	double t0 = sl_now();
	cJSON *verdict = NULL;
	int rc, have = sl_lanes_evidence(e, t, since, &ev) == 0;

	sl_engine_phase_ctx(e, t, &pc);
	rc = sl_phase_scrutinize(&pc, t->spec, t->plan, t->feedback, report,
				 have ? &ev : NULL, &verdict, err);
	sl_evidence_clear(&ev);
	if (rc < 0)
		return rc;
	rc = scrutiny_events(e, t, verdict, err);
	if (rc == 0)
		rc = sl_engine_record_attempt(
			e, t->id, "scrutinize", t->revisions + 1,
			sl_json_str(verdict, "verdict", "?"), verdict, t0,
			err);
	if (rc == 0)
		rc = apply_scrutiny(e, t, verdict, err);
	cJSON_Delete(verdict);
	return rc;
}

static int apply_execute(struct sl_engine *e, struct task *t, const cJSON *out,
			 struct sbxloop_error *err)
{
	free(t->session_id);
	t->session_id = sl_xstrdup(sl_json_str(out, "session_id", NULL));
	return sl_engine_set_task_state(e, t, SL_TASK_SCRUTINIZING, err);
}

static int step_execute(struct sl_engine *e, struct task *t,
			struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct latest prior;
	/* a lane's own sandbox has its own ledger (sandbox.lanes) */
	struct sl_egress_ledger *ledger =
		sl_lane_ledger(t) ? sl_lane_ledger(t) : e->ledger;
	char *report = NULL, *sid = NULL, *resume = NULL;
	cJSON *out = NULL;
	double t0 = sl_now();
	int rc;

	sl_engine_phase_ctx(e, t, &pc);
	/* only sessions this process started can be taken up again */
	if (t->session_id && session_live(e, t->session_id))
		resume = sl_xstrdup(t->session_id);
	rc = sl_engine_latest_attempt(e, t->id, "execute", &prior, err);
	if (rc < 0)
		goto out;
	if (ledger) {
		pthread_mutex_lock(&e->ledger_lock);
		rc = sl_egress_grant_all(
			ledger, t->id,
			cJSON_GetObjectItemCaseSensitive(t->plan, "egress"),
			err);
		if (rc < 0) /* take back what this entry opened */
			sl_engine_revoke_grants(e, ledger, t->id);
		pthread_mutex_unlock(&e->ledger_lock);
		if (rc < 0) {
			sl_latest_release(&prior);
			goto out;
		}
	}
	rc = sl_phase_execute(&pc, t->spec, t->plan, t->feedback,
			      sl_json_str(prior.output, "report", ""), resume,
			      &report, &sid, err);
	sl_latest_release(&prior);
	if (ledger) {
		pthread_mutex_lock(&e->ledger_lock);
		sl_engine_revoke_grants(e, ledger, t->id);
		pthread_mutex_unlock(&e->ledger_lock);
	}
	if (rc < 0)
		goto out;
	if (sid && !session_live(e, sid)) {
		pthread_mutex_lock(&e->mu);
		e->live = sl_xrealloc(e->live,
				      (e->n_live + 1) * sizeof(*e->live));
		e->live[e->n_live++] = sl_xstrdup(sid);
		pthread_mutex_unlock(&e->mu);
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
	rc = sl_engine_record_attempt(e, t->id, "execute", t->revisions + 1,
				      "ok", out, t0, err);
	if (rc < 0)
		goto out;
	rc = apply_execute(e, t, out, err);
	if (rc < 0)
		goto out;
	/*
	 * A phase boundary before the review (cancel, the wall clock,
	 * steering); a steered task left SCRUTINIZING for planning.
	 */
	rc = sl_engine_boundary(e, err);
	if (rc < 0 || t->state != SL_TASK_SCRUTINIZING)
		goto out;
	rc = scrutinize(e, t, report, t0, err);
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

	rc = committed(e, t, SL_TASK_EXECUTING, &l, err);
	if (rc < 0)
		return rc;
	if (!l.found) /* nothing committed to review */
		return sl_engine_set_task_state(e, t, SL_TASK_EXECUTING, err);
	rc = scrutinize(e, t, sl_json_str(l.output, "report", ""),
			l.started_at, err);
	sl_latest_release(&l);
	return rc;
}

/* A committed VERIFY: on to VALIDATE, or a revision. */
static int apply_verify(struct sl_engine *e, struct task *t, const cJSON *out,
			struct sbxloop_error *err)
{
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "passed")))
		return sl_engine_set_task_state(e, t, SL_TASK_VALIDATING, err);
	return register_revision(e, t, sl_json_str(out, "feedback", ""), 1,
				 err);
}

static void verify_failed_event(struct sl_engine *e, const struct task *t,
				const cJSON *out)
{
	const char *fb = sl_json_str(out, "feedback", "");
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
	sl_engine_emit(e, SBXLOOP_EV_PHASE_END, d);
}

static int step_verify(struct sl_engine *e, struct task *t,
		       struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	double t0 = sl_now();
	cJSON *out = NULL;
	int rc, passed;

	sl_engine_phase_ctx(e, t, &pc);
	rc = sl_phase_verify(&pc, t->spec, t->plan, &out, err);
	if (rc < 0)
		return rc;
	passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "passed"));
	if (!passed)
		verify_failed_event(e, t, out);
	rc = sl_engine_record_attempt(e, t->id, "verify", t->revisions + 1,
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
	const char *fb = sl_json_str(verdict, "feedback", "");

	if (strcmp(sl_json_str(verdict, "verdict", ""), "accept") == 0)
		return sl_engine_set_task_state(e, t, SL_TASK_DONE, err);
	t->replans++;
	if (t->replans >
	    sl_engine_budget(e, "budgets.max_replans_per_task", 1)) {
		sl_task_set_feedback(t, fb);
		return sl_engine_set_task_state(e, t, SL_TASK_FAILED, err);
	}
	sl_task_set_feedback(t, *fb ? fb : "validation rejected the result");
	sl_task_discard_plan(t);
	return sl_engine_set_task_state(e, t, SL_TASK_PLANNING, err);
}

static int step_validate(struct sl_engine *e, struct task *t,
			 struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct latest l;
	double t0 = sl_now();
	cJSON *verdict = NULL;
	int rc;

	rc = sl_engine_latest_attempt(e, t->id, "verify", &l, err);
	if (rc < 0)
		return rc;
	if (!l.found || !l.output) {
		sl_latest_release(&l);
		return sl_engine_set_task_state(e, t, SL_TASK_VERIFYING, err);
	}
	sl_engine_phase_ctx(e, t, &pc);
	rc = sl_phase_validate(&pc, t->spec,
			       sl_json_str(l.output, "results", ""), &verdict,
			       err);
	sl_latest_release(&l);
	if (rc < 0)
		return rc;
	emit_verdict(e, t, "validate", verdict);
	rc = sl_engine_record_attempt(e, t->id, "validate", t->replans + 1,
				      sl_json_str(verdict, "verdict", "?"),
				      verdict, t0, err);
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
	const struct sl_task_state_def *def;
	struct latest l;
	int rc;

	if (t->state == SL_TASK_UNKNOWN)
		return 0;
	def = &sl_task_states[t->state];
	if (!def->phase) /* pending or terminal: nothing was committed */
		return 0;
	if (t->state != SL_TASK_PLANNING && !t->plan) {
		rc = committed(e, t, SL_TASK_PLANNING, &l, err);
		if (rc < 0)
			return rc;
		if (l.found) {
			t->plan = l.output;
			l.output = NULL;
		} else {
			rc = sl_engine_set_task_state(e, t, SL_TASK_PLANNING,
						      err);
		}
		sl_latest_release(&l);
		if (rc < 0 || !t->plan)
			return rc;
	}
	/* what was committed after the plan acted on work that is gone */
	if (t->redo) {
		t->redo = 0;
		return 0;
	}
	rc = committed(e, t, t->state, &l, err);
	if (rc < 0 || !l.found)
		return rc;
	rc = def->apply(e, t, l.output, err);
	sl_latest_release(&l);
	return rc;
}

/* ---- the state table ---------------------------------------------------- */

/*
 * The task lifecycle: pending -> planning -> executing -> scrutinizing
 * -> verifying -> validating -> done, with revisions going back to
 * executing and replans to planning; failed and skipped end it early.
 */
const struct sl_task_state_def sl_task_states[SL_TASK_N_STATES] = {
	[SL_TASK_PENDING] = {SL_TASK_PENDING, SBXLOOP_TASK_PENDING, NULL, 0,
			     NULL, NULL},
	[SL_TASK_PLANNING] = {SL_TASK_PLANNING, SBXLOOP_TASK_PLANNING, "plan",
			      1, step_plan, apply_committed_plan},
	[SL_TASK_EXECUTING] = {SL_TASK_EXECUTING, SBXLOOP_TASK_EXECUTING,
			       "execute", 0, step_execute, apply_execute},
	[SL_TASK_SCRUTINIZING] = {SL_TASK_SCRUTINIZING,
				  SBXLOOP_TASK_SCRUTINIZING, "scrutinize", 0,
				  step_scrutinize, apply_scrutiny},
	[SL_TASK_VERIFYING] = {SL_TASK_VERIFYING, SBXLOOP_TASK_VERIFYING,
			       "verify", 0, step_verify, apply_verify},
	[SL_TASK_VALIDATING] = {SL_TASK_VALIDATING, SBXLOOP_TASK_VALIDATING,
				"validate", 1, step_validate, apply_validate},
	[SL_TASK_DONE] = {SL_TASK_DONE, SBXLOOP_TASK_DONE, NULL, 0, NULL,
			  NULL},
	[SL_TASK_FAILED] = {SL_TASK_FAILED, SBXLOOP_TASK_FAILED, NULL, 0, NULL,
			    NULL},
	[SL_TASK_SKIPPED] = {SL_TASK_SKIPPED, SBXLOOP_TASK_SKIPPED, NULL, 0,
			     NULL, NULL},
};

enum sl_task_state sl_task_state_parse(const char *name)
{
	int i;

	for (i = 0; name && i < SL_TASK_N_STATES; i++)
		if (strcmp(sl_task_states[i].name, name) == 0)
			return sl_task_states[i].state;
	return SL_TASK_UNKNOWN;
}

const char *sl_task_state_name(const struct task *t)
{
	if (t->state == SL_TASK_UNKNOWN)
		return t->unknown;
	return sl_task_states[t->state].name;
}

int sl_task_terminal(const struct task *t)
{
	return sbxloop_task_state_is_terminal(sl_task_state_name(t));
}

/* ---- driving one task --------------------------------------------------- */

/*
 * The resource guard: when the newest sample of the sandbox the task
 * works in (its lane's own with sandbox.lanes: per-lane) crossed an
 * abort limit, the task fails with a diagnosis instead of running on.
 */
static int resources_exhausted(struct sl_engine *e, struct task *t)
{
	const struct sbxloop_sandbox_info *lane = sl_lane_info(t);
	cJSON *sample = sl_worker_last_resources_copy(lane ? lane->name
							   : e->info.name);
	char *why = sl_guard_diagnosis(sample, e->core->cfg);

	cJSON_Delete(sample);

	if (!why)
		return 0;
	sl_task_set_feedback(t, why);
	free(why);
	return 1;
}

/* From the task's stored state to a terminal one, a boundary per step. */
static int run_steps(struct sl_engine *e, struct task *t,
		     struct sbxloop_error *err)
{
	int (*step)(struct sl_engine *, struct task *, struct sbxloop_error *);
	int rc = resume_committed(e, t, err);

	if (rc < 0)
		return rc;
	while (!sl_task_terminal(t)) {
		rc = sl_engine_boundary(e, err);
		if (rc < 0)
			return rc;
		if (resources_exhausted(e, t)) {
			rc = sl_engine_set_task_state(e, t, SL_TASK_FAILED,
						      err);
			if (rc < 0)
				return rc;
			break;
		}
		step = t->state == SL_TASK_UNKNOWN
			       ? NULL
			       : sl_task_states[t->state].step;
		if (step)
			rc = step(e, t, err);
		else
			rc = sl_error(err, SBXLOOP_ECORRUPT,
				      "task %s has the unknown state '%s'",
				      t->id, sl_task_state_name(t));
		if (rc == SL_PHASE_ERESOURCES || rc == SL_PHASE_EBUDGET) {
			sl_task_set_feedback(t, err->message);
			rc = sl_engine_set_task_state(e, t, SL_TASK_FAILED,
						      err);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sl_engine_run_task(struct sl_engine *e, struct task *t,
		       struct sbxloop_error *err)
{
	cJSON *d;
	int rc = 0;

	if (t->state == SL_TASK_PENDING) {
		rc = sl_engine_set_task_state(e, t, SL_TASK_PLANNING, err);
		if (rc < 0)
			return rc;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "title", t->title);
	sl_engine_emit(e, SBXLOOP_EV_TASK_START, d);
	if (!e->lanes_active) /* with lanes no task is "the" current one */
		e->current = t;
	rc = run_steps(e, t, err);
	if (!e->lanes_active)
		e->current = NULL;
	if (rc < 0)
		return rc;
	/*
	 * A lane's accepted task is harvested and ends once merged
	 * (lanes.c); any other lane task brings nothing to the workspace,
	 * and a harvest outside the merge lock could copy half a merge.
	 */
	if (!t->lane)
		sl_engine_task_end(e, t, sl_engine_harvest_task(e) > 0);
	else if (t->state != SL_TASK_DONE)
		sl_engine_task_end(e, t, 0);
	return 0;
}

void sl_engine_task_end(struct sl_engine *e, const struct task *t,
			int harvested)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "task_id", t->id);
	cJSON_AddStringToObject(d, "title", t->title);
	cJSON_AddStringToObject(d, "state", sl_task_state_name(t));
	if (harvested)
		cJSON_AddBoolToObject(d, "harvested", 1);
	sl_engine_emit(e, SBXLOOP_EV_TASK_END, d);
}

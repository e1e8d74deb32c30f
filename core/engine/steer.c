/*
 * Chat steering (UPSTREAM 3.13): the user's messages, queued in the
 * store's inbox by a sink's input line (host->chat_post, routed here
 * while the engine drives the run), plain stdin lines or `sbxloop steer`
 * from another shell, are answered at the next phase boundary, oldest
 * first. Each gets chat.message, a read-only STEER session (4.8) and its
 * verdict applied: continue; steer_task (the task under way plans again
 * with the user's feedback, no budget spent) or steer_run (standing
 * guidance kept on the run row and shown to every later prompt, across
 * resume); then a `steer` attempt, chat.action and chat.reply. A failed
 * session is reported and the run goes on. A message is marked taken
 * only once answered, so one queued while no process drives the run, or
 * cut off by Ctrl-C, is answered after `resume`.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <sbxloop/events.h>

#include "engine/engine_internal.h"
#include "host/redact.h"

#define STEER_FEEDBACK "user steering (must be honored): "

/* ---- the inbox ---------------------------------------------------------- */

static int has_inbox(const struct sl_engine *e)
{
	return SBXLOOP_HAS_SLOT(e->st, struct sbxloop_store_ops, inbox_push);
}

/* host->chat_post() while this engine drives its run (any thread). */
static int chat_hook(void *user, const char *text, int64_t *id,
		     struct sbxloop_error *err)
{
	struct sl_engine *e = user;

	return e->st->inbox_push(e->sctx, e->run_id, text, id, err);
}

void sl_engine_chat_open(struct sl_engine *e)
{
	if (has_inbox(e))
		sl_core_set_chat_hook(e->core, chat_hook, e);
}

void sl_engine_chat_close(struct sl_engine *e)
{
	sl_core_set_chat_hook(e->core, NULL, NULL);
}

int sl_engine_load_guidance(struct sl_engine *e, const char *json)
{
	cJSON *g = json && *json ? cJSON_Parse(json) : cJSON_CreateArray();
	const cJSON *it;

	if (!cJSON_IsArray(g)) {
		cJSON_Delete(g);
		sl_log(SBXLOOP_LOG_WARN,
		       "run %s: its stored guidance is not a JSON list; "
		       "starting without standing guidance",
		       e->run_id);
		g = cJSON_CreateArray();
	}
	cJSON_ArrayForEach (it, g)
		if (!cJSON_IsString(it)) {
			cJSON_Delete(g);
			g = cJSON_CreateArray();
			break;
		}
	cJSON_Delete(e->guidance);
	e->guidance = g;
	return 0;
}

/* ---- what the STEER session sees ---------------------------------------- */

static char *task_board(struct sl_engine *e)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	if (!e->n_tasks)
		return sl_xstrdup("(not decomposed yet: the outcome has no "
				  "tasks so far)");
	pthread_mutex_lock(&e->mu); /* lanes change their tasks' states */
	for (i = 0; i < e->n_tasks; i++)
		sl_buf_addf(&b, "%s- %s [%s] %s", i ? "\n" : "",
			    e->tasks[i].id, sl_task_state_name(&e->tasks[i]),
			    e->tasks[i].title);
	pthread_mutex_unlock(&e->mu);
	return sl_buf_detach(&b);
}

/* The task under way, if it is live: steer_task applies to it. */
static struct task *live_task(struct sl_engine *e)
{
	struct task *t = e->current;

	if (!t || sl_task_terminal(t) || t->state == SL_TASK_UNKNOWN)
		return NULL;
	return t;
}

static char *plan_steps(const cJSON *plan)
{
	struct sl_buf b = SL_BUF_INIT;
	const cJSON *it;

	cJSON_ArrayForEach (it,
			    cJSON_GetObjectItemCaseSensitive(plan, "steps"))
		if (cJSON_IsString(it))
			sl_buf_addf(&b, "%s- %s", b.len ? "\n" : "",
				    it->valuestring);
	if (!b.len)
		sl_buf_adds(&b, "(no plan yet)");
	return sl_buf_detach(&b);
}

static char *current_block(struct sl_engine *e)
{
	struct task *t = live_task(e);
	struct sl_buf b = SL_BUF_INIT;
	const char *desc;
	char *steps;

	if (!t)
		return sl_xstrdup("(between tasks: no task is under way)");
	desc = sl_json_str(t->spec, "description", "");
	steps = plan_steps(t->plan);
	sl_buf_addf(&b,
		    "id: %s\ntitle: %s\nstate: %s\nrevisions: %d\n"
		    "replans: %d\n\ndescription:\n%s\n\nplan steps:\n%s\n\n"
		    "prior feedback:\n%s",
		    t->id, t->title, sl_task_state_name(t), t->revisions,
		    t->replans, *desc ? desc : "(no further description)",
		    steps,
		    t->feedback && *t->feedback ? t->feedback : "(none)");
	free(steps);
	return sl_buf_detach(&b);
}

/* ---- applying a verdict ------------------------------------------------- */

static int add_guidance(struct sl_engine *e, const char *guidance,
			struct sbxloop_error *err)
{
	struct sbxloop_run_update u;
	char *json;
	int rc;

	cJSON_AddItemToArray(e->guidance, cJSON_CreateString(guidance));
	json = cJSON_PrintUnformatted(e->guidance);
	memset(&u, 0, sizeof(u));
	u.struct_size = sizeof(u);
	u.run_id = e->run_id;
	u.fields = SBXLOOP_RUN_GUIDANCE;
	u.guidance_json = json;
	rc = e->st->run_update(e->sctx, &u, NULL, 0, err);
	free(json);
	return rc;
}

/*
 * Apply `action` (steer_task downgrades to steer_run without a live
 * task); *applied is the action taken. chat.action says what changed.
 */
static int apply(struct sl_engine *e, const char *action, const char *guidance,
		 const char **applied, struct sbxloop_error *err)
{
	struct task *t = live_task(e);
	cJSON *d;
	char *msg;
	int rc;

	*applied = action;
	if (!strcmp(action, "continue"))
		return 0;
	if (!strcmp(action, "steer_task") && !t)
		*applied = action = "steer_run";
	d = cJSON_CreateObject();
	if (!strcmp(action, "steer_task")) {
		char *fb = sl_xasprintf(STEER_FEEDBACK "%s", guidance);

		sl_task_set_feedback(t, fb);
		free(fb);
		sl_task_discard_plan(t);
		rc = sl_engine_set_task_state(e, t, SL_TASK_PLANNING, err);
		if (rc < 0) {
			cJSON_Delete(d);
			return rc;
		}
		cJSON_AddStringToObject(d, "task_id", t->id);
		msg = sl_xasprintf("task %s plans again with your steering: "
				   "%s",
				   t->id, guidance);
	} else {
		rc = add_guidance(e, guidance, err);
		if (rc < 0) {
			cJSON_Delete(d);
			return rc;
		}
		msg = sl_xasprintf("standing guidance for the rest of the "
				   "run: %s",
				   guidance);
	}
	cJSON_AddStringToObject(d, "action", action);
	cJSON_AddStringToObject(d, "guidance", guidance);
	cJSON_AddStringToObject(d, "message", msg);
	free(msg);
	sl_engine_emit(e, SBXLOOP_EV_CHAT_ACTION, d);
	return 0;
}

/* ---- one message -------------------------------------------------------- */

struct pending {
	int64_t *ids;
	char **texts;
	size_t n;
};

static int pending_cb(void *user, const struct sbxloop_chat_row *m)
{
	struct pending *p = user;

	p->ids = sl_xrealloc(p->ids, (p->n + 1) * sizeof(*p->ids));
	p->texts = sl_xrealloc(p->texts, (p->n + 1) * sizeof(*p->texts));
	p->ids[p->n] = m->id;
	p->texts[p->n] = sl_xstrdup(m->text ? m->text : "");
	p->n++;
	return 0;
}

static void pending_release(struct pending *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->texts[i]);
	free(p->texts);
	free(p->ids);
	memset(p, 0, sizeof(*p));
}

static int answer(struct sl_engine *e, int64_t id, const char *text,
		  struct sbxloop_error *err)
{
	struct sl_phase_ctx pc;
	struct sbxloop_error serr = {0, ""};
	struct task *t = live_task(e);
	char *board = task_board(e), *cur = current_block(e);
	const char *applied = "error";
	cJSON *d, *verdict = NULL, *out;
	double t0 = sl_now();
	int rc;

	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "message_id", (double)id);
	cJSON_AddStringToObject(d, "text", text);
	if (t)
		cJSON_AddStringToObject(d, "task_id", t->id);
	sl_engine_emit(e, SBXLOOP_EV_CHAT_MESSAGE, d);
	sl_engine_phase_ctx(e, t, &pc);
	rc = sl_phase_steer(&pc, board, cur, text, &verdict, &serr);
	free(board);
	free(cur);
	if (rc < 0 && e->cancel) {
		/* cut off by Ctrl-C: the message waits for resume */
		sl_error(err, SBXLOOP_ECANCELLED, "%s", serr.message);
		return SBXLOOP_ECANCELLED;
	}
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "message", text);
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "message_id", (double)id);
	if (rc < 0) {
		cJSON_AddStringToObject(out, "error", serr.message);
		cJSON_AddStringToObject(d, "error", serr.message);
	} else {
		rc = apply(e, sl_json_str(verdict, "action", "continue"),
			   sl_json_str(verdict, "guidance", ""), &applied,
			   err);
		if (rc < 0) {
			cJSON_Delete(verdict);
			cJSON_Delete(out);
			cJSON_Delete(d);
			return rc;
		}
		cJSON_AddItemToObject(out, "verdict", verdict);
		cJSON_AddStringToObject(out, "applied", applied);
		cJSON_AddStringToObject(d, "reply",
					sl_json_str(verdict, "reply", ""));
		cJSON_AddStringToObject(d, "action", applied);
	}
	rc = sl_engine_record_attempt(e, t ? t->id : NULL, "steer",
				      ++e->steer_attempts, applied, out, t0,
				      err);
	cJSON_Delete(out);
	if (rc < 0) {
		cJSON_Delete(d);
		return rc;
	}
	sl_engine_emit(e, SBXLOOP_EV_CHAT_REPLY, d);
	return e->st->inbox_done(e->sctx, e->run_id, id, err);
}

int sl_engine_steer(struct sl_engine *e, struct sbxloop_error *err)
{
	struct pending p = {NULL, NULL, 0};
	size_t i;
	int rc;

	if (!has_inbox(e))
		return 0;
	/* lanes: whichever reaches a boundary first answers; others go on */
	if (pthread_mutex_trylock(&e->steer_lock) != 0)
		return 0;
	rc = e->st->inbox_pending(e->sctx, e->run_id, pending_cb, &p, err);
	for (i = 0; rc >= 0 && i < p.n; i++)
		rc = answer(e, p.ids[i], p.texts[i], err);
	pending_release(&p);
	pthread_mutex_unlock(&e->steer_lock);
	return rc < 0 ? rc : 0;
}

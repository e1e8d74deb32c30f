/*
 * The store guard (store_guard.h): a struct sbxloop_store_ops that masks
 * every registered secret in the text of every write before the store
 * plugin sees it, and again in every row and event a read hands back (a
 * secret registered after a row was written). Keys (run and task ids)
 * are masked the same way in writes and lookups, so they still match.
 * The core's own fixed words (state, phase, status, kept_reason, event
 * type) pass as they are. Installed only by sl_core_instantiate().
 *
 * A slot appended to struct sbxloop_store_ops must be forwarded here.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <sbxloop/store.h>

#include "host/redact.h"
#include "host/store_guard.h"
#include "common/util.h"

struct guard {
	const struct sbxloop_store_ops *ops; /* the plugin's */
	void *ctx;
};

/* ------------------------------------------------ masked copies */

/* The copies one call made; released when the call returns. */
struct scrub {
	char **owned;
	size_t n;
	size_t cap;
};

#define SCRUB_INIT                                                            \
	{                                                                     \
		NULL, 0, 0                                                    \
	}

/* text, or a masked copy of it owned by s. */
static const char *clean(struct scrub *s, const char *text)
{
	char *r = sl_redact_if_needed(text);

	if (!r)
		return text;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->owned = sl_xrealloc(s->owned, s->cap * sizeof(*s->owned));
	}
	s->owned[s->n++] = r;
	return r;
}

static void scrub_release(struct scrub *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->owned[i]);
	free(s->owned);
	memset(s, 0, sizeof(*s));
}

/* Bytes of a plugin's row to copy: its struct_size, at most ours. */
static size_t row_size(uint32_t struct_size, size_t ours)
{
	return struct_size && struct_size < ours ? struct_size : ours;
}

static void scrub_run(struct scrub *s, struct sbxloop_run_row *r)
{
	r->run_id = clean(s, r->run_id);
	r->outcome = clean(s, r->outcome);
	r->config_json = clean(s, r->config_json);
	r->workspace = clean(s, r->workspace);
	r->reason = clean(s, r->reason);
	r->guidance_json = clean(s, r->guidance_json);
}

static void scrub_task(struct scrub *s, struct sbxloop_task_row *t)
{
	t->run_id = clean(s, t->run_id);
	t->task_id = clean(s, t->task_id);
	t->spec_json = clean(s, t->spec_json);
	t->plan_json = clean(s, t->plan_json);
	t->last_feedback = clean(s, t->last_feedback);
	t->session_id = clean(s, t->session_id);
}

static void scrub_attempt(struct scrub *s, struct sbxloop_attempt_row *a)
{
	a->run_id = clean(s, a->run_id);
	a->task_id = clean(s, a->task_id);
	a->output_json = clean(s, a->output_json);
}

static void scrub_event(struct scrub *s, struct sbxloop_event *ev)
{
	ev->run_id = clean(s, ev->run_id);
	ev->job_id = clean(s, ev->job_id);
	ev->data_json = clean(s, ev->data_json);
	ev->json = clean(s, ev->json);
}

/* ------------------------------------------------ reads */

struct run_cb {
	int (*cb)(void *user, const struct sbxloop_run_row *run);
	void *user;
};

static int run_cb(void *user, const struct sbxloop_run_row *row)
{
	struct run_cb *w = user;
	struct sbxloop_run_row copy;
	struct scrub s = SCRUB_INIT;
	int rc;

	memset(&copy, 0, sizeof(copy));
	memcpy(&copy, row, row_size(row->struct_size, sizeof(copy)));
	scrub_run(&s, &copy);
	rc = w->cb(w->user, &copy);
	scrub_release(&s);
	return rc;
}

struct task_cb {
	int (*cb)(void *user, const struct sbxloop_task_row *task);
	void *user;
};

static int task_cb(void *user, const struct sbxloop_task_row *row)
{
	struct task_cb *w = user;
	struct sbxloop_task_row copy;
	struct scrub s = SCRUB_INIT;
	int rc;

	memset(&copy, 0, sizeof(copy));
	memcpy(&copy, row, row_size(row->struct_size, sizeof(copy)));
	scrub_task(&s, &copy);
	rc = w->cb(w->user, &copy);
	scrub_release(&s);
	return rc;
}

struct attempt_cb {
	int (*cb)(void *user, const struct sbxloop_attempt_row *a);
	void *user;
};

static int attempt_cb(void *user, const struct sbxloop_attempt_row *row)
{
	struct attempt_cb *w = user;
	struct sbxloop_attempt_row copy;
	struct scrub s = SCRUB_INIT;
	int rc;

	memset(&copy, 0, sizeof(copy));
	memcpy(&copy, row, row_size(row->struct_size, sizeof(copy)));
	scrub_attempt(&s, &copy);
	rc = w->cb(w->user, &copy);
	scrub_release(&s);
	return rc;
}

struct event_cb {
	int (*cb)(void *user, const struct sbxloop_event *ev);
	void *user;
};

static int event_cb(void *user, const struct sbxloop_event *row)
{
	struct event_cb *w = user;
	struct sbxloop_event copy;
	struct scrub s = SCRUB_INIT;
	int rc;

	memset(&copy, 0, sizeof(copy));
	memcpy(&copy, row, row_size(row->struct_size, sizeof(copy)));
	scrub_event(&s, &copy);
	rc = w->cb(w->user, &copy);
	scrub_release(&s);
	return rc;
}

/* ------------------------------------------------ the ops table */

static int guard_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	(void)host;
	*ctx = NULL;
	return sl_error(err, SBXLOOP_EUNSUPPORTED,
			"the store guard wraps a store; it is never created");
}

static void guard_destroy(void *ctx)
{
	struct guard *g = ctx;

	if (!g)
		return;
	if (g->ctx)
		g->ops->destroy(g->ctx);
	free(g);
}

static int guard_run_create(void *ctx, const struct sbxloop_run_row *run,
			    struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct sbxloop_run_row copy = *run;
	struct scrub s = SCRUB_INIT;
	int rc;

	scrub_run(&s, &copy);
	rc = g->ops->run_create(g->ctx, &copy, err);
	scrub_release(&s);
	return rc;
}

static int guard_run_update(void *ctx, const struct sbxloop_run_update *upd,
			    char *prev_state, size_t prev_state_len,
			    struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct sbxloop_run_update copy = *upd;
	struct scrub s = SCRUB_INIT;
	int rc;

	copy.run_id = clean(&s, copy.run_id);
	copy.reason = clean(&s, copy.reason);
	copy.workspace = clean(&s, copy.workspace);
	copy.guidance_json = clean(&s, copy.guidance_json);
	rc = g->ops->run_update(g->ctx, &copy, prev_state, prev_state_len,
				err);
	scrub_release(&s);
	return rc;
}

static int guard_run_get(void *ctx, const char *run_id,
			 int (*cb)(void *user,
				   const struct sbxloop_run_row *run),
			 void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct run_cb w = {cb, user};
	struct scrub s = SCRUB_INIT;
	int rc;

	rc = g->ops->run_get(g->ctx, clean(&s, run_id), run_cb, &w, err);
	scrub_release(&s);
	return rc;
}

static int guard_run_list(void *ctx,
			  int (*cb)(void *user,
				    const struct sbxloop_run_row *run),
			  void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct run_cb w = {cb, user};

	return g->ops->run_list(g->ctx, run_cb, &w, err);
}

static int guard_tasks_save(void *ctx, const char *run_id,
			    const struct sbxloop_task_row *tasks, size_t n,
			    struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct sbxloop_task_row *copy = NULL;
	struct scrub s = SCRUB_INIT;
	size_t i;
	int rc;

	if (n) {
		copy = sl_xmalloc(n * sizeof(*copy));
		memcpy(copy, tasks, n * sizeof(*copy));
		for (i = 0; i < n; i++)
			scrub_task(&s, &copy[i]);
	}
	rc = g->ops->tasks_save(g->ctx, clean(&s, run_id), n ? copy : tasks, n,
				err);
	free(copy);
	scrub_release(&s);
	return rc;
}

static int guard_task_update(void *ctx, const struct sbxloop_task_row *task,
			     struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct sbxloop_task_row copy = *task;
	struct scrub s = SCRUB_INIT;
	int rc;

	scrub_task(&s, &copy);
	rc = g->ops->task_update(g->ctx, &copy, err);
	scrub_release(&s);
	return rc;
}

static int guard_tasks_list(void *ctx, const char *run_id,
			    int (*cb)(void *user,
				      const struct sbxloop_task_row *task),
			    void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct task_cb w = {cb, user};
	struct scrub s = SCRUB_INIT;
	int rc;

	rc = g->ops->tasks_list(g->ctx, clean(&s, run_id), task_cb, &w, err);
	scrub_release(&s);
	return rc;
}

static int guard_attempt_record(void *ctx, struct sbxloop_attempt_row *attempt,
				struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct sbxloop_attempt_row copy = *attempt;
	struct scrub s = SCRUB_INIT;
	int rc;

	scrub_attempt(&s, &copy);
	rc = g->ops->attempt_record(g->ctx, &copy, err);
	attempt->id = copy.id;
	scrub_release(&s);
	return rc;
}

static int guard_attempt_latest(void *ctx, const char *run_id,
				const char *task_id, const char *phase,
				int (*cb)(void *user,
					  const struct sbxloop_attempt_row *a),
				void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct attempt_cb w = {cb, user};
	struct scrub s = SCRUB_INIT;
	int rc;

	rc = g->ops->attempt_latest(g->ctx, clean(&s, run_id),
				    clean(&s, task_id), phase, attempt_cb, &w,
				    err);
	scrub_release(&s);
	return rc;
}

static int guard_attempts_list(void *ctx, const char *run_id,
			       const char *task_id,
			       int (*cb)(void *user,
					 const struct sbxloop_attempt_row *a),
			       void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct attempt_cb w = {cb, user};
	struct scrub s = SCRUB_INIT;
	int rc;

	rc = g->ops->attempts_list(g->ctx, clean(&s, run_id),
				   clean(&s, task_id), attempt_cb, &w, err);
	scrub_release(&s);
	return rc;
}

static int guard_event_append(void *ctx, const struct sbxloop_event *ev,
			      int64_t *seq_out, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct sbxloop_event copy = *ev;
	struct scrub s = SCRUB_INIT;
	int rc;

	scrub_event(&s, &copy);
	rc = g->ops->event_append(g->ctx, &copy, seq_out, err);
	scrub_release(&s);
	return rc;
}

static int guard_flush(void *ctx, struct sbxloop_error *err)
{
	struct guard *g = ctx;

	return g->ops->flush(g->ctx, err);
}

static int guard_events_query(void *ctx, const struct sbxloop_event_query *q,
			      int (*cb)(void *user,
					const struct sbxloop_event *ev),
			      void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct event_cb w = {cb, user};
	struct sbxloop_event_query copy = *q;
	struct scrub s = SCRUB_INIT;
	int rc;

	copy.run_id = clean(&s, copy.run_id);
	copy.task_id = clean(&s, copy.task_id);
	rc = g->ops->events_query(g->ctx, &copy, event_cb, &w, err);
	scrub_release(&s);
	return rc;
}

static int guard_event_last_ts(void *ctx, const char *run_id, double *ts,
			       struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct scrub s = SCRUB_INIT;
	int rc;

	rc = g->ops->event_last_ts(g->ctx, clean(&s, run_id), ts, err);
	scrub_release(&s);
	return rc;
}

/* The inbox slots (1.6) are optional: a store without them refuses. */
static int no_inbox(const struct guard *g, struct sbxloop_error *err)
{
	(void)g;
	return sl_error(err, SBXLOOP_EUNSUPPORTED,
			"the store keeps no steering inbox (its plugin was "
			"built before SDK 1.6)");
}

static int guard_inbox_push(void *ctx, const char *run_id, const char *text,
			    int64_t *id_out, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct scrub s = SCRUB_INIT;
	int rc;

	if (!SBXLOOP_HAS_SLOT(g->ops, struct sbxloop_store_ops, inbox_push))
		return no_inbox(g, err);
	rc = g->ops->inbox_push(g->ctx, clean(&s, run_id), clean(&s, text),
				id_out, err);
	scrub_release(&s);
	return rc;
}

struct chat_cb {
	int (*cb)(void *user, const struct sbxloop_chat_row *msg);
	void *user;
};

static int chat_cb(void *user, const struct sbxloop_chat_row *row)
{
	struct chat_cb *w = user;
	struct sbxloop_chat_row copy;
	struct scrub s = SCRUB_INIT;
	int rc;

	memset(&copy, 0, sizeof(copy));
	memcpy(&copy, row, row_size(row->struct_size, sizeof(copy)));
	copy.struct_size = sizeof(copy);
	copy.run_id = clean(&s, copy.run_id);
	copy.text = clean(&s, copy.text);
	rc = w->cb(w->user, &copy);
	scrub_release(&s);
	return rc;
}

static int guard_inbox_pending(void *ctx, const char *run_id,
			       int (*cb)(void *user,
					 const struct sbxloop_chat_row *msg),
			       void *user, struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct chat_cb w = {cb, user};
	struct scrub s = SCRUB_INIT;
	int rc;

	if (!SBXLOOP_HAS_SLOT(g->ops, struct sbxloop_store_ops, inbox_pending))
		return no_inbox(g, err);
	rc = g->ops->inbox_pending(g->ctx, clean(&s, run_id), chat_cb, &w,
				   err);
	scrub_release(&s);
	return rc;
}

static int guard_inbox_done(void *ctx, const char *run_id, int64_t id,
			    struct sbxloop_error *err)
{
	struct guard *g = ctx;
	struct scrub s = SCRUB_INIT;
	int rc;

	if (!SBXLOOP_HAS_SLOT(g->ops, struct sbxloop_store_ops, inbox_done))
		return no_inbox(g, err);
	rc = g->ops->inbox_done(g->ctx, clean(&s, run_id), id, err);
	scrub_release(&s);
	return rc;
}

static const struct sbxloop_store_ops guard_ops = {
	.struct_size = sizeof(struct sbxloop_store_ops),
	.create = guard_create,
	.destroy = guard_destroy,
	.run_create = guard_run_create,
	.run_update = guard_run_update,
	.run_get = guard_run_get,
	.run_list = guard_run_list,
	.tasks_save = guard_tasks_save,
	.task_update = guard_task_update,
	.tasks_list = guard_tasks_list,
	.attempt_record = guard_attempt_record,
	.attempt_latest = guard_attempt_latest,
	.attempts_list = guard_attempts_list,
	.event_append = guard_event_append,
	.flush = guard_flush,
	.events_query = guard_events_query,
	.event_last_ts = guard_event_last_ts,
	.inbox_push = guard_inbox_push,
	.inbox_pending = guard_inbox_pending,
	.inbox_done = guard_inbox_done,
};

void sl_store_guard_wrap(struct sl_instance *inst)
{
	struct guard *g = sl_xcalloc(1, sizeof(*g));

	g->ops = inst->ops;
	g->ctx = inst->ctx;
	inst->ops = &guard_ops;
	inst->ctx = g;
}

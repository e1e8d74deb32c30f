/*
 * The dashboard's model (tui.h): what the status panel shows, updated
 * from one event at a time, and the panel's lines composed from it. No
 * terminal I/O and no locking here: tui.c holds its mutex around every
 * call.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
/* macros only: the one place each event type and state is spelled */
#include <sbxloop/events.h>
#include <sbxloop/states.h>

#include "tui.h"

#define OUTCOME_MAX 200
#define CHAT_SHOWN 3
/* leaves room for the gauges, grants, tokens, chat and input lines */
#define TASKS_SHOWN (TUI_MAX_LINES - 16)
#define CHAT_TEXT_MAX 120

static void set_str(char **dst, const char *src)
{
	char *copy;

	if (!src)
		return;
	copy = strdup(src);
	if (!copy)
		return;
	free(*dst);
	*dst = copy;
}

static const char *str(const cJSON *data, const char *key)
{
	return cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(data, key));
}

static int num(const cJSON *data, const char *key, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, key);

	if (!cJSON_IsNumber(v))
		return 0;
	*out = v->valuedouble;
	return 1;
}

static struct tui_task *task_of(struct tui_model *m, const char *id)
{
	struct tui_task *grown;
	size_t i;

	if (!id || !*id)
		return NULL;
	for (i = 0; i < m->n_tasks; i++)
		if (!strcmp(m->tasks[i].id, id))
			return &m->tasks[i];
	grown = realloc(m->tasks, (m->n_tasks + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	m->tasks = grown;
	memset(&m->tasks[m->n_tasks], 0, sizeof(*grown));
	m->tasks[m->n_tasks].id = strdup(id);
	if (!m->tasks[m->n_tasks].id)
		return NULL;
	return &m->tasks[m->n_tasks++];
}

static void update_task(struct tui_model *m, const cJSON *data,
			const char *id_key, double ts)
{
	struct tui_task *t = task_of(m, str(data, id_key));
	double d;

	if (!t)
		return;
	set_str(&t->title, str(data, "title"));
	if (str(data, "state") &&
	    (!t->state || strcmp(t->state, str(data, "state")) != 0))
		t->state_ts = ts;
	set_str(&t->state, str(data, "state"));
	if (num(data, "revisions", &d))
		t->revisions = (int)d;
	if (num(data, "replans", &d))
		t->replans = (int)d;
}

/* Roles stay sorted, so the gauge lines keep their order. */
static struct tui_gauge *gauge_of(struct tui_model *m, const char *role)
{
	struct tui_gauge *grown;
	size_t i, at;

	for (i = 0; i < m->n_gauges; i++)
		if (!strcmp(m->gauges[i].role, role))
			return &m->gauges[i];
	grown = realloc(m->gauges, (m->n_gauges + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	m->gauges = grown;
	for (at = 0; at < m->n_gauges && strcmp(grown[at].role, role) < 0;
	     at++)
		;
	memmove(&grown[at + 1], &grown[at],
		(m->n_gauges - at) * sizeof(*grown));
	memset(&grown[at], 0, sizeof(*grown));
	grown[at].role = strdup(role);
	if (!grown[at].role) {
		memmove(&grown[at], &grown[at + 1],
			(m->n_gauges - at) * sizeof(*grown));
		return NULL;
	}
	m->n_gauges++;
	return &grown[at];
}

static void update_gauge(struct tui_model *m, const cJSON *data)
{
	const char *role = str(data, "role");
	struct tui_gauge *g = gauge_of(m, role && *role ? role : "agent");
	const char *level = str(data, "level");

	if (!g)
		return;
	g->have_disk = num(data, "disk_used_pct", &g->disk);
	g->have_mem = num(data, "mem_used_pct", &g->mem);
	g->have_load = num(data, "load1", &g->load);
	g->level = level && !strcmp(level, "abort")  ? 2
		   : level && !strcmp(level, "warn") ? 1
						     : 0;
}

static void update_grants(struct tui_model *m, const char *domain, int add)
{
	size_t i;
	char **grown;

	if (!domain || !*domain)
		return;
	for (i = 0; i < m->n_grants && strcmp(m->grants[i], domain); i++)
		;
	if (!add) {
		if (i == m->n_grants)
			return;
		free(m->grants[i]);
		memmove(&m->grants[i], &m->grants[i + 1],
			(m->n_grants - i - 1) * sizeof(*m->grants));
		m->n_grants--;
		return;
	}
	if (i < m->n_grants)
		return;
	grown = realloc(m->grants, (m->n_grants + 1) * sizeof(*grown));
	if (!grown)
		return;
	m->grants = grown;
	grown[m->n_grants] = strdup(domain);
	if (grown[m->n_grants])
		m->n_grants++;
}

/* ------------------------------------------------------------- chat */

static struct tui_chat *chat_of(struct tui_model *m, long long id)
{
	size_t i;

	for (i = 0; i < m->n_chat; i++)
		if (m->chat[i].id == id)
			return &m->chat[i];
	return NULL;
}

static struct tui_chat *chat_add(struct tui_model *m, long long id,
				 const char *text)
{
	struct tui_chat *grown, *c = chat_of(m, id);

	if (c)
		return c;
	grown = realloc(m->chat, (m->n_chat + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	m->chat = grown;
	c = &grown[m->n_chat];
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->text = strdup(text ? text : "");
	if (!c->text)
		return NULL;
	m->n_chat++;
	return c;
}

void tui_model_chat_queued(struct tui_model *m, long long id, const char *text)
{
	chat_add(m, id, text);
	free(m->notice);
	m->notice = NULL;
}

void tui_model_set_notice(struct tui_model *m, const char *notice)
{
	free(m->notice);
	m->notice = notice ? strdup(notice) : NULL;
}

static void update_chat(struct tui_model *m, const char *type,
			const cJSON *data)
{
	struct tui_chat *c;
	double id;

	if (!num(data, "message_id", &id))
		return;
	if (!strcmp(type, SBXLOOP_EV_CHAT_MESSAGE)) {
		c = chat_add(m, (long long)id, str(data, "text"));
		if (c)
			c->answering = 1;
		return;
	}
	c = chat_of(m, (long long)id);
	if (!c)
		return;
	free(c->text);
	memmove(c, c + 1,
		(size_t)(&m->chat[m->n_chat] - (c + 1)) * sizeof(*c));
	m->n_chat--;
}

int tui_model_update(struct tui_model *m, const struct sbxloop_event *ev,
		     const cJSON *data)
{
	const char *t = ev->type;
	double d;

	if (ev->run_id && *ev->run_id && strcmp(m->run_id, ev->run_id))
		snprintf(m->run_id, sizeof(m->run_id), "%s", ev->run_id);
	if (!m->start_ts && ev->ts > 0)
		m->start_ts = ev->ts;
	if (!strcmp(t, SBXLOOP_EV_RUN_START)) {
		set_str(&m->outcome, str(data, "outcome"));
		if (ev->ts > 0)
			m->start_ts = ev->ts;
	} else if (!strcmp(t, SBXLOOP_EV_RUN_STATE) ||
		   !strcmp(t, SBXLOOP_EV_RUN_END) ||
		   !strcmp(t, SBXLOOP_EV_RUN_RECONCILED)) {
		if (str(data, "state"))
			set_str(&m->state, str(data, "state"));
		if (str(data, "reason") && *str(data, "reason"))
			set_str(&m->reason, str(data, "reason"));
	} else if (!strcmp(t, SBXLOOP_EV_TASK_START) ||
		   !strcmp(t, SBXLOOP_EV_TASK_STATE) ||
		   !strcmp(t, SBXLOOP_EV_TASK_END)) {
		update_task(m, data, "task_id", ev->ts);
	} else if (!strcmp(t, SBXLOOP_EV_RUN_TASKS)) {
		const cJSON *o;

		cJSON_ArrayForEach (
			o, cJSON_GetObjectItemCaseSensitive(data, "tasks"))
			update_task(m, o, "id", ev->ts);
	} else if (!strcmp(t, SBXLOOP_EV_SANDBOX_RESOURCES)) {
		update_gauge(m, data);
	} else if (!strcmp(t, SBXLOOP_EV_POLICY_ALLOW)) {
		update_grants(m, str(data, "domain"), 1);
	} else if (!strcmp(t, SBXLOOP_EV_POLICY_REVOKE)) {
		update_grants(m, str(data, "domain"), 0);
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_USAGE)) {
		if (num(data, "input_tokens", &d))
			m->tokens_in += (long long)d;
		if (num(data, "output_tokens", &d))
			m->tokens_out += (long long)d;
		m->have_tokens = 1;
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_MESSAGE) ||
		   !strcmp(t, SBXLOOP_EV_CHAT_REPLY)) {
		update_chat(m, t, data);
	} else {
		return 0;
	}
	return 1;
}

void tui_model_release(struct tui_model *m)
{
	size_t i;

	for (i = 0; i < m->n_tasks; i++) {
		free(m->tasks[i].id);
		free(m->tasks[i].title);
		free(m->tasks[i].state);
	}
	free(m->tasks);
	for (i = 0; i < m->n_chat; i++)
		free(m->chat[i].text);
	free(m->chat);
	free(m->notice);
	for (i = 0; i < m->n_gauges; i++)
		free(m->gauges[i].role);
	free(m->gauges);
	for (i = 0; i < m->n_grants; i++)
		free(m->grants[i]);
	free(m->grants);
	free(m->state);
	free(m->reason);
	free(m->outcome);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------ panel */

static void line_add(struct tui_lines *l, int style, const char *fmt, ...)
	SBXLOOP_PRINTF(3, 4);
static void line_add(struct tui_lines *l, int style, const char *fmt, ...)
{
	va_list ap;

	if (l->n >= TUI_MAX_LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(l->line[l->n].text, sizeof(l->line[l->n].text), fmt, ap);
	va_end(ap);
	l->line[l->n].style = style;
	l->line[l->n].tail = 0;
	l->n++;
}

static void clock_span(char *buf, size_t n, double s)
{
	long v = s < 0 ? 0 : (long)s;

	if (v >= 3600)
		snprintf(buf, n, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60,
			 v % 60);
	else
		snprintf(buf, n, "%ld:%02ld", v / 60, v % 60);
}

/* A row of the task table: its time in a working state last. */
static void task_line(const struct tui_task *t, double now,
		      struct tui_lines *out)
{
	const char *st = t->state ? t->state : SBXLOOP_TASK_PENDING;
	char *title = render_one_line(t->title ? t->title : "", 32, 1, 1);
	char rr[24], span[32] = "";

	snprintf(rr, sizeof(rr), "%d/%d", t->revisions, t->replans);
	if (t->state_ts > 0 && !sbxloop_task_state_is_terminal(st) &&
	    strcmp(st, SBXLOOP_TASK_PENDING) != 0)
		clock_span(span, sizeof(span), now - t->state_ts);
	line_add(out, render_task_style(st), "%-8s %-32s %-13s %-10s %s",
		 t->id, title ? title : "",
		 !strcmp(st, SBXLOOP_TASK_PENDING) ? "waiting" : st, rr, span);
	free(title);
}

/* Queued messages (three at most), a notice and the input line. */
static void chat_lines(const struct tui_model *m, struct tui_lines *out)
{
	size_t i;

	for (i = 0; i < m->n_chat && i < CHAT_SHOWN; i++) {
		const struct tui_chat *c = &m->chat[i];
		char *text = render_one_line(c->text, CHAT_TEXT_MAX, 1, 0);

		line_add(out, c->answering ? RENDER_CYAN : RENDER_DIM,
			 "%s #%lld: %s", c->answering ? "answering" : "queued",
			 c->id, text ? text : "");
		free(text);
	}
	if (m->n_chat > CHAT_SHOWN)
		line_add(out, RENDER_DIM, "+%zu more queued",
			 m->n_chat - CHAT_SHOWN);
	if (m->notice)
		line_add(out, RENDER_YELLOW, "not sent: %s", m->notice);
	if (m->input) {
		line_add(out, RENDER_BOLD, "steer> %s", m->input);
		if (out->n)
			out->line[out->n - 1].tail = 1;
	}
}

void tui_model_panel(const struct tui_model *m, double now,
		     struct tui_lines *out)
{
	char el[32], left[32], *outcome;
	size_t i;

	out->n = 0;
	line_add(out, RENDER_BOLD, "run %s  state: %s%s%s%s",
		 m->run_id[0] ? m->run_id : "\xe2\x80\xa6",
		 m->state ? m->state : SBXLOOP_RUN_CREATED,
		 m->reason ? " (" : "", m->reason ? m->reason : "",
		 m->reason ? ")" : "");
	clock_span(el, sizeof(el), m->start_ts ? now - m->start_ts : 0);
	if (m->budget_s > 0) {
		clock_span(left, sizeof(left),
			   m->budget_s -
				   (m->start_ts ? now - m->start_ts : 0));
		line_add(out, RENDER_DIM, "elapsed %s \xc2\xb7 %s left", el,
			 left);
	} else {
		line_add(out, RENDER_DIM, "elapsed %s", el);
	}
	outcome = render_one_line(m->outcome ? m->outcome : "", OUTCOME_MAX, 1,
				  0);
	if (outcome && *outcome)
		line_add(out, RENDER_DIM, "%s", outcome);
	free(outcome);
	line_add(out, RENDER_BOLD, "%-8s %-32s %-13s %-10s %s", "task",
		 "title", "state", "rev/replan", "in state");
	if (!m->n_tasks)
		line_add(out, RENDER_DIM, "%-8s %-32s %-13s", "\xe2\x80\xa6",
			 "decomposing outcome", "waiting");
	for (i = 0; i < m->n_tasks; i++) {
		if (i == TASKS_SHOWN && m->n_tasks > TASKS_SHOWN + 1) {
			line_add(out, RENDER_DIM, "+%zu more tasks",
				 m->n_tasks - TASKS_SHOWN);
			break;
		}
		task_line(&m->tasks[i], now, out);
	}
	for (i = 0; i < m->n_gauges; i++) {
		const struct tui_gauge *g = &m->gauges[i];
		static const int styles[] = {RENDER_DIM, RENDER_YELLOW,
					     RENDER_BOLD | RENDER_RED};
		static const char *const names[] = {"ok", "warn", "abort"};
		char disk[16] = "?", mem[16] = "?", load[16] = "?";

		if (g->have_disk)
			snprintf(disk, sizeof(disk), "%.0f%%", g->disk);
		if (g->have_mem)
			snprintf(mem, sizeof(mem), "%.0f%%", g->mem);
		if (g->have_load)
			snprintf(load, sizeof(load), "%.2f", g->load);
		line_add(out, styles[g->level],
			 "%s: disk %s \xc2\xb7 mem %s \xc2\xb7 load %s%s%s",
			 g->role, disk, mem, load,
			 g->level ? "  \xe2\x9a\xa0 " : "",
			 g->level ? names[g->level] : "");
	}
	if (m->n_grants) {
		char names[512] = "";
		size_t used = 0;

		for (i = 0; i < m->n_grants && used < sizeof(names); i++)
			used += (size_t)snprintf(names + used,
						 sizeof(names) - used, "%s%s",
						 i ? ", " : "", m->grants[i]);
		line_add(out, 0, "egress grants (%zu): %s", m->n_grants,
			 names);
	}
	if (m->have_tokens)
		line_add(out, RENDER_DIM, "tokens: %lld in \xc2\xb7 %lld out",
			 m->tokens_in, m->tokens_out);
	chat_lines(m, out);
}

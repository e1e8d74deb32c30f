/*
 * Declared versus observed egress of one run (`sbxloop egress RUN` and
 * the line the end-of-run summary prints): per task, what its plans
 * declared (the plan attempts' `egress`), what the ledger granted or
 * refused (policy.allow, policy.deny), and what the sandbox actually
 * attempted: connections a provider counted (policy.connect: the local
 * proxy) or logged (policy.observed: sbx's policy log) and attempts it
 * blocked (policy.blocked). Each observed host is matched to the
 * declared pattern that covers it, so the report can say which
 * declarations were never used and which hosts were tried without one.
 * Everything comes from the store, so it works after the run too.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/events.h>

#include "engine/egress_report.h"
#include "common/json.h"
#include "common/policy_patterns.h"
#include "common/util.h"

#define RUN_LEVEL "(run)"
#define BLOCKED_NAMES 3

/* The report's entry for `task_id` ("" or NULL: the run level). */
static cJSON *task_entry(cJSON *tasks, const char *task_id)
{
	const char *id = task_id && *task_id ? task_id : RUN_LEVEL;
	cJSON *t;

	cJSON_ArrayForEach (t, tasks)
		if (!strcmp(sl_json_str(t, "task_id", ""), id))
			return t;
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "task_id", id);
	cJSON_AddStringToObject(t, "title", "");
	cJSON_AddArrayToObject(t, "declared");
	cJSON_AddArrayToObject(t, "observed");
	cJSON_AddItemToArray(tasks, t);
	return t;
}

static cJSON *find_by(cJSON *list, const char *key, const char *value)
{
	cJSON *it;

	cJSON_ArrayForEach (it, list)
		if (!strcmp(sl_json_str(it, key, ""), value))
			return it;
	return NULL;
}

static void bump(cJSON *obj, const char *key, double by)
{
	cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsNumber(n))
		cJSON_SetNumberValue(n, n->valuedouble + by);
	else
		cJSON_AddNumberToObject(obj, key, by);
}

/* ---- reading the store -------------------------------------------------- */

/* A phase attempt's time window, to place traffic a substrate logged. */
struct window {
	char task_id[64];
	char phase[24];
	double from, to;
};

struct gather {
	cJSON *tasks;
	struct window *win;
	size_t n_win;
	struct sbxloop_error *err;
};

static int task_cb(void *user, const struct sbxloop_task_row *row)
{
	struct gather *g = user;
	cJSON *spec = cJSON_Parse(row->spec_json ? row->spec_json : "{}");
	cJSON *t = task_entry(g->tasks, row->task_id);

	cJSON_ReplaceItemInObjectCaseSensitive(
		t, "title",
		cJSON_CreateString(sl_json_str(spec, "title", "")));
	cJSON_Delete(spec);
	return 0;
}

/*
 * Every attempt's window; a plan attempt's egress entries, each once per
 * task.
 */
static int attempt_cb(void *user, const struct sbxloop_attempt_row *a)
{
	struct gather *g = user;
	cJSON *out, *t, *declared;
	const cJSON *e;

	if (a->task_id) {
		struct window *w;

		g->win = sl_xrealloc(g->win, (g->n_win + 1) * sizeof(*g->win));
		w = &g->win[g->n_win++];
		snprintf(w->task_id, sizeof(w->task_id), "%s", a->task_id);
		snprintf(w->phase, sizeof(w->phase), "%s", a->phase);
		w->from = a->started_at;
		w->to = a->ended_at;
	}
	if (strcmp(a->phase, "plan") != 0 || !a->task_id)
		return 0;
	out = cJSON_Parse(a->output_json ? a->output_json : "{}");
	t = task_entry(g->tasks, a->task_id);
	declared = cJSON_GetObjectItemCaseSensitive(t, "declared");
	cJSON_ArrayForEach (e,
			    cJSON_GetObjectItemCaseSensitive(out, "egress")) {
		const char *dom = sl_json_str(e, "domain", "");
		cJSON *d;

		if (!*dom || find_by(declared, "domain", dom))
			continue;
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "domain", dom);
		cJSON_AddStringToObject(d, "reason",
					sl_json_str(e, "reason", ""));
		cJSON_AddStringToObject(d, "decision", "not granted");
		cJSON_AddNumberToObject(d, "used", 0);
		cJSON_AddItemToArray(declared, d);
	}
	cJSON_Delete(out);
	return 0;
}

/* The observed entry of `host` in task `t` (made on first use). */
static cJSON *observed_of(cJSON *t, const char *host)
{
	cJSON *obs = cJSON_GetObjectItemCaseSensitive(t, "observed");
	cJSON *o = find_by(obs, "host", host);

	if (o)
		return o;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "host", host);
	cJSON_AddNumberToObject(o, "allowed", 0);
	cJSON_AddNumberToObject(o, "blocked", 0);
	cJSON_AddObjectToObject(o, "phases");
	cJSON_AddItemToArray(obs, o);
	return o;
}

static void observe(cJSON *t, const char *host, const char *phase, int allowed,
		    double count, const char *reason)
{
	cJSON *o = observed_of(t, host), *ph;

	bump(o, allowed ? "allowed" : "blocked", count);
	ph = cJSON_GetObjectItemCaseSensitive(o, "phases");
	if (phase && *phase) {
		cJSON *p = cJSON_GetObjectItemCaseSensitive(ph, phase);

		if (!p)
			p = cJSON_AddObjectToObject(ph, phase);
		bump(p, allowed ? "allowed" : "blocked", count);
	}
	if (!allowed && reason && *reason &&
	    !cJSON_GetObjectItemCaseSensitive(o, "reason"))
		cJSON_AddStringToObject(o, "reason", reason);
}

/* sbx reports "allow"/"allowed", "block"/"blocked"/"deny"/"denied". */
static int decision_allows(const char *d)
{
	return d && (!strncmp(d, "allow", 5) || !strcmp(d, "permit"));
}

/* The attempt whose window holds `ts` (a substrate's log entry). */
static const struct window *placed(const struct gather *g, double ts)
{
	size_t i;

	for (i = 0; ts > 0 && i < g->n_win; i++)
		if (ts >= g->win[i].from && ts <= g->win[i].to)
			return &g->win[i];
	return NULL;
}

static int event_cb(void *user, const struct sbxloop_event *ev)
{
	struct gather *g = user;
	cJSON *d = cJSON_Parse(ev->data_json ? ev->data_json : "{}");
	const char *type = ev->type, *dom = sl_json_str(d, "domain", "");
	const char *task = sl_json_str(d, "task_id", "");
	const char *phase = sl_json_str(d, "phase", "");
	cJSON *t;

	if (!*dom) {
		cJSON_Delete(d);
		return 0;
	}
	if (!*task && !strcmp(type, SBXLOOP_EV_POLICY_OBSERVED)) {
		/* aggregated by sbx: placed by when it was first seen */
		const struct window *w =
			placed(g, sl_json_num(d, "first_ts", 0));

		if (w) {
			task = w->task_id;
			phase = w->phase;
		}
	}
	t = task_entry(g->tasks, task);
	if (!strcmp(type, SBXLOOP_EV_POLICY_ALLOW) ||
	    !strcmp(type, SBXLOOP_EV_POLICY_DENY)) {
		cJSON *declared =
			cJSON_GetObjectItemCaseSensitive(t, "declared");
		cJSON *e = find_by(declared, "domain", dom);

		if (e) {
			cJSON_ReplaceItemInObjectCaseSensitive(
				e, "decision",
				cJSON_CreateString(
					!strcmp(type, SBXLOOP_EV_POLICY_ALLOW)
						? "granted"
						: "refused"));
			if (!strcmp(type, SBXLOOP_EV_POLICY_DENY) &&
			    !cJSON_GetObjectItemCaseSensitive(e, "why"))
				cJSON_AddStringToObject(
					e, "why",
					sl_json_str(d, "message", ""));
		}
	} else if (!strcmp(type, SBXLOOP_EV_POLICY_BLOCKED)) {
		observe(t, dom, phase, 0, 1, sl_json_str(d, "reason", ""));
	} else if (!strcmp(type, SBXLOOP_EV_POLICY_CONNECT)) {
		observe(t, dom, phase, 1, sl_json_num(d, "count", 1), NULL);
	} else if (!strcmp(type, SBXLOOP_EV_POLICY_OBSERVED)) {
		observe(t, dom, phase,
			decision_allows(sl_json_str(d, "decision", "")),
			sl_json_num(d, "count", 1),
			sl_json_str(d, "reason", ""));
	}
	cJSON_Delete(d);
	return 0;
}

/* ---- matching observed hosts to declarations --------------------------- */

static void match(cJSON *report)
{
	cJSON *t, *o, *e;
	cJSON *unused = cJSON_AddArrayToObject(report, "declared_unused");
	cJSON *blocked = cJSON_AddArrayToObject(report, "blocked_undeclared");

	cJSON_ArrayForEach (
		t, cJSON_GetObjectItemCaseSensitive(report, "tasks")) {
		cJSON *declared =
			cJSON_GetObjectItemCaseSensitive(t, "declared");

		cJSON_ArrayForEach (
			o, cJSON_GetObjectItemCaseSensitive(t, "observed")) {
			const char *host = sl_json_str(o, "host", "");
			const char *by = NULL;

			cJSON_ArrayForEach (e, declared)
				if (sl_pattern_covers(
					    sl_json_str(e, "domain", ""),
					    host)) {
					by = sl_json_str(e, "domain", "");
					bump(e, "used",
					     sl_json_num(o, "allowed", 0));
					break;
				}
			if (by)
				cJSON_AddStringToObject(o, "declared_by", by);
			else
				cJSON_AddNullToObject(o, "declared_by");
			if (!by && sl_json_num(o, "blocked", 0) > 0 &&
			    !find_by(blocked, "host", host)) {
				cJSON *b = cJSON_CreateObject();

				cJSON_AddStringToObject(b, "host", host);
				cJSON_AddStringToObject(
					b, "task_id",
					sl_json_str(t, "task_id", ""));
				cJSON_AddNumberToObject(
					b, "attempts",
					sl_json_num(o, "blocked", 0));
				cJSON_AddItemToArray(blocked, b);
			}
		}
		cJSON_ArrayForEach (e, declared)
			if (!strcmp(sl_json_str(e, "decision", ""),
				    "granted") &&
			    sl_json_num(e, "used", 0) == 0) {
				cJSON *u = cJSON_CreateObject();

				cJSON_AddStringToObject(
					u, "domain",
					sl_json_str(e, "domain", ""));
				cJSON_AddStringToObject(
					u, "task_id",
					sl_json_str(t, "task_id", ""));
				cJSON_AddItemToArray(unused, u);
			}
	}
}

int sl_egress_report(const struct sbxloop_store_ops *st, void *sctx,
		     const char *run_id, cJSON **out,
		     struct sbxloop_error *err)
{
	struct sbxloop_event_query q;
	struct gather g;
	cJSON *report = cJSON_CreateObject();
	int rc;

	*out = NULL;
	cJSON_AddStringToObject(report, "run_id", run_id);
	g.tasks = cJSON_AddArrayToObject(report, "tasks");
	g.win = NULL;
	g.n_win = 0;
	g.err = err;
	rc = st->tasks_list(sctx, run_id, task_cb, &g, err);
	if (rc == 0)
		rc = st->attempts_list(sctx, run_id, NULL, attempt_cb, &g,
				       err);
	if (rc == 0) {
		memset(&q, 0, sizeof(q));
		q.struct_size = sizeof(q);
		q.run_id = run_id;
		q.type_prefix = SBXLOOP_EV_FAMILY_POLICY;
		rc = st->events_query(sctx, &q, event_cb, &g, err);
	}
	free(g.win);
	if (rc < 0) {
		cJSON_Delete(report);
		return rc;
	}
	match(report);
	*out = report;
	return 0;
}

/* ---- text --------------------------------------------------------------- */

static void phases_text(FILE *f, const cJSON *o, const char *key)
{
	const cJSON *p;
	int first = 1;

	cJSON_ArrayForEach (p, cJSON_GetObjectItemCaseSensitive(o, "phases")) {
		double n = sl_json_num(p, key, 0);

		if (n <= 0)
			continue;
		fprintf(f, "%s%.0f in %s", first ? " (" : ", ", n, p->string);
		first = 0;
	}
	if (!first)
		fputc(')', f);
}

void sl_egress_report_print(const cJSON *report, FILE *f)
{
	const cJSON *t, *e, *o;

	fprintf(f, "egress of run %s: declared, granted and attempted\n",
		sl_json_str(report, "run_id", "?"));
	cJSON_ArrayForEach (
		t, cJSON_GetObjectItemCaseSensitive(report, "tasks")) {
		const cJSON *declared =
			cJSON_GetObjectItemCaseSensitive(t, "declared");
		const cJSON *observed =
			cJSON_GetObjectItemCaseSensitive(t, "observed");

		if (!cJSON_GetArraySize(declared) &&
		    !cJSON_GetArraySize(observed))
			continue;
		fprintf(f, "%s  %s\n", sl_json_str(t, "task_id", ""),
			sl_json_str(t, "title", ""));
		cJSON_ArrayForEach (e, declared) {
			double used = sl_json_num(e, "used", 0);

			fprintf(f, "  declared  %-32s %-11s ",
				sl_json_str(e, "domain", ""),
				sl_json_str(e, "decision", ""));
			if (used > 0)
				fprintf(f, "used %.0f time(s)\n", used);
			else
				fputs("never used\n", f);
		}
		cJSON_ArrayForEach (o, observed) {
			double a = sl_json_num(o, "allowed", 0);
			double b = sl_json_num(o, "blocked", 0);
			int declared_by = cJSON_IsString(
				cJSON_GetObjectItemCaseSensitive(
					o, "declared_by"));

			if (declared_by && b <= 0)
				continue; /* counted on its declaration */
			if (a > 0) {
				fprintf(f, "  %-9s %-32s allowed %.0f",
					declared_by ? "declared" : "baseline",
					sl_json_str(o, "host", ""), a);
				phases_text(f, o, "allowed");
				fputc('\n', f);
			}
			if (b > 0) {
				fprintf(f, "  attempted %-32s BLOCKED %.0f",
					sl_json_str(o, "host", ""), b);
				phases_text(f, o, "blocked");
				fputs(declared_by
					      ? "\n"
					      : "  (not declared by any plan)\n",
				      f);
			}
		}
	}
	o = cJSON_GetObjectItemCaseSensitive(report, "declared_unused");
	fprintf(f,
		"declared but never used: %d; attempted but blocked "
		"without a declaration: %d\n",
		cJSON_GetArraySize(o),
		cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			report, "blocked_undeclared")));
}

char *sl_egress_report_blocked_line(const cJSON *report)
{
	const cJSON *b =
		cJSON_GetObjectItemCaseSensitive(report, "blocked_undeclared");
	const cJSON *it;
	struct sl_buf names = SL_BUF_INIT;
	double attempts = 0;
	int n = cJSON_GetArraySize(b), i = 0;
	char *line;

	if (n == 0)
		return NULL;
	cJSON_ArrayForEach (it, b) {
		attempts += sl_json_num(it, "attempts", 0);
		if (i++ < BLOCKED_NAMES)
			sl_buf_addf(&names, "%s%s", i > 1 ? ", " : "",
				    sl_json_str(it, "host", ""));
	}
	if (n > BLOCKED_NAMES)
		sl_buf_addf(&names, ", +%d more", n - BLOCKED_NAMES);
	line = sl_xasprintf("egress: %.0f attempt(s) to %d host(s) no plan "
			    "declared were blocked (%s); a plan can declare "
			    "them in `egress` (sbxloop egress %s)",
			    attempts, n, sl_buf_str(&names),
			    sl_json_str(report, "run_id", "RUN"));
	sl_buf_release(&names);
	return line;
}

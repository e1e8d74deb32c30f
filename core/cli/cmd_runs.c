/*
 * `sbxloop status`, `sbxloop logs` and `sbxloop cancel`: the commands
 * that read (and, for cancel, mark) persisted runs through the store
 * named by `plugins.store`. The dense event line belongs to the `plain`
 * sink; `logs` instantiates it rather than formatting events itself.
 * Called only from the command table in cli.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <sbxloop/sink.h>
#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "cli/cli.h"
#include "host/runlock.h"
#include "host/runs.h"
#include "common/json.h"
#include "host/redact.h"
#include "common/util.h"

#define OUTCOME_CLIP 60
#define FEEDBACK_CLIP 60
#define FOLLOW_POLL_NS 300000000L
#define STALE_AFTER_DEFAULT 10

static const char *const live_states[] = {SBXLOOP_RUN_LIVE_STATES, NULL};

/* A run's row, or the one common wording of a failed fetch. */
static int get_run(struct sl_instance *store, const char *run_id,
		   struct sl_run *out)
{
	struct sbxloop_error err = {0, ""};
	int rc = sl_run_fetch(store, run_id, out, &err);

	return rc ? sl_cli_store_failed(run_id, &err, rc) : 0;
}

/* ------------------------------------------------------------ helpers */

/* First `max` characters (UTF-8) of s on one line; caller frees. */
static char *clip(const char *s, size_t max)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t chars = 0;

	for (; s && *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80 && chars++ == max) {
			sl_buf_adds(&b, "\xe2\x80\xa6");
			break;
		}
		sl_buf_addc(&b, *s == '\n' || *s == '\t' ? ' ' : *s);
	}
	return b.buf ? sl_buf_detach(&b) : sl_xstrdup("");
}

/* A table cell: clipped, secrets masked, controls escaped; caller frees. */
static char *cell(const char *s, size_t max)
{
	char *c = clip(s, max);
	char *shown = sl_shown(c, 0);

	free(c);
	return shown;
}

/* Print text built for a terminal (several lines) safely. */
static void print_shown(const char *text)
{
	char *shown = sl_shown(text, SL_TERM_KEEP_NL);

	fputs(shown, stdout);
	free(shown);
}

static void format_time(double ts, char *buf, size_t len)
{
	time_t t = (time_t)ts;
	struct tm tm;

	if (ts <= 0 || !localtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, len, "-");
}

static void format_duration(double secs, char *buf, size_t len)
{
	long s = secs > 0 ? (long)(secs + 0.5) : 0;

	if (s >= 3600)
		snprintf(buf, len, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
	else if (s >= 60)
		snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
	else
		snprintf(buf, len, "%lds", s);
}

/*
 * Print JSON (consumed) on one line, redacted; what a terminal would act
 * on (DEL, C1 controls) is written as the JSON escape of the same text.
 */
static void print_json(cJSON *root, int pretty)
{
	char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
	char *clean =
		sl_shown(text ? text : "null", SL_TERM_JSON | SL_TERM_KEEP_NL);

	printf("%s\n", clean);
	free(clean);
	cJSON_free(text);
	cJSON_Delete(root);
}

/* Parse options shared by the three commands; -1 on a usage error. */
static int want_json(int argc, char **argv, const char **run_id)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int opt, json = 0;

	optind = 0; /* glibc: forget the "+" mode main() parsed with */
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt != 'j')
			return -1;
		json = 1;
	}
	if (argc - optind > 1)
		return -1;
	*run_id = optind < argc ? argv[optind] : NULL;
	return json;
}

/* ------------------------------------------------------------- status */

struct run_list {
	struct sl_run *runs;
	size_t n;
	size_t cap;
};

static int run_list_cb(void *user, const struct sbxloop_run_row *row)
{
	struct run_list *l = user;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->runs = sl_xrealloc(l->runs, l->cap * sizeof(*l->runs));
	}
	memset(&l->runs[l->n], 0, sizeof(l->runs[0]));
	sl_run_copy_row(&l->runs[l->n], row);
	l->n++;
	return 0;
}

/*
 * The process that drives run r now (`run` or `resume` holding its
 * lock): a run in a live state that nobody drives was interrupted.
 */
static int driven(const char *state_dir, const struct sl_run *r,
		  struct sl_run_driver *who)
{
	memset(who, 0, sizeof(*who));
	return state_dir && sl_runlock_driver(state_dir, r->run_id, who);
}

static int interrupted(const char *state_dir, const struct sl_run *r)
{
	struct sl_run_driver who;

	return !sbxloop_run_state_is_terminal(r->state) &&
	       !driven(state_dir, r, &who);
}

static cJSON *run_json(const struct sl_run *r, const char *state_dir)
{
	cJSON *o = cJSON_CreateObject(), *d;
	struct sl_run_driver who;
	int held = driven(state_dir, r, &who);

	cJSON_AddNumberToObject(o, "created_at", r->created_at);
	if (held) {
		d = cJSON_AddObjectToObject(o, "driver");
		cJSON_AddStringToObject(d, "command", who.command);
		cJSON_AddNumberToObject(d, "pid", (double)who.pid);
		cJSON_AddNumberToObject(d, "since", who.since);
	} else {
		cJSON_AddNullToObject(o, "driver");
	}
	cJSON_AddNumberToObject(o, "duration_s",
				r->updated_at - r->created_at);
	cJSON_AddBoolToObject(
		o, "interrupted",
		!held && !sbxloop_run_state_is_terminal(r->state));
	cJSON_AddStringToObject(o, "outcome", r->outcome);
	if (*r->reason)
		cJSON_AddStringToObject(o, "reason", r->reason);
	else
		cJSON_AddNullToObject(o, "reason");
	cJSON_AddStringToObject(o, "run_id", r->run_id);
	cJSON_AddStringToObject(o, "state", r->state);
	cJSON_AddNumberToObject(o, "tasks_done", r->tasks_done);
	cJSON_AddNumberToObject(o, "tasks_total", r->tasks_total);
	cJSON_AddNumberToObject(o, "updated_at", r->updated_at);
	return o;
}

static int continuation_bytes(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) == 0x80;
	return n;
}

static int status_all(struct sl_instance *store, const char *state_dir,
		      int json)
{
	const struct sbxloop_store_ops *ops = store->ops;
	struct sbxloop_error err = {0, ""};
	struct run_list l = {NULL, 0, 0};
	struct sl_buf out = SL_BUF_INIT;
	size_t i;
	int rc;

	rc = ops->run_list(store->ctx, run_list_cb, &l, &err);
	if (rc) {
		rc = sl_cli_store_failed(NULL, &err, rc);
		goto out;
	}
	if (json) {
		cJSON *arr = cJSON_CreateArray();

		for (i = 0; i < l.n; i++)
			cJSON_AddItemToArray(arr,
					     run_json(&l.runs[i], state_dir));
		print_json(arr, 0);
		goto out;
	}
	if (l.n == 0) {
		printf("no runs yet\n");
		goto out;
	}
	sl_buf_addf(&out, "%-24s %-24s %-7s %-16s %-8s %s\n", "run", "state",
		    "tasks", "started", "duration", "outcome");
	for (i = 0; i < l.n; i++) {
		struct sl_run *r = &l.runs[i];
		char started[32], dur[32], tasks[32], *raw, *state, *outcome;
		char *id;

		format_time(r->created_at, started, sizeof(started));
		format_duration(r->updated_at - r->created_at, dur,
				sizeof(dur));
		snprintf(tasks, sizeof(tasks), "%d/%d", r->tasks_done,
			 r->tasks_total);
		if (*r->reason)
			raw = sl_xasprintf("%s \xe2\x80\x94 %s", r->state,
					   r->reason);
		else if (interrupted(state_dir, r))
			raw = sl_xasprintf("%s \xe2\x80\x94 interrupted",
					   r->state);
		else
			raw = sl_xstrdup(r->state);
		state = cell(raw, SIZE_MAX);
		free(raw);
		outcome = cell(r->outcome, OUTCOME_CLIP);
		id = cell(r->run_id, SIZE_MAX);
		/* printf pads bytes: widen by the UTF-8 continuation bytes */
		sl_buf_addf(&out, "%-24s %-*s %-7s %-16s %-8s %s\n", id,
			    24 + continuation_bytes(state), state, tasks,
			    started, dur, outcome);
		free(id);
		free(state);
		free(outcome);
	}
	print_shown(sl_buf_str(&out));
out:
	for (i = 0; i < l.n; i++)
		sl_run_release(&l.runs[i]);
	free(l.runs);
	sl_buf_release(&out);
	return rc;
}

/* Tasks of one run, collected as JSON objects in stored order. */
static int task_cb(void *user, const struct sbxloop_task_row *t)
{
	cJSON *arr = user, *o = cJSON_CreateObject();
	cJSON *spec = t->spec_json ? cJSON_Parse(t->spec_json) : NULL;
	const char *title =
		cJSON_GetStringValue(cJSON_GetObjectItem(spec, "title"));

	cJSON_AddStringToObject(o, "last_feedback",
				t->last_feedback ? t->last_feedback : "");
	cJSON_AddNumberToObject(o, "replans", t->replans);
	cJSON_AddNumberToObject(o, "revisions", t->revisions);
	cJSON_AddStringToObject(o, "state", t->state ? t->state : "");
	cJSON_AddStringToObject(o, "task_id", t->task_id);
	cJSON_AddStringToObject(o, "title", title ? title : "");
	cJSON_AddItemToArray(arr, o);
	cJSON_Delete(spec);
	return 0;
}

static const char *jstr(const cJSON *o, const char *key)
{
	return sl_json_str(o, key, "");
}

static int jint(const cJSON *o, const char *key)
{
	return (int)sl_json_num(o, key, 0);
}

static int status_one(struct sl_instance *store, const char *state_dir,
		      const char *run_id, int json)
{
	const struct sbxloop_store_ops *ops = store->ops;
	struct sbxloop_error err = {0, ""};
	struct sl_run r;
	struct sl_buf out = SL_BUF_INIT;
	cJSON *tasks = cJSON_CreateArray(), *t;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = get_run(store, run_id, &r);
	if (rc)
		goto out;
	rc = ops->tasks_list(store->ctx, run_id, task_cb, tasks, &err);
	if (rc) {
		rc = sl_cli_store_failed(run_id, &err, rc);
		goto out;
	}
	if (json) {
		cJSON *root = cJSON_CreateObject();
		cJSON *run = run_json(&r, state_dir);

		cJSON_AddNumberToObject(run, "attempts", r.attempts);
		cJSON_AddItemToObject(root, "run", run);
		cJSON_AddItemToObject(root, "tasks", tasks);
		tasks = NULL;
		print_json(root, 0);
		goto out;
	}
	{
		char *id = cell(r.run_id, SIZE_MAX);
		char *state = cell(r.state, SIZE_MAX);
		char *reason = *r.reason ? cell(r.reason, SIZE_MAX) : NULL;
		char *outcome = sl_shown(r.outcome, 0);
		struct sl_run_driver who;

		sl_buf_addf(&out, "run %s  state: %s\n", id, state);
		if (reason)
			sl_buf_addf(&out, "reason: %s\n", reason);
		if (driven(state_dir, &r, &who)) {
			char since[32];

			format_time(who.since, since, sizeof(since));
			sl_buf_addf(&out,
				    "driven by: pid %ld (`sbxloop %s`, since "
				    "%s)\n",
				    who.pid, who.command, since);
		} else if (!sbxloop_run_state_is_terminal(r.state)) {
			sl_buf_addf(&out,
				    "interrupted: no sbxloop drives it; "
				    "`sbxloop resume %s` goes on from its "
				    "last committed step\n",
				    id);
		}
		sl_buf_addf(&out, "outcome: %s\n", outcome);
		free(id);
		free(state);
		free(reason);
		free(outcome);
	}
	if (cJSON_GetArraySize(tasks) == 0) {
		sl_buf_adds(&out, "no tasks yet\n");
	} else {
		sl_buf_addf(&out, "\n%-16s %-32s %-13s %-4s %-6s %s\n", "task",
			    "title", "state", "rev", "replan",
			    "last feedback");
		cJSON_ArrayForEach (t, tasks) {
			char *id = cell(jstr(t, "task_id"), SIZE_MAX);
			char *title = cell(jstr(t, "title"), 32);
			char *state = cell(jstr(t, "state"), SIZE_MAX);
			char *fb =
				cell(jstr(t, "last_feedback"), FEEDBACK_CLIP);

			sl_buf_addf(&out, "%-16s %-32s %-13s %-4d %-6d %s\n",
				    id, title, state, jint(t, "revisions"),
				    jint(t, "replans"), fb);
			free(id);
			free(title);
			free(state);
			free(fb);
		}
		/* lanes run several at once: say which are under way */
		if (!sbxloop_run_state_is_terminal(r.state)) {
			struct sl_buf now = SL_BUF_INIT;

			cJSON_ArrayForEach (t, tasks) {
				const char *st = jstr(t, "state");

				if (!sbxloop_task_state_is_terminal(st) &&
				    strcmp(st, SBXLOOP_TASK_PENDING) != 0)
					sl_buf_addf(&now, "%s%s",
						    now.len ? ", " : "",
						    jstr(t, "task_id"));
			}
			if (now.len)
				sl_buf_addf(&out, "under way: %s\n",
					    sl_buf_str(&now));
			sl_buf_release(&now);
		}
	}
	sl_buf_addf(&out, "\n%d phase attempts recorded\n", r.attempts);
	print_shown(sl_buf_str(&out));
out:
	cJSON_Delete(tasks);
	sl_run_release(&r);
	sl_buf_release(&out);
	return rc;
}

int sl_cmd_status(struct sl_cli *cli, int argc, char **argv)
{
	const char *run_id = NULL;
	int json = want_json(argc, argv, &run_id);
	/* read only: status never creates the state directory */
	const char *state_dir = sl_config_str(cli->core->cfg, "state_dir");

	if (json < 0)
		return sl_cli_usage(sl_cli_command("status"), 1);

	return run_id ? status_one(&cli->store, state_dir, run_id, json)
		      : status_all(&cli->store, state_dir, json);
}

/* ------------------------------------------------------------- cancel */

int sl_cmd_cancel(struct sl_cli *cli, int argc, char **argv)
{
	struct sl_instance *store = &cli->store;
	struct sbxloop_run_update upd;
	struct sbxloop_error err = {0, ""};
	const struct sbxloop_store_ops *ops;
	struct sl_run r;
	const char *run_id = NULL;
	char prev[64] = "";
	int rc;

	memset(&r, 0, sizeof(r));
	if (want_json(argc, argv, &run_id) != 0 || !run_id)
		return sl_cli_usage(sl_cli_command("cancel"), 1);
	ops = store->ops;
	memset(&upd, 0, sizeof(upd));
	upd.struct_size = sizeof(upd);
	upd.run_id = run_id;
	upd.fields = SBXLOOP_RUN_STATE;
	upd.state = SBXLOOP_RUN_CANCELLED;
	upd.reason = "cancelled by the user";
	upd.only_if_state = live_states;
	rc = ops->run_update(store->ctx, &upd, prev, sizeof(prev), &err);
	if (rc == SBXLOOP_ESTATE) {
		if (!prev[0] && get_run(store, run_id, &r) == 0)
			snprintf(prev, sizeof(prev), "%s", r.state);
		sl_cli_error("run %s is already %s; nothing to cancel", run_id,
			     prev[0] ? prev : "finished");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (rc) {
		rc = sl_cli_store_failed(run_id, &err, rc);
		goto out;
	}
	printf("run %s cancelled\n", run_id);
out:
	sl_run_release(&r);
	return rc;
}

/* --------------------------------------------------------------- logs */

struct logs {
	struct sl_instance *store;
	const char *state_dir;   /* where the runs' driver locks are */
	struct sl_instance sink; /* the plain sink, unless --json */
	int json;
	int64_t last_seq;
	int failed;
	struct sbxloop_error err;
};

static int logs_cb(void *user, const struct sbxloop_event *ev)
{
	struct logs *l = user;
	const struct sbxloop_sink_ops *ops = l->sink.ops;

	l->last_seq = ev->seq;
	if (l->json) {
		char *clean = sl_shown(ev->json, SL_TERM_JSON);

		fputs(clean, stdout);
		fputc('\n', stdout);
		free(clean);
		return 0;
	}
	/* the store guard masked secrets registered after the write too;
	 * the plain sink escapes what a terminal would act on */
	if (ops->event(l->sink.ctx, ev, &l->err))
		l->failed = 1;
	return l->failed;
}

static int logs_query(struct logs *l, const struct sbxloop_event_query *q0)
{
	const struct sbxloop_store_ops *ops = l->store->ops;
	struct sbxloop_event_query q = *q0;
	int rc;

	q.after_seq = l->last_seq;
	rc = ops->events_query(l->store->ctx, &q, logs_cb, l, &l->err);
	fflush(stdout);
	if (rc)
		return sl_cli_store_failed(q.run_id, &l->err, rc);
	if (l->failed) {
		sl_cli_error("%s", l->err.message);
		return SL_EXIT_FAIL;
	}
	return 0;
}

/* Wait for the run to end, printing what arrives; 0 or an exit code. */
static int logs_follow(struct logs *l, const struct sbxloop_event_query *q,
		       long stale_min)
{
	const struct sbxloop_store_ops *ops = l->store->ops;
	struct timespec nap = {0, FOLLOW_POLL_NS};
	struct sl_run r;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	for (;;) {
		double last_ts = 0, active;
		struct sbxloop_error err = {0, ""};

		rc = get_run(l->store, q->run_id, &r);
		if (rc)
			break;
		/* events before a transition are durable with it: read them */
		rc = logs_query(l, q);
		if (rc || sbxloop_run_state_is_terminal(r.state))
			break;
		/* its events are all read: nobody will write more */
		if (interrupted(l->state_dir, &r)) {
			fprintf(stderr,
				"warning: run %s is interrupted: no sbxloop "
				"drives it\n",
				q->run_id);
			sl_cli_hint("resume it with `sbxloop resume %s`",
				    q->run_id);
			break;
		}
		if (stale_min > 0) {
			if (ops->event_last_ts(l->store->ctx, q->run_id,
					       &last_ts, &err) == 0) {
				active = r.updated_at > last_ts ? r.updated_at
								: last_ts;
				if (sl_now() - active > stale_min * 60.0) {
					fprintf(stderr,
						"warning: run %s has shown no "
						"activity for over %ld "
						"minutes; its process may be "
						"dead\n",
						q->run_id, stale_min);
					sl_cli_hint(
						"resume it with `sbxloop "
						"resume %s`, or keep waiting "
						"with --stale-after 0",
						q->run_id);
					break;
				}
			}
		}
		nanosleep(&nap, NULL);
	}
	sl_run_release(&r);
	return rc;
}

int sl_cmd_logs(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"type", required_argument, NULL, 't'},
		{"task", required_argument, NULL, 'k'},
		{"since", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"follow", no_argument, NULL, 'f'},
		{"stale-after", required_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	const struct sl_command *cmd = sl_cli_command("logs");
	struct sbxloop_event_query q;
	struct logs l;
	struct sl_run r;
	long stale_min = STALE_AFTER_DEFAULT;
	int follow = 0, opt, rc;
	char *end, *cfg_err = NULL;

	memset(&l, 0, sizeof(l));
	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	optind = 0; /* glibc: forget the "+" mode main() parsed with */
	while ((opt = getopt_long(argc, argv, "f", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			q.type_prefix = optarg;
			break;
		case 'k':
			q.task_id = optarg;
			break;
		case 's':
			errno = 0;
			l.last_seq = strtoll(optarg, &end, 10);
			if (errno || *end || l.last_seq < 0) {
				sl_cli_error("--since wants a sequence "
					     "number, not '%s'",
					     optarg);
				return SL_EXIT_USAGE;
			}
			break;
		case 'j':
			l.json = 1;
			break;
		case 'f':
			follow = 1;
			break;
		case 'a':
			errno = 0;
			stale_min = strtol(optarg, &end, 10);
			if (errno || *end || stale_min < 0) {
				sl_cli_error("--stale-after wants minutes, "
					     "not '%s'",
					     optarg);
				return SL_EXIT_USAGE;
			}
			break;
		default:
			return sl_cli_usage(cmd, 1);
		}
	}
	if (argc - optind != 1)
		return sl_cli_usage(cmd, 1);
	q.run_id = argv[optind];
	l.store = &cli->store;
	l.state_dir = sl_config_str(cli->core->cfg, "state_dir");
	rc = get_run(l.store, q.run_id, &r);
	if (rc)
		goto out;
	if (!l.json) {
		/* the plain sink owns the dense line; show every event */
		if (sl_config_set(cli->core->cfg, "plain.events", "all",
				  &cfg_err) ||
		    sl_config_set(cli->core->cfg, "plain.color",
				  cli->color ? "always" : "never", &cfg_err) ||
		    sl_core_instantiate(cli->core, SBXLOOP_KIND_SINK, "plain",
					&l.sink, &l.err)) {
			sl_cli_error("cannot print events: %s",
				     cfg_err ? cfg_err : l.err.message);
			rc = SL_EXIT_FAIL;
			goto out;
		}
	}
	rc = follow ? logs_follow(&l, &q, stale_min) : logs_query(&l, &q);
out:
	free(cfg_err);
	sl_run_release(&r);
	sl_instance_destroy(&l.sink);
	return rc;
}

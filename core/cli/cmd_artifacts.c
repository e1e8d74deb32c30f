/*
 * `sbxloop artifacts RUN` and `sbxloop gc`: a run's results on the host
 * (with what was excluded and why), and the retention sweep of run
 * directories under <state_dir>/runs/. Both read runs through the store
 * named by plugins.store; gc records each removal as a daemon.gc event
 * of the run, checked against the run's state in the same transaction.
 * Called only from the command table in cli.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "engine/artifacts.h"
#include "cli/cli.h"
#include "host/runs.h"
#include "host/events.h"
#include "engine/ids.h"
#include "host/redact.h"
#include "common/util.h"

#define TREE_CAP 50
#define GC_DEFAULT_DAYS 14.0

static const char *const terminal_states[] = {SBXLOOP_RUN_TERMINAL_STATES,
					      NULL};

static void human_size(char *buf, size_t len, long long n)
{
	if (n < 1024)
		snprintf(buf, len, "%lld B", n);
	else if (n < 1024 * 1024)
		snprintf(buf, len, "%.1f KB", (double)n / 1024);
	else if (n < 1024LL * 1024 * 1024)
		snprintf(buf, len, "%.1f MB", (double)n / (1024 * 1024));
	else
		snprintf(buf, len, "%.1f GB",
			 (double)n / (1024.0 * 1024 * 1024));
}

/* ------------------------------------------------------- artifacts */

static void print_tree(const struct sl_artifact_scan *scan)
{
	size_t i, shown = 0;
	const char *prev = "";

	for (i = 0; i < scan->n_files && shown < TREE_CAP; i++) {
		const char *p = scan->files[i].relpath, *s;
		size_t common = 0, depth = 0;

		/* print the directories this path opens, then the file */
		while (1) {
			size_t n = strcspn(p + common, "/");

			if (p[common + n] != '/')
				break;
			if (strncmp(prev, p, common + n + 1) != 0) {
				sl_print(stdout, "%*s%.*s/\n",
					 (int)(2 * depth + 2), "", (int)n,
					 p + common);
				shown++;
			}
			common += n + 1;
			depth++;
		}
		s = p + common;
		sl_print(stdout, "%*s%s\n", (int)(2 * depth + 2), "", s);
		shown++;
		prev = p;
	}
	if (i < scan->n_files)
		printf("  ... %zu more file(s)\n", scan->n_files - i);
}

/* The exclusion note of a run's last harvest (its run.artifacts). */
static int harvest_note_cb(void *user, const struct sbxloop_event *ev)
{
	char **note = user;
	cJSON *data = cJSON_Parse(ev->data_json ? ev->data_json : "{}");
	cJSON *ex = cJSON_GetObjectItemCaseSensitive(data, "excluded"), *c;
	struct sl_artifact_scan counted = {0};
	size_t n = 0;

	cJSON_ArrayForEach (c, ex)
		n += cJSON_IsNumber(c) && c->valuedouble >= 1;
	counted.tally = sl_xcalloc(n ? n : 1, sizeof(*counted.tally));
	/* the event's keys come sorted, as a scan's tally does */
	cJSON_ArrayForEach (c, ex) {
		if (!cJSON_IsNumber(c) || c->valuedouble < 1)
			continue;
		counted.tally[counted.n_tally].key = c->string;
		counted.tally[counted.n_tally++].count =
			(size_t)c->valuedouble;
		counted.excluded += (size_t)c->valuedouble;
	}
	free(*note);
	*note = sl_artifacts_note(&counted);
	free(counted.tally);
	cJSON_Delete(data);
	return 0;
}

static char *harvest_note(struct sl_instance *store, const char *run_id)
{
	const struct sbxloop_store_ops *ops = store->ops;
	struct sbxloop_error err = {0, ""};
	struct sbxloop_event_query q;
	char *note = NULL;

	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = run_id;
	q.type_prefix = SBXLOOP_EV_RUN_ARTIFACTS;
	if (ops->events_query(store->ctx, &q, harvest_note_cb, &note, &err))
		sl_log(SBXLOOP_LOG_WARN,
		       "cannot read the harvest of run %s: "
		       "%s",
		       run_id, err.message);
	return note;
}

int sl_cmd_artifacts(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"tree", no_argument, NULL, 't'},
		{"list", no_argument, NULL, 'l'},
		{"path", no_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sl_instance *store = &cli->store;
	struct sbxloop_error err = {0, ""};
	struct sl_run run = {0};
	struct sl_artifact_scan scan = {0};
	const char **ex = NULL;
	const char *run_id;
	char *dir = NULL, *note = NULL;
	int tree = 0, path_only = 0, opt, rc;
	size_t n_ex, i;
	struct stat st;

	optind = 0; /* glibc: forget the "+" mode main() parsed with */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 't')
			tree = 1;
		else if (opt == 'l')
			tree = 0;
		else if (opt == 'p')
			path_only = 1;
		else
			return sl_cli_usage(sl_cli_command("artifacts"),
					    opt != 'h');
	}
	if (optind + 1 != argc)
		return sl_cli_usage(sl_cli_command("artifacts"), 1);
	run_id = argv[optind];
	rc = sl_run_fetch(store, run_id, &run, &err);
	if (rc) {
		rc = sl_cli_store_failed(run_id, &err, rc);
		goto out;
	}
	dir = sl_artifacts_dir(sl_core_state_dir(cli->core), run_id,
			       *run.workspace ? run.workspace : NULL,
			       run.mounted);
	if (!dir) {
		sl_cli_error("run %s never provisioned a workspace "
			     "(state: %s)",
			     run_id, run.state);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (path_only) {
		printf("%s\n", dir);
		rc = SL_EXIT_OK;
		goto out;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sl_cli_error("run %s: no artifacts directory at '%s'", run_id,
			     dir);
		if (!run.mounted)
			sl_cli_hint("nothing was harvested from the sandbox "
				    "yet, or `sbxloop gc` removed it");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	ex = sl_artifacts_excludes(cli->core->cfg, &n_ex);
	if (sl_artifacts_scan(dir, ex, n_ex, &scan, &err)) {
		sl_cli_error("%s", err.message);
		rc = SL_EXIT_FAIL;
		goto out;
	}
	sl_print(stdout, "run %s: %zu file(s) (%s) in %s\n", run_id,
		 scan.n_files,
		 run.mounted ? "live workspace mount" : "harvested copy", dir);
	if (tree) {
		print_tree(&scan);
	} else {
		for (i = 0; i < scan.n_files; i++) {
			char sz[32];

			human_size(sz, sizeof(sz), scan.files[i].size);
			sl_print(stdout, "  %s  %s\n", scan.files[i].relpath,
				 sz);
		}
	}
	/* a harvested copy holds none of what was left out: the harvest
	 * itself counted it */
	if (!run.mounted)
		note = harvest_note(store, run_id);
	if (!note)
		note = sl_artifacts_note(&scan);
	if (note)
		sl_print(stdout, "%s\n", note);
	rc = SL_EXIT_OK;
out:
	free(note);
	free(ex);
	free(dir);
	sl_artifacts_scan_release(&scan);
	sl_run_release(&run);
	return rc;
}

/* -------------------------------------------------------------- gc */

static int says_failed(const cJSON *v)
{
	return cJSON_IsString(v) && (!strcmp(v->valuestring, "error") ||
				     !strcmp(v->valuestring, "failed"));
}

struct deliver_state {
	int failed;
};

static int deliver_cb(void *user, const struct sbxloop_event *ev)
{
	struct deliver_state *d = user;
	cJSON *data = cJSON_Parse(ev->data_json ? ev->data_json : "{}");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(data, "error");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(data, "outcome");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(data, "status");

	/* the latest outcome decides: a later success clears a failure */
	d->failed = (e && !cJSON_IsNull(e) && !cJSON_IsFalse(e)) ||
		    says_failed(o) || says_failed(s);
	cJSON_Delete(data);
	return 0;
}

struct gc_row {
	char *name;
	char *state;
	char *verdict;
	double age_s;
	long long bytes;
	int prunable;
	int workspace_inside;
};

static void fmt_age(char *buf, size_t len, double s)
{
	if (s < 0)
		snprintf(buf, len, "-");
	else if (s < 3600)
		snprintf(buf, len, "%.0fm", s / 60);
	else if (s < 86400)
		snprintf(buf, len, "%.1fh", s / 3600);
	else
		snprintf(buf, len, "%.1fd", s / 86400);
}

static void classify(struct sl_instance *store, const char *runs_dir,
		     struct gc_row *row, double days)
{
	const struct sbxloop_store_ops *ops = store->ops;
	struct sbxloop_error err = {0, ""};
	struct sl_run run = {0};
	struct deliver_state dl = {0};
	struct sbxloop_event_query q;
	char *dir;

	row->age_s = -1;
	if (!sl_run_id_valid(row->name)) {
		row->verdict = sl_xstrdup("keep: not a run directory");
		return;
	}
	if (sl_run_fetch(store, row->name, &run, &err)) {
		row->verdict = sl_xstrdup("keep: run unknown to this store");
		goto out;
	}
	row->state = sl_xstrdup(run.state);
	row->age_s = sl_now() - run.updated_at;
	if (!sbxloop_run_state_is_terminal(run.state)) {
		row->verdict =
			sl_xasprintf("keep: run is %s (resumable)", run.state);
		goto out;
	}
	if (*run.kept_reason) {
		row->verdict = sl_xasprintf("keep: run is kept (%s)",
					    run.kept_reason);
		goto out;
	}
	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = row->name;
	q.type_prefix = SBXLOOP_EV_RUN_DELIVER;
	ops->events_query(store->ctx, &q, deliver_cb, &dl, &err);
	if (dl.failed) {
		row->verdict = sl_xstrdup("keep: delivery failed; the "
					  "workspace is the only copy");
		goto out;
	}
	if (row->age_s < days * 86400) {
		row->verdict =
			sl_xasprintf("keep: within retention (%gd)", days);
		goto out;
	}
	dir = sl_xasprintf("%s/%s", runs_dir, row->name);
	row->bytes = sl_artifacts_du(dir);
	row->workspace_inside = *run.workspace &&
				sl_starts_with(run.workspace, dir) &&
				(run.workspace[strlen(dir)] == '\0' ||
				 run.workspace[strlen(dir)] == '/');
	free(dir);
	row->prunable = 1;
	row->verdict =
		sl_xasprintf("prune: %s, older than %gd", run.state, days);
out:
	sl_run_release(&run);
}

/* The state check and the daemon.gc event, then the removal. */
static int gc_remove(struct sl_cli *cli, struct sl_instance *store,
		     const char *state_dir, const char *runs_dir,
		     struct gc_row *row)
{
	const struct sbxloop_store_ops *ops = store->ops;
	struct sbxloop_run_update upd;
	struct sbxloop_error err = {0, ""};
	char *dir = sl_xasprintf("%s/%s", runs_dir, row->name);
	char *pending = sl_xasprintf("%s/gc-pending/%s", state_dir, row->name);
	char *pdir = sl_xasprintf("%s/gc-pending", state_dir);
	cJSON *data;
	int rc;

	memset(&upd, 0, sizeof(upd));
	upd.struct_size = sizeof(upd);
	upd.run_id = row->name;
	upd.fields = 0;
	upd.only_if_state = terminal_states;
	rc = ops->run_update(store->ctx, &upd, NULL, 0, &err);
	if (rc) {
		printf("skip %s: %s\n", row->name, err.message);
		rc = 1; /* skipped, not failed */
		goto out;
	}
	sl_core_set_run(cli->core, row->name);
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "path", dir);
	cJSON_AddNumberToObject(data, "bytes", (double)row->bytes);
	cJSON_AddNumberToObject(data, "age_s", floor(row->age_s));
	cJSON_AddBoolToObject(data, "workspace_removed",
			      row->workspace_inside);
	cJSON_AddStringToObject(data, "by", "gc");
	sl_emit(cli->core, SBXLOOP_EV_GC, NULL, data);
	sl_mkdirs(pdir, 0700);
	if (rename(dir, pending) == 0)
		rc = sl_artifacts_rmtree(pending);
	else
		rc = sl_artifacts_rmtree(dir);
	if (rc) {
		data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "path", dir);
		cJSON_AddStringToObject(data, "error",
					"could not remove directory");
		cJSON_AddStringToObject(data, "by", "gc");
		sl_emit(cli->core, SBXLOOP_EV_GC, NULL, data);
		printf("failed %s: %s\n", row->name, strerror(-rc));
		rc = -1;
	}
	sl_bus_flush(cli->core, &err);
out:
	free(dir);
	free(pending);
	free(pdir);
	return rc;
}

int sl_cmd_gc(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"older-than", required_argument, NULL, 'o'},
		{"dry-run", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sl_instance *store = &cli->store;
	struct sbxloop_error err = {0, ""};
	struct sl_bus *bus = NULL;
	struct gc_row *rows = NULL;
	const char *state_dir;
	char *runs_dir = NULL, *pdir = NULL, **names = NULL, *end;
	double days = GC_DEFAULT_DAYS;
	int dry = 0, opt, rc, failed = 0;
	size_t n = 0, i, removed = 0, prunable = 0;
	long long bytes = 0;

	optind = 0; /* glibc: forget the "+" mode main() parsed with */
	while ((opt = getopt_long(argc, argv, "hn", longopts, NULL)) != -1) {
		if (opt == 'o') {
			errno = 0;
			days = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !isfinite(days) || days < 0) {
				sl_cli_error("--older-than wants a "
					     "non-negative number of days, "
					     "not '%s'",
					     optarg);
				return SL_EXIT_USAGE;
			}
		} else if (opt == 'n') {
			dry = 1;
		} else {
			return sl_cli_usage(sl_cli_command("gc"), opt != 'h');
		}
	}
	if (optind != argc)
		return sl_cli_usage(sl_cli_command("gc"), 1);
	if (!dry && sl_bus_open(cli->core, store, &bus, &err)) {
		sl_cli_error("%s", err.message);
		rc = SL_EXIT_FAIL;
		goto out;
	}
	state_dir = sl_core_state_dir(cli->core);
	if (!state_dir) {
		sl_cli_error("no usable state_dir");
		rc = SL_EXIT_FAIL;
		goto out;
	}
	runs_dir = sl_xasprintf("%s/runs", state_dir);
	pdir = sl_xasprintf("%s/gc-pending", state_dir);
	if (!dry)
		sl_artifacts_rmtree_quiet(pdir); /* an earlier sweep's */
	names = NULL;
	if (sl_artifacts_list_dir(runs_dir, &names, &n) < 0)
		n = 0;
	rows = sl_xcalloc(n + 1, sizeof(*rows));
	for (i = 0; i < n; i++) {
		rows[i].name = names[i];
		classify(store, runs_dir, &rows[i], days);
		if (rows[i].prunable) {
			prunable++;
			bytes += rows[i].bytes;
		}
	}
	printf("%-12s %-12s %-8s %-10s %s\n", "run", "state", "age", "size",
	       "verdict");
	for (i = 0; i < n; i++) {
		char age[32], sz[32] = "";

		fmt_age(age, sizeof(age), rows[i].age_s);
		if (rows[i].prunable)
			human_size(sz, sizeof(sz), rows[i].bytes);
		printf("%-12s %-12s %-8s %-10s %s\n", rows[i].name,
		       rows[i].state ? rows[i].state : "-", age, sz,
		       rows[i].verdict);
	}
	if (dry) {
		char sz[32];

		human_size(sz, sizeof(sz), bytes);
		printf("dry run: %zu run director%s (%s) would be removed\n",
		       prunable, prunable == 1 ? "y" : "ies", sz);
		rc = SL_EXIT_OK;
		goto out;
	}
	bytes = 0;
	for (i = 0; i < n; i++) {
		int r;

		if (!rows[i].prunable)
			continue;
		r = gc_remove(cli, store, state_dir, runs_dir, &rows[i]);
		if (r == 0) {
			removed++;
			bytes += rows[i].bytes;
		} else if (r < 0) {
			failed++;
		}
	}
	{
		char sz[32];

		human_size(sz, sizeof(sz), bytes);
		printf("removed %zu run director%s, %s freed", removed,
		       removed == 1 ? "y" : "ies", sz);
		if (failed)
			printf("; %d failed", failed);
		printf("\n");
	}
	rc = failed ? SL_EXIT_FAIL : SL_EXIT_OK;
out:
	for (i = 0; rows && i < n; i++) {
		free(rows[i].name);
		free(rows[i].state);
		free(rows[i].verdict);
	}
	free(rows);
	free(names);
	free(runs_dir);
	free(pdir);
	if (bus)
		sl_bus_close(bus);
	return rc;
}

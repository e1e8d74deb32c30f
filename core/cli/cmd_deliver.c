/*
 * `sbxloop deliver RUN`: deliver a completed run again as a pull request
 * (UPSTREAM.md 1.14, 10.5), under the run's persisted config with the
 * command's GitHub options on top, through a fresh github sandbox of its
 * own (no agent sandbox, no model token) and the github reporter. Errors
 * exit 2, unlike the end of a run, where a delivery failure leaves the
 * run completed. `--dry-run` prints the plan and makes no API call and
 * no sandbox.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <sbxloop/reporter.h>
#include <sbxloop/sink.h>
#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "cli/cli.h"
#include "engine/artifacts.h"
#include "engine/provision.h"
#include "host/events.h"
#include "host/redact.h"
#include "host/runlock.h"
#include "host/runs.h"
#include "engine/ids.h"
#include "common/util.h"
#include "phases/worker_client.h"

#define MAX_OV 40

struct deliver {
	struct sl_core *core;
	struct sl_instance *store;
	struct sl_bus *bus;
	struct sl_instance sink, reporter;
	struct sl_pair *pair;
	struct sl_run run;
	const char *run_id;
	int dry_run;
	struct sl_runlock lock; /* one process acts on a run at a time */
};

static int pair_job(void *user, const char *role, cJSON *job, cJSON **result,
		    struct sbxloop_error *err)
{
	struct deliver *d = user;
	struct sbxloop_sandbox_info info;
	struct sl_job_tags tags = {role, NULL, NULL, 0};

	if (!sl_pair_box(d->pair, role, &info))
		return sl_error(err, SBXLOOP_ENOTFOUND,
				"`deliver` has no %s sandbox", role);
	return sl_worker_submit(d->core, &info, job, &tags, result, err);
}

struct tasks_acc {
	cJSON *arr;
};

static int task_cb(void *user, const struct sbxloop_task_row *row)
{
	struct tasks_acc *a = user;
	cJSON *o = cJSON_CreateObject();
	cJSON *spec = cJSON_Parse(row->spec_json ? row->spec_json : "{}");
	cJSON *plan = row->plan_json ? cJSON_Parse(row->plan_json) : NULL;
	const cJSON *v =
		cJSON_GetObjectItemCaseSensitive(plan, "verify_commands");

	cJSON_AddStringToObject(o, "id", row->task_id);
	cJSON_AddStringToObject(
		o, "title",
		cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(spec, "title"))
			? cJSON_GetStringValue(
				  cJSON_GetObjectItemCaseSensitive(spec,
								   "title"))
			: "");
	cJSON_AddStringToObject(o, "state", row->state);
	cJSON_AddItemToObject(o, "verify_commands",
			      v ? cJSON_Duplicate(v, 1) : cJSON_CreateArray());
	cJSON_AddItemToArray(a->arr, o);
	cJSON_Delete(spec);
	cJSON_Delete(plan);
	return 0;
}

static char *tasks_json(struct deliver *d)
{
	const struct sbxloop_store_ops *st = d->store->ops;
	struct sbxloop_error err = {0, ""};
	struct tasks_acc a = {cJSON_CreateArray()};
	char *text;

	st->tasks_list(d->store->ctx, d->run_id, task_cb, &a, &err);
	text = cJSON_PrintUnformatted(a.arr);
	cJSON_Delete(a.arr);
	return text;
}

static int parse(int argc, char **argv, struct deliver *d, char **ov,
		 size_t *n_ov)
{
	enum { O_DRY = 1, O_GH };
	static const struct option opts[] = {
		{"dry-run", no_argument, NULL, O_DRY},
		SL_GITHUB_OPTIONS(O_GH),
		{NULL, 0, NULL, 0},
	};
	size_t n = 0;
	int opt;

	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == O_DRY) {
			d->dry_run = 1;
		} else if (opt >= O_GH && opt < O_GH + SL_GITHUB_N_OPTIONS &&
			   n + 2 <= MAX_OV) {
			sl_github_option(opt - O_GH, optarg, &ov[n]);
			n += 2;
		} else {
			sl_cli_error("unknown option '%s'", argv[optind - 1]);
			goto fail;
		}
	}
	if (optind != argc - 1 || !sl_run_id_valid(argv[optind])) {
		sl_cli_error(optind == argc - 1 ? "unknown run %s"
						: "deliver needs exactly one "
						  "RUN%s",
			     optind == argc - 1 ? argv[optind] : "");
		goto fail;
	}
	d->run_id = argv[optind];
	*n_ov = n;
	return 0;
fail:
	while (n)
		free(ov[--n]);
	return -1;
}

static int set(struct sl_core *core, const char *key, const char *json)
{
	char *error = NULL;

	if (sl_config_set(core->cfg, key, json, &error) < 0) {
		sl_cli_error("invalid GitHub option: %s: %s", key,
			     error ? error : "rejected");
		free(error);
		return -1;
	}
	return 0;
}

/* Provision the github sandbox and route plugin jobs to it. */
static int provision(struct deliver *d, struct sbxloop_error *err)
{
	const char *state_dir = sl_core_state_dir(d->core);
	const char *name = sl_config_str(d->core->cfg, "plugins.sandbox");
	const char *ws = *d->run.workspace ? d->run.workspace : state_dir;
	int rc;

	rc = sl_core_instantiate(d->core, SBXLOOP_KIND_SANDBOX,
				 name ? name : "local", &d->core->sandbox,
				 err);
	if (rc < 0)
		return rc;
	d->pair = sl_pair_new(d->core);
	sl_pair_github_only(d->pair);
	rc = sl_pair_check_tokens(d->pair, err);
	if (rc == 0)
		rc = sl_pair_up(d->pair, d->run_id, ws, NULL, err);
	if (rc < 0) {
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(
			e, "repo", sl_config_str(d->core->cfg, "github.repo"));
		cJSON_AddStringToObject(e, "error", err->message);
		sl_emit(d->core, SBXLOOP_EV_RUN_DELIVER, NULL, e);
		return rc;
	}
	sl_core_set_job_hook(d->core, pair_job, d);
	return 0;
}

static int deliver(struct deliver *d)
{
	const struct sbxloop_reporter_ops *ops;
	struct sbxloop_run_info ri;
	struct sbxloop_delivery out;
	struct sbxloop_error err = {0, ""};
	char *tasks = NULL, *artifacts = NULL;
	int rc;

	rc = sl_core_instantiate(d->core, SBXLOOP_KIND_REPORTER, "github",
				 &d->reporter, &err);
	if (rc < 0) {
		sl_cli_error("delivery failed: %s", err.message);
		return SL_EXIT_USAGE;
	}
	sl_bus_add_reporter(d->bus, &d->reporter);
	ops = d->reporter.ops;
	tasks = tasks_json(d);
	artifacts = sl_artifacts_dir(sl_core_state_dir(d->core), d->run_id,
				     d->run.workspace, d->run.mounted);
	memset(&ri, 0, sizeof(ri));
	ri.struct_size = sizeof(ri);
	ri.run_id = d->run_id;
	ri.outcome = d->run.outcome;
	ri.state = SBXLOOP_RUN_COMPLETED;
	ri.workspace = *d->run.workspace ? d->run.workspace : NULL;
	ri.artifacts_dir = artifacts;
	ri.mounted = d->run.mounted;
	ri.tasks_json = tasks;
	memset(&out, 0, sizeof(out));
	out.struct_size = sizeof(out);
	if (!d->dry_run) {
		rc = provision(d, &err);
		if (rc == 0)
			rc = ops->run_start(d->reporter.ctx, &ri, &err);
	}
	if (rc == 0)
		rc = ops->deliver(d->reporter.ctx, &ri, &out, &err);
	free(tasks);
	free(artifacts);
	if (rc < 0) {
		sl_cli_error("delivery failed: %s", err.message);
		return SL_EXIT_USAGE;
	}
	if (!d->dry_run)
		printf("run %s delivered: PR #%lld  %s\n", d->run_id,
		       out.number, out.url);
	return SL_EXIT_OK;
}

int sl_cmd_deliver(struct sl_cli *cli, int argc, char **argv)
{
	struct deliver d;
	struct sbxloop_error err = {0, ""};
	char *ov[MAX_OV];
	size_t n_ov = 0, i;
	int code = SL_EXIT_USAGE, rc;

	memset(&d, 0, sizeof(d));
	d.lock = (struct sl_runlock)SL_RUNLOCK_INIT;
	if (parse(argc, argv, &d, ov, &n_ov) < 0) {
		sl_cli_usage(sl_cli_command("deliver"), 1);
		return SL_EXIT_USAGE;
	}
	d.store = sl_cli_store(cli, 0, &rc);
	if (!d.store)
		goto out;
	d.core = cli->core;
	rc = sl_run_fetch(d.store, d.run_id, &d.run, &err);
	if (rc < 0) {
		code = sl_cli_store_failed(d.run_id, &err, rc);
		goto out;
	}
	if (strcmp(d.run.state, SBXLOOP_RUN_COMPLETED)) {
		sl_cli_error("run %s is %s: only a completed run is delivered",
			     d.run_id, d.run.state);
		goto out;
	}
	/* not beside the run's own delivery, nor another `deliver` */
	if (!d.dry_run && sl_runlock_take(sl_core_state_dir(d.core), d.run_id,
					  "deliver", &d.lock, &err) < 0) {
		sl_cli_error("%s", err.message);
		goto out;
	}
	if (sl_bus_open(d.core, d.store, &d.bus, &err) < 0) {
		sl_cli_error("deliver failed: %s", err.message);
		goto out;
	}
	if (sl_cli_rehydrate(d.core, d.store, d.run_id) < 0)
		goto out;
	for (i = 0; i + 1 < n_ov; i += 2)
		if (set(d.core, ov[i], ov[i + 1]) < 0)
			goto out;
	if (set(d.core, "github.deliver", "true") < 0 ||
	    (d.dry_run && set(d.core, "github.dry_run", "true") < 0))
		goto out;
	if (!sl_config_str(d.core->cfg, "github.repo")) {
		sl_cli_error("run %s has no delivery repository: pass --repo "
			     "OWNER/NAME",
			     d.run_id);
		goto out;
	}
	if (!d.dry_run && sl_core_instantiate(d.core, SBXLOOP_KIND_SINK,
					      "plain", &d.sink, &err) == 0)
		sl_bus_add_sink(d.bus, &d.sink);
	code = deliver(&d);
out:
	sl_core_set_job_hook(cli->core, NULL, NULL);
	sl_bus_detach(d.bus, &d.reporter);
	sl_instance_destroy(&d.reporter);
	if (d.pair) {
		if (!sl_config_bool(d.core->cfg, "keep_sandboxes", 0))
			sl_pair_down(d.pair);
		sl_pair_free(d.pair);
	}
	if (d.core)
		sl_instance_destroy(&d.core->sandbox);
	if (d.bus) {
		sl_bus_flush(d.core, &err);
		sl_bus_close(d.bus);
	}
	sl_instance_destroy(&d.sink);
	sl_runlock_release(&d.lock);
	sl_run_release(&d.run);
	for (i = 0; i < n_ov; i++)
		free(ov[i]);
	return code;
}

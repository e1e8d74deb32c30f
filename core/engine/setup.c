/*
 * What a run sets up around its tasks and takes down after them: the
 * workspace (fresh, or the pinned one on resume), the sandbox pair with
 * its secrets (provision.c does the work), the egress granters and
 * grant ledger, keeping the pair on failure, and teardown. Called by
 * run.c and task.c (engine_internal.h); teardown also by cmd_run.c's
 * signal path through engine.h.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attest.h"
#include "engine/engine_internal.h"
#include "host/events.h"
#include "host/redact.h"
#include "common/util.h"
#include "engine/workspace.h"

void sl_engine_revoke_grants(struct sl_engine *e,
			     struct sl_egress_ledger *ledger,
			     const char *task_id)
{
	struct sbxloop_error rerr = {0, ""};

	if (sl_egress_revoke_all(ledger ? ledger : e->ledger, task_id, &rerr) <
	    0)
		sl_log(SBXLOOP_LOG_WARN, "cannot revoke egress grants%s%s: %s",
		       task_id ? " of task " : "", task_id ? task_id : "",
		       rerr.message);
}

/* A committed EXECUTE: its session is the task's; its report is
 * reviewed next. */
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
		sl_engine_emit(e, SBXLOOP_EV_SANDBOX_WORKSPACE_CLONE,
			       ws.clone_event);
		ws.clone_event = NULL;
	}
	free(e->fetch_cmd);
	e->fetch_cmd = ws.fetch_cmd;
	ws.fetch_cmd = NULL;
	path = ws.path;
	ws.path = NULL;
	sl_workspace_release(&ws);
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

	sl_engine_emit(e, type, data);
}

struct sl_egress_ledger *sl_engine_ledger_new(struct sl_engine *e,
					      const char *sandbox)
{
	return sl_egress_ledger_new(e->core->cfg, sandbox, e->chain,
				    e->n_granters, policy_event, e);
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
 * run.attest: the probes on the fresh pair (`lane` NULL) or on a lane's
 * new agent sandbox ("laneN"), a sandbox.attested event per sandbox,
 * and a sandbox weaker than its provider claims fails the run (the
 * reason naming the capability and the probe) before any agent job in
 * it; the pair's failure also sets the run's state. No canaries here:
 * the secret probes check variable names only.
 */
int sl_engine_attest(struct sl_engine *e, const char *lane,
		     struct sbxloop_error *err)
{
	struct sl_attest_opts o = {SL_ATTEST_QUICK, NULL, 0, lane, 0};
	struct sl_attest *a;
	const struct sl_probe *bad;
	int rc;

	sl_attest_level_parse(sl_config_str(e->core->cfg, "run.attest"),
			      &o.level);
	if (o.level == SL_ATTEST_OFF)
		return 0;
	a = sl_xcalloc(1, sizeof(*a));
	rc = sl_attest_pair(e->core, e->pair, e->workspace, &o, a, err);
	if (rc == 0) {
		cJSON *d = sl_attest_event(a, "agent");

		if (lane)
			cJSON_AddStringToObject(d, "lane", lane);
		sl_engine_emit(e, SBXLOOP_EV_SANDBOX_ATTESTED, d);
		if (a->have_github)
			sl_engine_emit(e, SBXLOOP_EV_SANDBOX_ATTESTED,
				       sl_attest_event(a, "github"));
		bad = sl_attest_failure(a);
		if (bad) {
			struct sbxloop_error serr = {0, ""};
			char *why = sl_attest_reason(bad);

			if (!lane)
				sl_engine_set_run_state(e, SBXLOOP_RUN_FAILED,
							why, &serr);
			rc = sl_error(err, SBXLOOP_ESTATE, "%s%s%s%s", why,
				      lane ? " (the sandbox of " : "",
				      lane ? lane : "", lane ? ")" : "");
			free(why);
		}
	}
	free(a);
	return rc;
}

/*
 * Tokens first (nothing exists yet when one is missing), then the
 * workspace, then the pair with its secrets. A resume provisions a fresh
 * pair and hands it the tokens again.
 */
int sl_engine_provision(struct sl_engine *e, const char *pinned,
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
	rc = sl_engine_attest(e, NULL, err);
	if (rc < 0)
		return rc;
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

void sl_engine_keep_on_failure(struct sl_engine *e)
{
	struct sbxloop_run_update u;
	struct sbxloop_error err = {0, ""};
	const char *names[SL_PAIR_LANES_MAX + 2];
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
	n = sl_pair_names(e->pair, names, SL_PAIR_LANES_MAX + 2);
	cJSON_AddItemToObject(d, "sandboxes",
			      cJSON_CreateStringArray(names, (int)n));
	sl_engine_emit(e, SBXLOOP_EV_RUN_KEEP, d);
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
		sl_engine_revoke_grants(e, NULL, NULL);
		pthread_mutex_unlock(&e->ledger_lock);
	}
	sl_engine_jobs_close(e);
	if (e->kept_reason)
		return;
	e->have_box = 0;
	sl_pair_down(e->pair);
}

/*
 * `sbxloop doctor` (UPSTREAM.md 1.13, 15): the provider's own checks
 * (its optional doctor slot), orphaned sandboxes, the configured agent's
 * model token, the GitHub token, the state directory and the worker;
 * with --deep also the security probes (cmd_doctor_deep.c). Called
 * only from the command table in cli.c.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>

#include "cli/cli.h"
#include "common/agents.h"
#include "common/json.h"
#include "phases/worker_client.h"
#include "common/proc.h"
#include "common/util.h"

#define MIN_AGE_HOURS 1.0

/* ------------------------------------------------------------- doctor */

struct doctor {
	int hard_failures;
	int provider_failures;
};

static void row(struct doctor *d, const char *check, const char *status,
		const char *fmt, ...) SBXLOOP_PRINTF(4, 5);

static void row(struct doctor *d, const char *check, const char *status,
		const char *fmt, ...)
{
	va_list ap;

	if (!strcmp(status, "FAIL"))
		d->hard_failures++;
	printf("%-30s %-5s ", check, status);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void first_line(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	while (s && s[n] && s[n] != '\n' && n + 1 < size) {
		buf[n] = s[n];
		n++;
	}
	buf[n] = '\0';
}

/* A provider's own row, through the doctor slot. */
static void provider_row(void *user, const char *check, const char *status,
			 const char *detail)
{
	struct doctor *d = user;
	const char *st = !strcmp(status, "ok") || !strcmp(status, "warn")
				 ? status
				 : "FAIL";

	if (!strcmp(st, "FAIL"))
		d->provider_failures++;
	row(d, check, st, "%s", detail ? detail : "");
}

/* The provider's checks, then the orphans it leaves (needs the store). */
static void check_provider(struct doctor *d, struct sl_cli *cli)
{
	const struct sl_model_token *t = sl_model_token_for(
		sl_config_str(cli->core->cfg, "agent.preset"));
	const char *hosts[] = {t ? t->api_host : "api.github.com",
			       "api.github.com", NULL};
	const struct sbxloop_sandbox_ops *ops;
	struct sbxloop_error err = {0, ""};
	struct sl_instance *box, *store;
	int n, rc;

	if (t && !strcmp(t->api_host, "api.github.com"))
		hosts[1] = NULL;
	box = sl_cli_provider(cli, &rc);
	if (!box) {
		row(d, "sandbox provider", "FAIL", "cannot load it (above)");
		return;
	}
	ops = box->ops;
	if (!SBXLOOP_HAS_SLOT(ops, struct sbxloop_sandbox_ops, doctor)) {
		row(d, "sandbox provider", "ok", "%s (no checks of its own)",
		    box->component->name);
		return;
	}
	if (ops->doctor(box->ctx, hosts, provider_row, d, &err)) {
		row(d, "sandbox provider", "FAIL", "%s", err.message);
		return;
	}
	if (d->provider_failures)
		return;
	store = sl_cli_store(cli, 0, &rc);
	if (!store)
		return;
	n = sl_sandbox_count_orphans(
		box, store, sl_config_str(cli->core->cfg, "state_dir"));
	if (n < 0)
		row(d, "orphaned sandboxes", "warn", "cannot list sandboxes");
	else if (n)
		row(d, "orphaned sandboxes", "warn",
		    "%d orphan candidate(s): see `sbxloop sandbox prune`", n);
	else
		row(d, "orphaned sandboxes", "ok", "none");
}

/*
 * Run the worker with `argv` (argv[0] its path) for at most `timeout_s`
 * into `res`, which the caller clears: 0, or -1 when it could not run.
 */
static int run_worker(const char *const *argv, double timeout_s,
		      struct sbxloop_proc_result *res)
{
	struct sbxloop_proc_spec spec;
	struct sbxloop_error err = {0, ""};

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.timeout_s = timeout_s;
	memset(res, 0, sizeof(*res));
	return sl_proc_run(&spec, res, &err) ? -1 : 0;
}

static void check_worker(struct doctor *d, struct sl_core *core)
{
	char *path = sl_worker_path(core);
	const char *argv[] = {path, "version", NULL};
	struct sbxloop_proc_result res;
	char line[128];
	const char *ver;

	if (access(path, X_OK) < 0) {
		row(d, "worker binary", "FAIL",
		    "'%s' is missing: set worker_path or install "
		    "sbxloop-worker",
		    path);
		free(path);
		return;
	}
	if (run_worker(argv, 30, &res) || res.exit_code) {
		row(d, "worker binary", "FAIL", "'%s version' failed", path);
		goto out;
	}
	first_line(res.out, line, sizeof(line));
	ver = strrchr(line, ' ');
	ver = ver ? ver + 1 : line;
	if (strcmp(ver, PACKAGE_VERSION))
		row(d, "worker binary", "FAIL",
		    "'%s' is version %s, sbxloop is %s", path, ver,
		    PACKAGE_VERSION);
	else
		row(d, "worker binary", "ok", "%s (%s)", path, ver);
out:
	sl_proc_result_clear(&res);
	free(path);
}

/*
 * The agent CLI against the versions its preset was verified with: run
 * here through `sbxloop-worker check-agent` when the agent runs on this
 * host (the local provider); elsewhere the worker checks it inside the
 * sandbox at each job and says so (agent.cli_version).
 */
static void check_agent_cli(struct doctor *d, struct sl_core *core)
{
	const char *preset = sl_config_str(core->cfg, "agent.preset");
	const char *sandbox = sl_config_str(core->cfg, "plugins.sandbox");
	char *path = sl_worker_path(core);
	const char *argv[] = {path, "check-agent", preset, NULL};
	struct sbxloop_proc_result res = {0};
	const char *st, *cli, *ver, *lo, *hi;
	cJSON *o = NULL;

	if (strcmp(sl_config_str(core->cfg, "agent.backend"), "command")) {
		row(d, "agent CLI", "ok", "none (agent.backend is '%s')",
		    sl_config_str(core->cfg, "agent.backend"));
		goto out;
	}
	if (!sandbox || strcmp(sandbox, "local")) {
		row(d, "agent CLI", "ok",
		    "'%s' runs in the '%s' sandbox: the worker checks its "
		    "version there at each job (agent.cli_version)",
		    preset, sandbox ? sandbox : "?");
		goto out;
	}
	if (access(path, X_OK) < 0 || run_worker(argv, 60, &res) ||
	    !(o = cJSON_Parse(res.out ? res.out : ""))) {
		row(d, "agent CLI", "FAIL",
		    "cannot check preset '%s' with '%s check-agent'%s%s",
		    preset, path, res.err && *res.err ? ": " : "",
		    res.err ? res.err : "");
		goto clear;
	}
	st = sl_json_str(o, "status", "");
	cli = sl_json_str(o, "cli", "?");
	ver = sl_json_str(o, "version", "");
	lo = sl_json_str(o, "verified_min", "?");
	hi = sl_json_str(o, "verified_below", "?");
	if (!strcmp(st, "ok"))
		row(d, "agent CLI", "ok", "%s %s (verified %s up to %s)", cli,
		    ver, lo, hi);
	else if (!strcmp(st, "missing"))
		row(d, "agent CLI", "FAIL",
		    "'%s' is not on PATH: install it (docs/agents.md)", cli);
	else
		row(d, "agent CLI", "warn",
		    "%s %s is outside the versions preset '%s' was verified "
		    "with (%s up to %s): flags or output may differ",
		    cli, *ver ? ver : "(unreadable version)", preset, lo, hi);
clear:
	cJSON_Delete(o);
	sl_proc_result_clear(&res);
out:
	free(path);
}

/*
 * The github sandbox's HTTP client: the worker loads libcurl only for
 * github.op jobs, so check it here when the sandboxes run on this host
 * (local); sbx's provisioning checks it inside the github sandbox.
 */
static void check_github_client(struct doctor *d, struct sl_core *core)
{
	const char *sandbox = sl_config_str(core->cfg, "plugins.sandbox");
	char *path = sl_worker_path(core);
	const char *argv[] = {path, "check-github", NULL};
	struct sbxloop_proc_result res = {0};
	char line[160];

	if (!sandbox || strcmp(sandbox, "local")) {
		row(d, "GitHub client", "ok",
		    "checked in the github sandbox when it is provisioned");
	} else if (access(path, X_OK) < 0 || run_worker(argv, 30, &res) ||
		   res.exit_code) {
		first_line(res.err && *res.err ? res.err : res.out, line,
			   sizeof(line));
		row(d, "GitHub client", "FAIL", "'%s check-github': %s", path,
		    *line ? line : "failed");
	} else {
		first_line(res.out, line, sizeof(line));
		row(d, "GitHub client", "ok", "%s", line);
	}
	sl_proc_result_clear(&res);
	free(path);
}

static void check_state_dir(struct doctor *d, struct sl_core *core)
{
	const char *dir = sl_core_state_dir(core);
	char *probe;
	FILE *f;

	if (!dir) {
		row(d, "state dir", "FAIL", "cannot create '%s'",
		    sl_config_str(core->cfg, "state_dir"));
		return;
	}
	probe = sl_xasprintf("%s/.doctor-probe-%ld", dir, (long)getpid());
	f = fopen(probe, "w");
	if (!f || fputs("ok\n", f) < 0) {
		row(d, "state dir", "FAIL", "'%s' is not writable: %s", dir,
		    strerror(errno));
	} else {
		row(d, "state dir", "ok", "%s", dir);
	}
	if (f)
		fclose(f);
	unlink(probe);
	free(probe);
}

int sl_cmd_doctor(struct sl_cli *cli, int argc, char **argv)
{
	struct doctor d = {0, 0};
	const struct sl_model_token *t;
	const char *repo, *preset, *v;
	int rc, deep = 0;

	if (argc == 2 && !strcmp(argv[1], "--deep"))
		deep = 1;
	else if (argc > 1)
		return sl_cli_usage(sl_cli_command("doctor"), 1);
	rc = sl_cli_open_core(cli);
	if (rc)
		return rc;
	printf("%-30s %-5s %s\n", "CHECK", "STATUS", "DETAIL");
	check_provider(&d, cli);

	preset = sl_config_str(cli->core->cfg, "agent.preset");
	t = sl_model_token_for(preset);
	v = t ? getenv(t->env) : NULL;
	if (!t)
		row(&d, "model token", "warn",
		    "agent preset '%s' names no token sbxloop knows; the "
		    "agent CLI must find its own credentials",
		    preset ? preset : "");
	else if (v && *v)
		row(&d, t->env, "ok", "set");
	else
		row(&d, t->env, "FAIL", "not set: create %s and export it",
		    t->advice);
	repo = sl_config_str(cli->core->cfg, "github.repo");
	if (repo && *repo) {
		if ((getenv(SL_GH_TOKEN_ENV) && *getenv(SL_GH_TOKEN_ENV)) ||
		    (getenv(SL_GH_TOKEN_ENV_ALT) &&
		     *getenv(SL_GH_TOKEN_ENV_ALT)))
			row(&d, "GH_TOKEN/GITHUB_TOKEN", "ok", "set");
		else
			row(&d, "GH_TOKEN/GITHUB_TOKEN", "FAIL",
			    "not set, but github.repo is '%s'", repo);
		check_github_client(&d, cli->core);
	} else {
		row(&d, "github integration", "ok",
		    "disabled (github.repo unset)");
	}
	check_state_dir(&d, cli->core);
	check_worker(&d, cli->core);
	check_agent_cli(&d, cli->core);
	if (deep) {
		fflush(stdout);
		rc = sl_doctor_deep(cli);
		if (rc)
			return rc;
	}
	return d.hard_failures ? SL_EXIT_FAIL : SL_EXIT_OK;
}

/*
 * `sbxloop secrets list|clean` (UPSTREAM.md 1.11, 8.6): the model-token
 * registrations sbxloop made, read from every strategy of
 * plugins.secrets that can list them, judged against the live sandboxes,
 * and removed through the strategy that listed them. Called only from
 * the command table in cli.c.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>

#include "cli/cli.h"
#include "common/agents.h"
#include "engine/ids.h"
#include "common/util.h"

#define MIN_AGE_HOURS 1.0

/* ------------------------------------------------------------ secrets */

struct reg_row {
	char *strategy;
	char *env;
	char *scope;
	char *hosts;
};

struct reg_list {
	const char *strategy; /* the one being listed */
	struct reg_row *rows;
	size_t n, cap;
};

static void reg_cb(void *user, const char *env, const char *scope,
		   const char *detail)
{
	struct reg_list *l = user;

	/* the model tokens sbxloop registers itself; services stay alone */
	if (!sl_model_token_by_env(env))
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->rows = sl_xrealloc(l->rows, l->cap * sizeof(*l->rows));
	}
	l->rows[l->n].strategy = sl_xstrdup(l->strategy);
	l->rows[l->n].env = sl_xstrdup(env);
	l->rows[l->n].scope = sl_xstrdup(scope);
	l->rows[l->n].hosts = sl_xstrdup(detail ? detail : "");
	l->n++;
}

static void reg_list_release(struct reg_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->rows[i].strategy);
		free(l->rows[i].env);
		free(l->rows[i].scope);
		free(l->rows[i].hosts);
	}
	free(l->rows);
	memset(l, 0, sizeof(*l));
}

/* ok / stale / foreign for one registration (UPSTREAM.md 8.6). */
static const char *assess(const struct reg_row *r, const struct sl_box_list *l,
			  const char **note)
{
	const struct sl_model_token *t = sl_model_token_by_env(r->env);
	int canonical = t && strstr(r->hosts, t->bind_host) != NULL;

	if (sl_starts_with(r->scope, SL_SANDBOX_PREFIX)) {
		if (!sl_box_listed(l, r->scope)) {
			*note = "its sandbox is gone";
			return "stale";
		}
		*note = canonical ? "live sandbox" : "bound to another host";
		return canonical ? "ok" : "stale";
	}
	if (!strcmp(r->scope, "global")) {
		*note = canonical ? "global registration"
				  : "global, bound to another host";
		return canonical ? "ok" : "stale";
	}
	*note = "not registered by sbxloop";
	return "foreign";
}

/*
 * Collect the registrations of every strategy of plugins.secrets that
 * can list them; the others are named on stderr. 0, or an exit code.
 */
static int collect_registrations(struct sl_cli *cli, struct reg_list *regs,
				 size_t *n_listing)
{
	struct sl_config *cfg = cli->core->cfg;
	size_t i, n = sl_config_list_len(cfg, "plugins.secrets");

	*n_listing = 0;
	for (i = 0; i < n; i++) {
		const char *sname =
			sl_config_list_item(cfg, "plugins.secrets", i);
		const struct sbxloop_secret_ops *sops;
		struct sbxloop_error err = {0, ""};
		struct sl_instance inst;
		int rc;

		if (sl_core_instantiate(cli->core, SBXLOOP_KIND_SECRET, sname,
					&inst, &err)) {
			sl_cli_error("%s", err.message);
			return SL_EXIT_USAGE;
		}
		sops = inst.ops;
		if (!sops->list) {
			sl_cli_hint("secret strategy '%s' keeps no "
				    "registrations to list",
				    sname);
			sl_instance_destroy(&inst);
			continue;
		}
		regs->strategy = sname;
		rc = sops->list(inst.ctx, reg_cb, regs, &err);
		sl_instance_destroy(&inst);
		if (rc) {
			sl_cli_error("cannot list the registrations of secret "
				     "strategy '%s': %s",
				     sname, err.message);
			return SL_EXIT_USAGE;
		}
		(*n_listing)++;
	}
	return 0;
}

/* Remove one registration through the strategy that listed it. */
static int remove_registration(struct sl_cli *cli, const struct reg_row *r)
{
	const struct sl_model_token *t = sl_model_token_by_env(r->env);
	const struct sbxloop_secret_ops *sops;
	struct sbxloop_error err = {0, ""};
	struct sbxloop_secret_req req;
	struct sl_instance inst;
	int rc;

	if (sl_core_instantiate(cli->core, SBXLOOP_KIND_SECRET, r->strategy,
				&inst, &err)) {
		sl_cli_error("%s", err.message);
		return -1;
	}
	sops = inst.ops;
	memset(&req, 0, sizeof(req));
	req.struct_size = sizeof(req);
	req.sandbox = r->scope;
	req.env_name = r->env;
	req.value = "";
	req.bind_host = t ? t->bind_host : NULL;
	rc = sops->revoke(inst.ctx, &req, &err);
	if (rc)
		sl_cli_error("cannot remove %s in scope %s: %s", req.env_name,
			     req.sandbox, err.message);
	sl_instance_destroy(&inst);
	return rc ? -1 : 0;
}

int sl_cmd_secrets(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"apply", no_argument, NULL, 'a'},
		{"all", no_argument, NULL, 'A'},
		{NULL, 0, NULL, 0},
	};
	const char *sub = argc > 1 ? argv[1] : NULL;
	const struct sl_model_token *want;
	struct sbxloop_error err = {0, ""};
	struct sl_instance *box;
	struct reg_list regs;
	struct sl_box_list l;
	size_t i, n_listing = 0;
	int opt, apply = 0, all = 0, rc, clean;
	char expected[160];

	memset(&regs, 0, sizeof(regs));
	memset(&l, 0, sizeof(l));
	if (!sub || (strcmp(sub, "list") && strcmp(sub, "clean")))
		return sl_cli_usage(sl_cli_command("secrets"), 1);
	clean = !strcmp(sub, "clean");
	argc--;
	argv++;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'a' && clean)
			apply = 1;
		else if (opt == 'A' && clean)
			all = 1;
		else
			return sl_cli_usage(sl_cli_command("secrets"), 1);
	}
	if (optind != argc)
		return sl_cli_usage(sl_cli_command("secrets"), 1);
	box = &cli->provider; /* SL_NEEDS_PROVIDER */
	rc = collect_registrations(cli, &regs, &n_listing);
	if (rc)
		goto out;
	if (!n_listing) {
		sl_cli_error("no secret strategy of plugins.secrets can list "
			     "its registrations");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (sl_box_list_fetch(box, &l, &err)) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!clean) {
		want = sl_model_token_for(
			sl_config_str(cli->core->cfg, "agent.preset"));
		printf("%-22s %-34s %-8s %s\n", "ENV", "SCOPE", "STATUS",
		       "NOTE");
		if (want) {
			snprintf(expected, sizeof(expected),
				 "(expected: custom @ %s, per-run scope)",
				 want->bind_host);
			printf("%-22s %-34s %-8s %s\n", want->env, expected,
			       "", "");
		}
		for (i = 0; i < regs.n; i++) {
			const char *note = "";
			const char *status = assess(&regs.rows[i], &l, &note);

			printf("%-22s %-34s %-8s %s\n", regs.rows[i].env,
			       regs.rows[i].scope, status, note);
		}
		if (!regs.n)
			printf("no registrations\n");
		goto out;
	}
	for (i = 0; i < regs.n; i++) {
		const char *note = "";
		const char *status = assess(&regs.rows[i], &l, &note);

		if (!strcmp(status, "foreign") ||
		    (!strcmp(status, "ok") && !all))
			continue;
		if (!apply) {
			printf("would remove %s in scope %s (%s)\n",
			       regs.rows[i].env, regs.rows[i].scope, note);
			continue;
		}
		if (remove_registration(cli, &regs.rows[i])) {
			rc = SL_EXIT_FAIL;
			continue;
		}
		printf("removed %s in scope %s\n", regs.rows[i].env,
		       regs.rows[i].scope);
	}
	if (!apply)
		printf("dry run; pass --apply to remove\n");
out:
	reg_list_release(&regs);
	sl_box_list_release(&l);
	return rc;
}

/*
 * The sandbox housekeeping commands: `sbxloop sandbox ls|rm|prune`,
 * `sbxloop shell`, `sbxloop secrets list|clean` and `sbxloop doctor`
 * (UPSTREAM.md 1.7, 1.9, 1.11, 1.13, 8.8 and 15). They reach sandboxes
 * only through the configured provider's ops (a provider's own doctor
 * checks and interactive shell are its optional slots), secret
 * registrations through the strategies of plugins.secrets, and runs
 * through the store; no substrate CLI is run from here. Called only
 * from the command table in cli.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>
#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "cli/cli.h"
#include "common/agents.h"
#include "engine/ids.h"
#include "common/proc.h"
#include "host/redact.h"
#include "common/util.h"
#include "phases/worker_client.h"

#define PAIR_PREFIX "sbxloop-"
#define MIN_AGE_HOURS 1.0

static const struct sl_command *command(const char *name)
{
	const struct sl_command *c;

	for (c = sl_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* ---------------------------------------------------------- plumbing */

/* The configured provider (and the store when `store` is non-NULL). */
static int open_provider(struct sl_cli *cli, struct sl_instance *box,
			 struct sl_instance *store)
{
	struct sbxloop_error err = {0, ""};
	const char *name;
	int rc = sl_cli_open_core(cli);

	if (rc)
		return rc;
	name = sl_config_str(cli->core->cfg, "plugins.sandbox");
	if (sl_core_instantiate(cli->core, SBXLOOP_KIND_SANDBOX,
				name ? name : "local", box, &err)) {
		sl_cli_error("%s", err.message);
		return SL_EXIT_USAGE;
	}
	if (!store)
		return 0;
	name = sl_config_str(cli->core->cfg, "plugins.store");
	if (sl_core_instantiate(cli->core, SBXLOOP_KIND_STORE,
				name ? name : "sqlite", store, &err)) {
		sl_cli_error("%s", err.message);
		sl_instance_destroy(box);
		return SL_EXIT_USAGE;
	}
	return 0;
}

/* One listed sandbox, copied out of the provider's callback. */
struct box_row {
	char *name;
	char *status;
	char *workspace;
};

struct box_list {
	struct box_row *rows;
	size_t n, cap;
};

static void box_list_cb(void *user, const struct sbxloop_sandbox_entry *e)
{
	struct box_list *l = user;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->rows = sl_xrealloc(l->rows, l->cap * sizeof(*l->rows));
	}
	l->rows[l->n].name = sl_xstrdup(e->name);
	l->rows[l->n].status = sl_xstrdup(e->status ? e->status : "");
	l->rows[l->n].workspace = sl_xstrdup(e->workspace ? e->workspace : "");
	l->n++;
}

static void box_list_free(struct box_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->rows[i].name);
		free(l->rows[i].status);
		free(l->rows[i].workspace);
	}
	free(l->rows);
	memset(l, 0, sizeof(*l));
}

static int list_boxes(struct sl_instance *box, struct box_list *l,
		      struct sbxloop_error *err)
{
	const struct sbxloop_sandbox_ops *ops = box->ops;

	memset(l, 0, sizeof(*l));
	return ops->list(box->ctx, PAIR_PREFIX, box_list_cb, l, err);
}

static int box_listed(const struct box_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->rows[i].name, name))
			return 1;
	return 0;
}

/*
 * Split `sbxloop-<run>-<role>` into run and role; 0 when the name
 * follows the pair scheme with a valid run id.
 */
static int pair_name(const char *name, char *run, size_t run_size,
		     const char **role)
{
	const char *rest, *dash;
	size_t n;

	if (!sl_starts_with(name, PAIR_PREFIX))
		return -1;
	rest = name + strlen(PAIR_PREFIX);
	dash = strrchr(rest, '-');
	if (!dash || (strcmp(dash + 1, "agent") && strcmp(dash + 1, "github")))
		return -1;
	n = (size_t)(dash - rest);
	if (n + 1 > run_size)
		return -1;
	memcpy(run, rest, n);
	run[n] = '\0';
	if (!sl_run_id_valid(run))
		return -1;
	*role = dash + 1;
	return 0;
}

/*
 * Take a removed sandbox's secret registrations back through every
 * configured strategy (sbx leaves name-scoped registrations behind, and
 * a later sandbox of the same name would inherit them).
 */
static void revoke_secrets(struct sl_core *core, const char *name,
			   const char *role)
{
	size_t i, n = sl_config_list_len(core->cfg, "plugins.secrets");
	const struct sl_model_token *t =
		sl_model_token_for(sl_config_str(core->cfg, "agent.preset"));

	for (i = 0; i < n; i++) {
		const char *sname =
			sl_config_list_item(core->cfg, "plugins.secrets", i);
		const struct sbxloop_secret_ops *ops;
		struct sbxloop_secret_req req;
		struct sbxloop_error err = {0, ""};
		struct sl_instance inst;
		int github = role && !strcmp(role, "github");

		if (sl_core_instantiate(core, SBXLOOP_KIND_SECRET, sname,
					&inst, &err))
			continue;
		ops = inst.ops;
		memset(&req, 0, sizeof(req));
		req.struct_size = sizeof(req);
		req.sandbox = name;
		req.role = github ? "github" : "agent";
		req.env_name = github ? SL_GH_TOKEN_ENV : (t ? t->env : "");
		req.value = "";
		req.bind_host = github ? NULL : (t ? t->bind_host : NULL);
		req.service = github ? "github" : NULL;
		ops->revoke(inst.ctx, &req, &err);
		sl_instance_destroy(&inst);
	}
}

/* ------------------------------------------------------- sandbox ls */

static int sandbox_ls(struct sl_cli *cli)
{
	struct sbxloop_error err = {0, ""};
	struct sl_instance box;
	struct box_list l;
	size_t i;
	int rc;

	rc = open_provider(cli, &box, NULL);
	if (rc)
		return rc;
	rc = list_boxes(&box, &l, &err);
	if (rc) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!l.n) {
		printf("no sbxloop sandboxes\n");
		goto out;
	}
	printf("%-34s %-10s %s\n", "NAME", "STATUS", "WORKSPACE");
	for (i = 0; i < l.n; i++)
		printf("%-34s %-10s %s\n", l.rows[i].name, l.rows[i].status,
		       l.rows[i].workspace);
out:
	box_list_free(&l);
	sl_instance_destroy(&box);
	return rc;
}

/* ------------------------------------------------------- sandbox rm */

static void add_target(char ***targets, size_t *n, const char *name)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*targets)[i], name))
			return;
	*targets = sl_xrealloc(*targets, (*n + 1) * sizeof(**targets));
	(*targets)[(*n)++] = sl_xstrdup(name);
}

static int sandbox_rm(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"run", required_argument, NULL, 'r'},
		{"all", no_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	const struct sbxloop_sandbox_ops *ops;
	struct sbxloop_error err = {0, ""};
	struct sl_instance box;
	struct box_list l;
	char **targets = NULL, *name;
	const char *run = NULL, *role;
	char run_buf[64];
	size_t n = 0, i;
	int opt, all = 0, rc;

	memset(&l, 0, sizeof(l));
	/* a fresh scan that permutes: options may follow operands */
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'r')
			run = optarg;
		else if (opt == 'a')
			all = 1;
		else
			return sl_cli_usage(command("sandbox"), 1);
	}
	for (; optind < argc; optind++)
		add_target(&targets, &n, argv[optind]);
	if (run) {
		name = sl_xasprintf(PAIR_PREFIX "%s-agent", run);
		add_target(&targets, &n, name);
		free(name);
		name = sl_xasprintf(PAIR_PREFIX "%s-github", run);
		add_target(&targets, &n, name);
		free(name);
	}
	rc = open_provider(cli, &box, NULL);
	if (rc)
		goto out;
	ops = box.ops;
	if (list_boxes(&box, &l, &err)) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out_box;
	}
	for (i = 0; all && i < l.n; i++)
		add_target(&targets, &n, l.rows[i].name);
	if (!n) {
		sl_cli_error("nothing to remove: pass a NAME, --run, or "
			     "--all");
		rc = SL_EXIT_USAGE;
		goto out_box;
	}
	for (i = 0; i < n; i++) {
		if (sl_starts_with(targets[i], PAIR_PREFIX) &&
		    !box_listed(&l, targets[i])) {
			printf("skip %s: no such sandbox\n", targets[i]);
			continue;
		}
		if (ops->sandbox_remove(box.ctx, targets[i], &err)) {
			printf("skip %s: %s\n", targets[i], err.message);
			continue;
		}
		if (pair_name(targets[i], run_buf, sizeof(run_buf), &role) ==
		    0)
			revoke_secrets(cli->core, targets[i], role);
		printf("removed %s\n", targets[i]);
	}
out_box:
	sl_instance_destroy(&box);
out:
	box_list_free(&l);
	for (i = 0; i < n; i++)
		free(targets[i]);
	free(targets);
	return rc;
}

/* ---------------------------------------------------- sandbox prune */

struct run_info {
	int known;
	char state[32];
	char kept[16];
	double updated_at;
};

static int run_info_cb(void *user, const struct sbxloop_run_row *row)
{
	struct run_info *ri = user;

	ri->known = 1;
	snprintf(ri->state, sizeof(ri->state), "%s",
		 row->state ? row->state : "");
	snprintf(ri->kept, sizeof(ri->kept), "%s",
		 row->kept_reason ? row->kept_reason : "");
	ri->updated_at = row->updated_at;
	return 0;
}

static void format_age(double age, char *buf, size_t size)
{
	if (age < 0)
		snprintf(buf, size, "?");
	else if (age < 3600)
		snprintf(buf, size, "%dm", (int)(age / 60));
	else if (age < 48 * 3600)
		snprintf(buf, size, "%.1fh", age / 3600);
	else
		snprintf(buf, size, "%.1fd", age / 86400);
}

enum verdict { KEEP, ORPHAN, UNTOUCHED };

struct prune_row {
	enum verdict verdict;
	char run[64];
	const char *role;
	char state[32];
	char age[16];
	char reason[128];
	int kept;
};

/* Classify one listed sandbox against the store (UPSTREAM.md 8.8). */
static void classify(struct sl_instance *store, const char *name,
		     double min_age_s, int include_kept, struct prune_row *pr)
{
	const struct sbxloop_store_ops *st = store->ops;
	struct sbxloop_error err = {0, ""};
	struct run_info ri;
	double last = 0, age;

	memset(pr, 0, sizeof(*pr));
	snprintf(pr->age, sizeof(pr->age), "?");
	snprintf(pr->state, sizeof(pr->state), "-");
	if (sl_starts_with(name, PAIR_PREFIX "daemon-github-") ||
	    sl_starts_with(name, PAIR_PREFIX "concierge-")) {
		pr->verdict = UNTOUCHED;
		snprintf(pr->reason, sizeof(pr->reason), "daemon-owned");
		return;
	}
	if (pair_name(name, pr->run, sizeof(pr->run), &pr->role)) {
		pr->verdict = UNTOUCHED;
		snprintf(pr->run, sizeof(pr->run), "-");
		snprintf(pr->reason, sizeof(pr->reason),
			 "unrecognized naming scheme");
		return;
	}
	memset(&ri, 0, sizeof(ri));
	if (st->run_get(store->ctx, pr->run, run_info_cb, &ri, &err) ||
	    !ri.known) {
		pr->verdict = ORPHAN;
		snprintf(pr->reason, sizeof(pr->reason),
			 "run unknown here (may belong to another working "
			 "copy)");
		return;
	}
	snprintf(pr->state, sizeof(pr->state), "%s", ri.state);
	pr->kept = ri.kept[0] != '\0';
	st->event_last_ts(store->ctx, pr->run, &last, &err);
	if (last < ri.updated_at)
		last = ri.updated_at;
	age = last > 0 ? sl_now() - last : -1;
	format_age(age, pr->age, sizeof(pr->age));
	if (pr->kept && !include_kept) {
		pr->verdict = KEEP;
		snprintf(pr->reason, sizeof(pr->reason), "kept (%s)", ri.kept);
		return;
	}
	if (sbxloop_run_state_is_terminal(ri.state)) {
		pr->verdict = age >= min_age_s ? ORPHAN : KEEP;
		snprintf(pr->reason, sizeof(pr->reason), "%s",
			 pr->verdict == ORPHAN ? "run finished"
					       : "younger than --min-age");
	} else {
		pr->verdict = age >= min_age_s ? ORPHAN : KEEP;
		if (pr->verdict == ORPHAN)
			snprintf(pr->reason, sizeof(pr->reason),
				 "silent for %s", pr->age);
		else
			snprintf(pr->reason, sizeof(pr->reason),
				 "possibly live");
	}
}

/* Count orphan candidates with the defaults (doctor); -1 on failure. */
static int count_orphans(struct sl_instance *box, struct sl_instance *store)
{
	struct sbxloop_error err = {0, ""};
	struct prune_row pr;
	struct box_list l;
	size_t i;
	int n = 0;

	if (list_boxes(box, &l, &err))
		return -1;
	for (i = 0; i < l.n; i++) {
		classify(store, l.rows[i].name, MIN_AGE_HOURS * 3600, 0, &pr);
		n += pr.verdict == ORPHAN;
	}
	box_list_free(&l);
	return n;
}

static int sandbox_prune(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"include-kept", no_argument, NULL, 'k'},
		{"dry-run", no_argument, NULL, 'n'},
		{"force", no_argument, NULL, 'f'},
		{"yes", no_argument, NULL, 'f'},
		{"min-age", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	const struct sbxloop_sandbox_ops *ops;
	const struct sbxloop_store_ops *st;
	struct sbxloop_error err = {0, ""};
	struct sl_instance box, store;
	struct prune_row pr;
	struct box_list l;
	double min_age = MIN_AGE_HOURS;
	char *end;
	size_t i;
	int opt, include_kept = 0, dry = 0, force = 0, rc, orphans = 0;

	memset(&l, 0, sizeof(l));
	/* a fresh scan that permutes: options may follow operands */
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			include_kept = 1;
			break;
		case 'n':
			dry = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'm':
			errno = 0;
			min_age = strtod(optarg, &end);
			if (errno || *end || min_age < 0) {
				sl_cli_error("--min-age must be a number of "
					     "hours, not '%s'",
					     optarg);
				return SL_EXIT_USAGE;
			}
			break;
		default:
			return sl_cli_usage(command("sandbox"), 1);
		}
	}
	if (dry)
		force = 0;
	rc = open_provider(cli, &box, &store);
	if (rc)
		return rc;
	ops = box.ops;
	st = store.ops;
	if (list_boxes(&box, &l, &err)) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!l.n) {
		printf("no sbxloop sandboxes\n");
		goto out;
	}
	printf("%-34s %-10s %-12s %-7s %s\n", "SANDBOX", "RUN", "RUN STATE",
	       "AGE", "VERDICT");
	for (i = 0; i < l.n; i++) {
		classify(&store, l.rows[i].name, min_age * 3600, include_kept,
			 &pr);
		printf("%-34s %-10s %-12s %-7s %s - %s\n", l.rows[i].name,
		       pr.run, pr.state, pr.age,
		       pr.verdict == ORPHAN ? "orphan" : "keep", pr.reason);
		if (pr.verdict != ORPHAN)
			continue;
		orphans++;
		if (!force)
			continue;
		if (ops->sandbox_remove(box.ctx, l.rows[i].name, &err)) {
			sl_cli_error("cannot remove '%s': %s", l.rows[i].name,
				     err.message);
			rc = SL_EXIT_FAIL;
			continue;
		}
		revoke_secrets(cli->core, l.rows[i].name, pr.role);
		if (pr.kept) {
			struct sbxloop_run_update u;

			memset(&u, 0, sizeof(u));
			u.struct_size = sizeof(u);
			u.run_id = pr.run;
			u.fields = SBXLOOP_RUN_KEPT;
			u.kept_reason = NULL;
			st->run_update(store.ctx, &u, NULL, 0, &err);
		}
		printf("removed %s\n", l.rows[i].name);
	}
	printf("note: runs are looked up in this working copy's state "
	       "database only\n");
	if (!force && orphans)
		printf("dry run: %d orphan(s); pass --force to remove them\n",
		       orphans);
out:
	box_list_free(&l);
	sl_instance_destroy(&store);
	sl_instance_destroy(&box);
	return rc;
}

int sl_cmd_sandbox(struct sl_cli *cli, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return sl_cli_usage(command("sandbox"), 1);
	if (!strcmp(sub, "ls"))
		return argc > 2 ? sl_cli_usage(command("sandbox"), 1)
				: sandbox_ls(cli);
	if (!strcmp(sub, "rm"))
		return sandbox_rm(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "prune"))
		return sandbox_prune(cli, argc - 1, argv + 1);
	sl_cli_error("unknown sandbox command '%s'", sub);
	return sl_cli_usage(command("sandbox"), 1);
}

/* -------------------------------------------------------------- shell */

static void print_line(void *user, const char *line, size_t len)
{
	FILE *f = user;

	fwrite(line, 1, len, f);
	fputc('\n', f);
	fflush(f);
}

static void print_err_line(void *user, const char *line, size_t len)
{
	(void)user;
	print_line(stderr, line, len);
}

static int run_known(struct sl_instance *store, const char *run)
{
	const struct sbxloop_store_ops *st = store->ops;
	struct sbxloop_error err = {0, ""};
	struct run_info ri;

	memset(&ri, 0, sizeof(ri));
	return st->run_get(store->ctx, run, run_info_cb, &ri, &err) == 0 &&
	       ri.known;
}

int sl_cmd_shell(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"role", required_argument, NULL, 'r'},
		{"command", required_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	const struct sbxloop_sandbox_ops *ops;
	struct sbxloop_error err = {0, ""};
	struct sl_instance box, store;
	const char *role = "agent", *cmd = NULL, *run;
	char *name = NULL;
	struct box_list l;
	int opt, rc;

	memset(&l, 0, sizeof(l));
	/* a fresh scan that permutes: options may follow operands */
	optind = 0;
	while ((opt = getopt_long(argc, argv, "c:", longopts, NULL)) != -1) {
		if (opt == 'r')
			role = optarg;
		else if (opt == 'c')
			cmd = optarg;
		else
			return sl_cli_usage(command("shell"), 1);
	}
	if (optind + 1 != argc)
		return sl_cli_usage(command("shell"), 1);
	run = argv[optind];
	if (strcmp(role, "agent") && strcmp(role, "github")) {
		sl_cli_error("--role must be agent or github, not '%s'", role);
		return SL_EXIT_USAGE;
	}
	rc = open_provider(cli, &box, &store);
	if (rc)
		return rc;
	ops = box.ops;
	if (!run_known(&store, run)) {
		sl_cli_error("unknown run '%s'", run);
		sl_cli_hint("`sbxloop status` lists the known runs");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!cmd && !SBXLOOP_HAS_SLOT(ops, struct sbxloop_sandbox_ops,
				      interactive_argv)) {
		sl_cli_error("sandbox provider '%s' does not support an "
			     "interactive shell",
			     box.component->name);
		sl_cli_hint("pass -c CMD to run one command instead");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	name = sl_xasprintf(PAIR_PREFIX "%s-%s", run, role);
	if (list_boxes(&box, &l, &err)) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!box_listed(&l, name)) {
		sl_cli_error("sandbox '%s' does not exist", name);
		sl_cli_hint("sandboxes are removed when a run ends unless "
			    "kept (keep_sandboxes, keep_on_failure)");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (cmd) {
		const char *sh[] = {"sh", "-lc", cmd, NULL};
		struct sbxloop_exec_spec spec;
		struct sbxloop_proc_result res;

		memset(&spec, 0, sizeof(spec));
		spec.struct_size = sizeof(spec);
		spec.argv = sh;
		spec.on_stdout_line = print_line;
		spec.on_stderr_line = print_err_line;
		spec.user = stdout;
		memset(&res, 0, sizeof(res));
		rc = ops->exec(box.ctx, name, &spec, &res, &err);
		if (rc) {
			sl_cli_error("%s", err.message);
			rc = SL_EXIT_FAIL;
		} else {
			rc = res.exit_code < 0 ? SL_EXIT_FAIL : res.exit_code;
		}
		sl_proc_result_clear(&res);
		goto out;
	}
	{
		/* the terminal belongs to the shell: exec it in place */
		const char *args[32];

		if (ops->interactive_argv(box.ctx, name, args,
					  SL_ARRAY_SIZE(args), &err)) {
			sl_cli_error("%s", err.message);
			rc = SL_EXIT_FAIL;
			goto out;
		}
		fflush(NULL);
		execvp(args[0], (char *const *)args);
		sl_cli_error("cannot run '%s': %s", args[0], strerror(errno));
		rc = SL_EXIT_USAGE;
	}
out:
	free(name);
	box_list_free(&l);
	sl_instance_destroy(&store);
	sl_instance_destroy(&box);
	return rc;
}

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
static const char *assess(const struct reg_row *r, const struct box_list *l,
			  const char **note)
{
	const struct sl_model_token *t = sl_model_token_by_env(r->env);
	int canonical = t && strstr(r->hosts, t->bind_host) != NULL;

	if (sl_starts_with(r->scope, PAIR_PREFIX)) {
		if (!box_listed(l, r->scope)) {
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
	struct sl_instance box;
	struct reg_list regs;
	struct box_list l;
	size_t i, n_listing = 0;
	int opt, apply = 0, all = 0, rc, clean;
	char expected[160];

	memset(&regs, 0, sizeof(regs));
	memset(&l, 0, sizeof(l));
	if (!sub || (strcmp(sub, "list") && strcmp(sub, "clean")))
		return sl_cli_usage(command("secrets"), 1);
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
			return sl_cli_usage(command("secrets"), 1);
	}
	if (optind != argc)
		return sl_cli_usage(command("secrets"), 1);
	rc = open_provider(cli, &box, NULL);
	if (rc)
		return rc;
	rc = collect_registrations(cli, &regs, &n_listing);
	if (rc)
		goto out;
	if (!n_listing) {
		sl_cli_error("no secret strategy of plugins.secrets can list "
			     "its registrations");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (list_boxes(&box, &l, &err)) {
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
	box_list_free(&l);
	sl_instance_destroy(&box);
	return rc;
}

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
	struct sl_instance box, store;
	int n;

	if (t && !strcmp(t->api_host, "api.github.com"))
		hosts[1] = NULL;
	if (open_provider(cli, &box, NULL)) {
		row(d, "sandbox provider", "FAIL", "cannot load it (above)");
		return;
	}
	ops = box.ops;
	if (!SBXLOOP_HAS_SLOT(ops, struct sbxloop_sandbox_ops, doctor)) {
		row(d, "sandbox provider", "ok", "%s (no checks of its own)",
		    box.component->name);
		sl_instance_destroy(&box);
		return;
	}
	if (ops->doctor(box.ctx, hosts, provider_row, d, &err)) {
		row(d, "sandbox provider", "FAIL", "%s", err.message);
		sl_instance_destroy(&box);
		return;
	}
	sl_instance_destroy(&box);
	if (d->provider_failures || open_provider(cli, &box, &store))
		return;
	n = count_orphans(&box, &store);
	if (n < 0)
		row(d, "orphaned sandboxes", "warn", "cannot list sandboxes");
	else if (n)
		row(d, "orphaned sandboxes", "warn",
		    "%d orphan candidate(s): see `sbxloop sandbox prune`", n);
	else
		row(d, "orphaned sandboxes", "ok", "none");
	sl_instance_destroy(&store);
	sl_instance_destroy(&box);
}

static void check_worker(struct doctor *d, struct sl_core *core)
{
	char *path = sl_worker_path(core);
	const char *argv[] = {path, "version", NULL};
	struct sbxloop_proc_spec spec;
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
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
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.timeout_s = 30;
	memset(&res, 0, sizeof(res));
	if (sl_proc_run(&spec, &res, &err) || res.exit_code) {
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
	int rc;

	(void)argv;
	if (argc > 1)
		return sl_cli_usage(command("doctor"), 1);
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
	} else {
		row(&d, "github integration", "ok",
		    "disabled (github.repo unset)");
	}
	check_state_dir(&d, cli->core);
	check_worker(&d, cli->core);
	return d.hard_failures ? SL_EXIT_FAIL : SL_EXIT_OK;
}

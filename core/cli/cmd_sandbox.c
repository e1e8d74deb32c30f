/*
 * The sandbox housekeeping commands: `sbxloop sandbox ls|rm|prune` and
 * `sbxloop shell` (UPSTREAM.md 1.7, 1.9, 8.8), and the listing of the
 * sbxloop sandboxes that cmd_secrets.c and cmd_doctor.c share. They
 * reach sandboxes only through the configured provider's ops (the
 * interactive shell is its optional slot) and runs through the store;
 * no substrate CLI is run from here. Called only from the command
 * table in cli.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>
#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "cli/cli.h"
#include "host/runlock.h"
#include "host/runs.h"
#include "common/agents.h"
#include "engine/ids.h"
#include "common/proc.h"
#include "common/util.h"
#include "phases/worker_client.h"

#define MIN_AGE_HOURS 1.0

/* ---------------------------------------------------------- plumbing */

static void box_list_cb(void *user, const struct sbxloop_sandbox_entry *e)
{
	struct sl_box_list *l = user;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->rows = sl_xrealloc(l->rows, l->cap * sizeof(*l->rows));
	}
	l->rows[l->n].name = sl_xstrdup(e->name);
	l->rows[l->n].status = sl_xstrdup(e->status ? e->status : "");
	l->rows[l->n].workspace = sl_xstrdup(e->workspace ? e->workspace : "");
	l->n++;
}

void sl_box_list_release(struct sl_box_list *l)
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

int sl_box_list_fetch(struct sl_instance *box, struct sl_box_list *l,
		      struct sbxloop_error *err)
{
	const struct sbxloop_sandbox_ops *ops = box->ops;

	memset(l, 0, sizeof(*l));
	return ops->list(box->ctx, SL_SANDBOX_PREFIX, box_list_cb, l, err);
}

int sl_box_listed(const struct sl_box_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->rows[i].name, name))
			return 1;
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
	struct sl_instance *box;
	struct sl_box_list l;
	size_t i;
	int rc;

	box = &cli->provider; /* SL_NEEDS_PROVIDER */
	rc = sl_box_list_fetch(box, &l, &err);
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
	sl_box_list_release(&l);
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
	struct sl_instance *box;
	struct sl_box_list l;
	char **targets = NULL;
	const char *run = NULL, *role;
	char run_buf[64];
	size_t n = 0, i;
	int opt, all = 0, rc = 0;

	memset(&l, 0, sizeof(l));
	/* a fresh scan that permutes: options may follow operands */
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'r')
			run = optarg;
		else if (opt == 'a')
			all = 1;
		else
			return sl_cli_usage(sl_cli_command("sandbox"), 1);
	}
	for (; optind < argc; optind++)
		add_target(&targets, &n, argv[optind]);
	if (run) {
		char box_name[SBXLOOP_NAME_MAX];

		if (sl_sandbox_name(box_name, sizeof(box_name), run,
				    "agent")) {
			sl_cli_error("'%s' is too long for a run id", run);
			rc = SL_EXIT_USAGE;
			goto out;
		}
		add_target(&targets, &n, box_name);
		sl_sandbox_name(box_name, sizeof(box_name), run, "github");
		add_target(&targets, &n, box_name);
	}
	box = &cli->provider; /* SL_NEEDS_PROVIDER */
	ops = box->ops;
	if (sl_box_list_fetch(box, &l, &err)) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < l.n; i++) {
		const char *r;

		/* --run: its lanes' sandboxes (sandbox.lanes: per-lane) too */
		if (all || (run &&
			    sl_sandbox_name_parse(l.rows[i].name, run_buf,
						  sizeof(run_buf), &r) == 0 &&
			    !strcmp(run_buf, run)))
			add_target(&targets, &n, l.rows[i].name);
	}
	if (!n) {
		sl_cli_error("nothing to remove: pass a NAME, --run, or "
			     "--all");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (sl_starts_with(targets[i], SL_SANDBOX_PREFIX) &&
		    !sl_box_listed(&l, targets[i])) {
			printf("skip %s: no such sandbox\n", targets[i]);
			continue;
		}
		if (ops->sandbox_remove(box->ctx, targets[i], &err)) {
			printf("skip %s: %s\n", targets[i], err.message);
			continue;
		}
		if (sl_sandbox_name_parse(targets[i], run_buf, sizeof(run_buf),
					  &role) == 0)
			revoke_secrets(cli->core, targets[i], role);
		printf("removed %s\n", targets[i]);
	}
out:
	sl_box_list_release(&l);
	for (i = 0; i < n; i++)
		free(targets[i]);
	free(targets);
	return rc;
}

/* ---------------------------------------------------- sandbox prune */

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
static void classify(struct sl_instance *store, const char *state_dir,
		     const char *name, double min_age_s, int include_kept,
		     struct prune_row *pr)
{
	struct sl_run_driver who;
	const struct sbxloop_store_ops *st = store->ops;
	struct sbxloop_error err = {0, ""};
	struct sl_run ri = {0};
	double last = 0, age;

	memset(pr, 0, sizeof(*pr));
	snprintf(pr->age, sizeof(pr->age), "?");
	snprintf(pr->state, sizeof(pr->state), "-");
	if (sl_starts_with(name, SL_SANDBOX_PREFIX "daemon-github-") ||
	    sl_starts_with(name, SL_SANDBOX_PREFIX "concierge-")) {
		pr->verdict = UNTOUCHED;
		snprintf(pr->reason, sizeof(pr->reason), "daemon-owned");
		return;
	}
	if (sl_sandbox_name_parse(name, pr->run, sizeof(pr->run), &pr->role)) {
		pr->verdict = UNTOUCHED;
		snprintf(pr->run, sizeof(pr->run), "-");
		snprintf(pr->reason, sizeof(pr->reason),
			 "unrecognized naming scheme");
		return;
	}
	if (sl_run_fetch(store, pr->run, &ri, &err)) {
		pr->verdict = ORPHAN;
		snprintf(pr->reason, sizeof(pr->reason),
			 "run unknown here (may belong to another working "
			 "copy)");
		return;
	}
	snprintf(pr->state, sizeof(pr->state), "%s", ri.state);
	pr->kept = *ri.kept_reason != '\0';
	/* a driven run is live however long its step has been silent */
	if (state_dir && sl_runlock_driver(state_dir, pr->run, &who)) {
		pr->verdict = KEEP;
		snprintf(pr->reason, sizeof(pr->reason),
			 "live: driven by pid %ld", who.pid);
		goto out;
	}
	st->event_last_ts(store->ctx, pr->run, &last, &err);
	if (last < ri.updated_at)
		last = ri.updated_at;
	age = last > 0 ? sl_now() - last : -1;
	format_age(age, pr->age, sizeof(pr->age));
	if (pr->kept && !include_kept) {
		pr->verdict = KEEP;
		snprintf(pr->reason, sizeof(pr->reason), "kept (%s)",
			 ri.kept_reason);
		goto out;
	}
	if (sbxloop_run_state_is_terminal(ri.state)) {
		pr->verdict = age >= min_age_s ? ORPHAN : KEEP;
		snprintf(pr->reason, sizeof(pr->reason), "%s",
			 pr->verdict == ORPHAN ? "run finished"
					       : "younger than --min-age");
	} else {
		/* nobody drives it: a resume makes fresh sandboxes */
		pr->verdict = age >= min_age_s ? ORPHAN : KEEP;
		if (pr->verdict == ORPHAN)
			snprintf(pr->reason, sizeof(pr->reason),
				 "interrupted, silent for %s", pr->age);
		else
			snprintf(pr->reason, sizeof(pr->reason),
				 "interrupted, younger than --min-age");
	}
out:
	sl_run_release(&ri);
}

/* Count orphan candidates with the defaults (doctor); -1 on failure. */
int sl_sandbox_count_orphans(struct sl_instance *box,
			     struct sl_instance *store, const char *state_dir)
{
	struct sbxloop_error err = {0, ""};
	struct prune_row pr;
	struct sl_box_list l;
	size_t i;
	int n = 0;

	if (sl_box_list_fetch(box, &l, &err))
		return -1;
	for (i = 0; i < l.n; i++) {
		classify(store, state_dir, l.rows[i].name,
			 MIN_AGE_HOURS * 3600, 0, &pr);
		n += pr.verdict == ORPHAN;
	}
	sl_box_list_release(&l);
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
	struct sl_instance *box, *store;
	struct prune_row pr;
	struct sl_box_list l;
	double min_age = MIN_AGE_HOURS;
	char *end;
	size_t i;
	int opt, include_kept = 0, dry = 0, force = 0, rc = 0, orphans = 0;

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
			return sl_cli_usage(sl_cli_command("sandbox"), 1);
		}
	}
	if (dry)
		force = 0;
	box = &cli->provider; /* SL_NEEDS_PROVIDER */
	store = sl_cli_store(cli, 0, &rc);
	if (!store)
		return rc;
	ops = box->ops;
	st = store->ops;
	if (sl_box_list_fetch(box, &l, &err)) {
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
		classify(store, sl_config_str(cli->core->cfg, "state_dir"),
			 l.rows[i].name, min_age * 3600, include_kept, &pr);
		printf("%-34s %-10s %-12s %-7s %s - %s\n", l.rows[i].name,
		       pr.run, pr.state, pr.age,
		       pr.verdict == ORPHAN ? "orphan" : "keep", pr.reason);
		if (pr.verdict != ORPHAN)
			continue;
		orphans++;
		if (!force)
			continue;
		if (ops->sandbox_remove(box->ctx, l.rows[i].name, &err)) {
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
			st->run_update(store->ctx, &u, NULL, 0, &err);
		}
		printf("removed %s\n", l.rows[i].name);
	}
	printf("note: runs are looked up in this working copy's state "
	       "database only\n");
	if (!force && orphans)
		printf("dry run: %d orphan(s); pass --force to remove them\n",
		       orphans);
out:
	sl_box_list_release(&l);
	return rc;
}

int sl_cmd_sandbox(struct sl_cli *cli, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return sl_cli_usage(sl_cli_command("sandbox"), 1);
	if (!strcmp(sub, "ls"))
		return argc > 2 ? sl_cli_usage(sl_cli_command("sandbox"), 1)
				: sandbox_ls(cli);
	if (!strcmp(sub, "rm"))
		return sandbox_rm(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "prune"))
		return sandbox_prune(cli, argc - 1, argv + 1);
	sl_cli_error("unknown sandbox command '%s'", sub);
	return sl_cli_usage(sl_cli_command("sandbox"), 1);
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
	struct sbxloop_error err = {0, ""};
	struct sl_run ri = {0};
	int known = sl_run_fetch(store, run, &ri, &err) == 0;

	sl_run_release(&ri);
	return known;
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
	struct sl_instance *box, *store;
	const char *role = "agent", *cmd = NULL, *run;
	char *name = NULL;
	struct sl_box_list l;
	int opt, rc = 0;

	memset(&l, 0, sizeof(l));
	/* a fresh scan that permutes: options may follow operands */
	optind = 0;
	while ((opt = getopt_long(argc, argv, "c:", longopts, NULL)) != -1) {
		if (opt == 'r')
			role = optarg;
		else if (opt == 'c')
			cmd = optarg;
		else
			return sl_cli_usage(sl_cli_command("shell"), 1);
	}
	if (optind + 1 != argc)
		return sl_cli_usage(sl_cli_command("shell"), 1);
	run = argv[optind];
	if (strcmp(role, "agent") && strcmp(role, "github")) {
		sl_cli_error("--role must be agent or github, not '%s'", role);
		return SL_EXIT_USAGE;
	}
	box = &cli->provider; /* SL_NEEDS_PROVIDER | SL_NEEDS_STORE */
	store = &cli->store;
	ops = box->ops;
	if (!run_known(store, run)) {
		sl_cli_error("unknown run '%s'", run);
		sl_cli_hint("`sbxloop status` lists the known runs");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!cmd && !SBXLOOP_HAS_SLOT(ops, struct sbxloop_sandbox_ops,
				      interactive_argv)) {
		sl_cli_error("sandbox provider '%s' does not support an "
			     "interactive shell",
			     box->component->name);
		sl_cli_hint("pass -c CMD to run one command instead");
		rc = SL_EXIT_USAGE;
		goto out;
	}
	{
		char box_name[SBXLOOP_NAME_MAX];

		if (sl_sandbox_name(box_name, sizeof(box_name), run, role)) {
			sl_cli_error("'%s' is too long for a run id", run);
			rc = SL_EXIT_USAGE;
			goto out;
		}
		name = sl_xstrdup(box_name);
	}
	if (sl_box_list_fetch(box, &l, &err)) {
		sl_cli_error("cannot list sandboxes: %s", err.message);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	if (!sl_box_listed(&l, name)) {
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
		rc = ops->exec(box->ctx, name, &spec, &res, &err);
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

		if (ops->interactive_argv(box->ctx, name, args,
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
	sl_box_list_release(&l);
	return rc;
}

/*
 * The command table and the helpers every command shares: messages in
 * git's style, usage, --help detection and opening the core. The
 * commands themselves live in the cmd_*.c files beside this one; main()
 * (core/main.c) dispatches through the table.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "host/redact.h"
#include "common/util.h"

/*
 * name, needs (what main() sets up first: SL_NEEDS_*), run, usage,
 * summary, option help. run and resume build their own session
 * (cmd_run.c); doctor opens what it checks itself, to report a failure
 * as a row.
 */
const struct sl_command sl_commands[] = {
	{"init", 0, sl_cmd_init, "sbxloop init [--force]",
	 "write a fully commented sbxloop.yaml with every default",
	 "  --force   overwrite an existing sbxloop.yaml\n"},
	{"config", 0, sl_cmd_config, "sbxloop config show [--json] | policy",
	 "print every resolved key and its source, or the egress policy",
	 "  --json    one JSON object: key -> {value, source, origin}\n"},
	{"plugins", 0, sl_cmd_plugins, "sbxloop plugins [--json]",
	 "list every discoverable plugin module and its components",
	 "  --json    machine-readable listing\n"},
	{"status", SL_NEEDS_STORE_READ, sl_cmd_status,
	 "sbxloop status [RUN] [--json]", "list runs, or one run's tasks",
	 "  --json    machine-readable output\n"},
	{"logs", SL_NEEDS_STORE_READ, sl_cmd_logs,
	 "sbxloop logs RUN [--type PREFIX] [--task ID] [--since SEQ] [--json] "
	 "[--follow] [--stale-after MIN]",
	 "print a run's events, one dense line each",
	 "  --type PREFIX      only events whose type starts with PREFIX\n"
	 "  --task ID          only events of task ID\n"
	 "  --since SEQ        only events after sequence number SEQ\n"
	 "  --json             the event envelopes, one per line\n"
	 "  -f, --follow       keep printing new events until the run ends\n"
	 "  --stale-after MIN  with --follow, stop after MIN idle minutes\n"
	 "                     (default 10; 0 = never)\n"},
	{"run", 0, sl_cmd_run,
	 "sbxloop run OUTCOME [--model ID] [--[no-]keep-sandboxes] "
	 "[--[no-]keep-on-failure] [--no-tui] [--no-chat]",
	 "drive agents through the loop until OUTCOME is done",
	 "  --model ID                     the model the agents use\n"
	 "  --keep-sandboxes               never remove the run's sandboxes\n"
	 "  --keep-on-failure              keep them when the run fails\n"
	 "  --no-tui                       plain transcript, no dashboard\n"
	 "  --no-chat                      no steering from this terminal\n"
	 "  --repo OWNER/NAME              the GitHub repository (github.repo)\n"
	 "  --[no-]report                  keep a tracking issue\n"
	 "  --[no-]deliver                 open a pull request when done\n"
	 "  --deliver-base BRANCH          its base branch\n"
	 "  --[no-]deliver-draft           open it as a draft\n"
	 "  --[no-]create-repo             create a missing repository\n"
	 "  --[no-]create-public           ... public (default private)\n"},
	{"resume", 0, sl_cmd_resume,
	 "sbxloop resume RUN [--no-tui] [--no-chat]",
	 "continue a run from its last committed step on fresh sandboxes",
	 "  --no-tui   plain transcript, no dashboard\n"
	 "  --no-chat  no steering from this terminal\n"},
	{"cancel", SL_NEEDS_STORE, sl_cmd_cancel, "sbxloop cancel RUN",
	 "ask a run to stop at its next phase boundary", ""},
	{"steer", SL_NEEDS_STORE, sl_cmd_steer, "sbxloop steer RUN MESSAGE",
	 "send a run a steering message, answered at its next phase "
	 "boundary",
	 "  MESSAGE  what you want changed; a read-only agent answers it and\n"
	 "           may re-plan the task under way or keep it as standing\n"
	 "           guidance (a stopped run answers it on resume)\n"},
	{"egress", SL_NEEDS_STORE, sl_cmd_egress,
	 "sbxloop egress RUN [--json]",
	 "what the run's plans declared, what was granted, and what its "
	 "sandboxes attempted",
	 "  --json   the report as one JSON object\n"},
	{"artifacts", SL_NEEDS_STORE, sl_cmd_artifacts,
	 "sbxloop artifacts RUN [--tree|--list] [--path]",
	 "list a run's results on the host and what was excluded",
	 "  --tree    show a directory tree (at most 50 lines)\n"
	 "  --list    one line per file with its size (the default)\n"
	 "  --path    print only the artifacts directory\n"},
	{"gc", SL_NEEDS_STORE, sl_cmd_gc,
	 "sbxloop gc [--older-than DAYS] [--dry-run]",
	 "remove old run directories, never a resumable or recent one",
	 "  --older-than DAYS  retention window (default 14)\n"
	 "  --dry-run          only show what would be removed\n"},
	{"sandbox", SL_NEEDS_PROVIDER, sl_cmd_sandbox,
	 "sbxloop sandbox ls | rm [NAME] [--run RUN | --all] | prune "
	 "[--include-kept] [--dry-run] [--force] [--min-age HOURS]",
	 "list, remove or prune the sandboxes of sbxloop runs",
	 "  rm --run RUN      both sandboxes of RUN\n"
	 "  rm --all          every sbxloop-* sandbox\n"
	 "  prune             classify sandboxes against the state database;\n"
	 "                    a dry run unless --force\n"
	 "  --include-kept    prune kept sandboxes too\n"
	 "  --min-age HOURS   silence before a sandbox is an orphan (1)\n"},
	{"shell", SL_NEEDS_PROVIDER | SL_NEEDS_STORE, sl_cmd_shell,
	 "sbxloop shell RUN [--role agent|github] [-c CMD]",
	 "open a shell (or run CMD) in a kept sandbox of RUN",
	 "  --role ROLE       agent (default) or github\n"
	 "  -c, --command CMD run CMD with sh -lc and exit with its code\n"},
	{"secrets", SL_NEEDS_PROVIDER, sl_cmd_secrets,
	 "sbxloop secrets list | clean [--apply] "
	 "[--all]",
	 "inspect or remove the sbx secret registrations sbxloop made",
	 "  clean --apply     remove stale registrations (default: dry run)\n"
	 "  clean --all       also remove live ones sbxloop owns\n"},
	{"deliver", 0, sl_cmd_deliver,
	 "sbxloop deliver RUN [--repo R] [--base B] [--draft] [--create-repo] "
	 "[--create-public] [--[no-]report] [--dry-run]",
	 "deliver a completed run again as one pull request",
	 "  --repo OWNER/NAME  the repository (default: the run's)\n"
	 "  --base BRANCH      the pull request's base (default: the\n"
	 "                     repository's default branch)\n"
	 "  --draft            open it as a draft\n"
	 "  --create-repo      create the repository when it is missing\n"
	 "  --create-public    ... as a public one (default private)\n"
	 "  --[no-]report      note the delivery on the tracking issue\n"
	 "  --dry-run          print what would be sent; no API call\n"},
	{"doctor", SL_NEEDS_CORE, sl_cmd_doctor, "sbxloop doctor [--deep]",
	 "check the sandbox provider, tokens, state dir and worker",
	 "  --deep   also run the security probes on a throwaway sandbox\n"
	 "           pair (canary tokens, no model): a row per probe, and\n"
	 "           exit 1 when a sandbox is weaker than its provider\n"
	 "           claims (docs/security.md)\n"},
	{NULL, 0, NULL, NULL, NULL, NULL},
};

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	struct sl_buf b = SL_BUF_INIT;
	char *clean;

	sl_buf_vaddf(&b, fmt, ap);
	clean = sl_shown(sl_buf_str(&b), SL_TERM_KEEP_NL);
	fprintf(stderr, "%s%s\n", prefix, clean);
	free(clean);
	sl_buf_release(&b);
}

void sl_cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("error: ", fmt, ap);
	va_end(ap);
}

void sl_cli_hint(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("hint: ", fmt, ap);
	va_end(ap);
}

int sl_cli_usage(const struct sl_command *cmd, int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	fprintf(f, "usage: %s\n\n%s\n", cmd->usage, cmd->summary);
	if (cmd->help && *cmd->help)
		fprintf(f, "\n%s", cmd->help);
	return to_stderr ? SL_EXIT_USAGE : SL_EXIT_OK;
}

int sl_cli_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return 1;
	}
	return 0;
}

int sl_cli_open_core(struct sl_cli *cli)
{
	struct sl_config_opts opts;
	char *errors = NULL;
	char *line, *save = NULL;

	if (cli->core)
		return 0;
	memset(&opts, 0, sizeof(opts));
	opts.config_file = cli->config_file;
	if (sl_core_open(&cli->core, &opts, &errors) == 0)
		return 0;
	for (line = strtok_r(errors, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		sl_cli_error("%s", line);
	sl_cli_hint("fix the configuration above; nothing was started");
	free(errors);
	return SL_EXIT_USAGE;
}

const struct sl_command *sl_cli_command(const char *name)
{
	const struct sl_command *c;

	for (c = sl_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* One instance of `kind` named by config key `key`, into *inst. */
static int open_instance(struct sl_cli *cli, enum sbxloop_kind kind,
			 const char *key, struct sl_instance *inst)
{
	struct sbxloop_error err = {0, ""};
	const char *name;

	name = sl_config_str(cli->core->cfg, key);
	if (sl_core_instantiate(cli->core, kind, name ? name : "", inst,
				&err)) {
		sl_cli_error("%s", err.message);
		return SL_EXIT_USAGE;
	}
	return 0;
}

struct sl_instance *sl_cli_store(struct sl_cli *cli, int reader, int *rc)
{
	*rc = sl_cli_open_core(cli);
	if (*rc)
		return NULL;
	if (cli->store.ops)
		return &cli->store;
	cli->core->state_read_only = reader;
	*rc = open_instance(cli, SBXLOOP_KIND_STORE, "plugins.store",
			    &cli->store);
	return *rc ? NULL : &cli->store;
}

struct sl_instance *sl_cli_provider(struct sl_cli *cli, int *rc)
{
	*rc = sl_cli_open_core(cli);
	if (*rc)
		return NULL;
	if (cli->provider.ops)
		return &cli->provider;
	*rc = open_instance(cli, SBXLOOP_KIND_SANDBOX, "plugins.sandbox",
			    &cli->provider);
	return *rc ? NULL : &cli->provider;
}

int sl_cli_setup(struct sl_cli *cli, const struct sl_command *cmd)
{
	int rc = 0;

	if (cmd->needs & (SL_NEEDS_CORE | SL_NEEDS_STORE |
			  SL_NEEDS_STORE_READ | SL_NEEDS_PROVIDER))
		rc = sl_cli_open_core(cli);
	if (!rc && (cmd->needs & (SL_NEEDS_STORE | SL_NEEDS_STORE_READ)))
		sl_cli_store(cli, !(cmd->needs & SL_NEEDS_STORE), &rc);
	if (!rc && (cmd->needs & SL_NEEDS_PROVIDER))
		sl_cli_provider(cli, &rc);
	return rc;
}

void sl_cli_release(struct sl_cli *cli)
{
	sl_instance_destroy(&cli->provider);
	sl_instance_destroy(&cli->store);
	sl_core_close(cli->core);
	cli->core = NULL;
}

int sl_cli_store_failed(const char *run_id, const struct sbxloop_error *err,
			int rc)
{
	if (rc == SBXLOOP_ENOTFOUND && run_id) {
		sl_cli_error("unknown run '%s'", run_id);
		sl_cli_hint("`sbxloop status` lists the known runs");
		return SL_EXIT_USAGE;
	}
	sl_cli_error("%s", err->message);
	return rc == SBXLOOP_ECORRUPT ? SL_EXIT_USAGE : SL_EXIT_FAIL;
}

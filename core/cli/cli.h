/*
 * Shared pieces of the command-line front end: the command table (with
 * what each command needs set up before it runs), exit codes, messages
 * in git's style, the colour switch, and the one way a command reaches
 * the core, the store, the sandbox provider and a run's row.
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <sbxloop/plugin.h>

#include "host/core.h"

enum sl_exit {
	SL_EXIT_OK = 0,
	SL_EXIT_FAIL = 1,
	SL_EXIT_USAGE = 2, /* usage, config, unknown run */
	SL_EXIT_INTERRUPTED = 130
};

/*
 * What a command needs before it runs, declared in the command table as
 * git.c declares RUN_SETUP: main() sets it up (sl_cli_setup) and
 * releases it after the command (sl_cli_release), so no command repeats
 * that code. A command may still open the store or the provider later
 * through sl_cli_store / sl_cli_provider when only some of its paths
 * need them; either way they are opened once and owned by the cli.
 */
#define SL_NEEDS_CORE 0x1u       /* the configuration and the plugins */
#define SL_NEEDS_STORE 0x2u      /* the configured store, read-write */
#define SL_NEEDS_STORE_READ 0x4u /* the store, read-only will do */
#define SL_NEEDS_PROVIDER 0x8u   /* the configured sandbox provider */

struct sl_cli {
	const char *config_file; /* --config */
	int color;               /* stdout is a TTY and NO_COLOR unset */
	struct sl_core *core;    /* opened on demand */
	/* opened on demand, once; released by sl_cli_release */
	struct sl_instance store;
	struct sl_instance provider;
};

struct sl_command {
	const char *name;
	unsigned needs; /* SL_NEEDS_* */
	int (*run)(struct sl_cli *cli, int argc, char **argv);
	const char *usage; /* "sbxloop plugins [--json]" */
	const char *summary;
	const char *help; /* option lines for --help */
};

/* The command table, NULL-name terminated. */
extern const struct sl_command sl_commands[];

void sl_cli_error(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);
void sl_cli_hint(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);
/* Print a command's usage to stdout (help) or stderr (usage error). */
int sl_cli_usage(const struct sl_command *cmd, int to_stderr);
/* Was --help/-h given (anywhere before "--")? */
int sl_cli_wants_help(int argc, char **argv);
/* Open the core (config + plugins); prints errors; 0 or an exit code. */
int sl_cli_open_core(struct sl_cli *cli);
/*
 * The configured store (plugins.store), opened once and owned by the
 * cli; `reader`: the command only reads (a read-only state directory
 * will do). NULL after printing the error, with *rc the exit code.
 */
struct sl_instance *sl_cli_store(struct sl_cli *cli, int reader, int *rc);
/* The configured sandbox provider (plugins.sandbox), likewise. */
struct sl_instance *sl_cli_provider(struct sl_cli *cli, int *rc);
/* What cmd->needs declares; prints errors; 0 or an exit code. */
int sl_cli_setup(struct sl_cli *cli, const struct sl_command *cmd);
/* Release the instances, then the core; the cli may be set up again. */
void sl_cli_release(struct sl_cli *cli);
/* The table entry of command `name` (for usage messages), or NULL. */
const struct sl_command *sl_cli_command(const char *name);
/*
 * Report a failed store call: an unknown run gets the one common
 * wording (exit 2), a damaged store exit 2, anything else exit 1.
 */
int sl_cli_store_failed(const char *run_id, const struct sbxloop_error *err,
			int rc);

/*
 * The sbxloop sandboxes (names starting with SL_SANDBOX_PREFIX) the
 * provider lists, copied out of its callback (cmd_sandbox.c).
 */
struct sl_box_row {
	char *name;
	char *status;
	char *workspace;
};

struct sl_box_list {
	struct sl_box_row *rows;
	size_t n, cap;
};

/* Fill *l (emptied first); the provider's code, err filled on failure. */
int sl_box_list_fetch(struct sl_instance *provider, struct sl_box_list *l,
		      struct sbxloop_error *err);
int sl_box_listed(const struct sl_box_list *l, const char *name);
void sl_box_list_release(struct sl_box_list *l);
/* Orphan candidates under prune's defaults (doctor); -1 if listing fails. */
int sl_sandbox_count_orphans(struct sl_instance *provider,
			     struct sl_instance *store, const char *state_dir);

/*
 * Adopt run `run_id`'s persisted config into core->cfg (UPSTREAM 3.10),
 * reporting what differed as run.config_drift. -1 with the error printed
 * when the run is unknown or the store fails.
 */
int sl_cli_rehydrate(struct sl_core *core, struct sl_instance *store,
		     const char *run_id);

/*
 * The GitHub options of `run` and `deliver` as getopt_long entries whose
 * values run from `base` to base + SL_GITHUB_N_OPTIONS - 1, and the
 * config override the i-th one stands for: kv[0] the key, kv[1] its JSON
 * value (both newly allocated).
 */
#define SL_GITHUB_N_OPTIONS 12
#define SL_GITHUB_OPTIONS(base)                                               \
	{"repo", required_argument, NULL, (base) + 0},                        \
		{"report", no_argument, NULL, (base) + 1},                    \
		{"no-report", no_argument, NULL, (base) + 2},                 \
		{"deliver", no_argument, NULL, (base) + 3},                   \
		{"no-deliver", no_argument, NULL, (base) + 4},                \
		{"deliver-base", required_argument, NULL, (base) + 5},        \
		{"deliver-draft", no_argument, NULL, (base) + 6},             \
		{"no-deliver-draft", no_argument, NULL, (base) + 7},          \
		{"create-repo", no_argument, NULL, (base) + 8},               \
		{"no-create-repo", no_argument, NULL, (base) + 9},            \
		{"create-public", no_argument, NULL, (base) + 10},            \
		{"no-create-public", no_argument, NULL, (base) + 11},         \
		{"draft", no_argument, NULL, (base) + 6},                     \
	{                                                                     \
		"base", required_argument, NULL, (base) + 5                   \
	}
void sl_github_option(int i, const char *arg, char **kv);

int sl_cmd_plugins(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_config(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_init(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_status(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_logs(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_cancel(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_run(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_resume(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_artifacts(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_gc(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_sandbox(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_shell(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_secrets(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_doctor(struct sl_cli *cli, int argc, char **argv);
/* doctor --deep: the security probes on a throwaway pair (exit code) */
int sl_doctor_deep(struct sl_cli *cli);
int sl_cmd_deliver(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_steer(struct sl_cli *cli, int argc, char **argv);
int sl_cmd_egress(struct sl_cli *cli, int argc, char **argv);

/*
 * Chat on a plain terminal (cmd_steer.c): a thread posting each line of
 * a terminal stdin through host->chat_post; NULL when stdin is not a
 * terminal. Stop joins it.
 */
struct sl_chat_stdin;
struct sl_chat_stdin *sl_chat_stdin_start(const struct sbxloop_host *host);
void sl_chat_stdin_stop(struct sl_chat_stdin *c);

#endif

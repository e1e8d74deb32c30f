/*
 * Shared pieces of the command-line front end: the command table, exit
 * codes, messages in git's style and the colour switch.
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

struct sl_cli {
	const char *config_file; /* --config */
	int color;               /* stdout is a TTY and NO_COLOR unset */
	struct sl_core *core;    /* opened on demand */
};

struct sl_command {
	const char *name;
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

#endif

/*
 * Shared pieces of the command-line front end: the command table, exit
 * codes, messages in git's style and the colour switch.
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <sbxloop/plugin.h>

#include "host/core.h"

enum sbx_exit {
	SBX_EXIT_OK = 0,
	SBX_EXIT_FAIL = 1,
	SBX_EXIT_USAGE = 2, /* usage, config, unknown run */
	SBX_EXIT_INTERRUPTED = 130
};

struct sbx_cli {
	const char *config_file; /* --config */
	int color;               /* stdout is a TTY and NO_COLOR unset */
	struct sbx_core *core;   /* opened on demand */
};

struct sbx_command {
	const char *name;
	int (*run)(struct sbx_cli *cli, int argc, char **argv);
	const char *usage; /* "sbxloop plugins [--json]" */
	const char *summary;
	const char *help; /* option lines for --help */
};

/* The command table, NULL-name terminated. */
extern const struct sbx_command sbx_commands[];

void sbx_cli_error(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);
void sbx_cli_hint(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);
/* Print a command's usage to stdout (help) or stderr (usage error). */
int sbx_cli_usage(const struct sbx_command *cmd, int to_stderr);
/* Was --help/-h given (anywhere before "--")? */
int sbx_cli_wants_help(int argc, char **argv);
/* Open the core (config + plugins); prints errors; 0 or an exit code. */
int sbx_cli_open_core(struct sbx_cli *cli);

int sbx_cmd_plugins(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_config(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_init(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_status(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_logs(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_cancel(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_run(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_resume(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_artifacts(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_gc(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_sandbox(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_shell(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_secrets(struct sbx_cli *cli, int argc, char **argv);
int sbx_cmd_doctor(struct sbx_cli *cli, int argc, char **argv);

#endif

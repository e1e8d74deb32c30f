/*
 * sbxloop's entry point: global options, .env loading, secret
 * registration, and dispatch through the command table (core/cli/).
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "host/redact.h"
#include "common/util.h"

static void print_main_help(FILE *f)
{
	const struct sl_command *c;

	fprintf(f, "usage: sbxloop [--config FILE] [--version] [--help] "
		   "COMMAND [ARGS]\n\n"
		   "Drive AI coding agents through a supervised loop in "
		   "isolated sandboxes.\n\n"
		   "commands:\n");
	for (c = sl_commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f,
		"\nglobal options:\n"
		"  --config FILE  read FILE instead of ./sbxloop.yaml (before or\n"
		"                 after the command)\n"
		"  --version      print the version and exit\n"
		"  --help         print this help; `sbxloop COMMAND --help` "
		"for a command\n"
		"\nexit codes: 0 ok, 1 failure, 2 usage or configuration "
		"error, 130 interrupted\n");
}

/*
 * The global --config is accepted after the command too (`sbxloop run
 * --config FILE OUTCOME`), up to a `--`: taken out of argv so that the
 * command's own parser never sees it. -c stays the command's (`shell
 * -c CMD`). 0 or an exit code.
 */
static int take_global_options(struct sl_cli *cli, int *argc, char **argv)
{
	int i, k = 1, rest = 0;

	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (!rest && !strcmp(a, "--"))
			rest = 1;
		if (rest) {
			argv[k++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--config")) {
			if (i + 1 >= *argc) {
				sl_cli_error("option '--config' needs a file");
				return SL_EXIT_USAGE;
			}
			cli->config_file = argv[++i];
			continue;
		}
		if (!strncmp(a, "--config=", 9)) {
			cli->config_file = a + 9;
			continue;
		}
		argv[k++] = argv[i];
	}
	argv[k] = NULL;
	*argc = k;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sl_cli cli;
	const struct sl_command *cmd;
	char *dotenv_err = NULL;
	const char *nc = getenv("NO_COLOR");
	int opt, rc;

	memset(&cli, 0, sizeof(cli));
	cli.color = isatty(STDOUT_FILENO) && !(nc && *nc);
	if (getenv("SBXLOOP_DEBUG"))
		sl_log_set_level(SBXLOOP_LOG_DEBUG);

	/* options before the command only */
	while ((opt = getopt_long(argc, argv, "+hc:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cli.config_file = optarg;
			break;
		case 'V':
			printf("sbxloop %s\n", PACKAGE_VERSION);
			return SL_EXIT_OK;
		case 'h':
			print_main_help(stdout);
			return SL_EXIT_OK;
		default:
			print_main_help(stderr);
			return SL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		print_main_help(stdout);
		return SL_EXIT_OK;
	}
	for (cmd = sl_commands; cmd->name; cmd++)
		if (strcmp(cmd->name, argv[optind]) == 0)
			break;
	if (!cmd->name) {
		sl_cli_error("unknown command '%s'", argv[optind]);
		sl_cli_hint("run `sbxloop --help` for the list of commands");
		return SL_EXIT_USAGE;
	}
	if (sl_dotenv_load(".env", &dotenv_err) < 0)
		sl_cli_error("cannot read '.env'; ignoring it");
	free(dotenv_err);
	sl_secret_register_env();

	argc -= optind;
	argv += optind;
	rc = take_global_options(&cli, &argc, argv);
	if (rc)
		return rc;
	if (sl_cli_wants_help(argc, argv) && strcmp(cmd->name, "config"))
		return sl_cli_usage(cmd, 0);
	optind = 1;
	rc = sl_cli_setup(&cli, cmd);
	if (!rc)
		rc = cmd->run(&cli, argc, argv);
	sl_cli_release(&cli);
	sl_secret_clear();
	return rc;
}

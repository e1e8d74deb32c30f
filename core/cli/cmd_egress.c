/*
 * `sbxloop egress RUN [--json]`: what the run's plans declared, what was
 * granted or refused, and what its sandboxes actually attempted, per
 * task and phase (core/engine/egress_report.c builds it from the store).
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/egress_report.h"
#include "engine/ids.h"
#include "host/redact.h"
#include "host/runs.h"
#include "common/util.h"

int sl_cmd_egress(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	const struct sbxloop_store_ops *ops = cli->store.ops;
	struct sbxloop_error err = {0, ""};
	struct sl_run run;
	cJSON *report = NULL;
	char *text = NULL, *shown;
	size_t len = 0;
	FILE *mem;
	int opt, json = 0, rc;

	memset(&run, 0, sizeof(run));
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt != 'j')
			return sl_cli_usage(sl_cli_command("egress"), 1);
		json = 1;
	}
	if (argc - optind != 1)
		return sl_cli_usage(sl_cli_command("egress"), 1);
	if (!sl_run_id_valid(argv[optind])) {
		sl_cli_error("unknown run %s", argv[optind]);
		return SL_EXIT_USAGE;
	}
	rc = sl_run_fetch_ops(ops, cli->store.ctx, argv[optind], &run, &err);
	sl_run_release(&run);
	if (rc < 0)
		return sl_cli_store_failed(argv[optind], &err, rc);
	rc = sl_egress_report(ops, cli->store.ctx, argv[optind], &report,
			      &err);
	if (rc < 0)
		return sl_cli_store_failed(argv[optind], &err, rc);
	if (json) {
		text = cJSON_PrintUnformatted(report);
		shown = sl_shown(text, SL_TERM_JSON);
		printf("%s\n", shown);
	} else {
		mem = open_memstream(&text, &len);
		if (!mem) {
			cJSON_Delete(report);
			return sl_cli_store_failed(argv[optind], &err,
						   SBXLOOP_ENOMEM);
		}
		sl_egress_report_print(report, mem);
		fclose(mem);
		/* hosts and reasons are agent text: escaped */
		shown = sl_shown(text, SL_TERM_KEEP_NL);
		fputs(shown, stdout);
	}
	free(shown);
	free(text);
	cJSON_Delete(report);
	return 0;
}

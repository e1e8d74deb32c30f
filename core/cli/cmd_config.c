/*
 * `sbxloop config show` and `sbxloop init`: the resolved configuration
 * with sources, and the fully commented starter file.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/egress.h"
#include "common/util.h"

static const struct sl_command *find_cmd(const char *name)
{
	const struct sl_command *c;

	for (c = sl_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static int config_show(struct sl_cli *cli, int json)
{
	struct sl_config *cfg;
	size_t i, n;
	int rc = sl_cli_open_core(cli);

	if (rc)
		return rc;
	cfg = cli->core->cfg;
	n = sl_config_count(cfg);
	if (json) {
		cJSON *root = cJSON_CreateObject();
		char *text;

		for (i = 0; i < n; i++) {
			const struct sl_config_value *v = sl_config_at(cfg, i);
			cJSON *o = cJSON_CreateObject();
			char *yaml = sl_config_value_yaml(v);
			size_t j;

			if (v->spec->type == SBXLOOP_VALUE_LIST) {
				cJSON *a = cJSON_AddArrayToObject(o, "value");

				for (j = 0; j < v->n_items; j++)
					cJSON_AddItemToArray(
						a, cJSON_CreateString(
							   v->items[j]));
			} else if (!v->str) {
				cJSON_AddNullToObject(o, "value");
			} else if (v->spec->type == SBXLOOP_VALUE_STRING) {
				cJSON_AddStringToObject(o, "value", v->str);
			} else if (v->spec->type == SBXLOOP_VALUE_BOOL) {
				cJSON_AddBoolToObject(o, "value",
						      !strcmp(v->str, "true"));
			} else {
				cJSON_AddNumberToObject(o, "value",
							strtod(v->str, NULL));
			}
			cJSON_AddStringToObject(o, "source",
						sl_source_name(v->source));
			if (v->origin)
				cJSON_AddStringToObject(o, "origin",
							v->origin);
			cJSON_AddItemToObject(root, v->spec->path, o);
			free(yaml);
		}
		text = cJSON_Print(root);
		puts(text);
		free(text);
		cJSON_Delete(root);
		return 0;
	}
	for (i = 0; i < n; i++) {
		const struct sl_config_value *v = sl_config_at(cfg, i);
		char *yaml = sl_config_value_yaml(v);

		printf("%-36s %-28s %s%s%s%s\n", v->spec->path, yaml,
		       sl_source_name(v->source), v->origin ? " (" : "",
		       v->origin ? v->origin : "", v->origin ? ")" : "");
		free(yaml);
	}
	return 0;
}

int sl_cmd_config(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const struct sl_command *self = find_cmd("config");
	int json = 0, opt;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)
		return sl_cli_usage(self, argc < 2);
	if (strcmp(argv[1], "policy") == 0) {
		int rc = argc > 2 ? sl_cli_usage(self, 1)
				  : sl_cli_open_core(cli);

		if (!rc)
			sl_egress_print_policy(cli->core->cfg, stdout);
		return rc;
	}
	if (strcmp(argv[1], "show") != 0) {
		sl_cli_error("unknown config subcommand '%s'", argv[1]);
		return sl_cli_usage(self, 1);
	}
	argc--;
	argv++;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h')
			return sl_cli_usage(self, 0);
		if (opt != 'j')
			return sl_cli_usage(self, 1);
		json = 1;
	}
	if (optind < argc) {
		sl_cli_error("unexpected argument '%s'", argv[optind]);
		return SL_EXIT_USAGE;
	}
	return config_show(cli, json);
}

int sl_cmd_init(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"force", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	const char *path =
		cli->config_file ? cli->config_file : "sbxloop.yaml";
	struct sl_config_opts opts;
	struct sl_core *core = NULL;
	char *errors = NULL;
	int force = 0, opt, fd, rc = SL_EXIT_OK;
	FILE *f;

	while ((opt = getopt_long(argc, argv, "f", longopts, NULL)) != -1) {
		if (opt != 'f')
			return sl_cli_usage(find_cmd("init"), 1);
		force = 1;
	}
	if (optind < argc) {
		sl_cli_error("unexpected argument '%s'", argv[optind]);
		return SL_EXIT_USAGE;
	}
	/*
	 * The starter lists defaults only: load without any file or
	 * environment layer, but with the plugins so their keys appear.
	 */
	memset(&opts, 0, sizeof(opts));
	opts.config_file = "/dev/null";
	opts.no_user_file = 1;
	opts.no_env = 1;
	sl_core_open(&core, &opts, &errors);
	free(errors);
	fd = open(path, O_WRONLY | O_CREAT | (force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0) {
		if (errno == EEXIST) {
			sl_cli_error("'%s' already exists", path);
			sl_cli_hint("pass --force to overwrite it");
		} else {
			sl_cli_error("cannot write '%s': %s", path,
				     strerror(errno));
		}
		rc = SL_EXIT_USAGE;
		goto out;
	}
	f = fdopen(fd, "w");
	sl_config_write_starter(core->cfg, f);
	if (fclose(f) != 0) {
		sl_cli_error("cannot write '%s': %s", path, strerror(errno));
		rc = SL_EXIT_FAIL;
		goto out;
	}
	printf("wrote %s\n", path);
out:
	sl_core_close(core);
	return rc;
}

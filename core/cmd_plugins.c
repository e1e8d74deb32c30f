/*
 * `sbxloop plugins`: every discoverable module, loaded or refused, with
 * its components, version, ABI, path, capabilities and refusal reason.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/sandbox.h>

#include "cli.h"
#include "util.h"

static uint32_t component_caps(const struct sbxloop_component *c)
{
	const struct sbxloop_sandbox_ops *ops = c->ops;

	if (c->kind != SBXLOOP_KIND_SANDBOX)
		return 0;
	if (ops->struct_size <
	    offsetof(struct sbxloop_sandbox_ops, static_capabilities) +
		    sizeof(uint32_t))
		return 0;
	return ops->static_capabilities;
}

static void print_text(const struct sbx_registry *reg, int color)
{
	const char *red = color ? "\033[31m" : "";
	const char *green = color ? "\033[32m" : "";
	const char *off = color ? "\033[0m" : "";
	size_t i, j;

	if (reg->n_modules == 0)
		printf("no plugin modules found\n");
	for (i = 0; i < reg->n_modules; i++) {
		const struct sbx_module *m = &reg->modules[i];

		if (!m->desc) {
			printf("%s  %srefused%s  %s\n    %s\n", m->name, red,
			       off, m->path, m->refusal);
			continue;
		}
		printf("%s %s  %sloaded%s  ABI %u.%u  %s\n", m->name,
		       m->desc->version ? m->desc->version : "?", green, off,
		       m->desc->abi_major, m->desc->abi_minor, m->path);
		for (j = 0; j < m->desc->n_components; j++) {
			const struct sbxloop_component *c =
				&m->desc->components[j];
			uint32_t caps = component_caps(c);
			char capbuf[512];

			printf("    %s:%s", sbx_kind_name(c->kind), c->name);
			if (c->struct_size > offsetof(struct sbxloop_component,
						      summary) &&
			    c->summary)
				printf("  %s", c->summary);
			if (c->kind == SBXLOOP_KIND_SANDBOX) {
				sbx_caps_format(caps, capbuf, sizeof(capbuf));
				printf("\n      capabilities: %s",
				       *capbuf ? capbuf : "(none)");
			}
			putchar('\n');
		}
	}
	printf("\nsearch path:");
	for (i = 0; i < reg->n_dirs; i++)
		printf(" %s", reg->dirs[i]);
	putchar('\n');
}

static void print_json(const struct sbx_registry *reg)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *mods = cJSON_AddArrayToObject(root, "modules");
	cJSON *dirs = cJSON_AddArrayToObject(root, "search_path");
	char *text;
	size_t i, j;

	for (i = 0; i < reg->n_dirs; i++)
		cJSON_AddItemToArray(dirs, cJSON_CreateString(reg->dirs[i]));
	for (i = 0; i < reg->n_modules; i++) {
		const struct sbx_module *m = &reg->modules[i];
		cJSON *o = cJSON_CreateObject(), *comps;
		char abi[32];

		cJSON_AddStringToObject(o, "name", m->name);
		cJSON_AddStringToObject(o, "path", m->path);
		cJSON_AddStringToObject(o, "status",
					m->desc ? "loaded" : "refused");
		if (!m->desc) {
			cJSON_AddStringToObject(o, "reason", m->refusal);
			cJSON_AddItemToArray(mods, o);
			continue;
		}
		cJSON_AddStringToObject(o, "version",
					m->desc->version ? m->desc->version
							 : "");
		snprintf(abi, sizeof(abi), "%u.%u", m->desc->abi_major,
			 m->desc->abi_minor);
		cJSON_AddStringToObject(o, "abi", abi);
		comps = cJSON_AddArrayToObject(o, "components");
		for (j = 0; j < m->desc->n_components; j++) {
			const struct sbxloop_component *c =
				&m->desc->components[j];
			cJSON *co = cJSON_CreateObject();

			cJSON_AddStringToObject(co, "kind",
						sbx_kind_name(c->kind));
			cJSON_AddStringToObject(co, "name", c->name);
			if (c->kind == SBXLOOP_KIND_SANDBOX) {
				cJSON *caps = cJSON_AddArrayToObject(
					co, "capabilities");
				char capbuf[512], *tok, *save = NULL;

				sbx_caps_format(component_caps(c), capbuf,
						sizeof(capbuf));
				for (tok = strtok_r(capbuf, ",", &save); tok;
				     tok = strtok_r(NULL, ",", &save))
					cJSON_AddItemToArray(
						caps, cJSON_CreateString(tok));
			}
			cJSON_AddItemToArray(comps, co);
		}
		cJSON_AddItemToArray(mods, o);
	}
	text = cJSON_Print(root);
	puts(text);
	free(text);
	cJSON_Delete(root);
}

int sbx_cmd_plugins(struct sbx_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int json = 0, opt, rc;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt != 'j')
			return sbx_cli_usage(&sbx_commands[2], 1);
		json = 1;
	}
	if (optind < argc) {
		sbx_cli_error("unexpected argument '%s'", argv[optind]);
		return SBX_EXIT_USAGE;
	}
	rc = sbx_cli_open_core(cli);
	if (rc && !cli->core)
		return rc;
	/* A broken config still lets the listing run: it helps fix it. */
	if (json)
		print_json(&cli->core->reg);
	else
		print_text(&cli->core->reg, cli->color);
	return rc;
}

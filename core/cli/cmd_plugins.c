/*
 * `sbxloop plugins`: every discoverable module, loaded or refused, with
 * its components, version, ABI, path, capabilities and refusal reason.
 * A sandbox provider's capabilities are shown twice: the best case its
 * descriptor claims, and for the configured provider what the instance
 * created from this config reports (probed in a child process, so a
 * provider that crashes or exits in create() cannot end the listing).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>

#include "cli/cli.h"
#include "common/util.h"

/* What the configured provider's instance says about itself. */
struct probe {
	const struct sbxloop_component *component; /* NULL: none loaded */
	int ok;      /* the instance was created and answered */
	int faulted; /* it crashed or exited inside the plugin */
	uint32_t caps;
	char why[SBXLOOP_ERROR_MAX + 128]; /* when !ok */
};

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

/* In the child: create the instance, ask it, report "C<caps>" or "E<why>". */
static void probe_child(struct sl_core *core, const char *name, int fd)
{
	struct sl_instance inst;
	struct sbxloop_error err = {0, ""};
	struct sl_plugin_call call;
	const struct sbxloop_sandbox_ops *ops;
	struct sl_buf b = SL_BUF_INIT;
	uint32_t caps;

	if (sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX, name, &inst,
				&err) < 0) {
		sl_buf_addf(&b, "E%s", err.message);
	} else {
		ops = inst.ops;
		sl_plugin_enter(&call, inst.module, "capabilities()");
		caps = ops->capabilities(inst.ctx);
		sl_plugin_leave(&call);
		sl_instance_destroy(&inst);
		sl_buf_addf(&b, "C%lu", (unsigned long)caps);
	}
	if (write(fd, b.buf, b.len) < 0)
		_exit(1);
	_exit(0);
}

static void probe_configured(struct sl_core *core, struct probe *pr)
{
	const char *name = sl_config_str(core->cfg, "plugins.sandbox");
	const struct sl_module *m = NULL;
	struct sl_buf b = SL_BUF_INIT;
	char chunk[512];
	int fds[2], status = 0;
	ssize_t n;
	pid_t pid;

	memset(pr, 0, sizeof(*pr));
	if (!name)
		name = "local";
	pr->component =
		sl_registry_find(&core->reg, SBXLOOP_KIND_SANDBOX, name, &m);
	if (!pr->component)
		return;
	fflush(stdout);
	fflush(stderr);
	if (pipe(fds) < 0) {
		snprintf(pr->why, sizeof(pr->why), "cannot create a pipe: %s",
			 strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(pr->why, sizeof(pr->why), "cannot fork: %s",
			 strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		probe_child(core, name, fds[1]);
	}
	close(fds[1]);
	while ((n = read(fds[0], chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		sl_buf_add(&b, chunk, (size_t)n);
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		pr->faulted = 1;
		snprintf(pr->why, sizeof(pr->why),
			 "module '%s' (%s) crashed with signal %d (%s)",
			 m->name, m->path, WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	} else if (WIFEXITED(status) &&
		   WEXITSTATUS(status) == SL_EXIT_PLUGIN_EXITED) {
		pr->faulted = 1;
		snprintf(pr->why, sizeof(pr->why),
			 "module '%s' (%s) called exit()", m->name, m->path);
	} else if (b.len > 1 && b.buf[0] == 'C') {
		pr->ok = 1;
		pr->caps = (uint32_t)strtoul(b.buf + 1, NULL, 10);
	} else if (b.len > 1 && b.buf[0] == 'E') {
		snprintf(pr->why, sizeof(pr->why), "%s", b.buf + 1);
	} else {
		/* it died in plugin code some other way (a sanitizer's
		 * handler exits instead of dying of the signal) */
		pr->faulted = 1;
		snprintf(pr->why, sizeof(pr->why),
			 "module '%s' (%s) ended the probe without an answer "
			 "(exit status %d)",
			 m->name, m->path,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	sl_buf_release(&b);
}

static void print_text(const struct sl_registry *reg, const struct probe *pr,
		       int color)
{
	const char *red = color ? "\033[31m" : "";
	const char *green = color ? "\033[32m" : "";
	const char *off = color ? "\033[0m" : "";
	size_t i, j;

	if (reg->n_modules == 0)
		printf("no plugin modules found\n");
	for (i = 0; i < reg->n_modules; i++) {
		const struct sl_module *m = &reg->modules[i];

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

			printf("    %s:%s", sl_kind_name(c->kind), c->name);
			if (c->struct_size > offsetof(struct sbxloop_component,
						      summary) &&
			    c->summary)
				printf("  %s", c->summary);
			if (c == pr->component && pr->ok) {
				sl_caps_format(pr->caps, capbuf,
					       sizeof(capbuf));
				printf("\n      capabilities (configured): %s",
				       *capbuf ? capbuf : "(none)");
			} else if (c == pr->component) {
				printf("\n      capabilities (configured): "
				       "unavailable: %s",
				       pr->why);
			}
			if (c->kind == SBXLOOP_KIND_SANDBOX) {
				sl_caps_format(caps, capbuf, sizeof(capbuf));
				printf("\n      capabilities (best case): %s",
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

/* The names of `caps` as a JSON array in `o` under `key`. */
static void add_caps(cJSON *o, const char *key, uint32_t caps)
{
	cJSON *arr = cJSON_AddArrayToObject(o, key);
	char capbuf[512], *tok, *save = NULL;

	sl_caps_format(caps, capbuf, sizeof(capbuf));
	for (tok = strtok_r(capbuf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		cJSON_AddItemToArray(arr, cJSON_CreateString(tok));
}

static void print_json(const struct sl_registry *reg, const struct probe *pr)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *mods = cJSON_AddArrayToObject(root, "modules");
	cJSON *dirs = cJSON_AddArrayToObject(root, "search_path");
	char *text;
	size_t i, j;

	for (i = 0; i < reg->n_dirs; i++)
		cJSON_AddItemToArray(dirs, cJSON_CreateString(reg->dirs[i]));
	for (i = 0; i < reg->n_modules; i++) {
		const struct sl_module *m = &reg->modules[i];
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
						sl_kind_name(c->kind));
			cJSON_AddStringToObject(co, "name", c->name);
			if (c->kind == SBXLOOP_KIND_SANDBOX) {
				cJSON_AddBoolToObject(co, "configured",
						      c == pr->component);
				add_caps(co, "capabilities_best_case",
					 component_caps(c));
			}
			if (c == pr->component && pr->ok)
				add_caps(co, "capabilities_configured",
					 pr->caps);
			else if (c == pr->component)
				cJSON_AddStringToObject(co, "configured_error",
							pr->why);
			cJSON_AddItemToArray(comps, co);
		}
		cJSON_AddItemToArray(mods, o);
	}
	text = cJSON_Print(root);
	puts(text);
	free(text);
	cJSON_Delete(root);
}

int sl_cmd_plugins(struct sl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	struct probe pr;
	int json = 0, opt, rc;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt != 'j')
			return sl_cli_usage(sl_cli_command("plugins"), 1);
		json = 1;
	}
	if (optind < argc) {
		sl_cli_error("unexpected argument '%s'", argv[optind]);
		return SL_EXIT_USAGE;
	}
	rc = sl_cli_open_core(cli);
	if (rc && !cli->core)
		return rc;
	/* A broken config still lets the listing run: it helps fix it. */
	if (rc)
		memset(&pr, 0, sizeof(pr));
	else
		probe_configured(cli->core, &pr);
	if (json)
		print_json(&cli->core->reg, &pr);
	else
		print_text(&cli->core->reg, &pr, cli->color);
	if (pr.faulted) {
		sl_cli_error("the configured sandbox provider is unusable: %s",
			     pr.why);
		return SL_EXIT_FAIL;
	}
	return rc;
}

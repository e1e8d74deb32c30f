/*
 * hello: an event sink built out of tree against the installed sbxloop
 * SDK. It prints one greeting per run lifecycle event to the file named
 * by its `hello.path` setting (standard error when unset) and shows the
 * whole surface a third-party plugin touches: the descriptor, one ops
 * table, declared config keys and the host services table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/events.h>
#include <sbxloop/sink.h>

struct hello {
	const struct sbxloop_host *host;
	FILE *out;
	long seen;
};

static int hello_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	struct hello *h = calloc(1, sizeof(*h));
	const char *path = host->config_string(host, "hello.path");

	if (!h)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "out of memory");
	h->host = host;
	h->out = stderr;
	if (path && *path) {
		h->out = fopen(path, "a");
		if (!h->out) {
			free(h);
			return host->error_set(host, err, SBXLOOP_ERR,
					       "cannot open '%s'", path);
		}
	}
	*ctx = h;
	return 0;
}

static void hello_destroy(void *ctx)
{
	struct hello *h = ctx;

	if (h->out != stderr)
		fclose(h->out);
	free(h);
}

static int hello_event(void *ctx, const struct sbxloop_event *ev,
		       struct sbxloop_error *err)
{
	struct hello *h = ctx;

	(void)err;
	h->seen++;
	if (strncmp(ev->type, SBXLOOP_EV_FAMILY_RUN,
		    strlen(SBXLOOP_EV_FAMILY_RUN)) == 0)
		fprintf(h->out, "hello from %s: %s\n", ev->run_id, ev->type);
	return 0;
}

static const struct sbxloop_sink_ops hello_ops = {
	.struct_size = sizeof(hello_ops),
	.create = hello_create,
	.destroy = hello_destroy,
	.event = hello_event,
};

static const struct sbxloop_config_key hello_keys[] = {
	{"path", SBXLOOP_VALUE_STRING, NULL, NULL,
	 "file the greetings are appended to (default: standard error)"},
	{NULL, 0, NULL, NULL, NULL},
};

static const struct sbxloop_component hello_components[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "hello",
	 &hello_ops, hello_keys, "greets every run lifecycle event"},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER, .name = "hello",
		.version = "1.0.0",        .components = hello_components,
		.n_components = 1,
};

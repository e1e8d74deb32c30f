/* Test-only module for the loader suite: a sink whose create() always fails. */
#include "testmod.h"

static int failing_create(const struct sbxloop_host *host, void **ctx,
			  struct sbxloop_error *err)
{
	return host->error_set(host, err, SBXLOOP_EINVAL,
			       "cannot reach the collector at 'nowhere:1'");
}
static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = failing_create,
	.destroy = testmod_destroy,
	.event = testmod_event,
};
static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "failsink", &ops,
	 NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "create_fails",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

/* Test-only module for the loader suite: a sink without its required event slot. */
#include "testmod.h"

static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = testmod_create,
	.destroy = testmod_destroy,
};
static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "slotsink", &ops,
	 NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "missing_slot",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

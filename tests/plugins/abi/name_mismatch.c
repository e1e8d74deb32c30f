/* Test-only module for the loader suite: a descriptor whose name is not its file's. */
#include "testmod.h"

static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = testmod_create,
	.destroy = testmod_destroy,
	.event = testmod_event,
};

static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "namesink", &ops,
	 NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "something_else",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

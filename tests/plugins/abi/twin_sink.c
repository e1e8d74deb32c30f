/* Test-only module for the loader suite: provides sink:testsink, which module good already provides. */
#include "testmod.h"

static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = testmod_create,
	.destroy = testmod_destroy,
	.event = testmod_event,
};

static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "testsink", &ops,
	 NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER, .name = "twin_sink", .version = "1",
		.components = comps,       .n_components = 1,
};

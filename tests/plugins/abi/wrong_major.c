/* Test-only module for the loader suite: built for a different ABI major. */
#include "testmod.h"

static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = testmod_create,
	.destroy = testmod_destroy,
	.event = testmod_event,
};

static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "majorsink",
	 &ops, NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		.magic = SBXLOOP_PLUGIN_MAGIC,
		.abi_major = SBXLOOP_ABI_MAJOR + 1,
		.abi_minor = 0,
		.struct_size = sizeof(struct sbxloop_plugin_descriptor),
		.name = "wrong_major",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

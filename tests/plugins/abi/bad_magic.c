/* Test-only module for the loader suite: a descriptor with the wrong magic. */
#include "testmod.h"

static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = testmod_create,
	.destroy = testmod_destroy,
	.event = testmod_event,
};

static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "magicsink",
	 &ops, NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		.magic = 0xdeadbeefu,
		.abi_major = SBXLOOP_ABI_MAJOR,
		.abi_minor = SBXLOOP_ABI_MINOR,
		.struct_size = sizeof(struct sbxloop_plugin_descriptor),
		.name = "bad_magic",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

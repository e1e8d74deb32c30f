/* Test-only module for the loader suite: a well-formed sink that declares one config key. */
#include "testmod.h"

static const struct sbxloop_sink_ops ops = {
	.struct_size = sizeof(ops),
	.create = testmod_create,
	.destroy = testmod_destroy,
	.event = testmod_event,
};

static const struct sbxloop_config_key keys[] = {
	{"color", SBXLOOP_VALUE_STRING, "blue", "blue|red", "a colour"},
	{"depth", SBXLOOP_VALUE_INT, "3", NULL, "a depth"},
	{NULL, 0, NULL, NULL, NULL},
};
static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "testsink", &ops,
	 keys, "test sink"},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER, .name = "good",
		.version = "1.2.3",        .components = comps,
		.n_components = 1,
};

/*
 * The sinks module: its descriptor, the only symbol it exports. The
 * components live in plain.c (the dense transcript on stdout) and
 * jsonl.c (envelope lines appended to a file).
 */
#include <sbxloop/sink.h>

#include "sinks.h"

static const struct sbxloop_component components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SINK,
		.name = "plain",
		.ops = &sinks_plain_ops,
		.config_keys = sinks_plain_keys,
		.summary = "the run's transcript, one dense line per event, "
			   "on stdout",
	},
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SINK,
		.name = "jsonl",
		.ops = &sinks_jsonl_ops,
		.config_keys = sinks_jsonl_keys,
		.summary = "every event as one JSON line appended to a file",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "sinks",
		.version = "1.0",
		.components = components,
		.n_components = sizeof(components) / sizeof(components[0]),
};

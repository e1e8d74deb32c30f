/* Test-only module for the loader suite: built against an older minor whose sink ops end before flush. */
#include "testmod.h"

/* The sink ops as they were before flush was appended. */
struct old_sink_ops {
	uint32_t struct_size;
	int (*create)(const struct sbxloop_host *, void **,
		      struct sbxloop_error *);
	void (*destroy)(void *);
	int (*event)(void *, const struct sbxloop_event *,
		     struct sbxloop_error *);
};
/* Followed in memory by a non-NULL pointer the core must never read. */
static const struct {
	struct old_sink_ops ops;
	void *trap;
} old = {
	{sizeof(struct old_sink_ops), testmod_create, testmod_destroy,
	 testmod_event},
	(void *)1,
};
static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SINK, "oldersink",
	 &old.ops, NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "older_minor",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

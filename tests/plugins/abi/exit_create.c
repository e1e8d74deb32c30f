/* Test-only module for the loader suite: a sandbox provider whose
 * create() calls exit(0), as a library that gives up might. */
#include <stdlib.h>

#include "faultmod.h"

static int exit_create(const struct sbxloop_host *host, void **ctx,
		       struct sbxloop_error *err)
{
	*ctx = NULL;
	exit(0);
}

static const struct sbxloop_sandbox_ops ops = FAULTMOD_OPS(exit_create);
static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SANDBOX, "exitbox",
	 &ops, NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "exit_create",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

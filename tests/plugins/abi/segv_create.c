/* Test-only module for the loader suite: a sandbox provider whose
 * create() writes to read-only memory (a real SIGSEGV, which the
 * sanitizers' null-pointer checks do not intercept). */
#include "faultmod.h"

static const int read_only = 0;

static int segv_create(const struct sbxloop_host *host, void **ctx,
		       struct sbxloop_error *err)
{
	volatile int *volatile target = (volatile int *)&read_only;

	*ctx = NULL;
	*target = 1;
	return 0;
}

static const struct sbxloop_sandbox_ops ops = FAULTMOD_OPS(segv_create);
static const struct sbxloop_component comps[] = {
	{sizeof(struct sbxloop_component), SBXLOOP_KIND_SANDBOX, "segv", &ops,
	 NULL, NULL},
};
SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "segv_create",
		.version = "1",
		.components = comps,
		.n_components = 1,
};

/*
 * Shared pieces of the loader's fault modules (segv_create, exit_create):
 * a sandbox provider whose every slot but create() is an inert stub, so
 * each module differs only in how its create() dies.
 */
#ifndef FAULTMOD_H
#define FAULTMOD_H

#include "config.h"

#include <sbxloop/sandbox.h>

static void faultmod_destroy(void *ctx)
{
	(void)ctx;
}

static uint32_t faultmod_caps(void *ctx)
{
	(void)ctx;
	return 0;
}

static int faultmod_create_box(void *ctx,
			       const struct sbxloop_sandbox_spec *spec,
			       struct sbxloop_sandbox_info *info,
			       struct sbxloop_error *err)
{
	return SBXLOOP_EUNSUPPORTED;
}

static int faultmod_remove(void *ctx, const char *name,
			   struct sbxloop_error *err)
{
	return 0;
}

static int faultmod_exec(void *ctx, const char *name,
			 const struct sbxloop_exec_spec *spec,
			 struct sbxloop_proc_result *res,
			 struct sbxloop_error *err)
{
	return SBXLOOP_EUNSUPPORTED;
}

static int faultmod_copy(void *ctx, const char *name, const char *a,
			 const char *b, struct sbxloop_error *err)
{
	return SBXLOOP_EUNSUPPORTED;
}

static int faultmod_list(void *ctx, const char *prefix,
			 void (*cb)(void *user,
				    const struct sbxloop_sandbox_entry *entry),
			 void *user, struct sbxloop_error *err)
{
	return 0;
}

#define FAULTMOD_OPS(create_fn)                                               \
	{                                                                     \
		.struct_size = sizeof(struct sbxloop_sandbox_ops),            \
		.create = create_fn, .destroy = faultmod_destroy,             \
		.static_capabilities = SBXLOOP_CAP_NETWORK_DISABLED,          \
		.capabilities = faultmod_caps,                                \
		.sandbox_create = faultmod_create_box,                        \
		.sandbox_remove = faultmod_remove, .exec = faultmod_exec,     \
		.copy_in = faultmod_copy, .copy_out = faultmod_copy,          \
		.list = faultmod_list,                                        \
	}

#endif

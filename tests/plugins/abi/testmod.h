/*
 * Shared pieces of the loader's test-only modules: a sink whose ops
 * record nothing, so each module can vary exactly one descriptor field.
 */
#ifndef TESTMOD_H
#define TESTMOD_H

#include "config.h"

#include <stdlib.h>

#include <sbxloop/sink.h>

static __attribute__((unused)) int testmod_create(
	const struct sbxloop_host *host, void **ctx, struct sbxloop_error *err)
{
	*ctx = calloc(1, sizeof(int));
	return *ctx ? 0 : SBXLOOP_ENOMEM;
}

static __attribute__((unused)) void testmod_destroy(void *ctx)
{
	free(ctx);
}

static __attribute__((unused)) int testmod_event(
	void *ctx, const struct sbxloop_event *ev, struct sbxloop_error *err)
{
	++*(int *)ctx;
	return 0;
}

#endif

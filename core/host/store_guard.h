/*
 * The store guard: the redaction boundary in front of every store
 * instance. sbx_core_instantiate() wraps each store it creates, so no
 * caller in the core reaches a store plugin around it.
 */
#ifndef SBX_STORE_GUARD_H
#define SBX_STORE_GUARD_H

#include "host/core.h"

/*
 * Put the guard in front of the store instance `inst` (created, its ops
 * a struct sbxloop_store_ops): afterwards inst->ops is the guard's table
 * and inst->ctx its context; sbx_instance_destroy() destroys both.
 */
void sbx_store_guard_wrap(struct sbx_instance *inst);

#endif

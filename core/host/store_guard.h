/*
 * The store guard: the redaction boundary in front of every store
 * instance. sl_core_instantiate() wraps each store it creates, so no
 * caller in the core reaches a store plugin around it.
 */
#ifndef SL_STORE_GUARD_H
#define SL_STORE_GUARD_H

#include "host/core.h"

/*
 * Put the guard in front of the store instance `inst` (created, its ops
 * a struct sbxloop_store_ops): afterwards inst->ops is the guard's table
 * and inst->ctx its context; sl_instance_destroy() destroys both.
 */
void sl_store_guard_wrap(struct sl_instance *inst);

#endif

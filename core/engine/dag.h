/*
 * Task graph validation and ordering for DECOMPOSE: unique ids, resolved
 * dependencies, no self-dependency, no cycle; order by dependency depth,
 * then authored position.
 */
#ifndef SL_DAG_H
#define SL_DAG_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include <sbxloop/plugin.h>

/*
 * `tasks` is a JSON array of objects with string `id` and an array of
 * string `depends_on`. On success *order (caller frees) holds n indices
 * into `tasks` in execution order. A violation is SBXLOOP_EINVAL with a
 * message meant for the agent.
 */
int sl_dag_order(const cJSON *tasks, size_t **order, size_t *n,
		 struct sbxloop_error *err);

#endif

/*
 * The decomposition's task graph: checks it is a DAG and produces the
 * deterministic order tasks are stored and run in. Used by
 * phases/decompose.c (semantic check of DECOMPOSE), whose order the
 * engine stores as the roster.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/dag.h"
#include "common/util.h"

struct node {
	const char *id;
	const cJSON *deps;
	int depth; /* -1 unknown */
	int visiting;
	size_t pos;
};

static long find_node(const struct node *nodes, size_t n, const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(nodes[i].id, id) == 0)
			return (long)i;
	return -1;
}

static int depth_of(struct node *nodes, size_t n, size_t i,
		    struct sbxloop_error *err)
{
	const cJSON *d;
	int best = -1;

	if (nodes[i].depth >= 0)
		return nodes[i].depth;
	if (nodes[i].visiting)
		return sl_error(err, SBXLOOP_EINVAL,
				"the dependencies form a cycle through task "
				"'%s'",
				nodes[i].id);
	nodes[i].visiting = 1;
	cJSON_ArrayForEach (d, nodes[i].deps) {
		long j = find_node(nodes, n, d->valuestring);
		int rc;

		rc = depth_of(nodes, n, (size_t)j, err);
		if (rc < 0)
			return rc;
		if (rc > best)
			best = rc;
	}
	nodes[i].visiting = 0;
	nodes[i].depth = best + 1;
	return nodes[i].depth;
}

static int cmp_node(const void *a, const void *b)
{
	const struct node *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int sl_dag_order(const cJSON *tasks, size_t **order, size_t *n_out,
		 struct sbxloop_error *err)
{
	size_t n = (size_t)cJSON_GetArraySize(tasks), i;
	struct node *nodes = NULL;
	int rc = 0;

	*order = NULL;
	*n_out = 0;
	if (n == 0)
		return sl_error(err, SBXLOOP_EINVAL,
				"the task list is empty; at least one task "
				"is required");
	nodes = sl_xcalloc(n, sizeof(*nodes));
	for (i = 0; i < n; i++) {
		const cJSON *t = cJSON_GetArrayItem(tasks, (int)i);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id");

		nodes[i].id = cJSON_IsString(id) ? id->valuestring : "";
		nodes[i].deps =
			cJSON_GetObjectItemCaseSensitive(t, "depends_on");
		nodes[i].depth = -1;
		nodes[i].pos = i;
		if (!*nodes[i].id) {
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "task %zu has an empty id", i + 1);
			goto out;
		}
		if (find_node(nodes, i, nodes[i].id) >= 0) {
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "task id '%s' is used more than once",
				      nodes[i].id);
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		const cJSON *d;

		cJSON_ArrayForEach (d, nodes[i].deps) {
			if (!cJSON_IsString(d) ||
			    find_node(nodes, n, d->valuestring) < 0) {
				rc = sl_error(err, SBXLOOP_EINVAL,
					      "task '%s' depends on '%s', "
					      "which is not a task",
					      nodes[i].id,
					      cJSON_IsString(d)
						      ? d->valuestring
						      : "?");
				goto out;
			}
			if (strcmp(d->valuestring, nodes[i].id) == 0) {
				rc = sl_error(err, SBXLOOP_EINVAL,
					      "task '%s' depends on itself",
					      nodes[i].id);
				goto out;
			}
		}
	}
	for (i = 0; i < n; i++) {
		rc = depth_of(nodes, n, i, err);
		if (rc < 0)
			goto out;
	}
	rc = 0;
	qsort(nodes, n, sizeof(*nodes), cmp_node);
	*order = sl_xcalloc(n, sizeof(**order));
	for (i = 0; i < n; i++)
		(*order)[i] = nodes[i].pos;
	*n_out = n;
out:
	free(nodes);
	return rc;
}

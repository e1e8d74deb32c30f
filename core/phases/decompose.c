/*
 * DECOMPOSE: the outcome into a task graph, with its strict schema (task
 * ids, fields, a DAG in execution order, linted verify commands) and the
 * max_tasks budget. Called by the engine through phases.h.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "phases/phases_internal.h"
#include "engine/dag.h"
#include "engine/ids.h"

/*
 * A task id ends up in paths, rows and terminal lines: refuse anything
 * but a short safe name, quoting at most 40 bytes of it, made printable.
 */
static int task_id_field(const cJSON *t, const char *what, struct sl_buf *msg)
{
	const char *id = sl_json_str(t, "id", "");
	size_t n = strlen(id), i;

	if (sl_task_id_valid(id))
		return 0;
	sl_buf_addf(msg, "%s: id '", what);
	for (i = 0; i < n && i < 40; i++)
		sl_buf_addc(msg, isprint((unsigned char)id[i]) ? id[i] : '?');
	if (n > 40)
		sl_buf_addf(msg, "...' (%zu bytes", n);
	else
		sl_buf_adds(msg, "'");
	sl_buf_addf(msg,
		    "%s is not a valid task id: use 1 to %d of A-Z, a-z, "
		    "0-9, '.', '_' and '-', not starting with '.' or '-'",
		    n > 40 ? ")" : "", SL_TASK_ID_MAX);
	return -1;
}

static int validate_decompose(const struct sl_phase_ctx *pc, const cJSON *in,
			      cJSON **out, struct sl_buf *msg)
{
	static const char *const top[] = {"tasks", NULL};
	static const char *const keys[] = {"id",
					   "title",
					   "description",
					   "depends_on",
					   "acceptance_criteria",
					   "verify_commands",
					   NULL};
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(in, "tasks");
	const cJSON *t;
	cJSON *norm = cJSON_CreateArray(), *graph = NULL;
	struct sbxloop_error derr = {0, ""};
	struct sl_buf lint = SL_BUF_INIT;
	size_t *order = NULL, n = 0, i;
	long long max_tasks =
		sl_config_int(pc->core->cfg, "budgets.max_tasks", 20);
	int idx = 0;

	if (sl_schema_only_keys(in, top, "the response", msg) < 0)
		goto fail;
	if (!cJSON_IsArray(tasks)) {
		sl_buf_adds(msg, "the response needs a 'tasks' list");
		goto fail;
	}
	/* count first: 50,000 tasks must not be validated one by one */
	for (t = tasks->child; t; t = t->next)
		n++;
	if ((long long)n > max_tasks) {
		sl_buf_addf(msg,
			    "decomposition produced %zu tasks, more than "
			    "budgets.max_tasks=%lld",
			    n, max_tasks);
		cJSON_Delete(norm);
		return 1;
	}
	n = 0;
	cJSON_ArrayForEach (t, tasks) {
		cJSON *o = cJSON_CreateObject();
		char what[32];

		snprintf(what, sizeof(what), "task %d", ++idx);
		cJSON_AddItemToArray(norm, o);
		if (sl_schema_only_keys(t, keys, what, msg) < 0 ||
		    sl_schema_str_field(t, "id", NULL, 1, what, o, msg) < 0 ||
		    task_id_field(t, what, msg) < 0 ||
		    sl_schema_str_field(t, "title", NULL, 1, what, o, msg) <
			    0 ||
		    sl_schema_str_field(t, "description", "", 0, what, o,
					msg) < 0 ||
		    sl_schema_str_list(t, "depends_on", 0, what, o, msg) < 0 ||
		    sl_schema_str_list(t, "acceptance_criteria", 0, what, o,
				       msg) < 0 ||
		    sl_schema_str_list(t, "verify_commands", 0, what, o, msg) <
			    0)
			goto fail;
	}
	if (sl_dag_order(norm, &order, &n, &derr) < 0) {
		sl_buf_adds(msg, derr.message);
		goto fail;
	}
	cJSON_ArrayForEach (t, norm) {
		char *prefix =
			sl_xasprintf("task %s: ", sl_json_str(t, "id", "?"));

		sl_verify_lint(
			pc->core,
			cJSON_GetObjectItemCaseSensitive(t, "verify_commands"),
			prefix, &lint);
		free(prefix);
	}
	if (lint.len) {
		sl_buf_adds(msg, "verify commands break the rules:\n");
		sl_buf_adds(msg, sl_buf_str(&lint));
		goto fail;
	}
	graph = cJSON_CreateObject();
	{
		cJSON *ordered = cJSON_AddArrayToObject(graph, "tasks");

		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(
				ordered,
				cJSON_Duplicate(cJSON_GetArrayItem(
							norm, (int)order[i]),
						1));
	}
	free(order);
	cJSON_Delete(norm);
	sl_buf_release(&lint);
	*out = graph;
	return 0;
fail:
	free(order);
	cJSON_Delete(norm);
	sl_buf_release(&lint);
	return -1;
}

int sl_phase_decompose(const struct sl_phase_ctx *pc, cJSON **graph,
		       struct sbxloop_error *err)
{
	cJSON *vars = sl_phase_base_vars(pc);
	char num[32];
	int rc;

	snprintf(num, sizeof(num), "%lld",
		 sl_config_int(pc->core->cfg, "budgets.max_tasks", 20));
	sl_phase_var_set(vars, "max_tasks", num);
	rc = sl_phase_json(pc, "decompose", "decomposer", 0, vars, "",
			   validate_decompose, graph, NULL, err);
	cJSON_Delete(vars);
	return rc;
}

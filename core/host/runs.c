/*
 * The run-row accessor (runs.h): copies a store's borrowed run row into
 * owned memory. Used by the commands (status, cancel, logs, artifacts,
 * gc, sandbox, shell) and the engine; nothing else reads run rows.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "host/runs.h"
#include "common/util.h"

static char *own(const char *s)
{
	return sl_xstrdup(s ? s : "");
}

void sl_run_release(struct sl_run *r)
{
	free(r->run_id);
	free(r->outcome);
	free(r->state);
	free(r->config_json);
	free(r->workspace);
	free(r->kept_reason);
	free(r->reason);
	free(r->guidance_json);
	memset(r, 0, sizeof(*r));
}

void sl_run_copy_row(struct sl_run *out, const struct sbxloop_run_row *row)
{
	sl_run_release(out);
	out->run_id = own(row->run_id);
	out->outcome = own(row->outcome);
	out->state = own(row->state);
	out->config_json = own(row->config_json);
	out->workspace = own(row->workspace);
	out->kept_reason = own(row->kept_reason);
	out->reason = own(row->reason);
	out->guidance_json = own(row->guidance_json);
	out->created_at = row->created_at;
	out->updated_at = row->updated_at;
	out->mounted = row->mounted;
	out->tasks_total = row->tasks_total;
	out->tasks_done = row->tasks_done;
	out->attempts = row->attempts;
}

static int copy_cb(void *user, const struct sbxloop_run_row *row)
{
	sl_run_copy_row(user, row);
	return 0;
}

int sl_run_fetch(const struct sl_instance *store, const char *run_id,
		 struct sl_run *out, struct sbxloop_error *err)
{
	return sl_run_fetch_ops(store->ops, store->ctx, run_id, out, err);
}

int sl_run_fetch_ops(const struct sbxloop_store_ops *ops, void *ctx,
		     const char *run_id, struct sl_run *out,
		     struct sbxloop_error *err)
{
	int rc;

	sl_run_release(out);
	rc = ops->run_get(ctx, run_id, copy_cb, out, err);
	if (rc)
		sl_run_release(out);
	else if (!out->run_id)
		rc = SBXLOOP_ENOTFOUND; /* a store that called back nothing */
	return rc;
}

/*
 * Taking up a run's persisted config (`resume`, `deliver`): every key the
 * run was created with is restored except the ones that belong to the
 * process (state_dir, keep_sandboxes, keep_on_failure), and what differs
 * from the current config is reported as one run.config_drift event.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <sbxloop/store.h>

#include "cli/cli.h"
#include "host/events.h"
#include "host/redact.h"
#include "common/util.h"

struct stored_cfg {
	char *config_json;
	int found;
};

static int stored_cfg_cb(void *user, const struct sbxloop_run_row *run)
{
	struct stored_cfg *sc = user;

	sc->found = 1;
	sc->config_json = sl_xstrdup(run->config_json);
	return 0;
}

/*
 * Adopt the run's persisted config except the resume-time choices, and
 * report what differed from the current one as run.config_drift.
 */
int sl_cli_rehydrate(struct sl_core *core, struct sl_instance *store,
		     const char *run_id)
{
	static const char *const own[] = {"state_dir", "keep_sandboxes",
					  "keep_on_failure"};
	const struct sbxloop_store_ops *st = store->ops;
	struct sbxloop_error err = {0, ""};
	struct stored_cfg sc = {NULL, 0};
	struct sl_buf diff = SL_BUF_INIT;
	char *cur_text = NULL;
	cJSON *stored = NULL, *cur = NULL, *it;
	int rc;

	rc = st->run_get(store->ctx, run_id, stored_cfg_cb, &sc, &err);
	if (rc == SBXLOOP_ENOTFOUND || (rc == 0 && !sc.found)) {
		sl_cli_error("unknown run %s", run_id);
		rc = -1;
		goto out;
	}
	if (rc < 0) {
		sl_cli_error("resume failed: %s", err.message);
		goto out;
	}
	sl_core_set_run(core, run_id);
	stored = sc.config_json ? cJSON_Parse(sc.config_json) : NULL;
	if (!cJSON_IsObject(stored)) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(
			d, "message",
			"the run's stored config is unreadable; "
			"resuming with the current config");
		sl_emit(core, SBXLOOP_EV_RUN_CONFIG_DRIFT, NULL, d);
		rc = 0;
		goto out;
	}
	cur_text = sl_config_to_json(core->cfg);
	cur = cJSON_Parse(cur_text);
	cJSON_ArrayForEach (it, stored) {
		const cJSON *now =
			cJSON_GetObjectItemCaseSensitive(cur, it->string);
		char *a, *b = NULL, *error = NULL;
		size_t k;
		int skip = 0;

		for (k = 0; k < SL_ARRAY_SIZE(own); k++)
			if (strcmp(own[k], it->string) == 0)
				skip = 1;
		if (skip || !now)
			continue;
		a = cJSON_PrintUnformatted(it);
		b = cJSON_PrintUnformatted(now);
		if (strcmp(a, b) != 0) {
			if (diff.len)
				sl_buf_adds(&diff, ", ");
			sl_buf_addf(&diff, "%s (run: %s, current: %s)",
				    it->string, a, b);
			if (!cJSON_IsNull(it) &&
			    sl_config_set(core->cfg, it->string, a, &error) <
				    0)
				sl_log(SBXLOOP_LOG_WARN,
				       "cannot restore '%s' from the run's "
				       "config: %s",
				       it->string, error ? error : "rejected");
			free(error);
		}
		free(a);
		free(b);
	}
	if (diff.len) {
		cJSON *d = cJSON_CreateObject();
		char *msg = sl_xasprintf("resuming with the run's original "
					 "config; the current config "
					 "differs: %s",
					 sl_buf_str(&diff));

		cJSON_AddStringToObject(d, "message", msg);
		free(msg);
		sl_emit(core, SBXLOOP_EV_RUN_CONFIG_DRIFT, NULL, d);
	}
	rc = 0;
out:
	sl_buf_release(&diff);
	cJSON_Delete(stored);
	cJSON_Delete(cur);
	free(cur_text);
	free(sc.config_json);
	return rc;
}

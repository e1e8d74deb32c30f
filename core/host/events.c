/*
 * The host event bus: builds each event's envelope, masks secrets in it,
 * appends it to the store and fans it out to sinks and reporters. Owns
 * struct sl_bus and the routing of host->emit(). The engine, the CLI and
 * (through the host table) plugins call it; nothing else writes events.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/reporter.h>
#include <sbxloop/sink.h>
#include <sbxloop/store.h>

#include "host/events.h"
#include "common/json.h"
#include "host/redact.h"
#include "common/util.h"

/* A sink or reporter the bus feeds (borrowed instance). */
struct bus_target {
	struct sl_instance *inst;
	int is_reporter;
	int detached;
};

struct sl_bus {
	struct sl_core *core;
	struct sl_instance *store;
	struct bus_target *targets;
	size_t n_targets;
	pthread_mutex_t lock; /* recursive: a sink may emit */
	struct sl_buf line;   /* the envelope being built */
};

/* ---------------------------------------------------------------- JSON */

/*
 * A timestamp to the microsecond, without trailing zeros. Integer
 * formatting: "%.6f" was the single most expensive step of an event.
 */
static void add_ts(struct sl_buf *b, double ts)
{
	char num[48];
	long long us, sec, frac;
	int n, i;

	if (!(ts >= 0 && ts < 1e12)) {
		sl_buf_addf(b, "%.6f", isfinite(ts) ? ts : 0.0);
		return;
	}
	us = llround(ts * 1e6);
	sec = us / 1000000;
	frac = us % 1000000;
	n = snprintf(num, sizeof(num), "%lld", sec);
	if (frac) {
		num[n++] = '.';
		for (i = 5; i >= 0; i--) {
			num[n + i] = (char)('0' + frac % 10);
			frac /= 10;
		}
		n += 6;
		while (num[n - 1] == '0')
			n--;
	}
	sl_buf_add(b, num, (size_t)n);
}

/* ----------------------------------------------------------------- bus */

static struct sl_bus *bus_of(struct sl_core *core);

static void fan_out(struct sl_bus *bus, const struct sbxloop_event *ev)
{
	size_t i;

	for (i = 0; i < bus->n_targets; i++) {
		struct bus_target *t = &bus->targets[i];
		struct sbxloop_error err = {0, ""};
		int rc;

		if (t->detached)
			continue;
		if (t->is_reporter) {
			const struct sbxloop_reporter_ops *ops = t->inst->ops;

			rc = ops->event(t->inst->ctx, ev, &err);
		} else {
			const struct sbxloop_sink_ops *ops = t->inst->ops;

			rc = ops->event(t->inst->ctx, ev, &err);
		}
		if (rc == 0)
			continue;
		t->detached = 1;
		sl_log(SBXLOOP_LOG_WARN, "%s '%s' failed and was detached: %s",
		       t->is_reporter ? "reporter" : "sink",
		       t->inst->component ? t->inst->component->name : "?",
		       err.message[0] ? err.message : "no reason given");
	}
}

/*
 * Store and fan out one event whose data is already sorted. The envelope
 * is written by hand with "data" first, so that unless redaction changed
 * the line, the data text is a slice of it and nothing is parsed again.
 */
static int bus_publish(struct sl_bus *bus, double ts, const char *type,
		       const char *job_id, const char *data_json)
{
	struct sl_core *core = bus->core;
	struct sbxloop_event ev;
	struct sl_buf *b;
	struct sl_buf local = SL_BUF_INIT;
	struct sbxloop_error err = {0, ""};
	char *clean = NULL, *data = NULL;
	cJSON *parsed = NULL;
	size_t data_len = strlen(data_json);
	int64_t seq = 0;
	int rc = 0;

	pthread_mutex_lock(&bus->lock);
	/* a sink emitting from inside fan_out must not clobber our line */
	b = bus->line.len ? &local : &bus->line;
	sl_buf_add(b, "{\"data\":", 8);
	sl_buf_add(b, data_json, data_len);
	sl_buf_add(b, ",\"job_id\":", 10);
	sl_buf_add_json_str(b, job_id);
	sl_buf_add(b, ",\"run_id\":", 10);
	sl_buf_add_json_str(b, core->run_id);
	sl_buf_add(b, ",\"ts\":", 6);
	add_ts(b, ts);
	sl_buf_add(b, ",\"type\":", 8);
	sl_buf_add_json_str(b, type);
	sl_buf_add(b, ",\"v\":1}", 7);

	memset(&ev, 0, sizeof(ev));
	ev.struct_size = sizeof(ev);
	ev.ts = ts;
	ev.run_id = core->run_id;
	ev.job_id = job_id;
	ev.type = type;
	clean = sl_redact(b->buf);
	if (strcmp(clean, b->buf) == 0) {
		ev.json = b->buf;
		data = sl_xstrndup(data_json, data_len);
	} else {
		/* a secret was masked: take every field from the clean text */
		parsed = cJSON_Parse(clean);
		if (!parsed) {
			rc = SBXLOOP_EINVAL;
			sl_log(SBXLOOP_LOG_WARN,
			       "event '%s' dropped: unparseable after "
			       "redaction",
			       type);
			goto out;
		}
		data = cJSON_PrintUnformatted(
			cJSON_GetObjectItemCaseSensitive(parsed, "data"));
		ev.job_id = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(parsed, "job_id"));
		ev.type = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(parsed, "type"));
		ev.run_id = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(parsed, "run_id"));
		ev.json = clean;
	}
	ev.data_json = data;

	if (bus->store && ev.run_id) {
		const struct sbxloop_store_ops *ops = bus->store->ops;

		rc = ops->event_append(bus->store->ctx, &ev, &seq, &err);
		if (rc) {
			sl_log(SBXLOOP_LOG_ERROR,
			       "cannot store event '%s': %s", ev.type,
			       err.message);
			goto out;
		}
		ev.seq = seq;
	}
	fan_out(bus, &ev);
out:
	cJSON_Delete(parsed);
	free(clean);
	free(data);
	if (b == &bus->line)
		sl_buf_reset(b);
	sl_buf_release(&local);
	pthread_mutex_unlock(&bus->lock);
	return rc;
}

static int emit_at(struct sl_core *core, double ts, const char *type,
		   const char *job_id, cJSON *data)
{
	struct sl_bus *bus = bus_of(core);
	char *text;
	int rc;

	if (!bus) {
		cJSON_Delete(data);
		return 0;
	}
	if (!data)
		data = cJSON_CreateObject();
	sl_json_sort(data);
	text = cJSON_PrintUnformatted(data);
	cJSON_Delete(data);
	if (!text)
		return SBXLOOP_ENOMEM;
	rc = bus_publish(bus, ts, type, job_id, text);
	cJSON_free(text);
	return rc;
}

int sl_emit(struct sl_core *core, const char *type, const char *job_id,
	    cJSON *data)
{
	return emit_at(core, sl_now(), type, job_id, data);
}

/* host->emit(): plugins hand data as text. */
static int bus_host_emit(struct sl_core *core, const char *type,
			 const char *job_id, const char *data_json)
{
	cJSON *data = NULL;

	if (!type || !*type)
		return SBXLOOP_EINVAL;
	if (data_json) {
		data = cJSON_Parse(data_json);
		if (!cJSON_IsObject(data)) {
			cJSON_Delete(data);
			sl_log(SBXLOOP_LOG_WARN,
			       "event '%s' dropped: its data is not a JSON "
			       "object",
			       type);
			return SBXLOOP_EINVAL;
		}
	}
	return sl_emit(core, type, job_id, data);
}

static struct sl_bus *bus_of(struct sl_core *core)
{
	if (!core || core->emit != bus_host_emit)
		return NULL;
	return core->emit_user;
}

int sl_bus_open(struct sl_core *core, struct sl_instance *store,
		struct sl_bus **out, struct sbxloop_error *err)
{
	struct sl_bus *bus;
	pthread_mutexattr_t attr;

	*out = NULL;
	if (!core)
		return sl_error(err, SBXLOOP_EINVAL, "no core for the bus");
	bus = sl_xcalloc(1, sizeof(*bus));
	bus->core = core;
	bus->store = store && store->ops ? store : NULL;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&bus->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	core->emit = bus_host_emit;
	core->emit_user = bus;
	*out = bus;
	return 0;
}

void sl_bus_close(struct sl_bus *bus)
{
	struct sbxloop_error err = {0, ""};

	if (!bus)
		return;
	if (sl_bus_flush(bus->core, &err))
		sl_log(SBXLOOP_LOG_WARN, "%s", err.message);
	if (bus->core->emit_user == bus) {
		bus->core->emit = NULL;
		bus->core->emit_user = NULL;
	}
	pthread_mutex_destroy(&bus->lock);
	sl_buf_release(&bus->line);
	free(bus->targets);
	free(bus);
}

static void add_target(struct sl_bus *bus, struct sl_instance *inst,
		       int is_reporter)
{
	if (!bus || !inst || !inst->ops)
		return;
	pthread_mutex_lock(&bus->lock);
	bus->targets = sl_xrealloc(
		bus->targets, (bus->n_targets + 1) * sizeof(*bus->targets));
	bus->targets[bus->n_targets].inst = inst;
	bus->targets[bus->n_targets].is_reporter = is_reporter;
	bus->targets[bus->n_targets].detached = 0;
	bus->n_targets++;
	pthread_mutex_unlock(&bus->lock);
}

void sl_bus_add_sink(struct sl_bus *bus, struct sl_instance *sink)
{
	add_target(bus, sink, 0);
}

void sl_bus_add_reporter(struct sl_bus *bus, struct sl_instance *rep)
{
	add_target(bus, rep, 1);
}

void sl_bus_detach(struct sl_bus *bus, struct sl_instance *inst)
{
	size_t i;

	if (!bus)
		return;
	pthread_mutex_lock(&bus->lock);
	for (i = 0; i < bus->n_targets; i++)
		if (bus->targets[i].inst == inst)
			bus->targets[i].detached = 1;
	pthread_mutex_unlock(&bus->lock);
}

int sl_bus_flush(struct sl_core *core, struct sbxloop_error *err)
{
	struct sl_bus *bus = bus_of(core);
	size_t i;
	int rc = 0;

	if (!bus)
		return 0;
	pthread_mutex_lock(&bus->lock);
	for (i = 0; i < bus->n_targets; i++) {
		struct bus_target *t = &bus->targets[i];
		const struct sbxloop_sink_ops *ops = t->inst->ops;
		struct sbxloop_error serr = {0, ""};

		if (t->detached || t->is_reporter ||
		    !SBXLOOP_HAS_SLOT(ops, struct sbxloop_sink_ops, flush))
			continue;
		if (ops->flush(t->inst->ctx, &serr)) {
			t->detached = 1;
			sl_log(SBXLOOP_LOG_WARN,
			       "sink '%s' failed and was detached: %s",
			       t->inst->component->name, serr.message);
		}
	}
	if (bus->store) {
		const struct sbxloop_store_ops *ops = bus->store->ops;

		rc = ops->flush(bus->store->ctx, err);
	}
	pthread_mutex_unlock(&bus->lock);
	return rc;
}

/* --------------------------------------------------------- worker lines */

/*
 * The closed set of types a worker emits (UPSTREAM 6.4, the worker's
 * sources). A line claiming any other type (run.*, task.*, policy.*,
 * chat.*, ...) may have been written by a process inside the sandbox
 * through /proc/<worker>/fd/1, so it is relayed as worker.stdout text and
 * never under the type it claims.
 */
static const char *const worker_types[] = {
	SBXLOOP_EV_WORKER_START,
	SBXLOOP_EV_WORKER_HEARTBEAT,
	SBXLOOP_EV_WORKER_RESULT,
	SBXLOOP_EV_WORKER_ERROR,
	SBXLOOP_EV_WORKER_END,
	SBXLOOP_EV_AGENT_MESSAGE,
	SBXLOOP_EV_AGENT_MESSAGE_DELTA,
	SBXLOOP_EV_AGENT_TOOL_START,
	SBXLOOP_EV_AGENT_TOOL_END,
	SBXLOOP_EV_AGENT_USAGE,
	SBXLOOP_EV_AGENT_PERMISSION_DENIED,
	SBXLOOP_EV_AGENT_TOOL_CAP,
	SBXLOOP_EV_AGENT_TOOL_REQUEST,
	SBXLOOP_EV_AGENT_TOOL_RESPONSE,
	SBXLOOP_EV_AGENT_NOTICE,
	SBXLOOP_EV_AGENT_RESUME_DROPPED,
	SBXLOOP_EV_AGENT_CLI_VERSION,
	SBXLOOP_EV_GH_OP_START,
	SBXLOOP_EV_GH_OP_PROGRESS,
	SBXLOOP_EV_GH_OP_END,
	SBXLOOP_EV_GH_RETRY,
	SBXLOOP_EV_SANDBOX_RESOURCES,
	SBXLOOP_EV_SANDBOX_RESOURCES_WARNING,
	SBXLOOP_EV_SANDBOX_TOOLING_WARNING,
};

int sl_event_is_worker_type(const char *type)
{
	size_t i;

	for (i = 0; type && i < sizeof(worker_types) / sizeof(*worker_types);
	     i++)
		if (!strcmp(type, worker_types[i]))
			return 1;
	return 0;
}

/* Envelope keys a worker line may carry; any other key makes it text. */
static int envelope_key(const char *k)
{
	return !strcmp(k, "v") || !strcmp(k, "ts") || !strcmp(k, "run_id") ||
	       !strcmp(k, "job_id") || !strcmp(k, "type") ||
	       !strcmp(k, "data");
}

/*
 * Does enrichment key `key` apply to an event of `type`? `role` belongs
 * on resource samples and `agent` on agent.* events (UPSTREAM 6.4); any
 * other key a caller passes applies everywhere.
 */
static int enrich_applies(const char *key, const char *type)
{
	if (!strcmp(key, "role"))
		return sl_starts_with(type, "sandbox.resources");
	if (!strcmp(key, "agent"))
		return sl_starts_with(type, "agent.");
	return 1;
}

static int relay_as_text(struct sl_core *core, const char *line, size_t len)
{
	cJSON *data = cJSON_CreateObject();
	char *copy = sl_xstrndup(line, len);

	cJSON_AddStringToObject(data, "line", copy);
	free(copy);
	return sl_emit(core, SBXLOOP_EV_WORKER_STDOUT, NULL, data);
}

int sl_bus_relay_worker_line(struct sl_core *core, const char *line,
			     size_t len, const cJSON *enrich, cJSON **result)
{
	cJSON *root = NULL, *item, *data, *type, *ts, *job, *e;
	double when;
	size_t i = 0;
	int rc;

	if (result)
		*result = NULL;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	/* most non-event output never reaches the JSON parser */
	if (i == len || line[i] != '{')
		return i == len ? 0 : relay_as_text(core, line, len);
	root = cJSON_ParseWithLength(line, len);
	if (!cJSON_IsObject(root))
		goto text;
	item = cJSON_GetObjectItemCaseSensitive(root, "sbxloop_result");
	if (item) {
		item = cJSON_DetachItemFromObjectCaseSensitive(root, "result");
		if (result)
			*result = item ? item : cJSON_CreateObject();
		else
			cJSON_Delete(item);
		cJSON_Delete(root);
		return 1;
	}
	for (item = root->child; item; item = item->next)
		if (!item->string || !envelope_key(item->string))
			goto text;
	type = cJSON_GetObjectItemCaseSensitive(root, "type");
	data = cJSON_GetObjectItemCaseSensitive(root, "data");
	if (!cJSON_IsString(type) ||
	    !sl_event_is_worker_type(type->valuestring) ||
	    (data && !cJSON_IsObject(data)))
		goto text;
	/* the worker echoes the job's run id: another one is not its line */
	item = cJSON_GetObjectItemCaseSensitive(root, "run_id");
	if (item && !cJSON_IsNull(item) &&
	    (!cJSON_IsString(item) ||
	     (core->run_id && strcmp(item->valuestring, core->run_id))))
		goto text;
	ts = cJSON_GetObjectItemCaseSensitive(root, "ts");
	when = cJSON_IsNumber(ts) && isfinite(ts->valuedouble) &&
			       ts->valuedouble > 0
		       ? ts->valuedouble
		       : sl_now();
	data = data ? cJSON_DetachItemViaPointer(root, data)
		    : cJSON_CreateObject();
	for (e = enrich ? enrich->child : NULL; e; e = e->next) {
		if (!e->string ||
		    !enrich_applies(e->string, type->valuestring) ||
		    cJSON_GetObjectItemCaseSensitive(data, e->string))
			continue;
		cJSON_AddItemToObject(data, e->string, cJSON_Duplicate(e, 1));
	}
	job = cJSON_GetObjectItemCaseSensitive(root, "job_id");
	rc = emit_at(core, when, type->valuestring, cJSON_GetStringValue(job),
		     data);
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
text:
	cJSON_Delete(root);
	return relay_as_text(core, line, len);
}

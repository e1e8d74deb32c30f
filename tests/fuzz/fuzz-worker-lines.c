/*
 * libFuzzer target for the host's relay of worker stdout lines
 * (sl_bus_relay_worker_line, core/host/events.c): every input line goes
 * through the bus with enrichment, as core/phases/worker_client.c relays a
 * worker's output, with a secret registered. It must not crash or leak,
 * and every envelope a sink receives must be a JSON object whose data is
 * an object, with the secret masked.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <sbxloop/sink.h>

#include "host/core.h"
#include "host/events.h"
#include "host/redact.h"
#include "common/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "fuzz-secret-token-value"

static int check_event(void *ctx, const struct sbxloop_event *ev,
		       struct sbxloop_error *err)
{
	cJSON *env = cJSON_Parse(ev->json);
	cJSON *d = cJSON_Parse(ev->data_json);

	(void)ctx;
	(void)err;
	if (!cJSON_IsObject(env) || !cJSON_IsObject(d) || !ev->type) {
		fprintf(stderr, "fuzz-worker-lines: bad envelope: %s\n",
			ev->json);
		abort();
	}
	if (strstr(ev->json, SECRET) || strstr(ev->data_json, SECRET)) {
		fprintf(stderr, "fuzz-worker-lines: unmasked: %s\n", ev->json);
		abort();
	}
	cJSON_Delete(env);
	cJSON_Delete(d);
	return 0;
}

static const struct sbxloop_sink_ops sink_ops = {
	.struct_size = sizeof(struct sbxloop_sink_ops),
	.event = check_event,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sl_log_set_level(SBXLOOP_LOG_ERROR);
	sl_secret_register(SECRET);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_core core;
	struct sl_instance sink;
	struct sl_bus *bus = NULL;
	struct sbxloop_error err = {0, ""};
	cJSON *enrich = cJSON_CreateObject();
	size_t pos = 0;

	memset(&core, 0, sizeof(core));
	memset(&sink, 0, sizeof(sink));
	core.run_id = "r1";
	sink.ops = &sink_ops;
	cJSON_AddStringToObject(enrich, "role", "agent");
	cJSON_AddStringToObject(enrich, "task_id", "t1");
	if (sl_bus_open(&core, NULL, &bus, &err) != 0)
		abort();
	sl_bus_add_sink(bus, &sink);
	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t end = nl ? (size_t)(nl - data) + 1 : size;
		/* the relay gets the line with its newline, not NUL-ended */
		char *line = sl_xstrndup((const char *)data + pos, end - pos);
		cJSON *result = NULL;

		sl_bus_relay_worker_line(&core, line, end - pos, enrich,
					 &result);
		cJSON_Delete(result);
		free(line);
		pos = end;
	}
	sl_bus_close(bus);
	cJSON_Delete(enrich);
	return 0;
}

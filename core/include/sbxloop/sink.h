/*
 * Event sink: receives every event of a run after redaction, in order.
 * Sinks fan out; one that fails is logged once and detached, and the run
 * goes on.
 *
 * Required slots: create, destroy, event.
 */
#ifndef SBXLOOP_SINK_H
#define SBXLOOP_SINK_H

#include <sbxloop/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One event: the envelope {v, ts, run_id, job_id?, type, data}. All
 * strings are borrowed for the call. `json` is the whole envelope as one
 * compact line (keys sorted), ready to write.
 */
struct sbxloop_event {
	uint32_t struct_size;
	int64_t seq; /* store sequence, 0 before it is stored */
	double ts;   /* Unix epoch seconds */
	const char *run_id;
	const char *job_id;    /* NULL when none */
	const char *type;      /* "task.state", "policy.allow", ... */
	const char *data_json; /* the data object as JSON text */
	const char *json;      /* the full envelope line */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_sink_ops {
	uint32_t struct_size;
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);
	int (*event)(void *ctx, const struct sbxloop_event *ev,
		     struct sbxloop_error *err);
	/* Optional: write out anything buffered (called at run end). */
	int (*flush)(void *ctx, struct sbxloop_error *err);
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};
SBXLOOP_OPS_HEAD_CHECK(struct sbxloop_sink_ops);

#ifdef __cplusplus
}
#endif
#endif

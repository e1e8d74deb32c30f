/*
 * Reporter: tells the outside world about a run (a GitHub tracking issue)
 * and delivers its result (a pull request). Reporters fan out; their
 * failures are logged and never change a run's state.
 *
 * Required slots: create, destroy, run_start, event, run_end.
 */
#ifndef SBXLOOP_REPORTER_H
#define SBXLOOP_REPORTER_H

#include <sbxloop/plugin.h>
#include <sbxloop/sink.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbxloop_run_info {
	uint32_t struct_size;
	const char *run_id;
	const char *outcome;
	const char *state;
	const char *workspace;     /* host path, may be NULL */
	const char *artifacts_dir; /* host path, may be NULL */
	int resumed;
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

/* Delivery result; strings copied in. */
struct sbxloop_delivery {
	uint32_t struct_size;
	long long number; /* PR number, 0 if none */
	char url[1024];
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_reporter_ops {
	uint32_t struct_size;
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);
	int (*run_start)(void *ctx, const struct sbxloop_run_info *run,
			 struct sbxloop_error *err);
	int (*event)(void *ctx, const struct sbxloop_event *ev,
		     struct sbxloop_error *err);
	int (*run_end)(void *ctx, const struct sbxloop_run_info *run,
		       struct sbxloop_error *err);
	/* Optional: deliver a completed run's artifacts. */
	int (*deliver)(void *ctx, const struct sbxloop_run_info *run,
		       struct sbxloop_delivery *out,
		       struct sbxloop_error *err);
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};
SBXLOOP_OPS_HEAD_CHECK(struct sbxloop_reporter_ops);

#ifdef __cplusplus
}
#endif
#endif

/*
 * Reporter: tells the outside world about a run (a GitHub tracking issue)
 * and delivers its result (a pull request). Reporters fan out; their
 * failures are logged and never change a run's state.
 *
 * Required slots: create, destroy, run_start, event, run_end.
 *
 * run_start is called once the run's sandboxes exist, before any phase
 * (and by `sbxloop deliver` with state "completed" around its github
 * sandbox); SBXLOOP_EINVAL from it fails the run with its message (a
 * delivery repository that does not exist), any other failure is logged.
 * deliver, for a completed run, and run_end come before teardown, on
 * the engine's thread. event may come from any thread that emits.
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
	/*
	 * 1.5: the sandbox worked on `workspace` itself (else its results
	 * were harvested into artifacts_dir), and the tasks as a JSON array
	 * of {id, title, state, verify_commands}. Check SBXLOOP_HAS_FIELD.
	 */
	int mounted;
	const char *tasks_json;
	/* ---- the members of ABI 1.5 end here ---- */
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
	/*
	 * Optional: deliver a completed run's artifacts. SBXLOOP_EUNSUPPORTED
	 * when this reporter is not asked to deliver (nothing is logged).
	 */
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

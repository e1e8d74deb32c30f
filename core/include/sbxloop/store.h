/*
 * Store: persists runs, tasks, phase attempts and events, and answers
 * the queries `status`, `logs`, `cancel`, `resume` and `gc` make. Exactly
 * one store is active.
 *
 * Durability contract
 *   - Every call that changes a run, task or attempt is durable when it
 *     returns (committed), and so is every event appended before it: the
 *     event log never lags the state.
 *   - event_append() may buffer; flush() makes buffered events durable.
 *   - Several processes may use one store at once (a running `run` plus
 *     `status`, `logs --follow`, `cancel`); none of them may fail because
 *     another holds a lock.
 *
 * Rows handed to callbacks are borrowed for the callback's duration.
 * A callback returning nonzero stops the iteration (the call returns 0).
 *
 * Required slots: every slot of 1.0.
 */
#ifndef SBXLOOP_STORE_H
#define SBXLOOP_STORE_H

#include <sbxloop/plugin.h>
#include <sbxloop/sink.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbxloop_run_row {
	uint32_t struct_size;
	const char *run_id;
	const char *outcome;
	const char *state;
	const char *config_json; /* the resolved config at creation */
	double created_at;
	double updated_at;
	const char *workspace; /* NULL until provisioned */
	int mounted;
	const char *kept_reason;   /* NULL, "manual" or "debug" */
	const char *reason;        /* why terminal, or NULL */
	const char *guidance_json; /* JSON array of strings */
	int tasks_total;           /* filled by run_get / run_list */
	int tasks_done;
	int attempts; /* phase attempts recorded */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_task_row {
	uint32_t struct_size;
	const char *run_id;
	const char *task_id;
	int order_idx; /* topological position, 0-based */
	const char *state;
	const char *spec_json;
	const char *plan_json; /* NULL when no plan */
	int revisions;
	int replans;
	const char *last_feedback;
	const char *session_id; /* NULL when none */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_attempt_row {
	uint32_t struct_size;
	int64_t id; /* set by the store */
	const char *run_id;
	const char *task_id; /* NULL for decompose */
	const char *phase;
	int attempt;
	const char *status;
	const char *output_json;
	double started_at;
	double ended_at;
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_event_query {
	uint32_t struct_size;
	const char *run_id;
	int64_t after_seq;       /* events with seq > after_seq */
	const char *type_prefix; /* literal prefix, or NULL */
	const char *task_id;     /* data.task_id equals, or NULL */
	int64_t limit;           /* 0 = all */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

/* Mutations of a run row: set the fields whose flag is on. */
enum sbxloop_run_field {
	SBXLOOP_RUN_STATE = 1u << 0,     /* state (+ reason) */
	SBXLOOP_RUN_WORKSPACE = 1u << 1, /* workspace + mounted */
	SBXLOOP_RUN_KEPT = 1u << 2,      /* kept_reason (no updated_at bump) */
	SBXLOOP_RUN_GUIDANCE = 1u << 3,  /* guidance_json */
	SBXLOOP_RUN_REASON = 1u << 4     /* reason alone */
};

struct sbxloop_run_update {
	uint32_t struct_size;
	const char *run_id;
	unsigned fields; /* enum sbxloop_run_field bits */
	const char *state;
	const char *reason;
	const char *workspace;
	int mounted;
	const char *kept_reason;
	const char *guidance_json;
	/*
	 * When non-NULL, the update applies only if the run's current state
	 * is one of these (NULL-terminated); otherwise SBXLOOP_ESTATE and
	 * `prev_state` tells the state found. Checked and written in one
	 * transaction (cancel, resume and gc rely on it).
	 */
	const char *const *only_if_state;
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

/*
 * 1.6: one steering message of a run's inbox. `id` grows with every
 * push, across runs.
 */
struct sbxloop_chat_row {
	uint32_t struct_size;
	int64_t id;
	const char *run_id;
	const char *text;
	double created_at;
	/* ---- the members of ABI 1.6 end here; later minors append ---- */
};

struct sbxloop_store_ops {
	uint32_t struct_size;
	/* Opens (creating or migrating) the store under host->state_dir(). */
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);

	/* Runs. run_create fails with SBXLOOP_EEXIST on a duplicate id. */
	int (*run_create)(void *ctx, const struct sbxloop_run_row *run,
			  struct sbxloop_error *err);
	int (*run_update)(void *ctx, const struct sbxloop_run_update *upd,
			  char *prev_state, size_t prev_state_len,
			  struct sbxloop_error *err);
	/* SBXLOOP_ENOTFOUND when the run does not exist. */
	int (*run_get)(void *ctx, const char *run_id,
		       int (*cb)(void *user,
				 const struct sbxloop_run_row *run),
		       void *user, struct sbxloop_error *err);
	/* All runs, newest first. */
	int (*run_list)(void *ctx,
			int (*cb)(void *user,
				  const struct sbxloop_run_row *run),
			void *user, struct sbxloop_error *err);

	/* Tasks: tasks_save replaces the run's tasks in one transaction. */
	int (*tasks_save)(void *ctx, const char *run_id,
			  const struct sbxloop_task_row *tasks, size_t n,
			  struct sbxloop_error *err);
	int (*task_update)(void *ctx, const struct sbxloop_task_row *task,
			   struct sbxloop_error *err);
	int (*tasks_list)(void *ctx, const char *run_id,
			  int (*cb)(void *user,
				    const struct sbxloop_task_row *task),
			  void *user, struct sbxloop_error *err);

	/* Phase attempts. attempt_latest: ENOTFOUND when there is none. */
	int (*attempt_record)(void *ctx, struct sbxloop_attempt_row *attempt,
			      struct sbxloop_error *err);
	int (*attempt_latest)(void *ctx, const char *run_id,
			      const char *task_id, const char *phase,
			      int (*cb)(void *user,
					const struct sbxloop_attempt_row *a),
			      void *user, struct sbxloop_error *err);
	int (*attempts_list)(void *ctx, const char *run_id,
			     const char *task_id,
			     int (*cb)(void *user,
				       const struct sbxloop_attempt_row *a),
			     void *user, struct sbxloop_error *err);

	/*
	 * Events. seq_out (may be NULL) gets the sequence once known. `ev`
	 * and its strings are borrowed for the call: a store that buffers
	 * copies everything it keeps before returning.
	 */
	int (*event_append)(void *ctx, const struct sbxloop_event *ev,
			    int64_t *seq_out, struct sbxloop_error *err);
	int (*flush)(void *ctx, struct sbxloop_error *err);
	int (*events_query)(void *ctx, const struct sbxloop_event_query *q,
			    int (*cb)(void *user,
				      const struct sbxloop_event *ev),
			    void *user, struct sbxloop_error *err);
	/* Newest event timestamp of a run (0 when none). */
	int (*event_last_ts)(void *ctx, const char *run_id, double *ts,
			     struct sbxloop_error *err);
	/* ---- the members of ABI 1.0 end here; later minors append ---- */

	/*
	 * 1.6: the steering inbox, shared between processes: `sbxloop
	 * steer` and a sink's input line push, the run's engine reads the
	 * pending messages at each phase boundary, oldest first, and marks
	 * each done once it has been answered. A message pushed while no
	 * process drives the run waits for `resume`. inbox_push fails with
	 * SBXLOOP_ENOTFOUND when the run does not exist; inbox_done of a
	 * message already done is not an error. Optional as a group: a
	 * store without them has no steering (check with SBXLOOP_HAS_SLOT).
	 */
	int (*inbox_push)(void *ctx, const char *run_id, const char *text,
			  int64_t *id_out, struct sbxloop_error *err);
	int (*inbox_pending)(void *ctx, const char *run_id,
			     int (*cb)(void *user,
				       const struct sbxloop_chat_row *msg),
			     void *user, struct sbxloop_error *err);
	int (*inbox_done)(void *ctx, const char *run_id, int64_t id,
			  struct sbxloop_error *err);
	/* ---- the members of ABI 1.6 end here; later minors append ---- */
};
SBXLOOP_OPS_HEAD_CHECK(struct sbxloop_store_ops);

#ifdef __cplusplus
}
#endif
#endif

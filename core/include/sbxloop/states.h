/*
 * sbxloop plugin SDK: the state vocabulary. The one place each run state
 * and task state name is spelled, as stored in the run and task rows and
 * carried by run.state, task.state and task.end events; used by the
 * core, stores, sinks and reporters alike. The lifecycles are in
 * docs/engine.md. The terminal checks are inline so that a plugin uses
 * them without linking to core symbols.
 */
#ifndef SBXLOOP_STATES_H
#define SBXLOOP_STATES_H

#include <string.h>

/* run states, in lifecycle order */
#define SBXLOOP_RUN_CREATED "created"
#define SBXLOOP_RUN_PROVISIONING "provisioning"
#define SBXLOOP_RUN_DECOMPOSING "decomposing"
#define SBXLOOP_RUN_RUNNING "running"
#define SBXLOOP_RUN_FINALIZING "finalizing"
#define SBXLOOP_RUN_COMPLETED "completed"
#define SBXLOOP_RUN_FAILED "failed"
#define SBXLOOP_RUN_CANCELLED "cancelled"

/*
 * The two families of run states, as initialiser lists (end an array for
 * sbxloop_run_update.only_if_state with NULL). A live run is under way,
 * or its process died; a terminal one ended. `sbxloop cancel` applies to
 * live runs; `sbxloop resume` takes up any run but a completed one.
 */
#define SBXLOOP_RUN_LIVE_STATES                                               \
	SBXLOOP_RUN_CREATED, SBXLOOP_RUN_PROVISIONING,                        \
		SBXLOOP_RUN_DECOMPOSING, SBXLOOP_RUN_RUNNING,                 \
		SBXLOOP_RUN_FINALIZING
#define SBXLOOP_RUN_TERMINAL_STATES                                           \
	SBXLOOP_RUN_COMPLETED, SBXLOOP_RUN_FAILED, SBXLOOP_RUN_CANCELLED

/* task states, in lifecycle order */
#define SBXLOOP_TASK_PENDING "pending"
#define SBXLOOP_TASK_PLANNING "planning"
#define SBXLOOP_TASK_EXECUTING "executing"
#define SBXLOOP_TASK_SCRUTINIZING "scrutinizing"
#define SBXLOOP_TASK_VERIFYING "verifying"
#define SBXLOOP_TASK_VALIDATING "validating"
#define SBXLOOP_TASK_DONE "done"
#define SBXLOOP_TASK_FAILED "failed"
#define SBXLOOP_TASK_SKIPPED "skipped" /* a dependency failed */

#define SBXLOOP_TASK_TERMINAL_STATES                                          \
	SBXLOOP_TASK_DONE, SBXLOOP_TASK_FAILED, SBXLOOP_TASK_SKIPPED

/* Is `state` (may be NULL: no) a final run state? */
static inline int sbxloop_run_state_is_terminal(const char *state)
{
	static const char *const terminal[] = {SBXLOOP_RUN_TERMINAL_STATES};
	size_t i;

	for (i = 0; state && i < sizeof(terminal) / sizeof(*terminal); i++)
		if (strcmp(state, terminal[i]) == 0)
			return 1;
	return 0;
}

/* Is `state` (may be NULL: no) a final task state? */
static inline int sbxloop_task_state_is_terminal(const char *state)
{
	static const char *const terminal[] = {SBXLOOP_TASK_TERMINAL_STATES};
	size_t i;

	for (i = 0; state && i < sizeof(terminal) / sizeof(*terminal); i++)
		if (strcmp(state, terminal[i]) == 0)
			return 1;
	return 0;
}

#endif

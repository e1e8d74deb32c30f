/*
 * Private to the tui module: the dashboard's model (model.c), which the
 * sink (tui.c) updates under its mutex and turns into panel lines.
 */
#ifndef SBXLOOP_TUI_H
#define SBXLOOP_TUI_H

#include <cjson/cJSON.h>
#include <sbxloop/sink.h>

#include "plugins/sinks/render.h"

#define TUI_MAX_LINES 40
#define TUI_LINE_MAX 512

struct tui_task {
	char *id;
	char *title;
	char *state;
	int revisions;
	int replans;
};

/* The latest sandbox.resources of one sandbox role. */
struct tui_gauge {
	char *role;
	double disk, mem, load;
	int have_disk, have_mem, have_load;
	int level; /* 0 ok, 1 warn, 2 abort */
};

struct tui_model {
	char run_id[40];
	char *state;
	char *reason;
	char *outcome;
	double start_ts; /* the first event's, or run.start's */
	double budget_s; /* budgets.max_wall_clock_s, 0 none */
	struct tui_task *tasks;
	size_t n_tasks;
	struct tui_gauge *gauges; /* sorted by role */
	size_t n_gauges;
	char **grants; /* open egress grants, in order granted */
	size_t n_grants;
	long long tokens_in, tokens_out;
	int have_tokens;
};

/* The panel: one styled line each (RENDER_* bits), not yet clipped. */
struct tui_lines {
	size_t n;
	struct {
		char text[TUI_LINE_MAX];
		int style;
	} line[TUI_MAX_LINES];
};

/* Apply one event; 1 when the panel may have changed. */
int tui_model_update(struct tui_model *m, const struct sbxloop_event *ev,
		     const cJSON *data);
void tui_model_release(struct tui_model *m);
/* The panel's lines at time `now` (epoch seconds). */
void tui_model_panel(const struct tui_model *m, double now,
		     struct tui_lines *out);

extern const struct sbxloop_sink_ops tui_sink_ops;

#endif

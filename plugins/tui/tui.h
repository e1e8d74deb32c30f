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
	double state_ts; /* when it entered its state (event time) */
};

/* A steering message typed here or seen in a chat.message event. */
struct tui_chat {
	long long id;
	char *text;
	int answering; /* its chat.message arrived: a STEER session runs */
};

/* The input line being typed (input.c). */
#define TUI_INPUT_MAX 1024
struct tui_input {
	char text[TUI_INPUT_MAX];
	size_t len;
	size_t start;  /* where a character still being typed begins */
	unsigned need; /* its continuation bytes still to come */
	int esc;       /* inside an escape sequence */
};

enum { TUI_KEY_NONE, TUI_KEY_EDIT, TUI_KEY_ENTER };

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
	struct tui_chat *chat; /* queued or being answered, oldest first */
	size_t n_chat;
	char *notice;      /* why the last message was not queued */
	const char *input; /* the line being typed (borrowed); NULL: none */
};

/* The panel: one styled line each (RENDER_* bits), not yet clipped. */
struct tui_lines {
	size_t n;
	struct {
		char text[TUI_LINE_MAX];
		int style;
		int tail; /* too wide: keep its end (the input line) */
	} line[TUI_MAX_LINES];
};

/* Apply one event; 1 when the panel may have changed. */
int tui_model_update(struct tui_model *m, const struct sbxloop_event *ev,
		     const cJSON *data);
void tui_model_release(struct tui_model *m);
/* The panel's lines at time `now` (epoch seconds). */
void tui_model_panel(const struct tui_model *m, double now,
		     struct tui_lines *out);

/* A message queued through host->chat_post (shown until answered). */
void tui_model_chat_queued(struct tui_model *m, long long id,
			   const char *text);
void tui_model_set_notice(struct tui_model *m, const char *notice);

/*
 * Feed one byte typed on the terminal: TUI_KEY_EDIT when the line
 * changed, TUI_KEY_ENTER when in->text is a line to send (non-blank,
 * trimmed; the caller clears it), else TUI_KEY_NONE.
 */
int tui_input_feed(struct tui_input *in, unsigned char c);
void tui_input_clear(struct tui_input *in);

extern const struct sbxloop_sink_ops tui_sink_ops;

#endif

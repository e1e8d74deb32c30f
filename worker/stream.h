/*
 * stream.h - the preset rule engine of the command backend (stream.c).
 *
 * Private to the worker: command.c feeds every stdout line of an agent
 * CLI to wk_stream_line, which maps it to agent.* events and collects
 * the answer, session id, usage, the CLI's own failure report and its
 * last notice by the preset's rules.
 */
#ifndef SBXLOOP_WORKER_STREAM_H
#define SBXLOOP_WORKER_STREAM_H

#include "worker.h"

struct wk_tool_name;
struct wk_rule;

struct wk_stream {
	struct wk_ctx *ctx;
	const struct wk_job *job;
	const cJSON *rules;       /* borrowed from the preset */
	struct wk_rule *compiled; /* the rules' members, found once, owned */
	size_t n_compiled;
	const cJSON *version;  /* the preset's verified range, borrowed */
	const cJSON *fatal;    /* the preset's "fatal_notices", borrowed */
	const cJSON *refusals; /* the preset's "refusals", borrowed */
	const char *cli;       /* argv[0], borrowed */
	char *text;            /* replaced or appended by rules, owned */
	char *final_text;      /* wins over text when set, owned */
	char *error;           /* the CLI's own failure report, owned */
	char *error_kind;      /* the CLI's error category, owned */
	char *notice;          /* its last warning or retry notice, owned */
	char *session_id;
	char *model;
	char *cli_version; /* as the stream reported it, owned */
	cJSON *usage;      /* merged over every attempt, owned */
	cJSON *failures;   /* tool -> count, owned */
	cJSON *denials;    /* tool -> count of refused calls, owned */
	int calls;
	int messages; /* agent.message events emitted */
	int version_checked;
	int fatal_seen[8];      /* per fatal_notices entry */
	const char *fatal_type; /* a notice repeated past its limit */
	struct wk_tool_name *names;
	struct wk_proc *proc; /* the agent, stopped at the tool ceiling */
	int capped;           /* went past job->max_tool_calls */
};

/* Called for each complete stdout line; a non-JSON line is ignored. */
void wk_stream_line(void *arg, const char *line, size_t len);
/* Forget one attempt's answer and errors; usage and counts stay. */
void wk_stream_reset_attempt(struct wk_stream *st);
void wk_stream_free(struct wk_stream *st);

/*
 * Compare `version` (the first x.y.z in it) with the preset's verified
 * range {"min", "below"}; emit agent.cli_version once when it is outside
 * or unreadable. Returns 1 inside, 0 outside, -1 unreadable.
 */
int wk_stream_check_version(struct wk_stream *st, const char *version);
int wk_version_in_range(const char *version, const cJSON *range);

#endif

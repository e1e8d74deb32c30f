/*
 * The `plain` sink: the run's transcript on stdout, line by line, for CI
 * logs and `run --no-tui`, and (with `plain.events: all`) the dense
 * one-line form of every event that `sbxloop logs` prints. The rules
 * that turn an event into text live in render.c (shared with the tui
 * dashboard); this file writes them with ANSI styles. Every line is made
 * terminal-safe (common/termsafe.c) as it is written. Called only
 * through sinks_plain_ops.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "render.h"
#include "sinks.h"
/* compiled into this module too (libc only) */
#include "common/termsafe.h"

const struct sbxloop_config_key sinks_plain_keys[] = {
	{"color", SBXLOOP_VALUE_STRING, "auto", "auto|always|never",
	 "colour: auto = only on a terminal and when NO_COLOR is unset"},
	{"events", SBXLOOP_VALUE_STRING, "transcript", "transcript|all",
	 "transcript = what a person watches; all = a dense line per event"},
	{NULL, 0, NULL, NULL, NULL},
};

#define C_RESET "\033[0m"
#define C_DIM "\033[2m"
#define C_BOLD "\033[1m"

struct plain {
	const struct sbxloop_host *host;
	FILE *out;
	int color;
	int all;            /* every event, dense */
	struct render text; /* the entry being built */
};

/* A style as ANSI SGR: intensity first, then the colour. */
static void put_style(FILE *out, int style)
{
	if (style & RENDER_DIM)
		fputs(C_DIM, out);
	if (style & RENDER_BOLD)
		fputs(C_BOLD, out);
	if (style & RENDER_COLOR_MASK)
		fprintf(out, "\033[3%dm", (style & RENDER_COLOR_MASK) - 1);
}

/* --------------------------------------------------------------- sink */

static void plain_destroy(void *ctx)
{
	struct plain *p = ctx;

	if (!p)
		return;
	if (p->out)
		fflush(p->out);
	render_release(&p->text);
	free(p);
}

static int plain_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	struct plain *p = calloc(1, sizeof(*p));
	const char *color = host->config_string(host, "plain.color");
	const char *events = host->config_string(host, "plain.events");
	const char *nc = getenv("NO_COLOR");

	*ctx = NULL;
	if (!p)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "out of memory");
	p->host = host;
	p->out = stdout;
	if (color && !strcmp(color, "always"))
		p->color = 1;
	else if (color && !strcmp(color, "never"))
		p->color = 0;
	else
		p->color = isatty(fileno(p->out)) && !(nc && *nc);
	p->all = events && !strcmp(events, "all");
	*ctx = p;
	return 0;
}

static int plain_event(void *ctx, const struct sbxloop_event *ev,
		       struct sbxloop_error *err)
{
	struct plain *p = ctx;
	int style = 0;
	cJSON *data = cJSON_Parse(ev->data_json ? ev->data_json : "{}");
	char *safe;
	int rc = 0;

	render_reset(&p->text);
	if (p->all) {
		style = render_dense_style(ev->type, data);
		render_dense(&p->text, ev, data);
	} else {
		render_transcript(&p->text, ev, data, &style);
	}
	cJSON_Delete(data);
	if (p->text.oom)
		return p->host->error_set(p->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	if (p->text.len == 0)
		return 0;
	/* agent text may carry escapes, \r or bidi overrides: shown inert */
	safe = sl_term_safe_n(p->text.text, p->text.len, SL_TERM_KEEP_NL);
	if (!safe)
		return p->host->error_set(p->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	if (p->color && style) {
		put_style(p->out, style);
		fprintf(p->out, "%s%s\n", safe, C_RESET);
	} else {
		fprintf(p->out, "%s\n", safe);
	}
	free(safe);
	/* a reader (a CI log, `logs --follow`) sees every line at once */
	if (fflush(p->out) == EOF || ferror(p->out))
		rc = p->host->error_set(p->host, err, SBXLOOP_ERR,
					"cannot write to stdout");
	return rc;
}

static int plain_flush(void *ctx, struct sbxloop_error *err)
{
	struct plain *p = ctx;

	if (fflush(p->out) == EOF)
		return p->host->error_set(p->host, err, SBXLOOP_ERR,
					  "cannot write to stdout");
	return 0;
}

const struct sbxloop_sink_ops sinks_plain_ops = {
	.struct_size = sizeof(struct sbxloop_sink_ops),
	.create = plain_create,
	.destroy = plain_destroy,
	.event = plain_event,
	.flush = plain_flush,
};

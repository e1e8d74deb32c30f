/*
 * The `plain` sink: the run's transcript on stdout, line by line, for CI
 * logs and `run --no-tui`, and (with `plain.events: all`) the dense
 * one-line form of every event that `sbxloop logs` prints. This file is
 * the one place that knows the dense line (UPSTREAM 6.5 and 12.6) and
 * the transcript rules (12.4). Every line is made terminal-safe
 * (common/termsafe.c) as it is written. Called only through
 * sinks_plain_ops.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sinks.h"
/* macros only: the one place each event type is spelled */
#include <sbxloop/events.h>
#include <sbxloop/states.h>
/* compiled into this module too (libc only) */
#include "common/termsafe.h"

#define SUMMARY_MAX 160
#define ARGS_MAX 120
#define ERROR_MAX 160
#define TOOL_ARGS_MAX 160
#define CONTENT_MAX 4000
#define OUTPUT_LINES 6

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
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_BLUE "\033[34m"
#define C_MAGENTA "\033[35m"
#define C_CYAN "\033[36m"

struct plain {
	const struct sbxloop_host *host;
	FILE *out;
	int color;
	int all;    /* every event, dense */
	char *text; /* the entry being built */
	size_t len;
	size_t cap;
	int oom;
};

/* --------------------------------------------------------- text buffer */

static void add(struct plain *p, const char *s, size_t n)
{
	if (p->oom)
		return;
	if (p->len + n + 1 > p->cap) {
		size_t cap = (p->len + n + 1) * 2;
		char *grown = realloc(p->text, cap);

		if (!grown) {
			p->oom = 1;
			return;
		}
		p->text = grown;
		p->cap = cap;
	}
	memcpy(p->text + p->len, s, n);
	p->len += n;
	p->text[p->len] = '\0';
}

static void adds(struct plain *p, const char *s)
{
	add(p, s, strlen(s));
}

static void addf(struct plain *p, const char *fmt, ...) SBXLOOP_PRINTF(2, 3);
static void addf(struct plain *p, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		add(p, small, (size_t)n);
		return;
	}
	{
		char *big = malloc((size_t)n + 1);

		if (!big) {
			p->oom = 1;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		add(p, big, (size_t)n);
		free(big);
	}
}

/* ------------------------------------------------------ text shaping */

/* Bytes of the first `chars` UTF-8 characters of s[0..n). */
static size_t utf8_bytes(const char *s, size_t n, size_t chars)
{
	size_t i = 0;

	while (i < n && chars) {
		i++;
		while (i < n && ((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		chars--;
	}
	return i;
}

static size_t utf8_len(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

/*
 * One line of at most `max` characters: whitespace runs (newlines too)
 * become one space when `collapse`, else each newline becomes a space;
 * longer text is cut (`elide` = 0) or loses its middle to "…".
 * Newly allocated; NULL on exhaustion.
 */
static char *one_line(const char *s, size_t max, int collapse, int elide)
{
	size_t n = strlen(s), i, o = 0, chars, head, tail, hb, tb;
	char *t = malloc(n + 1), *r;

	if (!t)
		return NULL;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';

		if (collapse && ws) {
			if (o && t[o - 1] != ' ')
				t[o++] = ' ';
			continue;
		}
		t[o++] = c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
	}
	while (collapse && o && t[o - 1] == ' ')
		o--;
	t[o] = '\0';
	chars = utf8_len(t, o);
	if (chars <= max)
		return t;
	if (!elide) {
		t[utf8_bytes(t, o, max)] = '\0';
		return t;
	}
	head = (max - 1) / 2 + (max - 1) % 2;
	tail = max - 1 - head;
	hb = utf8_bytes(t, o, head);
	tb = o - utf8_bytes(t, o, chars - tail);
	r = malloc(hb + 3 + tb + 1);
	if (!r) {
		free(t);
		return NULL;
	}
	memcpy(r, t, hb);
	memcpy(r + hb, "\xe2\x80\xa6", 3);
	memcpy(r + hb + 3, t + o - tb, tb);
	r[hb + 3 + tb] = '\0';
	free(t);
	return r;
}

/* A JSON value as text: strings bare, everything else as JSON. */
static char *value_text(const cJSON *v)
{
	if (cJSON_IsString(v))
		return strdup(v->valuestring);
	if (cJSON_IsNumber(v)) {
		char num[64];
		double d = v->valuedouble;

		if (d == floor(d) && fabs(d) < 1e15)
			snprintf(num, sizeof(num), "%.0f", d);
		else
			snprintf(num, sizeof(num), "%g", d);
		return strdup(num);
	}
	return cJSON_PrintUnformatted(v);
}

static int truthy(const cJSON *v)
{
	if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return 0;
	if (cJSON_IsString(v))
		return v->valuestring[0] != '\0';
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0;
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		return v->child != NULL;
	return 1;
}

static const cJSON *field(const cJSON *data, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(data, key);
}

static const char *field_str(const cJSON *data, const char *key)
{
	return cJSON_GetStringValue(field(data, key));
}

static void add_clock(struct plain *p, double ts)
{
	char buf[16] = "";
	time_t t = (time_t)ts;
	struct tm tm;

	if (localtime_r(&t, &tm))
		strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
	adds(p, buf);
}

/* Append a field shaped by one_line(), preceded by a space. */
static void add_shaped(struct plain *p, const cJSON *v, size_t max,
		       int collapse, int elide)
{
	char *raw = value_text(v), *line;

	if (!raw) {
		p->oom = 1;
		return;
	}
	line = one_line(raw, max, collapse, elide);
	cJSON_free(raw);
	if (!line) {
		p->oom = 1;
		return;
	}
	if (*line) {
		add(p, " ", 1);
		adds(p, line);
	}
	free(line);
}

static void add_percent(struct plain *p, const char *label, const cJSON *v)
{
	if (cJSON_IsNumber(v))
		addf(p, " %s=%.0f%%", label, v->valuedouble);
}

/*
 * The dense line: HH:MM:SS <type> [<task_id>] [<agent>] <summary>
 * <disk=..% mem=..% load=.. level> <args> <error>, each part only when
 * present.
 */
static void add_dense(struct plain *p, const struct sbxloop_event *ev,
		      const cJSON *data)
{
	static const char *const summary_keys[] = {
		"state",   "content", "text",  "reply", "tool", "op", "line",
		"message", "outcome", "error", "url",   "path", NULL,
	};
	const char *summary_key = NULL;
	const cJSON *v;
	size_t i;

	add_clock(p, ev->ts);
	add(p, " ", 1);
	adds(p, ev->type);
	if (truthy(field(data, "task_id")))
		add_shaped(p, field(data, "task_id"), SUMMARY_MAX, 1, 0);
	if (truthy(field(data, "agent")))
		add_shaped(p, field(data, "agent"), SUMMARY_MAX, 1, 0);
	for (i = 0; summary_keys[i]; i++) {
		v = field(data, summary_keys[i]);
		if (truthy(v)) {
			summary_key = summary_keys[i];
			add_shaped(p, v, SUMMARY_MAX, 0, 0);
			break;
		}
	}
	if (cJSON_IsNumber(field(data, "disk_used_pct"))) {
		add_percent(p, "disk", field(data, "disk_used_pct"));
		add_percent(p, "mem", field(data, "mem_used_pct"));
		v = field(data, "load1");
		if (cJSON_IsNumber(v))
			addf(p, " load=%.2f", v->valuedouble);
		if (field_str(data, "level"))
			addf(p, " %s", field_str(data, "level"));
	}
	if (truthy(field(data, "args")))
		add_shaped(p, field(data, "args"), ARGS_MAX, 1, 1);
	if (truthy(field(data, "error")) &&
	    !(summary_key && !strcmp(summary_key, "error")))
		add_shaped(p, field(data, "error"), ERROR_MAX, 0, 1);
}

/* ------------------------------------------------------------- styles */

static const char *task_state_color(const char *state)
{
	static const char *const map[][2] = {
		{SBXLOOP_TASK_PENDING, C_DIM},
		{SBXLOOP_TASK_PLANNING, C_YELLOW},
		{SBXLOOP_TASK_EXECUTING, C_CYAN},
		{SBXLOOP_TASK_SCRUTINIZING, C_MAGENTA},
		{SBXLOOP_TASK_VERIFYING, C_BLUE},
		{SBXLOOP_TASK_VALIDATING, C_MAGENTA},
		{SBXLOOP_TASK_DONE, C_GREEN},
		{SBXLOOP_TASK_FAILED, C_RED},
		{SBXLOOP_TASK_SKIPPED, C_DIM C_RED},
	};
	size_t i;

	for (i = 0; state && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i][0], state))
			return map[i][1];
	return C_DIM;
}

static const char *dense_style(const char *type, const cJSON *data)
{
	const char *status = field_str(data, "status");

	if (!strcmp(type, SBXLOOP_EV_TASK_STATE))
		return task_state_color(field_str(data, "state"));
	if (!strcmp(type, SBXLOOP_EV_PHASE_END) && status &&
	    !strcmp(status, "failed"))
		return C_RED;
	if ((!strcmp(type, SBXLOOP_EV_PHASE_END) && status &&
	     !strcmp(status, "verify_suspect")) ||
	    strstr(type, "fallback") || strstr(type, "missing") ||
	    strstr(type, "warning") || !strcmp(type, SBXLOOP_EV_POLICY_DENY))
		return C_YELLOW;
	return C_DIM;
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ------------------------------------------------------ transcript */

static const char *const skipped_types[] = {
	SBXLOOP_EV_AGENT_MESSAGE_DELTA,
	SBXLOOP_EV_WORKER_STDOUT,
	SBXLOOP_EV_WORKER_HEARTBEAT,
	SBXLOOP_EV_WORKER_START,
	SBXLOOP_EV_WORKER_RESULT,
	SBXLOOP_EV_WORKER_END,
	SBXLOOP_EV_AGENT_USAGE,
	SBXLOOP_EV_SANDBOX_RESOURCES,
	NULL,
};

static const char *const dense_prefixes[] = {
	SBXLOOP_EV_FAMILY_RUN,
	SBXLOOP_EV_FAMILY_TASK,
	SBXLOOP_EV_FAMILY_PHASE,
	SBXLOOP_EV_FAMILY_SANDBOX,
	SBXLOOP_EV_FAMILY_GH,
	SBXLOOP_EV_FAMILY_POLICY,
	NULL,
};

/* The last `lines` lines of text, each indented. */
static void add_tail_lines(struct plain *p, const char *text, int lines)
{
	const char *end = text + strlen(text), *s = end;
	int seen = 0;

	while (end > text && end[-1] == '\n')
		end--;
	s = end;
	while (s > text) {
		if (s[-1] == '\n' && ++seen == lines)
			break;
		s--;
	}
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);

		add(p, "\n    ", 5);
		add(p, s, n);
		s += n + (nl ? 1 : 0);
	}
}

static void add_tool_end(struct plain *p, const struct sbxloop_event *ev,
			 const cJSON *data, const char **style)
{
	const cJSON *success = field(data, "success");
	const cJSON *code = field(data, "exit_code");
	const char *error = field_str(data, "error");
	const char *tool = field_str(data, "tool");
	const char *output = field_str(data, "output");
	int ok;

	if (!success && !cJSON_IsNumber(code) && !(error && *error))
		return;
	ok = cJSON_IsTrue(success) ||
	     (!success && cJSON_IsNumber(code) && code->valuedouble == 0 &&
	      !(error && *error));
	add_clock(p, ev->ts);
	addf(p, "  %s %s", ok ? "\xe2\x9c\x93" : "\xe2\x9c\x97",
	     tool ? tool : "tool");
	if (cJSON_IsNumber(code))
		addf(p, " exit %.0f", code->valuedouble);
	if (ok) {
		*style = C_DIM C_GREEN;
		return;
	}
	*style = C_RED;
	if (truthy(field(data, "args"))) {
		add(p, " $", 2);
		add_shaped(p, field(data, "args"), TOOL_ARGS_MAX, 1, 1);
	}
	if (output && *output)
		add_tail_lines(p, output, OUTPUT_LINES);
	else if (error && *error)
		add_tail_lines(p, error, OUTPUT_LINES);
}

static void add_block(struct plain *p, const char *body, size_t max)
{
	size_t n = strlen(body), cut = utf8_bytes(body, n, max);
	const char *s = body, *end = body + cut;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);

		add(p, "\n  ", 3);
		add(p, s, len);
		s += len + (nl ? 1 : 0);
	}
	if (cut < n)
		adds(p, "\n  \xe2\x80\xa6 (truncated; `sbxloop logs` has the "
			"whole message)");
}

/*
 * Render one transcript entry into p->text, or nothing when the event
 * is not shown to a person watching the run.
 */
static void add_transcript(struct plain *p, const struct sbxloop_event *ev,
			   const cJSON *data, const char **style)
{
	const char *t = ev->type;
	const char *s;
	size_t i;

	for (i = 0; skipped_types[i]; i++)
		if (!strcmp(t, skipped_types[i]))
			return;
	if (!strcmp(t, SBXLOOP_EV_AGENT_MESSAGE)) {
		const char *content = field_str(data, "content");
		const char *model = field_str(data, "model");

		if (!content || !*content)
			return;
		*style = C_CYAN;
		add_clock(p, ev->ts);
		s = field_str(data, "agent");
		addf(p, " %s", s && *s ? s : "agent");
		if (model && *model)
			addf(p, " \xc2\xb7 %s", model);
		add_block(p, content, CONTENT_MAX);
	} else if (!strcmp(t, SBXLOOP_EV_WORKER_ERROR)) {
		*style = C_RED;
		add_clock(p, ev->ts);
		s = field_str(data, "message");
		if (!s || !*s)
			s = field_str(data, "error_type");
		addf(p, " error: %s", s ? s : "the worker failed");
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_TOOL_START)) {
		*style = C_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "tool");
		addf(p, "  \xe2\x9a\x99 %s", s ? s : "tool");
		if (truthy(field(data, "args"))) {
			add(p, " $", 2);
			add_shaped(p, field(data, "args"), TOOL_ARGS_MAX, 1,
				   1);
		}
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_TOOL_CAP)) {
		const cJSON *cap = field(data, "cap");

		*style = C_YELLOW;
		add_clock(p, ev->ts);
		addf(p,
		     "  tool-call ceiling (%.0f) reached: further calls "
		     "are turned away and the agent was told to wrap up",
		     cJSON_IsNumber(cap) ? cap->valuedouble : 0.0);
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_TOOL_END)) {
		add_tool_end(p, ev, data, style);
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_NOTICE)) {
		*style = C_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "message");
		addf(p, "  %s says: %s", field_str(data, "cli") ?: "agent",
		     s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_RESUME_DROPPED)) {
		*style = C_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "reason");
		addf(p, "  %s does not know session %s; a new one starts: %s",
		     field_str(data, "cli") ?: "agent",
		     field_str(data, "session_id") ?: "?", s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_CLI_VERSION)) {
		*style = C_BOLD C_YELLOW;
		add_clock(p, ev->ts);
		addf(p,
		     "  warning: %s %s is outside the versions its preset "
		     "was verified with (%s up to %s)",
		     field_str(data, "cli") ?: "agent",
		     field_str(data, "version") ?: "(unknown version)",
		     field_str(data, "verified_min") ?: "?",
		     field_str(data, "verified_below") ?: "?");
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_MESSAGE)) {
		*style = C_GREEN;
		add_clock(p, ev->ts);
		s = field_str(data, "text");
		addf(p, " you: %s", s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_REPLY)) {
		add_clock(p, ev->ts);
		s = field_str(data, "error");
		if (s && *s) {
			*style = C_RED;
			addf(p, " steering failed: %s", s);
		} else {
			*style = C_CYAN;
			s = field_str(data, "reply");
			addf(p, " agent \xc2\xb7 reply: %s",
			     s && *s ? s : "(no reply)");
		}
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_ACTION)) {
		*style = C_BOLD C_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "message");
		addf(p, " \xe2\x86\xaa %s", s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_RUN_REPORT) ||
		   (!strcmp(t, SBXLOOP_EV_RUN_DELIVER) &&
		    !truthy(field(data, "error")))) {
		const cJSON *n =
			field(data, !strcmp(t, SBXLOOP_EV_RUN_REPORT) ? "issue"
								      : "pr");

		*style = C_BOLD C_GREEN;
		add_clock(p, ev->ts);
		add(p, " ", 1);
		adds(p, t);
		if (truthy(field(data, "created"))) {
			adds(p, " created");
			adds(p, truthy(field(data, "private")) ? " private"
							       : " public");
			adds(p, " repository");
			add_shaped(p, field(data, "repo"), SUMMARY_MAX, 0, 0);
		} else {
			addf(p, " %s #%.0f",
			     !strcmp(t, SBXLOOP_EV_RUN_REPORT)
				     ? "tracking issue"
				     : "pull request",
			     cJSON_IsNumber(n) ? n->valuedouble : 0.0);
			add_shaped(p, field(data, "url"), SUMMARY_MAX, 0, 0);
		}
	} else {
		for (i = 0; dense_prefixes[i]; i++)
			if (has_prefix(t, dense_prefixes[i]))
				break;
		if (!dense_prefixes[i])
			return;
		*style = dense_style(t, data);
		add_dense(p, ev, data);
	}
}

/* --------------------------------------------------------------- sink */

static void plain_destroy(void *ctx)
{
	struct plain *p = ctx;

	if (!p)
		return;
	if (p->out)
		fflush(p->out);
	free(p->text);
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
	const char *style = NULL;
	cJSON *data = cJSON_Parse(ev->data_json ? ev->data_json : "{}");
	char *safe;
	int rc = 0;

	p->len = 0;
	p->oom = 0;
	if (p->all) {
		style = dense_style(ev->type, data);
		add_dense(p, ev, data);
	} else {
		add_transcript(p, ev, data, &style);
	}
	cJSON_Delete(data);
	if (p->oom)
		return p->host->error_set(p->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	if (p->len == 0)
		return 0;
	/* agent text may carry escapes, \r or bidi overrides: shown inert */
	safe = sl_term_safe_n(p->text, p->len, SL_TERM_KEEP_NL);
	if (!safe)
		return p->host->error_set(p->host, err, SBXLOOP_ENOMEM,
					  "out of memory");
	if (p->color && style)
		fprintf(p->out, "%s%s%s\n", style, safe, C_RESET);
	else
		fprintf(p->out, "%s\n", safe);
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

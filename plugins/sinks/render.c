/*
 * The transcript rules shared by the `plain` sink and the `tui`
 * dashboard: the one place that knows the dense line (UPSTREAM 6.5 and
 * 12.6), the per-event transcript entry and its style (12.4) and the
 * high-volume skip list. Compiled into both modules (libc and cJSON
 * only); each decides how a style reaches its terminal.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "render.h"
/* macros only: the one place each event type is spelled */
#include <sbxloop/events.h>
#include <sbxloop/states.h>

#define SUMMARY_MAX 160
#define ARGS_MAX 120
#define ERROR_MAX 160
#define TOOL_ARGS_MAX 160
#define CONTENT_MAX 4000
#define OUTPUT_LINES 6

/* --------------------------------------------------------- text buffer */

static void add(struct render *p, const char *s, size_t n)
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

static void adds(struct render *p, const char *s)
{
	add(p, s, strlen(s));
}

static void addf(struct render *p, const char *fmt, ...) SBXLOOP_PRINTF(2, 3);
static void addf(struct render *p, const char *fmt, ...)
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
size_t render_utf8_bytes(const char *s, size_t n, size_t chars)
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

size_t render_utf8_len(const char *s, size_t n)
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
char *render_one_line(const char *s, size_t max, int collapse, int elide)
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
	chars = render_utf8_len(t, o);
	if (chars <= max)
		return t;
	if (!elide) {
		t[render_utf8_bytes(t, o, max)] = '\0';
		return t;
	}
	head = (max - 1) / 2 + (max - 1) % 2;
	tail = max - 1 - head;
	hb = render_utf8_bytes(t, o, head);
	tb = o - render_utf8_bytes(t, o, chars - tail);
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

static void add_clock(struct render *p, double ts)
{
	char buf[16] = "";
	time_t t = (time_t)ts;
	struct tm tm;

	if (localtime_r(&t, &tm))
		strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
	adds(p, buf);
}

/* Append a field shaped by render_one_line(), preceded by a space. */
static void add_shaped(struct render *p, const cJSON *v, size_t max,
		       int collapse, int elide)
{
	char *raw = value_text(v), *line;

	if (!raw) {
		p->oom = 1;
		return;
	}
	line = render_one_line(raw, max, collapse, elide);
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

static void add_percent(struct render *p, const char *label, const cJSON *v)
{
	if (cJSON_IsNumber(v))
		addf(p, " %s=%.0f%%", label, v->valuedouble);
}

/*
 * The dense line: HH:MM:SS <type> [<task_id>] [<agent>] <summary>
 * <disk=..% mem=..% load=.. level> <args> <error>, each part only when
 * present.
 */
void render_dense(struct render *p, const struct sbxloop_event *ev,
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

int render_task_style(const char *state)
{
	static const struct {
		const char *state;
		int style;
	} map[] = {
		{SBXLOOP_TASK_PENDING, RENDER_DIM},
		{SBXLOOP_TASK_PLANNING, RENDER_YELLOW},
		{SBXLOOP_TASK_EXECUTING, RENDER_CYAN},
		{SBXLOOP_TASK_SCRUTINIZING, RENDER_MAGENTA},
		{SBXLOOP_TASK_VERIFYING, RENDER_BLUE},
		{SBXLOOP_TASK_VALIDATING, RENDER_MAGENTA},
		{SBXLOOP_TASK_DONE, RENDER_GREEN},
		{SBXLOOP_TASK_FAILED, RENDER_RED},
		{SBXLOOP_TASK_SKIPPED, RENDER_DIM | RENDER_RED},
	};
	size_t i;

	for (i = 0; state && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].state, state))
			return map[i].style;
	return RENDER_DIM;
}

int render_dense_style(const char *type, const cJSON *data)
{
	const char *status = field_str(data, "status");

	if (!strcmp(type, SBXLOOP_EV_TASK_STATE))
		return render_task_style(field_str(data, "state"));
	if (!strcmp(type, SBXLOOP_EV_PHASE_END) && status &&
	    !strcmp(status, "failed"))
		return RENDER_RED;
	if ((!strcmp(type, SBXLOOP_EV_PHASE_END) && status &&
	     !strcmp(status, "verify_suspect")) ||
	    strstr(type, "fallback") || strstr(type, "missing") ||
	    strstr(type, "warning") || !strcmp(type, SBXLOOP_EV_POLICY_DENY) ||
	    !strcmp(type, SBXLOOP_EV_POLICY_BLOCKED))
		return RENDER_YELLOW;
	return RENDER_DIM;
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

/*
 * The task an agent line belongs to, after the clock: with lanes the
 * agents of several tasks speak at once.
 */
static void add_task(struct render *p, const cJSON *data)
{
	const char *task = field_str(data, "task_id");

	if (task && *task)
		addf(p, " %.40s", task);
}

/* The last `lines` lines of text, each indented. */
static void add_tail_lines(struct render *p, const char *text, int lines)
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

static void add_tool_end(struct render *p, const struct sbxloop_event *ev,
			 const cJSON *data, int *style)
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
	add_task(p, data);
	addf(p, "  %s %s", ok ? "\xe2\x9c\x93" : "\xe2\x9c\x97",
	     tool ? tool : "tool");
	if (cJSON_IsNumber(code))
		addf(p, " exit %.0f", code->valuedouble);
	if (ok) {
		*style = RENDER_DIM | RENDER_GREEN;
		return;
	}
	*style = RENDER_RED;
	if (truthy(field(data, "args"))) {
		add(p, " $", 2);
		add_shaped(p, field(data, "args"), TOOL_ARGS_MAX, 1, 1);
	}
	if (output && *output)
		add_tail_lines(p, output, OUTPUT_LINES);
	else if (error && *error)
		add_tail_lines(p, error, OUTPUT_LINES);
}

static void add_block(struct render *p, const char *body, size_t max)
{
	size_t n = strlen(body), cut = render_utf8_bytes(body, n, max);
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
void render_transcript(struct render *p, const struct sbxloop_event *ev,
		       const cJSON *data, int *style)
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
		*style = RENDER_CYAN;
		add_clock(p, ev->ts);
		add_task(p, data);
		s = field_str(data, "agent");
		addf(p, " %s", s && *s ? s : "agent");
		if (model && *model)
			addf(p, " \xc2\xb7 %s", model);
		add_block(p, content, CONTENT_MAX);
	} else if (!strcmp(t, SBXLOOP_EV_WORKER_ERROR)) {
		*style = RENDER_RED;
		add_clock(p, ev->ts);
		add_task(p, data);
		s = field_str(data, "message");
		if (!s || !*s)
			s = field_str(data, "error_type");
		addf(p, " error: %s", s ? s : "the worker failed");
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_TOOL_START)) {
		*style = RENDER_YELLOW;
		add_clock(p, ev->ts);
		add_task(p, data);
		s = field_str(data, "tool");
		addf(p, "  \xe2\x9a\x99 %s", s ? s : "tool");
		if (truthy(field(data, "args"))) {
			add(p, " $", 2);
			add_shaped(p, field(data, "args"), TOOL_ARGS_MAX, 1,
				   1);
		}
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_TOOL_CAP)) {
		const cJSON *cap = field(data, "cap");

		*style = RENDER_YELLOW;
		add_clock(p, ev->ts);
		addf(p,
		     "  tool-call ceiling (%.0f) reached: further calls "
		     "are turned away and the agent was told to wrap up",
		     cJSON_IsNumber(cap) ? cap->valuedouble : 0.0);
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_TOOL_END)) {
		add_tool_end(p, ev, data, style);
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_NOTICE)) {
		*style = RENDER_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "message");
		addf(p, "  %s says: %s", field_str(data, "cli") ?: "agent",
		     s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_RESUME_DROPPED)) {
		*style = RENDER_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "reason");
		addf(p, "  %s does not know session %s; a new one starts: %s",
		     field_str(data, "cli") ?: "agent",
		     field_str(data, "session_id") ?: "?", s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_AGENT_CLI_VERSION)) {
		*style = RENDER_BOLD | RENDER_YELLOW;
		add_clock(p, ev->ts);
		addf(p,
		     "  warning: %s %s is outside the versions its preset "
		     "was verified with (%s up to %s)",
		     field_str(data, "cli") ?: "agent",
		     field_str(data, "version") ?: "(unknown version)",
		     field_str(data, "verified_min") ?: "?",
		     field_str(data, "verified_below") ?: "?");
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_MESSAGE)) {
		*style = RENDER_GREEN;
		add_clock(p, ev->ts);
		s = field_str(data, "text");
		addf(p, " you: %s", s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_REPLY)) {
		add_clock(p, ev->ts);
		s = field_str(data, "error");
		if (s && *s) {
			*style = RENDER_RED;
			addf(p, " steering failed: %s", s);
		} else {
			*style = RENDER_CYAN;
			s = field_str(data, "reply");
			addf(p, " agent \xc2\xb7 reply: %s",
			     s && *s ? s : "(no reply)");
		}
	} else if (!strcmp(t, SBXLOOP_EV_CHAT_ACTION)) {
		*style = RENDER_BOLD | RENDER_YELLOW;
		add_clock(p, ev->ts);
		s = field_str(data, "message");
		addf(p, " \xe2\x86\xaa %s", s ? s : "");
	} else if (!strcmp(t, SBXLOOP_EV_RUN_REPORT) ||
		   (!strcmp(t, SBXLOOP_EV_RUN_DELIVER) &&
		    !truthy(field(data, "error")))) {
		const cJSON *n =
			field(data, !strcmp(t, SBXLOOP_EV_RUN_REPORT) ? "issue"
								      : "pr");

		*style = RENDER_BOLD | RENDER_GREEN;
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
		*style = render_dense_style(t, data);
		render_dense(p, ev, data);
	}
}

void render_reset(struct render *p)
{
	p->len = 0;
	p->oom = 0;
	if (p->text)
		p->text[0] = '\0';
}

void render_release(struct render *p)
{
	free(p->text);
	memset(p, 0, sizeof(*p));
}

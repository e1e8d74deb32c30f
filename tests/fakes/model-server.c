/*
 * model-server.c - a scripted model service on loopback: the test double
 * for the model APIs the real agent CLIs call, so the real claude, codex,
 * gemini and copilot binaries run a scripted conversation and really
 * execute their tools in a working directory, with no credentials and no
 * network. This file owns the HTTP side (listening, HTTP/1.1 parsing,
 * keep-alive, chunked bodies, SSE framing, the request log) and the
 * scenario's step queue; model-dialects.c owns the wire formats.
 *
 * What it imitates (the public documents, as of 2026):
 *   Anthropic Messages API, anthropic-version 2023-06-01: POST
 *     /v1/messages, stream true gives SSE message_start,
 *     content_block_start/delta/stop (text_delta, input_json_delta),
 *     message_delta (stop_reason, usage), message_stop; errors are
 *     {"type":"error","error":{"type","message"}}; and
 *     /v1/messages/count_tokens.
 *   OpenAI Responses API: POST /v1/responses, stream true gives SSE
 *     response.created, response.in_progress, output_item.added,
 *     content_part / output_text / function_call_arguments deltas,
 *     output_item.done, response.completed with usage; errors are
 *     {"error":{"message","type","param","code"}}.
 *   Gemini API v1beta: POST /v1beta/models/M:generateContent,
 *     :streamGenerateContent?alt=sse (SSE data: lines, each a
 *     GenerateContentResponse) and :countTokens; errors are
 *     {"error":{"code","message","status"}}.
 * Checked against: claude-code 2.1.332, codex 0.171.0, gemini-cli
 * 0.61.0, copilot 1.0.102 (see tests/agents/real-cli.sh for how each is
 * pointed here: ANTHROPIC_BASE_URL; a codex model provider with
 * wire_api "responses"; GOOGLE_GEMINI_BASE_URL with the gemini-api-key
 * auth type in settings.json; COPILOT_PROVIDER_BASE_URL with
 * COPILOT_PROVIDER_WIRE_API=responses).
 *
 * Usage: model-server (--scenario FILE | --from-script FILE)
 *                     --port-file PATH [--log DIR] [--workdir DIR]
 * It listens on 127.0.0.1, an ephemeral port, writes the port to PATH
 * (atomically, once listening) and serves until SIGTERM/SIGINT, or until
 * its stdin closes when stdin is a pipe or socket.
 *
 * The scenario is JSON: {"steps": [STEP...], "final": "done"} or just
 * [STEP...]. Each model turn request (a POST to the API's generate path
 * whose `tools` declares at least one tool) takes the next step; other
 * requests (title generation, routing, token counts) get a generic
 * answer and take none. A STEP is one assistant reply:
 *   {"text": "..."}                        a final answer
 *   {"tool": "write_file", "path": P, "content": C, ["text": T]}
 *   {"tool": "shell", "command": CMD, ["text": T]}
 *   {"fault": "http", "status": 401|429|500|..., ["body": MSG or JSON],
 *    ["retry_after": S], ["times": N]}
 *   {"fault": "cut", ["text": T]}          the stream stops mid-reply
 *                                          (a whole JSON body: halfway)
 * Tool intents become the tool the CLI declared (Write/Bash, write_file/
 * run_shell_command, create/bash, exec_command...) with its argument
 * names; a relative path is taken from the CLI's announced working
 * directory (or --workdir). A fault answers `times` requests (default 1;
 * 0: every request from then on). When the steps run out, every turn is
 * answered with the "final" text.
 *
 * With --from-script FILE (or a --scenario FILE that is a script) it
 * serves a scenario of the worker's `script` backend (a JSON array of
 * replies, one per agent job; docs/worker-protocol.md), so one file
 * drives both backends. Each reply becomes a group of steps: one
 * write_file per entry of `files`, one shell per command of `run`, then
 * the answer: `json` printed (after `text`, when both are given) or
 * `text`; a `fail` becomes an HTTP fault on every request from then on
 * (401 for fail_type AgentAuthError, 429 for AgentRateLimited, else 500).
 * A reply's `sleep_s` holds its first answer that long (after the
 * request is logged), so a test can look at the workspace while the
 * CLI waits. The cursor is this process's: the CLI processes of
 * consecutive jobs call the same server. A turn whose request ends with
 * a new prompt (not with tool results) starts the next reply; one that
 * ends with tool results takes the current reply's next step, and
 * repeats its answer once they are used up. So a resumed session (a
 * revision) takes a fresh reply, and side requests take none. In this
 * mode a tool the CLI does not declare (a read-only critic's) is called
 * anyway by the CLI's own name for it, so the CLI itself must refuse it.
 *
 * With --log DIR each request is appended to DIR/requests.jsonl as
 * {"seq","method","path","api","kind","step","reply","headers","body"}
 * ("reply": the script reply, 0-based, in --from-script mode), with
 * credential headers written as "<redacted>".
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "model-server.h"

#define MAX_CONNS 64
#define MAX_HEAD (64 * 1024)
#define MAX_BODY (256 * 1024 * 1024)

struct conn {
	int fd;
	struct buf in;
};

struct request {
	char method[16];
	char *target;   /* path and query */
	char *path;     /* path alone */
	cJSON *headers; /* lowercased names; redacted */
	char *body;
	size_t body_len;
	int keep_alive;
	const char *encoding; /* a Content-Encoding we cannot read */
};

static struct step *steps;
static size_t nsteps, next_step;
static int step_uses;
/* --from-script: reply R's steps are steps[group[R].first ...] */
struct group {
	size_t first, n;
	double hold; /* sleep_s: seconds its first answer waits */
};
static struct group *groups;
static size_t ngroups;
static long cur_group = -1;
static size_t cur_sub;
static int script_mode;
static double hold_now; /* the wait owed before the next answer */
static char *final_text;
static FILE *log_file;
static const char *workdir;
static unsigned long seq;
static volatile sig_atomic_t stop;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("model-server: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

void buf_add(struct buf *b, const char *s, size_t n)
{
	char *p;

	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		p = realloc(b->p, b->cap);
		if (!p)
			die("out of memory");
		b->p = p;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256], *big;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		die("cannot format");
	if ((size_t)n < sizeof(small)) {
		buf_add(b, small, (size_t)n);
		return;
	}
	big = malloc((size_t)n + 1);
	if (!big)
		die("out of memory");
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf_add(b, big, (size_t)n);
	free(big);
}

void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void buf_consume(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->n - n);
	b->n -= n;
	if (b->p)
		b->p[b->n] = '\0';
}

/* ---- scenario ---------------------------------------------------------- */

static char *dup_field(const cJSON *o, const char *key, size_t i, int required)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	char *s;

	if (!v) {
		if (required)
			die("step %zu: missing \"%s\"", i + 1, key);
		return NULL;
	}
	if (!cJSON_IsString(v))
		die("step %zu: \"%s\" is not a string", i + 1, key);
	s = strdup(v->valuestring);
	if (!s)
		die("out of memory");
	return s;
}

static int int_field(const cJSON *o, const char *key, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valueint : dflt;
}

static void load_step(const cJSON *o, size_t i, struct step *s)
{
	char *tool = dup_field(o, "tool", i, 0);
	char *fault = dup_field(o, "fault", i, 0);

	if (!cJSON_IsObject(o))
		die("step %zu: not an object", i + 1);
	s->text = dup_field(o, "text", i, 0);
	s->times = int_field(o, "times", 1);
	if (tool && !strcmp(tool, "write_file")) {
		s->tool = TOOL_WRITE;
		s->path = dup_field(o, "path", i, 1);
		s->content = dup_field(o, "content", i, 1);
	} else if (tool && !strcmp(tool, "shell")) {
		s->tool = TOOL_SHELL;
		s->command = dup_field(o, "command", i, 1);
	} else if (tool) {
		die("step %zu: unknown tool '%s'", i + 1, tool);
	}
	if (fault && !strcmp(fault, "http")) {
		s->fault = int_field(o, "status", 500);
		if (s->fault < 400 || s->fault > 599)
			die("step %zu: status %d is not an error", i + 1,
			    s->fault);
		s->fault_body = dup_field(o, "body", i, 0);
		s->retry_after =
			int_field(o, "retry_after", s->fault == 429 ? 1 : 0);
	} else if (fault && !strcmp(fault, "cut")) {
		s->cut = 1;
		if (!s->text && !s->tool) {
			s->text = strdup("this reply is cut off before it "
					 "ends");
			if (!s->text)
				die("out of memory");
		}
	} else if (fault) {
		die("step %zu: unknown fault '%s'", i + 1, fault);
	}
	if (!s->text && !s->tool && !s->fault)
		die("step %zu: no text, tool or fault", i + 1);
	free(tool);
	free(fault);
}

static void load_script(const cJSON *arr);

/* A script-backend scenario: an array of replies, none of them a step. */
static int is_script(const cJSON *root)
{
	static const char *const keys[] = {"json", "files", "run", "fail"};
	const cJSON *r;
	size_t i;
	int hit = 0;

	if (!cJSON_IsArray(root))
		return 0;
	cJSON_ArrayForEach (r, root) {
		if (cJSON_HasObjectItem(r, "tool") ||
		    cJSON_HasObjectItem(r, "fault"))
			return 0;
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			hit |= cJSON_HasObjectItem(r, keys[i]);
	}
	return hit;
}

static void load_scenario(const char *file, int from_script)
{
	FILE *f = fopen(file, "r");
	struct buf b = {0};
	char chunk[4096];
	size_t n, i;
	cJSON *root, *arr, *fin;

	if (!f)
		die("cannot open '%s': %s", file, strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	root = cJSON_Parse(b.p ? b.p : "");
	buf_free(&b);
	if (!root)
		die("'%s' is not JSON", file);
	if (from_script || is_script(root)) {
		if (!cJSON_IsArray(root))
			die("'%s' is not a script (an array of replies)",
			    file);
		script_mode = 1;
		final_text = strdup("done");
		if (!final_text)
			die("out of memory");
		load_script(root);
		cJSON_Delete(root);
		return;
	}
	arr = cJSON_IsArray(root)
		      ? root
		      : cJSON_GetObjectItemCaseSensitive(root, "steps");
	if (!cJSON_IsArray(arr))
		die("'%s' has no \"steps\" array", file);
	fin = cJSON_GetObjectItemCaseSensitive(root, "final");
	final_text = strdup(cJSON_IsString(fin) ? fin->valuestring : "done");
	nsteps = (size_t)cJSON_GetArraySize(arr);
	steps = calloc(nsteps ? nsteps : 1, sizeof(*steps));
	if (!steps || !final_text)
		die("out of memory");
	for (i = 0; i < nsteps; i++)
		load_step(cJSON_GetArrayItem(arr, (int)i), i, &steps[i]);
	cJSON_Delete(root);
}

static void free_scenario(void)
{
	size_t i;

	for (i = 0; i < nsteps; i++) {
		free(steps[i].text);
		free(steps[i].path);
		free(steps[i].content);
		free(steps[i].command);
		free(steps[i].fault_body);
	}
	free(steps);
	free(groups);
	free(final_text);
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

static struct step *new_step(size_t *cap)
{
	struct step *p;

	if (nsteps == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		p = realloc(steps, *cap * sizeof(*steps));
		if (!p)
			die("out of memory");
		steps = p;
	}
	memset(&steps[nsteps], 0, sizeof(*steps));
	return &steps[nsteps++];
}

static int fault_status(const cJSON *type)
{
	const char *t = cJSON_IsString(type) ? type->valuestring : "";

	if (!strcmp(t, "AgentAuthError"))
		return 401;
	if (!strcmp(t, "AgentRateLimited"))
		return 429;
	return 500;
}

/* One script reply R (number I) as steps: its writes, its commands,
 * then its answer or its fault. */
static void load_reply(const cJSON *r, size_t i, size_t *cap)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(r, "files");
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(r, "run");
	const cJSON *json = cJSON_GetObjectItemCaseSensitive(r, "json");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(r, "text");
	const cJSON *fail = cJSON_GetObjectItemCaseSensitive(r, "fail");
	const cJSON *f;
	struct step *s;
	struct buf b = {0};
	char *js;

	if (!cJSON_IsObject(r))
		die("reply %zu: not an object", i + 1);
	groups[i].first = nsteps;
	f = cJSON_GetObjectItemCaseSensitive(r, "sleep_s");
	groups[i].hold = cJSON_IsNumber(f) ? f->valuedouble : 0;
	cJSON_ArrayForEach (f, files) {
		if (!cJSON_IsString(f))
			die("reply %zu: file '%s' is not a string", i + 1,
			    f->string);
		s = new_step(cap);
		s->tool = TOOL_WRITE;
		s->path = xstrdup(f->string);
		s->content = xstrdup(f->valuestring);
		s->times = 1;
	}
	cJSON_ArrayForEach (f, run) {
		if (!cJSON_IsString(f))
			die("reply %zu: a run command is not a string", i + 1);
		s = new_step(cap);
		s->tool = TOOL_SHELL;
		s->command = xstrdup(f->valuestring);
		s->times = 1;
	}
	s = new_step(cap);
	s->times = 1;
	if (cJSON_IsString(fail)) {
		s->fault = fault_status(
			cJSON_GetObjectItemCaseSensitive(r, "fail_type"));
		s->fault_body = xstrdup(fail->valuestring);
		s->retry_after = s->fault == 429 ? 1 : 0;
		s->times = 0;
	} else {
		if (cJSON_IsString(text))
			buf_puts(&b, text->valuestring);
		if (cJSON_IsObject(json) || cJSON_IsArray(json)) {
			js = cJSON_PrintUnformatted(json);
			if (!js)
				die("out of memory");
			buf_printf(&b, "%s%s", b.n ? "\n\n" : "", js);
			free(js);
		}
		s->text = xstrdup(b.n ? b.p : final_text);
		buf_free(&b);
	}
	groups[i].n = nsteps - groups[i].first;
}

static void load_script(const cJSON *arr)
{
	size_t cap = 0, i;

	ngroups = (size_t)cJSON_GetArraySize(arr);
	groups = calloc(ngroups ? ngroups : 1, sizeof(*groups));
	if (!groups)
		die("out of memory");
	for (i = 0; i < ngroups; i++)
		load_reply(cJSON_GetArrayItem(arr, (int)i), i, &cap);
}

/* In --from-script mode: a new prompt starts the next reply, tool
 * results continue the current one (its answer repeats at the end). */
static long take_script_step(int continues)
{
	const struct group *g;
	long i;

	if (!continues || cur_group < 0) {
		cur_group++;
		cur_sub = 0;
		if ((size_t)cur_group < ngroups)
			hold_now = groups[cur_group].hold;
	}
	if ((size_t)cur_group >= ngroups)
		return -1;
	g = &groups[cur_group];
	if (cur_sub >= g->n)
		return (long)(g->first + g->n - 1);
	i = (long)(g->first + cur_sub);
	if (steps[i].times != 0) /* a fault with times 0 stays */
		cur_sub++;
	return i;
}

/* The step for the next turn: its index, or -1 for the final answer. */
static long take_step(int continues)
{
	long i;

	if (script_mode)
		return take_script_step(continues);
	if (next_step >= nsteps)
		return -1;
	i = (long)next_step;
	step_uses++;
	if (steps[i].times > 0 && step_uses >= steps[i].times) {
		next_step++;
		step_uses = 0;
	}
	return i;
}

/* ---- HTTP requests --------------------------------------------------- */

static void request_free(struct request *rq)
{
	free(rq->target);
	free(rq->path);
	cJSON_Delete(rq->headers);
	free(rq->body);
	memset(rq, 0, sizeof(*rq));
}

static int is_secret_header(const char *name)
{
	static const char *const names[] = {
		"authorization", "proxy-authorization",
		"x-api-key",     "x-goog-api-key",
		"api-key",       "cookie"};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

/* Decode a chunked body starting at P (N bytes); the bytes it spans, 0
 * when more must arrive, -1 when it is malformed. */
static long dechunk(const char *p, size_t n, struct buf *out)
{
	size_t off = 0, len;
	const char *eol;
	char *end;

	for (;;) {
		eol = memchr(p + off, '\n', n - off);
		if (!eol)
			return n - off > 32 ? -1 : 0;
		errno = 0;
		len = strtoul(p + off, &end, 16);
		if (end == p + off || errno || len > MAX_BODY ||
		    out->n + len > MAX_BODY)
			return -1;
		off = (size_t)(eol - p) + 1;
		if (len == 0)
			break;
		if (n - off < len + 2)
			return 0;
		buf_add(out, p + off, len);
		off += len;
		if (p[off] == '\r')
			off++;
		if (p[off] != '\n')
			return -1;
		off++;
	}
	for (;;) { /* trailers, up to the empty line */
		eol = memchr(p + off, '\n', n - off);
		if (!eol)
			return 0;
		len = (size_t)(eol - (p + off));
		off = (size_t)(eol - p) + 1;
		if (len == 0 || (len == 1 && eol[-1] == '\r'))
			return (long)off;
	}
}

/* Parse one request from the front of IN: 1 and its length in *USED
 * when whole, 0 when more must arrive, -1 when it is not HTTP. */
static int parse_request(const struct buf *in, struct request *rq,
			 size_t *used)
{
	const char *end, *line, *eol, *colon, *v;
	char name[64], ver[16], *q, *first;
	size_t head, clen = 0, nlen, i;
	int chunked = 0, fields;
	struct buf body = {0}, val;
	long spent;

	memset(rq, 0, sizeof(*rq));
	end = in->n ? strstr(in->p, "\r\n\r\n") : NULL;
	if (!end)
		return in->n > MAX_HEAD || (in->n && memchr(in->p, 0, in->n))
			       ? -1
			       : 0;
	head = (size_t)(end - in->p) + 4;
	eol = strstr(in->p, "\r\n");
	first = strndup(in->p, (size_t)(eol - in->p));
	rq->target = calloc(1, (size_t)(eol - in->p) + 1);
	if (!first || !rq->target)
		die("out of memory");
	fields =
		sscanf(first, "%15[A-Z] %s %15s", rq->method, rq->target, ver);
	free(first);
	if (fields != 3 || strncmp(ver, "HTTP/1.", 7))
		return -1;
	rq->keep_alive = strcmp(ver, "HTTP/1.0") != 0;
	rq->path = strdup(rq->target);
	if (!rq->path)
		die("out of memory");
	if ((q = strchr(rq->path, '?')))
		*q = '\0';
	rq->headers = cJSON_CreateObject();
	for (line = eol + 2; line < end + 2; line = eol + 2) {
		eol = strstr(line, "\r\n");
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line)
			return -1;
		nlen = (size_t)(colon - line);
		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1;
		for (i = 0; i < nlen; i++)
			name[i] = (char)(line[i] >= 'A' && line[i] <= 'Z'
						 ? line[i] + 32
						 : line[i]);
		name[nlen] = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		memset(&val, 0, sizeof(val));
		buf_add(&val, v, (size_t)(eol - v));
		if (!strcmp(name, "content-length")) {
			char *e;
			unsigned long long l = strtoull(val.p, &e, 10);

			if (e == val.p || *e || l > MAX_BODY) {
				buf_free(&val);
				return -1;
			}
			clen = (size_t)l;
		} else if (!strcmp(name, "transfer-encoding")) {
			chunked = strcasestr(val.p, "chunked") != NULL;
		} else if (!strcmp(name, "connection")) {
			if (strcasestr(val.p, "close"))
				rq->keep_alive = 0;
			else if (strcasestr(val.p, "keep-alive"))
				rq->keep_alive = 1;
		} else if (!strcmp(name, "content-encoding") &&
			   strcasecmp(val.p, "identity")) {
			rq->encoding = "compressed";
		}
		cJSON_DeleteItemFromObjectCaseSensitive(rq->headers, name);
		cJSON_AddStringToObject(rq->headers, name,
					is_secret_header(name) ? "<redacted>"
							       : val.p);
		buf_free(&val);
	}
	if (chunked) {
		spent = dechunk(in->p + head, in->n - head, &body);
		if (spent <= 0) {
			buf_free(&body);
			return (int)spent;
		}
		*used = head + (size_t)spent;
	} else {
		if (in->n - head < clen)
			return 0;
		buf_add(&body, in->p + head, clen);
		*used = head + clen;
	}
	if (!body.p)
		buf_add(&body, "", 0);
	rq->body = body.p;
	rq->body_len = body.n;
	return 1;
}

/* ---- responses --------------------------------------------------------- */

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 413:
		return "Payload Too Large";
	case 415:
		return "Unsupported Media Type";
	case 429:
		return "Too Many Requests";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	default:
		return "Error";
	}
}

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write R; 0 when the connection may carry another request. */
static int send_reply(int fd, const struct reply *r, int keep_alive)
{
	struct buf h = {0};
	size_t n = r->cut ? r->cut : r->body.n;
	int rc;

	buf_printf(&h, "HTTP/1.1 %d %s\r\n", r->status, reason(r->status));
	buf_printf(&h, "Content-Type: %s\r\n",
		   r->sse ? "text/event-stream" : "application/json");
	buf_printf(&h, "request-id: req_mock_%lu\r\n", seq);
	buf_printf(&h, "x-request-id: req_mock_%lu\r\n", seq);
	if (r->retry_after > 0)
		buf_printf(&h, "Retry-After: %d\r\n", r->retry_after);
	if (r->sse) {
		buf_puts(&h, "Cache-Control: no-cache\r\n"
			     "Transfer-Encoding: chunked\r\n");
		if (n)
			buf_printf(&h, "\r\n%zx\r\n", n);
		else
			buf_puts(&h, "\r\n");
	} else {
		buf_printf(&h, "Content-Length: %zu\r\n\r\n", r->body.n);
	}
	if (!keep_alive || r->cut)
		keep_alive = 0;
	rc = send_all(fd, h.p, h.n);
	buf_free(&h);
	if (rc == 0 && n)
		rc = send_all(fd, r->body.p, n);
	if (rc == 0 && r->sse && !r->cut)
		rc = send_all(fd, n ? "\r\n0\r\n\r\n" : "0\r\n\r\n",
			      n ? 7 : 5);
	return rc == 0 && keep_alive ? 0 : -1;
}

static enum api api_of(const char *path)
{
	if (strstr(path, "/messages"))
		return API_ANTHROPIC;
	if (strstr(path, "/responses"))
		return API_OPENAI;
	if (strstr(path, "/models/") && strchr(path, ':'))
		return API_GEMINI;
	return API_NONE;
}

static void log_request(const struct request *rq, const cJSON *body,
			enum api api, const char *kind, long step)
{
	static const char *const names[] = {"none", "anthropic", "openai",
					    "gemini"};
	cJSON *o;
	char *line;

	if (!log_file)
		return;
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	cJSON_AddStringToObject(o, "method", rq->method);
	cJSON_AddStringToObject(o, "path", rq->target);
	cJSON_AddStringToObject(o, "api", names[api]);
	cJSON_AddStringToObject(o, "kind", kind);
	if (step >= 0)
		cJSON_AddNumberToObject(o, "step", (double)step);
	else
		cJSON_AddNullToObject(o, "step");
	if (script_mode && !strcmp(kind, "turn"))
		cJSON_AddNumberToObject(o, "reply", (double)cur_group);
	cJSON_AddItemToObject(o, "headers", cJSON_Duplicate(rq->headers, 1));
	if (body)
		cJSON_AddItemToObject(o, "body", cJSON_Duplicate(body, 1));
	else
		cJSON_AddStringToObject(o, "body", rq->body);
	line = cJSON_PrintUnformatted(o);
	if (line) {
		fprintf(log_file, "%s\n", line);
		fflush(log_file);
	}
	free(line);
	cJSON_Delete(o);
}

/* The model named in the body, or in a Gemini path ("models/M:verb"). */
static char *model_of(const struct request *rq, const cJSON *body)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "model");
	const char *p = strstr(rq->path, "/models/");
	size_t n;
	char *out;

	if (cJSON_IsString(m))
		return strdup(m->valuestring);
	if (!p)
		return strdup("mock-model");
	p += strlen("/models/");
	n = strcspn(p, ":/");
	out = malloc(n + 1);
	if (out) {
		memcpy(out, p, n);
		out[n] = '\0';
	}
	return out;
}

/* GET .../models: an empty list, in OpenAI's and Gemini's spelling. */
static void model_list(struct reply *r)
{
	r->status = 200;
	buf_puts(&r->body, "{\"object\":\"list\",\"data\":[],\"models\":[]}");
}

static void answer(const struct request *rq, struct reply *r)
{
	enum api api = api_of(rq->path);
	cJSON *body = cJSON_ParseWithLength(rq->body, rq->body_len);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "stream");
	struct call c = {0};
	const struct step *s;
	char *model;
	long i = -1;

	seq++;
	if (rq->encoding || api == API_NONE || strcmp(rq->method, "POST") ||
	    !cJSON_IsObject(body)) {
		log_request(rq, body, api, "other", -1);
		if (rq->encoding)
			dialect_error(api, 415,
				      "compressed bodies are not "
				      "supported",
				      r);
		else if (api == API_NONE && !strcmp(rq->method, "GET") &&
			 strstr(rq->path, "/models"))
			model_list(r);
		else if (api == API_NONE || strcmp(rq->method, "POST"))
			dialect_error(api, 404, NULL, r);
		else
			dialect_error(api, 400, "the body is not JSON", r);
		cJSON_Delete(body);
		return;
	}
	model = model_of(rq, body);
	if (!model)
		die("out of memory");
	c.api = api;
	c.req = body;
	c.raw = rq->body;
	c.model = model;
	c.stream = api == API_GEMINI ? strstr(rq->path, ":stream") != NULL
				     : cJSON_IsTrue(st);
	c.workdir = workdir;
	c.seq = seq;
	c.force_tools = script_mode;
	if (strstr(rq->path, "count_tokens") ||
	    strstr(rq->path, ":countTokens")) {
		log_request(rq, body, api, "count", -1);
		dialect_count_tokens(&c, r);
	} else if (!call_has_tools(&c) ||
		   (api == API_GEMINI &&
		    !strstr(rq->path, "enerateContent"))) {
		log_request(rq, body, api, "side", -1);
		dialect_side(&c, r);
	} else {
		i = take_step(call_continues(&c));
		log_request(rq, body, api, "turn", i);
		if (hold_now > 0) { /* logged first: a test may look now */
			struct timespec ts = {
				(time_t)hold_now,
				(long)((hold_now - (double)(time_t)hold_now) *
				       1e9)};

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR &&
			       !stop)
				;
			hold_now = 0;
		}
		s = i >= 0 ? &steps[i] : NULL;
		if (s && s->fault) {
			r->retry_after = s->retry_after;
			dialect_error(api, s->fault, s->fault_body, r);
		} else if (s) {
			dialect_turn(&c, s, s->cut, r);
			if (s->cut && !r->sse) /* a whole body, cut halfway */
				r->cut = r->body.n / 2;
		} else {
			struct step fin = {.text = final_text};
			dialect_turn(&c, &fin, 0, r);
		}
	}
	free(model);
	cJSON_Delete(body);
}

/* Serve what has arrived on CONN; -1 when it is to be closed. */
static int serve(struct conn *cn)
{
	struct request rq;
	struct reply r;
	size_t used = 0;
	int rc, keep;

	for (;;) {
		rc = parse_request(&cn->in, &rq, &used);
		if (rc == 0) {
			request_free(&rq);
			return 0;
		}
		memset(&r, 0, sizeof(r));
		if (rc < 0) {
			seq++;
			dialect_error(API_NONE, 400, "malformed request", &r);
			keep = 0;
		} else {
			answer(&rq, &r);
			keep = rq.keep_alive;
		}
		rc = send_reply(cn->fd, &r, keep);
		buf_free(&r.body);
		request_free(&rq);
		if (rc < 0)
			return -1;
		buf_consume(&cn->in, used);
	}
}

/* ---- main -------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void write_port_file(const char *path, int port)
{
	struct buf tmp = {0};
	FILE *f;

	buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp.p, "w");
	if (!f)
		die("cannot write '%s': %s", tmp.p, strerror(errno));
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp.p, path) != 0)
		die("cannot write '%s': %s", path, strerror(errno));
	buf_free(&tmp);
}

static int listen_loopback(int *port)
{
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		die("cannot listen on 127.0.0.1: %s", strerror(errno));
	*port = ntohs(sa.sin_port);
	return fd;
}

static void usage(void)
{
	fputs("usage: model-server (--scenario FILE | --from-script FILE) "
	      "--port-file PATH [--log DIR] [--workdir DIR]\n",
	      stderr);
	exit(2);
}

static void parse_args(int argc, char **argv, const char **scenario,
		       const char **port_file, const char **log_dir,
		       int *from_script)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (i + 1 >= argc)
			usage();
		if (!strcmp(a, "--scenario"))
			*scenario = argv[++i];
		else if (!strcmp(a, "--from-script")) {
			*scenario = argv[++i];
			*from_script = 1;
		} else if (!strcmp(a, "--port-file"))
			*port_file = argv[++i];
		else if (!strcmp(a, "--log"))
			*log_dir = argv[++i];
		else if (!strcmp(a, "--workdir"))
			workdir = argv[++i];
		else
			usage();
	}
	if (!*scenario || !*port_file)
		usage();
}

int main(int argc, char **argv)
{
	const char *scenario = NULL, *port_file = NULL, *log_dir = NULL;
	struct pollfd pfd[MAX_CONNS + 2];
	struct conn conns[MAX_CONNS];
	struct sigaction sa = {0};
	struct stat st;
	int lfd, port, nconn = 0, watch_stdin, i, n, from_script = 0;
	char chunk[65536];
	ssize_t got;

	parse_args(argc, argv, &scenario, &port_file, &log_dir, &from_script);
	load_scenario(scenario, from_script);
	if (log_dir) {
		struct buf p = {0};

		buf_printf(&p, "%s/requests.jsonl", log_dir);
		log_file = fopen(p.p, "a");
		if (!log_file)
			die("cannot open '%s': %s", p.p, strerror(errno));
		buf_free(&p);
	}
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	watch_stdin = fstat(0, &st) == 0 &&
		      (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
	lfd = listen_loopback(&port);
	write_port_file(port_file, port);
	while (!stop) {
		pfd[0].fd = lfd;
		pfd[0].events = nconn < MAX_CONNS ? POLLIN : 0;
		pfd[1].fd = watch_stdin ? 0 : -1;
		pfd[1].events = POLLIN;
		for (i = 0; i < nconn; i++) {
			pfd[i + 2].fd = conns[i].fd;
			pfd[i + 2].events = POLLIN;
		}
		n = poll(pfd, (nfds_t)nconn + 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("poll: %s", strerror(errno));
		if (pfd[1].revents && (read(0, chunk, sizeof(chunk)) <= 0))
			break;
		for (i = nconn - 1; i >= 0; i--) {
			if (!pfd[i + 2].revents)
				continue;
			got = recv(conns[i].fd, chunk, sizeof(chunk), 0);
			if (got > 0)
				buf_add(&conns[i].in, chunk, (size_t)got);
			if (got > 0 && serve(&conns[i]) == 0)
				continue;
			if (got < 0 && errno == EINTR)
				continue;
			close(conns[i].fd);
			buf_free(&conns[i].in);
			conns[i] = conns[--nconn];
		}
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				conns[nconn].fd = fd;
				memset(&conns[nconn].in, 0,
				       sizeof(conns[nconn].in));
				nconn++;
			}
		}
	}
	for (i = 0; i < nconn; i++) {
		close(conns[i].fd);
		buf_free(&conns[i].in);
	}
	close(lfd);
	if (log_file)
		fclose(log_file);
	free_scenario();
	return 0;
}

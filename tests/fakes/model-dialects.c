/*
 * model-dialects.c - the model server's three wire formats: turns a
 * scripted step into an Anthropic Messages, OpenAI Responses or Gemini
 * generateContent reply (streamed or whole), writes each API's own error
 * body, and maps the abstract tool intents (write_file, shell) to the
 * concrete tool the asking CLI declared in the request's `tools`.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "model-server.h"

/* A concrete tool for an intent: its name and how its arguments look. */
enum argstyle {
	ARGS_FILE_PATH, /* {file_path, content} */
	ARGS_PATH_TEXT, /* {path, file_text} */
	ARGS_PATCH,     /* apply_patch: {input: patch} or custom input */
	ARGS_COMMAND,   /* {command, description} */
	ARGS_CMD,       /* {cmd} */
	ARGS_CMD_PLAIN, /* {command} */
	ARGS_ARGV,      /* {command: ["bash", "-lc", cmd]} */
};

struct tool {
	enum intent intent;
	const char *name;
	enum argstyle style;
};

/* First match wins: claude, gemini, copilot, then codex's tools. */
static const struct tool tools[] = {
	{TOOL_WRITE, "Write", ARGS_FILE_PATH},
	{TOOL_WRITE, "write_file", ARGS_FILE_PATH},
	{TOOL_WRITE, "create", ARGS_PATH_TEXT},
	{TOOL_WRITE, "apply_patch", ARGS_PATCH},
	{TOOL_SHELL, "Bash", ARGS_COMMAND},
	{TOOL_SHELL, "run_shell_command", ARGS_COMMAND},
	{TOOL_SHELL, "bash", ARGS_COMMAND},
	{TOOL_SHELL, "exec_command", ARGS_CMD},
	{TOOL_SHELL, "shell_command", ARGS_CMD_PLAIN},
	{TOOL_SHELL, "shell", ARGS_ARGV},
};

/* The tool a CLI that declares none for an intent would have called
 * (claude's, gemini's, copilot's), for --from-script's critics. Codex
 * always declares its shell tool and patches through it. */
static const struct tool forced[][2] = {
	[API_ANTHROPIC] = {{TOOL_WRITE, "Write", ARGS_FILE_PATH},
			   {TOOL_SHELL, "Bash", ARGS_COMMAND}},
	[API_OPENAI] = {{TOOL_WRITE, "create", ARGS_PATH_TEXT},
			{TOOL_SHELL, "bash", ARGS_COMMAND}},
	[API_GEMINI] = {{TOOL_WRITE, "write_file", ARGS_FILE_PATH},
			{TOOL_SHELL, "run_shell_command", ARGS_COMMAND}},
};

/* A tool call decided for one reply. */
struct toolcall {
	const char *name;
	cJSON *args;     /* function arguments, or NULL for a custom tool */
	char *input;     /* a custom (freeform) tool's input */
	char *args_json; /* args, printed */
};

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		fputs("model-server: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static const cJSON *tools_array(const struct call *c)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(c->req, "tools");

	return cJSON_IsArray(t) ? t : NULL;
}

/* The declared tool called NAME (Gemini: a functionDeclarations entry,
 * OpenAI: possibly inside a namespace), or NULL. */
static const cJSON *find_tool(const cJSON *arr, const char *name)
{
	const cJSON *t, *n, *sub;

	cJSON_ArrayForEach (t, arr) {
		n = cJSON_GetObjectItemCaseSensitive(t, "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return t;
		sub = cJSON_GetObjectItemCaseSensitive(t,
						       "functionDeclarations");
		if (!cJSON_IsArray(sub))
			sub = cJSON_GetObjectItemCaseSensitive(t, "tools");
		if (cJSON_IsArray(sub) && (sub = find_tool(sub, name)))
			return sub;
	}
	return NULL;
}

/* The last element of the request's conversation that is neither a
 * system nor a developer message (claude appends "system" reminders
 * after tool results), or NULL. */
static const cJSON *last_of(const struct call *c, const char *key)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c->req, key), *r;
	int i;

	for (i = cJSON_GetArraySize(a) - 1; i >= 0; i--) {
		r = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, i),
						     "role");
		if (!cJSON_IsString(r) ||
		    (strcmp(r->valuestring, "system") &&
		     strcmp(r->valuestring, "developer")))
			return cJSON_GetArrayItem(a, i);
	}
	return NULL;
}

static int has_part(const cJSON *arr, const char *key, const char *type)
{
	const cJSON *p, *t;

	cJSON_ArrayForEach (p, arr) {
		t = cJSON_GetObjectItemCaseSensitive(p, key);
		if (type ? cJSON_IsString(t) && !strcmp(t->valuestring, type)
			 : t != NULL)
			return 1;
	}
	return 0;
}

/* Whether the request carries tool results last (the model's turn goes
 * on) rather than a new prompt. */
int call_continues(const struct call *c)
{
	const cJSON *last, *t;

	if (c->api == API_ANTHROPIC) {
		last = last_of(c, "messages");
		return has_part(
			cJSON_GetObjectItemCaseSensitive(last, "content"),
			"type", "tool_result");
	}
	if (c->api == API_GEMINI) {
		last = last_of(c, "contents");
		return has_part(
			cJSON_GetObjectItemCaseSensitive(last, "parts"),
			"functionResponse", NULL);
	}
	last = last_of(c, "input");
	t = cJSON_GetObjectItemCaseSensitive(last, "type");
	return cJSON_IsString(t) && strstr(t->valuestring, "_output");
}

int call_has_tools(const struct call *c)
{
	const cJSON *arr = tools_array(c), *t, *fd;

	if (c->api != API_GEMINI)
		return arr && cJSON_GetArraySize(arr) > 0;
	cJSON_ArrayForEach (t, arr) {
		fd = cJSON_GetObjectItemCaseSensitive(t,
						      "functionDeclarations");
		if (cJSON_GetArraySize(fd) > 0)
			return 1;
	}
	return 0;
}

/* The working directory the CLI announced in its prompt, for relative
 * paths: each CLI names it in its own words. */
static char *sniff_cwd(const struct call *c)
{
	static const char *const marks[] = {
		"Primary working directory: ",     /* claude */
		"<cwd>",                           /* codex */
		"Current working directory: ",     /* copilot */
		"Workspace Directories:**\\n  - ", /* gemini */
	};
	const char *p;
	size_t i, n;
	char *out;

	if (c->workdir)
		return xstrdup(c->workdir);
	for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		p = strstr(c->raw, marks[i]);
		if (!p)
			continue;
		p += strlen(marks[i]);
		n = strcspn(p, "\\<\"\n");
		if (n == 0 || p[0] != '/')
			continue;
		out = malloc(n + 1);
		if (!out)
			return NULL;
		memcpy(out, p, n);
		out[n] = '\0';
		return out;
	}
	return NULL;
}

static char *resolve_path(const struct call *c, const char *path)
{
	char *cwd, *out;
	struct buf b = {0};

	if (path[0] == '/' || !(cwd = sniff_cwd(c)))
		return xstrdup(path);
	buf_printf(&b, "%s/%s", cwd, path);
	free(cwd);
	out = xstrdup(b.p);
	buf_free(&b);
	return out;
}

/* COMMAND that writes CONTENT to PATH, for CLIs with no file tool. */
static char *write_command(const char *path, const char *content)
{
	struct buf b = {0};
	const char *s;
	char *out;
	int i;

	buf_puts(&b, "printf '%s' '");
	for (i = 0; i < 2; i++) {
		for (s = i ? path : content; *s; s++) {
			if (*s == '\'')
				buf_puts(&b, "'\\''");
			else
				buf_add(&b, s, 1);
		}
		buf_puts(&b, i ? "'" : "' > '");
	}
	out = xstrdup(b.p);
	buf_free(&b);
	return out;
}

static char *patch_text(const char *path, const char *content)
{
	struct buf b = {0};
	const char *s, *nl;
	char *out;

	buf_printf(&b, "*** Begin Patch\n*** Add File: %s\n", path);
	for (s = content; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		if (!nl) {
			buf_printf(&b, "+%s\n", s);
			break;
		}
		buf_puts(&b, "+");
		buf_add(&b, s, (size_t)(nl - s + 1));
	}
	buf_puts(&b, "*** End Patch\n");
	out = xstrdup(b.p);
	buf_free(&b);
	return out;
}

static char *patch_command(const char *path, const char *content)
{
	struct buf b = {0};
	char *patch = patch_text(path, content), *out;

	buf_printf(&b,
		   "apply_patch <<'MODEL_SERVER_EOF'\n%s"
		   "MODEL_SERVER_EOF\n",
		   patch);
	free(patch);
	out = xstrdup(b.p);
	buf_free(&b);
	return out;
}

/* The declared tool for INTENT; with FORCE, the CLI's own name for it
 * when it declares none (only in --from-script mode). */
/* What gemini 0.61's policy engine counts as a build file (its
 * isBuildFile(), in part: make, cmake and bazel). */
static int is_build_file(const char *path)
{
	static const char *const names[] = {
		"Makefile",   "makefile",     "GNUmakefile", "CMakeLists.txt",
		"BUILD",      "BUILD.bazel",  "WORKSPACE",   "MODULE.bazel",
		"Dockerfile", "Containerfile"};
	const char *base = strrchr(path, '/'), *dot;
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(base, names[i]))
			return 1;
	dot = strrchr(base, '.');
	return dot && (!strcasecmp(dot, ".mk") || !strcasecmp(dot, ".cmake") ||
		       !strcasecmp(dot, ".bzl") || !strcasecmp(dot, ".bazel"));
}

static int pick_tool(const struct call *c, enum intent intent, int force,
		     const struct tool **tool, const cJSON **decl)
{
	const cJSON *arr = tools_array(c);
	size_t i;

	if (force) {
		if (!c->force_tools || c->api == API_NONE)
			return 0;
		*tool = &forced[c->api][intent == TOOL_WRITE ? 0 : 1];
		*decl = NULL;
		return 1;
	}
	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		if (tools[i].intent != intent)
			continue;
		*decl = find_tool(arr, tools[i].name);
		if (*decl) {
			*tool = &tools[i];
			return 1;
		}
	}
	return 0;
}

/* Decide the concrete call for step S; 0 when the CLI offers no tool
 * for its intent (the reply then says so in text). */
static int make_toolcall(const struct call *c, const struct step *s,
			 struct toolcall *tc)
{
	const cJSON *decl = NULL, *type;
	const struct tool *t = NULL;
	char *path = NULL, *cmd = NULL;
	cJSON *argv;
	int shell;

	memset(tc, 0, sizeof(*tc));
	if (s->tool == TOOL_WRITE)
		path = resolve_path(c, s->path);
	/* copilot's `create` refuses an existing file: the server runs on
	 * the CLI's host, so it looks, and rewrites one with a command;
	 * gemini refuses build files to its file tools, headless even in
	 * yolo mode, so a model writes those with a command too */
	if (s->tool == TOOL_WRITE && pick_tool(c, TOOL_WRITE, 0, &t, &decl) &&
	    (t->style != ARGS_PATH_TEXT || access(path, F_OK) != 0) &&
	    (c->api != API_GEMINI || !is_build_file(path))) {
		shell = 0;
	} else if (pick_tool(c, TOOL_SHELL, 0, &t, &decl)) {
		shell = 1;
	} else if (pick_tool(c, s->tool, 1, &t, &decl)) {
		shell = s->tool == TOOL_SHELL;
	} else {
		free(path);
		return 0;
	}
	if (shell) {
		if (s->tool == TOOL_SHELL)
			cmd = xstrdup(s->command);
		else if (t->style == ARGS_COMMAND)
			cmd = write_command(path, s->content);
		else /* codex runs an apply_patch heredoc as its patch tool */
			cmd = patch_command(s->path, s->content);
	}
	tc->name = t->name;
	tc->args = cJSON_CreateObject();
	switch (t->style) {
	case ARGS_FILE_PATH:
		cJSON_AddStringToObject(tc->args, "file_path", path);
		cJSON_AddStringToObject(tc->args, "content", s->content);
		break;
	case ARGS_PATH_TEXT:
		cJSON_AddStringToObject(tc->args, "path", path);
		cJSON_AddStringToObject(tc->args, "file_text", s->content);
		break;
	case ARGS_PATCH:
		tc->input = patch_text(path, s->content);
		type = cJSON_GetObjectItemCaseSensitive(decl, "type");
		if (cJSON_IsString(type) &&
		    !strcmp(type->valuestring, "custom")) {
			cJSON_Delete(tc->args);
			tc->args = NULL;
		} else {
			cJSON_AddStringToObject(tc->args, "input", tc->input);
		}
		break;
	case ARGS_COMMAND:
		cJSON_AddStringToObject(tc->args, "command", cmd);
		cJSON_AddStringToObject(tc->args, "description",
					"run a scripted command");
		break;
	case ARGS_CMD:
		cJSON_AddStringToObject(tc->args, "cmd", cmd);
		break;
	case ARGS_CMD_PLAIN:
		cJSON_AddStringToObject(tc->args, "command", cmd);
		break;
	case ARGS_ARGV:
		argv = cJSON_AddArrayToObject(tc->args, "command");
		cJSON_AddItemToArray(argv, cJSON_CreateString("bash"));
		cJSON_AddItemToArray(argv, cJSON_CreateString("-lc"));
		cJSON_AddItemToArray(argv, cJSON_CreateString(cmd));
		break;
	}
	if (tc->args)
		tc->args_json = cJSON_PrintUnformatted(tc->args);
	free(path);
	free(cmd);
	return 1;
}

static void toolcall_free(struct toolcall *tc)
{
	cJSON_Delete(tc->args);
	free(tc->input);
	free(tc->args_json);
}

/* The text of a reply: the step's text, or why no tool could be used. */
static const char *reply_text(const struct step *s, int have_tool)
{
	if (s->tool != TOOL_NONE && !have_tool)
		return "model-server: the request offers no tool for this "
		       "step";
	return s->text;
}

static int tokens(const char *s)
{
	return s ? (int)(strlen(s) / 4) + 1 : 0;
}

/* Append OBJ as an SSE event (with an `event:` line when NAME is set)
 * and free it. */
static void sse_event(struct reply *r, const char *name, cJSON *obj)
{
	char *js = cJSON_PrintUnformatted(obj);

	if (name)
		buf_printf(&r->body, "event: %s\n", name);
	buf_printf(&r->body, "data: %s\n\n", js ? js : "{}");
	free(js);
	cJSON_Delete(obj);
}

static void mark_cut(struct reply *r, int cut)
{
	if (cut && !r->cut)
		r->cut = r->body.n;
}

static void json_body(struct reply *r, cJSON *obj)
{
	char *js = cJSON_PrintUnformatted(obj);

	buf_puts(&r->body, js ? js : "{}");
	free(js);
	cJSON_Delete(obj);
}

/* ---- Anthropic Messages ---------------------------------------------- */

static cJSON *anthropic_usage(const struct call *c, int out)
{
	cJSON *u = cJSON_CreateObject();

	cJSON_AddNumberToObject(u, "input_tokens", tokens(c->raw));
	cJSON_AddNumberToObject(u, "cache_creation_input_tokens", 0);
	cJSON_AddNumberToObject(u, "cache_read_input_tokens", 0);
	cJSON_AddNumberToObject(u, "output_tokens", out);
	return u;
}

static cJSON *anthropic_message(const struct call *c, const char *stop,
				int out)
{
	cJSON *m = cJSON_CreateObject();
	char id[48];

	snprintf(id, sizeof(id), "msg_mock_%lu", c->seq);
	cJSON_AddStringToObject(m, "id", id);
	cJSON_AddStringToObject(m, "type", "message");
	cJSON_AddStringToObject(m, "role", "assistant");
	cJSON_AddStringToObject(m, "model", c->model);
	cJSON_AddArrayToObject(m, "content");
	if (stop)
		cJSON_AddStringToObject(m, "stop_reason", stop);
	else
		cJSON_AddNullToObject(m, "stop_reason");
	cJSON_AddNullToObject(m, "stop_sequence");
	cJSON_AddItemToObject(m, "usage", anthropic_usage(c, out));
	return m;
}

static void anthropic_block(struct reply *r, int idx, cJSON *block,
			    const char *dtype, const char *key,
			    const char *val, int cut)
{
	cJSON *e = cJSON_CreateObject(), *d;

	cJSON_AddStringToObject(e, "type", "content_block_start");
	cJSON_AddNumberToObject(e, "index", idx);
	cJSON_AddItemToObject(e, "content_block", block);
	sse_event(r, "content_block_start", e);
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", "content_block_delta");
	cJSON_AddNumberToObject(e, "index", idx);
	d = cJSON_AddObjectToObject(e, "delta");
	cJSON_AddStringToObject(d, "type", dtype);
	cJSON_AddStringToObject(d, key, val);
	sse_event(r, "content_block_delta", e);
	mark_cut(r, cut);
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", "content_block_stop");
	cJSON_AddNumberToObject(e, "index", idx);
	sse_event(r, "content_block_stop", e);
}

static void anthropic_turn(const struct call *c, const char *text,
			   struct toolcall *tc, int cut, struct reply *r)
{
	const char *stop = tc ? "tool_use" : "end_turn";
	int out = tokens(text) + (tc ? tokens(tc->args_json) : 0), idx = 0;
	cJSON *m, *e, *blk, *content;
	char id[48];

	snprintf(id, sizeof(id), "toolu_mock_%lu", c->seq);
	if (!c->stream) {
		m = anthropic_message(c, stop, out);
		content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (text) {
			blk = cJSON_CreateObject();
			cJSON_AddStringToObject(blk, "type", "text");
			cJSON_AddStringToObject(blk, "text", text);
			cJSON_AddItemToArray(content, blk);
		}
		if (tc) {
			blk = cJSON_CreateObject();
			cJSON_AddStringToObject(blk, "type", "tool_use");
			cJSON_AddStringToObject(blk, "id", id);
			cJSON_AddStringToObject(blk, "name", tc->name);
			cJSON_AddItemToObject(blk, "input",
					      cJSON_Duplicate(tc->args, 1));
			cJSON_AddItemToArray(content, blk);
		}
		json_body(r, m);
		return;
	}
	r->sse = 1;
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", "message_start");
	cJSON_AddItemToObject(e, "message", anthropic_message(c, NULL, 1));
	sse_event(r, "message_start", e);
	if (text) {
		blk = cJSON_CreateObject();
		cJSON_AddStringToObject(blk, "type", "text");
		cJSON_AddStringToObject(blk, "text", "");
		anthropic_block(r, idx++, blk, "text_delta", "text", text,
				cut);
	}
	if (tc) {
		blk = cJSON_CreateObject();
		cJSON_AddStringToObject(blk, "type", "tool_use");
		cJSON_AddStringToObject(blk, "id", id);
		cJSON_AddStringToObject(blk, "name", tc->name);
		cJSON_AddObjectToObject(blk, "input");
		anthropic_block(r, idx, blk, "input_json_delta",
				"partial_json", tc->args_json, cut);
	}
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", "message_delta");
	blk = cJSON_AddObjectToObject(e, "delta");
	cJSON_AddStringToObject(blk, "stop_reason", stop);
	cJSON_AddNullToObject(blk, "stop_sequence");
	cJSON_AddItemToObject(e, "usage", anthropic_usage(c, out));
	sse_event(r, "message_delta", e);
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", "message_stop");
	sse_event(r, "message_stop", e);
}

/* ---- OpenAI Responses ------------------------------------------------- */

static cJSON *openai_response(const struct call *c, const char *status,
			      cJSON *output, int out)
{
	cJSON *o = cJSON_CreateObject(), *u, *d;
	char id[48];
	int in = tokens(c->raw);

	snprintf(id, sizeof(id), "resp_mock_%lu", c->seq);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "object", "response");
	cJSON_AddNumberToObject(o, "created_at", 1700000000);
	cJSON_AddStringToObject(o, "status", status);
	cJSON_AddStringToObject(o, "model", c->model);
	cJSON_AddItemToObject(o, "output",
			      output ? output : cJSON_CreateArray());
	if (!out) {
		cJSON_AddNullToObject(o, "usage");
		return o;
	}
	u = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", in);
	d = cJSON_AddObjectToObject(u, "input_tokens_details");
	cJSON_AddNumberToObject(d, "cached_tokens", 0);
	cJSON_AddNumberToObject(u, "output_tokens", out);
	d = cJSON_AddObjectToObject(u, "output_tokens_details");
	cJSON_AddNumberToObject(d, "reasoning_tokens", 0);
	cJSON_AddNumberToObject(u, "total_tokens", in + out);
	return o;
}

static cJSON *openai_event(const char *type, int *seq)
{
	cJSON *e = cJSON_CreateObject();

	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddNumberToObject(e, "sequence_number", (*seq)++);
	return e;
}

static cJSON *openai_text_part(const char *text)
{
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "type", "output_text");
	cJSON_AddStringToObject(p, "text", text);
	cJSON_AddArrayToObject(p, "annotations");
	return p;
}

/* The output item for a message (TC NULL) or a tool call, as it is when
 * done, or (DONE 0) as announced by response.output_item.added. */
static cJSON *openai_item(const struct call *c, const char *text,
			  const struct toolcall *tc, int done)
{
	cJSON *it = cJSON_CreateObject(), *arr;
	char id[48];

	snprintf(id, sizeof(id), "%s_mock_%lu", tc ? "fc" : "msg", c->seq);
	cJSON_AddStringToObject(it, "id", id);
	if (!tc) {
		cJSON_AddStringToObject(it, "type", "message");
		cJSON_AddStringToObject(it, "status",
					done ? "completed" : "in_progress");
		cJSON_AddStringToObject(it, "role", "assistant");
		arr = cJSON_AddArrayToObject(it, "content");
		if (done)
			cJSON_AddItemToArray(arr, openai_text_part(text));
		return it;
	}
	snprintf(id, sizeof(id), "call_mock_%lu", c->seq);
	cJSON_AddStringToObject(
		it, "type", tc->args ? "function_call" : "custom_tool_call");
	cJSON_AddStringToObject(it, "status",
				done ? "completed" : "in_progress");
	cJSON_AddStringToObject(it, "call_id", id);
	cJSON_AddStringToObject(it, "name", tc->name);
	if (tc->args)
		cJSON_AddStringToObject(it, "arguments",
					done ? tc->args_json : "");
	else
		cJSON_AddStringToObject(it, "input", done ? tc->input : "");
	return it;
}

/* An event about item IDX: its id, index and (for messages) part. */
static cJSON *openai_item_event(const char *type, int *seq, const char *id,
				int idx, int part)
{
	cJSON *e = openai_event(type, seq);

	cJSON_AddStringToObject(e, "item_id", id);
	cJSON_AddNumberToObject(e, "output_index", idx);
	if (part)
		cJSON_AddNumberToObject(e, "content_index", 0);
	return e;
}

static void openai_stream_item(const struct call *c, struct reply *r, int *seq,
			       int idx, const char *text,
			       const struct toolcall *tc, int cut)
{
	const char *val = tc ? (tc->args ? tc->args_json : tc->input) : text;
	const char *key = tc ? (tc->args ? "arguments" : "input") : "text";
	char id[48], delta[64], done[64];
	cJSON *e;

	snprintf(id, sizeof(id), "%s_mock_%lu", tc ? "fc" : "msg", c->seq);
	snprintf(delta, sizeof(delta), "response.%s.delta",
		 !tc        ? "output_text"
		 : tc->args ? "function_call_arguments"
			    : "custom_tool_call_input");
	snprintf(done, sizeof(done), "%.*s.done",
		 (int)(strlen(delta) - strlen(".delta")), delta);
	e = openai_event("response.output_item.added", seq);
	cJSON_AddNumberToObject(e, "output_index", idx);
	cJSON_AddItemToObject(e, "item", openai_item(c, text, tc, 0));
	sse_event(r, "response.output_item.added", e);
	if (!tc) {
		e = openai_item_event("response.content_part.added", seq, id,
				      idx, 1);
		cJSON_AddItemToObject(e, "part", openai_text_part(""));
		sse_event(r, "response.content_part.added", e);
	}
	e = openai_item_event(delta, seq, id, idx, !tc);
	cJSON_AddStringToObject(e, "delta", val);
	sse_event(r, delta, e);
	mark_cut(r, cut);
	e = openai_item_event(done, seq, id, idx, !tc);
	cJSON_AddStringToObject(e, key, val);
	sse_event(r, done, e);
	if (!tc) {
		e = openai_item_event("response.content_part.done", seq, id,
				      idx, 1);
		cJSON_AddItemToObject(e, "part", openai_text_part(text));
		sse_event(r, "response.content_part.done", e);
	}
	e = openai_event("response.output_item.done", seq);
	cJSON_AddNumberToObject(e, "output_index", idx);
	cJSON_AddItemToObject(e, "item", openai_item(c, text, tc, 1));
	sse_event(r, "response.output_item.done", e);
}

static void openai_turn(const struct call *c, const char *text,
			struct toolcall *tc, int cut, struct reply *r)
{
	int out = tokens(text) + (tc ? tokens(tc->args_json) : 0) + 1;
	int seq = 0, idx = 0;
	cJSON *output = cJSON_CreateArray(), *e;

	if (text)
		cJSON_AddItemToArray(output, openai_item(c, text, NULL, 1));
	if (tc)
		cJSON_AddItemToArray(output, openai_item(c, text, tc, 1));
	if (!c->stream) {
		json_body(r, openai_response(c, "completed", output, out));
		return;
	}
	r->sse = 1;
	e = openai_event("response.created", &seq);
	cJSON_AddItemToObject(e, "response",
			      openai_response(c, "in_progress", NULL, 0));
	sse_event(r, "response.created", e);
	e = openai_event("response.in_progress", &seq);
	cJSON_AddItemToObject(e, "response",
			      openai_response(c, "in_progress", NULL, 0));
	sse_event(r, "response.in_progress", e);
	if (text)
		openai_stream_item(c, r, &seq, idx++, text, NULL, cut);
	if (tc)
		openai_stream_item(c, r, &seq, idx, text, tc, cut);
	e = openai_event("response.completed", &seq);
	cJSON_AddItemToObject(e, "response",
			      openai_response(c, "completed", output, out));
	sse_event(r, "response.completed", e);
}

/* ---- Gemini generateContent ------------------------------------------- */

static cJSON *gemini_chunk(const struct call *c, cJSON *parts,
			   const char *finish, int out)
{
	cJSON *o = cJSON_CreateObject(), *cands, *cand, *content, *u;
	char id[48];
	int in = tokens(c->raw);

	cands = cJSON_AddArrayToObject(o, "candidates");
	cand = cJSON_CreateObject();
	cJSON_AddItemToArray(cands, cand);
	content = cJSON_AddObjectToObject(cand, "content");
	cJSON_AddItemToObject(content, "parts", parts);
	cJSON_AddStringToObject(content, "role", "model");
	if (finish)
		cJSON_AddStringToObject(cand, "finishReason", finish);
	cJSON_AddNumberToObject(cand, "index", 0);
	u = cJSON_AddObjectToObject(o, "usageMetadata");
	cJSON_AddNumberToObject(u, "promptTokenCount", in);
	cJSON_AddNumberToObject(u, "candidatesTokenCount", out);
	cJSON_AddNumberToObject(u, "totalTokenCount", in + out);
	cJSON_AddStringToObject(o, "modelVersion", c->model);
	snprintf(id, sizeof(id), "mock-%lu", c->seq);
	cJSON_AddStringToObject(o, "responseId", id);
	return o;
}

static cJSON *gemini_text_parts(const char *text, size_t n)
{
	cJSON *parts = cJSON_CreateArray(), *p = cJSON_CreateObject();
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, text, n);
		s[n] = '\0';
		cJSON_AddStringToObject(p, "text", s);
		free(s);
	}
	cJSON_AddItemToArray(parts, p);
	return parts;
}

static cJSON *gemini_call_part(const struct toolcall *tc)
{
	cJSON *p = cJSON_CreateObject(), *fc;

	fc = cJSON_AddObjectToObject(p, "functionCall");
	cJSON_AddStringToObject(fc, "name", tc->name);
	cJSON_AddItemToObject(fc, "args", cJSON_Duplicate(tc->args, 1));
	return p;
}

static void gemini_turn(const struct call *c, const char *text,
			struct toolcall *tc, int cut, struct reply *r)
{
	int out = tokens(text) + (tc ? tokens(tc->args_json) : 0);
	size_t half = text ? strlen(text) / 2 : 0;
	cJSON *parts;

	/* Streamed text comes in two chunks, split after a space (a single
	 * word stays whole unless the stream is to be cut in it). */
	while (half > 0 && !cut && text[half - 1] != ' ')
		half--;

	if (!c->stream) {
		parts = text ? gemini_text_parts(text, strlen(text))
			     : cJSON_CreateArray();
		if (tc)
			cJSON_AddItemToArray(parts, gemini_call_part(tc));
		json_body(r, gemini_chunk(c, parts, "STOP", out));
		return;
	}
	r->sse = 1;
	if (text && half) {
		sse_event(r, NULL,
			  gemini_chunk(c, gemini_text_parts(text, half), NULL,
				       out / 2));
		mark_cut(r, cut);
	}
	parts = text ? gemini_text_parts(text + half, strlen(text + half))
		     : cJSON_CreateArray();
	if (tc)
		cJSON_AddItemToArray(parts, gemini_call_part(tc));
	sse_event(r, NULL, gemini_chunk(c, parts, "STOP", out));
	mark_cut(r, cut);
}

/* ---- shared ------------------------------------------------------------ */

void dialect_turn(const struct call *c, const struct step *s, int cut,
		  struct reply *r)
{
	struct toolcall tc;
	int have = s->tool != TOOL_NONE && make_toolcall(c, s, &tc);
	const char *text = reply_text(s, have);

	r->status = 200;
	if (c->api == API_ANTHROPIC)
		anthropic_turn(c, text, have ? &tc : NULL, cut, r);
	else if (c->api == API_OPENAI)
		openai_turn(c, text, have ? &tc : NULL, cut, r);
	else
		gemini_turn(c, text, have ? &tc : NULL, cut, r);
	if (have)
		toolcall_free(&tc);
}

/* A value that fits a JSON schema, for side requests that ask for JSON
 * output (gemini's model router wants a complexity score). */
static cJSON *schema_value(const cJSON *schema, int depth)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
	const cJSON *props, *p;
	const char *t = cJSON_IsString(type) ? type->valuestring : "";
	cJSON *o;

	if (!strcasecmp(t, "integer") || !strcasecmp(t, "number"))
		return cJSON_CreateNumber(1);
	if (!strcasecmp(t, "boolean"))
		return cJSON_CreateFalse();
	if (!strcasecmp(t, "array"))
		return cJSON_CreateArray();
	if (strcasecmp(t, "object") || depth > 8)
		return cJSON_CreateString("model-server");
	o = cJSON_CreateObject();
	props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	cJSON_ArrayForEach (p, props) {
		cJSON_AddItemToObject(o, p->string,
				      schema_value(p, depth + 1));
	}
	return o;
}

void dialect_side(const struct call *c, struct reply *r)
{
	const cJSON *gc, *schema = NULL;
	struct step s = {0};
	char *js = NULL;

	gc = cJSON_GetObjectItemCaseSensitive(c->req, "generationConfig");
	if (gc) {
		schema = cJSON_GetObjectItemCaseSensitive(
			gc, "responseJsonSchema");
		if (!schema)
			schema = cJSON_GetObjectItemCaseSensitive(
				gc, "responseSchema");
	}
	if (schema) {
		cJSON *v = schema_value(schema, 0);

		js = cJSON_PrintUnformatted(v);
		cJSON_Delete(v);
	}
	s.text = js ? js : "ok";
	dialect_turn(c, &s, 0, r);
	free(js);
}

void dialect_count_tokens(const struct call *c, struct reply *r)
{
	cJSON *o = cJSON_CreateObject();

	r->status = 200;
	cJSON_AddNumberToObject(
		o, c->api == API_GEMINI ? "totalTokens" : "input_tokens",
		tokens(c->raw));
	json_body(r, o);
}

struct errkind {
	int status;
	const char *anthropic, *openai_type, *openai_code, *gemini;
	const char *msg;
};

static const struct errkind errkinds[] = {
	{400, "invalid_request_error", "invalid_request_error", NULL,
	 "INVALID_ARGUMENT", "bad request"},
	{401, "authentication_error", "invalid_request_error",
	 "invalid_api_key", "UNAUTHENTICATED", "invalid api key"},
	{403, "permission_error", "invalid_request_error", NULL,
	 "PERMISSION_DENIED", "permission denied"},
	{404, "not_found_error", "invalid_request_error", NULL, "NOT_FOUND",
	 "not found"},
	{429, "rate_limit_error", "requests", "rate_limit_exceeded",
	 "RESOURCE_EXHAUSTED", "rate limit reached"},
	{500, "api_error", "server_error", NULL, "INTERNAL",
	 "internal server error"},
	{503, "api_error", "server_error", NULL, "UNAVAILABLE",
	 "service unavailable"},
	{529, "overloaded_error", "server_error", NULL, "UNAVAILABLE",
	 "overloaded"},
};

/* An error body in API's shape; r->retry_after, when set, also goes in
 * the body where the API puts it (Gemini's RetryInfo). */
void dialect_error(enum api api, int status, const char *msg, struct reply *r)
{
	const struct errkind *k = &errkinds[5];
	cJSON *o = cJSON_CreateObject(), *e;
	size_t i;

	for (i = 0; i < sizeof(errkinds) / sizeof(errkinds[0]); i++)
		if (errkinds[i].status == status)
			k = &errkinds[i];
	r->status = status;
	r->sse = 0;
	if (msg && msg[0] == '{') { /* the scenario gave the whole body */
		cJSON_Delete(o);
		buf_puts(&r->body, msg);
		return;
	}
	if (!msg)
		msg = k->msg;
	if (api == API_ANTHROPIC) {
		cJSON_AddStringToObject(o, "type", "error");
		e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "type", k->anthropic);
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(o, "request_id", "req_mock");
	} else if (api == API_GEMINI) {
		e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddNumberToObject(e, "code", status);
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(e, "status", k->gemini);
		if (r->retry_after > 0) { /* as google.rpc.RetryInfo */
			cJSON *d = cJSON_AddArrayToObject(e, "details");
			cJSON *ri = cJSON_CreateObject();
			char delay[32];

			snprintf(delay, sizeof(delay), "%ds", r->retry_after);
			cJSON_AddStringToObject(
				ri, "@type",
				"type.googleapis.com/google.rpc.RetryInfo");
			cJSON_AddStringToObject(ri, "retryDelay", delay);
			cJSON_AddItemToArray(d, ri);
		}
	} else {
		e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(e, "type", k->openai_type);
		cJSON_AddNullToObject(e, "param");
		if (k->openai_code)
			cJSON_AddStringToObject(e, "code", k->openai_code);
		else
			cJSON_AddNullToObject(e, "code");
	}
	json_body(r, o);
}

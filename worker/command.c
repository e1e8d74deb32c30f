/*
 * command.c - the `command` agent backend: run an agent CLI headless.
 *
 * Owns loading a preset (a JSON data file per CLI, see worker/presets/),
 * building the argv from its templates, and turning the CLI's output into
 * the answer: plain text, or a JSON-lines stream mapped to agent.* events
 * by the preset's rules. Called by agent.c. The CLI runs with the
 * allowlisted environment only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"
#include "common/json.h"

#ifndef SBXLOOP_PKGDATADIR
#define SBXLOOP_PKGDATADIR "/usr/local/share/sbxloop"
#endif

#define PRESET_MAX (256u * 1024)

struct tool_name {
	char *id;
	char *name;
	struct tool_name *next;
};

struct stream {
	struct wk_ctx *ctx;
	const struct wk_job *job;
	const cJSON *rules;
	char *text;       /* replaced or appended by rules, owned */
	char *final_text; /* wins over text when set, owned */
	char *error;      /* the CLI's own failure report, owned */
	char *session_id;
	char *model;
	cJSON *usage;
	cJSON *failures; /* tool -> count */
	int calls;
	int messages; /* agent.message events emitted */
	struct tool_name *names;
	struct wk_proc *proc; /* the agent, stopped at the tool ceiling */
	int capped;           /* went past job->max_tool_calls */
};

static char *preset_path(const char *name)
{
	const char *dir;

	if (strchr(name, '/'))
		return wk_strdup(name);
	dir = getenv("SBXLOOP_PRESET_DIR");
	if (!dir || !*dir)
		dir = SBXLOOP_PKGDATADIR "/presets";
	return wk_printf("%s/%s.json", dir, name);
}

/* Resolve a dotted path ("message.content", "items.0.id") under `node`. */
static const cJSON *get_path(const cJSON *node, const char *path)
{
	char *copy = wk_strdup(path), *part, *save;
	const cJSON *cur = node;

	for (part = strtok_r(copy, ".", &save); part && cur;
	     part = strtok_r(NULL, ".", &save)) {
		if (cJSON_IsArray(cur)) {
			char *end;
			long i = strtol(part, &end, 10);

			cur = *end ? NULL : cJSON_GetArrayItem(cur, (int)i);
		} else {
			cur = cJSON_GetObjectItemCaseSensitive(cur, part);
		}
	}
	free(copy);
	return cur;
}

static const char *get_string(const cJSON *node, const cJSON *spec)
{
	const cJSON *v;

	if (!cJSON_IsString(spec))
		return NULL;
	v = get_path(node, spec->valuestring);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Every member of `match` must equal the value at its path in `node`. */
static int matches(const cJSON *node, const cJSON *match)
{
	const cJSON *m;

	cJSON_ArrayForEach (m, match) {
		const cJSON *v = get_path(node, m->string);

		if (!v || !cJSON_Compare(v, m, 1))
			return 0;
	}
	return 1;
}

/*
 * A field spec is "path", "!path" (boolean not), "path==value" (boolean
 * equality with a string) or "=text" (the literal text).
 */
static cJSON *field_value(const cJSON *node, const char *spec)
{
	const char *eq = strstr(spec, "==");
	const cJSON *v;

	if (*spec == '=')
		return cJSON_CreateString(spec + 1);
	if (*spec == '!') {
		v = get_path(node, spec + 1);
		return cJSON_CreateBool(!v || cJSON_IsFalse(v) ||
					cJSON_IsNull(v));
	}
	if (eq) {
		char *path = strndup(spec, (size_t)(eq - spec));
		int same;

		if (!path)
			abort();
		v = get_path(node, path);
		same = cJSON_IsString(v) && !strcmp(v->valuestring, eq + 2);
		free(path);
		return cJSON_CreateBool(same);
	}
	v = get_path(node, spec);
	return v ? cJSON_Duplicate(v, 1) : NULL;
}

static void set_str(char **slot, const char *v)
{
	free(*slot);
	*slot = wk_strdup(v);
}

static void remember_tool(struct stream *st, const char *id, const char *name)
{
	struct tool_name *t = calloc(1, sizeof(*t));

	if (!t)
		abort();
	t->id = wk_strdup(id);
	t->name = wk_strdup(name);
	t->next = st->names;
	st->names = t;
}

static const char *tool_for(struct stream *st, const char *id)
{
	struct tool_name *t;

	for (t = st->names; t && id; t = t->next)
		if (!strcmp(t->id, id))
			return t->name;
	return NULL;
}

/* Shape a mapped tool or message event the way every consumer expects. */
static void finish_event(struct stream *st, const char *type, cJSON *d)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "args");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "tool_call_id");
	const cJSON *tool = cJSON_GetObjectItemCaseSensitive(d, "tool");

	if (v && strncmp(type, "agent.tool_", 11) == 0) {
		char *s = wk_tool_args_display(v);

		cJSON_ReplaceItemInObjectCaseSensitive(d, "args",
						       cJSON_CreateString(s));
		free(s);
	}
	if (!strcmp(type, SBXLOOP_EV_AGENT_TOOL_START)) {
		st->calls++;
		if (cJSON_IsString(id) && cJSON_IsString(tool))
			remember_tool(st, id->valuestring, tool->valuestring);
		/* a CLI cannot be told no per call: past the ceiling it stops */
		if (st->job->max_tool_calls && !st->capped &&
		    st->calls > st->job->max_tool_calls) {
			cJSON *c = cJSON_CreateObject();

			st->capped = 1;
			cJSON_AddNumberToObject(
				c, "cap", (double)st->job->max_tool_calls);
			cJSON_AddNumberToObject(c, "calls", st->calls);
			cJSON_AddStringToObject(c, "tool",
						cJSON_IsString(tool)
							? tool->valuestring
							: "?");
			wk_emit(st->ctx, SBXLOOP_EV_AGENT_TOOL_CAP, c);
			if (st->proc)
				st->proc->stop = 1;
		}
	} else if (!strcmp(type, SBXLOOP_EV_AGENT_TOOL_END)) {
		const cJSON *ok =
			cJSON_GetObjectItemCaseSensitive(d, "success");
		const char *name =
			cJSON_IsString(tool)
				? tool->valuestring
				: tool_for(st, cJSON_IsString(id)
						       ? id->valuestring
						       : NULL);

		if (!cJSON_IsString(tool))
			cJSON_AddStringToObject(d, "tool", name ? name : "?");
		if (!ok)
			cJSON_AddTrueToObject(d, "success");
		v = cJSON_GetObjectItemCaseSensitive(d, "output");
		if (v) {
			char *s = cJSON_IsString(v) ? wk_strdup(v->valuestring)
						    : sl_json_print_sorted(v);

			cJSON_ReplaceItemInObjectCaseSensitive(
				d, "output",
				cJSON_CreateString(wk_utf8_tail(
					s, strlen(s), WK_TOOL_OUTPUT_MAX)));
			free(s);
		}
		if (cJSON_IsFalse(ok)) {
			const char *k = name ? name : "?";
			cJSON *n = cJSON_GetObjectItemCaseSensitive(
				st->failures, k);

			if (n)
				cJSON_SetNumberValue(n, n->valuedouble + 1);
			else
				cJSON_AddNumberToObject(st->failures, k, 1);
		}
	} else if (!strcmp(type, SBXLOOP_EV_AGENT_MESSAGE)) {
		st->messages++;
		if (!cJSON_GetObjectItemCaseSensitive(d, "model"))
			cJSON_AddStringToObject(d, "model",
						st->model ? st->model : "");
	}
}

static void apply(struct stream *st, const cJSON *rule, const cJSON *root,
		  const cJSON *node)
{
	const cJSON *v;
	const char *s;

	if ((s = get_string(root, cJSON_GetObjectItem(rule, "session_id"))))
		set_str(&st->session_id, s);
	if ((s = get_string(root, cJSON_GetObjectItem(rule, "model"))))
		set_str(&st->model, s);
	if ((s = get_string(node, cJSON_GetObjectItem(rule, "text"))))
		set_str(&st->text, s);
	if ((s = get_string(node, cJSON_GetObjectItem(rule, "append_text")))) {
		char *t = wk_printf("%s%s", st->text ? st->text : "", s);

		free(st->text);
		st->text = t;
	}
	if ((s = get_string(node, cJSON_GetObjectItem(rule, "final_text"))))
		set_str(&st->final_text, s);
	if ((s = get_string(node, cJSON_GetObjectItem(rule, "error"))))
		set_str(&st->error, *s ? s : "agent reported an error");
	v = cJSON_GetObjectItem(rule, "usage");
	if (cJSON_IsObject(v)) {
		cJSON *sample = cJSON_CreateObject();
		const cJSON *f;

		cJSON_ArrayForEach (f, v) {
			const cJSON *x =
				cJSON_IsString(f)
					? get_path(node, f->valuestring)
					: NULL;

			if (cJSON_IsNumber(x))
				cJSON_AddNumberToObject(sample, f->string,
							x->valuedouble);
		}
		if (st->model)
			cJSON_AddStringToObject(sample, "model", st->model);
		wk_usage_merge(&st->usage, sample);
		wk_emit(st->ctx, SBXLOOP_EV_AGENT_USAGE, sample);
	}
	v = cJSON_GetObjectItem(rule, "event");
	if (cJSON_IsString(v)) {
		cJSON *d = cJSON_CreateObject();
		const cJSON *f, *fields = cJSON_GetObjectItem(rule, "fields");

		cJSON_ArrayForEach (f, fields) {
			cJSON *x = cJSON_IsString(f)
					   ? field_value(node, f->valuestring)
					   : NULL;

			if (x)
				cJSON_AddItemToObject(d, f->string, x);
		}
		finish_event(st, v->valuestring, d);
		wk_emit(st->ctx, v->valuestring, d);
	}
}

static void on_line(void *arg, const char *line, size_t len)
{
	struct stream *st = arg;
	cJSON *root = cJSON_ParseWithLength(line, len);
	const cJSON *rule;

	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return; /* banners and progress noise are not protocol */
	}
	cJSON_ArrayForEach (rule, st->rules) {
		const cJSON *each = cJSON_GetObjectItem(rule, "each");
		const cJSON *item_match =
			cJSON_GetObjectItem(rule, "item_match");
		const cJSON *e;

		if (!matches(root, cJSON_GetObjectItem(rule, "match")))
			continue;
		if (!cJSON_IsString(each)) {
			apply(st, rule, root, root);
			continue;
		}
		cJSON_ArrayForEach (e, get_path(root, each->valuestring))
			if (matches(e, item_match))
				apply(st, rule, root, e);
	}
	cJSON_Delete(root);
}

static int has_condition(const cJSON *argv, const char *cond)
{
	const cJSON *a;

	cJSON_ArrayForEach (a, argv) {
		const cJSON *c = cJSON_GetObjectItem(a, "if");

		if (cJSON_IsString(c) && !strcmp(c->valuestring, cond))
			return 1;
	}
	return 0;
}

static int condition_holds(const struct wk_job *job, const char *cond,
			   int resume)
{
	if (!strcmp(cond, "model"))
		return job->model && *job->model && strcmp(job->model, "auto");
	if (!strcmp(cond, "resume"))
		return resume;
	if (!strcmp(cond, "new_session"))
		return !resume;
	if (!strcmp(cond, "read_only"))
		return job->read_only;
	if (!strcmp(cond, "auto"))
		return !job->read_only;
	if (!strcmp(cond, "system_message"))
		return job->system_message && *job->system_message;
	return 0;
}

static void append(char **out, size_t *n, size_t *cap, const char *s,
		   size_t len)
{
	if (*n + len + 1 > *cap) {
		*cap = (*n + len + 1) * 2;
		*out = realloc(*out, *cap);
		if (!*out)
			abort();
	}
	memcpy(*out + *n, s, len);
	*n += len;
	(*out)[*n] = '\0';
}

/* Value of a known placeholder (NULL when unset); -1 if unknown. */
static int lookup(const char *key, size_t kl, const char *prompt,
		  const struct wk_job *job, const struct wk_ctx *ctx,
		  const char **val)
{
	static const char *const names[] = {"prompt", "model", "session_id",
					    "system_message", "cwd"};
	const char *vals[5];
	size_t i;

	vals[0] = prompt;
	vals[1] = job->model;
	vals[2] = job->resume_session_id;
	vals[3] = job->system_message;
	vals[4] = ctx->cwd;
	for (i = 0; i < 5; i++) {
		if (strlen(names[i]) == kl && !strncmp(key, names[i], kl)) {
			*val = vals[i];
			return 0;
		}
	}
	return -1;
}

/* Expand {prompt}, {model}, {session_id}, {system_message}, {cwd}. */
static char *expand(const char *tpl, const char *prompt,
		    const struct wk_job *job, const struct wk_ctx *ctx)
{
	char *out = NULL;
	size_t n = 0, cap = 0;

	append(&out, &n, &cap, "", 0);
	while (*tpl) {
		const char *close = *tpl == '{' ? strchr(tpl, '}') : NULL;
		const char *val = NULL;

		if (close && lookup(tpl + 1, (size_t)(close - tpl - 1), prompt,
				    job, ctx, &val) == 0) {
			if (val)
				append(&out, &n, &cap, val, strlen(val));
			tpl = close + 1;
			continue;
		}
		append(&out, &n, &cap, tpl, 1);
		tpl++;
	}
	return out;
}

static void add_arg(char ***argv, size_t *n, char *arg)
{
	*argv = realloc(*argv, (*n + 2) * sizeof(**argv));
	if (!*argv)
		abort();
	(*argv)[(*n)++] = arg;
	(*argv)[*n] = NULL;
}

static char **build_argv(const cJSON *tpl, const struct wk_job *job,
			 const struct wk_ctx *ctx, int resume)
{
	char **argv = NULL, *prompt;
	size_t n = 0;
	const cJSON *a, *x;

	/* a CLI without a system-prompt flag gets it ahead of the prompt */
	if (job->system_message && *job->system_message &&
	    !has_condition(tpl, "system_message"))
		prompt = wk_printf("%s\n\n%s", job->system_message,
				   job->prompt);
	else
		prompt = wk_strdup(job->prompt);
	add_arg(&argv, &n, NULL);
	n = 0;
	cJSON_ArrayForEach (a, tpl) {
		if (cJSON_IsString(a)) {
			add_arg(&argv, &n,
				expand(a->valuestring, prompt, job, ctx));
			continue;
		}
		x = cJSON_GetObjectItem(a, "if");
		if (!cJSON_IsString(x) ||
		    !condition_holds(job, x->valuestring, resume))
			continue;
		cJSON_ArrayForEach (x, cJSON_GetObjectItem(a, "args"))
			if (cJSON_IsString(x))
				add_arg(&argv, &n,
					expand(x->valuestring, prompt, job,
					       ctx));
	}
	free(prompt);
	return argv;
}

static void free_argv(char **argv)
{
	size_t i;

	for (i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

static void stream_free(struct stream *st)
{
	while (st->names) {
		struct tool_name *t = st->names;

		st->names = t->next;
		free(t->id);
		free(t->name);
		free(t);
	}
	free(st->text);
	free(st->final_text);
	free(st->error);
	free(st->session_id);
	free(st->model);
	cJSON_Delete(st->usage);
	cJSON_Delete(st->failures);
}

static char *trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	return s;
}

int wk_backend_command(struct wk_ctx *ctx, const struct wk_job *job,
		       struct wk_result *res)
{
	const char *name = job->preset;
	char *path = NULL, *text = NULL, **argv = NULL, **envp = NULL;
	cJSON *preset = NULL;
	const cJSON *tpl, *fmt;
	struct stream st = {0};
	struct wk_buf out, err;
	struct wk_proc p = {0};
	double deadline = wk_now() + job->timeout_s;
	size_t len;
	int big, stream_json, resume, rc = -1;

	wk_buf_init(&out, 0, 1024 * 1024);
	wk_buf_init(&err, 0, WK_SHELL_TAIL);
	if (!name || !*name)
		name = getenv("SBXLOOP_AGENT_PRESET");
	if (!name || !*name)
		name = "copilot";
	path = preset_path(name);
	text = wk_read_file(path, PRESET_MAX, &len, &big);
	preset = text ? cJSON_ParseWithLength(text, len) : NULL;
	tpl = cJSON_GetObjectItem(preset, "argv");
	fmt = cJSON_GetObjectItem(preset, "output");
	if (!cJSON_IsArray(tpl) || !cJSON_GetArraySize(tpl) ||
	    !cJSON_IsString(fmt)) {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "cannot load agent preset '%s': %s", path,
				    !text ? strerror(errno)
					  : "needs 'argv' and 'output'");
		goto out;
	}
	stream_json = !strcmp(fmt->valuestring, "stream-json");
	resume = job->resume_session_id && *job->resume_session_id;
retry:
	argv = build_argv(tpl, job, ctx, resume);
	if (!argv[0]) {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "agent preset '%s' yields an empty "
				    "command",
				    path);
		goto out;
	}
	if (!envp)
		envp = wk_env_agent();
	st.ctx = ctx;
	st.job = job;
	st.rules = cJSON_GetObjectItem(preset, "rules");
	st.failures = cJSON_CreateObject();
	st.model = wk_strdup(job->model);
	p.argv = argv;
	p.cwd = ctx->cwd;
	p.envp = envp;
	p.timeout_s = deadline - wk_now();
	if (p.timeout_s <= 0)
		p.timeout_s = 0.001;
	p.out = &out;
	p.err = &err;
	if (stream_json) {
		p.on_line = on_line;
		p.arg = &st;
		st.proc = &p;
	}
	if (wk_proc_run(ctx, &p) < 0) {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "cannot run agent command '%s': %s",
				    argv[0], strerror(p.spawn_errno));
		goto out;
	}
	if (p.timed_out) {
		wk_result_set_error(res, WK_TIMEOUT, "Timeout", NULL,
				    "job timed out");
		goto out;
	}
	if (st.capped) {
		wk_result_set_error(res, WK_ERROR, "ToolCallCeiling", NULL,
				    "the agent went past its tool-call "
				    "ceiling of %ld (budgets.max_tool_calls_"
				    "per_phase) and was stopped; raise the "
				    "budget or split the task",
				    st.job->max_tool_calls);
		goto out;
	}
	if ((p.exit_code || st.error) && resume && deadline > wk_now()) {
		/* a session that cannot be resumed: start a fresh one */
		resume = 0;
		stream_free(&st);
		memset(&st, 0, sizeof(st));
		wk_buf_free(&out);
		wk_buf_free(&err);
		wk_buf_init(&out, 0, 1024 * 1024);
		wk_buf_init(&err, 0, WK_SHELL_TAIL);
		free_argv(argv);
		argv = NULL;
		goto retry;
	}
	if (stream_json) {
		res->output_text = wk_strdup(st.final_text ? st.final_text
					     : st.text     ? st.text
							   : "");
	} else {
		res->output_text = trim_end(wk_buf_render(&out));
	}
	if (p.exit_code || st.error) {
		char *e = wk_buf_render(&err);

		wk_result_set_error(res, WK_ERROR, "AgentError",
				    *e ? e : res->output_text,
				    "agent command '%s' failed: %s", argv[0],
				    st.error ? st.error : "nonzero exit");
		if (p.exit_code) {
			res->has_exit_code = 1;
			res->exit_code = p.exit_code;
		}
		free(e);
		goto out;
	}
	if (*res->output_text && !st.messages) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "content", res->output_text);
		cJSON_AddStringToObject(d, "model", st.model ? st.model : "");
		wk_emit(ctx, SBXLOOP_EV_AGENT_MESSAGE, d);
	}
	res->session_id = st.session_id;
	st.session_id = NULL;
	res->usage = st.usage;
	st.usage = NULL;
	res->health = cJSON_CreateObject();
	cJSON_AddObjectToObject(res->health, "permission_denials");
	cJSON_AddItemToObject(res->health, "tool_failures", st.failures);
	st.failures = NULL;
	cJSON_AddObjectToObject(res->health, "tool_refusals");
	cJSON_AddNumberToObject(res->health, "tool_calls", st.calls);
	cJSON_AddNumberToObject(res->health, "tool_cap_denials", 0);
	res->status = WK_OK;
	rc = 0;
out:
	stream_free(&st);
	wk_buf_free(&out);
	wk_buf_free(&err);
	free_argv(argv);
	wk_env_free(envp);
	cJSON_Delete(preset);
	free(text);
	free(path);
	return rc;
}

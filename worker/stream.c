/*
 * stream.c - the command backend's rule engine: a CLI's JSON lines in,
 * agent.* events and the answer out.
 *
 * Owns matching each line against the preset's rules (stream.h) and what
 * a rule may do: set the session id, model, CLI version, text or final
 * text; record the CLI's own error report and its category; record a
 * non-fatal notice (agent.notice); sum usage (agent.usage); emit a tool
 * or message event shaped the way every consumer expects, counting tool
 * calls against the job's ceiling. Called by command.c only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "common/json.h"

struct wk_tool_name {
	char *id;
	char *name;
	struct wk_tool_name *next;
};

/*
 * One rule of a preset, its members found once: a line is checked
 * against every rule, so looking them up by name per line would cost
 * more than the parse.
 */
struct wk_rule {
	const cJSON *match, *each, *item_match;
	const cJSON *session_id, *model, *version, *text, *append_text;
	const cJSON *final_text, *error, *error_kind, *notice, *usage;
	const cJSON *event, *fields;
	int once_per_id;
};

/*
 * Resolve a dotted path ("message.content", "items.0.id") under `node`,
 * without allocating: it runs for every rule on every line.
 */
static const cJSON *get_path(const cJSON *node, const char *path)
{
	const cJSON *cur = node;
	char part[128];

	while (cur && *path) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(part))
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		if (cJSON_IsArray(cur)) {
			char *end;
			long i = strtol(part, &end, 10);

			cur = *end || !n ? NULL
					 : cJSON_GetArrayItem(cur, (int)i);
		} else {
			cur = cJSON_GetObjectItemCaseSensitive(cur, part);
		}
		path += n + (path[n] == '.');
	}
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

static void remember_tool(struct wk_stream *st, const char *id,
			  const char *name)
{
	struct wk_tool_name *t = calloc(1, sizeof(*t));

	if (!t)
		abort();
	t->id = wk_strdup(id);
	t->name = wk_strdup(name);
	t->next = st->names;
	st->names = t;
}

static const char *tool_for(const struct wk_stream *st, const char *id)
{
	const struct wk_tool_name *t;

	for (t = st->names; t && id; t = t->next)
		if (!strcmp(t->id, id))
			return t->name;
	return NULL;
}

/*
 * The text of an error value: a string, or the strings (or "message"
 * members) of an array joined by "; ". Caller frees; NULL if none.
 */
static char *error_text(const cJSON *v)
{
	const cJSON *e, *list = cJSON_IsArray(v) ? v : NULL;
	char *out = NULL;

	if (cJSON_IsString(v))
		return *v->valuestring ? wk_strdup(v->valuestring) : NULL;
	cJSON_ArrayForEach (e, list) {
		const cJSON *m = cJSON_IsString(e)
					 ? e
					 : cJSON_GetObjectItemCaseSensitive(
						   e, "message");
		char *t;

		if (!cJSON_IsString(m) || !*m->valuestring)
			continue;
		t = wk_printf("%s%s%s", out ? out : "", out ? "; " : "",
			      m->valuestring);
		free(out);
		out = t;
	}
	return out;
}

/* "error": a path or a list of paths; the first that holds text wins. */
static void record_error(struct wk_stream *st, const cJSON *spec,
			 const cJSON *node)
{
	const cJSON *p, *list = cJSON_IsArray(spec) ? spec : NULL;
	char *t = NULL;

	if (cJSON_IsString(spec))
		t = error_text(get_path(node, spec->valuestring));
	cJSON_ArrayForEach (p, list)
		if (!t && cJSON_IsString(p))
			t = error_text(get_path(node, p->valuestring));
	free(st->error);
	st->error = t ? t : wk_strdup("the agent reported an error");
}

static int parse_version(const char *s, long v[3])
{
	char *end;
	int i;

	v[0] = v[1] = v[2] = 0; /* "2." and "2" are 2.0.0 */
	while (s && *s && (*s < '0' || *s > '9'))
		s++;
	if (!s || !*s)
		return -1;
	for (i = 0; i < 3; i++) {
		v[i] = strtol(s, &end, 10);
		if (end == s)
			return i ? 0 : -1;
		s = end;
		if (*s != '.')
			return 0;
		s++;
	}
	return 0;
}

static int version_cmp(const long a[3], const long b[3])
{
	int i;

	for (i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

int wk_version_in_range(const char *version, const cJSON *range)
{
	long v[3], lo[3], hi[3];
	const char *min = sl_json_str(range, "min", NULL);
	const char *below = sl_json_str(range, "below", NULL);

	if (parse_version(version, v) < 0)
		return -1;
	if (min && parse_version(min, lo) == 0 && version_cmp(v, lo) < 0)
		return 0;
	if (below && parse_version(below, hi) == 0 && version_cmp(v, hi) >= 0)
		return 0;
	return 1;
}

int wk_stream_check_version(struct wk_stream *st, const char *version)
{
	int in;
	cJSON *d;

	if (!st->version)
		return 1;
	in = wk_version_in_range(version, st->version);
	if (st->version_checked || in == 1) {
		st->version_checked = 1;
		return in;
	}
	st->version_checked = 1;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "cli", st->cli ? st->cli : "?");
	cJSON_AddStringToObject(d, "version", version ? version : "");
	cJSON_AddStringToObject(d, "verified_min",
				sl_json_str(st->version, "min", ""));
	cJSON_AddStringToObject(d, "verified_below",
				sl_json_str(st->version, "below", ""));
	cJSON_AddStringToObject(
		d, "message",
		in < 0 ? "cannot read the agent CLI's version; its flags and "
			 "output were verified only within the preset's range"
		       : "the agent CLI is outside the version range its "
			 "preset was verified against; flags or output may "
			 "differ (see docs/agents.md)");
	wk_emit(st->ctx, SBXLOOP_EV_AGENT_CLI_VERSION, d);
	return in;
}

static void count_tool_call(struct wk_stream *st, const cJSON *tool)
{
	cJSON *c;

	st->calls++;
	/* a CLI cannot be told no per call: past the ceiling it stops */
	if (!st->job->max_tool_calls || st->capped ||
	    st->calls <= st->job->max_tool_calls)
		return;
	st->capped = 1;
	c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "cap", (double)st->job->max_tool_calls);
	cJSON_AddNumberToObject(c, "calls", st->calls);
	cJSON_AddStringToObject(
		c, "tool", cJSON_IsString(tool) ? tool->valuestring : "?");
	wk_emit(st->ctx, SBXLOOP_EV_AGENT_TOOL_CAP, c);
	if (st->proc)
		st->proc->stop = 1;
}

/*
 * Whether a failed call was the CLI refusing it (a tool a critic does not
 * have, a denied permission) rather than the tool failing: the preset's
 * "refusals" texts in its output or error. A refusal is the read-only
 * mode working, counted in health.permission_denials, not a failure.
 */
static int refused(const struct wk_stream *st, const cJSON *d)
{
	const char *out = sl_json_str(d, "output", "");
	const char *err = sl_json_str(d, "error", "");
	const cJSON *r;

	cJSON_ArrayForEach (r, st->refusals)
		if (cJSON_IsString(r) && *r->valuestring &&
		    (strstr(out, r->valuestring) ||
		     strstr(err, r->valuestring)))
			return 1;
	return 0;
}

static void finish_tool_end(struct wk_stream *st, cJSON *d, const cJSON *id,
			    const cJSON *tool)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(d, "success");
	const char *name =
		cJSON_IsString(tool)
			? tool->valuestring
			: tool_for(st, cJSON_IsString(id) ? id->valuestring
							  : NULL);
	cJSON *v;

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
			cJSON_CreateString(wk_utf8_tail(s, strlen(s),
							WK_TOOL_OUTPUT_MAX)));
		free(s);
	}
	if (cJSON_IsFalse(ok)) {
		const char *k = name ? name : "?";
		cJSON *tally = refused(st, d) ? st->denials : st->failures;
		cJSON *n = cJSON_GetObjectItemCaseSensitive(tally, k);

		if (tally == st->denials)
			cJSON_AddTrueToObject(d, "refused");
		if (n)
			cJSON_SetNumberValue(n, n->valuedouble + 1);
		else
			cJSON_AddNumberToObject(tally, k, 1);
	}
}

/*
 * Shape a mapped tool or message event the way every consumer expects.
 * Returns 0 to emit it, -1 to drop it (a tool start already seen).
 */
static int finish_event(struct wk_stream *st, const char *type, cJSON *d,
			int once_per_id)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "args");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "tool_call_id");
	const cJSON *tool = cJSON_GetObjectItemCaseSensitive(d, "tool");

	if (!strcmp(type, SBXLOOP_EV_AGENT_TOOL_START) && once_per_id &&
	    cJSON_IsString(id) && tool_for(st, id->valuestring))
		return -1;
	if (v && strncmp(type, "agent.tool_", 11) == 0) {
		char *s = wk_tool_args_display(v);

		cJSON_ReplaceItemInObjectCaseSensitive(d, "args",
						       cJSON_CreateString(s));
		free(s);
	}
	if (!strcmp(type, SBXLOOP_EV_AGENT_TOOL_START)) {
		if (cJSON_IsString(id) && cJSON_IsString(tool))
			remember_tool(st, id->valuestring, tool->valuestring);
		count_tool_call(st, tool);
	} else if (!strcmp(type, SBXLOOP_EV_AGENT_TOOL_END)) {
		finish_tool_end(st, d, id, tool);
	} else if (!strcmp(type, SBXLOOP_EV_AGENT_MESSAGE)) {
		st->messages++;
		if (!cJSON_GetObjectItemCaseSensitive(d, "model"))
			cJSON_AddStringToObject(d, "model",
						st->model ? st->model : "");
	}
	return 0;
}

/*
 * A notice the preset calls fatal after N repeats ("waiting for
 * network": codex would wait for the whole job timeout) stops the agent.
 */
static void check_fatal(struct wk_stream *st, const char *notice)
{
	const cJSON *f;
	int i = 0;

	cJSON_ArrayForEach (f, st->fatal) {
		const char *pat = sl_json_str(f, "contains", NULL);
		const cJSON *after = cJSON_GetObjectItem(f, "after");

		if (i >= 8)
			break;
		if (pat && strstr(notice, pat) &&
		    ++st->fatal_seen[i] >=
			    (cJSON_IsNumber(after) ? after->valueint : 1) &&
		    !st->fatal_type) {
			st->fatal_type = sl_json_str(f, "type", "AgentError");
			if (st->proc)
				st->proc->stop = 1;
		}
		i++;
	}
}

static void apply_usage(struct wk_stream *st, const cJSON *spec,
			const cJSON *node)
{
	cJSON *sample = cJSON_CreateObject();
	const cJSON *f;
	int counters = 0;

	cJSON_ArrayForEach (f, spec) {
		const cJSON *x = cJSON_IsString(f)
					 ? get_path(node, f->valuestring)
					 : NULL;

		if (cJSON_IsNumber(x) && ++counters)
			cJSON_AddNumberToObject(sample, f->string,
						x->valuedouble);
	}
	if (!counters) { /* this line carried no usage */
		cJSON_Delete(sample);
		return;
	}
	if (st->model)
		cJSON_AddStringToObject(sample, "model", st->model);
	wk_usage_merge(&st->usage, sample);
	wk_emit(st->ctx, SBXLOOP_EV_AGENT_USAGE, sample);
}

static void apply_event(struct wk_stream *st, const struct wk_rule *rule,
			const char *type, const cJSON *node)
{
	cJSON *d = cJSON_CreateObject();
	const cJSON *f, *fields = rule->fields;

	cJSON_ArrayForEach (f, fields) {
		cJSON *x = cJSON_IsString(f)
				   ? field_value(node, f->valuestring)
				   : NULL;

		if (x)
			cJSON_AddItemToObject(d, f->string, x);
	}
	if (finish_event(st, type, d, rule->once_per_id) < 0) {
		cJSON_Delete(d);
		return;
	}
	wk_emit(st->ctx, type, d);
}

static void apply(struct wk_stream *st, const struct wk_rule *rule,
		  const cJSON *root, const cJSON *node)
{
	const char *s;

	if ((s = get_string(root, rule->session_id)))
		set_str(&st->session_id, s);
	if ((s = get_string(root, rule->model)))
		set_str(&st->model, s);
	if ((s = get_string(root, rule->version))) {
		set_str(&st->cli_version, s);
		wk_stream_check_version(st, s);
	}
	if ((s = get_string(node, rule->text)))
		set_str(&st->text, s);
	if ((s = get_string(node, rule->append_text))) {
		char *t = wk_printf("%s%s", st->text ? st->text : "", s);

		free(st->text);
		st->text = t;
	}
	if ((s = get_string(node, rule->final_text)))
		set_str(&st->final_text, s);
	if (rule->error)
		record_error(st, rule->error, node);
	if ((s = get_string(node, rule->error_kind)))
		set_str(&st->error_kind, s);
	if ((s = get_string(node, rule->notice))) {
		cJSON *d = cJSON_CreateObject();

		set_str(&st->notice, s);
		cJSON_AddStringToObject(d, "message", s);
		cJSON_AddStringToObject(d, "cli", st->cli ? st->cli : "?");
		wk_emit(st->ctx, SBXLOOP_EV_AGENT_NOTICE, d);
		check_fatal(st, s);
	}
	if (cJSON_IsObject(rule->usage))
		apply_usage(st, rule->usage, node);
	if (cJSON_IsString(rule->event))
		apply_event(st, rule, rule->event->valuestring, node);
}

/* Find each rule's members once (one pass over each rule object). */
static void compile(struct wk_stream *st)
{
	static const char *const keys[] = {
		"match",      "each",   "item_match",  "session_id", "model",
		"version",    "text",   "append_text", "final_text", "error",
		"error_kind", "notice", "usage",       "event",      "fields"};
	const cJSON *r, *m;
	size_t n = 0, k;

	st->n_compiled = (size_t)cJSON_GetArraySize(st->rules);
	st->compiled = calloc(st->n_compiled + 1, sizeof(*st->compiled));
	if (!st->compiled)
		abort();
	cJSON_ArrayForEach (r, st->rules) {
		struct wk_rule *c = &st->compiled[n++];
		const cJSON **slot[] = {
			&c->match,      &c->each,        &c->item_match,
			&c->session_id, &c->model,       &c->version,
			&c->text,       &c->append_text, &c->final_text,
			&c->error,      &c->error_kind,  &c->notice,
			&c->usage,      &c->event,       &c->fields};

		cJSON_ArrayForEach (m, r) {
			if (!strcmp(m->string, "once_per_id"))
				c->once_per_id = cJSON_IsTrue(m);
			for (k = 0; k < sizeof(keys) / sizeof(*keys); k++)
				if (!strcmp(m->string, keys[k]))
					*slot[k] = m;
		}
	}
}

void wk_stream_line(void *arg, const char *line, size_t len)
{
	struct wk_stream *st = arg;
	cJSON *root = cJSON_ParseWithLength(line, len);
	size_t i;

	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return; /* banners and progress noise are not protocol */
	}
	if (!st->compiled)
		compile(st);
	for (i = 0; i < st->n_compiled; i++) {
		const struct wk_rule *rule = &st->compiled[i];
		const cJSON *e, *list;

		if (!matches(root, rule->match))
			continue;
		if (!cJSON_IsString(rule->each)) {
			apply(st, rule, root, root);
			continue;
		}
		list = get_path(root, rule->each->valuestring);
		cJSON_ArrayForEach (e, list)
			if (matches(e, rule->item_match))
				apply(st, rule, root, e);
	}
	cJSON_Delete(root);
}

void wk_stream_reset_attempt(struct wk_stream *st)
{
	free(st->text);
	free(st->final_text);
	free(st->error);
	free(st->error_kind);
	free(st->notice);
	st->text = st->final_text = st->error = st->error_kind = NULL;
	st->notice = NULL;
	st->messages = 0;
	st->fatal_type = NULL;
	memset(st->fatal_seen, 0, sizeof(st->fatal_seen));
}

void wk_stream_free(struct wk_stream *st)
{
	while (st->names) {
		struct wk_tool_name *t = st->names;

		st->names = t->next;
		free(t->id);
		free(t->name);
		free(t);
	}
	wk_stream_reset_attempt(st);
	free(st->session_id);
	free(st->model);
	free(st->cli_version);
	free(st->compiled);
	cJSON_Delete(st->usage);
	cJSON_Delete(st->failures);
	cJSON_Delete(st->denials);
	memset(st, 0, sizeof(*st));
}

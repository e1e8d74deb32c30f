/*
 * job.c - the job request and job result documents.
 *
 * Owns validation of the request (version, kinds, per-kind fields, types,
 * unknown keys, other kinds' fields at their defaults) and the encoding
 * of the result. main.c calls it once per
 * run; the kinds fill a struct wk_result through wk_result_set_error.
 */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

enum field_scope { F_ALL, F_AGENT, F_CHECK, F_BATCH, F_SHELL, F_GH };

/*
 * What a field holds when its job does not use it. Upstream's host sends
 * every field of the one JobRequest model, at its default for the kinds
 * that do not use it (UPSTREAM 7.2), so another kind's field is accepted
 * when it is null or holds exactly that default.
 */
enum field_default {
	D_NULL,       /* only null */
	D_EMPTY_LIST, /* [] */
	D_EMPTY_OBJ,  /* {} */
	D_STRING,     /* the string `dflt` */
	D_NUMBER,     /* the number `num` */
	D_FALSE,      /* false */
};

static const struct field {
	const char *name;
	enum field_scope scope;
	enum field_default dkind;
	const char *dflt;
	double num;
} fields[] = {
	{"v", F_ALL, D_NULL, NULL, 0},
	{"job_id", F_ALL, D_NULL, NULL, 0},
	{"run_id", F_ALL, D_NULL, NULL, 0},
	{"kind", F_ALL, D_NULL, NULL, 0},
	{"timeout_s", F_ALL, D_NULL, NULL, 0},
	{"cwd", F_ALL, D_NULL, NULL, 0},
	{"prompt", F_AGENT, D_NULL, NULL, 0},
	{"system_message", F_AGENT, D_NULL, NULL, 0},
	{"drop_system_sections", F_AGENT, D_EMPTY_LIST, NULL, 0},
	{"model", F_AGENT, D_NULL, NULL, 0},
	{"resume_session_id", F_AGENT, D_NULL, NULL, 0},
	{"permission_mode", F_AGENT, D_STRING, "auto", 0},
	{"expect", F_AGENT, D_STRING, "text", 0},
	{"max_tool_calls", F_AGENT, D_NULL, NULL, 0},
	{"host_tools", F_AGENT, D_EMPTY_LIST, NULL, 0},
	{"host_tools_dir", F_AGENT, D_NULL, NULL, 0},
	{"host_tool_timeout_s", F_AGENT, D_NUMBER, NULL, 120},
	{"available_tools", F_AGENT, D_NULL, NULL, 0},
	{"backend", F_AGENT, D_NULL, NULL, 0},
	{"script", F_AGENT, D_NULL, NULL, 0},
	{"script_key", F_AGENT, D_NULL, NULL, 0},
	{"preset", F_AGENT, D_NULL, NULL, 0},
	{"argv", F_CHECK, D_NULL, NULL, 0},
	{"commands", F_BATCH, D_NULL, NULL, 0},
	{"command_timeout_s", F_BATCH, D_NULL, NULL, 0},
	{"release_fifos", F_BATCH, D_FALSE, NULL, 0},
	{"op", F_GH, D_NULL, NULL, 0},
	{"params", F_GH, D_EMPTY_OBJ, NULL, 0},
};

/* Does `v` hold field f's unused value (null or its default)? */
static int at_default(const struct field *f, const cJSON *v)
{
	if (cJSON_IsNull(v))
		return 1;
	switch (f->dkind) {
	case D_NULL:
		return 0;
	case D_EMPTY_LIST:
		return cJSON_IsArray(v) && !v->child;
	case D_EMPTY_OBJ:
		return cJSON_IsObject(v) && !v->child;
	case D_STRING:
		return cJSON_IsString(v) && !strcmp(v->valuestring, f->dflt);
	case D_NUMBER:
		return cJSON_IsNumber(v) && v->valuedouble == f->num;
	case D_FALSE:
		return cJSON_IsFalse(v);
	}
	return 0;
}

/* The default as the message shows it: "null or 'text'". */
static char *default_text(const struct field *f)
{
	switch (f->dkind) {
	case D_EMPTY_LIST:
		return wk_strdup("null or []");
	case D_EMPTY_OBJ:
		return wk_strdup("null or {}");
	case D_STRING:
		return wk_printf("null or \"%s\"", f->dflt);
	case D_NUMBER:
		return wk_printf("null or %g", f->num);
	case D_FALSE:
		return wk_strdup("null or false");
	case D_NULL:
		break;
	}
	return wk_strdup("null");
}

static const char *const kinds[] = {"agent.session", "shell.check",
				    "shell.batch", "github.op"};

static int scope_allows(enum field_scope s, const char *kind)
{
	switch (s) {
	case F_ALL:
		return 1;
	case F_AGENT:
		return !strcmp(kind, "agent.session");
	case F_CHECK:
		return !strcmp(kind, "shell.check");
	case F_BATCH:
		return !strcmp(kind, "shell.batch");
	case F_SHELL:
		return !strncmp(kind, "shell.", 6);
	case F_GH:
		return !strcmp(kind, "github.op");
	}
	return 0;
}

/* Optional string field: absent and null both leave *out NULL. */
static int opt_string(cJSON *root, const char *name, const char **out,
		      char **err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v)) {
		*err = wk_printf("field '%s' must be a string", name);
		return -1;
	}
	*out = v->valuestring;
	return 0;
}

static int req_string(cJSON *root, const char *name, const char **out,
		      char **err)
{
	if (opt_string(root, name, out, err) < 0)
		return -1;
	if (!*out || !**out) {
		*err = wk_printf("field '%s' is required", name);
		return -1;
	}
	return 0;
}

static int opt_number(cJSON *root, const char *name, double *out, double dflt,
		      char **err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	*out = dflt;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble <= 0) {
		*err = wk_printf("field '%s' must be a positive number", name);
		return -1;
	}
	*out = v->valuedouble;
	return 0;
}

static int string_list(cJSON *root, const char *name, cJSON **out, char **err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name), *c;

	if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v)) {
		*err = wk_printf("field '%s' must be a non-empty list of "
				 "strings",
				 name);
		return -1;
	}
	cJSON_ArrayForEach (c, v) {
		if (!cJSON_IsString(c)) {
			*err = wk_printf("field '%s' must be a non-empty list "
					 "of strings",
					 name);
			return -1;
		}
	}
	*out = v;
	return 0;
}

/*
 * shell.batch's commands: each a shell string (`sh -c`), or a non-empty
 * list of strings run directly as an argv (no shell: no quoting, no
 * globbing, one process fewer).
 */
static int command_list(cJSON *root, cJSON **out, char **err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "commands"), *c, *a;
	int ok = cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0;

	for (c = ok ? v->child : NULL; c && ok; c = c->next) {
		if (cJSON_IsString(c))
			continue;
		ok = cJSON_IsArray(c) && cJSON_GetArraySize(c) > 0;
		for (a = ok ? c->child : NULL; a; a = a->next)
			ok &= cJSON_IsString(a);
	}
	if (!ok) {
		*err = wk_strdup(
			"field 'commands' must be a non-empty list of "
			"shell strings or argv lists of strings");
		return -1;
	}
	*out = v;
	return 0;
}

static int check_keys(cJSON *root, const char *kind, char **err)
{
	cJSON *c;
	size_t i;

	cJSON_ArrayForEach (c, root) {
		const struct field *f = NULL;

		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(fields[i].name, c->string))
				f = &fields[i];
		if (!f) {
			*err = wk_printf("unknown field '%s' in job",
					 c->string);
			return -1;
		}
		if (!scope_allows(f->scope, kind) && !at_default(f, c)) {
			char *d = default_text(f);

			*err = wk_printf("field '%s' is not allowed for kind "
					 "'%s' (it may only be %s, its "
					 "default)",
					 c->string, kind, d);
			free(d);
			return -1;
		}
	}
	return 0;
}

static int parse_agent(struct wk_job *job, char **err)
{
	cJSON *root = job->root, *v;
	const char *mode, *expect;

	if (req_string(root, "prompt", &job->prompt, err) < 0 ||
	    opt_string(root, "system_message", &job->system_message, err) ||
	    opt_string(root, "model", &job->model, err) ||
	    opt_string(root, "resume_session_id", &job->resume_session_id,
		       err) ||
	    opt_string(root, "backend", &job->backend, err) ||
	    opt_string(root, "script", &job->script, err) ||
	    opt_string(root, "script_key", &job->script_key, err) ||
	    opt_string(root, "preset", &job->preset, err) ||
	    opt_string(root, "permission_mode", &mode, err) ||
	    opt_string(root, "expect", &expect, err))
		return -1;
	if (mode && strcmp(mode, "auto") && strcmp(mode, "read_only")) {
		*err = wk_printf("field 'permission_mode' must be 'auto' or "
				 "'read_only', not '%s'",
				 mode);
		return -1;
	}
	job->read_only = mode && !strcmp(mode, "read_only");
	if (expect && strcmp(expect, "text") && strcmp(expect, "json")) {
		*err = wk_printf("field 'expect' must be 'text' or 'json', "
				 "not '%s'",
				 expect);
		return -1;
	}
	job->expect_json = expect && !strcmp(expect, "json");
	if (job->backend && strcmp(job->backend, "script") &&
	    strcmp(job->backend, "command")) {
		*err = wk_printf("field 'backend' must be 'script' or "
				 "'command', not '%s'",
				 job->backend);
		return -1;
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "host_tools");
	if (v && !cJSON_IsNull(v) &&
	    (!cJSON_IsArray(v) || cJSON_GetArraySize(v))) {
		*err = wk_strdup("host tools are not supported");
		return -1;
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "max_tool_calls");
	if (v && !cJSON_IsNull(v) &&
	    (!cJSON_IsNumber(v) || v->valuedouble < 0)) {
		*err = wk_strdup("field 'max_tool_calls' must be a "
				 "non-negative integer");
		return -1;
	}
	if (cJSON_IsNumber(v))
		job->max_tool_calls = v->valuedouble > 1e9
					      ? 1000000000L
					      : (long)v->valuedouble;
	return 0;
}

/*
 * Parse and validate a request. On failure returns -1 and sets *err to a
 * message for stderr (caller frees); the job then owns nothing.
 */
int wk_job_parse(struct wk_job *job, const char *text, size_t len, char **err)
{
	cJSON *v;
	size_t i;
	int known = 0;

	memset(job, 0, sizeof(*job));
	*err = NULL;
	job->root = cJSON_ParseWithLength(text, len);
	if (!job->root) {
		*err = wk_strdup("job is not valid JSON (truncated or "
				 "malformed)");
		goto fail;
	}
	if (!cJSON_IsObject(job->root)) {
		*err = wk_strdup("job must be a JSON object");
		goto fail;
	}
	v = cJSON_GetObjectItemCaseSensitive(job->root, "v");
	if (!cJSON_IsNumber(v) || v->valuedouble != 1) {
		*err = wk_strdup("job field 'v' must be 1");
		goto fail;
	}
	if (req_string(job->root, "kind", &job->kind, err) < 0)
		goto fail;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		known |= !strcmp(kinds[i], job->kind);
	if (!known) {
		*err = wk_printf("unknown job kind '%s'", job->kind);
		goto fail;
	}
	if (check_keys(job->root, job->kind, err) < 0 ||
	    req_string(job->root, "job_id", &job->job_id, err) < 0 ||
	    req_string(job->root, "run_id", &job->run_id, err) < 0 ||
	    opt_number(job->root, "timeout_s", &job->timeout_s, 1800, err) ||
	    opt_string(job->root, "cwd", &job->cwd, err))
		goto fail;
	if (!strcmp(job->kind, "agent.session")) {
		if (parse_agent(job, err) < 0)
			goto fail;
	} else if (!strcmp(job->kind, "shell.check")) {
		if (string_list(job->root, "argv", &job->argv, err) < 0)
			goto fail;
	} else if (!strcmp(job->kind, "shell.batch")) {
		if (command_list(job->root, &job->commands, err) ||
		    opt_number(job->root, "command_timeout_s",
			       &job->command_timeout_s, job->timeout_s, err))
			goto fail;
		v = cJSON_GetObjectItemCaseSensitive(job->root,
						     "release_fifos");
		if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v)) {
			*err = wk_strdup("field 'release_fifos' must be a "
					 "boolean");
			goto fail;
		}
		job->release_fifos = cJSON_IsTrue(v);
	} else {
		if (req_string(job->root, "op", &job->op, err) < 0)
			goto fail;
		v = cJSON_GetObjectItemCaseSensitive(job->root, "params");
		if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v)) {
			*err = wk_strdup("field 'params' must be an object");
			goto fail;
		}
		job->params = cJSON_IsObject(v) ? v : NULL;
	}
	return 0;
fail:
	wk_job_free(job);
	return -1;
}

void wk_job_free(struct wk_job *job)
{
	cJSON_Delete(job->root);
	memset(job, 0, sizeof(*job));
}

/* Mark the result failed; replaces any earlier error. */
void wk_result_set_error(struct wk_result *res, enum wk_status status,
			 const char *type, const char *detail, const char *fmt,
			 ...)
{
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	free(res->error_type);
	free(res->error_message);
	free(res->error_detail);
	res->status = status;
	res->error_type = wk_strdup(type);
	res->error_message = msg;
	res->error_detail = wk_strdup(detail);
}

static const char *status_name(enum wk_status s)
{
	return s == WK_OK ? "ok" : s == WK_TIMEOUT ? "timeout" : "error";
}

/* Build the JobResult document; the result keeps its own data. */
cJSON *wk_result_to_json(const struct wk_result *res, const char *job_id)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "v", 1);
	cJSON_AddStringToObject(o, "job_id", job_id);
	cJSON_AddStringToObject(o, "status", status_name(res->status));
	if (res->output_text)
		cJSON_AddStringToObject(o, "output_text", res->output_text);
	if (res->output_json)
		cJSON_AddItemToObject(o, "output_json",
				      cJSON_Duplicate(res->output_json, 1));
	if (res->session_id)
		cJSON_AddStringToObject(o, "session_id", res->session_id);
	if (res->usage)
		cJSON_AddItemToObject(o, "usage",
				      cJSON_Duplicate(res->usage, 1));
	if (res->health)
		cJSON_AddItemToObject(o, "health",
				      cJSON_Duplicate(res->health, 1));
	if (res->has_exit_code)
		cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
	if (res->status != WK_OK) {
		cJSON *e = cJSON_AddObjectToObject(o, "error");

		cJSON_AddStringToObject(e, "type",
					res->error_type ? res->error_type
							: "Error");
		cJSON_AddStringToObject(e, "message",
					res->error_message ? res->error_message
							   : "job failed");
		if (res->error_detail)
			cJSON_AddStringToObject(e, "detail",
						res->error_detail);
		if (res->http_status)
			cJSON_AddNumberToObject(e, "http_status",
						(double)res->http_status);
	}
	cJSON_AddArrayToObject(o, "artifacts");
	return o;
}

void wk_result_free(struct wk_result *res)
{
	free(res->output_text);
	cJSON_Delete(res->output_json);
	free(res->session_id);
	cJSON_Delete(res->usage);
	cJSON_Delete(res->health);
	free(res->error_type);
	free(res->error_message);
	free(res->error_detail);
	memset(res, 0, sizeof(*res));
}

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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream.h"
#include "common/json.h"
#include "common/launch.h"

#ifndef SBXLOOP_PKGDATADIR
#define SBXLOOP_PKGDATADIR "/usr/local/share/sbxloop"
#endif

#define PRESET_MAX (256u * 1024)
/* what is kept of a CLI's stdout: the answer of a plain-text CLI */
#define AGENT_STDOUT_TAIL (1024u * 1024)

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

static char *trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	return s;
}

/* A case-insensitive substring test. */
static int contains(const char *hay, const char *needle)
{
	return hay && needle && *needle && strcasestr(hay, needle);
}

/*
 * The last `lines` non-empty lines of `text` (at most `max` bytes, whole
 * UTF-8 characters), skipping JSON objects when `prose`: what a person
 * reads of a CLI's failure. Caller frees; "" when there are none.
 */
static char *last_lines(const char *text, int lines, size_t max, int prose)
{
	const char *end = text ? text + strlen(text) : NULL, *p, *start;
	char *out = wk_strdup("");

	while (end && end > text && lines > 0) {
		char *t;

		while (end > text &&
		       (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
			end--;
		for (p = end; p > text && p[-1] != '\n'; p--)
			;
		start = p;
		if (end > start && !(prose && *start == '{')) {
			t = wk_printf("%.*s%s%s", (int)(end - start), start,
				      *out ? "\n" : "", out);
			free(out);
			out = t;
			lines--;
		}
		end = start;
	}
	if (strlen(out) > max) {
		char *t = wk_strdup(wk_utf8_tail(out, strlen(out), max));

		free(out);
		out = t;
	}
	return out;
}

/* What the CLIs' argument parsers (commander, clap, yargs) say. */
static const char *const rejected[] = {
	"unknown option",         "unexpected argument",   "Unknown argument",
	"Invalid command format", "unrecognized argument", NULL};

/*
 * The first line of `text` that names a rejected argument, else the
 * first that starts with "error" (any case), up to 600 bytes: how the
 * CLIs' failures begin. Caller frees; NULL if there is none.
 */
static char *error_line(const char *text)
{
	const char *p;
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (p = text; p && *p;) {
			size_t n = strcspn(p, "\n");
			char *line =
				wk_printf("%.*s", (int)(n > 600 ? 600 : n), p);

			for (i = 0; pass == 0 && rejected[i]; i++)
				if (contains(line, rejected[i]))
					return line;
			if (pass == 1 && n >= 5 &&
			    !strncasecmp(line, "error", 5))
				return line;
			free(line);
			p += n + (p[n] == '\n');
		}
	}
	return NULL;
}

/* The error type a failure report maps to by the preset's "errors". */
static const char *classify(const cJSON *preset, const char *text)
{
	const cJSON *e;
	size_t i;

	for (i = 0; rejected[i]; i++)
		if (contains(text, rejected[i]))
			return "AgentCliRejected";
	cJSON_ArrayForEach (e, cJSON_GetObjectItem(preset, "errors"))
		if (contains(text, sl_json_str(e, "contains", NULL)))
			return sl_json_str(e, "type", "AgentError");
	return "AgentError";
}

/* Whether the CLI said the session to resume does not exist. */
static int session_unknown(const cJSON *preset, const char *text)
{
	const cJSON *m;

	cJSON_ArrayForEach (m, cJSON_GetObjectItem(preset, "session_unknown"))
		if (cJSON_IsString(m) && contains(text, m->valuestring))
			return 1;
	return 0;
}

/* What one attempt left: its exit, its output tails, its own report. */
struct attempt {
	struct wk_buf out, err;
	struct wk_proc p;
	char *report; /* the CLI's own words on what failed, owned */
	char *all;    /* report, category, stderr: what classify reads */
	char *detail; /* stderr tail and the last stdout lines, owned */
};

static void attempt_init(struct attempt *a)
{
	memset(a, 0, sizeof(*a));
	wk_buf_init(&a->out, 0, AGENT_STDOUT_TAIL);
	wk_buf_init(&a->err, 0, WK_SHELL_TAIL);
}

static void attempt_free(struct attempt *a)
{
	wk_buf_free(&a->out);
	wk_buf_free(&a->err);
	free(a->report);
	free(a->all);
	free(a->detail);
	memset(a, 0, sizeof(*a));
}

/* Fill report, all and detail from the finished attempt. */
static void attempt_summarize(struct attempt *a, const struct wk_stream *st)
{
	char *err = wk_buf_render(&a->err), *out = wk_buf_render(&a->out);
	char *err_tail = last_lines(err, 20, WK_SHELL_TAIL, 0);
	char *out_tail = last_lines(out, 20, 4096, 0);

	if (st->error)
		a->report = wk_strdup(st->error);
	else if ((a->report = error_line(err)))
		;
	else if (!*(a->report = last_lines(err, 3, 600, 1))) {
		free(a->report);
		a->report = last_lines(out, 3, 600, 1);
	}
	a->all = wk_printf("%s\n%s\n%s", a->report,
			   st->error_kind ? st->error_kind : "", err);
	a->detail =
		wk_printf("%s%s%s%s", *err_tail ? "stderr:\n" : "", err_tail,
			  *out_tail ? "\nlast output:\n" : "", out_tail);
	free(err_tail);
	free(out_tail);
	free(err);
	free(out);
}

static void resume_dropped(struct wk_ctx *ctx, const struct wk_job *job,
			   const char *cli, const char *report)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "cli", cli);
	cJSON_AddStringToObject(d, "session_id", job->resume_session_id);
	cJSON_AddStringToObject(d, "reason", report);
	wk_emit(ctx, SBXLOOP_EV_AGENT_RESUME_DROPPED, d);
}

/* The answer of a successful attempt, and its health. */
static void succeed(struct wk_ctx *ctx, struct wk_stream *st,
		    struct attempt *a, int stream_json, struct wk_result *res)
{
	if (stream_json)
		res->output_text = wk_strdup(st->final_text ? st->final_text
					     : st->text     ? st->text
							    : "");
	else
		res->output_text = trim_end(wk_buf_render(&a->out));
	if (*res->output_text && !st->messages) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "content", res->output_text);
		cJSON_AddStringToObject(d, "model",
					st->model ? st->model : "");
		wk_emit(ctx, SBXLOOP_EV_AGENT_MESSAGE, d);
	}
	res->health = cJSON_CreateObject();
	cJSON_AddItemToObject(res->health, "permission_denials", st->denials);
	st->denials = NULL;
	cJSON_AddItemToObject(res->health, "tool_failures", st->failures);
	st->failures = NULL;
	cJSON_AddObjectToObject(res->health, "tool_refusals");
	cJSON_AddNumberToObject(res->health, "tool_calls", st->calls);
	cJSON_AddNumberToObject(res->health, "tool_cap_denials", 0);
	res->status = WK_OK;
}

/* A failed attempt as a typed error in the CLI's own words. */
static void fail(const cJSON *preset, const struct wk_stream *st,
		 struct attempt *a, const char *cli, struct wk_result *res)
{
	const char *type = classify(preset, a->all);
	char how[64];

	if (a->p.term_signal)
		snprintf(how, sizeof(how), "killed by signal %d",
			 a->p.term_signal);
	else
		snprintf(how, sizeof(how), "exit %d", a->p.exit_code);
	if (!strcmp(type, "AgentCliRejected"))
		wk_result_set_error(
			res, WK_ERROR, type, a->detail,
			"agent CLI '%s' rejected its arguments (%s): %s; the "
			"'%s' preset was verified with %s %s up to %s (found: "
			"%s); run 'sbxloop doctor'",
			cli, how, a->report,
			st->job->preset ? st->job->preset : cli, cli,
			sl_json_str(st->version, "min", "?"),
			sl_json_str(st->version, "below", "?"),
			st->cli_version ? st->cli_version : "unknown");
	else
		wk_result_set_error(
			res, WK_ERROR, type, a->detail,
			"agent CLI '%s' failed (%s): %s%s", cli, how,
			*a->report ? a->report : "it printed no reason",
			!strcmp(type, "AgentAuthError")
				? " (check the agent's model token and login: "
				  "'sbxloop doctor', docs/agents.md)"
				: "");
	if (a->p.exit_code) {
		res->has_exit_code = 1;
		res->exit_code = a->p.exit_code;
	}
}

/* Out of time or past the tool ceiling: say so, keep what it printed. */
static void stopped(const struct wk_stream *st, struct attempt *a,
		    const char *cli, struct wk_result *res)
{
	if (st->capped) {
		wk_result_set_error(res, WK_ERROR, "ToolCallCeiling",
				    a->detail,
				    "the agent went past its tool-call "
				    "ceiling of %ld (budgets.max_tool_calls_"
				    "per_phase) and was stopped; raise the "
				    "budget or split the task",
				    st->job->max_tool_calls);
		return;
	}
	wk_result_set_error(res, WK_TIMEOUT, "Timeout", a->detail,
			    "job timed out after %.0f s running '%s'%s%s",
			    st->job->timeout_s, cli,
			    *a->report ? "; its last report: " : "",
			    st->notice ? st->notice : a->report);
}

/* Best effort: a cache that cannot be written is probed again. */
static void write_cache(const char *path, const char *key, const char *value)
{
	char *dir = wk_strdup(path), *slash, *tmp;
	FILE *f;

	slash = strrchr(dir, '/');
	*slash = '\0';
	slash = strrchr(dir, '/');
	*slash = '\0';
	(void)mkdir(dir, 0700); /* $HOME/.cache */
	*slash = '/';
	(void)mkdir(dir, 0700); /* $HOME/.cache/sbxloop */
	tmp = wk_printf("%s.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (f && fprintf(f, "%s%s\n", key, value) > 0 && fclose(f) == 0)
		(void)rename(tmp, path);
	else if (f)
		fclose(f);
	(void)unlink(tmp);
	free(tmp);
	free(dir);
}

/*
 * The CLI's version, from the preset's "version" argv, cached per
 * binary (path, size, mtime) under $HOME/.cache/sbxloop so a job pays
 * for the probe only when the CLI changed. Caller frees; NULL if unread.
 */
static char *cli_version(struct wk_ctx *ctx, const cJSON *spec, char **envp)
{
	const cJSON *argv_spec = cJSON_GetObjectItem(spec, "argv"), *a;
	const char *home = getenv("HOME");
	char *bin, *cache = NULL, *key = NULL, *text, *version = NULL;
	char *argv[8] = {0};
	struct wk_buf out;
	struct wk_proc p = {0};
	struct stat sb;
	size_t len, n = 0;
	int big;

	a = cJSON_GetArrayItem(argv_spec, 0);
	if (!cJSON_IsString(a) ||
	    !(bin = sl_launch_find(a->valuestring, getenv("PATH"))))
		return NULL;
	if (stat(bin, &sb) == 0 && home && *home) {
		const char *base = strrchr(a->valuestring, '/');

		/* one file per CLI name, also for a preset naming a path */
		cache = wk_printf("%s/.cache/sbxloop/cli-version-%s", home,
				  base ? base + 1 : a->valuestring);
		key = wk_printf("%s %lld %lld\n", bin, (long long)sb.st_size,
				(long long)sb.st_mtime);
		text = wk_read_file(cache, 4096, &len, &big);
		if (text && !strncmp(text, key, strlen(key)))
			version = wk_strdup(trim_end(text + strlen(key)));
		free(text);
	}
	if (!version) {
		cJSON_ArrayForEach (a, argv_spec)
			if (cJSON_IsString(a) && n < 7)
				argv[n++] = a->valuestring;
		wk_buf_init(&out, 0, 4096);
		p.argv = argv;
		p.cwd = ctx->cwd;
		p.envp = envp;
		p.timeout_s = 30;
		p.out = &out; /* stdout only: warnings may hold numbers */
		if (wk_proc_run(ctx, &p) == 0 && !p.exit_code &&
		    !p.timed_out) {
			char *o = wk_buf_render(&out), *d = o;

			/* "2.1.332 (Claude Code)", "codex-cli 0.171.0": the
			 * first number with a dot in it */
			while (*d && !(*d >= '0' && *d <= '9' &&
				       d[strspn(d, "0123456789")] == '.'))
				d++;
			n = strspn(d, "0123456789.");
			while (n && d[n - 1] == '.') /* "1.0.102." */
				n--;
			version = wk_printf("%.*s", (int)n, d);
			free(o);
			if (cache && *version)
				write_cache(cache, key, version);
		}
		wk_buf_free(&out);
	}
	free(key);
	free(cache);
	free(bin);
	return version;
}

static int load_preset(const struct wk_job *job, char **text, cJSON **preset,
		       struct wk_result *res)
{
	const char *name = job->preset;
	char *path;
	size_t len;
	int big, rc = 0;

	if (!name || !*name)
		name = getenv("SBXLOOP_AGENT_PRESET");
	if (!name || !*name)
		name = "copilot";
	path = preset_path(name);
	*text = wk_read_file(path, PRESET_MAX, &len, &big);
	*preset = *text ? cJSON_ParseWithLength(*text, len) : NULL;
	if (!cJSON_IsArray(cJSON_GetObjectItem(*preset, "argv")) ||
	    !cJSON_GetArraySize(cJSON_GetObjectItem(*preset, "argv")) ||
	    !cJSON_IsString(cJSON_GetObjectItem(*preset, "output"))) {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "cannot load agent preset '%s': %s", path,
				    !*text ? strerror(errno)
					   : "needs 'argv' and 'output'");
		rc = -1;
	}
	free(path);
	return rc;
}

static int run_attempt(struct wk_ctx *ctx, struct attempt *a, char **argv,
		       char **envp, double deadline, struct wk_stream *st,
		       int stream_json)
{
	a->p.argv = argv;
	a->p.cwd = ctx->cwd;
	a->p.envp = envp;
	a->p.timeout_s = deadline - wk_now();
	if (a->p.timeout_s <= 0)
		a->p.timeout_s = 0.001;
	a->p.out = &a->out;
	a->p.err = &a->err;
	if (stream_json) {
		a->p.on_line = wk_stream_line;
		a->p.arg = st;
		st->proc = &a->p;
	}
	return wk_proc_run(ctx, &a->p);
}

int wk_backend_command(struct wk_ctx *ctx, const struct wk_job *job,
		       struct wk_result *res)
{
	char *text = NULL, **argv = NULL, **envp = NULL, *version = NULL;
	cJSON *preset = NULL;
	const cJSON *tpl;
	struct wk_stream st = {0};
	struct attempt a;
	double deadline = wk_now() + job->timeout_s;
	int stream_json, resume, rc = -1;

	attempt_init(&a);
	if (load_preset(job, &text, &preset, res) < 0)
		goto out;
	tpl = cJSON_GetObjectItem(preset, "argv");
	stream_json =
		!strcmp(cJSON_GetObjectItem(preset, "output")->valuestring,
			"stream-json");
	resume = job->resume_session_id && *job->resume_session_id;
	envp = wk_env_agent(cJSON_GetObjectItem(preset, "pass_env"),
			    cJSON_GetObjectItem(preset, "env"));
	st.ctx = ctx;
	st.job = job;
	st.rules = cJSON_GetObjectItem(preset, "rules");
	st.version = cJSON_GetObjectItem(preset, "version");
	st.fatal = cJSON_GetObjectItem(preset, "fatal_notices");
	st.refusals = cJSON_GetObjectItem(preset, "refusals");
	st.failures = cJSON_CreateObject();
	st.denials = cJSON_CreateObject();
	st.model = wk_strdup(job->model);
retry:
	argv = build_argv(tpl, job, ctx, resume);
	if (!argv[0]) {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "agent preset '%s' yields an empty "
				    "command",
				    job->preset ? job->preset : "copilot");
		goto out;
	}
	st.cli = argv[0];
	if (st.version && !st.version_checked) {
		version = cli_version(ctx, st.version, envp);
		if (version) {
			free(st.cli_version);
			st.cli_version = wk_strdup(version);
		}
		wk_stream_check_version(&st, version);
	}
	if (run_attempt(ctx, &a, argv, envp, deadline, &st, stream_json) < 0) {
		wk_result_set_error(
			res, WK_ERROR, "BackendUnavailable", NULL,
			"cannot run agent command '%s': %s; install the CLI "
			"in the agent sandbox (docs/agents.md)",
			argv[0], strerror(a.p.spawn_errno));
		goto out;
	}
	attempt_summarize(&a, &st);
	if (a.p.timed_out || st.capped) {
		stopped(&st, &a, argv[0], res);
		goto keep;
	}
	if (st.fatal_type) {
		wk_result_set_error(
			res, WK_ERROR, st.fatal_type, a.detail,
			"agent CLI '%s' was stopped: it kept reporting '%s'; "
			"check that the sandbox may reach the model service "
			"(egress policy, proxy) and the token (sbxloop doctor)",
			argv[0], st.notice ? st.notice : "?");
		goto keep;
	}
	if ((a.p.exit_code || a.p.term_signal || st.error) && resume &&
	    session_unknown(preset, a.all) && deadline > wk_now()) {
		/* only an unknown session starts afresh; usage carries over */
		resume_dropped(ctx, job, argv[0], a.report);
		resume = 0;
		wk_stream_reset_attempt(&st);
		attempt_free(&a);
		attempt_init(&a);
		free_argv(argv);
		argv = NULL;
		goto retry;
	}
	if (a.p.exit_code || a.p.term_signal || st.error) {
		fail(preset, &st, &a, argv[0], res);
		goto keep;
	}
	succeed(ctx, &st, &a, stream_json, res);
	rc = 0;
keep:
	/* a failed or stopped session still reports its id and usage */
	res->session_id = st.session_id;
	st.session_id = NULL;
	res->usage = st.usage;
	st.usage = NULL;
out:
	wk_stream_free(&st);
	attempt_free(&a);
	free_argv(argv);
	wk_env_free(envp);
	cJSON_Delete(preset);
	free(version);
	free(text);
	return rc;
}

/*
 * `sbxloop-worker check-agent [PRESET]`: the preset's CLI on this
 * machine against the version range the preset was verified with, as
 * one JSON line {preset, cli, path, version, verified_min,
 * verified_below, status, message} (status: ok, outside, unknown,
 * missing). Exit 0 when ok, 1 otherwise, 2 for a preset that does not
 * load. `sbxloop doctor` runs it where the agent runs on this host.
 */
int wk_check_agent(const char *name)
{
	struct wk_job job = {0};
	struct wk_result res = {0};
	struct wk_ctx ctx = {0};
	char *text = NULL, *version = NULL, *path = NULL, **envp = NULL;
	cJSON *preset = NULL, *o = NULL;
	const cJSON *range, *bin;
	const char *status = "ok";
	char *line;
	int rc = 0, in;

	job.preset = name;
	if (load_preset(&job, &text, &preset, &res) < 0) {
		fprintf(stderr, "error: %s\n", res.error_message);
		wk_result_free(&res);
		free(text);
		return 2;
	}
	ctx.events_fd = -1;
	ctx.parent = getppid();
	snprintf(ctx.cwd, sizeof(ctx.cwd), ".");
	range = cJSON_GetObjectItem(preset, "version");
	bin = cJSON_GetArrayItem(cJSON_GetObjectItem(preset, "argv"), 0);
	envp = wk_env_agent(cJSON_GetObjectItem(preset, "pass_env"),
			    cJSON_GetObjectItem(preset, "env"));
	if (cJSON_IsString(bin))
		path = sl_launch_find(bin->valuestring, getenv("PATH"));
	if (path && range)
		version = cli_version(&ctx, range, envp);
	in = version ? wk_version_in_range(version, range) : -1;
	if (!path)
		status = "missing";
	else if (!range)
		status = "ok";
	else if (in < 0)
		status = "unknown";
	else if (!in)
		status = "outside";
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "preset", sl_json_str(preset, "name", ""));
	cJSON_AddStringToObject(o, "cli",
				cJSON_IsString(bin) ? bin->valuestring : "");
	cJSON_AddStringToObject(o, "path", path ? path : "");
	cJSON_AddStringToObject(o, "version", version ? version : "");
	cJSON_AddStringToObject(o, "verified_min",
				sl_json_str(range, "min", ""));
	cJSON_AddStringToObject(o, "verified_below",
				sl_json_str(range, "below", ""));
	cJSON_AddStringToObject(o, "status", status);
	line = sl_json_print_sorted(o);
	puts(line);
	free(line);
	rc = strcmp(status, "ok") ? 1 : 0;
	cJSON_Delete(o);
	cJSON_Delete(preset);
	wk_env_free(envp);
	free(version);
	free(path);
	free(text);
	return rc;
}

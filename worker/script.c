/*
 * script.c - the `script` agent backend: replay a scenario file.
 *
 * A scenario is a JSON array of replies. Each agent job consumes the next
 * one that fits it; what is used lives in `<scenario>.cursor`, updated
 * under an flock so jobs in separate worker processes consume in order.
 * A reply naming a "task" (and maybe a "phase") fits only that task's
 * jobs (the engine keys each job "TASK/PHASE" in script_key), so tasks
 * in parallel lanes take their own replies whatever the timing. A reply may act
 * on the workspace first (sleep, write files, run commands, emit events)
 * so a scripted EXECUTE really changes files (and the prompt each reply
 * answered is kept beside the cursor); in a read_only job (a
 * critic's) its file writes are refused as denied tool calls, and its
 * commands run confined by the sandbox alone. Called by agent.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"

#define SCRIPT_MAX (16u * 1024 * 1024)

/*
 * Does reply `r` fit a job keyed `key` ("TASK/PHASE", "/decompose", or
 * NULL)? A reply without "task" fits any job; one with "task" (and
 * maybe "phase") fits only the jobs of that task (and phase), so that
 * tasks running in parallel lanes each get their own replies.
 */
static int reply_fits(const cJSON *r, const char *key)
{
	const char *task = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(r, "task"));
	const char *phase = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(r, "phase"));
	const char *slash = key ? strchr(key, '/') : NULL;
	size_t tl = slash ? (size_t)(slash - key) : 0;

	if (!task)
		return 1;
	if (!slash || strlen(task) != tl || strncmp(task, key, tl))
		return 0;
	return !phase || !strcmp(phase, slash + 1);
}

/*
 * Take the first reply not yet used that fits `key`, under the cursor
 * lock. The cursor file holds how many leading replies are used, then
 * (when replies were taken out of order) a line "taken: i,j,...".
 * Returns the index, the reply count when none fits, or -1 with errno
 * set when the cursor cannot be used.
 */
static long take_cursor(const char *script, const cJSON *replies,
			const char *key)
{
	char *path = wk_printf("%s.cursor", script), buf[8192] = "";
	long idx = -1, first, total = cJSON_GetArraySize(replies), i;
	unsigned char *used = NULL;
	const char *t;
	ssize_t n;
	size_t o;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		goto out;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		goto out;
	buf[n] = '\0';
	first = strtol(buf, NULL, 10);
	if (first < 0)
		first = 0;
	used = calloc((size_t)total + 1, 1);
	if (!used)
		goto out;
	for (i = 0; i < first && i < total; i++)
		used[i] = 1;
	t = strstr(buf, "taken:");
	for (t = t ? t + 6 : NULL; t && *t;) {
		char *end;
		long k = strtol(t, &end, 10);

		if (end == t)
			break;
		if (k >= 0 && k < total)
			used[k] = 1;
		t = *end == ',' ? end + 1 : end;
	}
	for (idx = 0; idx < total; idx++)
		if (!used[idx] &&
		    reply_fits(cJSON_GetArrayItem(replies, (int)idx), key))
			break;
	if (idx < total)
		used[idx] = 1;
	for (first = 0; first < total && used[first]; first++)
		;
	o = (size_t)snprintf(buf, sizeof(buf), "%ld\n", first);
	for (i = first, t = "taken: "; i < total && o < sizeof(buf) - 24; i++)
		if (used[i]) {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o,
					      "%s%ld", t, i);
			t = ",";
		}
	if (*t == ',')
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\n");
	/* no fsync: a kill of any process loses nothing written here, and
	 * lanes taking replies at once queued behind each other's */
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, o, 0) != (ssize_t)o)
		idx = -1;
out:
	free(used);
	if (fd >= 0)
		close(fd); /* drops the lock */
	free(path);
	return idx;
}

/*
 * What the agent was asked: `<scenario>.prompt.<N>` (N counts replies
 * from 1), so a test can assert on the prompt a reply answered (the
 * standing guidance a steered run shows its planner). Best effort.
 */
static void record_prompt(const char *script, long idx, const char *prompt)
{
	char *path = wk_printf("%s.prompt.%ld", script, idx + 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t left = prompt ? strlen(prompt) : 0;

	while (fd >= 0 && left) {
		ssize_t w = write(fd, prompt, left);

		if (w <= 0)
			break;
		prompt += w;
		left -= (size_t)w;
	}
	if (fd >= 0)
		close(fd);
	free(path);
}

static int safe_relpath(const char *p)
{
	const char *s = p;

	if (!*p || *p == '/')
		return 0;
	while (*s) {
		size_t n = strcspn(s, "/");

		if (n == 2 && !strncmp(s, "..", 2))
			return 0;
		s += n;
		if (*s == '/')
			s++;
	}
	return 1;
}

static int mkdirs_for(char *path)
{
	char *slash;

	for (slash = strchr(path + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*slash = '/';
			return -1;
		}
		*slash = '/';
	}
	return 0;
}

/*
 * A critic's job (permission_mode read_only) may not write: each file
 * of the reply is refused as a failed `write` tool call with an
 * agent.permission_denied event, counted in health, and the reply
 * goes on as a real agent's would after a denied tool.
 */
static void refuse_write(struct wk_ctx *ctx, const char *file, int *calls,
			 int *refused)
{
	char *id = wk_printf("script-write-%d", *refused + 1);
	char *why = wk_printf("refused: the job is read-only (permission_mode "
			      "read_only) and may not write '%s'",
			      file);
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "tool", "write");
	cJSON_AddStringToObject(d, "tool_call_id", id);
	cJSON_AddStringToObject(d, "args", file);
	wk_emit(ctx, SBXLOOP_EV_AGENT_TOOL_START, d);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", "write");
	cJSON_AddStringToObject(d, "path", file);
	cJSON_AddStringToObject(d, "reason", why);
	wk_emit(ctx, SBXLOOP_EV_AGENT_PERMISSION_DENIED, d);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "tool", "write");
	cJSON_AddStringToObject(d, "tool_call_id", id);
	cJSON_AddStringToObject(d, "args", file);
	cJSON_AddFalseToObject(d, "success");
	cJSON_AddStringToObject(d, "output", "");
	cJSON_AddStringToObject(d, "error", why);
	wk_emit(ctx, SBXLOOP_EV_AGENT_TOOL_END, d);
	(*calls)++;
	(*refused)++;
	free(id);
	free(why);
}

static int write_files(struct wk_ctx *ctx, const struct wk_job *job,
		       const cJSON *files, int *calls, int *refused,
		       struct wk_result *res)
{
	const cJSON *f;

	cJSON_ArrayForEach (f, files) {
		char *path, *text;
		FILE *fp = NULL;
		int ok;

		if (!safe_relpath(f->string)) {
			wk_result_set_error(res, WK_ERROR, "ScriptInvalid",
					    NULL,
					    "script file path '%s' must "
					    "stay inside the workspace",
					    f->string);
			return -1;
		}
		if (job->read_only) {
			refuse_write(ctx, f->string, calls, refused);
			continue;
		}
		path = wk_printf("%s/%s", ctx->cwd, f->string);
		text = cJSON_IsString(f) ? wk_strdup(f->valuestring)
					 : cJSON_PrintUnformatted(f);
		ok = mkdirs_for(path) == 0 && (fp = fopen(path, "we")) &&
		     fputs(text, fp) >= 0;
		if (fp && fclose(fp) != 0)
			ok = 0;
		if (!ok)
			wk_result_set_error(res, WK_ERROR, "ScriptError", NULL,
					    "cannot write '%s': %s", path,
					    strerror(errno));
		free(path);
		free(text);
		if (!ok)
			return -1;
	}
	return 0;
}

/*
 * A tool call past job->max_tool_calls is turned away, as the SDK
 * backends upstream do: not run, counted, and the first one announced
 * with agent.tool_cap. The reply itself still stands.
 */
static int turned_away(struct wk_ctx *ctx, const struct wk_job *job, int calls,
		       int *denied, const char *tool)
{
	cJSON *d;

	if (!job->max_tool_calls || calls < job->max_tool_calls)
		return 0;
	if ((*denied)++ == 0) {
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "cap", (double)job->max_tool_calls);
		cJSON_AddNumberToObject(d, "calls", calls + 1);
		cJSON_AddStringToObject(d, "tool", tool);
		wk_emit(ctx, SBXLOOP_EV_AGENT_TOOL_CAP, d);
	}
	return 1;
}

/* Run the reply's shell commands as tool calls the transcript shows. */
static int run_commands(struct wk_ctx *ctx, const struct wk_job *job,
			const cJSON *cmds, double deadline, int *calls,
			int *denied, struct wk_result *res)
{
	const cJSON *c;
	char **envp = wk_env_agent(NULL, NULL);
	int i = 0, rc = 0;

	cJSON_ArrayForEach (c, cmds) {
		char *argv[] = {"sh", "-c", NULL, NULL};
		struct wk_proc p = {0};
		struct wk_buf out;
		char *id = wk_printf("script-%d", ++i), *text;
		cJSON *d;

		if (!cJSON_IsString(c) ||
		    turned_away(ctx, job, *calls, denied, "shell")) {
			free(id);
			continue;
		}
		argv[2] = c->valuestring;
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "tool", "shell");
		cJSON_AddStringToObject(d, "tool_call_id", id);
		cJSON_AddStringToObject(d, "args", c->valuestring);
		wk_emit(ctx, SBXLOOP_EV_AGENT_TOOL_START, d);
		(*calls)++;
		wk_buf_init(&out, 0, WK_TOOL_OUTPUT_MAX);
		p.argv = argv;
		p.cwd = ctx->cwd;
		p.envp = envp;
		p.timeout_s = deadline - wk_now();
		p.merge_stderr = 1;
		p.out = &out;
		if (p.timeout_s <= 0)
			p.timeout_s = 0.001;
		rc = wk_proc_run(ctx, &p);
		text = wk_buf_render(&out);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "tool", "shell");
		cJSON_AddStringToObject(d, "tool_call_id", id);
		cJSON_AddStringToObject(d, "args", c->valuestring);
		cJSON_AddBoolToObject(d, "success",
				      rc == 0 && !p.timed_out && !p.exit_code);
		cJSON_AddNumberToObject(d, "exit_code", p.exit_code);
		cJSON_AddStringToObject(d, "output", text);
		cJSON_AddNullToObject(d, "error");
		wk_emit(ctx, SBXLOOP_EV_AGENT_TOOL_END, d);
		free(text);
		free(id);
		wk_buf_free(&out);
		if (rc < 0) {
			wk_result_set_error(res, WK_ERROR, "SpawnError", NULL,
					    "cannot run 'sh': %s",
					    strerror(p.spawn_errno));
			break;
		}
		if (p.timed_out) {
			wk_result_set_error(res, WK_TIMEOUT, "Timeout", NULL,
					    "job timed out");
			rc = -1;
			break;
		}
	}
	wk_env_free(envp);
	return rc;
}

static void emit_events(struct wk_ctx *ctx, const cJSON *events)
{
	const cJSON *e;

	cJSON_ArrayForEach (e, events) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "type");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "data");

		if (!cJSON_IsString(t))
			continue;
		wk_emit(ctx, t->valuestring,
			cJSON_IsObject(d) ? cJSON_Duplicate(d, 1) : NULL);
	}
}

static cJSON *default_health(int calls, int denied, int refused)
{
	cJSON *h = cJSON_CreateObject();
	cJSON *pd = cJSON_AddObjectToObject(h, "permission_denials");

	if (refused)
		cJSON_AddNumberToObject(pd, "write", refused);
	cJSON_AddObjectToObject(h, "tool_failures");
	cJSON_AddObjectToObject(h, "tool_refusals");
	cJSON_AddNumberToObject(h, "tool_calls", calls);
	cJSON_AddNumberToObject(h, "tool_cap_denials", denied);
	return h;
}

int wk_backend_script(struct wk_ctx *ctx, const struct wk_job *job,
		      struct wk_result *res)
{
	const char *path =
		job->script ? job->script : getenv("SBXLOOP_SCRIPT");
	double deadline = wk_now() + job->timeout_s;
	cJSON *script = NULL, *reply, *v;
	char *text = NULL;
	size_t len;
	long idx;
	int big, calls = 0, denied = 0, refused = 0, rc = -1;

	if (!path || !*path) {
		wk_result_set_error(res, WK_ERROR, "BackendUnavailable", NULL,
				    "script backend needs a scenario file "
				    "(job field 'script' or SBXLOOP_SCRIPT)");
		goto out;
	}
	text = wk_read_file(path, SCRIPT_MAX, &len, &big);
	script = text ? cJSON_ParseWithLength(text, len) : NULL;
	if (!cJSON_IsArray(script)) {
		wk_result_set_error(res, WK_ERROR, "ScriptInvalid", NULL,
				    "cannot load scenario '%s': %s", path,
				    text ? "not a JSON array"
					 : strerror(errno));
		goto out;
	}
	idx = take_cursor(path, script, job->script_key);
	if (idx < 0) {
		wk_result_set_error(res, WK_ERROR, "ScriptError", NULL,
				    "cannot advance cursor of '%s': %s", path,
				    strerror(errno));
		goto out;
	}
	if (idx >= cJSON_GetArraySize(script)) {
		wk_result_set_error(res, WK_ERROR, "ScriptExhausted", NULL,
				    "scenario '%s' has no reply left%s%s (%d "
				    "in all)",
				    path, job->script_key ? " for " : "",
				    job->script_key ? job->script_key : "",
				    cJSON_GetArraySize(script));
		goto out;
	}
	record_prompt(path, idx, job->prompt);
	reply = cJSON_GetArrayItem(script, (int)idx);
	if (!cJSON_IsObject(reply)) {
		wk_result_set_error(res, WK_ERROR, "ScriptInvalid", NULL,
				    "reply %ld of '%s' is not an object",
				    idx + 1, path);
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(reply, "sleep_s");
	if (cJSON_IsNumber(v) && v->valuedouble > 0) {
		double left = deadline - wk_now();

		wk_sleep(ctx, v->valuedouble < left ? v->valuedouble : left);
		/* a stopped worker takes no side effect after its pause */
		if (wk_stop_signal) {
			wk_result_set_error(res, WK_ERROR, "Interrupted", NULL,
					    "stopped by signal %d",
					    (int)wk_stop_signal);
			goto out;
		}
		if (v->valuedouble >= left) {
			wk_result_set_error(res, WK_TIMEOUT, "Timeout", NULL,
					    "job timed out");
			goto out;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(reply, "files");
	if (cJSON_IsObject(v) &&
	    write_files(ctx, job, v, &calls, &refused, res) < 0)
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(reply, "run");
	if (cJSON_IsArray(v) &&
	    run_commands(ctx, job, v, deadline, &calls, &denied, res) < 0)
		goto out;
	emit_events(ctx, cJSON_GetObjectItemCaseSensitive(reply, "events"));
	v = cJSON_GetObjectItemCaseSensitive(reply, "fail");
	if (cJSON_IsString(v)) {
		/* fail_type: the typed error a real backend would give */
		const cJSON *t =
			cJSON_GetObjectItemCaseSensitive(reply, "fail_type");

		wk_result_set_error(res, WK_ERROR,
				    cJSON_IsString(t) ? t->valuestring
						      : "AgentError",
				    NULL, "%s", v->valuestring);
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(reply, "text");
	if (cJSON_IsString(v))
		res->output_text = wk_strdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(reply, "json");
	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		res->output_json = cJSON_Duplicate(v, 1);
		if (!res->output_text)
			res->output_text = cJSON_PrintUnformatted(v);
	}
	v = cJSON_GetObjectItemCaseSensitive(reply, "session_id");
	res->session_id = cJSON_IsString(v)
				  ? wk_strdup(v->valuestring)
				  : wk_printf("script-%s", job->job_id);
	v = cJSON_GetObjectItemCaseSensitive(reply, "health");
	res->health = cJSON_IsObject(v)
			      ? cJSON_Duplicate(v, 1)
			      : default_health(calls, denied, refused);
	v = cJSON_GetObjectItemCaseSensitive(reply, "usage");
	if (cJSON_IsObject(v)) {
		wk_usage_merge(&res->usage, v);
		wk_emit(ctx, SBXLOOP_EV_AGENT_USAGE, cJSON_Duplicate(v, 1));
	}
	if (res->output_text && *res->output_text) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "content", res->output_text);
		cJSON_AddStringToObject(d, "model",
					job->model ? job->model : "script");
		wk_emit(ctx, SBXLOOP_EV_AGENT_MESSAGE, d);
	}
	res->status = WK_OK;
	rc = 0;
out:
	cJSON_Delete(script);
	free(text);
	return rc;
}

/*
 * Phase runners. Owns prompt variables, the agent and shell jobs each
 * phase submits, the strict JSON schemas of the structured phases with
 * their single retry, the degraded-critic guard, SCRUTINIZE's evidence
 * and VERIFY's transcript. Called by engine.c only.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "phases/phases.h"
#include "engine/dag.h"
#include "engine/egress.h"
#include "engine/ids.h"
#include "config/policy_patterns.h"
#include "phases/prompt.h"
#include "host/redact.h"
#include "phases/worker_client.h"

#define CLIP_KEEP 6000
#define DIFF_BUDGET 20000
#define EVIDENCE_BUDGET 1500

/* ---- small helpers ------------------------------------------------------ */

char *sl_clip(const char *text)
{
	size_t n = text ? strlen(text) : 0;

	if (n <= CLIP_KEEP)
		return sl_xstrdup(text ? text : "");
	return sl_xasprintf("...(clipped)...\n%s", text + n - CLIP_KEEP);
}

/* Head + tail within `budget` chars; caller frees. */
static char *clip_head_tail(const char *text, size_t budget)
{
	size_t n = strlen(text), head = budget / 3;

	if (n <= budget)
		return sl_xstrdup(text);
	return sl_xasprintf("%.*s\n...(clipped %zu chars)...\n%s", (int)head,
			    text, n - budget, text + n - (budget - head));
}

static const char *json_str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* "- a\n- b" or the placeholder. */
static char *render_list(const cJSON *list, const char *none)
{
	struct sl_buf b = SL_BUF_INIT;
	const cJSON *it;

	cJSON_ArrayForEach (it, list) {
		if (!cJSON_IsString(it))
			continue;
		if (b.len)
			sl_buf_addc(&b, '\n');
		sl_buf_addf(&b, "- %s", it->valuestring);
	}
	if (!b.len)
		sl_buf_adds(&b, none);
	return sl_buf_detach(&b);
}

static void var_set(cJSON *vars, const char *name, const char *value)
{
	cJSON_DeleteItemFromObjectCaseSensitive(vars, name);
	cJSON_AddStringToObject(vars, name, value ? value : "");
}

static void var_take(cJSON *vars, const char *name, char *value)
{
	var_set(vars, name, value);
	free(value);
}

/* `a`, `b`, ... or (none); caller frees. */
static char *domain_list(const char *const *domains)
{
	struct sl_buf b = SL_BUF_INIT;

	for (; domains && *domains; domains++)
		sl_buf_addf(&b, "%s`%s`", b.len ? ", " : "", *domains);
	if (!b.len)
		sl_buf_adds(&b, "(none)");
	return sl_buf_detach(&b);
}

static cJSON *base_vars(const struct sl_phase_ctx *pc)
{
	cJSON *v = cJSON_CreateObject();

	var_set(v, "outcome", pc->outcome);
	var_set(v, "retry_context", "");
	var_take(v, "baseline_registries", domain_list(sl_egress_registries));
	var_take(v, "declarable_registries",
		 domain_list(sl_egress_declarable));
	var_set(v, "guidance", "(none)");
	return v;
}

static void task_vars(cJSON *vars, const cJSON *spec)
{
	const char *desc = json_str(spec, "description", "");

	var_set(vars, "task_id", json_str(spec, "id", ""));
	var_set(vars, "task_title", json_str(spec, "title", ""));
	var_set(vars, "task_description",
		*desc ? desc : "(no further description)");
	var_take(vars, "acceptance_criteria",
		 render_list(cJSON_GetObjectItemCaseSensitive(
				     spec, "acceptance_criteria"),
			     "(no explicit criteria)"));
}

/* agent.script, a relative path taken from the project file's dir. */
char *sl_phase_script_path(const struct sl_core *core)
{
	const char *path = sl_config_str(core->cfg, "agent.script");
	const char *proj;
	const char *slash;

	if (!path || path[0] == '/')
		return sl_xstrdup(path);
	proj = sl_config_project_file(core->cfg);
	if (proj && (slash = strrchr(proj, '/')) != NULL) {
		char *dir = sl_xstrndup(proj, (size_t)(slash - proj));
		char *abs = NULL, *joined = sl_xasprintf("%s/%s", dir, path);

		abs = realpath(joined, NULL);
		free(dir);
		if (abs) {
			free(joined);
			return abs;
		}
		return joined;
	}
	{
		char *abs = realpath(path, NULL);

		return abs ? abs : sl_xstrdup(path);
	}
}

static double job_timeout(const struct sl_core *core)
{
	return sl_config_double(core->cfg, "budgets.per_job_timeout_s",
				1800.0);
}

static cJSON *agent_job(const struct sl_phase_ctx *pc, const char *prompt,
			int read_only, int expect_json)
{
	const struct sl_config *cfg = pc->core->cfg;
	const char *model = sl_config_str(cfg, "model");
	const char *backend = sl_config_str(cfg, "agent.backend");
	long long calls =
		sl_config_int(cfg, "budgets.max_tool_calls_per_phase", 40);
	cJSON *job = cJSON_CreateObject();

	cJSON_AddStringToObject(job, "kind", "agent.session");
	cJSON_AddNumberToObject(job, "timeout_s", job_timeout(pc->core));
	cJSON_AddStringToObject(job, "cwd", pc->info->workdir);
	cJSON_AddStringToObject(job, "prompt", prompt);
	cJSON_AddStringToObject(job, "permission_mode",
				read_only ? "read_only" : "auto");
	cJSON_AddStringToObject(job, "expect", expect_json ? "json" : "text");
	if (model && *model && strcmp(model, "auto"))
		cJSON_AddStringToObject(job, "model", model);
	if (calls > 0)
		cJSON_AddNumberToObject(job, "max_tool_calls", (double)calls);
	if (backend && *backend) {
		cJSON_AddStringToObject(job, "backend", backend);
		if (strcmp(backend, "script") == 0) {
			char *s = sl_phase_script_path(pc->core);

			if (s)
				cJSON_AddStringToObject(job, "script", s);
			free(s);
		} else if (sl_config_str(cfg, "agent.preset")) {
			cJSON_AddStringToObject(
				job, "preset",
				sl_config_str(cfg, "agent.preset"));
		}
	}
	return job;
}

static int submit(const struct sl_phase_ctx *pc, cJSON *job,
		  const char *persona, cJSON **res, struct sbxloop_error *err)
{
	struct sl_job_tags tags = {"agent", persona, pc->task_id};

	return sl_worker_submit(pc->core, pc->info, job, &tags, res, err);
}

/* The error type and message of a failed JobResult. */
static void result_error(const cJSON *res, const char **type, const char **msg)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");

	*type = json_str(e, "type", json_str(res, "status", "error"));
	*msg = json_str(e, "message", "no message");
}

/* A failed agent job: the sandbox running out of room or the agent out
 * of tool calls is the task's problem, anything else the run's. */
static int job_failed(const char *type, const char *msg,
		      struct sbxloop_error *err)
{
	if (strcmp(type, "SandboxResourcesExhausted") == 0)
		return sl_error(err, SL_PHASE_ERESOURCES, "%s", msg);
	if (strcmp(type, "ToolCallCeiling") == 0)
		return sl_error(err, SL_PHASE_EBUDGET, "%s", msg);
	return sl_error(err, SBXLOOP_EINFRA, "agent job failed (%s): %s", type,
			msg);
}

static int result_ok(const cJSON *res)
{
	return strcmp(json_str(res, "status", ""), "ok") == 0;
}

/* ---- strict schemas ----------------------------------------------------- */

static int only_keys(const cJSON *obj, const char *const *allowed,
		     const char *what, struct sl_buf *msg)
{
	const cJSON *it;

	if (!cJSON_IsObject(obj)) {
		sl_buf_addf(msg, "%s must be a JSON object", what);
		return -1;
	}
	cJSON_ArrayForEach (it, obj) {
		const char *const *k;

		for (k = allowed; *k; k++)
			if (strcmp(*k, it->string) == 0)
				break;
		if (!*k) {
			sl_buf_addf(msg, "%s has an unknown key '%s'", what,
				    it->string);
			return -1;
		}
	}
	return 0;
}

/* A list of strings (absent = []); copies it into `dst` under `key`. */
static int str_list(const cJSON *obj, const char *key, int required,
		    const char *what, cJSON *dst, struct sl_buf *msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *it;
	cJSON *out = cJSON_CreateArray();

	if (!v && required) {
		sl_buf_addf(msg, "%s is missing '%s'", what, key);
		goto fail;
	}
	if (v && !cJSON_IsArray(v)) {
		sl_buf_addf(msg, "%s: '%s' must be a list of strings", what,
			    key);
		goto fail;
	}
	cJSON_ArrayForEach (it, v) {
		if (!cJSON_IsString(it)) {
			sl_buf_addf(msg, "%s: '%s' must be a list of strings",
				    what, key);
			goto fail;
		}
		cJSON_AddItemToArray(out, cJSON_CreateString(it->valuestring));
	}
	cJSON_AddItemToObject(dst, key, out);
	return 0;
fail:
	cJSON_Delete(out);
	return -1;
}

static int str_field(const cJSON *obj, const char *key, const char *dflt,
		     int nonblank, const char *what, cJSON *dst,
		     struct sl_buf *msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	const char *s = dflt;

	if (v && !cJSON_IsString(v)) {
		sl_buf_addf(msg, "%s: '%s' must be a string", what, key);
		return -1;
	}
	if (v)
		s = v->valuestring;
	if (!s || (nonblank && !*s)) {
		sl_buf_addf(msg, "%s needs a non-empty '%s'", what, key);
		return -1;
	}
	cJSON_AddStringToObject(dst, key, s);
	return 0;
}

/*
 * A validator normalises `in` into *out (0) or explains in `msg` what is
 * wrong: -1 asks the agent again, 1 fails the phase at once (a budget).
 */
typedef int validate_fn(const struct sl_phase_ctx *pc, const cJSON *in,
			cJSON **out, struct sl_buf *msg);

static int is_blank(const char *s)
{
	for (; s && *s; s++)
		if (!isspace((unsigned char)*s))
			return 0;
	return 1;
}

/* ---- verify-command lint (4.9) ------------------------------------------ */

static const char *const env_mutators[] = {"sudo", "apt", "apt-get", "dnf",
					   "yum",  "apk", NULL};
static const char *const bash_heads[] = {"[[",    "source", "declare", "local",
					 "pushd", "popd",   NULL};
static const char *const python_bare[] = {"python", "python3", "pip",
					  "pip3",   "pytest",  NULL};

static int in_list(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(w, *list) == 0)
			return 1;
	return 0;
}

static int lang_selected(const struct sl_core *core, const char *lang)
{
	size_t i, n = sl_config_list_len(core->cfg, "sandbox.languages");

	if (n == 0)
		return strcmp(lang, "python") == 0;
	for (i = 0; i < n; i++) {
		const char *c = sl_language_canonical(sl_config_list_item(
			core->cfg, "sandbox.languages", i));

		if (c && strcmp(c, lang) == 0)
			return 1;
	}
	return 0;
}

/* Mark quoted regions so separators inside quotes are ignored. */
static void lint_one(const struct sl_core *core, const char *cmd,
		     const char *prefix, struct sl_buf *out)
{
	size_t n = strlen(cmd), i = 0;
	char quote = 0;
	int py = lang_selected(core, "python");

	for (i = 0; i < n; i++) {
		char c = cmd[i];

		if (quote) {
			if (c == quote)
				quote = 0;
			continue;
		}
		if (c == '"' || (c == '\'' && !(i && cmd[i - 1] == '$'))) {
			quote = c;
			continue;
		}
		if (c == '$' && cmd[i + 1] == '\'') {
			sl_buf_addf(out,
				    "- %suses ANSI-C quoting ($'...'), "
				    "which POSIX sh lacks: `%s`\n",
				    prefix, cmd);
			return;
		}
		if (c == '<' && strncmp(cmd + i, "<<<", 3) == 0) {
			sl_buf_addf(out,
				    "- %suses a here-string (<<<), "
				    "which POSIX sh lacks: `%s`\n",
				    prefix, cmd);
			return;
		}
	}
	/* command heads */
	i = 0;
	while (i < n) {
		size_t s, e;
		char word[64];

		while (i < n && strchr(" \t\n(!{;|&`", cmd[i]))
			i++;
		if (cmd[i] == '$' && cmd[i + 1] == '(') {
			i += 2;
			continue;
		}
		s = i;
		while (i < n && !strchr(" \t\n;|&`)", cmd[i]))
			i++;
		e = i;
		if (e > s && e - s < sizeof(word)) {
			memcpy(word, cmd + s, e - s);
			word[e - s] = '\0';
			if (strchr(word, '=') && word[0] != '=' &&
			    word[0] != '[') {
				continue; /* env assignment: look further */
			}
			if (in_list(word, env_mutators))
				sl_buf_addf(out,
					    "- %s`%s` changes the "
					    "environment (%s); verify "
					    "commands must only check\n",
					    prefix, cmd, word);
			else if (in_list(word, bash_heads))
				sl_buf_addf(out,
					    "- %s`%s` uses '%s', which "
					    "POSIX sh lacks\n",
					    prefix, cmd, word);
			else if (py && in_list(word, python_bare))
				sl_buf_addf(out,
					    "- %s`%s` runs a bare '%s'; "
					    "use the project's environment "
					    "(e.g. .venv/bin/%s or uv run "
					    "%s)\n",
					    prefix, cmd, word, word, word);
			else if ((!strcmp(word, "sh") ||
				  !strcmp(word, "bash") ||
				  !strcmp(word, "dash") ||
				  !strcmp(word, "zsh") ||
				  !strcmp(word, "/bin/sh") ||
				  !strcmp(word, "/bin/bash")) &&
				 i + 2 < n && cmd[i + 1] == '-' &&
				 strchr(cmd + i + 1, 'c') &&
				 strchr(cmd + i + 1, 'c') <
					 cmd + i + 1 +
						 strcspn(cmd + i + 1, " \t"))
				sl_buf_addf(out,
					    "- %s`%s` nests a shell; "
					    "commands already run under "
					    "sh -c\n",
					    prefix, cmd);
		}
		/* skip to the next separator */
		quote = 0;
		while (i < n) {
			char c = cmd[i];

			if (quote) {
				if (c == quote)
					quote = 0;
			} else if (c == '"' || c == '\'') {
				quote = c;
			} else if (strchr(";|&`\n", c) ||
				   (c == '$' && cmd[i + 1] == '(')) {
				break;
			}
			i++;
		}
	}
}

void sl_verify_lint(const struct sl_core *core, const cJSON *commands,
		    const char *prefix, struct sl_buf *out)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, commands)
		if (cJSON_IsString(c))
			lint_one(core, c->valuestring, prefix, out);
}

/* ---- the two-attempt JSON loop (4.1) ------------------------------------ */

/*
 * Run a JSON phase. `vars` gets retry_context set per attempt. On 0,
 * *out is the normalised output and *health (may be NULL) the job's
 * health object; both caller frees.
 */
static int json_phase(const struct sl_phase_ctx *pc, const char *phase,
		      const char *persona, int read_only, cJSON *vars,
		      const char *preamble, validate_fn *validate, cJSON **out,
		      cJSON **health, struct sbxloop_error *err)
{
	struct sl_buf problem = SL_BUF_INIT;
	char *prompt = NULL;
	cJSON *res = NULL, *job = NULL;
	int attempt, rc = 0;

	*out = NULL;
	if (health)
		*health = NULL;
	for (attempt = 1; attempt <= 2; attempt++) {
		const char *type, *msg;

		if (attempt == 1) {
			var_set(vars, "retry_context", preamble);
		} else {
			var_take(vars, "retry_context",
				 sl_xasprintf("%s## Previous attempt was "
					      "invalid\n\n%s\n",
					      preamble, sl_buf_str(&problem)));
		}
		rc = sl_prompt_render(pc->prompts_dir, phase, vars, &prompt,
				      err);
		if (rc < 0)
			goto out;
		job = agent_job(pc, prompt, read_only, 1);
		free(prompt);
		prompt = NULL;
		rc = submit(pc, job, persona, &res, err);
		cJSON_Delete(job);
		job = NULL;
		if (rc < 0)
			goto out;
		sl_buf_reset(&problem);
		if (!result_ok(res)) {
			result_error(res, &type, &msg);
			if (strcmp(type, "ExpectedJsonMissing") != 0) {
				rc = job_failed(type, msg, err);
				goto out;
			}
			sl_buf_adds(&problem,
				    "Your response contained no JSON that "
				    "could be parsed. Reply with ONLY one "
				    "fenced ```json block holding the "
				    "object described above.");
		} else if ((rc = validate(pc,
					  cJSON_GetObjectItemCaseSensitive(
						  res, "output_json"),
					  out, &problem)) > 0) {
			/* past a budget: asking again would not help */
			rc = sl_error(err, SBXLOOP_EINVAL, "%s",
				      sl_buf_str(&problem));
			goto out;
		} else if (rc == 0) {
			if (health) {
				const cJSON *h =
					cJSON_GetObjectItemCaseSensitive(
						res, "health");

				*health = h ? cJSON_Duplicate(h, 1) : NULL;
			}
			rc = 0;
			goto out;
		} else {
			char *quoted = sl_xasprintf(
				"The response did not pass validation:\n\n"
				"```\n%s\n```\n\nFix the structure and reply "
				"again with the complete JSON.",
				sl_buf_str(&problem));

			sl_buf_reset(&problem);
			sl_buf_adds(&problem, quoted);
			free(quoted);
		}
		cJSON_Delete(res);
		res = NULL;
	}
	{
		/* the bare reason, without the advice around it */
		const char *p = sl_buf_str(&problem);
		const char *s = strstr(p, "```\n");
		const char *e = s ? strstr(s + 4, "\n```") : NULL;

		if (s && e)
			rc = sl_error(err, SBXLOOP_EINFRA,
				      "%s produced invalid output twice: %.*s",
				      phase, (int)(e - s - 4), s + 4);
		else
			rc = sl_error(err, SBXLOOP_EINFRA,
				      "%s produced invalid output twice: "
				      "no parseable JSON",
				      phase);
	}
out:
	cJSON_Delete(res);
	free(prompt);
	sl_buf_release(&problem);
	return rc;
}

/* ---- DECOMPOSE ---------------------------------------------------------- */

/*
 * A task id ends up in paths, rows and terminal lines: refuse anything
 * but a short safe name, quoting at most 40 bytes of it, made printable.
 */
static int task_id_field(const cJSON *t, const char *what, struct sl_buf *msg)
{
	const char *id = json_str(t, "id", "");
	size_t n = strlen(id), i;

	if (sl_task_id_valid(id))
		return 0;
	sl_buf_addf(msg, "%s: id '", what);
	for (i = 0; i < n && i < 40; i++)
		sl_buf_addc(msg, isprint((unsigned char)id[i]) ? id[i] : '?');
	if (n > 40)
		sl_buf_addf(msg, "...' (%zu bytes", n);
	else
		sl_buf_adds(msg, "'");
	sl_buf_addf(msg,
		    "%s is not a valid task id: use 1 to %d of A-Z, a-z, "
		    "0-9, '.', '_' and '-', not starting with '.' or '-'",
		    n > 40 ? ")" : "", SL_TASK_ID_MAX);
	return -1;
}

static int validate_decompose(const struct sl_phase_ctx *pc, const cJSON *in,
			      cJSON **out, struct sl_buf *msg)
{
	static const char *const top[] = {"tasks", NULL};
	static const char *const keys[] = {"id",
					   "title",
					   "description",
					   "depends_on",
					   "acceptance_criteria",
					   "verify_commands",
					   NULL};
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(in, "tasks");
	const cJSON *t;
	cJSON *norm = cJSON_CreateArray(), *graph = NULL;
	struct sbxloop_error derr = {0, ""};
	struct sl_buf lint = SL_BUF_INIT;
	size_t *order = NULL, n = 0, i;
	long long max_tasks =
		sl_config_int(pc->core->cfg, "budgets.max_tasks", 20);
	int idx = 0;

	if (only_keys(in, top, "the response", msg) < 0)
		goto fail;
	if (!cJSON_IsArray(tasks)) {
		sl_buf_adds(msg, "the response needs a 'tasks' list");
		goto fail;
	}
	/* count first: 50,000 tasks must not be validated one by one */
	for (t = tasks->child; t; t = t->next)
		n++;
	if ((long long)n > max_tasks) {
		sl_buf_addf(msg,
			    "decomposition produced %zu tasks, more than "
			    "budgets.max_tasks=%lld",
			    n, max_tasks);
		cJSON_Delete(norm);
		return 1;
	}
	n = 0;
	cJSON_ArrayForEach (t, tasks) {
		cJSON *o = cJSON_CreateObject();
		char what[32];

		snprintf(what, sizeof(what), "task %d", ++idx);
		cJSON_AddItemToArray(norm, o);
		if (only_keys(t, keys, what, msg) < 0 ||
		    str_field(t, "id", NULL, 1, what, o, msg) < 0 ||
		    task_id_field(t, what, msg) < 0 ||
		    str_field(t, "title", NULL, 1, what, o, msg) < 0 ||
		    str_field(t, "description", "", 0, what, o, msg) < 0 ||
		    str_list(t, "depends_on", 0, what, o, msg) < 0 ||
		    str_list(t, "acceptance_criteria", 0, what, o, msg) < 0 ||
		    str_list(t, "verify_commands", 0, what, o, msg) < 0)
			goto fail;
	}
	if (sl_dag_order(norm, &order, &n, &derr) < 0) {
		sl_buf_adds(msg, derr.message);
		goto fail;
	}
	cJSON_ArrayForEach (t, norm) {
		char *prefix =
			sl_xasprintf("task %s: ", json_str(t, "id", "?"));

		sl_verify_lint(
			pc->core,
			cJSON_GetObjectItemCaseSensitive(t, "verify_commands"),
			prefix, &lint);
		free(prefix);
	}
	if (lint.len) {
		sl_buf_adds(msg, "verify commands break the rules:\n");
		sl_buf_adds(msg, sl_buf_str(&lint));
		goto fail;
	}
	graph = cJSON_CreateObject();
	{
		cJSON *ordered = cJSON_AddArrayToObject(graph, "tasks");

		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(
				ordered,
				cJSON_Duplicate(cJSON_GetArrayItem(
							norm, (int)order[i]),
						1));
	}
	free(order);
	cJSON_Delete(norm);
	sl_buf_release(&lint);
	*out = graph;
	return 0;
fail:
	free(order);
	cJSON_Delete(norm);
	sl_buf_release(&lint);
	return -1;
}

int sl_phase_decompose(const struct sl_phase_ctx *pc, cJSON **graph,
		       struct sbxloop_error *err)
{
	cJSON *vars = base_vars(pc);
	char num[32];
	int rc;

	snprintf(num, sizeof(num), "%lld",
		 sl_config_int(pc->core->cfg, "budgets.max_tasks", 20));
	var_set(vars, "max_tasks", num);
	rc = json_phase(pc, "decompose", "decomposer", 0, vars, "",
			validate_decompose, graph, NULL, err);
	cJSON_Delete(vars);
	return rc;
}

/* ---- PLAN --------------------------------------------------------------- */

static int validate_plan(const struct sl_phase_ctx *pc, const cJSON *in,
			 cJSON **out, struct sl_buf *msg)
{
	static const char *const keys[] = {"steps", "expected_artifacts",
					   "verify_commands", "egress", NULL};
	static const char *const ekeys[] = {"domain", "reason", NULL};
	const cJSON *eg = cJSON_GetObjectItemCaseSensitive(in, "egress");
	const cJSON *e;
	cJSON *plan = cJSON_CreateObject(), *egress;
	struct sl_buf lint = SL_BUF_INIT;

	if (only_keys(in, keys, "the plan", msg) < 0 ||
	    str_list(in, "steps", 1, "the plan", plan, msg) < 0 ||
	    str_list(in, "expected_artifacts", 0, "the plan", plan, msg) < 0 ||
	    str_list(in, "verify_commands", 0, "the plan", plan, msg) < 0)
		goto fail;
	if (eg && !cJSON_IsArray(eg)) {
		sl_buf_adds(msg, "the plan: 'egress' must be a list");
		goto fail;
	}
	egress = cJSON_AddArrayToObject(plan, "egress");
	cJSON_ArrayForEach (e, eg) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToArray(egress, o);
		if (only_keys(e, ekeys, "an egress entry", msg) < 0 ||
		    str_field(e, "domain", NULL, 1, "an egress entry", o,
			      msg) < 0 ||
		    str_field(e, "reason", "", 0, "an egress entry", o, msg) <
			    0)
			goto fail;
	}
	/* well-formed and inside the operator's bounds (normalised here) */
	if (sl_egress_validate_plan(pc->core->cfg, egress, msg) < 0)
		goto fail;
	sl_verify_lint(
		pc->core,
		cJSON_GetObjectItemCaseSensitive(plan, "verify_commands"), "",
		&lint);
	if (lint.len) {
		sl_buf_adds(msg, "verify commands break the rules:\n");
		sl_buf_adds(msg, sl_buf_str(&lint));
		goto fail;
	}
	sl_buf_release(&lint);
	*out = plan;
	return 0;
fail:
	sl_buf_release(&lint);
	cJSON_Delete(plan);
	return -1;
}

int sl_phase_plan(const struct sl_phase_ctx *pc, const cJSON *spec,
		  const char *feedback, cJSON **plan,
		  struct sbxloop_error *err)
{
	cJSON *vars = base_vars(pc);
	int rc;

	task_vars(vars, spec);
	var_set(vars, "feedback",
		feedback && *feedback ? feedback
				      : "(none: this is the first attempt)");
	var_take(vars, "verify_commands",
		 render_list(cJSON_GetObjectItemCaseSensitive(
				     spec, "verify_commands"),
			     "(none)"));
	rc = json_phase(pc, "plan", "planner", 0, vars, "", validate_plan,
			plan, NULL, err);
	cJSON_Delete(vars);
	return rc;
}

/* ---- EXECUTE ------------------------------------------------------------ */

/* spec verify commands, then the plan's, first occurrence kept. */
static cJSON *verify_commands(const cJSON *spec, const cJSON *plan)
{
	const cJSON *lists[2] = {
		cJSON_GetObjectItemCaseSensitive(spec, "verify_commands"),
		cJSON_GetObjectItemCaseSensitive(plan, "verify_commands")};
	cJSON *out = cJSON_CreateArray();
	const cJSON *c, *o;
	int i;

	for (i = 0; i < 2; i++) {
		cJSON_ArrayForEach (c, lists[i]) {
			int seen = 0;

			if (!cJSON_IsString(c))
				continue;
			cJSON_ArrayForEach (o, out)
				if (strcmp(o->valuestring, c->valuestring) ==
				    0)
					seen = 1;
			if (!seen)
				cJSON_AddItemToArray(
					out,
					cJSON_CreateString(c->valuestring));
		}
	}
	return out;
}

int sl_phase_execute(const struct sl_phase_ctx *pc, const cJSON *spec,
		     const cJSON *plan, const char *feedback,
		     const char *prior_report, const char *resume_id,
		     char **report, char **session_id,
		     struct sbxloop_error *err)
{
	cJSON *vars = base_vars(pc), *job = NULL, *res = NULL, *cmds;
	char *prompt = NULL;
	const char *type, *msg, *sid;
	int rc;

	*report = *session_id = NULL;
	task_vars(vars, spec);
	var_take(vars, "plan_steps",
		 render_list(cJSON_GetObjectItemCaseSensitive(plan, "steps"),
			     "(no steps)"));
	var_take(vars, "expected_artifacts",
		 render_list(cJSON_GetObjectItemCaseSensitive(
				     plan, "expected_artifacts"),
			     "(none listed)"));
	cmds = verify_commands(spec, plan);
	var_take(vars, "verify_commands", render_list(cmds, "(none)"));
	cJSON_Delete(cmds);
	var_set(vars, "feedback",
		feedback && *feedback ? feedback
				      : "(none: this is the first attempt)");
	var_set(vars, "prior_attempt",
		prior_report && *prior_report
			? prior_report
			: "(none: this is the first attempt)");
	rc = sl_prompt_render(pc->prompts_dir, "execute", vars, &prompt, err);
	if (rc < 0)
		goto out;
	job = agent_job(pc, prompt, 0, 0);
	if (resume_id && *resume_id)
		cJSON_AddStringToObject(job, "resume_session_id", resume_id);
	rc = submit(pc, job, "executor", &res, err);
	if (rc < 0)
		goto out;
	if (!result_ok(res)) {
		result_error(res, &type, &msg);
		rc = job_failed(type, msg, err);
		goto out;
	}
	sid = json_str(res, "session_id", NULL);
	if (resume_id && *resume_id && (!sid || strcmp(sid, resume_id)))
		sl_log(SBXLOOP_LOG_INFO,
		       "phase.resume_missed: asked to resume %s, got %s",
		       resume_id, sid ? sid : "no session");
	*report = sl_clip(json_str(res, "output_text", ""));
	*session_id = sl_xstrdup(sid);
out:
	free(prompt);
	cJSON_Delete(job);
	cJSON_Delete(res);
	cJSON_Delete(vars);
	return rc;
}

/* ---- critics: SCRUTINIZE and VALIDATE ----------------------------------- */

static int validate_verdict(const cJSON *in, cJSON **out, struct sl_buf *msg,
			    int scrutiny)
{
	static const char *const skeys[] = {"verdict",
					    "issues",
					    "feedback",
					    "verify_suspect",
					    "verify_suspect_reason",
					    NULL};
	static const char *const vkeys[] = {"verdict", "issues", "feedback",
					    NULL};
	static const char *const ikeys[] = {"severity", "detail", NULL};
	const cJSON *v, *issues, *it;
	cJSON *o = cJSON_CreateObject(), *arr;
	const char *verdict;

	if (only_keys(in, scrutiny ? skeys : vkeys, "the verdict", msg) < 0 ||
	    str_field(in, "verdict", NULL, 1, "the verdict", o, msg) < 0)
		goto fail;
	verdict = json_str(o, "verdict", "");
	if (strcmp(verdict, "pass") && strcmp(verdict, "revise") &&
	    strcmp(verdict, "accept") && strcmp(verdict, "reject")) {
		sl_buf_addf(msg, "'verdict' must be one of %s, not '%s'",
			    scrutiny ? "pass, revise" : "accept, reject",
			    verdict);
		goto fail;
	}
	issues = cJSON_GetObjectItemCaseSensitive(in, "issues");
	if (issues && !cJSON_IsArray(issues)) {
		sl_buf_adds(msg, "'issues' must be a list");
		goto fail;
	}
	arr = cJSON_AddArrayToObject(o, "issues");
	cJSON_ArrayForEach (it, issues) {
		cJSON *i = cJSON_CreateObject();
		const char *sev;

		cJSON_AddItemToArray(arr, i);
		if (only_keys(it, ikeys, "an issue", msg) < 0 ||
		    str_field(it, "severity", "medium", 1, "an issue", i,
			      msg) < 0 ||
		    str_field(it, "detail", "", 0, "an issue", i, msg) < 0)
			goto fail;
		sev = json_str(i, "severity", "");
		if (strcmp(sev, "low") && strcmp(sev, "medium") &&
		    strcmp(sev, "high")) {
			sl_buf_addf(msg,
				    "issue severity must be low, medium "
				    "or high, not '%s'",
				    sev);
			goto fail;
		}
	}
	if (str_field(in, "feedback", "", 0, "the verdict", o, msg) < 0)
		goto fail;
	if (scrutiny) {
		const char *reason;

		v = cJSON_GetObjectItemCaseSensitive(in, "verify_suspect");
		if (v && !cJSON_IsBool(v)) {
			sl_buf_adds(msg, "'verify_suspect' must be true or "
					 "false");
			goto fail;
		}
		cJSON_AddBoolToObject(o, "verify_suspect", cJSON_IsTrue(v));
		if (str_field(in, "verify_suspect_reason", "", 0,
			      "the verdict", o, msg) < 0)
			goto fail;
		reason = json_str(o, "verify_suspect_reason", "");
		if (cJSON_IsTrue(v) && is_blank(reason)) {
			sl_buf_adds(msg,
				    "'verify_suspect' is true, so "
				    "'verify_suspect_reason' must say why "
				    "the check is wrong");
			goto fail;
		}
	}
	*out = o;
	return 0;
fail:
	cJSON_Delete(o);
	return -1;
}

static int validate_scrutiny(const struct sl_phase_ctx *pc, const cJSON *in,
			     cJSON **out, struct sl_buf *msg)
{
	(void)pc;
	return validate_verdict(in, out, msg, 1);
}

static int validate_validation(const struct sl_phase_ctx *pc, const cJSON *in,
			       cJSON **out, struct sl_buf *msg)
{
	(void)pc;
	return validate_verdict(in, out, msg, 0);
}

static int health_degraded(const cJSON *health)
{
	const cJSON *tf =
		cJSON_GetObjectItemCaseSensitive(health, "tool_failures");

	return cJSON_IsObject(tf) && tf->child != NULL;
}

static char *health_summary(const cJSON *health)
{
	static const char *const parts[] = {
		"tool_failures", "permission_denials", "tool_refusals"};
	static const char *const names[] = {
		"tool failures", "permission denials", "tool refusals"};
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	for (i = 0; i < 3; i++) {
		const cJSON *o =
			cJSON_GetObjectItemCaseSensitive(health, parts[i]);
		const cJSON *it;
		int first = 1;

		if (!cJSON_IsObject(o) || !o->child)
			continue;
		if (b.len)
			sl_buf_adds(&b, "; ");
		sl_buf_addf(&b, "%s: ", names[i]);
		cJSON_ArrayForEach (it, o) {
			sl_buf_addf(&b, "%s%s x%d", first ? "" : ", ",
				    it->string, it->valueint);
			first = 0;
		}
	}
	if (!b.len)
		sl_buf_adds(&b, "healthy");
	return sl_buf_detach(&b);
}

/*
 * A critic session with the degraded-tooling guard: a clean verdict
 * given while tools were failing is asked again, and a second such
 * verdict is downgraded to the dirty one.
 */
static int critic(const struct sl_phase_ctx *pc, const char *phase,
		  const char *persona, cJSON *vars, validate_fn *validate,
		  const char *clean, const char *dirty, cJSON **verdict,
		  struct sbxloop_error *err)
{
	cJSON *v = NULL, *health = NULL, *issues;
	char *summary = NULL, *pre = NULL;
	const char *got;
	int rc;

	*verdict = NULL;
	rc = json_phase(pc, phase, persona, 1, vars, "", validate, &v, &health,
			err);
	if (rc < 0)
		goto out;
	got = json_str(v, "verdict", "");
	if (strcmp(got, clean) || !health_degraded(health))
		goto accept;
	summary = health_summary(health);
	pre = sl_xasprintf(
		"## Degraded tooling warning\n\nYour previous session "
		"reported tool trouble (%s), so its '%s' verdict was "
		"discarded. If you cannot actually inspect the work, answer "
		"'%s' and say what you could not check.\n\n",
		summary, clean, dirty);
	cJSON_Delete(v);
	cJSON_Delete(health);
	v = health = NULL;
	rc = json_phase(pc, phase, persona, 1, vars, pre, validate, &v,
			&health, err);
	if (rc < 0)
		goto out;
	got = json_str(v, "verdict", "");
	if (strcmp(got, clean) || !health_degraded(health))
		goto accept;
	free(summary);
	summary = health_summary(health);
	cJSON_ReplaceItemInObjectCaseSensitive(v, "verdict",
					       cJSON_CreateString(dirty));
	issues = cJSON_GetObjectItemCaseSensitive(v, "issues");
	{
		cJSON *i = cJSON_CreateObject();
		char *d = sl_xasprintf("the reviewer's tools failed twice "
				       "(%s); its '%s' verdict was "
				       "downgraded",
				       summary, clean);

		cJSON_AddStringToObject(i, "severity", "high");
		cJSON_AddStringToObject(i, "detail", d);
		free(d);
		cJSON_AddItemToArray(issues, i);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(
		v, "feedback",
		cJSON_CreateString("The review could not inspect this work "
				   "because its tools kept failing, so the "
				   "work counts as unreviewed. Report "
				   "concrete evidence (commands run and their "
				   "output) that it meets the criteria."));
	cJSON_AddBoolToObject(v, "downgraded", 1);
accept:
	if (health && health_degraded(health))
		cJSON_AddItemToObject(v, "tooling_health",
				      cJSON_Duplicate(health, 1));
	*verdict = v;
	v = NULL;
out:
	cJSON_Delete(v);
	cJSON_Delete(health);
	free(summary);
	free(pre);
	return rc;
}

/* Evidence for the reviewer, gathered mechanically; never fails. */
static char *gather_evidence(const struct sl_phase_ctx *pc)
{
	static const char *const cmds[] = {
		"git status --short 2>&1 | head -50", "git diff HEAD 2>&1",
		"find . -type f -newer /tmp -not -path './.git/*' 2>/dev/null "
		"| head -30"};
	static const char *const labels[] = {"git status", "git diff HEAD",
					     "recently changed files"};
	static const size_t budgets[] = {EVIDENCE_BUDGET, DIFF_BUDGET,
					 EVIDENCE_BUDGET};
	struct sbxloop_error err = {0, ""};
	struct sl_buf b = SL_BUF_INIT;
	cJSON *job = cJSON_CreateObject(), *arr, *res = NULL;
	const cJSON *out, *it;
	size_t i = 0;

	cJSON_AddStringToObject(job, "kind", "shell.batch");
	cJSON_AddNumberToObject(job, "timeout_s", 120);
	cJSON_AddNumberToObject(job, "command_timeout_s", 60);
	cJSON_AddStringToObject(job, "cwd", pc->info->workdir);
	arr = cJSON_AddArrayToObject(job, "commands");
	for (i = 0; i < 3; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(cmds[i]));
	if (submit(pc, job, "scrutinizer", &res, &err) < 0 ||
	    !result_ok(res)) {
		sl_log(SBXLOOP_LOG_WARN, "cannot gather review evidence: %s",
		       err.message[0] ? err.message : "batch job failed");
		goto out;
	}
	out = cJSON_GetObjectItemCaseSensitive(res, "output_json");
	i = 0;
	cJSON_ArrayForEach (it, out) {
		const char *text = json_str(it, "output", "");
		char *clipped, *trimmed;
		size_t n;

		if (i >= 3)
			break;
		clipped = clip_head_tail(text, budgets[i]);
		trimmed = clipped;
		while (isspace((unsigned char)*trimmed))
			trimmed++;
		n = strlen(trimmed);
		while (n && isspace((unsigned char)trimmed[n - 1]))
			trimmed[--n] = '\0';
		if (n)
			sl_buf_addf(&b, "### %s\n\n```\n%s\n```\n\n",
				    labels[i], trimmed);
		free(clipped);
		i++;
	}
out:
	cJSON_Delete(job);
	cJSON_Delete(res);
	if (!b.len)
		sl_buf_adds(&b, "(no evidence gathered)");
	return sl_buf_detach(&b);
}

int sl_phase_scrutinize(const struct sl_phase_ctx *pc, const cJSON *spec,
			const cJSON *plan, const char *feedback,
			const char *report, cJSON **verdict,
			struct sbxloop_error *err)
{
	cJSON *vars = base_vars(pc), *cmds;
	const char *got;
	int rc;

	task_vars(vars, spec);
	var_take(vars, "plan_steps",
		 render_list(cJSON_GetObjectItemCaseSensitive(plan, "steps"),
			     "(no steps)"));
	var_take(vars, "feedback",
		 sl_clip(feedback && *feedback ? feedback : "(none)"));
	var_take(vars, "report",
		 sl_clip(report && *report ? report
					   : "(executor produced no report)"));
	var_take(vars, "evidence", gather_evidence(pc));
	cmds = verify_commands(spec, plan);
	var_take(vars, "verify_commands",
		 render_list(cmds, "(no verify commands)"));
	cJSON_Delete(cmds);
	rc = critic(pc, "scrutinize", "scrutinizer", vars, validate_scrutiny,
		    "pass", "revise", verdict, err);
	cJSON_Delete(vars);
	if (rc < 0)
		return rc;
	got = json_str(*verdict, "verdict", "");
	if (strcmp(got, "pass") && strcmp(got, "revise")) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "scrutinize returned the verdict '%s' (expected "
			      "pass or revise)",
			      got);
		cJSON_Delete(*verdict);
		*verdict = NULL;
	}
	return rc;
}

int sl_phase_validate(const struct sl_phase_ctx *pc, const cJSON *spec,
		      const char *verify_results, cJSON **verdict,
		      struct sbxloop_error *err)
{
	cJSON *vars = base_vars(pc);
	const char *got;
	int rc;

	task_vars(vars, spec);
	var_set(vars, "verify_results", verify_results);
	rc = critic(pc, "validate", "validator", vars, validate_validation,
		    "accept", "reject", verdict, err);
	cJSON_Delete(vars);
	if (rc < 0)
		return rc;
	got = json_str(*verdict, "verdict", "");
	if (strcmp(got, "accept") && strcmp(got, "reject")) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "validate returned the verdict '%s' (expected "
			      "accept or reject)",
			      got);
		cJSON_Delete(*verdict);
		*verdict = NULL;
	}
	return rc;
}

/* ---- VERIFY ------------------------------------------------------------- */

int sl_phase_verify(const struct sl_phase_ctx *pc, const cJSON *spec,
		    const cJSON *plan, cJSON **out, struct sbxloop_error *err)
{
	struct sl_buf transcript = SL_BUF_INIT, failures = SL_BUF_INIT;
	cJSON *cmds = verify_commands(spec, plan), *job = NULL, *res = NULL;
	const cJSON *it;
	const char *type, *msg;
	double per = job_timeout(pc->core);
	int n = cJSON_GetArraySize(cmds), failed = 0, rc = 0;
	char *fb;

	*out = NULL;
	if (n == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddBoolToObject(*out, "passed", 1);
		cJSON_AddStringToObject(*out, "feedback", "");
		cJSON_AddStringToObject(*out, "results",
					"(no verify commands)");
		cJSON_AddNumberToObject(*out, "failed", 0);
		goto out;
	}
	job = cJSON_CreateObject();
	cJSON_AddStringToObject(job, "kind", "shell.batch");
	cJSON_AddNumberToObject(job, "timeout_s", per * n);
	cJSON_AddNumberToObject(job, "command_timeout_s", per);
	cJSON_AddStringToObject(job, "cwd", pc->info->workdir);
	cJSON_AddItemToObject(job, "commands", cJSON_Duplicate(cmds, 1));
	rc = submit(pc, job, "verifier", &res, err);
	if (rc < 0)
		goto out;
	if (!result_ok(res)) {
		result_error(res, &type, &msg);
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "verify batch job failed (%s): %s", type, msg);
		goto out;
	}
	cJSON_ArrayForEach (
		it, cJSON_GetObjectItemCaseSensitive(res, "output_json")) {
		const char *cmd = json_str(it, "command", "?");
		const char *text = json_str(it, "output", "");
		const cJSON *code =
			cJSON_GetObjectItemCaseSensitive(it, "exit_code");
		int c = cJSON_IsNumber(code) ? code->valueint : -1;

		if (transcript.len)
			sl_buf_adds(&transcript, "\n\n");
		sl_buf_addf(&transcript, "$ %s\n(exit %d)\n%s", cmd, c, text);
		if (c != 0) {
			if (failures.len)
				sl_buf_adds(&failures, "\n\n");
			sl_buf_addf(
				&failures,
				"verify command failed: `%s` (exit %d)\n%s",
				cmd, c, text);
			failed++;
		}
	}
	*out = cJSON_CreateObject();
	cJSON_AddBoolToObject(*out, "passed", failed == 0);
	fb = sl_clip(sl_buf_str(&failures));
	cJSON_AddStringToObject(*out, "feedback", fb);
	free(fb);
	cJSON_AddStringToObject(*out, "results", sl_buf_str(&transcript));
	cJSON_AddNumberToObject(*out, "failed", failed);
out:
	sl_buf_release(&transcript);
	sl_buf_release(&failures);
	cJSON_Delete(cmds);
	cJSON_Delete(job);
	cJSON_Delete(res);
	return rc;
}

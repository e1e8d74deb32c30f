/*
 * Provisioning of a run's sandbox pair (UPSTREAM.md 8.4, 8.5, 8.7). Owns
 * the token check that comes before any sandbox, the creation of the
 * agent sandbox and of the github sandbox (only when github.repo is
 * set), the walk of the secret strategy chain that hands each sandbox
 * its own token and nothing else, and the teardown and rollback that
 * revoke every provided secret and remove both sandboxes. The engine is
 * its only caller; sl_chain_names() also serves the engine's policy
 * granter chain.
 *
 * Credential split: the model token is provided to the agent sandbox
 * only (bound to its token-exchange host), the GitHub token to the
 * github sandbox only (sbx's `github` service). No token value goes into
 * an event, a log line or an error; the tokens are registered for
 * redaction at startup (redact.c) and again by the strategies.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>

#include "engine/provision.h"
#include "common/agents.h"
#include "engine/egress.h"
#include "engine/ids.h"
#include "host/events.h"
#include "phases/phases.h"
#include "common/proc.h"
#include "phases/worker_client.h"
#include "host/redact.h"
#include "common/util.h"

#define ROLE_AGENT 0
#define ROLE_GITHUB 1
/* the pair, then one agent sandbox per lane (sandbox.lanes: per-lane) */
#define LANE_BASE 2
#define MAX_BOXES (LANE_BASE + SL_PAIR_LANES_MAX)
#define MAX_PROVIDED (2 * MAX_BOXES)

/* Not a chain index: the core's own env file (no strategy configured). */
#define WORKER_ENV SIZE_MAX
#define WORKER_ENV_NAME "worker-env"

#define GH_ENV SL_GH_TOKEN_ENV
#define GH_ENV_ALT SL_GH_TOKEN_ENV_ALT
#define GH_SERVICE "github"

struct box {
	char name[SBXLOOP_NAME_MAX];
	const char *role; /* what the provider makes: "agent" | "github" */
	char label[16];   /* what callers ask for: role, or "laneN" */
	struct sbxloop_sandbox_info info;
	int created;
	int secret_outside; /* its token went in with never_in_sandbox */
};

/* One secret a strategy (or the core's env file) took; for revoke. */
struct provided {
	size_t strategy; /* index in the chain, or WORKER_ENV */
	int box;
	const char *env; /* static strings */
	const char *bind_host;
	const char *service;
};

struct sl_pair {
	struct sl_core *core;
	char run_id[32];
	pthread_mutex_t lock;
	const char **chain_names;
	struct sl_instance *chain;
	size_t n_chain;
	struct box boxes[MAX_BOXES];
	size_t n_boxes; /* of the pair; lane boxes sit past LANE_BASE */
	struct provided provided[MAX_PROVIDED];
	size_t n_provided;
	/* the tokens, copied at the check and wiped on free */
	int checked;
	const struct sl_model_token *model; /* of agent.preset, or NULL */
	const char *model_skip;             /* why none is handed in */
	int github_only;                    /* `deliver`: no agent sandbox */
	char *model_value;                  /* NULL: none is handed in */
	char *gh_value;
	const char *repo;
};

/* ------------------------------------------------------------ chains */

/* Does module `m` also provide a sandbox provider? */
static int module_has_provider(const struct sl_module *m)
{
	size_t i;

	for (i = 0; m && m->desc && i < m->desc->n_components; i++)
		if (m->desc->components[i].kind == SBXLOOP_KIND_SANDBOX)
			return 1;
	return 0;
}

const char **sl_chain_names(const struct sl_core *core, const char *path,
			    enum sbxloop_kind kind, int warn, size_t *n)
{
	const struct sl_config_value *v = sl_config_get(core->cfg, path);
	size_t len = sl_config_list_len(core->cfg, path), i, k = 0;
	const char **names = sl_xcalloc(len + 1, sizeof(*names));
	const struct sl_module *own = core->sandbox.module;

	for (i = 0; i < len; i++) {
		const char *name = sl_config_list_item(core->cfg, path, i);
		const struct sl_module *m = NULL;

		/* a provider's own strategies act on its sandboxes only */
		if (sl_registry_find(&core->reg, kind, name, &m) && own &&
		    m != own && module_has_provider(m)) {
			if (warn && v && v->source != SL_SRC_DEFAULT)
				sl_log(SBXLOOP_LOG_WARN,
				       "%s: '%s' of module '%s' works only "
				       "with that module's sandbox provider; "
				       "skipped with provider '%s'",
				       path, name, m->name, own->name);
			continue;
		}
		names[k++] = name;
	}
	names[k] = NULL;
	*n = k;
	return names;
}

/* ------------------------------------------------------------ lifecycle */

struct sl_pair *sl_pair_new(struct sl_core *core)
{
	struct sl_pair *p = sl_xcalloc(1, sizeof(*p));

	p->core = core;
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

static void wipe_free(char *s)
{
	if (s) {
		volatile char *v = s;

		while (*v)
			*v++ = '\0';
	}
	free(s);
}

static void chain_close(struct sl_pair *p)
{
	size_t i;

	for (i = 0; i < p->n_chain; i++)
		sl_instance_destroy(&p->chain[i]);
	free(p->chain);
	free(p->chain_names);
	p->chain = NULL;
	p->chain_names = NULL;
	p->n_chain = 0;
}

void sl_pair_free(struct sl_pair *p)
{
	if (!p)
		return;
	chain_close(p);
	wipe_free(p->model_value);
	wipe_free(p->gh_value);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static int cancelled(const volatile sig_atomic_t *cancel)
{
	return cancel && *cancel;
}

/* ------------------------------------------------------------ tokens */

static const char *env_value(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int sl_pair_check_tokens(struct sl_pair *p, struct sbxloop_error *err)
{
	const struct sl_config *cfg = p->core->cfg;
	const char *preset = sl_config_str(cfg, "agent.preset");
	const char *backend = sl_config_str(cfg, "agent.backend");
	const char **names;
	size_t n;

	wipe_free(p->model_value);
	wipe_free(p->gh_value);
	p->model_value = p->gh_value = NULL;
	p->model = NULL;
	p->model_skip = NULL;
	p->checked = 0;

	p->model = sl_model_token_for(preset);
	if (p->github_only) {
		p->model_skip = "only the github sandbox is made";
		goto github;
	}
	/* with nothing to hand it over and no agent CLI, none is needed */
	names = sl_chain_names(p->core, "plugins.secrets", SBXLOOP_KIND_SECRET,
			       0, &n);
	free(names);
	if (n == 0 && backend && strcmp(backend, "command") != 0) {
		p->model_skip = "the script backend needs no model token and "
				"no secret strategy of plugins.secrets works "
				"with this provider";
	} else if (!p->model) {
		p->model_skip = "the agent preset names no model token "
				"sbxloop knows; the agent CLI must find its "
				"own credentials";
		sl_log(SBXLOOP_LOG_WARN,
		       "agent preset '%s' names no model token sbxloop "
		       "knows; none is handed to the agent sandbox",
		       preset ? preset : "");
	} else if (!env_value(p->model->env)) {
		return sl_error(err, SBXLOOP_EINVAL,
				"%s is not set: the agent sandbox needs the "
				"model token of agent preset '%s' (%s); set "
				"it in the environment or in .env",
				p->model->env, p->model->preset,
				p->model->advice);
	} else {
		p->model_value = sl_xstrdup(env_value(p->model->env));
		sl_secret_register(p->model_value);
	}

github:
	p->repo = sl_config_str(cfg, "github.repo");
	if (p->repo && !*p->repo)
		p->repo = NULL;
	if (!p->repo && p->github_only)
		return sl_error(err, SBXLOOP_EINVAL,
				"no github.repo is set: there is no "
				"repository to act on (pass --repo)");
	if (p->repo) {
		const char *v = env_value(GH_ENV);

		if (!v)
			v = env_value(GH_ENV_ALT);
		if (!v) {
			wipe_free(p->model_value);
			p->model_value = NULL;
			return sl_error(err, SBXLOOP_EINVAL,
					"%s (or %s) is not set: github.repo "
					"is '%s', so the github sandbox needs "
					"a GitHub token; set it in the "
					"environment or in .env, or unset "
					"github.repo",
					GH_ENV, GH_ENV_ALT, p->repo);
		}
		p->gh_value = sl_xstrdup(v);
		sl_secret_register(p->gh_value);
	}
	p->checked = 1;
	return 0;
}

/* ------------------------------------------------------------ events */

static void emit_box(struct sl_pair *p, const char *type, const struct box *b,
		     int with_info)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "name", b->name);
	cJSON_AddStringToObject(d, "role", b->role);
	if (strcmp(b->label, b->role) != 0)
		cJSON_AddStringToObject(d, "lane", b->label);
	if (with_info) {
		cJSON_AddStringToObject(d, "workdir", b->info.workdir);
		cJSON_AddBoolToObject(d, "mounted", b->info.mounted);
	}
	sl_emit(p->core, type, NULL, d);
}

/* sandbox.secret: which strategy took which variable; never the value. */
static void emit_secret(struct sl_pair *p, const struct box *b,
			const char *env, const char *strategy, int never_in,
			const char *message)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "name", b->name);
	cJSON_AddStringToObject(d, "role", b->role);
	cJSON_AddStringToObject(d, "env", env);
	cJSON_AddStringToObject(d, "strategy", strategy);
	cJSON_AddBoolToObject(d, "never_in_sandbox", never_in);
	cJSON_AddStringToObject(d, "message", message);
	sl_emit(p->core, SBXLOOP_EV_SANDBOX_SECRET, NULL, d);
}

/* ------------------------------------------------------ the core's env */

/* 'value' for sh, with embedded quotes closed and reopened. */
static void add_quoted(struct sl_buf *b, const char *value)
{
	sl_buf_addc(b, '\'');
	for (; *value; value++) {
		if (*value == '\'')
			sl_buf_adds(b, "'\\''");
		else
			sl_buf_addc(b, *value);
	}
	sl_buf_addc(b, '\'');
}

/*
 * With no strategy configured the core writes the env file the worker
 * loads by default ($HOME/.sbxloop/env.sh, mode 0600) itself: the value
 * travels on the exec's standard input, never in its argv.
 */
static int worker_env(struct sl_pair *p, const struct box *b,
		      const char *const *names, const char *value,
		      struct sbxloop_error *err)
{
	static const char write_sh[] =
		"umask 077 && mkdir -p \"$HOME/.sbxloop\" && "
		"cat > \"$HOME/.sbxloop/env.sh\" && "
		"chmod 600 \"$HOME/.sbxloop/env.sh\"";
	static const char rm_sh[] = "rm -f \"$HOME/.sbxloop/env.sh\"";
	const struct sbxloop_sandbox_ops *ops = p->core->sandbox.ops;
	const char *argv[] = {"sh", "-c", value ? write_sh : rm_sh, NULL};
	struct sbxloop_exec_spec spec;
	struct sbxloop_proc_result res;
	struct sl_buf text = SL_BUF_INIT;
	size_t i;
	int rc;

	sl_buf_adds(&text, "# written by sbxloop (no secret strategy)\n");
	for (i = 0; value && names[i]; i++) {
		sl_buf_addf(&text, "export %s=", names[i]);
		add_quoted(&text, value);
		sl_buf_addc(&text, '\n');
	}
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.stdin_data = value ? sl_buf_str(&text) : NULL;
	spec.stdin_len = value ? text.len : 0;
	spec.timeout_s = 120;
	memset(&res, 0, sizeof(res));
	res.struct_size = sizeof(res);
	rc = ops->exec(p->core->sandbox.ctx, b->name, &spec, &res, err);
	if (rc == 0 && res.exit_code != 0)
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot %s the env file in sandbox '%s' "
			      "(exit %d)",
			      value ? "write" : "remove", b->name,
			      res.exit_code);
	sl_proc_result_clear(&res);
	if (text.buf)
		memset(text.buf, 0, text.len);
	sl_buf_release(&text);
	return rc;
}

/* ------------------------------------------------------------ secrets */

static void request(struct sbxloop_secret_req *req, const struct box *b,
		    const char *env, const char *value, const char *bind_host,
		    const char *service)
{
	memset(req, 0, sizeof(*req));
	req->struct_size = sizeof(*req);
	req->sandbox = b->name;
	req->role = b->role;
	req->env_name = env;
	req->value = value;
	req->bind_host = bind_host;
	req->service = service;
}

static void remember(struct sl_pair *p, size_t strategy, int box,
		     const char *env, const char *bind_host,
		     const char *service)
{
	struct provided *pv;

	if (p->n_provided == MAX_PROVIDED)
		return; /* one token per sandbox: cannot happen */
	pv = &p->provided[p->n_provided++];
	pv->strategy = strategy;
	pv->box = box;
	pv->env = env;
	pv->bind_host = bind_host;
	pv->service = service;
}

static int open_chain(struct sl_pair *p, struct sbxloop_error *err)
{
	size_t n, i;
	int rc;

	if (p->chain_names)
		return 0;
	p->chain_names = sl_chain_names(p->core, "plugins.secrets",
					SBXLOOP_KIND_SECRET, 1, &n);
	p->chain = sl_xcalloc(n ? n : 1, sizeof(*p->chain));
	for (i = 0; i < n; i++) {
		rc = sl_core_instantiate(p->core, SBXLOOP_KIND_SECRET,
					 p->chain_names[i], &p->chain[i], err);
		if (rc < 0)
			return rc;
		p->n_chain++;
	}
	return 0;
}

/*
 * A strategy failed with another one after it: say so (warning and a
 * sandbox.secret_env_fallback event) before handing over.
 */
static void fall_back(struct sl_pair *p, const struct box *b, const char *env,
		      size_t failed, const char *why)
{
	const char *next = p->chain_names[failed + 1];
	char *msg =
		sl_xasprintf("secret strategy %s failed to hand %s to "
			     "sandbox '%s': %s; trying %s",
			     p->chain_names[failed], env, b->name, why, next);
	cJSON *d = cJSON_CreateObject();

	sl_log(SBXLOOP_LOG_WARN, "%s", msg);
	cJSON_AddStringToObject(d, "name", b->name);
	cJSON_AddStringToObject(d, "role", b->role);
	cJSON_AddStringToObject(d, "env", env);
	cJSON_AddStringToObject(d, "strategy", p->chain_names[failed]);
	cJSON_AddStringToObject(d, "next", next);
	cJSON_AddStringToObject(d, "message", msg);
	sl_emit(p->core, SBXLOOP_EV_SANDBOX_SECRET_FALLBACK, NULL, d);
	free(msg);
}

/*
 * Hand `value` to sandbox `box` as `env`: the first strategy of the
 * chain that works takes it. SBXLOOP_EUNSUPPORTED passes to the next
 * one quietly (the strategy explained itself); any other failure passes
 * with a warning and an event, except SBXLOOP_ESTATE: a strategy that
 * refuses in this state (sbx-proxy's strict verdict, or a visibility
 * probe with no clean answer) stops provisioning rather than downgrade.
 */
static int provide(struct sl_pair *p, int box, const char *env,
		   const char *value, const char *bind_host,
		   const char *service, struct sbxloop_error *err)
{
	const struct box *b = &p->boxes[box];
	struct sbxloop_secret_req req;
	struct sbxloop_error serr = {0, ""};
	char last[SBXLOOP_ERROR_MAX] = "";
	size_t i;
	int rc;

	if (p->n_chain == 0) {
		const char *names[] = {env, NULL, NULL};
		char *msg;

		if (service && !strcmp(env, GH_ENV))
			names[1] = GH_ENV_ALT;
		rc = worker_env(p, b, names, value, err);
		if (rc < 0)
			return rc;
		remember(p, WORKER_ENV, box, env, bind_host, service);
		p->boxes[box].secret_outside = 0;
		msg = sl_xasprintf("no secret strategy of plugins.secrets "
				   "works with this provider: %s is in the "
				   "env file the worker loads "
				   "($HOME/.sbxloop/env.sh, mode 0600) and "
				   "reaches the agent through its "
				   "environment; the provider has no proxy "
				   "to keep it outside",
				   env);
		emit_secret(p, b, env, WORKER_ENV_NAME, 0, msg);
		free(msg);
		return 0;
	}
	request(&req, b, env, value, bind_host, service);
	for (i = 0; i < p->n_chain; i++) {
		const struct sbxloop_secret_ops *ops = p->chain[i].ops;
		struct sbxloop_secret_outcome out;

		memset(&out, 0, sizeof(out));
		out.struct_size = sizeof(out);
		serr.code = 0;
		serr.message[0] = '\0';
		rc = ops->provide(p->chain[i].ctx, &req, &out, &serr);
		if (rc == SBXLOOP_EUNSUPPORTED) {
			snprintf(last, sizeof(last), "%s: %s",
				 p->chain_names[i], serr.message);
			continue;
		}
		if (rc < 0 && rc != SBXLOOP_ESTATE && i + 1 < p->n_chain) {
			fall_back(p, b, env, i, serr.message);
			snprintf(last, sizeof(last), "%s: %s",
				 p->chain_names[i], serr.message);
			continue;
		}
		if (rc < 0)
			return sl_error(err, rc,
					"cannot hand %s to sandbox '%s' "
					"(secret strategy %s): %s",
					env, b->name, p->chain_names[i],
					serr.message);
		remember(p, i, box, env, bind_host, service);
		p->boxes[box].secret_outside = out.never_in_sandbox != 0;
		emit_secret(p, b, env,
			    *out.strategy ? out.strategy : p->chain_names[i],
			    out.never_in_sandbox, out.detail);
		return 0;
	}
	return sl_error(err, SBXLOOP_EUNSUPPORTED,
			"no secret strategy of plugins.secrets could hand "
			"%s to sandbox '%s' (last: %s)",
			env, b->name, last);
}

static void revoke_one(struct sl_pair *p, const struct provided *pv)
{
	const struct box *b = &p->boxes[pv->box];
	struct sbxloop_secret_req req;
	struct sbxloop_error err = {0, ""};
	const char *strategy;
	cJSON *d;
	int rc;

	if (pv->strategy == WORKER_ENV) {
		const char *none[] = {NULL};

		strategy = WORKER_ENV_NAME;
		rc = worker_env(p, b, none, NULL, &err);
	} else {
		const struct sbxloop_secret_ops *ops =
			p->chain[pv->strategy].ops;

		strategy = p->chain_names[pv->strategy];
		/* revoke needs no value: none is passed back in */
		request(&req, b, pv->env, "", pv->bind_host, pv->service);
		rc = ops->revoke(p->chain[pv->strategy].ctx, &req, &err);
	}
	if (rc < 0)
		sl_log(SBXLOOP_LOG_WARN,
		       "cannot revoke %s in sandbox '%s' (%s): %s", pv->env,
		       b->name, strategy, err.message);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", b->name);
	cJSON_AddStringToObject(d, "role", b->role);
	cJSON_AddStringToObject(d, "env", pv->env);
	cJSON_AddStringToObject(d, "strategy", strategy);
	if (rc < 0)
		cJSON_AddStringToObject(d, "error", err.message);
	sl_emit(p->core, SBXLOOP_EV_SANDBOX_SECRET_REVOKED, NULL, d);
}

/* ------------------------------------------------------------ sandboxes */

/*
 * The files the script backend's jobs share with the host: the scenario
 * and its cursor (created here so it can be bound), never the directory
 * holding them, which may hold the config and the state dir too. Fills
 * out[0..1] (caller frees) with another backend left NULL.
 */
static void script_files(const struct sl_core *core, char *out[2])
{
	const char *backend = sl_config_str(core->cfg, "agent.backend");
	char *path;
	int fd;

	out[0] = out[1] = NULL;
	if (!backend || strcmp(backend, "script") != 0)
		return;
	path = sl_phase_script_path(core);
	if (!path || path[0] != '/') {
		free(path);
		return;
	}
	out[0] = path;
	out[1] = sl_xasprintf("%s.cursor", path);
	fd = open(out[1], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

/*
 * The critics (SCRUTINIZE, VALIDATE) run with the workspace read-only
 * where the provider can; one that cannot is said so once, as a warning
 * and a sandbox.critics_unconfined event.
 */
static void warn_unconfined_critics(struct sl_pair *p, const struct box *b)
{
	const char *provider = sl_config_str(p->core->cfg, "plugins.sandbox");
	const char *why = "the sandbox provider cannot make the workspace "
			  "read-only for one job";
	cJSON *d;

	if (b->info.capabilities & SBXLOOP_CAP_WORKSPACE_READ_ONLY)
		return;
	sl_log(SBXLOOP_LOG_WARN,
	       "critics are not confined: sandbox provider '%s' cannot make "
	       "the workspace read-only for a job, so scrutinize and "
	       "validate could change it%s",
	       provider ? provider : "?",
	       provider && strcmp(provider, "local") == 0
		       ? " (local.isolation: bwrap can)"
		       : "");
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", b->name);
	cJSON_AddStringToObject(d, "role", b->role);
	cJSON_AddStringToObject(d, "provider", provider ? provider : "");
	cJSON_AddStringToObject(d, "message", why);
	sl_emit(p->core, SBXLOOP_EV_SANDBOX_CRITICS_UNCONFINED, NULL, d);
}

static int box_create(struct sl_pair *p, int box, const char *workspace,
		      const char *worker, struct sbxloop_error *err)
{
	const struct sbxloop_sandbox_ops *ops = p->core->sandbox.ops;
	struct box *b = &p->boxes[box];
	struct sbxloop_sandbox_spec spec;
	struct sbxloop_error ignored = {0, ""};
	char **seed, *shared[3] = {NULL, NULL, NULL};
	int rc;

	b->role = box == ROLE_GITHUB ? "github" : "agent";
	if (box < LANE_BASE)
		snprintf(b->label, sizeof(b->label), "%s", b->role);
	else
		snprintf(b->label, sizeof(b->label), "lane%d",
			 box - LANE_BASE + 1);
	if (sl_sandbox_name(b->name, sizeof(b->name), p->run_id, b->label))
		return sl_error(err, SBXLOOP_EINVAL,
				"run id '%s' is too long for a sandbox name",
				p->run_id);
	seed = box == ROLE_GITHUB ? sl_egress_github_seed(p->core->cfg)
				  : sl_egress_agent_seed(p->core->cfg);
	if (box != ROLE_GITHUB)
		script_files(p->core, shared);
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = b->name;
	spec.role = b->role;
	spec.run_id = p->run_id;
	spec.workspace = workspace;
	spec.worker_path = worker;
	spec.allow_domains = (const char *const *)seed;
	spec.shared_dirs = (const char *const *)shared;
	memset(&b->info, 0, sizeof(b->info));
	b->info.struct_size = sizeof(b->info);
	emit_box(p, SBXLOOP_EV_SANDBOX_PROVISION_START, b, 0);
	/* a sandbox left by a killed process is never reused */
	ops->sandbox_remove(p->core->sandbox.ctx, b->name, &ignored);
	rc = ops->sandbox_create(p->core->sandbox.ctx, &spec, &b->info, err);
	sl_egress_list_free(seed);
	free(shared[0]);
	free(shared[1]);
	if (rc < 0) {
		char msg[SBXLOOP_ERROR_MAX];

		snprintf(msg, sizeof(msg), "%s", err->message);
		return sl_error(err, rc, "cannot create sandbox '%s': %s",
				b->name, msg);
	}
	b->created = 1;
	if (box == ROLE_AGENT)
		warn_unconfined_critics(p, b);
	return 0;
}

/* Remove one sandbox the pair made (its secrets revoked first). */
static void box_remove(struct sl_pair *p, struct box *b)
{
	const struct sbxloop_sandbox_ops *ops = p->core->sandbox.ops;
	struct sbxloop_error err = {0, ""};
	cJSON *d;

	if (!b->created)
		return;
	b->created = 0;
	if (ops->sandbox_remove(p->core->sandbox.ctx, b->name, &err) < 0) {
		sl_log(SBXLOOP_LOG_WARN, "cannot remove sandbox '%s': %s",
		       b->name, err.message);
		return;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", b->name);
	cJSON_AddStringToObject(d, "role", b->role);
	if (strcmp(b->label, b->role) != 0)
		cJSON_AddStringToObject(d, "lane", b->label);
	sl_emit(p->core, SBXLOOP_EV_SANDBOX_REMOVED, NULL, d);
}

/* Revoke what was provided to box `box` only, latest first. */
static void revoke_box(struct sl_pair *p, int box)
{
	size_t i = p->n_provided, k;

	while (i-- > 0) {
		if (p->provided[i].box != box)
			continue;
		revoke_one(p, &p->provided[i]);
		for (k = i; k + 1 < p->n_provided; k++)
			p->provided[k] = p->provided[k + 1];
		p->n_provided--;
	}
}

/* Revoke, then remove; the caller holds the lock. */
static void down_locked(struct sl_pair *p)
{
	size_t i;

	while (p->n_provided > 0)
		revoke_one(p, &p->provided[--p->n_provided]);
	for (i = 0; i < MAX_BOXES; i++)
		box_remove(p, &p->boxes[i]);
}

static int provide_role(struct sl_pair *p, int box, struct sbxloop_error *err)
{
	struct box *b = &p->boxes[box];

	b->secret_outside = 0;
	if (box == ROLE_GITHUB)
		return provide(p, box, GH_ENV, p->gh_value, NULL, GH_SERVICE,
			       err);
	/* a lane's agent sandbox gets the model token as the run's does */
	if (!p->model_value) {
		b->secret_outside = 1;
		emit_secret(p, b, p->model ? p->model->env : "", "none", 1,
			    p->model_skip);
		return 0;
	}
	return provide(p, box, p->model->env, p->model_value,
		       p->model->bind_host, NULL, err);
}

int sl_pair_up(struct sl_pair *p, const char *run_id, const char *workspace,
	       const volatile sig_atomic_t *cancel, struct sbxloop_error *err)
{
	char *worker = NULL;
	int rc = 0, box;

	pthread_mutex_lock(&p->lock);
	snprintf(p->run_id, sizeof(p->run_id), "%s", run_id);
	if (!p->core->sandbox.ops) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "no sandbox provider is active");
		goto out;
	}
	if (!p->checked) {
		rc = sl_pair_check_tokens(p, err);
		if (rc < 0)
			goto out;
	}
	/* a strategy that cannot start fails before any sandbox exists */
	rc = open_chain(p, err);
	if (rc < 0)
		goto out;
	worker = sl_worker_path(p->core);
	p->n_boxes = p->repo ? 2 : 1;
	for (box = p->github_only ? ROLE_GITHUB : 0; box < (int)p->n_boxes;
	     box++) {
		if (cancelled(cancel)) {
			rc = sl_error(err, SBXLOOP_ECANCELLED,
				      "provisioning was interrupted");
			break;
		}
		rc = box_create(p, box, workspace, worker, err);
		if (rc < 0)
			break;
		rc = provide_role(p, box, err);
		if (rc < 0)
			break;
		emit_box(p, SBXLOOP_EV_SANDBOX_READY, &p->boxes[box], 1);
	}
	if (rc < 0)
		down_locked(p);
out:
	pthread_mutex_unlock(&p->lock);
	free(worker);
	return rc;
}

/* The provider's list: names of this run's lane sandboxes. */
struct strays {
	char prefix[SBXLOOP_NAME_MAX];
	char names[SL_PAIR_LANES_MAX][SBXLOOP_NAME_MAX];
	size_t n;
};

static void stray_cb(void *user, const struct sbxloop_sandbox_entry *entry)
{
	struct strays *s = user;
	const char *num;
	char *end;
	long k;

	if (!entry->name || !sl_starts_with(entry->name, s->prefix) ||
	    s->n == SL_PAIR_LANES_MAX)
		return;
	num = entry->name + strlen(s->prefix);
	k = strtol(num, &end, 10);
	if (end == num || *end || k < 1 || k > SL_PAIR_LANES_MAX ||
	    strlen(entry->name) >= SBXLOOP_NAME_MAX)
		return;
	memcpy(s->names[s->n++], entry->name, strlen(entry->name) + 1);
}

/*
 * Lane sandboxes of this run that this process did not make: a process
 * killed with -9 left them (sandbox.lanes: per-lane), and the resumed
 * run needed fewer lanes than it had. Each is told to forget the model
 * token by every strategy of the chain (they hold no record of which
 * took it), then removed, with sandbox.removed {lane, stray}.
 */
static void sweep_lanes(struct sl_pair *p)
{
	const struct sbxloop_sandbox_ops *ops = p->core->sandbox.ops;
	const char *mode = sl_config_str(p->core->cfg, "sandbox.lanes");
	struct sbxloop_error err = {0, ""};
	struct strays *s;
	size_t i, k;

	if (!ops || !ops->list || !p->run_id[0] || !mode ||
	    strcmp(mode, "per-lane") != 0)
		return;
	s = sl_xcalloc(1, sizeof(*s));
	if (sl_sandbox_name(s->prefix, sizeof(s->prefix), p->run_id, "lane") ||
	    ops->list(p->core->sandbox.ctx, s->prefix, stray_cb, s, &err) <
		    0) {
		if (err.message[0])
			sl_log(SBXLOOP_LOG_WARN,
			       "cannot look for lane sandboxes a killed run "
			       "left: %s",
			       err.message);
		free(s);
		return;
	}
	for (i = 0; i < s->n; i++) {
		struct box b;
		cJSON *d;

		memset(&b, 0, sizeof(b));
		memcpy(b.name, s->names[i], sizeof(b.name));
		b.role = "agent";
		for (k = 0; p->model && k < p->n_chain; k++) {
			struct sbxloop_secret_req req;
			struct sbxloop_error ignored = {0, ""};
			const struct sbxloop_secret_ops *sops =
				p->chain[k].ops;

			request(&req, &b, p->model->env, "",
				p->model->bind_host, NULL);
			sops->revoke(p->chain[k].ctx, &req, &ignored);
		}
		err.message[0] = '\0';
		if (ops->sandbox_remove(p->core->sandbox.ctx, b.name, &err) <
		    0) {
			sl_log(SBXLOOP_LOG_WARN,
			       "cannot remove sandbox '%s' a killed run left: "
			       "%s",
			       b.name, err.message);
			continue;
		}
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", b.name);
		cJSON_AddStringToObject(d, "role", b.role);
		/* the prefix ends in "lane": its last four bytes and N */
		cJSON_AddStringToObject(d, "lane",
					b.name + strlen(s->prefix) - 4);
		cJSON_AddBoolToObject(d, "stray", 1);
		sl_emit(p->core, SBXLOOP_EV_SANDBOX_REMOVED, NULL, d);
	}
	free(s);
}

void sl_pair_down(struct sl_pair *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	down_locked(p);
	sweep_lanes(p);
	pthread_mutex_unlock(&p->lock);
}

const struct sbxloop_sandbox_info *sl_pair_agent(const struct sl_pair *p)
{
	return p && p->n_boxes && p->boxes[ROLE_AGENT].created
		       ? &p->boxes[ROLE_AGENT].info
		       : NULL;
}

void sl_pair_github_only(struct sl_pair *p)
{
	p->github_only = 1;
}

int sl_pair_box(struct sl_pair *p, const char *role,
		struct sbxloop_sandbox_info *out)
{
	size_t i;
	int found = 0;

	if (!p || !role)
		return 0;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < MAX_BOXES && !found; i++)
		if (p->boxes[i].created && !strcmp(p->boxes[i].label, role)) {
			*out = p->boxes[i].info;
			found = 1;
		}
	pthread_mutex_unlock(&p->lock);
	return found;
}

size_t sl_pair_names(const struct sl_pair *p, const char **names, size_t max)
{
	size_t i, n = 0;

	for (i = 0; p && i < MAX_BOXES && n < max; i++)
		if (p->boxes[i].created)
			names[n++] = p->boxes[i].name;
	return n;
}

void sl_pair_use_canaries(struct sl_pair *p, const char *model, const char *gh)
{
	const char *preset = sl_config_str(p->core->cfg, "agent.preset");

	wipe_free(p->model_value);
	wipe_free(p->gh_value);
	p->model = sl_model_token_for(preset);
	if (!p->model)
		p->model = &sl_model_tokens[0];
	p->model_skip = NULL;
	p->model_value = sl_xstrdup(model);
	p->gh_value = sl_xstrdup(gh);
	sl_secret_register(p->model_value);
	sl_secret_register(p->gh_value);
	/* both sandboxes, whatever github.repo says: the split is probed */
	p->repo = "sbxloop-attest/canary";
	p->checked = 1;
}

const char *sl_pair_model_env(const struct sl_pair *p)
{
	return p && p->model ? p->model->env : NULL;
}

int sl_pair_secret_outside(struct sl_pair *p, const char *role)
{
	size_t i;
	int outside = 0;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < MAX_BOXES; i++)
		if (p->boxes[i].created && !strcmp(p->boxes[i].label, role))
			outside = p->boxes[i].secret_outside;
	pthread_mutex_unlock(&p->lock);
	return outside;
}

/* ------------------------------------------------------------ lanes */

int sl_pair_lane_up(struct sl_pair *p, size_t lane, const char *workspace,
		    const volatile sig_atomic_t *cancel,
		    struct sbxloop_sandbox_info *out,
		    struct sbxloop_error *err)
{
	int box = LANE_BASE + (int)lane;
	char *worker;
	int rc;

	if (lane >= SL_PAIR_LANES_MAX)
		return sl_error(err, SBXLOOP_EINVAL, "no lane %zu", lane + 1);
	pthread_mutex_lock(&p->lock);
	if (!p->checked || !p->n_boxes || !p->boxes[ROLE_AGENT].created) {
		pthread_mutex_unlock(&p->lock);
		return sl_error(err, SBXLOOP_ESTATE,
				"the run's sandboxes are not up");
	}
	if (p->boxes[box].created) {
		*out = p->boxes[box].info;
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	if (cancelled(cancel)) {
		pthread_mutex_unlock(&p->lock);
		return sl_error(err, SBXLOOP_ECANCELLED,
				"provisioning was interrupted");
	}
	worker = sl_worker_path(p->core);
	rc = box_create(p, box, workspace, worker, err);
	if (rc == 0)
		rc = provide_role(p, box, err);
	if (rc == 0) {
		emit_box(p, SBXLOOP_EV_SANDBOX_READY, &p->boxes[box], 1);
		*out = p->boxes[box].info;
	} else {
		revoke_box(p, box);
		box_remove(p, &p->boxes[box]);
	}
	pthread_mutex_unlock(&p->lock);
	free(worker);
	return rc;
}

void sl_pair_lane_down(struct sl_pair *p, size_t lane)
{
	int box = LANE_BASE + (int)lane;

	if (!p || lane >= SL_PAIR_LANES_MAX)
		return;
	pthread_mutex_lock(&p->lock);
	revoke_box(p, box);
	box_remove(p, &p->boxes[box]);
	pthread_mutex_unlock(&p->lock);
}

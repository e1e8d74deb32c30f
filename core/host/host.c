/*
 * The host services table and component instantiation. Plugins reach
 * the core only through the function pointers filled here; the table
 * carries a back pointer to the struct sl_core that owns it.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>

#include "host/core.h"
#include "common/proc.h"
#include "host/redact.h"
#include "host/store_guard.h"
#include "common/util.h"

static struct sl_core *core_of(const struct sbxloop_host *host)
{
	return host->core;
}

static void host_log(const struct sbxloop_host *host,
		     enum sbxloop_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sl_vlog(lvl, fmt, ap);
	va_end(ap);
}

static int host_error_set(const struct sbxloop_host *host,
			  struct sbxloop_error *err, int code, const char *fmt,
			  ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	sl_redact_inplace(err->message, sizeof(err->message));
	return code;
}

static const char *host_config_string(const struct sbxloop_host *host,
				      const char *path)
{
	return sl_config_str(core_of(host)->cfg, path);
}

static long long host_config_int(const struct sbxloop_host *host,
				 const char *path, long long dflt)
{
	return sl_config_int(core_of(host)->cfg, path, dflt);
}

static double host_config_double(const struct sbxloop_host *host,
				 const char *path, double dflt)
{
	return sl_config_double(core_of(host)->cfg, path, dflt);
}

static int host_config_bool(const struct sbxloop_host *host, const char *path,
			    int dflt)
{
	return sl_config_bool(core_of(host)->cfg, path, dflt);
}

static size_t host_config_list_len(const struct sbxloop_host *host,
				   const char *path)
{
	return sl_config_list_len(core_of(host)->cfg, path);
}

static const char *host_config_list_item(const struct sbxloop_host *host,
					 const char *path, size_t i)
{
	return sl_config_list_item(core_of(host)->cfg, path, i);
}

static _Thread_local const char *job_task, *job_phase;

void sl_core_job_context(const char *task_id, const char *phase)
{
	job_task = task_id;
	job_phase = phase;
}

/* data_json with the running job's task and phase, or NULL (unchanged). */
static char *with_job_context(const char *data_json)
{
	cJSON *d;
	char *out;

	if (!job_task && !job_phase)
		return NULL;
	d = cJSON_Parse(data_json ? data_json : "{}");
	if (!cJSON_IsObject(d) ||
	    cJSON_GetObjectItemCaseSensitive(d, "task_id")) {
		cJSON_Delete(d);
		return NULL;
	}
	if (job_task)
		cJSON_AddStringToObject(d, "task_id", job_task);
	if (job_phase && !cJSON_GetObjectItemCaseSensitive(d, "phase"))
		cJSON_AddStringToObject(d, "phase", job_phase);
	out = cJSON_PrintUnformatted(d);
	cJSON_Delete(d);
	return out;
}

static int host_emit(const struct sbxloop_host *host, const char *type,
		     const char *job_id, const char *data_json)
{
	struct sl_core *core = core_of(host);
	char *stamped;
	int rc;

	if (!core->emit)
		return 0;
	stamped = with_job_context(data_json);
	rc = core->emit(core, type, job_id, stamped ? stamped : data_json);
	free(stamped);
	return rc;
}

static const char *host_run_id(const struct sbxloop_host *host)
{
	return core_of(host)->run_id;
}

static const char *host_state_dir(const struct sbxloop_host *host)
{
	return sl_core_state_dir(core_of(host));
}

static int host_state_read_only(const struct sbxloop_host *host)
{
	return core_of(host)->state_read_only;
}

static int host_proc_run(const struct sbxloop_host *host,
			 const struct sbxloop_proc_spec *spec,
			 struct sbxloop_proc_result *res,
			 struct sbxloop_error *err)
{
	int rc = sl_proc_run(spec, res, err);

	if (rc && err)
		sl_redact_inplace(err->message, sizeof(err->message));
	return rc;
}

static void host_secret_register(const struct sbxloop_host *host,
				 const char *value)
{
	sl_secret_register(value);
}

static char *host_redact(const struct sbxloop_host *host, const char *text)
{
	return sl_redact(text);
}

static int host_sandbox_write_file(const struct sbxloop_host *host,
				   const char *sandbox, const char *path,
				   const void *data, size_t len, unsigned mode,
				   struct sbxloop_error *err)
{
	struct sl_core *core = core_of(host);
	const struct sbxloop_sandbox_ops *ops = core->sandbox.ops;
	char tmpl[] = "/tmp/sbxloop-put-XXXXXX";
	int fd, rc;

	if (!ops)
		return sl_error(err, SBXLOOP_ESTATE, "no sandbox provider");
	fd = mkstemp(tmpl);
	if (fd < 0)
		return sl_error(err, SBXLOOP_ERR,
				"cannot create a temporary file: %s",
				strerror(errno));
	if (fchmod(fd, mode & 0777) < 0 ||
	    write(fd, data, len) != (ssize_t)len) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "cannot write a temporary file: %s",
			      strerror(errno));
		close(fd);
		unlink(tmpl);
		return rc;
	}
	close(fd);
	rc = ops->copy_in(core->sandbox.ctx, sandbox, tmpl, path, err);
	unlink(tmpl);
	return rc;
}

static int host_sandbox_exec(const struct sbxloop_host *host,
			     const char *sandbox, const char *const *argv,
			     double timeout_s, struct sbxloop_proc_result *res,
			     struct sbxloop_error *err)
{
	struct sl_core *core = core_of(host);
	const struct sbxloop_sandbox_ops *ops = core->sandbox.ops;
	struct sbxloop_exec_spec spec;

	if (!ops)
		return sl_error(err, SBXLOOP_ESTATE, "no sandbox provider");
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.timeout_s = timeout_s;
	return ops->exec(core->sandbox.ctx, sandbox, &spec, res, err);
}

static int host_sandbox_job(const struct sbxloop_host *host, const char *role,
			    const char *job_json, char **result_json,
			    struct sbxloop_error *err)
{
	struct sl_core *core = core_of(host);
	sl_job_fn *fn;
	void *user;
	cJSON *job, *res = NULL;
	const char *kind, *op;
	int rc;

	*result_json = NULL;
	if (!role || !*role)
		return sl_error(err, SBXLOOP_EINVAL,
				"sandbox_job: no sandbox role given");
	job = job_json ? cJSON_Parse(job_json) : NULL;
	if (!cJSON_IsObject(job)) {
		cJSON_Delete(job);
		return sl_error(err, SBXLOOP_EINVAL,
				"sandbox_job: the job is not a JSON object");
	}
	pthread_mutex_lock(&core->job_lock);
	fn = core->job;
	user = core->job_user;
	pthread_mutex_unlock(&core->job_lock);
	kind = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(job, "kind"));
	op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job, "op"));
	if (!fn) {
		cJSON_Delete(job);
		return sl_error(err, SBXLOOP_ENOTFOUND,
				"no %s sandbox takes jobs now (the run has "
				"none, or it was torn down)",
				role);
	}
	sl_log(SBXLOOP_LOG_INFO, "plugin job in the %s sandbox: %s%s%s", role,
	       kind ? kind : "?", op ? " " : "", op ? op : "");
	rc = fn(user, role, job, &res, err);
	cJSON_Delete(job);
	if (rc < 0)
		return rc;
	*result_json = cJSON_PrintUnformatted(res);
	cJSON_Delete(res);
	return 0;
}

void sl_core_set_job_hook(struct sl_core *core, sl_job_fn *fn, void *user)
{
	pthread_mutex_lock(&core->job_lock);
	core->job = fn;
	core->job_user = fn ? user : NULL;
	pthread_mutex_unlock(&core->job_lock);
}

void sl_core_set_chat_hook(struct sl_core *core, sl_chat_fn *fn, void *user)
{
	pthread_mutex_lock(&core->job_lock);
	core->chat = fn;
	core->chat_user = fn ? user : NULL;
	pthread_mutex_unlock(&core->job_lock);
}

/*
 * The hook is called under job_lock, so the engine that clears it never
 * frees what a message in flight still uses.
 */
static int host_chat_post(const struct sbxloop_host *host, const char *text,
			  int64_t *id_out, struct sbxloop_error *err)
{
	struct sl_core *core = core_of(host);
	int64_t id = 0;
	int rc;

	if (id_out)
		*id_out = 0;
	if (!text || !*text)
		return sl_error(err, SBXLOOP_EINVAL,
				"chat_post: the message is empty");
	pthread_mutex_lock(&core->job_lock);
	if (core->chat)
		rc = core->chat(core->chat_user, text, &id, err);
	else
		rc = sl_error(err, SBXLOOP_ENOTFOUND,
			      "no run takes steering messages now");
	pthread_mutex_unlock(&core->job_lock);
	if (rc == 0 && id_out)
		*id_out = id;
	return rc;
}

static void fill_host(struct sl_core *core)
{
	struct sbxloop_host *h = &core->host;

	memset(h, 0, sizeof(*h));
	h->struct_size = sizeof(*h);
	h->abi_major = SBXLOOP_ABI_MAJOR;
	h->abi_minor = SBXLOOP_ABI_MINOR;
	h->version = PACKAGE_VERSION;
	h->core = core;
	h->log = host_log;
	h->error_set = host_error_set;
	h->config_string = host_config_string;
	h->config_int = host_config_int;
	h->config_double = host_config_double;
	h->config_bool = host_config_bool;
	h->config_list_len = host_config_list_len;
	h->config_list_item = host_config_list_item;
	h->emit = host_emit;
	h->run_id = host_run_id;
	h->state_dir = host_state_dir;
	h->proc_run = host_proc_run;
	h->proc_result_clear = sl_proc_result_clear;
	h->secret_register = host_secret_register;
	h->redact = host_redact;
	h->free = free;
	h->sandbox_write_file = host_sandbox_write_file;
	h->sandbox_exec = host_sandbox_exec;
	h->state_read_only = host_state_read_only;
	h->sandbox_job = host_sandbox_job;
	h->chat_post = host_chat_post;
}

int sl_core_open(struct sl_core **out, const struct sl_config_opts *o,
		 char **errors)
{
	struct sl_core *core = sl_xcalloc(1, sizeof(*core));
	struct sbxloop_error err = {0, ""};
	struct sl_buf all = SL_BUF_INIT;
	char *msg = NULL;
	size_t i, j;
	int rc;

	*out = core;
	*errors = NULL;
	pthread_mutex_init(&core->job_lock, NULL);
	fill_host(core);
	rc = sl_config_load(&core->cfg, o, &msg);
	if (msg) {
		sl_buf_adds(&all, msg);
		free(msg);
		msg = NULL;
	}
	rc = sl_registry_load(&core->reg,
			      sl_config_str(core->cfg, "plugin_dir"), &err);
	if (rc) {
		sl_buf_addf(&all, "%s\n", err.message);
		goto out;
	}
	/* Every loaded component may own a config mapping of its name. */
	for (i = 0; i < core->reg.n_modules; i++) {
		const struct sl_module *m = &core->reg.modules[i];

		if (!m->desc)
			continue;
		for (j = 0; j < m->desc->n_components; j++) {
			const struct sbxloop_component *c =
				&m->desc->components[j];
			const struct sbxloop_config_key *keys =
				c->struct_size > offsetof(struct
							  sbxloop_component,
							  config_keys)
					? c->config_keys
					: NULL;

			if (sl_config_add_component(core->cfg, c->name, keys,
						    &msg) < 0 &&
			    msg) {
				sl_buf_adds(&all, msg);
			}
			free(msg);
			msg = NULL;
		}
	}
	if (sl_config_finish(core->cfg, &msg) < 0 && msg)
		sl_buf_adds(&all, msg);
	free(msg);
out:
	if (all.len) {
		*errors = sl_buf_detach(&all);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

void sl_instance_destroy(struct sl_instance *inst)
{
	if (!inst || !inst->ops)
		return;
	if (inst->ctx) {
		struct sl_plugin_call call;

		sl_plugin_enter(&call, inst->module, "destroy()");
		((const struct sbxloop_ops_head *)inst->ops)
			->destroy(inst->ctx);
		sl_plugin_leave(&call);
	}
	memset(inst, 0, sizeof(*inst));
}

int sl_core_instantiate(struct sl_core *core, enum sbxloop_kind kind,
			const char *name, struct sl_instance *inst,
			struct sbxloop_error *err)
{
	const struct sl_module *m = NULL;
	const struct sbxloop_component *c;
	int (*create)(const struct sbxloop_host *, void **,
		      struct sbxloop_error *);
	struct sbxloop_error cerr = {0, ""};
	struct sl_plugin_call call;
	int rc;
	size_t i;

	memset(inst, 0, sizeof(*inst));
	c = sl_registry_find(&core->reg, kind, name, &m);
	if (!c) {
		/* a refused module that would have provided it? */
		for (i = 0; i < core->reg.n_modules; i++) {
			const struct sl_module *r = &core->reg.modules[i];

			if (r->refusal && strstr(r->name, name))
				return sl_error(
					err, SBXLOOP_ENOTFOUND,
					"%s '%s' is unavailable: module '%s' "
					"(%s) was refused: %s",
					sl_kind_name(kind), name, r->name,
					r->path, r->refusal);
		}
		return sl_error(err, SBXLOOP_ENOTFOUND,
				"no %s plugin named '%s' (see `sbxloop "
				"plugins` for what is installed)",
				sl_kind_name(kind), name);
	}
	create = ((const struct sbxloop_ops_head *)c->ops)->create;
	sl_plugin_enter(&call, m, "create()");
	rc = create(&core->host, &inst->ctx, &cerr);
	sl_plugin_leave(&call);
	if (rc) {
		inst->ctx = NULL;
		return sl_error(err, rc,
				"%s '%s' from module '%s' (%s) failed to "
				"start: %s",
				sl_kind_name(kind), name, m->name, m->path,
				cerr.message[0] ? cerr.message
						: "no reason given");
	}
	inst->component = c;
	inst->module = m;
	inst->ops = c->ops;
	/* every text a store receives or returns is masked (store_guard.c) */
	if (kind == SBXLOOP_KIND_STORE)
		sl_store_guard_wrap(inst);
	return 0;
}

void sl_core_close(struct sl_core *core)
{
	if (!core)
		return;
	sl_instance_destroy(&core->sandbox);
	sl_config_free(core->cfg);
	sl_registry_release(&core->reg);
	pthread_mutex_destroy(&core->job_lock);
	free(core->run_id);
	free(core);
}

const char *sl_core_state_dir(struct sl_core *core)
{
	const char *dir = sl_config_str(core->cfg, "state_dir");
	int rc;

	if (!dir)
		return NULL;
	rc = sl_mkdirs(dir, 0700);
	if (rc < 0) {
		sl_log(SBXLOOP_LOG_ERROR, "cannot create state_dir '%s': %s",
		       dir, strerror(-rc));
		return NULL;
	}
	return dir;
}

void sl_core_set_run(struct sl_core *core, const char *run_id)
{
	free(core->run_id);
	core->run_id = sl_xstrdup(run_id);
}

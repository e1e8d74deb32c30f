/*
 * The sbx-proxy secret strategy of the sbx module (UPSTREAM.md 8.5;
 * plain-env, the other one, is in plainenv.c):
 *
 *   sbx-proxy  registers the credential with sbx's proxy (a custom
 *              secret bound to a host, or a built-in service such as
 *              `github` with the value on stdin), with the
 *              replace-on-exists ladder, then probes whether exec'd
 *              processes see it. A clean "unset" or "sentinel" answer
 *              hands over to the next strategy (SBXLOOP_EUNSUPPORTED);
 *              a failed registration does too (the core falls back on
 *              any error but SBXLOOP_ESTATE); two unclean answers fail
 *              provisioning (SBXLOOP_ESTATE). As the last
 *              strategy of the chain it is strict: only the sentinel
 *              (the value stays outside the VM) is accepted.
 *
 * The core reaches it through its ops table only.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx.h"
#include "common/json.h"

/* ---- sbx-proxy ------------------------------------------------------- */

struct proxy {
	struct sbxp sbx;
};

static int proxy_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	struct proxy *p = calloc(1, sizeof(*p));

	*ctx = p;
	if (!p)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "sbx-proxy: out of memory");
	sbxp_init(&p->sbx, host);
	return 0;
}

static void proxy_destroy(void *ctx)
{
	free(ctx);
}

/* Did `sbx secret rm` delete something? rc 0 and (no output or
 * "Deleted"); sbx without -f prints a prompt and exits 0. */
static int removed(const struct sbxloop_proc_result *res)
{
	return res->exit_code == 0 &&
	       (res->out_len == 0 || strstr(res->out, "Deleted"));
}

/* One `secret rm ... -f` rung; 1 when it deleted, 0 otherwise. */
static int rm_rung(struct sbxp *s, const struct sbxloop_secret_req *req,
		   const char *scope, int with_host)
{
	struct sbxloop_error err = {0, ""};
	struct sbxloop_proc_result res;
	struct sbxp_call call;
	const char *args[12];
	size_t n = 0;
	int ok = 0;

	args[n++] = "secret";
	args[n++] = "rm";
	if (req->service) {
		args[n++] = req->service;
	} else {
		if (with_host && req->bind_host) {
			args[n++] = "--host";
			args[n++] = req->bind_host;
		}
		args[n++] = "--env";
		args[n++] = req->env_name;
	}
	if (!strcmp(scope, "global")) {
		args[n++] = "-g";
	} else {
		args[n++] = "--sandbox";
		args[n++] = scope;
	}
	args[n++] = "-f";
	args[n] = NULL;
	memset(&call, 0, sizeof(call));
	call.args = args;
	if (sbxp_run(s, &call, &res, &err) == 0)
		ok = removed(&res);
	s->host->proc_result_clear(&res);
	return ok;
}

/*
 * Every registration sbx-proxy made in this process, whichever instance
 * made it, so that removing a sandbox also removes what was registered
 * for it (sbx keeps name-scoped secrets after the sandbox is gone, and a
 * later sandbox of the same name would inherit them).
 */
struct registration {
	struct registration *next;
	char *sandbox;
	char *env_name;
	char *bind_host; /* or NULL */
	char *service;   /* or NULL */
};

static struct registration *registry;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static void registration_free(struct registration *r)
{
	free(r->sandbox);
	free(r->env_name);
	free(r->bind_host);
	free(r->service);
	free(r);
}

static void remember(const struct sbxloop_secret_req *req)
{
	struct registration *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	r->sandbox = strdup(req->sandbox);
	r->env_name = strdup(req->env_name);
	r->bind_host = req->bind_host ? strdup(req->bind_host) : NULL;
	r->service = req->service ? strdup(req->service) : NULL;
	if (!r->sandbox || !r->env_name) {
		registration_free(r);
		return;
	}
	pthread_mutex_lock(&registry_lock);
	r->next = registry;
	registry = r;
	pthread_mutex_unlock(&registry_lock);
}

static struct registration *take_all(void)
{
	struct registration *out;

	pthread_mutex_lock(&registry_lock);
	out = registry;
	registry = NULL;
	pthread_mutex_unlock(&registry_lock);
	return out;
}

/* Take the sandbox's entries (env_name NULL = all of them) out of the
 * registry; the caller frees the returned list. */
static struct registration *take(const char *sandbox, const char *env_name)
{
	struct registration **pp, *r, *out = NULL;

	pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp;) {
		r = *pp;
		if (!strcmp(r->sandbox, sandbox) &&
		    (!env_name || !strcmp(r->env_name, env_name))) {
			*pp = r->next;
			r->next = out;
			out = r;
		} else {
			pp = &r->next;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return out;
}

#if defined(__GNUC__)
/* The module is unloaded: what it still remembers is only memory now. */
__attribute__((destructor)) static void registry_release(void)
{
	struct registration *r = take_all(), *next;

	for (; r; r = next) {
		next = r->next;
		registration_free(r);
	}
}
#endif

void sbxp_forget_secrets(struct sbxp *s, const char *sandbox)
{
	struct registration *r = take(sandbox, NULL), *next;
	struct sbxloop_secret_req req;

	for (; r; r = next) {
		next = r->next;
		memset(&req, 0, sizeof(req));
		req.struct_size = sizeof(req);
		req.sandbox = r->sandbox;
		req.env_name = r->env_name;
		req.bind_host = r->bind_host;
		req.service = r->service;
		rm_rung(s, &req, r->sandbox, 1);
		registration_free(r);
	}
}

/* The owner scope named in an exists-error: `in scope "?<name>"?`. */
static void parse_scope(const char *text, char *buf, size_t size)
{
	const char *s = text ? strstr(text, "in scope ") : NULL;
	size_t n = 0;

	buf[0] = '\0';
	if (!s)
		return;
	s += strlen("in scope ");
	if (*s == '"')
		s++;
	while (s[n] && s[n] != '"' && s[n] != ' ' && s[n] != '\n' &&
	       n + 1 < size)
		n++;
	/* a sentence's full stop is not part of the name */
	if (n && s[n - 1] == '.' && (s[n] == ' ' || s[n] == '\n' || !s[n]))
		n--;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!strcmp(buf, "-g"))
		snprintf(buf, size, "global");
}

/*
 * How the installed sbx takes set-custom's scope: `--sandbox NAME` (the
 * sbx_secret_set-custom reference) or positionally, `set-custom NAME`
 * (`sbx secret set-custom [-g | sandbox]`, older builds). Learnt from
 * the first call's error and kept for the process.
 */
enum scope_form { FORM_UNKNOWN, FORM_FLAG, FORM_POSITIONAL };

static enum scope_form scope_form;
static pthread_mutex_t form_lock = PTHREAD_MUTEX_INITIALIZER;

static enum scope_form get_form(void)
{
	enum scope_form f;

	pthread_mutex_lock(&form_lock);
	f = scope_form;
	pthread_mutex_unlock(&form_lock);
	return f;
}

static void set_form(enum scope_form f)
{
	pthread_mutex_lock(&form_lock);
	scope_form = f;
	pthread_mutex_unlock(&form_lock);
}

static int is_exists(const struct sbxloop_proc_result *res);

/* Did sbx refuse the --sandbox flag itself (not the registration)? */
static int rejects_sandbox_flag(const struct sbxloop_proc_result *res)
{
	const char *e = res->err ? res->err : "";

	return res->exit_code != 0 && strstr(e, "--sandbox") &&
	       (strstr(e, "unknown flag") || strstr(e, "unknown option") ||
		strstr(e, "not defined") || strstr(e, "unrecognized"));
}

static int set_custom_once(struct proxy *p,
			   const struct sbxloop_secret_req *req,
			   enum scope_form form,
			   struct sbxloop_proc_result *res,
			   struct sbxloop_error *err)
{
	struct sbxp_call call;
	const char *args[16];
	size_t n = 0;

	/* sbx has no stdin path here: the one documented argv case */
	args[n++] = "secret";
	args[n++] = "set-custom";
	if (form == FORM_POSITIONAL) {
		args[n++] = req->sandbox;
	} else {
		args[n++] = "--sandbox";
		args[n++] = req->sandbox;
	}
	args[n++] = "--host";
	args[n++] = req->bind_host;
	args[n++] = "--env";
	args[n++] = req->env_name;
	args[n++] = "--value";
	args[n++] = req->value;
	args[n] = NULL;
	memset(&call, 0, sizeof(call));
	call.args = args;
	return sbxp_run(&p->sbx, &call, res, err);
}

/* `secret set` or `secret set-custom` once. */
static int set_once(struct proxy *p, const struct sbxloop_secret_req *req,
		    struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	const struct sbxloop_host *h = p->sbx.host;
	struct sbxp_call call;
	enum scope_form form;
	const char *args[8];
	int rc;

	if (req->service) {
		/* the value travels on stdin, never in argv */
		args[0] = "secret";
		args[1] = "set";
		args[2] = req->sandbox;
		args[3] = req->service;
		args[4] = NULL;
		memset(&call, 0, sizeof(call));
		call.args = args;
		call.stdin_data = req->value;
		call.stdin_len = strlen(req->value);
		return sbxp_run(&p->sbx, &call, res, err);
	}
	form = get_form();
	rc = set_custom_once(p, req, form == FORM_UNKNOWN ? FORM_FLAG : form,
			     res, err);
	if (rc < 0 || form != FORM_UNKNOWN)
		return rc;
	if (!rejects_sandbox_flag(res)) {
		/* accepted, or refused for another reason: the flag works */
		if (res->exit_code == 0 || is_exists(res))
			set_form(FORM_FLAG);
		return rc;
	}
	set_form(FORM_POSITIONAL);
	h->log(h, SBXLOOP_LOG_INFO,
	       "this sbx takes the scope of `secret set-custom` "
	       "positionally (it refused --sandbox); using that form");
	h->proc_result_clear(res);
	return set_custom_once(p, req, FORM_POSITIONAL, res, err);
}

static int is_exists(const struct sbxloop_proc_result *res)
{
	return res->exit_code != 0 && res->err &&
	       (strstr(res->err, "exist") || strstr(res->err, "already"));
}

/*
 * Register, replacing a leftover registration when sbx says one exists:
 * walk [owner scope, this sandbox, global], each with host+env then env
 * alone, retrying the set after every removal. A registration nothing
 * can remove is kept with a warning: it must not fail provisioning.
 */
static int register_secret(struct proxy *p,
			   const struct sbxloop_secret_req *req,
			   struct sbxloop_error *err)
{
	const struct sbxloop_host *h = p->sbx.host;
	struct sbxloop_proc_result res;
	char owner[SBXLOOP_NAME_MAX], tail[256];
	const char *scopes[3];
	size_t ns = 0, i, k;
	int rc, with_host;

	rc = set_once(p, req, &res, err);
	if (rc < 0 || res.exit_code == 0)
		goto out;
	if (!is_exists(&res)) {
		snprintf(tail, sizeof(tail), "%s", res.err ? res.err : "");
		tail[strcspn(tail, "\n")] = '\0';
		rc = h->error_set(h, err, SBXLOOP_EINFRA,
				  "cannot register %s for sandbox '%s' "
				  "(exit %d): %s",
				  req->service ? req->service : req->env_name,
				  req->sandbox, res.exit_code, tail);
		goto out;
	}
	parse_scope(res.err, owner, sizeof(owner));
	if (*owner)
		scopes[ns++] = owner;
	scopes[ns++] = req->sandbox;
	scopes[ns++] = "global";
	for (i = 0; i < ns; i++) {
		for (k = 0; k < i; k++)
			if (!strcmp(scopes[k], scopes[i]))
				break;
		if (k < i)
			continue;
		for (with_host = 1; with_host >= 0; with_host--) {
			if (req->service && !with_host)
				break;
			if (!rm_rung(&p->sbx, req, scopes[i], with_host))
				continue;
			h->proc_result_clear(&res);
			rc = set_once(p, req, &res, err);
			if (rc < 0 || res.exit_code == 0)
				goto out;
		}
	}
	h->log(h, SBXLOOP_LOG_WARN,
	       "%s is already registered with sbx and could not be "
	       "replaced; keeping the existing registration (it may be "
	       "stale)",
	       req->service ? req->service : req->env_name);
	rc = 0;
out:
	h->proc_result_clear(&res);
	return rc;
}

static void emit_named(struct proxy *p, const char *type,
		       const struct sbxloop_secret_req *req, const char *msg)
{
	const struct sbxloop_host *h = p->sbx.host;
	char *qn = sl_json_quote(req->sandbox);
	char *qe = sl_json_quote(req->env_name);
	char *qm = sl_json_quote(msg);
	char *data = NULL;

	if (qn && qe && qm)
		data = sbxp_printf("{\"name\":%s,\"env\":%s,\"message\":%s}",
				   qn, qe, qm);
	if (data)
		h->emit(h, type, NULL, data);
	free(data);
	free(qn);
	free(qe);
	free(qm);
}

/*
 * Probe whether exec'd processes see a real token: 0 visible, 1 unset,
 * 3 set but not token-shaped (the proxy sentinel). -1: unclean answer.
 */
static int probe_visibility(struct proxy *p, const char *sandbox,
			    const char *env, char *why, size_t size)
{
	struct sbxloop_error err = {0, ""};
	struct sbxloop_proc_result res;
	struct sbxp_call call;
	char *script;
	int rc, answer = -1;

	script = sbxp_printf(
		"v=\"${%s}\"; [ -n \"$v\" ] || exit 1; case \"$v\" in "
		"gho_*|ghu_*|ghp_*|ghs_*|github_pat_*) exit 0 ;; "
		"*) exit 3 ;; esac",
		env);
	if (!script) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	{
		const char *args[] = {"exec", sandbox, "sh",
				      "-lc",  script,  NULL};

		memset(&call, 0, sizeof(call));
		call.args = args;
		rc = sbxp_run(&p->sbx, &call, &res, &err);
	}
	if (rc < 0) {
		snprintf(why, size, "%s", err.message);
	} else if (res.exit_code == 0 || res.exit_code == 1 ||
		   res.exit_code == 3) {
		answer = res.exit_code;
		if (answer && sbxp_exec_infra_failure(res.err))
			answer = -1;
	}
	if (answer < 0 && rc == 0)
		snprintf(why, size, "probe exit %d%s%.160s", res.exit_code,
			 res.err_len ? ": " : "", res.err ? res.err : "");
	p->sbx.host->proc_result_clear(&res);
	free(script);
	return answer;
}

static int proxy_revoke(void *ctx, const struct sbxloop_secret_req *req,
			struct sbxloop_error *err)
{
	struct proxy *p = ctx;

	(void)err;
	if (!req || !req->sandbox || (!req->service && !req->env_name))
		return 0;
	{
		struct registration *r = take(req->sandbox, req->env_name);
		struct registration *next;

		for (; r; r = next) {
			next = r->next;
			registration_free(r);
		}
	}
	if (req->service || req->bind_host)
		rm_rung(&p->sbx, req, req->sandbox, 1);
	return 0;
}

/*
 * Strict mode: sbx-proxy is the last strategy of plugins.secrets, so
 * there is nothing to fall back to and the configuration asks for the
 * value to stay outside the VM. Only the proxy sentinel satisfies that.
 */
static int strict(struct proxy *p)
{
	const struct sbxloop_host *h = p->sbx.host;
	size_t n = h->config_list_len(h, "plugins.secrets");
	const char *last =
		n ? h->config_list_item(h, "plugins.secrets", n - 1) : NULL;

	return last && !strcmp(last, "sbx-proxy");
}

static int strict_verdict(struct proxy *p,
			  const struct sbxloop_secret_req *req, int answer,
			  struct sbxloop_secret_outcome *out,
			  struct sbxloop_error *err)
{
	const struct sbxloop_host *h = p->sbx.host;

	if (answer == 3) {
		if (out) {
			snprintf(out->strategy, sizeof(out->strategy),
				 "sbx-proxy");
			out->never_in_sandbox = 1;
			snprintf(out->detail, sizeof(out->detail),
				 "the sandbox sees only sbx's placeholder; "
				 "the proxy adds the value on the wire");
		}
		return 0;
	}
	proxy_revoke(p, req, NULL);
	return h->error_set(
		h, err, SBXLOOP_ESTATE,
		"sbx-proxy: %s is %s in sandbox '%s', and plugins.secrets "
		"has no strategy after sbx-proxy; add plain-env to allow an "
		"env file inside the sandbox",
		req->env_name,
		answer == 0 ? "visible as a real token (not proxied)"
			    : "not visible at all",
		req->sandbox);
}

static int proxy_provide(void *ctx, const struct sbxloop_secret_req *req,
			 struct sbxloop_secret_outcome *out,
			 struct sbxloop_error *err)
{
	struct proxy *p = ctx;
	const struct sbxloop_host *h = p->sbx.host;
	char why[SBXLOOP_ERROR_MAX], *msg;
	int rc, answer = -1, tries;

	if (!req || !req->sandbox || !req->env_name || !req->value)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "sbx-proxy: incomplete secret request");
	if (!req->service && !req->bind_host)
		return h->error_set(h, err, SBXLOOP_EUNSUPPORTED,
				    "sbx-proxy: %s has neither a service nor "
				    "a host to bind it to",
				    req->env_name);
	/* set-custom puts it in argv: masked everywhere from here on */
	h->secret_register(h, req->value);
	rc = register_secret(p, req, err);
	if (rc < 0)
		return rc;
	remember(req);

	why[0] = '\0';
	for (tries = 0; tries < 2 && answer < 0; tries++)
		answer = probe_visibility(p, req->sandbox, req->env_name, why,
					  sizeof(why));
	if (answer < 0) {
		msg = sbxp_printf("cannot tell whether %s is visible in "
				  "sandbox '%s': %s",
				  req->env_name, req->sandbox, why);
		emit_named(p, SBXLOOP_EV_SANDBOX_SECRET_PROBE_ERROR, req,
			   msg ? msg : why);
		/* ESTATE: the core must not hand it to the next strategy,
		 * an infra blip never downgrades silently */
		rc = h->error_set(h, err, SBXLOOP_ESTATE, "%s",
				  msg ? msg : why);
		free(msg);
		proxy_revoke(p, req, NULL);
		return rc;
	}
	if (strict(p))
		return strict_verdict(p, req, answer, out, err);
	if (answer != 0) {
		msg = sbxp_printf(
			"%s is %s under sbx exec in sandbox '%s'; falling "
			"back to plain-env (set plugins.secrets to "
			"[plain-env] to silence this)",
			req->env_name,
			answer == 1 ? "invisible" : "a proxy sentinel",
			req->sandbox);
		emit_named(p, SBXLOOP_EV_SANDBOX_SECRET_FALLBACK, req,
			   msg ? msg : "falling back to plain-env");
		h->log(h, SBXLOOP_LOG_INFO, "%s", msg ? msg : "fallback");
		free(msg);
		/* the next strategy owns it now; leave no registration */
		proxy_revoke(p, req, NULL);
		return h->error_set(h, err, SBXLOOP_EUNSUPPORTED,
				    "sbx-proxy: %s %s under exec",
				    req->env_name,
				    answer == 1 ? "invisible" : "sentinel");
	}
	if (out) {
		snprintf(out->strategy, sizeof(out->strategy), "sbx-proxy");
		/* a token visible to exec'd processes is inside the VM */
		out->never_in_sandbox = 0;
		snprintf(out->detail, sizeof(out->detail),
			 "registered with sbx (%s); visible under exec",
			 req->service ? req->service : "custom");
	}
	return 0;
}

struct list_ctx {
	void (*cb)(void *user, const char *env_name, const char *scope,
		   const char *detail);
	void *user;
};

static void list_row(void *user, const char *const *cells)
{
	struct list_ctx *l = user;

	/* cells: scope, name (env or service), hosts */
	if (*cells[0] && *cells[1])
		l->cb(l->user, cells[1], cells[0], cells[2]);
}

/* Is there anything but blank lines and a "No secrets" notice? */
static int says_nothing(const char *text)
{
	text += strspn(text, " \t\r\n");
	return !*text || !strncmp(text, "No ", 3);
}

/*
 * `sbx secret ls`, read by its header: sbx builds differ in the columns
 * (SCOPE SECRET HOSTS; SCOPE TYPE NAME HOST), so no position is assumed.
 */
static int proxy_list(void *ctx,
		      void (*cb)(void *user, const char *env_name,
				 const char *scope, const char *detail),
		      void *user, struct sbxloop_error *err)
{
	static const char *const scope_col[] = {"SCOPE", "SANDBOX", NULL};
	static const char *const name_col[] = {"NAME", "SECRET", "ENV", NULL};
	static const char *const hosts_col[] = {"HOSTS", "HOST", NULL};
	static const char *const *const want[] = {scope_col, name_col,
						  hosts_col};
	struct proxy *p = ctx;
	const char *args[] = {"secret", "ls", NULL};
	struct sbxloop_proc_result res;
	struct sbxp_call call;
	struct list_ctx l = {cb, user};
	const char *out;
	int rc;

	memset(&call, 0, sizeof(call));
	call.args = args;
	rc = sbxp_check(&p->sbx, &call, &res, err);
	if (rc < 0)
		goto out;
	out = res.out ? res.out : "";
	if (sbxp_parse_table(out, want, 3, list_row, &l) < 0 &&
	    !says_nothing(out)) {
		char first[160];

		snprintf(first, sizeof(first), "%s", out);
		first[strcspn(first, "\n")] = '\0';
		rc = p->sbx.host->error_set(
			p->sbx.host, err, SBXLOOP_EUNSUPPORTED,
			"cannot read `sbx secret ls`: no SCOPE column header "
			"in its output (first line: '%s')",
			first);
	}
out:
	p->sbx.host->proc_result_clear(&res);
	return rc;
}

const struct sbxloop_secret_ops sbxp_proxy_ops = {
	.struct_size = sizeof(struct sbxloop_secret_ops),
	.create = proxy_create,
	.destroy = proxy_destroy,
	.provide = proxy_provide,
	.revoke = proxy_revoke,
	.list = proxy_list,
};

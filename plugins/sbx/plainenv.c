/*
 * The plain-env secret strategy of the sbx module (UPSTREAM.md 8.5):
 * writes /home/agent/.sbxloop/env.sh (0600) inside the sandbox, which
 * the worker loads; values are wiped from memory when dropped. The core
 * reaches it through its ops table only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx.h"

/* ---- plain-env ------------------------------------------------------- */

/* One exported variable of one sandbox; the value is wiped on free. */
struct env_var {
	struct env_var *next;
	char *sandbox;
	char *name;
	char *value;
};

struct plain {
	const struct sbxloop_host *host;
	struct env_var *vars;
};

static int plain_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	struct plain *p = calloc(1, sizeof(*p));

	*ctx = p;
	if (!p)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "plain-env: out of memory");
	p->host = host;
	return 0;
}

static void var_free(struct env_var *v)
{
	if (v->value) {
		volatile char *s = v->value;

		while (*s)
			*s++ = '\0';
	}
	free(v->value);
	free(v->name);
	free(v->sandbox);
	free(v);
}

static void plain_destroy(void *ctx)
{
	struct plain *p = ctx;
	struct env_var *v, *next;

	if (!p)
		return;
	for (v = p->vars; v; v = next) {
		next = v->next;
		var_free(v);
	}
	free(p);
}

static void var_drop(struct plain *p, const char *sandbox, const char *name)
{
	struct env_var **pp = &p->vars, *v;

	while (*pp) {
		v = *pp;
		if (!strcmp(v->sandbox, sandbox) &&
		    (!name || !strcmp(v->name, name))) {
			*pp = v->next;
			var_free(v);
		} else {
			pp = &v->next;
		}
	}
}

static int var_set(struct plain *p, const char *sandbox, const char *name,
		   const char *value)
{
	struct env_var *v = calloc(1, sizeof(*v)), **pp;

	var_drop(p, sandbox, name);
	if (!v)
		return -1;
	v->sandbox = strdup(sandbox);
	v->name = strdup(name);
	v->value = strdup(value);
	if (!v->sandbox || !v->name || !v->value) {
		var_free(v);
		return -1;
	}
	/* sorted by name, so the file reads the same every time */
	for (pp = &p->vars; *pp && strcmp((*pp)->name, name) < 0;
	     pp = &(*pp)->next)
		;
	v->next = *pp;
	*pp = v;
	return 0;
}

/* (Re)write the sandbox's env file from the variables it holds. */
static int write_env_file(struct plain *p, const char *sandbox,
			  struct sbxloop_error *err)
{
	const struct sbxloop_host *h = p->host;
	struct sbxloop_proc_result res;
	struct env_var *v;
	size_t len = 64, n = 0;
	char *text, *q;
	int rc, any = 0;

	if (!h->sandbox_write_file || !h->sandbox_exec)
		return h->error_set(h, err, SBXLOOP_EUNSUPPORTED,
				    "plain-env: the host cannot write files "
				    "into sandboxes");
	for (v = p->vars; v; v = v->next)
		if (!strcmp(v->sandbox, sandbox))
			len += strlen(v->name) + 4 * strlen(v->value) + 16;
	text = malloc(len);
	if (!text)
		return h->error_set(h, err, SBXLOOP_ENOMEM,
				    "plain-env: out of memory");
	n = (size_t)snprintf(text, len, "# written by sbxloop plain-env\n");
	for (v = p->vars; v; v = v->next) {
		if (strcmp(v->sandbox, sandbox))
			continue;
		q = sbxp_shell_quote(v->value);
		if (!q) {
			free(text);
			return h->error_set(h, err, SBXLOOP_ENOMEM,
					    "plain-env: out of memory");
		}
		n += (size_t)snprintf(text + n, len - n, "export %s=%s\n",
				      v->name, q);
		memset(q, 0, strlen(q));
		free(q);
		any = 1;
	}
	if (!any) {
		const char *argv[] = {"rm", "-f", SBXP_ENV_FILE, NULL};

		memset(text, 0, len);
		free(text);
		memset(&res, 0, sizeof(res));
		rc = h->sandbox_exec(h, sandbox, argv, SBXP_CALL_TIMEOUT, &res,
				     err);
		h->proc_result_clear(&res);
		return rc;
	}
	rc = h->sandbox_write_file(h, sandbox, SBXP_ENV_FILE, text, n, 0600,
				   err);
	memset(text, 0, len);
	free(text);
	if (rc < 0)
		return rc;
	{
		/* sbx cp does not keep the mode */
		const char *argv[] = {"chmod", "600", SBXP_ENV_FILE, NULL};

		memset(&res, 0, sizeof(res));
		rc = h->sandbox_exec(h, sandbox, argv, SBXP_CALL_TIMEOUT, &res,
				     err);
		if (rc == 0 && res.exit_code != 0)
			rc = h->error_set(h, err, SBXLOOP_EINFRA,
					  "cannot chmod %s in sandbox '%s'",
					  SBXP_ENV_FILE, sandbox);
		h->proc_result_clear(&res);
	}
	return rc;
}

static int plain_provide(void *ctx, const struct sbxloop_secret_req *req,
			 struct sbxloop_secret_outcome *out,
			 struct sbxloop_error *err)
{
	struct plain *p = ctx;
	const struct sbxloop_host *h = p->host;
	int rc;

	if (!req || !req->sandbox || !req->env_name || !req->value)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "plain-env: incomplete secret request");
	h->secret_register(h, req->value);
	if (var_set(p, req->sandbox, req->env_name, req->value) < 0)
		return h->error_set(h, err, SBXLOOP_ENOMEM,
				    "plain-env: out of memory");
	/* gh reads either name; the github sandbox gets both */
	if (!strcmp(req->env_name, "GH_TOKEN") &&
	    var_set(p, req->sandbox, "GITHUB_TOKEN", req->value) < 0)
		return h->error_set(h, err, SBXLOOP_ENOMEM,
				    "plain-env: out of memory");
	rc = write_env_file(p, req->sandbox, err);
	if (rc < 0) {
		var_drop(p, req->sandbox, NULL);
		return rc;
	}
	if (out) {
		snprintf(out->strategy, sizeof(out->strategy), "plain-env");
		out->never_in_sandbox = 0;
		snprintf(out->detail, sizeof(out->detail),
			 "exported from %s (mode 0600) in its own sandbox",
			 SBXP_ENV_FILE);
	}
	return 0;
}

static int plain_revoke(void *ctx, const struct sbxloop_secret_req *req,
			struct sbxloop_error *err)
{
	struct plain *p = ctx;
	struct sbxloop_error ignored = {0, ""};
	struct env_var *v;
	int held = 0;

	(void)err;
	if (!req || !req->sandbox)
		return 0;
	for (v = p->vars; v; v = v->next)
		if (!strcmp(v->sandbox, req->sandbox))
			held = 1;
	if (!held)
		return 0;
	var_drop(p, req->sandbox, req->env_name);
	if (req->env_name && !strcmp(req->env_name, "GH_TOKEN"))
		var_drop(p, req->sandbox, "GITHUB_TOKEN");
	/* the sandbox may already be gone: nothing left to revoke then */
	write_env_file(p, req->sandbox, &ignored);
	return 0;
}

const struct sbxloop_secret_ops sbxp_plain_env_ops = {
	.struct_size = sizeof(struct sbxloop_secret_ops),
	.create = plain_create,
	.destroy = plain_destroy,
	.provide = plain_provide,
	.revoke = plain_revoke,
	.list = NULL,
};

/*
 * The `local` module: the default sandbox provider, running the worker
 * as a host subprocess in a directory sandbox (dirbox.c), bare or under
 * bubblewrap, and the `local` policy granter. With `network: proxy` each
 * sandbox gets its own egress proxy (proxy.c) on host threads, and the
 * granter applies grants and revokes to it; for every other sandbox the
 * granter honestly refuses per-domain grants. The core reaches both
 * through the descriptor only.
 */
#include "config.h"

#include "dirbox.h"
#include "proxy.h"

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sbxloop_config_key local_keys[] = {
	{"isolation", SBXLOOP_VALUE_STRING, "none", "none|bwrap",
	 "confine commands with bubblewrap (bwrap) or run them bare (none)"},
	{"network", SBXLOOP_VALUE_STRING, "none", "none|host|proxy",
	 "under bwrap: no network (none), the host's whole network (host), "
	 "or only the policy's domains through an egress proxy (proxy)"},
	{NULL, 0, NULL, NULL, NULL}};

/* ---- sandbox provider ------------------------------------------------ */

/* What a proxy sandbox adds to bubblewrap's confinement. */
#define LOCAL_PROXY_CAPS                                                      \
	(SBXLOOP_CAP_EGRESS_ENFORCED | SBXLOOP_CAP_EGRESS_REVOCABLE)

/* One running egress proxy, by sandbox name. */
struct local_proxy {
	char name[SBXLOOP_NAME_MAX];
	struct lproxy *proxy;
	struct local_proxy *next;
};

struct local {
	struct dirbox box;
	const struct sbxloop_host *host;
	char **deny; /* policy.deny, NULL-terminated */
	struct local_proxy *proxies;
};

static void free_list(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A config list as a NULL-terminated copy; NULL when out of memory. */
static char **config_list(const struct sbxloop_host *host, const char *path)
{
	size_t n = host->config_list_len(host, path), i;
	char **v = calloc(n + 1, sizeof(*v));

	for (i = 0; v && i < n; i++) {
		const char *item = host->config_list_item(host, path, i);

		v[i] = strdup(item ? item : "");
		if (!v[i]) {
			free_list(v);
			return NULL;
		}
	}
	return v;
}

static int local_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	const char *isolation = host->config_string(host, "local.isolation");
	const char *network = host->config_string(host, "local.network");
	int bwrap = isolation && strcmp(isolation, "bwrap") == 0;
	int proxy = network && strcmp(network, "proxy") == 0;
	struct local *l;
	int rc;

	*ctx = NULL;
	if (proxy && !bwrap)
		return host->error_set(
			host, err, SBXLOOP_EINVAL,
			"local: network 'proxy' needs isolation 'bwrap' (only "
			"bubblewrap gives a sandbox a network of its own): set "
			"local.isolation: bwrap, or local.network: none");
	l = calloc(1, sizeof(*l));
	if (l)
		l->deny = config_list(host, "policy.deny");
	if (!l || !l->deny) {
		free(l);
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "local: out of memory");
	}
	l->host = host;
	rc = dirbox_init(&l->box, host, "local", bwrap,
			 network && strcmp(network, "host") == 0, err);
	if (rc) {
		free_list(l->deny);
		free(l);
		return rc;
	}
	if (proxy) {
		l->box.proxy = 1;
		l->box.caps &= ~(uint32_t)SBXLOOP_CAP_NETWORK_DISABLED;
		l->box.caps |= LOCAL_PROXY_CAPS;
	}
	*ctx = l;
	return 0;
}

static struct local_proxy **find_proxy(struct local *l, const char *name)
{
	struct local_proxy **pp;

	for (pp = &l->proxies; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			break;
	return pp;
}

static void local_destroy(void *ctx)
{
	struct local *l = ctx;

	while (l->proxies) {
		struct local_proxy *lp = l->proxies;

		l->proxies = lp->next;
		lproxy_stop(lp->proxy);
		free(lp);
	}
	free_list(l->deny);
	free(l);
}

static uint32_t local_capabilities(void *ctx)
{
	return ((struct local *)ctx)->box.caps;
}

static int start_proxy(struct local *l,
		       const struct sbxloop_sandbox_spec *spec,
		       struct sbxloop_error *err)
{
	char dir[SBXLOOP_PATH_MAX], sock[SBXLOOP_PATH_MAX + 16];
	struct local_proxy *lp;
	int rc;

	rc = dirbox_dir(&l->box, spec->name, dir, sizeof(dir), err);
	if (rc)
		return rc;
	snprintf(sock, sizeof(sock), "%s/%s", dir, LPROXY_SOCKET);
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return l->host->error_set(l->host, err, SBXLOOP_ENOMEM,
					  "local: out of memory");
	snprintf(lp->name, sizeof(lp->name), "%s", spec->name);
	rc = lproxy_start(l->host, l->box.state, spec->name, sock,
			  spec->allow_domains, (const char *const *)l->deny,
			  &lp->proxy, err);
	if (rc) {
		free(lp);
		return rc;
	}
	lp->next = l->proxies;
	l->proxies = lp;
	return 0;
}

static int local_sandbox_create(void *ctx,
				const struct sbxloop_sandbox_spec *spec,
				struct sbxloop_sandbox_info *info,
				struct sbxloop_error *err)
{
	struct local *l = ctx;
	struct sbxloop_error ignored = {0, ""};
	int rc = dirbox_create(&l->box, spec, info, err);

	if (rc || !l->box.proxy)
		return rc;
	rc = start_proxy(l, spec, err);
	if (rc)
		dirbox_remove(&l->box, spec->name, &ignored);
	return rc;
}

static int local_sandbox_remove(void *ctx, const char *name,
				struct sbxloop_error *err)
{
	struct local *l = ctx;
	struct local_proxy **pp = find_proxy(l, name), *lp = *pp;

	if (lp) {
		*pp = lp->next;
		lproxy_stop(lp->proxy);
		free(lp);
	}
	return dirbox_remove(&l->box, name, err);
}

static int local_exec(void *ctx, const char *name,
		      const struct sbxloop_exec_spec *spec,
		      struct sbxloop_proc_result *res,
		      struct sbxloop_error *err)
{
	struct local *l = ctx;
	struct local_proxy *lp;
	int rc = dirbox_exec(&l->box, name, spec, res, err);

	/* the job's blocked attempts, reported on the caller's thread */
	lp = l->box.proxy ? *find_proxy(l, name) : NULL;
	if (lp)
		lproxy_flush(lp->proxy);
	return rc;
}

static int local_copy_in(void *ctx, const char *name, const char *host_path,
			 const char *sandbox_path, struct sbxloop_error *err)
{
	return dirbox_copy_in(&((struct local *)ctx)->box, name, host_path,
			      sandbox_path, err);
}

static int local_copy_out(void *ctx, const char *name,
			  const char *sandbox_path, const char *host_path,
			  struct sbxloop_error *err)
{
	return dirbox_copy_out(&((struct local *)ctx)->box, name, sandbox_path,
			       host_path, err);
}

static int local_list(void *ctx, const char *prefix,
		      void (*cb)(void *user,
				 const struct sbxloop_sandbox_entry *entry),
		      void *user, struct sbxloop_error *err)
{
	return dirbox_list(&((struct local *)ctx)->box, prefix, cb, user, err);
}

static const struct sbxloop_sandbox_ops local_sandbox_ops = {
	.struct_size = sizeof(struct sbxloop_sandbox_ops),
	.create = local_create,
	.destroy = local_destroy,
	.static_capabilities = DIRBOX_BEST_CAPS | LOCAL_PROXY_CAPS,
	.capabilities = local_capabilities,
	.sandbox_create = local_sandbox_create,
	.sandbox_remove = local_sandbox_remove,
	.exec = local_exec,
	.copy_in = local_copy_in,
	.copy_out = local_copy_out,
	.list = local_list,
};

/* ---- policy granter -------------------------------------------------- */

/*
 * Only a proxy sandbox can open single domains: its proxy (run by this
 * module's provider instance in this process) takes grants and revokes
 * at once. Any other local sandbox has a network of none or the whole
 * host, so the granter refuses, and the core audits a policy.deny
 * instead of believing a grant took effect.
 */
struct local_policy {
	const struct sbxloop_host *host;
};

static int policy_create(const struct sbxloop_host *host, void **ctx,
			 struct sbxloop_error *err)
{
	struct local_policy *p = calloc(1, sizeof(*p));

	*ctx = p;
	if (!p)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "local: out of memory");
	p->host = host;
	return 0;
}

static void policy_destroy(void *ctx)
{
	free(ctx);
}

static const char *state_of(const struct local_policy *p)
{
	const char *s = p->host->state_dir(p->host);

	return s ? s : "";
}

static int policy_seed(void *ctx, const char *sandbox,
		       const char *const *domains, struct sbxloop_error *err)
{
	struct local_policy *p = ctx;
	int rc;

	/* nothing to open is the one allowlist any sandbox honours */
	if (!domains || !domains[0])
		return 0;
	rc = lproxy_seed(state_of(p), sandbox ? sandbox : "", domains);
	if (rc != SBXLOOP_ENOTFOUND)
		return rc ? p->host->error_set(p->host, err, rc,
					       "local: out of memory")
			  : 0;
	return p->host->error_set(
		p->host, err, SBXLOOP_EUNSUPPORTED,
		"local: cannot seed sandbox '%s' with '%s': the local "
		"provider cannot enforce per-domain egress (its network is "
		"either none or the whole host; local.network: proxy can)",
		sandbox ? sandbox : "", domains[0]);
}

static int policy_grant(void *ctx, const struct sbxloop_grant *grant,
			struct sbxloop_error *err)
{
	struct local_policy *p = ctx;
	const char *sandbox = grant && grant->sandbox ? grant->sandbox : "";
	const char *domain = grant && grant->domain ? grant->domain : "";
	int rc = lproxy_grant(state_of(p), sandbox, domain);

	if (rc != SBXLOOP_ENOTFOUND)
		return rc ? p->host->error_set(p->host, err, rc,
					       "local: out of memory")
			  : 0;
	return p->host->error_set(
		p->host, err, SBXLOOP_EUNSUPPORTED,
		"local: cannot grant '%s' to sandbox '%s': the local provider "
		"cannot enforce per-domain egress (its network is either none "
		"or the whole host; local.network: proxy can)",
		domain, sandbox);
}

static int policy_revoke(void *ctx, const struct sbxloop_grant *grant,
			 struct sbxloop_error *err)
{
	struct local_policy *p = ctx;
	const char *sandbox = grant && grant->sandbox ? grant->sandbox : "";
	const char *domain = grant && grant->domain ? grant->domain : "";

	if (lproxy_revoke(state_of(p), sandbox, domain) == 0)
		return 0;
	return p->host->error_set(p->host, err, SBXLOOP_EUNSUPPORTED,
				  "local: cannot revoke '%s' from sandbox "
				  "'%s': it has no egress proxy in this "
				  "process",
				  domain, sandbox);
}

static const struct sbxloop_policy_ops local_policy_ops = {
	.struct_size = sizeof(struct sbxloop_policy_ops),
	.create = policy_create,
	.destroy = policy_destroy,
	.seed = policy_seed,
	.grant = policy_grant,
	.revoke = policy_revoke,
};

static const struct sbxloop_component local_components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SANDBOX,
		.name = "local",
		.ops = &local_sandbox_ops,
		.config_keys = local_keys,
		.summary = "sandboxes as directories on this host, bare or "
			   "under bubblewrap",
	},
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_POLICY,
		.name = "local",
		.ops = &local_policy_ops,
		.config_keys = local_keys,
		.summary = "per-domain egress grants for local.network: "
			   "proxy sandboxes; refuses them otherwise",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "local",
		.version = PACKAGE_VERSION,
		.components = local_components,
		.n_components =
			sizeof(local_components) / sizeof(local_components[0]),
};

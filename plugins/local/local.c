/*
 * The `local` module: the default sandbox provider, running the worker
 * as a host subprocess in a directory sandbox (dirbox.c), bare or under
 * bubblewrap, and a `local` policy granter that honestly refuses every
 * per-domain grant. The core reaches both through the descriptor only.
 */
#include "config.h"

#include "dirbox.h"

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>

#include <stdlib.h>
#include <string.h>

static const struct sbxloop_config_key local_keys[] = {
	{"isolation", SBXLOOP_VALUE_STRING, "none", "none|bwrap",
	 "confine commands with bubblewrap (bwrap) or run them bare (none)"},
	{"network", SBXLOOP_VALUE_STRING, "none", "none|host",
	 "under bwrap: no network (none) or the host's whole network (host)"},
	{NULL, 0, NULL, NULL, NULL}};

/* ---- sandbox provider ------------------------------------------------ */

static int local_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	const char *isolation = host->config_string(host, "local.isolation");
	const char *network = host->config_string(host, "local.network");
	struct dirbox *box = calloc(1, sizeof(*box));
	int rc;

	*ctx = NULL;
	if (!box)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "local: out of memory");
	rc = dirbox_init(box, host, "local",
			 isolation && strcmp(isolation, "bwrap") == 0,
			 network && strcmp(network, "host") == 0, err);
	if (rc) {
		free(box);
		return rc;
	}
	*ctx = box;
	return 0;
}

static void local_destroy(void *ctx)
{
	free(ctx);
}

static uint32_t local_capabilities(void *ctx)
{
	return ((struct dirbox *)ctx)->caps;
}

static int local_sandbox_create(void *ctx,
				const struct sbxloop_sandbox_spec *spec,
				struct sbxloop_sandbox_info *info,
				struct sbxloop_error *err)
{
	return dirbox_create(ctx, spec, info, err);
}

static int local_sandbox_remove(void *ctx, const char *name,
				struct sbxloop_error *err)
{
	return dirbox_remove(ctx, name, err);
}

static int local_exec(void *ctx, const char *name,
		      const struct sbxloop_exec_spec *spec,
		      struct sbxloop_proc_result *res,
		      struct sbxloop_error *err)
{
	return dirbox_exec(ctx, name, spec, res, err);
}

static int local_copy_in(void *ctx, const char *name, const char *host_path,
			 const char *sandbox_path, struct sbxloop_error *err)
{
	return dirbox_copy_in(ctx, name, host_path, sandbox_path, err);
}

static int local_copy_out(void *ctx, const char *name,
			  const char *sandbox_path, const char *host_path,
			  struct sbxloop_error *err)
{
	return dirbox_copy_out(ctx, name, sandbox_path, host_path, err);
}

static int local_list(void *ctx, const char *prefix,
		      void (*cb)(void *user,
				 const struct sbxloop_sandbox_entry *entry),
		      void *user, struct sbxloop_error *err)
{
	return dirbox_list(ctx, prefix, cb, user, err);
}

static const struct sbxloop_sandbox_ops local_sandbox_ops = {
	.struct_size = sizeof(struct sbxloop_sandbox_ops),
	.create = local_create,
	.destroy = local_destroy,
	.static_capabilities = DIRBOX_BEST_CAPS,
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
 * The local sandbox has no egress proxy: its network is either none or
 * the whole host, so no single domain can be opened. Refusing lets the
 * core audit a policy.deny instead of believing a grant took effect.
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

static int policy_seed(void *ctx, const char *sandbox,
		       const char *const *domains, struct sbxloop_error *err)
{
	struct local_policy *p = ctx;

	/* nothing to open is the one allowlist this granter can honour */
	if (!domains || !domains[0])
		return 0;
	return p->host->error_set(
		p->host, err, SBXLOOP_EUNSUPPORTED,
		"local: cannot seed sandbox '%s' with '%s': the local "
		"provider cannot enforce per-domain egress (its network is "
		"either none or the whole host)",
		sandbox ? sandbox : "", domains[0]);
}

static int policy_grant(void *ctx, const struct sbxloop_grant *grant,
			struct sbxloop_error *err)
{
	struct local_policy *p = ctx;

	return p->host->error_set(
		p->host, err, SBXLOOP_EUNSUPPORTED,
		"local: cannot grant '%s' to sandbox '%s': the local provider "
		"cannot enforce per-domain egress (its network is either none "
		"or the whole host)",
		grant && grant->domain ? grant->domain : "",
		grant && grant->sandbox ? grant->sandbox : "");
}

static const struct sbxloop_policy_ops local_policy_ops = {
	.struct_size = sizeof(struct sbxloop_policy_ops),
	.create = policy_create,
	.destroy = policy_destroy,
	.seed = policy_seed,
	.grant = policy_grant,
	.revoke = NULL,
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
		.summary = "refuses per-domain egress grants (the local "
			   "network is none or the whole host)",
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

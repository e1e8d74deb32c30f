/*
 * The `sbx` policy granter: network egress rules through `sbx policy`
 * (PEERS.md: `policy allow network SANDBOX a,b,c` and `policy rm network
 * SANDBOX --resource R`). Seeding is one call for the whole allowlist.
 * The core reaches it through sbxp_policy_ops only.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sbx.h"

struct granter {
	struct sbxp sbx;
};

static int pol_create(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err)
{
	struct granter *g = calloc(1, sizeof(*g));

	*ctx = g;
	if (!g)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "sbx: out of memory");
	sbxp_init(&g->sbx, host);
	return 0;
}

static void pol_destroy(void *ctx)
{
	free(ctx);
}

static int pol_seed(void *ctx, const char *sandbox, const char *const *domains,
		    struct sbxloop_error *err)
{
	struct granter *g = ctx;

	return sbxp_allow_network(&g->sbx, sandbox, domains, err);
}

static int pol_grant(void *ctx, const struct sbxloop_grant *grant,
		     struct sbxloop_error *err)
{
	struct granter *g = ctx;
	const char *args[] = {"policy",
			      "allow",
			      "network",
			      grant ? grant->sandbox : NULL,
			      grant ? grant->domain : NULL,
			      NULL};

	if (!grant || !grant->sandbox || !grant->domain || !*grant->domain)
		return g->sbx.host->error_set(g->sbx.host, err, SBXLOOP_EINVAL,
					      "sbx: a grant needs a sandbox "
					      "and a domain");
	return sbxp_checkv(&g->sbx, args, err);
}

static int pol_revoke(void *ctx, const struct sbxloop_grant *grant,
		      struct sbxloop_error *err)
{
	struct granter *g = ctx;
	const char *args[] = {"policy",     "rm",
			      "network",    grant ? grant->sandbox : NULL,
			      "--resource", grant ? grant->domain : NULL,
			      NULL};

	if (!grant || !grant->sandbox || !grant->domain || !*grant->domain)
		return g->sbx.host->error_set(g->sbx.host, err, SBXLOOP_EINVAL,
					      "sbx: a revocation needs a "
					      "sandbox and a domain");
	return sbxp_checkv(&g->sbx, args, err);
}

const struct sbxloop_policy_ops sbxp_policy_ops = {
	.struct_size = sizeof(struct sbxloop_policy_ops),
	.create = pol_create,
	.destroy = pol_destroy,
	.seed = pol_seed,
	.grant = pol_grant,
	.revoke = pol_revoke,
};

/*
 * Policy granter: applies network egress grants to a sandbox. Granters
 * form an ordered chain (config `plugins.policy`): the first that returns
 * 0 applied the grant; SBXLOOP_EUNSUPPORTED passes to the next; if none
 * can, the grant is refused and audited as a policy.deny event. A granter
 * that cannot enforce egress must refuse, never pretend.
 *
 * Required slots: create, destroy, seed, grant.
 */
#ifndef SBXLOOP_POLICY_H
#define SBXLOOP_POLICY_H

#include <sbxloop/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbxloop_grant {
	uint32_t struct_size;
	const char *sandbox; /* sandbox name */
	const char *domain;  /* "registry.npmjs.org", "*.crates.io" */
	const char *reason;  /* the plan's justification */
	const char *task_id;
	const char *phase; /* "execute" */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_policy_ops {
	uint32_t struct_size;
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);
	/* Apply the provisioning allowlist in one call. */
	int (*seed)(void *ctx, const char *sandbox, const char *const *domains,
		    struct sbxloop_error *err);
	int (*grant)(void *ctx, const struct sbxloop_grant *grant,
		     struct sbxloop_error *err);
	/* Optional: take a grant back (at EXECUTE exit). */
	int (*revoke)(void *ctx, const struct sbxloop_grant *grant,
		      struct sbxloop_error *err);
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};
SBXLOOP_OPS_HEAD_CHECK(struct sbxloop_policy_ops);

#ifdef __cplusplus
}
#endif
#endif

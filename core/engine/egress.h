/*
 * Network egress policy: the domain tiers, the operator's bounds, the
 * checks a plan's egress declaration must pass, the allowlist seeded at
 * provisioning, and the per-sandbox grant ledger the engine drives at
 * EXECUTE entry and exit. Everything it emits goes through a callback,
 * so the engine routes it to the event bus and tests capture it.
 */
#ifndef SL_EGRESS_H
#define SL_EGRESS_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include <sbxloop/policy.h>

#include "config/conf.h"
#include "common/util.h"

/* The tiers of UPSTREAM 9.1, each NULL-terminated. */
extern const char *const sl_egress_control_plane[];
extern const char *const sl_egress_github[];
extern const char *const sl_egress_registries[];
extern const char *const sl_egress_distro[];
extern const char *const sl_egress_declarable[];

/*
 * Is `domain` (an exact domain or `*.domain`) inside the operator's
 * bounds? Returns 1 when it is, 0 when it is not and then *why (when
 * `why` is non-NULL; caller frees) says which rule refused it. Deny wins
 * over every tier, by overlap: a domain is refused when any host of it
 * is one a policy.deny pattern covers (`*.evil.org` under a deny of
 * `evil.org`), and allowed only when an allow pattern covers all of it.
 */
int sl_egress_check(const struct sl_config *cfg, const char *domain,
		    char **why);

/*
 * A declared domain trimmed and lowercased (caller frees). Returns NULL
 * and a reason in *why (caller frees) when it is no exact domain or
 * `*.domain`: a bare `*`, a scheme, a path or a port.
 */
char *sl_egress_normalize(const char *declared, char **why);

/*
 * Check a plan's `egress` array ([{domain, reason}], may be NULL) in
 * place: domains are normalised, each one must be well-formed and in
 * bounds. Returns 0, or SBXLOOP_EINVAL with one line per problem and the
 * retry hint appended to `msg`.
 */
int sl_egress_validate_plan(const struct sl_config *cfg, cJSON *egress,
			    struct sl_buf *msg);

/*
 * The allowlists seeded at provisioning, NULL-terminated (free with
 * sl_egress_list_free). Agent: control plane + extra_allow_domains +
 * the registry and distro baseline, minus every entry that overlaps a
 * policy.deny pattern (a wildcard extra is dropped whole; the control
 * plane excepted: the agent cannot work without it). GitHub: the github
 * tier, the host of github.api_url (GitHub Enterprise) and
 * extra_allow_domains, minus the same.
 */
char **sl_egress_agent_seed(const struct sl_config *cfg);
char **sl_egress_github_seed(const struct sl_config *cfg);
void sl_egress_list_free(char **list);

/* One policy granter of the chain (borrowed). */
struct sl_egress_granter {
	const char *name; /* for messages */
	const struct sbxloop_policy_ops *ops;
	void *ctx;
};

/*
 * The grant ledger of one sandbox. `emit` receives every policy event;
 * it owns `data`. The granters and strings are copied or borrowed as
 * the prototype says.
 */
struct sl_egress_ledger;

/*
 * New ledger for `sandbox` (copied), pre-seeded with what provisioning
 * opened (sl_egress_agent_seed). `chain` is borrowed for the ledger's
 * life. Free with sl_egress_ledger_free.
 */
struct sl_egress_ledger *sl_egress_ledger_new(
	const struct sl_config *cfg, const char *sandbox,
	const struct sl_egress_granter *chain, size_t n_chain,
	void (*emit)(void *user, const char *type, cJSON *data), void *user);
void sl_egress_ledger_free(struct sl_egress_ledger *ledger);

/*
 * At EXECUTE entry: grant each declared {domain, reason} of `egress`
 * (a plan's array, borrowed). Out of bounds or refused by every granter
 * → policy.deny; seeded or already held by this task → nothing; granted
 * → policy.allow; granted for another task whose EXECUTE still runs (a
 * lane sharing the sandbox) → this task holds it too, policy.allow
 * naming both, no granter call.
 * Returns 0, or a negative code when a granter failed for another
 * reason than being unable to (infrastructure: the caller fails).
 */
int sl_egress_grant_all(struct sl_egress_ledger *ledger, const char *task_id,
			const cJSON *egress, struct sbxloop_error *err);

/*
 * At EXECUTE exit of `task_id`: the task lets go of its grants; each
 * one no task holds any more is revoked (when its granter can), a
 * policy.revoke naming `task_id`. `task_id` NULL (teardown, a signal)
 * revokes every grant. Grants of granters without a revoke slot stay
 * for the sandbox's life. Returns 0, or the first failure's code after
 * trying them all (the grant then stays in the ledger).
 */
int sl_egress_revoke_all(struct sl_egress_ledger *ledger, const char *task_id,
			 struct sbxloop_error *err);

/* Can the sandbox reach `domain` (normalised) already: is it covered by
 * a seeded or a current granted pattern? */
int sl_egress_ledger_has(const struct sl_egress_ledger *ledger,
			 const char *domain);

/* `sbxloop config policy`: the effective policy per phase. */
void sl_egress_print_policy(const struct sl_config *cfg, FILE *out);

#endif

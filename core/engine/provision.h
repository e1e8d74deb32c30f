/*
 * The sandbox pair of one run (UPSTREAM.md 8.4, 8.5 and 8.7): the tokens
 * checked before anything exists, the agent sandbox and, only when
 * github.repo is set, the github sandbox, the secret strategy chain
 * walked for each, and the teardown that revokes every provided secret
 * and removes both. Private to the core; the engine drives it.
 */
#ifndef SL_PROVISION_H
#define SL_PROVISION_H

#include <signal.h>

#include <sbxloop/sandbox.h>

#include "host/core.h"

struct sl_pair;

/* At most this many lane sandboxes (sandbox.lanes: per-lane). */
#define SL_PAIR_LANES_MAX 32

/* A new, empty pair; core is borrowed. */
struct sl_pair *sl_pair_new(struct sl_core *core);
/* Free the pair; it does not tear anything down (a kept pair stays). */
void sl_pair_free(struct sl_pair *pair);

/*
 * Make only the github sandbox (`sbxloop deliver`): no model token is
 * needed and no agent sandbox is made. Call before anything else.
 */
void sl_pair_github_only(struct sl_pair *pair);

/*
 * Check that every token the pair needs is set: the model token of the
 * agent preset (when a secret strategy is configured or the agent is a
 * command), and GH_TOKEN or GITHUB_TOKEN when github.repo is set. The
 * values are copied into the pair. SBXLOOP_EINVAL with a message naming
 * the missing variable; nothing is created either way.
 */
int sl_pair_check_tokens(struct sl_pair *pair, struct sbxloop_error *err);

/*
 * Create sbxloop-RUN-agent, then sbxloop-RUN-github when github.repo is
 * set, each on `workspace` (absolute host path), and hand each its token
 * through the secret strategy chain. `cancel` (may be NULL) is looked at
 * between steps. On any failure every secret provided so far is revoked
 * and every sandbox created is removed before returning.
 */
int sl_pair_up(struct sl_pair *pair, const char *run_id, const char *workspace,
	       const volatile sig_atomic_t *cancel, struct sbxloop_error *err);

/* The agent sandbox, or NULL while it does not exist (borrowed). */
const struct sbxloop_sandbox_info *sl_pair_agent(const struct sl_pair *pair);

/*
 * Copy the info of the sandbox of `role` ("agent", "github", or a lane's
 * "laneN") into *out:
 * 1 when it exists, else 0. Its strings live as long as the pair.
 */
int sl_pair_box(struct sl_pair *pair, const char *role,
		struct sbxloop_sandbox_info *out);

/*
 * The names of the sandboxes that exist, agent first, then github, then
 * the lanes', into names[] (borrowed from the pair, at most `max`);
 * returns how many.
 */
size_t sl_pair_names(const struct sl_pair *pair, const char **names,
		     size_t max);

/*
 * The agent sandbox of lane `lane` (0-based; sandbox.lanes: per-lane):
 * sbxloop-RUN-laneN on `workspace`, made like the run's agent sandbox
 * (seeded allowlist, the model token through the strategy chain) when
 * it does not exist yet; its info into *out. The pair must be up. Safe
 * from a lane's thread (the pair's lock serialises creations). On
 * failure whatever was made of it is revoked and removed.
 */
int sl_pair_lane_up(struct sl_pair *pair, size_t lane, const char *workspace,
		    const volatile sig_atomic_t *cancel,
		    struct sbxloop_sandbox_info *out,
		    struct sbxloop_error *err);

/* Revoke lane `lane`'s secret and remove its sandbox (if it exists). */
void sl_pair_lane_down(struct sl_pair *pair, size_t lane);

/*
 * Revoke every provided secret, then remove the sandboxes. Idempotent and
 * safe to call from another thread than sl_pair_up's (the signal path of
 * `sbxloop run`): a call during provisioning waits for it to end, which
 * setting `cancel` first cuts short to the current step.
 */
void sl_pair_down(struct sl_pair *pair);

/*
 * The components chain `path` (plugins.secrets, plugins.policy) names
 * in effect, NULL-terminated (caller frees the array, not the strings).
 * A component of a module that also provides a sandbox provider (sbx's
 * strategies and granter, local's granter) acts on that provider's
 * sandboxes only and is left out with any other provider: the default
 * chains name sbx's, so a config that picks `local` gets none. With
 * `warn`, leaving out an explicitly configured one is logged.
 */
const char **sl_chain_names(const struct sl_core *core, const char *path,
			    enum sbxloop_kind kind, int warn, size_t *n);

/*
 * The security probes' pair (`sbxloop doctor --deep`): hand `model` and
 * `gh` (borrowed; copied, registered for redaction, wiped on free) to
 * the agent and github sandboxes as if they were the real tokens, and
 * make both sandboxes whatever github.repo says. Replaces the token
 * check; call before sl_pair_up.
 */
void sl_pair_use_canaries(struct sl_pair *pair, const char *model,
			  const char *gh);

/* The model token's variable (borrowed), or NULL when none is known. */
const char *sl_pair_model_env(const struct sl_pair *pair);

/*
 * Did the token of the sandbox of `role` go in through a strategy that
 * keeps it outside (never_in_sandbox), or none went in at all?
 */
int sl_pair_secret_outside(struct sl_pair *pair, const char *role);

#endif

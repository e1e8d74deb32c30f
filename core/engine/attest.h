/*
 * The security conformance suite (issue 17): probes run through the
 * ordinary worker in a provisioned sandbox pair, each checking one
 * capability the provider claims (SBXLOOP_CAP_*) or the core's
 * credential split, and measured from the host wherever the host can
 * see the effect. `sbxloop doctor --deep` runs the full suite on a
 * throwaway pair; the engine runs the quick subset at provisioning
 * (run.attest). Private to the core.
 */
#ifndef SL_ATTEST_H
#define SL_ATTEST_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/provision.h"
#include "host/core.h"

enum sl_attest_level { SL_ATTEST_OFF = 0, SL_ATTEST_QUICK, SL_ATTEST_FULL };

#define SL_PROBES_MAX 24
#define SL_MEASURED_MAX 200
/* the canaries' public half: "sbxattest" + 'm' or 'g' + 8 hex */
#define SL_CANARY_PREFIX "sbxattest"
#define SL_CANARY_NONCE_LEN 8

/* One probe's row. Strings are static or held in the struct. */
struct sl_probe {
	const char *name;
	const char *role;    /* "agent" | "github" */
	uint32_t capability; /* one SBXLOOP_CAP_* bit; 0: credential split */
	int claimed;         /* the sandbox claims it (split: always) */
	int ran;             /* measured at all */
	int holds;           /* what was measured meets the capability */
	int pass;            /* holds, or not claimed */
	char measured[SL_MEASURED_MAX];
};

struct sl_attest {
	struct sl_probe probes[SL_PROBES_MAX];
	size_t n;
	uint32_t claimed[2]; /* per role: agent, github */
	uint32_t measured[2];
	int have_github;
	/* the survivor probe: the marker the host looks for after removal */
	char survivor_arg[32];
	int survivor_row; /* index, or -1 */
};

/* What to run. */
struct sl_attest_opts {
	enum sl_attest_level level;
	/*
	 * The canaries' nonce (SL_CANARY_NONCE_LEN hex), when the pair
	 * holds canaries (sl_pair_use_canaries): the secret probes then
	 * search every source for them; NULL: they check variable names.
	 */
	const char *nonce;
	/* the caller removes the pair and calls sl_attest_after_removal */
	int removal;
	/*
	 * The agent sandbox to probe by its sl_pair_box label: NULL for
	 * the run's ("agent"), a lane's ("laneN"); with one set, the github
	 * sandbox is left out (it was probed with the pair).
	 */
	const char *agent_box;
	/* the workspace is the probes' own, to make anything in */
	int scratch;
};

/* "off" | "quick" | "full"; SBXLOOP_EINVAL on anything else. */
int sl_attest_level_parse(const char *text, enum sl_attest_level *out);

/*
 * Run the suite on the pair's sandboxes (the pair is up, `workspace` its
 * host workspace) into *a. 0 when the probes ran, whatever they found;
 * an error only when a probe job could not run at all. Every token
 * stays out of argv, output and `err`: the secret probes search for the
 * canaries' public half only.
 */
int sl_attest_pair(struct sl_core *core, struct sl_pair *pair,
		   const char *workspace, const struct sl_attest_opts *opts,
		   struct sl_attest *a, struct sbxloop_error *err);

/*
 * After the pair was removed: measure the survivor probe (any process
 * the agent sandbox left behind is killed, by its pid).
 */
void sl_attest_after_removal(struct sl_attest *a);

/* The first failed probe, or NULL. */
const struct sl_probe *sl_attest_failure(const struct sl_attest *a);

/* The capability's name ("filesystem_confined"; "credential_split"). */
const char *sl_attest_cap_name(uint32_t cap);

/*
 * The sandbox.attested data of `role` (caller owns): role, claimed and
 * measured capability names, the probes.
 */
cJSON *sl_attest_event(const struct sl_attest *a, const char *role);

/* "sandbox 'agent' claims C but probe P measured M" (caller frees). */
char *sl_attest_reason(const struct sl_probe *p);

/*
 * Fresh canaries into model[] and gh[] (each at least 64 bytes) and
 * their nonce into nonce[] (SL_CANARY_NONCE_LEN + 1): random values the
 * caller registers as secrets and wipes.
 */
int sl_attest_canaries(char *model, char *gh, char *nonce,
		       struct sbxloop_error *err);

#endif

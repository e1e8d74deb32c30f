/*
 * `sbxloop doctor --deep`: the security conformance suite (attest.c) on
 * a throwaway sandbox pair of the configured provider, provisioned with
 * canary tokens (no model is needed), then torn down; a row per probe
 * and exit 1 when a sandbox measures weaker than its provider claims.
 * Called only by sl_cmd_doctor (cmd_doctor.c).
 */
#include "config.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>

#include "cli/cli.h"
#include "common/util.h"
#include "engine/attest.h"
#include "engine/provision.h"
#include "host/loader.h"
#include "host/redact.h"

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static const char *result_of(const struct sl_probe *p)
{
	if (!p->ran)
		return "skip";
	if (p->claimed)
		return p->holds ? "pass" : "FAIL";
	return p->holds ? "stronger" : "n/a";
}

static void print_caps(const char *label, uint32_t caps)
{
	char buf[512];

	sl_caps_format(caps, buf, sizeof(buf));
	printf("  %-9s %s\n", label, *buf ? buf : "(none)");
}

static void print_report(const struct sl_attest *a)
{
	size_t i;
	int r;

	printf("\n%-27s %-7s %-24s %-7s %-8s %s\n", "PROBE", "SANDBOX",
	       "CAPABILITY", "CLAIMED", "RESULT", "MEASURED");
	for (i = 0; i < a->n; i++) {
		const struct sl_probe *p = &a->probes[i];

		sl_print(stdout, "%-27s %-7s %-24s %-7s %-8s %s\n", p->name,
			 p->role, sl_attest_cap_name(p->capability),
			 p->claimed ? "yes" : "no", result_of(p), p->measured);
	}
	for (r = 0; r < (a->have_github ? 2 : 1); r++) {
		printf("\n%s sandbox:\n", r ? "github" : "agent");
		print_caps("claimed", a->claimed[r]);
		print_caps("measured", a->measured[r]);
	}
}

/*
 * The suite on a throwaway pair: 0 when every claim held, SL_EXIT_FAIL
 * when one did not, and SL_EXIT_FAIL with a message when the pair could
 * not be made.
 */
int sl_doctor_deep(struct sl_cli *cli)
{
	struct sl_core *core = cli->core;
	const char *name = sl_config_str(core->cfg, "plugins.sandbox");
	const char *state = sl_core_state_dir(core);
	struct sbxloop_error err = {0, ""};
	struct sl_attest_opts o = {SL_ATTEST_FULL, NULL, 1, NULL, 1};
	char model[64], gh[64], nonce[SL_CANARY_NONCE_LEN + 1];
	char run_id[32];
	char *ws = NULL;
	struct sl_attest *a = NULL;
	struct sl_pair *pair = NULL;
	const struct sl_probe *bad;
	int rc, exit = SL_EXIT_FAIL;

	printf("\nsecurity probes (doctor --deep): a throwaway pair of "
	       "provider '%s', canary tokens\n",
	       name ? name : "local");
	if (!state) {
		sl_cli_error("cannot create the state directory");
		return SL_EXIT_FAIL;
	}
	rc = sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX,
				 name ? name : "local", &core->sandbox, &err);
	if (rc < 0) {
		sl_cli_error("cannot start sandbox provider '%s': %s",
			     name ? name : "local", err.message);
		return SL_EXIT_FAIL;
	}
	sl_attest_canaries(model, gh, nonce, &err);
	o.nonce = nonce;
	snprintf(run_id, sizeof(run_id), "attest%s", nonce);
	sl_core_set_run(core, run_id);
	ws = sl_xasprintf("%s/attest-%s/workspace", state, nonce);
	if (sl_mkdirs(ws, 0755) < 0) {
		sl_cli_error("cannot create '%s'", ws);
		goto out;
	}
	pair = sl_pair_new(core);
	sl_pair_use_canaries(pair, model, gh);
	memset(model, 0, sizeof(model));
	memset(gh, 0, sizeof(gh));
	rc = sl_pair_up(pair, run_id, ws, NULL, &err);
	if (rc < 0) {
		sl_cli_error("cannot provision the probe pair: %s",
			     err.message);
		goto out;
	}
	a = sl_xcalloc(1, sizeof(*a));
	rc = sl_attest_pair(core, pair, ws, &o, a, &err);
	sl_pair_down(pair);
	if (rc < 0) {
		sl_cli_error("the security probes could not run: %s",
			     err.message);
		goto out;
	}
	sl_attest_after_removal(a);
	print_report(a);
	bad = sl_attest_failure(a);
	if (bad) {
		char *why = sl_attest_reason(bad);

		sl_cli_error("%s", why);
		free(why);
	} else {
		printf("\nevery claimed capability held\n");
		exit = SL_EXIT_OK;
	}
out:
	if (pair) {
		sl_pair_down(pair);
		sl_pair_free(pair);
	}
	if (ws) {
		char *top = sl_xasprintf("%s/attest-%s", state, nonce);

		nftw(top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(top);
		free(ws);
	}
	free(a);
	sl_instance_destroy(&core->sandbox);
	return exit;
}

/*
 * The egress grant ledger and its audit: grants walking a chain of fake
 * policy granters (and the real local granter), idempotence, revokes at
 * phase exits, and the policy.allow / policy.deny events each leaves.
 */
#include "config.h"

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/policy.h>

#include "config/conf.h"
#include "host/core.h"
#include "engine/egress.h"
#include "engine/guard.h"
#include "common/policy_patterns.h"
#include "common/util.h"

#include "egress-support.h"

/* ------------------------------------------------- the grant ledger */

/* A fake granter: what it was asked, and how it answers. */
struct fake {
	const char *name;
	int grant_rc; /* 0, SBXLOOP_EUNSUPPORTED, SBXLOOP_EINFRA */
	int revoke_rc;
	char calls[1024]; /* "grant:d task phase sandbox;revoke:d;" */
};

static int fake_grant(void *ctx, const struct sbxloop_grant *g,
		      struct sbxloop_error *err)
{
	struct fake *f = ctx;
	size_t n = strlen(f->calls);

	snprintf(f->calls + n, sizeof(f->calls) - n, "grant:%s %s %s %s;",
		 g->domain, g->task_id, g->phase, g->sandbox);
	if (f->grant_rc)
		return sl_error(err, f->grant_rc,
				"%s: cannot enforce egress for '%s'", f->name,
				g->domain);
	return 0;
}

static int fake_revoke(void *ctx, const struct sbxloop_grant *g,
		       struct sbxloop_error *err)
{
	struct fake *f = ctx;
	size_t n = strlen(f->calls);

	snprintf(f->calls + n, sizeof(f->calls) - n, "revoke:%s;", g->domain);
	if (f->revoke_rc)
		return sl_error(err, f->revoke_rc, "%s: revoke failed",
				f->name);
	return 0;
}

static const struct sbxloop_policy_ops fake_ops = {
	.struct_size = sizeof(struct sbxloop_policy_ops),
	.grant = fake_grant,
	.revoke = fake_revoke,
};

/* A granter built against an SDK whose table ended before revoke. */
static const struct sbxloop_policy_ops fake_ops_no_revoke = {
	.struct_size = offsetof(struct sbxloop_policy_ops, revoke),
	.grant = fake_grant,
	.revoke = fake_revoke,
};

static cJSON *events;

static void capture(void *user, const char *type, cJSON *data)
{
	cJSON *e = cJSON_CreateObject();

	(void)user;
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddItemToObject(e, "data", data);
	cJSON_AddItemToArray(events, e);
}

static void ledger_setup(void)
{
	setup();
	events = cJSON_CreateArray();
}

static void ledger_teardown(void)
{
	cJSON_Delete(events);
	events = NULL;
	teardown();
}

static const char *ev_type(int i)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(events, i), "type")
		->valuestring;
}

static const char *ev_str(int i, const char *key)
{
	const cJSON *d =
		cJSON_GetObjectItem(cJSON_GetArrayItem(events, i), "data");
	const cJSON *v = cJSON_GetObjectItem(d, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *declared =
	"[{\"domain\":\"api.example.com\",\"reason\":\"fetch the schema\"},"
	"{\"domain\":\"pypi.org\",\"reason\":\"wheels\"}]";

START_TEST(test_grant_emits_policy_allow_with_context)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse(declared);

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sbxloop-r1-agent", chain, 1, capture,
				 NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	/* pypi.org is seeded: no grant, no event */
	ck_assert_str_eq(f.calls,
			 "grant:api.example.com t1 execute sbxloop-r1-agent;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	ck_assert_str_eq(ev_type(0), "policy.allow");
	ck_assert_str_eq(ev_str(0, "task_id"), "t1");
	ck_assert_str_eq(ev_str(0, "phase"), "execute");
	ck_assert_str_eq(ev_str(0, "domain"), "api.example.com");
	ck_assert_str_eq(ev_str(0, "reason"), "fetch the schema");
	ck_assert_str_eq(ev_str(0, "sandbox"), "sbxloop-r1-agent");
	ck_assert_str_eq(ev_str(0, "message"),
			 "egress granted: api.example.com — fetch the schema");
	ck_assert(sl_egress_ledger_has(l, "api.example.com"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_domain_under_a_seeded_wildcard_needs_no_grant)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"proxy.githubcopilot.com\"},"
				"{\"domain\":\"*.example.com\"},"
				"{\"domain\":\"cdn.example.com\"}]");

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	/* the wildcard grant covers the later, narrower declaration */
	ck_assert_str_eq(f.calls, "grant:*.example.com t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_grant_is_idempotent_per_domain)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops_no_revoke, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse(declared);

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	/* a second task joins without a granter call, and says so */
	ck_assert_int_eq(sl_egress_grant_all(l, "t2", eg, &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 2);
	ck_assert_str_eq(ev_type(1), "policy.allow");
	ck_assert_str_eq(ev_str(1, "task_id"), "t2");
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

/*
 * Lanes sharing a sandbox: a grant stays open while any task's EXECUTE
 * holds it, and is revoked (naming the task) when the last one leaves.
 */
START_TEST(test_grant_stays_while_another_lane_executes)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse(declared);

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(sl_egress_grant_all(l, "t2", eg, &err), 0);
	/* t1 leaves: t2 still executes, nothing is revoked */
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;");
	ck_assert(sl_egress_ledger_has(l, "api.example.com"));
	/* t1 again (a revision) holds it again, t2 leaves: still open */
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(sl_egress_revoke_all(l, "t2", &err), 0);
	ck_assert(sl_egress_ledger_has(l, "api.example.com"));
	/* the last one leaves: revoked, the event names it */
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;"
				  "revoke:api.example.com;");
	ck_assert(!sl_egress_ledger_has(l, "api.example.com"));
	ck_assert_str_eq(ev_type(cJSON_GetArraySize(events) - 1),
			 "policy.revoke");
	ck_assert_str_eq(ev_str(cJSON_GetArraySize(events) - 1, "task_id"),
			 "t1");
	/* teardown (no task) revokes whatever is left */
	ck_assert_int_eq(sl_egress_grant_all(l, "t3", eg, &err), 0);
	ck_assert_int_eq(sl_egress_grant_all(l, "t4", eg, &err), 0);
	ck_assert_int_eq(sl_egress_revoke_all(l, NULL, &err), 0);
	ck_assert(!sl_egress_ledger_has(l, "api.example.com"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_out_of_bounds_grant_is_a_policy_deny)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"pypi.org\",\"reason\":"
				"\"w\"},{\"domain\":\"api.example.com\"}]");

	/* bounds tightened after the plan was stored (a resume) */
	load("policy:\n  deny: [pypi.org]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_str_eq(f.calls, "");
	ck_assert_int_eq(cJSON_GetArraySize(events), 2);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_str_eq(ev_str(0, "domain"), "pypi.org");
	ck_assert_str_eq(ev_str(0, "sandbox"), "sb");
	ck_assert_str_eq(ev_str(0, "message"),
			 "egress refused: pypi.org — matches policy.deny "
			 "pattern 'pypi.org'");
	ck_assert_str_eq(ev_type(1), "policy.deny");
	ck_assert_str_eq(ev_str(1, "message"),
			 "egress refused: api.example.com — not covered by "
			 "policy.allow in sbxloop.yaml");
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_unsupporting_granter_passes_to_the_next)
{
	struct fake a = {"first", SBXLOOP_EUNSUPPORTED, 0, ""};
	struct fake b = {"second", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"first", &fake_ops, &a},
					    {"second", &fake_ops, &b}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"astral.sh\"}]");

	load("");
	l = sl_egress_ledger_new(cfg, "sb", chain, 2, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_str_eq(a.calls, "grant:astral.sh t1 execute sb;");
	ck_assert_str_eq(b.calls, "grant:astral.sh t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	ck_assert_str_eq(ev_type(0), "policy.allow");
	ck_assert_str_eq(ev_str(0, "granter"), "second");
	ck_assert_str_eq(ev_str(0, "message"),
			 "egress granted: astral.sh — no justification given");
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_granter_without_egress_refuses_with_why)
{
	struct fake a = {"nonet", SBXLOOP_EUNSUPPORTED, 0, ""};
	struct sl_egress_granter chain[] = {{"nonet", &fake_ops, &a}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"astral.sh\",\"reason\":"
				"\"uv\"}]");

	load("");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_str_eq(ev_str(0, "task_id"), "t1");
	ck_assert_str_eq(ev_str(0, "phase"), "execute");
	ck_assert_str_eq(ev_str(0, "domain"), "astral.sh");
	ck_assert_str_eq(ev_str(0, "reason"), "uv");
	ck_assert_str_eq(ev_str(0, "message"),
			 "egress refused: astral.sh — no granter can enforce "
			 "it: nonet: cannot enforce egress for 'astral.sh'");
	ck_assert(!sl_egress_ledger_has(l, "astral.sh"));
	/* a refusal is not remembered: the next EXECUTE asks again */
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(cJSON_GetArraySize(events), 2);
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_empty_granter_chain_refuses_every_grant)
{
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"astral.sh\"}]");

	load("");
	l = sl_egress_ledger_new(cfg, "sb", NULL, 0, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_ptr_nonnull(
		strstr(ev_str(0, "message"), "plugins.policy is empty"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_granter_failure_is_audited_and_returned)
{
	struct fake a = {"broken", SBXLOOP_EINFRA, 0, ""};
	struct sl_egress_granter chain[] = {{"broken", &fake_ops, &a}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"astral.sh\"},"
				"{\"domain\":\"center.conan.io\"}]");

	load("");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err),
			 SBXLOOP_EINFRA);
	ck_assert_ptr_nonnull(strstr(err.message, "broken"));
	/* it stops at the failure */
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_ptr_nonnull(strstr(ev_str(0, "message"),
				     "egress grant failed: astral.sh"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_revoke_at_execute_exit_then_regrant_at_next_entry)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse(declared);

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;"
				  "revoke:api.example.com;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 2);
	ck_assert_str_eq(ev_type(1), "policy.revoke");
	ck_assert_str_eq(ev_str(1, "domain"), "api.example.com");
	ck_assert_str_eq(ev_str(1, "task_id"), "t1");
	ck_assert_str_eq(ev_str(1, "sandbox"), "sb");
	ck_assert(!sl_egress_ledger_has(l, "api.example.com"));
	/* seeded domains are never revoked */
	ck_assert(sl_egress_ledger_has(l, "pypi.org"));
	/* a revision re-enters EXECUTE: granted again */
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(cJSON_GetArraySize(events), 3);
	ck_assert_str_eq(ev_type(2), "policy.allow");
	/* nothing left to revoke twice */
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), 0);
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), 0);
	ck_assert_int_eq(cJSON_GetArraySize(events), 4);
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_granter_without_revoke_keeps_the_grant)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops_no_revoke, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse(declared);

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	ck_assert(sl_egress_ledger_has(l, "api.example.com"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_failed_revoke_is_audited_and_the_grant_stays)
{
	struct fake f = {"fake", 0, SBXLOOP_EINFRA, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse(declared);

	load("policy:\n  allow: [\"*.example.com\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(sl_egress_revoke_all(l, "t1", &err), SBXLOOP_EINFRA);
	ck_assert_str_eq(ev_type(1), "policy.revoke");
	ck_assert_ptr_nonnull(
		strstr(ev_str(1, "message"), "egress revoke failed"));
	ck_assert(sl_egress_ledger_has(l, "api.example.com"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

/* The real `local` granter, loaded from the build tree. */
START_TEST(test_local_granter_refuses_with_a_policy_deny)
{
	struct sl_config_opts opts;
	struct sl_core *core = NULL;
	struct sl_instance inst;
	struct sbxloop_error err = {0, ""};
	struct sl_egress_granter chain[1];
	struct sl_egress_ledger *l;
	char *errors = NULL;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"astral.sh\"}]");
	FILE *f = fopen(cfg_path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "state_dir: %s/state\nplugins:\n  policy: [local]\n", dir);
	fclose(f);
	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	ck_assert_msg(sl_core_open(&core, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_POLICY, "local",
					  &inst, &err) == 0,
		      "%s", err.message);
	chain[0].name = "local";
	chain[0].ops = inst.ops;
	chain[0].ctx = inst.ctx;
	l = sl_egress_ledger_new(core->cfg, "sbxloop-r1-agent", chain, 1,
				 capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_ptr_nonnull(strstr(ev_str(0, "message"),
				     "cannot enforce per-domain egress"));
	sl_egress_ledger_free(l);
	sl_instance_destroy(&inst);
	sl_core_close(core);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_wildcard_grant_over_a_deny_never_reaches_a_granter)
{
	struct fake f = {"fake", 0, 0, ""};
	struct sl_egress_granter chain[] = {{"fake", &fake_ops, &f}};
	struct sbxloop_error err = {0, ""};
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"*.evil.org\",\"reason\":"
				"\"mirror\"},{\"domain\":\"*.a.evil.org\"},"
				"{\"domain\":\"*.good.org\"}]");

	/* a stored plan, bounds tightened since, and an extra that the deny
	 * overlaps: none of it may open evil.org */
	load("sandbox:\n  extra_allow_domains: [\"*.evil.org\"]\n"
	     "policy:\n  deny: [evil.org, \"*.a.evil.org\"]\n"
	     "  allow: [\"*\"]\n");
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, capture, NULL);
	ck_assert_int_eq(sl_egress_grant_all(l, "t1", eg, &err), 0);
	ck_assert_str_eq(f.calls, "grant:*.good.org t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 3);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_str_eq(ev_str(0, "domain"), "*.evil.org");
	ck_assert_str_eq(ev_str(0, "message"),
			 "egress refused: *.evil.org — covers hosts that "
			 "policy.deny pattern 'evil.org' denies");
	ck_assert_str_eq(ev_type(1), "policy.deny");
	ck_assert_str_eq(ev_str(1, "domain"), "*.a.evil.org");
	ck_assert_str_eq(ev_type(2), "policy.allow");
	ck_assert(!sl_egress_ledger_has(l, "evil.org"));
	ck_assert(!sl_egress_ledger_has(l, "x.evil.org"));
	ck_assert(!sl_egress_ledger_has(l, "x.a.evil.org"));
	sl_egress_ledger_free(l);
	cJSON_Delete(eg);
}
END_TEST

/* How many `sbx policy allow` calls the fake sbx recorded, and the
 * domains they named (space-joined argv after "policy allow network"). */
static int sl_allow_calls(const char *fake_dir, struct sl_buf *domains)
{
	char *path = sl_xasprintf("%s/invocations.jsonl", fake_dir);
	size_t len;
	char *text = sl_read_file(path, &len, 1 << 20), *line, *save;
	int n = 0;

	free(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *rec = cJSON_Parse(line);
		const cJSON *argv = cJSON_GetObjectItem(rec, "argv");
		const cJSON *a0 = cJSON_GetArrayItem(argv, 0);
		const cJSON *a1 = cJSON_GetArrayItem(argv, 1);
		const cJSON *dom = cJSON_GetArrayItem(argv, 4);

		if (cJSON_IsString(a0) && !strcmp(a0->valuestring, "policy") &&
		    cJSON_IsString(a1) && !strcmp(a1->valuestring, "allow")) {
			n++;
			if (cJSON_IsString(dom))
				sl_buf_addf(domains, "%s;", dom->valuestring);
		}
		cJSON_Delete(rec);
	}
	free(text);
	return n;
}

/* The attack of issue 11 item 2 end to end: a plan's `*.evil.org` under
 * a deny of evil.org, through the real granter chain (local, which
 * cannot enforce, then sbx on the fake sbx CLI). */
START_TEST(test_wildcard_over_a_deny_makes_no_sbx_policy_allow_call)
{
	struct sl_config_opts opts;
	struct sl_core *core = NULL;
	struct sl_instance local, sbx;
	struct sbxloop_error err = {0, ""};
	struct sl_egress_granter chain[2];
	struct sl_egress_ledger *l;
	struct sl_buf allowed = SL_BUF_INIT;
	char *errors = NULL, *fake_dir, *path, *cmd;
	const char *builddir = getenv("SBXLOOP_BUILDDIR");
	cJSON *eg = cJSON_Parse("[{\"domain\":\"*.evil.org\",\"reason\":"
				"\"the mirror\"},"
				"{\"domain\":\"*.good.org\"}]");
	FILE *f = fopen(cfg_path, "w");

	ck_assert_msg(builddir != NULL, "SBXLOOP_BUILDDIR is not set");
	fake_dir = sl_xasprintf("%s/fake", dir);
	path = sl_xasprintf("%s/tests/fakes/bin:%s", builddir, getenv("PATH"));
	setenv("PATH", path, 1);
	setenv("SBX_FAKE_DIR", fake_dir, 1);
	free(path);
	cmd = sl_xasprintf("sbx create --name=sbxloop-r1-agent shell '%s' "
			   ">/dev/null",
			   dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"state_dir: %s/state\nplugins:\n  policy: [local, sbx]\n"
		"policy:\n  deny: [evil.org]\n  allow: [\"*\"]\n",
		dir);
	fclose(f);
	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	opts.no_env = 1;
	ck_assert_msg(sl_core_open(&core, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_POLICY, "local",
					  &local, &err) == 0,
		      "%s", err.message);
	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_POLICY, "sbx",
					  &sbx, &err) == 0,
		      "%s", err.message);
	chain[0].name = "local";
	chain[0].ops = local.ops;
	chain[0].ctx = local.ctx;
	chain[1].name = "sbx";
	chain[1].ops = sbx.ops;
	chain[1].ctx = sbx.ctx;
	l = sl_egress_ledger_new(core->cfg, "sbxloop-r1-agent", chain, 2,
				 capture, NULL);
	ck_assert_msg(sl_egress_grant_all(l, "t1", eg, &err) == 0, "%s",
		      err.message);
	/* the only `sbx policy allow` is the in-bounds *.good.org */
	ck_assert_int_eq(sl_allow_calls(fake_dir, &allowed), 1);
	ck_assert_str_eq(sl_buf_str(&allowed), "*.good.org;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 2);
	ck_assert_str_eq(ev_type(0), "policy.deny");
	ck_assert_str_eq(ev_str(0, "task_id"), "t1");
	ck_assert_str_eq(ev_str(0, "domain"), "*.evil.org");
	ck_assert_str_eq(ev_str(0, "reason"), "the mirror");
	ck_assert_str_eq(ev_str(0, "sandbox"), "sbxloop-r1-agent");
	ck_assert_str_eq(ev_str(0, "message"),
			 "egress refused: *.evil.org — covers hosts that "
			 "policy.deny pattern 'evil.org' denies");
	ck_assert_str_eq(ev_type(1), "policy.allow");
	ck_assert_str_eq(ev_str(1, "granter"), "sbx");
	sl_egress_ledger_free(l);
	sl_instance_destroy(&sbx);
	sl_instance_destroy(&local);
	sl_core_close(core);
	sl_buf_release(&allowed);
	free(fake_dir);
	cJSON_Delete(eg);
}
END_TEST

static Suite *egress_grants_suite(void)
{
	Suite *s = suite_create("egress grants");
	TCase *tl = tcase_create("ledger");

	tcase_add_checked_fixture(tl, ledger_setup, ledger_teardown);
	tcase_add_test(tl, test_grant_emits_policy_allow_with_context);
	tcase_add_test(tl, test_grant_is_idempotent_per_domain);
	tcase_add_test(tl, test_grant_stays_while_another_lane_executes);
	tcase_add_test(tl, test_domain_under_a_seeded_wildcard_needs_no_grant);
	tcase_add_test(tl, test_out_of_bounds_grant_is_a_policy_deny);
	tcase_add_test(tl, test_unsupporting_granter_passes_to_the_next);
	tcase_add_test(tl, test_granter_without_egress_refuses_with_why);
	tcase_add_test(tl, test_empty_granter_chain_refuses_every_grant);
	tcase_add_test(tl, test_granter_failure_is_audited_and_returned);
	tcase_add_test(tl,
		       test_revoke_at_execute_exit_then_regrant_at_next_entry);
	tcase_add_test(tl, test_granter_without_revoke_keeps_the_grant);
	tcase_add_test(tl, test_failed_revoke_is_audited_and_the_grant_stays);
	tcase_add_test(tl, test_local_granter_refuses_with_a_policy_deny);
	tcase_add_test(
		tl, test_wildcard_grant_over_a_deny_never_reaches_a_granter);
	tcase_add_test(
		tl, test_wildcard_over_a_deny_makes_no_sbx_policy_allow_call);
	suite_add_tcase(s, tl);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(egress_grants_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Egress policy and resource guardrails: the pattern syntax and
 * coverage tables, the operator's bounds, plan egress declarations, the
 * grant ledger walking a chain of fake policy granters (and the real
 * local granter), `sbxloop config policy`, and the diagnosis that fails
 * a task whose sandbox ran out of disk or memory.
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
#include "config/policy_patterns.h"
#include "common/util.h"

/* ------------------------------------------------------------ fixture */

static char dir[256];
static char cfg_path[512];
static struct sl_config *cfg;

static void setup(void)
{
	char tmpl[] = "/tmp/sbx-egress-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(cfg_path, sizeof(cfg_path), "%s/sbxloop.yaml", dir);
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("NO_COLOR", "1", 1);
	cfg = NULL;
}

static void teardown(void)
{
	char *cmd = sl_xasprintf("rm -rf '%s'", dir);

	sl_config_free(cfg);
	cfg = NULL;
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove '%s'\n", dir);
	free(cmd);
}

/* Load a config made of `yaml` (plus a state_dir). */
static void load(const char *yaml)
{
	struct sl_config_opts opts;
	char *errors = NULL;
	FILE *f = fopen(cfg_path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "state_dir: %s/state\n%s", dir, yaml);
	fclose(f);
	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	opts.no_env = 1;
	sl_config_free(cfg);
	cfg = NULL;
	ck_assert_msg(sl_config_load(&cfg, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	free(errors);
}

static int in_list(char **list, const char *s)
{
	size_t i;

	for (i = 0; list[i]; i++)
		if (!strcmp(list[i], s))
			return 1;
	return 0;
}

/* --------------------------------------------------- pattern tables */

START_TEST(test_pattern_validity_table)
{
	static const struct {
		const char *pattern;
		int operator_star;
		int valid;
	} t[] = {
		{"pypi.org", 0, 1},
		{"*.crates.io", 0, 1},
		{"a-b.example.co", 0, 1},
		{"xn--bcher-kva.example", 0, 1},
		{"*", 1, 1},
		{"*", 0, 0},
		{"localhost", 0, 0},
		{"example.c", 0, 0},
		{"example.123", 0, 0},
		{"-bad.example.com", 0, 0},
		{"bad-.example.com", 0, 0},
		{"a..example.com", 0, 0},
		{"Example.com", 0, 0},
		{"https://example.com", 0, 0},
		{"example.com/path", 0, 0},
		{"example.com:443", 0, 0},
		{"*.*.example.com", 0, 0},
		{"foo.*.com", 0, 0},
		{"", 0, 0},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++)
		ck_assert_msg(
			sl_pattern_valid(t[i].pattern, t[i].operator_star) ==
				t[i].valid,
			"pattern '%s' (operator %d): expected %d",
			t[i].pattern, t[i].operator_star, t[i].valid);
}
END_TEST

START_TEST(test_pattern_coverage_table)
{
	static const struct {
		const char *pattern;
		const char *domain;
		int covers;
	} t[] = {
		{"*", "anything.example", 1},
		{"*", "*.example.com", 1},
		{"example.com", "example.com", 1},
		{"example.com", "EXAMPLE.com", 1},
		{"example.com", "a.example.com", 0},
		{"*.example.com", "example.com", 1},
		{"*.example.com", "a.example.com", 1},
		{"*.example.com", "a.b.example.com", 1},
		{"*.example.com", "*.a.example.com", 1},
		{"*.example.com", "*.example.com", 1},
		{"*.example.com", "badexample.com", 0},
		{"*.example.com", "example.com.evil.org", 0},
		{"a.example.com", "*.a.example.com", 0},
		{"*.a.example.com", "*.example.com", 0},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++)
		ck_assert_msg(sl_pattern_covers(t[i].pattern, t[i].domain) ==
				      t[i].covers,
			      "'%s' covers '%s': expected %d", t[i].pattern,
			      t[i].domain, t[i].covers);
}
END_TEST

/* Pattern-vs-pattern intersection: do two host sets share a host? */
START_TEST(test_pattern_overlap_table)
{
	static const struct {
		const char *a;
		const char *b;
		int overlaps;
	} t[] = {
		/* exact vs exact */
		{"evil.org", "evil.org", 1},
		{"evil.org", "EVIL.Org", 1},
		{"evil.org", "evil.org.", 1},
		{"evil.org", "a.evil.org", 0},
		{"evil.org", "notevil.org", 0},
		/* exact vs wildcard: the wildcard covers its own base */
		{"evil.org", "*.evil.org", 1},
		{"x.evil.org", "*.evil.org", 1},
		{"a.b.evil.org", "*.evil.org", 1},
		{"evil.org", "*.a.evil.org", 0},
		{"notevil.org", "*.evil.org", 0},
		{"evil.org.example", "*.evil.org", 0},
		{"X.EVIL.ORG.", "*.evil.org", 1},
		/* wildcard vs wildcard */
		{"*.evil.org", "*.evil.org", 1},
		{"*.a.evil.org", "*.evil.org", 1},
		{"*.evil.org", "*.a.evil.org", 1},
		{"*.a.evil.org", "*.b.evil.org", 0},
		{"*.evil.org", "*.notevil.org", 0},
		{"*.Evil.Org.", "*.b.evil.org", 1},
		/* the bare star */
		{"*", "evil.org", 1},
		{"*", "*.evil.org", 1},
		{"*", "*", 1},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++) {
		ck_assert_msg(sl_pattern_overlaps(t[i].a, t[i].b) ==
				      t[i].overlaps,
			      "'%s' overlaps '%s': expected %d", t[i].a,
			      t[i].b, t[i].overlaps);
		ck_assert_msg(sl_pattern_overlaps(t[i].b, t[i].a) ==
				      t[i].overlaps,
			      "'%s' overlaps '%s' (swapped): expected %d",
			      t[i].b, t[i].a, t[i].overlaps);
	}
}
END_TEST

/* ----------------------------------------------------------- bounds */

START_TEST(test_baseline_and_declarable_tiers_are_in_bounds)
{
	const char *in[] = {"pypi.org",
			    "registry.npmjs.org",
			    "deb.debian.org",
			    "api.githubcopilot.com",
			    "x.githubcopilot.com",
			    "center.conan.io",
			    "astral.sh"};
	size_t i;
	char *why = NULL;

	load("");
	for (i = 0; i < SL_ARRAY_SIZE(in); i++) {
		ck_assert_msg(sl_egress_check(cfg, in[i], &why) == 1, "%s: %s",
			      in[i], why ? why : "");
		ck_assert_ptr_null(why);
	}
	ck_assert_int_eq(sl_egress_check(cfg, "example.org", &why), 0);
	ck_assert_str_eq(why, "not covered by policy.allow in sbxloop.yaml");
	free(why);
}
END_TEST

START_TEST(test_deny_beats_the_baseline)
{
	char *why = NULL;
	char **seed;

	load("policy:\n  deny: [pypi.org, \"*.ubuntu.com\", "
	     "\"*.github.com\"]\n  allow: [\"*\"]\n");
	ck_assert_int_eq(sl_egress_check(cfg, "pypi.org", &why), 0);
	ck_assert_str_eq(why, "matches policy.deny pattern 'pypi.org'");
	free(why);
	ck_assert_int_eq(sl_egress_check(cfg, "archive.ubuntu.com", &why), 0);
	ck_assert_str_eq(why, "matches policy.deny pattern '*.ubuntu.com'");
	free(why);
	/* deny even wins over an operator's '*' */
	ck_assert_int_eq(sl_egress_check(cfg, "api.github.com", NULL), 0);
	ck_assert_int_eq(sl_egress_check(cfg, "example.org", NULL), 1);

	seed = sl_egress_agent_seed(cfg);
	ck_assert(!in_list(seed, "pypi.org"));
	ck_assert(!in_list(seed, "archive.ubuntu.com"));
	ck_assert(in_list(seed, "files.pythonhosted.org"));
	ck_assert(in_list(seed, "deb.debian.org"));
	/* the agent's control plane is seeded whatever deny says */
	ck_assert(in_list(seed, "api.github.com"));
	ck_assert(in_list(seed, "api.githubcopilot.com"));
	sl_egress_list_free(seed);
}
END_TEST

START_TEST(test_operator_star_and_allow_patterns_widen_the_bounds)
{
	load("policy:\n  allow: [\"*.example.com\"]\n");
	ck_assert_int_eq(sl_egress_check(cfg, "api.example.com", NULL), 1);
	ck_assert_int_eq(sl_egress_check(cfg, "*.cdn.example.com", NULL), 1);
	ck_assert_int_eq(sl_egress_check(cfg, "example.org", NULL), 0);
	load("policy:\n  allow: [\"*\"]\n");
	ck_assert_int_eq(sl_egress_check(cfg, "example.org", NULL), 1);
}
END_TEST

START_TEST(test_extra_allow_domains_are_seeded_and_in_bounds)
{
	char **seed, **gh;

	load("sandbox:\n  extra_allow_domains: [mirror.corp.example, "
	     "blocked.corp.example]\npolicy:\n  deny: "
	     "[blocked.corp.example]\ngithub:\n  repo: o/r\n");
	ck_assert_int_eq(sl_egress_check(cfg, "mirror.corp.example", NULL), 1);
	seed = sl_egress_agent_seed(cfg);
	ck_assert(in_list(seed, "mirror.corp.example"));
	ck_assert(!in_list(seed, "blocked.corp.example"));
	sl_egress_list_free(seed);
	gh = sl_egress_github_seed(cfg);
	ck_assert(in_list(gh, "uploads.github.com"));
	ck_assert(in_list(gh, "mirror.corp.example"));
	ck_assert(!in_list(gh, "pypi.org"));
	sl_egress_list_free(gh);
}
END_TEST

/* issue 11 item 2: a deny of evil.org must refuse `*.evil.org`, which
 * covers evil.org itself, even under an operator's `*` */
START_TEST(test_declaration_overlapping_a_deny_is_out_of_bounds)
{
	static const struct {
		const char *deny;
		const char *declared;
		const char *why;
	} t[] = {
		{"evil.org", "*.evil.org",
		 "covers hosts that policy.deny pattern 'evil.org' denies"},
		{"x.evil.org", "*.evil.org",
		 "covers hosts that policy.deny pattern 'x.evil.org' denies"},
		{"*.a.evil.org", "*.evil.org",
		 "covers hosts that policy.deny pattern '*.a.evil.org' "
		 "denies"},
		{"*.evil.org", "*.a.evil.org",
		 "matches policy.deny pattern '*.evil.org'"},
		{"*.evil.org", "evil.org",
		 "matches policy.deny pattern '*.evil.org'"},
		{"*", "*.good.org", "matches policy.deny pattern '*'"},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++) {
		char *yaml = sl_xasprintf("policy:\n  deny: [\"%s\"]\n"
					  "  allow: [\"*\"]\n",
					  t[i].deny);
		char *why = NULL;

		load(yaml);
		free(yaml);
		ck_assert_msg(sl_egress_check(cfg, t[i].declared, &why) == 0,
			      "deny '%s' let '%s' through", t[i].deny,
			      t[i].declared);
		ck_assert_str_eq(why, t[i].why);
		free(why);
	}
	/* disjoint wildcards stay in bounds */
	load("policy:\n  deny: [\"*.a.evil.org\"]\n  allow: [\"*\"]\n");
	ck_assert_int_eq(sl_egress_check(cfg, "*.b.evil.org", NULL), 1);
	ck_assert_int_eq(sl_egress_check(cfg, "evil.org", NULL), 1);
}
END_TEST

START_TEST(test_plan_declaring_a_wildcard_over_a_deny_is_sent_back)
{
	struct sl_buf msg = SL_BUF_INIT;
	cJSON *eg = cJSON_Parse("[{\"domain\":\" *.EVIL.org \",\"reason\":"
				"\"x\"}]");

	load("policy:\n  deny: [evil.org]\n  allow: [\"*\"]\n");
	ck_assert_int_eq(sl_egress_validate_plan(cfg, eg, &msg),
			 SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&msg),
				     "- *.evil.org: covers hosts that "
				     "policy.deny pattern 'evil.org' denies"));
	sl_buf_release(&msg);
	cJSON_Delete(eg);
}
END_TEST

/* A wildcard extra that overlaps a deny is not seeded at all: no
 * sandbox can open `*.corp.example` minus one host. */
START_TEST(test_wildcard_extra_overlapping_a_deny_is_not_seeded)
{
	char **seed, **gh;
	char *why = NULL;

	load("sandbox:\n  extra_allow_domains: [\"*.corp.example\", "
	     "\"*.evil.org\", mirror.example.net]\npolicy:\n  deny: "
	     "[bad.corp.example, evil.org]\ngithub:\n  repo: o/r\n");
	seed = sl_egress_agent_seed(cfg);
	ck_assert(!in_list(seed, "*.corp.example"));
	ck_assert(!in_list(seed, "*.evil.org"));
	ck_assert(in_list(seed, "mirror.example.net"));
	sl_egress_list_free(seed);
	gh = sl_egress_github_seed(cfg);
	ck_assert(!in_list(gh, "*.corp.example"));
	ck_assert(!in_list(gh, "*.evil.org"));
	ck_assert(in_list(gh, "mirror.example.net"));
	sl_egress_list_free(gh);
	/* its other hosts stay declarable one by one; the denied ones not */
	ck_assert_int_eq(sl_egress_check(cfg, "ok.corp.example", NULL), 1);
	ck_assert_int_eq(sl_egress_check(cfg, "bad.corp.example", &why), 0);
	ck_assert_str_eq(why,
			 "matches policy.deny pattern 'bad.corp.example'");
	free(why);
	ck_assert_int_eq(sl_egress_check(cfg, "*.corp.example", NULL), 0);
}
END_TEST

/* ------------------------------------------------- plan declarations */

START_TEST(test_declarations_are_trimmed_and_lowercased)
{
	char *why = NULL, *d = sl_egress_normalize("  PyPI.ORG \n", &why);

	ck_assert_str_eq(d, "pypi.org");
	ck_assert_ptr_null(why);
	free(d);
}
END_TEST

START_TEST(test_declarations_refuse_star_scheme_path_and_port)
{
	static const struct {
		const char *declared;
		const char *why;
	} t[] = {
		{"*", "operators only"},
		{"https://example.com", "scheme"},
		{"example.com/simple", "path"},
		{"example.com:8443", "port"},
		{"", "empty"},
		{"not a domain", "not an exact domain"},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++) {
		char *why = NULL;
		char *d = sl_egress_normalize(t[i].declared, &why);

		ck_assert_msg(d == NULL, "'%s' was accepted", t[i].declared);
		ck_assert_msg(why && strstr(why, t[i].why), "'%s': %s",
			      t[i].declared, why ? why : "(null)");
		free(why);
	}
}
END_TEST

START_TEST(test_out_of_bounds_plan_gets_reasons_and_hint)
{
	struct sl_buf msg = SL_BUF_INIT;
	cJSON *eg = cJSON_Parse(
		"[{\"domain\":\" PyPI.org \",\"reason\":\"wheels\"},"
		"{\"domain\":\"evil.example\",\"reason\":\"x\"},"
		"{\"domain\":\"tracker.example.net\"},"
		"{\"domain\":\"https://astral.sh\"}]");

	load("policy:\n  deny: [tracker.example.net]\n");
	ck_assert_int_eq(sl_egress_validate_plan(cfg, eg, &msg),
			 SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&msg),
				     "- evil.example: not covered by "
				     "policy.allow in sbxloop.yaml"));
	ck_assert_ptr_nonnull(strstr(
		sl_buf_str(&msg), "- tracker.example.net: matches policy.deny "
				  "pattern 'tracker.example.net'"));
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&msg),
				     "'https://astral.sh': a domain only: "
				     "drop the scheme"));
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&msg),
				     "use a baseline host; only the operator "
				     "can widen the bounds in sbxloop.yaml"));
	ck_assert_ptr_null(strstr(sl_buf_str(&msg), "pypi.org"));
	/* normalised in place for the stored plan */
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetArrayItem(eg, 0), "domain")
			->valuestring,
		"pypi.org");
	sl_buf_release(&msg);
	cJSON_Delete(eg);
}
END_TEST

START_TEST(test_in_bounds_plan_passes)
{
	struct sl_buf msg = SL_BUF_INIT;
	cJSON *eg = cJSON_Parse("[{\"domain\":\"astral.sh\",\"reason\":"
				"\"uv\"},{\"domain\":\"api.example.com\"}]");

	load("policy:\n  allow: [\"*.example.com\"]\n");
	ck_assert_int_eq(sl_egress_validate_plan(cfg, eg, &msg), 0);
	ck_assert_int_eq((int)msg.len, 0);
	ck_assert_int_eq(sl_egress_validate_plan(cfg, NULL, &msg), 0);
	sl_buf_release(&msg);
	cJSON_Delete(eg);
}
END_TEST

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
	ck_assert_int_eq(sl_egress_grant_all(l, "t2", eg, &err), 0);
	ck_assert_str_eq(f.calls, "grant:api.example.com t1 execute sb;");
	ck_assert_int_eq(cJSON_GetArraySize(events), 1);
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

/* ------------------------------------------------- config policy */

START_TEST(test_config_policy_prints_phases_bounds_and_audit_hint)
{
	const char *bin = getenv("SBXLOOP_BIN");
	char *cmd, *out_path = sl_xasprintf("%s/out", dir), *out;
	size_t len;
	int st;

	ck_assert_msg(bin != NULL, "SBXLOOP_BIN is not set");
	load("policy:\n  allow: [\"*.example.com\"]\n  deny: [pypi.org]\n"
	     "github:\n  repo: o/r\n");
	cmd = sl_xasprintf("'%s' --config '%s' config policy > '%s' 2>&1", bin,
			   cfg_path, out_path);
	st = system(cmd);
	out = sl_read_file(out_path, &len, 1 << 20);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "effective egress per phase"));
	ck_assert_ptr_nonnull(strstr(out, "decompose, plan"));
	ck_assert_ptr_nonnull(strstr(out, "scrutinize, verify,"));
	ck_assert_ptr_nonnull(strstr(out, "revoked when"));
	ck_assert_ptr_nonnull(strstr(out, "allow: *.example.com"));
	ck_assert_ptr_nonnull(strstr(out, "deny:  pypi.org"));
	ck_assert_ptr_nonnull(strstr(out, "astral.sh"));
	ck_assert_ptr_nonnull(strstr(out, "github sandbox"));
	ck_assert_ptr_nonnull(
		strstr(out, "audit trail: sbxloop logs RUN --type policy."));
	/* deny-filtered: pypi.org only appears as the deny bound */
	ck_assert_ptr_null(
		strstr(strstr(out, "deny:  pypi.org") + 15, "pypi.org"));
	ck_assert_ptr_null(strstr(out, "(minus policy.deny): pypi.org"));
	{
		const char *p = out;

		while (*p) {
			size_t n = strcspn(p, "\n");

			ck_assert_msg(n <= 79, "line over 79 columns: %.*s",
				      (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
	free(out);
	free(out_path);
	free(cmd);
}
END_TEST

START_TEST(test_config_policy_names_what_deny_overlaps)
{
	const char *bin = getenv("SBXLOOP_BIN");
	char *cmd, *out_path = sl_xasprintf("%s/out", dir), *out;
	size_t len;
	int st;

	ck_assert_msg(bin != NULL, "SBXLOOP_BIN is not set");
	load("sandbox:\n  extra_allow_domains: [\"*.corp.example\", "
	     "mirror.example.net]\npolicy:\n  deny: [bad.corp.example, "
	     "\"*.github.com\"]\n");
	cmd = sl_xasprintf("'%s' --config '%s' config policy > '%s' 2>&1", bin,
			   cfg_path, out_path);
	st = system(cmd);
	out = sl_read_file(out_path, &len, 1 << 20);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	ck_assert_ptr_nonnull(
		strstr(out, "extras not seeded, they overlap policy.deny:\n"
			    "    *.corp.example (deny bad.corp.example)\n"));
	ck_assert_ptr_nonnull(strstr(
		out, "control plane, seeded although policy.deny "
		     "overlaps it:\n    api.github.com (deny "
		     "*.github.com), github.com (deny *.github.com)\n"));
	ck_assert_ptr_nonnull(strstr(out, "mirror.example.net"));
	free(out);
	free(out_path);
	free(cmd);
}
END_TEST

/* ----------------------------------------------------------- guard */

static cJSON *sample(const char *json)
{
	cJSON *j = cJSON_Parse(json);

	ck_assert_ptr_nonnull(j);
	return j;
}

START_TEST(test_disk_abort_gives_the_disk_diagnosis)
{
	cJSON *s = sample("{\"level\":\"abort\",\"disk_used_pct\":97.4,"
			  "\"mem_used_pct\":40.0}");
	char *d;

	load("limits:\n  disk_abort: 95\n");
	d = sl_guard_diagnosis(s, cfg);
	ck_assert_str_eq(d, "sandbox disk exhausted: 97.4% of the workspace "
			    "filesystem is used (limits.disk_abort=95%)");
	free(d);
	cJSON_Delete(s);
}
END_TEST

START_TEST(test_memory_abort_gives_the_memory_diagnosis)
{
	cJSON *s = sample("{\"level\":\"abort\",\"disk_used_pct\":50.0,"
			  "\"mem_used_pct\":93.25}");
	char *d;

	load("limits:\n  mem_warn: 80\n  mem_abort: 90\n");
	d = sl_guard_diagnosis(s, cfg);
	ck_assert_str_eq(d, "sandbox memory exhausted: 93.2% of memory is "
			    "used (limits.mem_abort=90%)");
	free(d);
	cJSON_Delete(s);
}
END_TEST

START_TEST(test_ok_or_warn_sample_does_not_fail_the_task)
{
	cJSON *ok = sample("{\"level\":\"ok\",\"disk_used_pct\":10}");
	cJSON *warn = sample("{\"level\":\"warn\",\"disk_used_pct\":88}");

	load("");
	ck_assert_ptr_null(sl_guard_diagnosis(ok, cfg));
	ck_assert_ptr_null(sl_guard_diagnosis(warn, cfg));
	ck_assert_ptr_null(sl_guard_diagnosis(NULL, cfg));
	cJSON_Delete(ok);
	cJSON_Delete(warn);
}
END_TEST

START_TEST(test_artifacts_carry_disk_figures_only_under_pressure)
{
	cJSON *ok = sample("{\"level\":\"ok\",\"disk_used_pct\":10}");
	cJSON *warn = sample("{\"level\":\"warn\",\"disk_used_pct\":88.5}");
	cJSON *d1 = cJSON_CreateObject(), *d2 = cJSON_CreateObject();

	ck_assert_int_eq(sl_guard_artifact_fields(ok, d1), 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(d1, "disk_used_pct"));
	ck_assert_int_eq(sl_guard_artifact_fields(warn, d2), 1);
	ck_assert(cJSON_GetObjectItem(d2, "disk_used_pct")->valuedouble ==
		  88.5);
	ck_assert_str_eq(
		cJSON_GetObjectItem(d2, "resources_level")->valuestring,
		"warn");
	cJSON_Delete(ok);
	cJSON_Delete(warn);
	cJSON_Delete(d1);
	cJSON_Delete(d2);
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("bounds");
	TCase *tl = tcase_create("ledger");
	TCase *tg = tcase_create("guard");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_pattern_validity_table);
	tcase_add_test(tc, test_pattern_coverage_table);
	tcase_add_test(tc, test_pattern_overlap_table);
	tcase_add_test(tc, test_baseline_and_declarable_tiers_are_in_bounds);
	tcase_add_test(tc, test_deny_beats_the_baseline);
	tcase_add_test(tc,
		       test_operator_star_and_allow_patterns_widen_the_bounds);
	tcase_add_test(tc, test_extra_allow_domains_are_seeded_and_in_bounds);
	tcase_add_test(tc,
		       test_declaration_overlapping_a_deny_is_out_of_bounds);
	tcase_add_test(
		tc, test_plan_declaring_a_wildcard_over_a_deny_is_sent_back);
	tcase_add_test(tc,
		       test_wildcard_extra_overlapping_a_deny_is_not_seeded);
	tcase_add_test(tc, test_declarations_are_trimmed_and_lowercased);
	tcase_add_test(tc, test_declarations_refuse_star_scheme_path_and_port);
	tcase_add_test(tc, test_out_of_bounds_plan_gets_reasons_and_hint);
	tcase_add_test(tc, test_in_bounds_plan_passes);
	tcase_add_test(tc,
		       test_config_policy_prints_phases_bounds_and_audit_hint);
	tcase_add_test(tc, test_config_policy_names_what_deny_overlaps);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tl, ledger_setup, ledger_teardown);
	tcase_add_test(tl, test_grant_emits_policy_allow_with_context);
	tcase_add_test(tl, test_grant_is_idempotent_per_domain);
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

	tcase_add_checked_fixture(tg, setup, teardown);
	tcase_add_test(tg, test_disk_abort_gives_the_disk_diagnosis);
	tcase_add_test(tg, test_memory_abort_gives_the_memory_diagnosis);
	tcase_add_test(tg, test_ok_or_warn_sample_does_not_fail_the_task);
	tcase_add_test(tg,
		       test_artifacts_carry_disk_figures_only_under_pressure);
	suite_add_tcase(s, tg);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(egress_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Egress policy patterns and bounds, and resource guardrails: the
 * pattern syntax and coverage tables, the operator's bounds, plan
 * egress declarations, `sbxloop config policy`, and the diagnosis that
 * fails a task whose sandbox ran out of disk or memory.
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

/* GitHub Enterprise: the github sandbox (only) reaches api_url's host,
 * unless policy.deny says otherwise */
START_TEST(test_the_api_url_host_is_seeded_for_the_github_sandbox)
{
	char **seed, **gh;

	load("github:\n  repo: o/r\n  api_url: "
	     "https://ghe.corp.example:8443/api/v3\n");
	gh = sl_egress_github_seed(cfg);
	ck_assert(in_list(gh, "ghe.corp.example"));
	ck_assert(in_list(gh, "api.github.com"));
	sl_egress_list_free(gh);
	seed = sl_egress_agent_seed(cfg);
	ck_assert(!in_list(seed, "ghe.corp.example"));
	sl_egress_list_free(seed);
	load("github:\n  repo: o/r\n  api_url: https://ghe.corp.example/\n"
	     "policy:\n  deny: [ghe.corp.example]\n");
	gh = sl_egress_github_seed(cfg);
	ck_assert(!in_list(gh, "ghe.corp.example"));
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

static Suite *egress_bounds_suite(void)
{
	Suite *s = suite_create("egress bounds");
	TCase *tc = tcase_create("bounds");

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
		       test_the_api_url_host_is_seeded_for_the_github_sandbox);
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
	SRunner *sr = srunner_create(egress_bounds_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The sbx module's secret strategies against the fake sbx: the proxy
 * and its fallback to plain env, the credential split, redaction, and
 * the policy granter.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>
#include <sbxloop/store.h>

#include "host/core.h"
#include "common/proc.h"
#include "host/redact.h"
#include "common/util.h"

#include "testutil.h"

#include "sbx-support.h"

/* -------------------------------------------------------------- secrets */

static void secret_req(struct sbxloop_secret_req *req, const char *name,
		       int github)
{
	memset(req, 0, sizeof(*req));
	req->struct_size = sizeof(*req);
	req->sandbox = name;
	req->role = github ? "github" : "agent";
	req->env_name = github ? "GH_TOKEN" : "COPILOT_GITHUB_TOKEN";
	req->value = github ? GH_TOKEN_VALUE : AGENT_TOKEN;
	req->bind_host = github ? NULL : "api.github.com";
	req->service = github ? "github" : NULL;
}

/* Provide through the chain [sbx-proxy, plain-env] as the core does. */
static const char *provide_chain(const struct sbxloop_secret_req *req,
				 struct sbxloop_secret_outcome *out)
{
	static const char *const chain[] = {"sbx-proxy", "plain-env", NULL};
	struct sbxloop_error err = {0, ""};
	size_t i;
	int rc = SBXLOOP_EUNSUPPORTED;

	for (i = 0; chain[i]; i++) {
		struct sl_instance inst;
		const struct sbxloop_secret_ops *so;

		ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_SECRET,
						  chain[i], &inst, &err) == 0,
			      "%s", err.message);
		so = inst.ops;
		memset(out, 0, sizeof(*out));
		out->struct_size = sizeof(*out);
		rc = so->provide(inst.ctx, req, out, &err);
		sl_instance_destroy(&inst);
		if (rc != SBXLOOP_EUNSUPPORTED) {
			ck_assert_msg(rc == 0, "%s: %s", chain[i],
				      err.message);
			return chain[i];
		}
	}
	ck_abort_msg("no strategy took the secret");
	return NULL;
}

static char *env_file(const char *name)
{
	char *p = fs_path(name, "/home/agent/.sbxloop/env.sh");
	char *text = tu_read(p);

	free(p);
	return text;
}

START_TEST(test_proxy_invisible_falls_back_to_plain_env)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	struct stat sb;
	char *text, *p;
	cJSON *st;

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_str_eq(provide_chain(&req, &out), "plain-env");
	ck_assert_str_eq(out.strategy, "plain-env");
	ck_assert(strstr(sl_buf_str(&events), "sandbox.secret_env_fallback") !=
		  NULL);
	/* the proxy registration does not outlive the fallback */
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
	ck_assert_int_eq(count_calls("secret set-custom --sandbox "
				     "sbxloop-r1-agent --host api.github.com "
				     "--env COPILOT_GITHUB_TOKEN --value "),
			 1);
	ck_assert_int_eq(count_calls("secret rm --host api.github.com --env "
				     "COPILOT_GITHUB_TOKEN --sandbox "
				     "sbxloop-r1-agent -f"),
			 1);
	text = env_file("sbxloop-r1-agent");
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text,
			 "# written by sbxloop plain-env\n"
			 "export COPILOT_GITHUB_TOKEN='" AGENT_TOKEN "'\n");
	free(text);
	p = fs_path("sbxloop-r1-agent", "/home/agent/.sbxloop/env.sh");
	ck_assert_int_eq(stat(p, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	free(p);
	/* only the documented set-custom --value carries the token */
	ck_assert(!argv_contains(AGENT_TOKEN, "secret set-custom"));
	ck_assert(!strstr(sl_buf_str(&events), AGENT_TOKEN));
}
END_TEST

START_TEST(test_proxy_holds_when_exec_sees_the_token)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	char *text;

	script("[{\"prefix\":\"exec sbxloop-r1-agent sh -lc\","
	       "\"returncode\":0}]");
	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_str_eq(provide_chain(&req, &out), "sbx-proxy");
	ck_assert_str_eq(out.strategy, "sbx-proxy");
	text = env_file("sbxloop-r1-agent");
	ck_assert_ptr_null(text);
	ck_assert(strstr(sl_buf_str(&events), "secret_env_fallback") == NULL);
}
END_TEST

START_TEST(test_proxy_alone_accepts_only_the_sentinel)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	struct sbxloop_error err = {0, ""};
	struct sl_instance inst;
	const struct sbxloop_secret_ops *so;
	const struct sbxloop_sandbox_ops *bo;
	cJSON *st;

	{
		char *text = sl_xasprintf("state_dir: %s/state\n"
					  "plugins:\n"
					  "  sandbox: sbx\n"
					  "  secrets: [sbx-proxy]\n",
					  dir);

		tu_write(cfg_path, text);
		free(text);
	}
	core_up();
	box_up();
	bo = box.ops;
	ck_assert(bo->capabilities(box.ctx) &
		  SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX);
	must_create("sbxloop-r1-agent");
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SECRET,
					     "sbx-proxy", &inst, &err),
			 0);
	so = inst.ops;
	/* the fake hides the value entirely: nothing to fall back to */
	ck_assert_int_eq(so->provide(inst.ctx, &req, &out, &err),
			 SBXLOOP_ESTATE);
	ck_assert_msg(strstr(err.message, "not visible"), "%s", err.message);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);

	/* sbx's placeholder under exec: the proxy holds */
	script("[{\"prefix\":\"exec sbxloop-r1-agent sh -lc\","
	       "\"returncode\":3}]");
	memset(&out, 0, sizeof(out));
	ck_assert_msg(so->provide(inst.ctx, &req, &out, &err) == 0, "%s",
		      err.message);
	ck_assert_str_eq(out.strategy, "sbx-proxy");
	ck_assert_int_eq(out.never_in_sandbox, 1);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 1);
	cJSON_Delete(st);
	ck_assert_ptr_null(env_file("sbxloop-r1-agent"));
	/* revoke takes the registration back */
	ck_assert_int_eq(so->revoke(inst.ctx, &req, &err), 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
	/* and removing the sandbox removes what was registered for it */
	ck_assert_int_eq(so->provide(inst.ctx, &req, &out, &err), 0);
	sl_instance_destroy(&inst);
	ck_assert_int_eq(bo->sandbox_remove(box.ctx, "sbxloop-r1-agent", &err),
			 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
}
END_TEST

START_TEST(test_proxy_unclean_probe_twice_fails)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	struct sbxloop_error err = {0, ""};
	struct sl_instance inst;
	const struct sbxloop_secret_ops *so;

	script("[{\"prefix\":\"exec sbxloop-r1-agent sh -lc\","
	       "\"returncode\":2,\"stderr\":\"boom\\n\"}]");
	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SECRET,
					     "sbx-proxy", &inst, &err),
			 0);
	so = inst.ops;
	/* ESTATE: the core stops here instead of trying plain-env */
	ck_assert_int_eq(so->provide(inst.ctx, &req, &out, &err),
			 SBXLOOP_ESTATE);
	sl_instance_destroy(&inst);
	ck_assert_int_eq(count_calls("exec sbxloop-r1-agent sh -lc"), 2);
	ck_assert(strstr(sl_buf_str(&events), "sandbox.secret_probe_error"));
	ck_assert(!strstr(err.message, AGENT_TOKEN));
}
END_TEST

START_TEST(test_proxy_replaces_leftover_registration)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	const char *pre[] = {"sbx",        "secret",
			     "set-custom", "-g",
			     "--host",     "api.github.com",
			     "--env",      "COPILOT_GITHUB_TOKEN",
			     "--value",    "ghp_stale",
			     NULL};
	struct tu_run r;
	cJSON *st, *c;

	script("[{\"prefix\":\"exec sbxloop-r1-agent sh -lc\","
	       "\"returncode\":0}]");
	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	tu_exec(&r, NULL, NULL, pre);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_str_eq(provide_chain(&req, &out), "sbx-proxy");
	ck_assert_int_eq(count_calls("secret rm --host api.github.com --env "
				     "COPILOT_GITHUB_TOKEN -g -f"),
			 1);
	st = secrets_state();
	c = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "custom"),
				"COPILOT_GITHUB_TOKEN");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "scope")),
			 "sbxloop-r1-agent");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "value")),
			 AGENT_TOKEN);
	cJSON_Delete(st);
}
END_TEST

START_TEST(test_github_token_goes_on_stdin_and_split_holds)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	char *agent_env, *gh_env;
	cJSON *all, *rec;
	int seen_stdin = 0;

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	must_create("sbxloop-r1-github");
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_str_eq(provide_chain(&req, &out), "plain-env");
	secret_req(&req, "sbxloop-r1-github", 1);
	ck_assert_str_eq(provide_chain(&req, &out), "plain-env");

	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);
		const char *in = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "stdin"));

		ck_assert_msg(!strstr(j, GH_TOKEN_VALUE), "argv: %s", j);
		if (in && strstr(in, GH_TOKEN_VALUE)) {
			ck_assert_str_eq(j, "secret set sbxloop-r1-github "
					    "github");
			seen_stdin = 1;
		}
		free(j);
	}
	cJSON_Delete(all);
	ck_assert(seen_stdin);

	agent_env = env_file("sbxloop-r1-agent");
	gh_env = env_file("sbxloop-r1-github");
	ck_assert_ptr_nonnull(agent_env);
	ck_assert_ptr_nonnull(gh_env);
	ck_assert(strstr(agent_env, AGENT_TOKEN));
	ck_assert(!strstr(agent_env, GH_TOKEN_VALUE));
	ck_assert(strstr(gh_env, "export GH_TOKEN='" GH_TOKEN_VALUE "'"));
	ck_assert(strstr(gh_env, "export GITHUB_TOKEN='" GH_TOKEN_VALUE "'"));
	ck_assert(!strstr(gh_env, AGENT_TOKEN));
	free(agent_env);
	free(gh_env);
	/* the worker in each sandbox picks up its own token only */
	{
		struct sbxloop_proc_result res;
		struct sbxloop_error err = {0, ""};

		ck_assert_int_eq(run_in("sbxloop-r1-github",
					". ~/.sbxloop/env.sh; "
					"echo \"${COPILOT_GITHUB_TOKEN:-none}"
					"\"",
					NULL, 10, &res, &err),
				 0);
		ck_assert_str_eq(res.out, "none\n");
		sl_proc_result_clear(&res);
	}
}
END_TEST

START_TEST(test_secret_value_never_logged)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	struct sbxloop_error err = {0, ""};
	struct sl_instance inst;
	const struct sbxloop_secret_ops *so;
	char *log_path = sl_xasprintf("%s/stderr.log", dir), *text;
	int saved, fd;

	script("[{\"prefix\":\"secret set-custom\",\"returncode\":1,"
	       "\"stderr\":\"ERROR: the proxy refused\\n\"}]");
	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	sl_log_set_level(SBXLOOP_LOG_DEBUG);
	fflush(stderr);
	saved = dup(2);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	close(fd);
	secret_req(&req, "sbxloop-r1-agent", 0);
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SECRET,
					     "sbx-proxy", &inst, &err),
			 0);
	so = inst.ops;
	ck_assert_int_eq(so->provide(inst.ctx, &req, &out, &err),
			 SBXLOOP_EINFRA);
	sl_instance_destroy(&inst);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	sl_log_set_level(SBXLOOP_LOG_INFO);
	text = tu_read(log_path);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "--value ***"), "%s", text);
	ck_assert_msg(!strstr(text, AGENT_TOKEN), "%s", text);
	ck_assert_msg(strstr(err.message, "the proxy refused"), "%s",
		      err.message);
	ck_assert(!strstr(err.message, AGENT_TOKEN));
	free(text);
	free(log_path);
}
END_TEST

START_TEST(test_plain_env_revoke_removes_file)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	struct sbxloop_error err = {0, ""};
	struct sl_instance inst;
	const struct sbxloop_secret_ops *so;
	char *text;

	core_up();
	box_up();
	must_create("sbxloop-r1-github");
	secret_req(&req, "sbxloop-r1-github", 1);
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SECRET,
					     "plain-env", &inst, &err),
			 0);
	so = inst.ops;
	ck_assert_int_eq(so->provide(inst.ctx, &req, &out, &err), 0);
	text = env_file("sbxloop-r1-github");
	ck_assert_ptr_nonnull(text);
	free(text);
	ck_assert_int_eq(so->revoke(inst.ctx, &req, &err), 0);
	text = env_file("sbxloop-r1-github");
	ck_assert_ptr_null(text);
	sl_instance_destroy(&inst);
}
END_TEST

/* --------------------------------------------------------------- policy */

/*
 * An sbx whose set-custom takes the scope positionally refuses
 * `--sandbox`: the first call learns that, every later one of the
 * process uses `set-custom NAME` straight away.
 */
START_TEST(test_proxy_uses_the_positional_scope_an_older_sbx_takes)
{
	struct sbxloop_secret_req req;
	struct sbxloop_secret_outcome out;
	cJSON *log, *rec;
	int scoped = 0;

	setenv("SBX_FAKE_SECRET_SCOPE", "positional", 1);
	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	must_create("sbxloop-r2-agent");
	secret_req(&req, "sbxloop-r1-agent", 0);
	/* registered, then invisible to exec as ever: plain-env */
	ck_assert_str_eq(provide_chain(&req, &out), "plain-env");
	secret_req(&req, "sbxloop-r2-agent", 0);
	ck_assert_str_eq(provide_chain(&req, &out), "plain-env");
	ck_assert_int_eq(count_calls("secret set-custom --sandbox "), 1);
	ck_assert_int_eq(count_calls("secret set-custom sbxloop-r1-agent "
				     "--host api.github.com --env "
				     "COPILOT_GITHUB_TOKEN --value "),
			 1);
	ck_assert_int_eq(count_calls("secret set-custom sbxloop-r2-agent "
				     "--host api.github.com --env "
				     "COPILOT_GITHUB_TOKEN --value "),
			 1);
	/* the fake really registered both, each in its sandbox's scope */
	{
		char *path = sl_xasprintf("%s/secrets.jsonl", fake_dir);
		char *text = tu_read(path), *line, *save = NULL;

		ck_assert_ptr_nonnull(text);
		log = cJSON_CreateArray();
		for (line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			cJSON_AddItemToArray(log, cJSON_Parse(line));
		free(text);
		free(path);
	}
	cJSON_ArrayForEach (rec, log) {
		const char *action = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "action"));
		const char *scope = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "scope"));

		if (action && !strcmp(action, "set-custom"))
			scoped += scope && sl_starts_with(scope, "sbxloop-r");
	}
	cJSON_Delete(log);
	ck_assert_int_eq(scoped, 2);
	ck_assert(!strstr(sl_buf_str(&events), AGENT_TOKEN));
}
END_TEST

START_TEST(test_policy_seed_grant_revoke)
{
	static const char *const domains[] = {"a.example", "b.example", NULL};
	struct sbxloop_error err = {0, ""};
	struct sl_instance inst;
	const struct sbxloop_policy_ops *po;
	struct sbxloop_grant g;
	char *path, *text;

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_POLICY, "sbx",
					     &inst, &err),
			 0);
	po = inst.ops;
	ck_assert_int_eq(po->seed(inst.ctx, "sbxloop-r1-agent", domains, &err),
			 0);
	memset(&g, 0, sizeof(g));
	g.struct_size = sizeof(g);
	g.sandbox = "sbxloop-r1-agent";
	g.domain = "registry.npmjs.org";
	g.phase = "execute";
	ck_assert_int_eq(po->grant(inst.ctx, &g, &err), 0);
	ck_assert_int_eq(po->revoke(inst.ctx, &g, &err), 0);
	g.sandbox = "sbxloop-gone-agent";
	ck_assert_int_eq(po->grant(inst.ctx, &g, &err), SBXLOOP_ENOTFOUND);
	sl_instance_destroy(&inst);

	ck_assert_int_eq(count_calls("policy allow network sbxloop-r1-agent "
				     "a.example,b.example"),
			 1);
	ck_assert_int_eq(count_calls("policy allow network sbxloop-r1-agent "
				     "registry.npmjs.org"),
			 1);
	ck_assert_int_eq(count_calls("policy rm network sbxloop-r1-agent "
				     "--resource registry.npmjs.org"),
			 1);
	path = sl_xasprintf("%s/policies.jsonl", fake_dir);
	text = tu_read(path);
	ck_assert(strstr(text, "\"action\":\"rm\""));
	free(text);
	free(path);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static Suite *sbx_secrets_suite(void)
{
	Suite *s = suite_create("sbx secrets");
	TCase *tc = tcase_create("secrets");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_proxy_invisible_falls_back_to_plain_env);
	tcase_add_test(tc, test_proxy_holds_when_exec_sees_the_token);
	tcase_add_test(tc, test_proxy_alone_accepts_only_the_sentinel);
	tcase_add_test(tc, test_proxy_unclean_probe_twice_fails);
	tcase_add_test(tc, test_proxy_replaces_leftover_registration);
	tcase_add_test(tc, test_github_token_goes_on_stdin_and_split_holds);
	tcase_add_test(tc, test_secret_value_never_logged);
	tcase_add_test(tc, test_plain_env_revoke_removes_file);
	tcase_add_test(
		tc, test_proxy_uses_the_positional_scope_an_older_sbx_takes);
	suite_add_tcase(s, tc);

	tc = tcase_create("policy");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_policy_seed_grant_revoke);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sbx_secrets_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

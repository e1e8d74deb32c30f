/*
 * Configuration loading, specified: defaults, precedence of the layers,
 * the starter file, and every kind of error with its location.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/conf.h"
#include "host/core.h"
#include "common/util.h"
#include "testutil.h"

static char *dir;
static char *file;

static void setup(void)
{
	char **e;
	extern char **environ;

	dir = tu_tmpdir();
	if (asprintf(&file, "%s/sbxloop.yaml", dir) < 0)
		abort();
	/* hermetic: no user file, no stray SBXLOOP_ settings */
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("HOME", dir, 1);
again:
	for (e = environ; *e; e++)
		if (strncmp(*e, "SBXLOOP_", 8) == 0 && strstr(*e, "__")) {
			char name[256];

			snprintf(name, sizeof(name), "%.*s",
				 (int)(strchr(*e, '=') - *e), *e);
			unsetenv(name);
			goto again;
		}
	if (chdir(dir) < 0)
		abort();
}

static void teardown(void)
{
	tu_rmtree(dir);
	free(dir);
	free(file);
}

/* Load `text` as the project file; returns the error text (or NULL). */
static char *load_text(const char *text, struct sl_config **cfg)
{
	struct sl_config_opts o = {0};
	char *errors = NULL;

	tu_write(file, text);
	o.config_file = file;
	if (sl_config_load(cfg, &o, &errors) == 0)
		sl_config_finish(*cfg, &errors);
	return errors;
}

static void assert_error(const char *text, const char *needle)
{
	struct sl_config *cfg;
	char *errors = load_text(text, &cfg);

	ck_assert_msg(errors != NULL, "no error for:\n%s", text);
	ck_assert_msg(strstr(errors, needle), "expected '%s' in:\n%s", needle,
		      errors);
	free(errors);
	sl_config_free(cfg);
}

START_TEST(test_defaults_apply_when_nothing_is_set)
{
	struct sl_config *cfg;
	char *errors = load_text("", &cfg);

	ck_assert_ptr_null(errors);
	ck_assert_int_eq(sl_config_int(cfg, "budgets.max_tasks", 0), 20);
	ck_assert_int_eq(
		sl_config_int(cfg, "budgets.max_revisions_per_task", -1), 2);
	ck_assert_double_eq(
		sl_config_double(cfg, "budgets.per_job_timeout_s", 0), 1800.0);
	ck_assert_str_eq(sl_config_str(cfg, "sandbox.workspace_isolation"),
			 "auto");
	ck_assert_uint_eq(sl_config_list_len(cfg, "artifacts.exclude"), 17);
	ck_assert_str_eq(sl_config_list_item(cfg, "artifacts.exclude", 8),
			 "*.egg-info");
	ck_assert_ptr_null(sl_config_str(cfg, "github.repo"));
	ck_assert_int_eq(sl_config_get(cfg, "model")->source, SL_SRC_DEFAULT);
	sl_config_free(cfg);
}
END_TEST

START_TEST(test_state_dir_expands_home_and_anchors_relative_paths)
{
	struct sl_config *cfg;
	char *want = NULL, *errors = load_text("", &cfg);

	ck_assert_ptr_null(errors);
	if (asprintf(&want, "%s/.sbxloop", dir) < 0)
		abort();
	ck_assert_str_eq(sl_config_str(cfg, "state_dir"), want);
	sl_config_free(cfg);
	free(want);
	errors = load_text("state_dir: runs-here\n", &cfg);
	ck_assert_ptr_null(errors);
	if (asprintf(&want, "%s/runs-here", dir) < 0)
		abort();
	ck_assert_str_eq(sl_config_str(cfg, "state_dir"), want);
	sl_config_free(cfg);
	free(want);
}
END_TEST

START_TEST(test_unknown_key_names_location_and_suggests)
{
	assert_error("budgets:\n  max_tasks: 3\n  max_replans_per_tsk: 1\n",
		     "sbxloop.yaml:3:3: unknown key "
		     "'budgets.max_replans_per_tsk' (did you mean "
		     "'max_replans_per_task'?)");
}
END_TEST

START_TEST(test_unknown_section_is_an_error)
{
	assert_error("budget:\n  max_tasks: 3\n",
		     "sbxloop.yaml:1:1: unknown section 'budget' (did you "
		     "mean 'budgets'?)");
}
END_TEST

START_TEST(test_wrong_type_says_expected_and_found)
{
	assert_error("budgets:\n  max_tasks: many\n",
		     "sbxloop.yaml:2:14: budgets.max_tasks: expected an "
		     "integer, found 'many'");
	assert_error(
		"keep_sandboxes: perhaps\n",
		"keep_sandboxes: expected true or false, found 'perhaps'");
	assert_error("policy:\n  allow: pypi.org\n",
		     "policy.allow: expected a list, found 'pypi.org'");
	assert_error("model: [a, b]\n",
		     "model: expected a string, found a list");
	assert_error("budgets: 3\n",
		     "budgets: expected a mapping of settings");
}
END_TEST

START_TEST(test_duplicate_key_is_an_error)
{
	assert_error("model: a\nmodel: b\n",
		     "sbxloop.yaml:2:1: duplicate key 'model' (first defined "
		     "at line 1)");
}
END_TEST

START_TEST(test_invalid_yaml_names_the_line)
{
	assert_error("budgets:\n  max_tasks: [1, 2\n", "sbxloop.yaml:");
	assert_error("budgets:\n  max_tasks: [1, 2\n", "invalid YAML");
}
END_TEST

START_TEST(test_validators_reject_out_of_range_values)
{
	assert_error("budgets:\n  max_tasks: 0\n",
		     "budgets.max_tasks: must be 1 or more");
	assert_error("budgets:\n  max_wall_clock_s: -1\n",
		     "must be greater than 0");
	assert_error("limits:\n  disk_warn: 120\n", "between 0 and 100");
	assert_error("limits:\n  disk_warn: 90\n  disk_abort: 80\n",
		     "limits.disk_abort (80) must be greater than "
		     "limits.disk_warn (90)");
	assert_error("github:\n  repo: not a repo\n",
		     "github.repo: must look like OWNER/NAME");
	assert_error("sandbox:\n  workspace_isolation: sometimes\n",
		     "expected one of auto, clone, in-place, found "
		     "'sometimes'");
	assert_error(
		"policy:\n  deny: [\"https://x.com/\"]\n",
		"policy.deny[0]: 'https://x.com/' is not a domain pattern");
	assert_error("sandbox:\n  languages: [cobol]\n",
		     "unknown language 'cobol'");
	assert_error("artifacts:\n  exclude: [a/b]\n",
		     "must be a bare file or directory name");
}
END_TEST

START_TEST(test_disabled_abort_threshold_needs_no_ordering)
{
	struct sl_config *cfg;
	char *errors =
		load_text("limits:\n  disk_warn: 90\n  disk_abort: 0\n"
			  "policy:\n  allow: [\"*\", \"*.Example.COM\"]\n",
			  &cfg);

	ck_assert_ptr_null(errors);
	ck_assert_str_eq(sl_config_list_item(cfg, "policy.allow", 1),
			 "*.example.com");
	sl_config_free(cfg);
}
END_TEST

START_TEST(test_precedence_env_over_project_over_user_over_default)
{
	struct sl_config *cfg;
	char *user = NULL, *errors;

	if (asprintf(&user, "%s/sbxloop", dir) < 0)
		abort();
	mkdir(user, 0700);
	free(user);
	if (asprintf(&user, "%s/sbxloop/config.yaml", dir) < 0)
		abort();
	tu_write(user, "model: user-model\nbudgets:\n  max_tasks: 7\n"
		       "  max_replans_per_task: 4\n");
	setenv("SBXLOOP_BUDGETS__MAX_TASKS", "9", 1);
	setenv("SBXLOOP_POLICY__ALLOW", "[pypi.org, \"*.npmjs.org\"]", 1);
	setenv("SBXLOOP_SANDBOX__EXTRA_ALLOW_DOMAINS", "a.com, b.org", 1);
	errors = load_text("model: project-model\nbudgets:\n  max_tasks: 8\n",
			   &cfg);
	ck_assert_msg(errors == NULL, "%s", errors);
	ck_assert_str_eq(sl_config_str(cfg, "model"), "project-model");
	ck_assert_int_eq(sl_config_get(cfg, "model")->source, SL_SRC_PROJECT);
	ck_assert_int_eq(sl_config_int(cfg, "budgets.max_tasks", 0), 9);
	ck_assert_int_eq(sl_config_get(cfg, "budgets.max_tasks")->source,
			 SL_SRC_ENV);
	ck_assert_str_eq(sl_config_get(cfg, "budgets.max_tasks")->origin,
			 "SBXLOOP_BUDGETS__MAX_TASKS");
	ck_assert_int_eq(sl_config_int(cfg, "budgets.max_replans_per_task", 0),
			 4);
	ck_assert_int_eq(
		sl_config_get(cfg, "budgets.max_replans_per_task")->source,
		SL_SRC_USER);
	ck_assert_uint_eq(sl_config_list_len(cfg, "policy.allow"), 2);
	ck_assert_str_eq(sl_config_list_item(cfg, "policy.allow", 1),
			 "*.npmjs.org");
	ck_assert_str_eq(
		sl_config_list_item(cfg, "sandbox.extra_allow_domains", 1),
		"b.org");
	sl_config_free(cfg);
	free(user);
}
END_TEST

START_TEST(test_bad_environment_override_names_the_variable)
{
	setenv("SBXLOOP_BUDGETS__MAX_TASKS", "lots", 1);
	assert_error("", "SBXLOOP_BUDGETS__MAX_TASKS: budgets.max_tasks: "
			 "expected an integer, found 'lots'");
	unsetenv("SBXLOOP_BUDGETS__MAX_TASKS");
	setenv("SBXLOOP_BUDGETS__MAX_TASK", "3", 1);
	assert_error("", "SBXLOOP_BUDGETS__MAX_TASK: unknown key "
			 "'budgets.max_task' (did you mean 'max_tasks'?)");
}
END_TEST

START_TEST(test_tool_variables_are_not_config)
{
	struct sl_config *cfg;
	char *errors;

	setenv("SBXLOOP_KEEP_MODULES", "1", 1);
	setenv("SBXLOOP_FAKE_AGENT_REPLY", "x", 1);
	setenv("SBXLOOP_TEST_KILL_AFTER", "plan", 1);
	errors = load_text("", &cfg);
	ck_assert_msg(errors == NULL, "%s", errors);
	sl_config_free(cfg);
	unsetenv("SBXLOOP_KEEP_MODULES");
	unsetenv("SBXLOOP_FAKE_AGENT_REPLY");
	unsetenv("SBXLOOP_TEST_KILL_AFTER");
}
END_TEST

START_TEST(test_a_prefixed_variable_that_names_nothing_is_an_error)
{
	setenv("SBXLOOP_SOMETHING_ELSE", "x", 1);
	assert_error("", "SBXLOOP_SOMETHING_ELSE: unknown key");
	unsetenv("SBXLOOP_SOMETHING_ELSE");
	setenv("SBXLOOP_", "1", 1);
	assert_error("", "SBXLOOP_: no key after the prefix");
	unsetenv("SBXLOOP_");
}
END_TEST

/*
 * Every SBXLOOP_ variable the sources read with getenv() is either a
 * tool variable or a config key: a new one that is neither would make
 * every run fail with "unknown key".
 */
START_TEST(test_every_variable_the_code_reads_is_known)
{
	static const char *const roots[] = {"core", "worker", "plugins",
					    "tests", "bench"};
	const char *src = tu_env("SBXLOOP_SRCDIR");
	size_t i, seen = 0;

	for (i = 0; i < sizeof(roots) / sizeof(*roots); i++) {
		char cmd[1024];
		char line[256];
		FILE *p;

		snprintf(cmd, sizeof(cmd),
			 "grep -rhoE 'getenv\\(\"SBXLOOP_[A-Z0-9_]+\"' "
			 "'%s/%s' | sed 's/.*\"\\(.*\\)\"/\\1/' | sort -u",
			 src, roots[i]);
		p = popen(cmd, "r");
		ck_assert_ptr_nonnull(p);
		while (fgets(line, sizeof(line), p)) {
			struct sl_config *cfg;
			char *errors;

			line[strcspn(line, "\n")] = '\0';
			if (!*line)
				continue;
			seen++;
			if (sl_tool_variable(line))
				continue;
			/* a config key: any value, but never "unknown" */
			setenv(line, "/tmp", 1);
			errors = load_text("", &cfg);
			unsetenv(line);
			ck_assert_msg(!errors || !strstr(errors, "unknown"),
				      "%s is read with getenv() but is "
				      "neither a tool variable nor a key: %s",
				      line, errors);
			free(errors);
			sl_config_free(cfg);
		}
		pclose(p);
	}
	ck_assert_uint_gt(seen, 10);
}
END_TEST

START_TEST(test_an_empty_state_dir_variable_is_refused)
{
	setenv("SBXLOOP_STATE_DIR", "", 1);
	assert_error("", "SBXLOOP_STATE_DIR: state_dir: must not be empty");
	unsetenv("SBXLOOP_STATE_DIR");
}
END_TEST

START_TEST(test_a_config_path_that_is_a_directory_says_so)
{
	struct sl_config_opts o = {0};
	struct sl_config *cfg = NULL;
	char *errors = NULL, want[600];

	o.config_file = dir;
	ck_assert_int_ne(sl_config_load(&cfg, &o, &errors), 0);
	snprintf(want, sizeof(want), "cannot read config '%s': Is a directory",
		 dir);
	ck_assert_msg(errors && strstr(errors, want), "%s", errors);
	free(errors);
	sl_config_free(cfg);
}
END_TEST

START_TEST(test_an_error_through_an_alias_points_at_the_alias)
{
	assert_error("x: &big\n  max_tasks: many\nbudgets: *big\n",
		     "sbxloop.yaml:3:10: budgets.max_tasks: expected an "
		     "integer, found 'many'");
}
END_TEST

START_TEST(test_control_characters_in_values_are_refused)
{
	assert_error("model: \"gpt\\u001b]0;x\\u0007\"\n",
		     "sbxloop.yaml:1:8: model: control character U+001B");
	assert_error("model: \"a\\rb\"\n",
		     "sbxloop.yaml:1:8: model: control character U+000D");
}
END_TEST

static long maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Check forks each test: the limits below end with the test. */
static void cap_cpu(rlim_t seconds)
{
	struct rlimit rl = {seconds, seconds + 1};

	setrlimit(RLIMIT_CPU, &rl);
}

START_TEST(test_alias_expansion_is_capped_before_it_is_expanded)
{
	struct sl_buf text = SL_BUF_INIT;
	long before = maxrss_kib();
	int i, j;

	/* 11 levels of nine aliases each: 100 * 9^11 bytes expanded */
	cap_cpu(30);
	sl_buf_addf(&text, "a0: &a0 [\"%0100d\"]\n", 0);
	for (i = 1; i < 12; i++) {
		sl_buf_addf(&text, "a%d: &a%d [", i, i);
		for (j = 0; j < 9; j++)
			sl_buf_addf(&text, "%s*a%d", j ? "," : "", i - 1);
		sl_buf_adds(&text, "]\n");
	}
	assert_error(sl_buf_str(&text),
		     "sbxloop.yaml:6:10: alias '*a4' expands the document "
		     "past 1 MiB");
	ck_assert_msg(maxrss_kib() - before < 64 * 1024,
		      "loading grew the process by %ld KiB",
		      maxrss_kib() - before);
	sl_buf_release(&text);
}
END_TEST

START_TEST(test_a_hundred_thousand_keys_load_in_linear_time)
{
	struct sl_buf text = SL_BUF_INIT;
	int i;

	/* quadratic duplicate checking took minutes here: SIGXCPU */
	cap_cpu(45);
	sl_buf_adds(&text, "budgets:\n");
	for (i = 0; i < 100000; i++)
		sl_buf_addf(&text, "  k%d: 1\n", i);
	sl_buf_adds(&text, "  k5: 2\n");
	assert_error(sl_buf_str(&text),
		     "sbxloop.yaml:100002:3: duplicate key 'budgets.k5' "
		     "(first defined at line 7)");
	sl_buf_release(&text);
}
END_TEST

START_TEST(test_starter_file_loads_back_to_exactly_the_defaults)
{
	struct sl_config_opts o = {0};
	struct sl_core *core = NULL;
	struct sl_core *loaded = NULL;
	char *errors = NULL, *text;
	const char *argv[] = {tu_env("SBXLOOP_BIN"), "init", NULL};
	struct tu_run r;
	size_t i;

	tu_exec(&r, dir, NULL, argv);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "wrote sbxloop.yaml\n");
	tu_run_free(&r);
	/* a second init refuses without --force */
	tu_exec(&r, dir, NULL, argv);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "already exists"));
	tu_run_free(&r);

	text = tu_read(file);
	ck_assert_ptr_nonnull(strstr(text, "# most tasks a decomposition may "
					   "produce\n  max_tasks: 20\n"));
	free(text);
	/* defaults-only reference, with the plugins' keys declared */
	o.config_file = "/dev/null";
	o.no_user_file = 1;
	o.no_env = 1;
	ck_assert_int_eq(sl_core_open(&core, &o, &errors), 0);
	o.config_file = file;
	ck_assert_msg(sl_core_open(&loaded, &o, &errors) == 0, "%s", errors);
	for (i = 0; i < sl_config_count(core->cfg); i++) {
		const struct sl_config_value *want =
			sl_config_at(core->cfg, i);
		const struct sl_config_value *got =
			sl_config_get(loaded->cfg, want->spec->path);
		char *a = sl_config_value_yaml(want);
		char *b = sl_config_value_yaml(got);

		ck_assert_msg(strcmp(a, b) == 0, "%s: default %s, loaded %s",
			      want->spec->path, a, b);
		free(a);
		free(b);
	}
	sl_core_close(loaded);
	sl_core_close(core);
}
END_TEST

START_TEST(test_plugin_keys_are_validated_like_core_keys)
{
	struct sl_config_opts o = {0};
	struct sl_core *core = NULL;
	char *errors = NULL, *path = NULL;

	if (asprintf(&path, "%s/tests/plugins/abi",
		     tu_env("SBXLOOP_BUILDDIR")) < 0)
		abort();
	setenv("SBXLOOP_PLUGIN_PATH", path, 1);
	free(path);
	tu_write(file, "testsink:\n  colr: red\n  depth: deep\n");
	o.config_file = file;
	ck_assert_int_eq(sl_core_open(&core, &o, &errors), SBXLOOP_EINVAL);
	ck_assert_msg(strstr(errors, "sbxloop.yaml:2:3: unknown key "
				     "'testsink.colr' (did you mean "
				     "'color'?)"),
		      "%s", errors);
	ck_assert_msg(strstr(errors, "testsink.depth: expected an integer, "
				     "found 'deep'"),
		      "%s", errors);
	free(errors);
	sl_core_close(core);
	tu_write(file, "testsink:\n  color: red\n");
	ck_assert_int_eq(sl_core_open(&core, &o, &errors), 0);
	ck_assert_str_eq(sl_config_str(core->cfg, "testsink.color"), "red");
	ck_assert_int_eq(sl_config_int(core->cfg, "testsink.depth", 0), 3);
	sl_core_close(core);
}
END_TEST

START_TEST(test_config_show_prints_sources_and_exits_2_on_errors)
{
	const char *argv[] = {tu_env("SBXLOOP_BIN"), "config", "show", NULL};
	const char *env[] = {"SBXLOOP_BUDGETS__MAX_TASKS=5", NULL};
	const char *json[] = {tu_env("SBXLOOP_BIN"), "config", "show",
			      "--json", NULL};
	struct tu_run r;

	tu_write(file, "model: gpt-x\n");
	tu_exec(&r, dir, env, argv);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(
		strstr(r.out, "project file (sbxloop.yaml:1:8)"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "env (SBXLOOP_BUDGETS__MAX_TASKS)"));
	tu_run_free(&r);
	tu_exec(&r, dir, env, json);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "\"budgets.max_tasks\""));
	tu_run_free(&r);
	tu_write(file, "modle: gpt-x\n");
	tu_exec(&r, dir, NULL, argv);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "error: sbxloop.yaml:1:1: unknown "
					    "key 'modle' (did you mean "
					    "'model'?)"));
	ck_assert_str_eq(r.out, "");
	tu_run_free(&r);
}
END_TEST

START_TEST(test_config_option_is_accepted_after_the_command)
{
	char *other = sl_xasprintf("%s/other.yaml", dir);
	const char *after[] = {tu_env("SBXLOOP_BIN"),
			       "config",
			       "show",
			       "--config",
			       other,
			       NULL};
	char *eq = sl_xasprintf("--config=%s", other);
	const char *after_eq[] = {tu_env("SBXLOOP_BIN"), "config", "show", eq,
				  NULL};
	const char *dangling[] = {tu_env("SBXLOOP_BIN"), "config", "show",
				  "--config", NULL};
	struct tu_run r;

	tu_write(file, "model: from-project\n");
	tu_write(other, "model: from-other\n");
	tu_exec(&r, dir, NULL, after);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "from-other"));
	ck_assert_ptr_null(strstr(r.out, "from-project"));
	tu_run_free(&r);
	tu_exec(&r, dir, NULL, after_eq);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "from-other"));
	tu_run_free(&r);
	tu_exec(&r, dir, NULL, dangling);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "'--config' needs a file"));
	tu_run_free(&r);
	free(eq);
	free(other);
}
END_TEST

START_TEST(test_dotenv_never_overrides_the_environment)
{
	char *err = NULL;

	setenv("SL_TEST_KEEP", "outer", 1);
	unsetenv("SL_TEST_NEW");
	tu_write(".env", "# tokens\nexport SL_TEST_KEEP=inner\n"
			 "SL_TEST_NEW=\"quoted value\"\n");
	ck_assert_int_eq(sl_dotenv_load(".env", &err), 0);
	ck_assert_str_eq(getenv("SL_TEST_KEEP"), "outer");
	ck_assert_str_eq(getenv("SL_TEST_NEW"), "quoted value");
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_defaults_apply_when_nothing_is_set);
	tcase_add_test(tc,
		       test_state_dir_expands_home_and_anchors_relative_paths);
	tcase_add_test(tc, test_unknown_key_names_location_and_suggests);
	tcase_add_test(tc, test_unknown_section_is_an_error);
	tcase_add_test(tc, test_wrong_type_says_expected_and_found);
	tcase_add_test(tc, test_duplicate_key_is_an_error);
	tcase_add_test(tc, test_invalid_yaml_names_the_line);
	tcase_add_test(tc, test_validators_reject_out_of_range_values);
	tcase_add_test(tc, test_disabled_abort_threshold_needs_no_ordering);
	tcase_add_test(
		tc, test_precedence_env_over_project_over_user_over_default);
	tcase_add_test(tc, test_bad_environment_override_names_the_variable);
	tcase_add_test(tc, test_tool_variables_are_not_config);
	tcase_add_test(
		tc, test_a_prefixed_variable_that_names_nothing_is_an_error);
	tcase_add_test(tc, test_every_variable_the_code_reads_is_known);
	tcase_add_test(tc, test_an_empty_state_dir_variable_is_refused);
	tcase_add_test(tc, test_a_config_path_that_is_a_directory_says_so);
	tcase_add_test(tc, test_an_error_through_an_alias_points_at_the_alias);
	tcase_add_test(tc, test_control_characters_in_values_are_refused);
	tcase_add_test(tc,
		       test_alias_expansion_is_capped_before_it_is_expanded);
	tcase_add_test(tc, test_a_hundred_thousand_keys_load_in_linear_time);
	tcase_add_test(tc,
		       test_starter_file_loads_back_to_exactly_the_defaults);
	tcase_add_test(tc, test_plugin_keys_are_validated_like_core_keys);
	tcase_add_test(tc,
		       test_config_show_prints_sources_and_exits_2_on_errors);
	tcase_add_test(tc, test_config_option_is_accepted_after_the_command);
	tcase_add_test(tc, test_dotenv_never_overrides_the_environment);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The plugin loader, specified through test-only modules that each
 * break one ABI rule (tests/plugins/abi/): which are refused, with which
 * message, and which load.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/sink.h>

#include "cli/cli.h"
#include "host/core.h"
#include "host/loader.h"
#include "testutil.h"

static char *abi_dir;
static char *abi2_dir;

static void setup(void)
{
	const char *b = tu_env("SBXLOOP_BUILDDIR");

	if (asprintf(&abi_dir, "%s/tests/plugins/abi", b) < 0 ||
	    asprintf(&abi2_dir, "%s/tests/plugins/abi2", b) < 0)
		abort();
	setenv("SBXLOOP_PLUGIN_PATH", abi_dir, 1);
	sl_core_abi_minor = SBXLOOP_ABI_MINOR;
}

static void teardown(void)
{
	free(abi_dir);
	free(abi2_dir);
}

static const struct sl_module *module(const struct sl_registry *reg,
				      const char *name)
{
	size_t i;

	for (i = 0; i < reg->n_modules; i++)
		if (strcmp(reg->modules[i].name, name) == 0)
			return &reg->modules[i];
	ck_abort_msg("module %s was not discovered", name);
	return NULL;
}

static void load(struct sl_registry *reg)
{
	struct sbxloop_error err = {0, ""};

	ck_assert_int_eq(sl_registry_load(reg, NULL, &err), 0);
}

static void assert_refused(const char *name, const char *const *needles)
{
	struct sl_registry reg;
	const struct sl_module *m;

	load(&reg);
	m = module(&reg, name);
	ck_assert_ptr_null(m->desc);
	ck_assert_ptr_nonnull(m->refusal);
	for (; *needles; needles++)
		ck_assert_msg(strstr(m->refusal, *needles),
			      "refusal of %s lacks '%s': %s", name, *needles,
			      m->refusal);
	sl_registry_release(&reg);
}

START_TEST(test_well_formed_module_loads_with_its_components)
{
	struct sl_registry reg;
	const struct sl_module *m;
	const struct sbxloop_component *c;

	load(&reg);
	m = module(&reg, "good");
	ck_assert_ptr_null(m->refusal);
	ck_assert_str_eq(m->desc->version, "1.2.3");
	c = sl_registry_find(&reg, SBXLOOP_KIND_SINK, "testsink", NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(strstr(m->path, "tests/plugins/abi/good.la"));
	sl_registry_release(&reg);
}
END_TEST

/* "TEXT<major>.<minor + delta>" into buf, for this core's ABI. */
static const char *abi_text(char *buf, size_t len, const char *text, int delta)
{
	snprintf(buf, len, "%s%d.%d", text, SBXLOOP_ABI_MAJOR,
		 SBXLOOP_ABI_MINOR + delta);
	return buf;
}

START_TEST(test_bad_magic_is_refused_naming_both_abis_and_the_fix)
{
	char fix[64];
	const char *n[] = {"bad magic 0xdeadbeef",
			   abi_text(fix, sizeof(fix),
				    "rebuild it against sbxloop-plugin ", 0),
			   NULL};

	assert_refused("bad_magic", n);
}
END_TEST

START_TEST(test_other_major_is_refused_naming_both_versions)
{
	char has[64], fix[64];
	const char *n[] = {
		"built for plugin ABI 2.0",
		abi_text(has, sizeof(has), "this sbxloop has ABI ", 0),
		abi_text(fix, sizeof(fix),
			 "rebuild it against sbxloop-plugin ", 0),
		NULL};

	assert_refused("wrong_major", n);
}
END_TEST

START_TEST(test_newer_minor_is_refused)
{
	char built[64], ours[64];
	const char *n[] = {
		abi_text(built, sizeof(built), "built for plugin ABI ", 1),
		abi_text(ours, sizeof(ours), "newer than this sbxloop's ABI ",
			 0),
		NULL};

	assert_refused("newer_minor", n);
}
END_TEST

START_TEST(test_older_minor_loads_and_slots_past_its_size_are_absent)
{
	struct sl_registry reg;
	const struct sbxloop_component *c;
	const struct sbxloop_sink_ops *ops;

	/* pretend this core is one minor past the module */
	sl_core_abi_minor = SBXLOOP_ABI_MINOR + 1;
	load(&reg);
	ck_assert_ptr_null(module(&reg, "older_minor")->refusal);
	c = sl_registry_find(&reg, SBXLOOP_KIND_SINK, "oldersink", NULL);
	ck_assert_ptr_nonnull(c);
	ops = c->ops;
	ck_assert(!SBXLOOP_HAS_SLOT(ops, struct sbxloop_sink_ops, flush));
	ck_assert(SBXLOOP_HAS_SLOT(ops, struct sbxloop_sink_ops, event));
	sl_registry_release(&reg);
}
END_TEST

START_TEST(test_missing_required_slot_is_refused_naming_the_slot)
{
	const char *n[] = {"sink:slotsink",
			   "missing the required slot 'event'", NULL};

	assert_refused("missing_slot", n);
}
END_TEST

START_TEST(test_module_without_descriptor_is_refused)
{
	const char *n[] = {"no 'sbxloop_plugin_descriptor' symbol", NULL};

	assert_refused("no_descriptor", n);
}
END_TEST

START_TEST(test_descriptor_name_must_match_the_file)
{
	const char *n[] = {"'something_else'", "'name_mismatch'", NULL};

	assert_refused("name_mismatch", n);
}
END_TEST

START_TEST(test_duplicate_component_is_refused_naming_the_first)
{
	const char *n[] = {
		"sink:testsink is already provided by module 'good'", NULL};

	assert_refused("twin_sink", n);
}
END_TEST

START_TEST(test_duplicate_module_name_is_refused)
{
	struct sl_registry reg;
	char *path = NULL;
	size_t i, seen = 0;

	if (asprintf(&path, "%s:%s", abi_dir, abi2_dir) < 0)
		abort();
	setenv("SBXLOOP_PLUGIN_PATH", path, 1);
	load(&reg);
	for (i = 0; i < reg.n_modules; i++) {
		const struct sl_module *m = &reg.modules[i];

		if (strcmp(m->name, "good") != 0)
			continue;
		seen++;
		if (strstr(m->path, "abi2/")) {
			ck_assert_ptr_nonnull(m->refusal);
			ck_assert_ptr_nonnull(strstr(
				m->refusal, "duplicate of module 'good'"));
		} else {
			ck_assert_ptr_null(m->refusal);
		}
	}
	ck_assert_uint_eq(seen, 2);
	ck_assert_str_eq(reg.dirs[0], abi_dir);
	ck_assert_str_eq(reg.dirs[1], abi2_dir);
	sl_registry_release(&reg);
	free(path);
}
END_TEST

START_TEST(test_failing_create_names_module_path_and_reason)
{
	struct sl_config_opts opts = {0};
	struct sl_core *core = NULL;
	struct sl_instance inst;
	struct sbxloop_error err = {0, ""};
	char *errors = NULL;

	opts.config_file = "/dev/null";
	opts.no_user_file = 1;
	opts.no_env = 1;
	ck_assert_int_eq(sl_core_open(&core, &opts, &errors), 0);
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SINK,
					     "failsink", &inst, &err),
			 SBXLOOP_EINVAL);
	ck_assert_msg(strstr(err.message, "module 'create_fails'") &&
			      strstr(err.message, "create_fails.la") &&
			      strstr(err.message, "nowhere:1"),
		      "%s", err.message);
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SINK,
					     "testsink", &inst, &err),
			 0);
	sl_instance_destroy(&inst);
	sl_core_close(core);
}
END_TEST

START_TEST(test_plugins_command_lists_refused_modules_with_reasons)
{
	const char *argv[] = {tu_env("SBXLOOP_BIN"),
			      "--config",
			      "/dev/null",
			      "plugins",
			      "--json",
			      NULL};
	struct tu_run r;

	tu_exec(&r, NULL, NULL, argv);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "\"status\":\t\"refused\""));
	ck_assert_ptr_nonnull(strstr(r.out, "missing the required slot"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"name\":\t\"testsink\""));
	tu_run_free(&r);
	argv[4] = NULL;
	tu_exec(&r, NULL, NULL, argv);
	ck_assert_int_eq(r.status, 0);
	{
		char want[64];

		ck_assert_ptr_nonnull(strstr(
			r.out, abi_text(want, sizeof(want),
					"good 1.2.3  loaded  ABI ", 0)));
	}
	ck_assert_ptr_nonnull(strstr(r.out, "sink:testsink"));
	ck_assert_ptr_nonnull(strstr(r.out, "wrong_major  refused"));
	tu_run_free(&r);
}
END_TEST

/* A config in a fresh directory selecting sandbox provider `provider`. */
static char *fault_config(char **dir, const char *provider, const char *extra)
{
	char *path = NULL, *text = NULL;

	*dir = tu_tmpdir();
	if (asprintf(&path, "%s/sbxloop.yaml", *dir) < 0 ||
	    asprintf(&text, "state_dir: %s/state\nplugins:\n  sandbox: %s\n%s",
		     *dir, provider, extra) < 0)
		abort();
	tu_write(path, text);
	free(text);
	return path;
}

/* "fatal: plugin 'MODULE' (<abi dir>/MODULE.la) WHAT during create()" */
static void assert_fatal_line(const char *err, const char *module,
			      const char *what)
{
	char *want = NULL;

	if (asprintf(&want,
		     "fatal: plugin '%s' (%s/%s.la) %s during create()\n",
		     module, abi_dir, module, what) < 0)
		abort();
	ck_assert_msg(strstr(err, want), "stderr lacks '%s': %s", want, err);
	free(want);
}

START_TEST(test_plugin_crashing_in_create_is_named_on_stderr)
{
	char *dir, *cfg = fault_config(&dir, "segv", "");
	const char *argv[] = {
		tu_env("SBXLOOP_BIN"), "--config", cfg, "sandbox", "ls", NULL};
	struct tu_run r;

	tu_exec(&r, NULL, NULL, argv);
	/* dies of the signal (a sanitizer's handler may exit instead) */
	ck_assert_int_ne(r.status, 0);
	assert_fatal_line(r.err, "segv_create", "crashed with SIGSEGV");
	tu_run_free(&r);
	tu_rmtree(dir);
	free(dir);
	free(cfg);
}
END_TEST

START_TEST(test_plugin_calling_exit_in_create_is_named_and_fails)
{
	char *dir, *cfg = fault_config(&dir, "exitbox", "");
	const char *argv[] = {
		tu_env("SBXLOOP_BIN"), "--config", cfg, "sandbox", "ls", NULL};
	struct tu_run r;

	tu_exec(&r, NULL, NULL, argv);
	/* the plugin's exit(0) must not read as sbxloop's success */
	ck_assert_int_eq(r.status, SL_EXIT_PLUGIN_EXITED);
	assert_fatal_line(r.err, "exit_create", "called exit(0)");
	ck_assert_ptr_null(strstr(r.out, "no sbxloop sandboxes"));
	tu_run_free(&r);
	tu_rmtree(dir);
	free(dir);
	free(cfg);
}
END_TEST

START_TEST(test_plugins_lists_everything_when_the_provider_crashes)
{
	static const char *const providers[] = {"segv", "exitbox"};
	static const char *const modules[] = {"segv_create", "exit_create"};
	static const char *const whats[] = {"crashed with SIGSEGV",
					    "called exit(0)"};
	size_t i;

	for (i = 0; i < 2; i++) {
		char *dir, *cfg = fault_config(&dir, providers[i], "");
		const char *argv[] = {tu_env("SBXLOOP_BIN"), "--config", cfg,
				      "plugins", NULL};
		struct tu_run r;

		tu_exec(&r, NULL, NULL, argv);
		ck_assert_int_eq(r.status, SL_EXIT_FAIL);
		assert_fatal_line(r.err, modules[i], whats[i]);
		ck_assert_ptr_nonnull(strstr(r.err,
					     "configured sandbox provider is "
					     "unusable"));
		/* the listing still ran to its end */
		ck_assert_ptr_nonnull(strstr(r.out, "good 1.2.3  loaded"));
		ck_assert_ptr_nonnull(strstr(
			r.out, "capabilities (configured): unavailable: "));
		ck_assert_ptr_nonnull(strstr(r.out, "search path:"));
		tu_run_free(&r);
		tu_rmtree(dir);
		free(dir);
		free(cfg);
	}
}
END_TEST

/* The text of the line starting with `prefix` in `out` (caller frees). */
static char *line_after(const char *out, const char *prefix)
{
	const char *p = strstr(out, prefix), *end;

	ck_assert_msg(p, "no '%s' in: %s", prefix, out);
	p += strlen(prefix);
	end = strchr(p, '\n');
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

START_TEST(test_plugins_shows_the_configured_instance_apart_from_best_case)
{
	char *dir, *cfg = fault_config(&dir, "local",
				       "local:\n  isolation: none\n");
	char *plugins = NULL, *env[2] = {NULL, NULL};
	const char *argv[] = {
		tu_env("SBXLOOP_BIN"), "--config", cfg, "plugins", NULL, NULL};
	const char *local, *json;
	char *configured, *best;
	struct tu_run r;

	if (asprintf(&plugins, "SBXLOOP_PLUGIN_PATH=%s/plugins",
		     tu_env("SBXLOOP_BUILDDIR")) < 0)
		abort();
	env[0] = plugins;
	tu_exec(&r, NULL, (const char *const *)env, argv);
	ck_assert_int_eq(r.status, 0);
	local = strstr(r.out, "sandbox:local");
	ck_assert_ptr_nonnull(local);
	configured = line_after(local, "capabilities (configured): ");
	best = line_after(local, "capabilities (best case): ");
	/* bare processes on the host: nothing confines them */
	ck_assert_str_eq(configured, "workspace_mounted");
	ck_assert_ptr_nonnull(strstr(best, "filesystem_confined"));
	ck_assert_ptr_nonnull(strstr(best, "network_disabled"));
	free(configured);
	free(best);
	tu_run_free(&r);

	argv[4] = "--json";
	tu_exec(&r, NULL, (const char *const *)env, argv);
	ck_assert_int_eq(r.status, 0);
	json = strstr(r.out, "\"capabilities_configured\":\t[");
	ck_assert_ptr_nonnull(json);
	configured = line_after(json, "\"capabilities_configured\":\t");
	ck_assert_str_eq(configured, "[\"workspace_mounted\"]");
	ck_assert_ptr_nonnull(strstr(r.out, "\"capabilities_best_case\""));
	free(configured);
	tu_run_free(&r);
	tu_rmtree(dir);
	free(dir);
	free(cfg);
	free(plugins);
}
END_TEST

START_TEST(test_every_capability_bit_has_its_own_name)
{
	char all[512], one[64];
	uint32_t bit;

	sl_caps_format(SBXLOOP_CAP_ALL, all, sizeof(all));
	for (bit = 1; bit && (bit & SBXLOOP_CAP_ALL); bit <<= 1) {
		sl_caps_format(bit, one, sizeof(one));
		ck_assert_msg(one[0] != '\0',
			      "capability bit 0x%x has no name", bit);
		ck_assert_ptr_null(strchr(one, ','));
		ck_assert_ptr_nonnull(strstr(all, one));
	}
	sl_caps_format(SBXLOOP_CAP_WORKSPACE_READ_ONLY, one, sizeof(one));
	ck_assert_str_eq(one, "workspace_read_only");
}
END_TEST

static Suite *loader_suite(void)
{
	Suite *s = suite_create("loader");
	TCase *tc = tcase_create("abi");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_well_formed_module_loads_with_its_components);
	tcase_add_test(tc,
		       test_bad_magic_is_refused_naming_both_abis_and_the_fix);
	tcase_add_test(tc, test_other_major_is_refused_naming_both_versions);
	tcase_add_test(tc, test_newer_minor_is_refused);
	tcase_add_test(
		tc, test_older_minor_loads_and_slots_past_its_size_are_absent);
	tcase_add_test(tc,
		       test_missing_required_slot_is_refused_naming_the_slot);
	tcase_add_test(tc, test_module_without_descriptor_is_refused);
	tcase_add_test(tc, test_descriptor_name_must_match_the_file);
	tcase_add_test(tc,
		       test_duplicate_component_is_refused_naming_the_first);
	tcase_add_test(tc, test_duplicate_module_name_is_refused);
	tcase_add_test(tc, test_failing_create_names_module_path_and_reason);
	tcase_add_test(
		tc, test_plugins_command_lists_refused_modules_with_reasons);
	tcase_add_test(tc, test_plugin_crashing_in_create_is_named_on_stderr);
	tcase_add_test(tc,
		       test_plugin_calling_exit_in_create_is_named_and_fails);
	tcase_add_test(
		tc, test_plugins_lists_everything_when_the_provider_crashes);
	tcase_add_test(
		tc,
		test_plugins_shows_the_configured_instance_apart_from_best_case);
	tcase_add_test(tc, test_every_capability_bit_has_its_own_name);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(loader_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

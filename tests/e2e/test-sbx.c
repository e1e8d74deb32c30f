/*
 * The sbx module against the fake sbx (tests/fakes/bin/sbx, put first on
 * PATH): provisioning and its rollback, exec's error classification,
 * copy and list, the secret strategies and the credential split, the
 * policy granter, and the sandbox/shell/secrets/doctor commands of the
 * real sbxloop binary. Every test loads the module through the real
 * core loader with its own sbxloop.yaml and fake state directory.
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

#define AGENT_TOKEN "ghp_agentTOKEN0123456789abcdef"
#define GH_TOKEN_VALUE "ghs_githubTOKEN9876543210fedcba"

/* ------------------------------------------------------------ fixture */

static char *dir;
static char fake_dir[1024], ws[1024], cfg_path[1024];
static struct sl_core *core;
static struct sl_instance box;
static struct sl_buf events = SL_BUF_INIT;

static int capture_emit(struct sl_core *c, const char *type,
			const char *job_id, const char *data_json)
{
	(void)c;
	(void)job_id;
	sl_buf_addf(&events, "%s %s\n", type, data_json ? data_json : "{}");
	return 0;
}

static void write_config(const char *extra)
{
	char *text = sl_xasprintf("state_dir: %s/state\n"
				  "plugins:\n"
				  "  sandbox: sbx\n"
				  "  secrets: [sbx-proxy, plain-env]\n"
				  "  policy: [sbx]\n"
				  "%s",
				  dir, extra ? extra : "");

	tu_write(cfg_path, text);
	free(text);
}

static void core_up(void)
{
	struct sl_config_opts opts;
	char *errors = NULL;

	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	opts.no_env = 1;
	ck_assert_msg(sl_core_open(&core, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	core->emit = capture_emit;
}

static void box_up(void)
{
	struct sbxloop_error err = {0, ""};

	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX, "sbx",
					  &box, &err) == 0,
		      "%s", err.message);
	/* the active provider, as the engine makes it */
	core->sandbox = box;
}

static void setup(void)
{
	char *path, *real;

	dir = tu_tmpdir();
	snprintf(fake_dir, sizeof(fake_dir), "%s/fake", dir);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/sbxloop.yaml", dir);
	mkdir(ws, 0755);
	real = realpath(ws, NULL);
	snprintf(ws, sizeof(ws), "%s", real);
	free(real);
	path = sl_xasprintf("%s/tests/fakes/bin:%s",
			    tu_env("SBXLOOP_BUILDDIR"), getenv("PATH"));
	setenv("PATH", path, 1);
	free(path);
	setenv("SBX_FAKE_DIR", fake_dir, 1);
	unsetenv("SBX_FAKE_NO_MOUNT");
	unsetenv("SBX_FAKE_SECRET_LS");
	unsetenv("SBX_FAKE_SECRET_SCOPE");
	unsetenv("COPILOT_GITHUB_TOKEN");
	unsetenv("GH_TOKEN");
	unsetenv("GITHUB_TOKEN");
	sl_buf_reset(&events);
	write_config(NULL);
	core = NULL;
	memset(&box, 0, sizeof(box));
}

static void teardown(void)
{
	if (core) {
		/* core_close destroys core->sandbox (the same instance) */
		sl_core_close(core);
		core = NULL;
	}
	memset(&box, 0, sizeof(box));
	sl_buf_release(&events);
	tu_rmtree(dir);
	free(dir);
	dir = NULL;
}

/* ------------------------------------------------------------ helpers */

static const struct sbxloop_sandbox_ops *ops(void)
{
	return box.ops;
}

/* Every recorded invocation, as a JSON array of records. */
static cJSON *invocations(void)
{
	char *path = sl_xasprintf("%s/invocations.jsonl", fake_dir);
	char *text = tu_read(path), *line, *save;
	cJSON *all = cJSON_CreateArray();

	free(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		cJSON_AddItemToArray(all, cJSON_Parse(line));
	free(text);
	return all;
}

static char *argv_joined(const cJSON *rec)
{
	const cJSON *a;
	struct sl_buf b = SL_BUF_INIT;

	cJSON_ArrayForEach (a, cJSON_GetObjectItem(rec, "argv")) {
		if (b.len)
			sl_buf_addc(&b, ' ');
		sl_buf_adds(&b, a->valuestring);
	}
	return sl_buf_detach(&b);
}

/* How many invocations start with `prefix` (space-joined argv). */
static int count_calls(const char *prefix)
{
	cJSON *all = invocations(), *rec;
	int n = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		if (!prefix || sl_starts_with(j, prefix))
			n++;
		free(j);
	}
	cJSON_Delete(all);
	return n;
}

/* Does any recorded argv contain `needle` (outside `allowed_prefix`
 * invocations when that is non-NULL)? */
static int argv_contains(const char *needle, const char *allowed_prefix)
{
	cJSON *all = invocations(), *rec;
	int hit = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		if (strstr(j, needle) &&
		    !(allowed_prefix && sl_starts_with(j, allowed_prefix)))
			hit = 1;
		free(j);
	}
	cJSON_Delete(all);
	return hit;
}

static void script(const char *json)
{
	char *path = sl_xasprintf("%s/responses.json", fake_dir);

	sl_mkdirs(fake_dir, 0755);
	tu_write(path, json);
	free(path);
}

static char *fs_path(const char *name, const char *inside)
{
	return sl_xasprintf("%s/sandboxes/%s/fs%s", fake_dir, name, inside);
}

static int box_exists(const char *name)
{
	char *p = sl_xasprintf("%s/sandboxes/%s/meta.json", fake_dir, name);
	int ok = access(p, F_OK) == 0;

	free(p);
	return ok;
}

static int create_box(const char *name, const char *const *domains,
		      const char *worker, struct sbxloop_sandbox_info *info,
		      struct sbxloop_error *err)
{
	struct sbxloop_sandbox_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = name;
	spec.role = "agent";
	spec.run_id = "r1";
	spec.workspace = ws;
	spec.worker_path = worker ? worker : tu_env("SBXLOOP_WORKER");
	spec.allow_domains = domains;
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	return ops()->sandbox_create(box.ctx, &spec, info, err);
}

static void must_create(const char *name)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	ck_assert_msg(create_box(name, NULL, NULL, &info, &err) == 0, "%s",
		      err.message);
}

static int run_in(const char *name, const char *script_text, const char *in,
		  double timeout, struct sbxloop_proc_result *res,
		  struct sbxloop_error *err)
{
	const char *argv[] = {"sh", "-c", script_text, NULL};
	struct sbxloop_exec_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.stdin_data = in;
	spec.stdin_len = in ? strlen(in) : 0;
	spec.timeout_s = timeout;
	memset(res, 0, sizeof(*res));
	return ops()->exec(box.ctx, name, &spec, res, err);
}

/* ------------------------------------------------------- provisioning */

START_TEST(test_create_provisions_in_five_calls)
{
	static const char *const domains[] = {"api.github.com", "pypi.org",
					      NULL};
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};
	struct stat sb;
	char *worker, *j, *ls;
	cJSON *all;

	core_up();
	box_up();
	ck_assert_msg(create_box("sbxloop-r1-agent", domains, NULL, &info,
				 &err) == 0,
		      "%s", err.message);
	ck_assert_str_eq(info.name, "sbxloop-r1-agent");
	ck_assert_str_eq(info.worker,
			 "/home/agent/.sbxloop/bin/sbxloop-worker");
	ck_assert_str_eq(info.home, "/home/agent/.sbxloop");
	/* sbx 0.38 mounts the workspace at its own path */
	ck_assert_int_eq(info.mounted, 1);
	ck_assert_str_eq(info.workdir, ws);
	ck_assert(info.capabilities & SBXLOOP_CAP_WORKSPACE_MOUNTED);
	ck_assert(info.capabilities & SBXLOOP_CAP_EGRESS_ENFORCED);
	ck_assert(!(info.capabilities & SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX));

	worker = fs_path("sbxloop-r1-agent",
			 "/home/agent/.sbxloop/bin/sbxloop-worker");
	ck_assert_int_eq(stat(worker, &sb), 0);
	ck_assert(sb.st_mode & S_IXUSR);
	free(worker);

	all = invocations();
	j = argv_joined(cJSON_GetArrayItem(all, 0));
	ls = sl_xasprintf("create --name=sbxloop-r1-agent shell %s", ws);
	ck_assert_str_eq(j, ls);
	free(j);
	free(ls);
	cJSON_Delete(all);
	ck_assert_int_eq(count_calls("policy allow network sbxloop-r1-agent "
				     "api.github.com,pypi.org"),
			 1);
	ck_assert_int_eq(count_calls("policy"), 1);
	/* create, policy, mkdir, cp worker, one probe */
	ck_assert_int_eq(count_calls(NULL), 5);
	/* the mount marker is gone again */
	{
		struct tu_run r;
		const char *argv[] = {"sh", "-c", "ls -A | wc -l", NULL};

		tu_exec(&r, ws, NULL, argv);
		ck_assert_int_eq(atoi(r.out), 0);
		tu_run_free(&r);
	}
	ck_assert(strstr(sl_buf_str(&events), "sandbox.workspace_mount") !=
		  NULL);
}
END_TEST

START_TEST(test_create_passes_app_name_and_template)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};
	cJSON *all, *rec;
	int n = 0;

	write_config("app_name: myapp\nsbx:\n  template: team/box:1\n");
	core_up();
	box_up();
	ck_assert_msg(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err) == 0,
		"%s", err.message);
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		ck_assert_str_eq(cJSON_GetStringValue(
					 cJSON_GetObjectItem(rec, "app_name")),
				 "myapp");
		n++;
	}
	cJSON_Delete(all);
	ck_assert_int_eq(n, 4); /* no allowlist, no policy call */
	ck_assert_int_eq(count_calls("create --name=sbxloop-r1-agent "
				     "--template team/box:1 shell "),
			 1);
}
END_TEST

START_TEST(test_unmounted_workspace_uses_home_work)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};
	struct stat sb;
	char *work;

	setenv("SBX_FAKE_NO_MOUNT", "1", 1);
	core_up();
	box_up();
	ck_assert_msg(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err) == 0,
		"%s", err.message);
	ck_assert_int_eq(info.mounted, 0);
	ck_assert_str_eq(info.workdir, "/home/agent/work");
	ck_assert(!(info.capabilities & SBXLOOP_CAP_WORKSPACE_MOUNTED));
	work = fs_path("sbxloop-r1-agent", "/home/agent/work");
	ck_assert_int_eq(stat(work, &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	free(work);
	ck_assert(strstr(sl_buf_str(&events), "\"mounted\":false") != NULL);
}
END_TEST

START_TEST(test_create_failure_after_create_rolls_back)
{
	static const char *const domains[] = {"pypi.org", NULL};
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	script("[{\"prefix\":\"policy allow\",\"returncode\":1,"
	       "\"stderr\":\"ERROR: policy daemon unavailable\\n\","
	       "\"once\":true}]");
	core_up();
	box_up();
	ck_assert_int_eq(
		create_box("sbxloop-r1-agent", domains, NULL, &info, &err),
		SBXLOOP_EINFRA);
	ck_assert_msg(strstr(err.message, "policy daemon unavailable"), "%s",
		      err.message);
	ck_assert(!box_exists("sbxloop-r1-agent"));
	ck_assert_int_eq(count_calls("rm --force sbxloop-r1-agent"), 1);
}
END_TEST

START_TEST(test_create_of_existing_name_fails_cleanly)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	ck_assert_int_lt(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err), 0);
	ck_assert_msg(strstr(err.message, "already exists"), "%s",
		      err.message);
	/* a create that failed owns nothing: the first sandbox stays */
	ck_assert(box_exists("sbxloop-r1-agent"));
}
END_TEST

START_TEST(test_worker_version_mismatch_is_refused)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};
	char *fake_worker = sl_xasprintf("%s/old-worker", dir);

	tu_write(fake_worker, "#!/bin/sh\necho 'sbxloop-worker 0.0.1'\n");
	chmod(fake_worker, 0755);
	core_up();
	box_up();
	ck_assert_int_eq(
		create_box("sbxloop-r1-agent", NULL, fake_worker, &info, &err),
		SBXLOOP_ESTATE);
	ck_assert_msg(strstr(err.message, "0.0.1") &&
			      strstr(err.message, PACKAGE_VERSION),
		      "%s", err.message);
	ck_assert(!box_exists("sbxloop-r1-agent"));
	free(fake_worker);
}
END_TEST

START_TEST(test_missing_libcjson_is_installed_once)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	script("[{\"prefix\":\"exec -w /home/agent sbxloop-r1-agent sh -c "
	       "w=\",\"returncode\":3,\"once\":true},"
	       "{\"prefix\":\"exec -w /home/agent sbxloop-r1-agent sh -c "
	       "sudo -n apt-get install -y libcjson1\",\"returncode\":0}]");
	core_up();
	box_up();
	ck_assert_msg(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err) == 0,
		"%s", err.message);
	ck_assert_int_eq(count_calls("exec -w /home/agent sbxloop-r1-agent "
				     "sh -c sudo"),
			 1);
}
END_TEST

START_TEST(test_missing_libcjson_without_apt_is_a_clear_error)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	script("[{\"prefix\":\"exec -w /home/agent sbxloop-r1-agent sh -c "
	       "w=\",\"returncode\":3},"
	       "{\"prefix\":\"exec -w /home/agent sbxloop-r1-agent sh -c "
	       "sudo\",\"returncode\":100}]");
	core_up();
	box_up();
	ck_assert_int_eq(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err),
		SBXLOOP_EINFRA);
	ck_assert_msg(strstr(err.message, "libcjson"), "%s", err.message);
	ck_assert_int_eq(count_calls("exec -w /home/agent sbxloop-r1-agent "
				     "sh -c sudo"),
			 1);
	ck_assert(!box_exists("sbxloop-r1-agent"));
}
END_TEST

START_TEST(test_missing_sbx_binary_is_not_found)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	setenv("PATH", "/nonexistent", 1);
	core_up();
	box_up();
	ck_assert_int_eq(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err),
		SBXLOOP_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "not found on PATH"), "%s",
		      err.message);
}
END_TEST

/* ----------------------------------------------------------------- exec */

struct lines {
	int n;
	char last[256];
};

static void on_line(void *user, const char *line, size_t len)
{
	struct lines *l = user;

	l->n++;
	snprintf(l->last, sizeof(l->last), "%.*s", (int)len, line);
}

START_TEST(test_exec_returns_inner_exit_code)
{
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	ck_assert_int_eq(
		run_in("sbxloop-r1-agent", "exit 7", NULL, 10, &res, &err), 0);
	ck_assert_int_eq(res.exit_code, 7);
	sl_proc_result_clear(&res);
	/* the inner shell's "command not found" is the command's failure */
	ck_assert_int_eq(run_in("sbxloop-r1-agent", "nosuchcommand-xyz", NULL,
				10, &res, &err),
			 0);
	ck_assert_int_eq(res.exit_code, 127);
	sl_proc_result_clear(&res);
}
END_TEST

START_TEST(test_exec_in_missing_or_stopped_sandbox_is_infra)
{
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	const char *stop[] = {"sbx", "stop", "sbxloop-r1-agent", NULL};
	struct tu_run r;

	core_up();
	box_up();
	ck_assert_int_eq(
		run_in("sbxloop-nope-agent", "true", NULL, 10, &res, &err),
		SBXLOOP_EINFRA);
	ck_assert_msg(strstr(err.message, "not found"), "%s", err.message);
	sl_proc_result_clear(&res);
	must_create("sbxloop-r1-agent");
	tu_exec(&r, NULL, NULL, stop);
	tu_run_free(&r);
	ck_assert_int_eq(
		run_in("sbxloop-r1-agent", "true", NULL, 10, &res, &err),
		SBXLOOP_EINFRA);
	ck_assert_msg(strstr(err.message, "is not running"), "%s",
		      err.message);
	sl_proc_result_clear(&res);
}
END_TEST

START_TEST(test_exec_streams_stdin_and_lines)
{
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	struct sbxloop_exec_spec spec;
	const char *argv[] = {"sh", "-c", "cat; echo done", NULL};
	struct lines l = {0, ""};

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.stdin_data = "one\ntwo\n";
	spec.stdin_len = 8;
	spec.timeout_s = 10;
	spec.on_stdout_line = on_line;
	spec.user = &l;
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(
		ops()->exec(box.ctx, "sbxloop-r1-agent", &spec, &res, &err),
		0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_str_eq(l.last, "done");
	sl_proc_result_clear(&res);
	/* -i only when there is input; the workdir is the default cwd */
	{
		char *want =
			sl_xasprintf("exec -i -w %s sbxloop-r1-agent sh", ws);

		ck_assert_int_eq(count_calls(want), 1);
		free(want);
	}
}
END_TEST

START_TEST(test_exec_refuses_a_secret_in_its_env)
{
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	struct sbxloop_exec_spec spec;
	const char *argv[] = {"true", NULL};
	const char *envp[] = {"PLAIN=1", "GH_TOKEN=" GH_TOKEN_VALUE, NULL};
	int before;

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	core->host.secret_register(&core->host, GH_TOKEN_VALUE);
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.envp = envp;
	memset(&res, 0, sizeof(res));
	before = count_calls(NULL);
	ck_assert_int_eq(
		ops()->exec(box.ctx, "sbxloop-r1-agent", &spec, &res, &err),
		SBXLOOP_EINVAL);
	ck_assert_msg(strstr(err.message, "GH_TOKEN=..."), "%s", err.message);
	ck_assert_int_eq(count_calls(NULL), before);
	ck_assert(!argv_contains(GH_TOKEN_VALUE, NULL));
	/* plain variables are fine */
	envp[1] = NULL;
	ck_assert_int_eq(
		ops()->exec(box.ctx, "sbxloop-r1-agent", &spec, &res, &err),
		0);
	ck_assert_int_eq(count_calls("exec -e PLAIN=1 -w "), 1);
	sl_proc_result_clear(&res);
}
END_TEST

START_TEST(test_exec_timeout_kills)
{
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	double t0;

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	t0 = sl_monotonic();
	ck_assert_int_eq(
		run_in("sbxloop-r1-agent", "sleep 30", NULL, 0.5, &res, &err),
		SBXLOOP_ETIMEDOUT);
	ck_assert(sl_monotonic() - t0 < 10);
	sl_proc_result_clear(&res);
}
END_TEST

/* ------------------------------------------------ copy, list, remove */

struct seen {
	int n;
	char names[8][128];
	char status[8][32];
};

static void on_entry(void *user, const struct sbxloop_sandbox_entry *e)
{
	struct seen *s = user;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", e->name);
		snprintf(s->status[s->n], sizeof(s->status[0]), "%s",
			 e->status);
	}
	s->n++;
}

START_TEST(test_copy_list_and_remove)
{
	struct sbxloop_error err = {0, ""};
	struct seen s;
	char *src = sl_xasprintf("%s/in.txt", dir);
	char *back = sl_xasprintf("%s/out.txt", dir);
	char *text;

	core_up();
	box_up();
	must_create("sbxloop-r1-agent");
	must_create("other-box");
	tu_write(src, "payload\n");
	ck_assert_int_eq(ops()->copy_in(box.ctx, "sbxloop-r1-agent", src,
					"/home/agent/.sbxloop/jobs/in.txt",
					&err),
			 0);
	ck_assert_int_eq(ops()->copy_out(box.ctx, "sbxloop-r1-agent",
					 "/home/agent/.sbxloop/jobs/in.txt",
					 back, &err),
			 0);
	text = tu_read(back);
	ck_assert_str_eq(text, "payload\n");
	free(text);
	ck_assert_int_lt(ops()->copy_out(box.ctx, "sbxloop-r1-agent",
					 "/home/agent/missing", back, &err),
			 0);

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ops()->list(box.ctx, "sbxloop-", on_entry, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.names[0], "sbxloop-r1-agent");
	ck_assert_str_eq(s.status[0], "running");

	ck_assert_int_eq(
		ops()->sandbox_remove(box.ctx, "sbxloop-r1-agent", &err), 0);
	ck_assert(!box_exists("sbxloop-r1-agent"));
	ck_assert_int_eq(count_calls("stop sbxloop-r1-agent"), 1);
	ck_assert_int_eq(count_calls("rm --force sbxloop-r1-agent"), 1);
	/* removing what is gone is fine, and one call */
	ck_assert_int_eq(
		ops()->sandbox_remove(box.ctx, "sbxloop-r1-agent", &err), 0);
	ck_assert_int_eq(count_calls("stop sbxloop-r1-agent"), 2);
	ck_assert_int_eq(count_calls("rm --force sbxloop-r1-agent"), 1);
	free(src);
	free(back);
}
END_TEST

START_TEST(test_ls_parses_old_and_sparse_columns)
{
	struct sbxloop_error err = {0, ""};
	struct seen s;

	/* sbx 0.35: NAME column, an empty agent cell */
	script("[{\"prefix\":\"ls\",\"returncode\":0,\"stdout\":"
	       "\"NAME                 AGENT    STATUS     WORKSPACE\\n"
	       "sbxloop-a-agent      shell    running    /w/a\\n"
	       "sbxloop-b-github              stopped    /w/b\\n"
	       "\\n\"}]");
	core_up();
	box_up();
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ops()->list(box.ctx, "sbxloop-", on_entry, &s, &err),
			 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.names[1], "sbxloop-b-github");
	ck_assert_str_eq(s.status[1], "stopped");
	script("[{\"prefix\":\"ls\",\"returncode\":0,\"stdout\":"
	       "\"No sandboxes found.\\n\"}]");
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ops()->list(box.ctx, NULL, on_entry, &s, &err), 0);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

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

static cJSON *secrets_state(void)
{
	char *path = sl_xasprintf("%s/secrets-state.json", fake_dir);
	char *text = tu_read(path);
	cJSON *doc = text ? cJSON_Parse(text) : cJSON_CreateObject();

	free(text);
	free(path);
	return doc;
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

/* ------------------------------------------------------------- commands */

static void sbxloop(struct tu_run *r, const char *const *args)
{
	const char *argv[16];
	size_t n = 0, i;

	argv[n++] = tu_env("SBXLOOP_BIN");
	argv[n++] = "--config";
	argv[n++] = cfg_path;
	for (i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tu_exec(r, dir, NULL, argv);
}

static void fake_create(const char *name)
{
	const char *argv[] = {"sbx", "create", NULL, "shell", ws, NULL};
	char *arg = sl_xasprintf("--name=%s", name);
	struct tu_run r;

	argv[2] = arg;
	tu_exec(&r, NULL, NULL, argv);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	free(arg);
}

/* Runs in the store as `sbxloop run` leaves them. */
static void store_run(const char *id, const char *state, double age_s,
		      const char *kept)
{
	struct sbxloop_error err = {0, ""};
	struct sl_instance st;
	const struct sbxloop_store_ops *so;
	struct sbxloop_run_row row;

	if (!core)
		core_up();
	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_STORE, "sqlite",
					  &st, &err) == 0,
		      "%s", err.message);
	so = st.ops;
	memset(&row, 0, sizeof(row));
	row.struct_size = sizeof(row);
	row.run_id = id;
	row.outcome = "test";
	row.state = state;
	row.created_at = sl_now() - age_s;
	row.kept_reason = kept;
	ck_assert_msg(so->run_create(st.ctx, &row, &err) == 0, "%s",
		      err.message);
	sl_instance_destroy(&st);
}

static const char *line_of(const char *out, const char *name)
{
	const char *p = strstr(out, name);

	ck_assert_msg(p != NULL, "no line for %s in:\n%s", name, out);
	return p;
}

static int verdict_is(const char *out, const char *name, const char *v)
{
	const char *p = line_of(out, name), *nl = strchr(p, '\n');
	char *line = sl_xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
	int ok = strstr(line, v) != NULL;

	free(line);
	return ok;
}

START_TEST(test_prune_classifies_orphans_kept_and_live)
{
	const char *dry[] = {"sandbox", "prune", NULL};
	const char *force[] = {"sandbox", "prune", "--force", NULL};
	const char *kept[] = {"sandbox", "prune", "--force", "--include-kept",
			      NULL};
	struct tu_run r;

	store_run("raaaaaaaa", "completed", 7200, NULL);
	store_run("rbbbbbbbb", "running", 0, NULL);
	store_run("rcccccccc", "failed", 7200, "debug");
	store_run("reeeeeeee", "running", 7200, NULL);
	fake_create("sbxloop-raaaaaaaa-agent");
	fake_create("sbxloop-rbbbbbbbb-agent");
	fake_create("sbxloop-rcccccccc-agent");
	fake_create("sbxloop-rdddddddd-github");
	fake_create("sbxloop-reeeeeeee-agent");
	fake_create("sbxloop-daemon-github-x");
	fake_create("sbxloop-scratch");

	sbxloop(&r, dry);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(verdict_is(r.out, "sbxloop-raaaaaaaa-agent", "orphan"));
	ck_assert(verdict_is(r.out, "sbxloop-rbbbbbbbb-agent",
			     "keep - possibly live"));
	ck_assert(verdict_is(r.out, "sbxloop-rcccccccc-agent",
			     "keep - kept (debug)"));
	ck_assert(verdict_is(r.out, "sbxloop-rdddddddd-github",
			     "orphan - run unknown here"));
	ck_assert(verdict_is(r.out, "sbxloop-reeeeeeee-agent",
			     "orphan - silent for 2.0h"));
	ck_assert(verdict_is(r.out, "sbxloop-daemon-github-x",
			     "keep - daemon-owned"));
	ck_assert(verdict_is(r.out, "sbxloop-scratch", "unrecognized"));
	ck_assert(strstr(r.out, "dry run: 3 orphan(s)"));
	tu_run_free(&r);
	ck_assert(box_exists("sbxloop-raaaaaaaa-agent"));

	sbxloop(&r, force);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-raaaaaaaa-agent"));
	ck_assert(!box_exists("sbxloop-rdddddddd-github"));
	ck_assert(!box_exists("sbxloop-reeeeeeee-agent"));
	ck_assert(box_exists("sbxloop-rbbbbbbbb-agent"));
	ck_assert(box_exists("sbxloop-rcccccccc-agent"));
	ck_assert(box_exists("sbxloop-daemon-github-x"));
	ck_assert(box_exists("sbxloop-scratch"));
	/* the removed github sandbox's service secret goes too */
	ck_assert_int_eq(count_calls("secret rm github --sandbox "
				     "sbxloop-rdddddddd-github -f"),
			 1);

	sbxloop(&r, kept);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-rcccccccc-agent"));
	ck_assert(box_exists("sbxloop-rbbbbbbbb-agent"));
}
END_TEST

START_TEST(test_sandbox_ls_and_rm)
{
	const char *ls[] = {"sandbox", "ls", NULL};
	const char *none[] = {"sandbox", "rm", NULL};
	const char *run[] = {"sandbox", "rm", "--run", "raaaaaaaa", NULL};
	const char *all[] = {"sandbox", "rm", "--all", NULL};
	struct tu_run r;

	fake_create("sbxloop-raaaaaaaa-agent");
	fake_create("sbxloop-rbbbbbbbb-agent");
	fake_create("unrelated");
	sbxloop(&r, ls);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "sbxloop-raaaaaaaa-agent"));
	ck_assert(!strstr(r.out, "unrelated"));
	tu_run_free(&r);

	sbxloop(&r, none);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "nothing to remove"));
	tu_run_free(&r);

	sbxloop(&r, run);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "removed sbxloop-raaaaaaaa-agent"));
	ck_assert(strstr(r.out, "skip sbxloop-raaaaaaaa-github"));
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-raaaaaaaa-agent"));
	ck_assert(box_exists("sbxloop-rbbbbbbbb-agent"));

	sbxloop(&r, all);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	ck_assert(!box_exists("sbxloop-rbbbbbbbb-agent"));
	ck_assert(box_exists("unrelated"));
}
END_TEST

START_TEST(test_shell_runs_a_command_in_the_pair)
{
	const char *ok[] = {"shell", "raaaaaaaa", "-c", "echo hi; exit 3",
			    NULL};
	const char *gh[] = {"shell", "raaaaaaaa", "--role", "github",
			    "-c",    "true",      NULL};
	const char *bad_role[] = {"shell", "raaaaaaaa", "--role", "boss",
				  NULL};
	const char *unknown[] = {"shell", "rzzzzzzzz", "-c", "true", NULL};
	struct tu_run r;

	store_run("raaaaaaaa", "failed", 0, "debug");
	fake_create("sbxloop-raaaaaaaa-agent");
	sbxloop(&r, ok);
	ck_assert_msg(r.status == 3, "%d %s%s", r.status, r.out, r.err);
	ck_assert_str_eq(r.out, "hi\n");
	tu_run_free(&r);

	sbxloop(&r, gh);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "removed when a run ends"));
	tu_run_free(&r);
	sbxloop(&r, bad_role);
	ck_assert_int_eq(r.status, 2);
	tu_run_free(&r);
	sbxloop(&r, unknown);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "unknown run"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_shell_without_a_command_execs_the_providers_shell)
{
	const char *interactive[] = {"shell", "raaaaaaaa", NULL};
	const char *other[] = {"shell", "raaaaaaaa", NULL};
	struct tu_run r;

	store_run("raaaaaaaa", "failed", 0, "debug");
	fake_create("sbxloop-raaaaaaaa-agent");
	/* the argv comes from the sbx provider's interactive_argv slot */
	sbxloop(&r, interactive);
	ck_assert_msg(r.status == 0, "%d %s%s", r.status, r.out, r.err);
	tu_run_free(&r);
	ck_assert_int_eq(count_calls("exec -it sbxloop-raaaaaaaa-agent sh "
				     "-c command -v bash"),
			 1);

	/* a provider without the slot says so and names the way out */
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: local\n");
	sbxloop(&r, other);
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "provider 'local' does not support an "
				    "interactive shell"),
		      "%s", r.err);
	ck_assert(strstr(r.err, "pass -c CMD"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_secrets_walk_the_configured_strategies)
{
	const char *list[] = {"secrets", "list", NULL};
	struct tu_run r;

	/* plain-env keeps nothing to list: said, and an error when no
	 * strategy of the chain can list */
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: sbx\n"
			   "  secrets: [plain-env]\n");
	sbxloop(&r, list);
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "'plain-env' keeps no registrations"),
		      "%s", r.err);
	ck_assert(strstr(r.err, "no secret strategy of plugins.secrets"));
	ck_assert_int_eq(count_calls("secret ls"), 0);
	tu_run_free(&r);

	/* the chain is walked in order: plain-env skipped, sbx-proxy read */
	tu_write(cfg_path, "state_dir: state\nplugins:\n  sandbox: sbx\n"
			   "  secrets: [plain-env, sbx-proxy]\n");
	sbxloop(&r, list);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(strstr(r.out, "no registrations"));
	ck_assert_int_eq(count_calls("secret ls"), 1);
	tu_run_free(&r);
}
END_TEST

START_TEST(test_doctor_reports_each_failure_row)
{
	const char *doc[] = {"doctor", NULL};
	struct tu_run r;

	setenv("COPILOT_GITHUB_TOKEN", AGENT_TOKEN, 1);
	sbxloop(&r, doc);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(strstr(r.out, "argv-only"));
	ck_assert(!strstr(r.out, AGENT_TOKEN));
	tu_run_free(&r);

	/* a blocked host is a soft failure */
	script("[{\"prefix\":\"policy check network api.github.com\","
	       "\"returncode\":0,\"stdout\":\"denied by rule 3\\n\"}]");
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 0);
	ck_assert(verdict_is(r.out, "policy: api.github.com", "warn"));
	ck_assert(strstr(r.out, "sbx policy init balanced"));
	tu_run_free(&r);

	/* not logged in */
	script("[{\"prefix\":\"ls\",\"returncode\":1,"
	       "\"stderr\":\"ERROR: not logged in\\n\"}]");
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 1);
	ck_assert(verdict_is(r.out, "sbx login", "FAIL"));
	tu_run_free(&r);

	/* no sbx at all, no token, a repo without its token */
	script("[{\"prefix\":\"version\",\"returncode\":127}]");
	unsetenv("COPILOT_GITHUB_TOKEN");
	write_config("github:\n  repo: octo/demo\n");
	sbxloop(&r, doc);
	ck_assert_int_eq(r.status, 1);
	ck_assert(verdict_is(r.out, "sbx binary", "FAIL"));
	ck_assert(verdict_is(r.out, "COPILOT_GITHUB_TOKEN", "FAIL"));
	ck_assert(verdict_is(r.out, "GH_TOKEN/GITHUB_TOKEN", "FAIL"));
	tu_run_free(&r);

	/* a worker of another version */
	{
		char *w = sl_xasprintf("%s/old-worker", dir);
		char *extra = sl_xasprintf("worker_path: %s\n", w);

		tu_write(w, "#!/bin/sh\necho 'sbxloop-worker 0.0.1'\n");
		chmod(w, 0755);
		script("[]");
		write_config(extra);
		setenv("COPILOT_GITHUB_TOKEN", AGENT_TOKEN, 1);
		sbxloop(&r, doc);
		ck_assert_int_eq(r.status, 1);
		ck_assert(verdict_is(r.out, "worker binary", "FAIL"));
		tu_run_free(&r);
		free(w);
		free(extra);
	}
}
END_TEST

START_TEST(test_secrets_list_and_clean_stale)
{
	const char *list[] = {"secrets", "list", NULL};
	const char *dry[] = {"secrets", "clean", NULL};
	const char *apply[] = {"secrets", "clean", "--apply", NULL};
	const char *stale[] = {"sbx",
			       "secret",
			       "set-custom",
			       "--sandbox",
			       "sbxloop-rgggggggg-agent",
			       "--host",
			       "api.github.com",
			       "--env",
			       "COPILOT_GITHUB_TOKEN",
			       "--value",
			       "ghp_leftover",
			       NULL};
	struct tu_run r;
	cJSON *st;

	fake_create("sbxloop-rgggggggg-github");
	tu_exec(&r, NULL, NULL, stale);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);

	sbxloop(&r, list);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert(verdict_is(r.out, "sbxloop-rgggggggg-agent", "stale"));
	ck_assert(!strstr(r.out, "ghp_leftover"));
	tu_run_free(&r);

	sbxloop(&r, dry);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "would remove"));
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 1);
	cJSON_Delete(st);

	sbxloop(&r, apply);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
}
END_TEST

/* An sbx that prints `SCOPE TYPE NAME HOST`: read by header, not column. */
START_TEST(test_secrets_list_and_clean_read_a_type_column)
{
	const char *list[] = {"secrets", "list", NULL};
	const char *apply[] = {"secrets", "clean", "--apply", NULL};
	const char *stale[] = {"sbx",
			       "secret",
			       "set-custom",
			       "--sandbox",
			       "sbxloop-rgggggggg-agent",
			       "--host",
			       "api.github.com",
			       "--env",
			       "COPILOT_GITHUB_TOKEN",
			       "--value",
			       "ghp_leftover",
			       NULL};
	const char *ls[] = {"sbx", "secret", "ls", NULL};
	struct tu_run r;
	cJSON *st;

	setenv("SBX_FAKE_SECRET_LS", "type", 1);
	tu_exec(&r, NULL, NULL, stale);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	tu_exec(&r, NULL, NULL, ls);
	ck_assert_msg(strstr(r.out, "SCOPE") && strstr(r.out, "TYPE") &&
			      strstr(r.out, "custom"),
		      "%s", r.out);
	tu_run_free(&r);

	sbxloop(&r, list);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert_msg(!strstr(r.out, "no registrations"), "%s", r.out);
	ck_assert(verdict_is(r.out, "sbxloop-rgggggggg-agent", "stale"));
	tu_run_free(&r);

	sbxloop(&r, apply);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.out, "removed COPILOT_GITHUB_TOKEN in scope "
				    "sbxloop-rgggggggg-agent"),
		      "%s", r.out);
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
}
END_TEST

/* ------------------------------------------------------ whole runs (e2e) */

#define RUN_TOKEN "ghp_e2eRUNtoken0123456789abcdefXYZ"

/* The run's config and its own copy of a scenario (the script backend
 * keeps its cursor next to the file). */
static void write_run_config_with(const char *scenario, const char *more)
{
	char *src = sl_xasprintf("%s/tests/scenarios/%s.json",
				 tu_env("SBXLOOP_SRCDIR"), scenario);
	char *dst = sl_xasprintf("%s/scenario.json", dir);
	char *body = tu_read(src);

	ck_assert_msg(body != NULL, "cannot read %s", src);
	tu_write(dst, body);
	free(body);
	free(src);
	free(dst);
	char *extra = sl_xasprintf("prompts_dir: %s/prompts\n"
				   "worker_path: %s\n"
				   "agent:\n"
				   "  backend: script\n"
				   "  script: %s/scenario.json\n"
				   "limits:\n"
				   "  disk_warn: 0\n"
				   "  disk_abort: 0\n"
				   "  mem_warn: 0\n"
				   "  mem_abort: 0\n",
				   tu_env("SBXLOOP_SRCDIR"),
				   tu_env("SBXLOOP_WORKER"), dir);
	char *text = sl_xasprintf("state_dir: %s/state\n"
				  "plugins:\n"
				  "  sandbox: sbx\n"
				  "  secrets: [sbx-proxy, plain-env]\n"
				  "  policy: [sbx]\n"
				  "  sinks: []\n"
				  "%s%s",
				  dir, extra, more);

	tu_write(cfg_path, text);
	free(text);
	free(extra);
	setenv("COPILOT_GITHUB_TOKEN", RUN_TOKEN, 1);
}

static void write_run_config(const char *scenario)
{
	write_run_config_with(scenario, "");
}

static int sandboxes_left(void)
{
	char *p = sl_xasprintf("%s/sandboxes", fake_dir);
	char *cmd = sl_xasprintf("ls -A '%s' 2>/dev/null | wc -l", p);
	FILE *f = popen(cmd, "r");
	int n = 0;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	free(cmd);
	free(p);
	return n;
}

/* Does any file under `root` contain `needle`? (grep -r) */
static int tree_contains(const char *root, const char *needle)
{
	const char *argv[] = {"grep", "-rqaF", needle, root, NULL};
	struct tu_run r;
	int hit;

	tu_exec(&r, NULL, NULL, argv);
	hit = r.status == 0;
	tu_run_free(&r);
	return hit;
}

START_TEST(test_run_completes_on_sbx_with_one_exec_per_job)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	char *state = sl_xasprintf("%s/state", dir);
	struct tu_run r;
	cJSON *all, *rec;
	int execs = 0, with_stdin = 0, custom = 0;

	write_run_config("happy1");
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert(strstr(r.out, "completed"));
	ck_assert(!strstr(r.err, RUN_TOKEN));
	ck_assert(!strstr(r.out, RUN_TOKEN));
	tu_run_free(&r);
	ck_assert_int_eq(sandboxes_left(), 0);
	/* every job is one exec with its request on stdin */
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);
		const char *in = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "stdin"));

		/* set-custom is the one call sbx gives no stdin for */
		if (strstr(j, RUN_TOKEN)) {
			ck_assert_msg(sl_starts_with(j, "secret set-custom "),
				      "argv: %s", j);
			custom++;
		}
		ck_assert(!in || !strstr(in, RUN_TOKEN) ||
			  sl_starts_with(j, "secret set "));
		if (sl_starts_with(j, "exec -i ") &&
		    strstr(j, "sbxloop-worker run")) {
			execs++;
			with_stdin += in && *in == '{';
		}
		free(j);
	}
	cJSON_Delete(all);
	ck_assert_int_ge(execs, 5);
	ck_assert_int_eq(with_stdin, execs);
	/* the model token went to the agent sandbox, once */
	ck_assert_int_eq(custom, 1);
	/* nothing the host wrote holds the token */
	ck_assert(!tree_contains(state, RUN_TOKEN));
	free(state);
}
END_TEST

#define RUN_GH_TOKEN "ghs_e2eGITHUBtoken9876543210zyxwVU"

/* Does any recorded call start with `prefix` and name `sandbox`? */
static int call_names(const char *prefix, const char *sandbox)
{
	cJSON *all = invocations(), *rec;
	int hit = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		hit |= sl_starts_with(j, prefix) && strstr(j, sandbox);
		free(j);
	}
	cJSON_Delete(all);
	return hit;
}

/*
 * With github.repo set a run provisions the pair: the model token goes
 * to the agent sandbox only, the GitHub token to the github sandbox
 * only and on stdin; at the end both sandboxes and every registered
 * secret are gone, and no file the host wrote holds either token.
 */
START_TEST(test_run_with_a_repo_provisions_the_pair_and_splits_tokens)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	char *state = sl_xasprintf("%s/state", dir);
	struct tu_run r;
	cJSON *all, *rec, *st;
	int gh_stdin = 0;

	write_run_config_with("happy1", "github:\n  repo: octo/demo\n");
	setenv("GH_TOKEN", RUN_GH_TOKEN, 1);
	sbxloop(&r, run);
	unsetenv("GH_TOKEN");
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert(!strstr(r.out, RUN_GH_TOKEN) &&
		  !strstr(r.err, RUN_GH_TOKEN));
	tu_run_free(&r);
	ck_assert(call_names("create --name=sbxloop-", "-agent "));
	ck_assert(call_names("create --name=sbxloop-", "-github "));
	all = invocations();
	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);
		const char *in = cJSON_GetStringValue(
			cJSON_GetObjectItem(rec, "stdin"));

		ck_assert_msg(!strstr(j, RUN_GH_TOKEN), "argv: %s", j);
		/* the model token is registered for the agent sandbox only */
		if (strstr(j, RUN_TOKEN))
			ck_assert_msg(strstr(j, "-agent "), "argv: %s", j);
		if (in && strstr(in, RUN_GH_TOKEN)) {
			ck_assert_msg(sl_starts_with(j, "secret set ") &&
					      strstr(j, "-github github"),
				      "the GitHub token went to: %s", j);
			gh_stdin++;
		}
		free(j);
	}
	cJSON_Delete(all);
	ck_assert_int_eq(gh_stdin, 1);
	ck_assert_int_eq(sandboxes_left(), 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(st, "service")), 0);
	cJSON_Delete(st);
	ck_assert(!tree_contains(state, RUN_GH_TOKEN));
	ck_assert(!tree_contains(state, RUN_TOKEN));
	free(state);
}
END_TEST

/* A missing token stops the run before any sandbox exists. */
START_TEST(test_run_missing_token_creates_nothing)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	struct tu_run r;

	write_run_config_with("happy1", "github:\n  repo: octo/demo\n");
	unsetenv("GH_TOKEN");
	unsetenv("GITHUB_TOKEN");
	if (_i == 1) {
		setenv("GH_TOKEN", RUN_GH_TOKEN, 1);
		unsetenv("COPILOT_GITHUB_TOKEN");
	}
	sbxloop(&r, run);
	unsetenv("GH_TOKEN");
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, _i ? "COPILOT_GITHUB_TOKEN" : "GH_TOKEN"),
		      "%s", r.err);
	tu_run_free(&r);
	ck_assert_int_eq(count_calls("create "), 0);
	ck_assert_int_eq(count_calls("secret set"), 0);
	ck_assert_int_eq(sandboxes_left(), 0);
}
END_TEST

START_TEST(test_run_provision_failure_rolls_back)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	struct tu_run r;

	write_run_config("happy1");
	/* the worker probe breaks after the sandbox exists */
	script("[{\"prefix\":\"exec -w /home/agent sbxloop-\","
	       "\"returncode\":0},"
	       "{\"prefix\":\"cp \",\"returncode\":1,"
	       "\"stderr\":\"ERROR: copy failed: disk full\\n\"}]");
	sbxloop(&r, run);
	ck_assert_msg(r.status != 0, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.err, "disk full"), "%s", r.err);
	tu_run_free(&r);
	ck_assert_int_eq(sandboxes_left(), 0);
	ck_assert_int_ge(count_calls("rm --force sbxloop-"), 1);
}
END_TEST

/* The id of the one run in the state dir (caller frees). */
static char *only_run_id(void)
{
	const char *status[] = {"status", NULL};
	struct tu_run r;
	char id[64] = "";
	const char *nl;

	sbxloop(&r, status);
	ck_assert_int_eq(r.status, 0);
	nl = strchr(r.out, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_int_eq(sscanf(nl + 1, "%63s", id), 1);
	tu_run_free(&r);
	return sl_xstrdup(id);
}

/*
 * plugins.secrets is [sbx-proxy, plain-env]: when sbx refuses the
 * registration, the run says so and goes on with plain-env.
 */
START_TEST(test_run_falls_back_to_the_next_strategy_when_registration_fails)
{
	const char *run[] = {"run", "make a thing", "--no-tui", NULL};
	const char *logs[] = {"logs",           NULL,     "--type",
			      "sandbox.secret", "--json", NULL};
	struct tu_run r;
	char *id;

	write_run_config("happy1");
	script("[{\"prefix\":\"secret set-custom\",\"returncode\":1,"
	       "\"stderr\":\"ERROR: the proxy refused the host\\n\"}]");
	sbxloop(&r, run);
	ck_assert_msg(r.status == 0, "%d\n%s%s", r.status, r.out, r.err);
	ck_assert_msg(strstr(r.err, "secret strategy sbx-proxy failed to "
				    "hand COPILOT_GITHUB_TOKEN") &&
			      strstr(r.err, "the proxy refused the host") &&
			      strstr(r.err, "trying plain-env"),
		      "%s", r.err);
	ck_assert(!strstr(r.err, RUN_TOKEN));
	tu_run_free(&r);
	ck_assert_int_eq(count_calls("secret set-custom "), 1);
	id = only_run_id();
	logs[1] = id;
	sbxloop(&r, logs);
	ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.out, "sandbox.secret_env_fallback"), "%s",
		      r.out);
	/* the handover names both strategies; plain-env took the token */
	ck_assert_msg(strstr(r.out, "\"strategy\":\"sbx-proxy\"") &&
			      strstr(r.out, "\"next\":\"plain-env\"") &&
			      strstr(r.out, "\"strategy\":\"plain-env\""),
		      "%s", r.out);
	tu_run_free(&r);
	free(id);
	ck_assert_int_eq(sandboxes_left(), 0);
}
END_TEST

START_TEST(test_run_sigterm_leaves_no_sandbox_and_no_secret)
{
	const char *argv[] = {
		tu_env("SBXLOOP_BIN"), "--config", cfg_path, "run",
		"interrupt me",        "--no-tui", NULL};
	double deadline;
	pid_t pid;
	int status, i;
	cJSON *st;

	write_run_config("kill_execute");
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (chdir(dir) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	/* wait for the third job (decompose, plan, execute) to start */
	deadline = sl_monotonic() + 30;
	while (count_calls("exec -i ") < 3 && sl_monotonic() < deadline)
		usleep(50000);
	ck_assert_int_ge(count_calls("exec -i "), 3);
	usleep(300000);
	kill(pid, SIGTERM);
	for (i = 0; i < 400 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(50000);
	ck_assert_msg(i < 400, "sbxloop did not exit after SIGTERM");
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	ck_assert_int_eq(sandboxes_left(), 0);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(st, "service")), 0);
	cJSON_Delete(st);
}
END_TEST

/* ----------------------------------------------------------- the fake */

static void fake(struct tu_run *r, const char *const *argv)
{
	tu_exec(r, NULL, NULL, argv);
}

START_TEST(test_fake_secret_rm_without_f_removes_nothing)
{
	const char *set[] = {"sbx",     "secret",         "set-custom", "-g",
			     "--host",  "api.github.com", "--env",      "E1",
			     "--value", "v-123456",       NULL};
	const char *rm[] = {
		"sbx",   "secret", "rm", "--host", "api.github.com",
		"--env", "E1",     "-g", NULL};
	const char *env_only[] = {"sbx", "secret", "rm", "--env",
				  "E1",  "-g",     "-f", NULL};
	const char *rm_f[] = {
		"sbx",   "secret", "rm", "--host", "api.github.com",
		"--env", "E1",     "-g", "-f",     NULL};
	struct tu_run r;
	cJSON *st;

	fake(&r, set);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	fake(&r, set);
	ck_assert_int_eq(r.status, 1);
	ck_assert_str_eq(r.err, "ERROR: custom secret env \"E1\" already "
				"exists in scope global with placeholder "
				"sbx-cs-abc123.\n");
	tu_run_free(&r);
	fake(&r, rm);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "Delete selected secret? (y/N): Cancelled\n");
	tu_run_free(&r);
	fake(&r, env_only);
	ck_assert_int_eq(r.status, 1);
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 1);
	cJSON_Delete(st);
	fake(&r, rm_f);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "Deleted"));
	tu_run_free(&r);
	st = secrets_state();
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "custom")),
			 0);
	cJSON_Delete(st);
}
END_TEST

START_TEST(test_fake_exec_maps_sandbox_paths_only)
{
	const char *app[] = {"sbx",       "--app-name", "x", "create",
			     "--name=b1", "shell",      ws,  NULL};
	char *script = sl_xasprintf("echo /home/agent/f; echo %s/a; "
				    "echo x=/tmp/sbxloop/j",
				    dir);
	const char *run[] = {"sbx", "exec", "b1", "sh", "-c", script, NULL};
	char *want;
	struct tu_run r;
	cJSON *all;

	fake(&r, app);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	all = invocations();
	{
		const cJSON *first = cJSON_GetArrayItem(all, 0);
		const cJSON *args = cJSON_GetObjectItem(first, "argv");

		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
					 first, "app_name")),
				 "x");
		ck_assert_str_eq(
			cJSON_GetStringValue(cJSON_GetArrayItem(args, 0)),
			"create");
	}
	cJSON_Delete(all);
	fake(&r, run);
	ck_assert_int_eq(r.status, 0);
	/* the test dir starts /tmp/sbxloop-test-: a host path, untouched */
	want = sl_xasprintf("%s/sandboxes/b1/fs/home/agent/f\n%s/a\n"
			    "x=%s/sandboxes/b1/fs/tmp/sbxloop/j\n",
			    fake_dir, dir, fake_dir);
	ck_assert_str_eq(r.out, want);
	free(want);
	tu_run_free(&r);
	free(script);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static Suite *sbx_suite(void)
{
	Suite *s = suite_create("sbx");
	TCase *tc = tcase_create("provider");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_create_provisions_in_five_calls);
	tcase_add_test(tc, test_create_passes_app_name_and_template);
	tcase_add_test(tc, test_unmounted_workspace_uses_home_work);
	tcase_add_test(tc, test_create_failure_after_create_rolls_back);
	tcase_add_test(tc, test_create_of_existing_name_fails_cleanly);
	tcase_add_test(tc, test_worker_version_mismatch_is_refused);
	tcase_add_test(tc, test_missing_libcjson_is_installed_once);
	tcase_add_test(tc, test_missing_libcjson_without_apt_is_a_clear_error);
	tcase_add_test(tc, test_missing_sbx_binary_is_not_found);
	tcase_add_test(tc, test_exec_returns_inner_exit_code);
	tcase_add_test(tc, test_exec_in_missing_or_stopped_sandbox_is_infra);
	tcase_add_test(tc, test_exec_streams_stdin_and_lines);
	tcase_add_test(tc, test_exec_refuses_a_secret_in_its_env);
	tcase_add_test(tc, test_exec_timeout_kills);
	tcase_add_test(tc, test_copy_list_and_remove);
	tcase_add_test(tc, test_ls_parses_old_and_sparse_columns);
	suite_add_tcase(s, tc);

	tc = tcase_create("secrets");
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

	tc = tcase_create("commands");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_prune_classifies_orphans_kept_and_live);
	tcase_add_test(tc, test_sandbox_ls_and_rm);
	tcase_add_test(tc, test_shell_runs_a_command_in_the_pair);
	tcase_add_test(tc, test_doctor_reports_each_failure_row);
	tcase_add_test(tc,
		       test_shell_without_a_command_execs_the_providers_shell);
	tcase_add_test(tc, test_secrets_walk_the_configured_strategies);
	tcase_add_test(tc, test_secrets_list_and_clean_stale);
	tcase_add_test(tc, test_secrets_list_and_clean_read_a_type_column);
	suite_add_tcase(s, tc);

	tc = tcase_create("fake");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_fake_secret_rm_without_f_removes_nothing);
	tcase_add_test(tc, test_fake_exec_maps_sandbox_paths_only);
	suite_add_tcase(s, tc);

	tc = tcase_create("runs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_run_completes_on_sbx_with_one_exec_per_job);
	tcase_add_test(tc, test_run_provision_failure_rolls_back);
	tcase_add_test(
		tc,
		test_run_with_a_repo_provisions_the_pair_and_splits_tokens);
	tcase_add_loop_test(tc, test_run_missing_token_creates_nothing, 0, 2);
	tcase_add_test(tc, test_run_sigterm_leaves_no_sandbox_and_no_secret);
	tcase_add_test(
		tc,
		test_run_falls_back_to_the_next_strategy_when_registration_fails);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sbx_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

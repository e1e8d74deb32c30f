/*
 * The sbx module as a sandbox provider, against the fake sbx:
 * provisioning and its rollback, exec's error classification, copy and
 * list; and the fake itself where it must behave like the real sbx.
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

/* Calls starting with `prefix` whose argv mentions `needle`. */
static int calls_mentioning(const char *prefix, const char *needle)
{
	cJSON *all = invocations(), *rec;
	int n = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		n += sl_starts_with(j, prefix) && strstr(j, needle);
		free(j);
	}
	cJSON_Delete(all);
	return n;
}

/* Only the github sandbox needs libcurl: its probe runs check-github. */
START_TEST(test_missing_libcurl_in_the_github_sandbox_is_installed_once)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	script("[{\"prefix\":\"exec -w /home/agent sbxloop-r1-github sh -c "
	       "w=\",\"returncode\":6,\"once\":true},"
	       "{\"prefix\":\"exec -w /home/agent sbxloop-r1-github sh -c "
	       "sudo -n apt-get install -y libcurl4\",\"returncode\":0}]");
	core_up();
	box_up();
	ck_assert_msg(create_box_as("sbxloop-r1-github", "github", NULL, NULL,
				    &info, &err) == 0,
		      "%s", err.message);
	ck_assert_int_eq(count_calls("exec -w /home/agent sbxloop-r1-github "
				     "sh -c sudo"),
			 1);
	/* both probes asked the worker whether it loads libcurl */
	ck_assert_int_eq(calls_mentioning("exec -w /home/agent "
					  "sbxloop-r1-github sh -c w=",
					  "check-github"),
			 2);
}
END_TEST

/*
 * A worker that cannot load libcurl (the test hook names a library that
 * does not exist) and an apt-get that does not help: a clear error, and
 * the sandbox is removed. The agent sandbox is not asked for libcurl.
 */
START_TEST(test_missing_libcurl_without_apt_is_a_clear_error)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	setenv("SBXLOOP_WORKER_LIBCURL", "/nonexistent/libcurl.so.4", 1);
	script("[{\"prefix\":\"exec -w /home/agent sbxloop-r1-github sh -c "
	       "sudo\",\"returncode\":100}]");
	core_up();
	box_up();
	ck_assert_int_eq(create_box_as("sbxloop-r1-github", "github", NULL,
				       NULL, &info, &err),
			 SBXLOOP_EINFRA);
	ck_assert_msg(strstr(err.message, "GitHub jobs") &&
			      strstr(err.message, "libcurl") &&
			      strstr(err.message, "libcurl4"),
		      "%s", err.message);
	ck_assert_int_eq(count_calls("exec -w /home/agent sbxloop-r1-github "
				     "sh -c sudo"),
			 1);
	ck_assert(!box_exists("sbxloop-r1-github"));
	/* an agent sandbox never runs check-github */
	ck_assert_msg(
		create_box("sbxloop-r1-agent", NULL, NULL, &info, &err) == 0,
		"%s", err.message);
	ck_assert_int_eq(calls_mentioning("exec -w /home/agent "
					  "sbxloop-r1-agent",
					  "check-github"),
			 0);
	ck_assert_int_eq(calls_mentioning("exec -w /home/agent "
					  "sbxloop-r1-github sh -c w=",
					  "check-github"),
			 2);
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

static Suite *sbx_provider_suite(void)
{
	Suite *s = suite_create("sbx provider");
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
	tcase_add_test(
		tc,
		test_missing_libcurl_in_the_github_sandbox_is_installed_once);
	tcase_add_test(tc, test_missing_libcurl_without_apt_is_a_clear_error);
	tcase_add_test(tc, test_missing_sbx_binary_is_not_found);
	tcase_add_test(tc, test_exec_returns_inner_exit_code);
	tcase_add_test(tc, test_exec_in_missing_or_stopped_sandbox_is_infra);
	tcase_add_test(tc, test_exec_streams_stdin_and_lines);
	tcase_add_test(tc, test_exec_refuses_a_secret_in_its_env);
	tcase_add_test(tc, test_exec_timeout_kills);
	tcase_add_test(tc, test_copy_list_and_remove);
	tcase_add_test(tc, test_ls_parses_old_and_sparse_columns);
	suite_add_tcase(s, tc);

	tc = tcase_create("fake");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_fake_secret_rm_without_f_removes_nothing);
	tcase_add_test(tc, test_fake_exec_maps_sandbox_paths_only);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sbx_provider_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The `local` module's directory sandboxes without isolation, its
 * policy granter, and the test-only `mock` provider (which shares the
 * directory-sandbox code) with its injected faults: sandboxes on disk,
 * exec, copies, listing, removal and declared capabilities.
 */
#include "config.h"

#include "host/core.h"
#include "host/loader.h"

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "local-support.h"
#include "phases/worker_client.h"

/* ---- local, no isolation --------------------------------------------- */

START_TEST(test_create_makes_a_home_and_mounts_the_workspace)
{
	struct sbxloop_sandbox_info info;
	char path[PATHBUF];

	start("local", "");
	ck_assert_int_eq(make_sandbox("sbxloop-r1-agent", &info), 0);
	ck_assert_str_eq(info.name, "sbxloop-r1-agent");
	ck_assert_str_eq(info.workdir, ws);
	ck_assert_str_eq(info.worker, "/usr/bin/true");
	ck_assert_int_eq(info.mounted, 1);
	snprintf(path, sizeof(path), "%s/sbxloop-r1-agent/home", sl_root);
	ck_assert_str_eq(info.home, path);
	snprintf(path, sizeof(path), "%s/jobs", info.home);
	ck_assert(exists(path));
	snprintf(path, sizeof(path), "%s/events", info.home);
	ck_assert(exists(path));
	snprintf(path, sizeof(path), "%s/results", info.home);
	ck_assert(exists(path));
	ck_assert_uint_eq(info.capabilities, SBXLOOP_CAP_WORKSPACE_MOUNTED);
}
END_TEST

START_TEST(test_create_refuses_a_taken_or_unsafe_name)
{
	struct sbxloop_sandbox_info info;

	start("local", "");
	ck_assert_int_eq(make_sandbox("twice", &info), 0);
	ck_assert_int_eq(make_sandbox("twice", &info), SBXLOOP_EEXIST);
	ck_assert_ptr_nonnull(strstr(err.message, "'twice' already exists"));
	ck_assert_int_eq(make_sandbox("../escape", &info), SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "invalid sandbox name"));
	ck_assert_int_eq(make_sandbox("", &info), SBXLOOP_EINVAL);
}
END_TEST

START_TEST(test_exec_streams_lines_and_returns_the_exit_code)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	struct lines l;

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_int_eq(run_sh("s",
				"echo one; echo two; echo oops >&2; "
				"exit 3",
				0, NULL, &l, &res),
			 0);
	ck_assert_int_eq(res.exit_code, 3);
	ck_assert_int_eq(res.timed_out, 0);
	ck_assert_str_eq(l.out, "one\ntwo\n");
	ck_assert_str_eq(l.err, "oops\n");
	ck_assert_str_eq(res.out, "one\ntwo\n");
	clear(&res);
}
END_TEST

START_TEST(test_exec_runs_in_the_workspace_with_a_clean_env)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	const char *argv[] = {"sh", "-c", "pwd; env", NULL};
	const char *extra[] = {"EXTRA_ONE=1", "SBXLOOP_T=from-spec", NULL};
	struct sbxloop_exec_spec spec;
	char want[PATHBUF];
	struct lines l;

	setenv("SECRET_TOKEN_FOR_TEST", "do-not-leak", 1);
	setenv("SBXLOOP_T", "from-host", 1);
	setenv("SBXLOOP_KEPT", "yes", 1);
	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.envp = extra;
	spec.on_stdout_line = on_out;
	spec.user = &l;
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(ops->exec(inst.ctx, "s", &spec, &res, &err), 0);
	ck_assert_int_eq(res.exit_code, 0);
	snprintf(want, sizeof(want), "%s\n", ws);
	ck_assert_msg(strncmp(l.out, want, strlen(want)) == 0, "%s", l.out);
	snprintf(want, sizeof(want), "\nHOME=%s\n", info.home);
	ck_assert_ptr_nonnull(strstr(l.out, want));
	ck_assert_ptr_null(strstr(l.out, "SECRET_TOKEN_FOR_TEST"));
	ck_assert_ptr_nonnull(strstr(l.out, "\nSBXLOOP_KEPT=yes\n"));
	ck_assert_ptr_nonnull(strstr(l.out, "\nSBXLOOP_T=from-spec\n"));
	ck_assert_ptr_null(strstr(l.out, "from-host"));
	ck_assert_ptr_nonnull(strstr(l.out, "\nEXTRA_ONE=1\n"));
	ck_assert_ptr_nonnull(strstr(l.out, "\nPATH="));
	clear(&res);
}
END_TEST

START_TEST(test_exec_feeds_stdin_and_honours_cwd)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	const char *argv[] = {"sh", "-c", "pwd; cat", NULL};
	struct sbxloop_exec_spec spec;
	char want[PATHBUF];
	struct lines l;

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.cwd = info.home;
	spec.stdin_data = "hello\nworld";
	spec.stdin_len = strlen(spec.stdin_data);
	spec.on_stdout_line = on_out;
	spec.user = &l;
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(ops->exec(inst.ctx, "s", &spec, &res, &err), 0);
	snprintf(want, sizeof(want), "%s\nhello\nworld\n", info.home);
	ck_assert_str_eq(l.out, want);
	clear(&res);
}
END_TEST

START_TEST(test_exec_timeout_kills_what_the_command_forked)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char script[PATHBUF * 2], pidfile[PATHBUF], *text;
	double t0;
	struct lines l;
	pid_t pid;
	int i;

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(pidfile, sizeof(pidfile), "%s/sleeper.pid", info.home);
	snprintf(script, sizeof(script), "sleep 30 & echo $! > '%s'; wait",
		 pidfile);
	t0 = now();
	ck_assert_int_eq(run_sh("s", script, 0.5, NULL, &l, &res),
			 SBXLOOP_ETIMEDOUT);
	ck_assert_double_lt(now() - t0, 10.0);
	ck_assert_int_eq(res.timed_out, 1);
	ck_assert_ptr_nonnull(strstr(err.message, "timed out"));
	clear(&res);
	text = read_text(pidfile);
	ck_assert_ptr_nonnull(text);
	pid = (pid_t)atoi(text);
	ck_assert_int_gt(pid, 0);
	for (i = 0; i < 50 && alive(pid); i++)
		usleep(100000);
	ck_assert_msg(!alive(pid), "the forked sleeper %d survived", pid);
}
END_TEST

START_TEST(test_exec_in_a_missing_sandbox_is_not_found)
{
	struct sbxloop_proc_result res;
	struct lines l;

	start("local", "");
	ck_assert_int_eq(run_sh("nope", "true", 0, NULL, &l, &res),
			 SBXLOOP_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.message, "no sandbox 'nope'"));
}
END_TEST

START_TEST(test_copy_in_and_out_round_trip)
{
	struct sbxloop_sandbox_info info;
	char src[600], in[PATHBUF], back[600], *text;
	struct stat st;

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(src, sizeof(src), "%s/job.json", tmpdir);
	write_text(src, "{\"job\":1}\n", 0640);
	snprintf(in, sizeof(in), "%s/jobs/job.json", info.home);
	ck_assert_int_eq(ops->copy_in(inst.ctx, "s", src, in, &err), 0);
	text = read_text(in);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "{\"job\":1}\n");
	ck_assert_int_eq(stat(in, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0640);

	/* the workspace is reachable too */
	snprintf(in, sizeof(in), "%s/copied.txt", ws);
	ck_assert_int_eq(ops->copy_in(inst.ctx, "s", src, in, &err), 0);
	snprintf(back, sizeof(back), "%s/back.json", tmpdir);
	ck_assert_int_eq(ops->copy_out(inst.ctx, "s", in, back, &err), 0);
	text = read_text(back);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "{\"job\":1}\n");
}
END_TEST

START_TEST(test_copy_refuses_paths_outside_the_sandbox)
{
	struct sbxloop_sandbox_info info;
	char src[600], bad[PATHBUF], dst[600];

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(src, sizeof(src), "%s/f", tmpdir);
	write_text(src, "x", 0600);
	snprintf(bad, sizeof(bad), "%s/planted", tmpdir);
	ck_assert_int_eq(ops->copy_in(inst.ctx, "s", src, bad, &err),
			 SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "is outside sandbox 's'"));
	ck_assert(!exists(bad));
	snprintf(bad, sizeof(bad), "%s/../../../planted", info.home);
	ck_assert_int_eq(ops->copy_in(inst.ctx, "s", src, bad, &err),
			 SBXLOOP_EINVAL);
	snprintf(dst, sizeof(dst), "%s/stolen", tmpdir);
	ck_assert_int_eq(
		ops->copy_out(inst.ctx, "s", "/etc/passwd", dst, &err),
		SBXLOOP_EINVAL);
	ck_assert(!exists(dst));
	snprintf(bad, sizeof(bad), "%s/missing.json", info.home);
	ck_assert_int_eq(ops->copy_out(inst.ctx, "s", bad, dst, &err),
			 SBXLOOP_ENOTFOUND);
}
END_TEST

/*
 * A FIFO an agent puts where the host copies a file out of the sandbox
 * (a result, say) is refused at once: the copy never waits for a
 * writer, and nothing lands on the host.
 */
START_TEST(test_copy_out_refuses_a_fifo_without_waiting)
{
	struct sbxloop_sandbox_info info;
	char fifo[PATHBUF], dst[600];
	struct timespec t0, t1;

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(fifo, sizeof(fifo), "%s/result.json", info.home);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(dst, sizeof(dst), "%s/result.json", tmpdir);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(ops->copy_out(inst.ctx, "s", fifo, dst, &err),
			 SBXLOOP_EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_ptr_nonnull(strstr(err.message, "is not a regular file"));
	ck_assert(!exists(dst));
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 2);
}
END_TEST

struct listed {
	char names[8][128];
	int n;
	int bad_status;
	int bad_workspace;
};

static void on_entry(void *user, const struct sbxloop_sandbox_entry *e)
{
	struct listed *l = user;

	if (l->n < 8)
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", e->name);
	l->n++;
	if (strcmp(e->status, "created") != 0)
		l->bad_status++;
	if (strcmp(e->workspace, ws) != 0)
		l->bad_workspace++;
}

START_TEST(test_list_finds_sandboxes_by_prefix)
{
	struct sbxloop_sandbox_info info;
	struct listed l;

	start("local", "");
	memset(&l, 0, sizeof(l));
	/* nothing created yet: not even the sandboxes directory */
	ck_assert_int_eq(ops->list(inst.ctx, "", on_entry, &l, &err), 0);
	ck_assert_int_eq(l.n, 0);
	ck_assert_int_eq(make_sandbox("sbxloop-r1-agent", &info), 0);
	ck_assert_int_eq(make_sandbox("sbxloop-r1-github", &info), 0);
	ck_assert_int_eq(make_sandbox("sbxloop-r2-agent", &info), 0);
	ck_assert_int_eq(
		ops->list(inst.ctx, "sbxloop-r1-", on_entry, &l, &err), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_int_eq(l.bad_status, 0);
	ck_assert_int_eq(l.bad_workspace, 0);
	ck_assert(strcmp(l.names[0], "sbxloop-r2-agent") != 0);
	ck_assert(strcmp(l.names[1], "sbxloop-r2-agent") != 0);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(ops->list(inst.ctx, "sbxloop-", on_entry, &l, &err),
			 0);
	ck_assert_int_eq(l.n, 3);
}
END_TEST

START_TEST(test_remove_deletes_the_sandbox_but_never_the_workspace)
{
	struct sbxloop_sandbox_info info;
	char keep[600], dir[700], link[PATHBUF];

	start("local", "");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(keep, sizeof(keep), "%s/keep.c", ws);
	write_text(keep, "int main(void) { return 0; }\n", 0644);
	/* a link to the workspace inside the sandbox is not followed */
	snprintf(link, sizeof(link), "%s/ws-link", info.home);
	ck_assert_int_eq(symlink(ws, link), 0);
	ck_assert_int_eq(ops->sandbox_remove(inst.ctx, "s", &err), 0);
	snprintf(dir, sizeof(dir), "%s/s", sl_root);
	ck_assert(!exists(dir));
	ck_assert(exists(keep));
	ck_assert_int_eq(ops->sandbox_remove(inst.ctx, "s", &err), 0);
	ck_assert_int_eq(ops->sandbox_remove(inst.ctx, "never-made", &err), 0);
}
END_TEST

START_TEST(test_capabilities_without_isolation_are_honest)
{
	const struct sbxloop_component *c;
	uint32_t caps;

	start("local", "local:\n  isolation: none\n");
	caps = ops->capabilities(inst.ctx);
	ck_assert_uint_eq(caps, SBXLOOP_CAP_WORKSPACE_MOUNTED);
	c = sl_registry_find(&core->reg, SBXLOOP_KIND_SANDBOX, "local", NULL);
	ck_assert_ptr_nonnull(c);
	/* at best: bwrap, with no network or (proxy) enforced egress */
	ck_assert_uint_eq(ops->static_capabilities,
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_NETWORK_DISABLED |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY |
				  SBXLOOP_CAP_GIT_READ_ONLY |
				  SBXLOOP_CAP_EGRESS_ENFORCED |
				  SBXLOOP_CAP_EGRESS_REVOCABLE);
	ck_assert_uint_eq(ops->static_capabilities &
				  SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX,
			  0);
}
END_TEST

START_TEST(test_unknown_isolation_is_a_config_error)
{
	struct sl_config_opts o;
	struct sl_core *c = NULL;
	char path[600], text[1024];
	char *errors = NULL;

	snprintf(path, sizeof(path), "%s/sbxloop.yaml", tmpdir);
	snprintf(text, sizeof(text),
		 "state_dir: %s\nlocal:\n  isolation: docker\n", state);
	write_text(path, text, 0600);
	memset(&o, 0, sizeof(o));
	o.config_file = path;
	o.cwd = tmpdir;
	o.no_user_file = 1;
	o.no_env = 1;
	ck_assert_int_ne(sl_core_open(&c, &o, &errors), 0);
	ck_assert_ptr_nonnull(errors);
	ck_assert_ptr_nonnull(strstr(errors, "local.isolation"));
	free(errors);
	sl_core_close(c);
}
END_TEST

/* Without bubblewrap nothing can be read-only, and it says so. */
START_TEST(test_no_isolation_does_not_claim_read_only_jobs)
{
	struct sbxloop_sandbox_info info;

	start("local", "local:\n  isolation: none\n");
	ck_assert_uint_eq(ops->capabilities(inst.ctx) &
				  (SBXLOOP_CAP_WORKSPACE_READ_ONLY |
				   SBXLOOP_CAP_GIT_READ_ONLY),
			  0);
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_uint_eq(info.capabilities &
				  (SBXLOOP_CAP_WORKSPACE_READ_ONLY |
				   SBXLOOP_CAP_GIT_READ_ONLY),
			  0);
}
END_TEST

/* ---- local policy granter -------------------------------------------- */

START_TEST(test_local_granter_refuses_per_domain_egress)
{
	const struct sbxloop_policy_ops *pops;
	struct sbxloop_grant g;
	const char *domains[] = {"registry.npmjs.org", NULL};
	const char *none[] = {NULL};
	int rc;

	core = open_core("");
	rc = sl_core_instantiate(core, SBXLOOP_KIND_POLICY, "local", &inst,
				 &err);
	ck_assert_msg(rc == 0, "%s", err.message);
	pops = inst.ops;
	memset(&g, 0, sizeof(g));
	g.struct_size = sizeof(g);
	g.sandbox = "sbxloop-r1-agent";
	g.domain = "registry.npmjs.org";
	g.reason = "npm install";
	g.task_id = "t1";
	g.phase = "execute";
	ck_assert_int_eq(pops->grant(inst.ctx, &g, &err),
			 SBXLOOP_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "per-domain egress"));
	ck_assert_ptr_nonnull(strstr(err.message, "'registry.npmjs.org'"));
	/* nothing was granted, so nothing can be taken back */
	ck_assert_int_eq(pops->revoke(inst.ctx, &g, &err),
			 SBXLOOP_EUNSUPPORTED);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(pops->seed(inst.ctx, "s", domains, &err),
			 SBXLOOP_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "per-domain egress"));
	/* an empty allowlist asks for nothing it cannot do */
	ck_assert_int_eq(pops->seed(inst.ctx, "s", none, &err), 0);
	ck_assert_int_eq(pops->seed(inst.ctx, "s", NULL, &err), 0);
}
END_TEST

/* ---- mock provider ---------------------------------------------------- */

START_TEST(test_a_fault_free_mock_sandbox_runs_commands)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	struct lines l;

	start("mock", "");
	ck_assert_uint_eq(ops->capabilities(inst.ctx),
			  SBXLOOP_CAP_WORKSPACE_MOUNTED);
	ck_assert_int_eq(make_sandbox("m", &info), 0);
	ck_assert_int_eq(run_sh("m", "echo hi; exit 4", 0, NULL, &l, &res), 0);
	ck_assert_int_eq(res.exit_code, 4);
	ck_assert_str_eq(l.out, "hi\n");
	clear(&res);
}
END_TEST

START_TEST(test_a_failed_sandbox_create_leaves_nothing_behind)
{
	struct sbxloop_sandbox_info info;
	struct listed l;

	start("mock", "mock:\n  fail_create: true\n");
	ck_assert_int_ne(make_sandbox("m", &info), 0);
	ck_assert_ptr_nonnull(strstr(err.message, "mock: injected failure"));
	ck_assert_ptr_nonnull(strstr(err.message, "'m'"));
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(ops->list(inst.ctx, "", on_entry, &l, &err), 0);
	ck_assert_int_eq(l.n, 0);
}
END_TEST

START_TEST(test_exec_fails_after_n_calls_counted_across_processes)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	struct lines l;

	start("mock", "mock:\n  fail_exec_after: 2\n");
	ck_assert_int_eq(make_sandbox("m", &info), 0);
	ck_assert_int_eq(run_sh("m", "true", 0, NULL, &l, &res), 0);
	clear(&res);
	/* a fresh instance (as another process would be) keeps the count */
	sl_instance_destroy(&inst);
	sl_core_close(core);
	start("mock", "mock:\n  fail_exec_after: 2\n");
	ck_assert_int_eq(run_sh("m", "true", 0, NULL, &l, &res), 0);
	clear(&res);
	ck_assert_int_eq(run_sh("m", "echo ran", 0, NULL, &l, &res),
			 SBXLOOP_EINFRA);
	ck_assert_str_eq(err.message, "mock: injected exec failure");
	ck_assert_str_eq(l.out, "");
	clear(&res);
}
END_TEST

START_TEST(test_a_timed_out_exec_never_runs_its_command)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char script[PATHBUF * 2], flag[PATHBUF];
	struct lines l;

	start("mock", "mock:\n  timeout_exec: 2\n");
	ck_assert_int_eq(make_sandbox("m", &info), 0);
	snprintf(flag, sizeof(flag), "%s/ran", info.home);
	snprintf(script, sizeof(script), "touch '%s'", flag);
	ck_assert_int_eq(run_sh("m", "true", 0, NULL, &l, &res), 0);
	clear(&res);
	ck_assert_int_eq(run_sh("m", script, 0, NULL, &l, &res),
			 SBXLOOP_ETIMEDOUT);
	ck_assert_int_eq(res.timed_out, 1);
	ck_assert_ptr_nonnull(strstr(err.message, "injected timeout"));
	ck_assert(!exists(flag));
	clear(&res);
	ck_assert_int_eq(run_sh("m", script, 0, NULL, &l, &res), 0);
	ck_assert(exists(flag));
	clear(&res);
}
END_TEST

START_TEST(test_a_lost_result_leaves_neither_file_nor_marker_line)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_sandbox_spec spec;
	struct sbxloop_proc_result res;
	struct sbxloop_exec_spec ex;
	char worker[600], script[PATHBUF * 2], result[PATHBUF];
	const char *argv[] = {worker, NULL};
	struct lines l;

	snprintf(worker, sizeof(worker), "%s/fake-worker", tmpdir);
	start("mock", "mock:\n  lose_result: true\n");
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = "m";
	spec.workspace = ws;
	spec.worker_path = worker;
	memset(&info, 0, sizeof(info));
	ck_assert_int_eq(ops->sandbox_create(inst.ctx, &spec, &info, &err), 0);
	snprintf(result, sizeof(result), "%s/results/j1.json", info.home);
	snprintf(script, sizeof(script),
		 "#!/bin/sh\necho '{\"ok\":true}' > '%s'\n"
		 "echo progress\necho '{\"sbxloop_result\":\"j1\"}'\n"
		 "echo done\n",
		 result);
	write_text(worker, script, 0755);

	memset(&ex, 0, sizeof(ex));
	ex.struct_size = sizeof(ex);
	ex.argv = argv;
	ex.on_stdout_line = on_out;
	ex.user = &l;
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(ops->exec(inst.ctx, "m", &ex, &res, &err), 0);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_str_eq(l.out, "progress\ndone\n");
	ck_assert_str_eq(res.out, "progress\ndone\n");
	ck_assert_uint_eq(res.out_len, strlen("progress\ndone\n"));
	ck_assert(!exists(result));
	clear(&res);

	/* other commands keep their output */
	ck_assert_int_eq(run_sh("m", "echo sbxloop_result", 0, NULL, &l, &res),
			 0);
	ck_assert_str_eq(l.out, "sbxloop_result\n");
	clear(&res);
}
END_TEST

/*
 * The resource samples a job relays are kept per sandbox: lanes in
 * sandboxes of their own (sandbox.lanes: per-lane) each read their own.
 * Two sandboxes on two workspaces, the real worker in each (its sampler
 * reads SBXLOOP_FAKE_RESOURCES from the job's directory): "full" says
 * its disk is at 97.5%, "fine" has no such file. Each sandbox's copy is
 * its own, whichever relayed last; NULL asks for the newest of any.
 */
static void sample_job(const struct sbxloop_sandbox_info *info)
{
	cJSON *job = cJSON_Parse("{\"kind\":\"shell.batch\","
				 "\"commands\":[[\"true\"]]}");
	const struct sl_job_tags tags = {"agent", NULL, NULL, 0};
	cJSON *res = NULL;

	ck_assert_msg(sl_worker_submit(core, info, job, &tags, &res, &err) ==
			      0,
		      "%s", err.message);
	cJSON_Delete(res);
	cJSON_Delete(job);
}

static double sample_disk(const char *box)
{
	cJSON *s = sl_worker_last_resources_copy(box);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(s, "disk_used_pct");
	double v = cJSON_IsNumber(d) ? d->valuedouble : -1;

	ck_assert_ptr_nonnull(s);
	cJSON_Delete(s);
	return v;
}

START_TEST(test_resource_samples_are_kept_per_sandbox)
{
	struct sbxloop_sandbox_info full, fine;
	struct sbxloop_sandbox_spec spec;
	const char *worker = getenv("SBXLOOP_WORKER");
	const char *names[] = {"full", "fine"};
	struct sbxloop_sandbox_info *infos[] = {&full, &fine};
	char path[700];
	size_t i;

	ck_assert_msg(worker != NULL, "SBXLOOP_WORKER must name the worker");
	setenv("SBXLOOP_FAKE_RESOURCES", "fake-resources.txt", 1);
	start("local", "local:\n  isolation: none\n"
		       "limits:\n  disk_abort: 95\n");
	/* the core owns the provider now (sl_worker_submit uses it) */
	core->sandbox = inst;
	memset(&inst, 0, sizeof(inst));
	sl_core_set_run(core, "r1");
	sl_worker_forget_resources();
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", ws, names[i]);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		memset(&spec, 0, sizeof(spec));
		spec.struct_size = sizeof(spec);
		spec.name = names[i];
		spec.role = "agent";
		spec.run_id = "r1";
		spec.workspace = path;
		spec.worker_path = worker;
		memset(infos[i], 0, sizeof(*infos[i]));
		infos[i]->struct_size = sizeof(*infos[i]);
		ck_assert_msg(ops->sandbox_create(core->sandbox.ctx, &spec,
						  infos[i], &err) == 0,
			      "%s", err.message);
	}
	snprintf(path, sizeof(path), "%s/full/fake-resources.txt", ws);
	write_text(path, "disk=97.5\nmem=10\n", 0600);
	ck_assert_ptr_null(sl_worker_last_resources_copy(NULL));
	sample_job(&full);
	sample_job(&fine);
	ck_assert_double_eq(sample_disk(full.name), 97.5);
	ck_assert_double_eq(sample_disk(fine.name), -1);
	ck_assert_double_eq(sample_disk(NULL), -1);
	sample_job(&full);
	ck_assert_double_eq(sample_disk(fine.name), -1);
	ck_assert_double_eq(sample_disk(NULL), 97.5);
	ck_assert_ptr_null(sl_worker_last_resources_copy("elsewhere"));
	sl_worker_forget_resources();
	ck_assert_ptr_null(sl_worker_last_resources_copy(full.name));
	unsetenv("SBXLOOP_FAKE_RESOURCES");
}
END_TEST

static Suite *local_suite(void)
{
	Suite *s = suite_create("local provider");
	TCase *tc = tcase("no isolation", 60);

	tcase_add_test(tc, test_create_makes_a_home_and_mounts_the_workspace);
	tcase_add_test(tc, test_create_refuses_a_taken_or_unsafe_name);
	tcase_add_test(tc, test_exec_streams_lines_and_returns_the_exit_code);
	tcase_add_test(tc, test_exec_runs_in_the_workspace_with_a_clean_env);
	tcase_add_test(tc, test_exec_feeds_stdin_and_honours_cwd);
	tcase_add_test(tc, test_exec_timeout_kills_what_the_command_forked);
	tcase_add_test(tc, test_exec_in_a_missing_sandbox_is_not_found);
	tcase_add_test(tc, test_copy_in_and_out_round_trip);
	tcase_add_test(tc, test_copy_refuses_paths_outside_the_sandbox);
	tcase_add_test(tc, test_copy_out_refuses_a_fifo_without_waiting);
	tcase_add_test(tc, test_list_finds_sandboxes_by_prefix);
	tcase_add_test(
		tc, test_remove_deletes_the_sandbox_but_never_the_workspace);
	tcase_add_test(tc, test_capabilities_without_isolation_are_honest);
	tcase_add_test(tc, test_unknown_isolation_is_a_config_error);
	tcase_add_test(tc, test_no_isolation_does_not_claim_read_only_jobs);
	suite_add_tcase(s, tc);
	return s;
}
static Suite *policy_suite(void)
{
	Suite *s = suite_create("local policy granter");
	TCase *tc = tcase("granter", 30);

	tcase_add_test(tc, test_local_granter_refuses_per_domain_egress);
	tcase_add_test(tc, test_resource_samples_are_kept_per_sandbox);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *mock_suite(void)
{
	Suite *s = suite_create("mock provider");
	TCase *tc = tcase("faults", 60);

	tcase_add_test(tc, test_a_fault_free_mock_sandbox_runs_commands);
	tcase_add_test(tc, test_a_failed_sandbox_create_leaves_nothing_behind);
	tcase_add_test(tc,
		       test_exec_fails_after_n_calls_counted_across_processes);
	tcase_add_test(tc, test_a_timed_out_exec_never_runs_its_command);
	tcase_add_test(tc,
		       test_a_lost_result_leaves_neither_file_nor_marker_line);
	suite_add_tcase(s, tc);
	return s;
}
int main(void)
{
	SRunner *sr = srunner_create(local_suite());
	int failed;

	srunner_add_suite(sr, policy_suite());
	srunner_add_suite(sr, mock_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

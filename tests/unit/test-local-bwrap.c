/*
 * The `local` module's sandboxes under bubblewrap: confinement of
 * writes, the hidden host, the private /tmp, the network per mode,
 * timeouts and parent death, and the errors that name the fix.
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

/* ---- local under bubblewrap ------------------------------------------ */

START_TEST(test_bwrap_capabilities_per_network_mode)
{
	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_uint_eq(ops->capabilities(inst.ctx),
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_NETWORK_DISABLED |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY |
				  SBXLOOP_CAP_GIT_READ_ONLY);
	sl_instance_destroy(&inst);
	sl_core_close(core);
	start("local", "local:\n  isolation: bwrap\n  network: host\n");
	ck_assert_uint_eq(ops->capabilities(inst.ctx),
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY |
				  SBXLOOP_CAP_GIT_READ_ONLY);
}
END_TEST

START_TEST(test_bwrap_confines_writes_to_workspace_and_sandbox)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char script[PATHBUF * 3], outside[600], inws[600], inhome[PATHBUF];
	struct lines l;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_uint_eq(info.capabilities & SBXLOOP_CAP_FILESYSTEM_CONFINED,
			  SBXLOOP_CAP_FILESYSTEM_CONFINED);
	/* /tmp is a private tmpfs inside, so test a host path outside it */
	snprintf(outside, sizeof(outside), "/var/tmp/test-local-outside-%d",
		 (int)getpid());
	unlink(outside);
	snprintf(inws, sizeof(inws), "%s/inside-ws", ws);
	snprintf(inhome, sizeof(inhome), "%s/inside-home", info.home);
	snprintf(script, sizeof(script),
		 "pwd; echo a > '%s' && echo ws-ok; echo b > '%s' && "
		 "echo home-ok; echo c > '%s' && echo outside-ok; "
		 "touch /usr/sbxloop-test 2>/dev/null && echo usr-ok; "
		 "echo d > '%s/leak' && echo tmp-write-ok; true",
		 inws, inhome, outside, tmpdir);
	ck_assert_int_eq(run_sh("s", script, 30, NULL, &l, &res), 0);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_ptr_nonnull(strstr(l.out, "ws-ok"));
	ck_assert_ptr_nonnull(strstr(l.out, "home-ok"));
	ck_assert_ptr_null(strstr(l.out, "outside-ok"));
	ck_assert_ptr_null(strstr(l.out, "usr-ok"));
	ck_assert_msg(strncmp(l.out, ws, strlen(ws)) == 0, "%s", l.out);
	ck_assert(exists(inws));
	ck_assert(exists(inhome));
	ck_assert(!exists(outside));
	ck_assert(!exists("/usr/sbxloop-test"));
	/* a write under the host's /tmp lands in the private tmpfs */
	ck_assert_ptr_nonnull(strstr(l.out, "tmp-write-ok"));
	snprintf(inhome, sizeof(inhome), "%s/leak", tmpdir);
	ck_assert(!exists(inhome));
	clear(&res);
}
END_TEST

START_TEST(test_bwrap_read_only_workspace_refuses_writes)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char script[PATHBUF * 2], inws[600];
	struct lines l;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox_ro("ro", 1, &info), 0);
	snprintf(inws, sizeof(inws), "%s/from-ro", ws);
	snprintf(script, sizeof(script),
		 "echo a > '%s' 2>/dev/null && echo ws-ok; "
		 "echo b > '%s/x' && echo home-ok; true",
		 inws, info.home);
	ck_assert_int_eq(run_sh("ro", script, 30, NULL, &l, &res), 0);
	ck_assert_ptr_null(strstr(l.out, "ws-ok"));
	ck_assert_ptr_nonnull(strstr(l.out, "home-ok"));
	ck_assert(!exists(inws));
	clear(&res);
}
END_TEST

/* A sandbox sharing `shared` (one host directory) with its jobs. */
static int make_sandbox_shared(const char *name, const char *shared,
			       struct sbxloop_sandbox_info *info)
{
	const char *dirs[] = {shared, NULL};
	struct sbxloop_sandbox_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = name;
	spec.role = "agent";
	spec.run_id = "r1";
	spec.workspace = ws;
	spec.worker_path = "/usr/bin/true";
	spec.shared_dirs = dirs;
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	return ops->sandbox_create(inst.ctx, &spec, info, &err);
}

/*
 * The escape of issue 11: a job appends a host directory to every file
 * the host reads to build a sandbox ($HOME/../shared, workspace, ...),
 * through $HOME/.. and through a shared directory that holds the
 * state_dir; the next job must neither see nor write that directory,
 * and the files on the host are unchanged.
 */
START_TEST(test_bwrap_jobs_cannot_rewrite_the_sandbox_metadata)
{
	static const char *const meta[] = {"shared", "workspace",
					   "workspace-ro", "worker", NULL};
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char victim[600], scn[600], planted[700], script[PATHBUF * 4];
	char path[PATHBUF], before[4][8192];
	const char *name[] = {"plain", "wide"};
	struct lines l;
	int k, i;

	start("local", "local:\n  isolation: bwrap\n");
	/* beside the test's directory, which "wide" shares whole */
	snprintf(victim, sizeof(victim), "%s.victim", tmpdir);
	snprintf(planted, sizeof(planted), "%s/planted", victim);
	snprintf(scn, sizeof(scn), "%s/scenario", tmpdir);
	ck_assert_int_eq(mkdir(victim, 0700), 0);
	ck_assert_int_eq(mkdir(scn, 0700), 0);
	/* "wide" shares the directory that holds the state_dir */
	ck_assert_int_eq(make_sandbox_shared(name[0], scn, &info), 0);
	ck_assert_int_eq(make_sandbox_shared(name[1], tmpdir, &info), 0);
	for (k = 0; k < 2; k++) {
		for (i = 0; meta[i]; i++) {
			char *t;

			snprintf(path, sizeof(path), "%s/%s/%s", sl_root,
				 name[k], meta[i]);
			t = read_text(path);
			snprintf(before[i], sizeof(before[i]), "%s",
				 t ? t : "(none)");
		}
		snprintf(
			script, sizeof(script),
			"for d in \"$HOME/..\" '%s/%s'; do "
			"for f in shared workspace workspace-ro worker; do "
			"echo '%s' >> \"$d/$f\" 2>/dev/null && "
			"echo appended-$f; done; done; "
			"echo '%s' > '%s/%s/workspace' 2>/dev/null && "
			"echo replaced; "
			"ls '%s/state.db' '%s' 2>/dev/null && echo state-seen; "
			"true",
			sl_root, name[k], victim, victim, sl_root, name[k],
			state, sl_root);
		ck_assert_int_eq(run_sh(name[k], script, 30, NULL, &l, &res),
				 0);
		/* what the job may write there is its own private tmpfs */
		ck_assert_msg(!strstr(l.out, "state-seen"), "%s: %s", name[k],
			      l.out);
		clear(&res);
		for (i = 0; meta[i]; i++) {
			char *t;

			snprintf(path, sizeof(path), "%s/%s/%s", sl_root,
				 name[k], meta[i]);
			t = read_text(path);
			ck_assert_str_eq(t ? t : "(none)", before[i]);
		}
		/* the next job: the victim is neither seen nor written */
		snprintf(
			script, sizeof(script),
			"ls '%s' >/dev/null 2>&1 && echo seen; "
			"grep -qs '%s' \"$HOME/../shared\" && echo meta-seen; "
			"echo pwn > '%s' 2>/dev/null && echo wrote; true",
			victim, victim, planted);
		ck_assert_int_eq(run_sh(name[k], script, 30, NULL, &l, &res),
				 0);
		ck_assert_msg(!strstr(l.out, "seen") &&
				      !strstr(l.out, "wrote"),
			      "%s: %s", name[k], l.out);
		ck_assert(!exists(planted));
		clear(&res);
	}
	ck_assert_int_eq(rmdir(victim), 0);
}
END_TEST

/*
 * Only what a job needs is there: no /etc/shadow (readable today when
 * run as root), no /root, no /home, no other /etc secrets; the toolchain
 * (sh, cc, make where installed) still works.
 */
START_TEST(test_bwrap_hides_the_host_beyond_what_a_job_needs)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	struct lines l;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_int_eq(
		run_sh("s",
		       "cat /etc/shadow >/dev/null 2>&1 && echo shadow-read; "
		       "test -e /etc/shadow && echo shadow-there; "
		       "test -e /etc/gshadow && echo gshadow-there; "
		       "test -e /etc/sudoers && echo sudoers-there; "
		       "ls /etc/ssh >/dev/null 2>&1 && echo ssh-there; "
		       "ls /root >/dev/null 2>&1 && echo root-listed; "
		       "ls /home >/dev/null 2>&1 && echo home-listed; "
		       "ls /var >/dev/null 2>&1 && echo var-listed; "
		       "grep -q '^root:' /etc/passwd && echo passwd-ok; "
		       "test -r /etc/ld.so.cache && echo ldcache-ok; "
		       "if command -v cc >/dev/null; then "
		       "echo 'int main(void){return 0;}' > /tmp/t.c && "
		       "cc -o /tmp/t /tmp/t.c && /tmp/t && echo cc-ok; "
		       "else echo cc-ok; fi; "
		       "if command -v make >/dev/null; then make --version "
		       ">/dev/null && echo make-ok; else echo make-ok; fi",
		       60, NULL, &l, &res),
		0);
	ck_assert_msg(!strstr(l.out, "shadow") && !strstr(l.out, "sudoers") &&
			      !strstr(l.out, "ssh-there") &&
			      !strstr(l.out, "listed"),
		      "%s", l.out);
	ck_assert_msg(strstr(l.out, "passwd-ok") &&
			      strstr(l.out, "ldcache-ok"),
		      "%s", l.out);
	ck_assert_msg(strstr(l.out, "cc-ok") && strstr(l.out, "make-ok"),
		      "%s%s", l.out, l.err);
	clear(&res);
}
END_TEST

/*
 * Writes outside the workspace, home/ and /tmp fail; what a job writes
 * at the sandbox's or the state_dir's path lands in its private /tmp
 * (they live under the host's /tmp here), never on the host.
 */
START_TEST(test_bwrap_refuses_writes_outside_workspace_and_home)
{
	static const char *const where[] = {"/",    "/etc",     "/usr",
					    "/opt", "/var/tmp", NULL};
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char script[PATHBUF * 3], mark[64], path[PATHBUF];
	struct lines l;
	size_t i;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(mark, sizeof(mark), "sbxloop-escape-%d", (int)getpid());
	snprintf(script, sizeof(script),
		 "for d in / /etc /usr /opt /var/tmp; do echo x > "
		 "\"$d/%s\" 2>/dev/null && echo \"wrote $d\"; done; "
		 "for d in \"$HOME/..\" '%s' '%s'; do mkdir -p \"$d\"; "
		 "echo x > \"$d/%s\"; done 2>/dev/null; "
		 "echo y > \"$HOME/%s\" && echo home-ok; true",
		 mark, state, sl_root, mark, mark);
	ck_assert_int_eq(run_sh("s", script, 30, NULL, &l, &res), 0);
	ck_assert_msg(!strstr(l.out, "wrote"), "%s", l.out);
	ck_assert_ptr_nonnull(strstr(l.out, "home-ok"));
	clear(&res);
	for (i = 0; where[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", where[i], mark);
		ck_assert_msg(!exists(path), "%s was written", path);
	}
	snprintf(path, sizeof(path), "%s/s/%s", sl_root, mark);
	ck_assert(!exists(path));
	snprintf(path, sizeof(path), "%s/%s", state, mark);
	ck_assert(!exists(path));
}
END_TEST

/* Run `script` with exec's read_only_workspace set to `ro`. */
static int run_sh_ro(const char *name, const char *script, int ro,
		     struct lines *l, struct sbxloop_proc_result *res)
{
	const char *argv[] = {"sh", "-c", script, NULL};
	struct sbxloop_exec_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.timeout_s = 30;
	spec.on_stdout_line = on_out;
	spec.on_stderr_line = on_err;
	spec.user = l;
	spec.read_only_workspace = ro;
	memset(l, 0, sizeof(*l));
	return ops->exec(inst.ctx, name, &spec, res, &err);
}

/* A critic's job: read-only for that one command, home/ writable. */
START_TEST(test_bwrap_read_only_job_in_a_writable_sandbox)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char script[PATHBUF * 2], inws[600];
	struct lines l;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_uint_eq(info.capabilities & SBXLOOP_CAP_WORKSPACE_READ_ONLY,
			  SBXLOOP_CAP_WORKSPACE_READ_ONLY);
	snprintf(inws, sizeof(inws), "%s/critic-wrote", ws);
	snprintf(script, sizeof(script),
		 "echo a > '%s' 2>/dev/null && echo ws-ok; "
		 "echo b > \"$HOME/scratch\" && echo home-ok; true",
		 inws);
	ck_assert_int_eq(run_sh_ro("s", script, 1, &l, &res), 0);
	ck_assert_ptr_null(strstr(l.out, "ws-ok"));
	ck_assert_ptr_nonnull(strstr(l.out, "home-ok"));
	ck_assert(!exists(inws));
	clear(&res);
	/* the next, ordinary job writes as before */
	ck_assert_int_eq(run_sh_ro("s", script, 0, &l, &res), 0);
	ck_assert_ptr_nonnull(strstr(l.out, "ws-ok"));
	ck_assert(exists(inws));
	clear(&res);
}
END_TEST

START_TEST(test_bwrap_tmp_is_private)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char marker[128], script[600];
	struct lines l;

	snprintf(marker, sizeof(marker), "/tmp/test-local-marker-%d",
		 (int)getpid());
	write_text(marker, "host", 0600);
	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(script, sizeof(script),
		 "test -e '%s' && echo seen; echo inner > '%s.in' && "
		 "echo wrote; echo tmp=$TMPDIR",
		 marker, marker);
	ck_assert_int_eq(run_sh("s", script, 30, NULL, &l, &res), 0);
	ck_assert_ptr_null(strstr(l.out, "seen"));
	ck_assert_ptr_nonnull(strstr(l.out, "wrote"));
	ck_assert_ptr_nonnull(strstr(l.out, "tmp=/tmp\n"));
	snprintf(script, sizeof(script), "%s.in", marker);
	ck_assert(!exists(script));
	unlink(marker);
	clear(&res);
}
END_TEST

/* Interface names in a /proc/net/dev text, space separated. */
static void interfaces(const char *text, char *out, size_t len)
{
	const char *p = text;

	out[0] = '\0';
	while ((p = strchr(p, '\n')) != NULL) {
		const char *colon, *start;

		p++;
		colon = strchr(p, ':');
		if (!colon || memchr(p, '\n', (size_t)(colon - p)) ||
		    memchr(p, '|', (size_t)(colon - p)))
			continue;
		start = p;
		while (*start == ' ')
			start++;
		snprintf(out + strlen(out), len - strlen(out), "%.*s ",
			 (int)(colon - start), start);
	}
}

START_TEST(test_bwrap_unshares_the_network_unless_host)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char ifs[1024], host_ifs[1024], *text;
	struct lines l;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_int_eq(run_sh("s", "cat /proc/net/dev", 30, NULL, &l, &res),
			 0);
	interfaces(l.out, ifs, sizeof(ifs));
	ck_assert_str_eq(ifs, "lo ");
	clear(&res);
	sl_instance_destroy(&inst);
	sl_core_close(core);

	start("local", "local:\n  isolation: bwrap\n  network: host\n");
	ck_assert_int_eq(run_sh("s", "cat /proc/net/dev", 30, NULL, &l, &res),
			 0);
	interfaces(l.out, ifs, sizeof(ifs));
	text = read_text("/proc/net/dev");
	ck_assert_ptr_nonnull(text);
	interfaces(text, host_ifs, sizeof(host_ifs));
	ck_assert_str_eq(ifs, host_ifs);
	clear(&res);
}
END_TEST

START_TEST(test_bwrap_timeout_kills_the_whole_sandbox)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_proc_result res;
	char arg[32], script[128];
	struct lines l;
	double t0;
	int i;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	/* a duration no other process uses, to find the sleeper by */
	snprintf(arg, sizeof(arg), "%d.25", 100 + (int)(getpid() % 800));
	snprintf(script, sizeof(script), "sleep %s & sleep %s; wait", arg,
		 arg);
	t0 = now();
	ck_assert_int_eq(run_sh("s", script, 1.0, NULL, &l, &res),
			 SBXLOOP_ETIMEDOUT);
	ck_assert_double_lt(now() - t0, 15.0);
	clear(&res);
	for (i = 0; i < 50 && sleeper_running(arg); i++)
		usleep(100000);
	ck_assert_msg(!sleeper_running(arg), "a sandboxed sleeper survived");
}
END_TEST

START_TEST(test_bwrap_sandbox_dies_with_its_parent)
{
	struct sbxloop_sandbox_info info;
	char arg[32], script[128];
	pid_t child;
	int i, status;

	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	snprintf(arg, sizeof(arg), "%d.75", 100 + (int)(getpid() % 800));
	snprintf(script, sizeof(script), "sleep %s", arg);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct sbxloop_proc_result res;
		struct lines l;

		run_sh("s", script, 0, NULL, &l, &res);
		_exit(0);
	}
	for (i = 0; i < 100 && !sleeper_running(arg); i++)
		usleep(100000);
	ck_assert_msg(sleeper_running(arg), "the sandboxed sleeper never ran");
	/* the parent of bwrap dies without any chance to clean up */
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	for (i = 0; i < 50 && sleeper_running(arg); i++)
		usleep(100000);
	ck_assert_msg(!sleeper_running(arg),
		      "the sandbox outlived the process that ran it");
}
END_TEST

/*
 * Replace /usr/bin/bwrap, for this forked test only, by `file` in a
 * private mount namespace. Returns 0, or -1 where that is not possible
 * (not root, or tests not forked) and the test should pass vacuously.
 */
static int replace_bwrap(const char *file)
{
	const char *fork_mode = getenv("CK_FORK");

	if (fork_mode && strcmp(fork_mode, "no") == 0)
		return -1;
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(file, "/usr/bin/bwrap", "none", MS_BIND, NULL) < 0) {
		fprintf(stderr,
			"test-local: cannot replace bwrap here (%s); "
			"skipping\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

static int instantiate_bwrap_failing(void)
{
	core = open_core("local:\n  isolation: bwrap\n");
	return sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX, "local", &inst,
				   &err);
}

START_TEST(test_bwrap_without_user_namespaces_names_the_fix)
{
	char fake[600];

	snprintf(fake, sizeof(fake), "%s/fake-bwrap", tmpdir);
	write_text(fake,
		   "#!/bin/sh\necho 'bwrap: No permissions to create new "
		   "namespace' >&2\nexit 1\n",
		   0755);
	if (replace_bwrap(fake) < 0)
		return;
	ck_assert_int_eq(instantiate_bwrap_failing(), SBXLOOP_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "bubblewrap"));
	ck_assert_ptr_nonnull(strstr(err.message, "user namespaces"));
	ck_assert_ptr_nonnull(
		strstr(err.message, "No permissions to create new namespace"));
	ck_assert_ptr_nonnull(strstr(err.message, "local.isolation: none"));
}
END_TEST

START_TEST(test_bwrap_missing_names_the_package)
{
	char fake[600];

	snprintf(fake, sizeof(fake), "%s/not-executable", tmpdir);
	write_text(fake, "", 0644);
	if (replace_bwrap(fake) < 0)
		return;
	ck_assert_int_eq(instantiate_bwrap_failing(), SBXLOOP_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "'/usr/bin/bwrap'"));
	ck_assert_ptr_nonnull(strstr(err.message, "install bubblewrap"));
}
END_TEST

static Suite *bwrap_suite(void)
{
	Suite *s = suite_create("local provider under bubblewrap");
	TCase *tc = tcase("bwrap", 120);

	tcase_add_test(tc, test_bwrap_capabilities_per_network_mode);
	tcase_add_test(tc,
		       test_bwrap_confines_writes_to_workspace_and_sandbox);
	tcase_add_test(tc, test_bwrap_read_only_workspace_refuses_writes);
	tcase_add_test(tc,
		       test_bwrap_jobs_cannot_rewrite_the_sandbox_metadata);
	tcase_add_test(tc, test_bwrap_hides_the_host_beyond_what_a_job_needs);
	tcase_add_test(tc,
		       test_bwrap_refuses_writes_outside_workspace_and_home);
	tcase_add_test(tc, test_bwrap_read_only_job_in_a_writable_sandbox);
	tcase_add_test(tc, test_bwrap_tmp_is_private);
	tcase_add_test(tc, test_bwrap_unshares_the_network_unless_host);
	tcase_add_test(tc, test_bwrap_timeout_kills_the_whole_sandbox);
	tcase_add_test(tc, test_bwrap_sandbox_dies_with_its_parent);
	tcase_add_test(tc, test_bwrap_without_user_namespaces_names_the_fix);
	tcase_add_test(tc, test_bwrap_missing_names_the_package);
	suite_add_tcase(s, tc);
	return s;
}
int main(void)
{
	SRunner *sr = srunner_create(bwrap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

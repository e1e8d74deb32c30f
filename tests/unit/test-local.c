/*
 * Specification of the `local` module (sandbox provider and policy
 * granter) and of the test-only `mock` provider, loaded as built modules
 * through the real core loader with a temporary sbxloop.yaml and
 * state_dir: sandboxes on disk, exec, copies, listing, removal,
 * bubblewrap confinement, declared capabilities and injected faults.
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

/* room for a sandbox path (4 KiB) plus a file name */
#define PATHBUF 4400

static char tmpdir[256];
static char ws[512];
static char state[512];
static char sl_root[600];
static struct sl_core *core;
static struct sl_instance inst;
static const struct sbxloop_sandbox_ops *ops;
static struct sbxloop_error err;

/* Lines a command printed, joined with '\n' per stream. */
struct lines {
	char out[8192];
	char err[8192];
	int n_out;
};

static void on_out(void *user, const char *line, size_t len)
{
	struct lines *l = user;
	size_t used = strlen(l->out);

	snprintf(l->out + used, sizeof(l->out) - used, "%.*s\n", (int)len,
		 line);
	l->n_out++;
}

static void on_err(void *user, const char *line, size_t len)
{
	struct lines *l = user;
	size_t used = strlen(l->err);

	snprintf(l->err + used, sizeof(l->err) - used, "%.*s\n", (int)len,
		 line);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static char *read_text(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void setup(void)
{
	const char *base = getenv("TMPDIR");

	ck_assert_msg(getenv("SBXLOOP_PLUGIN_PATH") != NULL,
		      "SBXLOOP_PLUGIN_PATH must name the built plugins "
		      "(make check sets it)");
	snprintf(tmpdir, sizeof(tmpdir), "%s/test-local.XXXXXX",
		 base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(ws, sizeof(ws), "%s/ws", tmpdir);
	snprintf(state, sizeof(state), "%s/state", tmpdir);
	snprintf(sl_root, sizeof(sl_root), "%s/sandboxes", state);
	ck_assert_int_eq(mkdir(ws, 0700), 0);
	memset(&err, 0, sizeof(err));
	memset(&inst, 0, sizeof(inst));
	core = NULL;
	ops = NULL;
}

static void teardown(void)
{
	sl_instance_destroy(&inst);
	sl_core_close(core);
	core = NULL;
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open the real core on a config made of state_dir plus `body`. */
static struct sl_core *open_core(const char *body)
{
	struct sl_config_opts o;
	struct sl_core *c = NULL;
	char path[600], text[4096];
	char *errors = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/sbxloop.yaml", tmpdir);
	snprintf(text, sizeof(text), "state_dir: %s\n%s", state, body);
	write_text(path, text, 0600);
	memset(&o, 0, sizeof(o));
	o.config_file = path;
	o.cwd = tmpdir;
	o.no_user_file = 1;
	o.no_env = 1;
	rc = sl_core_open(&c, &o, &errors);
	ck_assert_msg(rc == 0, "sl_core_open: %s", errors ? errors : "?");
	free(errors);
	return c;
}

/* Open the core and instantiate sandbox provider `name`. */
static void start(const char *provider, const char *body)
{
	int rc;

	core = open_core(body);
	rc = sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX, provider, &inst,
				 &err);
	ck_assert_msg(rc == 0, "instantiate %s: %s", provider, err.message);
	ops = inst.ops;
}

static int make_sandbox_ro(const char *name, int read_only,
			   struct sbxloop_sandbox_info *info)
{
	struct sbxloop_sandbox_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = name;
	spec.role = "agent";
	spec.run_id = "r1";
	spec.workspace = ws;
	spec.worker_path = "/usr/bin/true";
	spec.read_only_workspace = read_only;
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	return ops->sandbox_create(inst.ctx, &spec, info, &err);
}

static int make_sandbox(const char *name, struct sbxloop_sandbox_info *info)
{
	return make_sandbox_ro(name, 0, info);
}

/* Run a shell snippet in sandbox `name`; lines land in *l. */
static int run_sh(const char *name, const char *script, double timeout,
		  const char *stdin_data, struct lines *l,
		  struct sbxloop_proc_result *res)
{
	const char *argv[] = {"sh", "-c", script, NULL};
	struct sbxloop_exec_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.timeout_s = timeout;
	spec.stdin_data = stdin_data;
	spec.stdin_len = stdin_data ? strlen(stdin_data) : 0;
	spec.on_stdout_line = on_out;
	spec.on_stderr_line = on_err;
	spec.user = l;
	memset(l, 0, sizeof(*l));
	return ops->exec(inst.ctx, name, &spec, res, &err);
}

static void clear(struct sbxloop_proc_result *res)
{
	core->host.proc_result_clear(res);
}

/* A process that exists and is not a zombie. */
static int alive(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* Is some live process running exactly `sleep <arg>`? */
static int sleeper_running(const char *arg)
{
	char want[64], path[300], buf[128];
	struct dirent *d;
	size_t wl;
	DIR *dh = opendir("/proc");
	int found = 0;

	wl = (size_t)snprintf(want, sizeof(want), "sleep%c%s", '\0', arg) + 1;
	ck_assert_ptr_nonnull(dh);
	while (!found && (d = readdir(dh)) != NULL) {
		FILE *f;
		size_t n;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (n == wl && memcmp(buf, want, wl) == 0 &&
		    alive((pid_t)atoi(d->d_name)))
			found = 1;
	}
	closedir(dh);
	return found;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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
	ck_assert_uint_eq(ops->static_capabilities,
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_NETWORK_DISABLED |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY);
	ck_assert_uint_eq(ops->static_capabilities &
				  (SBXLOOP_CAP_EGRESS_ENFORCED |
				   SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX),
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

/* ---- local under bubblewrap ------------------------------------------ */

START_TEST(test_bwrap_capabilities_per_network_mode)
{
	start("local", "local:\n  isolation: bwrap\n");
	ck_assert_uint_eq(ops->capabilities(inst.ctx),
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_NETWORK_DISABLED |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY);
	sl_instance_destroy(&inst);
	sl_core_close(core);
	start("local", "local:\n  isolation: bwrap\n  network: host\n");
	ck_assert_uint_eq(ops->capabilities(inst.ctx),
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY);
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

/* Without bubblewrap nothing can be read-only, and it says so. */
START_TEST(test_no_isolation_does_not_claim_read_only_jobs)
{
	struct sbxloop_sandbox_info info;

	start("local", "local:\n  isolation: none\n");
	ck_assert_uint_eq(ops->capabilities(inst.ctx) &
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY,
			  0);
	ck_assert_int_eq(make_sandbox("s", &info), 0);
	ck_assert_uint_eq(info.capabilities & SBXLOOP_CAP_WORKSPACE_READ_ONLY,
			  0);
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
	ck_assert_ptr_null(pops->revoke);
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

static TCase *tcase(const char *name, int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	return tc;
}

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
	tcase_add_test(tc, test_list_finds_sandboxes_by_prefix);
	tcase_add_test(
		tc, test_remove_deletes_the_sandbox_but_never_the_workspace);
	tcase_add_test(tc, test_capabilities_without_isolation_are_honest);
	tcase_add_test(tc, test_unknown_isolation_is_a_config_error);
	tcase_add_test(tc, test_no_isolation_does_not_claim_read_only_jobs);
	suite_add_tcase(s, tc);
	return s;
}

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

static Suite *policy_suite(void)
{
	Suite *s = suite_create("local policy granter");
	TCase *tc = tcase("granter", 30);

	tcase_add_test(tc, test_local_granter_refuses_per_domain_egress);
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

	srunner_add_suite(sr, bwrap_suite());
	srunner_add_suite(sr, policy_suite());
	srunner_add_suite(sr, mock_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

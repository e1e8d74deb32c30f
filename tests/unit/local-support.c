/*
 * The fixture and helpers of the local module suites (test-local-*.c):
 * modules loaded as built through the real core loader, one temporary
 * sbxloop.yaml and state_dir per test.
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

/* room for a sandbox path (4 KiB) plus a file name */

char tmpdir[256];
char ws[512];
char state[512];
char sl_root[600];
struct sl_core *core;
struct sl_instance inst;
const struct sbxloop_sandbox_ops *ops;
struct sbxloop_error err;

/* Lines a command printed, joined with '\n' per stream. */

void on_out(void *user, const char *line, size_t len)
{
	struct lines *l = user;
	size_t used = strlen(l->out);

	snprintf(l->out + used, sizeof(l->out) - used, "%.*s\n", (int)len,
		 line);
	l->n_out++;
}

void on_err(void *user, const char *line, size_t len)
{
	struct lines *l = user;
	size_t used = strlen(l->err);

	snprintf(l->err + used, sizeof(l->err) - used, "%.*s\n", (int)len,
		 line);
}

int rm_entry(const char *path, const struct stat *st, int flag,
	     struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

char *read_text(const char *path)
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

int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

void setup(void)
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

void teardown(void)
{
	sl_instance_destroy(&inst);
	sl_core_close(core);
	core = NULL;
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open the real core on a config made of state_dir plus `body`. */
struct sl_core *open_core(const char *body)
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
void start(const char *provider, const char *body)
{
	int rc;

	core = open_core(body);
	rc = sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX, provider, &inst,
				 &err);
	ck_assert_msg(rc == 0, "instantiate %s: %s", provider, err.message);
	ops = inst.ops;
}

int make_sandbox_ro(const char *name, int read_only,
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

int make_sandbox(const char *name, struct sbxloop_sandbox_info *info)
{
	return make_sandbox_ro(name, 0, info);
}

/* Run a shell snippet in sandbox `name`; lines land in *l. */
int run_sh(const char *name, const char *script, double timeout,
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

void clear(struct sbxloop_proc_result *res)
{
	core->host.proc_result_clear(res);
}

/* A process that exists and is not a zombie. */
int alive(pid_t pid)
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
int sleeper_running(const char *arg)
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

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TCase *tcase(const char *name, int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	return tc;
}

/*
 * Artifacts and retention: the exclusion matcher and its per-key tally
 * (names, globs, gitignored files), the artifacts directory of a run,
 * the harvest of an unmounted workspace through a sandbox provider, and
 * the `artifacts` and `gc` commands of the real binary against a state
 * directory filled through the sqlite store plugin.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/store.h>

#include "engine/artifacts.h"
#include "host/core.h"
#include "host/events.h"
#include "common/proc.h"
#include "common/util.h"
#include "testutil.h"

static char dir[256];
static char cfg_path[512];
static char state[512];

static const char *const default_excludes[] = {
	".git",  ".sbxloop", "node_modules", "__pycache__",
	".venv", "venv",     "*.egg-info",   "target",
};
#define N_DEFAULT SL_ARRAY_SIZE(default_excludes)

static void setup(void)
{
	char tmpl[] = "/tmp/sbx-artifacts-XXXXXX";
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(cfg_path, sizeof(cfg_path), "%s/sbxloop.yaml", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("HOME", dir, 1);
	setenv("NO_COLOR", "1", 1);
	setenv("GIT_AUTHOR_NAME", "Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "test@example.invalid", 1);
	setenv("GIT_COMMITTER_NAME", "Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "test@example.invalid", 1);
	f = fopen(cfg_path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "state_dir: %s\nplugins:\n  store: sqlite\n", state);
	fclose(f);
}

static void teardown(void)
{
	tu_sh("chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
}

/* Write `text` at root/rel, creating directories. */
static void put(const char *root, const char *rel, const char *text)
{
	char *path = sl_xasprintf("%s/%s", root, rel);
	char *slash = strrchr(path, '/');
	FILE *f;

	*slash = '\0';
	ck_assert_int_eq(sl_mkdirs(path, 0755), 0);
	*slash = '/';
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	free(path);
}

static size_t tally(const struct sl_artifact_scan *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n_tally; i++)
		if (!strcmp(s->tally[i].key, key))
			return s->tally[i].count;
	return 0;
}

static int kept(const struct sl_artifact_scan *s, const char *rel)
{
	size_t i;

	for (i = 0; i < s->n_files; i++)
		if (!strcmp(s->files[i].relpath, rel))
			return 1;
	return 0;
}

/* ---------------------------------------------------------- matcher */

START_TEST(test_exclusions_match_whole_path_components)
{
	static const struct {
		const char *path;
		const char *key;
	} t[] = {
		{"node_modules/a.js", "node_modules"},
		{"web/node_modules/lib/x.js", "node_modules"},
		{"src/node_modules_extra/x.js", NULL},
		{"pkg/foo.egg-info/PKG-INFO", "*.egg-info"},
		{"foo.egg-info", "*.egg-info"},
		{"src/egg-info.py", NULL},
		{"target/debug/app", "target"},
		{"mytarget/file", NULL},
		{"docs/target.md", NULL},
		{".git/config", ".git"},
		{".github/workflows/ci.yml", NULL},
		{"src/__pycache__/m.cpython-312.pyc", "__pycache__"},
		{"README.md", NULL},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++) {
		const char *k = sl_artifacts_match(t[i].path, default_excludes,
						   N_DEFAULT);

		if (t[i].key)
			ck_assert_msg(k && !strcmp(k, t[i].key),
				      "%s: got %s, want %s", t[i].path,
				      k ? k : "(kept)", t[i].key);
		else
			ck_assert_msg(k == NULL, "%s: excluded by %s",
				      t[i].path, k);
	}
}
END_TEST

START_TEST(test_scan_counts_every_excluded_file_by_key)
{
	struct sl_artifact_scan s;
	struct sbxloop_error err = {0, ""};
	char *root = sl_xasprintf("%s/ws", dir), *note;

	put(root, "src/main.c", "int main(void) { return 0; }\n");
	put(root, "README.md", "hello\n");
	put(root, "node_modules/a.js", "a");
	put(root, "node_modules/b/c.js", "c");
	put(root, "pkg.egg-info/PKG-INFO", "p");
	put(root, "src/__pycache__/x.pyc", "x");
	ck_assert_int_eq(
		sl_artifacts_scan(root, default_excludes, N_DEFAULT, &s, &err),
		0);
	ck_assert_int_eq((int)s.n_files, 2);
	/* sorted */
	ck_assert_str_eq(s.files[0].relpath, "README.md");
	ck_assert_str_eq(s.files[1].relpath, "src/main.c");
	ck_assert_int_eq((int)s.files[0].size, 6);
	ck_assert_int_eq((int)tally(&s, "node_modules"), 2);
	ck_assert_int_eq((int)tally(&s, "*.egg-info"), 1);
	ck_assert_int_eq((int)tally(&s, "__pycache__"), 1);
	ck_assert_int_eq((int)s.excluded, 4);
	note = sl_artifacts_note(&s);
	ck_assert_str_eq(note, "4 file(s) excluded (*.egg-info: 1, "
			       "__pycache__: 1, node_modules: 2)");
	free(note);
	sl_artifacts_scan_release(&s);
	free(root);
}
END_TEST

START_TEST(test_nothing_excluded_means_no_note)
{
	struct sl_artifact_scan s;
	struct sbxloop_error err = {0, ""};
	char *root = sl_xasprintf("%s/ws", dir);

	put(root, "a.txt", "a");
	ck_assert_int_eq(
		sl_artifacts_scan(root, default_excludes, N_DEFAULT, &s, &err),
		0);
	ck_assert_ptr_null(sl_artifacts_note(&s));
	sl_artifacts_scan_release(&s);
	ck_assert_int_eq(
		sl_artifacts_scan("/nonexistent/sbx", NULL, 0, &s, &err),
		SBXLOOP_ENOTFOUND);
	free(root);
}
END_TEST

START_TEST(test_gitignored_files_are_counted_in_a_checkout)
{
	struct sl_artifact_scan s;
	struct sbxloop_error err = {0, ""};
	char *root = sl_xasprintf("%s/repo", dir);

	put(root, ".gitignore", "*.log\nbuild/\n");
	put(root, "src/app.py", "print(1)\n");
	put(root, "debug.log", "noise");
	put(root, "build/out.bin", "bin");
	put(root, "build/deep/more.bin", "bin");
	tu_sh("cd '%s' && git init -q . && git add .gitignore src && "
	      "git commit -qm init",
	      root);
	/* a GIT_DIR in the environment must not redirect the query */
	setenv("GIT_DIR", "/nonexistent", 1);
	ck_assert_int_eq(
		sl_artifacts_scan(root, default_excludes, N_DEFAULT, &s, &err),
		0);
	unsetenv("GIT_DIR");
	ck_assert_int_eq((int)tally(&s, "gitignored"), 3);
	ck_assert(kept(&s, "src/app.py"));
	ck_assert(kept(&s, ".gitignore"));
	ck_assert(!kept(&s, "debug.log"));
	ck_assert(tally(&s, ".git") > 0);
	sl_artifacts_scan_release(&s);
	free(root);
}
END_TEST

START_TEST(test_gitignore_without_checkout_not_parents)
{
	struct sl_artifact_scan s;
	struct sbxloop_error err = {0, ""};
	char *parent = sl_xasprintf("%s/outer", dir);
	char *root = sl_xasprintf("%s/outer/harvested", dir);

	/* the parent repository ignores *.txt; the root only *.tmp */
	put(parent, ".gitignore", "*.txt\n");
	tu_sh("cd '%s' && git init -q .", parent);
	put(root, ".gitignore", "*.tmp\n");
	put(root, "notes.txt", "kept");
	put(root, "scratch.tmp", "gone");
	ck_assert_int_eq(
		sl_artifacts_scan(root, default_excludes, N_DEFAULT, &s, &err),
		0);
	ck_assert(kept(&s, "notes.txt"));
	ck_assert(!kept(&s, "scratch.tmp"));
	ck_assert_int_eq((int)tally(&s, "gitignored"), 1);
	sl_artifacts_scan_release(&s);
	free(parent);
	free(root);
}
END_TEST

START_TEST(test_artifacts_dir_follows_the_workspace_mount)
{
	char *d;

	ck_assert_ptr_null(sl_artifacts_dir("/s", "rabc", NULL, 0));
	ck_assert_ptr_null(sl_artifacts_dir("/s", "rabc", "", 1));
	d = sl_artifacts_dir("/s", "rabc", "/work/ws", 1);
	ck_assert_str_eq(d, "/work/ws");
	free(d);
	d = sl_artifacts_dir("/s", "rabc", "/work/ws", 0);
	ck_assert_str_eq(d, "/s/runs/rabc/artifacts");
	free(d);
}
END_TEST

START_TEST(test_event_data_carries_counts_and_pressure)
{
	struct sl_artifact_scan s;
	cJSON *sample = cJSON_Parse("{\"level\":\"abort\","
				    "\"disk_used_pct\":99.1}");
	cJSON *d;

	memset(&s, 0, sizeof(s));
	sl_artifacts_tally_add(&s, "node_modules", 3);
	d = sl_artifacts_event_data("/a", 0, &s, sample);
	ck_assert_str_eq(cJSON_GetObjectItem(d, "path")->valuestring, "/a");
	ck_assert_int_eq(cJSON_GetObjectItem(d, "files")->valueint, 0);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "mounted")));
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(d, "excluded"),
				    "node_modules")
			->valueint,
		3);
	ck_assert_str_eq(
		cJSON_GetObjectItem(d, "resources_level")->valuestring,
		"abort");
	cJSON_Delete(d);
	cJSON_Delete(sample);
	sl_artifacts_scan_release(&s);
}
END_TEST

/* ---------------------------------------------------------- harvest */

/*
 * A sandbox provider whose sandbox is a host directory: exec runs the
 * command there, copy_out copies a file out. Enough for the harvest.
 */
struct dirbox {
	char *root; /* "inside" paths are under it */
	int fail_tar;
};

static char *inside_path(struct dirbox *b, const char *p)
{
	return sl_xasprintf("%s%s", b->root, p);
}

static int box_exec(void *ctx, const char *name,
		    const struct sbxloop_exec_spec *spec,
		    struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	struct dirbox *b = ctx;
	struct sbxloop_proc_spec ps;
	const char *argv[64];
	char *owned[64];
	size_t i, n_owned = 0;
	char *cwd;
	int rc;

	(void)name;
	for (i = 0; spec->argv[i] && i < 63; i++) {
		/* map sandbox absolute paths into the box */
		if (spec->argv[i][0] == '/') {
			owned[n_owned] = inside_path(b, spec->argv[i]);
			argv[i] = owned[n_owned++];
		} else {
			argv[i] = spec->argv[i];
		}
	}
	argv[i] = NULL;
	if (b->fail_tar && !strcmp(argv[0], "tar"))
		argv[0] = "false";
	cwd = inside_path(b, spec->cwd);
	memset(&ps, 0, sizeof(ps));
	ps.struct_size = sizeof(ps);
	ps.argv = argv;
	ps.cwd = cwd;
	ps.on_stdout_line = spec->on_stdout_line;
	ps.on_stderr_line = spec->on_stderr_line;
	ps.user = spec->user;
	rc = sl_proc_run(&ps, res, err);
	for (i = 0; i < n_owned; i++)
		free(owned[i]);
	free(cwd);
	return rc;
}

static int box_copy_out(void *ctx, const char *name, const char *from,
			const char *to, struct sbxloop_error *err)
{
	struct dirbox *b = ctx;
	char *src = inside_path(b, from);
	size_t len;
	char *data = sl_read_file(src, &len, 1u << 30);
	int rc = 0;

	(void)name;
	if (!data)
		rc = sl_error(err, SBXLOOP_EINFRA, "no file '%s'", from);
	else if (sl_write_file_atomic(to, data, len, 0600))
		rc = sl_error(err, SBXLOOP_EINFRA, "cannot write '%s'", to);
	free(data);
	free(src);
	return rc;
}

static const struct sbxloop_sandbox_ops box_ops = {
	.struct_size = sizeof(struct sbxloop_sandbox_ops),
	.exec = box_exec,
	.copy_out = box_copy_out,
};

START_TEST(test_harvest_copies_the_workspace_minus_exclusions)
{
	struct dirbox box;
	struct sl_harvest h;
	struct sl_artifact_scan s;
	struct sbxloop_error err = {0, ""};
	char *ws, *dest, *old;
	struct stat st;

	box.root = sl_xasprintf("%s/box", dir);
	box.fail_tar = 0;
	ws = sl_xasprintf("%s/home/agent/work", box.root);
	tu_sh("mkdir -p '%s/home/agent/.sbxloop'", box.root);
	put(ws, "src/lib.rs", "fn main() {}\n");
	put(ws, "target/debug/app", "elf");
	put(ws, "target/debug/app.d", "deps");
	put(ws, "web/node_modules/x/index.js", "x");
	put(ws, ".gitignore", "*.log\n");
	put(ws, "run.log", "log");
	tu_sh("ln -s /etc/passwd '%s/escape'", ws);
	dest = sl_xasprintf("%s/runs/rabc/artifacts", state);
	/* a previous harvest is replaced whole */
	put(dest, "stale.txt", "old");
	memset(&h, 0, sizeof(h));
	h.ops = &box_ops;
	h.ctx = &box;
	h.sandbox = "sbxloop-rabc-agent";
	h.workdir = "/home/agent/work";
	h.home = "/home/agent/.sbxloop";
	h.dest = dest;
	h.exclude = default_excludes;
	h.n_exclude = N_DEFAULT;
	ck_assert_msg(sl_artifacts_harvest(&h, &s, &err) == 0, "%s",
		      err.message);
	ck_assert(kept(&s, "src/lib.rs"));
	ck_assert(kept(&s, ".gitignore"));
	ck_assert_int_eq((int)s.n_files, 2);
	ck_assert_int_eq((int)tally(&s, "target"), 2);
	ck_assert_int_eq((int)tally(&s, "node_modules"), 1);
	ck_assert_int_eq((int)tally(&s, "gitignored"), 1);
	ck_assert_int_eq((int)tally(&s, "links"), 1);
	old = sl_xasprintf("%s/stale.txt", dest);
	ck_assert_int_ne(stat(old, &st), 0);
	free(old);
	old = sl_xasprintf("%s/escape", dest);
	ck_assert_int_ne(lstat(old, &st), 0);
	free(old);
	old = sl_xasprintf("%s/src/lib.rs", dest);
	ck_assert_int_eq(stat(old, &st), 0);
	free(old);
	/* the tar file is gone on both sides */
	old = sl_xasprintf("%s/home/agent/.sbxloop/harvest.tar", box.root);
	ck_assert_int_ne(stat(old, &st), 0);
	free(old);
	sl_artifacts_scan_release(&s);

	/* a failing harvest leaves the previous copy alone */
	box.fail_tar = 1;
	ck_assert_int_ne(sl_artifacts_harvest(&h, &s, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.message, "harvest"));
	old = sl_xasprintf("%s/src/lib.rs", dest);
	ck_assert_int_eq(stat(old, &st), 0);
	free(old);
	sl_artifacts_scan_release(&s);
	free(ws);
	free(dest);
	free(box.root);
}
END_TEST

/* ----------------------------------------------- the real commands */

static struct sl_core *core;
static struct sl_instance store;
static struct sl_bus *bus;

static void core_up(void)
{
	struct sl_config_opts opts;
	struct sbxloop_error err = {0, ""};
	char *errors = NULL;

	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	ck_assert_msg(sl_core_open(&core, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_STORE, "sqlite",
					  &store, &err) == 0,
		      "%s", err.message);
	ck_assert_int_eq(sl_bus_open(core, &store, &bus, &err), 0);
}

static void core_down(void)
{
	if (!core)
		return;
	sl_bus_close(bus);
	sl_instance_destroy(&store);
	sl_core_close(core);
	core = NULL;
}

static void cmd_setup(void)
{
	setup();
	core_up();
}

static void cmd_teardown(void)
{
	core_down();
	teardown();
}

static void make_run(const char *run_id, const char *state_name,
		     double age_days, const char *workspace, int mounted,
		     const char *kept_reason)
{
	const struct sbxloop_store_ops *ops = store.ops;
	struct sbxloop_run_row row;
	struct sbxloop_error err = {0, ""};

	memset(&row, 0, sizeof(row));
	row.struct_size = sizeof(row);
	row.run_id = run_id;
	row.outcome = "do the thing";
	row.state = state_name;
	row.config_json = "{}";
	row.created_at = sl_now() - age_days * 86400;
	row.workspace = workspace;
	row.mounted = mounted;
	row.kept_reason = kept_reason;
	row.guidance_json = "[]";
	ck_assert_msg(ops->run_create(store.ctx, &row, &err) == 0, "%s",
		      err.message);
}

static void emit_for(const char *run_id, const char *type, const char *json)
{
	struct sbxloop_error err = {0, ""};

	sl_core_set_run(core, run_id);
	ck_assert_int_eq(sl_emit(core, type, NULL, cJSON_Parse(json)), 0);
	ck_assert_int_eq(sl_bus_flush(core, &err), 0);
}

/* Run sbxloop --config <cfg> args... and collect its output. */
static struct tu_run run_sbxloop(const char *const *args)
{
	const char *argv[32];
	struct tu_run r;
	size_t n = 0;

	argv[n++] = tu_env("SBXLOOP_BIN");
	argv[n++] = "--config";
	argv[n++] = cfg_path;
	while (*args && n < 30)
		argv[n++] = *args++;
	argv[n] = NULL;
	tu_exec(&r, NULL, NULL, argv);
	return r;
}

#define RUN(...) run_sbxloop((const char *const[]){__VA_ARGS__, NULL})

#define EXPECT(r, code)                                                       \
	ck_assert_msg((r).status == (code),                                   \
		      "exit %d, want %d\nstdout:\n%s\nstderr:\n%s",           \
		      (r).status, (code), (r).out, (r).err)

static int dir_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

START_TEST(test_artifacts_lists_files_sizes_and_exclusions)
{
	char *ws = sl_xasprintf("%s/ws", dir);
	struct tu_run r;

	put(ws, "src/main.c", "int main(void) { return 0; }\n");
	put(ws, "node_modules/a.js", "a");
	make_run("rabcdefgh", "completed", 0, ws, 1, NULL);
	r = RUN("artifacts", "rabcdefgh");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "run rabcdefgh: 1 file(s) (live "
					    "workspace mount) in"));
	ck_assert_ptr_nonnull(strstr(r.out, "  src/main.c  29 B\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "1 file(s) excluded "
					    "(node_modules: 1)"));
	tu_run_free(&r);
	r = RUN("artifacts", "rabcdefgh", "--tree");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "  src/\n    main.c\n"));
	tu_run_free(&r);
	free(ws);
}
END_TEST

START_TEST(test_artifacts_of_unmounted_run_reads_harvest)
{
	char *ws = sl_xasprintf("%s/ws", dir);
	char *adir = sl_xasprintf("%s/runs/rbcdefghj/artifacts", state);
	struct tu_run r;

	make_run("rbcdefghj", "failed", 0, ws, 0, NULL);
	r = RUN("artifacts", "rbcdefghj", "--path");
	EXPECT(r, 0);
	ck_assert_int_eq((int)strlen(r.out), (int)strlen(adir) + 1);
	ck_assert_int_eq(strncmp(r.out, adir, strlen(adir)), 0);
	tu_run_free(&r);
	/* nothing harvested yet */
	r = RUN("artifacts", "rbcdefghj");
	EXPECT(r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "no artifacts directory"));
	tu_run_free(&r);
	put(adir, "out.txt", "result");
	r = RUN("artifacts", "rbcdefghj");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "(harvested copy)"));
	ck_assert_ptr_nonnull(strstr(r.out, "out.txt  6 B"));
	tu_run_free(&r);
	free(ws);
	free(adir);
}
END_TEST

START_TEST(test_artifacts_refuses_runs_without_a_workspace)
{
	struct tu_run r;

	make_run("rcdefghjk", "failed", 0, NULL, 0, NULL);
	r = RUN("artifacts", "rcdefghjk");
	EXPECT(r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "never provisioned a workspace "
					    "(state: failed)"));
	tu_run_free(&r);
	r = RUN("artifacts", "rzzzzzzzz");
	EXPECT(r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "unknown run"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_gc_dry_run_removes_nothing)
{
	char *rd = sl_xasprintf("%s/runs/rdefghjkm", state);
	struct tu_run r;

	put(rd, "artifacts/a.txt", "a");
	make_run("rdefghjkm", "completed", 30, NULL, 0, NULL);
	r = RUN("gc", "--dry-run");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "prune: completed, older than "
					    "14d"));
	ck_assert_ptr_nonnull(strstr(r.out, "dry run: 1 run directory"));
	ck_assert(dir_exists(rd));
	tu_run_free(&r);
	free(rd);
}
END_TEST

struct gc_events {
	int n;
	char data[2048];
};

static int gc_event_cb(void *user, const struct sbxloop_event *ev)
{
	struct gc_events *g = user;

	g->n++;
	snprintf(g->data, sizeof(g->data), "%s", ev->data_json);
	return 0;
}

START_TEST(test_gc_removes_old_finished_runs_and_records_it)
{
	const struct sbxloop_store_ops *ops;
	char *old = sl_xasprintf("%s/runs/refghjkmn", state);
	char *ws = sl_xasprintf("%s/workspace", old);
	struct sbxloop_event_query q;
	struct sbxloop_error err = {0, ""};
	struct gc_events g = {0, ""};
	struct tu_run r;

	put(ws, "a.txt", "aaaa");
	make_run("refghjkmn", "completed", 20, ws, 0, NULL);
	core_down();
	r = RUN("gc");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "removed 1 run directory"));
	ck_assert(!dir_exists(old));
	tu_run_free(&r);
	core_up();
	ops = store.ops;
	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = "refghjkmn";
	q.type_prefix = "daemon.gc";
	ck_assert_int_eq(
		ops->events_query(store.ctx, &q, gc_event_cb, &g, &err), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_ptr_nonnull(strstr(g.data, "\"workspace_removed\":true"));
	ck_assert_ptr_nonnull(strstr(g.data, "\"by\":\"gc\""));
	ck_assert_ptr_nonnull(strstr(g.data, "\"bytes\":"));
	/* a resume must now refuse the run */
	ck_assert_int_eq(
		sl_gc_workspace_removed(ops, store.ctx, "refghjkmn", &err), 1);
	free(old);
	free(ws);
}
END_TEST

START_TEST(test_gc_never_removes_a_resumable_or_protected_run)
{
	struct sbxloop_error err = {0, ""};
	static const char *const names[] = {"rfghjkmnp", "rghjkmnpq",
					    "rhjkmnpqr", "rjkmnpqrs",
					    "not-a-run", "rkmnpqrst"};
	size_t i;
	struct tu_run r;

	for (i = 0; i < SL_ARRAY_SIZE(names); i++) {
		char *d = sl_xasprintf("%s/runs/%s", state, names[i]);

		put(d, "x", "x");
		free(d);
	}
	make_run("rfghjkmnp", "running", 60, NULL, 0, NULL);
	ck_assert_int_eq(sl_gc_workspace_removed(store.ops, store.ctx,
						 "rfghjkmnp", &err),
			 0);
	make_run("rghjkmnpq", "failed", 2, NULL, 0, NULL);
	make_run("rhjkmnpqr", "completed", 60, NULL, 0, "manual");
	make_run("rjkmnpqrs", "completed", 60, NULL, 0, NULL);
	emit_for("rjkmnpqrs", "run.deliver",
		 "{\"status\":\"ok\",\"message\":\"pr opened\"}");
	emit_for("rjkmnpqrs", "run.deliver", "{\"error\":\"push rejected\"}");
	/* rkmnpqrst: a directory the store never heard of */
	core_down();
	r = RUN("gc", "--older-than", "7");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "run is running (resumable)"));
	ck_assert_ptr_nonnull(strstr(r.out, "within retention (7d)"));
	ck_assert_ptr_nonnull(strstr(r.out, "run is kept (manual)"));
	ck_assert_ptr_nonnull(strstr(r.out, "delivery failed"));
	ck_assert_ptr_nonnull(strstr(r.out, "not a run directory"));
	ck_assert_ptr_nonnull(strstr(r.out, "unknown to this store"));
	ck_assert_ptr_nonnull(strstr(r.out, "removed 0 run directories"));
	for (i = 0; i < SL_ARRAY_SIZE(names); i++) {
		char *d = sl_xasprintf("%s/runs/%s", state, names[i]);

		ck_assert_msg(dir_exists(d), "%s was removed", names[i]);
		free(d);
	}
	tu_run_free(&r);
	/* even a zero window keeps the resumable run */
	r = RUN("gc", "--older-than", "0");
	EXPECT(r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "run is running (resumable)"));
	ck_assert_ptr_nonnull(strstr(r.out, "removed 1 run directory"));
	tu_run_free(&r);
}
END_TEST

START_TEST(test_gc_rejects_a_bad_window)
{
	struct tu_run r = RUN("gc", "--older-than", "-1");

	EXPECT(r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--older-than"));
	tu_run_free(&r);
	r = RUN("gc", "--older-than", "nan");
	EXPECT(r, 2);
	tu_run_free(&r);
}
END_TEST

static Suite *artifacts_suite(void)
{
	Suite *s = suite_create("artifacts");
	TCase *tc = tcase_create("scan");
	TCase *th = tcase_create("harvest");
	TCase *tm = tcase_create("commands");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_exclusions_match_whole_path_components);
	tcase_add_test(tc, test_scan_counts_every_excluded_file_by_key);
	tcase_add_test(tc, test_nothing_excluded_means_no_note);
	tcase_add_test(tc, test_gitignored_files_are_counted_in_a_checkout);
	tcase_add_test(tc, test_gitignore_without_checkout_not_parents);
	tcase_add_test(tc, test_artifacts_dir_follows_the_workspace_mount);
	tcase_add_test(tc, test_event_data_carries_counts_and_pressure);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(th, setup, teardown);
	tcase_add_test(th, test_harvest_copies_the_workspace_minus_exclusions);
	suite_add_tcase(s, th);

	tcase_add_checked_fixture(tm, cmd_setup, cmd_teardown);
	tcase_add_test(tm, test_artifacts_lists_files_sizes_and_exclusions);
	tcase_add_test(tm, test_artifacts_of_unmounted_run_reads_harvest);
	tcase_add_test(tm, test_artifacts_refuses_runs_without_a_workspace);
	tcase_add_test(tm, test_gc_dry_run_removes_nothing);
	tcase_add_test(tm, test_gc_removes_old_finished_runs_and_records_it);
	tcase_add_test(tm, test_gc_never_removes_a_resumable_or_protected_run);
	tcase_add_test(tm, test_gc_rejects_a_bad_window);
	suite_add_tcase(s, tm);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(artifacts_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Artifacts (UPSTREAM 11): owns the exclusion matcher and its tally, the
 * scan of an artifacts directory (with gitignored files left out), the
 * artifacts directory of a run, the harvest of an unmounted workspace
 * out of its sandbox, the run.artifacts event data, and whether gc took
 * a run's workspace. Callers: the engine (harvest per task and at
 * finalize, the resume check), cmd_artifacts.c (`artifacts`, `gc`) and
 * delivery.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/artifacts.h"
#include <sbxloop/events.h>
#include "engine/guard.h"
#include "common/proc.h"
#include "common/util.h"

extern char **environ;

#define GIT_OUTPUT_MAX (256u << 20)
#define HARVEST_TIMEOUT_S 120.0
#define LINK_KEY "links"

/* ----------------------------------------------------------- matcher */

static int is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static const char *match_component(const char *comp, size_t len,
				   const char *const *exclude, size_t n)
{
	char buf[256];
	size_t i;

	if (len >= sizeof(buf))
		return NULL;
	memcpy(buf, comp, len);
	buf[len] = '\0';
	for (i = 0; i < n; i++) {
		const char *e = exclude[i];

		if (!e || !*e)
			continue;
		if (is_glob(e) ? fnmatch(e, buf, FNM_PERIOD) == 0
			       : strcmp(e, buf) == 0)
			return e;
	}
	return NULL;
}

const char *sl_artifacts_match(const char *relpath, const char *const *exclude,
			       size_t n)
{
	const char *p = relpath;

	while (*p) {
		size_t len = strcspn(p, "/");
		const char *hit =
			len ? match_component(p, len, exclude, n) : NULL;

		if (hit)
			return hit;
		p += len;
		while (*p == '/')
			p++;
	}
	return NULL;
}

void sl_artifacts_tally_add(struct sl_artifact_scan *scan, const char *key,
			    size_t count)
{
	size_t i;

	for (i = 0; i < scan->n_tally; i++) {
		int c = strcmp(scan->tally[i].key, key);

		if (c == 0) {
			scan->tally[i].count += count;
			scan->excluded += count;
			return;
		}
		if (c > 0)
			break;
	}
	scan->tally = sl_xrealloc(scan->tally,
				  (scan->n_tally + 1) * sizeof(*scan->tally));
	memmove(&scan->tally[i + 1], &scan->tally[i],
		(scan->n_tally - i) * sizeof(*scan->tally));
	scan->tally[i].key = sl_xstrdup(key);
	scan->tally[i].count = count;
	scan->n_tally++;
	scan->excluded += count;
}

void sl_artifacts_scan_release(struct sl_artifact_scan *scan)
{
	size_t i;

	for (i = 0; i < scan->n_files; i++)
		free(scan->files[i].relpath);
	for (i = 0; i < scan->n_tally; i++)
		free(scan->tally[i].key);
	free(scan->files);
	free(scan->tally);
	memset(scan, 0, sizeof(*scan));
}

/* -------------------------------------------------------------- walk */

struct walk_entry {
	char *relpath;
	long long size;
	int is_file; /* regular file; else something a harvest drops */
};

struct walk {
	struct walk_entry *v;
	size_t n;
	int saw_gitignore;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of one directory (names only; caller frees). */
static int list_dir(const char *path, char ***names, size_t *n)
{
	DIR *d = opendir(path);
	struct dirent *de;

	*names = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		*names = sl_xrealloc(*names, (*n + 1) * sizeof(**names));
		(*names)[(*n)++] = sl_xstrdup(de->d_name);
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(**names), cmp_str);
	return 0;
}

static int walk_dir(const char *root, const char *rel, struct walk *w)
{
	char *path =
		*rel ? sl_xasprintf("%s/%s", root, rel) : sl_xstrdup(root);
	char **names;
	size_t n, i;
	int rc = list_dir(path, &names, &n);

	if (rc)
		goto out;
	for (i = 0; i < n; i++) {
		char *r = *rel ? sl_xasprintf("%s/%s", rel, names[i])
			       : sl_xstrdup(names[i]);
		char *full = sl_xasprintf("%s/%s", root, r);
		struct stat st;

		if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
			walk_dir(root, r, w);
			free(r);
		} else if (lstat(full, &st) == 0) {
			w->v = sl_xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
			w->v[w->n].relpath = r;
			w->v[w->n].size = (long long)st.st_size;
			w->v[w->n].is_file = S_ISREG(st.st_mode);
			w->n++;
			if (!strcmp(names[i], ".gitignore"))
				w->saw_gitignore = 1;
		} else {
			free(r);
		}
		free(full);
		free(names[i]);
	}
	free(names);
out:
	free(path);
	return rc;
}

static void walk_clear(struct walk *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		free(w->v[i].relpath);
	free(w->v);
	memset(w, 0, sizeof(*w));
}

/* ------------------------------------------------------- gitignored */

/* The environment without GIT_* (caller frees the array only). */
static const char **env_without_git(void)
{
	size_t n = 0, k = 0;
	const char **env;
	char **e;

	for (e = environ; *e; e++)
		n++;
	env = sl_xcalloc(n + 1, sizeof(*env));
	for (e = environ; *e; e++)
		if (strncmp(*e, "GIT_", 4) != 0)
			env[k++] = *e;
	return env;
}

static int run_git(const char *cwd, const char *const *argv,
		   struct sbxloop_proc_result *res)
{
	struct sbxloop_proc_spec spec;
	struct sbxloop_error err = {0, ""};
	const char **env = env_without_git();
	int rc;

	memset(&spec, 0, sizeof(spec));
	memset(res, 0, sizeof(*res));
	spec.struct_size = sizeof(spec);
	res->struct_size = sizeof(*res);
	spec.argv = argv;
	spec.envp = env;
	spec.cwd = cwd;
	spec.timeout_s = 120;
	spec.tail_max = GIT_OUTPUT_MAX;
	/* the tree is the agents': a FIFO .gitignore cannot hold git */
	rc = sl_proc_run_releasing(&spec, cwd, res, &err);
	free(env);
	if (rc == 0 && (res->exit_code != 0 || res->timed_out))
		rc = SBXLOOP_ERR;
	return rc;
}

/* Sorted relpaths the tree's own .gitignore rules ignore; NULL when
 * git cannot tell (then nothing is filtered as gitignored). */
static char **gitignored(const char *root, int saw_gitignore, size_t *n)
{
	struct sbxloop_proc_result res;
	struct stat st;
	char *gitdir = NULL, *tmp = NULL, **list = NULL;
	const char *argv[12];
	size_t k = 0, off;
	int checkout = 0;

	*n = 0;
	{
		char *dotgit = sl_xasprintf("%s/.git", root);

		checkout = lstat(dotgit, &st) == 0;
		free(dotgit);
	}
	if (!checkout && !saw_gitignore)
		return NULL;
	if (!checkout) {
		/* a throwaway repository, so parent repos never apply */
		const char *init[] = {"git", "init", "-q", NULL, NULL};
		char tmpl[] = "/tmp/sbxloop-ignore-XXXXXX";

		if (!mkdtemp(tmpl))
			return NULL;
		tmp = sl_xstrdup(tmpl);
		init[3] = tmp;
		if (run_git(NULL, init, &res)) {
			sl_proc_result_clear(&res);
			goto out;
		}
		sl_proc_result_clear(&res);
		gitdir = sl_xasprintf("--git-dir=%s/.git", tmp);
		argv[k++] = "git";
		argv[k++] = gitdir;
		argv[k++] = "--work-tree=.";
	} else {
		argv[k++] = "git";
	}
	argv[k++] = "-c";
	argv[k++] = "core.fsmonitor=false";
	argv[k++] = "ls-files";
	argv[k++] = "--others";
	argv[k++] = "--ignored";
	argv[k++] = "--exclude-per-directory=.gitignore";
	argv[k++] = "-z";
	argv[k] = NULL;
	if (run_git(root, argv, &res) == 0 && res.out_len < GIT_OUTPUT_MAX) {
		list = sl_xcalloc(1, sizeof(*list));
		for (off = 0; off < res.out_len;) {
			size_t len = strnlen(res.out + off, res.out_len - off);

			if (len) {
				list = sl_xrealloc(list,
						   (*n + 2) * sizeof(*list));
				list[(*n)++] = sl_xstrndup(res.out + off, len);
			}
			off += len + 1;
		}
		if (*n)
			qsort(list, *n, sizeof(*list), cmp_str);
	}
	sl_proc_result_clear(&res);
out:
	if (tmp) {
		sl_artifacts_rmtree_quiet(tmp);
		free(tmp);
	}
	free(gitdir);
	return list;
}

/* -------------------------------------------------------------- scan */

int sl_artifacts_scan(const char *root, const char *const *exclude,
		      size_t n_exclude, struct sl_artifact_scan *scan,
		      struct sbxloop_error *err)
{
	struct walk w = {NULL, 0, 0};
	char **ignored;
	size_t n_ignored = 0, i;
	int rc;

	memset(scan, 0, sizeof(*scan));
	rc = walk_dir(root, "", &w);
	if (rc) {
		rc = sl_error(err,
			      rc == -ENOENT ? SBXLOOP_ENOTFOUND : SBXLOOP_ERR,
			      "cannot read '%s': %s", root, strerror(-rc));
		goto out;
	}
	ignored = gitignored(root, w.saw_gitignore, &n_ignored);
	for (i = 0; i < w.n; i++) {
		const char *rel = w.v[i].relpath;
		const char *key;

		if (!w.v[i].is_file)
			continue;
		key = sl_artifacts_match(rel, exclude, n_exclude);
		if (!key && ignored &&
		    bsearch(&rel, ignored, n_ignored, sizeof(*ignored),
			    cmp_str))
			key = SL_ARTIFACTS_GITIGNORED;
		if (key) {
			sl_artifacts_tally_add(scan, key, 1);
			continue;
		}
		scan->files =
			sl_xrealloc(scan->files, (scan->n_files + 1) *
							 sizeof(*scan->files));
		scan->files[scan->n_files].relpath = w.v[i].relpath;
		scan->files[scan->n_files].size = w.v[i].size;
		w.v[i].relpath = NULL;
		scan->bytes += w.v[i].size;
		scan->n_files++;
	}
	for (i = 0; i < n_ignored; i++)
		free(ignored[i]);
	free(ignored);
out:
	walk_clear(&w);
	return rc;
}

char *sl_artifacts_note(const struct sl_artifact_scan *scan)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	if (!scan->excluded)
		return NULL;
	sl_buf_addf(&b, "%zu file(s) excluded (", scan->excluded);
	for (i = 0; i < scan->n_tally; i++)
		sl_buf_addf(&b, "%s%s: %zu", i ? ", " : "", scan->tally[i].key,
			    scan->tally[i].count);
	sl_buf_adds(&b, ")");
	return sl_buf_detach(&b);
}

const char **sl_artifacts_excludes(const struct sl_config *cfg, size_t *n)
{
	size_t i, k = sl_config_list_len(cfg, "artifacts.exclude");
	const char **v = sl_xcalloc(k + 1, sizeof(*v));

	for (i = 0; i < k; i++)
		v[i] = sl_config_list_item(cfg, "artifacts.exclude", i);
	*n = k;
	return v;
}

char *sl_artifacts_dir(const char *state_dir, const char *run_id,
		       const char *workspace, int mounted)
{
	if (!workspace || !*workspace)
		return NULL;
	if (mounted)
		return sl_xstrdup(workspace);
	return sl_xasprintf("%s/runs/%s/artifacts", state_dir, run_id);
}

/* ------------------------------------------------------------ trees */

static int rmtree_rec(const char *path)
{
	struct stat st;
	char **names;
	size_t n, i;
	int rc = 0;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) == 0 ? 0 : -errno;
	chmod(path, 0700); /* read-only dirs (Go module caches) */
	if (list_dir(path, &names, &n) == 0) {
		for (i = 0; i < n; i++) {
			char *c = sl_xasprintf("%s/%s", path, names[i]);
			int r = rmtree_rec(c);

			if (r && !rc)
				rc = r;
			free(c);
			free(names[i]);
		}
		free(names);
	}
	if (rmdir(path) != 0 && !rc)
		rc = -errno;
	return rc;
}

int sl_artifacts_list_dir(const char *path, char ***names, size_t *n)
{
	return list_dir(path, names, n);
}

int sl_artifacts_rmtree(const char *path)
{
	return rmtree_rec(path);
}

void sl_artifacts_rmtree_quiet(const char *path)
{
	(void)rmtree_rec(path);
}

long long sl_artifacts_du(const char *path)
{
	struct stat st;
	long long total;
	char **names;
	size_t n, i;

	if (lstat(path, &st) != 0)
		return 0;
	total = (long long)st.st_size;
	if (!S_ISDIR(st.st_mode))
		return total;
	if (list_dir(path, &names, &n) != 0)
		return total;
	for (i = 0; i < n; i++) {
		char *c = sl_xasprintf("%s/%s", path, names[i]);

		total += sl_artifacts_du(c);
		free(c);
		free(names[i]);
	}
	free(names);
	return total;
}

/* ----------------------------------------------------------- harvest */

struct listing {
	struct sl_artifact_scan *scan;
	const char *const *exclude;
	size_t n;
};

static void on_listed(void *user, const char *line, size_t len)
{
	struct listing *l = user;
	char *rel = sl_xstrndup(line, len);
	const char *p = rel, *key;

	if (p[0] == '.' && p[1] == '/')
		p += 2;
	key = sl_artifacts_match(p, l->exclude, l->n);
	if (key)
		sl_artifacts_tally_add(l->scan, key, 1);
	free(rel);
}

static int sandbox_run(const struct sl_harvest *h, const char *const *argv,
		       struct listing *listing, const char *what,
		       struct sbxloop_error *err)
{
	struct sbxloop_exec_spec spec;
	struct sbxloop_proc_result res;
	int rc;

	memset(&spec, 0, sizeof(spec));
	memset(&res, 0, sizeof(res));
	spec.struct_size = sizeof(spec);
	res.struct_size = sizeof(res);
	spec.argv = argv;
	spec.cwd = h->workdir;
	spec.timeout_s = h->timeout_s > 0 ? h->timeout_s : HARVEST_TIMEOUT_S;
	if (listing) {
		spec.on_stdout_line = on_listed;
		spec.user = listing;
	}
	rc = h->ops->exec(h->ctx, h->sandbox, &spec, &res, err);
	if (rc == 0 && res.exit_code != 0)
		rc = sl_error(err, SBXLOOP_ERR,
			      "harvest: %s in sandbox '%s' exited %d: %s",
			      what, h->sandbox, res.exit_code,
			      res.err ? res.err : "");
	sl_proc_result_clear(&res);
	return rc;
}

/* Drop everything but regular files and directories; count them. */
static void drop_links(const char *root, struct sl_artifact_scan *scan)
{
	struct walk w = {NULL, 0, 0};
	size_t i;

	walk_dir(root, "", &w);
	for (i = 0; i < w.n; i++) {
		char *full;

		if (w.v[i].is_file)
			continue;
		full = sl_xasprintf("%s/%s", root, w.v[i].relpath);
		if (unlink(full) == 0)
			sl_artifacts_tally_add(scan, LINK_KEY, 1);
		free(full);
	}
	walk_clear(&w);
}

/* tar on the host: 0, or an error with `what` and tar's first line. */
static int host_tar(const char *const *argv, const char *what,
		    const char *path, struct sbxloop_error *err)
{
	struct sbxloop_proc_spec ps;
	struct sbxloop_proc_result pres;
	int rc;

	memset(&ps, 0, sizeof(ps));
	memset(&pres, 0, sizeof(pres));
	ps.struct_size = sizeof(ps);
	pres.struct_size = sizeof(pres);
	ps.argv = argv;
	ps.timeout_s = HARVEST_TIMEOUT_S;
	rc = sl_proc_run(&ps, &pres, err);
	if (rc == 0 && pres.exit_code != 0)
		rc = sl_error(err, SBXLOOP_ERR, "%s '%s': %.*s", what, path,
			      (int)strcspn(pres.err ? pres.err : "", "\n"),
			      pres.err ? pres.err : "");
	sl_proc_result_clear(&pres);
	return rc;
}

int sl_artifacts_harvest(const struct sl_harvest *h,
			 struct sl_artifact_scan *scan,
			 struct sbxloop_error *err)
{
	struct sl_artifact_scan listed, kept;
	struct listing listing;
	const char *find_argv[] = {"find", ".", "-type", "f", NULL};
	const char **tar_argv = NULL;
	char *inside = sl_xasprintf("%s/harvest.tar", h->home);
	char *tarfile = sl_xasprintf("%s.tar", h->dest);
	char *staging = sl_xasprintf("%s.staging", h->dest);
	const char *untar[] = {
		"tar", "-xf", tarfile, "-C", staging, "--no-same-owner", NULL};
	const char *rm_argv[] = {"rm", "-f", inside, NULL};
	size_t i, k = 0;
	int rc;

	memset(&listed, 0, sizeof(listed));
	memset(&kept, 0, sizeof(kept));
	memset(scan, 0, sizeof(*scan));
	listing.scan = &listed;
	listing.exclude = h->exclude;
	listing.n = h->n_exclude;
	/* what stays inside is counted too, never silently dropped */
	rc = sandbox_run(h, find_argv, &listing, "listing files", err);
	if (rc)
		goto out;
	tar_argv = sl_xcalloc(2 * h->n_exclude + 8, sizeof(*tar_argv));
	tar_argv[k++] = "tar";
	tar_argv[k++] = "-cf";
	tar_argv[k++] = inside;
	tar_argv[k++] = "-C";
	tar_argv[k++] = h->workdir;
	for (i = 0; i < h->n_exclude; i++) {
		tar_argv[k++] = "--exclude";
		tar_argv[k++] = h->exclude[i];
	}
	tar_argv[k++] = ".";
	rc = sandbox_run(h, tar_argv, NULL, "tar", err);
	if (rc)
		goto out;
	rc = h->ops->copy_out(h->ctx, h->sandbox, inside, tarfile, err);
	if (rc)
		goto out;
	sl_artifacts_rmtree_quiet(staging);
	rc = sl_mkdirs(staging, 0755);
	if (rc) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "harvest: cannot create '%s': %s", staging,
			      strerror(-rc));
		goto out;
	}
	rc = host_tar(untar, "harvest: cannot extract", tarfile, err);
	if (rc)
		goto out;
	drop_links(staging, &listed);
	sl_artifacts_rmtree_quiet(h->dest);
	if (rename(staging, h->dest) != 0) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "harvest: cannot move '%s' "
			      "to '%s': %s",
			      staging, h->dest, strerror(errno));
		goto out;
	}
	rc = sl_artifacts_scan(h->dest, h->exclude, h->n_exclude, &kept, err);
	if (rc)
		goto out;
	/* the copy holds no excluded names, so its tally is gitignored */
	*scan = kept;
	memset(&kept, 0, sizeof(kept));
	for (i = 0; i < listed.n_tally; i++)
		sl_artifacts_tally_add(scan, listed.tally[i].key,
				       listed.tally[i].count);
out:
	sandbox_run(h, rm_argv, NULL, "rm", &(struct sbxloop_error){0, ""});
	unlink(tarfile);
	sl_artifacts_rmtree_quiet(staging);
	sl_artifacts_scan_release(&listed);
	sl_artifacts_scan_release(&kept);
	free(tar_argv);
	free(inside);
	free(tarfile);
	free(staging);
	return rc;
}

int sl_artifacts_seed(const struct sl_harvest *h, size_t *files,
		      struct sbxloop_error *err)
{
	struct walk w = {NULL, 0, 0};
	char *inside = sl_xasprintf("%s/seed.tar", h->home);
	char *tarfile = sl_xasprintf("%s.seed.tar", h->dest);
	const char *tar_argv[] = {"tar",   "-cf", tarfile, "-C",
				  h->dest, ".",   NULL};
	const char *untar[] = {"tar", "-xf",      inside,
			       "-C",  h->workdir, "--no-same-owner",
			       NULL};
	const char *rm_argv[] = {"rm", "-f", inside, NULL};
	size_t i;
	int rc;

	*files = 0;
	rc = host_tar(tar_argv, "cannot archive", h->dest, err);
	if (rc == 0)
		rc = h->ops->copy_in(h->ctx, h->sandbox, tarfile, inside, err);
	if (rc == 0)
		rc = sandbox_run(h, untar, NULL, "tar", err);
	sandbox_run(h, rm_argv, NULL, "rm", &(struct sbxloop_error){0, ""});
	unlink(tarfile);
	if (rc == 0) {
		walk_dir(h->dest, "", &w);
		for (i = 0; i < w.n; i++)
			*files += w.v[i].is_file != 0;
		walk_clear(&w);
	}
	free(inside);
	free(tarfile);
	return rc;
}

cJSON *sl_artifacts_event_data(const char *path, int mounted,
			       const struct sl_artifact_scan *scan,
			       const cJSON *sample)
{
	cJSON *d = cJSON_CreateObject();
	size_t i;

	cJSON_AddStringToObject(d, "path", path ? path : "");
	cJSON_AddNumberToObject(d, "files", scan ? (double)scan->n_files : 0);
	cJSON_AddBoolToObject(d, "mounted", mounted);
	if (scan && scan->excluded) {
		cJSON *ex = cJSON_AddObjectToObject(d, "excluded");

		for (i = 0; i < scan->n_tally; i++)
			cJSON_AddNumberToObject(ex, scan->tally[i].key,
						(double)scan->tally[i].count);
	}
	sl_guard_artifact_fields(sample, d);
	return d;
}

/* ---------------------------------------------------------------- gc */

static int removed_cb(void *user, const struct sbxloop_event *ev)
{
	int *removed = user;
	cJSON *data = cJSON_Parse(ev->data_json ? ev->data_json : "{}");

	if (cJSON_IsTrue(cJSON_GetObjectItem(data, "workspace_removed")) &&
	    !cJSON_GetObjectItem(data, "error"))
		*removed = 1;
	cJSON_Delete(data);
	return *removed;
}

int sl_gc_workspace_removed(const struct sbxloop_store_ops *ops, void *ctx,
			    const char *run_id, struct sbxloop_error *err)
{
	struct sbxloop_event_query q;
	int removed = 0, rc;

	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = run_id;
	q.type_prefix = SBXLOOP_EV_GC;
	rc = ops->events_query(ctx, &q, removed_cb, &removed, err);
	return rc ? rc : removed;
}

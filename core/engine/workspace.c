/*
 * Workspace isolation (UPSTREAM 8.3): owns the choice between a fresh
 * directory, the operator's directory in place, and a per-run clone of
 * a git checkout on branch sbxloop/<run> with the start commit pinned
 * under refs/sbxloop/base. The engine calls it once for a fresh run; a
 * resumed run uses its recorded workspace and never comes here. Git
 * runs through the one subprocess helper with GIT_* stripped, and only
 * read-only commands ever run in the source checkout.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/artifacts.h"
#include <sbxloop/events.h>
#include "common/proc.h"
#include "common/launch.h"
#include "common/util.h"
#include "engine/workspace.h"

extern char **environ;

#define GIT_TIMEOUT_S 600.0

void sl_workspace_release(struct sl_workspace *ws)
{
	free(ws->path);
	free(ws->branch);
	free(ws->fetch_cmd);
	free(ws->warning);
	cJSON_Delete(ws->clone_event);
	memset(ws, 0, sizeof(*ws));
}

char *sl_url_strip_userinfo(const char *url)
{
	const char *scheme = strstr(url, "://");
	const char *host, *at, *slash;

	if (!scheme)
		return sl_xstrdup(url);
	host = scheme + 3;
	slash = host + strcspn(host, "/");
	at = memchr(host, '@', (size_t)(slash - host));
	if (!at)
		return sl_xstrdup(url);
	/* the last '@' of the authority ends the userinfo */
	while (memchr(at + 1, '@', (size_t)(slash - at - 1)))
		at = memchr(at + 1, '@', (size_t)(slash - at - 1));
	return sl_xasprintf("%.*s%s", (int)(host - url), url, at + 1);
}

/* ---------------------------------------------------------------- git */

void sl_git_out_clear(struct sl_git_out *g)
{
	free(g->out);
	free(g->err);
	memset(g, 0, sizeof(*g));
}

/*
 * The settings of a repository's config that make git run a program,
 * whose names are fixed, made inert for sbxloop's own git (it outranks
 * every config file): a workspace's .git/config is the agents' to write
 * where the sandbox mounts it. Hooks are off too (a global
 * core.hooksPath whose post-checkout or pre-commit fails, lints or
 * waits made sbxloop's clones, checkouts, commits and merges fail or
 * crawl). Drivers named by attributes (filter.NAME.clean, ...) cannot be
 * listed: the lanes keep the config itself out of the agents' reach
 * (docs/security.md).
 */
static const char *const inert[][2] = {
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.sshCommand", "false"},
	{"core.askPass", "false"},
	{"core.editor", "false"},
	{"core.pager", "cat"},
	{"core.alternateRefsCommand", "false"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"gpg.program", "false"},
	{"credential.helper", ""},
	{"sequence.editor", "false"},
};
#define INERT_N SL_ARRAY_SIZE(inert)
static const char *inert_keys[INERT_N], *inert_values[INERT_N];
static char inert_count[32];
static pthread_once_t inert_once = PTHREAD_ONCE_INIT;

/* GIT_CONFIG_KEY_i=... and GIT_CONFIG_VALUE_i=..., made once. */
static void inert_env(void)
{
	size_t i;

	snprintf(inert_count, sizeof(inert_count), "GIT_CONFIG_COUNT=%zu",
		 (size_t)INERT_N);
	for (i = 0; i < INERT_N; i++) {
		inert_keys[i] =
			sl_xasprintf("GIT_CONFIG_KEY_%zu=%s", i, inert[i][0]);
		inert_values[i] = sl_xasprintf("GIT_CONFIG_VALUE_%zu=%s", i,
					       inert[i][1]);
	}
}

static int git_run(struct sl_git_out *g, const char *cwd,
		   const char *const *argv, int agents);

int sl_git(struct sl_git_out *g, const char *cwd, const char *const *argv)
{
	return git_run(g, cwd, argv, 0);
}

int sl_git_agents_tree(struct sl_git_out *g, const char *cwd,
		       const char *const *argv)
{
	return git_run(g, cwd, argv, 1);
}

/*
 * Run git in `cwd` with GIT_* stripped and the settings above inert; 0
 * when it exited 0. `agents`: cwd is a tree agents write, whose FIFOs
 * are released while git runs past its first second.
 */
static int git_run(struct sl_git_out *g, const char *cwd,
		   const char *const *argv, int agents)
{
	struct sbxloop_proc_spec spec;
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	const char **env;
	size_t n = 0, k = 0, i;
	char **e;
	int rc;

	memset(g, 0, sizeof(*g));
	pthread_once(&inert_once, inert_env);
	for (e = environ; *e; e++)
		n++;
	env = sl_xcalloc(n + 2 + 2 * INERT_N, sizeof(*env));
	for (e = environ; *e; e++)
		if (strncmp(*e, "GIT_", 4) != 0)
			env[k++] = *e;
	env[k++] = "GIT_TERMINAL_PROMPT=0";
	env[k++] = inert_count;
	for (i = 0; i < INERT_N; i++) {
		env[k++] = inert_keys[i];
		env[k++] = inert_values[i];
	}
	memset(&spec, 0, sizeof(spec));
	memset(&res, 0, sizeof(res));
	spec.struct_size = sizeof(spec);
	res.struct_size = sizeof(res);
	spec.argv = argv;
	spec.envp = env;
	spec.cwd = cwd;
	spec.timeout_s = GIT_TIMEOUT_S;
	/* git holds the run: a resume waits for git a killed driver left */
	sl_launch_holding(1);
	/* a FIFO an agent planted where git reads cannot hold it */
	rc = sl_proc_run_releasing(&spec, agents ? cwd : NULL, &res, &err);
	sl_launch_holding(0);
	free(env);
	if (rc == 0) {
		size_t len = res.out_len;

		g->ran = res.exit_code != 127;
		g->status = res.timed_out ? -1 : res.exit_code;
		while (len && (res.out[len - 1] == '\n'))
			len--;
		g->out = sl_xstrndup(res.out ? res.out : "", len);
		g->err = sl_xstrdup(res.err ? res.err : "");
		len = strlen(g->err);
		while (len && g->err[len - 1] == '\n')
			g->err[--len] = '\0';
	} else {
		g->status = -1;
		g->out = sl_xstrdup("");
		g->err = sl_xstrdup(err.message);
	}
	sl_proc_result_clear(&res);
	return g->status == 0 ? 0 : -1;
}

static char *abs_path(const char *p)
{
	char buf[PATH_MAX];

	if (!realpath(p, buf))
		return NULL;
	return sl_xstrdup(buf);
}

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *shell_quote(const char *s)
{
	struct sl_buf b = SL_BUF_INIT;

	sl_buf_addc(&b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			sl_buf_adds(&b, "'\\''");
		else
			sl_buf_addc(&b, *s);
	}
	sl_buf_addc(&b, '\'');
	return sl_buf_detach(&b);
}

/* ----------------------------------------------------------- isolate */

static int use_dir(struct sl_workspace *ws, const char *dir,
		   struct sbxloop_error *err)
{
	int rc = sl_mkdirs(dir, 0755);

	if (rc)
		return sl_error(err, SBXLOOP_ERR,
				"cannot create workspace "
				"'%s': %s",
				dir, strerror(-rc));
	ws->path = abs_path(dir);
	if (!ws->path)
		return sl_error(err, SBXLOOP_ERR,
				"cannot resolve workspace "
				"'%s': %s",
				dir, strerror(errno));
	return 0;
}

/* Fill the clone event, fetch command and branch of a clone at C. */
static void describe_clone(struct sl_workspace *ws, const char *source,
			   const char *clone, const char *branch,
			   const char *commit, int dirty, int reused)
{
	char *qs = shell_quote(source), *qc = shell_quote(clone);
	cJSON *d = cJSON_CreateObject();
	char *msg;

	if (reused)
		msg = sl_xasprintf("reusing the run's clone '%s' of '%s' on "
				   "branch %s",
				   clone, source, branch);
	else
		msg = sl_xasprintf("cloned '%s' at %.12s into '%s' on branch "
				   "%s%s",
				   source, commit, clone, branch,
				   dirty ? "; uncommitted changes in the "
					   "source were not included"
					 : "");
	cJSON_AddStringToObject(d, "source", source);
	cJSON_AddStringToObject(d, "target", clone);
	cJSON_AddStringToObject(d, "commit", commit);
	cJSON_AddStringToObject(d, "branch", branch);
	cJSON_AddBoolToObject(d, "dirty", dirty);
	cJSON_AddBoolToObject(d, "reused", reused);
	cJSON_AddStringToObject(d, "message", msg);
	ws->clone_event = d;
	ws->cloned = 1;
	ws->branch = sl_xstrdup(branch);
	ws->fetch_cmd = sl_xasprintf("git -C %s fetch %s %s", qs, qc, branch);
	cJSON_AddStringToObject(d, "fetch", ws->fetch_cmd);
	free(msg);
	free(qs);
	free(qc);
}

/* Path of `inner` relative to `outer` when inside it, else NULL. */
static const char *inside(const char *outer, const char *inner)
{
	size_t n = strlen(outer);

	if (strncmp(outer, inner, n) == 0 && inner[n] == '/')
		return inner + n + 1;
	return NULL;
}

static int make_clone(struct sl_workspace *ws, const char *src,
		      const char *clone, const char *branch,
		      const char *commit, int dirty, struct sbxloop_error *err)
{
	struct sl_git_out g;
	char *parent = sl_xstrdup(clone), *slash = strrchr(parent, '/');
	char *origin = NULL;
	int rc = 0;

	if (slash)
		*slash = '\0';
	rc = sl_mkdirs(parent, 0700);
	free(parent);
	if (rc)
		return sl_error(err, SBXLOOP_ERR,
				"cannot create the run "
				"directory of '%s': %s",
				clone, strerror(-rc));
	if (SL_GIT(&g, NULL, "git", "clone", "-q", "--no-checkout", src,
		   clone)) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "cannot clone '%s' into "
			      "'%s': %s",
			      src, clone, g.err);
		goto fail;
	}
	sl_git_out_clear(&g);
	if (SL_GIT(&g, clone, "git", "checkout", "-q", "-b", branch, commit)) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "cannot create branch %s in "
			      "'%s': %s",
			      branch, clone, g.err);
		goto fail;
	}
	sl_git_out_clear(&g);
	/* origin: the source's own origin, never the source itself */
	if (SL_GIT(&g, src, "git", "config", "--get", "remote.origin.url") ==
		    0 &&
	    *g.out)
		origin = sl_url_strip_userinfo(g.out);
	sl_git_out_clear(&g);
	if (origin)
		SL_GIT(&g, clone, "git", "remote", "set-url", "origin",
		       origin);
	else
		SL_GIT(&g, clone, "git", "remote", "remove", "origin");
	if (g.status) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "cannot set the origin of "
			      "'%s': %s",
			      clone, g.err);
		goto fail;
	}
	sl_git_out_clear(&g);
	if (SL_GIT(&g, clone, "git", "update-ref", "refs/sbxloop/base",
		   commit)) {
		rc = sl_error(err, SBXLOOP_ERR,
			      "cannot pin refs/sbxloop/base in '%s': %s",
			      clone, g.err);
		goto fail;
	}
	sl_git_out_clear(&g);
	ws->path = sl_xstrdup(clone);
	describe_clone(ws, src, clone, branch, commit, dirty, 0);
	free(origin);
	return 0;
fail:
	sl_git_out_clear(&g);
	free(origin);
	sl_artifacts_rmtree_quiet(clone);
	return rc;
}

int sl_workspace_isolate(const char *source, const char *mode,
			 const char *state_dir, const char *run_id,
			 struct sl_workspace *ws, struct sbxloop_error *err)
{
	struct sl_git_out g = {0, 0, NULL, NULL};
	char *state = NULL, *clone = NULL, *src = NULL, *branch = NULL;
	char *dotgit = NULL, *commit = NULL, *pathspec = NULL;
	const char *rel;
	int clone_mode = mode && !strcmp(mode, "clone");
	int in_place = mode && !strcmp(mode, "in-place");
	int dirty, rc = 0;

	memset(ws, 0, sizeof(*ws));
	rc = sl_mkdirs(state_dir, 0700);
	state = rc ? NULL : abs_path(state_dir);
	if (!state) {
		rc = sl_error(err, SBXLOOP_ERR, "cannot use state_dir '%s'",
			      state_dir);
		goto out;
	}
	clone = sl_xasprintf("%s/runs/%s/workspace", state, run_id);
	branch = sl_xasprintf("sbxloop/%s", run_id);
	if (!source || !*source) {
		if (clone_mode) {
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "sandbox.workspace_isolation 'clone' "
				      "requires sandbox.workspace to point "
				      "at a git checkout");
			goto out;
		}
		rc = use_dir(ws, clone, err);
		goto out;
	}
	src = abs_path(source);
	if (!src || !is_dir(src)) {
		rc = sl_error(err, SBXLOOP_EINVAL,
			      "sandbox.workspace '%s' is not a directory",
			      source);
		goto out;
	}
	if (in_place || !strcmp(src, clone)) {
		rc = use_dir(ws, src, err);
		goto out;
	}
	/* one git call tells both: no git (it did not start), no checkout */
	if (SL_GIT(&g, src, "git", "rev-parse", "--show-toplevel")) {
		if (clone_mode && !g.ran)
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "cannot clone '%s': git is not on PATH",
				      src);
		else if (clone_mode)
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "cannot clone "
				      "'%s': not inside a git checkout",
				      src);
		else
			rc = use_dir(ws, src, err);
		goto out;
	}
	{
		char *top = abs_path(g.out);
		int same = top && !strcmp(top, src);

		free(top);
		if (!same) {
			rc = sl_error(err, SBXLOOP_EINVAL,
				      "cannot isolate '%s': it is a subtree "
				      "of the checkout '%s'; point "
				      "sandbox.workspace at the checkout's "
				      "root, or set "
				      "sandbox.workspace_isolation to "
				      "in-place",
				      src, g.out);
			goto out;
		}
	}
	sl_git_out_clear(&g);
	if (SL_GIT(&g, src, "git", "rev-parse", "--verify", "-q",
		   "HEAD^{commit}")) {
		rc = sl_error(err, SBXLOOP_EINVAL,
			      "cannot clone '%s': the "
			      "repository has no commits yet",
			      src);
		goto out;
	}
	commit = sl_xstrdup(g.out);
	sl_git_out_clear(&g);
	rel = inside(src, state);
	pathspec = sl_xasprintf(":(exclude)%s", rel ? rel : ".sbxloop");
	/* --no-optional-locks: status must not refresh the source index */
	if (SL_GIT(&g, src, "git", "--no-optional-locks", "-c",
		   "core.fsmonitor=false", "status", "--porcelain", "--", ".",
		   pathspec, ":(exclude).sbxloop")) {
		rc = sl_error(err, SBXLOOP_ERR, "cannot inspect '%s': %s", src,
			      g.err);
		goto out;
	}
	dirty = *g.out != '\0';
	sl_git_out_clear(&g);
	if (dirty && !clone_mode) {
		rc = sl_error(err, SBXLOOP_EINVAL,
			      "workspace '%s' has uncommitted changes; "
			      "commit or stash them, or set "
			      "sandbox.workspace_isolation to clone (start "
			      "from HEAD without them) or in-place (work "
			      "on the checkout itself)",
			      src);
		goto out;
	}
	if (dirty)
		ws->warning = sl_xasprintf(
			"workspace '%s' has uncommitted changes; the run "
			"starts from HEAD (%.12s) without them",
			src, commit);
	dotgit = sl_xasprintf("%s/.git", clone);
	if (is_dir(dotgit)) {
		/* a resumed or retried run: keep its clone and its work */
		if (SL_GIT(&g, clone, "git", "rev-parse", "--verify", "-q",
			   "refs/sbxloop/base") == 0) {
			free(commit);
			commit = sl_xstrdup(g.out);
		}
		sl_git_out_clear(&g);
		ws->path = sl_xstrdup(clone);
		describe_clone(ws, src, clone, branch, commit, 0, 1);
		goto out;
	}
	rc = make_clone(ws, src, clone, branch, commit, dirty, err);
out:
	if (rc) {
		char *w = ws->warning;

		ws->warning = NULL;
		sl_workspace_release(ws);
		free(w);
	}
	sl_git_out_clear(&g);
	free(state);
	free(clone);
	free(src);
	free(branch);
	free(dotgit);
	free(commit);
	free(pathspec);
	return rc;
}

int sl_workspace_resolve(const struct sl_config *cfg, const char *state_dir,
			 const char *run_id, struct sl_workspace *ws,
			 struct sbxloop_error *err)
{
	const char *mode = sl_config_str(cfg, "sandbox.workspace_isolation");

	return sl_workspace_isolate(sl_config_str(cfg, "sandbox.workspace"),
				    mode ? mode : "auto", state_dir, run_id,
				    ws, err);
}

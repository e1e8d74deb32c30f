/*
 * Where parallel lanes keep their git and files (lanes_fs.h): the host
 * for a mounted workspace whose git the sandbox cannot write, the run's
 * agent sandbox for a harvested run or one that can.
 * In the sandbox each operation is one shell.batch job of argv commands
 * (no shell parses a path or a text), run like any other job of the run.
 * Also which git the lanes use: the workspace's own, or a shadow
 * repository under .sbxloop/ (sl_lanes_mode, sl_lanes_shadow_open), and
 * the names of a lane's branch, worktree and records, and their tidy.
 */
#include "config.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "engine/artifacts.h"
#include "engine/lanes_fs.h"
#include "engine/lanes_git2.h"
#include "host/redact.h"
#include "phases/worker_client.h"

#define JOB_TIMEOUT_S 300

int sl_lanes_harvested(const struct sl_engine *e)
{
	return !e->info.mounted;
}

int sl_lanes_in_box(const struct sl_engine *e)
{
	uint32_t caps = e->info.capabilities;

	return !e->info.mounted || ((caps & SBXLOOP_CAP_FILESYSTEM_CONFINED) &&
				    !(caps & SBXLOOP_CAP_GIT_READ_ONLY));
}

const char *sl_lanes_root(const struct sl_engine *e)
{
	return sl_lanes_in_box(e) ? e->info.workdir : e->workspace;
}

/*
 * One job of argv commands in the agent sandbox, in `cwd` (NULL: the
 * workdir): its results, one {exit_code, output} per command in order
 * (borrowed from *res, which the caller deletes), or NULL when the job
 * did not run (*why, when non-NULL, says why; caller frees).
 */
static const cJSON *box_batch(const struct sl_engine *e, const char *cwd,
			      const char *const *const *cmds, cJSON **res,
			      char **why)
{
	struct sl_job_tags tags = {"agent", "lanes", NULL, 0};
	struct sbxloop_sandbox_info at = e->info;
	struct sbxloop_error err = {0, ""};
	cJSON *job = cJSON_CreateObject(), *list;
	const cJSON *results = NULL;
	size_t i, k;

	*res = NULL;
	cJSON_AddStringToObject(job, "kind", "shell.batch");
	cJSON_AddNumberToObject(job, "timeout_s", JOB_TIMEOUT_S);
	/* the worker runs in the info's workdir (--cwd wins over a job's) */
	if (cwd && strlen(cwd) < sizeof(at.workdir))
		snprintf(at.workdir, sizeof(at.workdir), "%s", cwd);
	list = cJSON_AddArrayToObject(job, "commands");
	for (i = 0; cmds[i]; i++) {
		cJSON *argv = cJSON_CreateArray();

		for (k = 0; cmds[i][k]; k++)
			cJSON_AddItemToArray(argv,
					     cJSON_CreateString(cmds[i][k]));
		cJSON_AddItemToArray(list, argv);
	}
	if (sl_worker_submit(e->core, &at, job, &tags, res, &err) == 0)
		results =
			cJSON_GetObjectItemCaseSensitive(*res, "output_json");
	else if (why)
		*why = sl_xstrdup(err.message);
	cJSON_Delete(job);
	return results;
}

/* Command i's exit status in box_batch's results, or -1. */
static int box_status(const cJSON *results, int i)
{
	return (int)sl_json_num(cJSON_GetArrayItem(results, i), "exit_code",
				-1);
}

static const char *box_output(const cJSON *results, int i)
{
	return sl_json_str(cJSON_GetArrayItem(results, i), "output", "");
}

/*
 * One job of argv commands in the agent sandbox, in `cwd` (NULL: the
 * workdir). The last command's exit status, or -1 when the job did not
 * run; its output (caller frees) into *out when `out` is non-NULL.
 */
static int box_run(const struct sl_engine *e, const char *cwd,
		   const char *const *const *cmds, char **out)
{
	cJSON *res;
	char *why = NULL;
	const cJSON *results =
		box_batch(e, cwd, cmds, &res, out ? &why : NULL);
	int last = results ? cJSON_GetArraySize(results) - 1 : -1;
	int status = last >= 0 ? box_status(results, last) : -1;

	if (out)
		*out = last >= 0 ? sl_xstrdup(box_output(results, last)) : why;
	else
		free(why);
	cJSON_Delete(res);
	return status;
}

/* One argv command in the sandbox: its exit status, or -1. */
static int box_one(const struct sl_engine *e, const char *const *argv)
{
	const char *const *cmds[] = {argv, NULL};

	return box_run(e, NULL, cmds, NULL);
}

int sl_lanes_git(struct sl_git_out *g, const struct sl_engine *e,
		 const char *cwd, const char *const *argv)
{
	const char *const *cmds[] = {argv, NULL};
	char *text;
	size_t n;

	if (!sl_lanes_in_box(e))
		return sl_git_agents_tree(g, cwd, argv);
	memset(g, 0, sizeof(*g));
	g->status = box_run(e, cwd, cmds, &text);
	g->ran = g->status >= 0;
	if (!text)
		text = sl_xstrdup("");
	n = strlen(text);
	while (n && text[n - 1] == '\n')
		text[--n] = '\0';
	g->out = text;
	g->err = sl_xstrdup(text);
	return g->status == 0 ? 0 : 1;
}

int sl_lanes_isdir(const struct sl_engine *e, const char *path)
{
	struct stat st;

	if (!sl_lanes_in_box(e))
		return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	return box_one(e, (const char *const[]){"test", "-d", path, NULL}) ==
	       0;
}

void sl_lanes_isdirs(const struct sl_engine *e, const char *const *paths,
		     int *is)
{
	const char *cmds[SL_LANES_PATHS_MAX][4];
	const char *const *list[SL_LANES_PATHS_MAX + 1];
	const cJSON *results;
	cJSON *res;
	size_t i, n = 0;

	while (paths[n] && n < SL_LANES_PATHS_MAX)
		n++;
	if (!sl_lanes_in_box(e)) {
		for (i = 0; i < n; i++)
			is[i] = sl_lanes_isdir(e, paths[i]);
		return;
	}
	for (i = 0; i < n; i++) {
		cmds[i][0] = "test";
		cmds[i][1] = "-d";
		cmds[i][2] = paths[i];
		cmds[i][3] = NULL;
		list[i] = cmds[i];
	}
	list[n] = NULL;
	results = box_batch(e, NULL, list, &res, NULL);
	for (i = 0; i < n; i++)
		is[i] = results && box_status(results, (int)i) == 0;
	cJSON_Delete(res);
}

char *sl_lanes_read(const struct sl_engine *e, const char *path, size_t max)
{
	const char *const cat[] = {"cat", "--", path, NULL};
	const char *const *cmds[] = {cat, NULL};
	char *text = NULL;

	if (!sl_lanes_in_box(e)) /* git's files an agent could reach */
		return sl_read_regular_file(path, NULL, max);
	if (box_run(e, NULL, cmds, &text) != 0 || strlen(text) > max) {
		free(text);
		return NULL;
	}
	return text;
}

int sl_lanes_write(const struct sl_engine *e, const char *path,
		   const char *text)
{
	if (!sl_lanes_in_box(e))
		return sl_write_file_replace(path, text, strlen(text), 0644);
	/* the text and the path are arguments, never shell source */
	return box_one(e, (const char *const[]){"sh", "-c",
						"printf '%s' \"$1\" > \"$2\"",
						"sh", text, path, NULL}) == 0
		       ? 0
		       : -1;
}

int sl_lanes_mkdirs(const struct sl_engine *e, const char *path)
{
	if (!sl_lanes_in_box(e))
		return sl_mkdirs(path, 0755);
	return box_one(e, (const char *const[]){"mkdir", "-p", "--", path,
						NULL}) == 0
		       ? 0
		       : -1;
}

void sl_lanes_rmtree(const struct sl_engine *e, const char *path)
{
	if (!sl_lanes_in_box(e))
		sl_artifacts_rmtree_quiet(path);
	else
		box_one(e,
			(const char *const[]){"rm", "-rf", "--", path, NULL});
}

void sl_lanes_rmdirs(const struct sl_engine *e, const char *const *paths)
{
	size_t n = 0;

	while (paths[n] && n < SL_LANES_PATHS_MAX)
		n++;
	if (!sl_lanes_in_box(e)) {
		while (n--)
			rmdir(*paths++);
		return;
	}
	{
		/* `rmdir -- A B`: each in turn, a full one left alone */
		const char *argv[SL_LANES_PATHS_MAX + 3] = {"rmdir", "--"};

		memcpy(argv + 2, paths, n * sizeof(*argv));
		argv[n + 2] = NULL;
		box_one(e, argv);
	}
}

void sl_lanes_clear_locks(const struct sl_engine *e, const char *common)
{
	char *main_lock, *pat;
	glob_t gl;
	size_t i;

	if (sl_lanes_in_box(e)) {
		/* the path is an argument, never shell source */
		box_one(e,
			(const char *const[]){"sh", "-c",
					      "rm -f -- \"$1/index.lock\" "
					      "\"$1\"/worktrees/*/index.lock",
					      "sh", common, NULL});
		return;
	}
	main_lock = sl_xasprintf("%s/index.lock", common);
	pat = sl_xasprintf("%s/worktrees/*/index.lock", common);
	unlink(main_lock);
	if (glob(pat, 0, NULL, &gl) == 0) {
		for (i = 0; i < gl.gl_pathc; i++)
			unlink(gl.gl_pathv[i]);
		globfree(&gl);
	}
	free(main_lock);
	free(pat);
}

/*
 * Does the repository's own config (its file only, includes not
 * followed) name a key git would take a program, or more config, from,
 * under a name sbxloop cannot make inert on the command line (sl_git
 * does the fixed ones)? Drivers are chosen by the repository's
 * attributes, which the agents write. `git config --list` prints
 * section and key names folded to lower case.
 */
static int driver_key(const char *key)
{
	static const char *const sections[] = {"filter.", "merge.", "diff."};
	static const char *const tails[] = {".clean",    ".smudge",
					    ".process",  ".driver",
					    ".textconv", ".command"};
	size_t i, k, n = strlen(key);

	if (!strncmp(key, "include.", 8) || !strncmp(key, "includeif.", 10) ||
	    !strcmp(key, "core.worktree") ||
	    !strcmp(key, "extensions.worktreeconfig"))
		return 1;
	for (i = 0; i < SL_ARRAY_SIZE(sections); i++) {
		if (strncmp(key, sections[i], strlen(sections[i])))
			continue;
		for (k = 0; k < SL_ARRAY_SIZE(tails); k++) {
			size_t t = strlen(tails[k]);

			if (n > t && !strcmp(key + n - t, tails[k]))
				return 1;
		}
	}
	return 0;
}

/*
 * A key of the repository's own config that git knows and libgit2 1.5
 * does not, which sends the lanes to the git command: an extension (a
 * partial clone's, say; libgit2's refusal to open leaks, so it is never
 * asked), a split index (libgit2 cannot read one) or a sparse checkout
 * (libgit2 would fill what it leaves out).
 */
static int git_command_key(const char *key)
{
	return (sl_starts_with(key, "extensions.") &&
		strcmp(key, "extensions.noop") != 0) ||
	       !strcmp(key, "core.splitindex") ||
	       !strcmp(key, "core.sparsecheckout") ||
	       !strcmp(key, "index.sparse");
}

/*
 * A filter in the user's own git config (global or system: git-lfs's,
 * say) is obeyed by git, while libgit2 runs none: the lanes' worktrees
 * would hold LFS pointers and their commits the files themselves. The
 * git command does the lanes' git then (said once a run).
 */
static int user_filter(struct sl_engine *e, const char *key)
{
	char *shown;

	if (!sl_starts_with(key, "filter.") ||
	    !(sl_ends_with(key, ".clean") || sl_ends_with(key, ".smudge") ||
	      sl_ends_with(key, ".process")))
		return 0;
	if (!e->lanes_user_filter) {
		shown = sl_shown(key, 0);
		sl_log(SBXLOOP_LOG_INFO,
		       "lanes: your git config sets '%s', a filter libgit2 "
		       "would not run: the lanes commit and merge with the "
		       "git command, not in process",
		       shown);
		free(shown);
	}
	e->lanes_user_filter = 1;
	return 1;
}

/*
 * The user's config includes more: read it again, includes followed, for
 * a filter there (once a run).
 */
static void included_filters(struct sl_engine *e, const char *common)
{
	struct sl_git_out g;
	char *line, *save = NULL;

	if (e->lanes_user_included)
		return;
	e->lanes_user_included = 1;
	if (sl_git(&g, common,
		   (const char *const[]){"git", "config", "--list",
					 "--includes", "--name-only",
					 "--show-scope", NULL}) == 0)
		for (line = strtok_r(g.out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *key = strchr(line, '\t');

			if (key && (sl_starts_with(line, "global\t") ||
				    sl_starts_with(line, "system\t")))
				user_filter(e, key + 1);
		}
	sl_git_out_clear(&g);
}

/*
 * Every scope's keys in one `git config --list --no-includes
 * --show-scope`: the repository's own ("local": its file only, includes
 * not followed, an agent may have written it) and the user's (global,
 * system; read again with their includes when they have any).
 */
int sl_lanes_config_check(struct sl_engine *e, const char *common,
			  struct sbxloop_error *err)
{
	struct sl_git_out g;
	char *file, *line, *save = NULL;
	unsigned long stamp;
	int rc = 0, includes = 0;

	if (sl_lanes_in_box(e))
		return 0; /* git runs in the sandbox: a driver runs confined */
	/* read a moment ago (where the lanes go, then as they start), and
	 * no job, so no agent, ran since */
	if (sl_worker_jobs_quiet(&stamp) && e->lanes_checked &&
	    !strcmp(e->lanes_checked, common) &&
	    e->lanes_checked_stamp == stamp)
		return 0;
	free(e->lanes_checked);
	e->lanes_checked = NULL;
	file = sl_xasprintf("%s/config", common);
	if (sl_git(&g, common,
		   (const char *const[]){"git", "config", "--list",
					 "--no-includes", "--name-only",
					 "--show-scope", NULL})) {
		rc = sl_error(err, SBXLOOP_EINFRA, "cannot read '%s': %s",
			      file, g.err);
		goto out;
	}
	e->lanes_g2 = 1;
	for (line = strtok_r(g.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *key = strchr(line, '\t');

		if (!key)
			continue;
		*key++ = '\0';
		if (!strcmp(line, "global") || !strcmp(line, "system")) {
			user_filter(e, key);
			includes |= sl_starts_with(key, "include.") ||
				    sl_starts_with(key, "includeif.");
			continue;
		}
		if (strcmp(line, "local") != 0 &&
		    strcmp(line, "worktree") != 0)
			continue; /* "command": sl_git's own -c */
		if (git_command_key(key) && e->lanes_g2) {
			char *shown = sl_shown(key, 0);

			e->lanes_g2 = 0;
			sl_log(SBXLOOP_LOG_INFO,
			       "lanes: the workspace's git sets '%s': the "
			       "lanes commit and merge with the git command, "
			       "not in process",
			       shown);
			free(shown);
		}
		if (driver_key(key)) {
			char *shown = sl_shown(key, 0);

			rc = sl_error(
				err, SBXLOOP_ESTATE,
				"the workspace's git config '%s' sets "
				"'%s', which would make sbxloop's own "
				"git run a program (or read more config) "
				"on the host while it commits and "
				"merges the lanes: remove it (an agent "
				"may have written it), or run one task "
				"at a time",
				file, shown);
			free(shown);
			break;
		}
	}
	if (rc == 0 && includes)
		included_filters(e, common);
	if (e->lanes_user_filter)
		e->lanes_g2 = 0;
	if (rc == 0 && sl_worker_jobs_quiet(&e->lanes_checked_stamp) &&
	    e->lanes_checked_stamp == stamp)
		e->lanes_checked = sl_xstrdup(common);
out:
	sl_git_out_clear(&g);
	free(file);
	return rc;
}

/* ---- git on the workspace, and its shadow repository ------------------ */

/*
 * git on the run's workspace: `argv` is "git", then its arguments. With
 * a shadow repository (e->lanes_git) the workspace is its work tree,
 * named on every call, so the user's own .git (if any) is never touched.
 */
int sl_lanes_git_in(struct sl_git_out *g, const struct sl_engine *e,
		    const char *git_dir, const char *work_tree,
		    const char *const *argv)
{
	const char **full;
	char *dir_opt = NULL, *tree_opt = NULL;
	size_t n = 0, k = 0;
	int rc;

	while (argv[n])
		n++;
	full = sl_xcalloc(n + 3, sizeof(*full));
	full[k++] = argv[0];
	if (git_dir) {
		dir_opt = sl_xasprintf("--git-dir=%s", git_dir);
		tree_opt = sl_xasprintf("--work-tree=%s", work_tree);
		full[k++] = dir_opt;
		full[k++] = tree_opt;
	}
	memcpy(full + k, argv + 1, n * sizeof(*full)); /* with the NULL */
	rc = sl_lanes_git(g, e, work_tree, full);
	free(full);
	free(dir_opt);
	free(tree_opt);
	return rc;
}

int sl_lanes_ws_git(struct sl_git_out *g, const struct sl_engine *e,
		    const char *const *argv)
{
	return sl_lanes_git_in(g, e, e->lanes_git, sl_lanes_root(e), argv);
}

void sl_lanes_ws_gits(const struct sl_engine *e,
		      const char *const *const *argvs)
{
	const char **full[SL_LANES_PATHS_MAX + 1];
	char *dir_opt = NULL, *tree_opt = NULL;
	size_t i, n, k;

	if (!sl_lanes_in_box(e)) {
		for (i = 0; argvs[i]; i++) {
			struct sl_git_out g;

			sl_lanes_ws_git(&g, e, argvs[i]);
			sl_git_out_clear(&g);
		}
		return;
	}
	if (e->lanes_git) {
		dir_opt = sl_xasprintf("--git-dir=%s", e->lanes_git);
		tree_opt = sl_xasprintf("--work-tree=%s", sl_lanes_root(e));
	}
	for (i = 0; argvs[i] && i < SL_LANES_PATHS_MAX; i++) {
		for (n = 0; argvs[i][n]; n++)
			;
		full[i] = sl_xcalloc(n + 3, sizeof(**full));
		k = 0;
		full[i][k++] = argvs[i][0];
		if (dir_opt) {
			full[i][k++] = dir_opt;
			full[i][k++] = tree_opt;
		}
		memcpy(full[i] + k, argvs[i] + 1, n * sizeof(**full));
	}
	full[i] = NULL;
	{
		cJSON *res;

		box_batch(e, sl_lanes_root(e),
			  (const char *const *const *)full, &res, NULL);
		cJSON_Delete(res);
	}
	while (i--)
		free(full[i]);
	free(dir_opt);
	free(tree_opt);
}

/*
 * sl_lanes_mode's answer from the sandbox's job: results 1, the
 * workspace's place (rev-parse), and 2, its status.
 */
static int box_in_place(const cJSON *results, char **why)
{
	const char *out = box_output(results, 1), *prefix;
	const char *status = box_output(results, 2);

	if (box_status(results, 1) != 0) {
		*why = sl_xstrdup("the workspace is not a git checkout");
		return 1;
	}
	prefix = strchr(out, '\n');
	if (prefix && prefix[1] != '\n' && strchr(prefix + 1, '\n')) {
		*why = sl_xasprintf("the workspace is inside the git checkout "
				    "%.*s, not its top",
				    (int)(prefix - out), out);
		return 1;
	}
	if (box_status(results, 2) != 0 || status[strspn(status, "\n")]) {
		*why = sl_xstrdup("the workspace has uncommitted changes");
		return 2;
	}
	return 0;
}

/*
 * How may lanes run here? 0: on the workspace's own git (a clean
 * checkout, its top level); 1: with a shadow repository (its own git
 * dir under .sbxloop/, the workspace its work tree) because the
 * workspace is no clean git top, *why says which (2: a git top with
 * uncommitted changes, 1: anything else); -1: not at all, *why
 * says why (the sandbox does not mount the workspace and has no git);
 * -2: the workspace's git config is refused (err). Caller frees *why.
 */
int sl_lanes_mode(struct sl_engine *e, char **why, struct sbxloop_error *err)
{
	const char *root = sl_lanes_root(e);
	struct sl_git_out g;
	char *prefix, *common, *msg = NULL;
	int shadow = 0, rc;

	*why = NULL;
	if (sl_lanes_in_box(e)) {
		/* the lanes' git must run in the sandbox: is there one? And
		 * where it is and whether it is clean, in the same job */
		const char *const version[] = {"git", "--version", NULL};
		const char *const where[] = {"git",
					     "rev-parse",
					     "--show-toplevel",
					     "--show-prefix",
					     "--path-format=absolute",
					     "--git-common-dir",
					     NULL};
		const char *const clean[] = {
			"git",         "status",
			"--porcelain", "--untracked-files=all",
			"--",          ".",
			":!.sbxloop",  NULL};
		const char *const *cmds[] = {version, where, clean, NULL};
		const cJSON *results;
		cJSON *res;
		int r;

		if (sl_lanes_harvested(e))
			cmds[1] = NULL;
		results = box_batch(e, root, cmds, &res, NULL);
		if (!results || box_status(results, 0) != 0) {
			*why = sl_xasprintf(
				"the sandbox %s and has no git to run the lanes "
				"in it (%s)",
				sl_lanes_harvested(e)
					? "does not mount the workspace"
					: "can write the workspace's .git, so "
					  "the lanes' git runs inside it,",
				results ? box_output(results, 0)
					: "the job did not run");
			cJSON_Delete(res);
			return -1;
		}
		if (sl_lanes_harvested(e)) {
			/* git in the sandbox, on a shadow repository of the
			 * sandbox's copy (whatever .git it holds stays) */
			*why = sl_xstrdup(
				"the sandbox does not mount the workspace");
			cJSON_Delete(res);
			return 1;
		}
		r = box_in_place(results, why);
		cJSON_Delete(res);
		return r;
	}
	/* the top level, the workspace's place under it, git's common dir,
	 * and where the worktrees' records go (sl_lanes_paths) */
	if (sl_lanes_git(&g, e, root,
			 (const char *const[]){
				 "git", "rev-parse", "--show-toplevel",
				 "--show-prefix", "--path-format=absolute",
				 "--git-common-dir", "--git-path", "HEAD",
				 "--git-path", "info/exclude", NULL})) {
		sl_git_out_clear(&g);
		*why = sl_xstrdup("the workspace is not a git checkout");
		return 1;
	}
	/* "TOP\nPREFIX\nCOMMON\nHEAD\nEXCLUDE", PREFIX empty at the top */
	prefix = strchr(g.out, '\n');
	common = prefix ? strchr(prefix + 1, '\n') : NULL;
	if (!common || !strchr(common + 1, '\n')) {
		sl_git_out_clear(&g);
		*why = sl_xstrdup(
			"git rev-parse said nothing of the workspace");
		return 1;
	}
	if (prefix[1] == '\n') {
		/* before `status`, which may run a clean filter */
		char *end = strchr(common + 1, '\n');

		*end = '\0';
		rc = sl_lanes_config_check(e, common + 1, err);
		*end = '\n';
		if (rc < 0) {
			sl_git_out_clear(&g);
			return -2;
		}
		free(e->lanes_paths);
		e->lanes_paths = sl_xstrdup(common + 1);
	} else {
		*prefix = '\0';
		*why = sl_xasprintf("the workspace is inside the git checkout "
				    "%s, not its top",
				    g.out);
		shadow = 1;
	}
	sl_git_out_clear(&g);
	if (shadow)
		return 1;
	/* clean? In process where the config lets libgit2 see what git
	 * sees (no filter, no sparse checkout: sl_lanes_config_check) */
	rc = e->lanes_g2 && sl_g2_available() ? sl_g2_clean(root, &msg)
					      : SL_G2_FALLBACK;
	free(msg);
	if (rc < 0) {
		rc = sl_lanes_git(&g, e, root,
				  (const char *const[]){
					  "git", "status", "--porcelain",
					  "--untracked-files=all", "--", ".",
					  ":!.sbxloop", NULL}) ||
		     *g.out;
		sl_git_out_clear(&g);
	}
	if (rc) {
		*why = sl_xstrdup("the workspace has uncommitted changes");
		shadow = 2;
	}
	return shadow;
}

/*
 * .sbxloop/ out of git's sight in the workspace: a line in `known`, its
 * info/exclude file (absolute), or the one git names when NULL.
 */
void sl_lanes_exclude(struct sl_engine *e, const char *known)
{
	struct sl_git_out g;
	char *path, *text;

	if (known) {
		path = sl_xstrdup(known);
	} else if (WS_GIT(&g, e, "rev-parse", "--path-format=absolute",
			  "--git-path", "info/exclude") == 0) {
		path = sl_xstrdup(g.out);
		sl_git_out_clear(&g);
	} else {
		sl_git_out_clear(&g);
		return;
	}
	if (sl_lanes_in_box(e)) {
		/* one job: the line added unless it is there (the path an
		 * argument, never shell source) */
		box_one(e,
			(const char *const[]){
				"sh", "-c",
				"f=$1; grep -qx '/.sbxloop/' \"$f\" "
				"2>/dev/null && exit 0; mkdir -p \"${f%/*}\" "
				"&& { [ ! -s \"$f\" ] || "
				"[ -z \"$(tail -c 1 \"$f\")\" ] || echo; "
				"echo /.sbxloop/; } >> \"$f\"",
				"sh", path, NULL});
		free(path);
		return;
	}
	text = sl_lanes_read(e, path, 1 << 20);
	if (!text || !strstr(text, "\n/.sbxloop/\n")) {
		char *dir = sl_xstrdup(path), *slash = strrchr(dir, '/');
		char *all = sl_xasprintf("%s\n/.sbxloop/\n", text ? text : "");

		if (slash) {
			*slash = '\0';
			sl_lanes_mkdirs(e, dir);
		}
		free(dir);
		sl_lanes_write(e, path, all);
		free(all);
	}
	free(text);
	free(path);
}

/*
 * The shadow repository of a workspace that is no clean git top:
 * .sbxloop/git, its work tree the workspace, a first commit of the
 * workspace's files as they stand (.sbxloop/ excluded, any .git of the
 * user's left alone). The lanes' worktrees are its worktrees, and
 * merges write into the workspace through it, under the same rules as
 * on the workspace's own git. Kept as it is when it has a commit (a
 * resume); a half-made one (a kill) is made again.
 */
int sl_lanes_shadow_open(struct sl_engine *e, struct sbxloop_error *err)
{
	struct sl_git_out g;
	char *parent = sl_xasprintf("%s/.sbxloop", sl_lanes_root(e)), *dir_opt;
	int rc = 0;

	if (!e->lanes_git)
		e->lanes_git =
			sl_xasprintf("%s/" SHADOW_DIR, sl_lanes_root(e));
	if (WS_GIT(&g, e, "rev-parse", "-q", "--verify", "HEAD") == 0) {
		sl_git_out_clear(&g);
		free(parent);
		return 0;
	}
	sl_git_out_clear(&g);
	sl_lanes_rmtree(e, e->lanes_git);
	sl_lanes_mkdirs(e, parent);
	free(parent);
	dir_opt = sl_xasprintf("--git-dir=%s", e->lanes_git);
	/* no --work-tree: git would record it as core.worktree, which
	 * the lanes' own worktrees would then take for theirs */
	if (sl_lanes_git(&g, e, sl_lanes_root(e),
			 (const char *const[]){"git", dir_opt, "init", "-q",
					       NULL})) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot make the lanes' repository %s: %s",
			      e->lanes_git, g.err);
		sl_git_out_clear(&g);
		free(dir_opt);
		return rc;
	}
	sl_git_out_clear(&g);
	free(dir_opt);
	sl_lanes_exclude(e, NULL);
	if (WS_GIT(&g, e, "add", "-A") == 0) {
		sl_git_out_clear(&g);
		WS_GIT(&g, e, GIT_ID, "commit", "-q", "--allow-empty", "-m",
		       "sbxloop: the workspace before lanes");
	}
	if (g.status != 0)
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot record the workspace in the lanes' "
			      "repository: %s",
			      g.err);
	sl_git_out_clear(&g);
	return rc;
}

/*
 * The shadow repository and the lanes' worktrees in it go (the lanes
 * ended, or do not run this time); the workspace keeps its files.
 */
void sl_lanes_shadow_drop(struct sl_engine *e)
{
	char *lanes, *top;

	if (!e->lanes_git)
		return;
	lanes = sl_xasprintf("%s/" LANES_DIR, sl_lanes_root(e));
	top = sl_xasprintf("%s/.sbxloop", sl_lanes_root(e));
	if (sl_lanes_in_box(e)) {
		/* one job: both trees, then .sbxloop when empty */
		const char *const rm[] = {"rm",  "-rf",        "--",
					  lanes, e->lanes_git, NULL};
		const char *const rd[] = {"rmdir", "--", top, NULL};
		const char *const *cmds[] = {rm, rd, NULL};
		cJSON *res;

		box_batch(e, NULL, cmds, &res, NULL);
		cJSON_Delete(res);
	} else {
		sl_lanes_rmtree(e, lanes);
		sl_lanes_rmtree(e, e->lanes_git);
		rmdir(top); /* only when empty */
	}
	free(e->lanes_git);
	e->lanes_git = NULL;
	free(lanes);
	free(top);
}

/* ---- the lanes' names, and their tidy ---------------------------------- */

/*
 * The lane's branch: under sbxloop/lanes/, since the run's own branch
 * sbxloop/<run> cannot also be a directory of refs.
 */
char *sl_lanes_branch(const struct sl_engine *e, const struct task *t)
{
	return sl_xasprintf("sbxloop/lanes/%s/%s", e->run_id, t->id);
}

char *sl_lanes_dir(const struct sl_engine *e, const struct task *t)
{
	return sl_xasprintf("%s/" LANES_DIR "/%s", sl_lanes_root(e), t->id);
}

/* Task t's worktree records under git's common dir (caller frees). */
char *sl_lanes_records(const struct sl_engine *e, const struct task *t)
{
	return sl_xasprintf("%s/worktrees/%s-%s", e->lanes_common, e->run_id,
			    t->id);
}

/*
 * The lanes' git in process (lanes_git2.c) where it runs on the host
 * and libgit2 can open the repository (loaded here, the first time);
 * else the git command.
 */
int sl_lanes_in_process(const struct sl_engine *e)
{
	return !sl_lanes_in_box(e) && e->lanes_g2 && e->lanes_common &&
	       sl_g2_available();
}

/*
 * In process, for task `only` (NULL: every task) whose worktree is gone
 * and whose records are not yet: its branch, then those records, as `git
 * branch -D` and `git worktree prune` remove them (a worktree kept for a
 * resume keeps both). 0, or -1: the git command does it.
 */
int sl_lanes_forget(struct sl_engine *e, const struct task *only)
{
	struct sl_buf names = SL_BUF_INIT;
	char *msg = NULL, **records = sl_xcalloc(e->n_tasks, sizeof(*records));
	size_t i;
	int rc = 0;

	for (i = 0; i < e->n_tasks; i++) {
		const struct task *t = &e->tasks[i];
		char *dir, *branch;

		if (only && t != only)
			continue;
		dir = sl_lanes_dir(e, t);
		records[i] = sl_lanes_records(e, t);
		if (!sl_lanes_isdir(e, dir) && sl_lanes_isdir(e, records[i])) {
			branch = sl_lanes_branch(e, t);
			sl_buf_addf(&names, "%s\n", branch);
			free(branch);
		} else {
			free(records[i]);
			records[i] = NULL;
		}
		free(dir);
	}
	if (names.len)
		rc = sl_g2_delete_branches(e->lanes_common, sl_lanes_root(e),
					   names.buf, &msg);
	if (rc < 0)
		sl_log(SBXLOOP_LOG_INFO, "lanes: %s; git deletes them", msg);
	for (i = 0; i < e->n_tasks; i++) {
		if (records[i] && rc == 0)
			sl_lanes_rmtree(e, records[i]);
		free(records[i]);
	}
	free(records);
	free(msg);
	sl_buf_release(&names);
	return rc;
}

void sl_lanes_tidy(struct sl_engine *e)
{
	const char *const prune[] = {"git", "worktree", "prune", NULL};
	const char **branches;
	char **names;
	size_t i, n = 0;

	if (sl_lanes_in_process(e) && sl_lanes_forget(e, NULL) == 0) {
		/* and the records' directory, when empty, as git does */
		char *all = sl_xasprintf("%s/worktrees", e->lanes_common);

		sl_lanes_rmdirs(e, (const char *const[]){all, NULL});
		free(all);
		return;
	}
	/* every task's branch by name, no listing first: git deletes the
	 * ones there are and says so of the others */
	branches = sl_xcalloc(e->n_tasks + 5, sizeof(*branches));
	names = sl_xcalloc(e->n_tasks + 1, sizeof(*names));
	branches[n++] = "git";
	branches[n++] = "branch";
	branches[n++] = "-q";
	branches[n++] = "-D";
	for (i = 0; i < e->n_tasks; i++)
		branches[n++] = names[i] = sl_lanes_branch(e, &e->tasks[i]);
	branches[n] = NULL;
	sl_lanes_ws_gits(e,
			 (const char *const *const[]){prune, branches, NULL});
	for (i = 0; i < e->n_tasks; i++)
		free(names[i]);
	free(names);
	free(branches);
}

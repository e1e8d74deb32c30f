/*
 * Where parallel lanes keep their git and files (lanes_fs.h): the host
 * for a mounted workspace, the run's agent sandbox for a harvested run.
 * In the sandbox each operation is one shell.batch job of argv commands
 * (no shell parses a path or a text), run like any other job of the run.
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
#include "phases/worker_client.h"

#define JOB_TIMEOUT_S 300

int sl_lanes_in_box(const struct sl_engine *e)
{
	return !e->info.mounted;
}

const char *sl_lanes_root(const struct sl_engine *e)
{
	return sl_lanes_in_box(e) ? e->info.workdir : e->workspace;
}

/*
 * One job of argv commands in the agent sandbox, in `cwd` (NULL: the
 * workdir). The last command's exit status, or -1 when the job did not
 * run; its output (caller frees) into *out when `out` is non-NULL.
 */
static int box_run(const struct sl_engine *e, const char *cwd,
		   const char *const *const *cmds, char **out)
{
	struct sl_job_tags tags = {"agent", "lanes", NULL, 0};
	struct sbxloop_sandbox_info at = e->info;
	struct sbxloop_error err = {0, ""};
	cJSON *job = cJSON_CreateObject(), *list, *res = NULL;
	const cJSON *results, *last;
	size_t i, k;
	int status = -1;

	if (out)
		*out = NULL;
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
	if (sl_worker_submit(e->core, &at, job, &tags, &res, &err) == 0) {
		results = cJSON_GetObjectItemCaseSensitive(res, "output_json");
		last = cJSON_GetArrayItem(results,
					  cJSON_GetArraySize(results) - 1);
		if (last) {
			status = (int)sl_json_num(last, "exit_code", -1);
			if (out)
				*out = sl_xstrdup(
					sl_json_str(last, "output", ""));
		}
	} else if (out) {
		*out = sl_xstrdup(err.message);
	}
	cJSON_Delete(job);
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
		return sl_git(g, cwd, argv);
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

char *sl_lanes_read(const struct sl_engine *e, const char *path, size_t max)
{
	const char *const cat[] = {"cat", "--", path, NULL};
	const char *const *cmds[] = {cat, NULL};
	char *text = NULL;

	if (!sl_lanes_in_box(e))
		return sl_read_file(path, NULL, max);
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
		return sl_write_file_atomic(path, text, strlen(text), 0644);
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

void sl_lanes_rmdir(const struct sl_engine *e, const char *path)
{
	if (!sl_lanes_in_box(e))
		rmdir(path);
	else
		box_one(e, (const char *const[]){"rmdir", "--", path, NULL});
}

void sl_lanes_clear_locks(const char *common)
{
	char *main_lock = sl_xasprintf("%s/index.lock", common);
	char *pat = sl_xasprintf("%s/worktrees/*/index.lock", common);
	glob_t gl;
	size_t i;

	unlink(main_lock);
	if (glob(pat, 0, NULL, &gl) == 0) {
		for (i = 0; i < gl.gl_pathc; i++)
			unlink(gl.gl_pathv[i]);
		globfree(&gl);
	}
	free(main_lock);
	free(pat);
}

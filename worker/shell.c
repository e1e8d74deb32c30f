/*
 * shell.c - the shell.check and shell.batch job kinds.
 *
 * shell.check runs one argv without a shell; a nonzero exit is still an
 * ok result. shell.batch runs each command with `sh -c` in order, each
 * bounded by the per-command timeout and what is left of the job's. Both
 * inherit the worker's own environment (verify commands need the
 * sandbox's toolchain variables) and run through wk_proc_run.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

static void spawn_failed(struct wk_result *res, const char *what, int e)
{
	wk_result_set_error(res, WK_ERROR, "SpawnError", NULL,
			    "cannot run '%s': %s", what, strerror(e));
}

void wk_shell_check(struct wk_ctx *ctx, const struct wk_job *job,
		    struct wk_result *res)
{
	struct wk_buf out, err;
	struct wk_proc p = {0};
	size_t n = (size_t)cJSON_GetArraySize(job->argv), i = 0;
	char **argv = calloc(n + 1, sizeof(*argv));
	cJSON *c;

	if (!argv)
		abort();
	cJSON_ArrayForEach (c, job->argv)
		argv[i++] = c->valuestring;
	wk_buf_init(&out, 0, WK_SHELL_TAIL);
	wk_buf_init(&err, 0, WK_SHELL_TAIL);
	p.argv = argv;
	p.cwd = ctx->cwd;
	p.timeout_s = job->timeout_s;
	p.out = &out;
	p.err = &err;
	if (wk_proc_run(ctx, &p) < 0) {
		spawn_failed(res, argv[0], p.spawn_errno);
		goto out;
	}
	{
		char *o = wk_buf_render(&out), *e = wk_buf_render(&err);
		char *all = wk_printf("%s%s%s", o, *e ? "\n" : "", e);

		res->output_text = wk_strdup(
			wk_utf8_tail(all, strlen(all), WK_SHELL_TAIL));
		free(o);
		free(e);
		free(all);
	}
	if (p.timed_out) {
		wk_result_set_error(res, WK_TIMEOUT, "Timeout", NULL,
				    "job timed out");
		goto out;
	}
	res->status = WK_OK;
	res->has_exit_code = 1;
	res->exit_code = p.exit_code;
out:
	wk_buf_free(&out);
	wk_buf_free(&err);
	free(argv);
}

void wk_shell_batch(struct wk_ctx *ctx, const struct wk_job *job,
		    struct wk_result *res)
{
	double deadline = wk_now() + job->timeout_s;
	cJSON *list = cJSON_CreateArray(), *c;
	int first_fail = 0, timed_out = 0;

	cJSON_ArrayForEach (c, job->commands) {
		char *argv[] = {"sh", "-c", c->valuestring, NULL};
		struct wk_proc p = {0};
		struct wk_buf out;
		double left = deadline - wk_now();
		cJSON *entry;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		wk_buf_init(&out, WK_BATCH_HEAD, WK_BATCH_TAIL);
		p.argv = argv;
		p.cwd = ctx->cwd;
		p.timeout_s = job->command_timeout_s < left
				      ? job->command_timeout_s
				      : left;
		p.merge_stderr = 1;
		p.out = &out;
		if (wk_proc_run(ctx, &p) < 0) {
			wk_buf_free(&out);
			spawn_failed(res, "sh", p.spawn_errno);
			cJSON_Delete(list);
			return;
		}
		entry = cJSON_CreateObject();
		cJSON_AddStringToObject(entry, "command", c->valuestring);
		if (p.timed_out)
			cJSON_AddNullToObject(entry, "exit_code");
		else
			cJSON_AddNumberToObject(entry, "exit_code",
						p.exit_code);
		{
			char *text = wk_buf_render(&out);

			cJSON_AddStringToObject(entry, "output", text);
			free(text);
		}
		cJSON_AddItemToArray(list, entry);
		wk_buf_free(&out);
		if (p.timed_out) {
			timed_out = 1;
			break;
		}
		if (p.exit_code && !first_fail)
			first_fail = p.exit_code;
	}
	res->output_json = list;
	res->has_exit_code = 1;
	res->exit_code = first_fail;
	if (timed_out)
		wk_result_set_error(res, WK_TIMEOUT, "Timeout", NULL,
				    "job timed out");
	else
		res->status = WK_OK;
}

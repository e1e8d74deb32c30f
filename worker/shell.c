/*
 * shell.c - the shell.check and shell.batch job kinds.
 *
 * shell.check runs one argv without a shell; a nonzero exit is still an
 * ok result. shell.batch runs each command in order (a string with
 * `sh -c`, a list of strings as an argv without a shell), each
 * bounded by the per-command timeout and what is left of the job's; one
 * stopped for time keeps its real status and the signal. Both
 * inherit the worker's own environment (verify commands need the
 * sandbox's toolchain variables) and run through wk_proc_run.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

/* "SIGTERM" for 15; "SIG<n>" for a signal without a short name here. */
static const char *signal_name(int sig, char buf[16])
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},
		     {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
		     {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
		     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
		     {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
		     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
		     {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},
		     {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (names[i].sig == sig)
			return names[i].name;
	snprintf(buf, 16, "SIG%d", sig);
	return buf;
}

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
	res->has_exit_code = 1;
	res->exit_code = p.exit_code;
	if (p.timed_out) {
		wk_result_set_error(res, WK_TIMEOUT, "Timeout", NULL,
				    "job timed out");
		goto out;
	}
	res->status = WK_OK;
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
	char *detail = NULL;
	int first_fail = 0, timed_out = 0;

	cJSON_ArrayForEach (c, job->commands) {
		char *sh[] = {"sh", "-c", c->valuestring, NULL};
		char **argv = sh, *shown = c->valuestring, *joined = NULL;
		struct wk_proc p = {0};
		struct wk_buf out;
		double left = deadline - wk_now();
		cJSON *entry;

		if (cJSON_IsArray(c)) {
			size_t n = (size_t)cJSON_GetArraySize(c), k = 0;
			cJSON *a;

			argv = calloc(n + 1, sizeof(*argv));
			if (!argv)
				abort();
			cJSON_ArrayForEach (a, c) {
				char *prev = joined;

				argv[k++] = a->valuestring;
				joined = wk_printf("%s%s%s", prev ? prev : "",
						   prev ? " " : "",
						   a->valuestring);
				free(prev);
			}
			shown = joined;
		}
		if (left <= 0) {
			timed_out = 1;
			detail = wk_printf("the job ran out of time before "
					   "command '%s'",
					   shown);
			if (argv != sh)
				free(argv);
			free(joined);
			break;
		}
		wk_buf_init(&out, WK_BATCH_HEAD, WK_BATCH_TAIL);
		p.argv = argv;
		p.cwd = ctx->cwd;
		p.release_root = job->release_fifos ? ctx->cwd : NULL;
		p.timeout_s = job->command_timeout_s < left
				      ? job->command_timeout_s
				      : left;
		p.merge_stderr = 1;
		p.out = &out;
		if (wk_proc_run(ctx, &p) < 0) {
			if (argv == sh) {
				wk_buf_free(&out);
				spawn_failed(res, "sh", p.spawn_errno);
				cJSON_Delete(list);
				return;
			}
			/* a program that is not there: as sh says it, 127 */
			entry = cJSON_CreateObject();
			cJSON_AddStringToObject(entry, "command", shown);
			cJSON_AddNumberToObject(entry, "exit_code", 127);
			{
				char *msg = wk_printf("cannot run '%s': %s",
						      argv[0],
						      strerror(p.spawn_errno));

				cJSON_AddStringToObject(entry, "output", msg);
				free(msg);
			}
			cJSON_AddItemToArray(list, entry);
			wk_buf_free(&out);
			free(argv);
			free(joined);
			if (!first_fail)
				first_fail = 127;
			continue;
		}
		if (argv != sh)
			free(argv);
		entry = cJSON_CreateObject();
		cJSON_AddStringToObject(entry, "command", shown);
		/* a stopped command keeps its real status (128 + signal) */
		cJSON_AddNumberToObject(entry, "exit_code", p.exit_code);
		if (p.term_signal) {
			char num[16];

			cJSON_AddStringToObject(
				entry, "signal",
				signal_name(p.term_signal, num));
		}
		if (p.timed_out) {
			char num[16];

			cJSON_AddTrueToObject(entry, "timed_out");
			detail = wk_printf(
				"command '%s' ran out of time after %gs and "
				"ended with status %d%s%s",
				shown, p.timeout_s, p.exit_code,
				p.term_signal ? " by " : "",
				p.term_signal ? signal_name(p.term_signal, num)
					      : "");
		}
		{
			char *text = wk_buf_render(&out);

			cJSON_AddStringToObject(entry, "output", text);
			free(text);
		}
		cJSON_AddItemToArray(list, entry);
		wk_buf_free(&out);
		free(joined);
		if (p.exit_code && !first_fail)
			first_fail = p.exit_code;
		if (p.timed_out) {
			timed_out = 1;
			break;
		}
	}
	res->output_json = list;
	/*
	 * The first nonzero status, a stopped command's included. A batch
	 * that ran out of time with every status 0 has none to report.
	 */
	res->has_exit_code = !timed_out || first_fail;
	res->exit_code = first_fail;
	if (timed_out)
		wk_result_set_error(res, WK_TIMEOUT, "Timeout", detail,
				    "job timed out");
	else
		res->status = WK_OK;
	free(detail);
}

/*
 * The sbx provider's `sbxloop doctor` rows and its interactive shell
 * (the doctor and interactive_argv slots of ABI 1.4): everything the
 * core once asked the `sbx` CLI itself. Called only through
 * sbxp_sandbox_ops (provider.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx.h"

/* The Docker Sandboxes release these checks were written against. */
#define SBXP_TESTED_VERSION "0.38"

static void first_line(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	while (s && s[n] && s[n] != '\n' && n + 1 < size) {
		buf[n] = s[n];
		n++;
	}
	buf[n] = '\0';
}

/* Run `sbx ARGS` (with --app-name); 0 when it ran and exited 0. */
static int sbx_ok(struct sbxp *s, const char *const *args,
		  struct sbxloop_proc_result *res)
{
	struct sbxp_call call;
	struct sbxloop_error err = {0, ""};

	memset(&call, 0, sizeof(call));
	call.args = args;
	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);
	return sbxp_run(s, &call, res, &err) == 0 && res->exit_code == 0 ? 0
									 : -1;
}

static void check_policy(struct sbxp *s, const char *host, sbxp_row_fn cb,
			 void *user)
{
	const char *args[] = {"policy", "check", "network", host, NULL};
	struct sbxloop_proc_result res;
	struct sbxp_call call;
	struct sbxloop_error err = {0, ""};
	char label[96], line[160], detail[320];

	snprintf(label, sizeof(label), "policy: %s", host);
	memset(&call, 0, sizeof(call));
	call.args = args;
	memset(&res, 0, sizeof(res));
	res.struct_size = sizeof(res);
	if (sbxp_run(s, &call, &res, &err) == 0) {
		const char *all = res.out ? res.out : "";
		int denied = strstr(all, "deny") || strstr(all, "denied") ||
			     strstr(all, "block") ||
			     (res.err && (strstr(res.err, "deny") ||
					  strstr(res.err, "block")));

		if (res.exit_code == 0 && !denied) {
			cb(user, label, "ok", "allowed");
		} else if (denied) {
			snprintf(detail, sizeof(detail),
				 "blocked; run `sbx policy init balanced` or "
				 "`sbx policy allow network %s`",
				 host);
			cb(user, label, "warn", detail);
		} else {
			first_line(res.err_len ? res.err : res.out, line,
				   sizeof(line));
			snprintf(detail, sizeof(detail),
				 "errored (not a policy answer): %s", line);
			cb(user, label, "warn", detail);
		}
	} else {
		cb(user, label, "warn", "errored (not a policy answer)");
	}
	s->host->proc_result_clear(&res);
}

int sbxp_doctor(struct sbxp *s, const char *const *hosts, sbxp_row_fn cb,
		void *user, struct sbxloop_error *err)
{
	const char *version[] = {"version", NULL};
	const char *ls[] = {"ls", NULL};
	const char *help[] = {"secret", "set-custom", "--help", NULL};
	const char *app = s->app_name && *s->app_name ? s->app_name : NULL;
	struct sbxloop_proc_result res;
	char line[160], detail[256];
	size_t i;

	(void)err;
	if (sbx_ok(s, version, &res)) {
		s->host->proc_result_clear(&res);
		cb(user, "sbx binary", "FAIL",
		   "`sbx version` failed: install Docker Sandboxes and put "
		   "`sbx` on PATH");
		return 0;
	}
	first_line(res.out, line, sizeof(line));
	snprintf(detail, sizeof(detail), "%s%s", line,
		 strstr(line, SBXP_TESTED_VERSION)
			 ? ""
			 : " (tested with " SBXP_TESTED_VERSION ")");
	cb(user, "sbx binary", "ok", detail);
	s->host->proc_result_clear(&res);

	if (sbx_ok(s, ls, &res) == 0) {
		cb(user, "sbx login", "ok", "`sbx ls` works");
		for (i = 0; hosts && hosts[i]; i++)
			check_policy(s, hosts[i], cb, user);
	} else {
		snprintf(detail, sizeof(detail),
			 "`sbx ls` failed: run `sbx%s%s login`",
			 app ? " --app-name " : "", app ? app : "");
		cb(user, "sbx login", "FAIL", detail);
	}
	s->host->proc_result_clear(&res);

	memset(&res, 0, sizeof(res));
	if (sbx_ok(s, help, &res) == 0 && res.out && strstr(res.out, "stdin"))
		cb(user, "secret value on stdin", "ok",
		   "sbx accepts custom secrets on stdin");
	else
		cb(user, "secret value on stdin", "warn",
		   "argv-only: `sbx secret set-custom` takes the model token "
		   "on its command line, visible to local `ps`; sbxloop "
		   "masks it everywhere it writes");
	s->host->proc_result_clear(&res);
	return 0;
}

int sbxp_interactive_argv(struct sbxp *s, const char *name, const char **argv,
			  size_t max, struct sbxloop_error *err)
{
	size_t n = 0;

	if (max < 10)
		return s->host->error_set(s->host, err, SBXLOOP_EINVAL,
					  "sbx: argv too small for a shell");
	argv[n++] = "sbx";
	if (s->app_name && *s->app_name) {
		argv[n++] = "--app-name";
		argv[n++] = s->app_name;
	}
	argv[n++] = "exec";
	argv[n++] = "-it";
	argv[n++] = name;
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = "command -v bash >/dev/null && exec bash -l; exec sh -l";
	argv[n] = NULL;
	return 0;
}

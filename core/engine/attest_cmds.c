/*
 * The security probes' shell scripts (core/engine/attest.c runs them as
 * shell.batch jobs and judges their output): plain text builders, each
 * result freed by the caller.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "engine/attest_cmds.h"

/* 'text' for sh (caller frees). */
char *sl_attest_quote(const char *text)
{
	struct sl_buf b = SL_BUF_INIT;

	sl_buf_addc(&b, '\'');
	for (; *text; text++) {
		if (*text == '\'')
			sl_buf_adds(&b, "'\\''");
		else
			sl_buf_addc(&b, *text);
	}
	sl_buf_addc(&b, '\'');
	return sl_buf_detach(&b);
}

/* The secret probe: where the canaries' public half shows. */
char *sl_attest_canary_script(const char *nonce, const char *workdir)
{
	char *q = sl_attest_quote(workdir);
	char *c = sl_xasprintf(
		"p='sbxattes[t][mg]%s'\n"
		"env | grep -o \"$p\" | sed 's/^/env /'\n"
		"grep -rsoh \"$p\" \"$HOME\" %s 2>/dev/null | "
		"sed 's/^/files /'\n"
		"for f in /proc/[0-9]*/environ; do tr '\\000' '\\n' <\"$f\"; "
		"echo; done 2>/dev/null | grep -o \"$p\" | "
		"sed 's/^/proc-environ /'\n"
		"for f in /proc/[0-9]*/cmdline; do tr '\\000' ' ' <\"$f\"; "
		"echo; done 2>/dev/null | grep -o \"$p\" | "
		"sed 's/^/process-list /'\n"
		"exit 0",
		nonce, q);

	free(q);
	return c;
}

/* Without canaries: is the other role's variable set? */
char *sl_attest_var_script(const char *const *vars)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	for (i = 0; vars[i]; i++)
		sl_buf_addf(&b, "[ -n \"${%s:-}\" ] && echo 'env %s'\n",
			    vars[i], vars[i]);
	sl_buf_adds(&b, "exit 0");
	return sl_buf_detach(&b);
}

/*
 * Try to create each target; the host looks for them afterwards. Each
 * in a subshell: dash leaves the whole script when the redirection of a
 * special builtin (`:`) fails, even under `if`, so one refused target
 * would spare the rest.
 */
char *sl_attest_write_script(char *const *targets, size_t n)
{
	struct sl_buf b = SL_BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++) {
		char *q = sl_attest_quote(targets[i]);

		sl_buf_addf(&b,
			    "if (: > %s) 2>/dev/null; then echo 'wrote %zu'; "
			    "fi\n",
			    q, i);
		free(q);
	}
	sl_buf_adds(&b, "exit 0");
	return sl_buf_detach(&b);
}

char *sl_attest_git_script(const char *workdir, const char *tag)
{
	char *q = sl_attest_quote(workdir);
	char *c =
		sl_xasprintf("cd %s || exit 0\n"
			     "for d in .git .sbxloop/git; do\n"
			     "(: > \"$d/.sbxloop-attest-%s\") 2>/dev/null && "
			     "echo \"wrote $d\"\n"
			     "done\n"
			     "mv .git .sbxloop-attest-%s-0 2>/dev/null\n"
			     "mv .sbxloop .sbxloop-attest-%s-1 2>/dev/null\n"
			     "exit 0",
			     q, tag, tag, tag);

	free(q);
	return c;
}

char *sl_attest_exists_script(const char *path, const char *say)
{
	char *q = sl_attest_quote(path);
	char *c =
		sl_xasprintf("if [ -e %s ]; then echo %s; fi; exit 0", q, say);

	free(q);
	return c;
}

char *sl_attest_connect_script(unsigned port)
{
	return sl_xasprintf(
		"command -v curl >/dev/null 2>&1 || { echo nocurl; exit 0; }\n"
		"curl -s -o /dev/null --noproxy '*' --connect-timeout 2 "
		"--max-time 3 http://127.0.0.1:%u/direct\n"
		"curl -s -o /dev/null --connect-timeout 2 --max-time 3 "
		"http://127.0.0.1:%u/proxied\n"
		"exit 0",
		port, port);
}

const char sl_attest_resources_script[] =
	"m=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || echo none)\n"
	"p=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || echo none)\n"
	"v=$(ulimit -v 2>/dev/null || echo none)\n"
	"echo \"memory.max=$m pids.max=$p ulimit-v=$v\"";

const char sl_attest_egress_script[] =
	"command -v curl >/dev/null 2>&1 || { echo nocurl; exit 0; }\n"
	"for h in " EGRESS_DENIED " " EGRESS_GRANTED "; do\n"
	"c=$(curl -s -o /dev/null -w '%{http_code}' --connect-timeout 3 "
	"--max-time 4 \"http://$h/\")\n"
	"echo \"$h ${c:-000}\"\n"
	"done";

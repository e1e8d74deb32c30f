/*
 * The command handlers of the fake sbx (see sbx.c for the state it
 * keeps under $SBX_FAKE_DIR and the CLI variants it plays): create,
 * exec with its path rewriting (of the argv and of text on its standard
 * input, a worker job), cp, ls, stop, rm, policy, secret and
 * template. Only sbx.c's dispatch calls them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sbx.h"

/* ------------------------------------------------------------ commands */

int cmd_help(void)
{
	puts("Usage: sbx [OPTIONS] COMMAND\n\n"
	     "Commands:\n"
	     "  completion  cp  create  diagnose  exec  kit  login  logout\n"
	     "  ls  policy  ports  reset  rm  run  secret  stop  template\n"
	     "  version");
	return 0;
}

int cmd_create(int argc, char **argv)
{
	const char *name = NULL, *tmpl = "", *pos[2] = {NULL, NULL};
	char *dir, *fs, *p;
	int i, npos = 0;
	cJSON *meta;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--name=", 7))
			name = argv[i] + 7;
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			name = argv[++i];
		else if ((!strcmp(argv[i], "--template") ||
			  !strcmp(argv[i], "-t")) &&
			 i + 1 < argc)
			tmpl = argv[++i];
		else if (!strcmp(argv[i], "-q"))
			;
		else if (npos < 2)
			pos[npos++] = argv[i];
	}
	if (!name || npos < 2) {
		fputs("ERROR: usage: sbx create --name=NAME AGENT PATH\n",
		      stderr);
		return 1;
	}
	meta = box_meta(name);
	if (meta) {
		cJSON_Delete(meta);
		fprintf(stderr, "ERROR: sandbox \"%s\" already exists\n",
			name);
		return 1;
	}
	dir = box_dir(name);
	fs = xprintf("%s/fs", dir);
	p = xprintf("%s/home/agent", fs);
	mkdirs(p);
	free(p);
	p = xprintf("%s/etc", fs);
	mkdirs(p);
	free(p);
	p = xprintf("%s/tmp", fs);
	mkdirs(p);
	free(p);
	if (!getenv("SBX_FAKE_NO_MOUNT")) {
		p = xprintf("%s/workspace", fs);
		if (symlink(pos[1], p) < 0)
			fprintf(stderr, "fake sbx: symlink: %s\n",
				strerror(errno));
		free(p);
	}
	meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "agent", pos[0]);
	cJSON_AddStringToObject(meta, "workspace", pos[1]);
	cJSON_AddStringToObject(meta, "template", tmpl);
	cJSON_AddStringToObject(meta, "status", "running");
	box_meta_save(name, meta);
	cJSON_Delete(meta);
	printf("Created sandbox %s\n", name);
	free(fs);
	free(dir);
	return 0;
}

/*
 * Rewrite every sandbox-canonical path in `arg` into the fs root. A
 * canonical prefix counts only at a path boundary: preceded by the start
 * or a character that cannot be part of a path, followed by the end, a
 * slash or such a character (so /tmp/sbxloop-test-1 stays a host path).
 */
static const char *const canon[] = {"/home/agent", "/tmp/sbxloop",
				    "/etc/sandbox", "/workspace", NULL};

static int path_char(char c)
{
	return c && !strchr(" \t\n'\";:=|&<>(){}$`,", c);
}

static char *rewrite(const char *arg, const char *fs, const cJSON *meta)
{
	/* every hit consumes at least two bytes and adds fs + 16 */
	size_t cap = strlen(arg) * (strlen(fs) + 32) + 64, n = 0, i, k;
	const char *ws = meta_str(meta, "workspace");
	int no_mount = getenv("SBX_FAKE_NO_MOUNT") != NULL;
	char *out = xmalloc(cap);

	for (i = 0; arg[i];) {
		int hit = 0;

		if ((i == 0 && arg[0] == '~' && arg[1] == '/') ||
		    (i > 0 && arg[i] == '~' && arg[i + 1] == '/' &&
		     !path_char(arg[i - 1]))) {
			n += (size_t)sprintf(out + n, "%s/home/agent", fs);
			i++;
			continue;
		}
		if (arg[i] == '/' && (i == 0 || !path_char(arg[i - 1]))) {
			for (k = 0; canon[k]; k++) {
				size_t len = strlen(canon[k]);
				char after = arg[i + len];

				if (strncmp(arg + i, canon[k], len))
					continue;
				if (after && after != '/' && path_char(after))
					continue;
				if (no_mount &&
				    !strcmp(canon[k], "/workspace")) {
					n += (size_t)sprintf(
						out + n, "%s/no-mount", fs);
				} else {
					n += (size_t)sprintf(out + n, "%s%s",
							     fs, canon[k]);
				}
				i += len;
				hit = 1;
				break;
			}
			if (!hit && no_mount && *ws &&
			    !strncmp(arg + i, ws, strlen(ws))) {
				n += (size_t)sprintf(out + n, "%s/no-mount",
						     fs);
				i += strlen(ws);
				hit = 1;
			}
		}
		if (hit)
			continue;
		out[n++] = arg[i++];
	}
	out[n] = '\0';
	return out;
}

int cmd_exec(int argc, char **argv, const char *in, size_t in_len)
{
	const char *name = NULL, *workdir = NULL;
	const char *envs[64];
	char *fs, *home, *dir, **cargv;
	int i, nenv = 0, interactive = 0, first, st, fds[2], lfd;
	unsigned port = 0;
	pid_t pid;
	cJSON *meta;

	for (i = 1; i < argc; i++) {
		if (argv[i][0] != '-')
			break;
		if (!strcmp(argv[i], "-i") || !strcmp(argv[i], "-it") ||
		    !strcmp(argv[i], "-ti"))
			interactive = 1;
		else if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "-d") ||
			 !strcmp(argv[i], "--privileged"))
			;
		else if ((!strcmp(argv[i], "-e") ||
			  !strcmp(argv[i], "--env")) &&
			 i + 1 < argc) {
			if (nenv < 63)
				envs[nenv++] = argv[i + 1];
			i++;
		} else if ((!strcmp(argv[i], "-w") ||
			    !strcmp(argv[i], "-u")) &&
			   i + 1 < argc) {
			if (argv[i][1] == 'w')
				workdir = argv[i + 1];
			i++;
		}
	}
	if (i >= argc) {
		fputs("ERROR: usage: sbx exec SANDBOX COMMAND\n", stderr);
		return 1;
	}
	name = argv[i++];
	meta = box_meta(name);
	if (!meta)
		return not_found(name);
	if (strcmp(meta_str(meta, "status"), "running")) {
		fprintf(stderr, "Error: sandbox \"%s\" is not running\n",
			name);
		cJSON_Delete(meta);
		return 1;
	}
	if (i >= argc) {
		cJSON_Delete(meta);
		fputs("ERROR: no command given\n", stderr);
		return 1;
	}
	dir = box_dir(name);
	fs = xprintf("%s/fs", dir);
	home = xprintf("%s/home/agent", fs);
	first = i;
	cargv = xmalloc(sizeof(char *) * (size_t)(argc - first + 1));
	for (; i < argc; i++)
		cargv[i - first] = rewrite(argv[i], fs, meta);
	cargv[argc - first] = NULL;

	/* long workers must run concurrently with other calls */
	if (lock_fd >= 0) {
		close(lock_fd);
		lock_fd = -1;
	}
	if (pipe(fds) < 0)
		return 125;
	/* the sandbox's HTTP(S) goes through the fake's host proxy */
	lfd = net_open(&port);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 125;
	if (pid == 0) {
		char *wd = workdir ? rewrite(workdir, fs, meta) : home;
		int k;

		close(fds[1]);
		if (interactive)
			dup2(fds[0], 0);
		else {
			int nul = open("/dev/null", O_RDONLY);

			dup2(nul, 0);
		}
		close(fds[0]);
		setenv("HOME", home, 1);
		setenv("SBX_FAKE_FS", fs, 1);
		/* an image without some tool: the tests' PATH for it */
		if (getenv("SBX_FAKE_PATH"))
			setenv("PATH", getenv("SBX_FAKE_PATH"), 1);
		setenv("COPYFILE_DISABLE", "1", 1);
		if (lfd >= 0) {
			char *url = xprintf("http://127.0.0.1:%u", port);

			setenv("HTTP_PROXY", url, 1);
			setenv("HTTPS_PROXY", url, 1);
			setenv("http_proxy", url, 1);
			setenv("https_proxy", url, 1);
			setenv("NO_PROXY", "localhost,127.0.0.1", 1);
			setenv("no_proxy", "localhost,127.0.0.1", 1);
			close(lfd);
		}
		/* field reality: proxy secrets never reach exec'd processes */
		unsetenv("COPILOT_GITHUB_TOKEN");
		unsetenv("GH_TOKEN");
		unsetenv("GITHUB_TOKEN");
		for (k = 0; k < nenv; k++)
			putenv((char *)envs[k]);
		if (chdir(wd) < 0)
			chdir(home);
		execvp(cargv[0], cargv);
		printf("OCI runtime exec failed: exec: \"%s\": executable "
		       "file not found in $PATH\n",
		       argv[first]);
		fflush(stdout);
		_exit(1);
	}
	close(fds[0]);
	if (interactive && in_len) {
		size_t off = 0;
		char *text = NULL;

		/*
		 * Text on stdin (a worker job) names paths as the sandbox
		 * sees them, like the argv: rewritten the same way, so a
		 * job's paths land in the sandbox's fs, never the host's.
		 */
		if (!memchr(in, '\0', in_len)) {
			char *copy = xmalloc(in_len + 1);

			memcpy(copy, in, in_len);
			copy[in_len] = '\0';
			text = rewrite(copy, fs, meta);
			free(copy);
			in = text;
			in_len = strlen(text);
		}
		signal(SIGPIPE, SIG_IGN);
		while (off < in_len) {
			ssize_t w = write(fds[1], in + off, in_len - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		free(text);
	}
	close(fds[1]);
	if (lfd >= 0)
		st = net_serve(lfd, name, pid);
	else
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	for (i = 0; i < argc - first; i++)
		free(cargv[i]);
	free(cargv);
	free(home);
	free(fs);
	free(dir);
	cJSON_Delete(meta);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

static char *remote_path(const char *spec, char **name_out)
{
	const char *colon = strchr(spec, ':');
	char *name, *out;
	cJSON *meta;

	if (!colon || spec[0] == '/' || spec[0] == '.')
		return NULL;
	name = strndup(spec, (size_t)(colon - spec));
	if (!name)
		exit(125);
	meta = box_meta(name);
	if (!meta) {
		*name_out = name;
		return xprintf("");
	}
	cJSON_Delete(meta);
	if (colon[1] == '/')
		out = xprintf("%s/sandboxes/%s/fs%s", state_dir, name,
			      colon + 1);
	else
		out = xprintf("%s/sandboxes/%s/fs/home/agent/%s", state_dir,
			      name, colon + 1);
	*name_out = name;
	return out;
}

int cmd_cp(int argc, char **argv)
{
	char *sname = NULL, *dname = NULL, *src, *dst;
	int rc;

	if (argc != 3) {
		fputs("ERROR: usage: sbx cp SRC DST\n", stderr);
		return 1;
	}
	src = remote_path(argv[1], &sname);
	dst = remote_path(argv[2], &dname);
	if ((src != NULL) == (dst != NULL)) {
		fputs("ERROR: exactly one of SRC and DST must be "
		      "SANDBOX:PATH\n",
		      stderr);
		rc = 1;
		goto out;
	}
	if ((src && !*src) || (dst && !*dst)) {
		rc = not_found(src ? sname : dname);
		goto out;
	}
	{
		const char *s = src ? src : argv[1];
		const char *d = dst ? dst : argv[2];
		char *const cargv[] = {"cp", "-R", (char *)s, (char *)d, NULL};

		if (access(s, F_OK) < 0) {
			fprintf(stderr,
				"ERROR: %s: no such file or "
				"directory\n",
				src ? argv[1] : argv[1]);
			rc = 1;
			goto out;
		}
		if (dst) {
			char *parent = strdup(d), *slash;

			if (!parent)
				exit(125);
			slash = strrchr(parent, '/');
			if (slash && slash != parent) {
				*slash = '\0';
				if (!is_dir(parent)) {
					fprintf(stderr,
						"ERROR: %s: no such "
						"directory\n",
						argv[2]);
					free(parent);
					rc = 1;
					goto out;
				}
			}
			free(parent);
		}
		rc = run_argv(cargv) ? 1 : 0;
	}
out:
	free(src);
	free(dst);
	free(sname);
	free(dname);
	return rc;
}

int cmd_ls(int argc, char **argv)
{
	char *dir = xprintf("%s/sandboxes", state_dir);
	int quiet = argc > 1 && !strcmp(argv[1], "-q");
	int printed = 0;
	char *listing, *line, *save;
	FILE *p;

	/* sorted names through ls keep the output stable */
	{
		char *cmd = xprintf("ls -1 '%s' 2>/dev/null", dir);

		p = popen(cmd, "r");
		free(cmd);
	}
	listing = p ? read_all_fd(fileno(p), NULL) : xprintf("");
	if (p)
		pclose(p);
	for (line = strtok_r(listing, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *meta = box_meta(line);

		if (!meta)
			continue;
		if (quiet) {
			puts(line);
		} else {
			if (!printed)
				printf("%-40s %-10s %-10s %-8s %s\n",
				       "SANDBOX", "AGENT", "STATUS", "PORTS",
				       "WORKSPACE");
			printf("%-40s %-10s %-10s %-8s %s\n", line,
			       meta_str(meta, "agent"),
			       meta_str(meta, "status"), "",
			       meta_str(meta, "workspace"));
		}
		printed = 1;
		cJSON_Delete(meta);
	}
	if (!printed && !quiet)
		puts("No sandboxes found.");
	free(listing);
	free(dir);
	return 0;
}

int cmd_stop(int argc, char **argv)
{
	cJSON *meta;

	if (argc < 2) {
		fputs("ERROR: usage: sbx stop SANDBOX\n", stderr);
		return 1;
	}
	meta = box_meta(argv[1]);
	if (!meta)
		return not_found(argv[1]);
	cJSON_ReplaceItemInObjectCaseSensitive(meta, "status",
					       cJSON_CreateString("stopped"));
	box_meta_save(argv[1], meta);
	cJSON_Delete(meta);
	return 0;
}

int cmd_rm(int argc, char **argv)
{
	int i, rc = 0, any = 0;

	for (i = 1; i < argc; i++) {
		cJSON *meta;
		char *dir;

		if (argv[i][0] == '-')
			continue;
		any = 1;
		meta = box_meta(argv[i]);
		if (!meta) {
			rc = not_found(argv[i]);
			continue;
		}
		cJSON_Delete(meta);
		dir = box_dir(argv[i]);
		rmtree(dir);
		free(dir);
		printf("Removed %s\n", argv[i]);
	}
	if (!any) {
		fputs("ERROR: usage: sbx rm [--force] SANDBOX\n", stderr);
		return 1;
	}
	return rc;
}

/* policy allow|deny|rm|check|ls|init|set-default ... */
int cmd_policy(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "";
	const char *scope = NULL, *res = NULL;
	cJSON *rec, *list;
	int i;

	if (!strcmp(action, "ls")) {
		puts("ID  SCOPE  TYPE  DECISION  RESOURCES");
		return 0;
	}
	if (!strcmp(action, "log"))
		return cmd_policy_log(argc, argv);
	if (!strcmp(action, "init") || !strcmp(action, "set-default")) {
		rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "action", action);
		cJSON_AddStringToObject(rec, "preset",
					argc > 2 ? argv[2] : "");
		append_line("policies.jsonl", rec);
		cJSON_Delete(rec);
		return 0;
	}
	if (strcmp(action, "allow") && strcmp(action, "deny") &&
	    strcmp(action, "rm") && strcmp(action, "check")) {
		fprintf(stderr, "ERROR: unknown policy command \"%s\"\n",
			action);
		return 1;
	}
	if (argc < 3 || strcmp(argv[2], "network")) {
		fputs("ERROR: only network policies are supported\n", stderr);
		return 1;
	}
	{
		const char *pos[2] = {NULL, NULL};
		int npos = 0;

		for (i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "-g"))
				scope = "global";
			else if (!strcmp(argv[i], "--sandbox") && i + 1 < argc)
				scope = argv[++i];
			else if (!strcmp(argv[i], "--resource") &&
				 i + 1 < argc)
				res = argv[++i];
			else if (!strcmp(argv[i], "--id") && i + 1 < argc)
				res = argv[++i];
			else if (npos < 2)
				pos[npos++] = argv[i];
		}
		/* check: HOST [SANDBOX]; allow/deny: [SANDBOX] RESOURCES */
		if (!strcmp(action, "check")) {
			res = pos[0];
			if (!scope)
				scope = pos[1];
		} else if (!strcmp(action, "rm")) {
			if (!scope)
				scope = pos[0];
		} else if (npos == 2) {
			if (!scope)
				scope = pos[0];
			res = pos[1];
		} else {
			res = pos[0];
		}
	}
	if (!res || !*res) {
		fputs("ERROR: no resources given\n", stderr);
		return 1;
	}
	if (scope && strcmp(scope, "global")) {
		cJSON *meta = box_meta(scope);

		if (!meta)
			return not_found(scope);
		cJSON_Delete(meta);
	}
	if (!strcmp(action, "check")) {
		puts("allowed");
		return 0;
	}
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "action", action);
	cJSON_AddStringToObject(rec, "scope", scope ? scope : "global");
	list = cJSON_AddArrayToObject(rec, "resources");
	{
		char *copy = strdup(res), *tok, *save;

		if (!copy)
			exit(125);
		for (tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			cJSON_AddItemToArray(list, cJSON_CreateString(tok));
		free(copy);
	}
	append_line("policies.jsonl", rec);
	cJSON_Delete(rec);
	return 0;
}

static void secret_log(const char *action, const char *scope, const char *what,
		       const char *host)
{
	cJSON *rec = cJSON_CreateObject();

	cJSON_AddStringToObject(rec, "action", action);
	cJSON_AddStringToObject(rec, "scope", scope);
	cJSON_AddStringToObject(rec, "what", what);
	if (host)
		cJSON_AddStringToObject(rec, "host", host);
	append_line("secrets.jsonl", rec);
	cJSON_Delete(rec);
}

static cJSON *section(cJSON *state, const char *key)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(state, key);

	if (!cJSON_IsObject(s))
		s = cJSON_AddObjectToObject(state, key);
	return s;
}

int cmd_secret(int argc, char **argv, const char *in)
{
	const char *action = argc > 1 ? argv[1] : "";
	const char *scope = NULL, *env = NULL, *host = NULL, *value = NULL;
	const char *pos[2] = {NULL, NULL}, *service = NULL;
	int i, npos = 0, force = 0, rc = 0;
	cJSON *state, *svc, *custom;
	const char *scope_v = getenv("SBX_FAKE_SECRET_SCOPE");
	const char *ls_v = getenv("SBX_FAKE_SECRET_LS");
	int positional = scope_v && !strcmp(scope_v, "positional");

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			if (!strcmp(action, "set-custom") && positional)
				puts("Usage: sbx secret set-custom [-g | "
				     "sandbox] [flags]\n"
				     "Flags: --env, -g/--global, --host, "
				     "--placeholder, -t/--token, --value");
			else if (!strcmp(action, "set-custom"))
				puts("Usage: sbx secret set-custom [-g | "
				     "SANDBOX] --host HOST --env ENV "
				     "--value VALUE [--placeholder P]\n"
				     "The value is taken from --value only.");
			else
				puts("Usage: sbx secret COMMAND");
			return 0;
		}
		if (positional && !strcmp(action, "set-custom") &&
		    !strcmp(argv[i], "--sandbox")) {
			fputs("ERROR: unknown flag: --sandbox\n", stderr);
			return 1;
		}
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-g"))
			scope = "global";
		else if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force"))
			force = 1;
		else if (!strcmp(argv[i], "--sandbox") && i + 1 < argc)
			scope = argv[++i];
		else if (!strcmp(argv[i], "--env") && i + 1 < argc)
			env = argv[++i];
		else if (!strcmp(argv[i], "--host") && i + 1 < argc)
			host = argv[++i];
		else if ((!strcmp(argv[i], "--value") ||
			  !strcmp(argv[i], "-t") ||
			  !strcmp(argv[i], "--token")) &&
			 i + 1 < argc)
			value = argv[++i];
		else if (!strncmp(argv[i], "--value=", 8))
			value = argv[i] + 8;
		else if (!strcmp(argv[i], "--placeholder") && i + 1 < argc)
			i++;
		else if (npos < 2)
			pos[npos++] = argv[i];
	}
	for (i = 0; i < npos; i++) {
		if (is_service(pos[i]) && !service)
			service = pos[i];
		else if (!scope)
			scope = pos[i];
	}
	if (!scope)
		scope = "global";
	state = load_json("secrets-state.json", 0);
	svc = section(state, "service");
	custom = section(state, "custom");

	if (!strcmp(action, "ls")) {
		cJSON *it;

		int typed = ls_v && !strcmp(ls_v, "type");

		if (typed)
			printf("%-30s %-8s %-24s %s\n", "SCOPE", "TYPE",
			       "NAME", "HOST");
		else
			printf("%-30s %-24s %s\n", "SCOPE", "SECRET", "HOSTS");
		cJSON_ArrayForEach (it, svc) {
			char *k = strdup(it->string), *bar = strchr(k, '|');

			if (bar)
				*bar++ = '\0';
			if (typed)
				printf("%-30s %-8s %-24s %s\n", k, "service",
				       bar ? bar : "", "");
			else
				printf("%-30s %-24s %s\n", k, bar ? bar : "",
				       "");
			free(k);
		}
		cJSON_ArrayForEach (it, custom) {
			if (typed)
				printf("%-30s %-8s %-24s %s\n",
				       meta_str(it, "scope"), "custom",
				       it->string, meta_str(it, "host"));
			else
				printf("%-30s %-24s %s\n",
				       meta_str(it, "scope"), it->string,
				       meta_str(it, "host"));
		}
		goto out;
	}
	if (!strcmp(action, "set")) {
		char *key, *val;

		if (!service) {
			fputs("ERROR: a service is required\n", stderr);
			rc = 1;
			goto out;
		}
		val = value ? strdup(value) : strdup(in ? in : "");
		if (!val)
			exit(125);
		while (*val && (val[strlen(val) - 1] == '\n' ||
				val[strlen(val) - 1] == '\r'))
			val[strlen(val) - 1] = '\0';
		if (!*val) {
			fputs("ERROR: no secret value on stdin\n", stderr);
			free(val);
			rc = 1;
			goto out;
		}
		key = xprintf("%s|%s", scope, service);
		if (cJSON_GetObjectItemCaseSensitive(svc, key) && !force) {
			fprintf(stderr, "ERROR: secret exists: %s for %s\n",
				service, scope);
			rc = 1;
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(svc, key);
			cJSON_AddStringToObject(svc, key, val);
			secret_log("set", scope, service, NULL);
			save_json("secrets-state.json", state);
			printf("Secret %s set for %s\n", service, scope);
		}
		free(key);
		free(val);
		goto out;
	}
	if (!strcmp(action, "set-custom")) {
		cJSON *cur, *rec;

		if (!env || !host || !value) {
			fputs("ERROR: --host, --env and --value are "
			      "required\n",
			      stderr);
			rc = 1;
			goto out;
		}
		cur = cJSON_GetObjectItemCaseSensitive(custom, env);
		if (cur) {
			fprintf(stderr,
				"ERROR: custom secret env \"%s\" "
				"already exists in scope %s with placeholder "
				"sbx-cs-abc123.\n",
				env, meta_str(cur, "scope"));
			rc = 1;
			goto out;
		}
		rec = cJSON_AddObjectToObject(custom, env);
		cJSON_AddStringToObject(rec, "scope", scope);
		cJSON_AddStringToObject(rec, "host", host);
		cJSON_AddStringToObject(rec, "value", value);
		secret_log("set-custom", scope, env, host);
		save_json("secrets-state.json", state);
		printf("Custom secret %s set for %s\n", env, scope);
		goto out;
	}
	if (!strcmp(action, "rm")) {
		if (!service && env && !host) {
			fputs("ERROR: --placeholder or --host is required\n",
			      stderr);
			rc = 1;
			goto out;
		}
		if (!force) {
			puts("Delete selected secret? (y/N): Cancelled");
			goto out;
		}
		if (service) {
			char *key = xprintf("%s|%s", scope, service);

			if (cJSON_GetObjectItemCaseSensitive(svc, key)) {
				cJSON_DeleteItemFromObjectCaseSensitive(svc,
									key);
				secret_log("rm", scope, service, NULL);
				save_json("secrets-state.json", state);
				printf("Deleted %s for %s\n", service, scope);
			} else {
				puts("No matching secret found");
			}
			free(key);
			goto out;
		}
		{
			cJSON *cur = env ? cJSON_GetObjectItemCaseSensitive(
						   custom, env)
					 : NULL;

			if (cur && !strcmp(meta_str(cur, "scope"), scope) &&
			    (!host || !strcmp(meta_str(cur, "host"), host))) {
				cJSON_DeleteItemFromObjectCaseSensitive(custom,
									env);
				secret_log("rm", scope, env, host);
				save_json("secrets-state.json", state);
				printf("Deleted %s for %s\n", env, scope);
			} else {
				puts("No matching custom secret found");
			}
		}
		goto out;
	}
	fprintf(stderr, "ERROR: unknown secret command \"%s\"\n", action);
	rc = 1;
out:
	cJSON_Delete(state);
	return rc;
}

int cmd_template(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "ls")) {
		puts("REPOSITORY  TAG  IMAGE ID");
		return 0;
	}
	fputs("ERROR: template: not supported by the fake\n", stderr);
	return 1;
}

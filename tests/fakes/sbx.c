/*
 * A fake `sbx` (Docker Sandboxes CLI) for the tests and the bench. The
 * build puts it at tests/fakes/bin/sbx; tests put that directory first on
 * PATH. All state lives under $SBX_FAKE_DIR:
 *
 *   invocations.jsonl   every call: {"argv":[...],"stdin":"...","ts":N,
 *                       "app_name":X} (--app-name X stripped from argv)
 *   responses.json      scripted answers [{prefix, returncode, stdout,
 *                       stderr, once}]: the first whose prefix starts the
 *                       space-joined argv wins; `once` entries are used up
 *   sandboxes/N/        meta.json and fs/ (the sandbox's root)
 *   policies.jsonl      every policy call, comma lists split
 *   secrets.jsonl       every secret call (values never recorded here)
 *   secrets-state.json  {"service":{"scope|svc":value},
 *                        "custom":{"ENV":{scope,host,value}}}
 *
 * `exec` really runs the command on this host, with the sandbox's
 * canonical paths (/home/agent, /tmp/sbxloop, /etc/sandbox, /workspace)
 * rewritten into the sandbox's fs directory. A global lock serializes
 * calls; exec releases it before its child runs.
 *
 * Behaviour follows UPSTREAM.md 13.2 and the sbx 0.38 surface of PEERS.md.
 *
 * Variants of the sbx CLI, switched by environment variables (unset =
 * the default column):
 *
 *   SBX_FAKE_PATH         PATH of every process `exec` starts (unset: the
 *                         caller's): a sandbox image that lacks a tool
 *                         (git) is a directory without it.
 *   SBX_FAKE_SECRET_LS    `secret ls` columns. Default `SCOPE SECRET
 *                         HOSTS` (upstream's harness, UPSTREAM.md 8.6).
 *                         `type`: `SCOPE TYPE NAME HOST`, a TYPE column
 *                         (service | custom) before the name, as the sbx
 *                         build of issue 11 item 14 prints it (the
 *                         reference page docs.docker.com/reference/cli/
 *                         sbx/secret/ls documents no column layout).
 *   SBX_FAKE_SECRET_SCOPE `secret set-custom` scope. Default: `--sandbox
 *                         NAME` or positional, both accepted, as in
 *                         docker/docs data/sbx_cli/sbx_secret_set-
 *                         custom.yaml (PEERS.md; UPSTREAM.md 8.1 calls
 *                         the positional form deprecated). `positional`:
 *                         `--sandbox` is an unknown flag and the scope is
 *                         `[-g | sandbox]`, as the reference page
 *                         docs.docker.com/reference/cli/sbx/secret/
 *                         set-custom gives its usage (no --sandbox in
 *                         its options). `secret rm` keeps --sandbox.
 *
 * This file holds the fake's state and IO helpers and dispatches each
 * call; the command handlers are in sbx-commands.c.
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

const char *state_dir;
int lock_fd = -1;
const char *app_name; /* --app-name given, for the record */

/* ------------------------------------------------------------ helpers */

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fputs("fake sbx: out of memory\n", stderr);
		exit(125);
	}
	return p;
}

char *xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		fputs("fake sbx: out of memory\n", stderr);
		exit(125);
	}
	va_end(ap);
	return s;
}

char *read_all_fd(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap);
	ssize_t r;

	for (;;) {
		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				exit(125);
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *read_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	char *s;

	if (fd < 0)
		return NULL;
	s = read_all_fd(fd, NULL);
	close(fd);
	return s;
}

void write_file(const char *path, const char *text)
{
	char *tmp = xprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");

	if (!f) {
		fprintf(stderr, "fake sbx: cannot write '%s'\n", path);
		exit(125);
	}
	fputs(text, f);
	fclose(f);
	rename(tmp, path);
	free(tmp);
}

void append_line(const char *name, cJSON *obj)
{
	char *path = xprintf("%s/%s", state_dir, name);
	char *text = cJSON_PrintUnformatted(obj);
	FILE *f = fopen(path, "a");

	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
	}
	free(text);
	free(path);
}

cJSON *load_json(const char *name, int array)
{
	char *path = xprintf("%s/%s", state_dir, name);
	char *text = read_file(path);
	cJSON *doc = text ? cJSON_Parse(text) : NULL;

	free(text);
	free(path);
	if (!doc)
		doc = array ? cJSON_CreateArray() : cJSON_CreateObject();
	return doc;
}

void save_json(const char *name, const cJSON *doc)
{
	char *path = xprintf("%s/%s", state_dir, name);
	char *text = cJSON_Print(doc);

	write_file(path, text);
	free(text);
	free(path);
}

int run_argv(char *const *argv)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void rmtree(const char *path)
{
	char *const argv[] = {"rm", "-rf", (char *)path, NULL};

	run_argv(argv);
}

void mkdirs(const char *path)
{
	char *p = strdup(path), *s;

	if (!p)
		exit(125);
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
	free(p);
}

int is_dir(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

const char *const services[] = {"anthropic", "aws",    "cursor", "droid",
				"github",    "google", "groq",   "mistral",
				"nebius",    "openai", "xai",    NULL};

int is_service(const char *s)
{
	size_t i;

	for (i = 0; services[i]; i++)
		if (!strcmp(services[i], s))
			return 1;
	return 0;
}

/* ---------------------------------------------------------- sandboxes */

char *box_dir(const char *name)
{
	return xprintf("%s/sandboxes/%s", state_dir, name);
}

cJSON *box_meta(const char *name)
{
	char *path = xprintf("%s/sandboxes/%s/meta.json", state_dir, name);
	char *text;
	cJSON *doc;

	if (strchr(name, '/') || !*name) {
		free(path);
		return NULL;
	}
	text = read_file(path);
	free(path);
	doc = text ? cJSON_Parse(text) : NULL;
	free(text);
	return doc;
}

void box_meta_save(const char *name, const cJSON *meta)
{
	char *path = xprintf("%s/sandboxes/%s/meta.json", state_dir, name);
	char *text = cJSON_Print(meta);

	write_file(path, text);
	free(text);
	free(path);
}

int not_found(const char *name)
{
	fprintf(stderr, "Error: sandbox \"%s\" not found\n", name);
	return 1;
}

const char *meta_str(const cJSON *meta, const char *key)
{
	const char *s = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(meta, key));

	return s ? s : "";
}

/* ---------------------------------------------------------- dispatch */

static void record(int argc, char **argv, const char *in)
{
	cJSON *rec = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(rec, "argv");
	struct timeval tv;
	int i;

	for (i = 0; i < argc; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(argv[i]));
	cJSON_AddStringToObject(rec, "stdin", in ? in : "");
	if (app_name)
		cJSON_AddStringToObject(rec, "app_name", app_name);
	gettimeofday(&tv, NULL);
	cJSON_AddNumberToObject(rec, "ts",
				(double)tv.tv_sec + tv.tv_usec / 1e6);
	append_line("invocations.jsonl", rec);
	cJSON_Delete(rec);
}

/* A scripted response, or -1 when none matches. */
static int scripted(int argc, char **argv)
{
	cJSON *list = load_json("responses.json", 1), *it;
	size_t len = 1;
	char *joined;
	int i, idx = 0, rc = -1;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	joined = xmalloc(len);
	joined[0] = '\0';
	for (i = 0; i < argc; i++) {
		if (i)
			strcat(joined, " ");
		strcat(joined, argv[i]);
	}
	cJSON_ArrayForEach (it, list) {
		const char *prefix = meta_str(it, "prefix");
		const cJSON *code;

		if (strncmp(joined, prefix, strlen(prefix))) {
			idx++;
			continue;
		}
		code = cJSON_GetObjectItemCaseSensitive(it, "returncode");
		fputs(meta_str(it, "stdout"), stdout);
		fputs(meta_str(it, "stderr"), stderr);
		rc = cJSON_IsNumber(code) ? code->valueint : 0;
		if (cJSON_IsTrue(
			    cJSON_GetObjectItemCaseSensitive(it, "once"))) {
			cJSON_DeleteItemFromArray(list, idx);
			save_json("responses.json", list);
		}
		break;
	}
	cJSON_Delete(list);
	free(joined);
	return rc;
}

int main(int argc, char **argv)
{
	char **args = xmalloc(sizeof(char *) * (size_t)(argc + 1));
	char *in = NULL, *lock_path;
	size_t in_len = 0;
	int i, n = 0, rc;

	state_dir = getenv("SBX_FAKE_DIR");
	if (!state_dir || !*state_dir) {
		fputs("fake sbx: SBX_FAKE_DIR is not set\n", stderr);
		return 125;
	}
	mkdirs(state_dir);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--app-name") && i + 1 < argc) {
			app_name = argv[++i];
			continue;
		}
		if (!strncmp(argv[i], "--app-name=", 11)) {
			app_name = argv[i] + 11;
			continue;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	if (!isatty(0))
		in = read_all_fd(0, &in_len);

	lock_path = xprintf("%s/lock", state_dir);
	lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(lock_path);
	if (lock_fd >= 0)
		while (flock(lock_fd, LOCK_EX) < 0 && errno == EINTR)
			;
	record(n, args, in);
	rc = scripted(n, args);
	if (rc >= 0)
		goto out;
	if (n == 0 || !strcmp(args[0], "--help") || !strcmp(args[0], "help"))
		rc = cmd_help();
	else if (!strcmp(args[0], "version"))
		rc = (puts("sbx version 0.38.0"), 0);
	else if (!strcmp(args[0], "create"))
		rc = cmd_create(n, args);
	else if (!strcmp(args[0], "exec"))
		rc = cmd_exec(n, args, in, in_len);
	else if (!strcmp(args[0], "cp"))
		rc = cmd_cp(n, args);
	else if (!strcmp(args[0], "ls"))
		rc = cmd_ls(n, args);
	else if (!strcmp(args[0], "stop"))
		rc = cmd_stop(n, args);
	else if (!strcmp(args[0], "rm"))
		rc = cmd_rm(n, args);
	else if (!strcmp(args[0], "policy"))
		rc = cmd_policy(n, args);
	else if (!strcmp(args[0], "secret"))
		rc = cmd_secret(n, args, in);
	else if (!strcmp(args[0], "template"))
		rc = cmd_template(n, args);
	else if (!strcmp(args[0], "login"))
		rc = 0;
	else {
		fprintf(stderr, "ERROR: unknown command \"%s\"\n", args[0]);
		rc = 1;
	}
out:
	fflush(NULL);
	if (lock_fd >= 0)
		close(lock_fd);
	free(in);
	free(args);
	return rc;
}

/*
 * The fixture and helpers of the worker contract suites
 * (test-worker-*.c): each test runs the real binary ($SBXLOOP_WORKER) as
 * a subprocess in a scratch directory and reads back what the host
 * would see.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "worker-support.h"

char dir[256];

char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf[0] = '\0';
	fclose(f);
	return buf;
}

char *path_in(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

void put(const char *name, const char *fmt, ...)
{
	FILE *f = fopen(path_in(name), "w");
	va_list ap;

	ck_assert_ptr_nonnull(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void setup(void)
{
	char bin[600];
	const char *build = getenv("SBXLOOP_BUILDDIR");
	const char *src = getenv("SBXLOOP_SRCDIR");
	static const char *const names[] = {"copilot", "claude", "codex",
					    "gemini"};
	size_t i;

	snprintf(dir, sizeof(dir), "/tmp/sbxloop-test-worker.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	mkdir(path_in("bin"), 0755);
	mkdir(path_in("work"), 0755);
	for (i = 0; build && i < 4; i++) {
		char link[600];

		snprintf(bin, sizeof(bin), "%s/tests/fakes/fake-agent", build);
		snprintf(link, sizeof(link), "%s/bin/%s", dir, names[i]);
		ck_assert_int_eq(symlink(bin, link), 0);
	}
	/* the worker must see only what each test gives it */
	setenv("HOME", dir, 1);
	snprintf(bin, sizeof(bin), "%s/bin:/usr/bin:/bin", dir);
	setenv("PATH", bin, 1);
	snprintf(bin, sizeof(bin), "%s/worker/presets", src ? src : ".");
	setenv("SBXLOOP_PRESET_DIR", bin, 1);
	setenv("SBXLOOP_PERSISTENT_ENV", path_in("persistent.sh"), 1);
	unsetenv("SBXLOOP_WORKER_BACKEND");
	unsetenv("SBXLOOP_SCRIPT");
	unsetenv("SBXLOOP_AGENT_PRESET");
	unsetenv("GH_TOKEN");
	unsetenv("GITHUB_TOKEN");
	unsetenv("SBXLOOP_WORKER_LIBCURL");
	unsetenv("CURL_CA_BUNDLE");
}

void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	free(r->events);
	cJSON_Delete(r->result);
	cJSON_Delete(r->events_list);
	memset(r, 0, sizeof(*r));
}

/*
 * Run `sbxloop-worker run` on `job` (NULL: use the existing job.json) with
 * extra arguments (NULL-terminated). --heartbeat 0 comes first so a test
 * can override it.
 */
/*
 * The worker command line every test uses: `run` on job.json with the
 * events and result files of the test directory, in work/. Fills argv
 * (room for at least 13 entries) and returns how many it set.
 */
int worker_argv(const char **argv)
{
	int n = 0;

	argv[n++] = getenv("SBXLOOP_WORKER");
	argv[n++] = "run";
	argv[n++] = "--heartbeat";
	argv[n++] = "0";
	argv[n++] = "--job";
	argv[n++] = path_in("job.json");
	argv[n++] = "--events";
	argv[n++] = path_in("ev.jsonl");
	argv[n++] = "--result";
	argv[n++] = path_in("res.json");
	argv[n++] = "--cwd";
	argv[n++] = path_in("work");
	argv[n] = NULL;
	return n;
}

/* In a child: exec the worker with its output thrown away. */
void exec_worker_quietly(void)
{
	const char *argv[16];
	int devnull = open("/dev/null", O_WRONLY);

	worker_argv(argv);
	dup2(devnull, 1);
	dup2(devnull, 2);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

void run_worker(struct run *r, const char *job, ...)
{
	const char *argv[40];
	int n = 0, status;
	va_list ap;
	pid_t pid;
	double t0 = now();
	const char *a;

	char *extra[20];
	int nextra = 0, k;

	memset(r, 0, sizeof(*r));
	/* copy first: path_in() reuses its buffers */
	va_start(ap, job);
	while ((a = va_arg(ap, const char *)) != NULL && nextra < 20)
		extra[nextra++] = strdup(a);
	va_end(ap);
	if (job)
		put("job.json", "%s", job);
	unlink(path_in("res.json"));
	unlink(path_in("ev.jsonl"));
	n = worker_argv(argv);
	for (k = 0; k < nextra; k++)
		argv[n++] = extra[k];
	argv[n] = NULL;
	ck_assert_ptr_nonnull(argv[0]);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int o = open(path_in("stdout"), O_WRONLY | O_CREAT | O_TRUNC,
			     0644);
		int e = open(path_in("stderr"), O_WRONLY | O_CREAT | O_TRUNC,
			     0644);
		int i = open(path_in("stdin"), O_RDONLY);

		if (i >= 0)
			dup2(i, 0);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	r->elapsed = now() - t0;
	for (k = 0; k < nextra; k++)
		free(extra[k]);
	r->rc = WIFEXITED(status) ? WEXITSTATUS(status)
				  : 128 + WTERMSIG(status);
	r->out = slurp(path_in("stdout"));
	r->err = slurp(path_in("stderr"));
	r->events = slurp(path_in("ev.jsonl"));
	{
		char *res = slurp(path_in("res.json"));

		r->result = res ? cJSON_Parse(res) : NULL;
		free(res);
	}
	r->events_list = cJSON_CreateArray();
	if (r->events) {
		char *copy = strdup(r->events), *line, *save;

		for (line = strtok_r(copy, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			cJSON *ev = cJSON_Parse(line);

			ck_assert_msg(ev != NULL, "bad event line: %s", line);
			cJSON_AddItemToArray(r->events_list, ev);
		}
		free(copy);
	}
}

const char *rstr(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(r->result, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *errfield(const struct run *r, const char *key)
{
	const cJSON *e = cJSON_GetObjectItem(r->result, "error");
	const cJSON *v = cJSON_GetObjectItem(e, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int rint_(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(r->result, key);

	ck_assert_msg(cJSON_IsNumber(v), "result has no number '%s'", key);
	return v->valueint;
}

/* Count events of a type; *first gets the first one's data. */
int count_events(const struct run *r, const char *type, const cJSON **first)
{
	const cJSON *ev;
	int n = 0;

	if (first)
		*first = NULL;
	cJSON_ArrayForEach (ev, r->events_list) {
		const cJSON *t = cJSON_GetObjectItem(ev, "type");

		if (cJSON_IsString(t) && !strcmp(t->valuestring, type)) {
			if (!n && first)
				*first = cJSON_GetObjectItem(ev, "data");
			n++;
		}
	}
	return n;
}

const char *dstr(const cJSON *data, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(data, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int pid_gone(pid_t pid)
{
	char path[64], *stat;
	int gone;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	/* a killed orphan may linger as a zombie until init reaps it */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = slurp(path);
	gone = !stat || strstr(stat, ") Z ") != NULL;
	free(stat);
	return gone;
}

int wait_gone(pid_t pid, double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		if (pid_gone(pid))
			return 1;
		usleep(20000);
	}
	return pid_gone(pid);
}

pid_t read_pid(const char *name)
{
	char *s = slurp(path_in(name));
	pid_t pid = s ? (pid_t)atoi(s) : 0;

	free(s);
	return pid;
}

void agent_job(char *buf, size_t n, const char *extra)
{
	snprintf(buf, n,
		 JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
			  "\"do the thing\",\"backend\":\"script\","
			  "\"script\":\"%s\"%s}",
		 path_in("scenario.json"), extra);
}

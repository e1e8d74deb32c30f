/*
 * test-worker.c - contract tests for sbxloop-worker.
 *
 * Every test runs the real binary ($SBXLOOP_WORKER) as a subprocess in a
 * scratch directory and asserts on what the host would see: the exit
 * code, the result file, the events file, the stdout mirror and stderr.
 * Agent CLIs are played by tests/fakes/fake-agent under their names.
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

static char dir[256];

struct run {
	int rc;
	double elapsed;
	char *out;    /* stdout */
	char *err;    /* stderr */
	char *events; /* events file */
	cJSON *result;
	cJSON *events_list; /* parsed events file lines */
};

static char *slurp(const char *path)
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

static char *path_in(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void put(const char *name, const char *fmt, ...)
{
	FILE *f = fopen(path_in(name), "w");
	va_list ap;

	ck_assert_ptr_nonnull(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setup(void)
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
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static void run_free(struct run *r)
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
static int worker_argv(const char **argv)
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
static void exec_worker_quietly(void)
{
	const char *argv[16];
	int devnull = open("/dev/null", O_WRONLY);

	worker_argv(argv);
	dup2(devnull, 1);
	dup2(devnull, 2);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

static void run_worker(struct run *r, const char *job, ...)
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

static const char *rstr(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(r->result, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *errfield(const struct run *r, const char *key)
{
	const cJSON *e = cJSON_GetObjectItem(r->result, "error");
	const cJSON *v = cJSON_GetObjectItem(e, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int rint_(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(r->result, key);

	ck_assert_msg(cJSON_IsNumber(v), "result has no number '%s'", key);
	return v->valueint;
}

/* Count events of a type; *first gets the first one's data. */
static int count_events(const struct run *r, const char *type,
			const cJSON **first)
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

static const char *dstr(const cJSON *data, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(data, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int pid_gone(pid_t pid)
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

static int wait_gone(pid_t pid, double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		if (pid_gone(pid))
			return 1;
		usleep(20000);
	}
	return pid_gone(pid);
}

static pid_t read_pid(const char *name)
{
	char *s = slurp(path_in(name));
	pid_t pid = s ? (pid_t)atoi(s) : 0;

	free(s);
	return pid;
}

#define JOB_HEAD "{\"v\":1,\"job_id\":\"job-1\",\"run_id\":\"run-1\","

/* ---------------------------------------------------------------- */

START_TEST(test_version_prints_program_and_package_version)
{
	char cmd[600], *out;

	snprintf(cmd, sizeof(cmd), "'%s' version > '%s'",
		 getenv("SBXLOOP_WORKER"), path_in("v"));
	ck_assert_int_eq(system(cmd), 0);
	out = slurp(path_in("v"));
	ck_assert_str_eq(out, "sbxloop-worker " PACKAGE_VERSION "\n");
	free(out);
}
END_TEST

START_TEST(test_shell_check_nonzero_exit_is_ok_result)
{
	struct run r;
	const cJSON *d;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"sh\","
			    "\"-c\",\"echo out; echo err >&2; exit 3\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "job_id"), "job-1");
	ck_assert_int_eq(rint_(&r, "exit_code"), 3);
	ck_assert_str_eq(rstr(&r, "output_text"), "out\n\nerr\n");
	ck_assert_int_eq(count_events(&r, "worker.start", &d), 1);
	ck_assert_str_eq(dstr(d, "kind"), "shell.check");
	ck_assert_int_eq(count_events(&r, "worker.result", &d), 1);
	ck_assert_str_eq(dstr(d, "status"), "ok");
	ck_assert_int_eq(count_events(&r, "worker.end", NULL), 1);
	run_free(&r);
}
END_TEST

START_TEST(test_events_sorted_enveloped_mirrored_to_stdout)
{
	struct run r;
	const cJSON *ev;
	char *last, *res;
	cJSON *fin;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"true\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	cJSON_ArrayForEach (ev, r.events_list) {
		ck_assert_int_eq(cJSON_GetObjectItem(ev, "v")->valueint, 1);
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(ev, "ts")));
		ck_assert_str_eq(dstr(ev, "run_id"), "run-1");
		ck_assert_str_eq(dstr(ev, "job_id"), "job-1");
		ck_assert(cJSON_IsObject(cJSON_GetObjectItem(ev, "data")));
	}
	/* compact, keys sorted: every line opens with "data" */
	ck_assert(strncmp(r.events, "{\"data\":{", 9) == 0);
	ck_assert_ptr_null(strstr(r.events, ", "));
	/* stdout = the same event lines, then one result line */
	ck_assert(strncmp(r.out, r.events, strlen(r.events)) == 0);
	last = r.out + strlen(r.events);
	fin = cJSON_Parse(last);
	ck_assert_ptr_nonnull(fin);
	ck_assert_int_eq(cJSON_GetObjectItem(fin, "sbxloop_result")->valueint,
			 1);
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(fin, "result"), r.result,
				1));
	cJSON_Delete(fin);
	res = slurp(path_in("res.json"));
	ck_assert_ptr_nonnull(res);
	free(res);
	ck_assert_int_eq(access(path_in("res.json.tmp"), F_OK), -1);
	run_free(&r);
}
END_TEST

START_TEST(test_job_from_stdin)
{
	struct run r;

	put("stdin", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"echo\","
			      "\"from-stdin\"]}");
	run_worker(&r, NULL, "--job", "-", NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "output_text"), "from-stdin\n");
	run_free(&r);
}
END_TEST

START_TEST(test_timeout_kills_forked_sleeper)
{
	struct run r;
	char job[512];

	snprintf(job, sizeof(job),
		 JOB_HEAD "\"kind\":\"shell.check\","
			  "\"timeout_s\":0.5,\"argv\":[\"sh\",\"-c\","
			  "\"sleep 300 & echo $! > %s; sleep 300\"]}",
		 path_in("sleeper"));
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_str_eq(errfield(&r, "type"), "Timeout");
	ck_assert_str_eq(errfield(&r, "message"), "job timed out");
	ck_assert(r.elapsed < 10);
	ck_assert_int_gt(read_pid("sleeper"), 0);
	ck_assert(wait_gone(read_pid("sleeper"), 2));
	ck_assert_int_eq(count_events(&r, "worker.error", NULL), 1);
	run_free(&r);
}
END_TEST

START_TEST(test_timeout_escalates_to_sigkill_after_grace)
{
	struct run r;
	char job[512];

	snprintf(job, sizeof(job),
		 JOB_HEAD "\"kind\":\"shell.check\","
			  "\"timeout_s\":0.3,\"argv\":[\"sh\",\"-c\","
			  "\"trap '' TERM; sleep 300 & echo $! > %s; wait\"]}",
		 path_in("sleeper"));
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert(r.elapsed >= 2.0);
	ck_assert(r.elapsed < 10);
	ck_assert(wait_gone(read_pid("sleeper"), 2));
	run_free(&r);
}
END_TEST

START_TEST(test_background_leftovers_die_with_the_command)
{
	struct run r;
	char job[512];

	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.check\","
		 "\"argv\":[\"sh\",\"-c\",\"sleep 300 & echo $! > %s\"]}",
		 path_in("sleeper"));
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert(r.elapsed < 10);
	ck_assert(wait_gone(read_pid("sleeper"), 2));
	run_free(&r);
}
END_TEST

START_TEST(test_shell_check_missing_program_is_error_result)
{
	struct run r;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"/nonexistent/prog\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "SpawnError");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "'/nonexistent/prog'"));
	run_free(&r);
}
END_TEST

START_TEST(test_batch_runs_in_order_reports_first_failure)
{
	struct run r;
	const cJSON *list, *c;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"commands\":["
			    "\"echo one > f\",\"cat f; exit 4\",\"exit 5\","
			    "\"echo err >&2\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(rint_(&r, "exit_code"), 4);
	list = cJSON_GetObjectItem(r.result, "output_json");
	ck_assert_int_eq(cJSON_GetArraySize(list), 4);
	c = cJSON_GetArrayItem(list, 1);
	ck_assert_str_eq(dstr(c, "command"), "cat f; exit 4");
	ck_assert_str_eq(dstr(c, "output"), "one\n");
	ck_assert_int_eq(cJSON_GetObjectItem(c, "exit_code")->valueint, 4);
	c = cJSON_GetArrayItem(list, 3);
	ck_assert_str_eq(dstr(c, "output"), "err\n");
	run_free(&r);
}
END_TEST

START_TEST(test_shell_batch_clips_output_head_and_tail)
{
	struct run r;
	const char *out;

	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.batch\",\"commands\":["
		   "\"echo START; head -c 200000 /dev/zero | tr '\\\\0' x; "
		   "echo; echo END\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	out = dstr(cJSON_GetArrayItem(
			   cJSON_GetObjectItem(r.result, "output_json"), 0),
		   "output");
	ck_assert_ptr_nonnull(out);
	ck_assert(strncmp(out, "START\n", 6) == 0);
	ck_assert_ptr_nonnull(strstr(out, "...(clipped"));
	ck_assert(strlen(out) < 7000);
	ck_assert_str_eq(out + strlen(out) - 4, "END\n");
	run_free(&r);
}
END_TEST

START_TEST(test_shell_batch_command_timeout_times_out_the_job)
{
	struct run r;

	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.batch\","
		   "\"command_timeout_s\":0.3,\"commands\":[\"echo a\","
		   "\"sleep 30\",\"touch never\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_str_eq(errfield(&r, "type"), "Timeout");
	ck_assert_int_eq(cJSON_GetArraySize(
				 cJSON_GetObjectItem(r.result, "output_json")),
			 2);
	ck_assert_int_eq(access(path_in("work/never"), F_OK), -1);
	run_free(&r);
}
END_TEST

START_TEST(test_shell_batch_job_timeout_bounds_all_commands)
{
	struct run r;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"timeout_s\":0.5,"
			    "\"commands\":[\"sleep 0.3\",\"sleep 0.3\","
			    "\"touch never\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert(r.elapsed < 10);
	ck_assert_int_eq(access(path_in("work/never"), F_OK), -1);
	run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */

static void expect_usage_error(const char *job, const char *needle)
{
	struct run r;

	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 64);
	ck_assert_msg(strstr(r.err, needle) != NULL, "stderr '%s' lacks '%s'",
		      r.err, needle);
	ck_assert_ptr_null(r.result);
	run_free(&r);
}

START_TEST(test_malformed_jobs_exit_64_with_a_reason)
{
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"tr",
			   "not valid JSON");
	expect_usage_error("[1,2]", "must be a JSON object");
	expect_usage_error("{\"v\":2,\"job_id\":\"j\",\"run_id\":\"r\","
			   "\"kind\":\"shell.check\",\"argv\":[\"true\"]}",
			   "'v' must be 1");
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				    "[\"true\"],\"colour\":1}",
			   "unknown field 'colour'");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				    "\"x\",\"argv\":[\"true\"]}",
			   "field 'argv' is not allowed for kind "
			   "'agent.session'");
	expect_usage_error(JOB_HEAD "\"kind\":\"launch.rocket\"}",
			   "unknown job kind 'launch.rocket'");
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[]}",
			   "field 'argv' must be a non-empty list");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\"}",
			   "field 'prompt' is required");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				    "\"x\",\"host_tools\":[{\"name\":\"t\"}]}",
			   "host tools are not supported");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				    "\"x\",\"permission_mode\":\"god\"}",
			   "'permission_mode'");
	expect_usage_error("{\"v\":1,\"run_id\":\"r\","
			   "\"kind\":\"shell.check\",\"argv\":[\"true\"]}",
			   "field 'job_id' is required");
}
END_TEST

/* ---- upstream-shaped jobs and timed-out batches (issue 11, item 13) ---- */

/*
 * A job as upstream's host serialises its one JobRequest model: every
 * field present, the unused ones at their defaults (UPSTREAM 7.2).
 */
static char *upstream_job(const char *kind, const char *key, cJSON *value)
{
	cJSON *j = cJSON_Parse(
		"{\"v\":1,\"job_id\":\"job-1\",\"run_id\":\"run-1\","
		"\"timeout_s\":1800,\"cwd\":null,\"prompt\":null,"
		"\"system_message\":null,\"drop_system_sections\":[],"
		"\"model\":null,\"resume_session_id\":null,"
		"\"permission_mode\":\"auto\",\"expect\":\"text\","
		"\"max_tool_calls\":null,\"host_tools\":[],"
		"\"host_tools_dir\":null,\"host_tool_timeout_s\":120,"
		"\"available_tools\":null,\"argv\":null,\"commands\":null,"
		"\"command_timeout_s\":null,\"op\":null,\"params\":{}}");
	char *text;

	ck_assert_ptr_nonnull(j);
	cJSON_AddStringToObject(j, "kind", kind);
	if (key) {
		if (cJSON_GetObjectItem(j, key))
			cJSON_ReplaceItemInObject(j, key, value);
		else
			cJSON_AddItemToObject(j, key, value);
	}
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return text;
}

START_TEST(test_upstream_shaped_jobs_at_defaults_are_accepted)
{
	struct run r;
	char *job;
	cJSON *j;

	job = upstream_job("shell.check", "argv", cJSON_Parse("[\"true\"]"));
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "shell.check: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
	free(job);

	job = upstream_job("shell.batch", "commands",
			   cJSON_Parse("[\"true\"]"));
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "shell.batch: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
	free(job);

	job = upstream_job("github.op", "op", cJSON_CreateString("repo.get"));
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "github.op: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(errfield(&r, "type"), "NotAvailable");
	run_free(&r);
	free(job);

	put("scenario.json", "[{\"text\":\"hello\"}]");
	job = upstream_job("agent.session", "prompt", cJSON_CreateString("x"));
	j = cJSON_Parse(job);
	free(job);
	cJSON_AddStringToObject(j, "backend", "script");
	cJSON_AddStringToObject(j, "script", path_in("scenario.json"));
	job = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "agent.session: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "hello");
	run_free(&r);
	free(job);
}
END_TEST

/* Another kind's field off its default is a conflict, named. */
START_TEST(test_another_kinds_field_off_its_default_is_refused)
{
	static const struct {
		const char *kind, *primary, *pvalue, *key, *value, *msg;
	} cases[] = {
		{"shell.check", "argv", "[\"true\"]", "expect", "\"json\"",
		 "field 'expect' is not allowed for kind 'shell.check' (it "
		 "may only be null or \"text\", its default)"},
		{"agent.session", "prompt", "\"x\"", "params", "{\"a\":1}",
		 "field 'params' is not allowed for kind 'agent.session' (it "
		 "may only be null or {}, its default)"},
		{"shell.batch", "commands", "[\"true\"]", "host_tools",
		 "[{\"name\":\"t\"}]",
		 "field 'host_tools' is not allowed for kind 'shell.batch' "
		 "(it may only be null or [], its default)"},
		{"github.op", "op", "\"repo.get\"", "host_tool_timeout_s", "5",
		 "field 'host_tool_timeout_s' is not allowed for kind "
		 "'github.op' (it may only be null or 120, its default)"},
		{"shell.check", "argv", "[\"true\"]", "prompt", "\"hi\"",
		 "field 'prompt' is not allowed for kind 'shell.check' (it "
		 "may only be null, its default)"},
		{"shell.check", "argv", "[\"true\"]", "permission_mode",
		 "\"read_only\"", "field 'permission_mode' is not allowed"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *job = upstream_job(cases[i].kind, cases[i].primary,
					 cJSON_Parse(cases[i].pvalue));
		cJSON *j = cJSON_Parse(job);
		char *text;

		cJSON_ReplaceItemInObject(j, cases[i].key,
					  cJSON_Parse(cases[i].value));
		text = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
		expect_usage_error(text, cases[i].msg);
		free(text);
		free(job);
	}
}
END_TEST

/*
 * A batch command stopped for time reports the status it really ended
 * with and the signal; so does the job, never exit_code 0.
 */
START_TEST(test_timed_out_batch_reports_the_real_status_and_signal)
{
	struct run r;
	const cJSON *out, *e;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"command_timeout_s\":"
			    "0.3,\"commands\":[\"true\",\"sleep 30\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_int_eq(rint_(&r, "exit_code"), 143);
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"),
				     "command 'sleep 30' ran out of time"));
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"), "by SIGTERM"));
	out = cJSON_GetObjectItem(r.result, "output_json");
	e = cJSON_GetArrayItem(out, 0);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "exit_code")->valueint, 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(e, "timed_out"));
	e = cJSON_GetArrayItem(out, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "exit_code")->valueint, 143);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "timed_out")));
	ck_assert_str_eq(dstr(e, "signal"), "SIGTERM");
	run_free(&r);

	/* a command that ignores SIGTERM is killed: 137, SIGKILL */
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"command_timeout_s\":"
			    "0.3,\"commands\":[\"trap '' TERM; sleep 30\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_int_eq(rint_(&r, "exit_code"), 137);
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(r.result, "output_json"),
			       0);
	ck_assert_str_eq(dstr(e, "signal"), "SIGKILL");
	run_free(&r);

	/* shell.check keeps the status of a timed-out program too */
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"timeout_s\":0.3,"
			    "\"argv\":[\"sleep\",\"30\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_int_eq(rint_(&r, "exit_code"), 143);
	run_free(&r);
}
END_TEST

START_TEST(test_every_truncation_of_a_job_is_a_clean_64)
{
	static const char job[] = JOB_HEAD
		"\"kind\":\"agent.session\","
		"\"prompt\":\"p\",\"expect\":\"json\",\"timeout_s\":5}";
	size_t cut;

	for (cut = 0; cut < sizeof(job) - 1; cut += 3) {
		struct run r;
		char *part = strndup(job, cut);

		run_worker(&r, part, NULL);
		ck_assert_msg(r.rc == 64, "cut at %zu: exit %d", cut, r.rc);
		ck_assert_msg(strncmp(r.err, "error: ", 7) == 0,
			      "cut at %zu: stderr '%s'", cut, r.err);
		free(part);
		run_free(&r);
	}
}
END_TEST

START_TEST(test_oversized_job_is_refused)
{
	struct run r;
	FILE *f = fopen(path_in("job.json"), "w");
	char chunk[1024];
	int i;

	memset(chunk, 'x', sizeof(chunk));
	fputs(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"", f);
	for (i = 0; i < 5 * 1024; i++)
		fwrite(chunk, 1, sizeof(chunk), f);
	fputs("\"]}", f);
	fclose(f);
	run_worker(&r, NULL, NULL);
	ck_assert_int_eq(r.rc, 64);
	ck_assert_ptr_nonnull(strstr(r.err, "larger than"));
	run_free(&r);
}
END_TEST

START_TEST(test_usage_errors_exit_64)
{
	char cmd[800];

	snprintf(cmd, sizeof(cmd), "'%s' run --job x --events y 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd),
		 "'%s' run --job x --events y --result z "
		 "--frobnicate 1 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd),
		 "'%s' run --job x --events y --result z "
		 "--heartbeat soon 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd), "'%s' fly 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd),
		 "'%s' run --job /nonexistent/job.json "
		 "--events %s --result %s 2>/dev/null",
		 getenv("SBXLOOP_WORKER"), path_in("e"), path_in("r"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
}
END_TEST

START_TEST(test_bad_cwd_exits_64)
{
	struct run r;

	put("job.json", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				 "[\"true\"]}");
	run_worker(&r, NULL, "--cwd", "/nonexistent/dir", NULL);
	ck_assert_int_eq(r.rc, 64);
	ck_assert_ptr_nonnull(strstr(r.err, "'/nonexistent/dir'"));
	run_free(&r);
}
END_TEST

START_TEST(test_unwritable_result_exits_70)
{
	struct run r;

	put("job.json", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				 "[\"true\"]}");
	put("blocker", "a file, not a directory");
	run_worker(&r, NULL, "--result", path_in("blocker/res.json"), NULL);
	ck_assert_int_eq(r.rc, 70);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot write"));
	run_free(&r);
}
END_TEST

START_TEST(test_unopenable_events_file_exits_70)
{
	struct run r;

	put("job.json", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				 "[\"true\"]}");
	put("blocker", "a file, not a directory");
	run_worker(&r, NULL, "--events", path_in("blocker/ev.jsonl"), NULL);
	ck_assert_int_eq(r.rc, 70);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot open events file"));
	ck_assert_ptr_null(r.result);
	run_free(&r);
}
END_TEST

START_TEST(test_sigterm_kills_the_job_and_exits_70)
{
	char job[512];
	pid_t worker, sleeper;
	int status;

	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.check\","
		 "\"argv\":[\"sh\",\"-c\",\"sleep 60 & echo $! > %s; wait\"]}",
		 path_in("sleeper"));
	put("job.json", "%s", job);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		exec_worker_quietly();
	}
	while (read_pid("sleeper") <= 0)
		usleep(10000);
	sleeper = read_pid("sleeper");
	ck_assert_int_eq(kill(worker, SIGTERM), 0);
	ck_assert_int_eq(waitpid(worker, &status, 0), worker);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 70);
	ck_assert(wait_gone(sleeper, 3));
	ck_assert_int_eq(access(path_in("res.json"), F_OK), -1);
}
END_TEST

START_TEST(test_github_op_is_a_typed_not_available_error)
{
	struct run r;
	const cJSON *d;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"github.op\",\"op\":\"repo.get\","
			    "\"params\":{\"repo\":\"a/b\"}}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "NotAvailable");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "not available"));
	ck_assert_int_eq(count_events(&r, "worker.error", &d), 1);
	ck_assert_str_eq(dstr(d, "error_type"), "NotAvailable");
	run_free(&r);
}
END_TEST

/* ---------------------------------------------------------------- */

static void agent_job(char *buf, size_t n, const char *extra)
{
	snprintf(buf, n,
		 JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
			  "\"do the thing\",\"backend\":\"script\","
			  "\"script\":\"%s\"%s}",
		 path_in("scenario.json"), extra);
}

START_TEST(test_script_replies_in_order_across_processes)
{
	struct run r;
	char job[1024];

	put("scenario.json", "[{\"text\":\"first\",\"session_id\":\"s-1\"},"
			     "{\"text\":\"second\"}]");
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "first");
	ck_assert_str_eq(rstr(&r, "session_id"), "s-1");
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "output_text"), "second");
	ck_assert_str_eq(rstr(&r, "session_id"), "script-job-1");
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ScriptExhausted");
	run_free(&r);
}
END_TEST

/*
 * The script backend turns calls past max_tool_calls away, as upstream's
 * SDK backend does: not run, counted, announced once; the reply stands.
 */
START_TEST(test_script_turns_away_calls_past_the_ceiling)
{
	struct run r;
	char job[1024], *path;
	const cJSON *d, *h;

	put("scenario.json", "[{\"text\":\"done\",\"run\":["
			     "\"echo a > ceil-a.txt\",\"echo b > ceil-b.txt\","
			     "\"echo c > ceil-c.txt\"]}]");
	agent_job(job, sizeof(job), ",\"max_tool_calls\":1");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "done");
	ck_assert_int_eq(count_events(&r, "agent.tool_start", NULL), 1);
	ck_assert_int_eq(count_events(&r, "agent.tool_cap", &d), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "cap")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "calls")->valueint, 2);
	h = cJSON_GetObjectItem(r.result, "health");
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_calls")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_cap_denials")->valueint,
			 2);
	/* the first call ran, the others did not */
	path = path_in("work/ceil-a.txt");
	ck_assert_int_eq(access(path, F_OK), 0);
	path = path_in("work/ceil-b.txt");
	ck_assert_int_ne(access(path, F_OK), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_script_cursor_holds_under_concurrent_workers)
{
	char job[1024], cmd[2048], *s;
	int i, seen[8] = {0};
	FILE *f = fopen(path_in("scenario.json"), "w");

	fputs("[", f);
	for (i = 0; i < 8; i++)
		fprintf(f, "%s{\"text\":\"r%d\"}", i ? "," : "", i);
	fputs("]", f);
	fclose(f);
	agent_job(job, sizeof(job), "");
	put("job.json", "%s", job);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && for i in 1 2 3 4 5 6 7 8; do "
		 "'%s' run --heartbeat 0 --job job.json --events ev$i "
		 "--result res$i --cwd work > /dev/null & done; wait; "
		 "cat res? > all",
		 dir, getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(system(cmd), 0);
	s = slurp(path_in("all"));
	for (i = 0; i < 8; i++) {
		char needle[32];

		snprintf(needle, sizeof(needle), "\"r%d\"", i);
		seen[i] = strstr(s, needle) != NULL;
		ck_assert_msg(seen[i], "reply %d never consumed", i);
	}
	free(s);
}
END_TEST

START_TEST(test_script_reply_acts_on_the_workspace_first)
{
	struct run r;
	char job[1024];
	const cJSON *d;
	char *content;

	put("scenario.json",
	    "[{\"files\":{\"src/new.txt\":\"hello\\n\"},"
	    "\"run\":[\"cat src/new.txt > copy.txt; echo ran\"],"
	    "\"events\":[{\"type\":\"agent.custom\",\"data\":{\"k\":1}}],"
	    "\"usage\":{\"model\":\"m\",\"input_tokens\":3},"
	    "\"text\":\"done\"}]");
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	content = slurp(path_in("work/copy.txt"));
	ck_assert_str_eq(content, "hello\n");
	free(content);
	ck_assert_int_eq(count_events(&r, "agent.tool_start", NULL), 1);
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "output"), "ran\n");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "success")));
	ck_assert_int_eq(count_events(&r, "agent.custom", &d), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "k")->valueint, 1);
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "content"), "done");
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r.result, "usage"),
				    "input_tokens")
			->valueint,
		3);
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r.result, "health"),
				    "tool_calls")
			->valueint,
		1);
	run_free(&r);
}
END_TEST

/*
 * A critic's job (permission_mode read_only): the reply's file writes are
 * refused as denied `write` tool calls, nothing lands in the workspace,
 * and the reply's answer still stands.
 */
START_TEST(test_script_read_only_job_refuses_file_writes)
{
	struct run r;
	char job[1024];
	const cJSON *d, *h;

	put("scenario.json",
	    "[{\"files\":{\"critic.txt\":\"x\\n\",\"src/b.txt\":\"y\\n\"},"
	    "\"json\":{\"verdict\":\"pass\",\"issues\":[],"
	    "\"feedback\":\"\"}}]");
	agent_job(job, sizeof(job), ",\"permission_mode\":\"read_only\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_ne(access(path_in("work/critic.txt"), F_OK), 0);
	ck_assert_int_ne(access(path_in("work/src"), F_OK), 0);
	ck_assert_int_eq(count_events(&r, "agent.permission_denied", &d), 2);
	ck_assert_str_eq(dstr(d, "tool"), "write");
	ck_assert_ptr_nonnull(strstr(dstr(d, "reason"), "read_only"));
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 2);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "success")));
	ck_assert_ptr_nonnull(strstr(dstr(d, "error"), "read-only"));
	h = cJSON_GetObjectItem(r.result, "health");
	ck_assert_int_eq(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(h, "permission_denials"), "write")
			->valueint,
		2);
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_calls")->valueint, 2);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(r.result, "output_json"));
	run_free(&r);

	/* the same reply in an ordinary job writes */
	put("scenario.json", "[{\"files\":{\"critic.txt\":\"x\\n\"}}]");
	unlink(path_in("scenario.json.cursor"));
	agent_job(job, sizeof(job), ",\"permission_mode\":\"auto\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(access(path_in("work/critic.txt"), F_OK), 0);
	ck_assert_int_eq(count_events(&r, "agent.permission_denied", NULL), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_script_fail_and_unsafe_paths_are_errors)
{
	struct run r;
	char job[1024];

	put("scenario.json", "[{\"fail\":\"model overloaded\"},"
			     "{\"files\":{\"../escape.txt\":\"x\"}}]");
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentError");
	ck_assert_str_eq(errfield(&r, "message"), "model overloaded");
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(errfield(&r, "type"), "ScriptInvalid");
	ck_assert_int_eq(access(path_in("escape.txt"), F_OK), -1);
	run_free(&r);
}
END_TEST

START_TEST(test_script_sleep_past_timeout_is_timeout)
{
	struct run r;
	char job[1024];

	put("scenario.json", "[{\"sleep_s\":30,\"text\":\"late\"}]");
	agent_job(job, sizeof(job), ",\"timeout_s\":0.3");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert(r.elapsed < 10);
	run_free(&r);
}
END_TEST

START_TEST(test_script_stopped_during_its_pause_takes_no_side_effect)
{
	char job[1024];
	pid_t worker;
	int status;

	put("scenario.json",
	    "[{\"sleep_s\":30,\"files\":{\"late.txt\":\"x\\n\"},"
	    "\"run\":[\"touch ran.txt\"],\"text\":\"late\"}]");
	agent_job(job, sizeof(job), "");
	put("job.json", "%s", job);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		exec_worker_quietly();
	}
	/* the worker is in its pause once it has taken the reply */
	while (access(path_in("scenario.json.cursor"), F_OK) < 0 &&
	       waitpid(worker, &status, WNOHANG) == 0)
		usleep(10000);
	usleep(200000);
	ck_assert_int_eq(kill(worker, SIGTERM), 0);
	ck_assert_int_eq(waitpid(worker, &status, 0), worker);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 70);
	ck_assert_int_eq(access(path_in("work/late.txt"), F_OK), -1);
	ck_assert_int_eq(access(path_in("work/ran.txt"), F_OK), -1);
	ck_assert_int_eq(access(path_in("res.json"), F_OK), -1);
}
END_TEST

START_TEST(test_script_backend_from_environment)
{
	struct run r;

	put("scenario.json", "[{\"text\":\"via env\"}]");
	setenv("SBXLOOP_WORKER_BACKEND", "script", 1);
	setenv("SBXLOOP_SCRIPT", path_in("scenario.json"), 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
			    "\"p\"}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "output_text"), "via env");
	run_free(&r);
	setenv("SBXLOOP_WORKER_BACKEND", "telepathy", 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
			    "\"p\"}",
		   NULL);
	ck_assert_str_eq(errfield(&r, "type"), "BackendUnavailable");
	run_free(&r);
}
END_TEST

/* expect=json: one scenario, one job per extraction case */
START_TEST(test_expect_json_extraction_cases)
{
	static const char *const cases[][2] = {
		{"a ```json\\n{\\\"x\\\":1}\\n``` b "
		 "```\\n{\\\"x\\\":2}\\n```",
		 "{\"x\":2}"},
		{"```json\\n{\\\"x\\\":1}\\n``` then "
		 "```json\\nnot json\\n```",
		 "{\"x\":1}"},
		{"  [1, 2, 3]  ", "[1,2,3]"},
		{"I think {\\\"a\\\":1} and finally {\\\"b\\\":[2]} ok",
		 "{\"b\":[2]}"},
		{"outer {\\\"a\\\":{\\\"inner\\\":true}} end",
		 "{\"a\":{\"inner\":true}}"},
	};
	struct run r;
	char job[1024], scen[2048] = "[";
	size_t i;

	for (i = 0; i < 5; i++) {
		strcat(scen, i ? ",{\"text\":\"" : "{\"text\":\"");
		strcat(scen, cases[i][0]);
		strcat(scen, "\"}");
	}
	strcat(scen, ",{\"text\":\"no json here {oops\"}]");
	put("scenario.json", "%s", scen);
	agent_job(job, sizeof(job), ",\"expect\":\"json\"");
	for (i = 0; i < 5; i++) {
		cJSON *want = cJSON_Parse(cases[i][1]);

		run_worker(&r, job, NULL);
		ck_assert_msg(r.result != NULL, "case %zu: no result", i);
		ck_assert_msg(cJSON_Compare(cJSON_GetObjectItem(r.result,
								"output_json"),
					    want, 1),
			      "case %zu", i);
		cJSON_Delete(want);
		run_free(&r);
	}
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ExpectedJsonMissing");
	ck_assert_str_eq(errfield(&r, "message"),
			 "agent response contained no parseable JSON");
	ck_assert_str_eq(errfield(&r, "detail"), "no json here {oops");
	run_free(&r);
}
END_TEST

/*
 * A megabyte of unclosed nesting as the answer (1 MB took 49 s before):
 * the job ends with ExpectedJsonMissing well inside its timeout, and an
 * answer behind the nesting is still found.
 */
START_TEST(test_expect_json_on_a_megabyte_of_unclosed_nesting)
{
	size_t n = 1024 * 1024;
	char *text = malloc(n + 64), job[1024];
	struct run r;
	FILE *f;

	memset(text, '[', n);
	text[n] = '\0';
	f = fopen(path_in("scenario.json"), "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[{\"text\":\"%s\"},{\"text\":\"%s {\\\"ok\\\":1}\"}]",
		text, text);
	fclose(f);
	free(text);
	agent_job(job, sizeof(job), ",\"expect\":\"json\",\"timeout_s\":20");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ExpectedJsonMissing");
	ck_assert_msg(r.elapsed < 5, "took %.1fs", r.elapsed);
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(r.result, "output_json"), "ok")
			->valueint,
		1);
	ck_assert_msg(r.elapsed < 5, "took %.1fs", r.elapsed);
	run_free(&r);
}
END_TEST

/*
 * A job's process (the same uid as the worker, not root: the test drops
 * to nobody when it runs as root) cannot open the worker's stdout through
 * /proc to forge event lines: the worker is not dumpable.
 */
START_TEST(test_job_processes_cannot_open_the_workers_stdout)
{
	char job[1024], *res;
	const char *argv[16];
	cJSON *result;
	int status, n = 0;
	pid_t pid;

	ck_assert_int_eq(chmod(dir, 0777), 0);
	ck_assert_int_eq(chmod(path_in("work"), 0777), 0);
	put("scenario.json",
	    "[{\"run\":[\"o=ENED r=FUSED; if printf x > /proc/$PPID/fd/1;"
	    " then echo OP$o; else echo RE$r; fi\"],\"text\":\"done\"}]");
	agent_job(job, sizeof(job), "");
	put("job.json", "%s", job);
	ck_assert_int_eq(chmod(path_in("scenario.json"), 0644), 0);
	ck_assert_int_eq(chmod(path_in("job.json"), 0644), 0);
	n = worker_argv(argv);
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int o = open("/dev/null", O_WRONLY);

		if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(126);
		dup2(o, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "worker status %d", status);
	res = slurp(path_in("res.json"));
	ck_assert_ptr_nonnull(res);
	result = cJSON_Parse(res);
	free(res);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(result, "status")),
		"ok");
	cJSON_Delete(result);
	res = slurp(path_in("ev.jsonl"));
	ck_assert_ptr_nonnull(res);
	ck_assert_msg(strstr(res, "REFUSED") && !strstr(res, "OPENED"),
		      "events: %s", res);
	free(res);
}
END_TEST

START_TEST(test_long_event_lines_are_capped)
{
	struct run r;
	FILE *f = fopen(path_in("scenario.json"), "w");
	char job[1024], *line, *save;
	int i;

	fputs("[{\"text\":\"", f);
	for (i = 0; i < 300 * 1024; i++)
		fputc('a' + i % 26, f);
	fputs("\"}]", f);
	fclose(f);
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_uint_eq(strlen(rstr(&r, "output_text")), 300 * 1024);
	for (line = strtok_r(r.events, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		ck_assert_uint_le(strlen(line), 256 * 1024);
	ck_assert_int_eq(count_events(&r, "agent.message", NULL), 1);
	run_free(&r);
}
END_TEST

/* ---------------------------------------------------------------- */

static char *argv_log(void)
{
	return slurp(path_in("argv.log"));
}

static void command_job(char *buf, size_t n, const char *preset,
			const char *extra)
{
	snprintf(buf, n,
		 JOB_HEAD
		 "\"kind\":\"agent.session\",\"prompt\":"
		 "\"fix it\",\"backend\":\"command\",\"preset\":\"%s\"%s}",
		 preset, extra);
	setenv("SBXLOOP_FAKE_AGENT_LOG", path_in("argv.log"), 1);
}

START_TEST(test_copilot_preset_is_the_default_and_reads_text)
{
	struct run r;
	char *log;
	const cJSON *d;

	setenv("SBXLOOP_FAKE_AGENT_LOG", path_in("argv.log"), 1);
	setenv("SBXLOOP_FAKE_AGENT_REPLY", "plain answer", 1);
	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"agent.session\",\"prompt\":"
		   "\"fix it\",\"model\":\"gpt-x\",\"resume_session_id\":"
		   "\"old\"}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "plain answer");
	log = argv_log();
	ck_assert_str_eq(log,
			 "copilot\n-p\nfix it\n-s\n--no-ask-user\n"
			 "--allow-all-tools\n--model=gpt-x\n--resume\nold\n");
	free(log);
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "content"), "plain answer");
	run_free(&r);
}
END_TEST

/*
 * A CLI cannot be told no per call: past max_tool_calls the worker
 * stops the agent (here hanging for a minute) and says why.
 */
START_TEST(test_command_backend_stops_an_agent_past_its_tool_ceiling)
{
	struct run r;
	char job[1024];
	const cJSON *d;

	setenv("SBXLOOP_FAKE_AGENT_TOOLS", "5", 1);
	setenv("SBXLOOP_FAKE_AGENT_HANG", "60", 1);
	command_job(job, sizeof(job), "claude", ",\"max_tool_calls\":3");
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ToolCallCeiling");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "tool-call ceiling of 3 "
				     "(budgets.max_tool_calls_per_phase)"));
	ck_assert_int_eq(count_events(&r, "agent.tool_cap", &d), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "cap")->valueint, 3);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "calls")->valueint, 4);
	ck_assert_str_eq(dstr(d, "tool"), "Read");
	/* stopped, not waited for */
	ck_assert_msg(r.elapsed < 30, "took %.1f s", r.elapsed);
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_HANG");

	/* at the ceiling, not past it: a normal answer */
	command_job(job, sizeof(job), "claude", ",\"max_tool_calls\":6");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(count_events(&r, "agent.tool_cap", NULL), 0);
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_TOOLS");
}
END_TEST

START_TEST(test_copilot_read_only_denies_writes)
{
	struct run r;
	char job[1024], *log;

	command_job(job, sizeof(job), "copilot",
		    ",\"permission_mode\":\"read_only\"");
	run_worker(&r, job, NULL);
	log = argv_log();
	ck_assert_ptr_nonnull(strstr(log, "--deny-tool=write\n"));
	ck_assert_ptr_null(strstr(log, "--model"));
	free(log);
	run_free(&r);
}
END_TEST

START_TEST(test_claude_preset_maps_stream_json)
{
	struct run r;
	char job[1024], *log;
	const cJSON *d, *u, *h;

	setenv("SBXLOOP_FAKE_AGENT_REPLY", "all fixed", 1);
	command_job(job, sizeof(job), "claude",
		    ",\"model\":\"opus\",\"resume_session_id\":\"s0\","
		    "\"system_message\":\"be brief\","
		    "\"permission_mode\":\"read_only\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "all fixed");
	ck_assert_str_eq(rstr(&r, "session_id"), "claude-sess-1");
	log = argv_log();
	ck_assert_ptr_nonnull(strstr(log, "claude\n-p\nfix it\n"
					  "--output-format\nstream-json\n"
					  "--verbose\n"));
	ck_assert_ptr_nonnull(strstr(log, "--model\nopus\n"));
	ck_assert_ptr_nonnull(strstr(log, "--resume\ns0\n"));
	ck_assert_ptr_nonnull(strstr(log, "--append-system-prompt\n"
					  "be brief\n"));
	ck_assert_ptr_nonnull(strstr(log, "--disallowedTools\n"));
	free(log);
	ck_assert_int_eq(count_events(&r, "agent.tool_start", &d), 1);
	ck_assert_str_eq(dstr(d, "tool"), "Bash");
	ck_assert_str_eq(dstr(d, "args"), "ls -la");
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "tool"), "Bash");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "success")));
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "model"), "claude-test");
	ck_assert_int_eq(count_events(&r, "agent.usage", NULL), 1);
	u = cJSON_GetObjectItem(r.result, "usage");
	ck_assert_int_eq(cJSON_GetObjectItem(u, "input_tokens")->valueint, 10);
	ck_assert_int_eq(
		cJSON_GetObjectItem(u, "cache_write_tokens")->valueint, 2);
	ck_assert(cJSON_GetObjectItem(u, "cost")->valuedouble == 0.25);
	h = cJSON_GetObjectItem(r.result, "health");
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(h, "tool_failures"),
				    "Bash")
			->valueint,
		1);
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_calls")->valueint, 1);
	run_free(&r);
}
END_TEST

START_TEST(test_codex_preset_maps_exec_json_and_resume)
{
	struct run r;
	char job[1024], *log;
	const cJSON *d, *u;

	setenv("SBXLOOP_FAKE_AGENT_REPLY", "codex says {\"ok\":true}", 1);
	command_job(job, sizeof(job), "codex",
		    ",\"resume_session_id\":\"t-9\",\"expect\":\"json\","
		    "\"system_message\":\"SYS\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "session_id"), "codex-thread-1");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(r.result, "output_json"), "ok")));
	log = argv_log();
	ck_assert_str_eq(log, "codex\nexec\n--json\n--full-auto\nresume\n"
			      "t-9\nSYS\n\nfix it\n");
	free(log);
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "args"), "bash -lc ls");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "success")));
	u = cJSON_GetObjectItem(r.result, "usage");
	ck_assert_int_eq(cJSON_GetObjectItem(u, "cache_read_tokens")->valueint,
			 4);
	run_free(&r);
}
END_TEST

START_TEST(test_gemini_preset_joins_message_deltas)
{
	struct run r;
	char job[1024], *log;
	const cJSON *d;

	setenv("SBXLOOP_FAKE_AGENT_REPLY", "gemini answer", 1);
	command_job(job, sizeof(job), "gemini", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "gemini answer");
	ck_assert_str_eq(rstr(&r, "session_id"), "gemini-sess-1");
	ck_assert_int_eq(count_events(&r, "agent.message_delta", NULL), 2);
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "content"), "gemini answer");
	ck_assert_int_eq(count_events(&r, "agent.tool_start", &d), 1);
	ck_assert_str_eq(dstr(d, "args"), "README.md");
	log = argv_log();
	ck_assert_ptr_nonnull(strstr(log, "--approval-mode\nyolo\n"));
	free(log);
	run_free(&r);
}
END_TEST

START_TEST(test_unknown_session_falls_back_to_a_new_one)
{
	struct run r;
	char job[1024], *log;

	setenv("SBXLOOP_FAKE_AGENT_NO_RESUME", "1", 1);
	command_job(job, sizeof(job), "claude",
		    ",\"resume_session_id\":\"gone\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "session_id"), "claude-sess-1");
	log = argv_log();
	ck_assert_ptr_null(strstr(log, "--resume"));
	free(log);
	run_free(&r);
}
END_TEST

START_TEST(test_agent_command_failure_is_error_result)
{
	struct run r;
	char job[1024];

	setenv("SBXLOOP_FAKE_AGENT_EXIT", "3", 1);
	command_job(job, sizeof(job), "claude", "");
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentError");
	ck_assert_int_eq(rint_(&r, "exit_code"), 3);
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "detail"), "failing on request"));
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_EXIT");
	setenv("PATH", "/usr/bin:/bin", 1);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(errfield(&r, "type"), "BackendUnavailable");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"), "'claude'"));
	run_free(&r);
}
END_TEST

START_TEST(test_agent_sees_only_allowlisted_environment)
{
	struct run r;
	char job[1024], *env;

	setenv("SBXLOOP_FAKE_AGENT_ENV", path_in("agent.env"), 1);
	setenv("GH_TOKEN", "ghp_test", 1);
	setenv("LC_ALL", "C", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak", 1);
	setenv("LD_PRELOAD", "", 1);
	command_job(job, sizeof(job), "copilot", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	env = slurp(path_in("agent.env"));
	ck_assert_ptr_nonnull(env);
	ck_assert_ptr_nonnull(strstr(env, "GH_TOKEN=ghp_test\n"));
	ck_assert_ptr_nonnull(strstr(env, "LC_ALL=C\n"));
	ck_assert_ptr_nonnull(strstr(env, "SBXLOOP_FAKE_AGENT_ENV="));
	ck_assert_ptr_nonnull(strstr(env, "PATH="));
	ck_assert_ptr_null(strstr(env, "AWS_SECRET_ACCESS_KEY"));
	ck_assert_ptr_null(strstr(env, "LD_PRELOAD"));
	free(env);
	run_free(&r);
}
END_TEST

START_TEST(test_env_file_fills_only_unset_or_sentinel_vars)
{
	struct run r;

	mkdir(path_in(".sbxloop"), 0700);
	put(".sbxloop/env.sh",
	    "# secrets\nexport A_UNSET='from file'\n"
	    "B_REAL=file-b\nexport C_SENTINEL=\"real c\"\n"
	    "D_PROXY=real-d # trailing comment\n\nnot a line\n");
	put("persistent.sh", "export E_PERSIST=pe\nA_UNSET=persist-loses\n");
	setenv("B_REAL", "real-b", 1);
	setenv("C_SENTINEL", "sbx-cs-1234", 1);
	setenv("D_PROXY", "proxy-managed", 1);
	unsetenv("A_UNSET");
	unsetenv("E_PERSIST");
	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.check\",\"argv\":[\"sh\","
		   "\"-c\",\"echo \\\"$A_UNSET|$B_REAL|$C_SENTINEL|$D_PROXY|"
		   "$E_PERSIST\\\"\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"),
			 "from file|real-b|real c|real-d|pe\n");
	run_free(&r);
	/* an explicit --env-file replaces the default one */
	put("other.sh", "A_UNSET=other\n");
	run_worker(&r, NULL, "--env-file", path_in("other.sh"), NULL);
	ck_assert_str_eq(rstr(&r, "output_text"),
			 "other|real-b|sbx-cs-1234|proxy-managed|pe\n");
	run_free(&r);
}
END_TEST

/* ---------------------------------------------------------------- */

START_TEST(test_resource_sample_at_start_is_classified)
{
	struct run r;
	const cJSON *d;

	setenv("SBXLOOP_FAKE_DISK_PCT", "50", 1);
	setenv("SBXLOOP_FAKE_MEM_PCT", "20", 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"true\"]}",
		   "--heartbeat", "30", "--disk-warn", "40", "--disk-abort",
		   "90", "--mem-warn", "80", NULL);
	ck_assert_int_eq(count_events(&r, "sandbox.resources", &d), 1);
	ck_assert_str_eq(dstr(d, "level"), "warn");
	ck_assert(cJSON_GetObjectItem(d, "disk_used_pct")->valuedouble == 50);
	ck_assert(cJSON_GetObjectItem(d, "mem_used_pct")->valuedouble == 20);
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", &d), 1);
	ck_assert_str_eq(dstr(d, "message"),
			 "sandbox resources under "
			 "pressure: disk 50% used (disk_warn: 40%)");
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
	/* thresholds of 0 are disabled; real figures are reported */
	unsetenv("SBXLOOP_FAKE_DISK_PCT");
	unsetenv("SBXLOOP_FAKE_MEM_PCT");
	run_worker(&r, NULL, "--heartbeat", "30", NULL);
	ck_assert_int_eq(count_events(&r, "sandbox.resources", &d), 1);
	ck_assert_str_eq(dstr(d, "level"), "ok");
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "disk_total_bytes")));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "mem_total_kb")));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "load1")));
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", NULL),
			 0);
	run_free(&r);
}
END_TEST

START_TEST(test_memory_abort_names_memory)
{
	struct run r;
	char job[1024];
	const cJSON *d;

	put("scenario.json", "[{\"fail\":\"agent crashed\"}]");
	setenv("SBXLOOP_FAKE_MEM_PCT", "97.5", 1);
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, "--heartbeat", "30", "--mem-abort", "95", NULL);
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", &d), 1);
	ck_assert_str_eq(dstr(d, "level"), "abort");
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "SandboxResourcesExhausted");
	ck_assert_str_eq(errfield(&r, "message"),
			 "sandbox memory exhausted: "
			 "97.5% of memory is used (mem_abort threshold: 95%)");
	ck_assert_str_eq(errfield(&r, "detail"),
			 "underlying failure: AgentError: agent crashed");
	run_free(&r);
}
END_TEST

START_TEST(test_heartbeat_escalation_and_abort_rewrite)
{
	struct run r;
	char job[1024];
	const cJSON *ev;
	int ok_seen = 0, abort_seen = 0;

	put("figures", "disk=10\nmem=10\n");
	setenv("SBXLOOP_FAKE_RESOURCES", path_in("figures"), 1);
	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.batch\","
		 "\"timeout_s\":1.2,\"commands\":[\"sleep 0.3\","
		 "\"printf 'disk=96\\\\nmem=10\\\\n' > %s\",\"sleep 30\"]}",
		 path_in("figures"));
	run_worker(&r, job, "--heartbeat", "0.2", "--disk-warn", "80",
		   "--disk-abort", "95", NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_ge(count_events(&r, "worker.heartbeat", NULL), 2);
	cJSON_ArrayForEach (ev, r.events_list) {
		const cJSON *d = cJSON_GetObjectItem(ev, "data");

		if (strcmp(cJSON_GetObjectItem(ev, "type")->valuestring,
			   "sandbox.resources"))
			continue;
		if (!strcmp(dstr(d, "level"), "ok"))
			ok_seen++;
		else if (!strcmp(dstr(d, "level"), "abort"))
			abort_seen++;
	}
	ck_assert_int_ge(ok_seen, 1);
	ck_assert_int_ge(abort_seen, 1);
	/* one warning for the one escalation, not one per sample */
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", NULL),
			 1);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "SandboxResourcesExhausted");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "sandbox disk exhausted: 96%"));
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"),
				     "underlying failure: Timeout: job timed "
				     "out"));
	run_free(&r);
}
END_TEST

START_TEST(test_abort_level_leaves_ok_results_alone)
{
	struct run r;

	setenv("SBXLOOP_FAKE_DISK_PCT", "99", 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"true\"]}",
		   "--heartbeat", "30", "--disk-abort", "90", NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
}
END_TEST

START_TEST(test_worker_dies_with_its_parent)
{
	char job[512];
	pid_t mid, worker, sleeper;
	int status;

	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.check\","
		 "\"argv\":[\"sh\",\"-c\",\"echo $$ > %s; exec sleep 60\"]}",
		 path_in("sleeper"));
	put("job.json", "%s", job);
	mid = fork();
	ck_assert_int_ge(mid, 0);
	if (mid == 0) {
		pid_t w = fork();

		if (w == 0) {
			exec_worker_quietly();
		}
		put("worker.pid", "%d\n", (int)w);
		/* wait until the job runs, then vanish */
		while (access(path_in("sleeper"), F_OK) < 0)
			usleep(10000);
		usleep(100000);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(mid, &status, 0), mid);
	worker = read_pid("worker.pid");
	sleeper = read_pid("sleeper");
	ck_assert_int_gt(worker, 0);
	ck_assert_int_gt(sleeper, 0);
	ck_assert(wait_gone(worker, 5));
	ck_assert(wait_gone(sleeper, 5));
	ck_assert_int_eq(access(path_in("res.json"), F_OK), -1);
}
END_TEST

static Suite *worker_suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc;

	tc = tcase_create("protocol");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_version_prints_program_and_package_version);
	tcase_add_test(tc, test_events_sorted_enveloped_mirrored_to_stdout);
	tcase_add_test(tc, test_job_from_stdin);
	tcase_add_test(tc, test_malformed_jobs_exit_64_with_a_reason);
	tcase_add_test(tc, test_upstream_shaped_jobs_at_defaults_are_accepted);
	tcase_add_test(tc,
		       test_another_kinds_field_off_its_default_is_refused);
	tcase_add_test(tc, test_every_truncation_of_a_job_is_a_clean_64);
	tcase_add_test(tc, test_oversized_job_is_refused);
	tcase_add_test(tc, test_usage_errors_exit_64);
	tcase_add_test(tc, test_bad_cwd_exits_64);
	tcase_add_test(tc, test_unwritable_result_exits_70);
	tcase_add_test(tc, test_unopenable_events_file_exits_70);
	tcase_add_test(tc, test_sigterm_kills_the_job_and_exits_70);
	tcase_add_test(tc, test_github_op_is_a_typed_not_available_error);
	tcase_add_test(tc, test_long_event_lines_are_capped);
	tcase_add_test(tc, test_worker_dies_with_its_parent);
	suite_add_tcase(s, tc);

	tc = tcase_create("shell");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_shell_check_nonzero_exit_is_ok_result);
	tcase_add_test(tc, test_shell_check_missing_program_is_error_result);
	tcase_add_test(tc, test_timeout_kills_forked_sleeper);
	tcase_add_test(tc, test_timeout_escalates_to_sigkill_after_grace);
	tcase_add_test(tc, test_background_leftovers_die_with_the_command);
	tcase_add_test(tc, test_batch_runs_in_order_reports_first_failure);
	tcase_add_test(tc, test_shell_batch_clips_output_head_and_tail);
	tcase_add_test(tc, test_shell_batch_command_timeout_times_out_the_job);
	tcase_add_test(tc, test_shell_batch_job_timeout_bounds_all_commands);
	tcase_add_test(
		tc, test_timed_out_batch_reports_the_real_status_and_signal);
	suite_add_tcase(s, tc);

	tc = tcase_create("script");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_script_replies_in_order_across_processes);
	tcase_add_test(tc, test_script_turns_away_calls_past_the_ceiling);
	tcase_add_test(tc, test_script_cursor_holds_under_concurrent_workers);
	tcase_add_test(tc, test_script_reply_acts_on_the_workspace_first);
	tcase_add_test(tc, test_script_read_only_job_refuses_file_writes);
	tcase_add_test(tc, test_script_fail_and_unsafe_paths_are_errors);
	tcase_add_test(tc, test_script_sleep_past_timeout_is_timeout);
	tcase_add_test(
		tc, test_script_stopped_during_its_pause_takes_no_side_effect);
	tcase_add_test(tc, test_script_backend_from_environment);
	tcase_add_test(tc, test_expect_json_extraction_cases);
	tcase_add_test(tc, test_expect_json_on_a_megabyte_of_unclosed_nesting);
	tcase_add_test(tc, test_job_processes_cannot_open_the_workers_stdout);
	suite_add_tcase(s, tc);

	tc = tcase_create("command");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_copilot_preset_is_the_default_and_reads_text);
	tcase_add_test(tc, test_copilot_read_only_denies_writes);
	tcase_add_test(
		tc, test_command_backend_stops_an_agent_past_its_tool_ceiling);
	tcase_add_test(tc, test_claude_preset_maps_stream_json);
	tcase_add_test(tc, test_codex_preset_maps_exec_json_and_resume);
	tcase_add_test(tc, test_gemini_preset_joins_message_deltas);
	tcase_add_test(tc, test_unknown_session_falls_back_to_a_new_one);
	tcase_add_test(tc, test_agent_command_failure_is_error_result);
	tcase_add_test(tc, test_agent_sees_only_allowlisted_environment);
	suite_add_tcase(s, tc);

	tc = tcase_create("environment");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_env_file_fills_only_unset_or_sentinel_vars);
	tcase_add_test(tc, test_resource_sample_at_start_is_classified);
	tcase_add_test(tc, test_memory_abort_names_memory);
	tcase_add_test(tc, test_heartbeat_escalation_and_abort_rewrite);
	tcase_add_test(tc, test_abort_level_leaves_ok_results_alone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(worker_suite());
	int failed;

	if (!getenv("SBXLOOP_WORKER")) {
		fputs("test-worker: SBXLOOP_WORKER is not set\n", stderr);
		return 77; /* skipped */
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

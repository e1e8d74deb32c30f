/*
 * bench/github: figures for the GitHub delivery and the github reporter,
 * printed, never asserted.
 *   1. `sbxloop deliver RUN` of a completed run with N text files (500
 *      unless given) against tests/fakes/github-server on loopback: the
 *      HTTP requests it made, the github.op jobs (one worker, so one
 *      connection, per job: the fake counts connections), the wall time
 *      and sbxloop's own CPU (the workers excluded);
 *   2. the github reporter's host CPU per event: the real module loaded
 *      through the core, its jobs answered by a canned in-process hook
 *      (no worker), fed E events (200,000) of which one in 50 is a
 *      task.end that queues a comment; the queue thread's work included.
 *
 *   bench/github [FILES] [EVENTS]
 *
 * Environment as `make check` sets it (SBXLOOP_BIN, SBXLOOP_WORKER,
 * SBXLOOP_SRCDIR, SBXLOOP_BUILDDIR, SBXLOOP_PLUGIN_PATH).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/events.h>
#include <sbxloop/reporter.h>
#include <sbxloop/sink.h>

#include "cpu.h"
#include "github-support.h"
#include "host/core.h"

#define TOKEN "ghp_benchToken0123456789abcdefghijkl"

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* One task whose EXECUTE writes n files of about 200 bytes each. */
static char *scenario(int n)
{
	cJSON *root = cJSON_Parse(
		"[{\"json\":{\"tasks\":[{\"id\":\"t1\",\"title\":\"files\"}]}},"
		"{\"json\":{\"steps\":[\"write\"]}},"
		"{\"text\":\"done\",\"files\":{}},"
		"{\"json\":{\"verdict\":\"pass\",\"issues\":[],"
		"\"feedback\":\"\"}},"
		"{\"json\":{\"verdict\":\"accept\",\"issues\":[],"
		"\"feedback\":\"\"}}]");
	cJSON *files =
		cJSON_GetObjectItem(cJSON_GetArrayItem(root, 2), "files");
	char name[64], body[256];
	char *text;
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "src/m%03d/file%03d.c", i / 50,
			 i);
		snprintf(
			body, sizeof(body),
			"/* file %d */\nint f%d(int x)\n{\n\treturn x + %d;\n"
			"}\n/* padding padding padding padding padding padding "
			"padding padding padding padding */\n",
			i, i, i);
		cJSON_AddStringToObject(files, name, body);
	}
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

/* sbxloop ARGS in dir; its own CPU in *cpu_ms; the exit status. */
static int sbxloop(const char *dir, char *const *args, double *cpu_ms,
		   double *wall_s)
{
	siginfo_t si;
	double t0 = now();
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (chdir(dir) < 0)
			_exit(126);
		dup2(null, 1);
		dup2(null, 2);
		setenv("GH_TOKEN", TOKEN, 1);
		execv(env_or("SBXLOOP_BIN", "./sbxloop"), args);
		_exit(127);
	}
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
	       errno == EINTR)
		;
	*wall_s = now() - t0;
	*cpu_ms = bench_proc_runtime_ms(pid);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int bench_delivery(int n_files)
{
	static const char *const repos[] = {"octo/bench", NULL};
	struct gh_fake fake;
	char dir[] = "/tmp/sbxloop-ghbench-XXXXXX", cfg[2048], run[64] = "";
	char *text, cmd[300];
	char *run_args[] = {"sbxloop", "run", "bench", "--no-tui", NULL};
	double cpu, wall;
	int before, requests, conns, rc = -1;
	FILE *p;

	memset(&fake, 0, sizeof(fake));
	if (!mkdtemp(dir) || gh_fake_start(&fake, TOKEN, repos) < 0)
		return -1;
	snprintf(cfg, sizeof(cfg),
		 "state_dir: state\nprompts_dir: %s/prompts\n"
		 "worker_path: %s\nplugins:\n  sandbox: local\n  sinks: []\n"
		 "agent:\n  backend: script\n  script: scenario.json\n"
		 "local:\n  isolation: none\nlimits:\n  disk_warn: 0\n"
		 "  disk_abort: 0\n  mem_warn: 0\n  mem_abort: 0\n"
		 "github:\n  repo: octo/bench\n  api_url: %s\n",
		 env_or("SBXLOOP_SRCDIR", "."),
		 env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"), fake.url);
	text = scenario(n_files);
	if (write_file(dir, "sbxloop.yaml", cfg) < 0 ||
	    write_file(dir, "scenario.json", text) < 0) {
		free(text);
		goto out;
	}
	free(text);
	if (sbxloop(dir, run_args, &cpu, &wall) != 0) {
		fprintf(stderr, "bench: the run failed; see %s\n", dir);
		goto out;
	}
	snprintf(cmd, sizeof(cmd), "ls '%s/state/runs'", dir);
	p = popen(cmd, "r");
	if (!p || !fgets(run, sizeof(run), p)) {
		if (p)
			pclose(p);
		goto out;
	}
	pclose(p);
	run[strcspn(run, "\n")] = '\0';
	{
		char *args[] = {"sbxloop", "deliver", run, "--no-report",
				NULL};
		cJSON *reqs = gh_fake_requests(&fake);

		before = cJSON_GetArraySize(reqs);
		cJSON_Delete(reqs);
		if (sbxloop(dir, args, &cpu, &wall) != 0) {
			fprintf(stderr, "bench: deliver failed; see %s\n",
				dir);
			goto out;
		}
	}
	gh_fake_count(&fake, before, &requests, &conns);
	printf("delivery of %d text files: %d HTTP requests, %d github.op "
	       "jobs (connections), wall %.0f ms, sbxloop CPU %.1f ms "
	       "(run_start's repository probe included: 1 job, 1 request)\n",
	       n_files, requests, conns, wall * 1000.0, cpu);
	rc = 0;
out:
	gh_fake_stop(&fake);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: cannot remove %s\n", dir);
	return rc;
}

/* ---------------------------------------- the reporter, in process */

static long jobs_answered;

static int canned_job(void *user, const char *role, cJSON *job, cJSON **result,
		      struct sbxloop_error *err)
{
	const char *op = cJSON_GetStringValue(cJSON_GetObjectItem(job, "op"));

	(void)user;
	(void)role;
	(void)err;
	jobs_answered++;
	*result = cJSON_Parse(
		op && !strcmp(op, "issue.create")
			? "{\"status\":\"ok\",\"output_json\":{\"number\":1,"
			  "\"url\":\"https://github.com/o/r/issues/1\"}}"
		: op && !strcmp(op, "search.issues")
			? "{\"status\":\"ok\",\"output_json\":{\"items\":[]}}"
			: "{\"status\":\"ok\",\"output_json\":{}}");
	return 0;
}

static int bench_reporter(long n_events)
{
	struct sl_config_opts opts = {NULL, NULL, 1, 1};
	struct sl_core *core = NULL;
	struct sl_instance rep;
	struct sbxloop_error err = {0, ""};
	const struct sbxloop_reporter_ops *ops;
	struct sbxloop_run_info ri;
	struct sbxloop_event ev;
	struct rusage r0, r1;
	char *errors = NULL, dir[] = "/tmp/sbxloop-ghrep-XXXXXX", cfg[700];
	double t0, cpu;
	long i, ends = 0;

	if (!mkdtemp(dir))
		return -1;
	snprintf(cfg, sizeof(cfg), "%s/sbxloop.yaml", dir);
	if (write_file(dir, "sbxloop.yaml",
		       "github:\n  repo: o/r\n  report: true\n") < 0)
		return -1;
	opts.config_file = cfg;
	if (sl_core_open(&core, &opts, &errors) < 0 ||
	    sl_core_instantiate(core, SBXLOOP_KIND_REPORTER, "github", &rep,
				&err) < 0) {
		fprintf(stderr,
			"bench: cannot load the github reporter: %s%s\n",
			errors ? errors : "", err.message);
		free(errors);
		sl_core_close(core);
		return -1;
	}
	sl_core_set_job_hook(core, canned_job, NULL);
	ops = rep.ops;
	memset(&ri, 0, sizeof(ri));
	ri.struct_size = sizeof(ri);
	ri.run_id = "rbench0001";
	ri.outcome = "bench";
	ri.state = "running";
	ops->run_start(rep.ctx, &ri, &err);
	memset(&ev, 0, sizeof(ev));
	ev.struct_size = sizeof(ev);
	ev.run_id = ri.run_id;
	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	for (i = 0; i < n_events; i++) {
		if (i % 50 == 49) {
			ev.type = SBXLOOP_EV_TASK_END;
			ev.data_json =
				"{\"state\":\"done\",\"task_id\":\"t1\","
				"\"title\":\"a task\"}";
			ends++;
		} else {
			ev.type = SBXLOOP_EV_AGENT_TOOL_END;
			ev.data_json = "{\"ok\":true,\"tool\":\"bash\"}";
		}
		ops->event(rep.ctx, &ev, &err);
	}
	ri.state = "completed";
	ops->run_end(rep.ctx, &ri, &err); /* drains the comment queue */
	getrusage(RUSAGE_SELF, &r1);
	cpu = bench_tv_ms(&r1.ru_utime) - bench_tv_ms(&r0.ru_utime) +
	      bench_tv_ms(&r1.ru_stime) - bench_tv_ms(&r0.ru_stime);
	printf("github reporter: %ld events (%ld task.end, each a queued "
	       "comment; %ld jobs answered in process), %.3f us host CPU "
	       "per event, wall %.0f ms\n",
	       n_events, ends, jobs_answered, cpu * 1000.0 / (double)n_events,
	       (now() - t0) * 1000.0);
	sl_instance_destroy(&rep);
	sl_core_close(core);
	unlink(cfg);
	rmdir(dir);
	return 0;
}

int main(int argc, char **argv)
{
	int files = argc > 1 ? atoi(argv[1]) : 500;
	long events = argc > 2 ? atol(argv[2]) : 200000;
	int rc = 0;

	if (bench_delivery(files) < 0)
		rc = 1;
	if (bench_reporter(events) < 0)
		rc = 1;
	return rc;
}

/*
 * The whole-run benches' shared pieces (runs.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "runs.h"

int bench_run_sbxloop(const char *dir, const char *const *env,
		      struct bench_proc *m)
{
	struct bench_cpu own = {-1, -1};
	struct rusage ru;
	siginfo_t si;
	double t0;
	pid_t pid;
	int status = -1;

	memset(m, 0, sizeof(*m));
	t0 = bench_now();
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (chdir(dir) < 0)
			_exit(126);
		dup2(null, 1);
		dup2(null, 2);
		for (; env && *env; env++)
			putenv((char *)*env);
		execl(bench_env_or("SBXLOOP_BIN", "./sbxloop"), "sbxloop",
		      "run", "benchmark", "--no-tui", (char *)NULL);
		_exit(127);
	}
	/* read its own CPU while it is a zombie, then reap it */
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
	       errno == EINTR)
		;
	m->wall_s = bench_now() - t0;
	bench_proc_cpu(pid, &own);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	m->user_ms = own.user_ms;
	m->sys_ms = own.sys_ms;
	m->tree_ms = bench_tv_ms(&ru.ru_utime) + bench_tv_ms(&ru.ru_stime);
	m->rss_mb = (double)ru.ru_maxrss / 1024.0;
	m->status = status;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

const char *bench_env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_write_scenario(const char *path, int n, double execute_s, int steer)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f)
		return -1;
	fputs("[{\"json\":{\"tasks\":[", f);
	for (i = 1; i <= n; i++)
		fprintf(f, "%s{\"id\":\"t%d\",\"title\":\"task %d\"}",
			i > 1 ? "," : "", i, i);
	fputs("]}}", f);
	for (i = 1; i <= n; i++) {
		fputs(",\n{\"json\":{\"steps\":[\"nothing\"]}}", f);
		if (execute_s > 0)
			fprintf(f, ",\n{\"text\":\"done t%d\",\"sleep_s\":%g}",
				i, execute_s);
		else
			fprintf(f, ",\n{\"text\":\"done t%d\"}", i);
		if (steer)
			fputs(",\n{\"json\":{\"reply\":\"noted\"}}", f);
		fputs(",\n{\"json\":{\"verdict\":\"pass\"}}"
		      ",\n{\"json\":{\"verdict\":\"accept\"}}",
		      f);
	}
	fputs("]\n", f);
	return fclose(f);
}

int bench_write_keyed_scenario(const char *path, int n, double job_s)
{
	static const char *const replies[] = {
		"{\"json\":{\"steps\":[\"write the file\"]}",
		NULL, /* EXECUTE: writes out-tN.txt */
		"{\"json\":{\"verdict\":\"pass\"}",
		"{\"json\":{\"verdict\":\"accept\"}",
	};
	FILE *f = fopen(path, "w");
	int i, k;

	if (!f)
		return -1;
	fputs("[{\"json\":{\"tasks\":[", f);
	for (i = 1; i <= n; i++)
		fprintf(f,
			"%s{\"id\":\"t%d\",\"title\":\"task %d\","
			"\"verify_commands\":[\"test -f out-t%d.txt\"]}",
			i > 1 ? "," : "", i, i, i);
	fputs("]}}", f);
	for (i = 1; i <= n; i++)
		for (k = 0; k < 4; k++) {
			fputs(",\n", f);
			if (replies[k])
				fputs(replies[k], f);
			else
				fprintf(f,
					"{\"text\":\"done\",\"files\":"
					"{\"out-t%d.txt\":\"ok\\n\"}",
					i);
			fprintf(f, ",\"task\":\"t%d\",\"sleep_s\":%g}", i,
				job_s);
		}
	fputs("]\n", f);
	return fclose(f);
}

int bench_write_config(const char *path, int n, const char *plugins,
		       const char *extra)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f,
		"state_dir: state\n"
		"prompts_dir: %s/prompts\n"
		"worker_path: %s\n"
		"plugins:\n%s"
		"agent:\n  backend: script\n  script: scenario.json\n"
		"budgets:\n  max_tasks: %d\n"
		"limits:\n  disk_warn: 0\n  disk_abort: 0\n  mem_warn: 0\n"
		"  mem_abort: 0\n%s",
		bench_env_or("SBXLOOP_SRCDIR", "."),
		bench_env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"),
		plugins, n + 1, extra ? extra : "");
	return fclose(f);
}

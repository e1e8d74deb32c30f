/*
 * bench/lanes [TASKS [JOB_MS [ROUNDS]]]: parallel lanes. A real
 * `sbxloop run` of 16 independent tasks (TASKS if given) on the local
 * provider, in a git project (so each lane works in a worktree and merges
 * back), with a scripted agent whose every job takes 200 ms (JOB_MS if
 * given; 0 makes the runs as fast as the host can go, which shows what
 * bounds the lanes when the jobs are short), at 1, 2, 4 and 8 lanes, in
 * 3 rounds (ROUNDS if given) that go through the lane counts in turn, so
 * a neighbour taking a CPU for a while slows one round, not one lane
 * count. Prints each run's wall time and speed-up over the same round's
 * one lane, then per lane count the medians over the rounds: the wall
 * time and the speed-up over one lane; the same for the tasks alone
 * (first task.start to last task.end, from the run's store:
 * provisioning, DECOMPOSE and teardown are serial whatever the lanes);
 * sbxloop's own CPU per job, also with the processes it started
 * (workers, git), that per task (lanes in process start fewer jobs a
 * task) and its peak RSS. Figures only; nothing is asserted. The target:
 * a speed-up of at least 0.9 x lanes (the work is sleeping, so two cores
 * do not bound it) and the CPU per job of one lane. BENCH_KEEP set keeps
 * the runs' directories (their stores, for the events' timestamps).
 *
 * Environment: SBXLOOP_BIN, SBXLOOP_WORKER, SBXLOOP_SRCDIR (prompts) and
 * SBXLOOP_PLUGIN_PATH as in `make check`; defaults suit the build tree.
 * The runs happen under TMPDIR (/tmp when unset): TMPDIR=/dev/shm shows
 * what the file system costs.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu.h"
#include "db.h"
#include "runs.h"

#define N_COUNTS 4    /* 1, 2, 4 and 8 lanes */
#define ROUNDS_MAX 20 /* <= BENCH_MEDIAN_MAX */

/* What one run at one lane count measured. */
struct figures {
	double wall;     /* the whole run, s */
	double tasks;    /* first task.start to last task.end, s */
	double cpu_job;  /* sbxloop's own CPU per job, ms */
	double tree_job; /* with its children, ms */
	double jobs;     /* jobs the run started, DECOMPOSE's too */
	double rss_mb;
};

/*
 * One run in `dir`, which the caller made and removes. Every run's
 * directory stays until the last run is done: removing thousands of
 * files makes the next run's file creations slower for a while (ext4
 * without a journal, as here, skips recently freed inodes one by one),
 * which would charge one lane count for another's clean-up.
 */
static int bench(int n, double job_s, int lanes, struct figures *f, char *dir)
{
	char path[1024], cmd[1280];
	char extra[128], lanes_env[64];
	const char *env[] = {lanes_env, NULL};
	struct bench_proc m;
	double jobs;

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && mkdir repo && cd repo && git init -q && "
		 "echo hi > README && git add . && git -c user.name=b -c "
		 "user.email=b@b commit -qm init",
		 dir);
	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	if (system(cmd) != 0 || bench_write_keyed_scenario(path, n, job_s) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/sbxloop.yaml", dir);
	snprintf(extra, sizeof(extra),
		 "sandbox:\n  workspace: repo\n"
		 "run:\n  attest: off\n");
	if (bench_write_config(path, n, "  sandbox: local\n  sinks: []\n",
			       extra) < 0)
		return -1;
	/* budgets are written by bench_write_config: lanes through env */
	snprintf(lanes_env, sizeof(lanes_env),
		 "SBXLOOP_BUDGETS__MAX_PARALLEL_TASKS=%d", lanes);
	if (bench_run_sbxloop(dir, env, &m) < 0) {
		fprintf(stderr,
			"bench: the run with %d lanes failed (status "
			"%d); see %s\n",
			lanes, m.status, dir);
		return -1;
	}
	f->wall = m.wall_s;
	/* the part lanes run in parallel; decompose and setup are serial */
	snprintf(path, sizeof(path), "%s/state/state.db", dir);
	f->tasks = bench_db_value(path, BENCH_SQL_TASKS_SPAN);
	/* every job the run started, as its events say (DECOMPOSE, then
	 * four agent jobs a task, VERIFY and, unless lanes read it in
	 * process, the review's evidence) */
	jobs = bench_db_value(path, BENCH_SQL_JOBS);
	if (jobs < 1)
		return -1;
	f->jobs = jobs;
	f->cpu_job = (m.user_ms + m.sys_ms) / jobs;
	f->tree_job = m.tree_ms / jobs;
	f->rss_mb = m.rss_mb;
	return 0;
}

static void remove_dir(const char *dir)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: cannot remove %s\n", dir);
}

/*
 * What "two cores" means here: a VM's vCPUs need not be equal, nor stay
 * so while the runs go (the machine is shared).
 */
static void cpu_speeds(const char *when)
{
	int cpu[8], k, got;
	double speed[8];

	got = bench_cpu_speeds(cpu, speed, 8, 3);
	printf("CPUs %s (a spin loop pinned to each, relative to the "
	       "fastest):",
	       when);
	for (k = 0; k < got; k++)
		printf(" cpu%d %.2f", cpu[k], speed[k]);
	printf("\n");
}

/* The median of one figure over the rounds of lane count i. */
static double median_of(struct figures f[][N_COUNTS], int rounds, int i,
			size_t field)
{
	double v[ROUNDS_MAX];
	int r;

	for (r = 0; r < rounds; r++)
		memcpy(&v[r], (const char *)&f[r][i] + field, sizeof(double));
	return bench_median(v, rounds);
}

#define MEDIAN(f, rounds, i, name)                                            \
	median_of((f), (rounds), (i), offsetof(struct figures, name))

int main(int argc, char **argv)
{
	static const int lanes[N_COUNTS] = {1, 2, 4, 8};
	static struct figures fig[ROUNDS_MAX][N_COUNTS];
	static char dirs[ROUNDS_MAX * N_COUNTS][200];
	int n = argc > 1 ? atoi(argv[1]) : 16, i, r, made = 0, rc = 0;
	int job_ms = argc > 2 ? atoi(argv[2]) : 200;
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	const char *tmp = getenv("TMPDIR");

	if (n < 2 || n > 200 || job_ms < 0 || job_ms > 10000 ||
	    (argc > 2 && !isdigit((unsigned char)argv[2][0])) || rounds < 1 ||
	    rounds > ROUNDS_MAX || argc > 4) {
		fputs("usage: bench/lanes [TASKS, 2..200 [JOB_MS, 0..10000 "
		      "[ROUNDS, 1..20]]]\n",
		      stderr);
		return 2;
	}
	if (tmp && strlen(tmp) > 150) {
		fputs("bench: TMPDIR is longer than 150 bytes\n", stderr);
		return 2;
	}
	cpu_speeds("before");
	printf("%d independent tasks, every job %d ms, %d round(s) of 1, 2, "
	       "4 and 8 lanes:\n",
	       n, job_ms, rounds);
	for (r = 0; r < rounds && !rc; r++) {
		for (i = 0; i < N_COUNTS; i++) {
			struct figures *f = &fig[r][i], *one = &fig[r][0];
			char *dir = dirs[made];

			snprintf(dir, sizeof(dirs[0]),
				 "%s/sbxloop-bench-lanes-XXXXXX",
				 tmp && *tmp ? tmp : "/tmp");
			if (!mkdtemp(dir)) {
				perror("bench: mkdtemp");
				rc = 1;
				break;
			}
			made++;
			if (bench(n, job_ms / 1000.0, lanes[i], f, dir) < 0) {
				/* the failed run's directory stays to be
				 * read */
				fprintf(stderr, "bench: kept %s\n", dir);
				made--;
				rc = 1;
				break;
			}
			printf("round %d lanes=%d  wall %6.2f s  speed-up %5.2f "
			       "(%.2f x lanes)  tasks %6.2f s  speed-up %5.2f "
			       "(%.2f x lanes)\n",
			       r + 1, lanes[i], f->wall, one->wall / f->wall,
			       one->wall / f->wall / lanes[i], f->tasks,
			       one->tasks / f->tasks,
			       one->tasks / f->tasks / lanes[i]);
			fflush(stdout);
		}
	}
	if (!rc) {
		double one_wall = MEDIAN(fig, rounds, 0, wall);
		double one_tasks = MEDIAN(fig, rounds, 0, tasks);

		printf("median of %d round(s), each lane count's figures:\n",
		       rounds);
		for (i = 0; i < N_COUNTS; i++) {
			double wall = MEDIAN(fig, rounds, i, wall);
			double tasks = MEDIAN(fig, rounds, i, tasks);
			double jobs = MEDIAN(fig, rounds, i, jobs);

			printf("lanes=%d  wall %6.2f s  speed-up %5.2f (%.2f x "
			       "lanes)  tasks %6.2f s (%.0f ms a task)  "
			       "speed-up %5.2f (%.2f x lanes)  sbxloop CPU "
			       "%.2f ms/job (with its children %.1f; %.0f a "
			       "task, %.1f jobs)  peak RSS %.1f MB\n",
			       lanes[i], wall, one_wall / wall,
			       one_wall / wall / lanes[i], tasks,
			       tasks * 1000 / n, one_tasks / tasks,
			       one_tasks / tasks / lanes[i],
			       MEDIAN(fig, rounds, i, cpu_job),
			       MEDIAN(fig, rounds, i, tree_job),
			       MEDIAN(fig, rounds, i, tree_job) * jobs / n,
			       jobs / n, MEDIAN(fig, rounds, i, rss_mb));
		}
	}
	cpu_speeds("after");
	for (i = 0; i < made; i++)
		if (getenv("BENCH_KEEP"))
			printf("kept %s\n", dirs[i]);
		else
			remove_dir(dirs[i]);
	return rc;
}

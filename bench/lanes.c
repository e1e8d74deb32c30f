/*
 * bench/lanes: parallel lanes. A real `sbxloop run` of 16 independent
 * tasks (N if given) on the local provider, in a git project (so each
 * lane works in a worktree and merges back), with a scripted agent
 * whose every job takes 200 ms, at 1, 2, 4 and 8 lanes. Prints per lane
 * count the wall time and the speed-up over one lane (same process, same
 * scenario); the same for the tasks alone (first task.start to last
 * task.end, from the run's store: provisioning, DECOMPOSE and teardown
 * are serial whatever the lanes); sbxloop's own CPU per job, also with
 * the processes it started (workers, git), and its peak RSS. Figures
 * only; nothing is asserted. The target: a speed-up of at least 0.9 x
 * lanes (the work is sleeping, so two cores do not bound it) and the
 * CPU per job of one lane.
 *
 * Environment: SBXLOOP_BIN, SBXLOOP_WORKER, SBXLOOP_SRCDIR (prompts) and
 * SBXLOOP_PLUGIN_PATH as in `make check`; defaults suit the build tree.
 * The runs happen under TMPDIR (/tmp when unset): TMPDIR=/dev/shm shows
 * what the file system costs.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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

#define JOB_S 0.2

/* Every reply keyed to its task, each taking JOB_S. */
static int write_scenario(const char *path, int n)
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
				JOB_S);
		}
	fputs("]\n", f);
	return fclose(f);
}

/* What one run at one lane count measured. */
struct figures {
	double wall;     /* the whole run, s */
	double tasks;    /* first task.start to last task.end, s */
	double cpu_job;  /* sbxloop's own CPU per job, ms */
	double tree_job; /* with its children, ms */
	double rss_mb;
};

/*
 * One run in `dir`, which the caller made and removes. Every run's
 * directory stays until the last run is done: removing thousands of
 * files makes the next run's file creations slower for a while (ext4
 * without a journal, as here, skips recently freed inodes one by one),
 * which would charge one lane count for another's clean-up.
 */
static int bench(int n, int lanes, struct figures *f, char *dir)
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
	if (system(cmd) != 0 || write_scenario(path, n) < 0)
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
	 * six a task: four agent jobs, the review's evidence and VERIFY) */
	jobs = bench_db_value(path, BENCH_SQL_JOBS);
	if (jobs < 1)
		return -1;
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

int main(int argc, char **argv)
{
	static const int lanes[] = {1, 2, 4, 8};
	int n = argc > 1 ? atoi(argv[1]) : 16, i, made = 0, rc = 0;
	const char *tmp = getenv("TMPDIR");
	char dirs[4][200];
	struct figures one = {0, 0, 0, 0, 0};

	if (n < 2 || n > 200) {
		fputs("usage: bench/lanes [TASKS, 2..200]\n", stderr);
		return 2;
	}
	if (tmp && strlen(tmp) > 150) {
		fputs("bench: TMPDIR is longer than 150 bytes\n", stderr);
		return 2;
	}
	printf("%d independent tasks, every job %.0f ms:\n", n, JOB_S * 1000);
	for (i = 0; i < 4; i++) {
		struct figures f;

		snprintf(dirs[i], sizeof(dirs[i]),
			 "%s/sbxloop-bench-lanes-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dirs[i])) {
			perror("bench: mkdtemp");
			rc = 1;
			break;
		}
		made = i + 1;
		if (bench(n, lanes[i], &f, dirs[i]) < 0) {
			/* the failed run's directory stays to be read */
			fprintf(stderr, "bench: kept %s\n", dirs[i]);
			made = i;
			rc = 1;
			break;
		}
		if (i == 0)
			one = f;
		printf("lanes=%d  wall %6.2f s  speed-up %5.2f (%.2f x lanes)  "
		       "tasks %6.2f s  speed-up %5.2f (%.2f x lanes)  sbxloop "
		       "CPU %.2f ms/job (with its children %.1f)  peak RSS "
		       "%.1f MB\n",
		       lanes[i], f.wall, one.wall / f.wall,
		       one.wall / f.wall / lanes[i], f.tasks,
		       one.tasks / f.tasks, one.tasks / f.tasks / lanes[i],
		       f.cpu_job, f.tree_job, f.rss_mb);
		fflush(stdout);
	}
	for (i = 0; i < made; i++)
		remove_dir(dirs[i]);
	return rc;
}

/*
 * bench/run: whole runs of the real `sbxloop` binary with N independent
 * tasks (N = 1, 20, 100 unless given) on the local provider and the
 * script backend with instant replies. Prints, per N, the host CPU that
 * sbxloop itself spent per worker job (the workers excluded), wall time
 * per job, state transitions per second and the peak RSS. Figures only;
 * nothing is asserted.
 *
 * Environment: SBXLOOP_BIN, SBXLOOP_WORKER, SBXLOOP_SRCDIR (prompts) and
 * SBXLOOP_PLUGIN_PATH as in `make check`; defaults suit the build tree.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "db.h"
#include "runs.h"

#define PLUGINS "  sandbox: local\n  sinks: []\n"

/* A count from the run's store, or -1. */
static long count(const char *db_path, const char *sql)
{
	return (long)bench_db_value(db_path, sql);
}

static int bench(int n)
{
	char dir[] = "/tmp/sbxloop-bench-XXXXXX", path[256], cmd[300];
	struct bench_proc m;
	double wall, cpu;
	long jobs, transitions;
	int rc = -1;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	if (bench_write_scenario(path, n, 0, 0) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/sbxloop.yaml", dir);
	if (bench_write_config(path, n, PLUGINS, NULL) < 0)
		goto out;
	if (bench_run_sbxloop(dir, NULL, &m) < 0) {
		fprintf(stderr,
			"bench: run with %d tasks failed (status %d); "
			"see %s\n",
			n, m.status, dir);
		return -1;
	}
	wall = m.wall_s;
	cpu = m.user_ms + m.sys_ms;
	snprintf(path, sizeof(path), "%s/state/state.db", dir);
	jobs = count(path, "SELECT count(*) FROM events WHERE "
			   "type='worker.start'");
	transitions = count(path, "SELECT count(*) FROM events WHERE "
				  "type IN ('run.state','task.state')") -
		      n; /* the roster announces every task once */
	printf("N=%-4d jobs=%-4ld host CPU %.2f ms/job (user %.2f + sys "
	       "%.2f)  wall %.2f ms/job  %.0f transitions/s  peak RSS %.1f "
	       "MB\n",
	       n, jobs, cpu / (double)jobs, m.user_ms / (double)jobs,
	       m.sys_ms / (double)jobs, wall * 1000.0 / (double)jobs,
	       (double)transitions / wall, m.rss_mb);
	rc = 0;
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: cannot remove %s\n", dir);
	return rc;
}

int main(int argc, char **argv)
{
	static const int dflt[] = {1, 20, 100};
	int i, rc = 0;

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			if (bench(atoi(argv[i])) < 0)
				rc = 1;
		return rc;
	}
	for (i = 0; i < 3; i++)
		if (bench(dflt[i]) < 0)
			rc = 1;
	return rc;
}

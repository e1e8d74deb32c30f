/*
 * The whole-run benches' shared pieces (runs.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runs.h"

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

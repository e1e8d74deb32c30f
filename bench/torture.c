/*
 * bench/torture: a thousand SIGKILL trials of the SQLite store (the same
 * trials tests/unit/test-store-durability runs a few dozen of), printing
 * how many lost a committed transition or its events. The target is zero.
 *
 *   bench/torture [TRIALS] [SEED]
 */
#include "config.h"

#include "store-torture.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct store_torture_result res;
	const char *base = getenv("TMPDIR");
	char dir[512];
	int trials = argc > 1 ? atoi(argv[1]) : 1000;
	unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10)
				 : (unsigned)time(NULL);
	struct timespec t0, t1;

	snprintf(dir, sizeof(dir), "%s/sbxloop-torture.XXXXXX",
		 base ? base : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (store_torture_run(dir, trials, seed, 120, 1, &res) != 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("torture: %d trials (seed %u) in %.1f s: %d lost anything\n",
	       res.trials, seed,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       res.lost);
	printf("torture: %d trials were killed after committing work, "
	       "%ld committed transitions checked\n",
	       res.committed, res.transitions);
	if (res.lost == 0)
		store_torture_rmtree(dir);
	else
		printf("torture: databases kept in '%s'\n", dir);
	return res.lost ? 1 : 0;
}

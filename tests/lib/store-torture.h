/*
 * SIGKILL durability trials of the SQLite store (store-torture.c): shared
 * by tests/unit/test-store-durability (a few dozen trials),
 * tests/store-torture (a command line) and bench/torture (a thousand).
 */
#ifndef SBXLOOP_TESTS_STORE_TORTURE_H
#define SBXLOOP_TESTS_STORE_TORTURE_H

struct store_torture_result {
	int trials;
	int lost;         /* trials where anything committed was missing */
	int committed;    /* trials that committed at least one transition */
	long transitions; /* transitions recorded as committed, all trials */
};

/*
 * Run `trials` trials under `dir` (created if needed): each forks a
 * writer, SIGKILLs it after a random delay below `max_delay_ms`, then
 * checks the database. `verbose` prints each loss on stderr. Returns 0,
 * or -1 when a trial could not even be set up (message on stderr).
 */
int store_torture_run(const char *dir, int trials, unsigned seed,
		      int max_delay_ms, int verbose,
		      struct store_torture_result *res);

/* rm -rf `dir`; 0 or -1. */
int store_torture_rmtree(const char *dir);

#endif

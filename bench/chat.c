/*
 * bench/chat: how long a steering message waits. A real `sbxloop run`
 * (local provider, script backend) of N tasks (10 unless given) whose
 * EXECUTE takes 500 ms; 100 ms into each task's EXECUTE, `sbxloop
 * steer` from this process queues a message, answered by a scripted
 * STEER reply.
 * From the store it prints, over the N messages: the wait from the
 * message's queueing to its STEER job starting (mostly the rest of the
 * EXECUTE: the next phase boundary), and the engine's own part, from
 * that boundary (the EXECUTE job's end) to the STEER job's start.
 * Figures only; nothing is asserted.
 *
 * Environment: SBXLOOP_BIN, SBXLOOP_WORKER, SBXLOOP_SRCDIR (prompts) and
 * SBXLOOP_PLUGIN_PATH as in `make check`; defaults suit the build tree.
 */
#include "config.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runs.h"

#define EXECUTE_S 0.5
#define MAX_N 200

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* sbxloop ARGS in `dir`, output discarded: the child's pid. */
static pid_t spawn(const char *dir, const char *a1, const char *a2,
		   const char *a3, const char *a4)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (chdir(dir) < 0)
			_exit(126);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execl(bench_env_or("SBXLOOP_BIN", "./sbxloop"), "sbxloop", a1,
		      a2, a3, a4, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int wait_ok(pid_t pid)
{
	int status;

	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			       WEXITSTATUS(status) == 0
		       ? 0
		       : -1;
}

/* The first column of `sql` as a double (-1 when no row). */
static double q(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	double v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print_stats(const char *what, double *ms, int n)
{
	double sum = 0;
	int i;

	qsort(ms, (size_t)n, sizeof(*ms), cmp);
	for (i = 0; i < n; i++)
		sum += ms[i];
	printf("%-44s median %7.1f ms  mean %7.1f ms  max %7.1f ms\n", what,
	       ms[n / 2], sum / n, ms[n - 1]);
}

static int bench(int n)
{
	char dir[] = "/tmp/sbxloop-bench-chat-XXXXXX", path[300], sql[512];
	char run[64] = "";
	double wait_ms[MAX_N], own_ms[MAX_N];
	sqlite3 *db = NULL;
	pid_t pid;
	int i, rc = -1;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	if (bench_write_scenario(path, n, EXECUTE_S, 1) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/sbxloop.yaml", dir);
	if (bench_write_config(path, n, "  sandbox: local\n  sinks: []\n",
			       NULL) < 0)
		return -1;
	pid = spawn(dir, "run", "benchmark", "--no-tui", NULL);
	snprintf(path, sizeof(path), "%s/state/state.db", dir);
	for (i = 1; i <= n; i++) {
		double seen = -1;
		int tries;

		/* task i executing (its row: events may wait in the
		 * engine's buffer until the next transition) */
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM tasks WHERE task_id = 't%d' "
			 "AND state = 'executing'",
			 i);
		for (tries = 0; tries < 6000 && seen < 1; tries++) {
			if (!db && access(path, F_OK) == 0)
				sqlite3_open_v2(path, &db,
						SQLITE_OPEN_READONLY, NULL);
			if (db)
				seen = q(db, sql);
			if (seen < 1)
				sleep_ms(5);
		}
		/* past the boundary before EXECUTE: inside its job */
		sleep_ms(100);
		if (!run[0] && db) {
			sqlite3_stmt *st = NULL;

			if (sqlite3_prepare_v2(db, "SELECT run_id FROM runs",
					       -1, &st, NULL) == SQLITE_OK &&
			    sqlite3_step(st) == SQLITE_ROW)
				snprintf(run, sizeof(run), "%s",
					 (const char *)sqlite3_column_text(st,
									   0));
			sqlite3_finalize(st);
		}
		if (seen < 1 || !run[0] ||
		    wait_ok(spawn(dir, "steer", run, "how is it going?",
				  NULL)) < 0) {
			fprintf(stderr,
				"bench: could not steer task %d; see "
				"%s\n",
				i, dir);
			goto out;
		}
	}
	if (wait_ok(pid) < 0) {
		fprintf(stderr, "bench: the run failed; see %s\n", dir);
		goto out;
	}
	for (i = 1; i <= n; i++) {
		double queued, boundary, start;

		snprintf(sql, sizeof(sql),
			 "SELECT created_at FROM chat_inbox WHERE id = %d", i);
		queued = q(db, sql);
		/* the STEER job: the first worker.start after chat.message */
		snprintf(sql, sizeof(sql),
			 "SELECT ts FROM events WHERE type = 'worker.start' "
			 "AND seq > (SELECT seq FROM events WHERE type = "
			 "'chat.message' AND json_extract(data_json, "
			 "'$.message_id') = %d) ORDER BY seq LIMIT 1",
			 i);
		start = q(db, sql);
		snprintf(sql, sizeof(sql),
			 "SELECT ts FROM events WHERE type = 'worker.end' "
			 "AND seq < (SELECT seq FROM events WHERE type = "
			 "'chat.message' AND json_extract(data_json, "
			 "'$.message_id') = %d) ORDER BY seq DESC LIMIT 1",
			 i);
		boundary = q(db, sql);
		if (queued < 0 || start < 0 || boundary < 0) {
			fprintf(stderr,
				"bench: message %d was not answered; "
				"see %s\n",
				i, dir);
			goto out;
		}
		wait_ms[i - 1] = (start - queued) * 1000.0;
		own_ms[i - 1] = (start - boundary) * 1000.0;
	}
	printf("%d messages, each queued while a %.0f ms EXECUTE ran:\n", n,
	       EXECUTE_S * 1000);
	print_stats("queued -> STEER job started", wait_ms, n);
	print_stats("  of which boundary -> STEER job started", own_ms, n);
	rc = 0;
out:
	sqlite3_close(db);
	if (rc == 0) {
		snprintf(path, sizeof(path), "rm -rf '%s'", dir);
		if (system(path) != 0)
			fprintf(stderr, "bench: cannot remove %s\n", dir);
	}
	return rc;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;

	if (n < 1 || n > MAX_N) {
		fprintf(stderr, "usage: bench/chat [N, 1..%d]\n", MAX_N);
		return 2;
	}
	return bench(n) < 0;
}

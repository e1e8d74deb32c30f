/*
 * bench/events: figures for the SQLite store, printed, never asserted.
 *   1. events/s appending N events (default 1,000,000) to one run, with a
 *      durable transition (a task update) every 100 events;
 *   2. ms for the query behind `logs RUN --type policy.` over that run
 *      (1% of its events match), iterating every row;
 *   3. ms for the query behind `status`: run_list over 10,000 runs.
 * Each phase runs in its own child process so its peak RSS is its own.
 *
 *   bench/events [EVENTS] [DIR]
 */
#include "config.h"

#include "fakehost.h"

#include <sbxloop/store.h>

#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"

extern const struct sbxloop_plugin_descriptor sbxloop_plugin_descriptor;

#define BENCH_RUN "rbench000"
#define BENCH_STATUS_RUNS 10000

static const struct sbxloop_store_ops *ops;
static char dir[512];
static long n_events = 1000000;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, const struct sbxloop_error *err)
{
	fprintf(stderr, "bench/events: %s: %s\n", what, err->message);
	exit(1);
}

static void *open_store(struct fakehost **fh)
{
	struct sbxloop_error err = {0};
	void *store = NULL;

	*fh = fakehost_new(dir);
	if (ops->create(fakehost_host(*fh), &store, &err))
		fail("create", &err);
	return store;
}

static int phase_append(void)
{
	static const char *const states[] = {"planning", "executing",
					     "scrutinizing", "verifying"};
	struct sbxloop_error err = {0};
	struct sbxloop_run_row run = {.struct_size = sizeof(run)};
	struct sbxloop_task_row task = {.struct_size = sizeof(task)};
	struct sbxloop_event ev = {.struct_size = sizeof(ev)};
	struct fakehost *fh;
	void *store = open_store(&fh);
	char data[160];
	long i, transitions = 0;
	double t0, t;

	run.run_id = BENCH_RUN;
	run.outcome = "benchmark";
	if (ops->run_create(store, &run, &err))
		fail("run_create", &err);
	task.run_id = BENCH_RUN;
	task.task_id = "t1";
	if (ops->tasks_save(store, BENCH_RUN, &task, 1, &err))
		fail("tasks_save", &err);
	ev.run_id = BENCH_RUN;
	ev.data_json = data;
	t0 = now();
	for (i = 0; i < n_events; i++) {
		ev.ts = 1.7e9 + (double)i / 1000.0;
		if (i % 100 == 50) {
			ev.type = "policy.allow";
			snprintf(data, sizeof(data),
				 "{\"task_id\":\"t1\",\"host\":\"pypi.org\","
				 "\"n\":%ld}",
				 i);
		} else {
			ev.type = i % 2 ? "agent.delta" : "sandbox.heartbeat";
			snprintf(data, sizeof(data),
				 "{\"task_id\":\"t1\",\"text\":\"a line of "
				 "agent output of a typical length\","
				 "\"n\":%ld}",
				 i);
		}
		if (ops->event_append(store, &ev, NULL, &err))
			fail("event_append", &err);
		if (i % 100 == 99) {
			task.state = states[transitions % 4];
			task.revisions = (int)(transitions % 3);
			if (ops->task_update(store, &task, &err))
				fail("task_update", &err);
			transitions++;
		}
	}
	if (ops->flush(store, &err))
		fail("flush", &err);
	t = now() - t0;
	printf("append: %ld events, %ld durable transitions in %.2f s: "
	       "%.0f events/s (target >= 200000)\n",
	       n_events, transitions, t, (double)n_events / t);
	ops->destroy(store);
	fakehost_free(fh);
	return 0;
}

/*
 * What one durable transition costs the disk alone: a small write and an
 * fdatasync, as SQLite does per commit with synchronous=FULL. A figure
 * to read the append rate against, since a transition must wait for it.
 */
static void measure_fsync(void)
{
	char path[600], page[4096];
	double t0, t;
	int fd, i, n = 300;

	snprintf(path, sizeof(path), "%s/fsync-probe", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;
	memset(page, 'x', sizeof(page));
	t0 = now();
	for (i = 0; i < n; i++)
		if (pwrite(fd, page, sizeof(page),
			   (off_t)(i % 64) * (off_t)sizeof(page)) < 0 ||
		    fdatasync(fd) != 0)
			break;
	t = (now() - t0) / n;
	close(fd);
	unlink(path);
	printf("disk: %.2f ms per write+fdatasync: at most %.0f events/s "
	       "with a durable transition every 100 events\n",
	       t * 1000, 100 / t);
}

static int count_row(void *user, const struct sbxloop_event *ev)
{
	long *n = user;

	/* Touch what `logs` prints. */
	if (ev->json[0] == '{' && ev->type[0])
		(*n)++;
	return 0;
}

static int phase_query(void)
{
	struct sbxloop_error err = {0};
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};
	struct fakehost *fh;
	void *store = open_store(&fh);
	long n = 0;
	double t0, t;

	q.run_id = BENCH_RUN;
	q.type_prefix = "policy.";
	t0 = now();
	if (ops->events_query(store, &q, count_row, &n, &err))
		fail("events_query", &err);
	t = now() - t0;
	printf("logs --type policy.: %ld of %ld events in %.1f ms "
	       "(target < 200 ms)\n",
	       n, n_events, t * 1000);
	ops->destroy(store);
	fakehost_free(fh);
	return 0;
}

/* 10,000 runs with 3 tasks and 4 attempts each, in one transaction. */
static void fill_runs(void)
{
	char path[600], sql[512];
	sqlite3 *db;
	int i, j;

	snprintf(path, sizeof(path), "%s/state.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		exit(1);
	sqlite3_busy_timeout(db, 10000);
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	for (i = 0; i < BENCH_STATUS_RUNS; i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO runs (run_id, outcome, state,"
			 " created_at, updated_at)"
			 " VALUES ('rs%07d', 'an outcome of"
			 " some length for the status table', '%s', %d, %d)",
			 i, i % 3 ? "completed" : "failed", 1000 + i,
			 2000 + i);
		sqlite3_exec(db, sql, NULL, NULL, NULL);
		for (j = 0; j < 3; j++) {
			snprintf(sql, sizeof(sql),
				 "INSERT INTO tasks (run_id, task_id,"
				 " order_idx, state)"
				 " VALUES ('rs%07d', 't%d', %d, '%s');"
				 "INSERT INTO phase_attempts (run_id, task_id,"
				 " phase, status, started_at, ended_at) VALUES"
				 " ('rs%07d', 't%d', 'plan', 'ok', 1, 2);",
				 i, j, j, j ? "done" : "failed", i, j);
			sqlite3_exec(db, sql, NULL, NULL, NULL);
		}
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "bench/events: %s\n", sqlite3_errmsg(db));
		exit(1);
	}
	sqlite3_close(db);
}

static int count_run(void *user, const struct sbxloop_run_row *r)
{
	long *n = user;

	if (r->run_id[0] && r->tasks_total >= r->tasks_done)
		(*n)++;
	return 0;
}

static int phase_status(void)
{
	struct sbxloop_error err = {0};
	struct fakehost *fh;
	void *store = open_store(&fh);
	long n = 0;
	double t0, t;

	t0 = now();
	if (ops->run_list(store, count_run, &n, &err))
		fail("run_list", &err);
	t = now() - t0;
	printf("status: %ld runs listed in %.1f ms (target < 100 ms)\n", n,
	       t * 1000);
	ops->destroy(store);
	fakehost_free(fh);
	return 0;
}

static int remove_one(const char *path, const struct stat *sb, int flag,
		      struct FTW *ftw)
{
	return remove(path);
}

/* Run `phase` in a child; print its peak RSS. */
static void in_child(const char *name, int (*phase)(void))
{
	struct rusage ru;
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		int rc = phase();

		fflush(stdout);
		_exit(rc);
	}
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench/events: the %s phase failed\n", name);
		exit(1);
	}
	printf("%s: peak RSS %.1f MiB, CPU %.2f s user %.2f s sys\n", name,
	       (double)ru.ru_maxrss / 1024, bench_tv_ms(&ru.ru_utime) / 1000.0,
	       bench_tv_ms(&ru.ru_stime) / 1000.0);
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");
	char path[600];
	struct stat sb;
	int keep = argc > 2;

	ops = sbxloop_plugin_descriptor.components[0].ops;
	if (argc > 1)
		n_events = atol(argv[1]);
	if (argc > 2) {
		snprintf(dir, sizeof(dir), "%s", argv[2]);
	} else {
		snprintf(dir, sizeof(dir), "%s/sbxloop-bench.XXXXXX",
			 base ? base : "/tmp");
		if (mkdtemp(dir) == NULL) {
			perror("mkdtemp");
			return 1;
		}
	}
	printf("bench/events: SQLite %s, database in '%s'\n",
	       sqlite3_libversion(), dir);
	measure_fsync();
	in_child("append", phase_append);
	in_child("logs --type policy.", phase_query);
	fill_runs();
	in_child("status", phase_status);
	snprintf(path, sizeof(path), "%s/state.db", dir);
	if (stat(path, &sb) == 0)
		printf("database: %.1f MiB\n", (double)sb.st_size / 1048576);
	/* A temporary directory goes; one named on the command line stays. */
	if (!keep)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

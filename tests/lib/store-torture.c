/*
 * The store's SIGKILL trials. A forked writer appends events and commits
 * transitions in a loop; after each transition returns it appends the
 * transition's number to a side file and fsyncs it. The parent kills the
 * writer at a random moment, then checks that the database passes
 * PRAGMA integrity_check and holds every transition the side file lists,
 * with every event appended before it, in order.
 *
 * Built with STORE_TORTURE_MAIN it is also the `store-torture` program:
 *   store-torture DIR [TRIALS] [SEED]
 */
#include "config.h"

#include "fakehost.h"
#include "store-torture.h"

#include <sbxloop/store.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const struct sbxloop_plugin_descriptor sbxloop_plugin_descriptor;

#define TORTURE_MAX_STEPS 100000
#define TORTURE_TRIALS_PER_DB 10 /* trials share a db: recovery is tested */

static const struct sbxloop_store_ops *torture_ops(void)
{
	return sbxloop_plugin_descriptor.components[0].ops;
}

/* Events appended before transition `i`; now and then over the buffer. */
static int events_before(int i)
{
	if (i % 25 == 24)
		return 700;
	return 1 + (i * 37) % 23;
}

static void die(const char *what, const struct sbxloop_error *err)
{
	fprintf(stderr, "store-torture: %s: %s\n", what,
		err ? err->message : strerror(errno));
	_exit(3);
}

/* The child: write forever (until killed). Never returns. */
static void writer(const char *dbdir, const char *side, const char *run_id)
{
	const struct sbxloop_store_ops *ops = torture_ops();
	struct fakehost *fh = fakehost_new(dbdir);
	struct sbxloop_error err = {0};
	struct sbxloop_run_row run = {.struct_size = sizeof(run)};
	void *store = NULL;
	char data[96], state[32], line[32];
	int fd, i, k;

	fd = open(side, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0)
		die("cannot open the side file", NULL);
	if (ops->create(fakehost_host(fh), &store, &err))
		die("create", &err);
	run.run_id = run_id;
	run.outcome = "torture";
	run.state = "created";
	if (ops->run_create(store, &run, &err))
		die("run_create", &err);
	for (i = 0; i < TORTURE_MAX_STEPS; i++) {
		struct sbxloop_event ev = {.struct_size = sizeof(ev)};
		int n = events_before(i);

		ev.run_id = run_id;
		ev.data_json = data;
		for (k = 0; k < n; k++) {
			snprintf(data, sizeof(data),
				 "{\"i\":%d,\"k\":%d,\"task_id\":\"t1\"}", i,
				 k);
			ev.type = k % 10 == 0 ? "policy.allow" : "tick";
			if (ops->event_append(store, &ev, NULL, &err))
				die("event_append", &err);
		}
		if (i % 2 == 0) {
			struct sbxloop_run_update upd = {.struct_size =
								 sizeof(upd)};

			snprintf(state, sizeof(state), "s%d", i);
			upd.run_id = run_id;
			upd.fields = SBXLOOP_RUN_STATE;
			upd.state = state;
			if (ops->run_update(store, &upd, NULL, 0, &err))
				die("run_update", &err);
		} else {
			struct sbxloop_attempt_row a = {.struct_size =
								sizeof(a)};

			a.run_id = run_id;
			a.task_id = "t1";
			a.phase = "execute";
			a.attempt = i;
			a.status = "ok";
			if (ops->attempt_record(store, &a, &err))
				die("attempt_record", &err);
		}
		/* Committed: only now may the side file say so. */
		snprintf(line, sizeof(line), "%d\n", i);
		if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
		    fsync(fd) != 0)
			die("cannot write the side file", NULL);
	}
	ops->destroy(store);
	fakehost_free(fh);
	_exit(0);
}

/* The last transition the side file records, or -1. */
static int side_last(const char *side)
{
	char buf[64];
	struct stat sb;
	ssize_t n;
	off_t from;
	char *end, *p;
	int fd = open(side, O_RDONLY), last = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0)
		goto out;
	/* Only the tail matters: the file lists rising numbers. */
	from = sb.st_size > 48 ? sb.st_size - 48 : 0;
	n = pread(fd, buf, sizeof(buf) - 1, from);
	if (n <= 0)
		goto out;
	buf[n] = '\0';
	end = strrchr(buf, '\n');
	if (end == NULL)
		goto out;
	*end = '\0';
	p = strrchr(buf, '\n');
	last = atoi(p ? p + 1 : buf);
out:
	close(fd);
	return last;
}

struct check_state {
	int *counts; /* events seen per transition */
	int n_counts;
	int prev_i, prev_k;
	int out_of_order;
};

static int count_event(void *user, const struct sbxloop_event *ev)
{
	struct check_state *c = user;
	int i, k;

	if (sscanf(ev->data_json, "{\"i\":%d,\"k\":%d", &i, &k) != 2)
		return 0;
	if (i < c->prev_i || (i == c->prev_i && k != c->prev_k + 1) ||
	    (i > c->prev_i && k != 0))
		c->out_of_order++;
	c->prev_i = i;
	c->prev_k = k;
	if (i >= 0 && i < c->n_counts)
		c->counts[i]++;
	return 0;
}

struct attempt_seen {
	unsigned char *seen;
	int n;
};

static int mark_attempt(void *user, const struct sbxloop_attempt_row *a)
{
	struct attempt_seen *s = user;

	if (a->attempt >= 0 && a->attempt < s->n)
		s->seen[a->attempt] = 1;
	return 0;
}

struct state_seen {
	char state[32];
};

static int copy_state(void *user, const struct sbxloop_run_row *run)
{
	struct state_seen *s = user;

	snprintf(s->state, sizeof(s->state), "%s", run->state);
	return 0;
}

static int integrity_ok(const char *dbdir, char *why, size_t len)
{
	char path[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int ok = 0;

	snprintf(path, sizeof(path), "%s/state.db", dbdir);
	if (access(path, F_OK) != 0)
		return 1; /* killed before the file existed */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
		    SQLITE_OK ||
	    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) !=
		    SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		snprintf(why, len, "cannot check '%s': %s", path,
			 sqlite3_errmsg(db));
		goto out;
	}
	ok = strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	if (!ok)
		snprintf(why, len, "integrity_check: %s",
			 sqlite3_column_text(st, 0));
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return ok;
}

/* 0 when nothing committed is missing; else 1 and `why`. */
static int check_trial(const char *dbdir, const char *run_id, int last,
		       char *why, size_t len)
{
	const struct sbxloop_store_ops *ops = torture_ops();
	struct fakehost *fh = NULL;
	struct sbxloop_error err = {0};
	struct sbxloop_event_query q = {.struct_size = sizeof(q)};
	struct check_state c = {0};
	struct attempt_seen as = {0};
	struct state_seen ss = {{0}};
	void *store = NULL;
	int lost = 1, i, rc;

	if (!integrity_ok(dbdir, why, len))
		return 1;
	if (last < 0)
		return 0;
	fh = fakehost_new(dbdir);
	if (ops->create(fakehost_host(fh), &store, &err)) {
		snprintf(why, len, "reopen: %s", err.message);
		goto out;
	}
	c.n_counts = last + 1;
	c.counts = calloc((size_t)c.n_counts, sizeof(int));
	c.prev_i = -1;
	as.n = last + 1;
	as.seen = calloc((size_t)as.n, 1);
	q.run_id = run_id;
	rc = ops->events_query(store, &q, count_event, &c, &err);
	if (rc == 0)
		rc = ops->attempts_list(store, run_id, NULL, mark_attempt, &as,
					&err);
	if (rc == 0)
		rc = ops->run_get(store, run_id, copy_state, &ss, &err);
	if (rc) {
		snprintf(why, len, "query: %s", err.message);
		goto out;
	}
	if (c.out_of_order) {
		snprintf(why, len, "%d events out of order", c.out_of_order);
		goto out;
	}
	for (i = 0; i <= last; i++) {
		if (c.counts[i] != events_before(i)) {
			snprintf(why, len,
				 "transition %d: %d of %d events stored", i,
				 c.counts[i], events_before(i));
			goto out;
		}
		if (i % 2 == 1 && !as.seen[i]) {
			snprintf(why, len, "transition %d: attempt missing",
				 i);
			goto out;
		}
	}
	if (ss.state[0] != 's' || atoi(ss.state + 1) < last - last % 2) {
		snprintf(why, len, "run state '%s', expected s%d or later",
			 ss.state, last - last % 2);
		goto out;
	}
	lost = 0;
out:
	if (store)
		ops->destroy(store);
	fakehost_free(fh);
	free(c.counts);
	free(as.seen);
	return lost;
}

static int remove_one(const char *path, const struct stat *sb, int flag,
		      struct FTW *ftw)
{
	return remove(path);
}

int store_torture_rmtree(const char *dir)
{
	return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Poll until the side file lists a transition (or 20 s pass). */
static void wait_for_commit(const char *side, pid_t pid)
{
	struct timespec tick = {0, 1000000L};
	struct stat sb;
	siginfo_t info;
	int i;

	for (i = 0; i < 20000; i++) {
		if (stat(side, &sb) == 0 && sb.st_size > 0)
			return;
		/* Died early? Look without reaping it. */
		memset(&info, 0, sizeof(info));
		if (waitid(P_PID, (id_t)pid, &info,
			   WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    info.si_pid == pid)
			return;
		nanosleep(&tick, NULL);
	}
}

int store_torture_run(const char *dir, int trials, unsigned seed,
		      int max_delay_ms, int verbose,
		      struct store_torture_result *res)
{
	char dbdir[4096], side[4200], run_id[32], why[8192];
	int t;

	memset(res, 0, sizeof(*res));
	srand(seed);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "store-torture: cannot create '%s': %s\n", dir,
			strerror(errno));
		return -1;
	}
	for (t = 0; t < trials; t++) {
		struct timespec delay;
		int ms = rand() % (max_delay_ms > 0 ? max_delay_ms : 1);
		int last, status;
		pid_t pid;

		snprintf(dbdir, sizeof(dbdir), "%s/db%d", dir,
			 t / TORTURE_TRIALS_PER_DB);
		snprintf(side, sizeof(side), "%s/side%d", dir, t);
		snprintf(run_id, sizeof(run_id), "r%08d", t);
		unlink(side);
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "store-torture: cannot fork: %s\n",
				strerror(errno));
			return -1;
		}
		if (pid == 0)
			writer(dbdir, side, run_id);
		/*
		 * Every other trial first waits for a committed transition,
		 * so slow runs (valgrind) still kill after real work; the
		 * others may land anywhere, even in create().
		 */
		if (t % 2 == 1)
			wait_for_commit(side, pid);
		delay.tv_sec = ms / 1000;
		delay.tv_nsec = (long)(ms % 1000) * 1000000L;
		nanosleep(&delay, NULL);
		kill(pid, SIGKILL);
		if (waitpid(pid, &status, 0) != pid)
			return -1;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
			fprintf(stderr,
				"store-torture: trial %d: the writer "
				"failed\n",
				t);
			res->lost++;
			res->trials++;
			continue;
		}
		last = side_last(side);
		res->trials++;
		if (last >= 0) {
			res->committed++;
			res->transitions += last + 1;
		}
		if (check_trial(dbdir, run_id, last, why, sizeof(why))) {
			res->lost++;
			if (verbose)
				fprintf(stderr,
					"store-torture: trial %d (killed "
					"after %d ms, %d committed): %s\n",
					t, ms, last + 1, why);
		}
		unlink(side);
		if ((t + 1) % TORTURE_TRIALS_PER_DB == 0 && res->lost == 0)
			store_torture_rmtree(dbdir);
	}
	return 0;
}

#ifdef STORE_TORTURE_MAIN
int main(int argc, char **argv)
{
	struct store_torture_result res;
	int trials = argc > 2 ? atoi(argv[2]) : 30;
	unsigned seed = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10)
				 : (unsigned)time(NULL);

	if (argc < 2) {
		fprintf(stderr, "usage: store-torture DIR [TRIALS] [SEED]\n");
		return 2;
	}
	if (store_torture_run(argv[1], trials, seed, 120, 1, &res) != 0)
		return 2;
	printf("%d trials (seed %u): %d lost anything; %d committed "
	       "transitions, %ld in all\n",
	       res.trials, seed, res.lost, res.committed, res.transitions);
	return res.lost ? 1 : 0;
}
#endif

/*
 * The run driver lock (core/host/runlock.c), in process and across
 * forked processes: one holder at a time, refused with the holder's pid,
 * seen by `driver` exactly while held, gone with its holder whether it
 * lets go or is killed, its file and empty directory removed on
 * release, a symlink in its place refused; processes that take and let
 * go in a tight loop never hold it at once.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/launch.h"
#include "host/runlock.h"
#include "testutil.h"

static char *state;

static void setup(void)
{
	state = tu_tmpdir();
}

static void teardown(void)
{
	tu_rmtree(state);
	free(state);
}

static char *path_of(const char *rel)
{
	char *p = malloc(strlen(state) + strlen(rel) + 2);

	ck_assert_ptr_nonnull(p);
	sprintf(p, "%s/%s", state, rel);
	return p;
}

static int exists(const char *rel)
{
	char *p = path_of(rel);
	int ok = access(p, F_OK) == 0;

	free(p);
	return ok;
}

/* A child that takes run `run`'s lock, writes a byte to `ready_fd` and
 * exits, without letting go, once `wait_fd` has a byte or closes. */
static pid_t holder(const char *run, int wait_fd, int ready_fd)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sl_runlock lk = SL_RUNLOCK_INIT;
		struct sbxloop_error err = {0, ""};
		char c;

		if (sl_runlock_take(state, run, "resume", &lk, &err) < 0)
			_exit(3);
		if (write(ready_fd, "x", 1) != 1)
			_exit(4);
		if (read(wait_fd, &c, 1) < 0)
			_exit(5);
		_exit(0); /* without letting go: as a kill would */
	}
	return pid;
}

START_TEST(test_one_holder_the_other_is_refused_with_its_pid)
{
	struct sl_runlock lk = SL_RUNLOCK_INIT;
	struct sbxloop_error err = {0, ""};
	struct sl_run_driver who;
	int go[2], ready[2], status;
	char want[64], c;
	pid_t pid;

	ck_assert_int_eq(sl_runlock_driver(state, "r1", &who), 0);
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(ready), 0);
	pid = holder("r1", go[0], ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(sl_runlock_driver(state, "r1", &who), 1);
	ck_assert_int_eq(who.pid, pid);
	ck_assert_str_eq(who.command, "resume");
	ck_assert_int_eq(sl_runlock_take(state, "r1", "run", &lk, &err),
			 SBXLOOP_ESTATE);
	snprintf(want, sizeof(want), "(pid %ld, `sbxloop resume`)", (long)pid);
	ck_assert_msg(strstr(err.message, want), "%s", err.message);
	ck_assert_int_eq(lk.fd, -1);
	/* another run is not this one's business */
	ck_assert_int_eq(sl_runlock_take(state, "r2", "run", &lk, &err), 0);
	sl_runlock_release(&lk);
	/* the holder dies without letting go: its file stays, unlocked */
	ck_assert_int_eq(write(go[1], "x", 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(exists("runs/r1/driver.lock"));
	ck_assert_int_eq(sl_runlock_driver(state, "r1", &who), 0);
	ck_assert_int_eq(sl_runlock_take(state, "r1", "run", &lk, &err), 0);
	ck_assert_int_eq(sl_runlock_driver(state, "r1", &who), 1);
	ck_assert_int_eq(who.pid, getpid());
	ck_assert_str_eq(who.command, "run");
	sl_runlock_release(&lk);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}
END_TEST

/*
 * A driver killed while git it started runs (here a shell standing for
 * git, launched as workspace.c launches git): the next taker waits for
 * it to end instead of working beside it, and refuses, naming what
 * still runs, when it does not end in time.
 */
/* Run such a driver of run r1 with `cmd` for its git, until it is
 * killed: its pid, and the git's in *git. */
static pid_t killed_driver(const char *cmd, pid_t *git)
{
	int fds[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sl_runlock lk = SL_RUNLOCK_INIT;
		struct sbxloop_error err = {0, ""};
		char *const argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
		struct sl_launch sp = {argv, NULL, state, -1, 2, 2, 0, NULL};
		pid_t child;

		if (sl_runlock_take(state, "r1", "resume", &lk, &err) < 0)
			_exit(3);
		sl_launch_hold_fd(lk.fd);
		sl_launch_holding(1);
		if (sl_launch(&sp, &child) != 0)
			_exit(4);
		if (write(fds[1], &child, sizeof(child)) != sizeof(child))
			_exit(5);
		raise(SIGKILL);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], git, sizeof(*git)), sizeof(*git));
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	return pid;
}

START_TEST(test_a_taker_waits_for_the_git_a_killed_driver_left)
{
	struct sl_runlock lk = SL_RUNLOCK_INIT;
	struct sbxloop_error err = {0, ""};
	struct sl_run_driver who;
	pid_t git;

	killed_driver("sleep 1; touch ended", &git);
	/* the driver is dead; what it started still holds the run */
	ck_assert_int_eq(sl_runlock_driver(state, "r1", &who), 1);
	ck_assert_int_eq(
		sl_runlock_take_wait(state, "r1", "resume", 10, &lk, &err), 0);
	ck_assert_msg(exists("ended"), "the lock was taken beside the git");
	sl_runlock_release(&lk);
}
END_TEST

START_TEST(test_a_taker_refuses_when_the_left_git_does_not_end)
{
	struct sl_runlock lk = SL_RUNLOCK_INIT;
	struct sbxloop_error err = {0, ""};
	char want[160];
	pid_t pid, git;

	pid = killed_driver("exec sleep 30", &git);
	ck_assert_int_eq(
		sl_runlock_take_wait(state, "r1", "resume", 0.3, &lk, &err),
		SBXLOOP_ESTATE);
	snprintf(want, sizeof(want),
		 "its last driver (pid %ld) is gone, but processes it "
		 "started still hold the run: %ld (sleep)",
		 (long)pid, (long)git);
	ck_assert_msg(strstr(err.message, want), "%s", err.message);
	ck_assert_int_eq(kill(git, SIGKILL), 0);
	ck_assert_int_eq(
		sl_runlock_take_wait(state, "r1", "resume", 10, &lk, &err), 0);
	sl_runlock_release(&lk);
}
END_TEST

START_TEST(test_release_removes_the_file_and_an_empty_directory_only)
{
	struct sl_runlock lk = SL_RUNLOCK_INIT;
	struct sbxloop_error err = {0, ""};
	char *keep;

	ck_assert_int_eq(sl_runlock_take(state, "r1", "run", &lk, &err), 0);
	ck_assert(exists("runs/r1/driver.lock"));
	sl_runlock_release(&lk);
	ck_assert(!exists("runs/r1"));
	sl_runlock_release(&lk); /* twice is nothing */
	ck_assert_int_eq(sl_runlock_take(state, "r1", "run", &lk, &err), 0);
	keep = path_of("runs/r1/workspace");
	ck_assert_int_eq(mkdir(keep, 0700), 0);
	sl_runlock_release(&lk);
	ck_assert(!exists("runs/r1/driver.lock"));
	ck_assert(exists("runs/r1/workspace"));
	free(keep);
}
END_TEST

START_TEST(test_a_lock_file_that_is_a_symlink_is_refused)
{
	struct sl_runlock lk = SL_RUNLOCK_INIT;
	struct sbxloop_error err = {0, ""};
	char *runs = path_of("runs"), *dir = path_of("runs/r1");
	char *lock = path_of("runs/r1/driver.lock");
	char *target = path_of("elsewhere");

	/* an agent cannot reach the state dir; a mistake can */
	ck_assert_int_eq(mkdir(runs, 0700), 0);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(symlink(target, lock), 0);
	ck_assert_int_lt(sl_runlock_take(state, "r1", "run", &lk, &err), 0);
	ck_assert_msg(strstr(err.message, "cannot open"), "%s", err.message);
	ck_assert_int_ne(access(target, F_OK), 0);
	free(runs);
	free(dir);
	free(lock);
	free(target);
}
END_TEST

#define CHURN_ROUNDS 3000

/*
 * A process that takes run r1's lock CHURN_ROUNDS times (a refusal is
 * a round too) and, while it holds it, owns `inside` (O_EXCL): exit 1
 * when another holder owns it at the same time, else 0; the rounds it
 * held go to `held_fd` as text.
 */
static pid_t churner(const char *inside, int held_fd)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sbxloop_error err = {0, ""};
		int i, fd, held = 0;
		char line[32];

		for (i = 0; i < CHURN_ROUNDS; i++) {
			struct sl_runlock lk = SL_RUNLOCK_INIT;

			if (sl_runlock_take_wait(state, "r1", "run", 0, &lk,
						 &err) < 0)
				continue;
			fd = open(inside, O_CREAT | O_EXCL | O_WRONLY, 0600);
			if (fd < 0)
				_exit(1);
			close(fd);
			held++;
			unlink(inside);
			sl_runlock_release(&lk);
		}
		snprintf(line, sizeof(line), "%d\n", held);
		_exit(write(held_fd, line, strlen(line)) > 0 ? 0 : 2);
	}
	return pid;
}

/*
 * A holder letting go unlinks the file while a taker may have it open:
 * the taker that then locks the unlinked file must see that the path
 * no longer names it and start over, or two processes would drive the
 * run at once (one on the old file, one on a new one). Three processes
 * take and let go as fast as they can; at no time do two hold it.
 */
START_TEST(test_takers_racing_a_release_never_hold_at_once)
{
	/* static: the children exit holding it (reachable under valgrind) */
	static char *inside;
	int fds[2], i, status, held = 0, n;
	pid_t pids[3];
	char buf[128];
	ssize_t got;
	size_t len = 0;

	inside = path_of("inside");
	ck_assert_int_eq(pipe(fds), 0);
	for (i = 0; i < 3; i++)
		pids[i] = churner(inside, fds[1]);
	close(fds[1]);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "two processes held the run's lock at once "
			      "(status %d)",
			      status);
	}
	while ((got = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)got;
	buf[len] = '\0';
	close(fds[0]);
	for (char *p = buf; sscanf(p, "%d", &n) == 1;
	     p = strchr(p, '\n') + 1) {
		held += n;
		if (!strchr(p, '\n')[1])
			break;
	}
	/* they did contend: many rounds held it, not all */
	ck_assert_int_gt(held, CHURN_ROUNDS / 10);
	ck_assert_int_lt(held, 3 * CHURN_ROUNDS);
	ck_assert(!exists("runs/r1"));
	free(inside);
	inside = NULL;
}
END_TEST

static Suite *runlock_suite(void)
{
	Suite *s = suite_create("runlock");
	TCase *tc = tcase_create("lock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_one_holder_the_other_is_refused_with_its_pid);
	tcase_add_test(tc,
		       test_a_taker_waits_for_the_git_a_killed_driver_left);
	tcase_add_test(tc,
		       test_a_taker_refuses_when_the_left_git_does_not_end);
	tcase_add_test(
		tc, test_release_removes_the_file_and_an_empty_directory_only);
	tcase_add_test(tc, test_a_lock_file_that_is_a_symlink_is_refused);
	tcase_add_test(tc, test_takers_racing_a_release_never_hold_at_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runlock_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

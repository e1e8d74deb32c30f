/*
 * The one subprocess loop (common/child.c) and the host's helper on top
 * of it (common/proc.c), with real programs: stdin is fed, output
 * arrives, a deadline holds even when the child closes its output, a
 * tick can stop it, what it leaves behind dies when asked, and a
 * grandchild holding a pipe cannot hold the caller past the drain. And
 * the FIFO release those readers rely on (common/fifo.c), against a real
 * reader and real git.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/child.h"
#include "common/fifo.h"
#include "common/proc.h"
#include "common/util.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct capture {
	struct sl_buf out;
	struct sl_buf err;
	int ticks;
	int stop_after; /* ticks; 0: never */
	enum sl_child_action stop_with;
	pid_t pid;
};

static void on_output(void *user, int stream, const char *data, size_t len)
{
	struct capture *c = user;

	sl_buf_add(stream == 1 ? &c->out : &c->err, data, len);
}

static void on_start(void *user, pid_t pid)
{
	((struct capture *)user)->pid = pid;
}

static enum sl_child_action on_tick(void *user)
{
	struct capture *c = user;

	c->ticks++;
	if (c->stop_after && c->ticks >= c->stop_after)
		return c->stop_with;
	return SL_CHILD_GO_ON;
}

static void child_init(struct sl_child *ch, struct capture *cap,
		       char *const *argv)
{
	memset(ch, 0, sizeof(*ch));
	memset(cap, 0, sizeof(*cap));
	ch->argv = argv;
	ch->kill_grace_s = 1;
	ch->drain_s = -1;
	ch->on_output = on_output;
	ch->on_start = on_start;
	ch->user = cap;
}

static void capture_release(struct capture *cap)
{
	sl_buf_release(&cap->out);
	sl_buf_release(&cap->err);
}

/* Is process `pid` gone (or a zombie of someone else's)? */
static int gone(pid_t pid)
{
	char path[64], state = '?';
	FILE *f;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = '?';
	fclose(f);
	return state == 'Z';
}

START_TEST(test_stdin_is_fed_and_both_streams_arrive)
{
	char *const argv[] = {"sh", "-c", "cat; echo done >&2", NULL};
	struct sl_child ch;
	struct capture cap;
	struct sl_buf in = SL_BUF_INIT;
	int i;

	for (i = 0; i < 20000; i++)
		sl_buf_addf(&in, "line %d\n", i);
	child_init(&ch, &cap, argv);
	ch.stdin_data = in.buf;
	ch.stdin_len = in.len;
	ck_assert_int_eq(sl_child_run(&ch), 0);
	ck_assert(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0);
	ck_assert_uint_eq(cap.out.len, in.len);
	ck_assert(memcmp(cap.out.buf, in.buf, in.len) == 0);
	ck_assert_str_eq(sl_buf_str(&cap.err), "done\n");
	ck_assert(!ch.timed_out);
	capture_release(&cap);
	sl_buf_release(&in);
}
END_TEST

START_TEST(test_a_missing_program_never_starts)
{
	char *const argv[] = {"/nonexistent/program", NULL};
	struct sl_child ch;
	struct capture cap;

	child_init(&ch, &cap, argv);
	ck_assert_int_eq(sl_child_run(&ch), -1);
	ck_assert_int_eq(ch.spawn_errno, ENOENT);
	capture_release(&cap);
}
END_TEST

START_TEST(test_the_deadline_holds_when_the_child_closes_its_output)
{
	char *const argv[] = {
		"sh", "-c", "exec >/dev/null 2>&1 </dev/null; sleep 30", NULL};
	struct sl_child ch;
	struct capture cap;
	double t0 = now_s();

	child_init(&ch, &cap, argv);
	ch.timeout_s = 0.5;
	ck_assert_int_eq(sl_child_run(&ch), 0);
	ck_assert(ch.timed_out);
	ck_assert(WIFSIGNALED(ch.status));
	ck_assert_msg(now_s() - t0 < 10, "took %.1f s", now_s() - t0);
	capture_release(&cap);
}
END_TEST

START_TEST(test_a_tick_can_stop_the_child)
{
	char *const argv[] = {"sleep", "30", NULL};
	struct sl_child ch;
	struct capture cap;

	child_init(&ch, &cap, argv);
	ch.on_tick = on_tick;
	ch.tick_s = 0.05;
	cap.stop_after = 3;
	cap.stop_with = SL_CHILD_TERM;
	ck_assert_int_eq(sl_child_run(&ch), 0);
	ck_assert(WIFSIGNALED(ch.status));
	ck_assert_int_eq(WTERMSIG(ch.status), SIGTERM);
	ck_assert(!ch.timed_out);
	ck_assert_int_ge(cap.ticks, 3);
	capture_release(&cap);
}
END_TEST

/* The pid a child printed on its first output line. */
static pid_t printed_pid(const struct capture *cap)
{
	return (pid_t)strtol(sl_buf_str(&cap->out), NULL, 10);
}

START_TEST(test_what_a_child_leaves_behind_dies_when_asked)
{
	/* the sleeper holds no pipe: only the group kill can reach it */
	char *const argv[] = {"sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!",
			      NULL};
	struct sl_child ch;
	struct capture cap;
	pid_t left;
	int i;

	child_init(&ch, &cap, argv);
	ch.new_session = 1;
	ch.kill_group_on_exit = 1;
	ch.drain_s = 1;
	ck_assert_int_eq(sl_child_run(&ch), 0);
	left = printed_pid(&cap);
	ck_assert_int_gt(left, 0);
	for (i = 0; i < 100 && !gone(left); i++)
		usleep(20000);
	ck_assert_msg(gone(left), "pid %d survived its group", (int)left);
	capture_release(&cap);

	/* the host's helper does not ask: the sleeper lives on */
	child_init(&ch, &cap, argv);
	ck_assert_int_eq(sl_child_run(&ch), 0);
	left = printed_pid(&cap);
	ck_assert_int_gt(left, 0);
	ck_assert(!gone(left));
	kill(left, SIGKILL);
	capture_release(&cap);
}
END_TEST

START_TEST(test_a_grandchild_holding_a_pipe_cannot_hold_the_caller)
{
	char *const argv[] = {"sh", "-c", "sleep 30 & echo hi", NULL};
	struct sl_child ch;
	struct capture cap;
	double t0 = now_s();

	child_init(&ch, &cap, argv);
	ch.new_session = 1;
	ch.kill_group_on_exit = 1;
	ch.drain_s = 0.2;
	ck_assert_int_eq(sl_child_run(&ch), 0);
	ck_assert(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0);
	ck_assert_str_eq(sl_buf_str(&cap.out), "hi\n");
	ck_assert_msg(now_s() - t0 < 10, "took %.1f s", now_s() - t0);
	capture_release(&cap);
}
END_TEST

static void line_cb(void *user, const char *line, size_t len)
{
	struct sl_buf *b = user;

	sl_buf_add(b, line, len);
	sl_buf_addc(b, '|');
}

START_TEST(test_the_host_helper_splits_lines_and_reports_a_timeout)
{
	const char *lines[] = {"sh", "-c", "printf 'a\\nb\\nc'; echo e >&2",
			       NULL};
	const char *slow[] = {"sh", "-c", "exec >&- 2>&-; sleep 30", NULL};
	struct sbxloop_proc_spec spec;
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	struct sl_buf got = SL_BUF_INIT;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = lines;
	spec.on_stdout_line = line_cb;
	spec.user = &got;
	ck_assert_int_eq(sl_proc_run(&spec, &res, &err), 0);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_str_eq(sl_buf_str(&got), "a|b|c|");
	ck_assert_str_eq(res.err, "e\n");
	sl_proc_result_clear(&res);

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = slow;
	spec.timeout_s = 0.5;
	ck_assert_int_eq(sl_proc_run(&spec, &res, &err), 0);
	ck_assert(res.timed_out);
	ck_assert_int_eq(res.exit_code, -1);
	ck_assert_int_ne(res.term_signal, 0);
	sl_proc_result_clear(&res);
	sl_buf_release(&got);
}
END_TEST

/* `cat path`: blocks opening the FIFO until a writer comes; 0 at its end. */
static pid_t fifo_reader(const char *path)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("cat", "cat", path, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * Has `pid` ended within `s` seconds, `root`'s FIFOs released every
 * 50 ms meanwhile (NULL: none; a reader may not have opened yet)? Its
 * exit code, or -1.
 */
static int ended_within(pid_t pid, double s, const char *root)
{
	double end = now_s() + s;
	int st;

	do {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
		if (root)
			sl_release_fifos(root);
		usleep(50000);
	} while (now_s() < end);
	return -1;
}

/* rm -rf `dir`, which the test made */
static void rm_rf(const char *dir)
{
	char *cmd = sl_xasprintf("rm -rf %s", dir);

	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
}

/*
 * sl_release_fifos lets a reader blocked opening a FIFO under the tree
 * go on (it reads nothing), but never through a symbolic link: not one
 * inside the tree to a directory outside, not the root itself.
 */
START_TEST(test_release_opens_the_fifos_under_a_tree_not_through_links)
{
	char tmpl[] = "/tmp/sbx-fifo-XXXXXX", *dir = mkdtemp(tmpl);
	char *in, *out, *link, *link_root, *cmd;
	pid_t r_in, r_out;

	ck_assert_ptr_nonnull(dir);
	in = sl_xasprintf("%s/tree/a/b/fifo", dir);
	out = sl_xasprintf("%s/outside/fifo", dir);
	link = sl_xasprintf("%s/tree/out", dir);
	link_root = sl_xasprintf("%s/root-link", dir);
	cmd = sl_xasprintf("mkdir -p %s/tree/a/b %s/outside", dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	ck_assert_int_eq(mkfifo(in, 0600), 0);
	ck_assert_int_eq(mkfifo(out, 0600), 0);
	ck_assert_int_eq(symlink("../outside", link), 0);
	cmd = sl_xasprintf("%s/outside", dir);
	ck_assert_int_eq(symlink(cmd, link_root), 0);
	free(cmd);
	r_in = fifo_reader(in);
	r_out = fifo_reader(out);
	/* a link as the root: nothing */
	ck_assert_int_eq(ended_within(r_out, 0.5, link_root), -1);
	cmd = sl_xasprintf("%s/tree", dir);
	ck_assert_int_eq(ended_within(r_in, 10.0, cmd), 0);
	/* the tree's link to outside is not followed */
	ck_assert_int_eq(ended_within(r_out, 0.5, cmd), -1);
	free(cmd);
	cmd = sl_xasprintf("%s/outside", dir);
	ck_assert_int_eq(ended_within(r_out, 10.0, cmd), 0);
	free(cmd);
	rm_rf(dir);
	free(in);
	free(out);
	free(link);
	free(link_root);
}
END_TEST

/*
 * sl_read_regular_file, for files an agent may have put in place (git's
 * HEAD or info/exclude, read on the host as lanes start): a FIFO there
 * is refused at once (EINVAL; sl_read_file would wait for a writer for
 * good), as a directory is; a regular file, empty or through a
 * symbolic link, reads whole, and one over `max` is EFBIG.
 */
START_TEST(test_read_regular_file_never_waits_on_a_fifo)
{
	char tmpl[] = "/tmp/sbx-read-XXXXXX", *dir = mkdtemp(tmpl);
	char *fifo, *file, *empty, *link, *text;
	double start;
	size_t len = 99;

	ck_assert_ptr_nonnull(dir);
	fifo = sl_xasprintf("%s/HEAD", dir);
	file = sl_xasprintf("%s/exclude", dir);
	empty = sl_xasprintf("%s/empty", dir);
	link = sl_xasprintf("%s/link", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(sl_write_file_atomic(file, "/.sbxloop/\n", 11, 0644),
			 0);
	ck_assert_int_eq(sl_write_file_atomic(empty, "", 0, 0644), 0);
	ck_assert_int_eq(symlink("exclude", link), 0);
	start = sl_monotonic();
	errno = 0;
	ck_assert_ptr_null(sl_read_regular_file(fifo, NULL, 4096));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(sl_read_regular_file(dir, NULL, 4096));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(sl_monotonic() - start < 1.0, "waited on the FIFO");
	text = sl_read_regular_file(link, &len, 4096);
	ck_assert_str_eq(text, "/.sbxloop/\n");
	ck_assert_uint_eq(len, 11);
	free(text);
	text = sl_read_regular_file(empty, &len, 4096);
	ck_assert_str_eq(text, "");
	ck_assert_uint_eq(len, 0);
	free(text);
	ck_assert_ptr_null(sl_read_regular_file(file, NULL, 4));
	ck_assert_int_eq(errno, EFBIG);
	rm_rf(dir);
	free(fifo);
	free(file);
	free(empty);
	free(link);
}
END_TEST

/* The tick waits out the reader's first second, then passes each second. */
START_TEST(test_release_tick_passes_after_a_second_then_each_second)
{
	double next = 0;

	sl_release_fifos_tick("/nonexistent", 100.0, 100.5, &next);
	ck_assert_double_eq_tol(next, 101.0, 1e-9);
	sl_release_fifos_tick("/nonexistent", 100.0, 100.9, &next);
	ck_assert_double_eq_tol(next, 101.0, 1e-9);
	sl_release_fifos_tick("/nonexistent", 100.0, 101.2, &next);
	ck_assert_double_eq_tol(next, 102.2, 1e-9);
}
END_TEST

/*
 * Real git reading a FIFO .gitignore: the host's helper with a release
 * root lets it finish; without one it runs to its deadline.
 */
START_TEST(test_git_reading_a_fifo_gitignore_finishes_with_a_release_root)
{
	char tmpl[] = "/tmp/sbx-fifo-git-XXXXXX", *dir = mkdtemp(tmpl);
	const char *const argv[] = {"git", "status", "--short", NULL};
	struct sbxloop_proc_spec spec;
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	char *cmd;
	double t0;

	ck_assert_ptr_nonnull(dir);
	cmd = sl_xasprintf("cd %s && git init -q && mkfifo .gitignore && "
			   "echo x > new.txt",
			   dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.cwd = dir;
	spec.timeout_s = 1.5;
	ck_assert_int_eq(sl_proc_run(&spec, &res, &err), 0);
	ck_assert_int_eq(res.timed_out, 1);
	sl_proc_result_clear(&res);
	spec.timeout_s = 30;
	t0 = now_s();
	ck_assert_int_eq(sl_proc_run_releasing(&spec, dir, &res, &err), 0);
	ck_assert_int_eq(res.timed_out, 0);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_double_lt(now_s() - t0, 10.0);
	ck_assert_msg(strstr(res.out, "?? new.txt"), "%s", res.out);
	sl_proc_result_clear(&res);
	rm_rf(dir);
}
END_TEST

static Suite *child_suite(void)
{
	Suite *s = suite_create("child");
	TCase *tc = tcase_create("loop");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stdin_is_fed_and_both_streams_arrive);
	tcase_add_test(tc, test_a_missing_program_never_starts);
	tcase_add_test(
		tc, test_the_deadline_holds_when_the_child_closes_its_output);
	tcase_add_test(tc, test_a_tick_can_stop_the_child);
	tcase_add_test(
		tc,
		test_release_opens_the_fifos_under_a_tree_not_through_links);
	tcase_add_test(
		tc, test_release_tick_passes_after_a_second_then_each_second);
	tcase_add_test(tc, test_read_regular_file_never_waits_on_a_fifo);
	tcase_add_test(
		tc,
		test_git_reading_a_fifo_gitignore_finishes_with_a_release_root);
	tcase_add_test(tc, test_what_a_child_leaves_behind_dies_when_asked);
	tcase_add_test(
		tc, test_a_grandchild_holding_a_pipe_cannot_hold_the_caller);
	tcase_add_test(
		tc, test_the_host_helper_splits_lines_and_reports_a_timeout);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(child_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The benches' CPU accounting (bench/cpu.c): what /proc/PID/stat says a
 * finished child spent, user and system apart, must be what getrusage
 * says about the same child, and the stat parser must count fields past
 * a command name holding spaces and parentheses.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/cpu.h"
#include "bench/runs.h"

/* Spend about `user_ms` in user mode and `sys_ms` in the kernel. */
static void burn(double user_ms, double sys_ms)
{
	static char buf[1 << 20];
	volatile unsigned long x = 1;
	struct rusage ru;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		_exit(2);
	do {
		/* the kernel zero-fills 1 MiB per read: system time */
		if (read(fd, buf, sizeof(buf)) < 0)
			_exit(3);
		getrusage(RUSAGE_SELF, &ru);
	} while (bench_tv_ms(&ru.ru_stime) < sys_ms);
	do {
		int i;

		for (i = 0; i < 1000000; i++)
			x = x * 2862933555777941757ul + 3037000493ul;
		getrusage(RUSAGE_SELF, &ru);
	} while (bench_tv_ms(&ru.ru_utime) < user_ms);
	close(fd);
	_exit(x == 0);
}

START_TEST(test_child_cpu_from_proc_matches_getrusage_user_and_system)
{
	struct bench_cpu c;
	struct rusage ru;
	siginfo_t si;
	double tick = 1000.0 / (double)sysconf(_SC_CLK_TCK), slack;
	double ru_user, ru_sys, total;
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		burn(300, 300);
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
	       errno == EINTR)
		;
	ck_assert_int_eq(bench_proc_cpu(pid, &c), 0);
	total = bench_proc_cpu_ms(pid);
	ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ru_user = bench_tv_ms(&ru.ru_utime);
	ru_sys = bench_tv_ms(&ru.ru_stime);
	/* the child really spent both kinds of time */
	ck_assert_msg(ru_user >= 300 && ru_sys >= 300,
		      "child burnt user %.1f ms, system %.1f ms", ru_user,
		      ru_sys);
	/* stat counts whole ticks; allow two and 5% */
	slack = 2 * tick + 0.05 * (ru_user + ru_sys);
	ck_assert_msg(
		c.user_ms > ru_user - slack && c.user_ms < ru_user + slack,
		"user: stat %.1f ms, getrusage %.1f ms", c.user_ms, ru_user);
	ck_assert_msg(c.sys_ms > ru_sys - slack && c.sys_ms < ru_sys + slack,
		      "system: stat %.1f ms, getrusage %.1f ms", c.sys_ms,
		      ru_sys);
	ck_assert_msg(total > ru_user + ru_sys - 2 * slack &&
			      total < ru_user + ru_sys + 2 * slack,
		      "total: stat %.1f ms, getrusage %.1f ms", total,
		      ru_user + ru_sys);
}
END_TEST

/*
 * schedstat's runtime is to the nanosecond, so a short child (a worker
 * job spends a few ms of its own) reads as what it spent, not as 0 or a
 * whole 10 ms tick.
 */
START_TEST(test_child_runtime_from_schedstat_matches_getrusage)
{
	struct rusage ru;
	siginfo_t si;
	double runtime, ru_ms;
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		burn(12, 3);
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
	       errno == EINTR)
		;
	runtime = bench_proc_runtime_ms(pid);
	ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
	ru_ms = bench_tv_ms(&ru.ru_utime) + bench_tv_ms(&ru.ru_stime);
	ck_assert_msg(ru_ms >= 15, "child burnt %.3f ms", ru_ms);
	/* getrusage reports the same runtime, split by sampled ticks */
	ck_assert_msg(runtime > ru_ms - 0.5 && runtime < ru_ms + 0.5,
		      "schedstat %.3f ms, getrusage %.3f ms", runtime, ru_ms);
	/* and it is gone once reaped */
	ck_assert(bench_proc_runtime_ms(pid) < 0);
}
END_TEST

START_TEST(test_stat_fields_count_after_the_last_paren_of_the_name)
{
	/* comm "a) (b c" as the kernel prints it; utime 13, stime 57 */
	const char *text = "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 "
			   "120 0 9 0 13 57 0 0 20 0 1 0 5 0 0\n";
	struct bench_cpu c;

	ck_assert_int_eq(bench_stat_parse(text, 100, &c), 0);
	ck_assert_double_eq_tol(c.user_ms, 130.0, 1e-9);
	ck_assert_double_eq_tol(c.sys_ms, 570.0, 1e-9);
	ck_assert_int_eq(bench_stat_parse("4242 (x) S 1 2\n", 100, &c), -1);
	ck_assert_int_eq(bench_stat_parse("no name here", 100, &c), -1);
}
END_TEST

/*
 * bench_run_sbxloop on a stand-in: /bin/sh as $SBXLOOP_BIN reads the
 * script `run` in the run's directory (its first argument). It burns
 * CPU itself, sleeps in a child, writes the variable it was given, and
 * exits with the code asked: wall covers the sleep, the process's own
 * CPU covers the burn but not the child, and a failure is reported.
 */
static void stand_in(const char *dir, int code)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/run", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done\n"
		"sleep 0.3\n"
		"printf '%%s' \"$BENCH_PROBE\" > probe.txt\n"
		"exit %d\n",
		code);
	fclose(f);
}

START_TEST(test_run_sbxloop_measures_wall_own_cpu_and_status)
{
	char dir[] = "/tmp/bench-run-XXXXXX", path[300], buf[64] = "";
	const char *env[] = {"BENCH_PROBE=seen", NULL};
	struct bench_proc m;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("SBXLOOP_BIN", "/bin/sh", 1);
	stand_in(dir, 0);
	ck_assert_int_eq(bench_run_sbxloop(dir, env, &m), 0);
	ck_assert_msg(m.wall_s >= 0.3 && m.wall_s < 10, "wall %.3f", m.wall_s);
	/* the loop is the shell's own CPU; the sleep is neither */
	ck_assert_msg(m.user_ms + m.sys_ms > 1.0, "own %.2f ms",
		      m.user_ms + m.sys_ms);
	ck_assert_msg(m.tree_ms >= m.user_ms + m.sys_ms - 10.0,
		      "tree %.2f < own %.2f", m.tree_ms, m.user_ms + m.sys_ms);
	ck_assert_msg(m.rss_mb > 0.1, "rss %.2f", m.rss_mb);
	snprintf(path, sizeof(path), "%s/probe.txt", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "seen");
	/* the child's environment only */
	ck_assert_ptr_null(getenv("BENCH_PROBE"));
	stand_in(dir, 3);
	ck_assert_int_eq(bench_run_sbxloop(dir, NULL, &m), -1);
	ck_assert(WIFEXITED(m.status) && WEXITSTATUS(m.status) == 3);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

START_TEST(test_speeds_are_relative_to_the_fastest)
{
	const double times[] = {2.0, 1.0, 4.0};
	double speed[3];

	bench_speeds_from_times(times, speed, 3);
	ck_assert_double_eq_tol(speed[0], 0.5, 1e-12);
	ck_assert_double_eq_tol(speed[1], 1.0, 1e-12);
	ck_assert_double_eq_tol(speed[2], 0.25, 1e-12);
}
END_TEST

START_TEST(test_median_of_rounds_leaves_them_as_they_were)
{
	const double odd[] = {3.0, 1.0, 2.0};
	double even[] = {4.0, 1.0, 3.0, 2.0}, many[BENCH_MEDIAN_MAX + 1];
	int i;

	ck_assert_double_eq_tol(bench_median(odd, 3), 2.0, 1e-12);
	ck_assert_double_eq_tol(bench_median(odd, 1), 3.0, 1e-12);
	ck_assert_double_eq_tol(bench_median(even, 4), 2.5, 1e-12);
	/* the rounds keep their order (they are printed after) */
	ck_assert_double_eq_tol(even[0], 4.0, 1e-12);
	ck_assert_double_eq_tol(even[3], 2.0, 1e-12);
	/* an outlier moves it no further than the middle */
	even[0] = 1e9;
	ck_assert_double_eq_tol(bench_median(even, 4), 2.5, 1e-12);
	for (i = 0; i <= BENCH_MEDIAN_MAX; i++)
		many[i] = BENCH_MEDIAN_MAX - i;
	ck_assert_double_eq_tol(bench_median(many, BENCH_MEDIAN_MAX),
				(BENCH_MEDIAN_MAX + 1) / 2.0, 1e-12);
	ck_assert(isnan(bench_median(many, BENCH_MEDIAN_MAX + 1)));
	ck_assert(isnan(bench_median(many, 0)));
}
END_TEST

/* Each CPU the process may use is measured once, and the process may
 * use them all again afterwards. */
START_TEST(test_every_allowed_cpu_gets_a_speed_and_its_affinity_stays)
{
	cpu_set_t before, after;
	int cpu[CPU_SETSIZE], n, i, fastest = 0;
	double speed[CPU_SETSIZE];

	ck_assert_int_eq(sched_getaffinity(0, sizeof(before), &before), 0);
	n = bench_cpu_speeds(cpu, speed, CPU_SETSIZE, 1);
	ck_assert_int_eq(n, CPU_COUNT(&before));
	for (i = 0; i < n; i++) {
		ck_assert(CPU_ISSET(cpu[i], &before));
		ck_assert(i == 0 || cpu[i] > cpu[i - 1]);
		ck_assert_msg(speed[i] > 0 && speed[i] <= 1.0, "cpu %d: %g",
			      cpu[i], speed[i]);
		fastest += speed[i] == 1.0;
	}
	ck_assert_int_ge(fastest, 1);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	ck_assert(CPU_EQUAL(&before, &after));
	/* `max` caps it */
	ck_assert_int_eq(bench_cpu_speeds(cpu, speed, 1, 1), 1);
}
END_TEST

static Suite *bench_cpu_suite(void)
{
	Suite *s = suite_create("bench-cpu");
	TCase *tc = tcase_create("cpu");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
		       test_child_runtime_from_schedstat_matches_getrusage);
	tcase_add_test(
		tc,
		test_child_cpu_from_proc_matches_getrusage_user_and_system);
	tcase_add_test(
		tc, test_stat_fields_count_after_the_last_paren_of_the_name);
	tcase_add_test(tc, test_run_sbxloop_measures_wall_own_cpu_and_status);
	tcase_add_test(tc, test_speeds_are_relative_to_the_fastest);
	tcase_add_test(tc, test_median_of_rounds_leaves_them_as_they_were);
	tcase_add_test(
		tc,
		test_every_allowed_cpu_gets_a_speed_and_its_affinity_stays);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bench_cpu_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * bench/cpu: the benches' CPU accounting (see cpu.h). Kept apart so the
 * /proc/PID/stat field numbers are written once and unit-tested
 * against getrusage (tests/unit/test-bench-cpu.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"

/* proc(5), 1-based: (14) utime, (15) stime, in clock ticks */
#define FIELD_UTIME 14
#define FIELD_STIME 15

int bench_stat_parse(const char *text, long ticks_per_s, struct bench_cpu *out)
{
	const char *p = strrchr(text, ')');
	unsigned long long ut = 0, st = 0;
	int field, seen = 0;

	if (!p || ticks_per_s <= 0)
		return -1;
	/* after ')' comes " S ..." : the space before field 3 */
	for (field = 3; field <= FIELD_STIME; field++) {
		char *end;
		unsigned long long v;

		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
		if (field != FIELD_UTIME && field != FIELD_STIME)
			continue;
		errno = 0;
		v = strtoull(p + 1, &end, 10);
		if (errno || end == p + 1)
			return -1;
		if (field == FIELD_UTIME)
			ut = v;
		else
			st = v;
		seen++;
	}
	if (seen != 2)
		return -1;
	out->user_ms = (double)ut * 1000.0 / (double)ticks_per_s;
	out->sys_ms = (double)st * 1000.0 / (double)ticks_per_s;
	return 0;
}

int bench_proc_cpu(pid_t pid, struct bench_cpu *out)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return bench_stat_parse(buf, sysconf(_SC_CLK_TCK), out);
}

double bench_proc_cpu_ms(pid_t pid)
{
	struct bench_cpu c;

	if (bench_proc_cpu(pid, &c) < 0)
		return -1;
	return c.user_ms + c.sys_ms;
}

double bench_proc_runtime_ms(pid_t pid)
{
	char path[64], buf[256], *end;
	unsigned long long ns;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	errno = 0;
	ns = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end != ' ' && *end != '\n'))
		return -1;
	return (double)ns / 1e6;
}

double bench_tv_ms(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1000.0 + (double)tv->tv_usec / 1000.0;
}

void bench_speeds_from_times(const double *times, double *speed, int n)
{
	double best = 0;
	int i;

	for (i = 0; i < n; i++)
		if (i == 0 || times[i] < best)
			best = times[i];
	for (i = 0; i < n; i++)
		speed[i] = best / times[i];
}

double bench_median(const double *v, int n)
{
	double s[BENCH_MEDIAN_MAX], x;
	int i, j;

	if (n < 1 || n > BENCH_MEDIAN_MAX)
		return NAN;
	/* insertion sort of a copy: n is a number of rounds */
	for (i = 0; i < n; i++) {
		x = v[i];
		for (j = i; j > 0 && s[j - 1] > x; j--)
			s[j] = s[j - 1];
		s[j] = x;
	}
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Wall seconds of a fixed loop on whatever CPU runs it now. */
static double spin_s(void)
{
	volatile unsigned long x = 1;
	struct timespec a, b;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < 20000000L; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) +
	       (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

int bench_cpu_speeds(int *cpu, double *speed, int max, int rounds)
{
	cpu_set_t was, one;
	double times[CPU_SETSIZE];
	int c, n = 0, r;

	if (sched_getaffinity(0, sizeof(was), &was) < 0)
		return -1;
	for (c = 0; c < CPU_SETSIZE && n < max; c++) {
		if (!CPU_ISSET(c, &was))
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one) < 0)
			break;
		cpu[n] = c;
		times[n] = 0;
		for (r = 0; r < (rounds > 0 ? rounds : 1); r++) {
			double t = spin_s();

			if (r == 0 || t < times[n])
				times[n] = t;
		}
		n++;
	}
	if (sched_setaffinity(0, sizeof(was), &was) < 0 || n == 0)
		return -1;
	bench_speeds_from_times(times, speed, n);
	return n;
}

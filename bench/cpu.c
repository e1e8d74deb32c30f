/*
 * bench/cpu: the benches' CPU accounting (see cpu.h). Kept apart so the
 * /proc/PID/stat field numbers are written once and unit-tested
 * against getrusage (tests/unit/test-bench-cpu.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

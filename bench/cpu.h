/*
 * CPU time of a benchmarked process, the one place the benches read it:
 * a child's own user and system time from /proc/PID/stat (while it is a
 * zombie, so its children are not counted) and struct timeval sums.
 */
#ifndef BENCH_CPU_H
#define BENCH_CPU_H

#include <sys/time.h>
#include <sys/types.h>

struct bench_cpu {
	double user_ms; /* utime, field 14 of proc(5)'s stat */
	double sys_ms;  /* stime, field 15 */
};

/*
 * Parse the text of a /proc/PID/stat file. The command name (field 2)
 * may hold spaces and parentheses, so fields are counted after its last
 * ')'. `ticks_per_s` is sysconf(_SC_CLK_TCK). 0, or -1 when malformed.
 */
int bench_stat_parse(const char *text, long ticks_per_s,
		     struct bench_cpu *out);

/* The process's own CPU time (not its children's). 0, or -1. */
int bench_proc_cpu(pid_t pid, struct bench_cpu *out);

/* bench_proc_cpu's user + system in ms, or -1. */
double bench_proc_cpu_ms(pid_t pid);

/*
 * The process's own time on a CPU in ms, to the nanosecond (the first
 * field of /proc/PID/schedstat: user and system together, not split,
 * not its children), readable while it is a zombie; -1 when it cannot
 * be read. For runs too short for stat's 10 ms ticks.
 */
double bench_proc_runtime_ms(pid_t pid);

double bench_tv_ms(const struct timeval *tv);

/*
 * How fast each CPU this process may run on goes, relative to the
 * fastest: the best of `rounds` wall times of one fixed spin loop pinned
 * to each CPU in turn. A VM's vCPUs need not be equal (one the
 * hypervisor shares with other guests runs a loop slower, without the
 * guest seeing steal time), and what the benches start queues on them.
 * cpu[i] is the i-th allowed CPU's number and speed[i] its speed (the
 * fastest 1.0); returns how many (at most `max`), or -1. The process's
 * CPU affinity is as before on return.
 */
int bench_cpu_speeds(int *cpu, double *speed, int max, int rounds);

/* times[i] -> speed[i] = min(times) / times[i] (all > 0). */
void bench_speeds_from_times(const double *times, double *speed, int n);

#define BENCH_MEDIAN_MAX 64

/*
 * The median of v[0..n-1] (the mean of the middle two when n is even; NaN
 * unless 1 <= n <= BENCH_MEDIAN_MAX); v is left as it was. What a bench reports of several rounds on a
 * shared machine, where one round's neighbour can take a CPU for a while.
 */
double bench_median(const double *v, int n);

#endif

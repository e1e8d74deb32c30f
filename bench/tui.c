/*
 * bench/tui: figures for the dashboard sink, printed, never asserted.
 *   1. CPU per event: N events (default 200,000) fed to the sink's
 *      event() as fast as one thread can, the render thread included;
 *   2. a burst of 10,000 events/s for 10 s: CPU as a share of one core
 *      (target < 5%) and frames written per second (target <= 10), the
 *      frames as the sink counts them.
 * The sink (plugins/tui, compiled in) runs in a child whose standard
 * output is a 100x30 pty (TERM=xterm-256color) that the parent drains.
 * The event mix is what a run sends: mostly skipped high-volume types
 * (message deltas, worker stdout, heartbeats), tool calls, task states
 * and resource samples. CPU includes building each event's JSON.
 *
 *   bench/tui [EVENTS] [BURST_SECONDS]
 */
#include "config.h"

#include "fakehost.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sbxloop/events.h>

#include "plugins/tui/tui.h"

/* the bench's own standard output, kept before the pty replaced it */
static FILE *report;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
	       ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

/* Event i of the mix, into the caller's buffers. */
static void make_event(long i, struct sbxloop_event *ev, char *data, size_t n)
{
	static const char *const states[] = {"planning", "executing",
					     "scrutinizing", "verifying"};
	long k = i % 20;

	memset(ev, 0, sizeof(*ev));
	ev->struct_size = sizeof(*ev);
	ev->ts = 1733150000.0 + i / 1000.0;
	ev->run_id = "rbench0001";
	ev->data_json = data;
	ev->json = "{}";
	if (k < 10) {
		ev->type = SBXLOOP_EV_AGENT_MESSAGE_DELTA;
		snprintf(data, n, "{\"text\":\"token %ld \"}", i);
	} else if (k < 13) {
		ev->type = SBXLOOP_EV_WORKER_STDOUT;
		snprintf(data, n, "{\"line\":\"make[1]: entering %ld\"}", i);
	} else if (k == 13) {
		ev->type = SBXLOOP_EV_WORKER_HEARTBEAT;
		snprintf(data, n, "{}");
	} else if (k < 16) {
		ev->type = SBXLOOP_EV_AGENT_TOOL_START;
		snprintf(data, n,
			 "{\"tool\":\"shell\",\"args\":\"cc -O2 -c file%ld.c "
			 "-o file%ld.o\"}",
			 i, i);
	} else if (k == 16) {
		ev->type = SBXLOOP_EV_AGENT_TOOL_END;
		snprintf(data, n, "{\"tool\":\"shell\",\"success\":true}");
	} else if (k == 17) {
		ev->type = SBXLOOP_EV_TASK_STATE;
		snprintf(data, n,
			 "{\"task_id\":\"t%ld\",\"title\":\"task %ld\","
			 "\"state\":\"%s\",\"revisions\":0,\"replans\":0}",
			 i / 20 % 8, i / 20 % 8, states[i / 20 % 4]);
	} else if (k == 18) {
		ev->type = SBXLOOP_EV_SANDBOX_RESOURCES;
		snprintf(data, n,
			 "{\"role\":\"agent\",\"level\":\"ok\","
			 "\"disk_used_pct\":%ld,\"mem_used_pct\":20,"
			 "\"load1\":0.5}",
			 i % 100);
	} else {
		ev->type = SBXLOOP_EV_AGENT_USAGE;
		snprintf(data, n, "{\"input_tokens\":10,\"output_tokens\":3}");
	}
}

static long frames_of(struct fakehost *fh)
{
	const char *log = fakehost_log(fh), *p = strstr(log, "dashboard: ");

	return p ? strtol(p + strlen("dashboard: "), NULL, 10) : -1;
}

static int phase(struct fakehost *fh, long n, double burst_s)
{
	const struct sbxloop_host *host = fakehost_host(fh);
	struct sbxloop_error err = {0, ""};
	struct sbxloop_event ev;
	char data[512];
	void *ctx = NULL;
	double c0, t0, wall, cpu;
	long i = 0;

	fakehost_log_clear(fh);
	if (tui_sink_ops.create(host, &ctx, &err) < 0) {
		fprintf(stderr, "bench/tui: cannot start the sink: %s\n",
			err.message);
		return -1;
	}
	c0 = cpu_ms();
	t0 = now_s();
	if (burst_s <= 0) {
		for (i = 0; i < n; i++) {
			make_event(i, &ev, data, sizeof(data));
			tui_sink_ops.event(ctx, &ev, &err);
		}
	} else {
		/* 100 events every 10 ms */
		for (long tick = 0; tick < (long)(burst_s * 100); tick++) {
			double due = t0 + (tick + 1) * 0.01, left;

			for (long j = 0; j < 100; j++, i++) {
				make_event(i, &ev, data, sizeof(data));
				tui_sink_ops.event(ctx, &ev, &err);
			}
			left = due - now_s();
			if (left > 0) {
				struct timespec ts = {0, (long)(left * 1e9)};

				nanosleep(&ts, NULL);
			}
		}
	}
	tui_sink_ops.flush(ctx, &err);
	wall = now_s() - t0;
	cpu = cpu_ms() - c0;
	tui_sink_ops.destroy(ctx);
	if (burst_s <= 0)
		fprintf(report,
			"cpu per event: %.2f us over %ld events (%.0f "
			"events/s, %ld frames in %.2f s)\n",
			cpu * 1e3 / (double)n, n, (double)n / wall,
			frames_of(fh), wall);
	else
		fprintf(report,
			"burst of %.0f events/s for %.0f s: %.2f%% of one "
			"core (target < 5%%), %.1f frames/s (target <= 10)\n",
			(double)i / wall, wall, cpu / (wall * 1e3) * 100,
			(double)frames_of(fh) / wall);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	double burst = argc > 2 ? atof(argv[2]) : 10;
	struct winsize ws = {30, 100, 0, 0};
	int master, slave, status;
	unsigned long long drained = 0;
	char buf[65536];
	pid_t pid;

	if (openpty(&master, &slave, NULL, NULL, &ws) < 0) {
		perror("bench/tui: openpty");
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		struct fakehost *fh = fakehost_new(NULL);
		int rc;

		close(master);
		report = fdopen(dup(STDOUT_FILENO), "w");
		if (!report)
			_exit(1);
		setvbuf(report, NULL, _IOLBF, 0);
		dup2(slave, STDOUT_FILENO);
		close(slave);
		setenv("TERM", "xterm-256color", 1);
		unsetenv("NO_COLOR");
		fakehost_config_set(fh, "budgets.max_wall_clock_s", "7200");
		rc = phase(fh, n, 0) || phase(fh, 0, burst);
		fakehost_free(fh);
		fflush(report);
		_exit(rc ? 1 : 0);
	}
	close(slave);
	for (;;) {
		ssize_t r = read(master, buf, sizeof(buf));

		if (r > 0) {
			drained += (unsigned long long)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break; /* EIO: the child closed the pty */
	}
	waitpid(pid, &status, 0);
	printf("terminal output: %.1f MiB\n", drained / 1048576.0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

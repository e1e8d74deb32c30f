/*
 * resources.c - heartbeat, resource sampling and the parent watchdog.
 *
 * Owns the sandbox.resources figures (statvfs of the workspace, meminfo,
 * loadavg), their ok/warn/abort classification, the escalation warning,
 * the abort latch main.c consults for the SandboxResourcesExhausted
 * rewrite, and wk_tick, which every wait loop calls so heartbeats and the
 * parent watchdog run without threads.
 *
 * Tests replace the figures: SBXLOOP_FAKE_DISK_PCT / SBXLOOP_FAKE_MEM_PCT
 * fix them, SBXLOOP_FAKE_RESOURCES names a file of `disk=N` / `mem=N` /
 * `load=N` lines that is re-read at every sample.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

volatile int wk_stop_signal;

struct sample {
	int have_disk, have_mem, have_load, have_disk_bytes, have_mem_kb;
	double disk_pct, mem_pct, load1;
	double disk_total, disk_free;
	double mem_total_kb, mem_avail_kb;
};

static void read_fake_file(const char *path, struct sample *s)
{
	size_t len;
	int big;
	char *text = wk_read_file(path, 4096, &len, &big), *line, *save;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		double v;

		if (sscanf(line, "disk=%lf", &v) == 1) {
			s->have_disk = 1;
			s->disk_pct = v;
		} else if (sscanf(line, "mem=%lf", &v) == 1) {
			s->have_mem = 1;
			s->mem_pct = v;
		} else if (sscanf(line, "load=%lf", &v) == 1) {
			s->have_load = 1;
			s->load1 = v;
		}
	}
	free(text);
}

static void read_real(struct wk_ctx *ctx, struct sample *s)
{
	struct statvfs sv;
	FILE *f;
	char line[256];
	double total = -1, avail = -1;

	if (statvfs(ctx->cwd, &sv) == 0 && sv.f_blocks > 0) {
		s->disk_total = (double)sv.f_blocks * (double)sv.f_frsize;
		s->disk_free = (double)sv.f_bavail * (double)sv.f_frsize;
		s->disk_pct = wk_round(
			100.0 * (1.0 - s->disk_free / s->disk_total), 10);
		s->have_disk = s->have_disk_bytes = 1;
	}
	f = fopen("/proc/meminfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			double v;

			if (sscanf(line, "MemTotal: %lf", &v) == 1)
				total = v;
			else if (sscanf(line, "MemAvailable: %lf", &v) == 1)
				avail = v;
		}
		fclose(f);
	}
	if (total > 0 && avail >= 0) {
		s->mem_total_kb = total;
		s->mem_avail_kb = avail;
		s->mem_pct = wk_round(100.0 * (1.0 - avail / total), 10);
		s->have_mem = s->have_mem_kb = 1;
	}
	{
		double l[1];

		if (getloadavg(l, 1) == 1) {
			s->load1 = wk_round(l[0], 100);
			s->have_load = 1;
		}
	}
}

static void take_sample(struct wk_ctx *ctx, struct sample *s)
{
	const char *fd = getenv("SBXLOOP_FAKE_DISK_PCT");
	const char *fm = getenv("SBXLOOP_FAKE_MEM_PCT");
	const char *ff = getenv("SBXLOOP_FAKE_RESOURCES");

	memset(s, 0, sizeof(*s));
	read_real(ctx, s);
	if (fd || fm || ff) {
		/* faked figures replace the real ones wholesale */
		memset(s, 0, sizeof(*s));
		if (fd) {
			s->have_disk = 1;
			s->disk_pct = atof(fd);
		}
		if (fm) {
			s->have_mem = 1;
			s->mem_pct = atof(fm);
		}
		if (ff)
			read_fake_file(ff, s);
	}
}

static int tripped(int have, double v, double limit)
{
	return have && limit > 0 && v >= limit;
}

static const char *level_name(int level)
{
	return level == 2 ? "abort" : level == 1 ? "warn" : "ok";
}

static cJSON *sample_json(const struct sample *s, int level)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "level", level_name(level));
	if (s->have_disk_bytes) {
		cJSON_AddNumberToObject(d, "disk_total_bytes", s->disk_total);
		cJSON_AddNumberToObject(d, "disk_free_bytes", s->disk_free);
	}
	if (s->have_disk)
		cJSON_AddNumberToObject(d, "disk_used_pct", s->disk_pct);
	if (s->have_mem_kb) {
		cJSON_AddNumberToObject(d, "mem_total_kb", s->mem_total_kb);
		cJSON_AddNumberToObject(d, "mem_available_kb",
					s->mem_avail_kb);
	}
	if (s->have_mem)
		cJSON_AddNumberToObject(d, "mem_used_pct", s->mem_pct);
	if (s->have_load)
		cJSON_AddNumberToObject(d, "load1", s->load1);
	return d;
}

static char *warn_message(struct wk_ctx *ctx, const struct sample *s)
{
	char *disk = NULL, *mem = NULL, *msg;

	if (tripped(s->have_disk, s->disk_pct, ctx->disk_warn))
		disk = wk_printf("disk %g%% used (disk_warn: %g%%)",
				 s->disk_pct, ctx->disk_warn);
	if (tripped(s->have_mem, s->mem_pct, ctx->mem_warn))
		mem = wk_printf("memory %g%% used (mem_warn: %g%%)",
				s->mem_pct, ctx->mem_warn);
	msg = wk_printf("sandbox resources under pressure: %s%s%s",
			disk ? disk : "", disk && mem ? ", " : "",
			mem ? mem : "");
	free(disk);
	free(mem);
	return msg;
}

/* Take one sample, emit it, and handle escalation and the abort latch. */
void wk_resources_sample(struct wk_ctx *ctx)
{
	struct sample s;
	int disk_abort, mem_abort, level;
	char *msg = NULL;

	take_sample(ctx, &s);
	disk_abort = tripped(s.have_disk, s.disk_pct, ctx->disk_abort);
	mem_abort = tripped(s.have_mem, s.mem_pct, ctx->mem_abort);
	if (disk_abort || mem_abort)
		level = 2;
	else if (tripped(s.have_disk, s.disk_pct, ctx->disk_warn) ||
		 tripped(s.have_mem, s.mem_pct, ctx->mem_warn))
		level = 1;
	else
		level = 0;
	wk_emit(ctx, SBXLOOP_EV_SANDBOX_RESOURCES, sample_json(&s, level));
	if (level == 2) {
		if (disk_abort)
			msg = wk_printf("sandbox disk exhausted: %g%% of the "
					"workspace filesystem is used "
					"(disk_abort threshold: %g%%)",
					s.disk_pct, ctx->disk_abort);
		else
			msg = wk_printf("sandbox memory exhausted: %g%% of "
					"memory is used (mem_abort threshold: "
					"%g%%)",
					s.mem_pct, ctx->mem_abort);
		/* the first diagnosis sticks, unless disk trumps memory */
		if (!ctx->abort_message ||
		    (disk_abort && !ctx->abort_is_disk)) {
			free(ctx->abort_message);
			ctx->abort_message = wk_strdup(msg);
			ctx->abort_is_disk = disk_abort;
		}
	} else if (level == 1) {
		msg = warn_message(ctx, &s);
	}
	if (level > ctx->last_level) {
		cJSON *d = sample_json(&s, level);

		cJSON_AddStringToObject(d, "message", msg);
		wk_emit(ctx, SBXLOOP_EV_SANDBOX_RESOURCES_WARNING, d);
	}
	ctx->last_level = level;
	free(msg);
}

/* Heartbeat and watchdog; cheap enough to call from every wait loop. */
void wk_tick(struct wk_ctx *ctx)
{
	if (getppid() != ctx->parent)
		wk_stop_signal = SIGHUP;
	if (wk_stop_signal) {
		if (ctx->child_pgid > 0)
			kill(-ctx->child_pgid, SIGKILL);
		return;
	}
	if (ctx->heartbeat_s > 0 && wk_now() >= ctx->next_beat) {
		ctx->next_beat = wk_now() + ctx->heartbeat_s;
		wk_emit(ctx, SBXLOOP_EV_WORKER_HEARTBEAT, NULL);
		wk_resources_sample(ctx);
	}
}

void wk_sleep(struct wk_ctx *ctx, double seconds)
{
	double end = wk_now() + seconds;

	while (!wk_stop_signal) {
		double left = end - wk_now();
		struct timespec ts;

		if (left <= 0)
			break;
		if (left > 0.1)
			left = 0.1;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(left * 1e9);
		nanosleep(&ts, NULL);
		wk_tick(ctx);
	}
}

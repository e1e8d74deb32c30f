/*
 * main.c - sbxloop-worker: command line, lifecycle and the result file.
 *
 * Owns argument parsing, startup (env files, parent-death signal, --cwd),
 * the job lifecycle (worker.start, dispatch by kind, the resource-abort
 * rewrite, worker.result/worker.error, worker.end), the atomic result
 * file, the final stdout result line and the exit codes: 0 a result was
 * written, 64 usage or bad job, 70 no result could be produced.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_PRCTL
#include <sys/prctl.h>
#endif

#include "github.h"
#include "common/json.h"

struct options {
	const char *job;
	const char *events;
	const char *result;
	const char *cwd;
	const char *env_file;
	double heartbeat;
	double disk_warn, disk_abort, mem_warn, mem_abort;
};

static void usage(FILE *f)
{
	fputs("usage: sbxloop-worker run --job FILE|- --events FILE "
	      "--result FILE\n"
	      "                          [--cwd DIR] [--heartbeat S] "
	      "[--env-file PATH]\n"
	      "                          [--disk-warn P] [--disk-abort P] "
	      "[--mem-warn P] [--mem-abort P]\n"
	      "   or: sbxloop-worker check-agent [PRESET]\n"
	      "   or: sbxloop-worker check-github\n"
	      "   or: sbxloop-worker bridge --port PORT --socket PATH -- "
	      "COMMAND [ARG...]\n"
	      "   or: sbxloop-worker version\n",
	      f);
}

static int parse_number(const char *opt, const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < 0) {
		fprintf(stderr,
			"error: option '%s' needs a non-negative "
			"number, not '%s'\n",
			opt, s);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const char *const numeric[] = {"--heartbeat", "--disk-warn",
					      "--disk-abort", "--mem-warn",
					      "--mem-abort"};
	double *slots[] = {&o->heartbeat, &o->disk_warn, &o->disk_abort,
			   &o->mem_warn, &o->mem_abort};
	int i;

	for (i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **str = NULL;
		size_t k;
		int done = 0;

		if (!strcmp(a, "--job"))
			str = &o->job;
		else if (!strcmp(a, "--events"))
			str = &o->events;
		else if (!strcmp(a, "--result"))
			str = &o->result;
		else if (!strcmp(a, "--cwd"))
			str = &o->cwd;
		else if (!strcmp(a, "--env-file"))
			str = &o->env_file;
		if (!v) {
			fprintf(stderr, "error: option '%s' %s\n", a,
				str || a[0] == '-' ? "needs a value"
						   : "is not known");
			return -1;
		}
		if (str) {
			*str = v;
			i++;
			continue;
		}
		for (k = 0; k < 5 && !done; k++) {
			if (strcmp(a, numeric[k]))
				continue;
			if (parse_number(a, v, slots[k]) < 0)
				return -1;
			done = 1;
		}
		if (!done) {
			fprintf(stderr, "error: unknown option '%s'\n", a);
			return -1;
		}
		i++;
	}
	if (!o->job || !o->events || !o->result) {
		fputs("error: 'run' needs --job, --events and --result\n",
		      stderr);
		return -1;
	}
	return 0;
}

static void on_signal(int sig)
{
	wk_stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int mkdir_parents(const char *path)
{
	char *copy = wk_strdup(path), *slash;
	int rc = 0;

	for (slash = strchr(copy + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			rc = -1;
		*slash = '/';
	}
	free(copy);
	return rc;
}

/*
 * Temp file, rename: all or nothing, whatever happens to this process.
 * With `sync` the file and then its directory are fsynced as well, so
 * the result also survives the machine losing power. That is off by
 * default: the host takes a job's outcome from the result as soon as the
 * worker exits and checkpoints it in its own store (a job in flight when
 * the host crashes is run again on resume), and the two syncs cost half
 * a millisecond of every job.
 */
static int write_result(const char *path, const char *text, int sync)
{
	char *tmp = wk_printf("%s.tmp.%ld", path, (long)getpid());
	char *dir = wk_strdup(path), *slash;
	size_t len = strlen(text), off = 0;
	int fd, rc = -1;

	mkdir_parents(path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "error: cannot write '%s': %s\n", tmp,
			strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	if (off < len || (sync && fsync(fd) < 0) || close(fd) < 0) {
		fprintf(stderr, "error: cannot write '%s': %s\n", tmp,
			strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) < 0) {
		fprintf(stderr, "error: cannot rename '%s' to '%s': %s\n", tmp,
			path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	slash = strrchr(dir, '/');
	if (!sync) {
		rc = 0;
		goto out;
	}
	if (slash) {
		*slash = '\0';
		fd = open(*dir ? dir : "/",
			  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	rc = 0;
out:
	free(tmp);
	free(dir);
	return rc;
}

static char *absolute(const char *path)
{
	char here[4096];

	if (path[0] == '/' || !getcwd(here, sizeof(here)))
		return wk_strdup(path);
	return wk_printf("%s/%s", here, path);
}

static void run_kind(struct wk_ctx *ctx, const struct wk_job *job,
		     struct wk_result *res)
{
	if (!strcmp(job->kind, "shell.check")) {
		wk_shell_check(ctx, job, res);
	} else if (!strcmp(job->kind, "shell.batch")) {
		wk_shell_batch(ctx, job, res);
	} else if (!strcmp(job->kind, "agent.session")) {
		wk_agent_session(ctx, job, res);
	} else {
		wk_github_op(ctx, job, res);
	}
}

/* A job that fails after the sandbox hit an abort level blames that. */
static void resource_rewrite(struct wk_ctx *ctx, struct wk_result *res)
{
	char *detail;

	if (!ctx->abort_message || res->status == WK_OK)
		return;
	detail = wk_printf("underlying failure: %s: %s%s%s",
			   res->error_type ? res->error_type : "Error",
			   res->error_message ? res->error_message : "",
			   res->error_detail ? "\n" : "",
			   res->error_detail ? res->error_detail : "");
	wk_result_set_error(res, WK_ERROR, "SandboxResourcesExhausted", detail,
			    "%s", ctx->abort_message);
	free(detail);
}

static int cmd_run(int argc, char **argv)
{
	struct options o = {0};
	struct wk_ctx ctx = {0};
	struct wk_job job = {0};
	struct wk_result res = {0};
	char *text = NULL, *err = NULL, *line = NULL;
	char *events_path = NULL, *result_path = NULL;
	const char *env_file;
	size_t len = 0;
	int too_big, rc = WK_EXIT_USAGE;
	cJSON *doc = NULL;

	o.heartbeat = 15;
	ctx.events_fd = -1;
	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return WK_EXIT_USAGE;
	}
	ctx.parent = getppid();
#ifdef HAVE_PRCTL
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	/*
	 * Not dumpable: a job's processes (same uid, not root) can then
	 * neither open /proc/<worker>/fd/1 to forge event lines nor read
	 * the worker's memory or environment. The host still refuses host
	 * event types from any worker line (core/host/events.c).
	 */
	prctl(PR_SET_DUMPABLE, 0);
#endif
	if (getppid() != ctx.parent)
		return WK_EXIT_SOFTWARE; /* parent died before the prctl */
	install_signals();
	env_file = o.env_file;
	if (!env_file && getenv("HOME")) {
		char *def = wk_printf("%s/.sbxloop/env.sh", getenv("HOME"));

		wk_env_load_file(def);
		free(def);
	} else if (env_file) {
		wk_env_load_file(env_file);
	}
	wk_env_load_file(getenv("SBXLOOP_PERSISTENT_ENV")
				 ? getenv("SBXLOOP_PERSISTENT_ENV")
				 : "/etc/sandbox-persistent.sh");

	text = wk_read_file(o.job, WK_JOB_MAX, &len, &too_big);
	if (!text) {
		if (too_big)
			fprintf(stderr,
				"error: job '%s' is larger than %u "
				"bytes\n",
				o.job, WK_JOB_MAX);
		else
			fprintf(stderr, "error: cannot read job '%s': %s\n",
				o.job, strerror(errno));
		goto out;
	}
	if (wk_job_parse(&job, text, len, &err) < 0) {
		fprintf(stderr, "error: invalid job '%s': %s\n", o.job, err);
		goto out;
	}
	/* --cwd must not move the files the host named relative to us */
	events_path = absolute(o.events);
	result_path = absolute(o.result);
	if (o.cwd || job.cwd) {
		const char *dir = o.cwd ? o.cwd : job.cwd;

		if (chdir(dir) < 0) {
			fprintf(stderr, "error: cannot change to '%s': %s\n",
				dir, strerror(errno));
			goto out;
		}
	}
	if (!getcwd(ctx.cwd, sizeof(ctx.cwd))) {
		fprintf(stderr,
			"error: cannot resolve the working directory: "
			"%s\n",
			strerror(errno));
		goto out;
	}

	rc = WK_EXIT_SOFTWARE;
	ctx.job = &job;
	ctx.heartbeat_s = o.heartbeat;
	ctx.disk_warn = o.disk_warn;
	ctx.disk_abort = o.disk_abort;
	ctx.mem_warn = o.mem_warn;
	ctx.mem_abort = o.mem_abort;
	/* SBXLOOP_WORKER_FSYNC_EVENTS: the name 0.1 documented first. */
	ctx.fsync = getenv("SBXLOOP_WORKER_FSYNC") != NULL ||
		    getenv("SBXLOOP_WORKER_FSYNC_EVENTS") != NULL;
	mkdir_parents(events_path);
	if (wk_events_open(&ctx, events_path) < 0) {
		fprintf(stderr, "error: cannot open events file '%s': %s\n",
			events_path, strerror(errno));
		goto out;
	}
	{
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "kind", job.kind);
		wk_emit(&ctx, SBXLOOP_EV_WORKER_START, d);
	}
	if (ctx.heartbeat_s > 0) {
		wk_resources_sample(&ctx);
		ctx.next_beat = wk_now() + ctx.heartbeat_s;
	}
	run_kind(&ctx, &job, &res);
	if (wk_stop_signal) {
		fprintf(stderr,
			"error: stopped by signal %d before a result "
			"was written\n",
			wk_stop_signal);
		goto out;
	}
	resource_rewrite(&ctx, &res);
	doc = wk_result_to_json(&res, job.job_id);
	line = sl_json_print_sorted(doc);
	if (write_result(result_path, line, ctx.fsync) < 0)
		goto out;
	if (res.status == WK_OK) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "status", "ok");
		wk_emit(&ctx, SBXLOOP_EV_WORKER_RESULT, d);
	} else {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "status",
					res.status == WK_TIMEOUT ? "timeout"
								 : "error");
		cJSON_AddStringToObject(d, "error_type", res.error_type);
		cJSON_AddStringToObject(d, "message", res.error_message);
		wk_emit(&ctx, SBXLOOP_EV_WORKER_ERROR, d);
	}
	wk_emit(&ctx, SBXLOOP_EV_WORKER_END, NULL);
	wk_events_close(&ctx);
	printf("{\"result\":%s,\"sbxloop_result\":1}\n", line);
	fflush(stdout);
	rc = WK_EXIT_OK;
out:
	wk_events_close(&ctx);
	cJSON_Delete(doc);
	free(line);
	free(ctx.abort_message);
	wk_result_free(&res);
	wk_job_free(&job);
	free(err);
	free(text);
	free(events_path);
	free(result_path);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "version")) {
		printf("sbxloop-worker %s\n", PACKAGE_VERSION);
		return WK_EXIT_OK;
	}
	if (argc >= 2 && !strcmp(argv[1], "run"))
		return cmd_run(argc, argv);
	if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "check-agent"))
		return wk_check_agent(argc == 3 ? argv[2] : NULL);
	if (argc == 2 && !strcmp(argv[1], "check-github"))
		return wk_check_github();
	if (argc >= 2 && !strcmp(argv[1], "bridge"))
		return wk_bridge(argc, argv);
	if (argc >= 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
		usage(stdout);
		return WK_EXIT_OK;
	}
	if (argc >= 2)
		fprintf(stderr, "error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return WK_EXIT_USAGE;
}

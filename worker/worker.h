/*
 * worker.h - private interfaces shared by the sbxloop-worker sources.
 *
 * The worker is one small program; this header is its only internal
 * contract. Nothing here is installed or used outside worker/.
 */
#ifndef SBXLOOP_WORKER_H
#define SBXLOOP_WORKER_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

/* the event vocabulary, shared with the host through the SDK */
#include <sbxloop/events.h>

#define WK_EXIT_OK 0
#define WK_EXIT_USAGE 64
#define WK_EXIT_SOFTWARE 70

#define WK_JOB_MAX (4u * 1024 * 1024)
#define WK_EVENT_LINE_MAX (256u * 1024)
#define WK_SHELL_TAIL 20000
#define WK_BATCH_HEAD 2000
#define WK_BATCH_TAIL 4000
#define WK_TOOL_ARGS_MAX 400
#define WK_TOOL_OUTPUT_MAX 1000
#define WK_KILL_GRACE_S 2.0

enum wk_status { WK_OK = 0, WK_ERROR, WK_TIMEOUT };

/* The parsed job request. Every string is borrowed from `root`. */
struct wk_job {
	cJSON *root; /* owned: the whole request */
	const char *job_id;
	const char *run_id;
	const char *kind;
	double timeout_s;
	const char *cwd;
	/* agent.session */
	const char *prompt;
	const char *system_message;
	const char *model;
	const char *resume_session_id;
	int read_only;
	int expect_json;
	const char *backend;
	const char *script;
	const char *script_key; /* "TASK/PHASE" for keyed script replies */
	const char *preset;
	long max_tool_calls; /* 0: unbounded */
	/* shell.check / shell.batch */
	cJSON *argv;
	cJSON *commands;
	double command_timeout_s;
	int release_fifos; /* shell.batch: a FIFO in cwd cannot hold one */
	/* github.op */
	const char *op;
	cJSON *params; /* an object, or NULL */
};

/* What a job produced. Strings and JSON are owned by the result. */
struct wk_result {
	enum wk_status status;
	char *output_text;
	cJSON *output_json;
	char *session_id;
	cJSON *usage;
	cJSON *health;
	int has_exit_code;
	int exit_code;
	char *error_type;
	char *error_message;
	char *error_detail;
	long http_status; /* github.op: the failed request's status, or 0 */
};

/* Runtime state of one `run` invocation. */
struct wk_ctx {
	const struct wk_job *job;
	int events_fd;
	int fsync; /* SBXLOOP_WORKER_FSYNC: sync events and the result */
	char cwd[4096];
	double heartbeat_s;
	double next_beat;
	double disk_warn, disk_abort, mem_warn, mem_abort;
	int last_level;
	char *abort_message; /* latched diagnosis, owned */
	int abort_is_disk;
	pid_t parent;
	pid_t child_pgid; /* running subprocess group, 0 if none */
	/* events held while one read of a CLI's output is parsed (events.c) */
	int holding;
	char *held;
	size_t held_len, held_cap;
};

/* util (events.c) */
double wk_now(void);
double wk_round(double v, double scale);
char *wk_strdup(const char *s);
char *wk_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *wk_read_file(const char *path, size_t max, size_t *len, int *too_big);
const char *wk_utf8_tail(const char *s, size_t len, size_t keep);

/* events.c: envelope, sorted compact lines, file + stdout mirror */
int wk_events_open(struct wk_ctx *ctx, const char *path);
void wk_emit(struct wk_ctx *ctx, const char *type, cJSON *data);
/*
 * Hold the event lines emitted until wk_events_flush, which writes them
 * with one write per channel: the events of one read of an agent's
 * output (a burst of lines) cost two system calls, not two each.
 */
void wk_events_hold(struct wk_ctx *ctx);
void wk_events_flush(struct wk_ctx *ctx);
void wk_events_close(struct wk_ctx *ctx);

/* job.c */
int wk_job_parse(struct wk_job *job, const char *text, size_t len, char **err);
void wk_job_free(struct wk_job *job);
void wk_result_set_error(struct wk_result *res, enum wk_status status,
			 const char *type, const char *detail, const char *fmt,
			 ...) __attribute__((format(printf, 5, 6)));
cJSON *wk_result_to_json(const struct wk_result *res, const char *job_id);
void wk_result_free(struct wk_result *res);

/* resources.c: sampling, heartbeat, parent watchdog */
void wk_resources_sample(struct wk_ctx *ctx);
void wk_tick(struct wk_ctx *ctx);
void wk_sleep(struct wk_ctx *ctx, double seconds);
extern volatile int wk_stop_signal;

/* env.c */
void wk_env_load_file(const char *path);
/* caller frees with wk_env_free; both may be NULL (env.c) */
char **wk_env_agent(const cJSON *pass, const cJSON *set);
void wk_env_free(char **envp);

/* proc.c: bounded capture buffer and the one subprocess helper */
struct wk_buf {
	char *head;
	size_t head_len, head_cap;
	char *tail;
	size_t tail_len, tail_cap;
	size_t total;
};
void wk_buf_init(struct wk_buf *b, size_t head_cap, size_t tail_cap);
void wk_buf_add(struct wk_buf *b, const char *data, size_t len);
char *wk_buf_render(const struct wk_buf *b); /* caller frees */
void wk_buf_free(struct wk_buf *b);

struct wk_proc {
	char *const *argv;
	const char *cwd;
	char *const *envp; /* NULL: inherit the worker's environment */
	double timeout_s;
	int merge_stderr;
	struct wk_buf *out;
	struct wk_buf *err;
	/* called for every complete stdout line (newline stripped) */
	void (*on_line)(void *arg, const char *line, size_t len);
	void *arg;
	/* set (by on_line) to stop the command: SIGTERM, then SIGKILL */
	int stop;
	/* NULL, or a work tree whose FIFOs are released while the command
	 * runs past its first second (common/fifo.h) */
	const char *release_root;
	/* results */
	int exit_code;
	int term_signal; /* the signal that ended it, else 0 */
	int timed_out;
	int spawn_errno;
};
int wk_proc_run(struct wk_ctx *ctx, struct wk_proc *p);

/* kinds */
void wk_shell_check(struct wk_ctx *ctx, const struct wk_job *job,
		    struct wk_result *res);
void wk_shell_batch(struct wk_ctx *ctx, const struct wk_job *job,
		    struct wk_result *res);
void wk_agent_session(struct wk_ctx *ctx, const struct wk_job *job,
		      struct wk_result *res);
int wk_backend_script(struct wk_ctx *ctx, const struct wk_job *job,
		      struct wk_result *res);
int wk_backend_command(struct wk_ctx *ctx, const struct wk_job *job,
		       struct wk_result *res);
int wk_check_agent(const char *preset); /* check-agent: an exit status */

/* agent.c helpers shared with the backends */
char *wk_tool_args_display(const cJSON *args);
void wk_usage_merge(cJSON **into, const cJSON *sample);

/* extract.c */
cJSON *wk_extract_json(const char *text);
/* Bytes the last wk_extract_json examined, scans and parses (tests). */
size_t wk_extract_last_work(void);

/*
 * bridge.c: `sbxloop-worker bridge`, the loopback-to-unix-socket bridge
 * of a proxy sandbox around a command; returns its exit status.
 */
int wk_bridge(int argc, char **argv);

#endif

/*
 * plugins/github: the `github` reporter. It keeps a tracking issue of a
 * run and delivers a completed run as one pull request, and it never
 * holds the GitHub token nor speaks HTTP: every GitHub action is a
 * `github.op` job the host runs in the run's github sandbox
 * (host->sandbox_job), whose worker alone holds the token.
 *
 * module.c: the descriptor, the reporter slots and the queue thread;
 * ops.c: one op or a batch of ops as a job, results and errors;
 * report.c: the tracking issue; deliver.c and plan.c: the delivery.
 */
#ifndef SL_GITHUB_H
#define SL_GITHUB_H

#include <pthread.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include <sbxloop/reporter.h>

#define GH_JOB_TIMEOUT_S 120.0

struct gh {
	const struct sbxloop_host *host;
	char *repo;    /* OWNER/NAME, NULL: the reporter does nothing */
	char *api_url; /* github.api_url */
	char *run_id;
	char *outcome;
	int report;           /* github.report */
	int deliver;          /* github.deliver */
	int started;          /* run_start probed the repository */
	char *default_branch; /* as the probe found it */
	int retry;            /* `sbxloop deliver`: the run is over */
	int dry_run;          /* print the delivery plan, call nothing */
	/* the tracking issue */
	long long issue;
	char *issue_url;
	char *lines; /* one line per finished task, for the summary */
	size_t lines_len;
	/* delivery's result, for the summary comment */
	long long pr;
	char *pr_url;
	/* the queue of comments and its thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int have_thread;
	int stop;
	int busy;
	char **queue;
	size_t n_queue, cap_queue;
	/* one job at a time, whichever thread asks */
	pthread_mutex_t job_lock;
};

/* An op's failure: the worker's error type and GitHub's status. */
struct gh_err {
	int http_status; /* 0: no HTTP answer */
	char type[64];
	char message[1024];
};

/*
 * Run one op (`params` borrowed; api_url is added) in the github sandbox.
 * On 0, *out (caller frees) is its output. On a failure, a negative code
 * and `e` filled ("github op OP failed: TYPE: MESSAGE").
 */
int gh_op(struct gh *g, const char *op, const cJSON *params, cJSON **out,
	  struct gh_err *e);
/*
 * Run ops[] (an array of {op, params}, borrowed) as one job: one worker
 * process and one HTTP connection. On 0, *out is the array of results.
 * A later op's params may name an earlier result as "${N.key...}".
 */
int gh_batch(struct gh *g, const cJSON *ops, double timeout_s, cJSON **out,
	     struct gh_err *e);
/* {op, params} for gh_batch; takes `params`. */
cJSON *gh_batch_item(const char *op, cJSON *params);
/*
 * A string param of a batch op that is text, never a reference: a file's
 * content, a path, a title. Text that reads "${...}" (after any '$') is
 * sent with one more '$', which the worker drops.
 */
cJSON *gh_text(const char *s);
/* {"repo": g->repo} plus nothing else: the start of most params. */
cJSON *gh_params(const struct gh *g);
/* The integer at `item`, 0 when it is not a number. */
long long gh_num(const cJSON *item);
/* Emit `type` with `data` (taken). */
void gh_emit(struct gh *g, const char *type, cJSON *data);

/* plan.c: what a delivery sends */
#define GH_INLINE_MAX (512u << 10) /* text up to this goes inline */
#define GH_FILE_MAX (100LL << 20)  /* GitHub refuses larger files */

struct gh_file {
	char *path;          /* relative to the source directory */
	char mode[8];        /* "100644", "100755", "120000" */
	char status;         /* 'A', 'M', 'D' */
	int deleted;         /* a tree entry with sha null */
	int text;            /* valid UTF-8 without NUL: inline in the tree */
	unsigned char *data; /* the bytes (a symlink: its target) */
	size_t len;
	char sha[48]; /* the uploaded blob's, for a non-text file */
};

struct gh_plan {
	struct gh_file *files; /* sorted by path */
	size_t n, cap;
	size_t n_deleted, n_excluded;
	size_t bytes;
	int git_diff;  /* else a snapshot */
	char base[64]; /* the commit the diff is against */
	char *note;    /* how it was planned, for the PR body */
};

/*
 * The plan of directory `dir`: the git diff against the merge base with
 * `remote_base` (may be NULL), refs/sbxloop/base or origin/HEAD when
 * `dir` is a checkout's top, else a snapshot. -1 with `why` filled when
 * nothing can be delivered.
 */
int gh_plan_build(struct gh *g, const char *dir, const char *remote_base,
		  struct gh_plan *p, char *why, size_t why_len);
void gh_plan_release(struct gh_plan *p);

/* prbody.c */
char *gh_pr_body(const struct gh *g, const struct sbxloop_run_info *run,
		 const struct gh_plan *p);
void gh_plan_print(const struct gh *g, const struct gh_plan *p, FILE *out);

/* deliver.c: deliver the run as one pull request (dry_run: print). */
int gh_deliver(struct gh *g, const struct sbxloop_run_info *run,
	       struct sbxloop_delivery *out, int dry_run,
	       struct sbxloop_error *err);

/* report.c */
/* The repository exists, or is created when github.create_repo says so. */
int gh_repo_ensure(struct gh *g, struct sbxloop_error *err);
/* Find the run's tracking issue by exact title, or open it. */
void gh_report_open(struct gh *g);
/* The comment line of a finished task (caller frees). */
char *gh_task_line(const char *task_id, const char *title, const char *state);
/* Post one comment on the tracking issue (best effort, logged). */
void gh_report_comment(struct gh *g, const char *body);
/* Close the issue as completed (best effort, logged). */
void gh_report_close_issue(struct gh *g);
/* The final comment, and close the issue when the run completed. */
void gh_report_close(struct gh *g, const char *state);

#endif

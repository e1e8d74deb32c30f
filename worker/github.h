/*
 * github.h - the github.op job kind: its HTTP client (curl.c), the job
 * runner with its errors and batches (github.c) and the operations
 * (ghops.c).
 *
 * Private to the worker. libcurl is never linked: curl.c loads it with
 * dlopen when a github.op job runs, so the same binary still starts in
 * a sandbox without it. <curl/curl.h> gives the types and constants
 * only.
 */
#ifndef SBXLOOP_WORKER_GITHUB_H
#define SBXLOOP_WORKER_GITHUB_H

#include "worker.h"

/* what one request may read: a response over this is an error */
#define WK_GH_BODY_MAX (64u * 1024 * 1024)
#define WK_GH_CONNECT_TIMEOUT_S 15.0
#define WK_GH_REQUEST_TIMEOUT_S 60.0
#define WK_GH_RETRIES 4          /* after the first attempt */
#define WK_GH_RATE_WAIT_MAX 60.0 /* seconds, one rate-limit wait */

/* ---- curl.c: the libcurl loader and the one-handle client --------- */

/*
 * Load libcurl ($SBXLOOP_WORKER_LIBCURL, else libcurl.so.4) once. On
 * failure returns -1 with *err (caller frees) naming the library and the
 * package to install, and *detail the loader's own reason.
 */
int wk_curl_load(char **err, char **detail);
/* curl_version() of the loaded library; borrowed. */
const char *wk_curl_version(void);

struct wk_http; /* one curl easy handle, reused by every request */

struct wk_http_response {
	long status; /* HTTP status; 0 when no response came */
	char *body;  /* owned; NUL-terminated */
	size_t len;
	int transport;      /* a CURLcode; 0 when a response came */
	char *error;        /* transport failure text (not scrubbed), owned */
	int timed_out;      /* the job's deadline cut the request short */
	int no_answer;      /* connected, but the answer did not come */
	int rate_limited;   /* a rate limit that outlasted the retries */
	double retry_after; /* Retry-After seconds, or -1 */
	long ratelimit_remaining; /* x-ratelimit-remaining, or -1 */
	double ratelimit_reset;   /* x-ratelimit-reset (epoch s), or -1 */
};

/*
 * A client for one job: `auth` is the Authorization header line and
 * `ca_bundle` a CA file or NULL (both borrowed, kept for the client's
 * life); `deadline` is the job's end in wk_now() time. NULL when curl
 * cannot make a handle.
 */
struct wk_http *wk_http_new(struct wk_ctx *ctx, const char *auth,
			    const char *ca_bundle, double deadline);
/*
 * One request with the retry policy of docs/worker-protocol.md: 5xx,
 * connection failures and timeouts are retried with backoff, rate
 * limits after their wait (gh.retry is emitted before each wait); a
 * POST is retried only when GitHub cannot have acted on it. `body` may
 * be NULL. Fills *r (free with wk_http_response_free).
 */
void wk_http_request(struct wk_http *h, const char *op, const char *method,
		     const char *url, const char *body,
		     struct wk_http_response *r);
void wk_http_response_free(struct wk_http_response *r);
/* requests made and connections opened so far */
void wk_http_counts(const struct wk_http *h, long *requests,
		    long *connections);
void wk_http_free(struct wk_http *h);

/* ---- github.c: the runner the operations call --------------------- */

struct wk_gh; /* one job: client, token, errors */

/* how a request treats a status it may expect */
enum {
	WK_GH_ALLOW_404 = 1,       /* 404 → {"missing":true} */
	WK_GH_ALLOW_409_EMPTY = 2, /* 409 "Git Repository is empty." too */
};

/*
 * Send METHOD api_url+path (path already escaped; may carry a query).
 * `body` is borrowed. Returns 0 with *out (caller frees; {} for an empty
 * body), 1 with *out = {"missing":true,"http_status":N} for an allowed
 * miss, or -1 with the job's error set.
 */
int wk_gh_call(struct wk_gh *g, const char *method, const char *path,
	       const cJSON *body, int allow, cJSON **out);
/* Set the job's error (GitHubError unless `type`); returns -1. */
int wk_gh_fail(struct wk_gh *g, const char *type, long http_status,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Put "PREFIX: " before the job's error message. */
void wk_gh_prefix_error(struct wk_gh *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* emit an event with the op's name (and batch index) added; `data` is
 * consumed */
void wk_gh_emit(struct wk_gh *g, const char *type, cJSON *data);

/* Percent-escape `s`; with keep_slash, '/' stays. Caller frees. */
char *wk_gh_escape(const char *s, int keep_slash);

/* ---- ghops.c: the operations -------------------------------------- */

/* what a param must hold when it is given (null counts as absent) */
enum wk_gh_type {
	WK_GH_STR,  /* a string; a required one must not be empty */
	WK_GH_REPO, /* "owner/name" of [A-Za-z0-9_.-] */
	WK_GH_PATH, /* a path (contents, ref): no '.' or '..' segment */
	WK_GH_INT,  /* a non-negative integer, or a string of digits */
	WK_GH_BOOL,
	WK_GH_LIST,
	WK_GH_OBJ,
	WK_GH_ANY,
};

struct wk_gh_param {
	const char *name;
	enum wk_gh_type type;
	int required;
};

struct wk_gh_op {
	const char *name;
	const struct wk_gh_param *params; /* ends with a NULL name */
	/* 0 with *out, 1 for an allowed miss, -1 with the error set */
	int (*run)(struct wk_gh *g, const cJSON *params, cJSON **out);
};

/* ends with a NULL name; "batch" is github.c's own */
extern const struct wk_gh_op wk_gh_ops[];

/* a validated param (borrowed), or NULL / the default when absent */
const char *wk_gh_str(const cJSON *params, const char *key);
long wk_gh_int(const cJSON *params, const char *key, long dflt);
int wk_gh_bool(const cJSON *params, const char *key, int dflt);

/* github.c: the job kind and `sbxloop-worker check-github` */
void wk_github_op(struct wk_ctx *ctx, const struct wk_job *job,
		  struct wk_result *res);
int wk_check_github(void);

#endif

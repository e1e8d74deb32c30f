/*
 * curl.c - the HTTPS client of the github.op job kind.
 *
 * Owns loading libcurl with dlopen (the worker never links it: the same
 * binary runs in the agent sandbox, which may not have it), the one easy
 * handle of a job (kept alive across the requests of a batch), the
 * response (status, the rate-limit headers, a body capped at
 * WK_GH_BODY_MAX) and the retry policy. github.c is its only caller.
 *
 * Retries (docs/worker-protocol.md): a 5xx, a connection failure or a
 * timeout is tried again up to WK_GH_RETRIES times after 0.5, 1, 2 and
 * 4 s (each +-25% jitter); a rate limit waits Retry-After, else until
 * x-ratelimit-reset + 1 s, at most WK_GH_RATE_WAIT_MAX. No wait passes
 * the job's deadline. A POST creates something, so it is retried only
 * when GitHub cannot have acted on it: a 5xx, a rate limit, or a
 * connection that was never made; a POST that timed out or lost its
 * connection after sending is reported, never sent twice.
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "github.h"

/* The libcurl entry points the worker uses, resolved by name. */
static struct curl_api {
	int loaded;
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	char *(*version)(void);
} C;

/*
 * The library stays loaded until the process exits: libcurl and its TLS
 * library register exit handlers, which must not outlive their code.
 */
int wk_curl_load(char **err, char **detail)
{
	static const struct {
		const char *name;
		size_t offset;
	} syms[] = {
		{"curl_global_init", offsetof(struct curl_api, global_init)},
		{"curl_easy_init", offsetof(struct curl_api, easy_init)},
		{"curl_easy_setopt", offsetof(struct curl_api, easy_setopt)},
		{"curl_easy_perform", offsetof(struct curl_api, easy_perform)},
		{"curl_easy_getinfo", offsetof(struct curl_api, easy_getinfo)},
		{"curl_easy_cleanup", offsetof(struct curl_api, easy_cleanup)},
		{"curl_easy_strerror",
		 offsetof(struct curl_api, easy_strerror)},
		{"curl_slist_append", offsetof(struct curl_api, slist_append)},
		{"curl_slist_free_all",
		 offsetof(struct curl_api, slist_free_all)},
		{"curl_version", offsetof(struct curl_api, version)},
	};
	const char *lib = getenv("SBXLOOP_WORKER_LIBCURL");
	void *dl;
	size_t i;

	*err = NULL;
	*detail = NULL;
	if (C.loaded)
		return 0;
	if (!lib || !*lib)
		lib = "libcurl.so.4";
	dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();

		*err = wk_printf("libcurl (%s) is missing in this sandbox: "
				 "install libcurl4 (apt-get install libcurl4)",
				 lib);
		*detail = wk_strdup(why ? why : "dlopen failed");
		return -1;
	}
	for (i = 0; i < sizeof(syms) / sizeof(*syms); i++) {
		void *f = dlsym(dl, syms[i].name);

		if (!f) {
			*err = wk_printf("libcurl (%s) lacks %s: install "
					 "libcurl4 7.32 or later (apt-get "
					 "install libcurl4)",
					 lib, syms[i].name);
			dlclose(dl);
			memset(&C, 0, sizeof(C));
			return -1;
		}
		/* POSIX guarantees a data pointer can hold a function's */
		memcpy((char *)&C + syms[i].offset, &f, sizeof(f));
	}
	if (C.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		*err = wk_printf("libcurl (%s) failed to initialize", lib);
		memset(&C, 0, sizeof(C));
		return -1;
	}
	C.loaded = 1;
	return 0;
}

const char *wk_curl_version(void)
{
	return C.loaded ? C.version() : NULL;
}

struct wk_http {
	struct wk_ctx *ctx;
	CURL *curl;
	struct curl_slist *headers;      /* without a body */
	struct curl_slist *body_headers; /* with Content-Type */
	double deadline;
	long requests, connections;
	char errbuf[CURL_ERROR_SIZE];
	/* the response being read */
	struct wk_http_response *resp;
	size_t cap;
	int too_big;
};

static struct curl_slist *add_header(struct curl_slist *l, const char *h)
{
	struct curl_slist *n = C.slist_append(l, h);

	if (!n)
		abort();
	return n;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct wk_http *h = arg;
	struct wk_http_response *r = h->resp;
	size_t len = size * n;

	if (r->len + len > WK_GH_BODY_MAX) {
		h->too_big = 1;
		return 0; /* curl stops with CURLE_WRITE_ERROR */
	}
	if (r->len + len + 1 > h->cap) {
		size_t cap = h->cap ? h->cap : 16384;

		while (cap < r->len + len + 1)
			cap *= 2;
		r->body = realloc(r->body, cap);
		if (!r->body)
			abort();
		h->cap = cap;
	}
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

/* `name: value` when the header line is `name`, else NULL */
static const char *header_value(const char *line, size_t len, const char *name,
				char *buf, size_t size)
{
	size_t k = strlen(name), i = 0;
	const char *v;

	if (len <= k || strncasecmp(line, name, k) || line[k] != ':')
		return NULL;
	v = line + k + 1;
	len -= k + 1;
	while (len && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	while (len &&
	       (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
		len--;
	for (i = 0; i < len && i + 1 < size; i++)
		buf[i] = v[i];
	buf[i] = '\0';
	return buf;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct wk_http *h = arg;
	struct wk_http_response *r = h->resp;
	size_t len = size * n;
	char v[64];

	if (len >= 5 && !strncmp(data, "HTTP/", 5)) {
		/* a new response (after a 100 Continue): forget the last */
		r->retry_after = -1;
		r->ratelimit_remaining = -1;
		r->ratelimit_reset = -1;
	} else if (header_value(data, len, "retry-after", v, sizeof(v))) {
		/* seconds; an HTTP date is a wait of unknown length */
		r->retry_after = all_digits(v) ? atof(v) : WK_GH_RATE_WAIT_MAX;
	} else if (header_value(data, len, "x-ratelimit-remaining", v,
				sizeof(v))) {
		if (all_digits(v))
			r->ratelimit_remaining = atol(v);
	} else if (header_value(data, len, "x-ratelimit-reset", v,
				sizeof(v))) {
		if (all_digits(v))
			r->ratelimit_reset = atof(v);
	}
	return len;
}

/* Heartbeats and the parent watchdog go on during a transfer. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct wk_http *h = arg;

	wk_tick(h->ctx);
	return wk_stop_signal ? 1 : 0;
}

struct wk_http *wk_http_new(struct wk_ctx *ctx, const char *auth,
			    const char *ca_bundle, double deadline)
{
	struct wk_http *h = calloc(1, sizeof(*h));
	char *ua = wk_printf("User-Agent: sbxloop-worker/%s", PACKAGE_VERSION);
	int bad = 0;

	if (!h)
		abort();
	h->ctx = ctx;
	h->deadline = deadline;
	h->curl = C.easy_init();
	if (!h->curl) {
		free(ua);
		free(h);
		return NULL;
	}
	h->headers = add_header(NULL, auth);
	h->headers =
		add_header(h->headers, "Accept: application/vnd.github+json");
	h->headers =
		add_header(h->headers, "X-GitHub-Api-Version: 2022-11-28");
	h->headers = add_header(h->headers, ua);
	/* no Expect: 100-continue round trip before a large body */
	h->headers = add_header(h->headers, "Expect:");
	h->body_headers = add_header(NULL, auth);
	h->body_headers = add_header(h->body_headers,
				     "Accept: application/vnd.github+json");
	h->body_headers = add_header(h->body_headers,
				     "X-GitHub-Api-Version: 2022-11-28");
	h->body_headers = add_header(h->body_headers, ua);
	h->body_headers = add_header(h->body_headers, "Expect:");
	h->body_headers =
		add_header(h->body_headers, "Content-Type: application/json");
	free(ua);
	bad |= C.easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	bad |= C.easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	bad |= C.easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	bad |= C.easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	bad |= C.easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	bad |= C.easy_setopt(h->curl, CURLOPT_HEADERDATA, h);
	bad |= C.easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	bad |= C.easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	bad |= C.easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
	bad |= C.easy_setopt(h->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	/* a redirect would carry the token elsewhere: never followed */
	bad |= C.easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	bad |= C.easy_setopt(h->curl, CURLOPT_ACCEPT_ENCODING, "");
	if (ca_bundle)
		bad |= C.easy_setopt(h->curl, CURLOPT_CAINFO, ca_bundle);
	if (bad) {
		wk_http_free(h);
		return NULL;
	}
	return h;
}

void wk_http_free(struct wk_http *h)
{
	if (!h)
		return;
	if (h->curl)
		C.easy_cleanup(h->curl);
	C.slist_free_all(h->headers);
	C.slist_free_all(h->body_headers);
	free(h);
}

void wk_http_counts(const struct wk_http *h, long *requests, long *connections)
{
	*requests = h ? h->requests : 0;
	*connections = h ? h->connections : 0;
}

void wk_http_response_free(struct wk_http_response *r)
{
	free(r->body);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

static void response_reset(struct wk_http *h, struct wk_http_response *r)
{
	free(r->body);
	free(r->error);
	memset(r, 0, sizeof(*r));
	r->retry_after = -1;
	r->ratelimit_remaining = -1;
	r->ratelimit_reset = -1;
	r->body = wk_strdup("");
	h->cap = 1;
	h->too_big = 0;
}

/* One attempt: method, url, body; fills *r. */
static void perform(struct wk_http *h, const char *method, const char *url,
		    const char *body, struct wk_http_response *r)
{
	double left = h->deadline - wk_now();
	double limit = left < WK_GH_REQUEST_TIMEOUT_S
			       ? left
			       : WK_GH_REQUEST_TIMEOUT_S;
	double conn = limit < WK_GH_CONNECT_TIMEOUT_S
			      ? limit
			      : WK_GH_CONNECT_TIMEOUT_S;
	long n = 0, status = 0;
	int fields;
	CURLcode rc;

	response_reset(h, r);
	if (limit <= 0) {
		r->transport = CURLE_OPERATION_TIMEDOUT;
		r->timed_out = 1;
		r->error = wk_strdup("the job's time ran out");
		return;
	}
	h->resp = r;
	h->errbuf[0] = '\0';
	C.easy_setopt(h->curl, CURLOPT_URL, url);
	/* at least 1 ms: 0 would mean no limit at all */
	C.easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)(limit * 1000) + 1);
	C.easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS,
		      (long)(conn * 1000) + 1);
	fields = body || !strcmp(method, "POST") || !strcmp(method, "PUT") ||
		 !strcmp(method, "PATCH");
	if (fields) {
		/* a body-less POST, PUT or PATCH still says Content-Length */
		C.easy_setopt(h->curl, CURLOPT_HTTPHEADER,
			      body ? h->body_headers : h->headers);
		C.easy_setopt(h->curl, CURLOPT_POSTFIELDS, body ? body : "");
		C.easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			      (curl_off_t)(body ? strlen(body) : 0));
	} else {
		C.easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
		C.easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
	}
	/* curl's own methods (GET bare, POST with fields) need no name */
	C.easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST,
		      (fields && !strcmp(method, "POST")) ||
				      (!fields && !strcmp(method, "GET"))
			      ? NULL
			      : method);
	rc = C.easy_perform(h->curl);
	h->resp = NULL;
	h->requests++;
	if (C.easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK)
		h->connections += n;
	if (rc == CURLE_OK) {
		C.easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
		r->status = status;
		return;
	}
	r->transport = (int)rc;
	if (h->too_big)
		r->error = wk_printf("the response is larger than %u MiB",
				     WK_GH_BODY_MAX / (1024 * 1024));
	else
		r->error = wk_strdup(*h->errbuf ? h->errbuf
						: C.easy_strerror(rc));
	r->no_answer = rc == CURLE_OPERATION_TIMEDOUT ||
		       rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR ||
		       rc == CURLE_PARTIAL_FILE;
	r->timed_out = rc == CURLE_OPERATION_TIMEDOUT &&
		       wk_now() >= h->deadline - 0.05;
}

/* 403/429 that is a rate limit, primary or secondary */
static int is_rate_limit(const struct wk_http_response *r)
{
	cJSON *j;
	const char *msg;
	int hit = 0;

	if (r->status != 403 && r->status != 429)
		return 0;
	if (r->status == 429 || r->retry_after >= 0 ||
	    r->ratelimit_remaining == 0)
		return 1;
	j = cJSON_ParseWithLength(r->body, r->len);
	msg = cJSON_IsString(cJSON_GetObjectItem(j, "message"))
		      ? cJSON_GetObjectItem(j, "message")->valuestring
		      : "";
	hit = strcasestr(msg, "rate limit") != NULL;
	cJSON_Delete(j);
	return hit;
}

/* A connection that was never made: nothing reached GitHub. */
static int never_connected(int rc)
{
	return rc == CURLE_COULDNT_RESOLVE_HOST ||
	       rc == CURLE_COULDNT_RESOLVE_PROXY ||
	       rc == CURLE_COULDNT_CONNECT;
}

/* A failure worth another try of a request that may be repeated. */
static int transient(int rc)
{
	return never_connected(rc) || rc == CURLE_OPERATION_TIMEDOUT ||
	       rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR ||
	       rc == CURLE_RECV_ERROR || rc == CURLE_PARTIAL_FILE ||
	       rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_HTTP2 ||
	       rc == CURLE_HTTP2_STREAM;
}

static double jitter(double base)
{
	static unsigned seed;

	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)(wk_now() * 1000);
	return base * (0.75 + 0.5 * (double)rand_r(&seed) / RAND_MAX);
}

static void emit_retry(struct wk_http *h, const char *op, int attempt,
		       long status, double wait, const char *reason)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "op", op);
	cJSON_AddNumberToObject(d, "attempt", attempt);
	if (status)
		cJSON_AddNumberToObject(d, "http_status", (double)status);
	else
		cJSON_AddNullToObject(d, "http_status");
	cJSON_AddNumberToObject(d, "wait_s", wk_round(wait, 1000));
	cJSON_AddStringToObject(d, "reason", reason);
	wk_emit(h->ctx, SBXLOOP_EV_GH_RETRY, d);
}

void wk_http_request(struct wk_http *h, const char *op, const char *method,
		     const char *url, const char *body,
		     struct wk_http_response *r)
{
	int retry, post = !strcmp(method, "POST");

	memset(r, 0, sizeof(*r));
	for (retry = 0;; retry++) {
		const char *reason = NULL;
		double wait = 0;

		perform(h, method, url, body, r);
		if (wk_stop_signal || r->timed_out ||
		    r->transport == CURLE_ABORTED_BY_CALLBACK)
			return;
		if (r->transport) {
			if (never_connected(r->transport))
				reason = "connection failed";
			else if (!post && transient(r->transport))
				reason =
					r->transport == CURLE_OPERATION_TIMEDOUT
						? "timed out"
						: "connection lost";
			wait = 0.5 * (double)(1 << retry);
		} else if (r->status >= 500) {
			reason = "server error";
			wait = 0.5 * (double)(1 << retry);
		} else if (is_rate_limit(r)) {
			reason = "rate limited";
			if (r->retry_after >= 0)
				wait = r->retry_after;
			else if (r->ratelimit_reset >= 0)
				wait = r->ratelimit_reset -
				       (double)time(NULL) + 1;
			else
				wait = WK_GH_RATE_WAIT_MAX;
			if (wait < 0)
				wait = 0;
			if (wait > WK_GH_RATE_WAIT_MAX)
				wait = WK_GH_RATE_WAIT_MAX;
			r->rate_limited = 1;
		}
		if (!reason || retry >= WK_GH_RETRIES)
			return;
		if (strcmp(reason, "rate limited"))
			wait = jitter(wait);
		if (wk_now() + wait >= h->deadline)
			return; /* the wait would outlast the job */
		emit_retry(h, op, retry + 1, r->status, wait, reason);
		wk_sleep(h->ctx, wait);
		if (wk_stop_signal)
			return;
	}
}

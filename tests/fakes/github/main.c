/*
 * main.c - tests/fakes/github-server, a fake of the GitHub REST API
 * version 2022-11-28, as documented at docs.github.com/en/rest (git
 * database, repos, issues, pulls, search, statuses, users), for the
 * tests of sbxloop's GitHub client. It keeps real state in memory (real
 * git objects with real sha1s, refs, issues, pull requests, statuses)
 * and answers with GitHub's documented shapes and status codes. This
 * file owns the command line, authentication, injected faults, the
 * request log and the dispatch to the routes; http.c owns the wire.
 *
 * Usage: github-server --port-file F [--token T] [--login L] [--log F]
 *                      [--state F] [--faults F]
 *                      [--repo OWNER/NAME[:empty|:private]]...
 * It listens on 127.0.0.1 (a port the kernel picks), writes the port to
 * F (through F.tmp and a rename) once listening, and serves until
 * SIGTERM or SIGINT, then writes --state F. With --token every API
 * request needs "Authorization: Bearer T" or "token T" (401 "Bad
 * credentials" otherwise); --log F gets one JSON line per API request
 * ({n, conn, method, path, query, status, bytes_in, bytes_out, auth}),
 * never a credential. --faults F is a JSON array of failures, each
 * consumed by the requests it matches ({method?, path_prefix?, status?,
 * times? (1; 0 = always), message?, retry_after?, secondary?,
 * reset_in?}). Outside the API, without auth and not logged: GET
 * /_fake/state (the whole state as JSON) and POST /_fake/faults (replace
 * the fault list). "connections" counts the TCP connections that carried
 * an API request.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "github.h"

static const char *token;
static FILE *log_file;
static cJSON *faults;
static volatile sig_atomic_t stop;
/* the request being answered, for the log written once it is sent */
static const char *cur_auth;
static int cur_internal;
/* which connections have been counted (by number) */
static unsigned char *counted;
static size_t counted_len;

static void usage(void)
{
	fputs("usage: github-server --port-file F [--token T] [--login L] "
	      "[--log F] [--state F] [--faults F] "
	      "[--repo OWNER/NAME[:empty|:private]]...\n",
	      stderr);
	exit(2);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct buf b = {0};
	char chunk[65536];
	size_t n;

	if (!f)
		gh_die("cannot open '%s': %s", path, strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	buf_add(&b, "", 0);
	return b.p;
}

static void add_repo(const char *spec)
{
	char *s = gh_xstrdup(spec), *colon = strchr(s, ':'), *slash;
	int empty = 0, private = 0;

	if (colon) {
		*colon = '\0';
		empty = !strcmp(colon + 1, "empty");
		private = !strcmp(colon + 1, "private");
		if (!empty && !private)
			gh_die("--repo '%s': unknown option '%s'", spec,
			       colon + 1);
	}
	slash = strchr(s, '/');
	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
		gh_die("--repo '%s' is not OWNER/NAME", spec);
	*slash = '\0';
	if (!gh_repo_create(s, slash + 1, private, !empty))
		gh_die("--repo '%s' is given twice", spec);
	free(s);
}

static int set_faults(const char *text)
{
	cJSON *arr = cJSON_Parse(text);

	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(arr);
		return -1;
	}
	cJSON_Delete(faults);
	faults = arr;
	return 0;
}

/* ---- auth, faults ------------------------------------------------------ */

static const char *check_auth(const struct request *rq)
{
	const char *a = rq->auth;

	if (!token)
		return "none";
	if (!a || !*a)
		return "missing";
	if (!strncasecmp(a, "Bearer ", 7))
		a += 7;
	else if (!strncasecmp(a, "token ", 6))
		a += 6;
	else
		return "bad";
	return strcmp(a, token) ? "bad" : "ok";
}

static const char *fault_message(int status, int secondary, int reset_in)
{
	if (secondary)
		return "You have exceeded a secondary rate limit. Please wait "
		       "a few minutes before you try again. If you reach out "
		       "to GitHub Support for help, please include the "
		       "request ID 0000:0000:000000:000000:00000000.";
	if (reset_in && (status == 403 || status == 429))
		return "API rate limit exceeded for user ID 1. If you reach "
		       "out to GitHub Support for help, please include the "
		       "request ID 0000:0000:000000:000000:00000000.";
	if (status == 503)
		return "Service Unavailable";
	if (status >= 500)
		return "Server Error";
	return "Injected fault";
}

static int int_member(const cJSON *o, const char *key, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valueint : dflt;
}

/* Answer from the first fault matching RQ: 1 when one did. */
static int take_fault(const struct request *rq, struct response *r)
{
	const char *m, *prefix, *msg;
	int status, secondary, times, retry, reset, i = 0;
	cJSON *f;

	cJSON_ArrayForEach (f, faults) {
		m = gh_str(f, "method");
		prefix = gh_str(f, "path_prefix");
		if ((m && strcasecmp(m, rq->method)) ||
		    (prefix && strncmp(rq->path, prefix, strlen(prefix)))) {
			i++;
			continue;
		}
		secondary = cJSON_IsTrue(cJSON_GetObjectItem(f, "secondary"));
		status = int_member(f, "status", secondary ? 403 : 500);
		retry = int_member(f, "retry_after", 0);
		reset = int_member(f, "reset_in", 0);
		msg = gh_str(f, "message");
		gh_error(r, status,
			 msg ? msg : fault_message(status, secondary, reset));
		if (retry > 0)
			buf_printf(&r->headers, "Retry-After: %d\r\n", retry);
		if (reset > 0)
			buf_printf(&r->headers,
				   "x-ratelimit-limit: 5000\r\n"
				   "x-ratelimit-remaining: 0\r\n"
				   "x-ratelimit-used: 5000\r\n"
				   "x-ratelimit-resource: core\r\n"
				   "x-ratelimit-reset: %lld\r\n",
				   (long long)time(NULL) + reset);
		times = int_member(f, "times", 1);
		if (times == 1)
			cJSON_DeleteItemFromArray(faults, i);
		else if (times > 1)
			cJSON_SetNumberHelper(cJSON_GetObjectItem(f, "times"),
					      times - 1);
		return 1;
	}
	return 0;
}

static void count_connection(long no)
{
	size_t i = (size_t)no, n;

	if (i >= counted_len) {
		n = (i + 1) * 2;
		counted = realloc(counted, n);
		if (!counted)
			gh_die("out of memory");
		memset(counted + counted_len, 0, n - counted_len);
		counted_len = n;
	}
	if (!counted[i]) {
		counted[i] = 1;
		gh.connections++;
	}
}

/* ---- dispatch ---------------------------------------------------------- */

static void internal(const struct request *rq, struct response *r)
{
	cJSON *state;

	if (!strcmp(rq->path, "/_fake/state") && !strcmp(rq->method, "GET")) {
		state = gh_state_dump();
		gh_json(r, 200, state);
		cJSON_Delete(state);
	} else if (!strcmp(rq->path, "/_fake/faults") &&
		   !strcmp(rq->method, "POST")) {
		if (set_faults(rq->body) < 0)
			gh_error(r, 400, "the faults are not a JSON array");
		else
			gh_json(r, 200, faults);
	} else {
		gh_not_found(r);
	}
}

static int blank(const char *s)
{
	for (; *s; s++)
		if (!strchr(" \t\r\n", *s))
			return 0;
	return 1;
}

static void handle(const struct request *rq, struct response *r)
{
	cJSON *json = NULL;

	cur_internal = !strncmp(rq->path, "/_fake/", 7);
	if (cur_internal) {
		internal(rq, r);
		return;
	}
	gh.requests++;
	count_connection(rq->conn);
	cur_auth = check_auth(rq);
	if (strcmp(cur_auth, "ok") && strcmp(cur_auth, "none")) {
		gh_error(r, 401, "Bad credentials");
		return;
	}
	if (take_fault(rq, r))
		return;
	buf_printf(&r->headers,
		   "x-ratelimit-limit: 5000\r\n"
		   "x-ratelimit-remaining: %ld\r\n"
		   "x-ratelimit-used: %ld\r\n"
		   "x-ratelimit-resource: core\r\n"
		   "x-ratelimit-reset: %lld\r\n",
		   gh.requests < 5000 ? 5000 - gh.requests : 0, gh.requests,
		   (long long)time(NULL) + 3600);
	if (!blank(rq->body)) {
		json = cJSON_ParseWithLength(rq->body, rq->body_len);
		if (!json) {
			gh_error(r, 400, "Problems parsing JSON");
			return;
		}
	}
	if (!gh_routes_repos(rq, json, r) && !gh_routes_git(rq, json, r) &&
	    !gh_routes_contents(rq, json, r) &&
	    !gh_routes_issues(rq, json, r) && !gh_routes_pulls(rq, json, r))
		gh_not_found(r);
	cJSON_Delete(json);
}

static void sent(const struct request *rq, const struct response *r,
		 size_t bytes_out)
{
	cJSON *o;
	char *line;

	if (cur_internal || !log_file)
		return;
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "n", (double)gh.requests);
	cJSON_AddNumberToObject(o, "conn", (double)rq->conn);
	cJSON_AddStringToObject(o, "method", rq->method);
	cJSON_AddStringToObject(o, "path", rq->path);
	cJSON_AddStringToObject(o, "query", rq->query);
	cJSON_AddNumberToObject(o, "status", r->status);
	cJSON_AddNumberToObject(o, "bytes_in", (double)rq->bytes_in);
	cJSON_AddNumberToObject(o, "bytes_out", (double)bytes_out);
	cJSON_AddStringToObject(o, "auth", cur_auth);
	line = cJSON_PrintUnformatted(o);
	if (!line)
		gh_die("out of memory");
	fprintf(log_file, "%s\n", line);
	fflush(log_file);
	free(line);
	cJSON_Delete(o);
}

/* ---- main -------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void write_state(const char *path)
{
	cJSON *state = gh_state_dump();
	char *text = cJSON_Print(state), *tmp = gh_xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");

	if (!f || !text)
		gh_die("cannot write '%s': %s", tmp, strerror(errno));
	fprintf(f, "%s\n", text);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		gh_die("cannot write '%s': %s", path, strerror(errno));
	free(tmp);
	free(text);
	cJSON_Delete(state);
}

int main(int argc, char **argv)
{
	const char *port_file = NULL, *state_file = NULL, *a;
	struct sigaction sa;
	char *text;
	int i;

	gh.login = "octo";
	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (i + 1 >= argc)
			usage();
		if (!strcmp(a, "--port-file")) {
			port_file = argv[++i];
		} else if (!strcmp(a, "--token")) {
			token = argv[++i];
		} else if (!strcmp(a, "--login")) {
			gh.login = argv[++i];
		} else if (!strcmp(a, "--log")) {
			log_file = fopen(argv[++i], "a");
			if (!log_file)
				gh_die("cannot open '%s': %s", argv[i],
				       strerror(errno));
		} else if (!strcmp(a, "--state")) {
			state_file = argv[++i];
		} else if (!strcmp(a, "--faults")) {
			text = read_file(argv[++i]);
			if (set_faults(text) < 0)
				gh_die("'%s' is not a JSON array", argv[i]);
			free(text);
		} else if (!strcmp(a, "--repo")) {
			add_repo(argv[++i]);
		} else {
			usage();
		}
	}
	if (!port_file)
		usage();
	if (!faults)
		faults = cJSON_CreateArray();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	gh_http_serve(port_file, handle, sent, &stop);
	if (state_file)
		write_state(state_file);
	if (log_file)
		fclose(log_file);
	cJSON_Delete(faults);
	free(counted);
	gh_state_free();
	return 0;
}

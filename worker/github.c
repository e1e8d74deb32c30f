/*
 * github.c - the github.op job kind.
 *
 * Owns the job: loading libcurl, the token (GH_TOKEN, else
 * GITHUB_TOKEN, from the environment the env files filled), the api_url
 * rule (https, or plain http to loopback only), params validation, the
 * request helper the operations of ghops.c call and the mapping of
 * HTTP failures to typed errors, batches with their references, the
 * usage counters, and the scrub that keeps the token out of every text
 * the job returns. main.c calls wk_github_op and wk_check_github.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "github.h"
#include "common/json.h"

#define DEFAULT_API_URL "https://api.github.com"
/* what a token needs, for the messages of a 401 and a 403 */
#define SCOPES_HINT                                                           \
	"a fine-grained PAT needs Contents, Issues, Pull requests and "       \
	"Commit statuses read/write and Metadata read; a classic PAT needs "  \
	"the repo scope"
/* a token shorter than this is not scrubbed (it would garble text) */
#define SCRUB_MIN 8

struct wk_gh {
	struct wk_ctx *ctx;
	struct wk_http *http;
	const char *token; /* borrowed from the environment */
	double deadline;
	double timeout_s;
	const char *default_api; /* a batch's api_url, borrowed */
	char *base;              /* the op's api_url without trailing '/' */
	const char *op;          /* the running op's name */
	int index;               /* its place in a batch, else -1 */
	/* the job's error */
	enum wk_status status;
	char *type, *message, *detail;
	long http_status;
};

/* ------------------------------------------------------------- errors */

static int fail_v(struct wk_gh *g, enum wk_status status, const char *type,
		  long http_status, const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	free(g->type);
	free(g->message);
	g->status = status;
	g->type = wk_strdup(type ? type : "GitHubError");
	g->message = msg;
	g->http_status = http_status;
	return -1;
}

int wk_gh_fail(struct wk_gh *g, const char *type, long http_status,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_v(g, WK_ERROR, type, http_status, fmt, ap);
	va_end(ap);
	return -1;
}

static int fail_timeout(struct wk_gh *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail_timeout(struct wk_gh *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_v(g, WK_TIMEOUT, "Timeout", 0, fmt, ap);
	va_end(ap);
	return -1;
}

void wk_gh_prefix_error(struct wk_gh *g, const char *fmt, ...)
{
	va_list ap;
	char *prefix = NULL, *msg;

	va_start(ap, fmt);
	if (vasprintf(&prefix, fmt, ap) < 0)
		abort();
	va_end(ap);
	msg = wk_printf("%s: %s", prefix, g->message ? g->message : "");
	free(g->message);
	g->message = msg;
	free(prefix);
}

void wk_gh_emit(struct wk_gh *g, const char *type, cJSON *data)
{
	if (!data)
		data = cJSON_CreateObject();
	if (!cJSON_GetObjectItem(data, "op"))
		cJSON_AddStringToObject(data, "op", g->op);
	if (g->index >= 0 && !cJSON_GetObjectItem(data, "index"))
		cJSON_AddNumberToObject(data, "index", g->index);
	wk_emit(g->ctx, type, data);
}

/* ------------------------------------------------------------- scrub */

/* `s` with every copy of the token replaced; NULL when it has none. */
static char *scrub_text(const char *token, const char *s)
{
	size_t tl = token ? strlen(token) : 0, n = 0;
	const char *p, *hit;
	char *out, *o;

	if (!s || tl < SCRUB_MIN || !strstr(s, token))
		return NULL;
	for (p = s; (hit = strstr(p, token)); p = hit + tl)
		n++;
	out = malloc(strlen(s) - n * tl + n * 3 + 1);
	if (!out)
		abort();
	for (o = out, p = s; (hit = strstr(p, token)); p = hit + tl) {
		memcpy(o, p, (size_t)(hit - p));
		o += hit - p;
		memcpy(o, "***", 3);
		o += 3;
	}
	strcpy(o, p);
	return out;
}

static void scrub_string(const char *token, char **s)
{
	char *clean = scrub_text(token, *s);

	if (clean) {
		free(*s);
		*s = clean;
	}
}

static void scrub_json(const char *token, cJSON *node)
{
	cJSON *c;

	for (c = node ? node->child : NULL; c; c = c->next) {
		char *clean;

		if (c->string && (clean = scrub_text(token, c->string))) {
			/* a key: cJSON owns it unless it is a constant */
			if (!(c->type & cJSON_StringIsConst))
				free(c->string);
			c->type &= ~cJSON_StringIsConst;
			c->string = clean;
		}
		if (cJSON_IsString(c) &&
		    (clean = scrub_text(token, c->valuestring))) {
			cJSON_SetValuestring(c, clean);
			free(clean);
		}
		scrub_json(token, c);
	}
}

/* ------------------------------------------------------------ api_url */

static int is_loopback(const char *host)
{
	return !strcmp(host, "127.0.0.1") || !strcmp(host, "::1") ||
	       !strcasecmp(host, "localhost");
}

/* The host of an http:// URL's authority (no port, no brackets). */
static char *url_host(const char *rest)
{
	size_t n = strcspn(rest, "/?#");
	char *auth = strndup(rest, n), *at, *h, *end;

	if (!auth)
		abort();
	at = strrchr(auth, '@');
	h = at ? at + 1 : auth;
	if (*h == '[') {
		h++;
		end = strchr(h, ']');
	} else {
		end = strchr(h, ':');
	}
	if (end)
		*end = '\0';
	h = wk_strdup(h);
	free(auth);
	return h;
}

static int set_base(struct wk_gh *g, const char *url)
{
	const char *p;
	size_t n;

	for (p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '\\')
			return wk_gh_fail(g, NULL, 0,
					  "api_url '%s' contains a space, a "
					  "backslash or a control character",
					  url);
	if (!strncasecmp(url, "http://", 7)) {
		char *host = url_host(url + 7);
		size_t auth = strcspn(url + 7, "/?#");

		/* no userinfo: "http://127.0.0.1@evil/" is not loopback to
		 * every parser */
		if (memchr(url + 7, '@', auth) || !is_loopback(host)) {
			wk_gh_fail(g, NULL, 0,
				   "refusing to send the GitHub token over "
				   "plain http to %s",
				   host);
			free(host);
			return -1;
		}
		free(host);
	} else if (strncasecmp(url, "https://", 8) || !url[8]) {
		return wk_gh_fail(g, NULL, 0,
				  "api_url must be an https:// URL, not '%s'",
				  url);
	}
	n = strlen(url);
	while (n > 8 && url[n - 1] == '/')
		n--;
	free(g->base);
	g->base = strndup(url, n);
	if (!g->base)
		abort();
	return 0;
}

/* ------------------------------------------------------------ requests */

char *wk_gh_escape(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		abort();
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || c == '-' || c == '.' || c == '_' ||
		    c == '~' || (keep_slash && c == '/')) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

/* GitHub's own words: "message", and the first of a 422's errors. */
static char *github_message(const cJSON *j, const char *body, size_t len)
{
	const char *msg = sl_json_str(j, "message", NULL);
	const cJSON *e =
		cJSON_GetArrayItem(cJSON_GetObjectItem(j, "errors"), 0);
	const char *first = NULL, *field = sl_json_str(e, "field", NULL);
	char *out, *p;

	if (cJSON_IsString(e))
		first = e->valuestring;
	else if (cJSON_IsObject(e))
		first = sl_json_str(e, "message", NULL);
	if (!first && field && sl_json_str(e, "code", NULL))
		/* {"resource","field","code"}: "field 'head' invalid" */
		return wk_printf("%s%sfield '%s' %s", msg ? msg : "",
				 msg ? ": " : "", field,
				 sl_json_str(e, "code", ""));
	if (!first)
		first = sl_json_str(e, "code", NULL);
	if (msg && first)
		return wk_printf("%s: %s", msg, first);
	if (msg || first)
		return wk_strdup(msg ? msg : first);
	if (!len)
		return wk_strdup("(empty response)");
	/* not GitHub's JSON (a proxy's page): its start, on one line */
	out = wk_printf("%.200s", body);
	for (p = out; *p; p++)
		if ((unsigned char)*p < ' ')
			*p = ' ';
	return out;
}

static int http_error(struct wk_gh *g, const char *method, const char *shown,
		      const struct wk_http_response *r)
{
	cJSON *j = cJSON_ParseWithLength(r->body, r->len);
	char *msg = github_message(j, r->body, r->len);
	long st = r->status;

	if (r->rate_limited)
		wk_gh_fail(g, "GitHubRateLimited", st,
			   "%s %s: HTTP %ld: %s (still rate limited after "
			   "the retries the job's time allows)",
			   method, shown, st, msg);
	else if (st == 401)
		wk_gh_fail(g, "GitHubAuthError", st,
			   "%s %s: HTTP 401: %s (GitHub rejected the token: "
			   "check GH_TOKEN in the github sandbox; %s)",
			   method, shown, msg, SCOPES_HINT);
	else if (st == 403)
		wk_gh_fail(g, "GitHubAuthError", st,
			   "%s %s: HTTP 403: %s (check the token's scopes "
			   "and its permissions for the repository; %s)",
			   method, shown, msg, SCOPES_HINT);
	else if (st == 404)
		wk_gh_fail(g, "GitHubNotFound", st,
			   "%s %s: HTTP 404: %s (it does not exist, or the "
			   "token cannot see it)",
			   method, shown, msg);
	else
		wk_gh_fail(g, NULL, st, "%s %s: HTTP %ld: %s", method, shown,
			   st, msg);
	free(msg);
	cJSON_Delete(j);
	return -1;
}

static cJSON *missing(long status)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddTrueToObject(o, "missing");
	cJSON_AddNumberToObject(o, "http_status", (double)status);
	return o;
}

static int is_empty_repo(const struct wk_http_response *r)
{
	cJSON *j = cJSON_ParseWithLength(r->body, r->len);
	const char *m = sl_json_str(j, "message", "");
	int empty = strcasestr(m, "is empty") != NULL;

	cJSON_Delete(j);
	return empty;
}

int wk_gh_call(struct wk_gh *g, const char *method, const char *path,
	       const cJSON *body, int allow, cJSON **out)
{
	struct wk_http_response r;
	char *url = wk_printf("%s%s", g->base, path);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	/* the path as messages show it: never its query */
	char *shown = strndup(path, strcspn(path, "?"));
	const char *p;
	int rc = -1;

	*out = NULL;
	if (!shown)
		abort();
	wk_http_request(g->http, g->op, method, url, text, &r);
	if (wk_stop_signal) {
		wk_gh_fail(g, NULL, 0, "stopped by signal %d", wk_stop_signal);
	} else if (r.timed_out) {
		fail_timeout(g,
			     "job timed out after %g s: %s %s did not "
			     "finish",
			     g->timeout_s, method, shown);
	} else if (r.transport && r.status == 0) {
		char *host = url_host(strstr(g->base, "://") + 3);

		wk_gh_fail(g, NULL, 0, "%s %s: %s %s: %s", method, shown,
			   r.no_answer ? "no answer from" : "cannot reach",
			   host, r.error ? r.error : "unknown error");
		free(host);
	} else if (r.status >= 200 && r.status < 300) {
		for (p = r.body; *p && isspace((unsigned char)*p); p++)
			;
		*out = *p ? cJSON_ParseWithLength(r.body, r.len)
			  : cJSON_CreateObject();
		if (*out)
			rc = 0;
		else
			wk_gh_fail(g, NULL, r.status,
				   "%s %s: HTTP %ld: the response is not "
				   "JSON",
				   method, shown, r.status);
	} else if ((r.status == 404 && (allow & WK_GH_ALLOW_404)) ||
		   (r.status == 409 && (allow & WK_GH_ALLOW_409_EMPTY) &&
		    is_empty_repo(&r))) {
		*out = missing(r.status);
		rc = 1;
	} else {
		http_error(g, method, shown, &r);
	}
	wk_http_response_free(&r);
	free(shown);
	free(text);
	free(url);
	return rc;
}

/* ------------------------------------------------------------- params */

const char *wk_gh_str(const cJSON *params, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

long wk_gh_int(const cJSON *params, const char *key, long dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	if (cJSON_IsNumber(v))
		return (long)v->valuedouble;
	if (cJSON_IsString(v))
		return atol(v->valuestring);
	return dflt;
}

int wk_gh_bool(const cJSON *params, const char *key, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static int repo_ok(const char *s)
{
	const char *slash = strchr(s, '/'), *p;

	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
		return 0;
	for (p = s; *p; p++)
		if (p != slash && !isalnum((unsigned char)*p) && *p != '_' &&
		    *p != '.' && *p != '-')
			return 0;
	/* "." and ".." would be dot segments of the URL */
	return strncmp(s, "./", 2) && strncmp(s, "../", 3) &&
	       strcmp(slash, "/.") && strcmp(slash, "/..");
}

static int path_ok(const char *s)
{
	const char *seg = s;

	for (;;) {
		size_t n = strcspn(seg, "/");

		if ((n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (!seg[n])
			return 1;
		seg += n + 1;
	}
}

static int int_ok(const cJSON *v)
{
	const char *p;

	if (cJSON_IsNumber(v))
		return v->valuedouble >= 0 && v->valuedouble < 1e15 &&
		       v->valuedouble == (double)(long long)v->valuedouble;
	if (!cJSON_IsString(v) || !*v->valuestring ||
	    strlen(v->valuestring) > 15)
		return 0;
	for (p = v->valuestring; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

static const char *type_wanted(enum wk_gh_type t)
{
	switch (t) {
	case WK_GH_STR:
	case WK_GH_PATH:
		return "a string";
	case WK_GH_REPO:
		return "'owner/name' (letters, digits, '_', '.', '-')";
	case WK_GH_INT:
		return "a non-negative integer";
	case WK_GH_BOOL:
		return "true or false";
	case WK_GH_LIST:
		return "a list";
	case WK_GH_OBJ:
		return "an object";
	case WK_GH_ANY:
		break;
	}
	return "a JSON value";
}

static int type_ok(enum wk_gh_type t, const cJSON *v)
{
	switch (t) {
	case WK_GH_STR:
		return cJSON_IsString(v);
	case WK_GH_REPO:
		return cJSON_IsString(v) && repo_ok(v->valuestring);
	case WK_GH_PATH:
		return cJSON_IsString(v);
	case WK_GH_INT:
		return int_ok(v);
	case WK_GH_BOOL:
		return cJSON_IsBool(v);
	case WK_GH_LIST:
		return cJSON_IsArray(v);
	case WK_GH_OBJ:
		return cJSON_IsObject(v);
	case WK_GH_ANY:
		break;
	}
	return 1;
}

/* Required params present, every given one of its type. */
static int check_params(struct wk_gh *g, const struct wk_gh_op *op,
			const cJSON *params)
{
	const struct wk_gh_param *p;
	char *missing_list = NULL;
	const char *api = wk_gh_str(params, "api_url");

	for (p = op->params; p->name; p++) {
		const cJSON *v =
			cJSON_GetObjectItemCaseSensitive(params, p->name);
		int absent =
			!v || cJSON_IsNull(v) ||
			(p->required && cJSON_IsString(v) && !*v->valuestring);

		if (absent) {
			if (p->required) {
				char *l = wk_printf(
					"%s%s%s",
					missing_list ? missing_list : "",
					missing_list ? ", " : "", p->name);

				free(missing_list);
				missing_list = l;
			}
			continue;
		}
		if (!type_ok(p->type, v))
			return wk_gh_fail(g, NULL, 0, "param '%s' must be %s",
					  p->name, type_wanted(p->type));
		if (p->type == WK_GH_PATH && !path_ok(v->valuestring))
			return wk_gh_fail(g, NULL, 0,
					  "param '%s' must not have a '.' or "
					  "'..' segment: '%s'",
					  p->name, v->valuestring);
	}
	if (missing_list) {
		wk_gh_fail(g, NULL, 0, "missing required params: %s",
			   missing_list);
		free(missing_list);
		return -1;
	}
	if (cJSON_GetObjectItem(params, "api_url") &&
	    !cJSON_IsNull(cJSON_GetObjectItem(params, "api_url")) && !api)
		return wk_gh_fail(g, NULL, 0,
				  "param 'api_url' must be a string");
	return 0;
}

/* -------------------------------------------------------------- batch */

static char *known_ops(void)
{
	char *l = wk_strdup("batch"), *n;
	size_t i;

	for (i = 0; wk_gh_ops[i].name; i++) {
		n = wk_printf("%s, %s", l, wk_gh_ops[i].name);
		free(l);
		l = n;
	}
	return l;
}

static const struct wk_gh_op *find_op(const char *name)
{
	size_t i;

	for (i = 0; wk_gh_ops[i].name; i++)
		if (!strcmp(wk_gh_ops[i].name, name))
			return &wk_gh_ops[i];
	return NULL;
}

static int unknown_op(struct wk_gh *g, const char *name)
{
	char *known = known_ops();

	wk_gh_fail(g, NULL, 0, "unknown github op '%s' (known: %s)", name,
		   known);
	free(known);
	return -1;
}

/* One op: params checked, api_url settled, gh.op_start/gh.op_end. */
static int run_op(struct wk_gh *g, const char *name, const cJSON *params,
		  cJSON **out)
{
	const struct wk_gh_op *op = find_op(name);
	const char *api;
	cJSON *d;
	int rc;

	*out = NULL;
	g->op = name;
	if (!op)
		return unknown_op(g, name);
	if (check_params(g, op, params) < 0)
		return -1;
	api = wk_gh_str(params, "api_url");
	if (set_base(g, api              ? api
			: g->default_api ? g->default_api
					 : DEFAULT_API_URL) < 0)
		return -1;
	if (wk_now() >= g->deadline)
		return fail_timeout(g,
				    "job timed out after %g s before op "
				    "'%s'",
				    g->timeout_s, name);
	wk_gh_emit(g, SBXLOOP_EV_GH_OP_START, NULL);
	rc = op->run(g, params, out);
	d = cJSON_CreateObject();
	cJSON_AddBoolToObject(d, "ok", rc >= 0);
	if (rc == 1)
		cJSON_AddTrueToObject(d, "missing");
	wk_gh_emit(g, SBXLOOP_EV_GH_OP_END, d);
	if (rc < 0) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * Resolve "${N.key.0.key}" against the results so far: N an earlier
 * op's index, then object keys and array indexes. NULL with the error
 * set when it does not resolve.
 */
static cJSON *resolve(struct wk_gh *g, const char *ref, const cJSON *results,
		      int index)
{
	char *expr = strndup(ref + 2, strlen(ref) - 3), *tok, *save, *end;
	const cJSON *cur = NULL;
	long n;

	if (!expr)
		abort();
	tok = strtok_r(expr, ".", &save);
	n = tok ? strtol(tok, &end, 10) : -1;
	if (!tok || *end || !isdigit((unsigned char)*tok) || n >= index) {
		wk_gh_fail(g, NULL, 0,
			   "bad reference '%s': it must start with the "
			   "index of an earlier op (0 to %d)",
			   ref, index - 1);
		goto out;
	}
	cur = cJSON_GetArrayItem(results, (int)n);
	while (cur && (tok = strtok_r(NULL, ".", &save))) {
		const cJSON *next = NULL;

		if (cJSON_IsObject(cur)) {
			next = cJSON_GetObjectItemCaseSensitive(cur, tok);
		} else if (cJSON_IsArray(cur)) {
			long i = strtol(tok, &end, 10);

			if (!*end && isdigit((unsigned char)*tok))
				next = cJSON_GetArrayItem(cur, (int)i);
		}
		if (!next) {
			wk_gh_fail(g, NULL, 0,
				   "bad reference '%s': op %ld's result has "
				   "no '%s' there",
				   ref, n, tok);
			cur = NULL;
			goto out;
		}
		cur = next;
	}
out:
	free(expr);
	return cur ? cJSON_Duplicate(cur, 1) : NULL;
}

static int is_ref_text(const char *s)
{
	size_t n = strlen(s);

	return n > 3 && !strncmp(s, "${", 2) && s[n - 1] == '}' &&
	       !strchr(s + 2, '{');
}

static int is_ref(const cJSON *v)
{
	return cJSON_IsString(v) && is_ref_text(v->valuestring);
}

/* "$" * k + "${...}" (k >= 1): text sent with one '$' more than it has */
static int is_escaped_ref(const cJSON *v)
{
	const char *p;

	if (!cJSON_IsString(v))
		return 0;
	for (p = v->valuestring; p[0] == '$' && p[1] == '$'; p++)
		;
	return p != v->valuestring && is_ref_text(p);
}

/* Replace every reference under `node` by the value it names. */
static int substitute(struct wk_gh *g, cJSON *node, const cJSON *results,
		      int index)
{
	cJSON *c, *next;

	for (c = node->child; c; c = next) {
		next = c->next;
		if (is_escaped_ref(c)) {
			/* "$${...}" is the text "${...}", not a reference */
			char *text = wk_strdup(c->valuestring + 1);

			cJSON_SetValuestring(c, text);
			free(text);
		} else if (is_ref(c)) {
			cJSON *v = resolve(g, c->valuestring, results, index);

			if (!v)
				return -1;
			/* the copy keeps its key of origin: use this one */
			if (!(v->type & cJSON_StringIsConst))
				free(v->string);
			v->type &= ~cJSON_StringIsConst;
			v->string = wk_strdup(c->string);
			cJSON_ReplaceItemViaPointer(node, c, v);
		} else if (substitute(g, c, results, index) < 0) {
			return -1;
		}
	}
	return 0;
}

static int run_batch(struct wk_gh *g, const cJSON *params, cJSON **out)
{
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(params, "ops");
	const cJSON *item;
	cJSON *results = cJSON_CreateArray();
	int i = 0, rc = 0;

	*out = cJSON_CreateObject();
	cJSON_AddItemToObject(*out, "results", results);
	g->default_api = wk_gh_str(params, "api_url");
	if (!g->default_api && cJSON_GetObjectItem(params, "api_url") &&
	    !cJSON_IsNull(cJSON_GetObjectItem(params, "api_url")))
		return wk_gh_fail(g, NULL, 0,
				  "param 'api_url' must be a string");
	if (!cJSON_IsArray(ops))
		return wk_gh_fail(g, NULL, 0,
				  ops ? "param 'ops' must be a list"
				      : "missing required params: ops");
	cJSON_ArrayForEach (item, ops) {
		const char *name = sl_json_str(item, "op", NULL);
		const cJSON *p =
			cJSON_GetObjectItemCaseSensitive(item, "params");
		cJSON *mine, *res = NULL;

		g->index = i;
		if (!name || (p && !cJSON_IsNull(p) && !cJSON_IsObject(p))) {
			wk_gh_fail(g, NULL, 0,
				   "op %d: each op must be {\"op\": NAME, "
				   "\"params\": {...}}",
				   i);
			rc = -1;
			break;
		}
		if (!strcmp(name, "batch")) {
			wk_gh_fail(g, NULL, 0,
				   "op %d (batch): a batch cannot hold a "
				   "batch",
				   i);
			rc = -1;
			break;
		}
		mine = cJSON_IsObject(p) ? cJSON_Duplicate(p, 1)
					 : cJSON_CreateObject();
		if (substitute(g, mine, results, i) < 0 ||
		    run_op(g, name, mine, &res) < 0) {
			wk_gh_prefix_error(g, "op %d (%s)", i, name);
			cJSON_Delete(mine);
			rc = -1;
			break;
		}
		cJSON_Delete(mine);
		cJSON_AddItemToArray(results, res);
		i++;
	}
	g->index = -1;
	g->op = "batch";
	return rc;
}

/* --------------------------------------------------------------- job */

static const char *token_from_env(void)
{
	const char *t = getenv("GH_TOKEN");

	if (!t || !*t)
		t = getenv("GITHUB_TOKEN");
	return t && *t ? t : NULL;
}

static void finish(struct wk_gh *g, struct wk_result *res, cJSON *out)
{
	long requests, connections;

	wk_http_counts(g->http, &requests, &connections);
	res->usage = cJSON_CreateObject();
	cJSON_AddNumberToObject(res->usage, "http_requests", (double)requests);
	cJSON_AddNumberToObject(res->usage, "connections",
				(double)connections);
	if (g->message) {
		scrub_string(g->token, &g->message);
		scrub_string(g->token, &g->detail);
		wk_result_set_error(res, g->status, g->type, g->detail, "%s",
				    g->message);
		res->http_status = g->http_status;
	} else {
		res->status = WK_OK;
	}
	/* a failed batch keeps the results of the ops that ran */
	scrub_json(g->token, out);
	res->output_json = out;
}

void wk_github_op(struct wk_ctx *ctx, const struct wk_job *job,
		  struct wk_result *res)
{
	struct wk_gh g;
	const cJSON *params = job->params;
	cJSON *empty = NULL, *out = NULL;
	char *err = NULL, *detail = NULL, *auth = NULL;
	const char *ca;

	memset(&g, 0, sizeof(g));
	g.ctx = ctx;
	g.index = -1;
	g.op = job->op;
	g.timeout_s = job->timeout_s;
	g.deadline = wk_now() + job->timeout_s;
	g.token = token_from_env();
	if (!params)
		params = empty = cJSON_CreateObject();
	if (strcmp(job->op, "batch") && !find_op(job->op)) {
		unknown_op(&g, job->op);
		goto out;
	}
	if (wk_curl_load(&err, &detail) < 0) {
		wk_gh_fail(&g, "GitHubUnavailable", 0, "%s", err);
		g.detail = detail;
		detail = NULL;
		goto out;
	}
	if (!g.token) {
		wk_gh_fail(&g, "GitHubAuthError", 0,
			   "GH_TOKEN (or GITHUB_TOKEN) is not set in the "
			   "github sandbox");
		goto out;
	}
	ca = getenv("CURL_CA_BUNDLE");
	auth = wk_printf("Authorization: Bearer %s", g.token);
	g.http = wk_http_new(ctx, auth, ca && *ca ? ca : NULL, g.deadline);
	if (!g.http) {
		wk_gh_fail(&g, "GitHubUnavailable", 0,
			   "libcurl cannot make a connection handle");
		goto out;
	}
	if (!strcmp(job->op, "batch")) {
		g.op = "batch";
		wk_gh_emit(&g, SBXLOOP_EV_GH_OP_START, NULL);
		run_batch(&g, params, &out);
		{
			cJSON *d = cJSON_CreateObject();

			cJSON_AddBoolToObject(d, "ok", g.message == NULL);
			wk_gh_emit(&g, SBXLOOP_EV_GH_OP_END, d);
		}
	} else {
		run_op(&g, job->op, params, &out);
	}
out:
	finish(&g, res, out);
	if (auth) {
		/* the header held the token: leave no copy in freed memory */
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	wk_http_free(g.http);
	cJSON_Delete(empty);
	free(g.base);
	free(g.type);
	free(g.message);
	free(g.detail);
	free(err);
	free(detail);
}

/*
 * `sbxloop-worker check-github`: can this sandbox run github.op jobs?
 * Prints the libcurl version and exits 0, or the reason and exits 1.
 * The sbx provider runs it in the github sandbox at install time.
 */
int wk_check_github(void)
{
	char *err = NULL, *detail = NULL;

	if (wk_curl_load(&err, &detail) < 0) {
		fprintf(stderr, "error: %s%s%s\n", err, detail ? ": " : "",
			detail ? detail : "");
		free(err);
		free(detail);
		return 1;
	}
	printf("%s\n", wk_curl_version());
	return 0;
}

/*
 * ghops.c - the GitHub operations of the github.op job kind.
 *
 * Owns the table of operations: for each, its params (name, type,
 * required) and the function that turns them into REST calls and
 * shapes GitHub's answer into the op's result. github.c validates the
 * params against the table before an op runs and owns every request,
 * error and event; nothing else calls these.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "github.h"
#include "common/base64.h"
#include "common/json.h"

#define PROGRESS_EVERY 10

/* ------------------------------------------------------------ helpers */

/* "/repos/OWNER/NAME" + the rest; repo is validated, kept as is */
static char *repo_path(const cJSON *p, const char *fmt_rest)
{
	return wk_printf("/repos/%s%s", wk_gh_str(p, "repo"), fmt_rest);
}

static void add_str(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* copy params[key] into body[key] when it is given and not null */
static void pass(cJSON *body, const cJSON *p, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);

	if (v && !cJSON_IsNull(v))
		cJSON_AddItemToObject(body, key, cJSON_Duplicate(v, 1));
}

static cJSON *num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? cJSON_CreateNumber(v->valuedouble)
				 : cJSON_CreateNull();
}

/* "refs/heads/x" or "heads/x" → "heads/x" */
static const char *short_ref(const char *ref)
{
	return strncmp(ref, "refs/", 5) ? ref : ref + 5;
}

static int allow_404(const cJSON *p)
{
	return wk_gh_bool(p, "allow_missing", 0) ? WK_GH_ALLOW_404 : 0;
}

/* {ref, sha} of a git ref object */
static cJSON *ref_result(const cJSON *r)
{
	cJSON *o = cJSON_CreateObject();

	add_str(o, "ref", sl_json_str(r, "ref", NULL));
	add_str(o, "sha",
		sl_json_str(cJSON_GetObjectItem(r, "object"), "sha", NULL));
	return o;
}

/* ------------------------------------------------------------- issues */

static const struct wk_gh_param p_issue_create[] = {
	{"repo", WK_GH_REPO, 1},   {"title", WK_GH_STR, 1},
	{"body", WK_GH_STR, 0},    {"labels", WK_GH_LIST, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int issue_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	char *path = repo_path(p, "/issues");
	int rc;

	pass(body, p, "title");
	pass(body, p, "body");
	pass(body, p, "labels");
	rc = wk_gh_call(g, "POST", path, body, 0, &r);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddItemToObject(*out, "number", num_of(r, "number"));
		add_str(*out, "url", sl_json_str(r, "html_url", NULL));
		add_str(*out, "api_url", sl_json_str(r, "url", NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	return rc;
}

static const struct wk_gh_param p_comment[] = {{"repo", WK_GH_REPO, 1},
					       {"number", WK_GH_INT, 1},
					       {"body", WK_GH_STR, 1},
					       {"api_url", WK_GH_STR, 0},
					       {NULL, WK_GH_ANY, 0}};

/* issue.comment and pr.comment: a PR's comments are its issue's */
static int comment(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	char *rest =
		wk_printf("/issues/%ld/comments", wk_gh_int(p, "number", 0));
	char *path = repo_path(p, rest);
	int rc;

	pass(body, p, "body");
	rc = wk_gh_call(g, "POST", path, body, 0, &r);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddItemToObject(*out, "id", num_of(r, "id"));
		add_str(*out, "url", sl_json_str(r, "html_url", NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(rest);
	return rc;
}

static const struct wk_gh_param p_issue_update[] = {
	{"repo", WK_GH_REPO, 1},   {"number", WK_GH_INT, 1},
	{"state", WK_GH_STR, 0},   {"state_reason", WK_GH_STR, 0},
	{"title", WK_GH_STR, 0},   {"body", WK_GH_STR, 0},
	{"labels", WK_GH_LIST, 0}, {"api_url", WK_GH_STR, 0},
	{NULL, WK_GH_ANY, 0}};

static int issue_update(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	static const char *const keys[] = {"state", "state_reason", "title",
					   "body", "labels"};
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	char *rest = wk_printf("/issues/%ld", wk_gh_int(p, "number", 0));
	char *path = repo_path(p, rest);
	size_t i;
	int rc;

	for (i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		pass(body, p, keys[i]);
	rc = wk_gh_call(g, "PATCH", path, body, 0, &r);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddItemToObject(*out, "number", num_of(r, "number"));
		add_str(*out, "state", sl_json_str(r, "state", NULL));
		add_str(*out, "url", sl_json_str(r, "html_url", NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(rest);
	return rc;
}

/* -------------------------------------------------------------- pulls */

static const struct wk_gh_param p_pr_create[] = {
	{"repo", WK_GH_REPO, 1},   {"base", WK_GH_STR, 1},
	{"head", WK_GH_STR, 1},    {"title", WK_GH_STR, 1},
	{"body", WK_GH_STR, 0},    {"draft", WK_GH_BOOL, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int pr_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	static const char *const keys[] = {"base", "head", "title", "body",
					   "draft"};
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	char *path = repo_path(p, "/pulls");
	size_t i;
	int rc;

	for (i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		pass(body, p, keys[i]);
	rc = wk_gh_call(g, "POST", path, body, 0, &r);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddItemToObject(*out, "number", num_of(r, "number"));
		add_str(*out, "url", sl_json_str(r, "html_url", NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	return rc;
}

static const struct wk_gh_param p_pr_list[] = {
	{"repo", WK_GH_REPO, 1},   {"head", WK_GH_STR, 0},
	{"base", WK_GH_STR, 0},    {"state", WK_GH_STR, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int pr_list(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const char *repo = wk_gh_str(p, "repo");
	const char *head = wk_gh_str(p, "head"), *base = wk_gh_str(p, "base");
	const char *state = wk_gh_str(p, "state");
	char *q_state = wk_gh_escape(state ? state : "open", 0);
	char *q_head = NULL, *q_base = base ? wk_gh_escape(base, 0) : NULL;
	char *path;
	cJSON *r = NULL, *it;
	int rc;

	if (head) {
		/* GitHub filters by "owner:branch" only */
		char *full =
			strchr(head, ':')
				? wk_strdup(head)
				: wk_printf("%.*s:%s", (int)strcspn(repo, "/"),
					    repo, head);

		q_head = wk_gh_escape(full, 0);
		free(full);
	}
	path = wk_printf("/repos/%s/pulls?state=%s&per_page=100%s%s%s%s", repo,
			 q_state, q_head ? "&head=" : "", q_head ? q_head : "",
			 q_base ? "&base=" : "", q_base ? q_base : "");
	rc = wk_gh_call(g, "GET", path, NULL, 0, &r);
	if (rc == 0) {
		cJSON *items;

		*out = cJSON_CreateObject();
		items = cJSON_AddArrayToObject(*out, "items");
		cJSON_ArrayForEach (it, r) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddItemToObject(o, "number",
					      num_of(it, "number"));
			add_str(o, "url", sl_json_str(it, "html_url", NULL));
			add_str(o, "state", sl_json_str(it, "state", NULL));
			cJSON_AddBoolToObject(o, "draft",
					      cJSON_IsTrue(cJSON_GetObjectItem(
						      it, "draft")));
			add_str(o, "head",
				sl_json_str(cJSON_GetObjectItem(it, "head"),
					    "ref", NULL));
			add_str(o, "base",
				sl_json_str(cJSON_GetObjectItem(it, "base"),
					    "ref", NULL));
			cJSON_AddItemToArray(items, o);
		}
	}
	cJSON_Delete(r);
	free(path);
	free(q_state);
	free(q_head);
	free(q_base);
	return rc;
}

/* ----------------------------------------------------------- contents */

/* Valid UTF-8 (no overlongs, no surrogates) without a NUL byte? */
static int utf8_text(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k, need;
		unsigned cp;

		if (!c)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + need >= n)
			return 0;
		for (k = 1; k <= need; k++) {
			if (i + k >= n || (s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 &&
		     (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += need + 1;
	}
	return 1;
}

static const struct wk_gh_param p_contents_read[] = {
	{"repo", WK_GH_REPO, 1},   {"path", WK_GH_PATH, 1},
	{"ref", WK_GH_STR, 0},     {"allow_missing", WK_GH_BOOL, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int contents_read(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const char *file = wk_gh_str(p, "path"), *ref = wk_gh_str(p, "ref");
	char *q_path, *q_ref = ref ? wk_gh_escape(ref, 0) : NULL, *path;
	char *compact = NULL;
	const char *content, *encoding;
	unsigned char *bytes = NULL;
	size_t len = 0;
	cJSON *r = NULL;
	int rc;

	while (*file == '/')
		file++;
	q_path = wk_gh_escape(file, 1);
	path = wk_printf("/repos/%s/contents/%s%s%s", wk_gh_str(p, "repo"),
			 q_path, q_ref ? "?ref=" : "", q_ref ? q_ref : "");
	rc = wk_gh_call(g, "GET", path, NULL, allow_404(p), &r);
	if (rc == 1) {
		*out = r;
		r = NULL;
		goto out;
	}
	if (rc < 0)
		goto out;
	if (!cJSON_IsObject(r) ||
	    strcmp(sl_json_str(r, "type", "file"), "file")) {
		rc = wk_gh_fail(
			g, NULL, 0,
			"'%s' is not a file (GitHub says it is a %s)", file,
			cJSON_IsArray(r) ? "directory"
					 : sl_json_str(r, "type", "?"));
		goto out;
	}
	content = sl_json_str(r, "content", "");
	encoding = sl_json_str(r, "encoding", "base64");
	if (strcmp(encoding, "base64")) {
		/* over 1 MB the contents API sends no content: the blob */
		char *blob = wk_printf("/repos/%s/git/blobs/%s",
				       wk_gh_str(p, "repo"),
				       sl_json_str(r, "sha", ""));
		cJSON *b = NULL;

		rc = wk_gh_call(g, "GET", blob, NULL, 0, &b);
		free(blob);
		if (rc < 0)
			goto out;
		cJSON_ReplaceItemInObject(
			r, "content",
			cJSON_CreateString(sl_json_str(b, "content", "")));
		cJSON_Delete(b);
		content = sl_json_str(r, "content", "");
	}
	bytes = sl_b64_decode(content, &len);
	if (!bytes) {
		rc = wk_gh_fail(g, NULL, 0,
				"GitHub sent '%s' in an encoding other than "
				"base64",
				file);
		goto out;
	}
	*out = cJSON_CreateObject();
	add_str(*out, "path", sl_json_str(r, "path", file));
	add_str(*out, "sha", sl_json_str(r, "sha", NULL));
	if (utf8_text(bytes, len)) {
		cJSON_AddStringToObject(*out, "content", (const char *)bytes);
		cJSON_AddFalseToObject(*out, "binary");
	} else {
		/* the bytes as one unwrapped line of base64 */
		compact = sl_b64_encode(bytes, len, 0);
		if (!compact)
			abort();
		cJSON_AddStringToObject(*out, "content", compact);
		cJSON_AddTrueToObject(*out, "binary");
	}
	rc = 0;
out:
	cJSON_Delete(r);
	free(bytes);
	free(compact);
	free(path);
	free(q_path);
	free(q_ref);
	return rc;
}

static const struct wk_gh_param p_contents_put[] = {
	{"repo", WK_GH_REPO, 1},   {"path", WK_GH_PATH, 1},
	{"message", WK_GH_STR, 1}, {"content_b64", WK_GH_STR, 1},
	{"branch", WK_GH_STR, 0},  {"sha", WK_GH_STR, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int contents_put(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const char *file = wk_gh_str(p, "path");
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	char *q_path, *path;
	int rc;

	while (*file == '/')
		file++;
	q_path = wk_gh_escape(file, 1);
	path = wk_printf("/repos/%s/contents/%s", wk_gh_str(p, "repo"),
			 q_path);
	pass(body, p, "message");
	cJSON_AddStringToObject(body, "content", wk_gh_str(p, "content_b64"));
	pass(body, p, "branch");
	pass(body, p, "sha");
	rc = wk_gh_call(g, "PUT", path, body, 0, &r);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		add_str(*out, "content_sha",
			sl_json_str(cJSON_GetObjectItem(r, "content"), "sha",
				    NULL));
		add_str(*out, "commit_sha",
			sl_json_str(cJSON_GetObjectItem(r, "commit"), "sha",
				    NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(q_path);
	return rc;
}

/* ------------------------------------------------------------- status */

static const struct wk_gh_param p_status_create[] = {
	{"repo", WK_GH_REPO, 1},       {"sha", WK_GH_STR, 1},
	{"state", WK_GH_STR, 1},       {"context", WK_GH_STR, 0},
	{"description", WK_GH_STR, 0}, {"target_url", WK_GH_STR, 0},
	{"api_url", WK_GH_STR, 0},     {NULL, WK_GH_ANY, 0}};

static int status_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const char *context = wk_gh_str(p, "context");
	char *q_sha = wk_gh_escape(wk_gh_str(p, "sha"), 0);
	char *path = wk_printf("/repos/%s/statuses/%s", wk_gh_str(p, "repo"),
			       q_sha);
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	int rc;

	pass(body, p, "state");
	cJSON_AddStringToObject(body, "context",
				context && *context ? context : "sbxloop");
	pass(body, p, "description");
	pass(body, p, "target_url");
	rc = wk_gh_call(g, "POST", path, body, 0, &r);
	if (rc == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddItemToObject(*out, "id", num_of(r, "id"));
		add_str(*out, "state", sl_json_str(r, "state", NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(q_sha);
	return rc;
}

/* ------------------------------------------------------ repo and user */

static const struct wk_gh_param p_repo_get[] = {
	{"repo", WK_GH_REPO, 1},
	{"allow_missing", WK_GH_BOOL, 0},
	{"api_url", WK_GH_STR, 0},
	{NULL, WK_GH_ANY, 0}};

static int repo_get(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	char *path = repo_path(p, "");
	int rc = wk_gh_call(g, "GET", path, NULL, allow_404(p), out);

	free(path);
	return rc;
}

static const struct wk_gh_param p_repo_create[] = {
	{"name", WK_GH_STR, 1},     {"owner", WK_GH_STR, 0},
	{"private", WK_GH_BOOL, 0}, {"description", WK_GH_STR, 0},
	{"api_url", WK_GH_STR, 0},  {NULL, WK_GH_ANY, 0}};

/*
 * An owner is an organization; an owner that is the token's own user
 * (GitHub answers 404 for it as an org) is created under /user/repos.
 * A 404 means GitHub created nothing, so trying again is safe.
 */
static int repo_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const char *owner = wk_gh_str(p, "owner");
	cJSON *body = cJSON_CreateObject(), *user = NULL;
	char *path = NULL;
	int rc;

	pass(body, p, "name");
	/* private unless asked otherwise: sent explicitly */
	cJSON_AddBoolToObject(body, "private", wk_gh_bool(p, "private", 1));
	pass(body, p, "description");
	if (owner && *owner) {
		char *q_owner = wk_gh_escape(owner, 0);

		path = wk_printf("/orgs/%s/repos", q_owner);
		free(q_owner);
		rc = wk_gh_call(g, "POST", path, body, WK_GH_ALLOW_404, out);
		if (rc != 1)
			goto out;
		cJSON_Delete(*out);
		*out = NULL;
		rc = wk_gh_call(g, "GET", "/user", NULL, 0, &user);
		if (rc < 0)
			goto out;
		if (strcasecmp(sl_json_str(user, "login", ""), owner)) {
			rc = wk_gh_fail(g, "GitHubNotFound", 404,
					"POST /orgs/%s/repos: HTTP 404: no "
					"organization '%s' the token can see, "
					"and the token's user is '%s'",
					owner, owner,
					sl_json_str(user, "login", "?"));
			goto out;
		}
	}
	rc = wk_gh_call(g, "POST", "/user/repos", body, 0, out);
out:
	cJSON_Delete(user);
	cJSON_Delete(body);
	free(path);
	return rc;
}

static const struct wk_gh_param p_user_get[] = {{"api_url", WK_GH_STR, 0},
						{NULL, WK_GH_ANY, 0}};

static int user_get(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	return wk_gh_call(g, "GET", "/user", NULL, 0, out);
}

/* --------------------------------------------------------------- refs */

static const struct wk_gh_param p_ref_get[] = {
	{"repo", WK_GH_REPO, 1},
	{"ref", WK_GH_PATH, 1},
	{"allow_missing", WK_GH_BOOL, 0},
	{"api_url", WK_GH_STR, 0},
	{NULL, WK_GH_ANY, 0}};

static int ref_get(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	char *q_ref = wk_gh_escape(short_ref(wk_gh_str(p, "ref")), 1);
	char *path =
		wk_printf("/repos/%s/git/ref/%s", wk_gh_str(p, "repo"), q_ref);
	int allow = wk_gh_bool(p, "allow_missing", 0)
			    ? WK_GH_ALLOW_404 | WK_GH_ALLOW_409_EMPTY
			    : 0;
	cJSON *r = NULL;
	int rc = wk_gh_call(g, "GET", path, NULL, allow, &r);

	if (rc == 0) {
		*out = ref_result(r);
		cJSON_Delete(r);
	} else {
		*out = r;
	}
	free(path);
	free(q_ref);
	return rc;
}

static const struct wk_gh_param p_ref_create[] = {{"repo", WK_GH_REPO, 1},
						  {"ref", WK_GH_PATH, 1},
						  {"sha", WK_GH_STR, 1},
						  {"api_url", WK_GH_STR, 0},
						  {NULL, WK_GH_ANY, 0}};

static int ref_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const char *ref = short_ref(wk_gh_str(p, "ref"));
	char *full = wk_printf("refs/%s", ref);
	char *path = repo_path(p, "/git/refs");
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	int rc;

	cJSON_AddStringToObject(body, "ref", full);
	pass(body, p, "sha");
	rc = wk_gh_call(g, "POST", path, body, 0, &r);
	if (rc == 0)
		*out = ref_result(r);
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(full);
	return rc;
}

static const struct wk_gh_param p_ref_update[] = {
	{"repo", WK_GH_REPO, 1},   {"ref", WK_GH_PATH, 1},
	{"sha", WK_GH_STR, 1},     {"force", WK_GH_BOOL, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int ref_update(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	char *q_ref = wk_gh_escape(short_ref(wk_gh_str(p, "ref")), 1);
	char *path = wk_printf("/repos/%s/git/refs/%s", wk_gh_str(p, "repo"),
			       q_ref);
	cJSON *body = cJSON_CreateObject(), *r = NULL;
	int rc;

	pass(body, p, "sha");
	cJSON_AddBoolToObject(body, "force", wk_gh_bool(p, "force", 0));
	rc = wk_gh_call(g, "PATCH", path, body, 0, &r);
	if (rc == 0)
		*out = ref_result(r);
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(q_ref);
	return rc;
}

/* ------------------------------------------------- commits, trees, blobs */

static const struct wk_gh_param p_commit_get[] = {{"repo", WK_GH_REPO, 1},
						  {"sha", WK_GH_STR, 1},
						  {"api_url", WK_GH_STR, 0},
						  {NULL, WK_GH_ANY, 0}};

static int commit_get(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	char *q_sha = wk_gh_escape(wk_gh_str(p, "sha"), 0);
	char *path = wk_printf("/repos/%s/git/commits/%s",
			       wk_gh_str(p, "repo"), q_sha);
	cJSON *r = NULL, *parents, *it;
	int rc = wk_gh_call(g, "GET", path, NULL, 0, &r);

	if (rc == 0) {
		*out = cJSON_CreateObject();
		add_str(*out, "sha", sl_json_str(r, "sha", NULL));
		add_str(*out, "tree",
			sl_json_str(cJSON_GetObjectItem(r, "tree"), "sha",
				    NULL));
		parents = cJSON_AddArrayToObject(*out, "parents");
		cJSON_ArrayForEach (it, cJSON_GetObjectItem(r, "parents"))
			cJSON_AddItemToArray(
				parents, cJSON_CreateString(
						 sl_json_str(it, "sha", "")));
		add_str(*out, "message", sl_json_str(r, "message", NULL));
	}
	cJSON_Delete(r);
	free(path);
	free(q_sha);
	return rc;
}

/* POST a body to /repos/R/git/WHAT and keep only the new object's sha */
static int create_sha(struct wk_gh *g, const cJSON *p, const char *what,
		      cJSON *body, cJSON **out)
{
	char *rest = wk_printf("/git/%s", what);
	char *path = repo_path(p, rest);
	cJSON *r = NULL;
	int rc = wk_gh_call(g, "POST", path, body, 0, &r);

	if (rc == 0) {
		*out = cJSON_CreateObject();
		add_str(*out, "sha", sl_json_str(r, "sha", NULL));
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(rest);
	return rc;
}

static const struct wk_gh_param p_tree_create[] = {{"repo", WK_GH_REPO, 1},
						   {"tree", WK_GH_LIST, 1},
						   {"base_tree", WK_GH_STR, 0},
						   {"api_url", WK_GH_STR, 0},
						   {NULL, WK_GH_ANY, 0}};

static int tree_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	cJSON *body = cJSON_CreateObject();

	pass(body, p, "base_tree");
	pass(body, p, "tree");
	return create_sha(g, p, "trees", body, out);
}

static const struct wk_gh_param p_commit_create[] = {
	{"repo", WK_GH_REPO, 1},  {"message", WK_GH_STR, 1},
	{"tree", WK_GH_STR, 1},   {"parents", WK_GH_LIST, 1},
	{"author", WK_GH_OBJ, 0}, {"api_url", WK_GH_STR, 0},
	{NULL, WK_GH_ANY, 0}};

static int commit_create(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	cJSON *body = cJSON_CreateObject();

	pass(body, p, "message");
	pass(body, p, "tree");
	pass(body, p, "parents");
	pass(body, p, "author");
	return create_sha(g, p, "commits", body, out);
}

static const struct wk_gh_param p_blobs[] = {{"repo", WK_GH_REPO, 1},
					     {"files", WK_GH_LIST, 1},
					     {"api_url", WK_GH_STR, 0},
					     {NULL, WK_GH_ANY, 0}};

static void progress(struct wk_gh *g, int done, int total)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddNumberToObject(d, "done", done);
	cJSON_AddNumberToObject(d, "total", total);
	wk_gh_emit(g, SBXLOOP_EV_GH_OP_PROGRESS, d);
}

static int blobs_create_many(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	const cJSON *files = cJSON_GetObjectItem(p, "files"), *f;
	int total = cJSON_GetArraySize(files), i = 0, rc = 0;
	cJSON *blobs;

	*out = cJSON_CreateObject();
	blobs = cJSON_AddArrayToObject(*out, "blobs");
	cJSON_ArrayForEach (f, files) {
		const char *path = sl_json_str(f, "path", NULL);
		const char *b64 = sl_json_str(f, "content_b64", NULL);
		cJSON *body, *r = NULL, *o;

		if (!path || !b64) {
			rc = wk_gh_fail(g, NULL, 0,
					"file %d: each file needs 'path' and "
					"'content_b64' strings",
					i);
			break;
		}
		body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "content", b64);
		cJSON_AddStringToObject(body, "encoding", "base64");
		rc = create_sha(g, p, "blobs", body, &r);
		if (rc < 0) {
			wk_gh_prefix_error(g, "file %d (%s)", i, path);
			break;
		}
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", path);
		add_str(o, "sha", sl_json_str(r, "sha", NULL));
		cJSON_AddItemToArray(blobs, o);
		cJSON_Delete(r);
		i++;
		if (i % PROGRESS_EVERY == 0 && i < total)
			progress(g, i, total);
	}
	if (rc == 0)
		progress(g, i, total);
	return rc;
}

/* ------------------------------------------------------- search and raw */

static const struct wk_gh_param p_search[] = {{"query", WK_GH_STR, 1},
					      {"per_page", WK_GH_INT, 0},
					      {"api_url", WK_GH_STR, 0},
					      {NULL, WK_GH_ANY, 0}};

static int search_issues(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	char *q = wk_gh_escape(wk_gh_str(p, "query"), 0);
	long per_page = wk_gh_int(p, "per_page", 30);
	char *path = wk_printf("/search/issues?q=%s&per_page=%ld", q,
			       per_page > 0 ? per_page : 30);
	cJSON *r = NULL;
	int rc = wk_gh_call(g, "GET", path, NULL, 0, &r);

	if (rc == 0) {
		cJSON *items = cJSON_DetachItemFromObject(r, "items");

		*out = cJSON_CreateObject();
		cJSON_AddItemToObject(*out, "total_count",
				      num_of(r, "total_count"));
		cJSON_AddItemToObject(*out, "items",
				      items ? items : cJSON_CreateArray());
	}
	cJSON_Delete(r);
	free(path);
	free(q);
	return rc;
}

static const struct wk_gh_param p_raw[] = {
	{"method", WK_GH_STR, 1},  {"path", WK_GH_STR, 1},
	{"body", WK_GH_ANY, 0},    {"allow_missing", WK_GH_BOOL, 0},
	{"api_url", WK_GH_STR, 0}, {NULL, WK_GH_ANY, 0}};

static int raw_api(struct wk_gh *g, const cJSON *p, cJSON **out)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "PATCH",
					      "DELETE"};
	const char *method = wk_gh_str(p, "method"),
		   *path = wk_gh_str(p, "path");
	const cJSON *body = cJSON_GetObjectItem(p, "body");
	char m[8];
	size_t i, n = strcspn(path, "?");
	int ok = 0;

	for (i = 0; method[i] && i + 1 < sizeof(m); i++)
		m[i] = (char)toupper((unsigned char)method[i]);
	m[i] = '\0';
	for (i = 0;
	     !method[strlen(m)] && i < sizeof(methods) / sizeof(*methods); i++)
		ok |= !strcmp(m, methods[i]);
	if (!ok)
		return wk_gh_fail(g, NULL, 0,
				  "param 'method' must be GET, POST, PUT, "
				  "PATCH or DELETE, not '%s'",
				  method);
	for (i = 0; path[i]; i++)
		if ((unsigned char)path[i] <= ' ' || path[i] == 0x7f)
			return wk_gh_fail(g, NULL, 0,
					  "param 'path' contains a space or a "
					  "control character");
	if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") ||
	    (n >= 3 && !strncmp(path + n - 3, "/..", 3)) ||
	    (n >= 2 && !strncmp(path + n - 2, "/.", 2)))
		return wk_gh_fail(g, NULL, 0,
				  "param 'path' must start with '/' and have "
				  "no '.' or '..' segment: '%s'",
				  path);
	return wk_gh_call(g, m, path, cJSON_IsNull(body) ? NULL : body,
			  allow_404(p), out);
}

/* ---------------------------------------------------------------- table */

const struct wk_gh_op wk_gh_ops[] = {
	{"issue.create", p_issue_create, issue_create},
	{"issue.comment", p_comment, comment},
	{"issue.update", p_issue_update, issue_update},
	{"pr.create", p_pr_create, pr_create},
	{"pr.comment", p_comment, comment},
	{"pr.list", p_pr_list, pr_list},
	{"contents.read", p_contents_read, contents_read},
	{"contents.put", p_contents_put, contents_put},
	{"status.create", p_status_create, status_create},
	{"repo.get", p_repo_get, repo_get},
	{"repo.create", p_repo_create, repo_create},
	{"user.get", p_user_get, user_get},
	{"ref.get", p_ref_get, ref_get},
	{"ref.create", p_ref_create, ref_create},
	{"ref.update", p_ref_update, ref_update},
	{"commit.get", p_commit_get, commit_get},
	{"tree.create", p_tree_create, tree_create},
	{"commit.create", p_commit_create, commit_create},
	{"blobs.create_many", p_blobs, blobs_create_many},
	{"search.issues", p_search, search_issues},
	{"raw.api", p_raw, raw_api},
	{NULL, NULL, NULL},
};

/*
 * routes-issues.c - the issues, issue comments and issue search
 * endpoints of the fake GitHub server (tests/fakes/github-server):
 * /repos/{o}/{r}/issues[/{n}[/comments]] and GET /search/issues with the
 * qualifiers repo:, is:issue|pr|open|closed, state:, type:, in:title|body,
 * label:, quoted phrases and bare words. Issues and pull requests share
 * one number sequence per repository, as on GitHub; routes-pulls.c
 * creates the pull requests. main.c dispatches here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "github.h"

static int is_pull(const cJSON *item)
{
	return cJSON_IsTrue(cJSON_GetObjectItem(item, "pull"));
}

static long num_of(const cJSON *item, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(item, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

cJSON *gh_issue_json(const struct request *rq, const struct gh_repo *repo,
		     const cJSON *item)
{
	static const char *const copy[] = {"title", "body", "state",
					   "state_reason"};
	cJSON *o = cJSON_CreateObject(), *labels, *l, *pr, *user;
	long n = num_of(item, "number");
	char *base = gh_api_base(rq), *s;
	size_t i;

	cJSON_AddNumberToObject(o, "id", (double)num_of(item, "id"));
	cJSON_AddNumberToObject(o, "number", (double)n);
	for (i = 0; i < 4; i++)
		cJSON_AddItemToObject(
			o, copy[i],
			cJSON_Duplicate(cJSON_GetObjectItem(item, copy[i]),
					1));
	s = gh_xasprintf("%s/repos/%s/issues/%ld", base, repo->full_name, n);
	cJSON_AddStringToObject(o, "url", s);
	free(s);
	s = gh_xasprintf("https://github.com/%s/%s/%ld", repo->full_name,
			 is_pull(item) ? "pull" : "issues", n);
	cJSON_AddStringToObject(o, "html_url", s);
	free(s);
	labels = cJSON_AddArrayToObject(o, "labels");
	cJSON_ArrayForEach (l, cJSON_GetObjectItem(item, "labels")) {
		cJSON *lj = cJSON_CreateObject();

		cJSON_AddStringToObject(lj, "name", l->valuestring);
		cJSON_AddStringToObject(lj, "color", "ededed");
		cJSON_AddBoolToObject(lj, "default", 0);
		cJSON_AddItemToArray(labels, lj);
	}
	cJSON_AddNumberToObject(
		o, "comments",
		cJSON_GetArraySize(cJSON_GetObjectItem(item, "comments")));
	user = cJSON_AddObjectToObject(o, "user");
	cJSON_AddStringToObject(user, "login", gh.login);
	cJSON_AddBoolToObject(o, "locked", 0);
	if (is_pull(item)) {
		pr = cJSON_AddObjectToObject(o, "pull_request");
		s = gh_xasprintf("%s/repos/%s/pulls/%ld", base,
				 repo->full_name, n);
		cJSON_AddStringToObject(pr, "url", s);
		free(s);
		s = gh_xasprintf("https://github.com/%s/pull/%ld",
				 repo->full_name, n);
		cJSON_AddStringToObject(pr, "html_url", s);
		free(s);
		cJSON_AddItemToObject(
			o, "draft",
			cJSON_Duplicate(cJSON_GetObjectItem(item, "draft"),
					1));
	}
	free(base);
	return o;
}

static cJSON *find_item(const struct gh_repo *repo, const char *num)
{
	char *end;
	long n = strtol(num, &end, 10);
	cJSON *it;

	if (end == num || *end)
		return NULL;
	cJSON_ArrayForEach (it, repo->items)
		if (num_of(it, "number") == n)
			return it;
	return NULL;
}

/* labels: names, or objects with a name; NULL when malformed */
static cJSON *label_names(const cJSON *labels)
{
	cJSON *out = cJSON_CreateArray(), *l;
	const char *name;

	cJSON_ArrayForEach (l, labels) {
		name = cJSON_IsString(l) ? l->valuestring : gh_str(l, "name");
		if (!name) {
			cJSON_Delete(out);
			return NULL;
		}
		cJSON_AddItemToArray(out, cJSON_CreateString(name));
	}
	return out;
}

static void answer_item(const struct request *rq, const struct gh_repo *repo,
			const cJSON *item, int status, struct response *r)
{
	cJSON *o = gh_issue_json(rq, repo, item);

	gh_json(r, status, o);
	cJSON_Delete(o);
}

static void create_issue(const struct request *rq, const cJSON *json,
			 struct gh_repo *repo, struct response *r)
{
	const char *title = gh_str(json, "title"),
		   *body = gh_str(json, "body");
	const cJSON *labels = cJSON_GetObjectItem(json, "labels");
	cJSON *it, *names;

	if (!title || !*title) {
		gh_invalid(r, "Issue", "title", "missing_field", NULL);
		return;
	}
	names = labels ? label_names(labels) : cJSON_CreateArray();
	if (!names) {
		gh_invalid(r, "Issue", "labels", "invalid", NULL);
		return;
	}
	it = cJSON_CreateObject();
	cJSON_AddNumberToObject(it, "id", (double)++gh.next_id);
	cJSON_AddNumberToObject(it, "number", (double)repo->next_number++);
	cJSON_AddStringToObject(it, "title", title);
	if (body)
		cJSON_AddStringToObject(it, "body", body);
	else
		cJSON_AddNullToObject(it, "body");
	cJSON_AddStringToObject(it, "state", "open");
	cJSON_AddNullToObject(it, "state_reason");
	cJSON_AddItemToObject(it, "labels", names);
	cJSON_AddArrayToObject(it, "comments");
	cJSON_AddBoolToObject(it, "pull", 0);
	cJSON_AddItemToArray(repo->items, it);
	answer_item(rq, repo, it, 201, r);
}

static void replace(cJSON *o, const char *key, cJSON *v)
{
	if (cJSON_HasObjectItem(o, key))
		cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
	else
		cJSON_AddItemToObject(o, key, v);
}

static void update_issue(const struct request *rq, const cJSON *json,
			 struct gh_repo *repo, cJSON *it, struct response *r)
{
	const char *state = gh_str(json, "state"), *v;
	const cJSON *reason = cJSON_GetObjectItem(json, "state_reason");
	const cJSON *labels = cJSON_GetObjectItem(json, "labels");
	cJSON *names = NULL;

	if ((state && strcmp(state, "open") && strcmp(state, "closed")) ||
	    (reason && !cJSON_IsNull(reason) &&
	     (!cJSON_IsString(reason) ||
	      (strcmp(reason->valuestring, "completed") &&
	       strcmp(reason->valuestring, "not_planned") &&
	       strcmp(reason->valuestring, "reopened"))))) {
		gh_invalid(r, "Issue", state ? "state_reason" : "state",
			   "invalid", NULL);
		return;
	}
	if (labels && !(names = label_names(labels))) {
		gh_invalid(r, "Issue", "labels", "invalid", NULL);
		return;
	}
	if (names)
		replace(it, "labels", names);
	if ((v = gh_str(json, "title")))
		replace(it, "title", cJSON_CreateString(v));
	if (cJSON_HasObjectItem(json, "body"))
		replace(it, "body",
			(v = gh_str(json, "body")) ? cJSON_CreateString(v)
						   : cJSON_CreateNull());
	if (state && strcmp(state, gh_str(it, "state"))) {
		replace(it, "state", cJSON_CreateString(state));
		replace(it, "state_reason",
			cJSON_CreateString(!strcmp(state, "closed")
						   ? "completed"
						   : "reopened"));
	}
	if (cJSON_IsString(reason))
		replace(it, "state_reason",
			cJSON_CreateString(reason->valuestring));
	answer_item(rq, repo, it, 200, r);
}

static cJSON *comment_json(const struct request *rq,
			   const struct gh_repo *repo, const cJSON *item,
			   const cJSON *c)
{
	cJSON *o = cJSON_CreateObject(), *user;
	long id = num_of(c, "id");
	char *base = gh_api_base(rq), *s;

	cJSON_AddNumberToObject(o, "id", (double)id);
	cJSON_AddStringToObject(o, "body", gh_str(c, "body"));
	s = gh_xasprintf("%s/repos/%s/issues/comments/%ld", base,
			 repo->full_name, id);
	cJSON_AddStringToObject(o, "url", s);
	free(s);
	s = gh_xasprintf("https://github.com/%s/%s/%ld#issuecomment-%ld",
			 repo->full_name, is_pull(item) ? "pull" : "issues",
			 num_of(item, "number"), id);
	cJSON_AddStringToObject(o, "html_url", s);
	free(s);
	user = cJSON_AddObjectToObject(o, "user");
	cJSON_AddStringToObject(user, "login", gh.login);
	free(base);
	return o;
}

static void comments(const struct request *rq, const cJSON *json,
		     struct gh_repo *repo, cJSON *it, struct response *r)
{
	cJSON *list = cJSON_GetObjectItem(it, "comments"), *c, *out;
	const char *body = gh_str(json, "body");

	if (!strcmp(rq->method, "GET")) {
		out = cJSON_CreateArray();
		cJSON_ArrayForEach (c, list)
			cJSON_AddItemToArray(out,
					     comment_json(rq, repo, it, c));
		gh_json(r, 200, out);
		cJSON_Delete(out);
		return;
	}
	if (strcmp(rq->method, "POST")) {
		gh_not_found(r);
		return;
	}
	if (!body) {
		gh_invalid(r, "IssueComment", "body", "missing_field", NULL);
		return;
	}
	c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "id", (double)++gh.next_id);
	cJSON_AddStringToObject(c, "body", body);
	cJSON_AddItemToArray(list, c);
	out = comment_json(rq, repo, it, c);
	gh_json(r, 201, out);
	cJSON_Delete(out);
}

static int page_args(const struct request *rq, long *per, long *page)
{
	char *s = gh_query(rq, "per_page"), *p = gh_query(rq, "page");

	*per = s ? strtol(s, NULL, 10) : 30;
	*page = p ? strtol(p, NULL, 10) : 1;
	if (*per <= 0 || *per > 100)
		*per = *per <= 0 ? 30 : 100;
	if (*page <= 0)
		*page = 1;
	free(s);
	free(p);
	return 0;
}

static int has_label(const cJSON *it, const char *name)
{
	const cJSON *l;

	cJSON_ArrayForEach (l, cJSON_GetObjectItem(it, "labels"))
		if (!strcasecmp(l->valuestring, name))
			return 1;
	return 0;
}

/* GET /repos/{o}/{r}/issues: newest first, pull requests included */
static void list_issues(const struct request *rq, struct gh_repo *repo,
			struct response *r)
{
	char *state = gh_query(rq, "state"), *labels = gh_query(rq, "labels");
	const char *want = state ? state : "open";
	cJSON *out = cJSON_CreateArray(), *it;
	long per, page, seen = 0;
	int i, ok;

	page_args(rq, &per, &page);
	for (i = cJSON_GetArraySize(repo->items) - 1; i >= 0; i--) {
		it = cJSON_GetArrayItem(repo->items, i);
		ok = !strcmp(want, "all") ||
		     !strcmp(want, gh_str(it, "state"));
		if (ok && labels && *labels) {
			char *dup = gh_xstrdup(labels), *save, *tok;

			for (tok = strtok_r(dup, ",", &save); tok && ok;
			     tok = strtok_r(NULL, ",", &save))
				ok = has_label(it, tok);
			free(dup);
		}
		if (!ok)
			continue;
		if (seen++ >= (page - 1) * per && seen <= page * per)
			cJSON_AddItemToArray(out, gh_issue_json(rq, repo, it));
	}
	gh_json(r, 200, out);
	cJSON_Delete(out);
	free(state);
	free(labels);
}

/* ---- search ------------------------------------------------------------ */

struct query {
	char *repo;
	int kind;    /* 0 any, 1 issue, 2 pr */
	char *state; /* NULL any */
	int in_title, in_body;
	char **terms; /* words and phrases */
	size_t nterms;
	char **labels;
	size_t nlabels;
};

static void add_str(char ***arr, size_t *n, const char *s, size_t len)
{
	*arr = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!*arr)
		gh_die("out of memory");
	(*arr)[*n] = strndup(s, len);
	if (!(*arr)[*n])
		gh_die("out of memory");
	(*n)++;
}

/* One token of Q from *P: a quoted phrase or a run of non-blanks (a
 * qualifier's quoted value stays with it); its text without quotes. */
static char *token(const char **p, int *quoted)
{
	const char *s = *p, *e;
	struct buf b = {0};

	*quoted = *s == '"';
	while (*s && *s != ' ') {
		if (*s == '"') {
			e = strchr(s + 1, '"');
			if (!e)
				e = s + strlen(s);
			buf_add(&b, s + 1, (size_t)(e - s - 1));
			s = *e ? e + 1 : e;
		} else {
			buf_add(&b, s++, 1);
		}
	}
	*p = s;
	buf_add(&b, "", 0);
	return b.p;
}

static void parse_query(const char *q, struct query *qu)
{
	char *t, *colon;
	int quoted;

	memset(qu, 0, sizeof(*qu));
	while (*q) {
		if (*q == ' ' || *q == '\t') {
			q++;
			continue;
		}
		t = token(&q, &quoted);
		colon = quoted ? NULL : strchr(t, ':');
		if (colon)
			*colon = '\0';
		if (!colon) {
			if (*t)
				add_str(&qu->terms, &qu->nterms, t, strlen(t));
		} else if (!strcmp(t, "repo")) {
			free(qu->repo);
			qu->repo = gh_xstrdup(colon + 1);
		} else if (!strcmp(t, "is") || !strcmp(t, "type") ||
			   !strcmp(t, "state")) {
			const char *v = colon + 1;

			if (!strcmp(v, "issue"))
				qu->kind = 1;
			else if (!strcmp(v, "pr") ||
				 !strcmp(v, "pull-request"))
				qu->kind = 2;
			else if (!strcmp(v, "open") || !strcmp(v, "closed")) {
				free(qu->state);
				qu->state = gh_xstrdup(v);
			}
		} else if (!strcmp(t, "in")) {
			qu->in_title |= strstr(colon + 1, "title") != NULL;
			qu->in_body |= strstr(colon + 1, "body") != NULL;
		} else if (!strcmp(t, "label")) {
			add_str(&qu->labels, &qu->nlabels, colon + 1,
				strlen(colon + 1));
		} else {
			*colon = ':'; /* not a qualifier we know: a word */
			add_str(&qu->terms, &qu->nterms, t, strlen(t));
		}
		free(t);
	}
	if (!qu->in_title && !qu->in_body)
		qu->in_title = qu->in_body = 1;
}

static void free_query(struct query *qu)
{
	size_t i;

	for (i = 0; i < qu->nterms; i++)
		free(qu->terms[i]);
	for (i = 0; i < qu->nlabels; i++)
		free(qu->labels[i]);
	free(qu->terms);
	free(qu->labels);
	free(qu->repo);
	free(qu->state);
}

static int matches(const struct query *qu, const struct gh_repo *repo,
		   const cJSON *it)
{
	const char *title = gh_str(it, "title"), *body = gh_str(it, "body");
	size_t i;

	if (qu->repo && strcasecmp(qu->repo, repo->full_name))
		return 0;
	if ((qu->kind == 1 && is_pull(it)) || (qu->kind == 2 && !is_pull(it)))
		return 0;
	if (qu->state && strcmp(qu->state, gh_str(it, "state")))
		return 0;
	for (i = 0; i < qu->nlabels; i++)
		if (!has_label(it, qu->labels[i]))
			return 0;
	for (i = 0; i < qu->nterms; i++)
		if (!(qu->in_title && title &&
		      strcasestr(title, qu->terms[i])) &&
		    !(qu->in_body && body && strcasestr(body, qu->terms[i])))
			return 0;
	return 1;
}

static void search_issues(const struct request *rq, struct response *r)
{
	char *q = gh_query(rq, "q");
	struct query qu;
	struct gh_repo *repo;
	cJSON *out, *items, *it, *o;
	long per, page, total = 0;
	int i;

	if (!q || !*q) {
		gh_invalid(r, "Search", "q", "missing", NULL);
		free(q);
		return;
	}
	parse_query(q, &qu);
	page_args(rq, &per, &page);
	out = cJSON_CreateObject();
	cJSON_AddNumberToObject(out, "total_count", 0);
	cJSON_AddBoolToObject(out, "incomplete_results", 0);
	items = cJSON_AddArrayToObject(out, "items");
	for (repo = gh.repos; repo; repo = repo->next)
		for (i = cJSON_GetArraySize(repo->items) - 1; i >= 0; i--) {
			it = cJSON_GetArrayItem(repo->items, i);
			if (!matches(&qu, repo, it))
				continue;
			if (total++ >= (page - 1) * per &&
			    total <= page * per) {
				o = gh_issue_json(rq, repo, it);
				cJSON_AddNumberToObject(o, "score", 1.0);
				cJSON_AddItemToArray(items, o);
			}
		}
	cJSON_SetNumberHelper(cJSON_GetObjectItem(out, "total_count"),
			      (double)total);
	gh_json(r, 200, out);
	cJSON_Delete(out);
	free_query(&qu);
	free(q);
}

int gh_routes_issues(const struct request *rq, const cJSON *json,
		     struct response *r)
{
	const char *m = rq->method, *rest, *p, *slash;
	struct gh_repo *repo;
	char num[32];
	cJSON *it;
	int matched;

	if (!strcmp(rq->path, "/search/issues") && !strcmp(m, "GET")) {
		search_issues(rq, r);
		return 1;
	}
	repo = gh_route_repo(rq, &rest, r, &matched);
	if (!matched || strncmp(rest, "/issues", 7) ||
	    (rest[7] && rest[7] != '/'))
		return 0;
	if (!repo)
		return 1;
	p = rest + 7;
	if (!*p && !strcmp(m, "POST")) {
		create_issue(rq, json, repo, r);
		return 1;
	}
	if (!*p && !strcmp(m, "GET")) {
		list_issues(rq, repo, r);
		return 1;
	}
	p++;
	slash = strchr(p, '/');
	snprintf(num, sizeof(num), "%.*s",
		 (int)(slash ? (size_t)(slash - p) : strlen(p)), p);
	it = find_item(repo, num);
	if (!it) {
		gh_not_found(r);
		return 1;
	}
	if (!slash && !strcmp(m, "GET"))
		answer_item(rq, repo, it, 200, r);
	else if (!slash && !strcmp(m, "PATCH"))
		update_issue(rq, json, repo, it, r);
	else if (slash && !strcmp(slash, "/comments"))
		comments(rq, json, repo, it, r);
	else
		gh_not_found(r);
	return 1;
}

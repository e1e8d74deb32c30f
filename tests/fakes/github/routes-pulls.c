/*
 * routes-pulls.c - the pull request endpoints of the fake GitHub server
 * (tests/fakes/github-server): POST /repos/{o}/{r}/pulls with GitHub's
 * 422s (a head or base branch that does not exist, an open pull request
 * for the same head and base, no commits between them), GET .../pulls
 * filtered by state, head and base, GET and PATCH .../pulls/{n}. A pull
 * request is an issue item (routes-issues.c) with pull:true, so it
 * takes the repository's next issue number. main.c dispatches here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "github.h"

static const char *branch_sha(struct gh_repo *repo, const char *branch)
{
	char *full = gh_xasprintf("refs/heads/%s", branch);
	struct gh_ref *ref = gh_ref_find(repo, full);

	free(full);
	return ref ? ref->sha : NULL;
}

static cJSON *side_json(struct gh_repo *repo, const char *branch,
			const char *stored_sha)
{
	cJSON *o = cJSON_CreateObject(), *rj;
	const char *sha = branch_sha(repo, branch);
	char *label = gh_xasprintf("%s:%s", repo->owner, branch);

	cJSON_AddStringToObject(o, "label", label);
	cJSON_AddStringToObject(o, "ref", branch);
	cJSON_AddStringToObject(o, "sha", sha ? sha : stored_sha);
	rj = cJSON_AddObjectToObject(o, "repo");
	cJSON_AddStringToObject(rj, "full_name", repo->full_name);
	cJSON_AddStringToObject(rj, "name", repo->name);
	free(label);
	return o;
}

static cJSON *pull_json(const struct request *rq, struct gh_repo *repo,
			const cJSON *it)
{
	cJSON *o = gh_issue_json(rq, repo, it), *pr;
	long n = (long)cJSON_GetObjectItem(it, "number")->valuedouble;
	char *base = gh_api_base(rq), *s;

	cJSON_DeleteItemFromObject(o, "pull_request");
	s = gh_xasprintf("%s/repos/%s/pulls/%ld", base, repo->full_name, n);
	pr = cJSON_GetObjectItem(o, "url");
	cJSON_SetValuestring(pr, s);
	free(s);
	s = gh_xasprintf("%s/repos/%s/issues/%ld", base, repo->full_name, n);
	cJSON_AddStringToObject(o, "issue_url", s);
	free(s);
	cJSON_AddItemToObject(
		o, "head",
		side_json(repo, gh_str(it, "head"), gh_str(it, "head_sha")));
	cJSON_AddItemToObject(
		o, "base",
		side_json(repo, gh_str(it, "base"), gh_str(it, "base_sha")));
	cJSON_AddBoolToObject(o, "merged", 0);
	cJSON_AddNullToObject(o, "mergeable");
	free(base);
	return o;
}

static void answer_pull(const struct request *rq, struct gh_repo *repo,
			const cJSON *it, int status, struct response *r)
{
	cJSON *o = pull_json(rq, repo, it);

	gh_json(r, status, o);
	cJSON_Delete(o);
}

/* "branch" or "owner:branch" of REPO's owner; NULL for another owner. */
static const char *head_branch(const struct gh_repo *repo, const char *head)
{
	const char *colon = strchr(head, ':');

	if (!colon)
		return head;
	if ((size_t)(colon - head) != strlen(repo->owner) ||
	    strncasecmp(head, repo->owner, (size_t)(colon - head)))
		return NULL;
	return colon + 1;
}

static void create_pull(const struct request *rq, const cJSON *json,
			struct gh_repo *repo, struct response *r)
{
	const char *title = gh_str(json, "title"),
		   *head = gh_str(json, "head");
	const char *base = gh_str(json, "base"), *body = gh_str(json, "body");
	const char *hb, *hs, *bs;
	char *msg;
	cJSON *it;

	if (!title || !head || !base) {
		gh_invalid(r, "PullRequest",
			   !title  ? "title"
			   : !head ? "head"
				   : "base",
			   "missing_field", NULL);
		return;
	}
	hb = head_branch(repo, head);
	bs = branch_sha(repo, base);
	hs = hb ? branch_sha(repo, hb) : NULL;
	if (!bs) {
		gh_invalid(r, "PullRequest", "base", "invalid", NULL);
		return;
	}
	if (!hs) {
		gh_invalid(r, "PullRequest", "head", "invalid", NULL);
		return;
	}
	cJSON_ArrayForEach (it, repo->items) {
		if (!cJSON_IsTrue(cJSON_GetObjectItem(it, "pull")) ||
		    strcmp(gh_str(it, "state"), "open") ||
		    strcmp(gh_str(it, "head"), hb) ||
		    strcmp(gh_str(it, "base"), base))
			continue;
		msg = gh_xasprintf("A pull request already exists for %s:%s.",
				   repo->owner, hb);
		gh_invalid(r, "PullRequest", NULL, "custom", msg);
		free(msg);
		return;
	}
	if (gh_is_ancestor(&repo->odb, hs, bs)) {
		msg = gh_xasprintf("No commits between %s and %s", base, hb);
		gh_invalid(r, "PullRequest", NULL, "custom", msg);
		free(msg);
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
	cJSON_AddArrayToObject(it, "labels");
	cJSON_AddArrayToObject(it, "comments");
	cJSON_AddBoolToObject(it, "pull", 1);
	cJSON_AddStringToObject(it, "head", hb);
	cJSON_AddStringToObject(it, "base", base);
	cJSON_AddStringToObject(it, "head_sha", hs);
	cJSON_AddStringToObject(it, "base_sha", bs);
	cJSON_AddBoolToObject(
		it, "draft", cJSON_IsTrue(cJSON_GetObjectItem(json, "draft")));
	cJSON_AddItemToArray(repo->items, it);
	answer_pull(rq, repo, it, 201, r);
}

static void list_pulls(const struct request *rq, struct gh_repo *repo,
		       struct response *r)
{
	char *state = gh_query(rq, "state"), *head = gh_query(rq, "head");
	char *base = gh_query(rq, "base");
	const char *want = state ? state : "open", *hb = NULL;
	cJSON *out = cJSON_CreateArray(), *it;
	int i;

	if (head)
		hb = head_branch(repo, head);
	for (i = cJSON_GetArraySize(repo->items) - 1; i >= 0; i--) {
		it = cJSON_GetArrayItem(repo->items, i);
		if (!cJSON_IsTrue(cJSON_GetObjectItem(it, "pull")) ||
		    (strcmp(want, "all") &&
		     strcmp(want, gh_str(it, "state"))) ||
		    (head && (!hb || strcmp(hb, gh_str(it, "head")))) ||
		    (base && strcmp(base, gh_str(it, "base"))))
			continue;
		cJSON_AddItemToArray(out, pull_json(rq, repo, it));
	}
	gh_json(r, 200, out);
	cJSON_Delete(out);
	free(state);
	free(head);
	free(base);
}

static void update_pull(const struct request *rq, const cJSON *json,
			struct gh_repo *repo, cJSON *it, struct response *r)
{
	static const char *const keys[] = {"title", "body", "base"};
	const char *state = gh_str(json, "state"), *v;
	size_t i;

	if (state && strcmp(state, "open") && strcmp(state, "closed")) {
		gh_invalid(r, "PullRequest", "state", "invalid", NULL);
		return;
	}
	if ((v = gh_str(json, "base")) && !branch_sha(repo, v)) {
		gh_invalid(r, "PullRequest", "base", "invalid", NULL);
		return;
	}
	for (i = 0; i < 3; i++)
		if ((v = gh_str(json, keys[i])))
			cJSON_ReplaceItemInObjectCaseSensitive(
				it, keys[i], cJSON_CreateString(v));
	if (state)
		cJSON_ReplaceItemInObjectCaseSensitive(
			it, "state", cJSON_CreateString(state));
	answer_pull(rq, repo, it, 200, r);
}

int gh_routes_pulls(const struct request *rq, const cJSON *json,
		    struct response *r)
{
	const char *m = rq->method, *rest, *p;
	struct gh_repo *repo;
	cJSON *it, *found = NULL;
	char *end;
	long n;
	int matched;

	repo = gh_route_repo(rq, &rest, r, &matched);
	if (!matched || strncmp(rest, "/pulls", 6) ||
	    (rest[6] && rest[6] != '/'))
		return 0;
	if (!repo)
		return 1;
	p = rest + 6;
	if (!*p) {
		if (!strcmp(m, "POST"))
			create_pull(rq, json, repo, r);
		else if (!strcmp(m, "GET"))
			list_pulls(rq, repo, r);
		else
			gh_not_found(r);
		return 1;
	}
	n = strtol(p + 1, &end, 10);
	cJSON_ArrayForEach (it, repo->items)
		if (cJSON_IsTrue(cJSON_GetObjectItem(it, "pull")) &&
		    (long)cJSON_GetObjectItem(it, "number")->valuedouble == n)
			found = it;
	if (!found || end == p + 1 || *end)
		gh_not_found(r);
	else if (!strcmp(m, "GET"))
		answer_pull(rq, repo, found, 200, r);
	else if (!strcmp(m, "PATCH"))
		update_pull(rq, json, repo, found, r);
	else
		gh_not_found(r);
	return 1;
}

/*
 * routes-repos.c - the users, repositories and commit statuses endpoints
 * of the fake GitHub server (tests/fakes/github-server): GET /user, GET
 * /users/{login}, POST /user/repos, POST /orgs/{org}/repos, GET
 * /repos/{o}/{r} and POST /repos/{o}/{r}/statuses/{sha}; and the
 * /repos/{o}/{r} prefix every repository route starts with. main.c
 * dispatches here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "github.h"

struct gh_repo *gh_route_repo(const struct request *rq, const char **rest,
			      struct response *r, int *matched)
{
	const char *p = rq->path, *o, *slash, *end;
	char owner[256], name[256];
	struct gh_repo *repo;
	size_t ol, nl;

	*matched = 0;
	if (strncmp(p, "/repos/", 7))
		return NULL;
	o = p + 7;
	slash = strchr(o, '/');
	if (!slash)
		return NULL;
	end = strchr(slash + 1, '/');
	if (!end)
		end = slash + strlen(slash);
	ol = (size_t)(slash - o);
	nl = (size_t)(end - slash - 1);
	if (!ol || !nl || ol >= sizeof(owner) || nl >= sizeof(name))
		return NULL;
	*matched = 1;
	memcpy(owner, o, ol);
	owner[ol] = '\0';
	memcpy(name, slash + 1, nl);
	name[nl] = '\0';
	repo = gh_repo_find(owner, name);
	if (!repo)
		gh_not_found(r);
	*rest = end;
	return repo;
}

static cJSON *user_json(const char *login, int self)
{
	cJSON *u = cJSON_CreateObject();
	long id = 1;
	const char *p;

	for (p = login; *p; p++) /* a stable id per login */
		id = (id * 31 + (unsigned char)*p) % 100000000;
	cJSON_AddStringToObject(u, "login", login);
	cJSON_AddNumberToObject(u, "id", (double)id);
	cJSON_AddStringToObject(u, "type", "User");
	cJSON_AddBoolToObject(u, "site_admin", 0);
	if (self)
		cJSON_AddStringToObject(u, "name", login);
	return u;
}

static cJSON *repo_json(const struct request *rq, const struct gh_repo *repo)
{
	cJSON *o = cJSON_CreateObject(), *perm;
	char *base = gh_api_base(rq), *s;

	cJSON_AddNumberToObject(o, "id", (double)repo->id);
	cJSON_AddStringToObject(o, "name", repo->name);
	cJSON_AddStringToObject(o, "full_name", repo->full_name);
	cJSON_AddBoolToObject(o, "private", repo->private);
	cJSON_AddStringToObject(o, "visibility",
				repo->private ? "private" : "public");
	cJSON_AddItemToObject(o, "owner", user_json(repo->owner, 0));
	s = gh_xasprintf("https://github.com/%s", repo->full_name);
	cJSON_AddStringToObject(o, "html_url", s);
	free(s);
	if (repo->description)
		cJSON_AddStringToObject(o, "description", repo->description);
	else
		cJSON_AddNullToObject(o, "description");
	cJSON_AddBoolToObject(o, "fork", 0);
	s = gh_xasprintf("%s/repos/%s", base, repo->full_name);
	cJSON_AddStringToObject(o, "url", s);
	free(s);
	s = gh_xasprintf("https://github.com/%s.git", repo->full_name);
	cJSON_AddStringToObject(o, "clone_url", s);
	free(s);
	cJSON_AddStringToObject(o, "default_branch", repo->default_branch);
	cJSON_AddNumberToObject(o, "size", gh_repo_empty(repo) ? 0 : 1);
	cJSON_AddBoolToObject(o, "archived", 0);
	cJSON_AddBoolToObject(o, "has_issues", 1);
	perm = cJSON_AddObjectToObject(o, "permissions");
	cJSON_AddBoolToObject(perm, "admin", 1);
	cJSON_AddBoolToObject(perm, "push", 1);
	cJSON_AddBoolToObject(perm, "pull", 1);
	free(base);
	return o;
}

/* POST /user/repos, POST /orgs/{org}/repos */
static void create_repo(const struct request *rq, const cJSON *json,
			const char *owner, struct response *r)
{
	const char *name = gh_str(json, "name"), *desc;
	const char *p;
	struct gh_repo *repo;
	cJSON *o;

	if (!cJSON_IsObject(json) || !name) {
		gh_invalid(r, "Repository", "name", "missing_field", NULL);
		return;
	}
	for (p = name; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
			    "XYZ0123456789-_.",
			    *p))
			break;
	if (!*name || *p) {
		gh_invalid(r, "Repository", "name", "custom",
			   "name is invalid");
		return;
	}
	repo = gh_repo_create(
		owner, name,
		cJSON_IsTrue(cJSON_GetObjectItem(json, "private")),
		cJSON_IsTrue(cJSON_GetObjectItem(json, "auto_init")));
	if (!repo) {
		o = cJSON_Parse("{\"message\":\"Repository creation failed.\","
				"\"errors\":[{\"resource\":\"Repository\","
				"\"code\":\"custom\",\"field\":\"name\","
				"\"message\":\"name already exists on this "
				"account\"}],\"documentation_url\":"
				"\"https://docs.github.com/rest\","
				"\"status\":\"422\"}");
		gh_json(r, 422, o);
		cJSON_Delete(o);
		return;
	}
	desc = gh_str(json, "description");
	if (desc)
		repo->description = gh_xstrdup(desc);
	o = repo_json(rq, repo);
	gh_json(r, 201, o);
	cJSON_Delete(o);
}

/* POST /repos/{o}/{r}/statuses/{sha} */
static void create_status(const struct request *rq, const cJSON *json,
			  struct gh_repo *repo, const char *sha,
			  struct response *r)
{
	static const char *const states[] = {"error", "failure", "pending",
					     "success"};
	const char *state = gh_str(json, "state"), *v;
	const struct gh_obj *c = gh_odb_get(&repo->odb, sha);
	char *base, *url, when[32];
	cJSON *s, *out;
	size_t i;

	for (i = 0; state && i < 4 && strcmp(state, states[i]); i++)
		;
	if (!state || i == 4) {
		gh_invalid(r, "Status", "state", state ? "invalid" : "missing",
			   NULL);
		return;
	}
	if (!c || c->type != GH_COMMIT) {
		char *m = gh_xasprintf("No commit found for SHA: %s", sha);

		gh_error(r, 422, m);
		free(m);
		return;
	}
	s = cJSON_CreateObject();
	cJSON_AddNumberToObject(s, "id", (double)++gh.next_id);
	cJSON_AddStringToObject(s, "sha", sha);
	cJSON_AddStringToObject(s, "state", state);
	v = gh_str(json, "context");
	cJSON_AddStringToObject(s, "context", v ? v : "default");
	v = gh_str(json, "description");
	if (v)
		cJSON_AddStringToObject(s, "description", v);
	else
		cJSON_AddNullToObject(s, "description");
	v = gh_str(json, "target_url");
	if (v)
		cJSON_AddStringToObject(s, "target_url", v);
	else
		cJSON_AddNullToObject(s, "target_url");
	cJSON_AddItemToArray(repo->statuses, s);
	out = cJSON_Duplicate(s, 1);
	cJSON_DeleteItemFromObject(out, "sha");
	base = gh_api_base(rq);
	url = gh_xasprintf("%s/repos/%s/statuses/%s", base, repo->full_name,
			   sha);
	cJSON_AddStringToObject(out, "url", url);
	gh_format_date(gh_default_person.when, 0, when);
	cJSON_AddStringToObject(out, "created_at", when);
	cJSON_AddStringToObject(out, "updated_at", when);
	cJSON_AddItemToObject(out, "creator", user_json(gh.login, 0));
	gh_json(r, 201, out);
	cJSON_Delete(out);
	free(url);
	free(base);
}

int gh_routes_repos(const struct request *rq, const cJSON *json,
		    struct response *r)
{
	int get = !strcmp(rq->method, "GET"),
	    post = !strcmp(rq->method, "POST");
	const char *rest, *slash;
	struct gh_repo *repo;
	char org[256];
	cJSON *o;
	int matched;

	if (!strcmp(rq->path, "/user") && get) {
		o = user_json(gh.login, 1);
		gh_json(r, 200, o);
		cJSON_Delete(o);
		return 1;
	}
	if (!strncmp(rq->path, "/users/", 7) && get && rq->path[7] &&
	    !strchr(rq->path + 7, '/')) {
		o = user_json(rq->path + 7, 0);
		gh_json(r, 200, o);
		cJSON_Delete(o);
		return 1;
	}
	if (!strcmp(rq->path, "/user/repos") && post) {
		create_repo(rq, json, gh.login, r);
		return 1;
	}
	if (!strncmp(rq->path, "/orgs/", 6) && post) {
		slash = strchr(rq->path + 6, '/');
		if (!slash || strcmp(slash, "/repos") ||
		    (size_t)(slash - rq->path - 6) >= sizeof(org) ||
		    slash == rq->path + 6)
			return 0;
		memcpy(org, rq->path + 6, (size_t)(slash - rq->path - 6));
		org[slash - rq->path - 6] = '\0';
		create_repo(rq, json, org, r);
		return 1;
	}
	repo = gh_route_repo(rq, &rest, r, &matched);
	if (!matched)
		return 0;
	if (!repo)
		return 1;
	if (!*rest && get) {
		o = repo_json(rq, repo);
		gh_json(r, 200, o);
		cJSON_Delete(o);
		return 1;
	}
	if (!strncmp(rest, "/statuses/", 10) && post) {
		create_status(rq, json, repo, rest + 10, r);
		return 1;
	}
	return 0;
}

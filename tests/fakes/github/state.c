/*
 * state.c - what the fake GitHub server (tests/fakes/github-server)
 * remembers: the repositories with their objects, refs, issues, pull
 * requests and statuses, the counters, and the JSON dump of all of it
 * that GET /_fake/state and --state give the tests (each branch's tip
 * flattened to {path: {mode, content_b64, sha}}). main.c and the routes
 * call it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "github.h"

struct gh_state gh;

/* 2023-11-14T22:13:20Z */
const struct gh_person gh_default_person = {
	"sbxloop-fake", "sbxloop-fake@users.noreply.github.com", 1700000000,
	0};

struct gh_repo *gh_repo_find(const char *owner, const char *name)
{
	struct gh_repo *r;

	for (r = gh.repos; r; r = r->next)
		if (!strcasecmp(r->owner, owner) && !strcasecmp(r->name, name))
			return r;
	return NULL;
}

struct gh_repo *gh_repo_create(const char *owner, const char *name,
			       int private, int init)
{
	struct gh_repo *r, **tail;
	char blob[41], tree[41], commit[41];
	struct gh_dir *d;
	char *readme;

	if (gh_repo_find(owner, name))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		gh_die("out of memory");
	r->id = ++gh.next_id;
	r->owner = gh_xstrdup(owner);
	r->name = gh_xstrdup(name);
	r->full_name = gh_xasprintf("%s/%s", owner, name);
	r->private = private;
	r->default_branch = gh_xstrdup("main");
	r->items = cJSON_CreateArray();
	r->statuses = cJSON_CreateArray();
	r->next_number = 1;
	for (tail = &gh.repos; *tail; tail = &(*tail)->next)
		;
	*tail = r;
	if (!init)
		return r;
	readme = gh_xasprintf("# %s\n", name);
	memcpy(blob, gh_odb_put(&r->odb, GH_BLOB, readme, strlen(readme))->sha,
	       41);
	free(readme);
	d = gh_dir_load(&r->odb, NULL);
	gh_dir_set(d, &r->odb, "README.md", 0100644, blob);
	gh_dir_write(d, &r->odb, tree);
	gh_dir_free(d);
	gh_commit_write(&r->odb, tree, NULL, 0, &gh_default_person,
			&gh_default_person, "Initial commit", commit);
	gh_ref_set(r, "refs/heads/main", commit);
	return r;
}

int gh_repo_empty(const struct gh_repo *repo)
{
	return repo->nrefs == 0;
}

struct gh_ref *gh_ref_find(struct gh_repo *repo, const char *name)
{
	size_t i;

	for (i = 0; i < repo->nrefs; i++)
		if (!strcmp(repo->refs[i].name, name))
			return &repo->refs[i];
	return NULL;
}

void gh_ref_set(struct gh_repo *repo, const char *name, const char *sha)
{
	struct gh_ref *ref = gh_ref_find(repo, name);

	if (!ref) {
		repo->refs = realloc(repo->refs,
				     (repo->nrefs + 1) * sizeof(*repo->refs));
		if (!repo->refs)
			gh_die("out of memory");
		ref = &repo->refs[repo->nrefs++];
		ref->name = gh_xstrdup(name);
	}
	memcpy(ref->sha, sha, 41);
}

void gh_ref_delete(struct gh_repo *repo, const char *name)
{
	struct gh_ref *ref = gh_ref_find(repo, name);

	if (!ref)
		return;
	free(ref->name);
	*ref = repo->refs[--repo->nrefs];
}

char *gh_api_base(const struct request *rq)
{
	return gh_xasprintf("http://%s", rq->host ? rq->host : "127.0.0.1");
}

/* ---- the dump ---------------------------------------------------------- */

static void flatten(const struct gh_odb *odb, const char *tree,
		    const char *prefix, cJSON *out)
{
	struct gh_tentry *e;
	const struct gh_obj *o;
	size_t n, i;
	cJSON *f;
	char *path, *b64;

	if (gh_tree_read(odb, tree, &e, &n) < 0)
		return;
	for (i = 0; i < n; i++) {
		path = gh_xasprintf("%s%s", prefix, e[i].name);
		if (e[i].mode == 040000) {
			char *sub = gh_xasprintf("%s/", path);

			flatten(odb, e[i].sha, sub, out);
			free(sub);
			free(path);
			continue;
		}
		f = cJSON_AddObjectToObject(out, path);
		cJSON_AddStringToObject(f, "mode", gh_mode_api(e[i].mode));
		o = gh_odb_get(odb, e[i].sha);
		if (o && o->type == GH_BLOB) {
			b64 = gh_b64_encode(o->data, o->len, 0);
			cJSON_AddStringToObject(f, "content_b64", b64);
			free(b64);
		}
		cJSON_AddStringToObject(f, "sha", e[i].sha);
		free(path);
	}
	gh_tentries_free(e, n);
}

static cJSON *dump_items(const struct gh_repo *repo, int pulls)
{
	static const char *const issue_keys[] = {
		"number",       "title",  "body",    "state",
		"state_reason", "labels", "comments"};
	static const char *const pull_keys[] = {
		"number", "title", "body", "head", "base", "draft", "state"};
	const char *const *keys = pulls ? pull_keys : issue_keys;
	size_t nkeys = pulls ? 7 : 7, k;
	cJSON *out = cJSON_CreateArray(), *it, *o, *v;

	cJSON_ArrayForEach (it, repo->items) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(it, "pull")) != pulls)
			continue;
		o = cJSON_CreateObject();
		for (k = 0; k < nkeys; k++) {
			v = cJSON_GetObjectItem(it, keys[k]);
			cJSON_AddItemToObject(o, keys[k],
					      v ? cJSON_Duplicate(v, 1)
						: cJSON_CreateNull());
		}
		cJSON_AddItemToArray(out, o);
	}
	return out;
}

static cJSON *dump_repo(const struct gh_repo *repo)
{
	cJSON *o = cJSON_CreateObject(), *refs, *files, *f, *st, *s, *v;
	struct gh_commit c;
	size_t i;

	cJSON_AddBoolToObject(o, "private", repo->private);
	cJSON_AddStringToObject(o, "default_branch", repo->default_branch);
	refs = cJSON_AddObjectToObject(o, "refs");
	for (i = 0; i < repo->nrefs; i++)
		cJSON_AddStringToObject(refs, repo->refs[i].name,
					repo->refs[i].sha);
	cJSON_AddItemToObject(o, "issues", dump_items(repo, 0));
	cJSON_AddItemToObject(o, "pulls", dump_items(repo, 1));
	st = cJSON_AddArrayToObject(o, "statuses");
	cJSON_ArrayForEach (s, repo->statuses) {
		v = cJSON_CreateObject();
		cJSON_AddItemToObject(
			v, "sha",
			cJSON_Duplicate(cJSON_GetObjectItem(s, "sha"), 1));
		cJSON_AddItemToObject(
			v, "state",
			cJSON_Duplicate(cJSON_GetObjectItem(s, "state"), 1));
		cJSON_AddItemToObject(
			v, "context",
			cJSON_Duplicate(cJSON_GetObjectItem(s, "context"), 1));
		cJSON_AddItemToObject(
			v, "description",
			cJSON_Duplicate(cJSON_GetObjectItem(s, "description"),
					1));
		cJSON_AddItemToArray(st, v);
	}
	files = cJSON_AddObjectToObject(o, "files");
	for (i = 0; i < repo->nrefs; i++) {
		if (strncmp(repo->refs[i].name, "refs/heads/", 11) ||
		    gh_commit_read(&repo->odb, repo->refs[i].sha, &c) < 0)
			continue;
		f = cJSON_AddObjectToObject(files, repo->refs[i].name);
		flatten(&repo->odb, c.tree, "", f);
		gh_commit_free(&c);
	}
	return o;
}

cJSON *gh_state_dump(void)
{
	cJSON *o = cJSON_CreateObject(), *repos;
	struct gh_repo *r;

	cJSON_AddNumberToObject(o, "connections", (double)gh.connections);
	cJSON_AddNumberToObject(o, "requests", (double)gh.requests);
	repos = cJSON_AddObjectToObject(o, "repos");
	for (r = gh.repos; r; r = r->next)
		cJSON_AddItemToObject(repos, r->full_name, dump_repo(r));
	return o;
}

void gh_state_free(void)
{
	struct gh_repo *r, *next;
	size_t i;

	for (r = gh.repos; r; r = next) {
		next = r->next;
		free(r->owner);
		free(r->name);
		free(r->full_name);
		free(r->description);
		free(r->default_branch);
		gh_odb_free(&r->odb);
		for (i = 0; i < r->nrefs; i++)
			free(r->refs[i].name);
		free(r->refs);
		cJSON_Delete(r->items);
		cJSON_Delete(r->statuses);
		free(r);
	}
	gh.repos = NULL;
}

/*
 * routes-contents.c - the repository contents endpoints of the fake
 * GitHub server (tests/fakes/github-server): PUT
 * /repos/{o}/{r}/contents/{path} commits one file on a branch (and makes
 * the first commit of an empty repository, which creates its default
 * branch), GET .../contents/{path}?ref= reads a file or lists a
 * directory. main.c dispatches here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "github.h"

/* Find PATH under TREE: 0 and its mode and sha, or -1. An empty PATH is
 * the tree itself. */
static int lookup(const struct gh_odb *odb, const char *tree, const char *path,
		  unsigned *mode, char sha[41])
{
	struct gh_tentry *e;
	const char *slash;
	size_t n, i, len;
	int found = -1;

	memcpy(sha, tree, 41);
	*mode = 040000;
	while (*path) {
		slash = strchr(path, '/');
		len = slash ? (size_t)(slash - path) : strlen(path);
		if (*mode != 040000 || gh_tree_read(odb, sha, &e, &n) < 0)
			return -1;
		for (found = -1, i = 0; i < n && found < 0; i++)
			if (strlen(e[i].name) == len &&
			    !memcmp(e[i].name, path, len)) {
				*mode = e[i].mode;
				memcpy(sha, e[i].sha, 41);
				found = 0;
			}
		gh_tentries_free(e, n);
		if (found < 0)
			return -1;
		path = slash ? slash + 1 : path + len;
	}
	return 0;
}

/* The commit REF names (a branch, refs/..., or a commit sha), or NULL. */
static const char *resolve(struct gh_repo *repo, const char *ref)
{
	const struct gh_obj *o;
	struct gh_ref *r;
	char *full;

	full = strncmp(ref, "refs/", 5) ? gh_xasprintf("refs/heads/%s", ref)
					: gh_xstrdup(ref);
	r = gh_ref_find(repo, full);
	free(full);
	if (r)
		return r->sha;
	o = gh_odb_get(&repo->odb, ref);
	return o && o->type == GH_COMMIT ? o->sha : NULL;
}

static cJSON *content_json(const struct request *rq,
			   const struct gh_repo *repo, const char *path,
			   const char *ref, unsigned mode, const char *sha,
			   int with_content)
{
	const struct gh_obj *o = gh_odb_get(&repo->odb, sha);
	const char *name = strrchr(path, '/');
	char *base = gh_api_base(rq), *s;
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "type",
				mode == 040000    ? "dir"
				: mode == 0120000 ? "symlink"
				: mode == 0160000 ? "submodule"
						  : "file");
	cJSON_AddStringToObject(c, "name", name ? name + 1 : path);
	cJSON_AddStringToObject(c, "path", path);
	cJSON_AddStringToObject(c, "sha", sha);
	cJSON_AddNumberToObject(c, "size",
				o && o->type == GH_BLOB ? (double)o->len : 0);
	s = gh_xasprintf("%s/repos/%s/contents/%s?ref=%s", base,
			 repo->full_name, path, ref);
	cJSON_AddStringToObject(c, "url", s);
	free(s);
	s = gh_xasprintf("https://github.com/%s/blob/%s/%s", repo->full_name,
			 ref, path);
	cJSON_AddStringToObject(c, "html_url", s);
	free(s);
	s = gh_xasprintf("%s/repos/%s/git/%s/%s", base, repo->full_name,
			 mode == 040000 ? "trees" : "blobs", sha);
	cJSON_AddStringToObject(c, "git_url", s);
	free(s);
	if (with_content && o && o->type == GH_BLOB) {
		s = gh_b64_encode(o->data, o->len, 60);
		cJSON_AddStringToObject(c, "content", s);
		free(s);
		cJSON_AddStringToObject(c, "encoding", "base64");
		if (mode == 0120000)
			cJSON_AddStringToObject(c, "target",
						(const char *)o->data);
	}
	free(base);
	return c;
}

static void get_contents(const struct request *rq, struct gh_repo *repo,
			 const char *path, struct response *r)
{
	char *ref = gh_query(rq, "ref"), sha[41], *msg, *sub;
	const char *tip, *name = ref && *ref ? ref : repo->default_branch;
	struct gh_tentry *e;
	struct gh_commit c;
	unsigned mode;
	size_t n, i;
	cJSON *out;

	if (gh_repo_empty(repo)) {
		gh_error(r, 404, "This repository is empty.");
		goto out;
	}
	tip = resolve(repo, name);
	if (!tip) {
		msg = gh_xasprintf("No commit found for the ref %s", name);
		gh_error(r, 404, msg);
		free(msg);
		goto out;
	}
	gh_commit_read(&repo->odb, tip, &c);
	if (lookup(&repo->odb, c.tree, path, &mode, sha) < 0) {
		gh_not_found(r);
	} else if (mode == 040000) {
		out = cJSON_CreateArray();
		if (gh_tree_read(&repo->odb, sha, &e, &n) == 0) {
			for (i = 0; i < n; i++) {
				sub = gh_xasprintf("%s%s%s", path,
						   *path ? "/" : "",
						   e[i].name);
				cJSON_AddItemToArray(
					out,
					content_json(rq, repo, sub, name,
						     e[i].mode, e[i].sha, 0));
				free(sub);
			}
			gh_tentries_free(e, n);
		}
		gh_json(r, 200, out);
		cJSON_Delete(out);
	} else {
		out = content_json(rq, repo, path, name, mode, sha, 1);
		gh_json(r, 200, out);
		cJSON_Delete(out);
	}
	gh_commit_free(&c);
out:
	free(ref);
}

/* The author or committer of a contents commit: -1 when malformed. */
static int person_of(const cJSON *o, const struct gh_person *dflt,
		     struct gh_person *p)
{
	*p = *dflt;
	if (!o)
		return 0;
	if (!gh_str(o, "name") || !gh_str(o, "email"))
		return -1;
	p->name = (char *)gh_str(o, "name");
	p->email = (char *)gh_str(o, "email");
	return 0;
}

static void put_answer(const struct request *rq, struct gh_repo *repo,
		       const char *path, const char *branch, const char *blob,
		       const char *commit, int status, struct response *r)
{
	cJSON *out = cJSON_CreateObject(), *c, *t, *ps, *p;
	struct gh_commit cm;
	size_t i;

	cJSON_AddItemToObject(
		out, "content",
		content_json(rq, repo, path, branch, 0100644, blob, 0));
	gh_commit_read(&repo->odb, commit, &cm);
	c = cJSON_AddObjectToObject(out, "commit");
	cJSON_AddStringToObject(c, "sha", commit);
	cJSON_AddStringToObject(c, "message", cm.message);
	t = cJSON_AddObjectToObject(c, "tree");
	cJSON_AddStringToObject(t, "sha", cm.tree);
	ps = cJSON_AddArrayToObject(c, "parents");
	for (i = 0; i < cm.nparents; i++) {
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "sha", cm.parents[i]);
		cJSON_AddItemToArray(ps, p);
	}
	gh_json(r, status, out);
	cJSON_Delete(out);
	gh_commit_free(&cm);
}

static void put_contents(const struct request *rq, const cJSON *json,
			 struct gh_repo *repo, const char *path,
			 struct response *r)
{
	const char *msg = gh_str(json, "message"),
		   *b64 = gh_str(json, "content");
	const char *branch = gh_str(json, "branch"),
		   *want = gh_str(json, "sha");
	const char *parent = NULL;
	char blob[41], tree[41], commit[41], old[41], *full, *m;
	struct gh_person author, committer;
	struct gh_commit tip = {0};
	unsigned char *raw;
	struct gh_dir *d;
	unsigned mode = 0100644;
	size_t n;
	int exists = 0;

	if (!msg || !b64) {
		gh_error(r, 422,
			 msg ? "Invalid request.\n\n\"content\" "
			       "wasn't supplied."
			     : "Invalid request.\n\n\"message\" "
			       "wasn't supplied.");
		return;
	}
	if (!*path || gh_b64_decode(b64, &raw, &n) < 0) {
		gh_error(r, 422,
			 *path ? "content is not valid Base64"
			       : "path cannot be empty");
		return;
	}
	if (person_of(cJSON_GetObjectItem(json, "author"), &gh_default_person,
		      &author) < 0 ||
	    person_of(cJSON_GetObjectItem(json, "committer"), &author,
		      &committer) < 0) {
		gh_invalid(r, "Commit", "author", "invalid", NULL);
		free(raw);
		return;
	}
	if (!branch)
		branch = repo->default_branch;
	full = gh_xasprintf("refs/heads/%s", branch);
	if (!gh_repo_empty(repo)) {
		parent = gh_ref_find(repo, full) ? gh_ref_find(repo, full)->sha
						 : NULL;
		if (!parent) {
			m = gh_xasprintf("Branch %s not found", branch);
			gh_error(r, 404, m);
			free(m);
			goto out;
		}
		gh_commit_read(&repo->odb, parent, &tip);
		exists = lookup(&repo->odb, tip.tree, path, &mode, old) == 0;
		if (exists && mode == 040000) {
			gh_error(r, 422, "path is a directory");
			goto out;
		}
		if (exists && !want) {
			gh_error(r, 422,
				 "Invalid request.\n\n\"sha\" wasn't "
				 "supplied.");
			goto out;
		}
		if (exists && strcmp(want, old)) {
			m = gh_xasprintf("%s does not match %s", path, want);
			gh_error(r, 409, m);
			free(m);
			goto out;
		}
	}
	memcpy(blob, gh_odb_put(&repo->odb, GH_BLOB, raw, n)->sha, 41);
	d = gh_dir_load(&repo->odb, parent ? tip.tree : NULL);
	if (gh_dir_set(d, &repo->odb, path, exists ? mode : 0100644, blob) <
	    0) {
		gh_error(r, 422, "path is invalid");
		gh_dir_free(d);
		goto out;
	}
	gh_dir_write(d, &repo->odb, tree);
	gh_dir_free(d);
	gh_commit_write(&repo->odb, tree, parent ? &parent : NULL,
			parent ? 1 : 0, &author, &committer, msg, commit);
	if (!parent) { /* the first commit makes the default branch */
		m = gh_xstrdup(branch);
		free(repo->default_branch);
		repo->default_branch = m;
		branch = m;
	}
	gh_ref_set(repo, full, commit);
	put_answer(rq, repo, path, branch, blob, commit, exists ? 200 : 201,
		   r);
out:
	gh_commit_free(&tip);
	free(full);
	free(raw);
}

int gh_routes_contents(const struct request *rq, const cJSON *json,
		       struct response *r)
{
	const char *rest, *path;
	struct gh_repo *repo;
	int matched;

	repo = gh_route_repo(rq, &rest, r, &matched);
	if (!matched || strncmp(rest, "/contents", 9) ||
	    (rest[9] && rest[9] != '/'))
		return 0;
	if (!repo)
		return 1;
	path = rest[9] ? rest + 10 : "";
	if (!strcmp(rq->method, "GET"))
		get_contents(rq, repo, path, r);
	else if (!strcmp(rq->method, "PUT"))
		put_contents(rq, json, repo, path, r);
	else
		gh_not_found(r);
	return 1;
}

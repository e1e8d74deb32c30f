/*
 * routes-git.c - the git database endpoints of the fake GitHub server
 * (tests/fakes/github-server): blobs, trees (base_tree plus nested path
 * edits, sha null deletes), commits and refs under
 * /repos/{o}/{r}/git/. An empty repository answers all of them 409 "Git
 * Repository is empty." as GitHub does. main.c dispatches here; the
 * objects themselves are git.c's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "github.h"

static char *obj_url(const struct request *rq, const struct gh_repo *repo,
		     const char *kind, const char *sha)
{
	char *base = gh_api_base(rq);
	char *url = gh_xasprintf("%s/repos/%s/git/%s/%s", base,
				 repo->full_name, kind, sha);

	free(base);
	return url;
}

static void add_url(cJSON *o, const struct request *rq,
		    const struct gh_repo *repo, const char *kind,
		    const char *sha)
{
	char *url = obj_url(rq, repo, kind, sha);

	cJSON_AddStringToObject(o, "url", url);
	free(url);
}

/* ---- blobs ------------------------------------------------------------- */

static void create_blob(const struct request *rq, const cJSON *json,
			struct gh_repo *repo, struct response *r)
{
	const char *content = gh_str(json, "content");
	const char *enc = gh_str(json, "encoding");
	const struct gh_obj *o;
	unsigned char *raw;
	size_t n;
	cJSON *out;

	if (!content) {
		gh_error(r, 422,
			 "Invalid request.\n\n\"content\" wasn't "
			 "supplied.");
		return;
	}
	if (enc && !strcmp(enc, "base64")) {
		if (gh_b64_decode(content, &raw, &n) < 0) {
			gh_error(r, 422, "Problems parsing base64 content");
			return;
		}
		o = gh_odb_put(&repo->odb, GH_BLOB, raw, n);
		free(raw);
	} else if (!enc || !strcmp(enc, "utf-8") || !strcmp(enc, "utf8")) {
		o = gh_odb_put(&repo->odb, GH_BLOB, content, strlen(content));
	} else {
		gh_error(r, 422, "encoding must be utf-8 or base64");
		return;
	}
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "sha", o->sha);
	add_url(out, rq, repo, "blobs", o->sha);
	gh_json(r, 201, out);
	cJSON_Delete(out);
}

static void get_blob(const struct request *rq, struct gh_repo *repo,
		     const char *sha, struct response *r)
{
	const struct gh_obj *o = gh_odb_get(&repo->odb, sha);
	cJSON *out;
	char *b64;

	if (!o || o->type != GH_BLOB) {
		gh_not_found(r);
		return;
	}
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "sha", o->sha);
	cJSON_AddNumberToObject(out, "size", (double)o->len);
	add_url(out, rq, repo, "blobs", o->sha);
	b64 = gh_b64_encode(o->data, o->len, 60);
	cJSON_AddStringToObject(out, "content", b64);
	free(b64);
	cJSON_AddStringToObject(out, "encoding", "base64");
	gh_json(r, 200, out);
	cJSON_Delete(out);
}

/* ---- trees ------------------------------------------------------------- */

static void tree_entries(const struct request *rq, struct gh_repo *repo,
			 const char *sha, const char *prefix, int recursive,
			 cJSON *arr)
{
	struct gh_tentry *e;
	const struct gh_obj *o;
	size_t n, i;
	cJSON *it;
	char *path;

	if (gh_tree_read(&repo->odb, sha, &e, &n) < 0)
		return;
	for (i = 0; i < n; i++) {
		path = gh_xasprintf("%s%s", prefix, e[i].name);
		it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "path", path);
		cJSON_AddStringToObject(it, "mode", gh_mode_api(e[i].mode));
		cJSON_AddStringToObject(it, "type", gh_mode_type(e[i].mode));
		cJSON_AddStringToObject(it, "sha", e[i].sha);
		o = gh_odb_get(&repo->odb, e[i].sha);
		if (o && o->type == GH_BLOB)
			cJSON_AddNumberToObject(it, "size", (double)o->len);
		if (e[i].mode != 0160000)
			add_url(it, rq, repo,
				e[i].mode == 040000 ? "trees" : "blobs",
				e[i].sha);
		cJSON_AddItemToArray(arr, it);
		if (recursive && e[i].mode == 040000) {
			char *sub = gh_xasprintf("%s/", path);

			tree_entries(rq, repo, e[i].sha, sub, 1, arr);
			free(sub);
		}
		free(path);
	}
	gh_tentries_free(e, n);
}

static void tree_answer(const struct request *rq, struct gh_repo *repo,
			const char *sha, int recursive, int status,
			struct response *r)
{
	cJSON *out = cJSON_CreateObject();

	cJSON_AddStringToObject(out, "sha", sha);
	add_url(out, rq, repo, "trees", sha);
	tree_entries(rq, repo, sha, "", recursive,
		     cJSON_AddArrayToObject(out, "tree"));
	cJSON_AddBoolToObject(out, "truncated", 0);
	gh_json(r, status, out);
	cJSON_Delete(out);
}

static int parse_mode(const char *s, unsigned *mode)
{
	static const char *const ok[] = {"100644", "100755", "120000",
					 "040000", "160000"};
	size_t i;

	for (i = 0; s && i < 5; i++)
		if (!strcmp(s, ok[i])) {
			*mode = (unsigned)strtoul(s, NULL, 8);
			return 0;
		}
	return -1;
}

/* Apply one entry of a create-tree request to D: NULL, or the message
 * of the 422 it earns. */
static char *tree_edit(struct gh_repo *repo, struct gh_dir *d,
		       const cJSON *ent)
{
	const char *path = gh_str(ent, "path"), *content;
	const cJSON *sha = cJSON_GetObjectItemCaseSensitive(ent, "sha");
	const struct gh_obj *o;
	unsigned mode;

	if (!path || !*path)
		return gh_xstrdup("Must supply a valid tree.path");
	if (parse_mode(gh_str(ent, "mode"), &mode) < 0)
		return gh_xasprintf("Must supply a valid tree.mode for '%s'",
				    path);
	content = gh_str(ent, "content");
	if ((sha && content) || (!sha && !content))
		return gh_xstrdup("Must supply either tree.sha or "
				  "tree.content. Request will be rejected if "
				  "both are present.");
	if (cJSON_IsNull(sha)) {
		if (gh_dir_remove(d, &repo->odb, path) < 0)
			return gh_xasprintf("GitRPC::BadObjectState: cannot "
					    "delete '%s': no such path in "
					    "base_tree",
					    path);
		return NULL;
	}
	if (content) {
		if (mode == 040000 || mode == 0160000)
			return gh_xasprintf("tree.content cannot make a %s",
					    gh_mode_type(mode));
		o = gh_odb_put(&repo->odb, GH_BLOB, content, strlen(content));
	} else {
		if (!cJSON_IsString(sha) || !gh_is_sha(sha->valuestring))
			return gh_xasprintf("tree.sha %s is not a valid sha",
					    cJSON_IsString(sha)
						    ? sha->valuestring
						    : "(not a string)");
		o = gh_odb_get(&repo->odb, sha->valuestring);
		if (mode != 0160000 &&
		    (!o || o->type != (mode == 040000 ? GH_TREE : GH_BLOB)))
			return gh_xasprintf("tree.sha %s is not a valid %s",
					    sha->valuestring,
					    gh_mode_type(mode));
		if (mode == 0160000) {
			if (gh_dir_set(d, &repo->odb, path, mode,
				       sha->valuestring) < 0)
				return gh_xasprintf("Invalid tree.path '%s'",
						    path);
			return NULL;
		}
	}
	if (gh_dir_set(d, &repo->odb, path, mode, o->sha) < 0)
		return gh_xasprintf("Invalid tree.path '%s'", path);
	return NULL;
}

static void create_tree(const struct request *rq, const cJSON *json,
			struct gh_repo *repo, struct response *r)
{
	const cJSON *tree = cJSON_GetObjectItemCaseSensitive(json, "tree");
	const char *base = gh_str(json, "base_tree");
	struct gh_dir *d;
	const cJSON *ent;
	char sha[41], *err = NULL;

	if (!cJSON_IsArray(tree)) {
		gh_error(r, 422,
			 "Invalid request.\n\n\"tree\" wasn't supplied.");
		return;
	}
	d = gh_dir_load(&repo->odb, base);
	if (!d) {
		gh_error(r, 422,
			 "GitRPC::BadObjectState: base_tree is not "
			 "a tree");
		return;
	}
	cJSON_ArrayForEach (ent, tree) {
		err = cJSON_IsObject(ent) ? tree_edit(repo, d, ent)
					  : gh_xstrdup("tree entries must be "
						       "objects");
		if (err)
			break;
	}
	if (err) {
		gh_error(r, 422, err);
		free(err);
		gh_dir_free(d);
		return;
	}
	gh_dir_write(d, &repo->odb, sha);
	gh_dir_free(d);
	tree_answer(rq, repo, sha, 0, 201, r);
}

/* ---- commits ----------------------------------------------------------- */

static cJSON *person_json(const struct gh_person *p)
{
	cJSON *o = cJSON_CreateObject();
	char when[32];

	cJSON_AddStringToObject(o, "name", p->name);
	cJSON_AddStringToObject(o, "email", p->email);
	gh_format_date(p->when, p->tz_minutes, when);
	cJSON_AddStringToObject(o, "date", when);
	return o;
}

static void commit_answer(const struct request *rq, struct gh_repo *repo,
			  const char *sha, int status, struct response *r)
{
	struct gh_commit c;
	cJSON *out, *t, *ps, *p, *v;
	char *html;
	size_t i;

	if (gh_commit_read(&repo->odb, sha, &c) < 0) {
		gh_not_found(r);
		return;
	}
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "sha", sha);
	add_url(out, rq, repo, "commits", sha);
	html = gh_xasprintf("https://github.com/%s/commit/%s", repo->full_name,
			    sha);
	cJSON_AddStringToObject(out, "html_url", html);
	free(html);
	cJSON_AddItemToObject(out, "author", person_json(&c.author));
	cJSON_AddItemToObject(out, "committer", person_json(&c.committer));
	cJSON_AddStringToObject(out, "message", c.message);
	t = cJSON_AddObjectToObject(out, "tree");
	cJSON_AddStringToObject(t, "sha", c.tree);
	add_url(t, rq, repo, "trees", c.tree);
	ps = cJSON_AddArrayToObject(out, "parents");
	for (i = 0; i < c.nparents; i++) {
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "sha", c.parents[i]);
		add_url(p, rq, repo, "commits", c.parents[i]);
		cJSON_AddItemToArray(ps, p);
	}
	v = cJSON_AddObjectToObject(out, "verification");
	cJSON_AddBoolToObject(v, "verified", 0);
	cJSON_AddStringToObject(v, "reason", "unsigned");
	cJSON_AddNullToObject(v, "signature");
	cJSON_AddNullToObject(v, "payload");
	gh_json(r, status, out);
	cJSON_Delete(out);
	gh_commit_free(&c);
}

/* An identity from the request, else the default: -1 when malformed. */
static int person_of(const cJSON *o, const struct gh_person *dflt,
		     struct gh_person *p)
{
	const char *date = gh_str(o, "date");

	*p = *dflt;
	if (!o)
		return 0;
	if (!cJSON_IsObject(o) || !gh_str(o, "name") || !gh_str(o, "email"))
		return -1;
	p->name = (char *)gh_str(o, "name");
	p->email = (char *)gh_str(o, "email");
	if (date && gh_parse_date(date, &p->when, &p->tz_minutes) < 0)
		return -1;
	return 0;
}

static void create_commit(const struct request *rq, const cJSON *json,
			  struct gh_repo *repo, struct response *r)
{
	const char *tree = gh_str(json, "tree"),
		   *msg = gh_str(json, "message");
	const cJSON *parents =
		cJSON_GetObjectItemCaseSensitive(json, "parents");
	const struct gh_obj *o;
	struct gh_person author, committer;
	const char **ps = NULL;
	size_t n = 0;
	const cJSON *p;
	char sha[41];

	if (!msg) {
		gh_invalid(r, "Commit", "message", "missing", NULL);
		return;
	}
	if (!tree) {
		gh_invalid(r, "Commit", "tree", "missing", NULL);
		return;
	}
	o = gh_odb_get(&repo->odb, tree);
	if (!o || o->type != GH_TREE) {
		gh_error(r, 422, "Tree SHA does not exist");
		return;
	}
	if (parents && !cJSON_IsArray(parents)) {
		gh_invalid(r, "Commit", "parents", "invalid", NULL);
		return;
	}
	ps = gh_xmalloc(sizeof(*ps) *
			((size_t)cJSON_GetArraySize(parents) + 1));
	cJSON_ArrayForEach (p, parents) {
		o = cJSON_IsString(p) ? gh_odb_get(&repo->odb, p->valuestring)
				      : NULL;
		if (!o || o->type != GH_COMMIT) {
			gh_error(r, 422,
				 "Parent SHA does not exist or is not "
				 "a commit object");
			free(ps);
			return;
		}
		ps[n++] = p->valuestring;
	}
	if (person_of(cJSON_GetObjectItemCaseSensitive(json, "author"),
		      &gh_default_person, &author) < 0 ||
	    person_of(cJSON_GetObjectItemCaseSensitive(json, "committer"),
		      &author, &committer) < 0) {
		gh_invalid(r, "Commit", "author", "invalid", NULL);
		free(ps);
		return;
	}
	gh_commit_write(&repo->odb, tree, ps, n, &author, &committer, msg,
			sha);
	free(ps);
	commit_answer(rq, repo, sha, 201, r);
}

/* ---- refs -------------------------------------------------------------- */

static cJSON *ref_json(const struct request *rq, const struct gh_repo *repo,
		       const struct gh_ref *ref)
{
	cJSON *o = cJSON_CreateObject(), *obj;
	const struct gh_obj *t = gh_odb_get(&repo->odb, ref->sha);
	char *base = gh_api_base(rq), *url;

	cJSON_AddStringToObject(o, "ref", ref->name);
	url = gh_xasprintf("%s/repos/%s/git/%s", base, repo->full_name,
			   ref->name);
	cJSON_AddStringToObject(o, "url", url);
	free(url);
	obj = cJSON_AddObjectToObject(o, "object");
	cJSON_AddStringToObject(obj, "sha", ref->sha);
	cJSON_AddStringToObject(obj, "type",
				t ? gh_otype_name(t->type) : "commit");
	add_url(obj, rq, repo, "commits", ref->sha);
	free(base);
	return o;
}

static void ref_answer(const struct request *rq, const struct gh_repo *repo,
		       const struct gh_ref *ref, int status,
		       struct response *r)
{
	cJSON *o = ref_json(rq, repo, ref);

	gh_json(r, status, o);
	cJSON_Delete(o);
}

/* GET git/ref/{ref}, git/refs/{ref} (one, or the refs it prefixes) and
 * git/matching-refs/{ref} */
static void get_refs(const struct request *rq, struct gh_repo *repo,
		     const char *ref, int exact, struct response *r)
{
	char *full = gh_xasprintf("refs/%s", ref);
	struct gh_ref *one = gh_ref_find(repo, full);
	size_t i, len = strlen(full);
	cJSON *arr;

	if (one && exact >= 0) {
		ref_answer(rq, repo, one, 200, r);
		free(full);
		return;
	}
	if (exact > 0) {
		gh_not_found(r);
		free(full);
		return;
	}
	arr = cJSON_CreateArray();
	for (i = 0; i < repo->nrefs; i++)
		if (!strncmp(repo->refs[i].name, full, len))
			cJSON_AddItemToArray(
				arr, ref_json(rq, repo, &repo->refs[i]));
	if (exact == 0 && !cJSON_GetArraySize(arr))
		gh_not_found(r);
	else
		gh_json(r, 200, arr);
	cJSON_Delete(arr);
	free(full);
}

static int is_commit(const struct gh_repo *repo, const char *sha)
{
	const struct gh_obj *o = gh_odb_get(&repo->odb, sha);

	return o && o->type == GH_COMMIT;
}

static void create_ref(const struct request *rq, const cJSON *json,
		       struct gh_repo *repo, struct response *r)
{
	const char *ref = gh_str(json, "ref"), *sha = gh_str(json, "sha");
	const char *slash = ref ? strchr(ref + (ref[0] ? 1 : 0), '/') : NULL;

	if (!ref || strncmp(ref, "refs/", 5) || !slash ||
	    !strchr(slash + 1, '/') || ref[strlen(ref) - 1] == '/') {
		gh_error(r, 422,
			 "Reference name must start with 'refs/' and "
			 "have at least two slashes.");
		return;
	}
	if (!sha || !is_commit(repo, sha)) {
		gh_error(r, 422, "Object does not exist");
		return;
	}
	if (gh_ref_find(repo, ref)) {
		gh_error(r, 422, "Reference already exists");
		return;
	}
	gh_ref_set(repo, ref, sha);
	ref_answer(rq, repo, gh_ref_find(repo, ref), 201, r);
}

static void update_ref(const struct request *rq, const cJSON *json,
		       struct gh_repo *repo, const char *name,
		       struct response *r)
{
	const char *sha = gh_str(json, "sha");
	char *full = gh_xasprintf("refs/%s", name);
	struct gh_ref *ref = gh_ref_find(repo, full);

	if (!ref) {
		gh_error(r, 422, "Reference does not exist");
	} else if (!sha || !is_commit(repo, sha)) {
		gh_error(r, 422, "Object does not exist");
	} else if (!cJSON_IsTrue(cJSON_GetObjectItem(json, "force")) &&
		   !gh_is_ancestor(&repo->odb, ref->sha, sha)) {
		gh_error(r, 422, "Update is not a fast forward");
	} else {
		memcpy(ref->sha, sha, 41);
		ref_answer(rq, repo, ref, 200, r);
	}
	free(full);
}

static void delete_ref(struct gh_repo *repo, const char *name,
		       struct response *r)
{
	char *full = gh_xasprintf("refs/%s", name);

	if (!gh_ref_find(repo, full)) {
		gh_error(r, 422, "Reference does not exist");
	} else {
		gh_ref_delete(repo, full);
		r->status = 204;
	}
	free(full);
}

int gh_routes_git(const struct request *rq, const cJSON *json,
		  struct response *r)
{
	const char *m = rq->method, *rest, *p;
	struct gh_repo *repo;
	int matched, get = !strcmp(m, "GET"), post = !strcmp(m, "POST");

	repo = gh_route_repo(rq, &rest, r, &matched);
	if (!matched || strncmp(rest, "/git/", 5))
		return 0;
	if (!repo)
		return 1;
	if (gh_repo_empty(repo)) {
		gh_error(r, 409, "Git Repository is empty.");
		return 1;
	}
	p = rest + 5;
	if (!strcmp(p, "blobs") && post)
		create_blob(rq, json, repo, r);
	else if (!strncmp(p, "blobs/", 6) && get)
		get_blob(rq, repo, p + 6, r);
	else if (!strcmp(p, "trees") && post)
		create_tree(rq, json, repo, r);
	else if (!strncmp(p, "trees/", 6) && get) {
		const struct gh_obj *o = gh_odb_get(&repo->odb, p + 6);
		char *rec = gh_query(rq, "recursive");

		if (o && o->type == GH_TREE)
			tree_answer(rq, repo, o->sha, rec != NULL, 200, r);
		else
			gh_not_found(r);
		free(rec);
	} else if (!strcmp(p, "commits") && post)
		create_commit(rq, json, repo, r);
	else if (!strncmp(p, "commits/", 8) && get)
		commit_answer(rq, repo, p + 8, 200, r);
	else if (!strncmp(p, "ref/", 4) && get)
		get_refs(rq, repo, p + 4, 1, r);
	else if (!strncmp(p, "refs/", 5) && get)
		get_refs(rq, repo, p + 5, 0, r);
	else if (!strcmp(p, "refs") && get)
		get_refs(rq, repo, "", -1, r);
	else if (!strncmp(p, "matching-refs/", 14) && get)
		get_refs(rq, repo, p + 14, -1, r);
	else if (!strcmp(p, "refs") && post)
		create_ref(rq, json, repo, r);
	else if (!strncmp(p, "refs/", 5) && !strcmp(m, "PATCH"))
		update_ref(rq, json, repo, p + 5, r);
	else if (!strncmp(p, "refs/", 5) && !strcmp(m, "DELETE"))
		delete_ref(repo, p + 5, r);
	else
		gh_not_found(r);
	return 1;
}

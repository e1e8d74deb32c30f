/*
 * Delivery of a completed run as one commit on branch sbxloop/RUN and a
 * pull request (UPSTREAM.md 10.4-10.6), through the git data API in as
 * few github.op jobs as the repository's state allows: a probe batch
 * (repository, the run's branch, its open pull request, the base
 * branch), the base branch's bootstrap on an empty repository, blob
 * uploads only for files a tree entry cannot carry inline (binary or
 * large, in jobs of at most 4 MiB of base64), and one batch that makes
 * the tree, the commit, moves the branch and opens the pull request. A
 * delivery failure is evented and never changes the run.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sbxloop/events.h>

#include "github.h"
#include "common/base64.h"

#define BLOB_BATCH_MAX (4u << 20) /* base64 bytes per blobs job */
#define PR_LINES_MAX 50
#define TITLE_CLIP 72

struct target {
	char base[256];    /* the base branch */
	char base_sha[64]; /* its tip, "" when missing */
	int branch_exists; /* sbxloop/RUN exists already */
	long long pr;      /* its open pull request, 0 if none */
	char *pr_url;
	char branch[128];
	char owner[128];
};

static void fail_event(struct gh *g, const char *msg)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "repo", g->repo);
	cJSON_AddStringToObject(d, "error", msg);
	gh_emit(g, SBXLOOP_EV_RUN_DELIVER, d);
	g->host->log(g->host, SBXLOOP_LOG_WARN, "github: delivery failed: %s",
		     msg);
}

static const char *str_at(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static cJSON *ref_get(struct gh *g, const char *ref)
{
	cJSON *p = gh_params(g);
	char r[300];

	snprintf(r, sizeof(r), "heads/%s", ref);
	cJSON_AddStringToObject(p, "ref", r);
	cJSON_AddBoolToObject(p, "allow_missing", 1);
	return gh_batch_item("ref.get", p);
}

/*
 * Job 1: the run's branch, its open pull request and the base branch's
 * tip; the repository itself only when run_start did not see it (the
 * base is then its default branch, asked in a second job).
 */
static int probe(struct gh *g, struct target *t, char *why, size_t n)
{
	const char *want =
		g->host->config_string(g->host, "github.deliver_base");
	cJSON *ops = cJSON_CreateArray(), *res = NULL, *p, *it;
	struct gh_err e;
	int rc, i = 0, i_repo = -1, i_base = -1;

	if (want && *want)
		snprintf(t->base, sizeof(t->base), "%s", want);
	else if (g->default_branch)
		snprintf(t->base, sizeof(t->base), "%s", g->default_branch);
	cJSON_AddItemToArray(ops, ref_get(g, t->branch));
	p = gh_params(g);
	cJSON_AddStringToObject(p, "head", t->branch);
	cJSON_AddStringToObject(p, "state", "open");
	cJSON_AddItemToArray(ops, gh_batch_item("pr.list", p));
	i = 2;
	if (*t->base) {
		cJSON_AddItemToArray(ops, ref_get(g, t->base));
		i_base = i++;
	} else {
		cJSON_AddItemToArray(ops,
				     gh_batch_item("repo.get", gh_params(g)));
		i_repo = i++;
	}
	rc = gh_batch(g, ops, GH_JOB_TIMEOUT_S, &res, &e);
	cJSON_Delete(ops);
	if (rc < 0) {
		snprintf(why, n, "%s", e.message);
		return rc;
	}
	t->branch_exists = !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(res, 0), "missing"));
	cJSON_ArrayForEach (it, cJSON_GetObjectItemCaseSensitive(
					cJSON_GetArrayItem(res, 1), "items")) {
		t->pr = gh_num(cJSON_GetObjectItemCaseSensitive(it, "number"));
		t->pr_url =
			str_at(it, "url") ? strdup(str_at(it, "url")) : NULL;
		break;
	}
	if (i_base >= 0) {
		const char *sha =
			str_at(cJSON_GetArrayItem(res, i_base), "sha");

		snprintf(t->base_sha, sizeof(t->base_sha), "%s",
			 sha ? sha : "");
	} else {
		const char *b = str_at(cJSON_GetArrayItem(res, i_repo),
				       "default_branch");

		snprintf(t->base, sizeof(t->base), "%s", b ? b : "main");
		t->base_sha[0] = '\1'; /* not asked yet */
	}
	cJSON_Delete(res);
	return 0;
}

static int base_ref(struct gh *g, struct target *t, char *why, size_t n)
{
	cJSON *ops = cJSON_CreateArray(), *res = NULL;
	struct gh_err e;
	const char *sha;
	int rc;

	cJSON_AddItemToArray(ops, ref_get(g, t->base));
	rc = gh_batch(g, ops, GH_JOB_TIMEOUT_S, &res, &e);
	cJSON_Delete(ops);
	if (rc < 0) {
		snprintf(why, n, "%s", e.message);
		return rc;
	}
	sha = str_at(cJSON_GetArrayItem(res, 0), "sha");
	snprintf(t->base_sha, sizeof(t->base_sha), "%s", sha ? sha : "");
	cJSON_Delete(res);
	return 0;
}

/* An empty repository (or a missing base): its first commit. */
static int bootstrap(struct gh *g, struct target *t, char *why, size_t n)
{
	const char *name = strchr(g->repo, '/') + 1;
	char msg[1024], readme[512], *b64;
	cJSON *p = gh_params(g), *out = NULL;
	struct gh_err e;
	int rc;

	snprintf(msg, sizeof(msg),
		 "sbxloop run %s: initialize repository\n\nOutcome: %.900s",
		 g->run_id, g->outcome);
	snprintf(readme, sizeof(readme),
		 "# %s\n\nInitialized by sbxloop run %s.\n", name, g->run_id);
	b64 = sl_b64_encode((const unsigned char *)readme, strlen(readme), 0);
	cJSON_AddStringToObject(p, "path", "README.md");
	cJSON_AddStringToObject(p, "message", msg);
	cJSON_AddStringToObject(p, "content_b64", b64 ? b64 : "");
	cJSON_AddStringToObject(p, "branch", t->base);
	free(b64);
	rc = gh_op(g, "contents.put", p, &out, &e);
	cJSON_Delete(p);
	cJSON_Delete(out);
	if (rc < 0) {
		snprintf(why, n, "cannot initialize the empty repository: %s",
			 e.message);
		return rc;
	}
	rc = base_ref(g, t, why, n);
	if (rc == 0 && !*t->base_sha) {
		snprintf(why, n,
			 "branch %s is still missing after initializing the "
			 "repository",
			 t->base);
		rc = SBXLOOP_ERR;
	}
	return rc;
}

/* Upload the files a tree entry cannot carry inline. */
static int upload_blobs(struct gh *g, struct gh_plan *plan, char *why,
			size_t n)
{
	size_t i = 0, done = 0;

	while (i < plan->n) {
		cJSON *p = gh_params(g), *files, *out = NULL, *it;
		size_t start = i, bytes = 0, k;
		struct gh_err e;
		int rc;

		files = cJSON_AddArrayToObject(p, "files");
		for (; i < plan->n; i++) {
			struct gh_file *f = &plan->files[i];
			cJSON *o;
			char *b64;
			size_t len = (f->len + 2) / 3 * 4;

			if (f->deleted || f->text)
				continue;
			if (bytes && bytes + len > BLOB_BATCH_MAX)
				break;
			b64 = sl_b64_encode(f->data, f->len, 0);
			if (!b64) {
				cJSON_Delete(p);
				snprintf(why, n, "out of memory");
				return SBXLOOP_ENOMEM;
			}
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", f->path);
			cJSON_AddStringToObject(o, "content_b64", b64);
			free(b64);
			cJSON_AddItemToArray(files, o);
			bytes += len;
		}
		if (cJSON_GetArraySize(files) == 0) {
			cJSON_Delete(p);
			break;
		}
		rc = gh_op(g, "blobs.create_many", p, &out, &e);
		cJSON_Delete(p);
		if (rc < 0) {
			snprintf(why, n, "%s", e.message);
			return rc;
		}
		k = start;
		cJSON_ArrayForEach (
			it, cJSON_GetObjectItemCaseSensitive(out, "blobs")) {
			const char *sha = str_at(it, "sha");

			while (k < i &&
			       (plan->files[k].deleted || plan->files[k].text))
				k++;
			if (k >= i || !sha)
				break;
			snprintf(plan->files[k].sha,
				 sizeof(plan->files[k].sha), "%s", sha);
			k++;
			done++;
		}
		cJSON_Delete(out);
		for (k = start; k < i; k++)
			if (!plan->files[k].deleted && !plan->files[k].text &&
			    !plan->files[k].sha[0]) {
				snprintf(why, n,
					 "the upload of %s returned no blob "
					 "sha",
					 plan->files[k].path);
				return SBXLOOP_ERR;
			}
	}
	(void)done;
	return 0;
}

static cJSON *tree_entries(const struct gh_plan *plan)
{
	cJSON *tree = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < plan->n; i++) {
		const struct gh_file *f = &plan->files[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToObject(o, "path", gh_text(f->path));
		cJSON_AddStringToObject(o, "mode", f->mode);
		cJSON_AddStringToObject(o, "type", "blob");
		if (f->deleted)
			cJSON_AddNullToObject(o, "sha");
		else if (f->text)
			cJSON_AddItemToObject(o, "content",
					      gh_text((const char *)f->data));
		else
			cJSON_AddStringToObject(o, "sha", f->sha);
		cJSON_AddItemToArray(tree, o);
	}
	return tree;
}

/* The final batch: tree, commit, branch and pull request. */
static int commit_batch(struct gh *g, const struct gh_plan *plan,
			struct target *t, int force_move, int make_pr,
			const char *title, const char *body, cJSON **res,
			struct gh_err *e)
{
	cJSON *ops = cJSON_CreateArray(), *p;
	char msg[1200], ref[200];
	int rc;

	p = gh_params(g);
	cJSON_AddStringToObject(p, "sha", t->base_sha);
	cJSON_AddItemToArray(ops, gh_batch_item("commit.get", p));
	p = gh_params(g);
	cJSON_AddStringToObject(p, "base_tree", "${0.tree}");
	cJSON_AddItemToObject(p, "tree", tree_entries(plan));
	cJSON_AddItemToArray(ops, gh_batch_item("tree.create", p));
	p = gh_params(g);
	snprintf(msg, sizeof(msg),
		 "sbxloop run %s: deliver artifacts\n\nOutcome: %.1000s",
		 g->run_id, g->outcome);
	cJSON_AddItemToObject(p, "message", gh_text(msg));
	cJSON_AddStringToObject(p, "tree", "${1.sha}");
	cJSON_AddItemToObject(
		p, "parents",
		cJSON_CreateStringArray((const char *[]){t->base_sha}, 1));
	cJSON_AddItemToArray(ops, gh_batch_item("commit.create", p));
	p = gh_params(g);
	snprintf(ref, sizeof(ref), "%sheads/%s", force_move ? "" : "refs/",
		 t->branch);
	cJSON_AddStringToObject(p, "ref", ref);
	cJSON_AddStringToObject(p, "sha", "${2.sha}");
	if (force_move)
		cJSON_AddBoolToObject(p, "force", 1);
	cJSON_AddItemToArray(
		ops,
		gh_batch_item(force_move ? "ref.update" : "ref.create", p));
	if (make_pr) {
		p = gh_params(g);
		cJSON_AddItemToObject(p, "title", gh_text(title));
		cJSON_AddItemToObject(p, "body", gh_text(body));
		cJSON_AddStringToObject(p, "head", t->branch);
		cJSON_AddStringToObject(p, "base", t->base);
		cJSON_AddBoolToObject(
			p, "draft",
			g->host->config_bool(g->host, "github.deliver_draft",
					     0));
		cJSON_AddItemToArray(ops, gh_batch_item("pr.create", p));
	}
	rc = gh_batch(g, ops, GH_JOB_TIMEOUT_S + 30, res, e);
	cJSON_Delete(ops);
	return rc;
}

/*
 * Drop the deletions of paths the remote base does not have: GitHub
 * refuses to delete a file that does not exist, and a checkout's base
 * may differ from the remote's (a local commit, an unrelated history).
 * Two jobs, on this rare path only: the base commit's tree, then the
 * tree's paths. 1 when something was dropped.
 */
static int prune_deletions(struct gh *g, struct target *t,
			   struct gh_plan *plan, char *why, size_t n)
{
	cJSON *p = gh_params(g), *commit = NULL, *tree = NULL, *it;
	struct gh_err e;
	char path[512];
	size_t i, kept = 0, dropped = 0;
	const char *tree_sha;
	int rc;

	cJSON_AddStringToObject(p, "sha", t->base_sha);
	rc = gh_op(g, "commit.get", p, &commit, &e);
	cJSON_Delete(p);
	tree_sha = rc == 0 ? str_at(commit, "tree") : NULL;
	if (tree_sha) {
		snprintf(path, sizeof(path),
			 "/repos/%s/git/trees/%s?recursive=1", g->repo,
			 tree_sha);
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "method", "GET");
		cJSON_AddStringToObject(p, "path", path);
		rc = gh_op(g, "raw.api", p, &tree, &e);
		cJSON_Delete(p);
	}
	cJSON_Delete(commit);
	if (rc < 0 || !tree_sha) {
		snprintf(why, n, "%s", rc < 0 ? e.message : "no base tree");
		cJSON_Delete(tree);
		return -1;
	}
	for (i = 0; i < plan->n; i++) {
		struct gh_file *f = &plan->files[i];
		int present = 0;

		if (f->deleted) {
			cJSON_ArrayForEach (
				it, cJSON_GetObjectItemCaseSensitive(tree,
								     "tree")) {
				const char *q = str_at(it, "path");

				if (q && !strcmp(q, f->path)) {
					present = 1;
					break;
				}
			}
		}
		if (f->deleted && !present) {
			free(f->path);
			free(f->data);
			plan->n_deleted--;
			dropped++;
			continue;
		}
		plan->files[kept++] = *f;
	}
	plan->n = kept;
	cJSON_Delete(tree);
	return dropped ? 1 : 0;
}

/* The open pull request of the run's branch, after "already exists". */
static int find_pr(struct gh *g, struct target *t)
{
	cJSON *p = gh_params(g), *out = NULL, *it;
	struct gh_err e;

	cJSON_AddStringToObject(p, "head", t->branch);
	cJSON_AddStringToObject(p, "state", "open");
	if (gh_op(g, "pr.list", p, &out, &e) == 0)
		cJSON_ArrayForEach (
			it, cJSON_GetObjectItemCaseSensitive(out, "items")) {
			t->pr = gh_num(cJSON_GetObjectItemCaseSensitive(
				it, "number"));
			free(t->pr_url);
			t->pr_url = str_at(it, "url")
					    ? strdup(str_at(it, "url"))
					    : NULL;
			break;
		}
	cJSON_Delete(p);
	cJSON_Delete(out);
	return t->pr ? 0 : SBXLOOP_ERR;
}

static void clip_title(const char *outcome, char *out, size_t cap)
{
	char flat[256];
	size_t i, n = 0, chars = 0, cut = 0;

	for (i = 0; outcome[i] && n + 1 < sizeof(flat); i++)
		flat[n++] = outcome[i] == '\n' ? ' ' : outcome[i];
	flat[n] = '\0';
	snprintf(out, cap, "sbxloop: %s", flat);
	/* count UTF-8 characters; clip to TITLE_CLIP with an ellipsis */
	for (i = 0; out[i]; i++)
		if (((unsigned char)out[i] & 0xc0) != 0x80) {
			if (++chars == TITLE_CLIP)
				cut = i;
		}
	if (chars > TITLE_CLIP && cut + 4 <= cap)
		memcpy(out + cut, "\xe2\x80\xa6", 4);
}

int gh_deliver(struct gh *g, const struct sbxloop_run_info *run,
	       struct sbxloop_delivery *outd, int dry_run,
	       struct sbxloop_error *err)
{
	const struct sbxloop_host *h = g->host;
	const char *src = run->mounted || !run->artifacts_dir
				  ? run->workspace
				  : run->artifacts_dir;
	struct target t;
	struct gh_plan plan;
	struct stat st;
	struct gh_err e;
	char why[2048] = "", title[400], *body = NULL;
	cJSON *res = NULL, *d;
	int rc, make_pr;

	memset(&t, 0, sizeof(t));
	memset(&plan, 0, sizeof(plan));
	snprintf(t.branch, sizeof(t.branch), "sbxloop/%s", g->run_id);
	if (!src || stat(src, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fail_event(g, "no artifacts directory");
		return h->error_set(h, err, SBXLOOP_ENOTFOUND,
				    "nothing to deliver: the run's %s is "
				    "gone",
				    src ? src : "workspace");
	}
	if (dry_run) {
		rc = gh_plan_build(g, src, NULL, &plan, why, sizeof(why));
		if (rc == 0)
			gh_plan_print(g, &plan, stdout);
		gh_plan_release(&plan);
		return rc < 0 ? h->error_set(h, err, SBXLOOP_EINVAL, "%s", why)
			      : 0;
	}
	rc = probe(g, &t, why, sizeof(why));
	if (rc == 0 && t.base_sha[0] == '\1')
		rc = base_ref(g, &t, why, sizeof(why));
	if (rc == 0 && !*t.base_sha)
		rc = bootstrap(g, &t, why, sizeof(why));
	if (rc == 0)
		rc = gh_plan_build(g, src, t.base_sha, &plan, why,
				   sizeof(why));
	if (rc == 0)
		rc = upload_blobs(g, &plan, why, sizeof(why));
	if (rc < 0)
		goto fail;
	clip_title(g->outcome, title, sizeof(title));
	body = gh_pr_body(g, run, &plan);
	make_pr = !t.pr;
	rc = commit_batch(g, &plan, &t, t.branch_exists, make_pr, title, body,
			  &res, &e);
	if (rc < 0 && e.http_status == 422 && plan.n_deleted &&
	    strstr(e.message, "tree.create") &&
	    prune_deletions(g, &t, &plan, why, sizeof(why)) > 0) {
		/* deletions the remote never had: without them */
		cJSON_Delete(res);
		res = NULL;
		free(body);
		body = gh_pr_body(g, run, &plan);
		rc = commit_batch(g, &plan, &t, t.branch_exists, make_pr,
				  title, body, &res, &e);
	}
	if (rc < 0 && e.http_status == 422 && !t.branch_exists &&
	    strstr(e.message, "ref.create")) {
		/* made meanwhile: move it */
		rc = commit_batch(g, &plan, &t, 1, make_pr, title, body, &res,
				  &e);
	}
	if (rc < 0 && e.http_status == 422 && make_pr &&
	    strstr(e.message, "pr.create") &&
	    strstr(e.message, "already exists"))
		rc = find_pr(g, &t);
	else if (rc < 0)
		snprintf(why, sizeof(why), "%s", e.message);
	else if (make_pr) {
		const cJSON *pr = cJSON_GetArrayItem(res, 4);

		t.pr = gh_num(cJSON_GetObjectItemCaseSensitive(pr, "number"));
		free(t.pr_url);
		t.pr_url =
			str_at(pr, "url") ? strdup(str_at(pr, "url")) : NULL;
	}
	cJSON_Delete(res);
	if (rc < 0)
		goto fail;
	g->pr = t.pr;
	free(g->pr_url);
	g->pr_url = t.pr_url ? strdup(t.pr_url) : NULL;
	outd->number = t.pr;
	snprintf(outd->url, sizeof(outd->url), "%s", t.pr_url ? t.pr_url : "");
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "repo", g->repo);
	cJSON_AddNumberToObject(d, "pr", (double)t.pr);
	cJSON_AddStringToObject(d, "url", t.pr_url ? t.pr_url : "");
	cJSON_AddStringToObject(d, "branch", t.branch);
	cJSON_AddNumberToObject(d, "files", (double)(plan.n - plan.n_deleted));
	cJSON_AddNumberToObject(d, "deleted", (double)plan.n_deleted);
	cJSON_AddNumberToObject(d, "excluded", (double)plan.n_excluded);
	cJSON_AddBoolToObject(d, "reused", !make_pr);
	gh_emit(g, SBXLOOP_EV_RUN_DELIVER, d);
	gh_plan_release(&plan);
	free(body);
	free(t.pr_url);
	return 0;
fail:
	fail_event(g, why);
	gh_plan_release(&plan);
	free(body);
	free(t.pr_url);
	return h->error_set(h, err, SBXLOOP_ERR, "delivery to %s failed: %s",
			    g->repo, why);
}

/*
 * The github.op job kind as a specification: the real sbxloop-worker
 * against the fake GitHub server (tests/fakes/github-server) over
 * loopback HTTP, and once through its TLS front (socat, openssl) with a
 * throwaway CA. Each test starts its own fake with o/r (one commit on
 * main) and o/e (empty); the token, long and random, reaches the worker
 * only through its env file, as in a github sandbox.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "github-support.h"
#include "testutil.h"
#include "worker-support.h"

static struct gh_fake fake;
static char token[64];
/* the fakes' temp dirs live under one root the runner removes */
static char *tmp_root, *tmp_saved;

static void suite_up(void)
{
	const char *t = getenv("TMPDIR");

	tmp_saved = t ? strdup(t) : NULL;
	tmp_root = tu_tmpdir();
	setenv("TMPDIR", tmp_root, 1);
}

static void suite_down(void)
{
	if (tmp_saved)
		setenv("TMPDIR", tmp_saved, 1);
	else
		unsetenv("TMPDIR");
	tu_rmtree(tmp_root);
	free(tmp_root);
	free(tmp_saved);
	tmp_root = tmp_saved = NULL;
}

/* The token as a sandbox gets it: a line of the worker's env file. */
static void give_token(const char *t)
{
	mkdir(path_in(".sbxloop"), 0700);
	put(".sbxloop/env.sh", "export GH_TOKEN='%s'\n", t);
}

static void gh_setup(void)
{
	static const char *const repos[] = {"o/r", "o/e:empty", NULL};
	unsigned char raw[20];
	int fd = open("/dev/urandom", O_RDONLY);
	size_t i;

	setup();
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, raw, sizeof(raw)), (ssize_t)sizeof(raw));
	close(fd);
	strcpy(token, "ghp_");
	for (i = 0; i < sizeof(raw); i++)
		snprintf(token + 4 + 2 * i, 3, "%02x", raw[i]);
	ck_assert_msg(gh_fake_start(&fake, token, repos) == 0,
		      "cannot start github-server");
	give_token(token);
}

static void gh_teardown(void)
{
	gh_fake_stop(&fake);
	ck_assert_msg(fake.exit_status == 0, "github-server exited with %d",
		      fake.exit_status);
	teardown();
}

/*
 * Run `op` with `params` (JSON text; the fake's api_url added unless it
 * names one) and `extra` job keys (",\"timeout_s\":2" or "").
 */
static void gh_run(struct run *r, const char *op, const char *extra,
		   const char *params_fmt, ...)
{
	va_list ap;
	char *text = NULL, *job;
	cJSON *p;

	va_start(ap, params_fmt);
	ck_assert_int_ge(vasprintf(&text, params_fmt, ap), 0);
	va_end(ap);
	p = cJSON_Parse(text);
	ck_assert_msg(p != NULL, "bad params in the test: %s", text);
	free(text);
	if (!cJSON_HasObjectItem(p, "api_url"))
		cJSON_AddStringToObject(p, "api_url", fake.url);
	text = cJSON_PrintUnformatted(p);
	ck_assert_int_ge(asprintf(&job,
				  JOB_HEAD
				  "\"kind\":\"github.op\",\"op\":\"%s\","
				  "\"params\":%s%s}",
				  op, text, extra),
			 0);
	run_worker(r, job, NULL);
	ck_assert_msg(r->rc == 0, "%s: exit %d: %s", op, r->rc, r->err);
	ck_assert_ptr_nonnull(r->result);
	free(job);
	free(text);
	cJSON_Delete(p);
}

static const cJSON *out(const struct run *r)
{
	return cJSON_GetObjectItem(r->result, "output_json");
}

static void must_be_ok(const struct run *r, const char *what)
{
	ck_assert_msg(!strcmp(rstr(r, "status"), "ok"), "%s: %s: %s", what,
		      errfield(r, "type"), errfield(r, "message"));
	ck_assert_int_eq(count_events(r, "worker.error", NULL), 0);
}

static const char *ostr(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(out(r), key);

	ck_assert_msg(cJSON_IsString(v), "output_json has no string '%s'",
		      key);
	return v->valuestring;
}

static double onum(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(out(r), key);

	ck_assert_msg(cJSON_IsNumber(v), "output_json has no number '%s'",
		      key);
	return v->valuedouble;
}

static double usage(const struct run *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(
		cJSON_GetObjectItem(r->result, "usage"), key);

	ck_assert_msg(cJSON_IsNumber(v), "usage has no '%s'", key);
	return v->valuedouble;
}

static int http_status(const struct run *r)
{
	const cJSON *v = cJSON_GetObjectItem(
		cJSON_GetObjectItem(r->result, "error"), "http_status");

	return cJSON_IsNumber(v) ? v->valueint : 0;
}

static void must_fail(const struct run *r, const char *type, int status,
		      const char *needle)
{
	const char *msg = errfield(r, "message");
	const cJSON *d;

	ck_assert_str_eq(rstr(r, "status"), "error");
	ck_assert_msg(!strcmp(errfield(r, "type"), type), "%s: %s",
		      errfield(r, "type"), msg);
	ck_assert_int_eq(http_status(r), status);
	ck_assert_msg(strstr(msg, needle), "'%s' not in: %s", needle, msg);
	ck_assert_int_eq(count_events(r, "worker.error", &d), 1);
	ck_assert_str_eq(dstr(d, "error_type"), type);
}

/* The fake's state of repo `full` (a member of *state, which the caller
 * frees). */
static const cJSON *repo_state(cJSON **state, const char *full)
{
	const cJSON *repo;

	*state = gh_fake_state(&fake);
	ck_assert_ptr_nonnull(*state);
	repo = cJSON_GetObjectItem(cJSON_GetObjectItem(*state, "repos"), full);
	ck_assert_msg(repo != NULL, "the fake has no repository %s", full);
	return repo;
}

/* content_b64 of `path` on branch `ref` in a repo_state, or NULL */
static const char *file_b64(const cJSON *repo, const char *ref,
			    const char *path)
{
	const cJSON *f = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(repo, "files"), ref),
		path);

	return cJSON_GetStringValue(cJSON_GetObjectItem(f, "content_b64"));
}

/* data of the n-th event of `type` (0-based), or NULL */
static const cJSON *nth_event(const struct run *r, const char *type, int n)
{
	const cJSON *ev;

	cJSON_ArrayForEach (ev, r->events_list) {
		const char *t =
			cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));

		if (t && !strcmp(t, type) && n-- == 0)
			return cJSON_GetObjectItem(ev, "data");
	}
	return NULL;
}

static double dnum(const cJSON *data, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(data, key);

	ck_assert_msg(cJSON_IsNumber(v), "event has no number '%s'", key);
	return v->valuedouble;
}

/* ------------------------------------------------------------ the ops */

START_TEST(test_user_and_repo_ops_return_githubs_objects)
{
	struct run r;
	cJSON *st;
	const cJSON *repo;

	gh_run(&r, "user.get", "", "{}");
	must_be_ok(&r, "user.get");
	ck_assert_str_eq(ostr(&r, "login"), "octo");
	ck_assert_int_eq((int)usage(&r, "http_requests"), 1);
	ck_assert_int_eq((int)usage(&r, "connections"), 1);
	ck_assert_int_eq(count_events(&r, "gh.op_start", NULL), 1);
	ck_assert_int_eq(count_events(&r, "gh.op_end", NULL), 1);
	run_free(&r);

	gh_run(&r, "repo.get", "", "{\"repo\":\"o/r\"}");
	must_be_ok(&r, "repo.get");
	ck_assert_str_eq(ostr(&r, "full_name"), "o/r");
	run_free(&r);

	/* private unless asked otherwise */
	gh_run(&r, "repo.create", "", "{\"name\":\"made\"}");
	must_be_ok(&r, "repo.create");
	ck_assert_str_eq(ostr(&r, "full_name"), "octo/made");
	run_free(&r);
	gh_run(&r, "repo.create", "",
	       "{\"name\":\"pub\",\"owner\":\"acme\",\"private\":false,"
	       "\"description\":\"a public one\"}");
	must_be_ok(&r, "repo.create in an org");
	ck_assert_str_eq(ostr(&r, "full_name"), "acme/pub");
	run_free(&r);
	repo = repo_state(&st, "octo/made");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(repo, "private")));
	repo = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "repos"),
				   "acme/pub");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(repo, "private")));
	cJSON_Delete(st);
}
END_TEST

START_TEST(test_issue_ops_create_comment_update_and_search)
{
	struct run r;
	cJSON *st;
	const cJSON *issue, *items;
	int n;

	gh_run(&r, "issue.create", "",
	       "{\"repo\":\"o/r\",\"title\":\"sbxloop run r1\",\"body\":\"b\","
	       "\"labels\":[\"sbxloop\"]}");
	must_be_ok(&r, "issue.create");
	n = (int)onum(&r, "number");
	ck_assert_ptr_nonnull(strstr(ostr(&r, "url"), "/o/r/issues/"));
	ck_assert_ptr_nonnull(
		strstr(ostr(&r, "api_url"), "/repos/o/r/issues/"));
	run_free(&r);

	gh_run(&r, "issue.comment", "",
	       "{\"repo\":\"o/r\",\"number\":%d,\"body\":\"task t1 done\"}",
	       n);
	must_be_ok(&r, "issue.comment");
	ck_assert(onum(&r, "id") > 0);
	ck_assert_ptr_nonnull(ostr(&r, "url"));
	run_free(&r);

	/* a number may also come as a string of digits */
	gh_run(&r, "issue.update", "",
	       "{\"repo\":\"o/r\",\"number\":\"%d\",\"state\":\"closed\","
	       "\"state_reason\":\"completed\"}",
	       n);
	must_be_ok(&r, "issue.update");
	ck_assert_str_eq(ostr(&r, "state"), "closed");
	ck_assert_int_eq((int)onum(&r, "number"), n);
	run_free(&r);

	gh_run(&r, "search.issues", "",
	       "{\"query\":\"repo:o/r \\\"sbxloop run r1\\\" in:title\","
	       "\"per_page\":5}");
	must_be_ok(&r, "search.issues");
	ck_assert_int_eq((int)onum(&r, "total_count"), 1);
	items = cJSON_GetObjectItem(out(&r), "items");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
				 cJSON_GetArrayItem(items, 0), "title")),
			 "sbxloop run r1");
	run_free(&r);

	issue = cJSON_GetArrayItem(
		cJSON_GetObjectItem(repo_state(&st, "o/r"), "issues"), 0);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(issue, "state")),
		"closed");
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(issue, "comments")), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(
				 cJSON_GetObjectItem(issue, "labels"), 0)),
			 "sbxloop");
	cJSON_Delete(st);
}
END_TEST

static char *dup_ostr(const struct run *r, const char *key)
{
	return strdup(ostr(r, key));
}

START_TEST(test_git_data_ops_build_a_branch_and_a_pull_request)
{
	struct run r;
	char *base, *base_tree, *blob0, *tree, *commit, files[2048];
	const cJSON *d, *item, *f, *repo;
	cJSON *st;
	size_t n = 0;
	int i, pr;

	gh_run(&r, "ref.get", "", "{\"repo\":\"o/r\",\"ref\":\"heads/main\"}");
	must_be_ok(&r, "ref.get");
	ck_assert_str_eq(ostr(&r, "ref"), "refs/heads/main");
	base = dup_ostr(&r, "sha");
	run_free(&r);

	gh_run(&r, "commit.get", "", "{\"repo\":\"o/r\",\"sha\":\"%s\"}",
	       base);
	must_be_ok(&r, "commit.get");
	ck_assert_str_eq(ostr(&r, "sha"), base);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(out(&r), "parents")),
		0);
	ck_assert_ptr_nonnull(ostr(&r, "message"));
	base_tree = dup_ostr(&r, "tree");
	run_free(&r);

	/* 12 files: progress after 10 and at the end */
	n += (size_t)snprintf(files + n, sizeof(files) - n, "[");
	for (i = 0; i < 12; i++)
		n += (size_t)snprintf(files + n, sizeof(files) - n,
				      "%s{\"path\":\"dir/f%d.txt\","
				      "\"content_b64\":\"ZmlsZSAl\"}",
				      i ? "," : "", i);
	snprintf(files + n, sizeof(files) - n, "]");
	gh_run(&r, "blobs.create_many", "", "{\"repo\":\"o/r\",\"files\":%s}",
	       files);
	must_be_ok(&r, "blobs.create_many");
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(out(&r), "blobs")), 12);
	item = cJSON_GetArrayItem(cJSON_GetObjectItem(out(&r), "blobs"), 0);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(item, "path")),
		"dir/f0.txt");
	blob0 = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(item, "sha")));
	ck_assert_int_eq(count_events(&r, "gh.op_progress", NULL), 2);
	d = nth_event(&r, "gh.op_progress", 0);
	ck_assert_int_eq((int)dnum(d, "done"), 10);
	ck_assert_int_eq((int)dnum(d, "total"), 12);
	ck_assert_str_eq(dstr(d, "op"), "blobs.create_many");
	ck_assert_int_eq((int)dnum(nth_event(&r, "gh.op_progress", 1), "done"),
			 12);
	ck_assert_int_eq((int)usage(&r, "http_requests"), 12);
	ck_assert_int_eq((int)usage(&r, "connections"), 1);
	run_free(&r);

	gh_run(&r, "tree.create", "",
	       "{\"repo\":\"o/r\",\"base_tree\":\"%s\",\"tree\":["
	       "{\"path\":\"dir/f0.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	       "\"sha\":\"%s\"},"
	       "{\"path\":\"new.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	       "\"content\":\"hello\\n\"}]}",
	       base_tree, blob0);
	must_be_ok(&r, "tree.create");
	tree = dup_ostr(&r, "sha");
	run_free(&r);

	gh_run(&r, "commit.create", "",
	       "{\"repo\":\"o/r\",\"message\":\"deliver\",\"tree\":\"%s\","
	       "\"parents\":[\"%s\"],\"author\":{\"name\":\"sbxloop\","
	       "\"email\":\"sbxloop@example.com\"}}",
	       tree, base);
	must_be_ok(&r, "commit.create");
	commit = dup_ostr(&r, "sha");
	run_free(&r);

	gh_run(&r, "ref.create", "",
	       "{\"repo\":\"o/r\",\"ref\":\"refs/heads/sbxloop/run-1\","
	       "\"sha\":\"%s\"}",
	       commit);
	must_be_ok(&r, "ref.create");
	ck_assert_str_eq(ostr(&r, "ref"), "refs/heads/sbxloop/run-1");
	ck_assert_str_eq(ostr(&r, "sha"), commit);
	run_free(&r);

	/* a ref keeps its slashes in the path */
	gh_run(&r, "ref.get", "",
	       "{\"repo\":\"o/r\",\"ref\":\"heads/sbxloop/run-1\"}");
	must_be_ok(&r, "ref.get of a branch with a slash");
	ck_assert_str_eq(ostr(&r, "sha"), commit);
	run_free(&r);

	gh_run(&r, "ref.update", "",
	       "{\"repo\":\"o/r\",\"ref\":\"heads/sbxloop/run-1\","
	       "\"sha\":\"%s\",\"force\":true}",
	       base);
	must_be_ok(&r, "ref.update with force");
	ck_assert_str_eq(ostr(&r, "sha"), base);
	run_free(&r);
	gh_run(&r, "ref.update", "",
	       "{\"repo\":\"o/r\",\"ref\":\"refs/heads/sbxloop/run-1\","
	       "\"sha\":\"%s\"}",
	       commit);
	must_be_ok(&r, "ref.update fast-forward");
	run_free(&r);

	gh_run(&r, "pr.create", "",
	       "{\"repo\":\"o/r\",\"base\":\"main\",\"head\":\"sbxloop/run-1\","
	       "\"title\":\"sbxloop: deliver\",\"body\":\"b\",\"draft\":true}");
	must_be_ok(&r, "pr.create");
	pr = (int)onum(&r, "number");
	ck_assert_ptr_nonnull(strstr(ostr(&r, "url"), "/o/r/pull/"));
	run_free(&r);

	/* "branch" is looked up as "o:branch" */
	gh_run(&r, "pr.list", "",
	       "{\"repo\":\"o/r\",\"head\":\"sbxloop/run-1\"}");
	must_be_ok(&r, "pr.list");
	item = cJSON_GetArrayItem(cJSON_GetObjectItem(out(&r), "items"), 0);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(out(&r), "items")), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(item, "number")->valueint, pr);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(item, "head")),
		"sbxloop/run-1");
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(item, "base")),
		"main");
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(item, "state")),
		"open");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(item, "draft")));
	run_free(&r);
	gh_run(&r, "pr.list", "",
	       "{\"repo\":\"o/r\",\"head\":\"o:other\",\"state\":\"all\"}");
	must_be_ok(&r, "pr.list of another head");
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(out(&r), "items")), 0);
	run_free(&r);

	gh_run(&r, "pr.comment", "",
	       "{\"repo\":\"o/r\",\"number\":%d,\"body\":\"ready\"}", pr);
	must_be_ok(&r, "pr.comment");
	run_free(&r);

	gh_run(&r, "status.create", "",
	       "{\"repo\":\"o/r\",\"sha\":\"%s\",\"state\":\"success\","
	       "\"description\":\"all tasks passed\"}",
	       commit);
	must_be_ok(&r, "status.create");
	ck_assert_str_eq(ostr(&r, "state"), "success");
	ck_assert(onum(&r, "id") > 0);
	run_free(&r);

	repo = repo_state(&st, "o/r");
	ck_assert_str_eq(file_b64(repo, "refs/heads/sbxloop/run-1", "new.txt"),
			 "aGVsbG8K");
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(repo, "statuses"), 0);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(f, "context")),
		"sbxloop");
	cJSON_Delete(st);
	free(base);
	free(base_tree);
	free(blob0);
	free(tree);
	free(commit);
}
END_TEST

START_TEST(test_contents_ops_read_text_and_binary_and_put)
{
	struct run r;
	char *sha;

	/* "héllo\n"; a path with a space is escaped, its slash kept */
	gh_run(&r, "contents.put", "",
	       "{\"repo\":\"o/r\",\"path\":\"docs/a b.md\",\"message\":\"m\","
	       "\"content_b64\":\"aMOpbGxvCg==\",\"branch\":\"main\"}");
	must_be_ok(&r, "contents.put");
	sha = dup_ostr(&r, "content_sha");
	ck_assert_int_eq((int)strlen(ostr(&r, "commit_sha")), 40);
	run_free(&r);

	gh_run(&r, "contents.read", "",
	       "{\"repo\":\"o/r\",\"path\":\"docs/a b.md\",\"ref\":\"main\"}");
	must_be_ok(&r, "contents.read of text");
	ck_assert_str_eq(ostr(&r, "content"), "h\xc3\xa9llo\n");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(out(&r), "binary")));
	ck_assert_str_eq(ostr(&r, "path"), "docs/a b.md");
	ck_assert_str_eq(ostr(&r, "sha"), sha);
	run_free(&r);

	/* an update names the blob it replaces */
	gh_run(&r, "contents.put", "",
	       "{\"repo\":\"o/r\",\"path\":\"docs/a b.md\",\"message\":\"m2\","
	       "\"content_b64\":\"AP8Q\",\"sha\":\"%s\"}",
	       sha);
	must_be_ok(&r, "contents.put over a file");
	run_free(&r);
	gh_run(&r, "contents.read", "",
	       "{\"repo\":\"o/r\",\"path\":\"docs/a b.md\"}");
	must_be_ok(&r, "contents.read of binary");
	ck_assert_str_eq(ostr(&r, "content"), "AP8Q");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(out(&r), "binary")));
	run_free(&r);

	gh_run(&r, "contents.read", "",
	       "{\"repo\":\"o/r\",\"path\":\"nowhere.txt\","
	       "\"allow_missing\":true}");
	must_be_ok(&r, "contents.read of a missing file");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(out(&r), "missing")));
	run_free(&r);
	free(sha);
}
END_TEST

START_TEST(test_raw_api_returns_githubs_json_as_is)
{
	struct run r;

	gh_run(&r, "raw.api", "",
	       "{\"method\":\"post\",\"path\":\"/repos/o/r/issues\","
	       "\"body\":{\"title\":\"raw\"}}");
	must_be_ok(&r, "raw.api POST");
	ck_assert_str_eq(ostr(&r, "title"), "raw");
	run_free(&r);
	gh_run(&r, "raw.api", "",
	       "{\"method\":\"GET\",\"path\":\"/repos/o/r/issues?state=all\"}");
	must_be_ok(&r, "raw.api GET with a query");
	ck_assert(cJSON_IsArray(out(&r)));
	ck_assert_int_eq(cJSON_GetArraySize(out(&r)), 1);
	run_free(&r);
}
END_TEST

/* ------------------------------------------------------------ batches */

START_TEST(test_a_batch_with_references_runs_on_one_connection)
{
	struct run r;
	const cJSON *res, *ev;
	cJSON *st, *log;
	const cJSON *repo;

	gh_run(&r, "batch", "",
	       "{\"ops\":["
	       "{\"op\":\"ref.get\",\"params\":{\"repo\":\"o/r\","
	       "\"ref\":\"heads/main\"}},"
	       "{\"op\":\"commit.get\",\"params\":{\"repo\":\"o/r\","
	       "\"sha\":\"${0.sha}\"}},"
	       "{\"op\":\"tree.create\",\"params\":{\"repo\":\"o/r\","
	       "\"base_tree\":\"${1.tree}\",\"tree\":[{\"path\":\"x.txt\","
	       "\"mode\":\"100644\",\"type\":\"blob\",\"content\":\"x\\n\"},"
	       "{\"path\":\"lit.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	       "\"content\":\"$${0.sha}\"},"
	       "{\"path\":\"lit2.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	       "\"content\":\"$$${0.sha}\"}]}},"
	       "{\"op\":\"commit.create\",\"params\":{\"repo\":\"o/r\","
	       "\"message\":\"m\",\"tree\":\"${2.sha}\","
	       "\"parents\":[\"${1.sha}\"]}},"
	       "{\"op\":\"ref.create\",\"params\":{\"repo\":\"o/r\","
	       "\"ref\":\"heads/sbxloop/run-2\",\"sha\":\"${3.sha}\"}},"
	       "{\"op\":\"pr.create\",\"params\":{\"repo\":\"o/r\","
	       "\"base\":\"main\",\"head\":\"sbxloop/run-2\","
	       "\"title\":\"t\"}},"
	       "{\"op\":\"pr.comment\",\"params\":{\"repo\":\"o/r\","
	       "\"number\":\"${5.number}\",\"body\":\"c\"}}]}");
	must_be_ok(&r, "batch");
	res = cJSON_GetObjectItem(out(&r), "results");
	ck_assert_int_eq(cJSON_GetArraySize(res), 7);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
				 cJSON_GetArrayItem(res, 4), "sha")),
			 cJSON_GetStringValue(cJSON_GetObjectItem(
				 cJSON_GetArrayItem(res, 3), "sha")));
	ck_assert_int_eq((int)usage(&r, "http_requests"), 7);
	ck_assert_int_eq((int)usage(&r, "connections"), 1);
	/* the batch's pair and one per op, each with its index */
	ck_assert_int_eq(count_events(&r, "gh.op_start", NULL), 8);
	ev = nth_event(&r, "gh.op_start", 2);
	ck_assert_str_eq(dstr(ev, "op"), "commit.get");
	ck_assert_int_eq((int)dnum(ev, "index"), 1);
	run_free(&r);

	repo = repo_state(&st, "o/r");
	ck_assert_int_eq((int)cJSON_GetObjectItem(st, "connections")->valueint,
			 1);
	ck_assert_str_eq(file_b64(repo, "refs/heads/sbxloop/run-2", "x.txt"),
			 "eAo=");
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(repo, "pulls")), 1);
	/* "$${...}" is the text "${...}" */
	ck_assert_str_eq(file_b64(repo, "refs/heads/sbxloop/run-2", "lit.txt"),
			 "JHswLnNoYX0=");
	ck_assert_str_eq(
		file_b64(repo, "refs/heads/sbxloop/run-2", "lit2.txt"),
		"JCR7MC5zaGF9");
	cJSON_Delete(st);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 7);
	cJSON_ArrayForEach (ev, log)
		ck_assert_int_eq(cJSON_GetObjectItem(ev, "conn")->valueint, 1);
	cJSON_Delete(log);
}
END_TEST

START_TEST(test_a_failing_op_stops_the_batch_and_is_named)
{
	struct run r;
	cJSON *st;

	gh_run(&r, "batch", "",
	       "{\"ops\":[{\"op\":\"repo.get\",\"params\":{\"repo\":\"o/r\"}},"
	       "{\"op\":\"issue.create\",\"params\":{\"repo\":\"o/r\","
	       "\"title\":\"${0.nope}\"}},"
	       "{\"op\":\"issue.create\",\"params\":{\"repo\":\"o/r\","
	       "\"title\":\"never\"}}]}");
	must_fail(&r, "GitHubError", 0,
		  "op 1 (issue.create): bad reference '${0.nope}'");
	/* what ran stays in the result */
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(out(&r), "results")),
		1);
	run_free(&r);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
				 repo_state(&st, "o/r"), "issues")),
			 0);
	cJSON_Delete(st);

	gh_run(&r, "batch", "",
	       "{\"ops\":[{\"op\":\"repo.get\",\"params\":{\"repo\":\"o/r\","
	       "\"x\":\"${1.full_name}\"}}]}");
	must_fail(&r, "GitHubError", 0, "op 0 (repo.get): bad reference");
	run_free(&r);
	gh_run(&r, "batch", "",
	       "{\"ops\":[{\"op\":\"repo.get\",\"params\":{\"repo\":\"o/no\"}}]}");
	must_fail(&r, "GitHubNotFound", 404,
		  "op 0 (repo.get): GET /repos/o/no: HTTP 404");
	run_free(&r);
}
END_TEST

/* ------------------------------------------------------ errors, probes */

START_TEST(test_allow_missing_probes_are_ok_without_an_error_event)
{
	struct run r;

	gh_run(&r, "repo.get", "",
	       "{\"repo\":\"o/none\",\"allow_missing\":true}");
	must_be_ok(&r, "repo.get of a missing repository");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(out(&r), "missing")));
	ck_assert_int_eq((int)onum(&r, "http_status"), 404);
	ck_assert_int_eq(count_events(&r, "worker.result", NULL), 1);
	run_free(&r);

	/* an empty repository answers 409 "Git Repository is empty." */
	gh_run(&r, "ref.get", "",
	       "{\"repo\":\"o/e\",\"ref\":\"heads/main\",\"allow_missing\":true}");
	must_be_ok(&r, "ref.get in an empty repository");
	ck_assert_int_eq((int)onum(&r, "http_status"), 409);
	run_free(&r);

	gh_run(&r, "ref.get", "",
	       "{\"repo\":\"o/r\",\"ref\":\"heads/none\",\"allow_missing\":true}");
	must_be_ok(&r, "ref.get of a missing branch");
	ck_assert_int_eq((int)onum(&r, "http_status"), 404);
	run_free(&r);

	/* without allow_missing the 409 is an error */
	gh_run(&r, "ref.get", "", "{\"repo\":\"o/e\",\"ref\":\"heads/main\"}");
	must_fail(&r, "GitHubError", 409, "Git Repository is empty.");
	run_free(&r);
}
END_TEST

START_TEST(test_a_404_is_github_not_found)
{
	struct run r;

	gh_run(&r, "repo.get", "", "{\"repo\":\"o/none\"}");
	must_fail(&r, "GitHubNotFound", 404,
		  "GET /repos/o/none: HTTP 404: Not Found");
	run_free(&r);
}
END_TEST

START_TEST(test_a_rejected_token_is_an_auth_error_with_the_scopes_hint)
{
	struct run r;
	cJSON *log;

	give_token("ghp_not_the_token_the_fake_knows");
	gh_run(&r, "repo.get", "", "{\"repo\":\"o/r\"}");
	must_fail(&r, "GitHubAuthError", 401, "HTTP 401: Bad credentials");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"), "repo scope"));
	run_free(&r);

	give_token(token);
	ck_assert_int_eq(gh_fake_set_faults(&fake,
					    "[{\"status\":403,\"message\":"
					    "\"Resource not accessible by "
					    "personal access token\"}]"),
			 0);
	gh_run(&r, "issue.create", "", "{\"repo\":\"o/r\",\"title\":\"t\"}");
	must_fail(&r, "GitHubAuthError", 403,
		  "POST /repos/o/r/issues: HTTP 403: Resource not accessible");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "Contents, Issues, Pull requests and "
				     "Commit statuses read/write and "
				     "Metadata read"));
	ck_assert_int_eq(count_events(&r, "gh.retry", NULL), 0);
	run_free(&r);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 2);
	cJSON_Delete(log);
}
END_TEST

START_TEST(test_a_422_carries_githubs_message)
{
	struct run r;

	gh_run(&r, "pr.create", "",
	       "{\"repo\":\"o/r\",\"base\":\"main\",\"head\":\"main\","
	       "\"title\":\"t\"}");
	must_fail(&r, "GitHubError", 422,
		  "POST /repos/o/r/pulls: HTTP 422: Validation Failed: No "
		  "commits between main and main");
	run_free(&r);
	gh_run(&r, "pr.create", "",
	       "{\"repo\":\"o/r\",\"base\":\"main\",\"head\":\"nope\","
	       "\"title\":\"t\"}");
	must_fail(&r, "GitHubError", 422,
		  "Validation Failed: field 'head' invalid");
	run_free(&r);
	gh_run(&r, "ref.create", "",
	       "{\"repo\":\"o/r\",\"ref\":\"heads/main\",\"sha\":\"%s\"}",
	       "0000000000000000000000000000000000000000");
	must_fail(&r, "GitHubError", 422, "HTTP 422: Object does not exist");
	run_free(&r);
}
END_TEST

/* ------------------------------------------------------------ retries */

START_TEST(test_a_server_error_is_retried_then_succeeds)
{
	struct run r;
	const cJSON *d;
	cJSON *st;

	ck_assert_int_eq(gh_fake_set_faults(&fake,
					    "[{\"method\":\"GET\","
					    "\"path_prefix\":\"/repos/o/r\","
					    "\"status\":500}]"),
			 0);
	gh_run(&r, "repo.get", "", "{\"repo\":\"o/r\"}");
	must_be_ok(&r, "repo.get after a 500");
	ck_assert_int_eq(count_events(&r, "gh.retry", &d), 1);
	ck_assert_str_eq(dstr(d, "op"), "repo.get");
	ck_assert_int_eq((int)dnum(d, "attempt"), 1);
	ck_assert_int_eq((int)dnum(d, "http_status"), 500);
	ck_assert_str_eq(dstr(d, "reason"), "server error");
	ck_assert(dnum(d, "wait_s") >= 0.375 && dnum(d, "wait_s") <= 0.625);
	ck_assert_int_eq((int)usage(&r, "http_requests"), 2);
	run_free(&r);

	/* GitHub did not act on a 502: the POST is sent again, once */
	ck_assert_int_eq(gh_fake_set_faults(&fake, "[{\"method\":\"POST\","
						   "\"status\":502}]"),
			 0);
	gh_run(&r, "issue.create", "", "{\"repo\":\"o/r\",\"title\":\"t\"}");
	must_be_ok(&r, "issue.create after a 502");
	run_free(&r);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
				 repo_state(&st, "o/r"), "issues")),
			 1);
	cJSON_Delete(st);
}
END_TEST

START_TEST(test_a_server_error_that_persists_ends_after_four_retries)
{
	struct run r;

	ck_assert_int_eq(gh_fake_set_faults(&fake, "[{\"status\":503,"
						   "\"times\":0}]"),
			 0);
	gh_run(&r, "user.get", "", "{}");
	must_fail(&r, "GitHubError", 503, "GET /user: HTTP 503");
	ck_assert_int_eq(count_events(&r, "gh.retry", NULL), 4);
	ck_assert_int_eq((int)dnum(nth_event(&r, "gh.retry", 3), "attempt"),
			 4);
	ck_assert_int_eq((int)usage(&r, "http_requests"), 5);
	/* 0.5 + 1 + 2 + 4 s, each within 25% */
	ck_assert(r.elapsed >= 5.6);
	run_free(&r);
}
END_TEST

START_TEST(test_a_secondary_rate_limit_waits_its_retry_after)
{
	struct run r;
	const cJSON *d;

	ck_assert_int_eq(gh_fake_set_faults(&fake, "[{\"secondary\":true,"
						   "\"retry_after\":1}]"),
			 0);
	gh_run(&r, "repo.get", "", "{\"repo\":\"o/r\"}");
	must_be_ok(&r, "repo.get after a secondary rate limit");
	ck_assert_int_eq(count_events(&r, "gh.retry", &d), 1);
	ck_assert_int_eq((int)dnum(d, "http_status"), 403);
	ck_assert_str_eq(dstr(d, "reason"), "rate limited");
	ck_assert(dnum(d, "wait_s") == 1);
	ck_assert(r.elapsed >= 1.0);
	run_free(&r);
}
END_TEST

START_TEST(test_a_rate_limit_past_the_deadline_is_github_rate_limited)
{
	struct run r;

	/* the primary limit resets in two minutes; the job has five seconds */
	ck_assert_int_eq(gh_fake_set_faults(&fake, "[{\"status\":403,"
						   "\"reset_in\":120,"
						   "\"times\":0}]"),
			 0);
	gh_run(&r, "repo.get", ",\"timeout_s\":5", "{\"repo\":\"o/r\"}");
	must_fail(&r, "GitHubRateLimited", 403, "API rate limit exceeded");
	ck_assert_int_eq(count_events(&r, "gh.retry", NULL), 0);
	ck_assert(r.elapsed < 30); /* not the minute's wait */
	run_free(&r);
}
END_TEST

/* A port on 127.0.0.1 that nothing listens on. */
static int closed_port(void)
{
	struct sockaddr_in a;
	socklen_t n = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &n), 0);
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

START_TEST(test_a_connection_that_fails_is_retried_then_reported)
{
	struct run r;
	const cJSON *d;

	gh_run(&r, "user.get", ",\"timeout_s\":3",
	       "{\"api_url\":\"http://127.0.0.1:%d\"}", closed_port());
	must_fail(&r, "GitHubError", 0, "GET /user: cannot reach 127.0.0.1");
	ck_assert_int_ge(count_events(&r, "gh.retry", &d), 1);
	ck_assert_str_eq(dstr(d, "reason"), "connection failed");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(d, "http_status")));
	/* no wait runs past the job's deadline (all four: 7.5 s) */
	ck_assert(r.elapsed < 6);
	run_free(&r);
}
END_TEST

START_TEST(test_a_server_that_never_answers_times_the_job_out)
{
	struct run r;
	struct sockaddr_in a;
	socklen_t n = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	/* listening, never accepting: the connection opens, no answer */
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s, 4), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &n), 0);
	gh_run(&r, "user.get", ",\"timeout_s\":1.5",
	       "{\"api_url\":\"http://localhost:%d/\"}", ntohs(a.sin_port));
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_str_eq(errfield(&r, "type"), "Timeout");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "GET /user did not finish"));
	ck_assert(r.elapsed < 30); /* not the request's own 60 s */
	run_free(&r);
	close(s);
}
END_TEST

/* --------------------------------------------------- transport, token */

START_TEST(test_https_with_a_private_ca_in_curl_ca_bundle)
{
	struct run r;
	char url[128], ca[700];

	ck_assert_int_eq(
		gh_fake_tls_start(&fake, url, sizeof(url), ca, sizeof(ca)), 0);
	setenv("CURL_CA_BUNDLE", ca, 1);
	gh_run(&r, "user.get", "", "{\"api_url\":\"%s\"}", url);
	must_be_ok(&r, "user.get over TLS");
	ck_assert_str_eq(ostr(&r, "login"), "octo");
	run_free(&r);

	/* the throwaway CA is not in the system's store */
	unsetenv("CURL_CA_BUNDLE");
	gh_run(&r, "user.get", "", "{\"api_url\":\"%s\"}", url);
	must_fail(&r, "GitHubError", 0, "GET /user: cannot reach 127.0.0.1");
	ck_assert_int_eq(count_events(&r, "gh.retry", NULL), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_plain_http_to_another_host_is_refused)
{
	struct run r;
	cJSON *log;

	gh_run(&r, "repo.get", "",
	       "{\"repo\":\"o/r\",\"api_url\":\"http://github.example.com/api/"
	       "v3\"}");
	must_fail(&r, "GitHubError", 0,
		  "refusing to send the GitHub token over plain http to "
		  "github.example.com");
	ck_assert_int_eq((int)usage(&r, "http_requests"), 0);
	run_free(&r);
	gh_run(&r, "user.get", "", "{\"api_url\":\"http://x@127.0.0.1:1/\"}");
	must_fail(&r, "GitHubError", 0, "plain http");
	run_free(&r);
	gh_run(&r, "user.get", "",
	       "{\"api_url\":\"http://evil.example\\\\@127.0.0.1/\"}");
	must_fail(&r, "GitHubError", 0, "backslash");
	run_free(&r);
	gh_run(&r, "user.get", "", "{\"api_url\":\"ftp://127.0.0.1/\"}");
	must_fail(&r, "GitHubError", 0, "api_url must be an https:// URL");
	run_free(&r);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 0);
	cJSON_Delete(log);
}
END_TEST

static void token_absent(const char *what, const char *text)
{
	ck_assert_msg(!text || !strstr(text, token), "the token is in %s: %s",
		      what, text);
}

START_TEST(test_the_token_never_leaves_the_worker)
{
	static const char *const jobs[][2] = {
		{"user.get", "{}"},
		{"repo.get", "{\"repo\":\"o/none\"}"},
		{"issue.create", "{\"repo\":\"o/r\",\"title\":\"t\"}"},
	};
	const char *argv[16];
	struct run r;
	char *job;
	size_t i;
	int n, k;

	ck_assert_int_eq(gh_fake_set_faults(&fake, "[{\"status\":500}]"), 0);
	for (i = 0; i < sizeof(jobs) / sizeof(*jobs); i++) {
		gh_run(&r, jobs[i][0], "", "%s", jobs[i][1]);
		token_absent("stdout", r.out);
		token_absent("stderr", r.err);
		token_absent("the events file", r.events);
		job = slurp(path_in("res.json"));
		token_absent("the result file", job);
		free(job);
		/* it is not passed on: not in the job, not on the argv */
		job = slurp(path_in("job.json"));
		token_absent("the job", job);
		free(job);
		n = worker_argv(argv);
		for (k = 0; k < n; k++)
			token_absent("the worker's argv", argv[k]);
		run_free(&r);
	}

	/* GitHub echoing it back, in JSON and in a path: scrubbed */
	gh_run(&r, "raw.api", "",
	       "{\"method\":\"POST\",\"path\":\"/repos/o/r/issues\","
	       "\"body\":{\"title\":\"echo %s\"}}",
	       token);
	must_be_ok(&r, "raw.api with the token in the body");
	ck_assert_str_eq(ostr(&r, "title"), "echo ***");
	token_absent("stdout", r.out);
	token_absent("the events file", r.events);
	run_free(&r);
	gh_run(&r, "raw.api", "",
	       "{\"method\":\"GET\",\"path\":\"/repos/o/%s\"}", token);
	must_fail(&r, "GitHubNotFound", 404, "GET /repos/o/***: HTTP 404");
	token_absent("stdout", r.out);
	token_absent("the events file", r.events);
	job = slurp(path_in("res.json"));
	token_absent("the result file", job);
	free(job);
	run_free(&r);
}
END_TEST

START_TEST(test_without_libcurl_github_jobs_are_unavailable_and_others_run)
{
	struct run r;
	char *path = strdup(path_in("lib/libcurl.so.4")), *msg;

	setenv("SBXLOOP_WORKER_LIBCURL", path, 1);
	gh_run(&r, "user.get", "", "{}");
	ck_assert_int_ge(asprintf(&msg,
				  "libcurl (%s) is missing in this sandbox: "
				  "install libcurl4 (apt-get install "
				  "libcurl4)",
				  path),
			 0);
	must_fail(&r, "GitHubUnavailable", 0, msg);
	ck_assert_str_eq(errfield(&r, "message"), msg);
	ck_assert_ptr_nonnull(errfield(&r, "detail"));
	run_free(&r);

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"echo\","
			    "\"still here\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "still here\n");
	run_free(&r);

	{
		const char *argv[] = {getenv("SBXLOOP_WORKER"), "check-github",
				      NULL};
		struct tu_run t;

		tu_exec(&t, dir, NULL, argv);
		ck_assert_int_eq(t.status, 1);
		ck_assert_ptr_nonnull(strstr(t.err, msg));
		tu_run_free(&t);
		unsetenv("SBXLOOP_WORKER_LIBCURL");
		tu_exec(&t, dir, NULL, argv);
		ck_assert_int_eq(t.status, 0);
		ck_assert_msg(!strncmp(t.out, "libcurl/", 8), "%s", t.out);
		tu_run_free(&t);
	}
	free(msg);
	free(path);
}
END_TEST

START_TEST(test_params_are_checked_before_any_request)
{
	struct run r;
	cJSON *log;

	gh_run(&r, "issue.comment", "", "{}");
	must_fail(&r, "GitHubError", 0,
		  "missing required params: repo, number, body");
	run_free(&r);
	gh_run(&r, "issue.create", "", "{\"repo\":\"o/r\",\"title\":\"\"}");
	must_fail(&r, "GitHubError", 0, "missing required params: title");
	run_free(&r);
	gh_run(&r, "repo.get", "", "{\"repo\":\"o/../user\"}");
	must_fail(&r, "GitHubError", 0, "param 'repo' must be 'owner/name'");
	run_free(&r);
	gh_run(&r, "issue.update", "", "{\"repo\":\"o/r\",\"number\":-1}");
	must_fail(&r, "GitHubError", 0,
		  "param 'number' must be a non-negative integer");
	run_free(&r);
	gh_run(&r, "contents.read", "",
	       "{\"repo\":\"o/r\",\"path\":\"a/../../x\"}");
	must_fail(&r, "GitHubError", 0, "'.' or '..' segment");
	run_free(&r);
	gh_run(&r, "issue.delete", "", "{}");
	must_fail(&r, "GitHubError", 0,
		  "unknown github op 'issue.delete' (known: batch, "
		  "issue.create, issue.comment");
	run_free(&r);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 0);
	cJSON_Delete(log);
}
END_TEST

static Suite *worker_github_suite(void)
{
	Suite *s = suite_create("worker-github");
	TCase *tc = tcase_create("github.op");

	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, gh_setup, gh_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_user_and_repo_ops_return_githubs_objects);
	tcase_add_test(tc, test_issue_ops_create_comment_update_and_search);
	tcase_add_test(tc,
		       test_git_data_ops_build_a_branch_and_a_pull_request);
	tcase_add_test(tc, test_contents_ops_read_text_and_binary_and_put);
	tcase_add_test(tc, test_raw_api_returns_githubs_json_as_is);
	tcase_add_test(tc,
		       test_a_batch_with_references_runs_on_one_connection);
	tcase_add_test(tc, test_a_failing_op_stops_the_batch_and_is_named);
	tcase_add_test(
		tc, test_allow_missing_probes_are_ok_without_an_error_event);
	tcase_add_test(tc, test_a_404_is_github_not_found);
	tcase_add_test(
		tc,
		test_a_rejected_token_is_an_auth_error_with_the_scopes_hint);
	tcase_add_test(tc, test_a_422_carries_githubs_message);
	tcase_add_test(tc, test_a_server_error_is_retried_then_succeeds);
	tcase_add_test(
		tc, test_a_server_error_that_persists_ends_after_four_retries);
	tcase_add_test(tc, test_a_secondary_rate_limit_waits_its_retry_after);
	tcase_add_test(
		tc,
		test_a_rate_limit_past_the_deadline_is_github_rate_limited);
	tcase_add_test(tc,
		       test_a_connection_that_fails_is_retried_then_reported);
	tcase_add_test(tc, test_a_server_that_never_answers_times_the_job_out);
	tcase_add_test(tc, test_https_with_a_private_ca_in_curl_ca_bundle);
	tcase_add_test(tc, test_plain_http_to_another_host_is_refused);
	tcase_add_test(tc, test_the_token_never_leaves_the_worker);
	tcase_add_test(
		tc,
		test_without_libcurl_github_jobs_are_unavailable_and_others_run);
	tcase_add_test(tc, test_params_are_checked_before_any_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(worker_github_suite());
	int failed;

	if (!getenv("SBXLOOP_WORKER")) {
		fputs("test-worker-github: SBXLOOP_WORKER is not set\n",
		      stderr);
		return 77; /* skipped */
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

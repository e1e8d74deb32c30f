/*
 * The fake GitHub server (tests/fakes/github-server) as a specification:
 * driven by the real curl, its git objects checked with the real git
 * (hash-object, mktree, write-tree in a scratch repository), its errors
 * against GitHub's documented codes and messages, its auth, log, faults,
 * keep-alive, big and chunked bodies and a TLS front (socat, openssl).
 * curl, git, socat and openssl are CI dependencies: a missing one fails
 * the suite. Each test starts its own fake with o/r (one commit) and
 * o/e (empty).
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "testutil.h"

#include "github-support.h"

#define TOKEN "ghp_fakeTOKEN0123456789abcdefSECRET"

static struct gh_fake fake;
static int nfile;
/* every test's temp dirs live under one root that the runner process
 * removes: a failed test (its child exits at once) skips teardown */
static char *tmp_root, *tmp_saved;

static void require_tool(const char *tool)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : ""), *d, *save, exe[1024];
	int found = 0;

	for (d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(exe, sizeof(exe), "%s/%s", d, tool);
		found = access(exe, X_OK) == 0;
	}
	free(dirs);
	ck_assert_msg(found,
		      "%s is not on PATH: the GitHub fake's tests need it "
		      "(install it with ./scripts/deps)",
		      tool);
}

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

static void setup(void)
{
	static const char *const repos[] = {"o/r", "o/e:empty", NULL};

	require_tool("curl");
	require_tool("git");
	require_tool("socat");
	require_tool("openssl");
	ck_assert_msg(gh_fake_start(&fake, TOKEN, repos) == 0,
		      "cannot start github-server");
}

static void teardown(void)
{
	gh_fake_stop(&fake);
	ck_assert_msg(fake.exit_status == 0,
		      "github-server exited with %d (a leak or a crash: see "
		      "the log)",
		      fake.exit_status);
}

/* A file in the fake's temp dir holding TEXT; its path (static). */
static const char *scratch(const char *text)
{
	static char path[700];

	snprintf(path, sizeof(path), "%s/body-%d", fake.dir, ++nfile);
	tu_write(path, text);
	return path;
}

struct call {
	const char *method, *path, *body;
	const char *auth;         /* NULL: the token; "": none */
	const char *const *extra; /* more curl arguments */
	int chunked;
};

/* Run curl for C: the HTTP status; the body as JSON in *OUT and the
 * response head in *HEAD when asked (caller frees). */
static int call(const struct call *c, cJSON **out, char **head)
{
	char url[2048], out_file[700], head_file[700], auth[256], data[720];
	const char *argv[48];
	struct tu_run r;
	size_t n = 0, i;
	char *text;
	int status;

	snprintf(url, sizeof(url), "%s%s", fake.url, c->path);
	snprintf(out_file, sizeof(out_file), "%s/out-%d", fake.dir, ++nfile);
	snprintf(head_file, sizeof(head_file), "%s/head-%d", fake.dir, nfile);
	argv[n++] = "curl";
	argv[n++] = "-sS";
	argv[n++] = "-o";
	argv[n++] = out_file;
	argv[n++] = "-D";
	argv[n++] = head_file;
	argv[n++] = "-w";
	argv[n++] = "%{http_code}";
	argv[n++] = "-X";
	argv[n++] = c->method;
	argv[n++] = "-H";
	argv[n++] = "Accept: application/vnd.github+json";
	argv[n++] = "-H";
	argv[n++] = "X-GitHub-Api-Version: 2022-11-28";
	if (!c->auth || *c->auth) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
			 c->auth ? c->auth : TOKEN);
		argv[n++] = "-H";
		argv[n++] = auth;
	}
	if (c->body) {
		snprintf(data, sizeof(data), "@%s", c->body);
		argv[n++] = "-H";
		argv[n++] = "Content-Type: application/json";
		argv[n++] = "--data-binary";
		argv[n++] = data;
	}
	if (c->chunked) {
		argv[n++] = "-H";
		argv[n++] = "Transfer-Encoding: chunked";
	}
	for (i = 0; c->extra && c->extra[i]; i++)
		argv[n++] = c->extra[i];
	argv[n++] = url;
	argv[n] = NULL;
	tu_exec(&r, NULL, NULL, argv);
	ck_assert_msg(r.status == 0, "curl %s %s failed: %s", c->method,
		      c->path, r.err);
	status = atoi(r.out);
	tu_run_free(&r);
	text = tu_read(out_file);
	if (out)
		*out = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (head)
		*head = tu_read(head_file);
	return status;
}

/* METHOD PATH with the JSON text BODY (or NULL), authenticated. */
static int api(const char *method, const char *path, const char *body,
	       cJSON **out)
{
	struct call c = {method, path, body ? scratch(body) : NULL,
			 NULL,   NULL, 0};

	return call(&c, out, NULL);
}

static const char *str(const cJSON *o, const char *path)
{
	char key[128];
	const char *dot;
	const cJSON *v = o;

	while (v && (dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		v = cJSON_IsArray(v)
			    ? cJSON_GetArrayItem(v, atoi(key))
			    : cJSON_GetObjectItemCaseSensitive(v, key);
		path = dot + 1;
	}
	v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(path))
			     : cJSON_GetObjectItemCaseSensitive(v, path);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "no number '%s'", key);
	return v->valuedouble;
}

/* Run a shell command line in DIR; its stdout, trailing newline cut
 * (caller frees). */
static char *sh(const char *dir, const char *cmd)
{
	const char *argv[] = {"sh", "-c", cmd, NULL};
	const char *env[] = {"GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent",
			     NULL};
	struct tu_run r;
	char *out;
	size_t n;

	tu_exec(&r, dir, env, argv);
	ck_assert_msg(r.status == 0, "'%s' failed (%d): %s", cmd, r.status,
		      r.err);
	out = strdup(r.out);
	n = strlen(out);
	while (n && out[n - 1] == '\n')
		out[--n] = '\0';
	tu_run_free(&r);
	return out;
}

/* A scratch git repository under the fake's dir; its path (static). */
static const char *git_repo(void)
{
	static char dir[700];
	char *out;

	snprintf(dir, sizeof(dir), "%s/git-%d", fake.dir, ++nfile);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	out = sh(dir, "git init -q .");
	free(out);
	return dir;
}

static void assert_git(const char *dir, const char *cmd, const char *want)
{
	char *got = sh(dir, cmd);

	ck_assert_str_eq(got, want);
	free(got);
}

static void assert_error(const cJSON *o, const char *message)
{
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(str(o, "message"), message);
	ck_assert_ptr_nonnull(str(o, "documentation_url"));
}

/* The sha of the commit refs/heads/BRANCH of o/r points at. */
static char *tip(const char *branch)
{
	char path[256];
	cJSON *o;
	char *sha;

	snprintf(path, sizeof(path), "/repos/o/r/git/ref/heads/%s", branch);
	ck_assert_int_eq(api("GET", path, NULL, &o), 200);
	sha = strdup(str(o, "object.sha"));
	cJSON_Delete(o);
	return sha;
}

/* POST a commit of TREE with PARENT (or none) to o/r; its sha. */
static char *commit(const char *tree, const char *parent, const char *msg)
{
	char body[512];
	cJSON *o;
	char *sha;

	snprintf(body, sizeof(body),
		 "{\"message\":\"%s\",\"tree\":\"%s\",\"parents\":[%s%s%s]}",
		 msg, tree, parent ? "\"" : "", parent ? parent : "",
		 parent ? "\"" : "");
	ck_assert_int_eq(api("POST", "/repos/o/r/git/commits", body, &o), 201);
	sha = strdup(str(o, "sha"));
	cJSON_Delete(o);
	return sha;
}

/* ------------------------------------------------------ git database */

START_TEST(test_blob_sha_is_git_hash_object)
{
	const char *dir = git_repo();
	cJSON *o, *got;
	char cmd[900];

	ck_assert_int_eq(api("POST", "/repos/o/r/git/blobs",
			     "{\"content\":\"hello fake\\n\","
			     "\"encoding\":\"utf-8\"}",
			     &o),
			 201);
	snprintf(cmd, sizeof(cmd), "git hash-object %s",
		 scratch("hello fake\n"));
	assert_git(dir, cmd, str(o, "sha"));
	cJSON_Delete(o);
	/* base64, with bytes that are no text: "\x00\xff\x10bin" */
	ck_assert_int_eq(api("POST", "/repos/o/r/git/blobs",
			     "{\"content\":\"AP8QYmlu\",\"encoding\":"
			     "\"base64\"}",
			     &o),
			 201);
	assert_git(dir,
		   "printf '\\000\\377\\020bin' | git hash-object --stdin",
		   str(o, "sha"));
	snprintf(cmd, sizeof(cmd), "/repos/o/r/git/blobs/%s", str(o, "sha"));
	ck_assert_int_eq(api("GET", cmd, NULL, &got), 200);
	ck_assert_str_eq(str(got, "content"), "AP8QYmlu\n");
	ck_assert_str_eq(str(got, "encoding"), "base64");
	ck_assert_int_eq((int)num(got, "size"), 6);
	cJSON_Delete(got);
	cJSON_Delete(o);
}
END_TEST

/* Names that test git's order: "a-b" < "a.txt" < "a/" (the directory
 * a) < "a0". */
static const char tree_body[] =
	"{\"tree\":["
	"{\"path\":\"a/b/c.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	"\"content\":\"deep\\n\"},"
	"{\"path\":\"a/z.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	"\"content\":\"z\\n\"},"
	"{\"path\":\"a.txt\",\"mode\":\"100644\",\"type\":\"blob\","
	"\"content\":\"dot\\n\"},"
	"{\"path\":\"a-b\",\"mode\":\"100644\",\"type\":\"blob\","
	"\"content\":\"dash\\n\"},"
	"{\"path\":\"a0\",\"mode\":\"100644\",\"type\":\"blob\","
	"\"content\":\"zero\\n\"},"
	"{\"path\":\"bin/run.sh\",\"mode\":\"100755\",\"type\":\"blob\","
	"\"content\":\"#!/bin/sh\\necho hi\\n\"},"
	"{\"path\":\"link\",\"mode\":\"120000\",\"type\":\"blob\","
	"\"content\":\"a/z.txt\"}]}";

/* The same files made by git in DIR; the tree sha git writes. */
static char *git_tree_of_tree_body(const char *dir)
{
	return sh(dir, "mkdir -p a/b bin && printf 'deep\\n' >a/b/c.txt && "
		       "printf 'z\\n' >a/z.txt && printf 'dot\\n' >a.txt && "
		       "printf 'dash\\n' >a-b && printf 'zero\\n' >a0 && "
		       "printf '#!/bin/sh\\necho hi\\n' >bin/run.sh && "
		       "chmod 755 bin/run.sh && ln -s a/z.txt link && "
		       "git add -A && git write-tree");
}

START_TEST(test_tree_with_nested_paths_matches_git)
{
	const char *dir = git_repo();
	char *want = git_tree_of_tree_body(dir), path[256], cmd[900];
	cJSON *o, *listing, *e;
	FILE *f;

	ck_assert_int_eq(api("POST", "/repos/o/r/git/trees", tree_body, &o),
			 201);
	ck_assert_str_eq(str(o, "sha"), want);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "truncated")));
	ck_assert_str_eq(str(o, "tree.0.path"), "a-b");
	ck_assert_str_eq(str(o, "tree.1.path"), "a.txt");
	ck_assert_str_eq(str(o, "tree.2.path"), "a");
	ck_assert_str_eq(str(o, "tree.2.mode"), "040000");
	ck_assert_str_eq(str(o, "tree.2.type"), "tree");
	ck_assert_str_eq(str(o, "tree.3.path"), "a0");
	/* git mktree rebuilds the same tree from the API's listing */
	snprintf(path, sizeof(path), "/repos/o/r/git/trees/%s", want);
	ck_assert_int_eq(api("GET", path, NULL, &listing), 200);
	snprintf(cmd, sizeof(cmd), "%s/mktree.in", fake.dir);
	f = fopen(cmd, "w");
	cJSON_ArrayForEach (e, cJSON_GetObjectItem(listing, "tree"))
		fprintf(f, "%s %s %s\t%s\n", str(e, "mode"), str(e, "type"),
			str(e, "sha"), str(e, "path"));
	fclose(f);
	snprintf(cmd, sizeof(cmd), "git mktree --missing <%s/mktree.in",
		 fake.dir);
	assert_git(dir, cmd, want);
	cJSON_Delete(listing);
	/* recursive: every entry under its full path */
	snprintf(path, sizeof(path), "/repos/o/r/git/trees/%s?recursive=1",
		 want);
	ck_assert_int_eq(api("GET", path, NULL, &listing), 200);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(listing, "tree")), 10);
	cJSON_Delete(listing);
	cJSON_Delete(o);
	free(want);
}
END_TEST

START_TEST(test_tree_sha_null_deletes_and_absent_path_is_422)
{
	const char *dir = git_repo();
	char *base = git_tree_of_tree_body(dir), *want, body[600];
	cJSON *o;

	ck_assert_int_eq(api("POST", "/repos/o/r/git/trees", tree_body, &o),
			 201);
	cJSON_Delete(o);
	snprintf(body, sizeof(body),
		 "{\"base_tree\":\"%s\",\"tree\":["
		 "{\"path\":\"a/b/c.txt\",\"mode\":\"100644\",\"type\":"
		 "\"blob\",\"sha\":null},"
		 "{\"path\":\"a0\",\"mode\":\"100755\",\"type\":\"blob\","
		 "\"content\":\"zero\\n\"}]}",
		 base);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/trees", body, &o), 201);
	want = sh(dir, "git rm -qf a/b/c.txt && chmod 755 a0 && git add a0 && "
		       "git write-tree");
	ck_assert_str_eq(str(o, "sha"), want);
	cJSON_Delete(o);
	snprintf(body, sizeof(body),
		 "{\"base_tree\":\"%s\",\"tree\":[{\"path\":\"nope.txt\","
		 "\"mode\":\"100644\",\"type\":\"blob\",\"sha\":null}]}",
		 base);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/trees", body, &o), 422);
	ck_assert_ptr_nonnull(strstr(str(o, "message"), "nope.txt"));
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/trees",
			     "{\"tree\":[{\"path\":\"x\",\"mode\":\"100644\","
			     "\"type\":\"blob\",\"sha\":\"" /* both */
			     "ce013625030ba8dba906f756967f9e9ca394464a\","
			     "\"content\":\"x\"}]}",
			     &o),
			 422);
	assert_error(o, "Must supply either tree.sha or tree.content. Request "
			"will be rejected if both are present.");
	cJSON_Delete(o);
	free(want);
	free(base);
}
END_TEST

START_TEST(test_commit_objects_and_parent_chain)
{
	const char *dir = git_repo();
	char *tree, *c2, path[256], body[700], cmd[900];
	cJSON *o;

	ck_assert_int_eq(api("POST", "/repos/o/r/git/trees", tree_body, &o),
			 201);
	tree = strdup(str(o, "sha"));
	cJSON_Delete(o);
	snprintf(body, sizeof(body),
		 "{\"message\":\"first\\n\",\"tree\":\"%s\",\"parents\":[],"
		 "\"author\":{\"name\":\"Ada\",\"email\":\"ada@example.com\","
		 "\"date\":\"2024-01-02T03:04:05Z\"}}",
		 tree);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/commits", body, &o), 201);
	/* git's own commit text gives the same id */
	snprintf(body, sizeof(body),
		 "tree %s\nauthor Ada <ada@example.com> 1704164645 +0000\n"
		 "committer Ada <ada@example.com> 1704164645 +0000\n\n"
		 "first\n",
		 tree);
	snprintf(cmd, sizeof(cmd), "git hash-object -t commit %s",
		 scratch(body));
	assert_git(dir, cmd, str(o, "sha"));
	ck_assert_str_eq(str(o, "tree.sha"), tree);
	ck_assert_str_eq(str(o, "author.date"), "2024-01-02T03:04:05Z");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "parents")),
			 0);
	c2 = commit(tree, str(o, "sha"), "second");
	snprintf(path, sizeof(path), "/repos/o/r/git/commits/%s", c2);
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", path, NULL, &o), 200);
	ck_assert_str_eq(str(o, "message"), "second");
	ck_assert_str_eq(str(o, "committer.name"), "sbxloop-fake");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "parents")),
			 1);
	snprintf(path, sizeof(path), "/repos/o/r/git/commits/%s",
		 str(o, "parents.0.sha"));
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", path, NULL, &o), 200);
	ck_assert_str_eq(str(o, "message"), "first\n");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/commits",
			     "{\"message\":\"m\",\"tree\":\"0000000000000000"
			     "000000000000000000000000\"}",
			     &o),
			 422);
	assert_error(o, "Tree SHA does not exist");
	cJSON_Delete(o);
	free(c2);
	free(tree);
}
END_TEST

START_TEST(test_empty_repo_is_409_until_contents_put_makes_main)
{
	cJSON *o, *state;
	char *sha, body[300];

	ck_assert_int_eq(api("GET", "/repos/o/e/git/ref/heads/main", NULL, &o),
			 409);
	assert_error(o, "Git Repository is empty.");
	cJSON_Delete(o);
	ck_assert_int_eq(
		api("POST", "/repos/o/e/git/blobs", "{\"content\":\"x\"}", &o),
		409);
	cJSON_Delete(o);
	ck_assert_int_eq(api("PUT", "/repos/o/e/contents/docs/hello.md",
			     "{\"message\":\"bootstrap\","
			     "\"content\":\"aGVsbG8K\"}",
			     &o),
			 201);
	ck_assert_str_eq(str(o, "content.path"), "docs/hello.md");
	sha = strdup(str(o, "commit.sha"));
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", "/repos/o/e/git/ref/heads/main", NULL, &o),
			 200);
	ck_assert_str_eq(str(o, "ref"), "refs/heads/main");
	ck_assert_str_eq(str(o, "object.sha"), sha);
	ck_assert_str_eq(str(o, "object.type"), "commit");
	cJSON_Delete(o);
	/* an update needs the file's sha */
	ck_assert_int_eq(api("PUT", "/repos/o/e/contents/docs/hello.md",
			     "{\"message\":\"again\",\"content\":\"eW8K\"}",
			     &o),
			 422);
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET",
			     "/repos/o/e/contents/docs/hello.md?ref=main",
			     NULL, &o),
			 200);
	ck_assert_str_eq(str(o, "content"), "aGVsbG8K\n");
	snprintf(body, sizeof(body),
		 "{\"message\":\"again\",\"content\":\"eW8K\",\"sha\":\"%s\"}",
		 str(o, "sha"));
	cJSON_Delete(o);
	ck_assert_int_eq(
		api("PUT", "/repos/o/e/contents/docs/hello.md", body, &o),
		200);
	ck_assert_str_eq(str(o, "commit.parents.0.sha"), sha);
	cJSON_Delete(o);
	state = gh_fake_state(&fake);
	ck_assert_str_eq(str(state, "repos.o/e.default_branch"), "main");
	o = cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(
					cJSON_GetObjectItem(state, "repos"),
					"o/e"),
				"files"),
			"refs/heads/main"),
		"docs/hello.md");
	ck_assert_str_eq(str(o, "content_b64"), "eW8K");
	ck_assert_str_eq(str(o, "mode"), "100644");
	cJSON_Delete(state);
	free(sha);
}
END_TEST

START_TEST(test_refs_exist_force_and_fast_forward)
{
	char *main_sha = tip("main"), *tree, *ahead, *other, body[300];
	cJSON *o, *state;

	ck_assert_int_eq(api("GET", "/repos/o/r/git/ref/heads/nope", NULL, &o),
			 404);
	cJSON_Delete(o);
	snprintf(body, sizeof(body), "/repos/o/r/git/commits/%s", main_sha);
	ck_assert_int_eq(api("GET", body, NULL, &o), 200);
	tree = strdup(str(o, "tree.sha"));
	cJSON_Delete(o);
	ahead = commit(tree, main_sha, "ahead");
	other = commit(tree, NULL, "unrelated");
	snprintf(body, sizeof(body),
		 "{\"ref\":\"refs/heads/main\",\"sha\":\"%s\"}", main_sha);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/refs", body, &o), 422);
	assert_error(o, "Reference already exists");
	cJSON_Delete(o);
	snprintf(body, sizeof(body),
		 "{\"ref\":\"refs/heads/topic\",\"sha\":\"%s\"}", ahead);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/refs", body, &o), 201);
	ck_assert_str_eq(str(o, "ref"), "refs/heads/topic");
	cJSON_Delete(o);
	snprintf(body, sizeof(body), "{\"sha\":\"%s\"}", other);
	ck_assert_int_eq(
		api("PATCH", "/repos/o/r/git/refs/heads/topic", body, &o),
		422);
	assert_error(o, "Update is not a fast forward");
	cJSON_Delete(o);
	snprintf(body, sizeof(body), "{\"sha\":\"%s\",\"force\":true}", other);
	ck_assert_int_eq(
		api("PATCH", "/repos/o/r/git/refs/heads/topic", body, &o),
		200);
	ck_assert_str_eq(str(o, "object.sha"), other);
	cJSON_Delete(o);
	snprintf(body, sizeof(body), "{\"sha\":\"%s\"}", ahead);
	ck_assert_int_eq(
		api("PATCH", "/repos/o/r/git/refs/heads/main", body, &o), 200);
	cJSON_Delete(o);
	state = gh_fake_state(&fake);
	o = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(state, "repos"),
				    "o/r"),
		"refs");
	ck_assert_str_eq(str(o, "refs/heads/main"), ahead);
	ck_assert_str_eq(str(o, "refs/heads/topic"), other);
	cJSON_Delete(state);
	ck_assert_int_eq(
		api("DELETE", "/repos/o/r/git/refs/heads/topic", NULL, NULL),
		204);
	ck_assert_int_eq(
		api("GET", "/repos/o/r/git/ref/heads/topic", NULL, &o), 404);
	cJSON_Delete(o);
	free(main_sha);
	free(tree);
	free(ahead);
	free(other);
}
END_TEST

/* ------------------------------------------------ issues, pulls, repos */

/* refs/heads/BRANCH of o/r at a new commit on main (or at main itself
 * when SAME) */
static void branch(const char *name, int same)
{
	char *main_sha = tip("main"), *c = NULL, body[300], path[300];
	cJSON *o;

	if (!same) {
		snprintf(path, sizeof(path), "/repos/o/r/git/commits/%s",
			 main_sha);
		ck_assert_int_eq(api("GET", path, NULL, &o), 200);
		c = commit(str(o, "tree.sha"), main_sha, name);
		cJSON_Delete(o);
	}
	snprintf(body, sizeof(body),
		 "{\"ref\":\"refs/heads/%s\",\"sha\":\"%s\"}", name,
		 same ? main_sha : c);
	ck_assert_int_eq(api("POST", "/repos/o/r/git/refs", body, &o), 201);
	cJSON_Delete(o);
	free(c);
	free(main_sha);
}

START_TEST(test_pull_duplicate_and_no_commits_are_422)
{
	cJSON *o;

	branch("feature", 0);
	branch("same", 1);
	ck_assert_int_eq(api("POST", "/repos/o/r/issues",
			     "{\"title\":\"an issue first\"}", &o),
			 201);
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/pulls",
			     "{\"title\":\"Add feature\",\"head\":\"feature\","
			     "\"base\":\"main\",\"draft\":true}",
			     &o),
			 201);
	ck_assert_int_eq((int)num(o, "number"), 2); /* after the issue */
	ck_assert_str_eq(str(o, "state"), "open");
	ck_assert_str_eq(str(o, "head.ref"), "feature");
	ck_assert_str_eq(str(o, "base.ref"), "main");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "draft")));
	ck_assert_str_eq(str(o, "html_url"), "https://github.com/o/r/pull/2");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/pulls",
			     "{\"title\":\"Again\",\"head\":\"o:feature\","
			     "\"base\":\"main\"}",
			     &o),
			 422);
	assert_error(o, "Validation Failed");
	ck_assert_str_eq(str(o, "errors.0.resource"), "PullRequest");
	ck_assert_str_eq(str(o, "errors.0.code"), "custom");
	ck_assert_str_eq(str(o, "errors.0.message"),
			 "A pull request already exists for o:feature.");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/pulls",
			     "{\"title\":\"Empty\",\"head\":\"same\","
			     "\"base\":\"main\"}",
			     &o),
			 422);
	ck_assert_str_eq(str(o, "errors.0.message"),
			 "No commits between main and same");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/pulls",
			     "{\"title\":\"Ghost\",\"head\":\"ghost\","
			     "\"base\":\"main\"}",
			     &o),
			 422);
	ck_assert_str_eq(str(o, "errors.0.field"), "head");
	ck_assert_str_eq(str(o, "errors.0.code"), "invalid");
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET",
			     "/repos/o/r/pulls?state=open&head=o:feature",
			     NULL, &o),
			 200);
	ck_assert_int_eq(cJSON_GetArraySize(o), 1);
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/repos/o/r/issues/2/comments",
			     "{\"body\":\"looks good\"}", &o),
			 201);
	ck_assert_str_eq(str(o, "body"), "looks good");
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_search_finds_issue_by_exact_title_phrase)
{
	cJSON *o;

	ck_assert_int_eq(api("POST", "/repos/o/r/issues",
			     "{\"title\":\"Flaky test in the Parser\","
			     "\"body\":\"seen twice\",\"labels\":[\"ci\"]}",
			     &o),
			 201);
	ck_assert_int_eq((int)num(o, "number"), 1);
	ck_assert_str_eq(str(o, "labels.0.name"), "ci");
	cJSON_Delete(o);
	ck_assert_int_eq(
		api("POST", "/repos/o/r/issues",
		    "{\"title\":\"Parser is slow\",\"body\":\"a flaky "
		    "test in the parser, maybe\"}",
		    &o),
		201);
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET",
			     "/search/issues?q=repo%3Ao%2Fr+is%3Aissue+in%3A"
			     "title+%22flaky+test+in+the+parser%22&per_page=5",
			     NULL, &o),
			 200);
	ck_assert_int_eq((int)num(o, "total_count"), 1);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "incomplete_results")));
	ck_assert_str_eq(str(o, "items.0.title"), "Flaky test in the Parser");
	cJSON_Delete(o);
	/* without in:title the phrase matches the body too */
	ck_assert_int_eq(api("GET",
			     "/search/issues?q=repo%3Ao%2Fr+%22flaky+test%22",
			     NULL, &o),
			 200);
	ck_assert_int_eq((int)num(o, "total_count"), 2);
	cJSON_Delete(o);
	ck_assert_int_eq(api("PATCH", "/repos/o/r/issues/1",
			     "{\"state\":\"closed\",\"state_reason\":"
			     "\"not_planned\"}",
			     &o),
			 200);
	ck_assert_str_eq(str(o, "state_reason"), "not_planned");
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET",
			     "/search/issues?q=repo%3Ao%2Fr+is%3Aopen+parser",
			     NULL, &o),
			 200);
	ck_assert_int_eq((int)num(o, "total_count"), 1);
	ck_assert_int_eq((int)num(cJSON_GetArrayItem(
					  cJSON_GetObjectItem(o, "items"), 0),
				  "number"),
			 2);
	cJSON_Delete(o);
	ck_assert_int_eq(
		api("GET", "/repos/o/r/issues?state=closed", NULL, &o), 200);
	ck_assert_int_eq(cJSON_GetArraySize(o), 1);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_repos_create_and_statuses)
{
	char *sha = tip("main"), path[200];
	cJSON *o;

	ck_assert_int_eq(api("GET", "/user", NULL, &o), 200);
	ck_assert_str_eq(str(o, "login"), "octo");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/user/repos", "{\"name\":\"new\"}", &o),
			 201);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "private")));
	ck_assert_str_eq(str(o, "full_name"), "octo/new");
	ck_assert_str_eq(str(o, "owner.login"), "octo");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/user/repos", "{\"name\":\"new\"}", &o),
			 422);
	ck_assert_str_eq(str(o, "errors.0.message"),
			 "name already exists on this account");
	cJSON_Delete(o);
	ck_assert_int_eq(api("POST", "/orgs/acme/repos",
			     "{\"name\":\"svc\",\"private\":true}", &o),
			 201);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "private")));
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", "/repos/acme/svc", NULL, &o), 200);
	ck_assert_str_eq(str(o, "default_branch"), "main");
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", "/repos/acme/nothing", NULL, &o), 404);
	assert_error(o, "Not Found");
	cJSON_Delete(o);
	snprintf(path, sizeof(path), "/repos/o/r/statuses/%s", sha);
	ck_assert_int_eq(api("POST", path,
			     "{\"state\":\"success\",\"context\":\"sbxloop\","
			     "\"description\":\"verified\"}",
			     &o),
			 201);
	ck_assert_str_eq(str(o, "context"), "sbxloop");
	cJSON_Delete(o);
	o = gh_fake_state(&fake);
	ck_assert_str_eq(str(o, "repos.o/r.statuses.0.sha"), sha);
	ck_assert_str_eq(str(o, "repos.o/r.statuses.0.state"), "success");
	cJSON_Delete(o);
	free(sha);
}
END_TEST

START_TEST(test_bad_json_is_400_and_unknown_paths_404)
{
	cJSON *o;

	ck_assert_int_eq(api("POST", "/repos/o/r/issues", "{\"title\":", &o),
			 400);
	assert_error(o, "Problems parsing JSON");
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", "/repos/o/r/nothing/here", NULL, &o), 404);
	assert_error(o, "Not Found");
	cJSON_Delete(o);
}
END_TEST

/* ------------------------------------------- auth, log, faults, wire */

START_TEST(test_token_is_required_and_never_logged)
{
	struct call none = {"GET", "/user", NULL, "", NULL, 0};
	struct call wrong = {"GET", "/user", NULL, "wrong-token", NULL, 0};
	cJSON *o, *log;
	char *text;

	ck_assert_int_eq(call(&none, &o, NULL), 401);
	assert_error(o, "Bad credentials");
	ck_assert_str_eq(str(o, "status"), "401");
	cJSON_Delete(o);
	ck_assert_int_eq(call(&wrong, &o, NULL), 401);
	cJSON_Delete(o);
	ck_assert_int_eq(api("GET", "/user", NULL, &o), 200);
	cJSON_Delete(o);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 3);
	ck_assert_str_eq(str(log, "0.auth"), "missing");
	ck_assert_str_eq(str(log, "1.auth"), "bad");
	ck_assert_str_eq(str(log, "2.auth"), "ok");
	ck_assert_str_eq(str(log, "2.path"), "/user");
	ck_assert_int_eq((int)num(cJSON_GetArrayItem(log, 0), "status"), 401);
	ck_assert(num(cJSON_GetArrayItem(log, 2), "bytes_out") > 0);
	cJSON_Delete(log);
	text = tu_read(fake.log);
	ck_assert_ptr_null(strstr(text, TOKEN));
	ck_assert_ptr_null(strstr(text, "wrong-token"));
	ck_assert_ptr_null(strstr(text, "Bearer"));
	free(text);
}
END_TEST

START_TEST(test_fault_500_once_then_success)
{
	cJSON *o, *log;

	ck_assert_int_eq(gh_fake_set_faults(&fake,
					    "[{\"method\":\"POST\","
					    "\"path_prefix\":\"/repos/o/r/git/"
					    "blobs\",\"status\":500,"
					    "\"times\":1}]"),
			 0);
	ck_assert_int_eq(api("GET", "/user", NULL, &o), 200); /* no match */
	cJSON_Delete(o);
	ck_assert_int_eq(
		api("POST", "/repos/o/r/git/blobs", "{\"content\":\"x\"}", &o),
		500);
	ck_assert_ptr_nonnull(str(o, "message"));
	cJSON_Delete(o);
	ck_assert_int_eq(
		api("POST", "/repos/o/r/git/blobs", "{\"content\":\"x\"}", &o),
		201);
	cJSON_Delete(o);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 3);
	ck_assert_int_eq((int)num(cJSON_GetArrayItem(log, 1), "status"), 500);
	ck_assert_int_eq((int)num(cJSON_GetArrayItem(log, 2), "status"), 201);
	cJSON_Delete(log);
}
END_TEST

START_TEST(test_secondary_rate_limit_is_403_with_retry_after)
{
	struct call c = {"POST", "/repos/o/r/issues", NULL, NULL, NULL, 0};
	char *head;
	cJSON *o;

	c.body = scratch("{\"title\":\"t\"}");
	ck_assert_int_eq(gh_fake_set_faults(&fake,
					    "[{\"path_prefix\":\"/repos/o/r/"
					    "issues\",\"secondary\":true,"
					    "\"retry_after\":7,"
					    "\"reset_in\":30}]"),
			 0);
	ck_assert_int_eq(call(&c, &o, &head), 403);
	ck_assert_ptr_nonnull(strstr(str(o, "message"),
				     "You have exceeded a secondary rate "
				     "limit"));
	ck_assert_ptr_nonnull(strstr(head, "Retry-After: 7\r\n"));
	ck_assert_ptr_nonnull(strstr(head, "x-ratelimit-remaining: 0\r\n"));
	ck_assert_ptr_nonnull(strstr(head, "x-ratelimit-reset: "));
	ck_assert_ptr_nonnull(
		strstr(head, "Content-Type: application/json; charset=utf-8"));
	free(head);
	cJSON_Delete(o);
	ck_assert_int_eq(call(&c, &o, NULL), 201); /* consumed */
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_one_curl_two_urls_is_one_connection)
{
	char second[128];
	const char *const extra[] = {second, NULL};
	struct call c = {"GET", "/user", NULL, NULL, extra, 0};
	cJSON *state, *log;

	snprintf(second, sizeof(second), "%s/repos/o/r", fake.url);
	ck_assert_int_eq(call(&c, NULL, NULL), 200);
	state = gh_fake_state(&fake);
	ck_assert_int_eq((int)num(state, "requests"), 2);
	ck_assert_int_eq((int)num(state, "connections"), 1);
	cJSON_Delete(state);
	log = gh_fake_requests(&fake);
	ck_assert_int_eq(cJSON_GetArraySize(log), 2);
	ck_assert_int_eq((int)num(cJSON_GetArrayItem(log, 0), "conn"),
			 (int)num(cJSON_GetArrayItem(log, 1), "conn"));
	cJSON_Delete(log);
}
END_TEST

/* gh_fake_count, which bench/github reports from: requests and the
 * connections they came over, from a given point of the log on. */
START_TEST(test_the_request_count_sees_connections)
{
	char second[128];
	const char *const extra[] = {second, NULL};
	struct call two = {"GET", "/user", NULL, NULL, extra, 0};
	struct call one = {"GET", "/user", NULL, NULL, NULL, 0};
	int req, conns, total;

	snprintf(second, sizeof(second), "%s/repos/o/r", fake.url);
	ck_assert_int_eq(call(&two, NULL, NULL), 200);
	total = gh_fake_count(&fake, 0, &req, &conns);
	ck_assert_int_eq(total, 2);
	ck_assert_int_eq(req, 2);
	ck_assert_int_eq(conns, 1);
	ck_assert_int_eq(call(&one, NULL, NULL), 200);
	ck_assert_int_eq(call(&one, NULL, NULL), 200);
	ck_assert_int_eq(gh_fake_count(&fake, total, &req, &conns), 4);
	ck_assert_int_eq(req, 2);
	ck_assert_int_eq(conns, 2);
	ck_assert_int_eq(gh_fake_count(&fake, 0, &req, &conns), 4);
	ck_assert_int_eq(req, 4);
	ck_assert_int_eq(conns, 3);
}
END_TEST

/* A create-tree body of FILES inline files of SIZE bytes each, in
 * directories of 10; written to a file, its path (static). */
static const char *big_tree(int files, size_t size)
{
	static char path[700];
	char *content = malloc(size + 1);
	FILE *f;
	int i;

	memset(content, 'x', size);
	content[size] = '\0';
	snprintf(path, sizeof(path), "%s/big-%d.json", fake.dir, ++nfile);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"tree\":[", f);
	for (i = 0; i < files; i++) {
		content[0] = (char)('a' + i % 26); /* distinct blobs */
		content[1] = (char)('a' + i / 26 % 26);
		fprintf(f,
			"%s{\"path\":\"d%02d/f%03d.txt\",\"mode\":\"100644\","
			"\"type\":\"blob\",\"content\":\"%s\"}",
			i ? "," : "", i / 10, i, content);
	}
	fputs("]}", f);
	fclose(f);
	free(content);
	return path;
}

START_TEST(test_five_megabyte_tree_of_500_inline_files)
{
	const char *dir = git_repo();
	struct call c = {"POST", "/repos/o/r/git/trees", NULL, NULL, NULL, 0};
	char path[300];
	struct stat st;
	cJSON *o, *listing;

	c.body = big_tree(500, 10000);
	ck_assert_int_eq(stat(c.body, &st), 0);
	ck_assert(st.st_size > 5000000);
	ck_assert_int_eq(call(&c, &o, NULL), 201);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "tree")),
			 50);
	snprintf(path, sizeof(path), "/repos/o/r/git/trees/%s?recursive=1",
		 str(o, "sha"));
	ck_assert_int_eq(api("GET", path, NULL, &listing), 200);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(listing, "tree")), 550);
	ck_assert_str_eq(str(listing, "tree.1.path"), "d00/f000.txt");
	assert_git(dir,
		   "printf 'aa%9998s' '' | tr ' ' x | git hash-object --stdin",
		   str(listing, "tree.1.sha"));
	cJSON_Delete(listing);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_chunked_request_body)
{
	struct call c = {"POST", "/repos/o/r/git/trees", NULL, NULL, NULL, 1};
	cJSON *o;
	char *head;

	c.body = big_tree(40, 5000);
	ck_assert_int_eq(call(&c, &o, &head), 201);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "tree")),
			 4);
	cJSON_Delete(o);
	free(head);
	o = gh_fake_requests(&fake);
	ck_assert(num(cJSON_GetArrayItem(o, 0), "bytes_in") > 200000);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_tls_front_with_cacert)
{
	char url[128], ca[700], full[200];
	const char *argv[] = {"curl", "-sS", "--cacert",
			      ca,     "-H",  "Authorization: token " TOKEN,
			      full,   NULL};
	struct tu_run r;
	cJSON *o;

	ck_assert_int_eq(
		gh_fake_tls_start(&fake, url, sizeof(url), ca, sizeof(ca)), 0);
	ck_assert_int_eq(strncmp(url, "https://127.0.0.1:", 18), 0);
	snprintf(full, sizeof(full), "%s/user", url);
	tu_exec(&r, NULL, NULL, argv);
	ck_assert_msg(r.status == 0, "curl over TLS failed: %s", r.err);
	o = cJSON_Parse(r.out);
	ck_assert_str_eq(str(o, "login"), "octo");
	cJSON_Delete(o);
	tu_run_free(&r);
}
END_TEST

START_TEST(test_state_file_is_written_on_sigterm)
{
	char path[700], *text;
	cJSON *o, *state;
	int status;

	ck_assert_int_eq(
		api("POST", "/repos/o/r/issues", "{\"title\":\"kept\"}", &o),
		201);
	cJSON_Delete(o);
	kill(fake.pid, SIGTERM);
	ck_assert_int_eq(waitpid(fake.pid, &status, 0), fake.pid);
	fake.pid = 0;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(path, sizeof(path), "%s/state.json", fake.dir);
	text = tu_read(path);
	ck_assert_ptr_nonnull(text);
	state = cJSON_Parse(text);
	ck_assert_str_eq(str(state, "repos.o/r.issues.0.title"), "kept");
	ck_assert_str_eq(str(state, "repos.o/r.issues.0.state"), "open");
	ck_assert_str_eq(str(state, "repos.o/e.default_branch"), "main");
	ck_assert_ptr_null(strstr(text, TOKEN));
	cJSON_Delete(state);
	free(text);
}
END_TEST

static Suite *github_fake_suite(void)
{
	Suite *s = suite_create("github-fake");
	TCase *tc = tcase_create("git");

	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_blob_sha_is_git_hash_object);
	tcase_add_test(tc, test_tree_with_nested_paths_matches_git);
	tcase_add_test(tc, test_tree_sha_null_deletes_and_absent_path_is_422);
	tcase_add_test(tc, test_commit_objects_and_parent_chain);
	tcase_add_test(tc,
		       test_empty_repo_is_409_until_contents_put_makes_main);
	tcase_add_test(tc, test_refs_exist_force_and_fast_forward);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_pull_duplicate_and_no_commits_are_422);
	tcase_add_test(tc, test_search_finds_issue_by_exact_title_phrase);
	tcase_add_test(tc, test_repos_create_and_statuses);
	tcase_add_test(tc, test_bad_json_is_400_and_unknown_paths_404);
	suite_add_tcase(s, tc);
	tc = tcase_create("wire");
	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_token_is_required_and_never_logged);
	tcase_add_test(tc, test_fault_500_once_then_success);
	tcase_add_test(tc, test_secondary_rate_limit_is_403_with_retry_after);
	tcase_add_test(tc, test_one_curl_two_urls_is_one_connection);
	tcase_add_test(tc, test_the_request_count_sees_connections);
	tcase_add_test(tc, test_five_megabyte_tree_of_500_inline_files);
	tcase_add_test(tc, test_chunked_request_body);
	tcase_add_test(tc, test_tls_front_with_cacert);
	tcase_add_test(tc, test_state_file_is_written_on_sigterm);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(github_fake_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

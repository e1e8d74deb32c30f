/*
 * GitHub reporting and delivery end to end: the real `sbxloop` binary
 * runs a scripted run on the local provider with github.repo pointing at
 * tests/fakes/github-server (a fake of the GitHub REST API that keeps
 * real git objects), and the suite reads back what the fake holds: the
 * tracking issue and its comments, the delivered branch's files with
 * their modes, the pull request and the requests that made them. The
 * GitHub token is searched for in everything the run leaves, and the
 * agent sandbox's environment is dumped to prove it never held it.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "github-support.h"
#include "runtest.h"
#include "common/base64.h"
#include "testutil.h"

#define TOKEN "ghp_e2eGitHubRunToken0123456789abcdefXYZ"
#define REPO "octo/demo"

static struct gh_fake fake;

static void setup(void)
{
	rt_setup();
}

static void teardown(void)
{
	gh_fake_stop(&fake);
	rt_teardown();
}

static void start_fake(const char *token, const char *const *repos)
{
	ck_assert_msg(gh_fake_start(&fake, token, repos) == 0,
		      "the fake GitHub server did not start");
}

/*
 * scenario.json: one task t1 whose EXECUTE writes `n_files` text files
 * (dir/fNNN.txt) and out-t1.txt, and whose VERIFY runs `verify`.
 */
static void write_scenario(int n_files, const char *verify)
{
	cJSON *root = cJSON_CreateArray(), *o, *tasks, *t, *files;
	char name[64], *text;
	int i;

	o = cJSON_CreateObject();
	tasks = cJSON_AddArrayToObject(cJSON_AddObjectToObject(o, "json"),
				       "tasks");
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "id", "t1");
	cJSON_AddStringToObject(t, "title", "write @everyone <b>files</b>");
	cJSON_AddStringToObject(t, "description", "write the files");
	cJSON_AddArrayToObject(t, "depends_on");
	cJSON_AddItemToObject(
		t, "acceptance_criteria",
		cJSON_CreateStringArray((const char *[]){"out-t1.txt exists"},
					1));
	cJSON_AddItemToObject(t, "verify_commands",
			      cJSON_CreateStringArray(&verify, 1));
	cJSON_AddItemToArray(tasks, t);
	cJSON_AddItemToArray(root, o);

	o = cJSON_CreateObject();
	t = cJSON_AddObjectToObject(o, "json");
	cJSON_AddItemToObject(
		t, "steps",
		cJSON_CreateStringArray((const char *[]){"write files"}, 1));
	cJSON_AddArrayToObject(t, "expected_artifacts");
	cJSON_AddItemToObject(t, "verify_commands",
			      cJSON_CreateStringArray(&verify, 1));
	cJSON_AddItemToArray(root, o);

	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "text", "did t1");
	cJSON_AddStringToObject(o, "session_id", "sess-t1");
	files = cJSON_AddObjectToObject(o, "files");
	cJSON_AddStringToObject(files, "out-t1.txt", "ok\n");
	/* contents that read like a batch's references stay text */
	cJSON_AddStringToObject(files, "ref.txt", "${0.sha}");
	cJSON_AddStringToObject(files, "ref2.txt", "$${1.tree}");
	for (i = 0; i < n_files; i++) {
		snprintf(name, sizeof(name), "dir/f%03d.txt", i);
		cJSON_AddStringToObject(files, name, name);
	}
	cJSON_AddItemToArray(root, o);
	cJSON_AddItemToArray(
		root, cJSON_Parse("{\"json\":{\"verdict\":\"pass\",\"issues\":"
				  "[],\"feedback\":\"\"}}"));
	cJSON_AddItemToArray(root,
			     cJSON_Parse("{\"json\":{\"verdict\":\"accept\","
					 "\"issues\":[],\"feedback\":\"\"}}"));
	text = cJSON_Print(root);
	put_file("scenario.json", text);
	free(text);
	cJSON_Delete(root);
}

/* VERIFY makes an executable, a symlink, a binary file and env-agent.txt
 * (the agent sandbox's environment, which must lack the GitHub token). */
#define VERIFY_MODES                                                          \
	"printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh && "     \
	"ln -sf out-t1.txt link && printf '\\001\\002\\377\\000x' > bin.dat " \
	"&& env > env-agent.txt && test -f out-t1.txt"

static void write_config(const char *extra)
{
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "local:\n  isolation: none\n"
		 "github:\n  repo: %s\n  report: true\n  deliver: true\n"
		 "  api_url: %s\n%s",
		 REPO, fake.url, extra ? extra : "");
	rt_write_config("local", NULL, buf);
}

static int run_sbxloop(const char *token, const char *const *args)
{
	char env_tok[256];
	const char *env[] = {env_tok, "GITHUB_TOKEN=", NULL};

	snprintf(env_tok, sizeof(env_tok), "GH_TOKEN=%s", token);
	return wait_code(spawn_sbxloop(env, args));
}

static cJSON *repo_state(const char *repo)
{
	cJSON *st = gh_fake_state(&fake), *r;

	ck_assert_ptr_nonnull(st);
	r = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(st, "repos"), repo);
	ck_assert_msg(r != NULL, "the fake has no repository %s", repo);
	r = cJSON_Duplicate(r, 1);
	cJSON_Delete(st);
	return r;
}

static const cJSON *at(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(at(o, key));

	return s ? s : "";
}

/* The files of branch `branch` in the fake's state (borrowed). */
static const cJSON *branch_files(const cJSON *repo, const char *branch)
{
	char ref[128];

	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	return at(at(repo, "files"), ref);
}

/* File `path` of a branch: its mode and decoded content (caller frees). */
static char *file_of(const cJSON *files, const char *path, const char **mode,
		     size_t *len)
{
	const cJSON *f = at(files, path);

	ck_assert_msg(f != NULL, "the branch lacks %s", path);
	*mode = str(f, "mode");
	return (char *)sl_b64_decode(str(f, "content_b64"), len);
}

/* Every regular file under `dir`, recursively, must lack TOKEN. */
static void assert_tree_lacks_token(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			assert_tree_lacks_token(path);
		} else if (S_ISREG(st.st_mode)) {
			FILE *fp = fopen(path, "rb");
			char *buf;
			size_t n;

			if (!fp)
				continue;
			buf = malloc((size_t)st.st_size + 1);
			n = fread(buf, 1, (size_t)st.st_size, fp);
			fclose(fp);
			ck_assert_msg(!memmem(buf, n, TOKEN, strlen(TOKEN)),
				      "%s holds the GitHub token", path);
			free(buf);
		}
	}
	closedir(d);
}

/* How many logged requests match METHOD and a path prefix (a path,
 * when `prefix` ends with '$'). */
static int count_requests(const char *method, const char *prefix)
{
	cJSON *reqs = gh_fake_requests(&fake), *r;
	size_t len = strlen(prefix);
	int exact = len && prefix[len - 1] == '$', n = 0;

	if (exact)
		len--;
	cJSON_ArrayForEach (r, reqs)
		if ((!method || !strcmp(str(r, "method"), method)) &&
		    !strncmp(str(r, "path"), prefix, len) &&
		    (!exact || strlen(str(r, "path")) == len))
			n++;
	cJSON_Delete(reqs);
	return n;
}

START_TEST(test_report_and_deliver_end_to_end)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship the files", "--no-tui", NULL};
	cJSON *repo, *issues, *issue, *pulls, *pr;
	const cJSON *files;
	char *run, *c, branch[64], title[64];
	const char *mode;
	size_t len;

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(50, VERIFY_MODES);
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_file_has("out.txt", "pull request: #2 http");
	repo = repo_state(REPO);

	/* the tracking issue: found by title, a comment per task, closed */
	issues = (cJSON *)at(repo, "issues");
	ck_assert_int_eq(cJSON_GetArraySize(issues), 1);
	issue = cJSON_GetArrayItem(issues, 0);
	snprintf(title, sizeof(title), "sbxloop run %s", run);
	ck_assert_str_eq(str(issue, "title"), title);
	ck_assert_str_eq(str(issue, "state"), "closed");
	ck_assert_str_eq(str(issue, "state_reason"), "completed");
	ck_assert_int_eq(cJSON_GetArraySize(at(issue, "comments")), 2);
	c = cJSON_PrintUnformatted(at(issue, "comments"));
	/* the agent's title cannot mention anyone or inject markup */
	ck_assert_msg(!strstr(c, "@everyone") && !strstr(c, "<b>"),
		      "agent text reached the issue raw: %s", c);
	ck_assert_ptr_nonnull(strstr(c, "finished: **completed**"));
	ck_assert_ptr_nonnull(strstr(c, "pull request #2"));
	free(c);

	/* the branch: every file, its mode, the symlink and the binary */
	snprintf(branch, sizeof(branch), "sbxloop/%s", run);
	files = branch_files(repo, branch);
	ck_assert_msg(files != NULL, "branch %s was not delivered", branch);
	c = file_of(files, "out-t1.txt", &mode, &len);
	ck_assert_str_eq(c, "ok\n");
	ck_assert_str_eq(mode, "100644");
	free(c);
	c = file_of(files, "ref.txt", &mode, &len);
	ck_assert_str_eq(c, "${0.sha}");
	free(c);
	c = file_of(files, "ref2.txt", &mode, &len);
	ck_assert_str_eq(c, "$${1.tree}");
	free(c);
	c = file_of(files, "dir/f049.txt", &mode, &len);
	ck_assert_str_eq(c, "dir/f049.txt");
	free(c);
	c = file_of(files, "run.sh", &mode, &len);
	ck_assert_str_eq(mode, "100755");
	free(c);
	c = file_of(files, "link", &mode, &len);
	ck_assert_str_eq(mode, "120000");
	ck_assert_str_eq(c, "out-t1.txt");
	free(c);
	c = file_of(files, "bin.dat", &mode, &len);
	ck_assert_int_eq(len, 5);
	ck_assert(memcmp(c, "\001\002\377\000x", 5) == 0);
	free(c);
	/* the README of the base branch is still there (base_tree) */
	ck_assert_ptr_nonnull(at(files, "README.md"));
	/* the agent sandbox never had the GitHub token */
	c = file_of(files, "env-agent.txt", &mode, &len);
	ck_assert_msg(!strstr(c, TOKEN) && !strstr(c, "GH_TOKEN="),
		      "the agent sandbox's environment held the token");
	free(c);

	/* the pull request */
	pulls = (cJSON *)at(repo, "pulls");
	ck_assert_int_eq(cJSON_GetArraySize(pulls), 1);
	pr = cJSON_GetArrayItem(pulls, 0);
	ck_assert_str_eq(str(pr, "head"), branch);
	ck_assert_str_eq(str(pr, "base"), "main");
	ck_assert_str_eq(str(pr, "title"), "sbxloop: ship the files");
	ck_assert_ptr_nonnull(strstr(str(pr, "body"), "Tracking issue: #1"));
	ck_assert_ptr_nonnull(strstr(str(pr, "body"), "verify:"));
	ck_assert_ptr_nonnull(strstr(str(pr, "body"), "**Files ("));
	/* only the binary file needed a blob; text went inline */
	ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/git/blobs"),
			 1);
	ck_assert_int_eq(rt_event_count(run, "run.report", "issue", "1", NULL),
			 1);
	ck_assert_int_eq(rt_event_count(run, "run.deliver", "pr", "2", NULL),
			 1);

	/* the token: nowhere in the scratch dir (output, state, workspace)
	 * and nowhere in the fake's request log */
	assert_tree_lacks_token(rt_dir());
	c = rt_path("..");
	free(c);
	{
		cJSON *reqs = gh_fake_requests(&fake);
		char *text = cJSON_PrintUnformatted(reqs);

		ck_assert_ptr_null(strstr(text, TOKEN));
		free(text);
		cJSON_Delete(reqs);
	}
	cJSON_Delete(repo);
	free(run);
}
END_TEST

/* A failed run resumed finds its tracking issue again: never a second. */
START_TEST(test_resume_finds_the_same_tracking_issue)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	cJSON *repo, *issue;
	char *run;

	start_fake(TOKEN, repos);
	write_config("budgets:\n  max_replans_per_task: 0\n"
		     "  max_revisions_per_task: 0\n");
	write_scenario(1, "false");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 1);
	run = last_run();
	assert_run_state(run, "failed");
	{
		const char *rargs[] = {"resume", run, "--no-tui", NULL};

		ck_assert_int_eq(run_sbxloop(TOKEN, rargs), 1);
	}
	repo = repo_state(REPO);
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "issues")), 1);
	issue = cJSON_GetArrayItem(at(repo, "issues"), 0);
	/* a failed run leaves it open; each drive posted its summary */
	ck_assert_str_eq(str(issue, "state"), "open");
	ck_assert_int_eq(cJSON_GetArraySize(at(issue, "comments")), 3);
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "pulls")), 0);
	ck_assert_int_eq(count_requests("GET", "/search/issues"), 2);
	ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/issues$"), 1);
	cJSON_Delete(repo);
	free(run);
}
END_TEST

/*
 * A git checkout delivers its diff: a run on a clone of src/ sends what
 * changed against the run's base commit — a modification with its new
 * mode, a deletion, untracked files and a symlink — and nothing ignored
 * or unchanged.
 */
START_TEST(test_a_checkout_delivers_its_git_diff)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	cJSON *repo, *pr;
	const cJSON *files;
	char *run, *c, branch[64], cmd[1024];
	const char *mode;
	size_t len;

	start_fake(TOKEN, repos);
	/* the base: the remote's README plus two files of its own */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && mkdir src && cd src && git init -q -b main && "
		 "printf '# demo\\n' > README.md && printf 'old\\n' > run.sh "
		 "&& printf '*.log\\n' > .gitignore && mkdir conf && "
		 "printf 'x\\n' > conf/hostname && git add -A && "
		 "git -c user.name=t -c user.email=t@e commit -qm base",
		 rt_dir());
	ck_assert_int_eq(system(cmd), 0);
	write_config("sandbox:\n  workspace: src\n"
		     "  workspace_isolation: clone\n");
	write_scenario(0, "printf '#!/bin/sh\\necho new\\n' > run.sh && "
			  "chmod +x run.sh && rm README.md && "
			  "ln -s out-t1.txt link && echo x > build.log && "
			  "rm -rf conf && ln -s /etc conf");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	repo = repo_state(REPO);
	snprintf(branch, sizeof(branch), "sbxloop/%s", run);
	files = branch_files(repo, branch);
	ck_assert_ptr_nonnull(files);
	ck_assert_ptr_null(at(files, "README.md"));  /* deleted */
	ck_assert_ptr_null(at(files, "build.log"));  /* ignored */
	ck_assert_ptr_null(at(files, ".gitignore")); /* unchanged */
	/* a directory turned into a link to the host's /etc: its old file
	 * is a deletion, never the host's /etc/hostname */
	ck_assert_ptr_null(at(files, "conf/hostname"));
	c = file_of(files, "conf", &mode, &len);
	ck_assert_str_eq(mode, "120000");
	ck_assert_str_eq(c, "/etc");
	free(c);
	c = file_of(files, "run.sh", &mode, &len);
	ck_assert_str_eq(mode, "100755");
	ck_assert_str_eq(c, "#!/bin/sh\necho new\n");
	free(c);
	c = file_of(files, "link", &mode, &len);
	ck_assert_str_eq(mode, "120000");
	free(c);
	c = file_of(files, "out-t1.txt", &mode, &len);
	free(c);
	pr = cJSON_GetArrayItem(at(repo, "pulls"), 0);
	ck_assert_msg(strstr(str(pr, "body"), "**Changes (7):**"), "%s",
		      str(pr, "body"));
	ck_assert_ptr_nonnull(strstr(str(pr, "body"), "- D `README.md`"));
	ck_assert_ptr_nonnull(strstr(str(pr, "body"), "- M `run.sh`"));
	/* the remote base never had conf/hostname: GitHub refuses to delete
	 * it, so the delivery left that deletion out and went through */
	ck_assert_ptr_null(strstr(str(pr, "body"), "conf/hostname"));
	ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/git/trees"),
			 2);
	ck_assert_ptr_nonnull(strstr(str(pr, "body"), "git diff against"));
	cJSON_Delete(repo);
	free(run);
}
END_TEST

START_TEST(test_missing_repository_fails_the_run_up_front)
{
	static const char *const repos[] = {"octo/other", NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	struct rt_run r;
	char *run, *err;

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(1, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 2);
	run = last_run();
	rt_run_get(run, &r);
	ck_assert_str_eq(r.state, "failed");
	ck_assert_ptr_nonnull(strstr(r.reason, "does not exist"));
	ck_assert_ptr_nonnull(strstr(r.reason, "--create-repo"));
	rt_run_release(&r);
	/* no phase ran */
	ck_assert_int_eq(rt_attempt_count(run, "", "decompose", NULL, NULL),
			 0);
	err = read_file("err.txt");
	ck_assert_ptr_nonnull(strstr(err, "--create-repo"));
	free(err);
	free(run);
}
END_TEST

START_TEST(test_create_repo_bootstraps_an_empty_private_repository)
{
	static const char *const repos[] = {"octo/other", NULL};
	const char *args[] = {"run",           "ship",        "--no-tui",
			      "--create-repo", "--no-report", NULL};
	cJSON *repo;
	const cJSON *files;
	char *run, branch[64];

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(1, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	repo = repo_state(REPO);
	ck_assert(cJSON_IsTrue(at(repo, "private")));
	/* no tracking issue with --no-report */
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "issues")), 0);
	/* main was bootstrapped with a README, then the PR's branch */
	ck_assert_ptr_nonnull(at(branch_files(repo, "main"), "README.md"));
	snprintf(branch, sizeof(branch), "sbxloop/%s", run);
	files = branch_files(repo, branch);
	ck_assert_ptr_nonnull(at(files, "out-t1.txt"));
	ck_assert_int_eq(count_requests("PUT", "/repos/" REPO "/contents/"),
			 1);
	ck_assert_int_eq(
		rt_event_count(run, "run.deliver", "created", "1", NULL), 1);
	cJSON_Delete(repo);
	free(run);
}
END_TEST

START_TEST(test_failed_delivery_keeps_the_run_completed_and_deliver_retries)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	cJSON *repo;
	char *run, *out;
	int before;

	start_fake(TOKEN, repos);
	ck_assert_int_eq(gh_fake_set_faults(&fake,
					    "[{\"method\":\"POST\",\"path_"
					    "prefix\":\"/repos/" REPO
					    "/git/trees\",\"status\":500,"
					    "\"times\":50}]"),
			 0);
	write_config(NULL);
	write_scenario(2, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	assert_run_state(run, "completed");
	ck_assert_int_eq(
		rt_event_count(run, "run.deliver", "error", "*500*", NULL), 1);
	assert_file_has("out.txt", "delivery failed: ");
	assert_file_has("out.txt", "retry with: sbxloop deliver");
	repo = repo_state(REPO);
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "pulls")), 0);
	cJSON_Delete(repo);

	/* the retry, after GitHub recovers; then a second one reuses */
	ck_assert_int_eq(gh_fake_set_faults(&fake, "[]"), 0);
	{
		const char *dargs[] = {"deliver", run, NULL};
		char *state = rt_path("state");
		int held = tu_hold_run_lock(state, run);

		/* not while another sbxloop acts on the run */
		before = count_requests("POST", "/repos/" REPO "/");
		ck_assert_int_eq(run_sbxloop(TOKEN, dargs), 2);
		assert_file_has("err.txt", "is driven by another sbxloop");
		ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/"),
				 before);
		close(held);
		free(state);

		ck_assert_int_eq(run_sbxloop(TOKEN, dargs), 0);
		out = read_file("out.txt");
		ck_assert_ptr_nonnull(strstr(out, "delivered: PR #2"));
		/* the plain transcript's line for it */
		ck_assert_ptr_nonnull(strstr(out,
					     "run.deliver pull request #2 "
					     "http"));
		free(out);
		before = count_requests("POST", "/repos/" REPO "/pulls");
		ck_assert_int_eq(run_sbxloop(TOKEN, dargs), 0);
		/* the open PR was found by the probe: no second create */
		ck_assert_int_eq(
			count_requests("POST", "/repos/" REPO "/pulls"),
			before);
		ck_assert_int_eq(count_requests("PATCH", "/repos/" REPO
							 "/git/refs/heads/"
							 "sbxloop/"),
				 1);
	}
	repo = repo_state(REPO);
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "pulls")), 1);
	/* the retry closed the tracking issue with a note */
	ck_assert_str_eq(
		str(cJSON_GetArrayItem(at(repo, "issues"), 0), "state"),
		"closed");
	cJSON_Delete(repo);
	assert_tree_lacks_token(rt_dir());
	free(run);
}
END_TEST

START_TEST(test_a_bad_token_fails_up_front_with_what_to_check)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	struct rt_run r;
	char *run;

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(1, "true");
	ck_assert_int_eq(run_sbxloop("ghp_wrongTokenValue000000000000", args),
			 2);
	run = last_run();
	rt_run_get(run, &r);
	ck_assert_str_eq(r.state, "failed");
	ck_assert_msg(strstr(r.reason, "401") && strstr(r.reason, "GH_TOKEN"),
		      "reason: %s", r.reason);
	rt_run_release(&r);
	free(run);
}
END_TEST

START_TEST(test_transient_failures_are_retried)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	cJSON *repo;
	char *run;

	start_fake(TOKEN, repos);
	ck_assert_int_eq(
		gh_fake_set_faults(
			&fake,
			"[{\"method\":\"POST\",\"path_prefix\":\"/repos/"
			"octo/demo/issues\",\"status\":502,\"times\":1},"
			"{\"method\":\"POST\",\"path_prefix\":\"/repos/"
			"octo/demo/pulls\",\"status\":403,\"secondary\":"
			"true,\"retry_after\":1,\"times\":1}]"),
		0);
	write_config(NULL);
	write_scenario(1, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	repo = repo_state(REPO);
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "issues")), 1);
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "pulls")), 1);
	ck_assert_int_ge(rt_event_count(run, "gh.retry", NULL), 2);
	cJSON_Delete(repo);
	free(run);
}
END_TEST

/* 500 text files: no blob, a handful of requests and jobs. */
START_TEST(test_a_500_file_delivery_is_a_few_requests)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", "--no-report", NULL};
	cJSON *repo;
	const cJSON *files;
	char *run, branch[64];
	int n = 0, conns = 0;

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(500, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	repo = repo_state(REPO);
	snprintf(branch, sizeof(branch), "sbxloop/%s", run);
	files = branch_files(repo, branch);
	ck_assert_int_eq(cJSON_GetArraySize((cJSON *)files), 500 + 3 + 1);
	gh_fake_count(&fake, 0, &n, &conns);
	/* the repository probe of run_start, then the delivery */
	ck_assert_msg(n <= 12, "%d requests for 500 text files", n);
	{
		/* the repository probe, then the delivery's two jobs */
		static const char *const want[] = {
			"GET /repos/" REPO,
			"GET /repos/" REPO "/git/ref/heads/sbxloop/",
			"GET /repos/" REPO "/pulls",
			"GET /repos/" REPO "/git/ref/heads/main",
			"GET /repos/" REPO "/git/commits/",
			"POST /repos/" REPO "/git/trees",
			"POST /repos/" REPO "/git/commits",
			"POST /repos/" REPO "/git/refs",
			"POST /repos/" REPO "/pulls",
		};
		cJSON *reqs = gh_fake_requests(&fake);
		size_t i;

		ck_assert_int_eq(cJSON_GetArraySize(reqs), 9);
		for (i = 0; i < 9; i++) {
			const cJSON *r = cJSON_GetArrayItem(reqs, (int)i);
			char got[512];

			snprintf(got, sizeof(got), "%s %s", str(r, "method"),
				 str(r, "path"));
			ck_assert_msg(!strncmp(got, want[i], strlen(want[i])),
				      "request %zu: %s, not %s", i, got,
				      want[i]);
		}
		cJSON_Delete(reqs);
	}
	ck_assert_msg(conns <= 3, "%d connections (jobs)", conns);
	ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/git/blobs"),
			 0);
	cJSON_Delete(repo);
	free(run);
}
END_TEST

START_TEST(test_dry_run_prints_the_plan_and_calls_nothing)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run",          "ship",        "--no-tui",
			      "--no-deliver", "--no-report", NULL};
	char *run, *out;
	int before;

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(2, VERIFY_MODES);
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	before = count_requests(NULL, "/");
	{
		const char *dargs[] = {"deliver", run, "--dry-run", NULL};

		ck_assert_int_eq(run_sbxloop("", dargs), 0);
	}
	out = read_file("out.txt");
	ck_assert_ptr_nonnull(strstr(out, "A 100755 run.sh"));
	ck_assert_ptr_nonnull(strstr(out, "A 120000 link"));
	ck_assert_ptr_nonnull(strstr(out, "bin.dat (blob)"));
	ck_assert_ptr_nonnull(strstr(out, "dir/f001.txt"));
	ck_assert_int_eq(count_requests(NULL, "/"), before);
	free(out);
	free(run);
}
END_TEST

/* github.dry_run in a run that reports but does not deliver: no plan. */
START_TEST(test_dry_run_without_deliver_prints_no_plan)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", "--no-deliver", NULL};
	char *out;

	start_fake(TOKEN, repos);
	write_config("  dry_run: true\n");
	write_scenario(2, VERIFY_MODES);
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	out = read_file("out.txt");
	ck_assert_msg(!strstr(out, "A 100755 run.sh"),
		      "a delivery plan in a run without delivery:\n%s", out);
	free(out);
	ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/pulls"), 0);
}
END_TEST

START_TEST(test_without_github_no_reporter_and_no_github_sandbox)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run", "ship", "--no-tui", NULL};
	char *run;

	start_fake(TOKEN, repos);
	rt_write_config("local", NULL, "local:\n  isolation: none\n");
	write_scenario(1, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	ck_assert_int_eq(
		rt_event_count(run, "sandbox.ready", "role", "github", NULL),
		0);
	ck_assert_int_eq(count_events(run, "run.report"), 0);
	ck_assert_int_eq(count_requests(NULL, "/"), 0);
	free(run);
}
END_TEST

/* doctor checks the github sandbox's HTTP client on the local provider */
START_TEST(test_doctor_checks_the_github_client)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"doctor", NULL};
	const char *env[] = {
		"GH_TOKEN=" TOKEN,
		"SBXLOOP_WORKER_LIBCURL=/nonexistent/libcurl.so.4", NULL};
	char *out;

	start_fake(TOKEN, repos);
	write_config(NULL);
	run_sbxloop(TOKEN, args);
	out = read_file("out.txt");
	ck_assert_msg(strstr(out, "GitHub client") && strstr(out, "libcurl/"),
		      "%s", out);
	free(out);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 1);
	out = read_file("out.txt");
	ck_assert_msg(strstr(out, "GitHub client") && strstr(out, "FAIL"),
		      "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "libcurl"));
	free(out);
}
END_TEST

/* The run's branch appeared after the probe: 422, then force-moved. */
START_TEST(test_a_branch_made_meanwhile_is_force_moved)
{
	static const char *const repos[] = {REPO, NULL};
	const char *args[] = {"run",          "ship",        "--no-tui",
			      "--no-deliver", "--no-report", NULL};
	char *run, body[256], url[256], auth[128];
	const char *sha;
	cJSON *repo;
	struct tu_run r;

	start_fake(TOKEN, repos);
	write_config(NULL);
	write_scenario(2, "true");
	ck_assert_int_eq(run_sbxloop(TOKEN, args), 0);
	run = last_run();
	repo = repo_state(REPO);
	sha = str(at(repo, "refs"), "refs/heads/main");
	snprintf(body, sizeof(body),
		 "{\"ref\":\"refs/heads/sbxloop/%s\",\"sha\":\"%s\"}", run,
		 sha);
	snprintf(url, sizeof(url), "%s/repos/" REPO "/git/refs", fake.url);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", TOKEN);
	{
		const char *curl[] = {"curl", "-sf", "-X", "POST", "-H",
				      auth,   "-d",  body, url,    NULL};

		tu_exec(&r, NULL, NULL, curl);
		ck_assert_msg(r.status == 0, "curl: %s", r.err);
		tu_run_free(&r);
	}
	cJSON_Delete(repo);
	/* the probe does not see it */
	ck_assert_int_eq(gh_fake_set_faults(
				 &fake, "[{\"method\":\"GET\",\"path_prefix\""
					":\"/repos/" REPO "/git/ref/heads/"
					"sbxloop/\",\"status\":404,"
					"\"times\":1}]"),
			 0);
	{
		const char *dargs[] = {"deliver", run, "--no-report", NULL};

		ck_assert_int_eq(run_sbxloop(TOKEN, dargs), 0);
	}
	ck_assert_int_eq(count_requests("POST", "/repos/" REPO "/git/refs"),
			 2); /* ours above, then the delivery's 422 */
	ck_assert_int_eq(count_requests("PATCH", "/repos/" REPO "/git/refs/"),
			 1);
	repo = repo_state(REPO);
	{
		char branch[64];

		snprintf(branch, sizeof(branch), "sbxloop/%s", run);
		ck_assert_ptr_nonnull(
			at(branch_files(repo, branch), "out-t1.txt"));
	}
	ck_assert_int_eq(cJSON_GetArraySize(at(repo, "pulls")), 1);
	cJSON_Delete(repo);
	free(run);
}
END_TEST

static Suite *github_run_suite(void)
{
	Suite *s = suite_create("github-run");
	TCase *tc = tcase_create("e2e");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_report_and_deliver_end_to_end);
	tcase_add_test(tc, test_resume_finds_the_same_tracking_issue);
	tcase_add_test(tc, test_a_checkout_delivers_its_git_diff);
	tcase_add_test(tc, test_missing_repository_fails_the_run_up_front);
	tcase_add_test(
		tc, test_create_repo_bootstraps_an_empty_private_repository);
	tcase_add_test(
		tc,
		test_failed_delivery_keeps_the_run_completed_and_deliver_retries);
	tcase_add_test(tc, test_a_bad_token_fails_up_front_with_what_to_check);
	tcase_add_test(tc, test_transient_failures_are_retried);
	tcase_add_test(tc, test_a_500_file_delivery_is_a_few_requests);
	tcase_add_test(tc, test_dry_run_prints_the_plan_and_calls_nothing);
	tcase_add_test(tc, test_dry_run_without_deliver_prints_no_plan);
	tcase_add_test(tc,
		       test_without_github_no_reporter_and_no_github_sandbox);
	tcase_add_test(tc, test_doctor_checks_the_github_client);
	tcase_add_test(tc, test_a_branch_made_meanwhile_is_force_moved);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(github_run_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

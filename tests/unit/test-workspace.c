/*
 * Workspace isolation with real git in temporary repositories: each
 * mode of sandbox.workspace_isolation, the dirty-tree refusal, the
 * credential-free origin of a clone, reuse of a run's clone, and the
 * promise that the source checkout is never touched (its HEAD, refs,
 * status and file listing are identical before and after).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "testutil.h"
#include "engine/workspace.h"

static char dir[256];
static char src[512];
static char state[512];

static void setup(void)
{
	char tmpl[] = "/tmp/sbx-ws-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(src, sizeof(src), "%s/project", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	/* a user identity for the fixture's commits only */
	setenv("GIT_AUTHOR_NAME", "Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "test@example.invalid", 1);
	setenv("GIT_COMMITTER_NAME", "Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "test@example.invalid", 1);
	setenv("HOME", dir, 1);
	tu_sh("mkdir -p '%s/src' && cd '%s' && git init -q -b main . && "
	      "echo 'print(1)' > src/app.py && echo '*.log' > .gitignore && "
	      "git add -A && git commit -q -m init",
	      src, src);
}

static void teardown(void)
{
	tu_sh("chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
}

/* HEAD, refs, status and a listing of every file with size and mtime */
static char *fingerprint(void)
{
	return tu_capture(
		"cd '%s' && git rev-parse HEAD && git for-each-ref && "
		"git --no-optional-locks status --porcelain "
		"--untracked-files=all && find . -printf "
		"'%%p %%s %%T@ %%m\\n' | LC_ALL=C sort | sha256sum",
		src);
}

static const char *ev(const struct sl_workspace *ws, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(ws->clone_event, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int ev_bool(const struct sl_workspace *ws, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItem(ws->clone_event, key));
}

START_TEST(test_unset_workspace_gets_a_fresh_directory)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	struct stat st;

	ck_assert_int_eq(
		sl_workspace_isolate(NULL, "auto", state, "rabc", &ws, &err),
		0);
	ck_assert_ptr_nonnull(strstr(ws.path, "/state/runs/rabc/workspace"));
	ck_assert_int_eq(stat(ws.path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(ws.cloned, 0);
	ck_assert_ptr_null(ws.clone_event);
	sl_workspace_release(&ws);
}
END_TEST

START_TEST(test_clone_mode_needs_a_workspace)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};

	ck_assert_int_eq(
		sl_workspace_isolate(NULL, "clone", state, "rabc", &ws, &err),
		SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "requires "
						  "sandbox.workspace"));
	ck_assert_ptr_null(ws.path);
}
END_TEST

START_TEST(test_auto_clones_a_clean_checkout)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *head = tu_capture("git -C '%s' rev-parse HEAD", src);
	char *branch, *base, *file, *fetch;

	ck_assert_msg(sl_workspace_isolate(src, "auto", state, "rabc", &ws,
					   &err) == 0,
		      "%s", err.message);
	ck_assert_int_eq(ws.cloned, 1);
	ck_assert_ptr_nonnull(strstr(ws.path, "/state/runs/rabc/workspace"));
	ck_assert_ptr_null(ws.warning);
	branch =
		tu_capture("git -C '%s' rev-parse --abbrev-ref HEAD", ws.path);
	ck_assert_str_eq(branch, "sbxloop/rabc");
	base = tu_capture("git -C '%s' rev-parse refs/sbxloop/base", ws.path);
	ck_assert_str_eq(base, head);
	file = tu_capture("cat '%s/src/app.py'", ws.path);
	ck_assert_str_eq(file, "print(1)");
	ck_assert_str_eq(ev(&ws, "source"), src);
	ck_assert_str_eq(ev(&ws, "target"), ws.path);
	ck_assert_str_eq(ev(&ws, "commit"), head);
	ck_assert_str_eq(ev(&ws, "branch"), "sbxloop/rabc");
	ck_assert_int_eq(ev_bool(&ws, "dirty"), 0);
	ck_assert_int_eq(ev_bool(&ws, "reused"), 0);
	ck_assert_ptr_nonnull(ev(&ws, "message"));
	ck_assert_str_eq(ev(&ws, "fetch"), ws.fetch_cmd);
	/* the printed command really brings the work back */
	tu_sh("cd '%s' && echo more >> src/app.py && git commit -qam work",
	      ws.path);
	fetch = tu_capture("cd '%s' && %s 2>&1 && git -C '%s' rev-parse "
			   "FETCH_HEAD",
			   dir, ws.fetch_cmd, src);
	ck_assert_ptr_nonnull(strstr(ws.fetch_cmd, "fetch"));
	ck_assert_ptr_nonnull(strstr(ws.fetch_cmd, "sbxloop/rabc"));
	free(head);
	head = tu_capture("git -C '%s' rev-parse HEAD", ws.path);
	ck_assert_ptr_nonnull(strstr(fetch, head));
	free(head);
	free(branch);
	free(base);
	free(file);
	free(fetch);
	sl_workspace_release(&ws);
}
END_TEST

START_TEST(test_auto_refuses_a_dirty_tree)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	struct stat st;
	char *clone = sl_xasprintf("%s/runs/rabc/workspace", state);

	tu_sh("echo changed >> '%s/src/app.py'", src);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "uncommitted changes"));
	ck_assert_ptr_nonnull(strstr(err.message, "commit or stash"));
	ck_assert_ptr_nonnull(strstr(err.message, "clone"));
	ck_assert_ptr_nonnull(strstr(err.message, "in-place"));
	ck_assert_int_ne(stat(clone, &st), 0);
	/* an untracked file is dirty too */
	tu_sh("cd '%s' && git checkout -q -- . && touch new.txt", src);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		SBXLOOP_EINVAL);
	/* but ignored files and the state dir inside it are not */
	tu_sh("cd '%s' && rm new.txt && touch debug.log && mkdir -p "
	      ".sbxloop && touch .sbxloop/x",
	      src);
	ck_assert_msg(sl_workspace_isolate(src, "auto", state, "rabc", &ws,
					   &err) == 0,
		      "%s", err.message);
	sl_workspace_release(&ws);
	free(clone);
}
END_TEST

START_TEST(test_clone_mode_proceeds_from_head_with_a_warning)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *file;

	tu_sh("echo uncommitted >> '%s/src/app.py'", src);
	ck_assert_msg(sl_workspace_isolate(src, "clone", state, "rabc", &ws,
					   &err) == 0,
		      "%s", err.message);
	ck_assert_ptr_nonnull(ws.warning);
	ck_assert_ptr_nonnull(strstr(ws.warning, "uncommitted changes"));
	ck_assert_int_eq(ev_bool(&ws, "dirty"), 1);
	ck_assert_ptr_nonnull(strstr(ev(&ws, "message"), "not included"));
	file = tu_capture("cat '%s/src/app.py'", ws.path);
	ck_assert_str_eq(file, "print(1)");
	free(file);
	sl_workspace_release(&ws);
}
END_TEST

START_TEST(test_in_place_works_on_the_source)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	struct stat st;
	char *clone = sl_xasprintf("%s/runs/rabc", state);

	tu_sh("echo dirty >> '%s/src/app.py'", src);
	ck_assert_int_eq(sl_workspace_isolate(src, "in-place", state, "rabc",
					      &ws, &err),
			 0);
	ck_assert_str_eq(ws.path, src);
	ck_assert_int_eq(ws.cloned, 0);
	ck_assert_ptr_null(ws.fetch_cmd);
	ck_assert_int_ne(stat(clone, &st), 0);
	sl_workspace_release(&ws);
	free(clone);
}
END_TEST

START_TEST(test_clone_origin_has_credentials_stripped)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *origin;

	tu_sh("git -C '%s' remote add origin "
	      "'https://x-access-token:ghp_secret@github.com/o/r.git'",
	      src);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		0);
	origin = tu_capture("git -C '%s' remote get-url origin", ws.path);
	ck_assert_str_eq(origin, "https://github.com/o/r.git");
	free(origin);
	sl_workspace_release(&ws);
}
END_TEST

START_TEST(test_clone_without_source_origin_has_no_remote)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *remotes;

	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		0);
	remotes = tu_capture("git -C '%s' remote", ws.path);
	ck_assert_str_eq(remotes, "");
	free(remotes);
	sl_workspace_release(&ws);
}
END_TEST

START_TEST(test_userinfo_is_stripped_from_scheme_urls)
{
	static const char *const t[][2] = {
		{"https://u:p@example.com/o/r.git",
		 "https://example.com/o/r.git"},
		{"https://tok@example.com:8443/r",
		 "https://example.com:8443/r"},
		{"ssh://git@example.com/r.git", "ssh://example.com/r.git"},
		{"https://a@b@example.com/r", "https://example.com/r"},
		{"https://example.com/p@th", "https://example.com/p@th"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"/srv/git/r.git", "/srv/git/r.git"},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(t); i++) {
		char *s = sl_url_strip_userinfo(t[i][0]);

		ck_assert_msg(!strcmp(s, t[i][1]), "%s -> %s", t[i][0], s);
		free(s);
	}
}
END_TEST

START_TEST(test_existing_clone_is_reused_with_its_work)
{
	struct sl_workspace ws, again;
	struct sbxloop_error err = {0, ""};
	char *head, *log;

	head = tu_capture("git -C '%s' rev-parse HEAD", src);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		0);
	tu_sh("cd '%s' && echo x > work.txt && git add work.txt && "
	      "git commit -qm work",
	      ws.path);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &again, &err),
		0);
	ck_assert_str_eq(again.path, ws.path);
	ck_assert_int_eq(ev_bool(&again, "reused"), 1);
	ck_assert_int_eq(ev_bool(&again, "dirty"), 0);
	ck_assert_str_eq(ev(&again, "commit"), head);
	log = tu_capture("git -C '%s' log --format=%%s -1", again.path);
	ck_assert_str_eq(log, "work");
	free(head);
	free(log);
	sl_workspace_release(&ws);
	sl_workspace_release(&again);
}
END_TEST

START_TEST(test_source_checkout_is_never_touched)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *before, *after;

	tu_sh("git -C '%s' remote add origin "
	      "'https://u:p@example.com/o/r.git' && touch '%s/debug.log'",
	      src, src);
	sleep(1); /* mtimes would show a write */
	before = fingerprint();
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		0);
	tu_sh("cd '%s' && echo y > more.txt && git add more.txt && "
	      "git commit -qm more",
	      ws.path);
	sl_workspace_release(&ws);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rabc", &ws, &err),
		0);
	sl_workspace_release(&ws);
	tu_sh("echo dirty >> '%s/src/app.py'", src);
	free(before);
	before = fingerprint();
	ck_assert_int_eq(
		sl_workspace_isolate(src, "clone", state, "rdef", &ws, &err),
		0);
	sl_workspace_release(&ws);
	ck_assert_int_eq(
		sl_workspace_isolate(src, "auto", state, "rghi", &ws, &err),
		SBXLOOP_EINVAL);
	after = fingerprint();
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_subtree_and_empty_repository_are_refused)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *sub = sl_xasprintf("%s/src", src);
	char *empty = sl_xasprintf("%s/empty", dir);

	ck_assert_int_eq(
		sl_workspace_isolate(sub, "auto", state, "rabc", &ws, &err),
		SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "subtree"));
	ck_assert_ptr_nonnull(strstr(err.message, "in-place"));
	tu_sh("mkdir -p '%s' && git -C '%s' init -q", empty, empty);
	ck_assert_int_eq(
		sl_workspace_isolate(empty, "auto", state, "rabc", &ws, &err),
		SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "no commits"));
	free(sub);
	free(empty);
}
END_TEST

START_TEST(test_plain_directory_is_used_in_place_unless_clone)
{
	struct sl_workspace ws;
	struct sbxloop_error err = {0, ""};
	char *plain = sl_xasprintf("%s/plain", dir);

	tu_sh("mkdir -p '%s'", plain);
	ck_assert_int_eq(
		sl_workspace_isolate(plain, "auto", state, "rabc", &ws, &err),
		0);
	ck_assert_str_eq(ws.path, plain);
	sl_workspace_release(&ws);
	ck_assert_int_eq(
		sl_workspace_isolate(plain, "clone", state, "rabc", &ws, &err),
		SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "not inside a git "
						  "checkout"));
	free(plain);
}
END_TEST

static Suite *workspace_suite(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("isolation");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unset_workspace_gets_a_fresh_directory);
	tcase_add_test(tc, test_clone_mode_needs_a_workspace);
	tcase_add_test(tc, test_auto_clones_a_clean_checkout);
	tcase_add_test(tc, test_auto_refuses_a_dirty_tree);
	tcase_add_test(tc, test_clone_mode_proceeds_from_head_with_a_warning);
	tcase_add_test(tc, test_in_place_works_on_the_source);
	tcase_add_test(tc, test_clone_origin_has_credentials_stripped);
	tcase_add_test(tc, test_clone_without_source_origin_has_no_remote);
	tcase_add_test(tc, test_userinfo_is_stripped_from_scheme_urls);
	tcase_add_test(tc, test_existing_clone_is_reused_with_its_work);
	tcase_add_test(tc, test_source_checkout_is_never_touched);
	tcase_add_test(tc, test_subtree_and_empty_repository_are_refused);
	tcase_add_test(tc, test_plain_directory_is_used_in_place_unless_clone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(workspace_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

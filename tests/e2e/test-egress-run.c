/*
 * End-to-end suite of enforced and observed egress on the local
 * provider: the real `sbxloop` ($SBXLOOP_BIN) under real bubblewrap with
 * `local.network: proxy`, loopback HTTP servers standing in for named
 * hosts (SBXLOOP_PROXY_RESOLVE), and a scripted agent whose commands run
 * real curl in the sandbox (tests/scenarios/egress_observed.json). It
 * checks what curl got (the grant works in EXECUTE; other hosts, a
 * denied wildcard and the same host in SCRUTINIZE are refused), what the
 * servers saw, the policy.* events with their task and phase, `sbxloop
 * egress RUN` (text and --json) and the summary's line.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runtest.h"
#include "testutil.h"

/* A loopback HTTP server answering 200 and counting requests. */
struct host {
	int fd;
	unsigned port;
	volatile int hits;
	pthread_t th;
};

static struct host allowed, other, evil;

static void *serve(void *arg)
{
	struct host *h = arg;
	char buf[4096];
	int c;

	while ((c = accept(h->fd, NULL, NULL)) >= 0) {
		static const char ok[] = "HTTP/1.0 200 OK\r\n"
					 "Content-Length: 3\r\n\r\nok\n";

		if (read(c, buf, sizeof(buf)) > 0) {
			h->hits++;
			if (write(c, ok, sizeof(ok) - 1) < 0) {
				/* the client went away */
			}
		}
		close(c);
	}
	return NULL;
}

static void host_start(struct host *h)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	memset(h, 0, sizeof(*h));
	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(h->fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(h->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(h->fd, 16), 0);
	ck_assert_int_eq(getsockname(h->fd, (struct sockaddr *)&sa, &len), 0);
	h->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&h->th, NULL, serve, h), 0);
}

static void host_stop(struct host *h)
{
	shutdown(h->fd, SHUT_RDWR);
	close(h->fd);
	pthread_join(h->th, NULL);
}

static void setup(void)
{
	rt_setup();
	host_start(&allowed);
	host_start(&other);
	host_start(&evil);
}

static void teardown(void)
{
	host_stop(&allowed);
	host_stop(&other);
	host_stop(&evil);
	rt_teardown();
}

/* The task-and-phase trail of a run's policy.* events of `type`. */
static char *trail(const char *run, const char *type)
{
	return rt_event_trail(run, type, "phase");
}

START_TEST(test_grants_hold_in_execute_only_and_egress_reports_it)
{
	char resolve[512], *run, *codes, *text, *t;
	const char *env[] = {resolve, NULL};
	const char *args[] = {"run", "fetch the fixture", "--no-tui", NULL};
	struct tu_run r;
	cJSON *rep, *task, *o;

	snprintf(resolve, sizeof(resolve),
		 "SBXLOOP_PROXY_RESOLVE=allowed.test:80=127.0.0.1:%u,"
		 "other.test:80=127.0.0.1:%u,x.evil.test:80=127.0.0.1:%u",
		 allowed.port, other.port, evil.port);
	copy_scenario("egress_observed");
	rt_write_config(
		"local", "[local]",
		"local:\n  isolation: bwrap\n  network: proxy\n"
		"policy:\n  allow: [\"allowed.test\", \"unused.test\"]\n"
		"  deny: [\"*.evil.test\"]\n");
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 0);
	run = last_run();
	assert_run_state(run, "completed");
	/* what curl got in EXECUTE: through, then refused twice */
	{
		char *ws = rt_workspace(run), rel[8300];

		ck_assert_int_eq(strncmp(ws, rt_dir(), strlen(rt_dir())), 0);
		snprintf(rel, sizeof(rel), "%s/execute-codes.txt",
			 ws + strlen(rt_dir()) + 1);
		codes = read_file(rel);
		free(ws);
	}
	ck_assert_msg(!strcmp(codes, "200\n403\n403\n"),
		      "curl's codes in EXECUTE: '%s'", codes);
	free(codes);
	/* EXECUTE reached the server once; SCRUTINIZE never did */
	ck_assert_int_eq(allowed.hits, 1);
	ck_assert_int_eq(other.hits, 0);
	ck_assert_int_eq(evil.hits, 0);
	/* each blocked attempt names its host, task and phase */
	t = trail(run, "policy.blocked");
	ck_assert_msg(!strcmp(t, "execute,execute,scrutinize"),
		      "policy.blocked trail: %s", t);
	free(t);
	ck_assert_int_eq(rt_event_count(run, "policy.blocked", "domain",
					"other.test", "task_id", "t1", NULL),
			 1);
	ck_assert_int_eq(rt_event_count(run, "policy.blocked", "domain",
					"allowed.test", "phase", "scrutinize",
					NULL),
			 1);
	ck_assert_int_eq(rt_event_count(run, "policy.connect", "domain",
					"allowed.test", "phase", "execute",
					"count", "1", NULL),
			 1);
	/* the summary says what was tried without a declaration */
	assert_file_has("out.txt", "egress: 2 attempt(s) to 2 host(s) no "
				   "plan declared were blocked (other.test, "
				   "x.evil.test)");
	/* the report */
	{
		const char *eargs[] = {"egress", run, NULL};

		rt_capture(&r, eargs);
		ck_assert_int_eq(r.status, 0);
		text = r.out;
		ck_assert_msg(strstr(text, "declared  allowed.test") &&
				      strstr(text, "used 1 time(s)"),
			      "%s", text);
		ck_assert_msg(strstr(text, "declared  unused.test") &&
				      strstr(text, "never used"),
			      "%s", text);
		ck_assert_msg(strstr(text, "attempted other.test") &&
				      strstr(text, "BLOCKED 1 (1 in execute)"),
			      "%s", text);
		ck_assert_msg(strstr(text, "attempted allowed.test") &&
				      strstr(text, "(1 in scrutinize)"),
			      "%s", text);
		tu_run_free(&r);
	}
	{
		const char *eargs[] = {"egress", run, "--json", NULL};

		rt_capture(&r, eargs);
		ck_assert_int_eq(r.status, 0);
		rep = cJSON_Parse(r.out);
		ck_assert_ptr_nonnull(rep);
		tu_run_free(&r);
	}
	task = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "tasks"), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(task, "task_id")->valuestring,
			 "t1");
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(task, "declared"), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "decision")->valuestring,
			 "granted");
	ck_assert_int_eq(cJSON_GetArraySize(
				 cJSON_GetObjectItem(rep, "declared_unused")),
			 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
				 rep, "blocked_undeclared")),
			 2);
	cJSON_Delete(rep);
	free(run);
}
END_TEST

/* The file `rel` of the run's workspace (caller frees). */
static char *ws_file(const char *run, const char *rel)
{
	char *ws = rt_workspace(run), path[8400], *text;

	ck_assert_int_eq(strncmp(ws, rt_dir(), strlen(rt_dir())), 0);
	snprintf(path, sizeof(path), "%s/%s", ws + strlen(rt_dir()) + 1, rel);
	text = read_file(path);
	free(ws);
	return text;
}

/*
 * sandbox.lanes with two lanes on a git project: t1's EXECUTE holds a
 * grant of allowed.test for 3 s while t2, which declared nothing, tries
 * the host from its own EXECUTE. In the shared sandbox it gets through
 * (the documented cost of sharing); with a sandbox per lane it is
 * refused, each lane's sandbox is made, attested and removed, and the
 * grant went to t1's sandbox only.
 */
START_TEST(test_per_lane_sandboxes_keep_a_grant_to_its_lane)
{
	static const char *const modes[] = {"shared", "per-lane"};
	int per_lane = _i == 1;
	char resolve[512], extra[512], *run, *codes;
	const char *env[] = {resolve, NULL};
	const char *args[] = {"run", "two lanes", "--no-tui", NULL};

	snprintf(resolve, sizeof(resolve),
		 "SBXLOOP_PROXY_RESOLVE=allowed.test:80=127.0.0.1:%u",
		 allowed.port);
	rt_git_repo();
	copy_scenario("lanes_grants");
	snprintf(extra, sizeof(extra),
		 "local:\n  isolation: bwrap\n  network: proxy\n"
		 "policy:\n  allow: [\"allowed.test\"]\n"
		 "sandbox:\n  workspace: repo\n  lanes: %s\n"
		 "budgets:\n  max_parallel_tasks: 2\n",
		 modes[_i]);
	rt_write_config("local", "[local]", extra);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 0);
	run = last_run();
	assert_run_state(run, "completed");
	codes = ws_file(run, "codes-t1.txt");
	ck_assert_str_eq(codes, "200\n");
	free(codes);
	codes = ws_file(run, "codes-t2.txt");
	ck_assert_msg(!strcmp(codes, per_lane ? "403\n" : "200\n"),
		      "t2 (%s) got '%s'", modes[_i], codes);
	free(codes);
	ck_assert_int_eq(allowed.hits, per_lane ? 1 : 2);
	/* per lane: two sandboxes made, attested, removed; the grant and
	 * its revoke in lane 1's or lane 2's, never the run's */
	ck_assert_int_eq(
		rt_event_count(run, "sandbox.ready", "lane", "lane1", NULL) +
			rt_event_count(run, "sandbox.ready", "lane", "lane2",
				       NULL),
		per_lane ? 2 : 0);
	ck_assert_int_eq(
		rt_event_count(run, "sandbox.attested", "lane", "lane2", NULL),
		per_lane ? 1 : 0);
	ck_assert_int_eq(
		rt_event_count(run, "sandbox.removed", "lane", "lane1", NULL) +
			rt_event_count(run, "sandbox.removed", "lane", "lane2",
				       NULL),
		per_lane ? 2 : 0);
	{
		char agent[64];

		snprintf(agent, sizeof(agent), "sbxloop-%s-agent", run);
		ck_assert_int_eq(rt_event_count(run, "policy.allow", "domain",
						"allowed.test", "sandbox",
						agent, NULL),
				 per_lane ? 0 : 1);
		ck_assert_int_eq(rt_event_count(run, "policy.revoke", "domain",
						"allowed.test", "task_id",
						"t1", NULL),
				 1);
	}
	free(run);
}
END_TEST

START_TEST(test_egress_refuses_an_unknown_run)
{
	struct tu_run r;
	const char *args[] = {"egress", "r0000000x", NULL};

	rt_write_config("local", NULL, NULL);
	rt_capture(&r, args);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "unknown run"));
	tu_run_free(&r);
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress run");
	TCase *tc = tcase_create("proxy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
		       test_grants_hold_in_execute_only_and_egress_reports_it);
	tcase_add_test(tc, test_egress_refuses_an_unknown_run);
	tcase_add_loop_test(
		tc, test_per_lane_sandboxes_keep_a_grant_to_its_lane, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(egress_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

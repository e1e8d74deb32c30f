/*
 * The egress proxy of `local.network: proxy`, spoken to from the host
 * over its socket, with loopback servers standing in for named hosts:
 * what it serves and refuses, the live policy (grants, revokes, deny),
 * the record and policy.blocked events, hostile request heads, and the
 * instance's configuration and capabilities.
 */
#include "config.h"

#include "host/core.h"
#include "host/loader.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy-support.h"

static struct test_server allowed, other, echo;
static char sock[PATHBUF];
static char resp[65536];
/* past the proxy's 16 KiB cap on a request head */
#define HEAD_HUGE 20000

static void proxy_setup(void)
{
	setup();
	memset(&pinst, 0, sizeof(pinst));
	pops = NULL;
}

static void proxy_teardown(void)
{
	sl_instance_destroy(&pinst);
	teardown();
}

static TCase *proxy_tcase(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, proxy_setup, proxy_teardown);
	tcase_set_timeout(tc, 120);
	return tc;
}

/* Named hosts allowed.test, other.test (HTTP) and echo.test (echo). */
static void hosts(void)
{
	char spec[512];

	server_start(&allowed, "allowed", 0);
	server_start(&other, "other", 0);
	server_start(&echo, "echo", 1);
	snprintf(spec, sizeof(spec),
		 "allowed.test:80=127.0.0.1:%u,other.test:80=127.0.0.1:%u,"
		 "echo.test:443=127.0.0.1:%u,ok.corp.test=127.0.0.1:%u,"
		 "bad.corp.test=127.0.0.1:%u,corp.test=127.0.0.1:%u",
		 allowed.port, other.port, echo.port, allowed.port,
		 allowed.port, allowed.port);
	resolve_set(spec);
}

/* A proxy sandbox "s" seeded with `seed` (NULL-terminated). */
static void sandbox(const char *const *seed)
{
	struct sbxloop_sandbox_info info;

	ck_assert_msg(make_proxy_sandbox("s", seed, &info) == 0, "%s",
		      err.message);
	ck_assert_uint_eq(info.capabilities & SBXLOOP_CAP_EGRESS_ENFORCED,
			  SBXLOOP_CAP_EGRESS_ENFORCED);
	proxy_socket("s", sock, sizeof(sock));
}

static int get(const char *host)
{
	char req[512];

	snprintf(req, sizeof(req),
		 "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", host, host);
	return proxy_ask(sock, req, resp, sizeof(resp));
}

/* Run one job in "s": its blocked attempts are reported as it returns */
static void run_a_job(void)
{
	struct sbxloop_proc_result res;
	struct lines l;

	ck_assert_msg(run_sh("s", "true", 60, NULL, &l, &res) == 0, "%s",
		      err.message);
	ck_assert_int_eq(res.exit_code, 0);
	clear(&res);
}

static char *record(void)
{
	char path[PATHBUF];

	snprintf(path, sizeof(path), "%s/s/egress-record", sl_root);
	return read_text(path);
}

/* ---- configuration ---------------------------------------------------- */

START_TEST(test_network_proxy_without_bwrap_is_a_config_error)
{
	core = open_core("local:\n  isolation: none\n  network: proxy\n");
	ck_assert_int_eq(sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX,
					     "local", &inst, &err),
			 SBXLOOP_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "network 'proxy'"));
	ck_assert_ptr_nonnull(strstr(err.message, "local.isolation: bwrap"));
}
END_TEST

START_TEST(test_proxy_instance_claims_enforced_revocable_egress)
{
	start_proxy_core(NULL);
	ck_assert_uint_eq(ops->capabilities(inst.ctx),
			  SBXLOOP_CAP_FILESYSTEM_CONFINED |
				  SBXLOOP_CAP_WORKSPACE_MOUNTED |
				  SBXLOOP_CAP_DIES_WITH_PARENT |
				  SBXLOOP_CAP_WORKSPACE_READ_ONLY |
				  SBXLOOP_CAP_GIT_READ_ONLY |
				  SBXLOOP_CAP_EGRESS_ENFORCED |
				  SBXLOOP_CAP_EGRESS_REVOCABLE);
}
END_TEST

/* ---- serving and refusing --------------------------------------------- */

START_TEST(test_allowed_host_by_absolute_uri_is_served)
{
	const char *seed[] = {"allowed.test", NULL};
	const char *req = "GET http://ALLOWED.test./x?y=1 HTTP/1.1\r\n"
			  "Host: allowed.test\r\n"
			  "Proxy-Connection: keep-alive\r\n"
			  "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
			  "User-Agent: t\r\n\r\n";

	hosts();
	start_proxy_core(NULL);
	sandbox(seed);
	ck_assert_int_eq(proxy_ask(sock, req, resp, sizeof(resp)), 200);
	ck_assert_ptr_nonnull(strstr(resp, "hello from allowed"));
	/* origin-form upstream, hop-by-hop and proxy headers dropped */
	ck_assert_msg(
		strncmp(allowed.last_head, "GET /x?y=1 HTTP/1.1\r\n", 21) == 0,
		"%s", allowed.last_head);
	ck_assert_ptr_nonnull(strstr(allowed.last_head, "User-Agent: t\r\n"));
	ck_assert_ptr_nonnull(
		strstr(allowed.last_head, "Connection: close\r\n"));
	ck_assert_ptr_null(strstr(allowed.last_head, "Proxy-"));
}
END_TEST

START_TEST(test_host_not_allowed_gets_403_and_is_reported)
{
	const char *seed[] = {"allowed.test", NULL};
	char *rec;

	hosts();
	start_proxy_core(NULL);
	sandbox(seed);
	ck_assert_int_eq(get("other.test"), 403);
	ck_assert_ptr_nonnull(strstr(resp, "other.test"));
	ck_assert_uint_eq(other.hits, 0);
	ck_assert_int_eq(get("allowed.test"), 200);
	ck_assert_int_eq(get("allowed.test"), 200);
	/* reported on the provider's own thread, when a job returns */
	ck_assert_ptr_null(strstr(emitted, "policy.blocked"));
	run_a_job();
	ck_assert_msg(strstr(emitted, "policy.blocked\t{\"domain\":\"other."
				      "test\",\"sandbox\":\"s\"") != NULL,
		      "%s", emitted);
	/* the allowed ones are counted, not reported one by one */
	ck_assert_ptr_null(strstr(emitted, "policy.blocked\t{\"domain\":"
					   "\"allowed.test\""));
	ck_assert_msg(strstr(emitted, "policy.connect\t{\"domain\":"
				      "\"allowed.test\",\"sandbox\":\"s\","
				      "\"count\":2,") != NULL,
		      "%s", emitted);
	/* told once: the next flush has nothing new */
	{
		size_t before = strlen(emitted);

		run_a_job();
		ck_assert_ptr_null(strstr(emitted + before, "policy.connect"));
	}
	rec = record();
	ck_assert_ptr_nonnull(rec);
	ck_assert_ptr_nonnull(strstr(rec, "\nother.test\t0\t1\t"));
	ck_assert_ptr_nonnull(strstr(rec, "\nallowed.test\t2\t0\t"));
}
END_TEST

/* Send len bytes of a pattern through `fd` and read them back. */
static void echo_through(int fd, size_t len)
{
	static char out[65536], in[65536];
	size_t done = 0, i;

	for (i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7 + 3);
	while (done < len) {
		size_t n = len - done < sizeof(out) ? len - done : sizeof(out);
		size_t got = 0;

		ck_assert_int_eq(send(fd, out, n, MSG_NOSIGNAL), (ssize_t)n);
		while (got < n) {
			ssize_t r = recv(fd, in + got, n - got, 0);

			ck_assert_int_gt(r, 0);
			got += (size_t)r;
		}
		ck_assert_int_eq(memcmp(in, out, n), 0);
		done += n;
	}
}

/* CONNECT host:443 on a fresh connection; the fd after the 200. */
static int tunnel(const char *host, int *status)
{
	char req[256], buf[256];
	int fd = proxy_connect(sock);
	size_t got = 0;
	ssize_t n;

	snprintf(req, sizeof(req),
		 "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n", host,
		 host);
	ck_assert_int_eq(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, 1, 0)) == 1) {
		got++;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[got] = '\0';
	*status = -1;
	sscanf(buf, "HTTP/1.%*d %d", status);
	return fd;
}

START_TEST(test_connect_to_an_allowed_host_relays_both_ways)
{
	const char *seed[] = {"echo.test", NULL};
	int fd, status;

	hosts();
	start_proxy_core(NULL);
	sandbox(seed);
	fd = tunnel("echo.test", &status);
	ck_assert_int_eq(status, 200);
	echo_through(fd, 4u << 20);
	/* the client's end of stream reaches the server, and back */
	shutdown(fd, SHUT_WR);
	ck_assert_int_eq(recv(fd, resp, sizeof(resp), 0), 0);
	close(fd);
}
END_TEST

START_TEST(test_grant_then_revoke_flips_the_next_request)
{
	int fd, status;

	hosts();
	start_proxy_core(NULL);
	sandbox(NULL);
	ck_assert_int_eq(get("allowed.test"), 403);
	ck_assert_int_eq(give("s", "allowed.test"), 0);
	ck_assert_int_eq(get("allowed.test"), 200);
	ck_assert_int_eq(take_back("s", "allowed.test"), 0);
	ck_assert_int_eq(get("allowed.test"), 403);
	/* a revoke also ends the tunnels it no longer allows */
	ck_assert_int_eq(give("s", "echo.test"), 0);
	fd = tunnel("echo.test", &status);
	ck_assert_int_eq(status, 200);
	echo_through(fd, 1000);
	ck_assert_int_eq(take_back("s", "echo.test"), 0);
	ck_assert_int_le(recv(fd, resp, sizeof(resp), 0), 0);
	close(fd);
	fd = tunnel("echo.test", &status);
	ck_assert_int_eq(status, 403);
	close(fd);
}
END_TEST

START_TEST(test_a_denied_host_stays_blocked_under_a_granted_wildcard)
{
	hosts();
	start_proxy_core("policy:\n  deny: [bad.corp.test]\n");
	sandbox(NULL);
	ck_assert_int_eq(give("s", "*.corp.test"), 0);
	ck_assert_int_eq(get("ok.corp.test"), 200);
	ck_assert_int_eq(get("corp.test"), 200);
	ck_assert_int_eq(get("bad.corp.test"), 403);
	ck_assert_int_eq(give("s", "bad.corp.test"), 0);
	ck_assert_int_eq(get("bad.corp.test"), 403);
	ck_assert_int_eq(get("BAD.corp.test."), 403);
}
END_TEST

START_TEST(test_hostile_heads_are_refused_and_the_proxy_goes_on)
{
	static const struct {
		const char *req;
		int status;
	} t[] = {
		{"GARBAGE\r\n\r\n", 400},
		{"\r\n\r\n", 400},
		{"GET http://allowed.test/ HTTP/1.1\nHost: x\r\n\r\n", 400},
		{"GET http://allowed.test/ HTTP/9.9\r\n\r\n", 400},
		{"GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"GET https://allowed.test/ HTTP/1.1\r\n\r\n", 400},
		{"GET ftp://allowed.test/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://user:pw@allowed.test/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://allowed.test@evil.test/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://allowed.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		 400},
		{"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test:81"
		 "\r\n\r\n",
		 400},
		{"GET http://allowed.test/ HTTP/1.1\r\nno colon\r\n\r\n", 400},
		{"GET http://allowed.test/ HTTP/1.1\r\n folded: x\r\n\r\n",
		 400},
		{"GET http://allow\x01"
		 "ed.test/ HTTP/1.1\r\n\r\n",
		 400},
		{"GET http://allow_ed.test/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://allowed.test:0/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://allowed.test:99999/ HTTP/1.1\r\n\r\n", 400},
		{"GET http://allowed.test:8080/ HTTP/1.1\r\n\r\n", 403},
		{"GET http://127.0.0.1/ HTTP/1.1\r\n\r\n", 403},
		{"GET http://2130706433/ HTTP/1.1\r\n\r\n", 403},
		{"GET http://0x7f.1/ HTTP/1.1\r\n\r\n", 403},
		{"GET http://[::1]/ HTTP/1.1\r\n\r\n", 403},
		{"GET http://localhost/ HTTP/1.1\r\n\r\n", 403},
		{"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", 403},
		{"CONNECT [::1]:443 HTTP/1.1\r\n\r\n", 403},
		{"CONNECT allowed.test:22 HTTP/1.1\r\n\r\n", 403},
		{"CONNECT allowed.test:80 HTTP/1.1\r\n\r\n", 403},
		{"CONNECT allowed.test HTTP/1.1\r\n\r\n", 400},
		{"CONNECT allowed.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n"
		 "\r\n",
		 400},
	};
	const char *seed[] = {"allowed.test", "echo.test", NULL};
	char huge[HEAD_HUGE];
	size_t i;

	hosts();
	start_proxy_core(NULL);
	sandbox(seed);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int got = proxy_ask(sock, t[i].req, resp, sizeof(resp));

		ck_assert_msg(got == t[i].status, "%s: %d, not %d: %s",
			      t[i].req, got, t[i].status, resp);
	}
	/* a head past the cap: 431, whatever follows */
	snprintf(huge, sizeof(huge),
		 "GET http://allowed.test/ HTTP/1.1\r\nX-Big: ");
	memset(huge + strlen(huge), 'a', sizeof(huge) - strlen(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	ck_assert_int_eq(proxy_ask(sock, huge, resp, sizeof(resp)), 431);
	/* a NUL byte in the method */
	{
		static const char nul[] = "GE\0T http://allowed.test/ HTTP/1.1"
					  "\r\n\r\n";
		int fd = proxy_connect(sock);
		ssize_t n;

		ck_assert_int_eq(send(fd, nul, sizeof(nul) - 1, 0),
				 (ssize_t)sizeof(nul) - 1);
		n = recv(fd, resp, sizeof(resp) - 1, 0);
		ck_assert_int_gt(n, 12);
		ck_assert_int_eq(strncmp(resp, "HTTP/1.1 400", 12), 0);
		close(fd);
	}
	/* a client that leaves half way is no problem either */
	close(proxy_connect(sock));
	/* nothing reached the allowed host; the proxy still serves */
	ck_assert_uint_eq(allowed.hits, 0);
	ck_assert_int_eq(get("allowed.test"), 200);
	ck_assert_uint_eq(allowed.hits, 1);
	/* an IP literal is recorded as a blocked attempt */
	run_a_job();
	ck_assert_ptr_nonnull(strstr(emitted, "\"domain\":\"127.0.0.1\""));
	ck_assert_ptr_nonnull(strstr(record(), "\nallowed.test\t1\t"));
}
END_TEST

/* ---- lifecycle and the granter ---------------------------------------- */

START_TEST(test_removing_the_sandbox_stops_its_proxy)
{
	int fd, idle, status;

	hosts();
	start_proxy_core(NULL);
	sandbox(NULL);
	ck_assert_int_eq(give("s", "echo.test"), 0);
	/* an open tunnel and an idle client do not hold the removal up */
	fd = tunnel("echo.test", &status);
	ck_assert_int_eq(status, 200);
	idle = proxy_connect(sock);
	ck_assert_int_eq(ops->sandbox_remove(inst.ctx, "s", &err), 0);
	ck_assert(!exists(sock));
	ck_assert_int_le(recv(fd, resp, sizeof(resp), 0), 0);
	ck_assert_int_le(recv(idle, resp, sizeof(resp), 0), 0);
	close(fd);
	close(idle);
	ck_assert_int_eq(give("s", "echo.test"), SBXLOOP_EUNSUPPORTED);
}
END_TEST

START_TEST(test_granter_refuses_sandboxes_without_a_proxy)
{
	start_proxy_core(NULL);
	ck_assert_int_eq(give("nothing-here", "allowed.test"),
			 SBXLOOP_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "local.network: proxy"));
	ck_assert_int_eq(take_back("nothing-here", "allowed.test"),
			 SBXLOOP_EUNSUPPORTED);
}
END_TEST

static Suite *proxy_suite(void)
{
	Suite *s = suite_create("local egress proxy");
	TCase *tc = proxy_tcase("proxy");

	tcase_add_test(tc, test_network_proxy_without_bwrap_is_a_config_error);
	tcase_add_test(tc,
		       test_proxy_instance_claims_enforced_revocable_egress);
	tcase_add_test(tc, test_allowed_host_by_absolute_uri_is_served);
	tcase_add_test(tc, test_host_not_allowed_gets_403_and_is_reported);
	tcase_add_test(tc, test_connect_to_an_allowed_host_relays_both_ways);
	tcase_add_test(tc, test_grant_then_revoke_flips_the_next_request);
	tcase_add_test(
		tc, test_a_denied_host_stays_blocked_under_a_granted_wildcard);
	tcase_add_test(tc,
		       test_hostile_heads_are_refused_and_the_proxy_goes_on);
	tcase_add_test(tc, test_removing_the_sandbox_stops_its_proxy);
	tcase_add_test(tc, test_granter_refuses_sandboxes_without_a_proxy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proxy_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * `local.network: proxy` end to end under real bubblewrap: a job's curl
 * reaches an allowed name through the bridge and the host's proxy, over
 * plain HTTP and over CONNECT with TLS, is refused any other name, and
 * has no route out at all without the proxy. Never skipped: bwrap,
 * curl and openssl are part of the test image.
 */
#include "config.h"

#include "host/core.h"
#include "host/loader.h"

#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy-support.h"

static struct test_server allowed, blocked, wide;

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

/* Run `script` in proxy sandbox "s"; its stdout in l->out. */
static int job(const char *script, struct lines *l)
{
	struct sbxloop_proc_result res;
	int code;

	ck_assert_msg(run_sh("s", script, 90, NULL, l, &res) == 0, "%s",
		      err.message);
	code = res.exit_code;
	clear(&res);
	return code;
}

static void proxy_sandbox(const char *const *seed)
{
	struct sbxloop_sandbox_info info;

	start_proxy_core(NULL);
	ck_assert_msg(make_proxy_sandbox("s", seed, &info) == 0, "%s",
		      err.message);
}

START_TEST(test_curl_reaches_an_allowed_name_and_no_other)
{
	const char *seed[] = {"allowed.test", NULL};
	char spec[256];
	struct lines l;

	server_start(&allowed, "allowed", 0);
	server_start(&blocked, "blocked", 0);
	snprintf(spec, sizeof(spec),
		 "allowed.test:80=127.0.0.1:%u,blocked.test:80=127.0.0.1:%u",
		 allowed.port, blocked.port);
	resolve_set(spec);
	proxy_sandbox(seed);
	ck_assert_int_eq(
		job("env | grep -i _proxy= | sort; "
		    "curl -sS --max-time 20 http://allowed.test/; "
		    "curl -sS --max-time 20 -o /dev/null -w 'blocked:%{http_code}"
		    "\\n' http://blocked.test/",
		    &l),
		0);
	ck_assert_msg(strstr(l.out, "hello from allowed") != NULL, "%s\n%s",
		      l.out, l.err);
	ck_assert_ptr_nonnull(strstr(l.out, "blocked:403"));
	ck_assert_ptr_nonnull(
		strstr(l.out, "HTTPS_PROXY=http://127.0.0.1:3128\n"));
	ck_assert_ptr_nonnull(strstr(l.out, "no_proxy=localhost,127.0.0.1"));
	ck_assert_uint_eq(allowed.hits, 1);
	ck_assert_uint_eq(blocked.hits, 0);
	/* the job's blocked attempt, reported as the job returned */
	ck_assert_msg(strstr(emitted, "policy.blocked\t{\"domain\":\"blocked."
				      "test\",\"sandbox\":\"s\"") != NULL,
		      "%s", emitted);
}
END_TEST

START_TEST(test_curl_https_goes_through_connect_and_a_grant)
{
	char spec[256];
	struct lines l;
	unsigned port;
	pid_t tls = tls_server_start(&port);
	int code;

	snprintf(spec, sizeof(spec),
		 "allowed.test:443=127.0.0.1:%u,blocked.test:443=127.0.0.1:%u",
		 port, port);
	resolve_set(spec);
	proxy_sandbox(NULL);
	ck_assert_int_eq(give("s", "allowed.test"), 0);
	/* -k: the test's certificate; what matters is the tunnel */
	code = job("curl -sSk --max-time 20 https://allowed.test/ | "
		   "grep -q 's_server' && echo tls-ok; "
		   "curl -sSk --max-time 20 https://blocked.test/; "
		   "echo blocked-exit:$?",
		   &l);
	tls_server_stop(tls);
	ck_assert_int_eq(code, 0);
	ck_assert_msg(strncmp(l.out, "tls-ok\n", 7) == 0, "%s\n%s", l.out,
		      l.err);
	/* curl: (56) CONNECT tunnel failed, response 403 */
	ck_assert_ptr_nonnull(strstr(l.out, "blocked-exit:56"));
	ck_assert_ptr_nonnull(strstr(l.err, "403"));
}
END_TEST

/* This host's first IPv4 address other than loopback, or "". */
static void host_address(char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;

	buf[0] = '\0';
	if (getifaddrs(&ifa) != 0)
		return;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in *sa = (void *)i->ifa_addr;

		if (!sa || sa->sin_family != AF_INET ||
		    ntohl(sa->sin_addr.s_addr) >> 24 == 127)
			continue;
		inet_ntop(AF_INET, &sa->sin_addr, buf, (socklen_t)len);
		break;
	}
	freeifaddrs(ifa);
}

START_TEST(test_without_the_proxy_there_is_no_route_out)
{
	const char *seed[] = {"allowed.test", NULL};
	char script[1024], addr[64];
	struct sockaddr_in sa;
	struct lines l;
	int fd;

	/* a server on every host address, reachable from the host */
	server_start_on(&wide, "wide", 0, 1);
	host_address(addr, sizeof(addr));
	proxy_sandbox(seed);
	/* the job's own loopback has nothing on the host's port */
	snprintf(script, sizeof(script),
		 "curl -sS --noproxy '*' --max-time 5 "
		 "http://127.0.0.1:%u/ ; echo lo:$?; "
		 "if [ -n '%s' ]; then curl -sS --noproxy '*' --max-time 5 "
		 "http://%s:%u/; echo ip:$?; fi; "
		 "cat /proc/net/route | wc -l",
		 wide.port, addr, addr, wide.port);
	ck_assert_int_eq(job(script, &l), 0);
	ck_assert_msg(strstr(l.out, "lo:7\n") != NULL, "%s\n%s", l.out, l.err);
	/* 7: cannot connect (network unreachable): no route but lo's */
	if (addr[0])
		ck_assert_msg(strstr(l.out, "ip:7\n") != NULL, "%s\n%s", l.out,
			      l.err);
	ck_assert_ptr_nonnull(strstr(l.out, "\n1\n"));
	ck_assert_uint_eq(wide.hits, 0);
	/* the same server, from the host: it is there */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)wide.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}
END_TEST

START_TEST(test_a_job_exit_status_passes_through_the_bridge)
{
	struct lines l;

	proxy_sandbox(NULL);
	ck_assert_int_eq(job("echo out; echo err >&2; exit 7", &l), 7);
	ck_assert_str_eq(l.out, "out\n");
	ck_assert_str_eq(l.err, "err\n");
}
END_TEST

static Suite *proxy_bwrap_suite(void)
{
	Suite *s = suite_create("local egress proxy under bubblewrap");
	TCase *tc = tcase_create("proxy-bwrap");

	tcase_add_checked_fixture(tc, proxy_setup, proxy_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_curl_reaches_an_allowed_name_and_no_other);
	tcase_add_test(tc, test_curl_https_goes_through_connect_and_a_grant);
	tcase_add_test(tc, test_without_the_proxy_there_is_no_route_out);
	tcase_add_test(tc, test_a_job_exit_status_passes_through_the_bridge);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proxy_bwrap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * The fake sbx's network: what Docker Sandboxes' host proxy does for a
 * sandbox's HTTP and HTTPS traffic, and `sbx policy log`.
 *
 * Real sbx (0.38; docs.docker.com/ai/sandboxes/security/policy.md and
 * .../governance/monitoring.md) sends a sandbox's HTTP(S) through a host
 * proxy that allows or blocks each host by the network policy rules and
 * logs every decision; `sbx policy log [SANDBOX] --json` shows them
 * aggregated, one entry per host and decision (PolicyLogEntry of the
 * Sandboxes API reference: count, decision, domain, firstSeen,
 * lastSeen, proxyType, reason). The pages excerpted for this fake do not
 * show the CLI's top-level JSON shape nor the field naming the host:
 * this fake prints {"entries": [...]} (the API's
 * ListPolicyLogEntriesResponse) with the host in "resource" and the
 * sandbox in "sandbox", and sbxloop's parser (plugins/sbx/policy.c)
 * accepts an array or {"entries"} and "resource", "host" or "target".
 *
 * Here `exec` gives the command HTTP_PROXY and HTTPS_PROXY pointing at a
 * listener this process serves until the command exits. Each request
 * (CONNECT host:port, or an absolute-URI request) is decided on the
 * rules `policy allow|deny|rm network` recorded in policies.jsonl (deny
 * wins; `*.d` and `**.d` cover every name under d; nothing else is
 * allowed: the balanced preset adds nothing here), appended to
 * netlog.jsonl, and answered: 403 when blocked, else a 200 from the
 * fake itself (it never reaches the network).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sbx.h"

#define HEAD_MAX 8192

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int net_open(unsigned *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A JSONL file of the state as an array (missing: empty). */
static cJSON *load_lines(const char *name)
{
	char *path = xprintf("%s/%s", state_dir, name);
	char *text = read_file(path), *line, *save = NULL;
	cJSON *all = cJSON_CreateArray();

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		if (o)
			cJSON_AddItemToArray(all, o);
	}
	free(text);
	free(path);
	return all;
}

/* Does rule `r` cover host `h`? Exact, or *.d / **.d for names under d. */
static int covers(const char *r, const char *h)
{
	const char *d = NULL;
	size_t hl = strlen(h), dl;

	if (!strncmp(r, "**.", 3))
		d = r + 3;
	else if (!strncmp(r, "*.", 2))
		d = r + 2;
	if (!d)
		return !strcasecmp(r, h);
	dl = strlen(d);
	return hl > dl + 1 && h[hl - dl - 1] == '.' &&
	       !strcasecmp(h + hl - dl, d);
}

/* The rules of `sandbox` (and global ones) for `action`, as recorded. */
static int ruled(const char *sandbox, const char *host, const char *action)
{
	cJSON *recs = load_lines("policies.jsonl"), *rec, *r;
	int hit = 0;

	cJSON_ArrayForEach (rec, recs) {
		const char *a = meta_str(rec, "action");
		const char *scope = meta_str(rec, "scope");

		if (strcmp(scope, "global") && strcmp(scope, sandbox))
			continue;
		cJSON_ArrayForEach (r, cJSON_GetObjectItemCaseSensitive(
					       rec, "resources")) {
			if (!cJSON_IsString(r) ||
			    !covers(r->valuestring, host))
				continue;
			if (!strcmp(a, action))
				hit = 1;
			else if (!strcmp(a, "rm"))
				hit = 0;
		}
	}
	cJSON_Delete(recs);
	return hit;
}

/* Read a request head (to the blank line); 0 when one arrived. */
static int read_head(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			return -1;
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return 0;
	}
	return -1;
}

/* The host a request head asks for, into host (lowercase, no port). */
static int request_host(const char *head, char *host, size_t len)
{
	const char *p = strchr(head, ' '), *e;
	size_t n, i;

	if (!p)
		return -1;
	p++;
	if (!strncmp(head, "CONNECT ", 8)) {
		e = p + strcspn(p, ": ");
	} else {
		const char *s = strstr(p, "://");

		if (!s || s > strchr(p, ' '))
			return -1;
		p = s + 3;
		e = p + strcspn(p, ":/ ");
	}
	n = (size_t)(e - p);
	if (!n || n >= len)
		return -1;
	for (i = 0; i < n; i++)
		host[i] =
			(char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
	host[n] = '\0';
	return 0;
}

static void serve_one(int c, const char *sandbox)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n"
				 "Connection: close\r\n\r\nfake sbx ok\n";
	static const char no[] =
		"HTTP/1.1 403 Forbidden\r\n"
		"Content-Length: 0\r\nConnection: close\r\n\r\n";
	char head[HEAD_MAX], host[256];
	int allowed;
	cJSON *rec;

	if (read_head(c, head, sizeof(head)) < 0 ||
	    request_host(head, host, sizeof(host)) < 0)
		return;
	allowed =
		!ruled(sandbox, host, "deny") && ruled(sandbox, host, "allow");
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "sandbox", sandbox);
	cJSON_AddStringToObject(rec, "host", host);
	cJSON_AddStringToObject(rec, "decision", allowed ? "allow" : "block");
	cJSON_AddStringToObject(rec, "proxy",
				strncmp(head, "CONNECT ", 8) ? "forward"
							     : "connect");
	cJSON_AddNumberToObject(rec, "ts", now_s());
	append_line("netlog.jsonl", rec);
	cJSON_Delete(rec);
	if (write(c, allowed ? ok : no,
		  allowed ? sizeof(ok) - 1 : sizeof(no) - 1) < 0) {
		/* the client went away */
	}
}

int net_serve(int lfd, const char *sandbox, pid_t child)
{
	int st = 0;

	for (;;) {
		struct pollfd p = {lfd, POLLIN, 0};
		pid_t w = waitpid(child, &st, WNOHANG);

		if (w == child)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (poll(&p, 1, 20) > 0) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0) {
				serve_one(c, sandbox);
				close(c);
			}
		}
	}
	close(lfd);
	return st;
}

/* RFC 3339 in UTC with milliseconds, as the API's Timestamp. */
static void rfc3339(double t, char *buf, size_t len)
{
	time_t s = (time_t)t;
	struct tm tm;
	char base[24];
	unsigned ms = (unsigned)((t - (double)s) * 1000) % 1000;

	gmtime_r(&s, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%.19s.%03uZ", base, ms);
}

/* policy log [SANDBOX] [--json] [--limit N] [-q] [--type all|network] */
int cmd_policy_log(int argc, char **argv)
{
	const char *only = NULL;
	int json = 0, i, limit = 0;
	cJSON *log = load_lines("netlog.jsonl"), *agg = cJSON_CreateArray();
	cJSON *e, *a, *out;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
			limit = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--type") && i + 1 < argc)
			i++;
		else if (argv[i][0] != '-')
			only = argv[i];
	}
	if (only) {
		cJSON *meta = box_meta(only);

		if (!meta) {
			cJSON_Delete(log);
			cJSON_Delete(agg);
			return not_found(only);
		}
		cJSON_Delete(meta);
	}
	cJSON_ArrayForEach (e, log) {
		const char *sb = meta_str(e, "sandbox");
		const char *h = meta_str(e, "host");
		const char *d = meta_str(e, "decision");
		double ts = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(e, "ts"));
		char stamp[40];

		if (only && strcmp(sb, only))
			continue;
		cJSON_ArrayForEach (a, agg)
			if (!strcmp(meta_str(a, "resource"), h) &&
			    !strcmp(meta_str(a, "decision"), d) &&
			    !strcmp(meta_str(a, "sandbox"), sb))
				break;
		rfc3339(ts, stamp, sizeof(stamp));
		if (!a) {
			a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "sandbox", sb);
			cJSON_AddStringToObject(a, "resource", h);
			cJSON_AddStringToObject(a, "domain", "network");
			cJSON_AddStringToObject(a, "decision", d);
			cJSON_AddStringToObject(a, "proxyType",
						meta_str(e, "proxy"));
			cJSON_AddStringToObject(
				a, "reason",
				!strcmp(d, "allow")
					? "matched allow rule"
					: "no matching allow rule (default deny)");
			cJSON_AddNumberToObject(a, "count", 0);
			cJSON_AddStringToObject(a, "firstSeen", stamp);
			cJSON_AddStringToObject(a, "lastSeen", stamp);
			cJSON_AddItemToArray(agg, a);
		}
		cJSON_SetNumberValue(
			cJSON_GetObjectItemCaseSensitive(a, "count"),
			cJSON_GetNumberValue(
				cJSON_GetObjectItemCaseSensitive(a, "count")) +
				1);
		cJSON_ReplaceItemInObjectCaseSensitive(
			a, "lastSeen", cJSON_CreateString(stamp));
	}
	while (limit > 0 && cJSON_GetArraySize(agg) > limit)
		cJSON_DeleteItemFromArray(agg, 0);
	if (json) {
		char *text;

		out = cJSON_CreateObject();
		cJSON_AddItemToObject(out, "entries", agg);
		text = cJSON_PrintUnformatted(out);
		puts(text);
		free(text);
		cJSON_Delete(out);
	} else {
		puts("SANDBOX  HOST  DECISION  COUNT  LAST SEEN");
		cJSON_ArrayForEach (a, agg)
			printf("%s  %s  %s  %.0f  %s\n",
			       meta_str(a, "sandbox"), meta_str(a, "resource"),
			       meta_str(a, "decision"),
			       cJSON_GetNumberValue(
				       cJSON_GetObjectItemCaseSensitive(
					       a, "count")),
			       meta_str(a, "lastSeen"));
		cJSON_Delete(agg);
	}
	cJSON_Delete(log);
	return 0;
}

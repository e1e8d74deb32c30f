/*
 * What a sandbox's traffic did, from sbx itself: `sbx policy log SANDBOX
 * --json` (PEERS.md; the Sandboxes API's PolicyLogEntry: count,
 * decision, firstSeen, lastSeen, proxyType, reason), read just before
 * the sandbox is removed and reported as one policy.observed event per
 * entry, so `sbxloop egress RUN` can set what sbx saw against what the
 * plans declared. The CLI's JSON is read tolerantly: a top-level array
 * or {"entries": [...]}, the host in "resource", "host" or "target",
 * counts as numbers or strings, times as RFC 3339. Best effort: a
 * failure is logged and teardown goes on.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <sbxloop/events.h>

#include "sbx.h"

#define NETLOG_MAX 500 /* entries reported per sandbox */

static const char *field(const cJSON *o, const char *const *keys)
{
	for (; *keys; keys++) {
		const char *v = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(o, *keys));

		if (v && *v)
			return v;
	}
	return NULL;
}

/* RFC 3339 ("2026-12-05T09:01:33.5Z", "+01:00") as epoch seconds. */
static double rfc3339(const char *s)
{
	struct tm tm;
	const char *p;
	double frac = 0;
	time_t t;
	int sign, hh, mm;

	if (!s)
		return 0;
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return 0;
	if (*p == '.') {
		char *end;

		frac = strtod(p, &end);
		p = end;
	}
	t = timegm(&tm);
	if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) == 2)
			t -= sign * (hh * 3600 + mm * 60);
	}
	return (double)t + frac;
}

static double count_of(const cJSON *e)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "count");

	if (cJSON_IsNumber(c))
		return c->valuedouble;
	if (cJSON_IsString(c))
		return strtod(c->valuestring, NULL);
	return 1;
}

static void report(struct sbxp *s, const char *sandbox, const cJSON *e)
{
	static const char *const host_keys[] = {"resource", "host", "target",
						NULL};
	static const char *const first_keys[] = {"firstSeen", "first_seen",
						 NULL};
	static const char *const last_keys[] = {"lastSeen", "last_seen", NULL};
	static const char *const type_keys[] = {"proxyType", "proxy_type",
						NULL};
	const char *host = field(e, host_keys);
	const char *decision = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(e, "decision"));
	cJSON *d;
	char *text;

	if (!host)
		return;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "sandbox", sandbox);
	cJSON_AddStringToObject(d, "domain", host);
	cJSON_AddStringToObject(d, "decision", decision ? decision : "");
	cJSON_AddNumberToObject(d, "count", count_of(e));
	cJSON_AddNumberToObject(d, "first_ts", rfc3339(field(e, first_keys)));
	cJSON_AddNumberToObject(d, "last_ts", rfc3339(field(e, last_keys)));
	if (field(e, type_keys))
		cJSON_AddStringToObject(d, "proxy_type", field(e, type_keys));
	if (cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(e, "reason")))
		cJSON_AddStringToObject(
			d, "reason",
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				e, "reason")));
	cJSON_AddStringToObject(d, "source", "sbx policy log");
	text = cJSON_PrintUnformatted(d);
	s->host->emit(s->host, SBXLOOP_EV_POLICY_OBSERVED, NULL, text);
	free(text);
	cJSON_Delete(d);
}

void sbxp_collect_netlog(struct sbxp *s, const char *sandbox)
{
	const char *args[] = {"policy", "log", sandbox, "--json", NULL};
	struct sbxp_call call;
	struct sbxloop_proc_result res;
	struct sbxloop_error err = {0, ""};
	cJSON *doc = NULL, *list, *e;
	int n = 0;

	memset(&call, 0, sizeof(call));
	call.args = args;
	memset(&res, 0, sizeof(res));
	res.struct_size = sizeof(res);
	if (sbxp_check(s, &call, &res, &err) < 0) {
		s->host->log(s->host, SBXLOOP_LOG_WARN,
			     "sbx: the policy log of '%s' could not be read, "
			     "so `sbxloop egress` shows no observed traffic "
			     "for it: %s",
			     sandbox, err.message);
		s->host->proc_result_clear(&res);
		return;
	}
	doc = cJSON_Parse(res.out ? res.out : "");
	list = cJSON_IsArray(doc)
		       ? doc
		       : cJSON_GetObjectItemCaseSensitive(doc, "entries");
	if (!cJSON_IsArray(list))
		s->host->log(s->host, SBXLOOP_LOG_WARN,
			     "sbx: `sbx policy log %s --json` printed no "
			     "list of entries; observed egress not recorded",
			     sandbox);
	cJSON_ArrayForEach (e, list) {
		const char *sb = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(e, "sandbox"));

		if (sb && strcmp(sb, sandbox))
			continue; /* another sandbox's, if sbx lists all */
		if (n++ == NETLOG_MAX) {
			s->host->log(
				s->host, SBXLOOP_LOG_WARN,
				"sbx: more than %d policy log entries for "
				"'%s'; the rest are not recorded",
				NETLOG_MAX, sandbox);
			break;
		}
		report(s, sandbox, e);
	}
	cJSON_Delete(doc);
	s->host->proc_result_clear(&res);
}

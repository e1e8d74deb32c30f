/*
 * The repository probe and the tracking issue (UPSTREAM.md 10.2, 10.3).
 * The issue is titled "sbxloop run RUN" and found again by that exact
 * title on resume, never opened twice; every finished task adds a
 * comment line; the run's end adds the summary and, for a completed run,
 * closes it as completed. Task titles come from an agent: they are
 * escaped so they cannot mention people or inject markup. Failures here
 * are logged and evented and never change the run, except the
 * repository probe: a repository that does not exist, a token that
 * cannot see it or a github sandbox that cannot reach GitHub fails the
 * run before any phase (SBXLOOP_EINVAL), not at delivery hours later.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sbxloop/events.h>
#include <sbxloop/states.h>

#include "github.h"

#define TITLE_MAX 200

static void warn(struct gh *g, const char *what, const struct gh_err *e)
{
	g->host->log(g->host, SBXLOOP_LOG_WARN, "github: %s: %s", what,
		     e->message);
}

static const char *scope_hint(const struct gh_err *e)
{
	if (e->http_status == 401)
		return "; the token is invalid or expired: check GH_TOKEN "
		       "(or GITHUB_TOKEN)";
	if (e->http_status == 403)
		return "; the token lacks access: a fine-grained token needs "
		       "this repository with Contents, Issues, Pull requests "
		       "and Commit statuses read/write (a classic token: the "
		       "repo scope)";
	return "";
}

static int create_repo(struct gh *g, struct sbxloop_error *err)
{
	const struct sbxloop_host *h = g->host;
	const char *slash = strchr(g->repo, '/');
	size_t owner_len = (size_t)(slash - g->repo);
	int public = h->config_bool(h, "github.create_public", 0);
	cJSON *user = NULL, *p, *out = NULL, *d;
	const char *login;
	struct gh_err e;
	int rc;

	rc = gh_op(g, "user.get", NULL, &user, &e);
	if (rc < 0)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "cannot create repository %s: %s%s",
				    g->repo, e.message, scope_hint(&e));
	login = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(user, "login"));
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", slash + 1);
	if (!login || strlen(login) != owner_len ||
	    strncasecmp(login, g->repo, owner_len)) {
		/* not the token's user: an organization's repository */
		char owner[256];

		snprintf(owner, sizeof(owner), "%.*s", (int)owner_len,
			 g->repo);
		cJSON_AddStringToObject(p, "owner", owner);
	}
	cJSON_AddBoolToObject(p, "private", !public);
	cJSON_AddStringToObject(p, "description",
				"created by sbxloop for a run's delivery");
	rc = gh_op(g, "repo.create", p, &out, &e);
	cJSON_Delete(p);
	cJSON_Delete(user);
	cJSON_Delete(out);
	if (rc < 0)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "cannot create repository %s: %s%s",
				    g->repo, e.message, scope_hint(&e));
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "repo", g->repo);
	cJSON_AddBoolToObject(d, "created", 1);
	cJSON_AddBoolToObject(d, "private", !public);
	gh_emit(g, SBXLOOP_EV_RUN_DELIVER, d);
	return 0;
}

int gh_repo_ensure(struct gh *g, struct sbxloop_error *err)
{
	const struct sbxloop_host *h = g->host;
	cJSON *p = gh_params(g), *out = NULL;
	struct gh_err e;
	int rc, missing;

	cJSON_AddBoolToObject(p, "allow_missing", 1);
	rc = gh_op(g, "repo.get", p, &out, &e);
	cJSON_Delete(p);
	if (rc < 0) {
		if (e.http_status == 401 || e.http_status == 403)
			return h->error_set(h, err, SBXLOOP_EINVAL,
					    "repository %s: %s%s", g->repo,
					    e.message, scope_hint(&e));
		/* better now than after the run's work, at delivery */
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "repository %s could not be checked from "
				    "the github sandbox: %s; fix that, or run "
				    "with --no-report --no-deliver",
				    g->repo, e.message);
	}
	missing =
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "missing"));
	if (!missing) {
		/* the delivery's base unless github.deliver_base says */
		const char *b =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				out, "default_branch"));

		free(g->default_branch);
		g->default_branch = b ? strdup(b) : NULL;
	}
	cJSON_Delete(out);
	if (!missing)
		return 0;
	if (!h->config_bool(h, "github.create_repo", 0))
		return h->error_set(
			h, err, SBXLOOP_EINVAL,
			"GitHub repository %s does not exist, or the token "
			"cannot see it: create it first, or pass "
			"--create-repo to have sbxloop create it (private "
			"unless --create-public), or correct github.repo",
			g->repo);
	return create_repo(g, err);
}

/* ------------------------------------------------------ the issue */

/* Agent text as inert Markdown on one line: no mention, no markup. */
static void md_inline(char *dst, size_t cap, const char *src)
{
	static const char special[] = "\\`*_{}[]<>()#+-!|~=";
	size_t n = 0, used = 0;

	for (; src && *src && n + 8 < cap && used < TITLE_MAX; src++, used++) {
		unsigned char c = (unsigned char)*src;

		if (c == '\n' || c == '\r' || c == '\t' || c < 0x20) {
			dst[n++] = ' ';
		} else if (c == '@') {
			/* "@\u200b": shown as @, never a mention */
			memcpy(dst + n, "@\xe2\x80\x8b", 4);
			n += 4;
		} else {
			if (strchr(special, c))
				dst[n++] = '\\';
			dst[n++] = (char)c;
		}
	}
	dst[n] = '\0';
}

char *gh_task_line(const char *task_id, const char *title, const char *state)
{
	char id[160], t[4 * TITLE_MAX], st[64], *line;
	int done = state && !strcmp(state, SBXLOOP_TASK_DONE);
	size_t n;

	md_inline(id, sizeof(id), task_id ? task_id : "?");
	md_inline(t, sizeof(t), title ? title : "");
	md_inline(st, sizeof(st), state ? state : "?");
	n = strlen(id) + strlen(t) + strlen(st) + 32;
	line = malloc(n);
	if (line)
		snprintf(line, n, "%s %s %s — **%s**",
			 done ? "\xe2\x9c\x85" : "\xe2\x9d\x8c", id, t, st);
	return line;
}

static char *issue_title(const struct gh *g)
{
	size_t n = strlen(g->run_id) + 16;
	char *t = malloc(n);

	if (t)
		snprintf(t, n, "sbxloop run %s", g->run_id);
	return t;
}

/* The open or closed issue titled exactly `title`, or 0. */
static long long find_issue(struct gh *g, const char *title, char **url)
{
	cJSON *p = cJSON_CreateObject(), *out = NULL, *it;
	char q[512];
	struct gh_err e;
	long long num = 0;

	snprintf(q, sizeof(q), "repo:%s is:issue in:title \"%s\"", g->repo,
		 title);
	cJSON_AddStringToObject(p, "query", q);
	cJSON_AddNumberToObject(p, "per_page", 5);
	if (gh_op(g, "search.issues", p, &out, &e) < 0)
		warn(g, "searching for the tracking issue", &e);
	cJSON_Delete(p);
	cJSON_ArrayForEach (it,
			    cJSON_GetObjectItemCaseSensitive(out, "items")) {
		const char *t = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "title"));
		const char *u = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "html_url"));

		if (!t || strcmp(t, title) ||
		    cJSON_HasObjectItem(it, "pull_request"))
			continue;
		num = gh_num(cJSON_GetObjectItemCaseSensitive(it, "number"));
		*url = u ? strdup(u) : NULL;
		break;
	}
	cJSON_Delete(out);
	return num;
}

void gh_report_open(struct gh *g)
{
	cJSON *p, *out = NULL, *d;
	struct gh_err e;
	char *title = issue_title(g), *body;
	const char *o;
	size_t n, len;

	if (!title)
		return;
	g->issue = find_issue(g, title, &g->issue_url);
	if (!g->issue) {
		/* the outcome is the operator's text, quoted line by line */
		n = strlen(g->outcome) * 3 + strlen(g->run_id) + 256;
		body = malloc(n);
		if (!body) {
			free(title);
			return;
		}
		len = (size_t)snprintf(
			body, n, "sbxloop run `%s` started.\n\n> ", g->run_id);
		for (o = g->outcome; *o; o++) {
			if (*o == '\n') {
				memcpy(body + len, "\n> ", 3);
				len += 3;
			} else {
				body[len++] = *o;
			}
		}
		snprintf(body + len, n - len,
			 "\n\nProgress is reported as comments on this "
			 "issue.\n");
		p = gh_params(g);
		cJSON_AddStringToObject(p, "title", title);
		cJSON_AddStringToObject(p, "body", body);
		cJSON_AddItemToObject(p, "labels",
				      cJSON_CreateStringArray(
					      (const char *[]){"sbxloop"}, 1));
		free(body);
		if (gh_op(g, "issue.create", p, &out, &e) < 0) {
			warn(g, "opening the tracking issue", &e);
		} else {
			const char *u = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(out, "url"));

			g->issue = gh_num(cJSON_GetObjectItemCaseSensitive(
				out, "number"));
			g->issue_url = u ? strdup(u) : NULL;
		}
		cJSON_Delete(p);
		cJSON_Delete(out);
	}
	free(title);
	if (!g->issue)
		return;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "repo", g->repo);
	cJSON_AddNumberToObject(d, "issue", (double)g->issue);
	if (g->issue_url)
		cJSON_AddStringToObject(d, "url", g->issue_url);
	gh_emit(g, SBXLOOP_EV_RUN_REPORT, d);
}

void gh_report_comment(struct gh *g, const char *body)
{
	cJSON *p, *out = NULL;
	struct gh_err e;

	if (!g->issue)
		return;
	p = gh_params(g);
	cJSON_AddNumberToObject(p, "number", (double)g->issue);
	cJSON_AddStringToObject(p, "body", body);
	if (gh_op(g, "issue.comment", p, &out, &e) < 0)
		warn(g, "commenting on the tracking issue", &e);
	cJSON_Delete(p);
	cJSON_Delete(out);
}

void gh_report_close(struct gh *g, const char *state)
{
	char *body;
	size_t n;
	char st[64];

	if (!g->issue)
		return;
	snprintf(st, sizeof(st), "%s", state ? state : "?");
	n = g->lines_len + strlen(g->run_id) +
	    (g->pr_url ? strlen(g->pr_url) : 0) + 256;
	body = malloc(n);
	if (!body)
		return;
	snprintf(body, n, "Run `%s` finished: **%s**\n\n%s", g->run_id, st,
		 g->lines_len ? g->lines : "_no tasks were executed_\n");
	if (g->pr)
		snprintf(body + strlen(body), n - strlen(body),
			 "\nDelivered: pull request #%lld %s\n", g->pr,
			 g->pr_url ? g->pr_url : "");
	gh_report_comment(g, body);
	free(body);
	if (!strcmp(st, SBXLOOP_RUN_COMPLETED))
		gh_report_close_issue(g);
}

void gh_report_close_issue(struct gh *g)
{
	cJSON *p, *out = NULL;
	struct gh_err e;

	if (!g->issue)
		return;
	p = gh_params(g);
	cJSON_AddNumberToObject(p, "number", (double)g->issue);
	cJSON_AddStringToObject(p, "state", "closed");
	cJSON_AddStringToObject(p, "state_reason", "completed");
	if (gh_op(g, "issue.update", p, &out, &e) < 0)
		warn(g, "closing the tracking issue", &e);
	cJSON_Delete(p);
	cJSON_Delete(out);
}

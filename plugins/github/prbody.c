/*
 * The texts of a delivery: the pull request's body (what was delivered,
 * the tasks with their verify commands, the tracking issue, what was
 * left out and how it was planned), the `deliver --dry-run` listing and
 * base64. Paths, titles and commands may come from an agent: they are
 * set as code spans or escaped, never as markup or mentions.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxloop/states.h>

#include "github.h"

#define PR_LINES_MAX 50

struct text {
	char *s;
	size_t len, cap;
};

static void add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->cap ? t->cap : 1024);
		char *grown;

		while (cap < t->len + n + 1)
			cap *= 2;
		grown = realloc(t->s, cap);
		if (!grown)
			return;
		t->s = grown;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = '\0';
}

static void adds(struct text *t, const char *s)
{
	add(t, s, strlen(s));
}

/* `s` as one Markdown code span, whatever backticks it holds. */
static void code(struct text *t, const char *s)
{
	size_t run = 0, longest = 0, i;
	const char *p;

	for (p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	for (i = 0; i <= longest; i++)
		adds(t, "`");
	adds(t, longest ? " " : "");
	for (p = s; *p; p++)
		add(t, *p == '\n' || *p == '\r' ? " " : p, 1);
	adds(t, longest ? " " : "");
	for (i = 0; i <= longest; i++)
		adds(t, "`");
}

static void file_lines(struct text *t, const struct gh_plan *p)
{
	char head[64];
	size_t i;

	snprintf(head, sizeof(head), "**%s (%zu):**\n\n",
		 p->git_diff ? "Changes" : "Files", p->n);
	adds(t, head);
	for (i = 0; i < p->n && i < PR_LINES_MAX; i++) {
		const struct gh_file *f = &p->files[i];
		char pre[8];

		snprintf(pre, sizeof(pre), "- %c ",
			 p->git_diff ? f->status : '-');
		adds(t, p->git_diff ? pre : "- ");
		code(t, f->path);
		if (!f->deleted && strcmp(f->mode, "100644")) {
			adds(t, " (");
			adds(t, !strcmp(f->mode, "120000") ? "symlink"
							   : "executable");
			adds(t, ")");
		}
		adds(t, "\n");
	}
	if (p->n > PR_LINES_MAX) {
		snprintf(head, sizeof(head), "- \xe2\x80\xa6 +%zu more\n",
			 p->n - PR_LINES_MAX);
		adds(t, head);
	}
}

static void task_lines(struct text *t, const char *tasks_json)
{
	cJSON *tasks = tasks_json ? cJSON_Parse(tasks_json) : NULL, *it;

	if (cJSON_GetArraySize(tasks) == 0) {
		cJSON_Delete(tasks);
		return;
	}
	adds(t, "**Tasks:**\n\n");
	cJSON_ArrayForEach (it, tasks) {
		const char *id = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "id"));
		const char *title = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "title"));
		const char *state = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "state"));
		const cJSON *cmds = cJSON_GetObjectItemCaseSensitive(
			it, "verify_commands");
		char *line = gh_task_line(id, title, state);
		const cJSON *c;
		int n = 0;

		adds(t, "- ");
		adds(t, line ? line : "?");
		free(line);
		cJSON_ArrayForEach (c, cmds) {
			if (!cJSON_IsString(c))
				continue;
			adds(t, n++ ? ", " : "; verify: ");
			code(t, c->valuestring);
		}
		if (n)
			adds(t, state && !strcmp(state, SBXLOOP_TASK_DONE)
					? " \xe2\x80\x94 passed"
					: " \xe2\x80\x94 not passed");
		adds(t, "\n");
	}
	adds(t, "\n");
	cJSON_Delete(tasks);
}

char *gh_pr_body(const struct gh *g, const struct sbxloop_run_info *run,
		 const struct gh_plan *p)
{
	struct text t = {NULL, 0, 0};
	const char *o;
	char num[160];

	adds(&t, "Artifacts produced by sbxloop run ");
	code(&t, g->run_id);
	adds(&t, ".\n\n**Outcome:**\n\n> ");
	for (o = g->outcome; *o; o++)
		add(&t, *o == '\n' ? "\n> " : o, *o == '\n' ? 3 : 1);
	adds(&t, "\n\n");
	if (g->issue) {
		snprintf(num, sizeof(num), "Tracking issue: #%lld\n\n",
			 g->issue);
		adds(&t, num);
	}
	if (SBXLOOP_HAS_FIELD(run, struct sbxloop_run_info, tasks_json))
		task_lines(&t, run->tasks_json);
	file_lines(&t, p);
	if (p->n_excluded) {
		snprintf(num, sizeof(num),
			 "\n**Not delivered:** %zu path(s) matched "
			 "artifacts.exclude.\n",
			 p->n_excluded);
		adds(&t, num);
	}
	if (p->note) {
		adds(&t, "\n_");
		adds(&t, p->note);
		adds(&t, "_\n");
	}
	return t.s;
}

void gh_plan_print(const struct gh *g, const struct gh_plan *p, FILE *out)
{
	size_t i, inline_n = 0, blobs = 0;

	fprintf(out, "delivery plan for %s (branch sbxloop/%s): %s\n", g->repo,
		g->run_id,
		p->note ? p->note : "a snapshot of the run's files");
	for (i = 0; i < p->n; i++) {
		const struct gh_file *f = &p->files[i];

		fprintf(out, "  %c %s %s%s\n", f->status,
			f->deleted ? "------" : f->mode, f->path,
			f->deleted ? ""
			: f->text  ? ""
				   : " (blob)");
		if (!f->deleted)
			f->text ? inline_n++ : blobs++;
	}
	fprintf(out,
		"%zu file(s): %zu inline, %zu uploaded as blobs, %zu "
		"deleted; %zu path(s) left out by artifacts.exclude\n",
		p->n, inline_n, blobs, p->n_deleted, p->n_excluded);
}

/*
 * The github module: its descriptor and the `github` reporter's slots.
 * run_start checks the repository and opens the tracking issue on the
 * engine's thread (a missing repository must fail the run before any
 * phase); task comments go through a queue to the module's own thread,
 * so the engine never waits on GitHub; run_end drains the queue, then
 * posts the summary. The token never passes here: see github.h.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <sbxloop/events.h>
#include <sbxloop/reporter.h>
#include <sbxloop/states.h>

#include "github.h"

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

static void *queue_main(void *arg)
{
	struct gh *g = arg;

	pthread_mutex_lock(&g->lock);
	for (;;) {
		char *body;

		while (!g->stop && g->n_queue == 0)
			pthread_cond_wait(&g->cond, &g->lock);
		if (g->n_queue == 0)
			break;
		body = g->queue[0];
		memmove(g->queue, g->queue + 1,
			--g->n_queue * sizeof(*g->queue));
		g->busy = 1;
		pthread_mutex_unlock(&g->lock);
		gh_report_comment(g, body);
		free(body);
		pthread_mutex_lock(&g->lock);
		g->busy = 0;
		pthread_cond_broadcast(&g->cond);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* Wait for the queue to empty, then end the thread. */
static void queue_stop(struct gh *g)
{
	if (!g->have_thread)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	g->have_thread = 0;
}

static void enqueue(struct gh *g, char *body)
{
	pthread_mutex_lock(&g->lock);
	if (!g->have_thread || g->stop) {
		pthread_mutex_unlock(&g->lock);
		free(body);
		return;
	}
	if (g->n_queue == g->cap_queue) {
		size_t cap = g->cap_queue ? g->cap_queue * 2 : 8;
		char **q = realloc(g->queue, cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&g->lock);
			free(body);
			return;
		}
		g->queue = q;
		g->cap_queue = cap;
	}
	g->queue[g->n_queue++] = body;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static int gh_create(const struct sbxloop_host *host, void **ctx,
		     struct sbxloop_error *err)
{
	struct gh *g;
	const char *repo = host->config_string(host, "github.repo");

	if (!repo || !*repo)
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "the github reporter needs github.repo "
				       "(OWNER/NAME, or --repo)");
	g = calloc(1, sizeof(*g));
	if (!g)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "github: out of memory");
	g->host = host;
	g->repo = strdup(repo);
	g->api_url = dup_or_null(host->config_string(host, "github.api_url"));
	g->report = host->config_bool(host, "github.report", 0);
	g->deliver = host->config_bool(host, "github.deliver", 0);
	g->dry_run = host->config_bool(host, "github.dry_run", 0);
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->job_lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	*ctx = g;
	return 0;
}

static void gh_destroy(void *ctx)
{
	struct gh *g = ctx;
	size_t i;

	queue_stop(g);
	for (i = 0; i < g->n_queue; i++)
		free(g->queue[i]);
	free(g->queue);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	pthread_mutex_destroy(&g->job_lock);
	free(g->repo);
	free(g->api_url);
	free(g->run_id);
	free(g->outcome);
	free(g->issue_url);
	free(g->lines);
	free(g->pr_url);
	free(g->default_branch);
	free(g);
}

static int gh_run_start(void *ctx, const struct sbxloop_run_info *run,
			struct sbxloop_error *err)
{
	struct gh *g = ctx;
	int rc;

	free(g->run_id);
	free(g->outcome);
	g->run_id = strdup(run->run_id);
	g->outcome = strdup(run->outcome ? run->outcome : "");
	rc = gh_repo_ensure(g, err);
	if (rc < 0)
		return rc;
	g->started = 1;
	/* `sbxloop deliver` calls with the completed run: no live issue */
	g->retry = run->state && !strcmp(run->state, SBXLOOP_RUN_COMPLETED);
	if (!g->report)
		return 0;
	gh_report_open(g);
	if (!g->retry && g->issue &&
	    pthread_create(&g->thread, NULL, queue_main, g) == 0)
		g->have_thread = 1;
	return 0;
}

static int gh_deliver_slot(void *ctx, const struct sbxloop_run_info *run,
			   struct sbxloop_delivery *out,
			   struct sbxloop_error *err)
{
	struct gh *g = ctx;
	char note[1400];
	int rc;

	if (g->dry_run) {
		/* a run that reports but was not asked to deliver */
		if (g->started && !g->deliver)
			return SBXLOOP_EUNSUPPORTED;
		/* `deliver --dry-run`: no sandbox, no run_start */
		if (!g->run_id) {
			g->run_id = strdup(run->run_id);
			g->outcome = strdup(run->outcome ? run->outcome : "");
		}
		return gh_deliver(g, run, out, 1, err);
	}
	if (!g->deliver || !g->started)
		return SBXLOOP_EUNSUPPORTED;
	queue_stop(g);
	rc = gh_deliver(g, run, out, g->dry_run, err);
	if (rc < 0 || !g->retry || !g->issue || g->dry_run)
		return rc;
	/* out of the run: say so on the issue and close it */
	snprintf(note, sizeof(note),
		 "Run `%s` delivered: pull request #%lld %s", g->run_id,
		 out->number, out->url);
	gh_report_comment(g, note);
	gh_report_close_issue(g);
	return 0;
}

/* task.end: a line for the summary and a comment, queued. */
static int gh_event(void *ctx, const struct sbxloop_event *ev,
		    struct sbxloop_error *err)
{
	struct gh *g = ctx;
	cJSON *d;
	char *line, *grown;
	size_t n;

	(void)err;
	if (!g->issue || strcmp(ev->type, SBXLOOP_EV_TASK_END))
		return 0;
	d = cJSON_Parse(ev->data_json);
	line = gh_task_line(
		cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(d, "task_id")),
		cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(d, "title")),
		cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(d, "state")));
	cJSON_Delete(d);
	if (!line)
		return 0;
	n = strlen(line);
	grown = realloc(g->lines, g->lines_len + n + 2);
	if (grown) {
		g->lines = grown;
		memcpy(g->lines + g->lines_len, line, n);
		g->lines_len += n;
		g->lines[g->lines_len++] = '\n';
		g->lines[g->lines_len] = '\0';
	}
	enqueue(g, line);
	return 0;
}

static int gh_run_end(void *ctx, const struct sbxloop_run_info *run,
		      struct sbxloop_error *err)
{
	struct gh *g = ctx;

	(void)err;
	queue_stop(g);
	if (g->started && g->report)
		gh_report_close(g, run->state);
	return 0;
}

static const struct sbxloop_reporter_ops github_ops = {
	.struct_size = sizeof(struct sbxloop_reporter_ops),
	.create = gh_create,
	.destroy = gh_destroy,
	.run_start = gh_run_start,
	.event = gh_event,
	.run_end = gh_run_end,
	.deliver = gh_deliver_slot,
};

static const struct sbxloop_component components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_REPORTER,
		.name = "github",
		.ops = &github_ops,
		.summary = "a tracking issue per run and the result as one "
			   "pull request, through the github sandbox",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "github",
		.version = "1.0",
		.components = components,
		.n_components = sizeof(components) / sizeof(components[0]),
};

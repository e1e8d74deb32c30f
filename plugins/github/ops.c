/*
 * GitHub ops as worker jobs: one op, or a batch of ops sharing one
 * worker process and one keep-alive connection, submitted to the run's
 * github sandbox through host->sandbox_job. The JobResult's error
 * (type, message, http_status) becomes a struct gh_err. Jobs of one
 * reporter never overlap: the queue thread and the engine thread take
 * turns.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "github.h"

cJSON *gh_params(const struct gh *g)
{
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "repo", g->repo);
	return p;
}

cJSON *gh_batch_item(const char *op, cJSON *params)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddItemToObject(o, "params",
			      params ? params : cJSON_CreateObject());
	return o;
}

/* "${...}" with no '{' inside: what a batch reads as a reference. */
static int ref_text(const char *s)
{
	size_t n = strlen(s);

	return n > 3 && s[0] == '$' && s[1] == '{' && s[n - 1] == '}' &&
	       !strchr(s + 2, '{');
}

cJSON *gh_text(const char *s)
{
	const char *p = s ? s : "";
	char *esc;
	cJSON *item;

	while (*p == '$' && p[1] == '$')
		p++;
	if (!ref_text(p))
		return cJSON_CreateString(s ? s : "");
	/* "$"*k + "${...}" travels with one more '$', which the batch drops */
	esc = malloc(strlen(s) + 2);
	if (!esc)
		return NULL;
	esc[0] = '$';
	strcpy(esc + 1, s);
	item = cJSON_CreateString(esc);
	free(esc);
	return item;
}

long long gh_num(const cJSON *item)
{
	return cJSON_IsNumber(item) && item->valuedouble >= -9e15 &&
			       item->valuedouble <= 9e15
		       ? (long long)item->valuedouble
		       : 0;
}

void gh_emit(struct gh *g, const char *type, cJSON *data)
{
	char *text = cJSON_PrintUnformatted(data);

	g->host->emit(g->host, type, NULL, text ? text : "{}");
	free(text);
	cJSON_Delete(data);
}

/* "github op OP failed: TYPE: MESSAGE" */
static void set_err(struct gh_err *e, int status, const char *type,
		    const char *op, const char *msg)
{
	e->http_status = status;
	snprintf(e->type, sizeof(e->type), "%s", type ? type : "GitHubError");
	snprintf(e->message, sizeof(e->message), "github op %s failed: %s: %s",
		 op, e->type, msg ? msg : "");
}

/* Submit `job` (taken) and read its result. */
static int run_job(struct gh *g, const char *op, cJSON *job, cJSON **out,
		   struct gh_err *e)
{
	const struct sbxloop_host *h = g->host;
	struct sbxloop_error err = {0, ""};
	char *text, *res_text = NULL;
	cJSON *res, *error, *st;
	int rc;

	*out = NULL;
	memset(e, 0, sizeof(*e));
	if (!SBXLOOP_HAS_SLOT(h, struct sbxloop_host, sandbox_job)) {
		cJSON_Delete(job);
		set_err(e, 0, "GitHubUnavailable", op,
			"this sbxloop has no sandbox_job service");
		return SBXLOOP_EUNSUPPORTED;
	}
	text = cJSON_PrintUnformatted(job);
	cJSON_Delete(job);
	pthread_mutex_lock(&g->job_lock);
	rc = h->sandbox_job(h, "github", text, &res_text, &err);
	pthread_mutex_unlock(&g->job_lock);
	free(text);
	if (rc < 0) {
		set_err(e, 0, "GitHubUnavailable", op, err.message);
		return rc;
	}
	res = cJSON_Parse(res_text);
	h->free(res_text);
	st = cJSON_GetObjectItemCaseSensitive(res, "status");
	if (cJSON_IsString(st) && !strcmp(st->valuestring, "ok")) {
		*out = cJSON_DetachItemFromObjectCaseSensitive(res,
							       "output_json");
		if (!*out)
			*out = cJSON_CreateObject();
		cJSON_Delete(res);
		return 0;
	}
	error = cJSON_GetObjectItemCaseSensitive(res, "error");
	st = cJSON_GetObjectItemCaseSensitive(error, "http_status");
	set_err(e, cJSON_IsNumber(st) ? st->valueint : 0,
		cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(error, "type")),
		op,
		cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(error, "message")));
	cJSON_Delete(res);
	return SBXLOOP_ERR;
}

static cJSON *new_job(const struct gh *g, const char *op, cJSON *params,
		      double timeout_s)
{
	cJSON *job = cJSON_CreateObject();

	cJSON_AddStringToObject(job, "kind", "github.op");
	cJSON_AddStringToObject(job, "op", op);
	if (g->api_url && !cJSON_HasObjectItem(params, "api_url"))
		cJSON_AddStringToObject(params, "api_url", g->api_url);
	cJSON_AddItemToObject(job, "params", params);
	cJSON_AddNumberToObject(job, "timeout_s", timeout_s);
	return job;
}

int gh_op(struct gh *g, const char *op, const cJSON *params, cJSON **out,
	  struct gh_err *e)
{
	cJSON *p = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();

	return run_job(g, op, new_job(g, op, p, GH_JOB_TIMEOUT_S), out, e);
}

int gh_batch(struct gh *g, const cJSON *ops, double timeout_s, cJSON **out,
	     struct gh_err *e)
{
	cJSON *p = cJSON_CreateObject(), *res = NULL;
	int rc;

	cJSON_AddItemToObject(p, "ops", cJSON_Duplicate(ops, 1));
	rc = run_job(g, "batch", new_job(g, "batch", p, timeout_s), &res, e);
	if (rc < 0)
		return rc;
	*out = cJSON_DetachItemFromObjectCaseSensitive(res, "results");
	cJSON_Delete(res);
	if (!cJSON_IsArray(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		set_err(e, 0, "GitHubError", "batch",
			"the worker returned no results");
		return SBXLOOP_ERR;
	}
	return 0;
}

/*
 * The test-only `recgranter` module: a policy granter that enforces
 * nothing but records every call. Each seed, grant and revoke appends
 * one line naming the sandbox to the file of `recgranter.log`, so the
 * end-to-end suite (tests/e2e/test-policy-run.c) can check what the engine
 * asked of the granter chain and when. Switches in the `recgranter:`
 * mapping make it unable to revoke, refuse a domain as unsupported, or
 * fail a grant like a broken substrate. Built by `make check`, never
 * installed.
 */
#include "config.h"

#include <sbxloop/policy.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct sbxloop_config_key rec_keys[] = {
	{"log", SBXLOOP_VALUE_STRING, NULL, NULL,
	 "file every call is appended to (relative to the working "
	 "directory)"},
	{"revoke", SBXLOOP_VALUE_BOOL, "true", NULL,
	 "grants can be taken back (false: revoke is unsupported)"},
	{"refuse", SBXLOOP_VALUE_LIST, "[]", NULL,
	 "domains this granter cannot apply (passed down the chain)"},
	{"fail", SBXLOOP_VALUE_LIST, "[]", NULL,
	 "domains whose grant fails as an infrastructure error"},
	{NULL, 0, NULL, NULL, NULL}};

struct rec {
	const struct sbxloop_host *host;
	const char *log; /* borrowed from the config; NULL = record nothing */
	int can_revoke;
};

static int rec_create(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err)
{
	struct rec *r = calloc(1, sizeof(*r));

	*ctx = r;
	if (!r)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "recgranter: out of memory");
	r->host = host;
	r->log = host->config_string(host, "recgranter.log");
	r->can_revoke = host->config_bool(host, "recgranter.revoke", 1);
	return 0;
}

static void rec_destroy(void *ctx)
{
	free(ctx);
}

/* One line per call; O_APPEND keeps lines of several processes whole. */
static void record(const struct rec *r, const char *call, const char *sandbox,
		   const char *domain, const struct sbxloop_grant *g)
{
	char line[1024];
	int fd, n;

	if (!r->log || !*r->log)
		return;
	n = snprintf(line, sizeof(line), "%s %s %s task=%s phase=%s pid=%ld\n",
		     call, sandbox ? sandbox : "-", domain ? domain : "-",
		     g && g->task_id ? g->task_id : "-",
		     g && g->phase ? g->phase : "-", (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	fd = open(r->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		r->host->log(r->host, SBXLOOP_LOG_WARN,
			     "recgranter: cannot open '%s'", r->log);
		return;
	}
	if (write(fd, line, (size_t)n) != n)
		r->host->log(r->host, SBXLOOP_LOG_WARN,
			     "recgranter: cannot write '%s'", r->log);
	close(fd);
}

static int listed(const struct rec *r, const char *key, const char *domain)
{
	size_t i, n = r->host->config_list_len(r->host, key);

	for (i = 0; i < n; i++) {
		const char *d = r->host->config_list_item(r->host, key, i);

		if (d && domain && strcmp(d, domain) == 0)
			return 1;
	}
	return 0;
}

static int rec_seed(void *ctx, const char *sandbox, const char *const *domains,
		    struct sbxloop_error *err)
{
	struct rec *r = ctx;
	size_t i;

	(void)err;
	for (i = 0; domains && domains[i]; i++)
		record(r, "seed", sandbox, domains[i], NULL);
	return 0;
}

static int rec_grant(void *ctx, const struct sbxloop_grant *g,
		     struct sbxloop_error *err)
{
	struct rec *r = ctx;

	if (listed(r, "recgranter.refuse", g->domain)) {
		record(r, "refuse", g->sandbox, g->domain, g);
		return r->host->error_set(r->host, err, SBXLOOP_EUNSUPPORTED,
					  "recgranter: '%s' is not mine to "
					  "open",
					  g->domain);
	}
	if (listed(r, "recgranter.fail", g->domain)) {
		record(r, "fail", g->sandbox, g->domain, g);
		return r->host->error_set(r->host, err, SBXLOOP_EINFRA,
					  "recgranter: injected failure "
					  "granting '%s'",
					  g->domain);
	}
	record(r, "grant", g->sandbox, g->domain, g);
	return 0;
}

static int rec_revoke(void *ctx, const struct sbxloop_grant *g,
		      struct sbxloop_error *err)
{
	struct rec *r = ctx;

	if (!r->can_revoke)
		return r->host->error_set(r->host, err, SBXLOOP_EUNSUPPORTED,
					  "recgranter: revocation is switched "
					  "off");
	record(r, "revoke", g->sandbox, g->domain, g);
	return 0;
}

static const struct sbxloop_policy_ops rec_ops = {
	.struct_size = sizeof(struct sbxloop_policy_ops),
	.create = rec_create,
	.destroy = rec_destroy,
	.seed = rec_seed,
	.grant = rec_grant,
	.revoke = rec_revoke,
};

static const struct sbxloop_component rec_components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_POLICY,
		.name = "recgranter",
		.ops = &rec_ops,
		.config_keys = rec_keys,
		.summary = "test-only granter that records every call",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "recgranter",
		.version = PACKAGE_VERSION,
		.components = rec_components,
		.n_components =
			sizeof(rec_components) / sizeof(rec_components[0]),
};

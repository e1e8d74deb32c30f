/*
 * Egress policy: owns the domain tiers, the bounds check, plan egress
 * validation, the provisioning seed lists, the grant ledger walked over
 * the chain of policy granters, and the `config policy` report. The
 * engine calls it at provisioning and at EXECUTE entry and exit;
 * cmd_config.c calls the report. Pattern syntax and coverage live in
 * policy_patterns.c.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/egress.h"
#include <sbxloop/events.h>
#include "common/policy_patterns.h"

const char *const sl_egress_control_plane[] = {
	"api.githubcopilot.com",
	"*.githubcopilot.com",
	"api.github.com",
	"github.com",
	"objects.githubusercontent.com",
	"release-assets.githubusercontent.com",
	"raw.githubusercontent.com",
	NULL,
};

const char *const sl_egress_github[] = {
	"api.github.com",
	"github.com",
	"uploads.github.com",
	"objects.githubusercontent.com",
	NULL,
};

const char *const sl_egress_registries[] = {
	"pypi.org",
	"files.pythonhosted.org",
	"registry.npmjs.org",
	"registry.yarnpkg.com",
	"codeload.github.com",
	"proxy.golang.org",
	"sum.golang.org",
	"crates.io",
	"static.crates.io",
	"index.crates.io",
	"rubygems.org",
	"index.rubygems.org",
	"repo.maven.apache.org",
	"repo1.maven.org",
	"plugins.gradle.org",
	"services.gradle.org",
	"api.nuget.org",
	"nuget.org",
	"repo.packagist.org",
	"packagist.org",
	NULL,
};

const char *const sl_egress_distro[] = {
	"deb.debian.org",      "security.debian.org", "archive.ubuntu.com",
	"security.ubuntu.com", "ports.ubuntu.com",    NULL,
};

const char *const sl_egress_declarable[] = {
	"center.conan.io",
	"astral.sh",
	NULL,
};

#define EXTRAS "sandbox.extra_allow_domains"

#define RETRY_HINT                                                            \
	"use a baseline host; only the operator can widen the bounds in "     \
	"sbxloop.yaml"

/* ------------------------------------------------------------ bounds */

static const char *list_covering(const struct sl_config *cfg, const char *key,
				 const char *domain)
{
	size_t i, n = sl_config_list_len(cfg, key);

	for (i = 0; i < n; i++) {
		const char *p = sl_config_list_item(cfg, key, i);

		if (p && sl_pattern_covers(p, domain))
			return p;
	}
	return NULL;
}

/*
 * The first policy.deny pattern sharing a host with `pattern`, or NULL.
 * Deny is tested by overlap, never by coverage: a wildcard that covers
 * one denied host is refused whole, since no granter can open a
 * wildcard minus a host.
 */
static const char *deny_overlapping(const struct sl_config *cfg,
				    const char *pattern)
{
	size_t i, n = sl_config_list_len(cfg, "policy.deny");

	for (i = 0; i < n; i++) {
		const char *p = sl_config_list_item(cfg, "policy.deny", i);

		if (p && sl_pattern_overlaps(p, pattern))
			return p;
	}
	return NULL;
}

static int tier_covers(const char *const *tier, const char *domain)
{
	for (; *tier; tier++)
		if (sl_pattern_covers(*tier, domain))
			return 1;
	return 0;
}

int sl_egress_check(const struct sl_config *cfg, const char *domain,
		    char **why)
{
	const char *p;

	if (why)
		*why = NULL;
	p = deny_overlapping(cfg, domain);
	if (p) {
		if (why && sl_pattern_covers(p, domain))
			*why = sl_xasprintf("matches policy.deny pattern '%s'",
					    p);
		else if (why)
			*why = sl_xasprintf("covers hosts that policy.deny "
					    "pattern '%s' denies",
					    p);
		return 0;
	}
	if (tier_covers(sl_egress_control_plane, domain) ||
	    tier_covers(sl_egress_registries, domain) ||
	    tier_covers(sl_egress_distro, domain) ||
	    tier_covers(sl_egress_declarable, domain) ||
	    list_covering(cfg, "sandbox.extra_allow_domains", domain) ||
	    list_covering(cfg, "policy.allow", domain))
		return 1;
	if (why)
		*why = sl_xstrdup(
			"not covered by policy.allow in sbxloop.yaml");
	return 0;
}

/* ------------------------------------------------- plan declarations */

char *sl_egress_normalize(const char *declared, char **why)
{
	const char *s = declared ? declared : "";
	char *d;
	size_t n, i;

	*why = NULL;
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	d = sl_xstrndup(s, n);
	for (i = 0; i < n; i++)
		d[i] = (char)tolower((unsigned char)d[i]);
	if (!*d)
		*why = sl_xstrdup("an empty domain");
	else if (strcmp(d, "*") == 0)
		*why = sl_xstrdup("the bare '*' is for operators only; "
				  "name the domain");
	else if (strstr(d, "://"))
		*why = sl_xstrdup("a domain only: drop the scheme");
	else if (strchr(d, '/'))
		*why = sl_xstrdup("a domain only: drop the path");
	else if (strchr(d, ':'))
		*why = sl_xstrdup("a domain only: drop the port");
	else if (!sl_pattern_valid(d, 0))
		*why = sl_xstrdup("not an exact domain or '*.domain'");
	if (*why) {
		free(d);
		return NULL;
	}
	return d;
}

int sl_egress_validate_plan(const struct sl_config *cfg, cJSON *egress,
			    struct sl_buf *msg)
{
	struct sl_buf problems = SL_BUF_INIT;
	cJSON *e;
	int rc = 0;

	cJSON_ArrayForEach (e, egress) {
		cJSON *dj = cJSON_GetObjectItemCaseSensitive(e, "domain");
		const char *raw = cJSON_IsString(dj) ? dj->valuestring : "";
		char *why = NULL;
		char *d = sl_egress_normalize(raw, &why);

		if (!d) {
			sl_buf_addf(&problems, "- '%s': %s\n", raw, why);
		} else {
			cJSON_ReplaceItemInObjectCaseSensitive(
				e, "domain", cJSON_CreateString(d));
			if (!sl_egress_check(cfg, d, &why))
				sl_buf_addf(&problems, "- %s: %s\n", d, why);
		}
		free(why);
		free(d);
	}
	if (problems.len) {
		sl_buf_adds(msg, "plan-declared egress is outside the "
				 "operator's bounds:\n");
		sl_buf_adds(msg, sl_buf_str(&problems));
		sl_buf_adds(msg,
			    "drop these domains from 'egress': " RETRY_HINT);
		rc = SBXLOOP_EINVAL;
	}
	sl_buf_release(&problems);
	return rc;
}

/* ------------------------------------------------------- seed lists */

static void list_push(char ***list, size_t *n, const char *s)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcasecmp((*list)[i], s) == 0)
			return;
	*list = sl_xrealloc(*list, (*n + 2) * sizeof(**list));
	(*list)[(*n)++] = sl_xstrdup(s);
	(*list)[*n] = NULL;
}

static void push_filtered(const struct sl_config *cfg, char ***list, size_t *n,
			  const char *s)
{
	if (!deny_overlapping(cfg, s))
		list_push(list, n, s);
}

char **sl_egress_agent_seed(const struct sl_config *cfg)
{
	char **list = sl_xcalloc(1, sizeof(*list));
	size_t n = 0, i;
	const char *const *t;
	size_t extras = sl_config_list_len(cfg, EXTRAS);

	for (t = sl_egress_control_plane; *t; t++)
		list_push(&list, &n, *t);
	for (i = 0; i < extras; i++)
		push_filtered(cfg, &list, &n,
			      sl_config_list_item(cfg, EXTRAS, i));
	for (t = sl_egress_registries; *t; t++)
		push_filtered(cfg, &list, &n, *t);
	for (t = sl_egress_distro; *t; t++)
		push_filtered(cfg, &list, &n, *t);
	return list;
}

char **sl_egress_github_seed(const struct sl_config *cfg)
{
	char **list = sl_xcalloc(1, sizeof(*list));
	size_t n = 0, i;
	const char *const *t;
	size_t extras = sl_config_list_len(cfg, EXTRAS);

	const char *api = sl_config_str(cfg, "github.api_url");

	for (t = sl_egress_github; *t; t++)
		list_push(&list, &n, *t);
	/* GitHub Enterprise: the API host github.api_url names */
	if (api && strstr(api, "://")) {
		const char *h = strstr(api, "://") + 3;
		size_t len = strcspn(h, ":/?#");
		char host[256];

		if (len && len < sizeof(host)) {
			memcpy(host, h, len);
			host[len] = '\0';
			for (i = 0; i < n && strcmp(list[i], host); i++)
				;
			if (i == n)
				push_filtered(cfg, &list, &n, host);
		}
	}
	for (i = 0; i < extras; i++)
		push_filtered(cfg, &list, &n,
			      sl_config_list_item(cfg, EXTRAS, i));
	return list;
}

void sl_egress_list_free(char **list)
{
	size_t i;

	for (i = 0; list && list[i]; i++)
		free(list[i]);
	free(list);
}

/* ----------------------------------------------------------- ledger */

struct ledger_entry {
	char *domain;
	char *reason;
	char *task_id;
	int granter; /* index in the chain; -1 = seeded at provisioning */
	/*
	 * The tasks whose EXECUTE holds the grant open (lanes sharing a
	 * sandbox): it is revoked when the last one leaves.
	 */
	char **holders;
	size_t n_holders;
	int permanent; /* its granter cannot revoke: open for good */
};

struct sl_egress_ledger {
	const struct sl_config *cfg;
	char *sandbox;
	const struct sl_egress_granter *chain;
	size_t n_chain;
	void (*emit)(void *user, const char *type, cJSON *data);
	void *user;
	struct ledger_entry *entries;
	size_t n_entries;
};

static void ledger_add(struct sl_egress_ledger *l, const char *domain,
		       const char *reason, const char *task_id, int granter)
{
	struct ledger_entry *e;

	l->entries = sl_xrealloc(l->entries,
				 (l->n_entries + 1) * sizeof(*l->entries));
	e = &l->entries[l->n_entries++];
	e->domain = sl_xstrdup(domain);
	e->reason = sl_xstrdup(reason ? reason : "");
	e->task_id = sl_xstrdup(task_id);
	e->granter = granter;
	e->holders = NULL;
	e->n_holders = 0;
	e->permanent = 0;
	if (granter >= 0 && task_id) {
		e->holders = sl_xcalloc(1, sizeof(*e->holders));
		e->holders[e->n_holders++] = sl_xstrdup(task_id);
	}
}

static void entry_clear(struct ledger_entry *e)
{
	size_t i;

	free(e->domain);
	free(e->reason);
	free(e->task_id);
	for (i = 0; i < e->n_holders; i++)
		free(e->holders[i]);
	free(e->holders);
}

static int holder_index(const struct ledger_entry *e, const char *task_id)
{
	size_t i;

	for (i = 0; task_id && i < e->n_holders; i++)
		if (!strcmp(e->holders[i], task_id))
			return (int)i;
	return -1;
}

/* The granted (not seeded) entry covering `domain`, or NULL. */
static struct ledger_entry *granted_cover(struct sl_egress_ledger *l,
					  const char *domain)
{
	size_t i;

	for (i = 0; i < l->n_entries; i++)
		if (l->entries[i].granter >= 0 &&
		    sl_pattern_covers(l->entries[i].domain, domain))
			return &l->entries[i];
	return NULL;
}

struct sl_egress_ledger *sl_egress_ledger_new(
	const struct sl_config *cfg, const char *sandbox,
	const struct sl_egress_granter *chain, size_t n_chain,
	void (*emit)(void *user, const char *type, cJSON *data), void *user)
{
	struct sl_egress_ledger *l = sl_xcalloc(1, sizeof(*l));
	char **seed = sl_egress_agent_seed(cfg);
	size_t i;

	l->cfg = cfg;
	l->sandbox = sl_xstrdup(sandbox ? sandbox : "");
	l->chain = chain;
	l->n_chain = n_chain;
	l->emit = emit;
	l->user = user;
	for (i = 0; seed[i]; i++)
		ledger_add(l, seed[i], NULL, NULL, -1);
	sl_egress_list_free(seed);
	return l;
}

void sl_egress_ledger_free(struct sl_egress_ledger *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n_entries; i++)
		entry_clear(&l->entries[i]);
	free(l->entries);
	free(l->sandbox);
	free(l);
}

int sl_egress_ledger_has(const struct sl_egress_ledger *l, const char *domain)
{
	size_t i;

	/* a seeded or granted wildcard already opens its subdomains */
	for (i = 0; i < l->n_entries; i++)
		if (sl_pattern_covers(l->entries[i].domain, domain))
			return 1;
	return 0;
}

static void emit_policy(struct sl_egress_ledger *l, const char *type,
			const char *task_id, const char *domain,
			const char *reason, const char *granter,
			const char *message)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "task_id", task_id ? task_id : "");
	cJSON_AddStringToObject(d, "phase", "execute");
	cJSON_AddStringToObject(d, "domain", domain);
	if (reason)
		cJSON_AddStringToObject(d, "reason", reason);
	cJSON_AddStringToObject(d, "sandbox", l->sandbox);
	if (granter)
		cJSON_AddStringToObject(d, "granter", granter);
	cJSON_AddStringToObject(d, "message", message);
	if (l->emit)
		l->emit(l->user, type, d);
	else
		cJSON_Delete(d);
}

static const char *granter_name(const struct sl_egress_ledger *l, size_t i)
{
	return l->chain[i].name ? l->chain[i].name : "(unnamed)";
}

/* Walk the chain for one domain. 0 granted (*who set); 1 nobody could
 * (reasons in *why); negative on a real failure. */
static int grant_one(struct sl_egress_ledger *l, const struct sbxloop_grant *g,
		     int *who, struct sl_buf *why, struct sbxloop_error *err)
{
	size_t i;

	for (i = 0; i < l->n_chain; i++) {
		struct sbxloop_error e = {0, ""};
		int rc = l->chain[i].ops->grant(l->chain[i].ctx, g, &e);

		if (rc == 0) {
			*who = (int)i;
			return 0;
		}
		if (rc != SBXLOOP_EUNSUPPORTED) {
			sl_error(err, rc, "%s", e.message);
			return rc;
		}
		if (why->len)
			sl_buf_adds(why, "; ");
		sl_buf_adds(why,
			    e.message[0] ? e.message : granter_name(l, i));
	}
	if (!l->n_chain)
		sl_buf_adds(why, "no policy granter is configured "
				 "(plugins.policy is empty)");
	return 1;
}

/* Did an entry of `egress` before `upto` declare `domain` already? */
static int declared_before(const cJSON *egress, const cJSON *upto,
			   const char *domain)
{
	const cJSON *e;

	cJSON_ArrayForEach (e, egress) {
		const cJSON *dj = cJSON_GetObjectItem(e, "domain");
		char *bad = NULL, *d;
		int same;

		if (e == upto)
			break;
		d = sl_egress_normalize(
			cJSON_IsString(dj) ? dj->valuestring : "", &bad);
		same = d && strcmp(d, domain) == 0;
		free(d);
		free(bad);
		if (same)
			return 1;
	}
	return 0;
}

int sl_egress_grant_all(struct sl_egress_ledger *l, const char *task_id,
			const cJSON *egress, struct sbxloop_error *err)
{
	const cJSON *e;
	int rc = 0;

	cJSON_ArrayForEach (e, egress) {
		const cJSON *dj = cJSON_GetObjectItem(e, "domain");
		const cJSON *rj = cJSON_GetObjectItem(e, "reason");
		const char *reason = cJSON_IsString(rj) ? rj->valuestring : "";
		const char *raw = cJSON_IsString(dj) ? dj->valuestring : "";
		struct sbxloop_grant g;
		struct sl_buf why = SL_BUF_INIT;
		char *bad = NULL, *d, *msg;
		int who = -1, r;

		d = sl_egress_normalize(raw, &bad);
		/* one answer per domain, however often the plan names it */
		if (d && declared_before(egress, e, d)) {
			free(d);
			continue;
		}
		if (!d) {
			msg = sl_xasprintf("egress refused: '%s' — %s", raw,
					   bad);
			emit_policy(l, SBXLOOP_EV_POLICY_DENY, task_id, raw,
				    reason, NULL, msg);
			free(msg);
			free(bad);
			continue;
		}
		if (!sl_egress_check(l->cfg, d, &bad)) {
			msg = sl_xasprintf("egress refused: %s — %s", d, bad);
			emit_policy(l, SBXLOOP_EV_POLICY_DENY, task_id, d,
				    reason, NULL, msg);
			goto next;
		}
		if (sl_egress_ledger_has(l, d)) {
			struct ledger_entry *held = granted_cover(l, d);

			/* another lane's grant: held open for this task too */
			if (!held || held->permanent || !task_id ||
			    holder_index(held, task_id) >= 0)
				goto next_quiet;
			held->holders = sl_xrealloc(
				held->holders, (held->n_holders + 1) *
						       sizeof(*held->holders));
			held->holders[held->n_holders++] = sl_xstrdup(task_id);
			msg = sl_xasprintf("egress granted: %s — already open "
					   "for task %s, now held for %s too",
					   d,
					   held->task_id ? held->task_id : "?",
					   task_id);
			emit_policy(
				l, SBXLOOP_EV_POLICY_ALLOW, task_id, d, reason,
				granter_name(l, (size_t)held->granter), msg);
			goto next;
		}
		memset(&g, 0, sizeof(g));
		g.struct_size = sizeof(g);
		g.sandbox = l->sandbox;
		g.domain = d;
		g.reason = reason;
		g.task_id = task_id;
		g.phase = "execute";
		r = grant_one(l, &g, &who, &why, err);
		if (r < 0) {
			msg = sl_xasprintf("egress grant failed: %s — %s", d,
					   err->message);
			emit_policy(l, SBXLOOP_EV_POLICY_DENY, task_id, d,
				    reason, NULL, msg);
			free(msg);
			sl_buf_release(&why);
			free(d);
			rc = r;
			goto out;
		}
		if (r > 0) {
			msg = sl_xasprintf("egress refused: %s — no granter "
					   "can enforce it: %s",
					   d, sl_buf_str(&why));
			emit_policy(l, SBXLOOP_EV_POLICY_DENY, task_id, d,
				    reason, NULL, msg);
			goto next;
		}
		ledger_add(l, d, reason, task_id, who);
		msg = sl_xasprintf("egress granted: %s — %s", d,
				   *reason ? reason
					   : "no justification given");
		emit_policy(l, SBXLOOP_EV_POLICY_ALLOW, task_id, d, reason,
			    granter_name(l, (size_t)who), msg);
next:
		free(msg);
next_quiet:
		free(bad);
		sl_buf_release(&why);
		free(d);
	}
out:
	return rc;
}

int sl_egress_revoke_all(struct sl_egress_ledger *l, const char *task_id,
			 struct sbxloop_error *err)
{
	size_t i = 0;
	int rc = 0;

	while (i < l->n_entries) {
		struct ledger_entry *e = &l->entries[i];
		const struct sl_egress_granter *gr;
		struct sbxloop_error e2 = {0, ""};
		struct sbxloop_grant g;
		char *msg;
		int r;

		if (e->granter < 0 || e->permanent) {
			i++;
			continue;
		}
		gr = &l->chain[e->granter];
		if (!SBXLOOP_HAS_SLOT(gr->ops, struct sbxloop_policy_ops,
				      revoke)) {
			e->permanent = 1;
			i++;
			continue;
		}
		if (task_id) {
			int h = holder_index(e, task_id);

			if (h >= 0) {
				free(e->holders[h]);
				memmove(&e->holders[h], &e->holders[h + 1],
					(e->n_holders - (size_t)h - 1) *
						sizeof(*e->holders));
				e->n_holders--;
			}
			/* another lane's EXECUTE still needs it */
			if (e->n_holders) {
				i++;
				continue;
			}
		}
		memset(&g, 0, sizeof(g));
		g.struct_size = sizeof(g);
		g.sandbox = l->sandbox;
		g.domain = e->domain;
		g.reason = e->reason;
		g.task_id = task_id ? task_id : e->task_id;
		g.phase = "execute";
		r = gr->ops->revoke(gr->ctx, &g, &e2);
		if (r == SBXLOOP_EUNSUPPORTED) {
			e->permanent = 1;
			i++;
			continue;
		}
		if (r < 0) {
			msg = sl_xasprintf("egress revoke failed: %s — %s; "
					   "the grant stays for the "
					   "sandbox's life",
					   e->domain, e2.message);
			emit_policy(l, SBXLOOP_EV_POLICY_REVOKE, g.task_id,
				    e->domain, NULL,
				    granter_name(l, (size_t)e->granter), msg);
			free(msg);
			if (!rc)
				rc = sl_error(err, r, "%s", e2.message);
			i++;
			continue;
		}
		msg = sl_xasprintf("egress revoked: %s — EXECUTE ended",
				   e->domain);
		emit_policy(l, SBXLOOP_EV_POLICY_REVOKE, g.task_id, e->domain,
			    e->reason, granter_name(l, (size_t)e->granter),
			    msg);
		free(msg);
		entry_clear(e);
		memmove(e, e + 1,
			(l->n_entries - i - 1) * sizeof(*l->entries));
		l->n_entries--;
	}
	return rc;
}

/* ----------------------------------------------------------- report */

#define REPORT_WIDTH 79

/* Comma-separated items under a label, wrapped at REPORT_WIDTH. */
struct wrap {
	FILE *out;
	size_t col;
	int items;
};

static void wrap_start(struct wrap *w, FILE *out, const char *label)
{
	w->out = out;
	w->items = 0;
	fprintf(out, "%s", label);
	w->col = strlen(label);
}

static void wrap_item(struct wrap *w, const char *item)
{
	size_t len = strlen(item) + (w->items ? 2 : 0);

	if (w->items)
		fputc(',', w->out);
	if (w->items && w->col + len > REPORT_WIDTH) {
		fprintf(w->out, "\n    ");
		w->col = 4;
	} else if (w->items) {
		fputc(' ', w->out);
	}
	fprintf(w->out, "%s", item);
	w->col += len;
	w->items++;
}

static void wrap_end(struct wrap *w, const char *empty)
{
	if (!w->items)
		fprintf(w->out, "%s", empty);
	fputc('\n', w->out);
}

static void print_tier(FILE *out, const char *label,
		       const struct sl_config *cfg, const char *const *tier,
		       int filtered)
{
	struct wrap w;

	wrap_start(&w, out, label);
	for (; *tier; tier++)
		if (!filtered || !deny_overlapping(cfg, *tier))
			wrap_item(&w, *tier);
	wrap_end(&w, "(none)");
}

static void print_list(FILE *out, const char *label,
		       const struct sl_config *cfg, const char *key,
		       const char *empty)
{
	size_t i, n = sl_config_list_len(cfg, key);
	struct wrap w;

	wrap_start(&w, out, label);
	for (i = 0; i < n; i++)
		wrap_item(&w, sl_config_list_item(cfg, key, i));
	wrap_end(&w, empty);
}

/* One line of "pattern (deny p)" items, printed only when non-empty. */
static void print_overridden(FILE *out, const char *label,
			     const struct sl_config *cfg,
			     const char *const *items, size_t n)
{
	struct wrap w;
	size_t i;
	int any = 0;

	for (i = 0; i < n; i++)
		if (items[i] && deny_overlapping(cfg, items[i]))
			any = 1;
	if (!any)
		return;
	fprintf(out, "%s\n", label);
	wrap_start(&w, out, "    ");
	for (i = 0; i < n; i++) {
		const char *d =
			items[i] ? deny_overlapping(cfg, items[i]) : NULL;
		char *item;

		if (!d)
			continue;
		item = sl_xasprintf("%s (deny %s)", items[i], d);
		wrap_item(&w, item);
		free(item);
	}
	wrap_end(&w, "");
}

/* What policy.deny takes out of the extras, and where it cannot act. */
static void print_overlaps(FILE *out, const struct sl_config *cfg)
{
	size_t i, n = sl_config_list_len(cfg, EXTRAS);
	const char **extras = sl_xcalloc(n + 1, sizeof(*extras));

	for (i = 0; i < n; i++)
		extras[i] = sl_config_list_item(cfg, EXTRAS, i);
	print_overridden(out,
			 "extras not seeded, they overlap policy.deny:", cfg,
			 extras, n);
	free(extras);
	print_overridden(
		out,
		"control plane, seeded although policy.deny overlaps it:", cfg,
		sl_egress_control_plane,
		SL_ARRAY_SIZE(sl_egress_control_plane) - 1);
}

static const char *const phase_rows[][2] = {
	{"decompose, plan", "the baseline only"},
	{"execute", "the baseline + the plan's in-bounds declared domains,"},
	{"", "granted at every EXECUTE entry (also after a resume);"},
	{"", "each grant or refusal is a policy.* event"},
	{"scrutinize, verify,", "the baseline: grants are revoked when"},
	{"validate", "EXECUTE ends (policy.revoke); a granter that cannot"},
	{"", "revoke keeps them for the sandbox's life, never beyond"},
	{"", "the run"},
};

void sl_egress_print_policy(const struct sl_config *cfg, FILE *out)
{
	struct wrap w;
	size_t i;
	char **seed;

	fprintf(out, "agent sandbox: effective egress per phase\n");
	for (i = 0; i < SL_ARRAY_SIZE(phase_rows); i++)
		fprintf(out, "  %-21s %s\n", phase_rows[i][0],
			phase_rows[i][1]);
	fprintf(out, "\n");
	/* the seed minus the tiers printed below: control plane + extras */
	seed = sl_egress_agent_seed(cfg);
	wrap_start(&w, out, "baseline, always seeded: ");
	for (i = 0; seed[i]; i++)
		if (!tier_covers(sl_egress_registries, seed[i]) &&
		    !tier_covers(sl_egress_distro, seed[i]))
			wrap_item(&w, seed[i]);
	wrap_end(&w, "(none)");
	sl_egress_list_free(seed);
	print_overlaps(out, cfg);
	print_tier(out, "language registries (minus policy.deny): ", cfg,
		   sl_egress_registries, 1);
	print_tier(out, "distro mirrors (minus policy.deny): ", cfg,
		   sl_egress_distro, 1);
	print_tier(out, "declarable without operator config: ", cfg,
		   sl_egress_declarable, 0);
	fprintf(out, "\nbounds for plan-declared grants (sbxloop.yaml)\n");
	print_list(out, "  allow: ", cfg, "policy.allow",
		   "(empty: plans may use only the baseline and the\n"
		   "         declarable registries)");
	print_list(out, "  deny:  ", cfg, "policy.deny", "(none)");
	print_list(out, "  granters (plugins.policy): ", cfg, "plugins.policy",
		   "(none: every declared domain is "
		   "refused)");
	if (sl_config_str(cfg, "github.repo")) {
		char **gh = sl_egress_github_seed(cfg);

		fprintf(out, "\n");
		wrap_start(&w, out,
			   "github sandbox (every phase, never plan "
			   "grants): ");
		for (i = 0; gh[i]; i++)
			wrap_item(&w, gh[i]);
		wrap_end(&w, "(none)");
		sl_egress_list_free(gh);
	}
	fprintf(out, "\naudit trail: sbxloop logs RUN --type policy.\n");
}

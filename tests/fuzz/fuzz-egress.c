/*
 * libFuzzer target for the egress invariant "deny always wins": for
 * every host h a policy.deny pattern matches, no effective allow of the
 * agent sandbox (the provisioning seed plus every grant the ledger made)
 * and no entry of the github sandbox's seed may match h, the control
 * plane and the github tier excepted (seeded whatever deny says,
 * UPSTREAM 9.1). It also checks sl_pattern_overlaps and the ledger's
 * coverage against a reference matcher written here independently.
 *
 * Input: text lines, the first character says what the rest is:
 *   d PATTERN   a policy.deny pattern     a PATTERN   a policy.allow one
 *   x PATTERN   an extra_allow_domains    p DOMAIN    a plan declaration
 *   h HOST      a probe host              u DOMAIN    the granter refuses
 * Config patterns are trimmed and lowercased like the config loader does
 * and dropped when invalid; declarations and probes go in raw. Probes are
 * also derived from every pattern (its base, a subdomain, upper case, a
 * trailing dot). A violation prints the case and aborts.
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/conf.h"
#include "engine/egress.h"
#include "common/policy_patterns.h"
#include "common/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ITEMS 24
#define MAX_LINE 300

struct list {
	char *v[MAX_ITEMS * 8];
	size_t n;
};

static struct sl_config *cfg;

static void push(struct list *l, char *s)
{
	if (l->n < SL_ARRAY_SIZE(l->v))
		l->v[l->n++] = s;
	else
		free(s);
}

static void clear(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* ------------------------------------------------ reference matcher */

/* Length of s without one trailing dot. */
static size_t canon_len(const char *s)
{
	size_t n = strlen(s);

	return n && s[n - 1] == '.' ? n - 1 : n;
}

/* Are a[0..n) and b[0..n) the same name, letters without case? */
static int same(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) !=
		    tolower((unsigned char)b[i]))
			return 0;
	return 1;
}

/* Does pattern p match the concrete host h? */
static int ref_match(const char *p, const char *h)
{
	size_t lh = canon_len(h), lb;

	if (!strcmp(p, "*"))
		return 1;
	if (strncmp(p, "*.", 2)) {
		lb = canon_len(p);
		return lb == lh && same(p, h, lb);
	}
	p += 2;
	lb = canon_len(p);
	if (lb == lh)
		return same(p, h, lb);
	return lh > lb && h[lh - lb - 1] == '.' && same(p, h + lh - lb, lb);
}

static const char *base_of(const char *p)
{
	if (!strcmp(p, "*"))
		return "q.example";
	return strncmp(p, "*.", 2) ? p : p + 2;
}

/* Exact by construction: two patterns share a host iff one of their
 * bases is in both (a shared host lies under both bases). */
static int ref_overlap(const char *a, const char *b)
{
	const char *w[2] = {base_of(a), base_of(b)};
	size_t i;

	for (i = 0; i < 2; i++)
		if (ref_match(a, w[i]) && ref_match(b, w[i]))
			return 1;
	return 0;
}

static int tier_match(const char *const *tier, const char *h)
{
	for (; *tier; tier++)
		if (ref_match(*tier, h))
			return 1;
	return 0;
}

static int list_match(const struct list *l, const char *h)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (ref_match(l->v[i], h))
			return 1;
	return 0;
}

static void violation(const char *what, const char *a, const char *b,
		      const struct list *deny)
{
	size_t i;

	fprintf(stderr, "fuzz-egress: %s: '%s' / '%s'\npolicy.deny:", what, a,
		b);
	for (i = 0; i < deny->n; i++)
		fprintf(stderr, " '%s'", deny->v[i]);
	fputc('\n', stderr);
	abort();
}

/* ----------------------------------------------------- the granter */

struct rec {
	struct list granted;
	const struct list *refuse;
};

static int rec_grant(void *ctx, const struct sbxloop_grant *g,
		     struct sbxloop_error *err)
{
	struct rec *r = ctx;
	size_t i;

	for (i = 0; i < r->refuse->n; i++)
		if (!strcmp(r->refuse->v[i], g->domain))
			return sl_error(err, SBXLOOP_EUNSUPPORTED,
					"refused '%s'", g->domain);
	push(&r->granted, sl_xstrdup(g->domain));
	return 0;
}

static int rec_revoke(void *ctx, const struct sbxloop_grant *g,
		      struct sbxloop_error *err)
{
	(void)ctx;
	(void)g;
	(void)err;
	return 0;
}

static const struct sbxloop_policy_ops rec_ops = {
	.struct_size = sizeof(struct sbxloop_policy_ops),
	.grant = rec_grant,
	.revoke = rec_revoke,
};

static void drop_event(void *user, const char *type, cJSON *data)
{
	(void)user;
	(void)type;
	cJSON_Delete(data);
}

/* ------------------------------------------------------- the input */

/* trimmed and lowercased like the config loader; NULL when invalid */
static char *config_pattern(const char *s, int allow_star)
{
	char *t, *c;
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	t = sl_xstrndup(s, n);
	for (c = t; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!sl_pattern_valid(t, allow_star) || strchr(t, ',')) {
		free(t);
		return NULL;
	}
	return t;
}

static int set_list(const char *key, const struct list *l)
{
	struct sl_buf b = SL_BUF_INIT;
	char *err = NULL;
	size_t i;
	int rc;

	for (i = 0; i < l->n; i++) {
		if (i)
			sl_buf_addc(&b, ',');
		sl_buf_adds(&b, l->v[i]);
	}
	rc = sl_config_set(cfg, key, sl_buf_str(&b), &err);
	free(err);
	sl_buf_release(&b);
	return rc;
}

/* The probes derived from one pattern or host. */
static void add_probes(struct list *probes, const char *p)
{
	const char *b = base_of(p);
	char *u = sl_xstrdup(b), *c;

	for (c = u; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	push(probes, sl_xstrdup(b));
	push(probes, sl_xasprintf("zz.%s", b));
	push(probes, sl_xasprintf("%s.", b));
	push(probes, u);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_config_opts opts;
	char *errors = NULL;

	(void)argc;
	(void)argv;
	memset(&opts, 0, sizeof(opts));
	opts.config_file = "/dev/null";
	opts.no_user_file = 1;
	opts.no_env = 1;
	if (sl_config_load(&cfg, &opts, &errors) != 0) {
		fprintf(stderr, "fuzz-egress: %s\n", errors ? errors : "");
		abort();
	}
	free(errors);
	return 0;
}

struct input {
	struct list deny, allow, extras, decl, probes, refuse;
};

/* One item of kind `k` (d a x p u h). */
static void take(struct input *in, char k, const char *arg)
{
	char *p;

	switch (k) {
	case 'd':
		if (in->deny.n < MAX_ITEMS && (p = config_pattern(arg, 1)))
			push(&in->deny, p);
		break;
	case 'a':
		if (in->allow.n < MAX_ITEMS && (p = config_pattern(arg, 1)))
			push(&in->allow, p);
		break;
	case 'x':
		if (in->extras.n < MAX_ITEMS && (p = config_pattern(arg, 0)))
			push(&in->extras, p);
		break;
	case 'p':
		if (in->decl.n < MAX_ITEMS)
			push(&in->decl, sl_xstrdup(arg));
		break;
	case 'u':
		if (in->refuse.n < MAX_ITEMS)
			push(&in->refuse, sl_xstrdup(arg));
		break;
	case 'h':
		if (in->probes.n < MAX_ITEMS)
			push(&in->probes, sl_xstrdup(arg));
		break;
	default:
		break;
	}
}

/* Text mode: one "K STRING" item a line (the seeds are written so). */
static void parse_text(struct input *in, const uint8_t *data, size_t size)
{
	size_t pos = 0;

	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t end = nl ? (size_t)(nl - data) : size;
		size_t n = end - pos;

		if (n >= 1 && n <= MAX_LINE) {
			char *line = sl_xstrndup((const char *)data + pos, n);
			char *arg = line + 1 + (n > 1 && line[1] == ' ');

			/* no NUL inside */
			if (strlen(arg) == n - (size_t)(arg - line))
				take(in, line[0], arg);
			free(line);
		}
		pos = end + 1;
	}
}

/*
 * Generator mode: every two bytes make one item from a small alphabet,
 * so that random inputs overlap often. Byte 0: kind (low 3 bits), `*.`
 * (bit 3), upper case (bit 4), trailing dot (bit 5), bare `*` (bits 6
 * and 7). Byte 1: 1-3 labels (low 2 bits) and the top-level label; the
 * labels come from the following bytes.
 */
static void parse_gen(struct input *in, const uint8_t *data, size_t size)
{
	static const char kinds[] = "daxpuhpd";
	static const char *const labels[] = {
		"evil",          "a",      "b",   "corp", "x",
		"githubcopilot", "github", "api",
	};
	static const char *const tlds[] = {"org", "com", "example"};
	size_t pos = 0;

	while (pos + 2 <= size) {
		uint8_t b0 = data[pos], b1 = data[pos + 1];
		size_t nl = 1 + (b1 & 3) % 3, i;
		struct sl_buf d = SL_BUF_INIT;
		char *c;

		pos += 2;
		if ((b0 & 0xc0) == 0xc0) {
			sl_buf_adds(&d, "*");
		} else {
			if (b0 & 0x08)
				sl_buf_adds(&d, "*.");
			for (i = 0; i < nl && pos < size; i++, pos++)
				sl_buf_addf(&d, "%s.",
					    labels[data[pos] %
						   SL_ARRAY_SIZE(labels)]);
			sl_buf_adds(&d, tlds[(b1 >> 2) % SL_ARRAY_SIZE(tlds)]);
			if (b0 & 0x20)
				sl_buf_addc(&d, '.');
		}
		c = sl_buf_detach(&d);
		if (b0 & 0x10) {
			char *u;

			for (u = c; *u; u++)
				*u = (char)toupper((unsigned char)*u);
		}
		take(in, kinds[b0 & 7], c);
		free(c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in;
	struct list effective = {{0}, 0}, all = {{0}, 0};
	struct rec rec;
	struct sl_egress_granter chain[1] = {{"rec", &rec_ops, &rec}};
	struct sbxloop_error err = {0, ""};
	struct sl_buf msg = SL_BUF_INIT;
	struct sl_egress_ledger *l;
	cJSON *eg = cJSON_CreateArray(), *copy;
	char **seed, **gh;
	size_t i, j;

	memset(&in, 0, sizeof(in));
	memset(&rec, 0, sizeof(rec));
	rec.refuse = &in.refuse;
	/* text when it starts like the seeds ("d evil.org") */
	if (size >= 2 && strchr("daxpuh", data[0]) && data[0] &&
	    data[1] == ' ')
		parse_text(&in, data, size);
	else
		parse_gen(&in, data, size);
	if (set_list("policy.deny", &in.deny) ||
	    set_list("policy.allow", &in.allow) ||
	    set_list("sandbox.extra_allow_domains", &in.extras))
		goto out;

	for (i = 0; i < in.decl.n; i++) {
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "domain", in.decl.v[i]);
		cJSON_AddStringToObject(e, "reason", "fuzz");
		cJSON_AddItemToArray(eg, e);
	}

	/* plan validation: a plan that passes declares nothing denied */
	copy = cJSON_Duplicate(eg, 1);
	if (sl_egress_validate_plan(cfg, copy, &msg) == 0) {
		const cJSON *e;

		cJSON_ArrayForEach (e, copy) {
			const char *d =
				cJSON_GetObjectItem(e, "domain")->valuestring;

			for (i = 0; i < in.deny.n; i++)
				if (ref_overlap(in.deny.v[i], d))
					violation("plan passed with a denied "
						  "host",
						  d, in.deny.v[i], &in.deny);
		}
	}
	cJSON_Delete(copy);

	/* the agent sandbox: seed + grants */
	l = sl_egress_ledger_new(cfg, "sb", chain, 1, drop_event, NULL);
	if (sl_egress_grant_all(l, "t1", eg, &err) != 0)
		violation("grant_all failed", err.message, "", &in.deny);
	seed = sl_egress_agent_seed(cfg);
	for (i = 0; seed[i]; i++)
		push(&effective, sl_xstrdup(seed[i]));
	for (i = 0; i < rec.granted.n; i++)
		push(&effective, sl_xstrdup(rec.granted.v[i]));
	sl_egress_list_free(seed);
	gh = sl_egress_github_seed(cfg);

	for (i = 0; i < in.deny.n; i++)
		add_probes(&in.probes, in.deny.v[i]);
	for (i = 0; i < effective.n; i++)
		add_probes(&in.probes, effective.v[i]);
	for (i = 0; i < in.extras.n; i++)
		add_probes(&in.probes, in.extras.v[i]);

	for (i = 0; i < in.probes.n; i++) {
		const char *h = in.probes.v[i];
		int denied = list_match(&in.deny, h);

		if (strchr(h, '*'))
			continue;
		/* the ledger's own coverage agrees with the reference */
		if (sl_egress_ledger_has(l, h) != list_match(&effective, h))
			violation("ledger coverage differs", h, "", &in.deny);
		if (!denied)
			continue;
		if (!tier_match(sl_egress_control_plane, h))
			for (j = 0; j < effective.n; j++)
				if (ref_match(effective.v[j], h))
					violation("denied host allowed", h,
						  effective.v[j], &in.deny);
		if (!tier_match(sl_egress_github, h))
			for (j = 0; gh[j]; j++)
				if (ref_match(gh[j], h))
					violation("denied host in the github "
						  "seed",
						  h, gh[j], &in.deny);
	}
	sl_egress_list_free(gh);

	/* pattern-vs-pattern overlap against the reference */
	for (i = 0; i < in.allow.n; i++)
		push(&all, sl_xstrdup(in.allow.v[i]));
	for (i = 0; i < in.extras.n; i++)
		push(&all, sl_xstrdup(in.extras.v[i]));
	for (i = 0; i < effective.n; i++)
		push(&all, sl_xstrdup(effective.v[i]));
	for (i = 0; i < in.deny.n; i++)
		push(&all, sl_xstrdup(in.deny.v[i]));
	for (i = 0; i < in.deny.n; i++)
		for (j = 0; j < all.n; j++)
			if (sl_pattern_overlaps(in.deny.v[i], all.v[j]) !=
				    ref_overlap(in.deny.v[i], all.v[j]) ||
			    sl_pattern_overlaps(all.v[j], in.deny.v[i]) !=
				    ref_overlap(in.deny.v[i], all.v[j]))
				violation("overlap differs", in.deny.v[i],
					  all.v[j], &in.deny);

	/* EXECUTE ends and comes back: the same answer */
	if (sl_egress_revoke_all(l, "t1", &err) != 0 ||
	    sl_egress_grant_all(l, "t1", eg, &err) != 0)
		violation("revoke/regrant failed", err.message, "", &in.deny);
	sl_egress_ledger_free(l);
out:
	clear(&in.deny);
	clear(&in.allow);
	clear(&in.extras);
	clear(&in.decl);
	clear(&in.probes);
	clear(&in.refuse);
	clear(&effective);
	clear(&all);
	clear(&rec.granted);
	sl_buf_release(&msg);
	cJSON_Delete(eg);
	return 0;
}

/*
 * Domain pattern syntax and coverage (exact, "*.domain", "*"), and the
 * language alias table. Pure functions; the config validator and the
 * engine's egress bounds both call them.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/policy_patterns.h"

static int domain_valid(const char *d)
{
	const char *label = d, *p;
	const char *last_label = NULL;
	int labels = 0;

	if (!*d || strlen(d) > 253)
		return 0;
	for (p = d;; p++) {
		if (*p == '.' || *p == '\0') {
			size_t n = (size_t)(p - label);

			if (n == 0 || n > 63 || label[0] == '-' ||
			    label[n - 1] == '-')
				return 0;
			last_label = label;
			labels++;
			if (*p == '\0')
				break;
			label = p + 1;
			continue;
		}
		if (!(islower((unsigned char)*p) ||
		      isdigit((unsigned char)*p) || *p == '-'))
			return 0;
	}
	if (labels < 2)
		return 0;
	/* the top-level label: two or more letters */
	for (p = last_label; *p; p++)
		if (!islower((unsigned char)*p))
			return 0;
	return strlen(last_label) >= 2;
}

int sl_pattern_valid(const char *pattern, int allow_star)
{
	if (!pattern)
		return 0;
	if (strcmp(pattern, "*") == 0)
		return allow_star;
	if (strncmp(pattern, "*.", 2) == 0)
		return domain_valid(pattern + 2);
	return domain_valid(pattern);
}

/*
 * A pattern's host set, as every comparison below sees it: `*` (all
 * hosts), an exact host, or `*.base` (base and every name under it).
 * One trailing dot (the FQDN form) is ignored; letters compare without
 * case. Ports, schemes and paths never reach here: the config validator
 * and sl_egress_normalize refuse them, and non-ASCII names are no
 * domain (IDNs are written as their ASCII `xn--` form and compared as
 * such).
 */
struct hostset {
	int star;
	int wild;
	const char *base;
	size_t len;
};

static struct hostset hostset_of(const char *p)
{
	struct hostset h = {0, 0, p, 0};

	if (strcmp(p, "*") == 0) {
		h.star = 1;
		return h;
	}
	if (strncmp(p, "*.", 2) == 0) {
		h.wild = 1;
		h.base += 2;
	}
	h.len = strlen(h.base);
	if (h.len && h.base[h.len - 1] == '.')
		h.len--;
	return h;
}

/* Is name `d` equal to or under `b` (label-aligned, any case)? */
static int under(const struct hostset *d, const struct hostset *b)
{
	if (d->len == b->len)
		return strncasecmp(d->base, b->base, b->len) == 0;
	return d->len > b->len && d->base[d->len - b->len - 1] == '.' &&
	       strncasecmp(d->base + d->len - b->len, b->base, b->len) == 0;
}

int sl_pattern_covers(const char *pattern, const char *domain)
{
	struct hostset p = hostset_of(pattern), d = hostset_of(domain);

	if (p.star)
		return 1;
	if (d.star || (d.wild && !p.wild))
		return 0;
	if (!p.wild)
		return p.len == d.len &&
		       strncasecmp(p.base, d.base, p.len) == 0;
	return under(&d, &p);
}

int sl_pattern_overlaps(const char *a, const char *b)
{
	struct hostset x = hostset_of(a), y = hostset_of(b);

	if (x.star || y.star)
		return 1;
	if (!x.wild && !y.wild)
		return x.len == y.len &&
		       strncasecmp(x.base, y.base, x.len) == 0;
	/* a shared host lies under both bases: one is under the other */
	if (x.wild && y.wild)
		return under(&x, &y) || under(&y, &x);
	return x.wild ? under(&y, &x) : under(&x, &y);
}

static const struct {
	const char *canonical;
	const char *aliases; /* '|'-separated */
} languages[] = {
	{"python", "python|py|python3"},
	{"cpp", "cpp|c|c++|cxx|c-cpp"},
	{"ruby", "ruby|rb"},
	{"java", "java|jdk|jvm"},
	{"php", "php"},
	{"javascript", "javascript|js|node|nodejs|javascript-node"},
	{"typescript", "typescript|ts"},
	{"go", "go|golang"},
	{"rust", "rust|rs|cargo"},
	{"dotnet", "dotnet|csharp|c#|net|dotnet-sdk"},
};

const char *sl_language_canonical(const char *name)
{
	char buf[64];
	size_t i, n;

	while (isspace((unsigned char)*name))
		name++;
	n = strlen(name);
	while (n && isspace((unsigned char)name[n - 1]))
		n--;
	if (n == 0 || n >= sizeof(buf))
		return NULL;
	for (i = 0; i < n; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[n] = '\0';
	for (i = 0; i < sizeof(languages) / sizeof(languages[0]); i++) {
		const char *a = languages[i].aliases;

		while (*a) {
			size_t len = strcspn(a, "|");

			if (len == n && strncmp(a, buf, n) == 0)
				return languages[i].canonical;
			a += len;
			if (*a == '|')
				a++;
		}
	}
	return NULL;
}

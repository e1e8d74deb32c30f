/*
 * Domain pattern syntax and coverage (exact, "*.domain", "*"), and the
 * language alias table. Pure functions; the config validator and the
 * engine's egress bounds both call them.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "policy_patterns.h"

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

int sbx_pattern_valid(const char *pattern, int allow_star)
{
	if (!pattern)
		return 0;
	if (strcmp(pattern, "*") == 0)
		return allow_star;
	if (strncmp(pattern, "*.", 2) == 0)
		return domain_valid(pattern + 2);
	return domain_valid(pattern);
}

int sbx_pattern_covers(const char *pattern, const char *domain)
{
	const char *base;
	size_t lb, ld;

	if (strcmp(pattern, "*") == 0)
		return 1;
	if (strncmp(domain, "*.", 2) == 0 && strncmp(pattern, "*.", 2) != 0)
		return 0;
	if (strcasecmp(pattern, domain) == 0)
		return 1;
	if (strncmp(pattern, "*.", 2) != 0)
		return 0;
	base = pattern + 2;
	if (strncmp(domain, "*.", 2) == 0)
		domain += 2;
	lb = strlen(base);
	ld = strlen(domain);
	if (ld == lb)
		return strcasecmp(domain, base) == 0;
	return ld > lb && domain[ld - lb - 1] == '.' &&
	       strcasecmp(domain + ld - lb, base) == 0;
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

const char *sbx_language_canonical(const char *name)
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

/*
 * Egress domain patterns and language names: syntax checks shared by
 * the config validator, the engine and the local provider's egress
 * proxy (which compiles this file in). libc only.
 */
#ifndef SL_POLICY_PATTERNS_H
#define SL_POLICY_PATTERNS_H

/* An exact domain, "*.domain", or (operators only) "*". */
int sl_pattern_valid(const char *pattern, int allow_star);
/*
 * Does pattern P cover domain D: is every host of D one of P's? D may be
 * a pattern itself (`*.a.example.com` is covered by `*.example.com`).
 * Case-insensitive; one trailing dot is ignored.
 */
int sl_pattern_covers(const char *pattern, const char *domain);
/*
 * Do patterns A and B share at least one host? Symmetric, with the
 * normalisation of sl_pattern_covers: `*` overlaps everything,
 * `*.evil.org` overlaps `evil.org`, `x.evil.org` and `*.a.evil.org`.
 * A deny pattern refuses every pattern it overlaps.
 */
int sl_pattern_overlaps(const char *a, const char *b);
/* Canonical language name for a name or alias, or NULL. */
const char *sl_language_canonical(const char *name);

#endif

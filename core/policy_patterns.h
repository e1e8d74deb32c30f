/*
 * Egress domain patterns and language names: syntax checks shared by
 * the config validator and the engine.
 */
#ifndef SBX_POLICY_PATTERNS_H
#define SBX_POLICY_PATTERNS_H

/* An exact domain, "*.domain", or (operators only) "*". */
int sbx_pattern_valid(const char *pattern, int allow_star);
/* Does pattern P cover domain D (case-insensitive)? */
int sbx_pattern_covers(const char *pattern, const char *domain);
/* Canonical language name for a name or alias, or NULL. */
const char *sbx_language_canonical(const char *name);

#endif

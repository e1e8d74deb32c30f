/*
 * The security probes' shell scripts (core/engine/attest_cmds.c): what
 * each probe job runs in the sandbox. Every result is the caller's to
 * free; the scripts end with `exit 0` and print only what the host
 * judges.
 */
#ifndef SL_ENGINE_ATTEST_CMDS_H
#define SL_ENGINE_ATTEST_CMDS_H

#include <stddef.h>

/* The egress probes' two names, which nothing allows but a grant. */
#define EGRESS_DENIED "denied.attest.sbxloop.test"
#define EGRESS_GRANTED "granted.attest.sbxloop.test"

/* 'text' for sh. */
char *sl_attest_quote(const char *text);

/* Where the canaries' public half (sbxattes[t][mg]NONCE) shows. */
char *sl_attest_canary_script(const char *nonce, const char *workdir);

/* Without canaries: is any of `vars` (NULL-terminated) set? */
char *sl_attest_var_script(const char *const *vars);

/*
 * Try to create each of `targets`, printing "wrote I" for each that
 * could be, going on past a refused one.
 */
char *sl_attest_write_script(char *const *targets, size_t n);

/* Print `say` when `path` exists. */
char *sl_attest_exists_script(const char *path, const char *say);

/* curl the host's loopback listener, directly and through any proxy. */
char *sl_attest_connect_script(unsigned port);

/*
 * In `workdir`, try to write into .git and .sbxloop/git and to rename
 * .git and .sbxloop to .sbxloop-attest-TAG-0 and -1 (the host looks).
 */
char *sl_attest_git_script(const char *workdir, const char *tag);

/* The job's memory, pids and address-space limits, on one line. */
extern const char sl_attest_resources_script[];

/* "NAME CODE" per egress probe name (000: no answer). */
extern const char sl_attest_egress_script[];

#endif

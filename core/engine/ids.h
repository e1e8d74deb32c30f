/*
 * Identifiers the engine mints: run ids (`r` + 8) and job ids (`j` + 10)
 * drawn from a 32-letter alphabet without i, l, o and u; and the rule
 * task ids an agent proposes must follow.
 */
#ifndef SL_IDS_H
#define SL_IDS_H

#include <stddef.h>

#define SL_RUN_ID_LEN 9
#define SL_JOB_ID_LEN 11

/* Write `prefix` + `n` random alphabet chars into buf (n + 2 bytes). */
void sl_id_new(char *buf, char prefix, size_t n);
void sl_run_id_new(char buf[SL_RUN_ID_LEN + 1]);
void sl_job_id_new(char buf[SL_JOB_ID_LEN + 1]);
/* 1 when `s` looks like a run id. */
int sl_run_id_valid(const char *s);

/*
 * Task ids come from the decomposer (agent text) and end up in paths,
 * SQL rows and terminal lines: 1 to SL_TASK_ID_MAX of [A-Za-z0-9._-],
 * not starting with '.' or '-'.
 */
#define SL_TASK_ID_MAX 64
int sl_task_id_valid(const char *s);

/*
 * Sandbox names: a run's pair is `sbxloop-<run>-agent` and
 * `sbxloop-<run>-github` (UPSTREAM.md 8.4); every sbxloop sandbox name
 * starts with SL_SANDBOX_PREFIX. The one builder and parser.
 */
#define SL_SANDBOX_PREFIX "sbxloop-"
/* The name of `run`'s sandbox of `role` into buf; -1 if it does not fit. */
int sl_sandbox_name(char *buf, size_t size, const char *run, const char *role);
/*
 * Split a pair name into run (into run_buf) and role ("agent" or
 * "github", static); 0 when `name` follows the pair scheme with a
 * valid run id, else -1.
 */
int sl_sandbox_name_parse(const char *name, char *run_buf, size_t size,
			  const char **role);

#endif

/*
 * Identifiers the engine mints: run ids (`r` + 8) and job ids (`j` + 10)
 * drawn from a 32-letter alphabet without i, l, o and u; and the rule
 * task ids an agent proposes must follow.
 */
#ifndef SBX_IDS_H
#define SBX_IDS_H

#include <stddef.h>

#define SBX_RUN_ID_LEN 9
#define SBX_JOB_ID_LEN 11

/* Write `prefix` + `n` random alphabet chars into buf (n + 2 bytes). */
void sbx_id_new(char *buf, char prefix, size_t n);
void sbx_run_id_new(char buf[SBX_RUN_ID_LEN + 1]);
void sbx_job_id_new(char buf[SBX_JOB_ID_LEN + 1]);
/* 1 when `s` looks like a run id. */
int sbx_run_id_valid(const char *s);

/*
 * Task ids come from the decomposer (agent text) and end up in paths,
 * SQL rows and terminal lines: 1 to SBX_TASK_ID_MAX of [A-Za-z0-9._-],
 * not starting with '.' or '-'.
 */
#define SBX_TASK_ID_MAX 64
int sbx_task_id_valid(const char *s);

#endif

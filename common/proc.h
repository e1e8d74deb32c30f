/*
 * The one subprocess helper of the core (and, through the host table, of
 * every plugin): argv only, never a shell; streamed line callbacks; a
 * bounded tail of each stream; timeouts that kill the whole process group.
 */
#ifndef SL_PROC_H
#define SL_PROC_H

#include <sbxloop/plugin.h>

/* 0 when the process ran (whatever its exit), else a negative code. */
int sl_proc_run(const struct sbxloop_proc_spec *spec,
		struct sbxloop_proc_result *res, struct sbxloop_error *err);
/*
 * The same for a reader of a work tree agents write (sbxloop's git on
 * the host): while it runs past its first second, the FIFOs under
 * `release_root` are released once a second (common/fifo.h), so one
 * planted where it reads cannot hold it. NULL: sl_proc_run.
 */
int sl_proc_run_releasing(const struct sbxloop_proc_spec *spec,
			  const char *release_root,
			  struct sbxloop_proc_result *res,
			  struct sbxloop_error *err);
void sl_proc_result_clear(struct sbxloop_proc_result *res);

#endif

/*
 * FIFOs that would hold a reader for good: a process reading a work tree
 * an agent writes (git reading a `.gitignore` or `.gitattributes`, which
 * it opens whatever its type, without O_NONBLOCK) blocks on a FIFO there
 * until a writer comes. Opening each for writing without blocking, then
 * closing it, lets such a reader go on: it reads an empty file. Used
 * while a reader runs too long: the lanes' libgit2 calls and sbxloop's
 * git on the host (engine), the review's evidence in the sandbox
 * (worker). libc only.
 */
#ifndef SL_FIFO_H
#define SL_FIFO_H

/*
 * Open for writing, without blocking, each FIFO under directory `root`,
 * 64 directories deep and 200,000 entries at most, never through a
 * symbolic link (not even `root` itself), and close it again.
 */
void sl_release_fifos(const char *root);

/*
 * The same from a poll loop: a reader started at `start` (a monotonic
 * time, seconds) that is still running at `now` has the FIFOs under
 * `root` released once a second from its first second on; *next (0 at
 * first) keeps when.
 */
void sl_release_fifos_tick(const char *root, double start, double now,
			   double *next);

#endif

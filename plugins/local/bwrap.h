/*
 * bubblewrap around a directory sandbox's command (bwrap.c): the argv
 * that confines one job. Private to the modules that compile dirbox.c.
 */
#ifndef SBXLOOP_DIRBOX_BWRAP_H
#define SBXLOOP_DIRBOX_BWRAP_H

#include "dirbox.h"

#define BWRAP_PATH "/usr/bin/bwrap"
/* The most shared paths a sandbox binds (the spec's shared_dirs). */
#define SHARED_MAX 8

/* The argv of bubblewrap, growing; strings borrowed or kept in `own`. */
struct bwv {
	const char **v;
	size_t n, cap;
	char **own;
	size_t n_own, cap_own;
	int oom;
};

/*
 * Fill *b with the bubblewrap argv around `argv` (contract at the
 * definition); free what it filled with dirbox_bwv_free.
 */
int dirbox_bwrap_argv(const struct dirbox *box, struct bwv *b, const char *ws,
		      int ws_ro, const char *home, char *shared,
		      const char *worker, const char *proxy_sock,
		      const char *cwd, const char *const *argv);
void dirbox_bwv_free(struct bwv *b);
/* Is `path` `base` or below it? Both absolute. */
int dirbox_path_within(const char *path, const char *base);

#endif

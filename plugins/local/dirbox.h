/*
 * Directory sandboxes on this host, shared by the `local` provider and
 * the test-only `mock` provider: each sandbox is a directory under
 * <state_dir>/sandboxes/, commands run as host subprocesses (optionally
 * under bubblewrap), and the run workspace is the host path itself.
 * Compiled into each module that uses it; never exported.
 */
#ifndef SBXLOOP_DIRBOX_H
#define SBXLOOP_DIRBOX_H

#include <sbxloop/sandbox.h>

struct dirbox {
	const struct sbxloop_host *host;
	const char *label;            /* "local", "mock": prefix of messages */
	char root[SBXLOOP_PATH_MAX];  /* <state_dir>/sandboxes */
	char state[SBXLOOP_PATH_MAX]; /* the state_dir, hidden under bwrap */
	int bwrap;                    /* run commands under bubblewrap */
	int share_net;                /* bwrap only: keep the host network */
	/*
	 * bwrap only: no network but the egress proxy, reached through
	 * the worker's bridge (set by local.c, which runs the proxies)
	 */
	int proxy;
	uint32_t caps; /* what this instance enforces */
};

/* Capabilities of a bubblewrap instance sharing no network: the best. */
#define DIRBOX_BEST_CAPS                                                      \
	(SBXLOOP_CAP_FILESYSTEM_CONFINED | SBXLOOP_CAP_WORKSPACE_MOUNTED |    \
	 SBXLOOP_CAP_DIES_WITH_PARENT | SBXLOOP_CAP_NETWORK_DISABLED |        \
	 SBXLOOP_CAP_WORKSPACE_READ_ONLY | SBXLOOP_CAP_GIT_READ_ONLY)

/*
 * Set up `box`; with `bwrap` set, bubblewrap is probed and a host where
 * it cannot run is an error naming the fix. `label` is borrowed.
 */
int dirbox_init(struct dirbox *box, const struct sbxloop_host *host,
		const char *label, int bwrap, int share_net,
		struct sbxloop_error *err);

/* The directory of sandbox `name` into buf; refuses unsafe names. */
int dirbox_dir(const struct dirbox *box, const char *name, char *buf,
	       size_t len, struct sbxloop_error *err);

int dirbox_create(struct dirbox *box, const struct sbxloop_sandbox_spec *spec,
		  struct sbxloop_sandbox_info *info,
		  struct sbxloop_error *err);
int dirbox_remove(struct dirbox *box, const char *name,
		  struct sbxloop_error *err);
int dirbox_exec(struct dirbox *box, const char *name,
		const struct sbxloop_exec_spec *spec,
		struct sbxloop_proc_result *res, struct sbxloop_error *err);
int dirbox_copy_in(struct dirbox *box, const char *name, const char *host_path,
		   const char *sandbox_path, struct sbxloop_error *err);
int dirbox_copy_out(struct dirbox *box, const char *name,
		    const char *sandbox_path, const char *host_path,
		    struct sbxloop_error *err);
int dirbox_list(struct dirbox *box, const char *prefix,
		void (*cb)(void *user,
			   const struct sbxloop_sandbox_entry *entry),
		void *user, struct sbxloop_error *err);

/*
 * A small file of the sandbox (`workspace`, `worker`, a counter) read
 * into buf, trailing newline removed; 0, or a negative code when the
 * sandbox or the file is missing. These files sit beside home/, never
 * in it: under bubblewrap only home/ is bound, so no command can change
 * what the host reads to build the next one's sandbox.
 */
int dirbox_read_meta(const struct dirbox *box, const char *name,
		     const char *file, char *buf, size_t len,
		     struct sbxloop_error *err);
int dirbox_write_meta(const struct dirbox *box, const char *name,
		      const char *file, const char *text,
		      struct sbxloop_error *err);

#endif

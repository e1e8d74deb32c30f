/*
 * Workspace resolution and isolation for fresh runs (UPSTREAM 8.3):
 * which host directory a run works on, and the per-run git clone that
 * keeps the operator's checkout untouched.
 */
#ifndef SL_WORKSPACE_H
#define SL_WORKSPACE_H

#include <cjson/cJSON.h>

#include <sbxloop/plugin.h>

#include "config/conf.h"

/* What one git command did (sl_git); release with sl_git_out_clear. */
struct sl_git_out {
	int ran;    /* git started (found on PATH) */
	int status; /* exit code */
	char *out;  /* stdout, trailing newline trimmed */
	char *err;
};

/* Run git in `cwd` with GIT_* stripped; 0 when it exited 0. */
int sl_git(struct sl_git_out *g, const char *cwd, const char *const *argv);
/*
 * The same in a tree agents write (the lanes' git): while git runs past
 * its first second, the FIFOs under `cwd` are released once a second
 * (common/fifo.h), so one an agent planted where git reads (a
 * .gitignore) cannot hold it.
 */
int sl_git_agents_tree(struct sl_git_out *g, const char *cwd,
		       const char *const *argv);
void sl_git_out_clear(struct sl_git_out *g);
#define SL_GIT(g, cwd, ...)                                                   \
	sl_git((g), (cwd), (const char *const[]){__VA_ARGS__, NULL})

/* What the resolution chose; release with sl_workspace_release. */
struct sl_workspace {
	char *path;   /* the workspace the run uses (absolute) */
	int cloned;   /* a per-run clone (new or reused) */
	char *branch; /* "sbxloop/<run>" when cloned */
	/* data of a sandbox.workspace_clone event, or NULL (caller emits) */
	cJSON *clone_event;
	/* for the summary: the command that brings the work back */
	char *fetch_cmd;
	/* a warning to print (dirty tree under `clone`), or NULL */
	char *warning;
};

/*
 * Resolve the workspace of fresh run `run_id` from `source` (NULL =
 * unset) and `mode` ("auto", "clone" or "in-place"); the clone goes to
 * <state_dir>/runs/<run>/workspace. Refusals (a dirty tree under auto,
 * a subtree, a repository without commits, clone without a checkout)
 * are SBXLOOP_EINVAL with the message to print. The source checkout is
 * only ever read.
 */
int sl_workspace_isolate(const char *source, const char *mode,
			 const char *state_dir, const char *run_id,
			 struct sl_workspace *ws, struct sbxloop_error *err);

/* The same from sandbox.workspace and sandbox.workspace_isolation. */
int sl_workspace_resolve(const struct sl_config *cfg, const char *state_dir,
			 const char *run_id, struct sl_workspace *ws,
			 struct sbxloop_error *err);

void sl_workspace_release(struct sl_workspace *ws);

/* A scheme URL without userinfo ("https://tok@h/r" -> "https://h/r");
 * scp-style and local URLs unchanged. Caller frees. */
char *sl_url_strip_userinfo(const char *url);

#endif

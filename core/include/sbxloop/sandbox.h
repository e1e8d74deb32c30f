/*
 * Sandbox provider: creates and removes the sandboxes a run uses, runs
 * commands in them with streamed output, copies files in and out, and
 * lists sandboxes by name prefix. Exactly one provider is active.
 *
 * Required slots: create, destroy, capabilities, sandbox_create,
 * sandbox_remove, exec, copy_in, copy_out, list.
 */
#ifndef SBXLOOP_SANDBOX_H
#define SBXLOOP_SANDBOX_H

#include <sbxloop/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Capabilities: a closed set. A provider claims only what it enforces;
 * `sbxloop plugins` and `sbxloop doctor` show them, and the core refuses
 * or warns where a capability it relies on is missing.
 */
enum sbxloop_capability {
	/* default-deny network egress with per-domain grants */
	SBXLOOP_CAP_EGRESS_ENFORCED = 1u << 0,
	/* no network at all inside the sandbox */
	SBXLOOP_CAP_NETWORK_DISABLED = 1u << 1,
	/* credentials injected by a proxy, never visible inside */
	SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX = 1u << 2,
	/* the host filesystem is not writable from inside */
	SBXLOOP_CAP_FILESYSTEM_CONFINED = 1u << 3,
	/* CPU / memory / disk limits enforced by the substrate */
	SBXLOOP_CAP_RESOURCE_BOUNDED = 1u << 4,
	/* the host workspace is live-mounted (no harvest needed) */
	SBXLOOP_CAP_WORKSPACE_MOUNTED = 1u << 5,
	/* sandboxed processes die with the host process */
	SBXLOOP_CAP_DIES_WITH_PARENT = 1u << 6,
	/* policy grants can be revoked */
	SBXLOOP_CAP_EGRESS_REVOCABLE = 1u << 7,
	/*
	 * ABI 1.2: a command run with exec's read_only_workspace cannot
	 * change the workspace (the critics run so); without it they can
	 */
	SBXLOOP_CAP_WORKSPACE_READ_ONLY = 1u << 8,
	/*
	 * ABI 1.7: while the workspace holds .sbxloop/lanes, nothing in the
	 * sandbox can write the workspace's .git or .sbxloop/git, so the
	 * core may run the lanes' git on the host. A mounting provider that
	 * confines the filesystem without it gets the lanes' git run inside
	 * the sandbox instead (a driver an agent configures runs confined)
	 */
	SBXLOOP_CAP_GIT_READ_ONLY = 1u << 9
};
#define SBXLOOP_CAP_ALL 0x3ffu
#define SBXLOOP_CAP_COUNT 10

#define SBXLOOP_PATH_MAX 4096
#define SBXLOOP_NAME_MAX 128

/* What to create. */
struct sbxloop_sandbox_spec {
	uint32_t struct_size;
	const char *name; /* "sbxloop-<run>-agent" */
	const char *role; /* "agent" | "github" | ... */
	const char *run_id;
	const char *workspace;            /* absolute host path */
	const char *worker_path;          /* host path of sbxloop-worker */
	const char *const *allow_domains; /* NULL-terminated seed allowlist */
	int read_only_workspace;          /* mount the workspace read-only */
	/* ---- the members of ABI 1.0 end here ---- */

	/*
	 * ABI 1.1: host directories (since 1.2 also single files) the
	 * jobs read and write at the same path (the script backend's
	 * scenario and its cursor), NULL-terminated, may be NULL. A
	 * provider that shares the host's filesystem makes them visible
	 * (bubblewrap binds them; a missing one is left out); one that
	 * cannot (a VM) ignores them. Check with SBXLOOP_HAS_SLOT.
	 */
	const char *const *shared_dirs;
	/* ---- the members of ABI 1.1 end here ---- */
};

/* What was created; filled by sandbox_create. */
struct sbxloop_sandbox_info {
	uint32_t struct_size;
	char name[SBXLOOP_NAME_MAX];
	char workdir[SBXLOOP_PATH_MAX]; /* the workspace, seen inside */
	char worker[SBXLOOP_PATH_MAX];  /* sbxloop-worker, seen inside */
	char home[SBXLOOP_PATH_MAX];    /* dir for jobs/, events/, results/ */
	int mounted;                    /* workspace is live-mounted */
	uint32_t capabilities;          /* of this very sandbox */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_exec_spec {
	uint32_t struct_size;
	const char *const *argv; /* NULL-terminated, run inside */
	const char *const *envp; /* extra NAME=VALUE, NULL-terminated */
	const char *cwd;         /* inside; NULL = the workdir */
	const char *stdin_data;  /* NULL = /dev/null */
	size_t stdin_len;
	double timeout_s; /* 0 = none */
	void (*on_stdout_line)(void *user, const char *line, size_t len);
	void (*on_stderr_line)(void *user, const char *line, size_t len);
	void *user;
	/* ---- the members of ABI 1.0 end here ---- */

	/*
	 * ABI 1.2: run this one command with the workspace read-only (the
	 * sandbox's home stays writable). Honoured only by a provider with
	 * SBXLOOP_CAP_WORKSPACE_READ_ONLY; check with SBXLOOP_HAS_FIELD.
	 */
	int read_only_workspace;
	/* ---- the members of ABI 1.2 end here ---- */
};

/* One listed sandbox, borrowed for the callback's duration. */
struct sbxloop_sandbox_entry {
	uint32_t struct_size;
	const char *name;
	const char *status;    /* "running", "stopped", ... */
	const char *workspace; /* may be "" */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_sandbox_ops {
	uint32_t struct_size;
	/* Instance lifecycle; settings come through host->config_*. */
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);

	/* The capabilities this provider can offer at best (for listing). */
	uint32_t static_capabilities;

	/* The capabilities of this configured instance. */
	uint32_t (*capabilities)(void *ctx);

	/* Create a sandbox; on failure nothing is left behind. */
	int (*sandbox_create)(void *ctx,
			      const struct sbxloop_sandbox_spec *spec,
			      struct sbxloop_sandbox_info *info,
			      struct sbxloop_error *err);
	/* Stop and remove by name; a missing sandbox is not an error. */
	int (*sandbox_remove)(void *ctx, const char *name,
			      struct sbxloop_error *err);

	/*
	 * Run a command inside. Returns 0 when the command ran, whatever its
	 * exit code (in res); SBXLOOP_EINFRA when the substrate failed;
	 * SBXLOOP_ETIMEDOUT after killing it on timeout (res still filled).
	 */
	int (*exec)(void *ctx, const char *name,
		    const struct sbxloop_exec_spec *spec,
		    struct sbxloop_proc_result *res,
		    struct sbxloop_error *err);

	int (*copy_in)(void *ctx, const char *name, const char *host_path,
		       const char *sandbox_path, struct sbxloop_error *err);
	int (*copy_out)(void *ctx, const char *name, const char *sandbox_path,
			const char *host_path, struct sbxloop_error *err);

	/* List sandboxes whose name starts with `prefix`. */
	int (*list)(void *ctx, const char *prefix,
		    void (*cb)(void *user,
			       const struct sbxloop_sandbox_entry *entry),
		    void *user, struct sbxloop_error *err);
	/* ---- the slots of ABI 1.0 end here ---- */

	/*
	 * 1.4, optional: the provider's own rows of `sbxloop doctor`, one
	 * cb call per check. status is "ok", "warn" (works, with a caveat)
	 * or "FAIL" (a run cannot work); every string is borrowed for the
	 * call. `hosts` (NULL-terminated) are the hosts the agent sandbox
	 * must reach: a provider that enforces egress says whether its
	 * policy lets them through. Returns 0 when the checks ran, whatever
	 * they found; an error only when it could not check at all.
	 */
	int (*doctor)(void *ctx, const char *const *hosts,
		      void (*cb)(void *user, const char *check,
				 const char *status, const char *detail),
		      void *user, struct sbxloop_error *err);
	/*
	 * 1.4, optional: the argv of a program that opens an interactive
	 * login shell in sandbox `name` on the caller's terminal (`sbxloop
	 * shell`); the core execs it in place. Fills at most `max` entries
	 * including the terminating NULL; the strings stay valid until the
	 * next call or destroy. Without this slot the provider offers
	 * `sbxloop shell -c CMD` (through exec) but no interactive shell.
	 */
	int (*interactive_argv)(void *ctx, const char *name, const char **argv,
				size_t max, struct sbxloop_error *err);
	/* ---- the slots of ABI 1.4 end here ---- */
};
SBXLOOP_OPS_HEAD_CHECK(struct sbxloop_sandbox_ops);

#ifdef __cplusplus
}
#endif
#endif

/*
 * sbxloop plugin SDK: the module descriptor, return codes, the error
 * object and the host services table. Every component kind has its own
 * header (sandbox.h, secret.h, sink.h, reporter.h, policy.h, store.h);
 * this one is included by all of them.
 *
 * Rules of the ABI
 *   - A module exports exactly one symbol, `sbxloop_plugin_descriptor`,
 *     a const struct sbxloop_plugin_descriptor. The core checks it before
 *     any plugin code runs: magic, major equal, minor not newer than the
 *     core's, struct sizes, required slots non-NULL.
 *   - Every struct that crosses the ABI starts with `uint32_t
 *     struct_size`. Structs grow only at their end within a major; a
 *     slot beyond a struct's struct_size is absent (SBXLOOP_HAS_SLOT).
 *   - Plugins never link against core symbols: every service comes from
 *     the host table handed to create(). Third-party types (cJSON, yaml,
 *     sqlite3) never cross the ABI; JSON travels as text.
 *   - Strings passed into a callback or returned in a struct are borrowed
 *     for the duration of the call unless a prototype says otherwise.
 *
 * ABI log (bump SBXLOOP_ABI_MINOR for an appended slot, the major for
 * anything else, and add a line here):
 *   1.0  first public ABI: sandbox, secret, sink, reporter, policy, store.
 *   1.1  sbxloop_sandbox_spec.shared_dirs (host directories a sandbox
 *        that shares the host's filesystem binds read-write).
 *   1.2  sbxloop_exec_spec.read_only_workspace (one command sees the
 *        workspace read-only) and SBXLOOP_CAP_WORKSPACE_READ_ONLY (the
 *        provider honours it); SBXLOOP_HAS_FIELD; shared_dirs may
 *        name single files.
 *   1.3  sbxloop_host.state_read_only (the command only reads the
 *        persisted state: a store may open it read-only).
 *   1.4  sbxloop_sandbox_ops.doctor (a provider's own `sbxloop doctor`
 *        rows) and .interactive_argv (`sbxloop shell` without -c), so
 *        the core runs no substrate's CLI itself.
 *   1.5  sbxloop_host.sandbox_job (run a worker job in the run's
 *        sandbox of a role: how a reporter acts through the github
 *        sandbox without holding its token).
 *   1.6  sbxloop_host.chat_post (a sink's input line queues a steering
 *        message for the run) and the store's steering inbox
 *        (sbxloop_store_ops.inbox_push, inbox_pending, inbox_done).
 *   1.7  SBXLOOP_CAP_GIT_READ_ONLY (the sandbox cannot write the
 *        workspace's git directories while lanes run in it).
 */
#ifndef SBXLOOP_PLUGIN_H
#define SBXLOOP_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBXLOOP_PLUGIN_MAGIC 0x5342584cu /* "SBXL" */
#define SBXLOOP_ABI_MAJOR 1
#define SBXLOOP_ABI_MINOR 7

/* The symbol every module exports. */
#define SBXLOOP_DESCRIPTOR_SYMBOL "sbxloop_plugin_descriptor"

#if defined(__GNUC__)
#define SBXLOOP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define SBXLOOP_EXPORT __attribute__((visibility("default")))
#else
#define SBXLOOP_PRINTF(fmt, args)
#define SBXLOOP_EXPORT
#endif

/* True when `s` (a pointer to an ABI struct) is large enough to hold
 * `field` and that slot is set. Use it for every slot added after 1.0. */
#define SBXLOOP_HAS_SLOT(s, type, field)                                      \
	((s) != NULL &&                                                       \
	 (s)->struct_size >= offsetof(type, field) + sizeof((s)->field) &&    \
	 (s)->field != NULL)

/* True when `s` is large enough to hold the (non-pointer) `field`. */
#define SBXLOOP_HAS_FIELD(s, type, field)                                     \
	((s) != NULL &&                                                       \
	 (s)->struct_size >= offsetof(type, field) + sizeof((s)->field))

/* Return codes: 0 or negative. */
enum sbxloop_rc {
	SBXLOOP_OK = 0,
	SBXLOOP_ERR = -1, /* generic failure, see the error object */
	SBXLOOP_ENOMEM = -2,
	SBXLOOP_EINVAL = -3,    /* bad argument or input */
	SBXLOOP_ENOTFOUND = -4, /* no such run, task, sandbox, ... */
	SBXLOOP_ETIMEDOUT = -5,
	SBXLOOP_EUNSUPPORTED = -6, /* this component cannot do that */
	SBXLOOP_EINFRA = -7,       /* the substrate failed, not the command */
	SBXLOOP_ECANCELLED = -8,
	SBXLOOP_EEXIST = -9,
	SBXLOOP_ECORRUPT = -10, /* stored data unreadable */
	SBXLOOP_ESTATE = -11    /* refused in the current state */
};

#define SBXLOOP_ERROR_MAX 1024

/*
 * The error object. The caller owns it (usually on its stack) and the
 * callee fills it through host->error_set(); it holds no heap memory, so
 * there is nothing to free.
 */
struct sbxloop_error {
	int code;
	char message[SBXLOOP_ERROR_MAX];
};

enum sbxloop_kind {
	SBXLOOP_KIND_SANDBOX = 1,
	SBXLOOP_KIND_SECRET = 2,
	SBXLOOP_KIND_SINK = 3,
	SBXLOOP_KIND_REPORTER = 4,
	SBXLOOP_KIND_POLICY = 5,
	SBXLOOP_KIND_STORE = 6
};

enum sbxloop_log_level {
	SBXLOOP_LOG_DEBUG = 0,
	SBXLOOP_LOG_INFO = 1,
	SBXLOOP_LOG_WARN = 2,
	SBXLOOP_LOG_ERROR = 3
};

/* Types a plugin may declare for its config keys. */
enum sbxloop_value_type {
	SBXLOOP_VALUE_STRING = 1,
	SBXLOOP_VALUE_INT = 2,
	SBXLOOP_VALUE_FLOAT = 3,
	SBXLOOP_VALUE_BOOL = 4,
	SBXLOOP_VALUE_LIST = 5 /* a sequence of strings */
};

/*
 * A key a component accepts in its own config mapping (the top-level
 * mapping named after the component). The core validates the mapping
 * against these before create() runs: unknown keys, wrong types and
 * values outside `choices` are configuration errors with file:line.
 */
struct sbxloop_config_key {
	const char *name; /* NULL ends the array */
	enum sbxloop_value_type type;
	const char *default_value; /* textual; NULL = unset */
	const char *choices;       /* "a|b|c" for an enum string, or NULL */
	const char *help;          /* one line, shown by `sbxloop init` */
};

struct sbxloop_event;
struct sbxloop_sandbox_info;

/*
 * A subprocess run by the host's helper. argv[0] is looked up on PATH.
 * Output is delivered line by line to the callbacks (a final partial line
 * too) and the last `tail_max` bytes of each stream are kept in the
 * result.
 */
struct sbxloop_proc_spec {
	uint32_t struct_size;
	const char *const *argv; /* NULL-terminated */
	const char *const *envp; /* NULL = inherit the host's */
	const char *cwd;         /* NULL = inherit */
	const char *stdin_data;  /* NULL = /dev/null */
	size_t stdin_len;
	double timeout_s; /* 0 = none; then the group is killed */
	size_t tail_max;  /* 0 = 64 KiB */
	void (*on_stdout_line)(void *user, const char *line, size_t len);
	void (*on_stderr_line)(void *user, const char *line, size_t len);
	void *user;
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_proc_result {
	uint32_t struct_size;
	int exit_code;   /* -1 when killed by a signal */
	int term_signal; /* the signal, or 0 */
	int timed_out;
	char *out; /* tail of stdout, NUL-terminated; freed by */
	char *err; /* host->proc_result_clear() */
	size_t out_len;
	size_t err_len;
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

/*
 * The host services table. The core fills it; a plugin stores the
 * pointer it gets in create() and uses it for the life of its instance.
 */
struct sbxloop_host {
	uint32_t struct_size;
	uint16_t abi_major;
	uint16_t abi_minor;
	const char *version; /* sbxloop's version string */
	void *core;          /* opaque to plugins */

	/* Logging: one call with printf checking; the line is redacted. */
	void (*log)(const struct sbxloop_host *host,
		    enum sbxloop_log_level lvl, const char *fmt, ...)
		SBXLOOP_PRINTF(3, 4);
	/* Fill an error object; the message is redacted. Returns `code`. */
	int (*error_set)(const struct sbxloop_host *host,
			 struct sbxloop_error *err, int code, const char *fmt,
			 ...) SBXLOOP_PRINTF(4, 5);

	/*
	 * Config accessors by dotted path ("budgets.max_tasks",
	 * "local.isolation"). Strings are borrowed from the resolved config
	 * and live as long as the host. Unset keys give NULL / the default.
	 */
	const char *(*config_string)(const struct sbxloop_host *host,
				     const char *path);
	long long (*config_int)(const struct sbxloop_host *host,
				const char *path, long long dflt);
	double (*config_double)(const struct sbxloop_host *host,
				const char *path, double dflt);
	int (*config_bool)(const struct sbxloop_host *host, const char *path,
			   int dflt);
	size_t (*config_list_len)(const struct sbxloop_host *host,
				  const char *path);
	const char *(*config_list_item)(const struct sbxloop_host *host,
					const char *path, size_t i);

	/*
	 * Emit an event on the run's bus. `data_json` is a JSON object text
	 * (NULL = {}). `job_id` may be NULL. The host stamps ts and run_id,
	 * redacts, persists and fans out.
	 */
	int (*emit)(const struct sbxloop_host *host, const char *type,
		    const char *job_id, const char *data_json);

	/* The current run (NULL outside a run) and its persisted state. */
	const char *(*run_id)(const struct sbxloop_host *host);
	const char *(*state_dir)(const struct sbxloop_host *host);

	/* Run a subprocess; 0 when it ran (whatever its exit code). */
	int (*proc_run)(const struct sbxloop_host *host,
			const struct sbxloop_proc_spec *spec,
			struct sbxloop_proc_result *res,
			struct sbxloop_error *err);
	void (*proc_result_clear)(struct sbxloop_proc_result *res);

	/*
	 * Secret redaction. register: the value is masked from now on in
	 * every log, event, stored row and error (copied; values shorter
	 * than 4 bytes are ignored). redact: returns a newly allocated copy
	 * of `text` with every known secret masked; free it with host->free.
	 */
	void (*secret_register)(const struct sbxloop_host *host,
				const char *value);
	char *(*redact)(const struct sbxloop_host *host, const char *text);
	void (*free)(void *ptr);

	/*
	 * The active sandbox provider, for components that act inside a
	 * sandbox (a secret strategy writing an env file). `path` is a
	 * sandbox path; `mode` its permission bits.
	 */
	int (*sandbox_write_file)(const struct sbxloop_host *host,
				  const char *sandbox, const char *path,
				  const void *data, size_t len, unsigned mode,
				  struct sbxloop_error *err);
	int (*sandbox_exec)(const struct sbxloop_host *host,
			    const char *sandbox, const char *const *argv,
			    double timeout_s, struct sbxloop_proc_result *res,
			    struct sbxloop_error *err);

	/* ---- the members of ABI 1.0 end here ---- */

	/*
	 * 1.3: nonzero when the command only reads the persisted state
	 * (`status`, `logs`). A store then skips the checks only a writer
	 * needs and, where the state directory is read-only, opens it
	 * read-only instead of failing. Check with SBXLOOP_HAS_SLOT.
	 */
	int (*state_read_only)(const struct sbxloop_host *host);
	/* ---- the members of ABI 1.3 end here ---- */

	/*
	 * 1.5: run one worker job in the current run's sandbox of `role`
	 * ("github", "agent") and wait for it. `job_json` is a JobRequest
	 * object (docs/worker-protocol.md) without v, job_id and run_id,
	 * which the host fills in; its timeout_s bounds the wait. The
	 * worker's events go to the run's bus (a reporter sees them
	 * through its event slot, possibly on this same thread). On 0,
	 * *result_json (free with host->free) is the JobResult, whatever
	 * its status. SBXLOOP_ENOTFOUND: the run has no sandbox of that
	 * role (not provisioned, or torn down); SBXLOOP_EINFRA: the job
	 * gave no result. Safe to call from a plugin's own thread. Every
	 * call is logged (role, kind, op). Check with SBXLOOP_HAS_SLOT.
	 */
	int (*sandbox_job)(const struct sbxloop_host *host, const char *role,
			   const char *job_json, char **result_json,
			   struct sbxloop_error *err);
	/* ---- the members of ABI 1.5 end here ---- */

	/*
	 * 1.6: queue a steering message from the user for the current run
	 * (a sink's input line). The engine takes it at its next phase
	 * boundary: chat.message, a read-only STEER session, chat.action
	 * and chat.reply, all carrying *id_out (may be NULL) as
	 * message_id. SBXLOOP_ENOTFOUND: no run takes messages now;
	 * SBXLOOP_EUNSUPPORTED: the store keeps no inbox; SBXLOOP_EINVAL:
	 * empty text. Safe from any thread. Check with SBXLOOP_HAS_SLOT.
	 */
	int (*chat_post)(const struct sbxloop_host *host, const char *text,
			 int64_t *id_out, struct sbxloop_error *err);
	/* ---- the members of ABI 1.6 end here ---- */
};

/*
 * The head of every ops table (sandbox, secret, sink, reporter, policy,
 * store): each kind's struct begins with exactly these members, and the
 * kind headers check that at compile time (SBXLOOP_OPS_HEAD_CHECK), so
 * the core may read any component's lifecycle through this type.
 *
 * Lifecycle, for every kind:
 *   create(host, &ctx, err): settings come through host->config_*; the
 *     host table outlives the instance. On success returns 0 with *ctx
 *     set (NULL is allowed for a stateless component: destroy is then
 *     never called). On failure returns a negative code, fills err, and
 *     has freed whatever it allocated: the core ignores *ctx and never
 *     calls destroy for a failed create.
 *   destroy(ctx): called exactly once per successful create with a
 *     non-NULL ctx, never with NULL; frees everything the instance holds.
 *     After it returns the core touches nothing the instance handed out.
 */
struct sbxloop_ops_head {
	uint32_t struct_size;
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);
};

#ifndef __cplusplus
/* Fails the build when `type` does not begin with the ops head. */
#define SBXLOOP_OPS_HEAD_CHECK(type)                                          \
	_Static_assert(                                                       \
		offsetof(type, struct_size) ==                                \
				offsetof(struct sbxloop_ops_head,             \
					 struct_size) &&                      \
			offsetof(type, create) ==                             \
				offsetof(struct sbxloop_ops_head, create) &&  \
			offsetof(type, destroy) ==                            \
				offsetof(struct sbxloop_ops_head, destroy),   \
		#type " must begin with struct sbxloop_ops_head")
#else
#define SBXLOOP_OPS_HEAD_CHECK(type)                                          \
	static_assert(offsetof(type, destroy) ==                              \
			      offsetof(struct sbxloop_ops_head, destroy),     \
		      #type " must begin with struct sbxloop_ops_head")
#endif

/*
 * One component a module provides. `ops` points to the const ops table
 * of its kind (struct sbxloop_sandbox_ops, ...), which begins with
 * struct sbxloop_ops_head's members.
 */
struct sbxloop_component {
	uint32_t struct_size;
	enum sbxloop_kind kind;
	const char *name; /* "local", "sqlite", ... */
	const void *ops;
	const struct sbxloop_config_key
		*config_keys; /* NULL or {NULL}-ended */
	const char *summary;  /* one line */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_plugin_descriptor {
	uint32_t magic;     /* SBXLOOP_PLUGIN_MAGIC */
	uint16_t abi_major; /* SBXLOOP_ABI_MAJOR it was built with */
	uint16_t abi_minor;
	uint32_t struct_size; /* sizeof(struct sbxloop_plugin_descriptor) */
	const char *name;     /* must match the file name */
	const char *version;
	const struct sbxloop_component *components;
	size_t n_components;
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

/* Fill the header fields of a descriptor built against this SDK. */
#define SBXLOOP_DESCRIPTOR_HEADER                                             \
	.magic = SBXLOOP_PLUGIN_MAGIC, .abi_major = SBXLOOP_ABI_MAJOR,        \
	.abi_minor = SBXLOOP_ABI_MINOR,                                       \
	.struct_size = sizeof(struct sbxloop_plugin_descriptor)

#ifdef __cplusplus
}
#endif
#endif

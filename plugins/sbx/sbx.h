/*
 * Private header of the sbx module: the `sbx` CLI wrapper shared by the
 * provider, the secret strategies and the policy granter, and the ops
 * tables module.c puts in the descriptor.
 */
#ifndef SBXP_SBX_H
#define SBXP_SBX_H

#include <sbxloop/events.h>
#include <sbxloop/plugin.h>
#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>

/* The in-sandbox layout (UPSTREAM.md 7.1). */
#define SBXP_HOME "/home/agent/.sbxloop"
#define SBXP_WORKER SBXP_HOME "/bin/sbxloop-worker"
#define SBXP_ENV_FILE SBXP_HOME "/env.sh"
#define SBXP_FALLBACK_WORKDIR "/home/agent/work"

/* Default timeouts of sbx calls, in seconds (UPSTREAM.md 8.1). */
#define SBXP_CALL_TIMEOUT 120.0
#define SBXP_CREATE_TIMEOUT 600.0

/* What every component instance of the module keeps: the host and the
 * settings of its sbx calls. Strings are borrowed from the config. */
struct sbxp {
	const struct sbxloop_host *host;
	const char *app_name; /* "" or NULL = no --app-name */
	double timeout_s;     /* per call */
	double create_timeout_s;
};

/* One sbx call: the words after `sbx` and how to run them. */
struct sbxp_call {
	const char *const *args; /* NULL-terminated, without "sbx" */
	const char *stdin_data;  /* NULL = /dev/null */
	size_t stdin_len;
	double timeout_s; /* 0 = the instance default; <0 = none */
	void (*on_stdout_line)(void *user, const char *line, size_t len);
	void (*on_stderr_line)(void *user, const char *line, size_t len);
	void *user;
};

void sbxp_init(struct sbxp *s, const struct sbxloop_host *host);

/*
 * Run sbx. 0 when it ran, whatever its exit code (in res; clear it with
 * host->proc_result_clear). SBXLOOP_ENOTFOUND when sbx is not on PATH,
 * SBXLOOP_ETIMEDOUT after a timeout (res filled).
 */
int sbxp_run(struct sbxp *s, const struct sbxp_call *call,
	     struct sbxloop_proc_result *res, struct sbxloop_error *err);

/*
 * Run sbx and require exit 0: otherwise an error carrying the redacted
 * argv, the exit code and stderr; SBXLOOP_ENOTFOUND when stderr says the
 * sandbox does not exist, else SBXLOOP_EINFRA. `res` may be NULL.
 */
int sbxp_check(struct sbxp *s, const struct sbxp_call *call,
	       struct sbxloop_proc_result *res, struct sbxloop_error *err);

/* Shorthand: sbxp_check with args only and the default timeout. */
int sbxp_checkv(struct sbxp *s, const char *const *args,
		struct sbxloop_error *err);

/* `sbx policy log SANDBOX --json` as policy.observed events (netlog.c);
 * best effort, before the sandbox is removed. */
void sbxp_collect_netlog(struct sbxp *s, const char *sandbox);

/* One `policy allow network SANDBOX a,b,c` for the whole list (a NULL
 * or empty list is no call). */
int sbxp_allow_network(struct sbxp *s, const char *sandbox,
		       const char *const *domains, struct sbxloop_error *err);

/* The argv as text for logs and errors: `--value X` shows `***` and
 * every registered secret is masked. Caller frees. */
char *sbxp_argv_text(struct sbxp *s, const char *const *args);

/* Does an exec's stderr show sbx itself failed (not the command)? */
int sbxp_exec_infra_failure(const char *err);
/* Does stderr of a checked call say the sandbox is unknown? */
int sbxp_not_found(const char *err);

/* Remove every secret registration sbx-proxy made for `sandbox` in this
 * process (best effort; called when the sandbox is removed). */
void sbxp_forget_secrets(struct sbxp *s, const char *sandbox);

/* Parse `sbx ls` output (UPSTREAM.md 8.1.1); calls cb per named row. */
void sbxp_parse_ls(const char *text,
		   void (*cb)(void *user, const char *name, const char *agent,
			      const char *status, const char *workspace),
		   void *user);

/*
 * Parse a table of blank-separated words under a header line (`sbx
 * secret ls`), by header name, not position: want[k] lists the names
 * column k may have ({"NAME", "SECRET", NULL}); the header is the first
 * line holding a name of want[0]. cb gets n_want cells per row, in want
 * order, "" where a column is absent (borrowed for the call). A row with
 * fewer words than the header places them by offset. 0, or -1 when no
 * header was found.
 */
int sbxp_parse_table(const char *text, const char *const *const *want,
		     size_t n_want,
		     void (*cb)(void *user, const char *const *cells),
		     void *user);

/* The doctor and interactive_argv slots of the provider (doctor.c);
 * contracts in <sbxloop/sandbox.h>. */
typedef void (*sbxp_row_fn)(void *user, const char *check, const char *status,
			    const char *detail);
int sbxp_doctor(struct sbxp *s, const char *const *hosts, sbxp_row_fn cb,
		void *user, struct sbxloop_error *err);
int sbxp_interactive_argv(struct sbxp *s, const char *name, const char **argv,
			  size_t max, struct sbxloop_error *err);

/* Single-quote `s` for sh. Caller frees. */
char *sbxp_shell_quote(const char *s);
/* A newly allocated printf result; NULL only on allocation failure. */
char *sbxp_printf(const char *fmt, ...) SBXLOOP_PRINTF(1, 2);

extern const struct sbxloop_sandbox_ops sbxp_sandbox_ops;
extern const struct sbxloop_secret_ops sbxp_proxy_ops;
extern const struct sbxloop_secret_ops sbxp_plain_env_ops;
extern const struct sbxloop_policy_ops sbxp_policy_ops;
extern const struct sbxloop_config_key sbxp_config_keys[];

#endif

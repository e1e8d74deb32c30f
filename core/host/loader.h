/*
 * Plugin discovery and loading. Modules are found on the search path,
 * opened with libltdl and their descriptor checked before any plugin
 * code runs; a refused module stays listed with its reason.
 */
#ifndef SL_LOADER_H
#define SL_LOADER_H

#include <sbxloop/plugin.h>

struct sl_module {
	char *name; /* file name without extension */
	char *path;
	void *handle; /* lt_dlhandle, NULL when refused */
	const struct sbxloop_plugin_descriptor *desc; /* NULL when refused */
	char *refusal; /* why it was refused, or NULL */
};

struct sl_registry {
	struct sl_module *modules;
	size_t n_modules;
	char **dirs; /* the search path actually used */
	size_t n_dirs;
};

/*
 * Discover and check every module on the search path:
 * $SBXLOOP_PLUGIN_PATH (colon-separated), then `plugin_dir` (may be
 * NULL), then the installed plugin directory.
 */
int sl_registry_load(struct sl_registry *reg, const char *plugin_dir,
		     struct sbxloop_error *err);
void sl_registry_release(struct sl_registry *reg);

/* A loaded component of `kind` named `name`, or NULL. */
const struct sbxloop_component *sl_registry_find(
	const struct sl_registry *reg, enum sbxloop_kind kind,
	const char *name, const struct sl_module **module);

const char *sl_kind_name(enum sbxloop_kind kind);
/* Names of capability bits, comma-separated into buf. */
void sl_caps_format(uint32_t caps, char *buf, size_t len);

/*
 * A call into plugin code, for the fault guard. Between
 * sl_plugin_enter() and sl_plugin_leave() on one thread:
 *   - a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) writes
 *     "fatal: plugin 'NAME' (PATH) crashed with SIGSEGV during WHAT" to
 *     stderr, then the process dies of that signal as it would have;
 *   - exit() writes "... called exit(N) during WHAT" and the process
 *     exits SL_EXIT_PLUGIN_EXITED instead: a plugin's exit status would
 *     otherwise read as sbxloop's own (often 0). _exit() is not seen.
 * The line is formatted at enter, so the signal handler only writes.
 * Calls nest (a plugin calling back into the host that calls another);
 * `call` lives on the caller's stack until leave.
 */
#define SL_EXIT_PLUGIN_EXITED 70 /* EX_SOFTWARE */
#define SL_PLUGIN_LINE_MAX 1024

struct sl_plugin_call {
	struct sl_plugin_call *outer;
	char head[SL_PLUGIN_LINE_MAX]; /* "fatal: plugin 'N' (P) " */
	char tail[64];                 /* " during create()\n" */
	size_t head_len;
	size_t tail_len;
};

/* Install the signal handlers and the exit hook (idempotent). */
void sl_plugin_guard_install(void);
/* `what` is what the plugin is doing: "create()", "destroy()", ... */
void sl_plugin_enter(struct sl_plugin_call *call, const struct sl_module *m,
		     const char *what);
void sl_plugin_leave(struct sl_plugin_call *call);

/* The ABI minor the core accepts up to (tests may lower it). */
extern unsigned sl_core_abi_minor;

#endif

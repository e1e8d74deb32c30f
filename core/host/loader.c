/*
 * The plugin loader. Walks the search path, opens each module with
 * libltdl (local symbols), checks its descriptor — magic, ABI major and
 * minor, struct sizes, required slots, name, duplicates — and keeps every
 * module, loaded or refused, in the registry for `sbxloop plugins`.
 * Nothing in a module is called before its descriptor passed. It also
 * owns the fault guard around calls into plugin code (a crash or an
 * exit() inside one names the module and the call).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ltdl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sbxloop/plugin.h>
#include <sbxloop/policy.h>
#include <sbxloop/reporter.h>
#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>
#include <sbxloop/sink.h>
#include <sbxloop/store.h>

#include "host/loader.h"
#include "common/util.h"

#ifndef SBXLOOP_PKGLIBDIR
#define SBXLOOP_PKGLIBDIR "/usr/local/lib/sbxloop"
#endif
#ifndef SBXLOOP_LOADER_ABI_MINOR
#define SBXLOOP_LOADER_ABI_MINOR SBXLOOP_ABI_MINOR
#endif

unsigned sl_core_abi_minor = SBXLOOP_LOADER_ABI_MINOR;

/* Slots every component of a kind must fill, by offset within its ops. */
struct slot {
	const char *name;
	size_t offset;
};

#define SLOT(type, field)                                                     \
	{                                                                     \
#field, offsetof(struct type, field)                          \
	}

static const struct slot sandbox_slots[] = {
	SLOT(sbxloop_sandbox_ops, create),
	SLOT(sbxloop_sandbox_ops, destroy),
	SLOT(sbxloop_sandbox_ops, capabilities),
	SLOT(sbxloop_sandbox_ops, sandbox_create),
	SLOT(sbxloop_sandbox_ops, sandbox_remove),
	SLOT(sbxloop_sandbox_ops, exec),
	SLOT(sbxloop_sandbox_ops, copy_in),
	SLOT(sbxloop_sandbox_ops, copy_out),
	SLOT(sbxloop_sandbox_ops, list),
	{NULL, 0},
};
static const struct slot secret_slots[] = {
	SLOT(sbxloop_secret_ops, create),
	SLOT(sbxloop_secret_ops, destroy),
	SLOT(sbxloop_secret_ops, provide),
	SLOT(sbxloop_secret_ops, revoke),
	{NULL, 0},
};
static const struct slot sink_slots[] = {
	SLOT(sbxloop_sink_ops, create),
	SLOT(sbxloop_sink_ops, destroy),
	SLOT(sbxloop_sink_ops, event),
	{NULL, 0},
};
static const struct slot reporter_slots[] = {
	SLOT(sbxloop_reporter_ops, create),
	SLOT(sbxloop_reporter_ops, destroy),
	SLOT(sbxloop_reporter_ops, run_start),
	SLOT(sbxloop_reporter_ops, event),
	SLOT(sbxloop_reporter_ops, run_end),
	{NULL, 0},
};
static const struct slot policy_slots[] = {
	SLOT(sbxloop_policy_ops, create),
	SLOT(sbxloop_policy_ops, destroy),
	SLOT(sbxloop_policy_ops, seed),
	SLOT(sbxloop_policy_ops, grant),
	{NULL, 0},
};
static const struct slot store_slots[] = {
	SLOT(sbxloop_store_ops, create),
	SLOT(sbxloop_store_ops, destroy),
	SLOT(sbxloop_store_ops, run_create),
	SLOT(sbxloop_store_ops, run_update),
	SLOT(sbxloop_store_ops, run_get),
	SLOT(sbxloop_store_ops, run_list),
	SLOT(sbxloop_store_ops, tasks_save),
	SLOT(sbxloop_store_ops, task_update),
	SLOT(sbxloop_store_ops, tasks_list),
	SLOT(sbxloop_store_ops, attempt_record),
	SLOT(sbxloop_store_ops, attempt_latest),
	SLOT(sbxloop_store_ops, attempts_list),
	SLOT(sbxloop_store_ops, event_append),
	SLOT(sbxloop_store_ops, flush),
	SLOT(sbxloop_store_ops, events_query),
	SLOT(sbxloop_store_ops, event_last_ts),
	{NULL, 0},
};

static const struct {
	enum sbxloop_kind kind;
	const char *name;
	const struct slot *slots;
} kinds[] = {
	{SBXLOOP_KIND_SANDBOX, "sandbox", sandbox_slots},
	{SBXLOOP_KIND_SECRET, "secret", secret_slots},
	{SBXLOOP_KIND_SINK, "sink", sink_slots},
	{SBXLOOP_KIND_REPORTER, "reporter", reporter_slots},
	{SBXLOOP_KIND_POLICY, "policy", policy_slots},
	{SBXLOOP_KIND_STORE, "store", store_slots},
};

const char *sl_kind_name(enum sbxloop_kind kind)
{
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(kinds); i++)
		if (kinds[i].kind == kind)
			return kinds[i].name;
	return NULL;
}

static const struct slot *kind_slots(enum sbxloop_kind kind)
{
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(kinds); i++)
		if (kinds[i].kind == kind)
			return kinds[i].slots;
	return NULL;
}

void sl_caps_format(uint32_t caps, char *buf, size_t len)
{
	static const char *const names[] = {
		"egress_enforced",         "network_disabled",
		"secret_never_in_sandbox", "filesystem_confined",
		"resource_bounded",        "workspace_mounted",
		"dies_with_parent",        "egress_revocable",
		"workspace_read_only",     "git_read_only",
	};
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < SL_ARRAY_SIZE(names); i++) {
		if (!(caps & (1u << i)))
			continue;
		used += (size_t)snprintf(buf + used,
					 used < len ? len - used : 0, "%s%s",
					 used ? "," : "", names[i]);
	}
}

static int ltdl_users;

static void refuse(struct sl_module *m, const char *fmt, ...)
	SBXLOOP_PRINTF(2, 3);

static void refuse(struct sl_module *m, const char *fmt, ...)
{
	struct sl_buf b = SL_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sl_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	free(m->refusal);
	m->refusal = sl_buf_detach(&b);
	m->desc = NULL;
}

static const char *rebuild_hint(void)
{
	static char hint[64];

	snprintf(hint, sizeof(hint), "rebuild it against sbxloop-plugin %d.%u",
		 SBXLOOP_ABI_MAJOR, sl_core_abi_minor);
	return hint;
}

/* The minimal ops size a kind needs: up to its last required slot. */
static size_t min_ops_size(const struct slot *slots)
{
	size_t i, end = sizeof(uint32_t);

	for (i = 0; slots[i].name; i++)
		if (slots[i].offset + sizeof(void *) > end)
			end = slots[i].offset + sizeof(void *);
	return end;
}

static int check_component(struct sl_module *m,
			   const struct sbxloop_component *c, size_t idx)
{
	const struct slot *slots;
	const uint32_t *ops_size;
	size_t i;

	if (c->struct_size < offsetof(struct sbxloop_component, config_keys)) {
		refuse(m,
		       "component %zu has struct_size %u, smaller than any "
		       "ABI %d allows; %s",
		       idx, c->struct_size, SBXLOOP_ABI_MAJOR, rebuild_hint());
		return -1;
	}
	if (!c->name || !*c->name) {
		refuse(m, "component %zu has no name", idx);
		return -1;
	}
	slots = kind_slots(c->kind);
	if (!slots) {
		refuse(m,
		       "component '%s' has unknown kind %d (this sbxloop "
		       "knows kinds 1-6); %s",
		       c->name, (int)c->kind, rebuild_hint());
		return -1;
	}
	if (!c->ops) {
		refuse(m, "component %s:%s has no ops table",
		       sl_kind_name(c->kind), c->name);
		return -1;
	}
	ops_size = c->ops;
	if (*ops_size < min_ops_size(slots)) {
		refuse(m,
		       "component %s:%s ops table is %u bytes, too small for "
		       "its required slots (%zu); %s",
		       sl_kind_name(c->kind), c->name, *ops_size,
		       min_ops_size(slots), rebuild_hint());
		return -1;
	}
	for (i = 0; slots[i].name; i++) {
		const void *const *slot =
			(const void *const *)((const char *)c->ops +
					      slots[i].offset);

		if (!*slot) {
			refuse(m,
			       "component %s:%s is missing the required slot "
			       "'%s'; implement it and rebuild",
			       sl_kind_name(c->kind), c->name, slots[i].name);
			return -1;
		}
	}
	return 0;
}

static int check_descriptor(struct sl_module *m,
			    const struct sbxloop_plugin_descriptor *d,
			    const struct sl_registry *reg)
{
	size_t i, j, k;

	if (d->magic != SBXLOOP_PLUGIN_MAGIC) {
		refuse(m,
		       "bad magic 0x%08x (expected 0x%08x): not an sbxloop "
		       "plugin, or built against an incompatible SDK; %s",
		       d->magic, SBXLOOP_PLUGIN_MAGIC, rebuild_hint());
		return -1;
	}
	if (d->abi_major != SBXLOOP_ABI_MAJOR) {
		refuse(m,
		       "built for plugin ABI %u.%u, this sbxloop has ABI "
		       "%d.%u; %s",
		       d->abi_major, d->abi_minor, SBXLOOP_ABI_MAJOR,
		       sl_core_abi_minor, rebuild_hint());
		return -1;
	}
	if (d->abi_minor > sl_core_abi_minor) {
		refuse(m,
		       "built for plugin ABI %u.%u, newer than this sbxloop's "
		       "ABI %d.%u; upgrade sbxloop or %s",
		       d->abi_major, d->abi_minor, SBXLOOP_ABI_MAJOR,
		       sl_core_abi_minor, rebuild_hint());
		return -1;
	}
	if (d->struct_size <
	    offsetof(struct sbxloop_plugin_descriptor, n_components) +
		    sizeof(size_t)) {
		refuse(m,
		       "descriptor struct_size %u is too small (ABI %u.%u, "
		       "this sbxloop has ABI %d.%u); %s",
		       d->struct_size, d->abi_major, d->abi_minor,
		       SBXLOOP_ABI_MAJOR, sl_core_abi_minor, rebuild_hint());
		return -1;
	}
	if (!d->name || strcmp(d->name, m->name) != 0) {
		refuse(m,
		       "descriptor name '%s' does not match the file name "
		       "'%s'; rename one of them",
		       d->name ? d->name : "(null)", m->name);
		return -1;
	}
	if (!d->components || d->n_components == 0) {
		refuse(m, "provides no components");
		return -1;
	}
	for (i = 0; i < d->n_components; i++)
		if (check_component(m, &d->components[i], i) < 0)
			return -1;
	/* duplicates: a module name, or a kind:name another module has */
	for (i = 0; i < reg->n_modules; i++) {
		const struct sl_module *o = &reg->modules[i];

		if (o == m || !o->desc)
			continue;
		if (strcmp(o->name, m->name) == 0) {
			refuse(m,
			       "duplicate of module '%s' already loaded from "
			       "'%s'",
			       o->name, o->path);
			return -1;
		}
		for (j = 0; j < d->n_components; j++)
			for (k = 0; k < o->desc->n_components; k++) {
				const struct sbxloop_component *a =
					&d->components[j];
				const struct sbxloop_component *b =
					&o->desc->components[k];

				if (a->kind == b->kind &&
				    strcmp(a->name, b->name) == 0) {
					refuse(m,
					       "component %s:%s is already "
					       "provided by module '%s' (%s)",
					       sl_kind_name(a->kind), a->name,
					       o->name, o->path);
					return -1;
				}
			}
	}
	return 0;
}

static void load_module(struct sl_registry *reg, const char *dir,
			const char *file)
{
	struct sl_module *m;
	const struct sbxloop_plugin_descriptor *d;
	lt_dladvise advise;
	lt_dlhandle h = NULL;
	const char *dot = strrchr(file, '.');

	reg->modules = sl_xrealloc(
		reg->modules, (reg->n_modules + 1) * sizeof(*reg->modules));
	m = &reg->modules[reg->n_modules++];
	memset(m, 0, sizeof(*m));
	m->name = sl_xstrndup(file, (size_t)(dot - file));
	m->path = sl_xasprintf("%s/%s", dir, file);

	if (lt_dladvise_init(&advise) || lt_dladvise_local(&advise)) {
		refuse(m, "cannot prepare the loader: %s", lt_dlerror());
		return;
	}
	h = lt_dlopenadvise(m->path, advise);
	lt_dladvise_destroy(&advise);
	if (!h) {
		refuse(m, "cannot open: %s", lt_dlerror());
		return;
	}
	d = lt_dlsym(h, SBXLOOP_DESCRIPTOR_SYMBOL);
	if (!d) {
		refuse(m,
		       "no '%s' symbol: not an sbxloop plugin (define one "
		       "with SBXLOOP_DESCRIPTOR_HEADER)",
		       SBXLOOP_DESCRIPTOR_SYMBOL);
		lt_dlclose(h);
		return;
	}
	if (check_descriptor(m, d, reg) < 0) {
		lt_dlclose(h);
		return;
	}
	m->handle = h;
	m->desc = d;
}

/* ---- the fault guard ------------------------------------------------ */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static struct sigaction previous[SL_ARRAY_SIZE(fatal_signals)];
static int guard_installed;
/* the innermost plugin call of this thread, read by the handlers */
static _Thread_local struct sl_plugin_call *current_call;
/* a stack to run the handler on when a plugin overflowed its own */
#define ALT_STACK_SIZE (64 * 1024)
static _Thread_local char alt_stack[ALT_STACK_SIZE];
static _Thread_local int alt_stack_set;

static const char *signal_label(int sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGILL:
		return "SIGILL";
	case SIGFPE:
		return "SIGFPE";
	case SIGABRT:
		return "SIGABRT";
	}
	return "a fatal signal";
}

static void write_all(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, p, len);

		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/* Async-signal-safe: only write(), sigaction() and raise(). */
static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
	const struct sl_plugin_call *c = current_call;
	static const char mid[] = "crashed with ";
	const char *label = signal_label(sig);
	size_t i;

	(void)si;
	(void)uc;
	if (c) {
		write_all(c->head, c->head_len);
		write_all(mid, sizeof(mid) - 1);
		write_all(label, strlen(label));
		write_all(c->tail, c->tail_len);
	}
	/* die as before: the earlier handler (a sanitizer's) or default */
	for (i = 0; i < SL_ARRAY_SIZE(fatal_signals); i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &previous[i], NULL);
	raise(sig);
}

/*
 * An exit() inside a plugin call. The status cannot be changed from
 * here, so after the line the process leaves with _exit() instead.
 */
static void on_exit_inside(int status)
{
	const struct sl_plugin_call *c = current_call;
	char mid[64];
	int n;

	if (!c)
		return;
	fflush(stdout);
	n = snprintf(mid, sizeof(mid), "called exit(%d)", status);
	write_all(c->head, c->head_len);
	write_all(mid, n > 0 ? (size_t)n : 0);
	write_all(c->tail, c->tail_len);
	_exit(SL_EXIT_PLUGIN_EXITED);
}

#ifdef __GLIBC__
/* glibc's on_exit() hands the handler exit()'s status */
static void exit_hook(int status, void *arg)
{
	(void)arg;
	on_exit_inside(status);
}
#else
static void exit_hook(void)
{
	on_exit_inside(-1);
}
#endif

void sl_plugin_guard_install(void)
{
	struct sigaction sa;
	size_t i;

	if (guard_installed)
		return;
	guard_installed = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal_signal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < SL_ARRAY_SIZE(fatal_signals); i++)
		sigaction(fatal_signals[i], &sa, &previous[i]);
#ifdef __GLIBC__
	on_exit(exit_hook, NULL);
#else
	atexit(exit_hook);
#endif
}

static void ensure_alt_stack(void)
{
	stack_t ss, old;

	if (alt_stack_set)
		return;
	alt_stack_set = 1;
	/* keep one the thread (or a sanitizer) already has */
	if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
		return;
	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = alt_stack;
	ss.ss_size = sizeof(alt_stack);
	sigaltstack(&ss, NULL);
}

void sl_plugin_enter(struct sl_plugin_call *call, const struct sl_module *m,
		     const char *what)
{
	int n;

	sl_plugin_guard_install();
	ensure_alt_stack();
	n = snprintf(call->head, sizeof(call->head),
		     "fatal: plugin '%s' (%s) ", m ? m->name : "?",
		     m ? m->path : "?");
	call->head_len = n < 0 ? 0
			 : (size_t)n >= sizeof(call->head)
				 ? sizeof(call->head) - 1
				 : (size_t)n;
	n = snprintf(call->tail, sizeof(call->tail), " during %s\n", what);
	call->tail_len = n < 0 ? 0
			 : (size_t)n >= sizeof(call->tail)
				 ? sizeof(call->tail) - 1
				 : (size_t)n;
	call->outer = current_call;
	current_call = call;
}

void sl_plugin_leave(struct sl_plugin_call *call)
{
	current_call = call->outer;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Module files in one directory: prefer X.la over X.so. */
static void scan_dir(struct sl_registry *reg, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **files = NULL;
	size_t n = 0, i;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *name = e->d_name;

		if (name[0] == '.')
			continue;
		if (sl_ends_with(name, ".la")) {
			files = sl_xrealloc(files, (n + 1) * sizeof(*files));
			files[n++] = sl_xstrdup(name);
		} else if (sl_ends_with(name, ".so")) {
			char *la = sl_xasprintf("%s/%.*s.la", dir,
						(int)(strlen(name) - 3), name);
			struct stat st;

			if (stat(la, &st) != 0) {
				files = sl_xrealloc(files,
						    (n + 1) * sizeof(*files));
				files[n++] = sl_xstrdup(name);
			}
			free(la);
		}
	}
	closedir(d);
	qsort(files, n, sizeof(*files), name_cmp);
	for (i = 0; i < n; i++) {
		load_module(reg, dir, files[i]);
		free(files[i]);
	}
	free(files);
}

static void add_dir(struct sl_registry *reg, const char *dir, size_t len)
{
	size_t i;
	char *d;

	if (len == 0)
		return;
	d = sl_xstrndup(dir, len);
	for (i = 0; i < reg->n_dirs; i++)
		if (strcmp(reg->dirs[i], d) == 0) {
			free(d);
			return;
		}
	reg->dirs = sl_xrealloc(reg->dirs, (reg->n_dirs + 1) * sizeof(char *));
	reg->dirs[reg->n_dirs++] = d;
}

int sl_registry_load(struct sl_registry *reg, const char *plugin_dir,
		     struct sbxloop_error *err)
{
	const char *env = getenv("SBXLOOP_PLUGIN_PATH");
	size_t i;

	memset(reg, 0, sizeof(*reg));
	sl_plugin_guard_install();
	if (ltdl_users++ == 0 && lt_dlinit() != 0) {
		ltdl_users = 0;
		return sl_error(err, SBXLOOP_ERR,
				"cannot initialise libltdl: %s", lt_dlerror());
	}
	while (env && *env) {
		size_t len = strcspn(env, ":");

		add_dir(reg, env, len);
		env += len;
		if (*env == ':')
			env++;
	}
	if (plugin_dir && *plugin_dir)
		add_dir(reg, plugin_dir, strlen(plugin_dir));
	add_dir(reg, SBXLOOP_PKGLIBDIR, strlen(SBXLOOP_PKGLIBDIR));
	for (i = 0; i < reg->n_dirs; i++)
		scan_dir(reg, reg->dirs[i]);
	return 0;
}

void sl_registry_release(struct sl_registry *reg)
{
	size_t i;

	for (i = 0; i < reg->n_modules; i++) {
		struct sl_module *m = &reg->modules[i];

		/* Sanitizer and valgrind reports need symbols of unloaded
		 * modules; keep them mapped when asked to. */
		if (m->handle && !getenv("SBXLOOP_KEEP_MODULES"))
			lt_dlclose(m->handle);
		free(m->name);
		free(m->path);
		free(m->refusal);
	}
	free(reg->modules);
	for (i = 0; i < reg->n_dirs; i++)
		free(reg->dirs[i]);
	free(reg->dirs);
	memset(reg, 0, sizeof(*reg));
	if (ltdl_users > 0 && --ltdl_users == 0)
		lt_dlexit();
}

const struct sbxloop_component *sl_registry_find(
	const struct sl_registry *reg, enum sbxloop_kind kind,
	const char *name, const struct sl_module **module)
{
	size_t i, j;

	for (i = 0; i < reg->n_modules; i++) {
		const struct sl_module *m = &reg->modules[i];

		if (!m->desc)
			continue;
		for (j = 0; j < m->desc->n_components; j++) {
			const struct sbxloop_component *c =
				&m->desc->components[j];

			if (c->kind == kind && strcmp(c->name, name) == 0) {
				if (module)
					*module = m;
				return c;
			}
		}
	}
	return NULL;
}

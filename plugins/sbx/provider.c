/*
 * The `sbx` sandbox provider: Docker Sandboxes microVMs driven through
 * the sbx CLI (UPSTREAM.md 8.1-8.4). sandbox_create provisions a whole
 * sandbox (create, one batched egress allow, directories, the worker
 * install with its version and runtime-library checks, mount discovery)
 * and removes it again when any step fails. The core calls it through
 * sbxp_sandbox_ops only.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sbx.h"
#include "common/json.h"

/* Candidate roots of the mount search, most likely first (8.4.1); the
 * host workspace's own path is tried before these. */
static const char *const mount_roots[] = {"/workspace", "/home/agent", "/mnt",
					  "/host",      "/root",       NULL};

/* A sandbox this instance created, for the default exec cwd. */
struct box {
	struct box *next;
	char name[SBXLOOP_NAME_MAX];
	char workdir[SBXLOOP_PATH_MAX];
};

struct provider {
	struct sbxp sbx;
	const char *tmpl;    /* template, or NULL */
	int install_runtime; /* apt-get a missing runtime library */
	struct box *boxes;
};

static int prov_create(const struct sbxloop_host *host, void **ctx,
		       struct sbxloop_error *err)
{
	struct provider *p = calloc(1, sizeof(*p));

	*ctx = NULL;
	if (!p)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "sbx: out of memory");
	sbxp_init(&p->sbx, host);
	p->tmpl = host->config_string(host, "sbx.template");
	if (!p->tmpl || !*p->tmpl)
		p->tmpl = host->config_string(host, "sandbox.template");
	if (p->tmpl && !*p->tmpl)
		p->tmpl = NULL;
	p->install_runtime = host->config_bool(host, "sbx.install_runtime", 1);
	*ctx = p;
	return 0;
}

static void prov_destroy(void *ctx)
{
	struct provider *p = ctx;
	struct box *b, *next;

	if (!p)
		return;
	for (b = p->boxes; b; b = next) {
		next = b->next;
		free(b);
	}
	free(p);
}

#define BASE_CAPS                                                             \
	(SBXLOOP_CAP_EGRESS_ENFORCED | SBXLOOP_CAP_EGRESS_REVOCABLE |         \
	 SBXLOOP_CAP_FILESYSTEM_CONFINED | SBXLOOP_CAP_RESOURCE_BOUNDED)

/*
 * The token stays outside the VM only when sbx-proxy is the one strategy
 * configured: it then holds (the sandbox sees sbx's placeholder) or
 * fails provisioning, never falling back to an env file inside.
 */
static uint32_t prov_capabilities(void *ctx)
{
	struct provider *p = ctx;
	const struct sbxloop_host *h = p->sbx.host;
	uint32_t caps = BASE_CAPS;

	if (h->config_list_len(h, "plugins.secrets") == 1 &&
	    !strcmp(h->config_list_item(h, "plugins.secrets", 0), "sbx-proxy"))
		caps |= SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX;
	return caps;
}

static struct box *box_find(struct provider *p, const char *name)
{
	struct box *b;

	for (b = p->boxes; b; b = b->next)
		if (!strcmp(b->name, name))
			return b;
	return NULL;
}

static void box_forget(struct provider *p, const char *name)
{
	struct box **pp, *b;

	for (pp = &p->boxes; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name))
			continue;
		b = *pp;
		*pp = b->next;
		free(b);
		return;
	}
}

/* ---- exec ------------------------------------------------------------ */

static int exec_argv(struct provider *p, const char *name,
		     const struct sbxloop_exec_spec *spec,
		     struct sbxloop_proc_result *res,
		     struct sbxloop_error *err)
{
	const struct sbxloop_host *h = p->sbx.host;
	struct sbxp_call call;
	struct box *b = box_find(p, name);
	const char *cwd = spec->cwd ? spec->cwd : b ? b->workdir : NULL;
	const char **args;
	size_t n = 0, i, nargv = 0, nenv = 0;
	int rc;

	for (i = 0; spec->argv && spec->argv[i]; i++)
		nargv++;
	for (i = 0; spec->envp && spec->envp[i]; i++)
		nenv++;
	if (!nargv)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "sbx: empty command for sandbox '%s'",
				    name);
	for (i = 0; i < nenv; i++) {
		/* `-e NAME=VALUE` is argv: no registered secret may ride it */
		char *red = h->redact(h, spec->envp[i]);
		int secret = red && strcmp(red, spec->envp[i]);

		h->free(red);
		if (secret)
			return h->error_set(
				h, err, SBXLOOP_EINVAL,
				"sbx: refusing to pass a secret on "
				"the sbx command line (%.*s=...)",
				(int)strcspn(spec->envp[i], "="),
				spec->envp[i]);
	}
	args = calloc(nargv + 2 * nenv + 8, sizeof(*args));
	if (!args)
		return h->error_set(h, err, SBXLOOP_ENOMEM,
				    "sbx: out of memory");
	args[n++] = "exec";
	if (spec->stdin_data)
		args[n++] = "-i";
	for (i = 0; i < nenv; i++) {
		args[n++] = "-e";
		args[n++] = spec->envp[i];
	}
	if (cwd && *cwd) {
		args[n++] = "-w";
		args[n++] = cwd;
	}
	args[n++] = name;
	for (i = 0; i < nargv; i++)
		args[n++] = spec->argv[i];
	args[n] = NULL;

	memset(&call, 0, sizeof(call));
	call.args = args;
	call.stdin_data = spec->stdin_data;
	call.stdin_len = spec->stdin_len;
	call.timeout_s = spec->timeout_s > 0 ? spec->timeout_s : -1;
	call.on_stdout_line = spec->on_stdout_line;
	call.on_stderr_line = spec->on_stderr_line;
	call.user = spec->user;
	rc = sbxp_run(&p->sbx, &call, res, err);
	if (rc == 0 && res->exit_code != 0 &&
	    sbxp_exec_infra_failure(res->err)) {
		char tail[512];
		size_t len = res->err_len, start;

		while (len && (res->err[len - 1] == '\n' ||
			       res->err[len - 1] == '\r'))
			len--;
		start = len >= sizeof(tail) ? len - (sizeof(tail) - 1) : 0;
		memcpy(tail, res->err + start, len - start);
		tail[len - start] = '\0';
		rc = h->error_set(h, err, SBXLOOP_EINFRA,
				  "sbx exec in sandbox '%s' failed: %s", name,
				  tail);
	}
	free(args);
	return rc;
}

static int prov_exec(void *ctx, const char *name,
		     const struct sbxloop_exec_spec *spec,
		     struct sbxloop_proc_result *res,
		     struct sbxloop_error *err)
{
	return exec_argv(ctx, name, spec, res, err);
}

/* Run `sh -c SCRIPT` inside with a timeout; res for the caller. */
static int exec_sh(struct provider *p, const char *name, const char *script,
		   double timeout_s, struct sbxloop_proc_result *res,
		   struct sbxloop_error *err)
{
	const char *argv[] = {"sh", "-c", script, NULL};
	struct sbxloop_exec_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.cwd = "/home/agent";
	spec.timeout_s = timeout_s > 0 ? timeout_s : p->sbx.timeout_s;
	return exec_argv(p, name, &spec, res, err);
}

/* ---- copy, list, remove ----------------------------------------------- */

static int prov_copy_in(void *ctx, const char *name, const char *host_path,
			const char *sandbox_path, struct sbxloop_error *err)
{
	struct provider *p = ctx;
	char *dst = sbxp_printf("%s:%s", name, sandbox_path);
	const char *args[] = {"cp", host_path, dst, NULL};
	int rc;

	if (!dst)
		return p->sbx.host->error_set(p->sbx.host, err, SBXLOOP_ENOMEM,
					      "sbx: out of memory");
	rc = sbxp_checkv(&p->sbx, args, err);
	free(dst);
	return rc;
}

static int prov_copy_out(void *ctx, const char *name, const char *sandbox_path,
			 const char *host_path, struct sbxloop_error *err)
{
	struct provider *p = ctx;
	char *src = sbxp_printf("%s:%s", name, sandbox_path);
	const char *args[] = {"cp", src, host_path, NULL};
	int rc;

	if (!src)
		return p->sbx.host->error_set(p->sbx.host, err, SBXLOOP_ENOMEM,
					      "sbx: out of memory");
	rc = sbxp_checkv(&p->sbx, args, err);
	free(src);
	return rc;
}

struct list_ctx {
	const char *prefix;
	void (*cb)(void *user, const struct sbxloop_sandbox_entry *entry);
	void *user;
};

static void list_row(void *user, const char *name, const char *agent,
		     const char *status, const char *workspace)
{
	struct list_ctx *l = user;
	struct sbxloop_sandbox_entry e;

	(void)agent;
	if (l->prefix && strncmp(name, l->prefix, strlen(l->prefix)))
		return;
	memset(&e, 0, sizeof(e));
	e.struct_size = sizeof(e);
	e.name = name;
	e.status = status;
	e.workspace = workspace;
	l->cb(l->user, &e);
}

static int prov_list(void *ctx, const char *prefix,
		     void (*cb)(void *user,
				const struct sbxloop_sandbox_entry *entry),
		     void *user, struct sbxloop_error *err)
{
	struct provider *p = ctx;
	const char *args[] = {"ls", NULL};
	struct sbxloop_proc_result res;
	struct sbxp_call call;
	struct list_ctx l = {prefix, cb, user};
	int rc;

	memset(&call, 0, sizeof(call));
	call.args = args;
	rc = sbxp_check(&p->sbx, &call, &res, err);
	if (rc == 0)
		sbxp_parse_ls(res.out, list_row, &l);
	p->sbx.host->proc_result_clear(&res);
	return rc;
}

/* `rm --force`, a missing sandbox being fine. */
static int remove_box(struct provider *p, const char *name,
		      struct sbxloop_error *err)
{
	const char *args[] = {"rm", "--force", name, NULL};
	int rc = sbxp_checkv(&p->sbx, args, err);

	box_forget(p, name);
	if (rc == SBXLOOP_ENOTFOUND) {
		err->code = 0;
		err->message[0] = '\0';
		return 0;
	}
	return rc;
}

static int prov_sandbox_remove(void *ctx, const char *name,
			       struct sbxloop_error *err)
{
	struct provider *p = ctx;
	const char *stop[] = {"stop", name, NULL};
	struct sbxloop_error ignored = {0, ""};
	int rc;

	/* what its traffic did, while sbx still knows the sandbox */
	if (box_find(p, name))
		sbxp_collect_netlog(&p->sbx, name);
	/* stopping first lets sbx end in-flight execs cleanly; a sandbox
	 * sbx does not know needs no `rm` either */
	if (sbxp_checkv(&p->sbx, stop, &ignored) == SBXLOOP_ENOTFOUND) {
		box_forget(p, name);
		rc = 0;
	} else {
		rc = remove_box(p, name, err);
	}
	if (rc == 0)
		sbxp_forget_secrets(&p->sbx, name);
	return rc;
}

/* ---- provisioning ------------------------------------------------------ */

/* A marker file name: .sbxloop-mount-<16 hex>. */
static void marker_name(char *buf, size_t size)
{
	unsigned char raw[8];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t i;

	if (fd < 0 || read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw)) {
		unsigned long v =
			(unsigned long)getpid() ^ (unsigned long)(size_t)buf;

		for (i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(v >> (i * 3));
	}
	if (fd >= 0)
		close(fd);
	snprintf(buf, size, ".sbxloop-mount-");
	for (i = 0; i < sizeof(raw); i++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%02x",
			 raw[i]);
}

/*
 * The worker's runtime libraries, by the probe's exit status when one is
 * missing: 3 from ldd (libcjson, every sandbox), 6 from `check-github`
 * (libcurl, loaded only by github.op jobs, so only the github sandbox
 * needs it).
 */
static const struct runtime_lib {
	int exit_code;
	int bit;
	const char *lib, *package, *jobs;
} runtime_libs[] = {
	{3, 1, "libcjson", "libcjson1", ""},
	{6, 2, "libcurl (libcurl.so.4)", "libcurl4", "GitHub jobs "},
};

static const struct runtime_lib *runtime_lib(int exit_code)
{
	size_t i;

	for (i = 0; i < sizeof(runtime_libs) / sizeof(*runtime_libs); i++)
		if (runtime_libs[i].exit_code == exit_code)
			return &runtime_libs[i];
	return NULL;
}

/*
 * The one probe exec after the worker copy: make it executable, check
 * its libraries resolve (exit 3 when one is missing), print its version,
 * for the github sandbox check that it loads libcurl (`check-github`,
 * exit 6 when not) and, when a marker is given, search for the
 * workspace mount. Prints `version:<...>` and `mount:<hit>` lines.
 */
static char *probe_script(const char *workspace, const char *marker,
			  int github)
{
	char *qws = sbxp_shell_quote(workspace ? workspace : "");
	char *roots = NULL, *script;
	size_t n = strlen(qws) + 2, i;

	if (!qws)
		return NULL;
	for (i = 0; mount_roots[i]; i++)
		n += strlen(mount_roots[i]) + 1;
	roots = malloc(n);
	if (!roots) {
		free(qws);
		return NULL;
	}
	strcpy(roots, qws);
	for (i = 0; mount_roots[i]; i++) {
		strcat(roots, " ");
		strcat(roots, mount_roots[i]);
	}
	script = sbxp_printf(
		"w=" SBXP_WORKER "; chmod 755 \"$w\" || exit 4; "
		"if command -v ldd >/dev/null 2>&1 && "
		"ldd \"$w\" 2>&1 | grep -q 'not found'; then exit 3; fi; "
		"v=$(\"$w\" version) || exit 5; echo \"version:$v\"; "
		"%s%s%s%s%s%s"
		":",
		github ? "\"$w\" check-github >/dev/null 2>&1 || exit 6; "
		       : "",
		marker ? "set --; for d in " : "", marker ? roots : "",
		marker ? "; do [ -d \"$d\" ] && set -- \"$@\" \"$d\"; done; "
			 "if [ $# -gt 0 ]; then "
			 "h=$(find -L \"$@\" -maxdepth 4 -name "
		       : "",
		marker ? marker : "",
		marker ? " -print 2>/dev/null | head -1); "
			 "echo \"mount:$h\"; fi; "
		       : "");
	free(roots);
	free(qws);
	return script;
}

static const char *line_value(const char *out, const char *key)
{
	const char *p = out;
	size_t k = strlen(key);

	while (p && *p) {
		if (!strncmp(p, key, k))
			return p + k;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static void copy_line(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	while (src && src[n] && src[n] != '\n' && n + 1 < size) {
		dst[n] = src[n];
		n++;
	}
	dst[n] = '\0';
}

static void emit_mount(struct provider *p, const char *name, int mounted,
		       const char *probe, const char *path, const char *msg)
{
	const struct sbxloop_host *h = p->sbx.host;
	char *qn = sl_json_quote(name), *qp = sl_json_quote(path ? path : "");
	char *qm = sl_json_quote(msg ? msg : "");
	char *data;

	if (!qn || !qp || !qm)
		goto out;
	data = sbxp_printf("{\"name\":%s,\"mounted\":%s,\"probe\":\"%s\","
			   "\"%s\":%s}",
			   qn, mounted ? "true" : "false", probe,
			   mounted ? "path" : "message", mounted ? qp : qm);
	if (data)
		h->emit(h, SBXLOOP_EV_SANDBOX_WORKSPACE_MOUNT, NULL, data);
	free(data);
out:
	free(qn);
	free(qp);
	free(qm);
}

static int ends_with_marker(const char *path, const char *marker)
{
	size_t n = strlen(path), m = strlen(marker);

	return n > m && path[n - m - 1] == '/' &&
	       !strcmp(path + n - m, marker);
}

/* Install the worker and discover the mount; fills info. */
static int install_and_probe(struct provider *p,
			     const struct sbxloop_sandbox_spec *spec,
			     struct sbxloop_sandbox_info *info,
			     struct sbxloop_error *err)
{
	const struct sbxloop_host *h = p->sbx.host;
	struct sbxloop_proc_result res;
	char marker[48], *marker_path = NULL, *script = NULL;
	const char *v, *hit;
	const struct runtime_lib *lib;
	char got[128], mdir[SBXLOOP_PATH_MAX];
	int rc, have_marker = 0, installed = 0;

	memset(&res, 0, sizeof(res));
	rc = prov_copy_in(p, spec->name, spec->worker_path, SBXP_WORKER, err);
	if (rc < 0)
		goto out;

	marker_name(marker, sizeof(marker));
	if (spec->workspace && *spec->workspace) {
		int fd;

		marker_path = sbxp_printf("%s/%s", spec->workspace, marker);
		fd = marker_path
			     ? open(marker_path,
				    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				    0644)
			     : -1;
		if (fd >= 0) {
			close(fd);
			have_marker = 1;
		}
	}
	script = probe_script(spec->workspace, have_marker ? marker : NULL,
			      spec->role && !strcmp(spec->role, "github"));
	if (!script) {
		rc = h->error_set(h, err, SBXLOOP_ENOMEM,
				  "sbx: out of memory");
		goto out;
	}
	for (;;) {
		rc = exec_sh(p, spec->name, script, 0, &res, err);
		if (rc < 0)
			goto out;
		lib = runtime_lib(res.exit_code);
		if (!lib || (installed & lib->bit) || !p->install_runtime)
			break;
		{
			/* a runtime library is missing: install it, once */
			struct sbxloop_proc_result ir = {0};
			char *cmd =
				sbxp_printf("sudo -n apt-get install -y %s "
					    ">/dev/null 2>&1",
					    lib->package);

			h->log(h, SBXLOOP_LOG_INFO,
			       "sandbox '%s' lacks %s; installing %s",
			       spec->name, lib->lib, lib->package);
			h->proc_result_clear(&res);
			installed |= lib->bit;
			rc = cmd ? exec_sh(p, spec->name, cmd, 600, &ir, err)
				 : h->error_set(h, err, SBXLOOP_ENOMEM,
						"sbx: out of memory");
			free(cmd);
			h->proc_result_clear(&ir);
			if (rc < 0)
				goto out;
		}
	}
	if (lib) {
		rc = h->error_set(
			h, err, SBXLOOP_EINFRA,
			"sbxloop-worker cannot run %sin sandbox '%s': its "
			"runtime library %s is missing and %s%s%s; use a "
			"template that has %s (sbx.template)",
			lib->jobs, spec->name, lib->lib,
			p->install_runtime ? "`sudo apt-get install "
					   : "sbx.install_runtime is off",
			p->install_runtime ? lib->package : "",
			p->install_runtime ? "` did not provide it" : "",
			lib->package);
		goto out;
	}
	if (res.exit_code != 0) {
		char tail[256];

		copy_line(tail, sizeof(tail), res.err_len ? res.err : res.out);
		rc = h->error_set(h, err, SBXLOOP_EINFRA,
				  "cannot install sbxloop-worker in sandbox "
				  "'%s' (probe exit %d)%s%s",
				  spec->name, res.exit_code, *tail ? ": " : "",
				  tail);
		goto out;
	}
	v = line_value(res.out, "version:");
	copy_line(got, sizeof(got), v);
	{
		const char *ver = strrchr(got, ' ');

		ver = ver ? ver + 1 : got;
		if (strcmp(ver, h->version)) {
			rc = h->error_set(
				h, err, SBXLOOP_ESTATE,
				"sbxloop-worker in sandbox '%s' is version "
				"'%s' but this sbxloop is '%s'; point "
				"worker_path at the matching build",
				spec->name, *got ? got : "(none)", h->version);
			goto out;
		}
	}

	/* mount discovery: a hit ends with /<marker> */
	hit = have_marker ? line_value(res.out, "mount:") : NULL;
	copy_line(mdir, sizeof(mdir), hit);
	if (hit && *mdir && ends_with_marker(mdir, marker)) {
		char *slash = strrchr(mdir, '/');

		if (slash == mdir)
			slash[1] = '\0';
		else
			*slash = '\0';
		info->mounted = 1;
		snprintf(info->workdir, sizeof(info->workdir), "%s", mdir);
		emit_mount(p, spec->name, 1, "answered", mdir, NULL);
	} else {
		info->mounted = 0;
		snprintf(info->workdir, sizeof(info->workdir), "%s",
			 SBXP_FALLBACK_WORKDIR);
		if (have_marker)
			emit_mount(p, spec->name, 0, "answered", NULL,
				   "the workspace mount was not found; "
				   "results are harvested from the sandbox");
	}
	rc = 0;
out:
	h->proc_result_clear(&res);
	if (marker_path) {
		if (have_marker)
			unlink(marker_path);
		free(marker_path);
	}
	free(script);
	return rc;
}

static int prov_sandbox_create(void *ctx,
			       const struct sbxloop_sandbox_spec *spec,
			       struct sbxloop_sandbox_info *info,
			       struct sbxloop_error *err)
{
	struct provider *p = ctx;
	const struct sbxloop_host *h = p->sbx.host;
	struct sbxloop_error ignored = {0, ""};
	struct sbxp_call call;
	struct box *b = NULL;
	char *name_arg = NULL, *ws_arg = NULL;
	const char *args[10];
	size_t n = 0;
	int rc, created = 0;

	if (!spec || !spec->name || !*spec->name || !spec->workspace ||
	    !spec->worker_path)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "sbx: a sandbox needs a name, a "
				    "workspace and a worker path");
	if (strlen(spec->name) >= SBXLOOP_NAME_MAX)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "sbx: sandbox name '%s' is too long",
				    spec->name);
	if (access(spec->worker_path, R_OK) < 0)
		return h->error_set(h, err, SBXLOOP_EINVAL,
				    "cannot read worker '%s': %s",
				    spec->worker_path, strerror(errno));
	name_arg = sbxp_printf("--name=%s", spec->name);
	ws_arg = sbxp_printf("%s%s", spec->workspace,
			     spec->read_only_workspace ? ":ro" : "");
	b = calloc(1, sizeof(*b));
	if (!name_arg || !ws_arg || !b) {
		rc = h->error_set(h, err, SBXLOOP_ENOMEM,
				  "sbx: out of memory");
		goto out;
	}
	args[n++] = "create";
	args[n++] = name_arg;
	if (p->tmpl) {
		args[n++] = "--template";
		args[n++] = p->tmpl;
	}
	args[n++] = "shell";
	args[n++] = ws_arg;
	args[n] = NULL;
	memset(&call, 0, sizeof(call));
	call.args = args;
	call.timeout_s = p->sbx.create_timeout_s;
	rc = sbxp_check(&p->sbx, &call, NULL, err);
	if (rc < 0)
		goto out;
	created = 1;

	rc = sbxp_allow_network(&p->sbx, spec->name, spec->allow_domains, err);
	if (rc < 0)
		goto out;
	{
		struct sbxloop_proc_result res;

		rc = exec_sh(p, spec->name,
			     "mkdir -p " SBXP_HOME "/jobs " SBXP_HOME
			     "/events " SBXP_HOME "/results " SBXP_HOME
			     "/bin " SBXP_FALLBACK_WORKDIR,
			     0, &res, err);
		if (rc == 0 && res.exit_code != 0)
			rc = h->error_set(h, err, SBXLOOP_EINFRA,
					  "cannot create %s in sandbox '%s' "
					  "(exit %d)",
					  SBXP_HOME, spec->name,
					  res.exit_code);
		h->proc_result_clear(&res);
		if (rc < 0)
			goto out;
	}
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	rc = install_and_probe(p, spec, info, err);
	if (rc < 0)
		goto out;
	snprintf(info->name, sizeof(info->name), "%s", spec->name);
	snprintf(info->worker, sizeof(info->worker), "%s", SBXP_WORKER);
	snprintf(info->home, sizeof(info->home), "%s", SBXP_HOME);
	info->capabilities = prov_capabilities(p);
	if (info->mounted)
		info->capabilities |= SBXLOOP_CAP_WORKSPACE_MOUNTED;
	snprintf(b->name, sizeof(b->name), "%s", spec->name);
	snprintf(b->workdir, sizeof(b->workdir), "%s", info->workdir);
	b->next = p->boxes;
	p->boxes = b;
	b = NULL;
	rc = 0;
out:
	if (rc < 0 && created) {
		/* nothing may be left behind */
		if (remove_box(p, spec->name, &ignored) < 0)
			h->log(h, SBXLOOP_LOG_WARN,
			       "cannot roll back sandbox '%s': %s", spec->name,
			       ignored.message);
	}
	free(b);
	free(name_arg);
	free(ws_arg);
	return rc;
}

static int prov_doctor(void *ctx, const char *const *hosts, sbxp_row_fn cb,
		       void *user, struct sbxloop_error *err)
{
	struct provider *p = ctx;

	return sbxp_doctor(&p->sbx, hosts, cb, user, err);
}

static int prov_interactive_argv(void *ctx, const char *name,
				 const char **argv, size_t max,
				 struct sbxloop_error *err)
{
	struct provider *p = ctx;

	return sbxp_interactive_argv(&p->sbx, name, argv, max, err);
}

const struct sbxloop_sandbox_ops sbxp_sandbox_ops = {
	.struct_size = sizeof(struct sbxloop_sandbox_ops),
	.create = prov_create,
	.destroy = prov_destroy,
	.static_capabilities = BASE_CAPS |
			       SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX |
			       SBXLOOP_CAP_WORKSPACE_MOUNTED,
	.capabilities = prov_capabilities,
	.sandbox_create = prov_sandbox_create,
	.sandbox_remove = prov_sandbox_remove,
	.exec = prov_exec,
	.copy_in = prov_copy_in,
	.copy_out = prov_copy_out,
	.list = prov_list,
	.doctor = prov_doctor,
	.interactive_argv = prov_interactive_argv,
};

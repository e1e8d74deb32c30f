/*
 * Directory sandboxes: the code the `local` provider and the test-only
 * `mock` provider share. A sandbox is <state_dir>/sandboxes/<name>/ with
 * home/ (jobs/, events/, results/) and, beside it, small files naming
 * its workspace, worker and shared paths, so any process of the
 * run can find them again. Commands run through the host's subprocess
 * helper, either directly or wrapped in bubblewrap, which sees only the
 * system directories read-only, a few /etc files, the workspace, home/,
 * the worker and the shared paths (bwrap.c). Only the
 * providers' ops tables call this.
 */
#include "config.h"

#include "dirbox.h"
#include "bwrap.h"
#include "proxy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BWRAP_PROBE_TIMEOUT_S 20.0
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

extern char **environ;

/*
 * What a job of a proxy sandbox gets: its only way out is the bridge on
 * loopback, which carries every TCP connection to the host's proxy.
 */
static const char *const proxy_env[] = {
	"HTTP_PROXY=http://127.0.0.1:" LPROXY_PORT_STR,
	"HTTPS_PROXY=http://127.0.0.1:" LPROXY_PORT_STR,
	"http_proxy=http://127.0.0.1:" LPROXY_PORT_STR,
	"https_proxy=http://127.0.0.1:" LPROXY_PORT_STR,
	"NO_PROXY=localhost,127.0.0.1",
	"no_proxy=localhost,127.0.0.1",
	NULL};

/* Host variables a sandboxed command inherits; everything else is cut. */
static const char *const env_keep[] = {"PATH",   "LANG", "LC_ALL", "TERM",
				       "TMPDIR", "USER", NULL};

/* A NULL-terminated NAME=VALUE array; a later set replaces the name. */
struct envlist {
	char **v;
	size_t n;
	size_t cap;
};

static int envlist_set(struct envlist *env, const char *entry)
{
	size_t nl = strcspn(entry, "=");
	char *copy;
	size_t i;

	if (entry[nl] != '=' || nl == 0)
		return 0; /* not NAME=VALUE: ignored */
	copy = strdup(entry);
	if (!copy)
		return SBXLOOP_ENOMEM;
	for (i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], entry, nl) == 0 &&
		    env->v[i][nl] == '=') {
			free(env->v[i]);
			env->v[i] = copy;
			return 0;
		}
	}
	if (env->n + 2 > env->cap) {
		size_t cap = env->cap ? env->cap * 2 : 16;
		char **v = realloc(env->v, cap * sizeof(*v));

		if (!v) {
			free(copy);
			return SBXLOOP_ENOMEM;
		}
		env->v = v;
		env->cap = cap;
	}
	env->v[env->n++] = copy;
	env->v[env->n] = NULL;
	return 0;
}

static int envlist_setf(struct envlist *env, const char *name,
			const char *value)
{
	size_t len = strlen(name) + strlen(value) + 2;
	char *entry = malloc(len);
	int rc;

	if (!entry)
		return SBXLOOP_ENOMEM;
	snprintf(entry, len, "%s=%s", name, value);
	rc = envlist_set(env, entry);
	free(entry);
	return rc;
}

static void envlist_free(struct envlist *env)
{
	size_t i;

	for (i = 0; i < env->n; i++)
		free(env->v[i]);
	free(env->v);
	memset(env, 0, sizeof(*env));
}

/*
 * The environment of a sandboxed command: the allowlisted host
 * variables, SBXLOOP_* ones, HOME in the sandbox, then the caller's.
 */
static int build_env(const struct dirbox *box, const char *home,
		     const char *const *extra, struct envlist *env)
{
	char **e;
	size_t i;
	int rc = 0;

	for (i = 0; env_keep[i] && !rc; i++) {
		const char *v = getenv(env_keep[i]);

		if (strcmp(env_keep[i], "TMPDIR") == 0 && box->bwrap)
			v = "/tmp"; /* the host's may be outside the tmpfs */
		if (strcmp(env_keep[i], "PATH") == 0 && (!v || !*v))
			v = DEFAULT_PATH;
		if (v)
			rc = envlist_setf(env, env_keep[i], v);
	}
	for (e = environ; e && *e && !rc; e++)
		if (strncmp(*e, "SBXLOOP_", 8) == 0)
			rc = envlist_set(env, *e);
	if (!rc)
		rc = envlist_setf(env, "HOME", home);
	for (i = 0; extra && extra[i] && !rc; i++)
		rc = envlist_set(env, extra[i]);
	/* last: a job's own setting would only cut it off */
	for (i = 0; box->bwrap && box->proxy && proxy_env[i] && !rc; i++)
		rc = envlist_set(env, proxy_env[i]);
	return rc;
}

/* Names become path components: keep them boring. */
static int name_ok(const char *name)
{
	size_t i, n;

	if (!name || !*name || name[0] == '.')
		return 0;
	n = strlen(name);
	if (n >= SBXLOOP_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return 0;
	}
	return 1;
}

static int mkdirs(char *path, mode_t mode)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, mode) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

/* rm -rf without following symlinks; a missing path is fine. */
static int rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

static int probe_bwrap(struct dirbox *box, struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	const char *const argv[] = {BWRAP_PATH,
				    "--ro-bind",
				    "/",
				    "/",
				    "--dev",
				    "/dev",
				    "--proc",
				    "/proc",
				    "--unshare-all",
				    "--die-with-parent",
				    "--new-session",
				    "--",
				    "true",
				    NULL};
	struct sbxloop_proc_spec ps;
	struct sbxloop_proc_result res;
	struct sbxloop_error perr = {0, ""};
	int rc;

	if (access(BWRAP_PATH, X_OK) < 0)
		return host->error_set(
			host, err, SBXLOOP_EUNSUPPORTED,
			"%s: isolation 'bwrap' needs bubblewrap at '%s': %s; "
			"install bubblewrap or set %s.isolation: none",
			box->label, BWRAP_PATH, strerror(errno), box->label);
	memset(&ps, 0, sizeof(ps));
	ps.struct_size = sizeof(ps);
	ps.argv = argv;
	ps.timeout_s = BWRAP_PROBE_TIMEOUT_S;
	ps.tail_max = 1024;
	rc = host->proc_run(host, &ps, &res, &perr);
	if (rc == 0 && res.exit_code == 0 && !res.timed_out) {
		host->proc_result_clear(&res);
		return 0;
	}
	rc = host->error_set(
		host, err, SBXLOOP_EUNSUPPORTED,
		"%s: bubblewrap ('%s') cannot create a sandbox on this host "
		"(%s); it needs user namespaces: allow them (sysctl "
		"user.max_user_namespaces=15000, and on Debian/Ubuntu "
		"kernel.unprivileged_userns_clone=1 or "
		"kernel.apparmor_restrict_unprivileged_userns=0) or set "
		"%s.isolation: none",
		box->label, BWRAP_PATH,
		rc ? perr.message
		   : (res.err && *res.err ? res.err : "no reason given"),
		box->label);
	host->proc_result_clear(&res);
	return rc;
}

int dirbox_init(struct dirbox *box, const struct sbxloop_host *host,
		const char *label, int bwrap, int share_net,
		struct sbxloop_error *err)
{
	const char *state = host->state_dir(host);

	memset(box, 0, sizeof(*box));
	box->host = host;
	box->label = label;
	box->bwrap = bwrap;
	box->share_net = bwrap && share_net;
	if (!state || !*state)
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "%s: no state_dir to keep sandboxes in",
				       label);
	snprintf(box->state, sizeof(box->state), "%s", state);
	if ((size_t)snprintf(box->root, sizeof(box->root), "%s/sandboxes",
			     state) >= sizeof(box->root))
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "%s: state_dir '%s' is too long", label,
				       state);
	/*
	 * Without bubblewrap nothing confines the command, and the host's
	 * helper kills only the process group on a timeout: a command that
	 * leaves its group may outlive us, so DIES_WITH_PARENT is not
	 * claimed.
	 */
	box->caps = SBXLOOP_CAP_WORKSPACE_MOUNTED;
	if (bwrap) {
		box->caps |= SBXLOOP_CAP_FILESYSTEM_CONFINED |
			     SBXLOOP_CAP_DIES_WITH_PARENT |
			     SBXLOOP_CAP_WORKSPACE_READ_ONLY |
			     SBXLOOP_CAP_GIT_READ_ONLY;
		if (!box->share_net)
			box->caps |= SBXLOOP_CAP_NETWORK_DISABLED;
		return probe_bwrap(box, err);
	}
	return 0;
}

int dirbox_dir(const struct dirbox *box, const char *name, char *buf,
	       size_t len, struct sbxloop_error *err)
{
	if (!name_ok(name))
		return box->host->error_set(
			box->host, err, SBXLOOP_EINVAL,
			"%s: invalid sandbox name '%s' (letters, digits, '-', "
			"'_' and '.', not leading)",
			box->label, name ? name : "");
	if ((size_t)snprintf(buf, len, "%s/%s", box->root, name) >= len)
		return box->host->error_set(box->host, err, SBXLOOP_EINVAL,
					    "%s: sandbox path too long for "
					    "'%s'",
					    box->label, name);
	return 0;
}

int dirbox_read_meta(const struct dirbox *box, const char *name,
		     const char *file, char *buf, size_t len,
		     struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	char dir[SBXLOOP_PATH_MAX], path[SBXLOOP_PATH_MAX + 64];
	struct stat st;
	ssize_t n;
	int fd, rc;

	rc = dirbox_dir(box, name, dir, sizeof(dir), err);
	if (rc)
		return rc;
	if (stat(dir, &st) < 0)
		return host->error_set(host, err, SBXLOOP_ENOTFOUND,
				       "%s: no sandbox '%s'", box->label,
				       name);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	/* no wait on a FIFO in its place: a read of one gives nothing */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return host->error_set(host, err,
				       errno == ENOENT ? SBXLOOP_ENOTFOUND
						       : SBXLOOP_EINFRA,
				       "%s: cannot open '%s': %s", box->label,
				       path, strerror(errno));
	n = read(fd, buf, len - 1);
	rc = errno;
	close(fd);
	if (n < 0)
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "%s: cannot read '%s': %s", box->label,
				       path, strerror(rc));
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

int dirbox_write_meta(const struct dirbox *box, const char *name,
		      const char *file, const char *text,
		      struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	char dir[SBXLOOP_PATH_MAX], path[SBXLOOP_PATH_MAX + 64];
	char tmp[SBXLOOP_PATH_MAX + 80];
	size_t len = strlen(text);
	int fd, rc;

	rc = dirbox_dir(box, name, dir, sizeof(dir), err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "%s: cannot create '%s': %s",
				       box->label, tmp, strerror(errno));
	if (write(fd, text, len) != (ssize_t)len) {
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "%s: cannot write '%s': %s", box->label,
				     tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return rc;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "%s: cannot rename '%s': %s", box->label,
				     tmp, strerror(errno));
		unlink(tmp);
		return rc;
	}
	return 0;
}

/*
 * Under bubblewrap the host paths of spec->shared_dirs (ABI 1.1;
 * directories, or since 1.2 single files) are bound read-write at exec;
 * their list is kept in the sandbox's `shared` file, one a line, beside
 * home/ and out of the jobs' reach. The root is never shared whole.
 */
static int write_shared(const struct dirbox *box,
			const struct sbxloop_sandbox_spec *spec,
			struct sbxloop_error *err)
{
	char text[SHARED_MAX * (SBXLOOP_PATH_MAX + 1)];
	size_t len = 0, i;

	if (!SBXLOOP_HAS_SLOT(spec, struct sbxloop_sandbox_spec, shared_dirs))
		return 0;
	text[0] = '\0';
	for (i = 0; spec->shared_dirs[i] && i < SHARED_MAX; i++) {
		const char *d = spec->shared_dirs[i];

		if (d[0] != '/' || d[1] == '\0' || strchr(d, '\n'))
			return box->host->error_set(
				box->host, err, SBXLOOP_EINVAL,
				"%s: cannot share '%s' with sandbox '%s': an "
				"absolute path other than / is needed",
				box->label, d, spec->name);
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n",
					d);
	}
	if (!len)
		return 0;
	return dirbox_write_meta(box, spec->name, "shared", text, err);
}

int dirbox_create(struct dirbox *box, const struct sbxloop_sandbox_spec *spec,
		  struct sbxloop_sandbox_info *info, struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	static const char *const subdirs[] = {
		"home", "home/jobs", "home/events", "home/results", NULL};
	char dir[SBXLOOP_PATH_MAX], sub[SBXLOOP_PATH_MAX + 32];
	struct stat st;
	size_t i;
	int rc, made = 0;

	rc = dirbox_dir(box, spec->name, dir, sizeof(dir), err);
	if (rc)
		return rc;
	if (!spec->workspace || spec->workspace[0] != '/' ||
	    spec->workspace[strspn(spec->workspace, "/")] == '\0' ||
	    stat(spec->workspace, &st) < 0 || !S_ISDIR(st.st_mode)) {
		return host->error_set(
			host, err, SBXLOOP_EINVAL,
			"%s: workspace '%s' is not an absolute path to a "
			"directory other than /",
			box->label, spec->workspace ? spec->workspace : "");
	}
	/* leave room for home/results/<file> under the sandbox */
	if (strlen(dir) + 64 >= sizeof(info->home) ||
	    strlen(spec->workspace) >= sizeof(info->workdir) ||
	    (spec->worker_path &&
	     strlen(spec->worker_path) >= sizeof(info->worker)))
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "%s: sandbox, workspace or worker path "
				       "too long",
				       box->label);
	rc = mkdirs(box->root, 0700);
	if (rc < 0)
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "%s: cannot create '%s': %s",
				       box->label, box->root, strerror(-rc));
	if (mkdir(dir, 0700) < 0) {
		if (errno == EEXIST)
			return host->error_set(host, err, SBXLOOP_EEXIST,
					       "%s: sandbox '%s' already "
					       "exists",
					       box->label, spec->name);
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "%s: cannot create '%s': %s",
				       box->label, dir, strerror(errno));
	}
	made = 1;
	for (i = 0; subdirs[i]; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, subdirs[i]);
		if (mkdir(sub, 0700) < 0) {
			rc = host->error_set(host, err, SBXLOOP_EINFRA,
					     "%s: cannot create '%s': %s",
					     box->label, sub, strerror(errno));
			goto out;
		}
	}
	rc = dirbox_write_meta(box, spec->name, "workspace", spec->workspace,
			       err);
	if (!rc && spec->worker_path)
		rc = dirbox_write_meta(box, spec->name, "worker",
				       spec->worker_path, err);
	/* only bubblewrap can keep the workspace read-only */
	if (!rc && spec->read_only_workspace)
		rc = dirbox_write_meta(box, spec->name, "workspace-ro", "1\n",
				       err);
	if (!rc && box->bwrap)
		rc = write_shared(box, spec, err);
	if (!rc && spec->read_only_workspace && !box->bwrap)
		host->log(host, SBXLOOP_LOG_WARN,
			  "%s: sandbox '%s' asks for a read-only workspace, "
			  "but without isolation: bwrap it stays writable",
			  box->label, spec->name);
	if (rc)
		goto out;
	if (info) {
		snprintf(info->name, sizeof(info->name), "%s", spec->name);
		snprintf(info->workdir, sizeof(info->workdir), "%s",
			 spec->workspace);
		snprintf(info->worker, sizeof(info->worker), "%s",
			 spec->worker_path ? spec->worker_path : "");
		memcpy(info->home, dir, strlen(dir));
		memcpy(info->home + strlen(dir), "/home", 6);
		info->mounted = 1;
		info->capabilities = box->caps;
	}
out:
	if (rc && made)
		rm_tree(dir);
	return rc;
}

int dirbox_remove(struct dirbox *box, const char *name,
		  struct sbxloop_error *err)
{
	char dir[SBXLOOP_PATH_MAX];
	int rc;

	rc = dirbox_dir(box, name, dir, sizeof(dir), err);
	if (rc)
		return rc;
	rc = rm_tree(dir);
	if (rc < 0)
		return box->host->error_set(box->host, err, SBXLOOP_EINFRA,
					    "%s: cannot remove '%s': %s",
					    box->label, dir, strerror(-rc));
	return 0;
}

/*
 * `argv` run under the worker's bridge (sbxloop-worker bridge), which
 * listens on 127.0.0.1:LPROXY_PORT in the job's network namespace and
 * carries each connection to the proxy's socket. The worker already is
 * in every sandbox and runs as the job's parent there, so the bridge
 * lives exactly as long as the job: no second helper to ship, start or
 * reap. *out (free it) borrows every string.
 */
static int bridge_argv(const struct dirbox *box, const char *name,
		       const char *worker, const char *const *argv,
		       const char ***out, struct sbxloop_error *err)
{
	static const char *const head[] = {"bridge",
					   "--port",
					   LPROXY_PORT_STR,
					   "--socket",
					   LPROXY_INNER_SOCKET,
					   "--"};
	size_t n = 0, h = sizeof(head) / sizeof(*head), i;
	const char **v;

	if (!*worker)
		return box->host->error_set(
			box->host, err, SBXLOOP_EINVAL,
			"%s: sandbox '%s' has network 'proxy' but no "
			"executable sbxloop-worker to bridge its jobs to the "
			"egress proxy",
			box->label, name);
	while (argv[n])
		n++;
	v = calloc(n + h + 2, sizeof(*v));
	if (!v)
		return box->host->error_set(box->host, err, SBXLOOP_ENOMEM,
					    "%s: out of memory", box->label);
	v[0] = worker;
	for (i = 0; i < h; i++)
		v[1 + i] = head[i];
	for (i = 0; i < n; i++)
		v[1 + h + i] = argv[i];
	*out = v;
	return 0;
}

int dirbox_exec(struct dirbox *box, const char *name,
		const struct sbxloop_exec_spec *spec,
		struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	char dir[SBXLOOP_PATH_MAX], ws[SBXLOOP_PATH_MAX];
	char home[SBXLOOP_PATH_MAX + 8];
	/* the bubblewrap argv borrows its lines until the command ends */
	char shared[SHARED_MAX * (SBXLOOP_PATH_MAX + 1)];
	char worker[SBXLOOP_PATH_MAX];
	char sock[SBXLOOP_PATH_MAX + 16];
	const char **bridged = NULL;
	struct envlist env = {NULL, 0, 0};
	struct sbxloop_proc_spec ps;
	struct bwv wrapped;
	const char *cwd;
	int rc;

	memset(&wrapped, 0, sizeof(wrapped));
	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);
	if (!spec || !spec->argv || !spec->argv[0])
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "%s: empty command line", box->label);
	rc = dirbox_dir(box, name, dir, sizeof(dir), err);
	if (!rc)
		rc = dirbox_read_meta(box, name, "workspace", ws, sizeof(ws),
				      err);
	if (rc)
		return rc;
	snprintf(home, sizeof(home), "%s/home", dir);
	cwd = spec->cwd && *spec->cwd ? spec->cwd : ws;
	rc = build_env(box, home, spec->envp, &env);
	if (rc) {
		rc = host->error_set(host, err, rc, "%s: out of memory",
				     box->label);
		goto out;
	}
	memset(&ps, 0, sizeof(ps));
	ps.struct_size = sizeof(ps);
	ps.envp = (const char *const *)env.v;
	ps.stdin_data = spec->stdin_data;
	ps.stdin_len = spec->stdin_len;
	ps.timeout_s = spec->timeout_s;
	ps.on_stdout_line = spec->on_stdout_line;
	ps.on_stderr_line = spec->on_stderr_line;
	ps.user = spec->user;
	if (box->bwrap) {
		struct sbxloop_error ignored = {0, ""};
		char ro[8];
		int ws_ro = dirbox_read_meta(box, name, "workspace-ro", ro,
					     sizeof(ro), &ignored) == 0 &&
			    ro[0] == '1';

		/* a critic's job: this one command sees it read-only */
		if (SBXLOOP_HAS_FIELD(spec, struct sbxloop_exec_spec,
				      read_only_workspace) &&
		    spec->read_only_workspace)
			ws_ro = 1;

		if (dirbox_read_meta(box, name, "shared", shared,
				     sizeof(shared), &ignored) != 0)
			shared[0] = '\0';
		if (dirbox_read_meta(box, name, "worker", worker,
				     sizeof(worker), &ignored) != 0 ||
		    access(worker, X_OK) != 0)
			worker[0] = '\0';
		if (box->proxy) {
			rc = bridge_argv(box, name, worker, spec->argv,
					 &bridged, err);
			if (rc)
				goto out;
			snprintf(sock, sizeof(sock), "%s/%s", dir,
				 LPROXY_SOCKET);
		}
		if (dirbox_bwrap_argv(box, &wrapped, ws, ws_ro, home, shared,
				      worker, box->proxy ? sock : NULL, cwd,
				      bridged ? bridged : spec->argv)) {
			rc = host->error_set(host, err, SBXLOOP_ENOMEM,
					     "%s: out of memory", box->label);
			goto out;
		}
		ps.argv = wrapped.v;
	} else {
		ps.argv = spec->argv;
		ps.cwd = cwd;
	}
	rc = host->proc_run(host, &ps, res, err);
	if (rc) {
		char why[SBXLOOP_ERROR_MAX];

		snprintf(why, sizeof(why), "%s", err ? err->message : "");
		rc = host->error_set(
			host, err,
			rc == SBXLOOP_ENOTFOUND ? rc : SBXLOOP_EINFRA,
			"%s: sandbox '%s': %s", box->label, name, why);
		goto out;
	}
	if (res->timed_out)
		rc = host->error_set(host, err, SBXLOOP_ETIMEDOUT,
				     "%s: '%s' timed out after %gs in sandbox "
				     "'%s' and was killed",
				     box->label, spec->argv[0],
				     spec->timeout_s, name);
out:
	free(bridged);
	dirbox_bwv_free(&wrapped);
	envlist_free(&env);
	return rc;
}

/*
 * Resolve a sandbox path into `out` (a real host path) and check it lies
 * inside the sandbox's home/ or its workspace (never its metadata). With `must_exist` unset
 * only the parent has to exist (a file about to be written).
 */
static int resolve_inside(const struct dirbox *box, const char *name,
			  const char *path, int must_exist, char *out,
			  struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	char dir[SBXLOOP_PATH_MAX], ws[SBXLOOP_PATH_MAX];
	char rdir[PATH_MAX], rws[PATH_MAX], parent[PATH_MAX];
	const char *base;
	char *slash;
	int rc;

	rc = dirbox_dir(box, name, dir, sizeof(dir) - 8, err);
	if (!rc)
		rc = dirbox_read_meta(box, name, "workspace", ws, sizeof(ws),
				      err);
	if (rc)
		return rc;
	strcat(dir, "/home");
	if (!realpath(dir, rdir) || !realpath(ws, rws))
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "%s: cannot resolve sandbox '%s': %s",
				       box->label, name, strerror(errno));
	if (!path || path[0] != '/' || strlen(path) >= sizeof(parent))
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "%s: sandbox path '%s' is not absolute",
				       box->label, path ? path : "");
	if (must_exist) {
		if (!realpath(path, out))
			return host->error_set(host, err, SBXLOOP_ENOTFOUND,
					       "%s: cannot open '%s' in "
					       "sandbox '%s': %s",
					       box->label, path, name,
					       strerror(errno));
	} else {
		snprintf(parent, sizeof(parent), "%s", path);
		slash = strrchr(parent, '/');
		base = path + (slash - parent) + 1;
		if (!*base || strcmp(base, ".") == 0 ||
		    strcmp(base, "..") == 0)
			return host->error_set(host, err, SBXLOOP_EINVAL,
					       "%s: '%s' does not name a file",
					       box->label, path);
		if (slash == parent)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (!realpath(parent, out))
			return host->error_set(host, err, SBXLOOP_ENOTFOUND,
					       "%s: cannot open '%s' in "
					       "sandbox '%s': %s",
					       box->label, parent, name,
					       strerror(errno));
		if (strlen(out) + strlen(base) + 2 > PATH_MAX)
			return host->error_set(host, err, SBXLOOP_EINVAL,
					       "%s: path too long: '%s'",
					       box->label, path);
		if (strcmp(out, "/") != 0)
			strcat(out, "/");
		strcat(out, base);
	}
	if (!dirbox_path_within(out, rdir) && !dirbox_path_within(out, rws))
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "%s: '%s' is outside sandbox '%s' "
				       "(only its home '%s' and "
				       "workspace '%s' are reachable)",
				       box->label, path, name, dir, ws);
	return 0;
}

/* Copy a regular file through a temporary beside `dst` and a rename. */
static int copy_file(const struct dirbox *box, const char *src,
		     const char *dst, struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	char tmp[PATH_MAX + 16];
	char chunk[65536];
	struct stat st;
	int in = -1, out = -1, rc = 0;
	ssize_t n;

	tmp[0] = '\0';
	/* O_NONBLOCK: a FIFO an agent left in src's place is refused
	 * below, never waited on (regular files read the same) */
	in = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (in < 0) {
		rc = host->error_set(host, err, SBXLOOP_ENOTFOUND,
				     "%s: cannot open '%s': %s", box->label,
				     src, strerror(errno));
		goto out;
	}
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = host->error_set(host, err, SBXLOOP_EINVAL,
				     "%s: '%s' is not a regular file",
				     box->label, src);
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", dst);
	out = mkstemp(tmp);
	if (out < 0) {
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "%s: cannot create '%s': %s", box->label,
				     tmp, strerror(errno));
		tmp[0] = '\0';
		goto out;
	}
	while ((n = read(in, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, chunk, (size_t)n) != n) {
			rc = host->error_set(host, err, SBXLOOP_EINFRA,
					     "%s: cannot copy '%s' to '%s': "
					     "%s",
					     box->label, src, dst,
					     strerror(errno));
			goto out;
		}
	}
	if (fchmod(out, st.st_mode & 07777) < 0 || close(out) < 0) {
		out = -1;
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "%s: cannot write '%s': %s", box->label,
				     tmp, strerror(errno));
		goto out;
	}
	out = -1;
	if (rename(tmp, dst) < 0) {
		rc = host->error_set(host, err, SBXLOOP_EINFRA,
				     "%s: cannot rename '%s' to '%s': %s",
				     box->label, tmp, dst, strerror(errno));
		goto out;
	}
	tmp[0] = '\0';
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (tmp[0])
		unlink(tmp);
	return rc;
}

int dirbox_copy_in(struct dirbox *box, const char *name, const char *host_path,
		   const char *sandbox_path, struct sbxloop_error *err)
{
	char dst[PATH_MAX];
	int rc;

	rc = resolve_inside(box, name, sandbox_path, 0, dst, err);
	if (rc)
		return rc;
	return copy_file(box, host_path, dst, err);
}

int dirbox_copy_out(struct dirbox *box, const char *name,
		    const char *sandbox_path, const char *host_path,
		    struct sbxloop_error *err)
{
	char src[PATH_MAX];
	int rc;

	rc = resolve_inside(box, name, sandbox_path, 1, src, err);
	if (rc)
		return rc;
	return copy_file(box, src, host_path, err);
}

int dirbox_list(struct dirbox *box, const char *prefix,
		void (*cb)(void *user,
			   const struct sbxloop_sandbox_entry *entry),
		void *user, struct sbxloop_error *err)
{
	const struct sbxloop_host *host = box->host;
	size_t pl = prefix ? strlen(prefix) : 0;
	struct sbxloop_error ignored = {0, ""};
	char ws[SBXLOOP_PATH_MAX];
	struct dirent *d;
	DIR *dh;

	dh = opendir(box->root);
	if (!dh) {
		if (errno == ENOENT)
			return 0;
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "%s: cannot list '%s': %s", box->label,
				       box->root, strerror(errno));
	}
	while ((d = readdir(dh)) != NULL) {
		struct sbxloop_sandbox_entry e;

		if (!name_ok(d->d_name) ||
		    strncmp(d->d_name, prefix ? prefix : "", pl) != 0)
			continue;
		/* without its workspace file it is not a finished sandbox */
		if (dirbox_read_meta(box, d->d_name, "workspace", ws,
				     sizeof(ws), &ignored))
			continue;
		memset(&e, 0, sizeof(e));
		e.struct_size = sizeof(e);
		e.name = d->d_name;
		e.status = "created";
		e.workspace = ws;
		cb(user, &e);
	}
	closedir(dh);
	return 0;
}

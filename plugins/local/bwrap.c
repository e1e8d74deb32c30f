/*
 * The bubblewrap argv of a directory sandbox's job (bwrap.h): which host
 * paths a confined job sees, how, and what stays hidden (the sandbox's
 * metadata, the state directory, /etc beyond a short list, /root and
 * /home). Called only by dirbox_exec (dirbox.c).
 */
#include "config.h"

#include "bwrap.h"
#include "proxy.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dirbox_path_within(const char *path, const char *base)
{
	size_t n = strlen(base);

	while (n > 1 && base[n - 1] == '/')
		n--;
	if (n == 1 && base[0] == '/')
		return 1;
	return strncmp(path, base, n) == 0 &&
	       (path[n] == '/' || path[n] == '\0');
}

static void bw_add(struct bwv *b, const char *s)
{
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		const char **v = realloc(b->v, cap * sizeof(*v));

		if (!v) {
			b->oom = 1;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
}

static void bw_add3(struct bwv *b, const char *op, const char *a,
		    const char *c)
{
	bw_add(b, op);
	bw_add(b, a);
	if (c)
		bw_add(b, c);
}

/* Keep `s` (malloc'd, may be NULL) until the argv is freed. */
static const char *bw_keep(struct bwv *b, char *s)
{
	if (s && b->n_own == b->cap_own) {
		size_t cap = b->cap_own ? b->cap_own * 2 : 16;
		char **v = realloc(b->own, cap * sizeof(*v));

		if (v) {
			b->own = v;
			b->cap_own = cap;
		} else {
			free(s);
			s = NULL;
		}
	}
	if (!s) {
		b->oom = 1;
		return "";
	}
	b->own[b->n_own++] = s;
	return s;
}

void dirbox_bwv_free(struct bwv *b)
{
	size_t i;

	for (i = 0; i < b->n_own; i++)
		free(b->own[i]);
	free(b->own);
	free(b->v);
	memset(b, 0, sizeof(*b));
}

/* System directories, read-only (or as the host's symlink when one). */
static const char *const sys_dirs[] = {"/usr",    "/bin",   "/sbin",
				       "/lib",    "/lib32", "/lib64",
				       "/libx32", "/opt",   NULL};

/*
 * The /etc a job gets: a tmpfs holding these files, read-only, and
 * nothing else (no shadow, gshadow, sudoers, ssh host keys, ssl/private,
 * npmrc, pip.conf or gitconfig, which may carry credentials). Missing
 * ones are skipped; a symlink is bound as the file it points to.
 */
static const char *const etc_files[] = {"/etc/alternatives",
					"/etc/ld.so.cache",
					"/etc/ld.so.conf",
					"/etc/ld.so.conf.d",
					"/etc/passwd",
					"/etc/group",
					"/etc/nsswitch.conf",
					"/etc/hosts",
					"/etc/host.conf",
					"/etc/resolv.conf",
					"/etc/gai.conf",
					"/etc/services",
					"/etc/protocols",
					"/etc/networks",
					"/etc/localtime",
					"/etc/timezone",
					"/etc/os-release",
					"/etc/debian_version",
					"/etc/locale.alias",
					"/etc/shells",
					"/etc/terminfo",
					"/etc/ssl/certs",
					"/etc/ssl/openssl.cnf",
					"/etc/ca-certificates",
					"/etc/ca-certificates.conf",
					"/etc/pki/tls/certs",
					"/etc/pki/ca-trust",
					"/etc/crypto-policies",
					NULL};

/* One writable (or read-only) bind of a job's sandbox. */
struct bind {
	const char *path;
	char real[PATH_MAX]; /* resolved, to compare; "" if unresolvable */
	const char *op;      /* --bind, --ro-bind or --bind-try */
};

/* ws + suffix, kept until the argv is freed ("" when out of memory). */
static const char *ws_path(struct bwv *b, const char *ws, const char *suffix)
{
	size_t len = strlen(ws) + strlen(suffix) + 1;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%s%s", ws, suffix);
	return bw_keep(b, p);
}

/*
 * While parallel lanes run in the workspace (it holds .sbxloop/lanes),
 * sbxloop's own git works on it from the host: its commits, merges and
 * checkouts obey the repository's config, and a filter or merge driver
 * an agent wrote there would run on the host, outside the sandbox. So
 * git's directories (the workspace's .git and the lanes' shadow
 * repository .sbxloop/git) are read-only here, and .sbxloop is a mount
 * point, which cannot be renamed away to put a directory of the
 * agent's in its place (nor can .git: a mount point too).
 */
static void pin_lanes_git(struct bwv *b, const char *ws)
{
	static const char *const dirs[] = {"/.git", "/.sbxloop/git"};
	const char *lanes = ws_path(b, ws, "/.sbxloop/lanes"), *d;
	struct stat st;
	size_t i;

	if (stat(lanes, &st) < 0 || !S_ISDIR(st.st_mode))
		return;
	d = ws_path(b, ws, "/.sbxloop");
	bw_add3(b, "--bind", d, d);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		d = ws_path(b, ws, dirs[i]);
		/* .git may be a file (a linked worktree's): bound too */
		if (lstat(d, &st) == 0 &&
		    (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			bw_add3(b, "--ro-bind", d, d);
	}
}

/*
 * argv for bubblewrap around `argv`. The new root is bubblewrap's own
 * tmpfs, read-only at the end; into it go the system directories and
 * /etc files above (read-only), a minimal /dev, a /proc of the
 * sandbox's pid namespace, a private /tmp, the workspace (read-only
 * when `ws_ro`), the shared paths, the sandbox's home/ (never the
 * sandbox directory: its metadata stays out of reach) and the worker,
 * read-only, and with `proxy_sock` (may be NULL) the egress proxy's
 * socket at LPROXY_INNER_SOCKET, read-only (connecting needs no write
 * access). When the state_dir lies under a writable bind it is hidden
 * by a tmpfs before the binds inside it are made, so neither the store
 * nor any sandbox's metadata can be reached through the workspace or a
 * shared directory. Every string of `argv` stays borrowed.
 */
int dirbox_bwrap_argv(const struct dirbox *box, struct bwv *b, const char *ws,
		      int ws_ro, const char *home, char *shared,
		      const char *worker, const char *proxy_sock,
		      const char *cwd, const char *const *argv)
{
	struct bind binds[SHARED_MAX + 1];
	char real_state[PATH_MAX], *line, *save = NULL;
	size_t nb = 0, i;
	int hide = 0;

	memset(b, 0, sizeof(*b));
	bw_add(b, BWRAP_PATH);
	for (i = 0; sys_dirs[i]; i++) {
		struct stat st;
		char target[PATH_MAX];
		ssize_t n;

		if (lstat(sys_dirs[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(sys_dirs[i], target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			bw_add3(b, "--symlink", bw_keep(b, strdup(target)),
				sys_dirs[i]);
		} else if (S_ISDIR(st.st_mode)) {
			bw_add3(b, "--ro-bind", sys_dirs[i], sys_dirs[i]);
		}
	}
	bw_add3(b, "--tmpfs", "/etc", NULL);
	for (i = 0; etc_files[i]; i++)
		bw_add3(b, "--ro-bind-try", etc_files[i], etc_files[i]);
	bw_add3(b, "--symlink", "../proc/self/mounts", "/etc/mtab");
	bw_add3(b, "--remount-ro", "/etc", NULL);
	bw_add3(b, "--dev", "/dev", NULL);
	bw_add3(b, "--proc", "/proc", NULL);
	/* before the binds: a workspace or shared dir under /tmp shows */
	bw_add3(b, "--tmpfs", "/tmp", NULL);

	binds[nb].path = ws;
	binds[nb++].op = ws_ro ? "--ro-bind" : "--bind";
	for (i = 0, line = strtok_r(shared, "\n", &save);
	     line && i < SHARED_MAX; i++, line = strtok_r(NULL, "\n", &save)) {
		binds[nb].path = line;
		binds[nb++].op = "--bind-try"; /* a missing one: not shared */
	}
	if (!realpath(box->state, real_state))
		snprintf(real_state, sizeof(real_state), "%s", box->state);
	for (i = 0; i < nb; i++) {
		if (!realpath(binds[i].path, binds[i].real))
			binds[i].real[0] = '\0';
		/* a bind that contains the state_dir: hide it afterwards */
		if (!dirbox_path_within(binds[i].real, real_state) &&
		    dirbox_path_within(real_state, binds[i].real))
			hide = 1;
	}
	/* binds outside the state_dir, then its tmpfs, then those inside */
	for (i = 0; i < nb; i++)
		if (!dirbox_path_within(binds[i].real, real_state))
			bw_add3(b, binds[i].op, binds[i].path, binds[i].path);
	if (hide)
		bw_add3(b, "--tmpfs", bw_keep(b, strdup(real_state)), NULL);
	for (i = 0; i < nb; i++)
		if (dirbox_path_within(binds[i].real, real_state))
			bw_add3(b, binds[i].op, binds[i].path, binds[i].path);
	if (!ws_ro)
		pin_lanes_git(b, ws);
	bw_add3(b, "--bind", home, home);
	if (worker && *worker)
		bw_add3(b, "--ro-bind", worker, worker);
	/* -try: a proxy stopped meanwhile leaves the job without egress */
	if (proxy_sock)
		bw_add3(b, "--ro-bind-try", proxy_sock, LPROXY_INNER_SOCKET);
	bw_add3(b, "--remount-ro", "/", NULL);
	bw_add(b, "--unshare-all");
	bw_add(b, "--die-with-parent");
	bw_add(b, "--new-session");
	bw_add3(b, "--chdir", cwd, NULL);
	if (box->share_net)
		bw_add(b, "--share-net");
	bw_add(b, "--");
	for (i = 0; argv[i]; i++)
		bw_add(b, argv[i]);
	return b->oom ? SBXLOOP_ENOMEM : 0;
}

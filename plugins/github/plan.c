/*
 * What a delivery sends (UPSTREAM.md 10.6, steps 1, 5 and 6): the
 * git-diff plan of a workspace that is a git checkout (added, modified,
 * deleted and untracked files against the run's base commit, with their
 * modes and symlinks) or the snapshot plan of any other directory (every
 * file), both without the paths artifacts.exclude names in any path
 * component. Paths come from git or the directory walk, never from an
 * agent's words, and a path that leaves the source directory (.., an
 * absolute path) is refused. Reads files only; no API call is made here,
 * so `sbxloop deliver --dry-run` prints exactly this.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "github.h"

#define GIT_OUT_MAX (64u << 20)

static int add_file(struct gh_plan *p, const char *path)
{
	struct gh_file *f;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct gh_file *grown =
			realloc(p->files, cap * sizeof(*grown));

		if (!grown)
			return -1;
		p->files = grown;
		p->cap = cap;
	}
	f = &p->files[p->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return -1;
	p->n++;
	return 0;
}

void gh_plan_release(struct gh_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->files[i].path);
		free(p->files[i].data);
	}
	free(p->files);
	free(p->note);
	memset(p, 0, sizeof(*p));
}

/* Does any component of `path` match an artifacts.exclude pattern? */
static int excluded(const struct sbxloop_host *h, const char *path)
{
	size_t n = h->config_list_len(h, "artifacts.exclude"), i;
	char comp[NAME_MAX + 1];
	const char *s = path;

	while (*s) {
		size_t len = strcspn(s, "/");

		if (len && len <= NAME_MAX) {
			memcpy(comp, s, len);
			comp[len] = '\0';
			for (i = 0; i < n; i++) {
				const char *pat = h->config_list_item(
					h, "artifacts.exclude", i);

				if (pat && fnmatch(pat, comp, 0) == 0)
					return 1;
			}
		}
		s += len;
		while (*s == '/')
			s++;
	}
	return 0;
}

/* A relative path that stays inside the source directory. */
static int safe_path(const char *path)
{
	const char *s = path;

	if (!*path || *path == '/')
		return 0;
	while (*s) {
		size_t len = strcspn(s, "/");

		if ((len == 2 && !strncmp(s, "..", 2)) ||
		    (len == 1 && *s == '.') || len == 0)
			return 0;
		s += len;
		if (*s == '/')
			s++;
	}
	return 1;
}

static int utf8_text(const unsigned char *s, size_t n)
{
	size_t i = 0, k, j;

	while (i < n) {
		unsigned char c = s[i];

		if (c == 0)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0 && c >= 0xc2)
			k = 1;
		else if ((c & 0xf0) == 0xe0)
			k = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
			k = 3;
		else
			return 0;
		if (k > n - i - 1)
			return 0;
		for (j = 1; j <= k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
		i += k + 1;
	}
	return 1;
}

/*
 * The directory holding `path` under `root`, opened without following a
 * symlink at any step: an agent that turned a directory into a link to
 * the host's /etc must not get /etc's files delivered. -1 with errno
 * ENOENT, ENOTDIR or ELOOP when the path is gone as such.
 */
static int open_parent(const char *root, const char *path, const char **base)
{
	char comp[NAME_MAX + 1];
	const char *s = path, *slash;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), next;

	while (fd >= 0 && (slash = strchr(s, '/'))) {
		size_t len = (size_t)(slash - s);

		if (len > NAME_MAX) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(comp, s, len);
		comp[len] = '\0';
		next = openat(fd, comp,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		s = slash + 1;
	}
	*base = s;
	return fd;
}

static int gone(int err)
{
	return err == ENOENT || err == ENOTDIR || err == ELOOP;
}

/* Fill f's mode and bytes from disk; a path gone is a deletion. */
static int load(struct gh_plan *p, struct gh_file *f, const char *root,
		char *why, size_t why_len)
{
	const char *base;
	struct stat st;
	int dir = open_parent(root, f->path, &base), fd, rc = -1;

	if (dir < 0 || fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!gone(errno)) {
			snprintf(why, why_len, "cannot read %s: %s", f->path,
				 strerror(errno));
			goto out;
		}
		f->deleted = 1;
		f->status = 'D';
		snprintf(f->mode, sizeof(f->mode), "100644");
		rc = 0;
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir, base, target, sizeof(target) - 1);

		if (n < 0) {
			snprintf(why, why_len, "cannot read link %s: %s",
				 f->path, strerror(errno));
			goto out;
		}
		snprintf(f->mode, sizeof(f->mode), "120000");
		f->data = malloc((size_t)n + 1);
		if (!f->data)
			goto out;
		memcpy(f->data, target, (size_t)n);
		f->data[n] = '\0';
		f->len = (size_t)n;
	} else if (S_ISREG(st.st_mode)) {
		ssize_t got;

		if (st.st_size > GH_FILE_MAX) {
			snprintf(why, why_len,
				 "%s is %lld MiB, over GitHub's 100 MiB limit "
				 "for a file: add it to artifacts.exclude",
				 f->path, (long long)(st.st_size >> 20));
			goto out;
		}
		fd = openat(dir, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			snprintf(why, why_len, "cannot read %s: %s", f->path,
				 strerror(errno));
			goto out;
		}
		snprintf(f->mode, sizeof(f->mode), "%s",
			 st.st_mode & 0111 ? "100755" : "100644");
		f->data = malloc((size_t)st.st_size + 1);
		f->len = 0;
		while (f->data && f->len < (size_t)st.st_size &&
		       (got = read(fd, f->data + f->len,
				   (size_t)st.st_size - f->len)) > 0)
			f->len += (size_t)got;
		close(fd);
		if (!f->data)
			goto out;
		f->data[f->len] = '\0';
	} else {
		rc = 1; /* not a file: a submodule, a fifo */
		goto out;
	}
	f->text = f->len <= GH_INLINE_MAX && utf8_text(f->data, f->len);
	p->bytes += f->len;
	rc = 0;
out:
	if (dir >= 0)
		close(dir);
	return rc;
}

static int run_git(const struct sbxloop_host *h, const char *dir,
		   const char *const *args, struct sbxloop_proc_result *res)
{
	const char *argv[16];
	struct sbxloop_proc_spec spec;
	struct sbxloop_error err = {0, ""};
	size_t n = 0;

	argv[n++] = "git";
	argv[n++] = "-C";
	argv[n++] = dir;
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.timeout_s = 120;
	spec.tail_max = GIT_OUT_MAX;
	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);
	if (h->proc_run(h, &spec, res, &err) < 0)
		return -1;
	return res->exit_code == 0 ? 0 : -1;
}

/* The first line of git's output, trimmed, into out; -1 if none. */
static int git_line(const struct sbxloop_host *h, const char *dir,
		    const char *const *args, char *out, size_t cap)
{
	struct sbxloop_proc_result res;
	int rc = run_git(h, dir, args, &res);

	if (rc == 0 && res.out) {
		size_t len = strcspn(res.out, "\r\n");

		snprintf(out, cap, "%.*s", (int)len, res.out);
		rc = len ? 0 : -1;
	} else {
		rc = -1;
	}
	h->proc_result_clear(&res);
	return rc;
}

/* Is `dir` the top of a git checkout? */
static int git_root(const struct sbxloop_host *h, const char *dir)
{
	static const char *const top[] = {"rev-parse", "--show-toplevel",
					  NULL};
	char got[PATH_MAX], want[PATH_MAX], real[PATH_MAX];

	if (git_line(h, dir, top, got, sizeof(got)) < 0 ||
	    !realpath(dir, want) || !realpath(got, real))
		return 0;
	return strcmp(want, real) == 0;
}

/* Add each NUL-separated path of `out` (after a status for diff). */
static int add_z(struct gh_plan *p, const struct sbxloop_host *h,
		 const char *out, size_t len, int with_status)
{
	size_t i = 0;

	while (i < len) {
		char status = 'A';
		const char *path;

		if (with_status) {
			status = out[i];
			i += strlen(out + i) + 1;
			if (i >= len)
				break;
		}
		path = out + i;
		i += strlen(path) + 1;
		if (!safe_path(path))
			continue;
		if (excluded(h, path)) {
			p->n_excluded++;
			continue;
		}
		if (add_file(p, path) < 0)
			return -1;
		p->files[p->n - 1].status = status == 'D'   ? 'D'
					    : status == 'A' ? 'A'
							    : 'M';
	}
	return 0;
}

static int diff_plan(struct gh *g, struct gh_plan *p, const char *dir,
		     const char *base, char *why, size_t why_len)
{
	const struct sbxloop_host *h = g->host;
	const char *diff[] = {
		"diff", "--name-status", "--no-renames", "-z", base, "--",
		NULL};
	static const char *const others[] = {"ls-files", "--others",
					     "--exclude-standard", "-z", NULL};
	struct sbxloop_proc_result res;
	int rc;

	if (run_git(h, dir, diff, &res) < 0) {
		snprintf(why, why_len, "git diff against %.12s failed: %s",
			 base, res.err ? res.err : "");
		h->proc_result_clear(&res);
		return -1;
	}
	rc = add_z(p, h, res.out ? res.out : "", res.out_len, 1);
	h->proc_result_clear(&res);
	if (rc < 0 || run_git(h, dir, others, &res) < 0) {
		snprintf(why, why_len, "git ls-files failed in %s", dir);
		h->proc_result_clear(&res);
		return -1;
	}
	rc = add_z(p, h, res.out ? res.out : "", res.out_len, 0);
	h->proc_result_clear(&res);
	return rc;
}

static int walk(struct gh_plan *p, const struct sbxloop_host *h,
		const char *root, const char *rel, int depth)
{
	char full[PATH_MAX], sub[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (depth > 64)
		return 0;
	snprintf(full, sizeof(full), "%s%s%s", root, *rel ? "/" : "", rel);
	d = opendir(full);
	if (!d)
		return -1;
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		char path[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "",
			 de->d_name);
		if (excluded(h, sub)) {
			p->n_excluded++;
			continue;
		}
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, sub) >=
			    sizeof(path) ||
		    lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			rc = walk(p, h, root, sub, depth + 1);
		else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
			rc = add_file(p, sub);
			if (rc == 0)
				p->files[p->n - 1].status = 'A';
		}
	}
	closedir(d);
	return rc;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct gh_file *)a)->path,
		      ((const struct gh_file *)b)->path);
}

int gh_plan_build(struct gh *g, const char *dir, const char *remote_base,
		  struct gh_plan *p, char *why, size_t why_len)
{
	const struct sbxloop_host *h = g->host;
	char base[64] = "";
	size_t i, kept = 0;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	if (git_root(h, dir)) {
		const char *mb_remote[] = {"merge-base", "HEAD", remote_base,
					   NULL};
		static const char *const mb_pin[] = {
			"merge-base", "HEAD", "refs/sbxloop/base", NULL};
		static const char *const mb_origin[] = {"merge-base", "HEAD",
							"origin/HEAD", NULL};

		if (!(remote_base && *remote_base &&
		      git_line(h, dir, mb_remote, base, sizeof(base)) == 0) &&
		    git_line(h, dir, mb_pin, base, sizeof(base)) < 0 &&
		    git_line(h, dir, mb_origin, base, sizeof(base)) < 0)
			base[0] = '\0';
	}
	if (*base) {
		p->git_diff = 1;
		snprintf(p->base, sizeof(p->base), "%s", base);
		rc = diff_plan(g, p, dir, base, why, why_len);
		if (rc == 0) {
			char note[160];

			snprintf(note, sizeof(note),
				 "delivered as the workspace's git diff "
				 "against `%.12s`",
				 base);
			p->note = strdup(note);
		}
	} else {
		if (git_root(h, dir))
			p->note = strdup("delivered as a workspace snapshot: "
					 "no base commit to diff against");
		rc = walk(p, h, dir, "", 0);
		if (rc < 0)
			snprintf(why, why_len, "cannot read %s: %s", dir,
				 strerror(errno));
	}
	if (rc < 0) {
		if (!*why)
			snprintf(why, why_len, "out of memory");
		gh_plan_release(p);
		return -1;
	}
	qsort(p->files, p->n, sizeof(*p->files), by_path);
	for (i = 0; i < p->n; i++) {
		rc = load(p, &p->files[i], dir, why, why_len);
		if (rc < 0 && !*why)
			snprintf(why, why_len, "out of memory");
		if (rc < 0) {
			gh_plan_release(p);
			return -1;
		}
		if (rc > 0) {
			free(p->files[i].path);
			continue;
		}
		if (p->files[i].deleted)
			p->n_deleted++;
		p->files[kept++] = p->files[i];
	}
	p->n = kept;
	if (p->n == 0) {
		snprintf(why, why_len,
			 "nothing to deliver: no file in %s changed%s", dir,
			 p->n_excluded ? " outside artifacts.exclude" : "");
		gh_plan_release(p);
		return -1;
	}
	return 0;
}

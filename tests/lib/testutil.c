/*
 * Test helpers: temp dirs, files, and a blocking subprocess runner with
 * captured stdout/stderr. Used by every Check suite under tests/.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

char *tu_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *path = NULL;

	if (asprintf(&path, "%s/sbxloop-test-XXXXXX",
		     base && *base ? base : "/tmp") < 0)
		abort();
	if (!mkdtemp(path))
		ck_abort_msg("mkdtemp failed: %s", strerror(errno));
	return path;
}

void tu_rmtree(const char *path)
{
	const char *argv[] = {"rm", "-rf", path, NULL};
	struct tu_run r;

	if (!path || !*path || strcmp(path, "/") == 0)
		return;
	tu_exec(&r, NULL, NULL, argv);
	tu_run_free(&r);
}

void tu_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

char *tu_read(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap + 1);
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void tu_exec(struct tu_run *r, const char *cwd, const char *const *env,
	     const char *const *argv)
{
	int out_p[2], err_p[2], status;
	size_t out_len = 0, err_len = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	if (pipe(out_p) < 0 || pipe(err_p) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(out_p[1], 1);
		dup2(err_p[1], 2);
		close(out_p[0]);
		close(err_p[0]);
		if (cwd && chdir(cwd) < 0)
			_exit(126);
		for (; env && *env; env++)
			putenv((char *)*env);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(out_p[1]);
	close(err_p[1]);
	for (;;) {
		struct pollfd pfd[2] = {{out_p[0], POLLIN, 0},
					{err_p[0], POLLIN, 0}};
		char chunk[8192];
		int open_fds = 0, i;

		for (i = 0; i < 2; i++)
			if (pfd[i].fd >= 0)
				open_fds++;
		if (!open_fds)
			break;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < 2; i++) {
			ssize_t n;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			n = read(pfd[i].fd, chunk, sizeof(chunk));
			if (n <= 0) {
				close(pfd[i].fd);
				if (i == 0)
					out_p[0] = -1;
				else
					err_p[0] = -1;
				continue;
			}
			if (i == 0)
				append(&r->out, &out_len, chunk, (size_t)n);
			else
				append(&r->err, &err_len, chunk, (size_t)n);
		}
		if (out_p[0] < 0 && err_p[0] < 0)
			break;
		/* poll() ignores negative fds: rebuild next round */
		if (out_p[0] < 0 || err_p[0] < 0) {
			struct pollfd one = {out_p[0] >= 0 ? out_p[0]
							   : err_p[0],
					     POLLIN, 0};
			int which = out_p[0] >= 0 ? 0 : 1;

			while (poll(&one, 1, -1) > 0) {
				ssize_t n = read(one.fd, chunk, sizeof(chunk));

				if (n <= 0)
					break;
				if (which == 0)
					append(&r->out, &out_len, chunk,
					       (size_t)n);
				else
					append(&r->err, &err_len, chunk,
					       (size_t)n);
			}
			close(one.fd);
			break;
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	r->status = WIFEXITED(status) ? WEXITSTATUS(status)
				      : 128 + WTERMSIG(status);
}

void tu_run_free(struct tu_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

const char *tu_env(const char *name)
{
	const char *v = getenv(name);

	ck_assert_msg(v && *v, "%s is not set: run the suite with make check",
		      name);
	return v;
}

int tu_hold_run_lock(const char *state_dir, const char *run)
{
	char path[4096], line[64];
	int fd, n;

	snprintf(path, sizeof(path), "%s/runs", state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/runs/%s", state_dir, run);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/runs/%s/driver.lock", state_dir, run);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_msg(fd >= 0, "cannot open %s: %s", path, strerror(errno));
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	n = snprintf(line, sizeof(line), "%ld run %ld\n", (long)getpid(),
		     (long)time(NULL));
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(write(fd, line, (size_t)n), n);
	return fd;
}

/* The formatted text (caller frees). */
static char *vformat(const char *fmt, va_list ap)
{
	char *text = NULL;

	ck_assert_int_ge(vasprintf(&text, fmt, ap), 0);
	return text;
}

void tu_sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int st;

	va_start(ap, fmt);
	cmd = vformat(fmt, ap);
	va_end(ap);
	st = system(cmd);
	ck_assert_msg(st == 0, "command failed (%d): %s", st, cmd);
	free(cmd);
}

char *tu_capture(const char *fmt, ...)
{
	va_list ap;
	char *cmd, *out = malloc(1);
	size_t len = 0, n;
	char buf[4096];
	FILE *p;

	va_start(ap, fmt);
	cmd = vformat(fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(out);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
		out = realloc(out, len + n + 1);
		ck_assert_ptr_nonnull(out);
		memcpy(out + len, buf, n);
		len += n;
	}
	pclose(p);
	free(cmd);
	while (len && out[len - 1] == '\n')
		len--;
	out[len] = '\0';
	return out;
}

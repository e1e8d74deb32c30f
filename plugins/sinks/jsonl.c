/*
 * The `jsonl` sink: appends every event's envelope line to the file
 * named by `jsonl.path`, for log shippers. Each line goes out in one
 * write() on an O_APPEND descriptor, so several writers never interleave
 * inside a line. Called only through sinks_jsonl_ops.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sinks.h"

const struct sbxloop_config_key sinks_jsonl_keys[] = {
	{"path", SBXLOOP_VALUE_STRING, NULL, NULL,
	 "file the event lines are appended to (required with jsonl)"},
	{NULL, 0, NULL, NULL, NULL},
};

struct jsonl {
	const struct sbxloop_host *host;
	char *path;
	int fd;
	char *line; /* the envelope plus its newline */
	size_t cap;
};

static void jsonl_destroy(void *ctx)
{
	struct jsonl *j = ctx;

	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j->path);
	free(j->line);
	free(j);
}

static int jsonl_create(const struct sbxloop_host *host, void **ctx,
			struct sbxloop_error *err)
{
	struct jsonl *j;
	const char *path = host->config_string(host, "jsonl.path");
	int rc = 0;

	*ctx = NULL;
	if (!path || !*path)
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "jsonl.path is not set; the jsonl sink "
				       "needs a file to append to");
	j = calloc(1, sizeof(*j));
	if (!j)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "out of memory");
	j->host = host;
	j->fd = -1;
	j->path = strdup(path);
	if (!j->path) {
		rc = host->error_set(host, err, SBXLOOP_ENOMEM,
				     "out of memory");
		goto out;
	}
	j->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (j->fd < 0)
		rc = host->error_set(host, err, SBXLOOP_ERR,
				     "cannot open '%s': %s", path,
				     strerror(errno));
out:
	if (rc) {
		jsonl_destroy(j);
		return rc;
	}
	*ctx = j;
	return 0;
}

static int jsonl_event(void *ctx, const struct sbxloop_event *ev,
		       struct sbxloop_error *err)
{
	struct jsonl *j = ctx;
	size_t n = strlen(ev->json), off = 0;

	if (n + 2 > j->cap) {
		char *grown = realloc(j->line, n + 64);

		if (!grown)
			return j->host->error_set(j->host, err, SBXLOOP_ENOMEM,
						  "out of memory");
		j->line = grown;
		j->cap = n + 64;
	}
	memcpy(j->line, ev->json, n);
	j->line[n++] = '\n';
	while (off < n) {
		ssize_t w = write(j->fd, j->line + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return j->host->error_set(
				j->host, err, SBXLOOP_ERR,
				"cannot write to '%s': %s", j->path,
				w < 0 ? strerror(errno) : "short write");
		off += (size_t)w;
	}
	return 0;
}

static int jsonl_flush(void *ctx, struct sbxloop_error *err)
{
	struct jsonl *j = ctx;

	if (fdatasync(j->fd) < 0 && errno != EINVAL && errno != EROFS)
		return j->host->error_set(j->host, err, SBXLOOP_ERR,
					  "cannot sync '%s': %s", j->path,
					  strerror(errno));
	return 0;
}

const struct sbxloop_sink_ops sinks_jsonl_ops = {
	.struct_size = sizeof(struct sbxloop_sink_ops),
	.create = jsonl_create,
	.destroy = jsonl_destroy,
	.event = jsonl_event,
	.flush = jsonl_flush,
};

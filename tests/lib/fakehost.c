/*
 * The fake host services table (see fakehost.h). Used by unit tests and
 * test programs that drive one plugin without the core. It is simple on
 * purpose: linear tables, no locking, every string copied.
 */
#include "config.h"

#include "fakehost.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKEHOST_MASK "***"

struct fakehost_config {
	char *path;
	char *value;  /* scalar, or NULL for a list */
	char **items; /* list items, or NULL */
	size_t n_items;
};

struct fakehost {
	struct sbxloop_host host;
	char *state_dir;
	char *run_id;

	char *log;
	size_t log_len;

	struct fakehost_config *config;
	size_t n_config;

	struct fakehost_event *events;
	size_t n_events;

	char **secrets;
	size_t n_secrets;
};

static struct fakehost *fh_of(const struct sbxloop_host *host)
{
	return host->core;
}

static char *fh_strdup(const char *s)
{
	char *copy;
	size_t len;

	if (s == NULL)
		return NULL;
	len = strlen(s) + 1;
	copy = malloc(len);
	if (copy == NULL)
		abort();
	memcpy(copy, s, len);
	return copy;
}

static void *fh_grow(void *ptr, size_t n, size_t size)
{
	void *p = realloc(ptr, n * size);

	if (p == NULL)
		abort();
	return p;
}

/* A copy of `text` with every registered secret replaced by the mask. */
static char *fh_redact_text(const struct fakehost *fh, const char *text)
{
	char *out = fh_strdup(text ? text : "");
	size_t i;

	for (i = 0; i < fh->n_secrets; i++) {
		const char *secret = fh->secrets[i];
		size_t slen = strlen(secret), mlen = strlen(FAKEHOST_MASK);
		char *hit;

		while ((hit = strstr(out, secret)) != NULL) {
			size_t head = (size_t)(hit - out);
			size_t tail = strlen(hit + slen);
			char *next = malloc(head + mlen + tail + 1);

			if (next == NULL)
				abort();
			memcpy(next, out, head);
			memcpy(next + head, FAKEHOST_MASK, mlen);
			memcpy(next + head + mlen, hit + slen, tail + 1);
			free(out);
			out = next;
		}
	}
	return out;
}

static void fh_log_append(struct fakehost *fh, const char *line)
{
	size_t len = strlen(line);

	fh->log = fh_grow(fh->log, fh->log_len + len + 2, 1);
	memcpy(fh->log + fh->log_len, line, len);
	fh->log_len += len;
	fh->log[fh->log_len++] = '\n';
	fh->log[fh->log_len] = '\0';
}

static void fh_log(const struct sbxloop_host *host, enum sbxloop_log_level lvl,
		   const char *fmt, ...) SBXLOOP_PRINTF(3, 4);

static void fh_log(const struct sbxloop_host *host, enum sbxloop_log_level lvl,
		   const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	struct fakehost *fh = fh_of(host);
	char msg[2048], line[2100];
	char *clean;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clean = fh_redact_text(fh, msg);
	snprintf(line, sizeof(line), "%s: %s",
		 (unsigned)lvl < 4 ? names[lvl] : "?", clean);
	free(clean);
	fh_log_append(fh, line);
}

static int fh_error_set(const struct sbxloop_host *host,
			struct sbxloop_error *err, int code, const char *fmt,
			...) SBXLOOP_PRINTF(4, 5);

static int fh_error_set(const struct sbxloop_host *host,
			struct sbxloop_error *err, int code, const char *fmt,
			...)
{
	char msg[SBXLOOP_ERROR_MAX];
	char *clean;
	va_list ap;

	if (err == NULL)
		return code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clean = fh_redact_text(fh_of(host), msg);
	err->code = code;
	snprintf(err->message, sizeof(err->message), "%s", clean);
	free(clean);
	return code;
}

static const struct fakehost_config *fh_config_find(const struct fakehost *fh,
						    const char *path)
{
	size_t i;

	for (i = 0; i < fh->n_config; i++)
		if (strcmp(fh->config[i].path, path) == 0)
			return &fh->config[i];
	return NULL;
}

static const char *fh_config_string(const struct sbxloop_host *host,
				    const char *path)
{
	const struct fakehost_config *c = fh_config_find(fh_of(host), path);

	return c ? c->value : NULL;
}

static long long fh_config_int(const struct sbxloop_host *host,
			       const char *path, long long dflt)
{
	const char *v = fh_config_string(host, path);

	return v ? strtoll(v, NULL, 10) : dflt;
}

static double fh_config_double(const struct sbxloop_host *host,
			       const char *path, double dflt)
{
	const char *v = fh_config_string(host, path);

	return v ? strtod(v, NULL) : dflt;
}

static int fh_config_bool(const struct sbxloop_host *host, const char *path,
			  int dflt)
{
	const char *v = fh_config_string(host, path);

	if (v == NULL)
		return dflt;
	return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 ||
	       strcmp(v, "yes") == 0;
}

static size_t fh_config_list_len(const struct sbxloop_host *host,
				 const char *path)
{
	const struct fakehost_config *c = fh_config_find(fh_of(host), path);

	return c ? c->n_items : 0;
}

static const char *fh_config_list_item(const struct sbxloop_host *host,
				       const char *path, size_t i)
{
	const struct fakehost_config *c = fh_config_find(fh_of(host), path);

	return c && i < c->n_items ? c->items[i] : NULL;
}

static int fh_emit(const struct sbxloop_host *host, const char *type,
		   const char *job_id, const char *data_json)
{
	struct fakehost *fh = fh_of(host);
	struct fakehost_event *ev;

	if (type == NULL)
		return SBXLOOP_EINVAL;
	fh->events = fh_grow(fh->events, fh->n_events + 1, sizeof(*ev));
	ev = &fh->events[fh->n_events++];
	ev->type = fh_strdup(type);
	ev->job_id = fh_strdup(job_id);
	ev->data_json = fh_redact_text(fh, data_json ? data_json : "{}");
	return 0;
}

static const char *fh_run_id(const struct sbxloop_host *host)
{
	return fh_of(host)->run_id;
}

static const char *fh_state_dir(const struct sbxloop_host *host)
{
	return fh_of(host)->state_dir;
}

static int fh_proc_run(const struct sbxloop_host *host,
		       const struct sbxloop_proc_spec *spec,
		       struct sbxloop_proc_result *res,
		       struct sbxloop_error *err)
{
	return fh_error_set(host, err, SBXLOOP_EUNSUPPORTED,
			    "the fake host cannot run subprocesses");
}

static void fh_proc_result_clear(struct sbxloop_proc_result *res)
{
	if (res == NULL)
		return;
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}

static void fh_secret_register(const struct sbxloop_host *host,
			       const char *value)
{
	struct fakehost *fh = fh_of(host);

	if (value == NULL || strlen(value) < 4)
		return;
	fh->secrets = fh_grow(fh->secrets, fh->n_secrets + 1, sizeof(char *));
	fh->secrets[fh->n_secrets++] = fh_strdup(value);
}

static char *fh_redact(const struct sbxloop_host *host, const char *text)
{
	return fh_redact_text(fh_of(host), text);
}

static void fh_free(void *ptr)
{
	free(ptr);
}

static int fh_sandbox_write_file(const struct sbxloop_host *host,
				 const char *sandbox, const char *path,
				 const void *data, size_t len, unsigned mode,
				 struct sbxloop_error *err)
{
	return fh_error_set(host, err, SBXLOOP_EUNSUPPORTED,
			    "the fake host has no sandbox");
}

static int fh_sandbox_exec(const struct sbxloop_host *host,
			   const char *sandbox, const char *const *argv,
			   double timeout_s, struct sbxloop_proc_result *res,
			   struct sbxloop_error *err)
{
	return fh_error_set(host, err, SBXLOOP_EUNSUPPORTED,
			    "the fake host has no sandbox");
}

struct fakehost *fakehost_new(const char *state_dir)
{
	struct fakehost *fh = calloc(1, sizeof(*fh));

	if (fh == NULL)
		abort();
	fh->state_dir = fh_strdup(state_dir);
	fh->host.struct_size = sizeof(fh->host);
	fh->host.abi_major = SBXLOOP_ABI_MAJOR;
	fh->host.abi_minor = SBXLOOP_ABI_MINOR;
	fh->host.version = "fakehost";
	fh->host.core = fh;
	fh->host.log = fh_log;
	fh->host.error_set = fh_error_set;
	fh->host.config_string = fh_config_string;
	fh->host.config_int = fh_config_int;
	fh->host.config_double = fh_config_double;
	fh->host.config_bool = fh_config_bool;
	fh->host.config_list_len = fh_config_list_len;
	fh->host.config_list_item = fh_config_list_item;
	fh->host.emit = fh_emit;
	fh->host.run_id = fh_run_id;
	fh->host.state_dir = fh_state_dir;
	fh->host.proc_run = fh_proc_run;
	fh->host.proc_result_clear = fh_proc_result_clear;
	fh->host.secret_register = fh_secret_register;
	fh->host.redact = fh_redact;
	fh->host.free = fh_free;
	fh->host.sandbox_write_file = fh_sandbox_write_file;
	fh->host.sandbox_exec = fh_sandbox_exec;
	return fh;
}

void fakehost_free(struct fakehost *fh)
{
	size_t i, j;

	if (fh == NULL)
		return;
	for (i = 0; i < fh->n_config; i++) {
		free(fh->config[i].path);
		free(fh->config[i].value);
		for (j = 0; j < fh->config[i].n_items; j++)
			free(fh->config[i].items[j]);
		free(fh->config[i].items);
	}
	free(fh->config);
	for (i = 0; i < fh->n_events; i++) {
		free(fh->events[i].type);
		free(fh->events[i].job_id);
		free(fh->events[i].data_json);
	}
	free(fh->events);
	for (i = 0; i < fh->n_secrets; i++)
		free(fh->secrets[i]);
	free(fh->secrets);
	free(fh->log);
	free(fh->run_id);
	free(fh->state_dir);
	free(fh);
}

const struct sbxloop_host *fakehost_host(struct fakehost *fh)
{
	return &fh->host;
}

/* The entry for `path`, emptied, or a new one. */
static struct fakehost_config *fh_config_slot(struct fakehost *fh,
					      const char *path)
{
	struct fakehost_config *c;
	size_t i, j;

	for (i = 0; i < fh->n_config; i++) {
		c = &fh->config[i];
		if (strcmp(c->path, path) != 0)
			continue;
		free(c->value);
		for (j = 0; j < c->n_items; j++)
			free(c->items[j]);
		free(c->items);
		c->value = NULL;
		c->items = NULL;
		c->n_items = 0;
		return c;
	}
	fh->config = fh_grow(fh->config, fh->n_config + 1, sizeof(*c));
	c = &fh->config[fh->n_config++];
	memset(c, 0, sizeof(*c));
	c->path = fh_strdup(path);
	return c;
}

void fakehost_config_set(struct fakehost *fh, const char *path,
			 const char *value)
{
	fh_config_slot(fh, path)->value = fh_strdup(value);
}

void fakehost_config_set_list(struct fakehost *fh, const char *path,
			      const char *const *items, size_t n)
{
	struct fakehost_config *c = fh_config_slot(fh, path);
	size_t i;

	c->items = fh_grow(NULL, n ? n : 1, sizeof(char *));
	for (i = 0; i < n; i++)
		c->items[i] = fh_strdup(items[i]);
	c->n_items = n;
}

void fakehost_set_run_id(struct fakehost *fh, const char *run_id)
{
	free(fh->run_id);
	fh->run_id = fh_strdup(run_id);
}

const char *fakehost_log(const struct fakehost *fh)
{
	return fh->log ? fh->log : "";
}

void fakehost_log_clear(struct fakehost *fh)
{
	free(fh->log);
	fh->log = NULL;
	fh->log_len = 0;
}

size_t fakehost_n_events(const struct fakehost *fh)
{
	return fh->n_events;
}

const struct fakehost_event *fakehost_event(const struct fakehost *fh,
					    size_t i)
{
	return i < fh->n_events ? &fh->events[i] : NULL;
}

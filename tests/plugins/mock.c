/*
 * The test-only `mock` module: a sandbox provider that behaves like
 * `local` without isolation (it shares plugins/local/dirbox.c) and
 * injects the faults the loop must survive, each switched on by a key of
 * the `mock:` mapping. Exec counts live in a file of the sandbox so they
 * hold across processes; the allowlist a sandbox was created with is kept
 * in its `allow` file. With `unmounted` the sandbox works in a directory
 * of its own, like an sbx sandbox whose mount probe missed, so the run
 * harvests its artifacts. With `claim` it lies: it claims capabilities it
 * does not enforce, which the security probes must catch (doctor --deep,
 * run.attest). Built by `make check`, never installed.
 */
#include "config.h"

#include "dirbox.h"

#include <sbxloop/sandbox.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOCK_RESULT_MARK "sbxloop_result"

static const struct sbxloop_config_key mock_keys[] = {
	{"fail_create", SBXLOOP_VALUE_BOOL, "false", NULL,
	 "sandbox_create fails"},
	{"fail_exec_after", SBXLOOP_VALUE_INT, "-1", NULL,
	 "every exec after the first N fails as an infrastructure error "
	 "(-1: never)"},
	{"timeout_exec", SBXLOOP_VALUE_INT, "0", NULL,
	 "the Nth exec of a sandbox times out without running (0: never)"},
	{"lose_result", SBXLOOP_VALUE_BOOL, "false", NULL,
	 "after each worker exec, delete results/*.json and drop result "
	 "lines from stdout"},
	{"unmounted", SBXLOOP_VALUE_BOOL, "false", NULL,
	 "the sandbox works in a directory of its own (starting empty), "
	 "not in the run workspace"},
	{"claim", SBXLOOP_VALUE_STRING, "", NULL,
	 "capabilities claimed without being enforced, comma-separated "
	 "(filesystem_confined, workspace_read_only, ...): a lying provider"},
	{NULL, 0, NULL, NULL, NULL}};

/* Capability names, in bit order (sandbox.h). */
static const char *const mock_cap_names[] = {
	"egress_enforced",     "network_disabled", "secret_never_in_sandbox",
	"filesystem_confined", "resource_bounded", "workspace_mounted",
	"dies_with_parent",    "egress_revocable", "workspace_read_only",
	"git_read_only"};

struct mock {
	struct dirbox box;
	int fail_create;
	long long fail_exec_after;
	long long timeout_exec;
	int lose_result;
	int unmounted;
};

/* Wraps the caller's line callbacks to drop result lines. */
struct mock_filter {
	const struct sbxloop_exec_spec *orig;
};

/* OR the capabilities `text` names into *caps. */
static int parse_claim(const struct sbxloop_host *host, const char *text,
		       uint32_t *caps, struct sbxloop_error *err)
{
	while (text && *text) {
		size_t n = strcspn(text, ", "), i;

		for (i = 0;
		     n && i < sizeof(mock_cap_names) / sizeof(*mock_cap_names);
		     i++)
			if (strlen(mock_cap_names[i]) == n &&
			    !strncmp(mock_cap_names[i], text, n))
				break;
		if (n && i == sizeof(mock_cap_names) / sizeof(*mock_cap_names))
			return host->error_set(host, err, SBXLOOP_EINVAL,
					       "mock: unknown capability "
					       "'%.*s' in mock.claim",
					       (int)n, text);
		if (n)
			*caps |= 1u << i;
		text += n;
		text += strspn(text, ", ");
	}
	return 0;
}

static int mock_create(const struct sbxloop_host *host, void **ctx,
		       struct sbxloop_error *err)
{
	struct mock *m = calloc(1, sizeof(*m));
	int rc;

	*ctx = NULL;
	if (!m)
		return host->error_set(host, err, SBXLOOP_ENOMEM,
				       "mock: out of memory");
	rc = dirbox_init(&m->box, host, "mock", 0, 0, err);
	if (rc) {
		free(m);
		return rc;
	}
	m->fail_create = host->config_bool(host, "mock.fail_create", 0);
	m->fail_exec_after =
		host->config_int(host, "mock.fail_exec_after", -1);
	m->timeout_exec = host->config_int(host, "mock.timeout_exec", 0);
	m->lose_result = host->config_bool(host, "mock.lose_result", 0);
	m->unmounted = host->config_bool(host, "mock.unmounted", 0);
	rc = parse_claim(host, host->config_string(host, "mock.claim"),
			 &m->box.caps, err);
	if (rc) {
		free(m);
		return rc;
	}
	if (m->unmounted)
		m->box.caps &= ~(uint32_t)SBXLOOP_CAP_WORKSPACE_MOUNTED;
	*ctx = m;
	return 0;
}

static void mock_destroy(void *ctx)
{
	free(ctx);
}

static uint32_t mock_capabilities(void *ctx)
{
	return ((struct mock *)ctx)->box.caps;
}

/* The seeded allowlist, one domain a line, in the sandbox's `allow`. */
static int record_allowlist(struct mock *m,
			    const struct sbxloop_sandbox_spec *spec,
			    struct sbxloop_error *err)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return m->box.host->error_set(m->box.host, err, SBXLOOP_ENOMEM,
					      "mock: out of memory");
	for (i = 0; spec->allow_domains && spec->allow_domains[i]; i++)
		fprintf(f, "%s\n", spec->allow_domains[i]);
	fclose(f);
	rc = dirbox_write_meta(&m->box, spec->name, "allow", text, err);
	free(text);
	return rc;
}

static int mock_sandbox_create(void *ctx,
			       const struct sbxloop_sandbox_spec *spec,
			       struct sbxloop_sandbox_info *info,
			       struct sbxloop_error *err)
{
	struct mock *m = ctx;
	const struct sbxloop_host *host = m->box.host;
	char dir[SBXLOOP_PATH_MAX], work[SBXLOOP_PATH_MAX + 8];
	int n, rc;

	if (m->fail_create)
		return host->error_set(
			host, err, SBXLOOP_EINFRA,
			"mock: injected failure creating sandbox '%s'",
			spec && spec->name ? spec->name : "");
	rc = dirbox_create(&m->box, spec, info, err);
	if (!rc)
		rc = record_allowlist(m, spec, err);
	if (rc || !m->unmounted)
		return rc;
	/* a workdir inside the sandbox: the host workspace never shows */
	rc = dirbox_dir(&m->box, spec->name, dir, sizeof(dir), err);
	if (rc)
		return rc;
	n = snprintf(work, sizeof(work), "%s/work", dir);
	if (n < 0 || (size_t)n >= sizeof(info->workdir))
		return host->error_set(host, err, SBXLOOP_EINVAL,
				       "mock: sandbox path too long for '%s'",
				       spec->name);
	if (mkdir(work, 0700) < 0 && errno != EEXIST)
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "mock: cannot create '%s': %s", work,
				       strerror(errno));
	rc = dirbox_write_meta(&m->box, spec->name, "workspace", work, err);
	if (rc)
		return rc;
	if (info) {
		memcpy(info->workdir, work, (size_t)n + 1);
		info->mounted = 0;
		info->capabilities &= ~(uint32_t)SBXLOOP_CAP_WORKSPACE_MOUNTED;
	}
	return 0;
}

static int mock_sandbox_remove(void *ctx, const char *name,
			       struct sbxloop_error *err)
{
	return dirbox_remove(&((struct mock *)ctx)->box, name, err);
}

/* Count this exec in the sandbox's counter file; the new count in *n. */
static int count_exec(struct mock *m, const char *name, long long *n,
		      struct sbxloop_error *err)
{
	char buf[64];
	int rc;

	rc = dirbox_read_meta(&m->box, name, "mock-execs", buf, sizeof(buf),
			      err);
	if (rc == SBXLOOP_ENOTFOUND) {
		/* no counter yet, but the sandbox itself must exist */
		rc = dirbox_read_meta(&m->box, name, "workspace", buf,
				      sizeof(buf), err);
		buf[0] = '\0';
	}
	if (rc)
		return rc;
	*n = strtoll(buf, NULL, 10) + 1;
	snprintf(buf, sizeof(buf), "%lld\n", *n);
	return dirbox_write_meta(&m->box, name, "mock-execs", buf, err);
}

static int runs_worker(struct mock *m, const char *name, const char *argv0)
{
	struct sbxloop_error ignored = {0, ""};
	char worker[SBXLOOP_PATH_MAX];
	const char *base = strrchr(argv0, '/');

	if (strcmp(base ? base + 1 : argv0, "sbxloop-worker") == 0)
		return 1;
	return dirbox_read_meta(&m->box, name, "worker", worker,
				sizeof(worker), &ignored) == 0 &&
	       worker[0] && strcmp(worker, argv0) == 0;
}

static void filter_stdout(void *user, const char *line, size_t len)
{
	struct mock_filter *f = user;

	if (memmem(line, len, MOCK_RESULT_MARK, strlen(MOCK_RESULT_MARK)))
		return;
	if (f->orig->on_stdout_line)
		f->orig->on_stdout_line(f->orig->user, line, len);
}

static void filter_stderr(void *user, const char *line, size_t len)
{
	struct mock_filter *f = user;

	if (f->orig->on_stderr_line)
		f->orig->on_stderr_line(f->orig->user, line, len);
}

/* Drop the lines of the captured stdout tail that carry a result. */
static void scrub_tail(struct sbxloop_proc_result *res)
{
	char *r, *w, *end;

	if (!res->out)
		return;
	r = w = res->out;
	end = res->out + res->out_len;
	while (r < end) {
		char *nl = memchr(r, '\n', (size_t)(end - r));
		size_t n = nl ? (size_t)(nl - r) + 1 : (size_t)(end - r);

		if (!memmem(r, n, MOCK_RESULT_MARK,
			    strlen(MOCK_RESULT_MARK))) {
			memmove(w, r, n);
			w += n;
		}
		r += n;
	}
	*w = '\0';
	res->out_len = (size_t)(w - res->out);
}

static void lose_results(struct mock *m, const char *name)
{
	char dir[SBXLOOP_PATH_MAX], path[SBXLOOP_PATH_MAX + 300];
	struct sbxloop_error ignored = {0, ""};
	struct dirent *d;
	DIR *dh;

	if (dirbox_dir(&m->box, name, dir, sizeof(dir), &ignored))
		return;
	snprintf(path, sizeof(path), "%s/home/results", dir);
	dh = opendir(path);
	if (!dh)
		return;
	while ((d = readdir(dh)) != NULL) {
		size_t n = strlen(d->d_name);

		if (n < 5 || strcmp(d->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/home/results/%s", dir,
			 d->d_name);
		unlink(path);
	}
	closedir(dh);
}

static int mock_exec(void *ctx, const char *name,
		     const struct sbxloop_exec_spec *spec,
		     struct sbxloop_proc_result *res,
		     struct sbxloop_error *err)
{
	struct mock *m = ctx;
	const struct sbxloop_host *host = m->box.host;
	struct sbxloop_exec_spec filtered;
	struct mock_filter filter;
	long long n = 0;
	int rc, worker;

	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);
	if (!spec || !spec->argv || !spec->argv[0])
		return dirbox_exec(&m->box, name, spec, res, err);
	rc = count_exec(m, name, &n, err);
	if (rc)
		return rc;
	if (m->fail_exec_after >= 0 && n > m->fail_exec_after)
		return host->error_set(host, err, SBXLOOP_EINFRA,
				       "mock: injected exec failure");
	if (m->timeout_exec > 0 && n == m->timeout_exec) {
		res->exit_code = -1;
		res->term_signal = SIGKILL;
		res->timed_out = 1;
		return host->error_set(host, err, SBXLOOP_ETIMEDOUT,
				       "mock: injected timeout of '%s' in "
				       "sandbox '%s'",
				       spec->argv[0], name);
	}
	worker = m->lose_result && runs_worker(m, name, spec->argv[0]);
	if (!worker)
		return dirbox_exec(&m->box, name, spec, res, err);
	filtered = *spec;
	filter.orig = spec;
	filtered.on_stdout_line = filter_stdout;
	filtered.on_stderr_line = filter_stderr;
	filtered.user = &filter;
	rc = dirbox_exec(&m->box, name, &filtered, res, err);
	lose_results(m, name);
	scrub_tail(res);
	return rc;
}

static int mock_copy_in(void *ctx, const char *name, const char *host_path,
			const char *sandbox_path, struct sbxloop_error *err)
{
	return dirbox_copy_in(&((struct mock *)ctx)->box, name, host_path,
			      sandbox_path, err);
}

static int mock_copy_out(void *ctx, const char *name, const char *sandbox_path,
			 const char *host_path, struct sbxloop_error *err)
{
	return dirbox_copy_out(&((struct mock *)ctx)->box, name, sandbox_path,
			       host_path, err);
}

static int mock_list(void *ctx, const char *prefix,
		     void (*cb)(void *user,
				const struct sbxloop_sandbox_entry *entry),
		     void *user, struct sbxloop_error *err)
{
	return dirbox_list(&((struct mock *)ctx)->box, prefix, cb, user, err);
}

static const struct sbxloop_sandbox_ops mock_ops = {
	.struct_size = sizeof(struct sbxloop_sandbox_ops),
	.create = mock_create,
	.destroy = mock_destroy,
	.static_capabilities = SBXLOOP_CAP_WORKSPACE_MOUNTED,
	.capabilities = mock_capabilities,
	.sandbox_create = mock_sandbox_create,
	.sandbox_remove = mock_sandbox_remove,
	.exec = mock_exec,
	.copy_in = mock_copy_in,
	.copy_out = mock_copy_out,
	.list = mock_list,
};

static const struct sbxloop_component mock_components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SANDBOX,
		.name = "mock",
		.ops = &mock_ops,
		.config_keys = mock_keys,
		.summary = "test-only local sandboxes with injected faults",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "mock",
		.version = PACKAGE_VERSION,
		.components = mock_components,
		.n_components =
			sizeof(mock_components) / sizeof(mock_components[0]),
};

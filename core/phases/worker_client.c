/*
 * The host side of the worker protocol: stage the job on the worker's
 * stdin, run the worker through the sandbox provider's exec with a host
 * deadline of timeout + grace, relay its event lines to the bus, take
 * the result from the final stdout line or, when the stream broke, from
 * the result file. A job in permission_mode read_only (a critic's) is
 * run with the workspace read-only where the provider can; and where
 * the worker binary is on the host. Called by the phase runners, the
 * engine (the newest resources sample), provisioning and `sandbox
 * doctor` (the worker's path).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/events.h"
#include "engine/ids.h"
#include "common/proc.h"
#include "host/redact.h"
#include "common/util.h"
#include "phases/worker_client.h"

#define GRACE_S 60.0
#define TAIL_LINES 5
#define DIAG_MAX 1500
#define RESOURCES_TYPE "\"" SBXLOOP_EV_SANDBOX_RESOURCES "\""

struct relay {
	struct sl_core *core;
	int agent;       /* a job in the agent sandbox */
	const char *box; /* the sandbox's name */
	cJSON *enrich;
	cJSON *result;
	char *tail[TAIL_LINES];
	size_t n_tail;
	struct sl_buf err_tail;
};

static void keep_tail(struct relay *r, const char *line, size_t len)
{
	size_t i;

	if (r->n_tail == TAIL_LINES) {
		free(r->tail[0]);
		for (i = 1; i < TAIL_LINES; i++)
			r->tail[i - 1] = r->tail[i];
		r->n_tail--;
	}
	r->tail[r->n_tail++] = sl_xstrndup(line, len > 400 ? 400 : len);
}

/*
 * The data of the newest resource sample relayed, per sandbox: lanes in
 * sandboxes of their own (sandbox.lanes: per-lane) each watch their own
 * disk and memory, never another lane's. A run has at most the agent
 * sandbox and its lanes' (SL_PAIR_LANES_MAX, 32, in engine/provision.h);
 * a further name takes the oldest slot.
 */
#define SAMPLE_BOXES 40
static struct {
	char box[SBXLOOP_NAME_MAX];
	cJSON *data;
	unsigned long long seq; /* when it was noted; 0: free */
} samples[SAMPLE_BOXES];
static unsigned long long sample_seq;
static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;

cJSON *sl_worker_last_resources_copy(const char *box)
{
	cJSON *copy = NULL;
	size_t i, best = SAMPLE_BOXES;

	pthread_mutex_lock(&sample_lock);
	for (i = 0; i < SAMPLE_BOXES; i++) {
		if (!samples[i].seq ||
		    (box && strcmp(samples[i].box, box) != 0))
			continue;
		if (best == SAMPLE_BOXES || samples[i].seq > samples[best].seq)
			best = i;
	}
	if (best < SAMPLE_BOXES)
		copy = cJSON_Duplicate(samples[best].data, 1);
	pthread_mutex_unlock(&sample_lock);
	return copy;
}

void sl_worker_forget_resources(void)
{
	size_t i;

	pthread_mutex_lock(&sample_lock);
	for (i = 0; i < SAMPLE_BOXES; i++) {
		cJSON_Delete(samples[i].data);
		samples[i].data = NULL;
		samples[i].seq = 0;
		samples[i].box[0] = '\0';
	}
	pthread_mutex_unlock(&sample_lock);
}

static void note_resources(const char *box, const char *line, size_t len)
{
	cJSON *ev = cJSON_ParseWithLength(line, len);
	cJSON *d = cJSON_DetachItemFromObjectCaseSensitive(ev, "data");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
	size_t i, slot = SAMPLE_BOXES;

	if (cJSON_IsObject(d) && cJSON_IsString(type) &&
	    strcmp(type->valuestring, SBXLOOP_EV_SANDBOX_RESOURCES) == 0) {
		pthread_mutex_lock(&sample_lock);
		/* the sandbox's own slot, else a free one, else the oldest */
		for (i = 0; i < SAMPLE_BOXES; i++)
			if (samples[i].seq && !strcmp(samples[i].box, box))
				slot = i;
		for (i = 0; slot == SAMPLE_BOXES && i < SAMPLE_BOXES; i++)
			if (!samples[i].seq)
				slot = i;
		if (slot == SAMPLE_BOXES) {
			slot = 0;
			for (i = 1; i < SAMPLE_BOXES; i++)
				if (samples[i].seq < samples[slot].seq)
					slot = i;
		}
		cJSON_Delete(samples[slot].data);
		samples[slot].data = d;
		samples[slot].seq = ++sample_seq;
		snprintf(samples[slot].box, sizeof(samples[slot].box), "%s",
			 box);
		pthread_mutex_unlock(&sample_lock);
		d = NULL;
	}
	cJSON_Delete(d);
	cJSON_Delete(ev);
}

static void on_stdout(void *user, const char *line, size_t len)
{
	struct relay *r = user;
	cJSON *res = NULL;

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len == 0)
		return;
	/* the guardrails watch the agent sandbox's samples only */
	if (r->agent && len < 4096 &&
	    memmem(line, len, RESOURCES_TYPE, sizeof(RESOURCES_TYPE) - 1))
		note_resources(r->box, line, len);
	if (sl_bus_relay_worker_line(r->core, line, len, r->enrich, &res) ==
	    1) {
		cJSON_Delete(r->result);
		r->result = res;
		return;
	}
	keep_tail(r, line, len);
}

static void on_stderr(void *user, const char *line, size_t len)
{
	struct relay *r = user;

	sl_buf_add(&r->err_tail, line, len);
	sl_buf_addc(&r->err_tail, '\n');
	if (r->err_tail.len > DIAG_MAX * 2) {
		memmove(r->err_tail.buf,
			r->err_tail.buf + r->err_tail.len - DIAG_MAX,
			DIAG_MAX);
		r->err_tail.len = DIAG_MAX;
		r->err_tail.buf[DIAG_MAX] = '\0';
	}
}

static double grace_s(void)
{
	const char *g = getenv("SBXLOOP_JOB_GRACE_S");
	double v;

	if (!g || !*g)
		return GRACE_S;
	v = strtod(g, NULL);
	return v > 0 ? v : GRACE_S;
}

static void set_field(cJSON *job, const char *key, cJSON *val)
{
	if (cJSON_GetObjectItemCaseSensitive(job, key))
		cJSON_ReplaceItemInObjectCaseSensitive(job, key, val);
	else
		cJSON_AddItemToObject(job, key, val);
}

int sl_worker_job_read_only(const cJSON *job)
{
	const cJSON *m =
		cJSON_GetObjectItemCaseSensitive(job, "permission_mode");

	return cJSON_IsString(m) && strcmp(m->valuestring, "read_only") == 0;
}

/* Read the result file back through the provider. NULL when absent. */
static cJSON *fetch_result(const struct sbxloop_sandbox_ops *ops, void *ctx,
			   const char *box, const char *path)
{
	char tmpl[] = "/tmp/sbxloop-result-XXXXXX";
	struct sbxloop_error err = {0, ""};
	cJSON *res = NULL;
	char *text;
	int fd = mkstemp(tmpl);

	if (fd < 0)
		return NULL;
	close(fd);
	if (ops->copy_out(ctx, box, path, tmpl, &err) == 0) {
		text = sl_read_file(tmpl, NULL, 64u << 20);
		if (text)
			res = cJSON_Parse(text);
		free(text);
	}
	unlink(tmpl);
	return res;
}

static void add_diag(struct sl_buf *b, const struct relay *r, int rc,
		     const struct sbxloop_proc_result *pr)
{
	size_t i;
	const char *stderr_tail = sl_buf_str(&r->err_tail);

	sl_buf_addf(b, "exec rc=%d", rc == 0 ? pr->exit_code : rc);
	if (pr->term_signal)
		sl_buf_addf(b, " (signal %d)", pr->term_signal);
	if (*stderr_tail) {
		size_t n = strlen(stderr_tail);

		sl_buf_adds(b, "; stderr: ");
		sl_buf_adds(b, n > DIAG_MAX ? stderr_tail + n - DIAG_MAX
					    : stderr_tail);
	}
	sl_buf_adds(b, "; last events: ");
	if (!r->n_tail)
		sl_buf_adds(b, "(none)");
	for (i = 0; i < r->n_tail; i++) {
		if (i)
			sl_buf_adds(b, " | ");
		sl_buf_adds(b, r->tail[i]);
	}
}

const char *sl_persona_phase(const char *persona)
{
	static const char *const map[][2] = {
		{"decomposer", "decompose"}, {"planner", "plan"},
		{"executor", "execute"},     {"scrutinizer", "scrutinize"},
		{"verifier", "verify"},      {"validator", "validate"},
		{"steering", "steer"},
	};
	size_t i;

	for (i = 0; persona && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(persona, map[i][0]))
			return map[i][1];
	return NULL;
}

/* jobs started and ended, for sl_worker_jobs_quiet */
static unsigned long jobs_started, jobs_ended;

int sl_worker_jobs_quiet(unsigned long *stamp)
{
	unsigned long ended = __atomic_load_n(&jobs_ended, __ATOMIC_ACQUIRE);

	*stamp = __atomic_load_n(&jobs_started, __ATOMIC_ACQUIRE);
	return *stamp == ended;
}

static int submit(struct sl_core *core,
		  const struct sbxloop_sandbox_info *info, cJSON *job,
		  const struct sl_job_tags *tags, cJSON **result,
		  struct sbxloop_error *err);

int sl_worker_submit(struct sl_core *core,
		     const struct sbxloop_sandbox_info *info, cJSON *job,
		     const struct sl_job_tags *tags, cJSON **result,
		     struct sbxloop_error *err)
{
	int rc;

	__atomic_add_fetch(&jobs_started, 1, __ATOMIC_ACQ_REL);
	rc = submit(core, info, job, tags, result, err);
	__atomic_add_fetch(&jobs_ended, 1, __ATOMIC_ACQ_REL);
	return rc;
}

static int submit(struct sl_core *core,
		  const struct sbxloop_sandbox_info *info, cJSON *job,
		  const struct sl_job_tags *tags, cJSON **result,
		  struct sbxloop_error *err)
{
	const struct sbxloop_sandbox_ops *ops = core->sandbox.ops;
	static const char *const limit_keys[] = {
		"limits.disk_warn", "limits.disk_abort", "limits.mem_warn",
		"limits.mem_abort"};
	static const char *const limit_flags[] = {
		"--disk-warn", "--disk-abort", "--mem-warn", "--mem-abort"};
	struct sbxloop_proc_result pr;
	struct sbxloop_exec_spec spec;
	struct relay r;
	char job_id[SL_JOB_ID_LEN + 1], nums[4][32];
	char *events_path = NULL, *result_path = NULL, *text = NULL;
	const char *argv[32];
	const cJSON *t, *st, *jid;
	double timeout;
	size_t n = 0, i;
	int rc;

	*result = NULL;
	memset(&r, 0, sizeof(r));
	memset(&pr, 0, sizeof(pr));
	pr.struct_size = sizeof(pr);
	if (!ops || !core->sandbox.ctx)
		return sl_error(err, SBXLOOP_EINFRA,
				"no sandbox provider is active");
	sl_job_id_new(job_id);
	set_field(job, "v", cJSON_CreateNumber(1));
	set_field(job, "job_id", cJSON_CreateString(job_id));
	set_field(job, "run_id",
		  cJSON_CreateString(core->run_id ? core->run_id : ""));
	t = cJSON_GetObjectItemCaseSensitive(job, "timeout_s");
	timeout = cJSON_IsNumber(t) ? t->valuedouble : 1800.0;
	text = cJSON_PrintUnformatted(job);

	events_path = sl_xasprintf("%s/events/%s.jsonl", info->home, job_id);
	result_path = sl_xasprintf("%s/results/%s.json", info->home, job_id);
	argv[n++] = info->worker;
	argv[n++] = "run";
	argv[n++] = "--job";
	argv[n++] = "-";
	argv[n++] = "--events";
	argv[n++] = events_path;
	argv[n++] = "--result";
	argv[n++] = result_path;
	argv[n++] = "--cwd";
	argv[n++] = info->workdir;
	argv[n++] = "--heartbeat";
	argv[n++] = "15";
	for (i = 0; i < 4; i++) {
		double v = sl_config_double(core->cfg, limit_keys[i], 0);

		if (v <= 0)
			continue;
		snprintf(nums[i], sizeof(nums[i]), "%g", v);
		argv[n++] = limit_flags[i];
		argv[n++] = nums[i];
	}
	argv[n] = NULL;

	r.core = core;
	r.agent = !tags || !tags->role || !strcmp(tags->role, "agent");
	r.box = info->name;
	r.enrich = cJSON_CreateObject();
	cJSON_AddStringToObject(r.enrich, "role",
				tags && tags->role ? tags->role : "agent");
	if (tags && tags->persona)
		cJSON_AddStringToObject(r.enrich, "agent", tags->persona);
	if (tags && tags->task_id)
		cJSON_AddStringToObject(r.enrich, "task_id", tags->task_id);

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.cwd = info->workdir;
	spec.stdin_data = text;
	spec.stdin_len = strlen(text);
	spec.timeout_s = timeout + grace_s();
	spec.on_stdout_line = on_stdout;
	spec.on_stderr_line = on_stderr;
	spec.user = &r;
	/* a critic (SCRUTINIZE, VALIDATE) sees the workspace read-only */
	spec.read_only_workspace = sl_worker_job_read_only(job) ||
				   (tags && tags->read_only_workspace);
	sl_log(SBXLOOP_LOG_DEBUG, "job %s: %s", job_id,
	       cJSON_GetStringValue(
		       cJSON_GetObjectItemCaseSensitive(job, "kind")));
	if (r.agent)
		sl_core_job_context(
			tags ? tags->task_id : NULL,
			sl_persona_phase(tags ? tags->persona : NULL));
	rc = ops->exec(core->sandbox.ctx, info->name, &spec, &pr, err);
	sl_core_job_context(NULL, NULL);
	if (rc == SBXLOOP_ETIMEDOUT || pr.timed_out) {
		rc = sl_error(err, SBXLOOP_ETIMEDOUT,
			      "job %s exceeded %gs (+%gs grace)", job_id,
			      timeout, grace_s());
		goto out;
	}
	if (!r.result)
		r.result = fetch_result(ops, core->sandbox.ctx, info->name,
					result_path);
	if (!r.result) {
		struct sl_buf b = SL_BUF_INIT;
		char msg[SBXLOOP_ERROR_MAX];

		snprintf(msg, sizeof(msg), "%s", rc < 0 ? err->message : "");
		sl_buf_addf(&b, "worker for job %s produced no result (%s); ",
			    job_id, result_path);
		if (*msg)
			sl_buf_addf(&b, "%s; ", msg);
		add_diag(&b, &r, rc, &pr);
		rc = sl_error(err, SBXLOOP_EINFRA, "%s", sl_buf_str(&b));
		sl_buf_release(&b);
		goto out;
	}
	jid = cJSON_GetObjectItemCaseSensitive(r.result, "job_id");
	st = cJSON_GetObjectItemCaseSensitive(r.result, "status");
	if (!cJSON_IsObject(r.result) || !cJSON_IsString(st) ||
	    (cJSON_IsString(jid) && strcmp(jid->valuestring, job_id))) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "worker for job %s returned an invalid result",
			      job_id);
		goto out;
	}
	*result = r.result;
	r.result = NULL;
	rc = 0;
out:
	sl_proc_result_clear(&pr);
	cJSON_Delete(r.result);
	cJSON_Delete(r.enrich);
	for (i = 0; i < r.n_tail; i++)
		free(r.tail[i]);
	sl_buf_release(&r.err_tail);
	free(text);
	free(events_path);
	free(result_path);
	return rc;
}

/* The configured path, $SBXLOOP_WORKER, beside this binary, installed. */
char *sl_worker_path(const struct sl_core *core)
{
	const char *p = sl_config_str(core->cfg, "worker_path");
	char self[PATH_MAX], *slash, *cand;
	static const char *const rel[] = {"sbxloop-worker",
					  "worker/sbxloop-worker",
					  "../worker/sbxloop-worker"};
	ssize_t n;
	size_t i;

	if (p && *p)
		return sl_xstrdup(p);
	p = getenv("SBXLOOP_WORKER");
	if (p && *p)
		return sl_xstrdup(p);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		for (i = 0; i < 3; i++) {
			cand = sl_xasprintf("%s/%s", self, rel[i]);
			if (access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
	}
	return sl_xstrdup(SBXLOOP_LIBEXECDIR "/sbxloop-worker");
}

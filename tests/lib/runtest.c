/*
 * Helpers of the end-to-end suites that run the real sbxloop binary and
 * read its store (runtest.h).
 */
#include "config.h"

#include "runtest.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sbxloop/store.h>

#include "host/core.h"

static const char *scratch = ".";

void rt_set_dir(const char *dir)
{
	scratch = dir;
}

/* <scratch>/<rel> (caller frees). */
static char *scratch_path(const char *rel)
{
	size_t len = strlen(scratch) + strlen(rel) + 2;
	char *path = malloc(len);

	ck_assert_ptr_nonnull(path);
	snprintf(path, len, "%s/%s", scratch, rel);
	return path;
}

char *read_file(const char *rel)
{
	char *path = scratch_path(rel);
	char *text = tu_read(path);

	free(path);
	return text ? text : strdup("");
}

void put_file(const char *rel, const char *text)
{
	char *path = scratch_path(rel);

	tu_write(path, text);
	free(path);
}

void copy_scenario(const char *name)
{
	char path[4200];
	char *text;

	snprintf(path, sizeof(path), "%s/tests/scenarios/%s.json",
		 env_or("SBXLOOP_SRCDIR", "."), name);
	text = tu_read(path);
	ck_assert_msg(text && *text, "cannot read scenario %s", path);
	put_file("scenario.json", text);
	free(text);
}

const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

pid_t spawn_sbxloop(const char *const *env, const char *const *args)
{
	const char *argv[16];
	pid_t pid;
	size_t n = 0;

	argv[n++] = env_or("SBXLOOP_BIN", "sbxloop");
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int in, out, err;

		if (chdir(scratch) < 0)
			_exit(126);
		in = open("/dev/null", O_RDONLY);
		out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		err = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0 || err < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int wait_code(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int sbxloop(const char *a1, const char *a2, const char *a3)
{
	const char *args[] = {a1, a2, a3, NULL};

	return wait_code(spawn_sbxloop(NULL, args));
}

static void db_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/state/state.db", scratch);
}

static sqlite3 *db_open(void)
{
	char path[4200];
	sqlite3 *db = NULL;

	db_path(path, sizeof(path));
	ck_assert_int_eq(
		sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
		SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static char *vq_str(const char *fmt, va_list ap) RT_PRINTF(1, 0);

static char *vq_str(const char *fmt, va_list ap)
{
	sqlite3 *db = db_open();
	sqlite3_stmt *st = NULL;
	char sql[4096];
	char *res;

	vsnprintf(sql, sizeof(sql), fmt, ap);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
		      "bad query %s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		res = strdup((const char *)sqlite3_column_text(st, 0));
	else
		res = strdup("");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return res;
}

char *q_str(const char *fmt, ...)
{
	va_list ap;
	char *res;

	va_start(ap, fmt);
	res = vq_str(fmt, ap);
	va_end(ap);
	return res;
}

long q_int(const char *fmt, ...)
{
	va_list ap;
	char *s;
	long v;

	va_start(ap, fmt);
	s = vq_str(fmt, ap);
	va_end(ap);
	v = strtol(s, NULL, 10);
	free(s);
	return v;
}

void q_exec(const char *sql)
{
	sqlite3 *db = db_open();
	char *msg = NULL;

	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK,
		      "%s: %s", sql, msg ? msg : "");
	sqlite3_close(db);
}

long soft_count(const char *sql)
{
	char path[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long v = 0;

	db_path(path, sizeof(path));
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK) {
		sqlite3_busy_timeout(db, 2000);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

int wait_for(const char *sql, double secs)
{
	double waited;

	for (waited = 0; waited < secs; waited += 0.05) {
		if (soft_count(sql) > 0)
			return 1;
		sleep_ms(50);
	}
	return 0;
}

/* ---- the store, read through the sqlite module's vtable ------------- */

/* The core on the scratch dir's sbxloop.yaml and its store instance. */
struct rt_store {
	struct sl_core *core;
	struct sl_instance inst;
	const struct sbxloop_store_ops *ops;
};

static void store_open(struct rt_store *st)
{
	struct sbxloop_error err = {0, ""};
	struct sl_config_opts opts;
	char cfg[4200], *errors = NULL;

	snprintf(cfg, sizeof(cfg), "%s/sbxloop.yaml", scratch);
	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg;
	opts.cwd = scratch;
	opts.no_user_file = 1;
	opts.no_env = 1;
	ck_assert_msg(sl_core_open(&st->core, &opts, &errors) == 0,
		      "cannot open the core on %s: %s", cfg,
		      errors ? errors : "");
	ck_assert_msg(sl_core_instantiate(st->core, SBXLOOP_KIND_STORE,
					  "sqlite", &st->inst, &err) == 0,
		      "cannot open the store: %s", err.message);
	st->ops = st->inst.ops;
}

static void store_close(struct rt_store *st)
{
	sl_instance_destroy(&st->inst);
	sl_core_close(st->core);
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int newest_run_cb(void *user, const struct sbxloop_run_row *row)
{
	char **id = user;

	if (!*id)
		*id = strdup(row->run_id);
	return 0;
}

char *last_run(void)
{
	struct sbxloop_error err = {0, ""};
	struct rt_store st;
	char *id = NULL;

	store_open(&st);
	ck_assert_msg(
		st.ops->run_list(st.inst.ctx, newest_run_cb, &id, &err) == 0,
		"run_list: %s", err.message);
	store_close(&st);
	return id ? id : strdup("");
}

static int run_cb(void *user, const struct sbxloop_run_row *row)
{
	struct rt_run *r = user;

	r->state = dup_or_empty(row->state);
	r->reason = dup_or_empty(row->reason);
	r->workspace = dup_or_empty(row->workspace);
	r->kept_reason = dup_or_empty(row->kept_reason);
	r->mounted = row->mounted;
	return 0;
}

void rt_run_get(const char *run, struct rt_run *r)
{
	struct sbxloop_error err = {0, ""};
	struct rt_store st;

	memset(r, 0, sizeof(*r));
	store_open(&st);
	ck_assert_msg(st.ops->run_get(st.inst.ctx, run, run_cb, r, &err) == 0,
		      "run %s: %s", run, err.message);
	store_close(&st);
}

void rt_run_release(struct rt_run *r)
{
	free(r->state);
	free(r->reason);
	free(r->workspace);
	free(r->kept_reason);
	memset(r, 0, sizeof(*r));
}

void assert_run_state(const char *run, const char *state)
{
	struct rt_run r;

	rt_run_get(run, &r);
	ck_assert_msg(strcmp(r.state, state) == 0, "run %s is '%s', not '%s'",
		      run, r.state, state);
	rt_run_release(&r);
}

struct task_find {
	const char *task_id;
	struct rt_task *out;
	long n;
	int found;
};

static int task_cb(void *user, const struct sbxloop_task_row *t)
{
	struct task_find *f = user;

	f->n++;
	if (!f->task_id || strcmp(t->task_id, f->task_id) || f->found)
		return 0;
	f->found = 1;
	f->out->state = dup_or_empty(t->state);
	f->out->spec_json = dup_or_empty(t->spec_json);
	f->out->last_feedback = dup_or_empty(t->last_feedback);
	f->out->session_id = dup_or_empty(t->session_id);
	f->out->revisions = t->revisions;
	f->out->replans = t->replans;
	return 0;
}

static void tasks_walk(const char *run, struct task_find *f)
{
	struct sbxloop_error err = {0, ""};
	struct rt_store st;

	store_open(&st);
	ck_assert_msg(st.ops->tasks_list(st.inst.ctx, run, task_cb, f, &err) ==
			      0,
		      "tasks of %s: %s", run, err.message);
	store_close(&st);
}

int rt_task_get(const char *run, const char *task, struct rt_task *t)
{
	struct task_find f = {task, t, 0, 0};

	memset(t, 0, sizeof(*t));
	tasks_walk(run, &f);
	return f.found ? 0 : -1;
}

void rt_task_release(struct rt_task *t)
{
	free(t->state);
	free(t->spec_json);
	free(t->last_feedback);
	free(t->session_id);
	memset(t, 0, sizeof(*t));
}

long rt_task_count(const char *run)
{
	struct task_find f = {NULL, NULL, 0, 0};

	tasks_walk(run, &f);
	return f.n;
}

struct attempt_trail {
	const char *task_id; /* "" for the run's own (decompose) attempts */
	const char *phase;
	char buf[4096];
};

static int attempt_cb(void *user, const struct sbxloop_attempt_row *a)
{
	struct attempt_trail *t = user;
	size_t len = strlen(t->buf);

	if (strcmp(a->task_id ? a->task_id : "", t->task_id) ||
	    strcmp(a->phase, t->phase))
		return 0;
	snprintf(t->buf + len, sizeof(t->buf) - len, "%s%s", len ? "," : "",
		 a->status);
	return 0;
}

char *rt_attempt_statuses(const char *run, const char *task, const char *phase)
{
	struct sbxloop_error err = {0, ""};
	struct attempt_trail t;
	struct rt_store st;

	t.task_id = task;
	t.phase = phase;
	t.buf[0] = '\0';
	store_open(&st);
	ck_assert_msg(st.ops->attempts_list(st.inst.ctx, run,
					    *task ? task : NULL, attempt_cb,
					    &t, &err) == 0,
		      "attempts of %s: %s", run, err.message);
	store_close(&st);
	return strdup(t.buf);
}

struct event_count {
	const char *type;
	long n;
};

static int event_cb(void *user, const struct sbxloop_event *ev)
{
	struct event_count *c = user;

	if (strcmp(ev->type, c->type) == 0)
		c->n++;
	return 0;
}

long count_events(const char *run, const char *type)
{
	struct sbxloop_error err = {0, ""};
	struct sbxloop_event_query q;
	struct event_count c = {type, 0};
	struct rt_store st;

	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = run;
	q.type_prefix = type;
	store_open(&st);
	ck_assert_msg(
		st.ops->events_query(st.inst.ctx, &q, event_cb, &c, &err) == 0,
		"events of %s: %s", run, err.message);
	store_close(&st);
	return c.n;
}

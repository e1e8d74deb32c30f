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
#include <fnmatch.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sbxloop/store.h>

#include "host/core.h"

static const char *scratch = ".";
static char *made; /* the scratch dir rt_setup made */

void rt_set_dir(const char *dir)
{
	scratch = dir;
}

void rt_setup(void)
{
	made = tu_tmpdir();
	rt_set_dir(made);
}

const char *rt_dir(void)
{
	return scratch;
}

void rt_teardown(void)
{
	if (!getenv("SBXLOOP_KEEP_TEST_DIRS"))
		tu_rmtree(made);
	free(made);
	made = NULL;
	scratch = ".";
}

void rt_git_repo(void)
{
	char cmd[4400];

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && mkdir repo && cd repo && git init -q && "
		 "echo hi > README && git add . && git -c user.name=t -c "
		 "user.email=t@t commit -qm init",
		 scratch);
	ck_assert_int_eq(system(cmd), 0);
}

void rt_write_config(const char *provider, const char *policy,
		     const char *extra)
{
	char buf[8192], line[512] = "";

	if (policy)
		snprintf(line, sizeof(line), "  policy: %s\n", policy);
	snprintf(buf, sizeof(buf),
		 "state_dir: state\n"
		 "prompts_dir: %s/prompts\n"
		 "worker_path: %s\n"
		 "plugins:\n"
		 "  sandbox: %s\n"
		 "  sinks: []\n"
		 "%s"
		 "agent:\n"
		 "  backend: script\n"
		 "  script: scenario.json\n"
		 "%s%s",
		 env_or("SBXLOOP_SRCDIR", "."),
		 env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"), provider,
		 line,
		 extra && strstr(extra, "limits:") ? ""
						   : "limits:\n"
						     "  disk_warn: 0\n"
						     "  disk_abort: 0\n"
						     "  mem_warn: 0\n"
						     "  mem_abort: 0\n",
		 extra ? extra : "");
	put_file("sbxloop.yaml", buf);
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

char *rt_path(const char *fmt, ...)
{
	char rel[2048], *path;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	path = scratch_path(rel);
	return path;
}

char *read_file(const char *rel)
{
	char *path = scratch_path(rel);
	char *text = tu_read(path);

	free(path);
	return text ? text : strdup("");
}

int rt_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

void assert_file_has(const char *rel, const char *needle)
{
	char *text = read_file(rel);

	ck_assert_msg(strstr(text, needle), "%s lacks '%s':\n%s", rel, needle,
		      text);
	free(text);
}

void assert_file_lacks(const char *rel, const char *needle)
{
	char *text = read_file(rel);

	ck_assert_msg(!strstr(text, needle), "%s has '%s':\n%s", rel, needle,
		      text);
	free(text);
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

long rt_replies_taken(void)
{
	char *path = scratch_path("scenario.json.cursor");
	char *text = rt_exists(path) ? tu_read(path) : NULL;
	long n = text ? strtol(text, NULL, 10) : 0;

	free(text);
	free(path);
	return n;
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
	return spawn_sbxloop_in("/dev/null", env, args);
}

pid_t spawn_sbxloop_in(const char *in_path, const char *const *env,
		       const char *const *args)
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
		in = open(in_path, O_RDONLY);
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

void rt_capture(struct tu_run *r, const char *const *args)
{
	const char *argv[16];
	size_t n = 0;

	argv[n++] = env_or("SBXLOOP_BIN", "sbxloop");
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	tu_exec(r, scratch, NULL, argv);
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
	/* a reader, as `sbxloop status` is: nothing to upgrade or write */
	st->core->state_read_only = 1;
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

	r->outcome = dup_or_empty(row->outcome);
	r->state = dup_or_empty(row->state);
	r->reason = dup_or_empty(row->reason);
	r->workspace = dup_or_empty(row->workspace);
	r->kept_reason = dup_or_empty(row->kept_reason);
	r->guidance_json = dup_or_empty(row->guidance_json);
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
	free(r->outcome);
	free(r->state);
	free(r->reason);
	free(r->workspace);
	free(r->kept_reason);
	free(r->guidance_json);
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

/*
 * A JSON value as SQLite's json_extract gives it in text: strings bare,
 * true and false as 1 and 0, anything else as compact JSON; NULL when
 * missing or null (caller frees).
 */
static char *json_text(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return NULL;
	if (cJSON_IsString(v))
		return strdup(v->valuestring);
	if (cJSON_IsBool(v))
		return strdup(cJSON_IsTrue(v) ? "1" : "0");
	return cJSON_PrintUnformatted(v);
}

/* Member `key` of the JSON object text `json` as json_text gives it. */
static char *member_text(const char *json, const char *key)
{
	cJSON *obj = cJSON_Parse(json ? json : "");
	char *text = json_text(cJSON_GetObjectItemCaseSensitive(obj, key));

	cJSON_Delete(obj);
	return text;
}

/* Append `item` to the `sep`-joined list in buf. */
static void join(char *buf, size_t len, const char *sep, const char *item)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? sep : "", item);
}

struct task_find {
	const char *task_id;
	struct rt_task *out;
	long n;
	int found;
	const char *state; /* count the tasks in this state, or NULL */
	long in_state;
	char ids[4096]; /* every task id, in the store's order */
};

static int task_cb(void *user, const struct sbxloop_task_row *t)
{
	struct task_find *f = user;

	f->n++;
	join(f->ids, sizeof(f->ids), ",", t->task_id);
	if (f->state && strcmp(t->state, f->state) == 0)
		f->in_state++;
	if (!f->task_id || strcmp(t->task_id, f->task_id) || f->found)
		return 0;
	f->found = 1;
	f->out->state = dup_or_empty(t->state);
	f->out->spec_json = dup_or_empty(t->spec_json);
	f->out->plan_json = dup_or_empty(t->plan_json);
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
	struct task_find f = {task, t, 0, 0, NULL, 0, ""};

	memset(t, 0, sizeof(*t));
	tasks_walk(run, &f);
	return f.found ? 0 : -1;
}

void rt_task_release(struct rt_task *t)
{
	free(t->state);
	free(t->spec_json);
	free(t->plan_json);
	free(t->last_feedback);
	free(t->session_id);
	memset(t, 0, sizeof(*t));
}

long rt_task_count(const char *run)
{
	struct task_find f = {NULL, NULL, 0, 0, NULL, 0, ""};

	tasks_walk(run, &f);
	return f.n;
}

void assert_task_state(const char *run, const char *task, const char *state)
{
	struct rt_task t;
	int found = rt_task_get(run, task, &t) == 0;

	ck_assert_msg(found && strcmp(t.state, state) == 0,
		      "task %s is '%s', not '%s'", task, found ? t.state : "",
		      state);
	rt_task_release(&t);
}

char *rt_task_ids(const char *run)
{
	struct task_find f = {NULL, NULL, 0, 0, NULL, 0, ""};

	tasks_walk(run, &f);
	return strdup(f.ids);
}

/* ---- attempts ------------------------------------------------------- */

/* Which attempts: members NULL match any; task "" is the run's own. */
struct attempt_match {
	const char *task;
	const char *phase;
	const char *status;
	const char *output_has; /* output_json contains this text */
};

struct attempt_walk {
	struct attempt_match m;
	const char *what; /* NULL: count only */
	const char *sep;
	long n;
	char buf[16384];
};

static int attempt_matches(const struct attempt_match *m,
			   const struct sbxloop_attempt_row *a)
{
	return (!m->task ||
		strcmp(a->task_id ? a->task_id : "", m->task) == 0) &&
	       (!m->phase || strcmp(a->phase, m->phase) == 0) &&
	       (!m->status || strcmp(a->status, m->status) == 0) &&
	       (!m->output_has ||
		(a->output_json && strstr(a->output_json, m->output_has)));
}

static int attempt_cb(void *user, const struct sbxloop_attempt_row *a)
{
	struct attempt_walk *w = user;
	char item[64], *text = NULL;

	if (!attempt_matches(&w->m, a))
		return 0;
	w->n++;
	if (!w->what)
		return 0;
	if (strcmp(w->what, "status") == 0) {
		join(w->buf, sizeof(w->buf), w->sep, a->status);
	} else if (strcmp(w->what, "attempt") == 0) {
		snprintf(item, sizeof(item), "%d", a->attempt);
		join(w->buf, sizeof(w->buf), w->sep, item);
	} else if (strcmp(w->what, "trail") == 0) {
		snprintf(item, sizeof(item), "%s:%d:%s", a->phase, a->attempt,
			 a->status);
		join(w->buf, sizeof(w->buf), w->sep, item);
	} else if (strcmp(w->what, "output") == 0) {
		join(w->buf, sizeof(w->buf), w->sep,
		     a->output_json ? a->output_json : "");
	} else {
		text = member_text(a->output_json, w->what);
		join(w->buf, sizeof(w->buf), w->sep, text ? text : "-");
		free(text);
	}
	return 0;
}

static void attempts_walk(const char *run, struct attempt_walk *w)
{
	struct sbxloop_error err = {0, ""};
	const char *task = w->m.task && *w->m.task ? w->m.task : NULL;
	struct rt_store st;

	store_open(&st);
	ck_assert_msg(st.ops->attempts_list(st.inst.ctx, run, task, attempt_cb,
					    w, &err) == 0,
		      "attempts of %s: %s", run, err.message);
	store_close(&st);
}

long rt_attempt_count(const char *run, const char *task, const char *phase,
		      const char *status, const char *output_has)
{
	struct attempt_walk w = {
		{task, phase, status, output_has}, NULL, "", 0, ""};

	attempts_walk(run, &w);
	return w.n;
}

char *rt_attempt_trail(const char *run, const char *task, const char *phase,
		       const char *what, const char *sep)
{
	struct attempt_walk w = {{task, phase, NULL, NULL}, what, sep, 0, ""};

	attempts_walk(run, &w);
	return strdup(w.buf);
}

char *rt_attempt_statuses(const char *run, const char *task, const char *phase)
{
	return rt_attempt_trail(run, task, phase, "status", ",");
}

char *rt_workspace(const char *run)
{
	struct rt_run r;
	char *ws;

	rt_run_get(run, &r);
	ws = r.workspace;
	r.workspace = NULL;
	rt_run_release(&r);
	return ws;
}

char *rt_task_field(const char *run, const char *task, const char *which)
{
	struct rt_task t;
	char *s;

	ck_assert_msg(rt_task_get(run, task, &t) == 0, "run %s has no %s", run,
		      task);
	if (strcmp(which, "spec_json") == 0)
		s = strdup(t.spec_json);
	else if (strcmp(which, "plan_json") == 0)
		s = strdup(t.plan_json);
	else if (strcmp(which, "session_id") == 0)
		s = strdup(t.session_id);
	else
		s = strdup(t.last_feedback);
	rt_task_release(&t);
	return s;
}

/* ---- events --------------------------------------------------------- */

#define RT_MAX_PAIRS 8

/* Which events: `type` exactly (NULL any) and data members by glob. */
struct event_walk {
	const char *type;
	const char *keys[RT_MAX_PAIRS], *globs[RT_MAX_PAIRS];
	int pairs;
	/* what the walk collects */
	long n;
	int64_t first_seq, last_seq;
	const char *key; /* of the first match, into text */
	char *text;
	const char *prefix; /* the trail: type past it, ':', data.key */
	char buf[16384];
};

static void walk_init(struct event_walk *w, const char *type, va_list ap)
{
	const char *key;

	memset(w, 0, sizeof(*w));
	w->type = type;
	while ((key = va_arg(ap, const char *)) != NULL) {
		ck_assert_int_lt(w->pairs, RT_MAX_PAIRS);
		w->keys[w->pairs] = key;
		w->globs[w->pairs++] = va_arg(ap, const char *);
	}
}

static int event_matches(const struct event_walk *w,
			 const struct sbxloop_event *ev)
{
	cJSON *data;
	int i, ok = 1;

	if (w->type && strcmp(ev->type, w->type))
		return 0;
	if (!w->pairs)
		return 1;
	data = cJSON_Parse(ev->data_json ? ev->data_json : "");
	for (i = 0; i < w->pairs && ok; i++) {
		char *text =
			*w->keys[i]
				? json_text(cJSON_GetObjectItemCaseSensitive(
					  data, w->keys[i]))
				: strdup(ev->data_json ? ev->data_json : "");

		ok = text && fnmatch(w->globs[i], text, 0) == 0;
		free(text);
	}
	cJSON_Delete(data);
	return ok;
}

static int event_cb(void *user, const struct sbxloop_event *ev)
{
	struct event_walk *w = user;

	if (!event_matches(w, ev))
		return 0;
	if (!w->n++) {
		w->first_seq = ev->seq;
		if (w->key)
			w->text = *w->key ? member_text(ev->data_json, w->key)
					  : strdup(ev->data_json);
	}
	w->last_seq = ev->seq;
	if (w->prefix) {
		const char *rest = ev->type + strlen(w->prefix);
		char *text = member_text(ev->data_json, w->key);
		char item[1024];

		snprintf(item, sizeof(item), "%s%s%s", rest, *rest ? ":" : "",
			 text ? text : "");
		join(w->buf, sizeof(w->buf), ",", item);
		free(text);
	}
	return 0;
}

/* The run's events whose type starts with `prefix` (NULL: all) through
 * the walk, in seq order. */
static void events_walk(const char *run, const char *prefix,
			struct event_walk *w)
{
	struct sbxloop_error err = {0, ""};
	struct sbxloop_event_query q;
	struct rt_store st;

	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = run;
	q.type_prefix = prefix;
	store_open(&st);
	ck_assert_msg(
		st.ops->events_query(st.inst.ctx, &q, event_cb, w, &err) == 0,
		"events of %s: %s", run, err.message);
	store_close(&st);
}

long rt_event_count(const char *run, const char *type, ...)
{
	struct event_walk w;
	va_list ap;

	va_start(ap, type);
	walk_init(&w, type, ap);
	va_end(ap);
	events_walk(run, type, &w);
	return w.n;
}

long count_events(const char *run, const char *type)
{
	return rt_event_count(run, type, NULL);
}

long rt_event_seq(const char *run, int last, const char *type, ...)
{
	struct event_walk w;
	va_list ap;

	va_start(ap, type);
	walk_init(&w, type, ap);
	va_end(ap);
	events_walk(run, type, &w);
	return (long)(last ? w.last_seq : w.first_seq);
}

char *rt_event_text(const char *run, const char *key, const char *type, ...)
{
	struct event_walk w;
	va_list ap;

	va_start(ap, type);
	walk_init(&w, type, ap);
	va_end(ap);
	w.key = key ? key : "";
	events_walk(run, type, &w);
	return w.text ? w.text : strdup("");
}

char *rt_event_trail(const char *run, const char *prefix, const char *key)
{
	struct event_walk w;

	memset(&w, 0, sizeof(w));
	w.prefix = prefix;
	w.key = key;
	events_walk(run, prefix, &w);
	free(w.text);
	return strdup(w.buf);
}

/* ---- waiting on a run that is going --------------------------------- */

int wait_until(const char *what, const char *value, double secs)
{
	char path[4200];
	double waited;

	db_path(path, sizeof(path));
	for (waited = 0; waited < secs; waited += 0.05) {
		/* the run creates the store: never open it before then */
		if (access(path, F_OK) == 0) {
			char *run = last_run();
			int reached = 0;

			if (!*run) {
				reached = 0;
			} else if (strcmp(what, "run") == 0) {
				struct rt_run r;

				rt_run_get(run, &r);
				reached = strcmp(r.state, value) == 0;
				rt_run_release(&r);
			} else if (strcmp(what, "task") == 0) {
				struct task_find f = {NULL,  NULL, 0, 0,
						      value, 0,    ""};

				tasks_walk(run, &f);
				reached = f.in_state > 0;
			} else {
				reached = count_events(run, value) > 0;
			}
			free(run);
			if (reached)
				return 1;
		}
		sleep_ms(50);
	}
	return 0;
}

int rt_steer(const char *run, const char *text)
{
	pid_t c = fork();

	ck_assert_int_ge(c, 0);
	if (c == 0) {
		if (chdir(rt_dir()) < 0)
			_exit(126);
		if (!freopen("steer.txt", "w", stdout) ||
		    !freopen("steer-err.txt", "w", stderr))
			_exit(126);
		execl(env_or("SBXLOOP_BIN", "sbxloop"), "sbxloop", "steer",
		      run, text, (char *)NULL);
		_exit(127);
	}
	return wait_code(c);
}

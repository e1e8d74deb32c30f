/*
 * What leaves sbxloop: secrets and terminal control text. Units for the
 * terminal escaping (common/termsafe.c), the JSON form of a secret and the
 * store guard (core/host/store_guard.c) in front of a recording store; end to
 * end, the real binary runs a scenario whose agent echoes the tokens or
 * writes escape sequences, and every byte the run leaves (stdout,
 * stderr, `status`, `logs`, `artifacts`, every file of the state
 * directory) is searched.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/store.h>

#include "host/core.h"
#include "host/redact.h"
#include "runtest.h"
#include "host/store_guard.h"
#include "common/termsafe.h"
#include "common/util.h"

/* ------------------------------------------------ terminal escaping */

static void assert_safe(const char *in, unsigned flags, const char *want)
{
	char *got = sl_term_safe(in, flags);

	ck_assert_ptr_nonnull(got);
	ck_assert_msg(strcmp(got, want) == 0, "'%s' became '%s', not '%s'", in,
		      got, want);
	ck_assert_int_eq(sl_term_is_safe(in, strlen(in), flags),
			 strcmp(in, want) == 0);
	free(got);
}

START_TEST(test_term_safe_escapes_every_control_visibly)
{
	/* OSC 52 clipboard write, window title, CSI, overwrite, erase */
	assert_safe("\x1b]52;c;cHduZWQ=\x07", 0, "\\x1b]52;c;cHduZWQ=\\x07");
	assert_safe("\x1b]0;pwned\x07ok", 0, "\\x1b]0;pwned\\x07ok");
	assert_safe("a\x1b[2Jb", 0, "a\\x1b[2Jb");
	assert_safe("done\rfail", 0, "done\\rfail");
	assert_safe("x\by\x7fz\x01", 0, "x\\x08y\\x7fz\\x01");
	/* C1 controls written as UTF-8 (CSI is U+009B) */
	assert_safe("\xc2\x9b"
		    "2J\xc2\x85",
		    0, "\\u009b2J\\u0085");
	/* bidi embeddings, overrides, isolates; line separators */
	assert_safe("txt\xe2\x80\xae"
		    "exe.sh",
		    0, "txt\\u202eexe.sh");
	assert_safe("\xe2\x80\xaa\xe2\x80\xac\xe2\x81\xa6\xe2\x81\xa9", 0,
		    "\\u202a\\u202c\\u2066\\u2069");
	assert_safe("a\xe2\x80\xa8"
		    "b",
		    0, "a\\u2028b");
	/* newlines and tabs: escaped in a field, kept in a text */
	assert_safe("a\nb\tc", 0, "a\\nb\\tc");
	assert_safe("a\nb\tc\r", SL_TERM_KEEP_NL, "a\nb\tc\\r");
}
END_TEST

START_TEST(test_term_safe_keeps_utf8_text_and_escapes_invalid_bytes)
{
	static const char *const kept[] = {
		"plain ascii, with \\ backslash",
		"h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac "
		"\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a \xf0\x9f\x98\x80",
		"\xe2\x80\xa6 \xc2\xb7 \xc2\xa0 \xef\xbf\xbd",
		"",
	};
	size_t i;

	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		assert_safe(kept[i], 0, kept[i]);
	/* a stray byte, a cut sequence, an overlong '/', a surrogate,
	 * past U+10FFFF: each byte shown, the next character kept */
	assert_safe("a\xff"
		    "b",
		    0, "a\\xffb");
	assert_safe("\xc3(", 0, "\\xc3(");
	assert_safe("\xe2\x9c", 0, "\\xe2\\x9c");
	assert_safe("\xc0\xaf", 0, "\\xc0\\xaf");
	assert_safe("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	assert_safe("\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80");
	/* 8-bit CSI as a raw byte is invalid UTF-8: escaped too */
	assert_safe("\x9b"
		    "2J",
		    0, "\\x9b2J");
}
END_TEST

START_TEST(test_term_safe_json_mode_writes_json_escapes)
{
	char *out;
	cJSON *v;

	assert_safe("{\"t\":\"a\xc2\x9b\x7f\"}", SL_TERM_JSON,
		    "{\"t\":\"a\\u009b\\u007f\"}");
	assert_safe("{\"t\":\"\xe2\x80\xae\"}", SL_TERM_JSON,
		    "{\"t\":\"\\u202e\"}");
	assert_safe("{\"t\":\"\xff\"}", SL_TERM_JSON, "{\"t\":\"\\ufffd\"}");
	/* the escaped JSON means the same text */
	out = sl_term_safe("{\"t\":\"x\x7fy\xc2\x85z\xe2\x80\xae\"}",
			   SL_TERM_JSON);
	v = cJSON_Parse(out);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(cJSON_GetObjectItem(v, "t")->valuestring,
			 "x\x7fy\xc2\x85z\xe2\x80\xae");
	cJSON_Delete(v);
	free(out);
}
END_TEST

/* ------------------------------------------------ secrets, units */

START_TEST(test_a_secret_is_masked_in_its_json_escaped_form)
{
	char *r;

	sl_secret_register("pa\"ss\\wo\nrd");
	r = sl_redact("{\"k\":\"pa\\\"ss\\\\wo\\nrd\"} raw pa\"ss\\wo\nrd");
	ck_assert_str_eq(r, "{\"k\":\"***\"} raw ***");
	free(r);
	sl_secret_clear();
}
END_TEST

#define TOKEN "tok_SBXguard0123456789abcdefghij"

/* A store that records every text it is handed and answers every read
 * with rows holding TOKEN (written before the secret was known). */
struct rec {
	struct sl_buf seen;
	int64_t next_id;
};

static void see(struct rec *r, const char *s)
{
	if (s) {
		sl_buf_adds(&r->seen, s);
		sl_buf_addc(&r->seen, '|');
	}
}

static void rec_destroy(void *ctx)
{
	struct rec *r = ctx;

	sl_buf_release(&r->seen);
	r->next_id = -1;
}

static int rec_run_create(void *ctx, const struct sbxloop_run_row *run,
			  struct sbxloop_error *err)
{
	struct rec *r = ctx;

	(void)err;
	see(r, run->run_id);
	see(r, run->outcome);
	see(r, run->config_json);
	see(r, run->workspace);
	see(r, run->reason);
	see(r, run->guidance_json);
	return 0;
}

static int rec_run_update(void *ctx, const struct sbxloop_run_update *u,
			  char *prev, size_t prev_len,
			  struct sbxloop_error *err)
{
	struct rec *r = ctx;

	(void)prev;
	(void)prev_len;
	(void)err;
	see(r, u->run_id);
	see(r, u->reason);
	see(r, u->workspace);
	see(r, u->guidance_json);
	return 0;
}

static const struct sbxloop_run_row tainted_run = {
	sizeof(struct sbxloop_run_row),
	"run-" TOKEN,
	"outcome " TOKEN,
	"failed",
	"{\"k\":\"" TOKEN "\"}",
	1,
	2,
	"/ws/" TOKEN,
	0,
	NULL,
	"reason " TOKEN,
	"[\"" TOKEN "\"]",
	1,
	0,
	1,
};

static int rec_run_get(void *ctx, const char *run_id,
		       int (*cb)(void *, const struct sbxloop_run_row *),
		       void *user, struct sbxloop_error *err)
{
	(void)err;
	see(ctx, run_id);
	cb(user, &tainted_run);
	return 0;
}

static int rec_run_list(void *ctx,
			int (*cb)(void *, const struct sbxloop_run_row *),
			void *user, struct sbxloop_error *err)
{
	(void)ctx;
	(void)err;
	cb(user, &tainted_run);
	return 0;
}

static void see_task(struct rec *r, const struct sbxloop_task_row *t)
{
	see(r, t->run_id);
	see(r, t->task_id);
	see(r, t->spec_json);
	see(r, t->plan_json);
	see(r, t->last_feedback);
	see(r, t->session_id);
}

static int rec_tasks_save(void *ctx, const char *run_id,
			  const struct sbxloop_task_row *tasks, size_t n,
			  struct sbxloop_error *err)
{
	size_t i;

	(void)err;
	see(ctx, run_id);
	for (i = 0; i < n; i++)
		see_task(ctx, &tasks[i]);
	return 0;
}

static int rec_task_update(void *ctx, const struct sbxloop_task_row *t,
			   struct sbxloop_error *err)
{
	(void)err;
	see_task(ctx, t);
	return 0;
}

static const struct sbxloop_task_row tainted_task = {
	sizeof(struct sbxloop_task_row),
	"run-" TOKEN,
	"t-" TOKEN,
	0,
	"done",
	"{\"title\":\"" TOKEN "\"}",
	"{\"steps\":[\"" TOKEN "\"]}",
	0,
	0,
	"feedback " TOKEN,
	"sess-" TOKEN,
};

static int rec_tasks_list(void *ctx, const char *run_id,
			  int (*cb)(void *, const struct sbxloop_task_row *),
			  void *user, struct sbxloop_error *err)
{
	(void)err;
	see(ctx, run_id);
	cb(user, &tainted_task);
	return 0;
}

static int rec_attempt_record(void *ctx, struct sbxloop_attempt_row *a,
			      struct sbxloop_error *err)
{
	struct rec *r = ctx;

	(void)err;
	see(r, a->run_id);
	see(r, a->task_id);
	see(r, a->output_json);
	a->id = ++r->next_id;
	return 0;
}

static const struct sbxloop_attempt_row tainted_attempt = {
	sizeof(struct sbxloop_attempt_row),
	7,
	"run-" TOKEN,
	"t-" TOKEN,
	"execute",
	1,
	"ok",
	"{\"report\":\"" TOKEN "\"}",
	1,
	2,
};

static int rec_attempt_latest(void *ctx, const char *run_id,
			      const char *task_id, const char *phase,
			      int (*cb)(void *,
					const struct sbxloop_attempt_row *),
			      void *user, struct sbxloop_error *err)
{
	(void)phase;
	(void)err;
	see(ctx, run_id);
	see(ctx, task_id);
	cb(user, &tainted_attempt);
	return 0;
}

static int rec_attempts_list(void *ctx, const char *run_id,
			     const char *task_id,
			     int (*cb)(void *,
				       const struct sbxloop_attempt_row *),
			     void *user, struct sbxloop_error *err)
{
	return rec_attempt_latest(ctx, run_id, task_id, NULL, cb, user, err);
}

static int rec_event_append(void *ctx, const struct sbxloop_event *ev,
			    int64_t *seq, struct sbxloop_error *err)
{
	(void)err;
	see(ctx, ev->run_id);
	see(ctx, ev->job_id);
	see(ctx, ev->data_json);
	see(ctx, ev->json);
	if (seq)
		*seq = 1;
	return 0;
}

static int rec_flush(void *ctx, struct sbxloop_error *err)
{
	(void)ctx;
	(void)err;
	return 0;
}

static const struct sbxloop_event tainted_event = {
	sizeof(struct sbxloop_event),
	1,
	1,
	"run-" TOKEN,
	"job-" TOKEN,
	"agent.message",
	"{\"content\":\"" TOKEN "\"}",
	"{\"data\":{\"content\":\"" TOKEN "\"}}",
};

static int rec_events_query(void *ctx, const struct sbxloop_event_query *q,
			    int (*cb)(void *, const struct sbxloop_event *),
			    void *user, struct sbxloop_error *err)
{
	(void)err;
	see(ctx, q->run_id);
	see(ctx, q->task_id);
	cb(user, &tainted_event);
	return 0;
}

static int rec_event_last_ts(void *ctx, const char *run_id, double *ts,
			     struct sbxloop_error *err)
{
	(void)err;
	see(ctx, run_id);
	*ts = 0;
	return 0;
}

static const struct sbxloop_store_ops rec_ops = {
	.struct_size = sizeof(struct sbxloop_store_ops),
	.destroy = rec_destroy,
	.run_create = rec_run_create,
	.run_update = rec_run_update,
	.run_get = rec_run_get,
	.run_list = rec_run_list,
	.tasks_save = rec_tasks_save,
	.task_update = rec_task_update,
	.tasks_list = rec_tasks_list,
	.attempt_record = rec_attempt_record,
	.attempt_latest = rec_attempt_latest,
	.attempts_list = rec_attempts_list,
	.event_append = rec_event_append,
	.flush = rec_flush,
	.events_query = rec_events_query,
	.event_last_ts = rec_event_last_ts,
};

/* What the core's callbacks are handed by reads through the guard. */
static struct sl_buf read_back;

static void got(const char *s)
{
	if (s) {
		sl_buf_adds(&read_back, s);
		sl_buf_addc(&read_back, '|');
	}
}

static int got_run(void *user, const struct sbxloop_run_row *r)
{
	(void)user;
	got(r->run_id);
	got(r->outcome);
	got(r->config_json);
	got(r->workspace);
	got(r->reason);
	got(r->guidance_json);
	return 0;
}

static int got_task(void *user, const struct sbxloop_task_row *t)
{
	(void)user;
	got(t->run_id);
	got(t->task_id);
	got(t->spec_json);
	got(t->plan_json);
	got(t->last_feedback);
	got(t->session_id);
	return 0;
}

static int got_attempt(void *user, const struct sbxloop_attempt_row *a)
{
	ck_assert_int_eq(a->id, 7);
	(void)user;
	got(a->run_id);
	got(a->task_id);
	got(a->output_json);
	return 0;
}

static int got_event(void *user, const struct sbxloop_event *ev)
{
	(void)user;
	got(ev->run_id);
	got(ev->job_id);
	got(ev->data_json);
	got(ev->json);
	return 0;
}

START_TEST(test_the_store_guard_masks_every_write_and_every_read)
{
	struct rec rec;
	struct sl_instance inst;
	const struct sbxloop_store_ops *ops;
	struct sbxloop_error err = {0, ""};
	struct sbxloop_run_update upd;
	struct sbxloop_task_row tasks[2];
	struct sbxloop_attempt_row a;
	struct sbxloop_event ev;
	struct sbxloop_event_query q;
	double ts;
	int64_t seq;

	memset(&rec, 0, sizeof(rec));
	memset(&inst, 0, sizeof(inst));
	memset(&read_back, 0, sizeof(read_back));
	inst.ops = &rec_ops;
	inst.ctx = &rec;
	sl_store_guard_wrap(&inst);
	ck_assert_ptr_ne(inst.ops, &rec_ops);
	ops = inst.ops;
	sl_secret_register(TOKEN);

	ck_assert_int_eq(ops->run_create(inst.ctx, &tainted_run, &err), 0);
	memset(&upd, 0, sizeof(upd));
	upd.struct_size = sizeof(upd);
	upd.run_id = tainted_run.run_id;
	upd.fields = SBXLOOP_RUN_STATE | SBXLOOP_RUN_WORKSPACE |
		     SBXLOOP_RUN_GUIDANCE;
	upd.state = "failed";
	upd.reason = "reason " TOKEN;
	upd.workspace = "/ws/" TOKEN;
	upd.guidance_json = "[\"" TOKEN "\"]";
	ck_assert_int_eq(ops->run_update(inst.ctx, &upd, NULL, 0, &err), 0);
	tasks[0] = tainted_task;
	tasks[1] = tainted_task;
	tasks[1].plan_json = NULL;
	ck_assert_int_eq(
		ops->tasks_save(inst.ctx, "run-" TOKEN, tasks, 2, &err), 0);
	ck_assert_int_eq(ops->task_update(inst.ctx, &tainted_task, &err), 0);
	a = tainted_attempt;
	a.id = 0;
	ck_assert_int_eq(ops->attempt_record(inst.ctx, &a, &err), 0);
	ck_assert_int_eq(a.id, 1); /* the store's id comes back */
	ev = tainted_event;
	ck_assert_int_eq(ops->event_append(inst.ctx, &ev, &seq, &err), 0);
	ck_assert_int_eq(seq, 1);
	memset(&q, 0, sizeof(q));
	q.struct_size = sizeof(q);
	q.run_id = "run-" TOKEN;
	q.task_id = "t-" TOKEN;

	ck_assert_int_eq(
		ops->run_get(inst.ctx, "run-" TOKEN, got_run, NULL, &err), 0);
	ck_assert_int_eq(ops->run_list(inst.ctx, got_run, NULL, &err), 0);
	ck_assert_int_eq(
		ops->tasks_list(inst.ctx, "run-" TOKEN, got_task, NULL, &err),
		0);
	ck_assert_int_eq(ops->attempt_latest(inst.ctx, "run-" TOKEN,
					     "t-" TOKEN, "execute",
					     got_attempt, NULL, &err),
			 0);
	ck_assert_int_eq(ops->attempts_list(inst.ctx, "run-" TOKEN, "t-" TOKEN,
					    got_attempt, NULL, &err),
			 0);
	ck_assert_int_eq(
		ops->events_query(inst.ctx, &q, got_event, NULL, &err), 0);
	ck_assert_int_eq(ops->event_last_ts(inst.ctx, "run-" TOKEN, &ts, &err),
			 0);
	ck_assert_int_eq(ops->flush(inst.ctx, &err), 0);

	/* the store saw every text, masked */
	ck_assert_msg(!strstr(sl_buf_str(&rec.seen), TOKEN),
		      "the store was handed the secret: %s",
		      sl_buf_str(&rec.seen));
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&rec.seen),
				     "run-***|outcome ***|{\"k\":\"***\"}|"));
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&rec.seen), "sess-***|"));
	ck_assert_ptr_nonnull(
		strstr(sl_buf_str(&rec.seen), "{\"report\":\"***\"}|"));
	/* and the core reads rows written before the secret was known
	 * masked as well */
	ck_assert_msg(!strstr(sl_buf_str(&read_back), TOKEN),
		      "a read handed back the secret: %s",
		      sl_buf_str(&read_back));
	ck_assert_ptr_nonnull(
		strstr(sl_buf_str(&read_back), "feedback ***|sess-***|"));
	ck_assert_ptr_nonnull(strstr(sl_buf_str(&read_back),
				     "job-***|{\"content\":\"***\"}"));

	sl_instance_destroy(&inst);
	ck_assert_int_eq(rec.next_id, -1); /* the plugin's destroy ran */
	sl_buf_release(&read_back);
	sl_secret_clear();
}
END_TEST

/* ------------------------------------------------ end to end */

#define GH "ghp_SBXredactGH0123456789abcdefXYZ"
#define AK "sk-ant-SBXredactAK9876543210zyxwvu"

static char dir[4096];
/* Every byte the commands of a test printed. */
static struct sl_buf printed;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/sbxloop-redact-XXXXXX",
		 env_or("TMPDIR", "/tmp"));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	rt_set_dir(dir);
	memset(&printed, 0, sizeof(printed));
}

static void teardown(void)
{
	char cmd[4200];

	sl_buf_release(&printed);
	if (getenv("SBXLOOP_KEEP_TEST_DIRS"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static void write_config(void)
{
	char buf[4096];

	snprintf(buf, sizeof(buf),
		 "state_dir: state\n"
		 "prompts_dir: %s/prompts\n"
		 "worker_path: %s\n"
		 "plugins:\n"
		 "  sandbox: local\n"
		 "  sinks: [plain]\n"
		 "agent:\n"
		 "  backend: script\n"
		 "  script: scenario.json\n"
		 "budgets:\n"
		 "  max_replans_per_task: 0\n"
		 "limits:\n"
		 "  disk_warn: 0\n"
		 "  disk_abort: 0\n"
		 "  mem_warn: 0\n"
		 "  mem_abort: 0\n",
		 env_or("SBXLOOP_SRCDIR", "."),
		 env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"));
	put_file("sbxloop.yaml", buf);
}

/*
 * The scenario of both end-to-end tests: t1 is revised once by the
 * critic, fails its check once, then passes and is accepted; t2 fails
 * its check three times and fails. @A@ and @B@ in the template become
 * `a` and `b`; @V@ the check t1 runs first (it must fail while out.txt
 * is missing), @F@ a file name t1 writes.
 */
static void write_scenario(const char *a, const char *b, const char *verify,
			   const char *fname)
{
	static const char *const tmpl =
		"["
		"{\"json\":{\"tasks\":["
		"{\"id\":\"t1\",\"title\":\"title @A@\","
		"\"description\":\"desc @B@\",\"depends_on\":[],"
		"\"acceptance_criteria\":[\"crit @A@\"],"
		"\"verify_commands\":[\"@V@\"]},"
		"{\"id\":\"t2\",\"title\":\"second @B@\","
		"\"description\":\"desc2 @A@\",\"depends_on\":[\"t1\"],"
		"\"acceptance_criteria\":[\"never\"],"
		"\"verify_commands\":[\"echo verify2 @B@; false\"]}]}},"
		"{\"json\":{\"steps\":[\"step @B@\"],\"expected_artifacts\":[],"
		"\"verify_commands\":[]}},"
		"{\"text\":\"report @A@\",\"session_id\":\"sess-@B@\"},"
		"{\"json\":{\"verdict\":\"revise\",\"issues\":[{\"severity\":"
		"\"high\",\"detail\":\"issue @A@\"}],\"feedback\":\"fb @B@\"}},"
		"{\"text\":\"report2 @A@\",\"session_id\":\"sess-@B@\"},"
		"{\"json\":{\"verdict\":\"pass\",\"issues\":[],\"feedback\":\"\"}},"
		"{\"text\":\"report3 @A@\",\"session_id\":\"sess-@B@\","
		"\"files\":{\"out.txt\":\"ok\\n\",\"@F@\":\"x\\n\"}},"
		"{\"json\":{\"verdict\":\"pass\",\"issues\":[],\"feedback\":\"\"}},"
		"{\"json\":{\"verdict\":\"accept\",\"issues\":[],"
		"\"feedback\":\"ok @A@\"}},"
		"{\"json\":{\"steps\":[\"t2 @A@\"],\"expected_artifacts\":[],"
		"\"verify_commands\":[]}},"
		"{\"text\":\"t2 @B@\",\"session_id\":\"s2-@A@\"},"
		"{\"json\":{\"verdict\":\"pass\",\"issues\":[],\"feedback\":\"\"}},"
		"{\"text\":\"t2 again @B@\",\"session_id\":\"s2-@A@\"},"
		"{\"json\":{\"verdict\":\"pass\",\"issues\":[],\"feedback\":\"\"}},"
		"{\"text\":\"t2 last @B@\",\"session_id\":\"s2-@A@\"},"
		"{\"json\":{\"verdict\":\"pass\",\"issues\":[],\"feedback\":\"\"}}"
		"]";
	struct sl_buf b_ = SL_BUF_INIT;
	const char *p;

	for (p = tmpl; *p; p++) {
		const char *sub = NULL;

		if (p[0] == '@' && p[1] && p[2] == '@') {
			sub = p[1] == 'A'   ? a
			      : p[1] == 'B' ? b
			      : p[1] == 'V' ? verify
			      : p[1] == 'F' ? fname
					    : NULL;
		}
		if (sub) {
			sl_buf_adds(&b_, sub);
			p += 2;
		} else {
			sl_buf_addc(&b_, *p);
		}
	}
	put_file("scenario.json", sl_buf_str(&b_));
	sl_buf_release(&b_);
	write_config();
}

/* Run `sbxloop ARGS` with env; its stdout and stderr join `printed`. */
static int run_cmd(const char *const *env, const char *const *args)
{
	int code = wait_code(spawn_sbxloop(env, args));
	char *out = read_file("out.txt"), *err = read_file("err.txt");

	sl_buf_addf(&printed, "== sbxloop %s\n%s\n== stderr\n%s\n", args[0],
		    out, err);
	free(out);
	free(err);
	return code;
}

/* The run's id: the one directory under state/runs. */
static char *the_run(void)
{
	char path[4200];
	struct dirent *d;
	char *id = NULL;
	DIR *dh;

	snprintf(path, sizeof(path), "%s/state/runs", dir);
	dh = opendir(path);
	ck_assert_ptr_nonnull(dh);
	while ((d = readdir(dh)))
		if (d->d_name[0] != '.')
			id = sl_xstrdup(d->d_name);
	closedir(dh);
	ck_assert_ptr_nonnull(id);
	return id;
}

/* Every file under path, appended byte for byte; their count. */
static int slurp_tree(const char *path, struct sl_buf *all)
{
	struct stat st;
	int n = 0;

	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *dh = opendir(path);
		struct dirent *d;

		ck_assert_ptr_nonnull(dh);
		while ((d = readdir(dh))) {
			char *sub;

			if (!strcmp(d->d_name, ".") ||
			    !strcmp(d->d_name, ".."))
				continue;
			sub = sl_xasprintf("%s/%s", path, d->d_name);
			sl_buf_adds(all, sub); /* names count as well */
			n += slurp_tree(sub, all);
			free(sub);
		}
		closedir(dh);
	} else if (S_ISREG(st.st_mode)) {
		size_t len = 0;
		char *data = sl_read_file(path, &len, 1u << 30);

		ck_assert_msg(data != NULL, "cannot read %s", path);
		sl_buf_add(all, data, len);
		free(data);
		n = 1;
	}
	return n;
}

/* The token, its first and its last 12 characters, nowhere in hay. */
static void assert_no_trace(const char *what, const struct sl_buf *hay,
			    const char *token)
{
	size_t n = strlen(token);
	const char *hit;

	hit = memmem(hay->buf, hay->len, token, n);
	if (!hit)
		hit = memmem(hay->buf, hay->len, token, 12);
	if (!hit)
		hit = memmem(hay->buf, hay->len, token + n - 12, 12);
	ck_assert_msg(!hit, "%s holds (part of) %s: ...%.80s...", what, token,
		      hit ? (hit > hay->buf + 40 ? hit - 40 : hay->buf) : "");
}

START_TEST(test_tokens_an_agent_echoes_are_stored_and_shown_masked)
{
	static const char *const env[] = {"GH_TOKEN=" GH,
					  "ANTHROPIC_API_KEY=" AK, NULL};
	static const char *const no_env[] = {
		"GH_TOKEN=", "ANTHROPIC_API_KEY=", NULL};
	struct sl_buf files = SL_BUF_INIT;
	char state[4200], *run, *s;
	int n;

	write_scenario(GH, AK, "echo verify " GH "; test -f out.txt",
		       "file.txt");
	{
		const char *args[] = {"run", "ship it with " GH " and " AK,
				      "--no-tui", NULL};

		ck_assert_int_eq(run_cmd(env, args), 1);
	}
	ck_assert_ptr_nonnull(strstr(printed.buf, "finished: failed"));
	ck_assert_ptr_nonnull(strstr(printed.buf, "t1: done  (title ***)"));
	run = the_run();
	{
		const char *cmds[][4] = {
			{"status", run, NULL},    {"status", run, "--json"},
			{"status", NULL},         {"status", "--json", NULL},
			{"logs", run, NULL},      {"logs", run, "--json"},
			{"artifacts", run, NULL},
		};
		size_t i;

		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			ck_assert_int_eq(run_cmd(env, cmds[i]), 0);
			/* a reader that does not have the tokens */
			ck_assert_int_eq(run_cmd(no_env, cmds[i]), 0);
		}
	}
	/* the echoes were there to hide: the status shows them masked */
	ck_assert_ptr_nonnull(strstr(printed.buf, "outcome: ship it with *** "
						  "and ***"));
	ck_assert_ptr_nonnull(strstr(printed.buf, "title ***"));
	assert_no_trace("the output", &printed, GH);
	assert_no_trace("the output", &printed, AK);

	/* every byte of the state directory, database and WAL included */
	snprintf(state, sizeof(state), "%s/state", dir);
	n = slurp_tree(state, &files);
	ck_assert_int_ge(n, 1);
	assert_no_trace("the state directory", &files, GH);
	assert_no_trace("the state directory", &files, AK);
	sl_buf_release(&files);

	/* each row really was handed the echo, masked */
	{
		struct rt_run r;
		struct rt_task t;

		rt_run_get(run, &r);
		ck_assert_str_eq(r.outcome, "ship it with *** and ***");
		rt_run_release(&r);
		ck_assert_int_eq(rt_task_get(run, "t1", &t), 0);
		ck_assert_msg(strcasestr(t.spec_json, "title ***") &&
				      strcasestr(t.plan_json, "step ***") &&
				      strcmp(t.session_id, "sess-***") == 0,
			      "t1: %s %s %s", t.spec_json, t.plan_json,
			      t.session_id);
		rt_task_release(&t);
	}
	s = rt_task_field(run, "t2", "last_feedback");
	ck_assert_msg(strstr(s, "verify2 ***"), "t2 feedback: %s", s);
	free(s);
	{
		static const char *const want[][2] = {
			{"decompose", "title ***"},  {"plan", "step ***"},
			{"execute", "report ***"},   {"execute", "sess-***"},
			{"scrutinize", "issue ***"}, {"scrutinize", "fb ***"},
			{"verify", "verify ***"},    {"verify", "verify2 ***"},
			{"validate", "ok ***"},
		};
		size_t i;

		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			ck_assert_msg(rt_attempt_count(run, NULL, want[i][0],
						       NULL, want[i][1]) > 0,
				      "no %s attempt holds '%s'", want[i][0],
				      want[i][1]);
	}
	free(run);
}
END_TEST

/* JSON text (inside a JSON string) that a terminal would act on. */
#define EVIL                                                                  \
	"\\u001b]52;c;cHduZWQ=\\u0007\\u001b]0;pwned\\u0007\\u001b[2J"        \
	"\\r\\b\\u007f\\u009b6n\\u202eevil"

/* The bytes none of the printed text may hold. */
static void assert_inert(const char *what, const char *text, size_t len)
{
	static const char *const bad[] = {
		"\x1b", "\x07", "\r", "\b", "\x7f", "\xc2\x9b", "\xe2\x80\xae",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *hit = memmem(text, len, bad[i], strlen(bad[i]));

		ck_assert_msg(!hit, "%s holds byte 0x%02x at %zu: ...%.60s",
			      what, (unsigned char)bad[i][0],
			      hit ? (size_t)(hit - text) : 0,
			      hit ? (hit > text + 30 ? hit - 30 : text) : "");
	}
}

START_TEST(test_agent_text_reaches_the_terminal_inert)
{
	static const char *const env[] = {NULL};
	char *run, *out;
	cJSON *root, *tasks, *t;
	int found = 0;

	write_scenario(EVIL, EVIL,
		       "printf '\\\\033]0;verify\\\\007\\\\r'; "
		       "test -f out.txt",
		       "evil\\u001b[2J\\u202e.txt");
	{
		const char *args[] = {"run",
				      "fix \x1b]0;t\x07 it\r\xe2\x80\xae",
				      "--no-tui", NULL};

		ck_assert_int_eq(run_cmd(env, args), 1);
	}
	run = the_run();
	{
		const char *cmds[][4] = {
			{"status", run, NULL},
			{"status", NULL},
			{"logs", run, NULL},
			{"artifacts", run, NULL},
		};
		size_t i;

		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			ck_assert_int_eq(run_cmd(env, cmds[i]), 0);
	}
	assert_inert("the output", printed.buf, printed.len);
	/* shown, escaped: the transcript, the summary, status and logs */
	ck_assert_ptr_nonnull(strstr(printed.buf, "report \\x1b]52;c;"));
	ck_assert_ptr_nonnull(
		strstr(printed.buf, "(title \\x1b]52;c;cHduZWQ=\\x07"));
	ck_assert_ptr_nonnull(strstr(printed.buf, "\\u202eevil"));
	ck_assert_ptr_nonnull(strstr(printed.buf, "evil\\x1b[2J\\u202e.txt"));
	ck_assert_ptr_nonnull(strstr(printed.buf, "verify2 \\x1b]52;c;"));
	ck_assert_ptr_nonnull(strstr(printed.buf, "outcome: fix \\x1b]0;t"));

	/* the JSON outputs keep the text: same bytes once parsed */
	sl_buf_reset(&printed);
	{
		const char *args[] = {"status", run, "--json", NULL};

		ck_assert_int_eq(run_cmd(env, args), 0);
	}
	out = read_file("out.txt");
	assert_inert("status --json", out, strlen(out));
	root = cJSON_Parse(out);
	ck_assert_msg(root != NULL, "status --json: %s", out);
	tasks = cJSON_GetObjectItem(root, "tasks");
	cJSON_ArrayForEach (t, tasks) {
		const char *title =
			cJSON_GetStringValue(cJSON_GetObjectItem(t, "title"));

		if (title && strstr(title, "title \x1b]52;c;cHduZWQ=\x07"))
			found = 1;
	}
	ck_assert_msg(found, "no title kept as text: %s", out);
	cJSON_Delete(root);
	free(out);
	{
		const char *args[] = {"logs", run, "--json", NULL};
		char *line, *save = NULL;
		int lines = 0;

		ck_assert_int_eq(run_cmd(env, args), 0);
		out = read_file("out.txt");
		for (line = strtok_r(out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			cJSON *ev = cJSON_Parse(line);

			ck_assert_msg(ev != NULL, "not JSON: %s", line);
			assert_inert("logs --json", line, strlen(line));
			cJSON_Delete(ev);
			lines++;
		}
		ck_assert_int_gt(lines, 10);
		free(out);
	}
	free(run);
}
END_TEST

static Suite *redact_suite(void)
{
	Suite *s = suite_create("redact");
	TCase *tc;

	tc = tcase_create("units");
	tcase_add_test(tc, test_term_safe_escapes_every_control_visibly);
	tcase_add_test(
		tc, test_term_safe_keeps_utf8_text_and_escapes_invalid_bytes);
	tcase_add_test(tc, test_term_safe_json_mode_writes_json_escapes);
	tcase_add_test(tc, test_a_secret_is_masked_in_its_json_escaped_form);
	tcase_add_test(tc,
		       test_the_store_guard_masks_every_write_and_every_read);
	suite_add_tcase(s, tc);

	tc = tcase_create("e2e");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(
		tc, test_tokens_an_agent_echoes_are_stored_and_shown_masked);
	tcase_add_test(tc, test_agent_text_reaches_the_terminal_inert);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(redact_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * sbxloop-worker's contract, protocol and shell kinds: the job file and
 * its refusals, exit codes, the events file and its stdout mirror,
 * signals and the parent's death, and shell checks and batches with
 * their timeouts. Every test runs the real binary as a subprocess.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "worker-support.h"

/* ---------------------------------------------------------------- */

static void expect_usage_error(const char *job, const char *needle);

START_TEST(test_version_prints_program_and_package_version)
{
	char cmd[600], *out;

	snprintf(cmd, sizeof(cmd), "'%s' version > '%s'",
		 getenv("SBXLOOP_WORKER"), path_in("v"));
	ck_assert_int_eq(system(cmd), 0);
	out = slurp(path_in("v"));
	ck_assert_str_eq(out, "sbxloop-worker " PACKAGE_VERSION "\n");
	free(out);
}
END_TEST

START_TEST(test_shell_check_nonzero_exit_is_ok_result)
{
	struct run r;
	const cJSON *d;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"sh\","
			    "\"-c\",\"echo out; echo err >&2; exit 3\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "job_id"), "job-1");
	ck_assert_int_eq(rint_(&r, "exit_code"), 3);
	ck_assert_str_eq(rstr(&r, "output_text"), "out\n\nerr\n");
	ck_assert_int_eq(count_events(&r, "worker.start", &d), 1);
	ck_assert_str_eq(dstr(d, "kind"), "shell.check");
	ck_assert_int_eq(count_events(&r, "worker.result", &d), 1);
	ck_assert_str_eq(dstr(d, "status"), "ok");
	ck_assert_int_eq(count_events(&r, "worker.end", NULL), 1);
	run_free(&r);
}
END_TEST

START_TEST(test_events_sorted_enveloped_mirrored_to_stdout)
{
	struct run r;
	const cJSON *ev;
	char *last, *res;
	cJSON *fin;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"true\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	cJSON_ArrayForEach (ev, r.events_list) {
		ck_assert_int_eq(cJSON_GetObjectItem(ev, "v")->valueint, 1);
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(ev, "ts")));
		ck_assert_str_eq(dstr(ev, "run_id"), "run-1");
		ck_assert_str_eq(dstr(ev, "job_id"), "job-1");
		ck_assert(cJSON_IsObject(cJSON_GetObjectItem(ev, "data")));
	}
	/* compact, keys sorted: every line opens with "data" */
	ck_assert(strncmp(r.events, "{\"data\":{", 9) == 0);
	ck_assert_ptr_null(strstr(r.events, ", "));
	/* stdout = the same event lines, then one result line */
	ck_assert(strncmp(r.out, r.events, strlen(r.events)) == 0);
	last = r.out + strlen(r.events);
	fin = cJSON_Parse(last);
	ck_assert_ptr_nonnull(fin);
	ck_assert_int_eq(cJSON_GetObjectItem(fin, "sbxloop_result")->valueint,
			 1);
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(fin, "result"), r.result,
				1));
	cJSON_Delete(fin);
	res = slurp(path_in("res.json"));
	ck_assert_ptr_nonnull(res);
	free(res);
	ck_assert_int_eq(access(path_in("res.json.tmp"), F_OK), -1);
	run_free(&r);
}
END_TEST

START_TEST(test_job_from_stdin)
{
	struct run r;

	put("stdin", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"echo\","
			      "\"from-stdin\"]}");
	run_worker(&r, NULL, "--job", "-", NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "output_text"), "from-stdin\n");
	run_free(&r);
}
END_TEST

START_TEST(test_timeout_kills_forked_sleeper)
{
	struct run r;
	char job[512];

	snprintf(job, sizeof(job),
		 JOB_HEAD "\"kind\":\"shell.check\","
			  "\"timeout_s\":0.5,\"argv\":[\"sh\",\"-c\","
			  "\"sleep 300 & echo $! > %s; sleep 300\"]}",
		 path_in("sleeper"));
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_str_eq(errfield(&r, "type"), "Timeout");
	ck_assert_str_eq(errfield(&r, "message"), "job timed out");
	ck_assert(r.elapsed < 10);
	ck_assert_int_gt(read_pid("sleeper"), 0);
	ck_assert(wait_gone(read_pid("sleeper"), 2));
	ck_assert_int_eq(count_events(&r, "worker.error", NULL), 1);
	run_free(&r);
}
END_TEST

START_TEST(test_timeout_escalates_to_sigkill_after_grace)
{
	struct run r;
	char job[512];

	snprintf(job, sizeof(job),
		 JOB_HEAD "\"kind\":\"shell.check\","
			  "\"timeout_s\":0.3,\"argv\":[\"sh\",\"-c\","
			  "\"trap '' TERM; sleep 300 & echo $! > %s; wait\"]}",
		 path_in("sleeper"));
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert(r.elapsed >= 2.0);
	ck_assert(r.elapsed < 10);
	ck_assert(wait_gone(read_pid("sleeper"), 2));
	run_free(&r);
}
END_TEST

START_TEST(test_background_leftovers_die_with_the_command)
{
	struct run r;
	char job[512];

	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.check\","
		 "\"argv\":[\"sh\",\"-c\",\"sleep 300 & echo $! > %s\"]}",
		 path_in("sleeper"));
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert(r.elapsed < 10);
	ck_assert(wait_gone(read_pid("sleeper"), 2));
	run_free(&r);
}
END_TEST

START_TEST(test_shell_check_missing_program_is_error_result)
{
	struct run r;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"/nonexistent/prog\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "SpawnError");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "'/nonexistent/prog'"));
	run_free(&r);
}
END_TEST

START_TEST(test_batch_runs_in_order_reports_first_failure)
{
	struct run r;
	const cJSON *list, *c;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"commands\":["
			    "\"echo one > f\",\"cat f; exit 4\",\"exit 5\","
			    "\"echo err >&2\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(rint_(&r, "exit_code"), 4);
	list = cJSON_GetObjectItem(r.result, "output_json");
	ck_assert_int_eq(cJSON_GetArraySize(list), 4);
	c = cJSON_GetArrayItem(list, 1);
	ck_assert_str_eq(dstr(c, "command"), "cat f; exit 4");
	ck_assert_str_eq(dstr(c, "output"), "one\n");
	ck_assert_int_eq(cJSON_GetObjectItem(c, "exit_code")->valueint, 4);
	c = cJSON_GetArrayItem(list, 3);
	ck_assert_str_eq(dstr(c, "output"), "err\n");
	run_free(&r);
}
END_TEST

/*
 * An argv command runs without a shell: its arguments arrive verbatim
 * (no globbing, no variables), it is shown joined, and a program that
 * is not there is that command's 127, the batch going on.
 */
START_TEST(test_batch_runs_argv_commands_without_a_shell)
{
	struct run r;
	const cJSON *list, *c;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"commands\":["
			    "[\"printf\",\"%s|%s\",\"./*\",\"$HOME\"],"
			    "[\"no-such-program-here\",\"x\"],"
			    "\"echo after\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(rint_(&r, "exit_code"), 127);
	list = cJSON_GetObjectItem(r.result, "output_json");
	ck_assert_int_eq(cJSON_GetArraySize(list), 3);
	c = cJSON_GetArrayItem(list, 0);
	ck_assert_str_eq(dstr(c, "command"), "printf %s|%s ./* $HOME");
	ck_assert_str_eq(dstr(c, "output"), "./*|$HOME");
	ck_assert_int_eq(cJSON_GetObjectItem(c, "exit_code")->valueint, 0);
	c = cJSON_GetArrayItem(list, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(c, "exit_code")->valueint, 127);
	ck_assert_ptr_nonnull(strstr(dstr(c, "output"),
				     "cannot run 'no-such-program-here'"));
	c = cJSON_GetArrayItem(list, 2);
	ck_assert_str_eq(dstr(c, "output"), "after\n");
	run_free(&r);
}
END_TEST

START_TEST(test_shell_batch_clips_output_head_and_tail)
{
	struct run r;
	const char *out;

	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.batch\",\"commands\":["
		   "\"echo START; head -c 200000 /dev/zero | tr '\\\\0' x; "
		   "echo; echo END\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	out = dstr(cJSON_GetArrayItem(
			   cJSON_GetObjectItem(r.result, "output_json"), 0),
		   "output");
	ck_assert_ptr_nonnull(out);
	ck_assert(strncmp(out, "START\n", 6) == 0);
	ck_assert_ptr_nonnull(strstr(out, "...(clipped"));
	ck_assert(strlen(out) < 7000);
	ck_assert_str_eq(out + strlen(out) - 4, "END\n");
	run_free(&r);
}
END_TEST

START_TEST(test_shell_batch_command_timeout_times_out_the_job)
{
	struct run r;

	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.batch\","
		   "\"command_timeout_s\":0.3,\"commands\":[\"echo a\","
		   "\"sleep 30\",\"touch never\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_str_eq(errfield(&r, "type"), "Timeout");
	ck_assert_int_eq(cJSON_GetArraySize(
				 cJSON_GetObjectItem(r.result, "output_json")),
			 2);
	ck_assert_int_eq(access(path_in("work/never"), F_OK), -1);
	run_free(&r);
}
END_TEST

/*
 * A FIFO where a batch's command reads (an agent's `mkfifo .gitignore`
 * under the review's `git status`) holds it only without
 * release_fifos: with it, the FIFOs under the job's cwd are opened for
 * writing once the command has run a second, so the reader goes on (an
 * empty file) and the next command runs; without, the command runs to
 * its timeout. The field is the batch's alone.
 */
START_TEST(test_shell_batch_release_fifos_lets_a_reader_of_one_go_on)
{
	struct run r;
	const cJSON *out;
	double t0;

	ck_assert_int_eq(mkfifo(path_in("work/.gitignore"), 0644), 0);
	t0 = now();
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"release_fifos\":true,"
			    "\"command_timeout_s\":30,\"commands\":[[\"cat\","
			    "\".gitignore\"],[\"echo\",\"after\"]]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_double_lt(now() - t0, 10.0);
	out = cJSON_GetObjectItem(r.result, "output_json");
	ck_assert_int_eq(cJSON_GetArraySize(out), 2);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
				 cJSON_GetArrayItem(out, 1), "output")),
			 "after\n");
	run_free(&r);
	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.batch\",\"command_timeout_s\":1.5,"
		   "\"commands\":[[\"cat\",\".gitignore\"]]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	run_free(&r);
	expect_usage_error(JOB_HEAD
			   "\"kind\":\"shell.check\","
			   "\"release_fifos\":true,\"argv\":[\"true\"]}",
			   "release_fifos");
	expect_usage_error(JOB_HEAD
			   "\"kind\":\"shell.batch\","
			   "\"release_fifos\":1,\"commands\":[\"true\"]}",
			   "must be a boolean");
}
END_TEST

START_TEST(test_shell_batch_job_timeout_bounds_all_commands)
{
	struct run r;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"timeout_s\":0.5,"
			    "\"commands\":[\"sleep 0.3\",\"sleep 0.3\","
			    "\"touch never\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert(r.elapsed < 10);
	ck_assert_int_eq(access(path_in("work/never"), F_OK), -1);
	run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */

static void expect_usage_error(const char *job, const char *needle)
{
	struct run r;

	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 64);
	ck_assert_msg(strstr(r.err, needle) != NULL, "stderr '%s' lacks '%s'",
		      r.err, needle);
	ck_assert_ptr_null(r.result);
	run_free(&r);
}

START_TEST(test_malformed_jobs_exit_64_with_a_reason)
{
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"tr",
			   "not valid JSON");
	expect_usage_error("[1,2]", "must be a JSON object");
	expect_usage_error("{\"v\":2,\"job_id\":\"j\",\"run_id\":\"r\","
			   "\"kind\":\"shell.check\",\"argv\":[\"true\"]}",
			   "'v' must be 1");
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				    "[\"true\"],\"colour\":1}",
			   "unknown field 'colour'");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				    "\"x\",\"argv\":[\"true\"]}",
			   "field 'argv' is not allowed for kind "
			   "'agent.session'");
	expect_usage_error(JOB_HEAD "\"kind\":\"launch.rocket\"}",
			   "unknown job kind 'launch.rocket'");
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[]}",
			   "field 'argv' must be a non-empty list");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\"}",
			   "field 'prompt' is required");
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.batch\",\"commands\":"
				    "[[]]}",
			   "field 'commands' must be a non-empty list");
	expect_usage_error(JOB_HEAD "\"kind\":\"shell.batch\",\"commands\":"
				    "[[\"ls\",1]]}",
			   "field 'commands' must be a non-empty list");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				    "\"x\",\"host_tools\":[{\"name\":\"t\"}]}",
			   "host tools are not supported");
	expect_usage_error(JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				    "\"x\",\"permission_mode\":\"god\"}",
			   "'permission_mode'");
	expect_usage_error("{\"v\":1,\"run_id\":\"r\","
			   "\"kind\":\"shell.check\",\"argv\":[\"true\"]}",
			   "field 'job_id' is required");
}
END_TEST

/* ---- upstream-shaped jobs and timed-out batches (issue 11, item 13) ---- */

/*
 * A job as upstream's host serialises its one JobRequest model: every
 * field present, the unused ones at their defaults (UPSTREAM 7.2).
 */
static char *upstream_job(const char *kind, const char *key, cJSON *value)
{
	cJSON *j = cJSON_Parse(
		"{\"v\":1,\"job_id\":\"job-1\",\"run_id\":\"run-1\","
		"\"timeout_s\":1800,\"cwd\":null,\"prompt\":null,"
		"\"system_message\":null,\"drop_system_sections\":[],"
		"\"model\":null,\"resume_session_id\":null,"
		"\"permission_mode\":\"auto\",\"expect\":\"text\","
		"\"max_tool_calls\":null,\"host_tools\":[],"
		"\"host_tools_dir\":null,\"host_tool_timeout_s\":120,"
		"\"available_tools\":null,\"argv\":null,\"commands\":null,"
		"\"command_timeout_s\":null,\"op\":null,\"params\":{}}");
	char *text;

	ck_assert_ptr_nonnull(j);
	cJSON_AddStringToObject(j, "kind", kind);
	if (key) {
		if (cJSON_GetObjectItem(j, key))
			cJSON_ReplaceItemInObject(j, key, value);
		else
			cJSON_AddItemToObject(j, key, value);
	}
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return text;
}

START_TEST(test_upstream_shaped_jobs_at_defaults_are_accepted)
{
	struct run r;
	char *job;
	cJSON *j;

	job = upstream_job("shell.check", "argv", cJSON_Parse("[\"true\"]"));
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "shell.check: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
	free(job);

	job = upstream_job("shell.batch", "commands",
			   cJSON_Parse("[\"true\"]"));
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "shell.batch: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
	free(job);

	job = upstream_job("github.op", "op", cJSON_CreateString("repo.get"));
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "github.op: exit %d: %s", r.rc, r.err);
	/* accepted: it reaches the executor, which wants a token */
	ck_assert_str_eq(errfield(&r, "type"), "GitHubAuthError");
	run_free(&r);
	free(job);

	put("scenario.json", "[{\"text\":\"hello\"}]");
	job = upstream_job("agent.session", "prompt", cJSON_CreateString("x"));
	j = cJSON_Parse(job);
	free(job);
	cJSON_AddStringToObject(j, "backend", "script");
	cJSON_AddStringToObject(j, "script", path_in("scenario.json"));
	job = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	run_worker(&r, job, NULL);
	ck_assert_msg(r.rc == 0, "agent.session: exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "hello");
	run_free(&r);
	free(job);
}
END_TEST

/* Another kind's field off its default is a conflict, named. */
START_TEST(test_another_kinds_field_off_its_default_is_refused)
{
	static const struct {
		const char *kind, *primary, *pvalue, *key, *value, *msg;
	} cases[] = {
		{"shell.check", "argv", "[\"true\"]", "expect", "\"json\"",
		 "field 'expect' is not allowed for kind 'shell.check' (it "
		 "may only be null or \"text\", its default)"},
		{"agent.session", "prompt", "\"x\"", "params", "{\"a\":1}",
		 "field 'params' is not allowed for kind 'agent.session' (it "
		 "may only be null or {}, its default)"},
		{"shell.batch", "commands", "[\"true\"]", "host_tools",
		 "[{\"name\":\"t\"}]",
		 "field 'host_tools' is not allowed for kind 'shell.batch' "
		 "(it may only be null or [], its default)"},
		{"github.op", "op", "\"repo.get\"", "host_tool_timeout_s", "5",
		 "field 'host_tool_timeout_s' is not allowed for kind "
		 "'github.op' (it may only be null or 120, its default)"},
		{"shell.check", "argv", "[\"true\"]", "prompt", "\"hi\"",
		 "field 'prompt' is not allowed for kind 'shell.check' (it "
		 "may only be null, its default)"},
		{"shell.check", "argv", "[\"true\"]", "permission_mode",
		 "\"read_only\"", "field 'permission_mode' is not allowed"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *job = upstream_job(cases[i].kind, cases[i].primary,
					 cJSON_Parse(cases[i].pvalue));
		cJSON *j = cJSON_Parse(job);
		char *text;

		cJSON_ReplaceItemInObject(j, cases[i].key,
					  cJSON_Parse(cases[i].value));
		text = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
		expect_usage_error(text, cases[i].msg);
		free(text);
		free(job);
	}
}
END_TEST

/*
 * A batch command stopped for time reports the status it really ended
 * with and the signal; so does the job, never exit_code 0.
 */
START_TEST(test_timed_out_batch_reports_the_real_status_and_signal)
{
	struct run r;
	const cJSON *out, *e;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"command_timeout_s\":"
			    "0.3,\"commands\":[\"true\",\"sleep 30\"]}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_int_eq(rint_(&r, "exit_code"), 143);
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"),
				     "command 'sleep 30' ran out of time"));
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"), "by SIGTERM"));
	out = cJSON_GetObjectItem(r.result, "output_json");
	e = cJSON_GetArrayItem(out, 0);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "exit_code")->valueint, 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(e, "timed_out"));
	e = cJSON_GetArrayItem(out, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "exit_code")->valueint, 143);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "timed_out")));
	ck_assert_str_eq(dstr(e, "signal"), "SIGTERM");
	run_free(&r);

	/* a command that ignores SIGTERM is killed: 137, SIGKILL */
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.batch\",\"command_timeout_s\":"
			    "0.3,\"commands\":[\"trap '' TERM; sleep 30\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_int_eq(rint_(&r, "exit_code"), 137);
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(r.result, "output_json"),
			       0);
	ck_assert_str_eq(dstr(e, "signal"), "SIGKILL");
	run_free(&r);

	/* shell.check keeps the status of a timed-out program too */
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"timeout_s\":0.3,"
			    "\"argv\":[\"sleep\",\"30\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_int_eq(rint_(&r, "exit_code"), 143);
	run_free(&r);
}
END_TEST

START_TEST(test_every_truncation_of_a_job_is_a_clean_64)
{
	static const char job[] = JOB_HEAD
		"\"kind\":\"agent.session\","
		"\"prompt\":\"p\",\"expect\":\"json\",\"timeout_s\":5}";
	size_t cut;

	for (cut = 0; cut < sizeof(job) - 1; cut += 3) {
		struct run r;
		char *part = strndup(job, cut);

		run_worker(&r, part, NULL);
		ck_assert_msg(r.rc == 64, "cut at %zu: exit %d", cut, r.rc);
		ck_assert_msg(strncmp(r.err, "error: ", 7) == 0,
			      "cut at %zu: stderr '%s'", cut, r.err);
		free(part);
		run_free(&r);
	}
}
END_TEST

START_TEST(test_oversized_job_is_refused)
{
	struct run r;
	FILE *f = fopen(path_in("job.json"), "w");
	char chunk[1024];
	int i;

	memset(chunk, 'x', sizeof(chunk));
	fputs(JOB_HEAD "\"kind\":\"shell.check\",\"argv\":[\"", f);
	for (i = 0; i < 5 * 1024; i++)
		fwrite(chunk, 1, sizeof(chunk), f);
	fputs("\"]}", f);
	fclose(f);
	run_worker(&r, NULL, NULL);
	ck_assert_int_eq(r.rc, 64);
	ck_assert_ptr_nonnull(strstr(r.err, "larger than"));
	run_free(&r);
}
END_TEST

START_TEST(test_usage_errors_exit_64)
{
	char cmd[800];

	snprintf(cmd, sizeof(cmd), "'%s' run --job x --events y 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd),
		 "'%s' run --job x --events y --result z "
		 "--frobnicate 1 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd),
		 "'%s' run --job x --events y --result z "
		 "--heartbeat soon 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd), "'%s' fly 2>/dev/null",
		 getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
	snprintf(cmd, sizeof(cmd),
		 "'%s' run --job /nonexistent/job.json "
		 "--events %s --result %s 2>/dev/null",
		 getenv("SBXLOOP_WORKER"), path_in("e"), path_in("r"));
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 64);
}
END_TEST

START_TEST(test_bad_cwd_exits_64)
{
	struct run r;

	put("job.json", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				 "[\"true\"]}");
	run_worker(&r, NULL, "--cwd", "/nonexistent/dir", NULL);
	ck_assert_int_eq(r.rc, 64);
	ck_assert_ptr_nonnull(strstr(r.err, "'/nonexistent/dir'"));
	run_free(&r);
}
END_TEST

START_TEST(test_unwritable_result_exits_70)
{
	struct run r;

	put("job.json", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				 "[\"true\"]}");
	put("blocker", "a file, not a directory");
	run_worker(&r, NULL, "--result", path_in("blocker/res.json"), NULL);
	ck_assert_int_eq(r.rc, 70);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot write"));
	run_free(&r);
}
END_TEST

START_TEST(test_unopenable_events_file_exits_70)
{
	struct run r;

	put("job.json", JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
				 "[\"true\"]}");
	put("blocker", "a file, not a directory");
	run_worker(&r, NULL, "--events", path_in("blocker/ev.jsonl"), NULL);
	ck_assert_int_eq(r.rc, 70);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot open events file"));
	ck_assert_ptr_null(r.result);
	run_free(&r);
}
END_TEST

START_TEST(test_sigterm_kills_the_job_and_exits_70)
{
	char job[512];
	pid_t worker, sleeper;
	int status;

	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.check\","
		 "\"argv\":[\"sh\",\"-c\",\"sleep 60 & echo $! > %s; wait\"]}",
		 path_in("sleeper"));
	put("job.json", "%s", job);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		exec_worker_quietly();
	}
	while (read_pid("sleeper") <= 0)
		usleep(10000);
	sleeper = read_pid("sleeper");
	ck_assert_int_eq(kill(worker, SIGTERM), 0);
	ck_assert_int_eq(waitpid(worker, &status, 0), worker);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 70);
	ck_assert(wait_gone(sleeper, 3));
	ck_assert_int_eq(access(path_in("res.json"), F_OK), -1);
}
END_TEST

/* The github.op contract itself is test-worker-github.c's. */
START_TEST(test_github_op_without_a_token_is_a_typed_auth_error)
{
	struct run r;
	const cJSON *d;

	run_worker(&r,
		   JOB_HEAD "\"kind\":\"github.op\",\"op\":\"repo.get\","
			    "\"params\":{\"repo\":\"a/b\"}}",
		   NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "GitHubAuthError");
	ck_assert_str_eq(errfield(&r, "message"),
			 "GH_TOKEN (or GITHUB_TOKEN) is not set in the github "
			 "sandbox");
	ck_assert_int_eq(count_events(&r, "worker.error", &d), 1);
	ck_assert_str_eq(dstr(d, "error_type"), "GitHubAuthError");
	run_free(&r);
}
END_TEST

START_TEST(test_long_event_lines_are_capped)
{
	struct run r;
	FILE *f = fopen(path_in("scenario.json"), "w");
	char job[1024], *line, *save;
	int i;

	fputs("[{\"text\":\"", f);
	for (i = 0; i < 300 * 1024; i++)
		fputc('a' + i % 26, f);
	fputs("\"}]", f);
	fclose(f);
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_uint_eq(strlen(rstr(&r, "output_text")), 300 * 1024);
	for (line = strtok_r(r.events, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		ck_assert_uint_le(strlen(line), 256 * 1024);
	ck_assert_int_eq(count_events(&r, "agent.message", NULL), 1);
	run_free(&r);
}
END_TEST

START_TEST(test_worker_dies_with_its_parent)
{
	char job[512];
	pid_t mid, worker, sleeper;
	int status;

	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.check\","
		 "\"argv\":[\"sh\",\"-c\",\"echo $$ > %s; exec sleep 60\"]}",
		 path_in("sleeper"));
	put("job.json", "%s", job);
	mid = fork();
	ck_assert_int_ge(mid, 0);
	if (mid == 0) {
		pid_t w = fork();

		if (w == 0) {
			exec_worker_quietly();
		}
		put("worker.pid", "%d\n", (int)w);
		/* wait until the job runs, then vanish */
		while (access(path_in("sleeper"), F_OK) < 0)
			usleep(10000);
		usleep(100000);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(mid, &status, 0), mid);
	worker = read_pid("worker.pid");
	sleeper = read_pid("sleeper");
	ck_assert_int_gt(worker, 0);
	ck_assert_int_gt(sleeper, 0);
	ck_assert(wait_gone(worker, 5));
	ck_assert(wait_gone(sleeper, 5));
	ck_assert_int_eq(access(path_in("res.json"), F_OK), -1);
}
END_TEST

/* ---------------------------------------------------------------- */

static Suite *worker_protocol_suite(void)
{
	Suite *s = suite_create("worker protocol");
	TCase *tc;

	tc = tcase_create("protocol");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_version_prints_program_and_package_version);
	tcase_add_test(tc, test_events_sorted_enveloped_mirrored_to_stdout);
	tcase_add_test(tc, test_job_from_stdin);
	tcase_add_test(tc, test_malformed_jobs_exit_64_with_a_reason);
	tcase_add_test(tc, test_upstream_shaped_jobs_at_defaults_are_accepted);
	tcase_add_test(tc,
		       test_another_kinds_field_off_its_default_is_refused);
	tcase_add_test(tc, test_every_truncation_of_a_job_is_a_clean_64);
	tcase_add_test(tc, test_oversized_job_is_refused);
	tcase_add_test(tc, test_usage_errors_exit_64);
	tcase_add_test(tc, test_bad_cwd_exits_64);
	tcase_add_test(tc, test_unwritable_result_exits_70);
	tcase_add_test(tc, test_unopenable_events_file_exits_70);
	tcase_add_test(tc, test_sigterm_kills_the_job_and_exits_70);
	tcase_add_test(tc,
		       test_github_op_without_a_token_is_a_typed_auth_error);
	tcase_add_test(tc, test_long_event_lines_are_capped);
	tcase_add_test(tc, test_worker_dies_with_its_parent);
	suite_add_tcase(s, tc);

	tc = tcase_create("shell");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_shell_check_nonzero_exit_is_ok_result);
	tcase_add_test(tc, test_shell_check_missing_program_is_error_result);
	tcase_add_test(tc, test_timeout_kills_forked_sleeper);
	tcase_add_test(tc, test_timeout_escalates_to_sigkill_after_grace);
	tcase_add_test(tc, test_background_leftovers_die_with_the_command);
	tcase_add_test(tc, test_batch_runs_in_order_reports_first_failure);
	tcase_add_test(tc, test_batch_runs_argv_commands_without_a_shell);
	tcase_add_test(tc, test_shell_batch_clips_output_head_and_tail);
	tcase_add_test(tc, test_shell_batch_command_timeout_times_out_the_job);
	tcase_add_test(tc, test_shell_batch_job_timeout_bounds_all_commands);
	tcase_add_test(
		tc, test_shell_batch_release_fifos_lets_a_reader_of_one_go_on);
	tcase_add_test(
		tc, test_timed_out_batch_reports_the_real_status_and_signal);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(worker_protocol_suite());
	int failed;

	if (!getenv("SBXLOOP_WORKER")) {
		fputs("test-worker-protocol: SBXLOOP_WORKER is not set\n",
		      stderr);
		return 77; /* skipped */
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

/*
 * sbxloop-worker's agent backends: the scripted backend and its JSON
 * extraction, and the job's environment and resource watch (the command
 * backend's presets: test-worker-presets.c). Every test runs the real binary as a subprocess.
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

START_TEST(test_script_replies_in_order_across_processes)
{
	struct run r;
	char job[1024];

	put("scenario.json", "[{\"text\":\"first\",\"session_id\":\"s-1\"},"
			     "{\"text\":\"second\"}]");
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "first");
	ck_assert_str_eq(rstr(&r, "session_id"), "s-1");
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "output_text"), "second");
	ck_assert_str_eq(rstr(&r, "session_id"), "script-job-1");
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ScriptExhausted");
	run_free(&r);
}
END_TEST

/*
 * The script backend turns calls past max_tool_calls away, as upstream's
 * SDK backend does: not run, counted, announced once; the reply stands.
 */
START_TEST(test_script_turns_away_calls_past_the_ceiling)
{
	struct run r;
	char job[1024], *path;
	const cJSON *d, *h;

	put("scenario.json", "[{\"text\":\"done\",\"run\":["
			     "\"echo a > ceil-a.txt\",\"echo b > ceil-b.txt\","
			     "\"echo c > ceil-c.txt\"]}]");
	agent_job(job, sizeof(job), ",\"max_tool_calls\":1");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "done");
	ck_assert_int_eq(count_events(&r, "agent.tool_start", NULL), 1);
	ck_assert_int_eq(count_events(&r, "agent.tool_cap", &d), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "cap")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "calls")->valueint, 2);
	h = cJSON_GetObjectItem(r.result, "health");
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_calls")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_cap_denials")->valueint,
			 2);
	/* the first call ran, the others did not */
	path = path_in("work/ceil-a.txt");
	ck_assert_int_eq(access(path, F_OK), 0);
	path = path_in("work/ceil-b.txt");
	ck_assert_int_ne(access(path, F_OK), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_script_cursor_holds_under_concurrent_workers)
{
	char job[1024], cmd[2048], *s;
	int i, seen[8] = {0};
	FILE *f = fopen(path_in("scenario.json"), "w");

	fputs("[", f);
	for (i = 0; i < 8; i++)
		fprintf(f, "%s{\"text\":\"r%d\"}", i ? "," : "", i);
	fputs("]", f);
	fclose(f);
	agent_job(job, sizeof(job), "");
	put("job.json", "%s", job);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && for i in 1 2 3 4 5 6 7 8; do "
		 "'%s' run --heartbeat 0 --job job.json --events ev$i "
		 "--result res$i --cwd work > /dev/null & done; wait; "
		 "cat res? > all",
		 dir, getenv("SBXLOOP_WORKER"));
	ck_assert_int_eq(system(cmd), 0);
	s = slurp(path_in("all"));
	for (i = 0; i < 8; i++) {
		char needle[32];

		snprintf(needle, sizeof(needle), "\"r%d\"", i);
		seen[i] = strstr(s, needle) != NULL;
		ck_assert_msg(seen[i], "reply %d never consumed", i);
	}
	free(s);
}
END_TEST

START_TEST(test_script_reply_acts_on_the_workspace_first)
{
	struct run r;
	char job[1024];
	const cJSON *d;
	char *content;

	put("scenario.json",
	    "[{\"files\":{\"src/new.txt\":\"hello\\n\"},"
	    "\"run\":[\"cat src/new.txt > copy.txt; echo ran\"],"
	    "\"events\":[{\"type\":\"agent.custom\",\"data\":{\"k\":1}}],"
	    "\"usage\":{\"model\":\"m\",\"input_tokens\":3},"
	    "\"text\":\"done\"}]");
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	content = slurp(path_in("work/copy.txt"));
	ck_assert_str_eq(content, "hello\n");
	free(content);
	ck_assert_int_eq(count_events(&r, "agent.tool_start", NULL), 1);
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "output"), "ran\n");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "success")));
	ck_assert_int_eq(count_events(&r, "agent.custom", &d), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "k")->valueint, 1);
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "content"), "done");
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r.result, "usage"),
				    "input_tokens")
			->valueint,
		3);
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r.result, "health"),
				    "tool_calls")
			->valueint,
		1);
	run_free(&r);
}
END_TEST

/*
 * A critic's job (permission_mode read_only): the reply's file writes are
 * refused as denied `write` tool calls, nothing lands in the workspace,
 * and the reply's answer still stands.
 */
START_TEST(test_script_read_only_job_refuses_file_writes)
{
	struct run r;
	char job[1024];
	const cJSON *d, *h;

	put("scenario.json",
	    "[{\"files\":{\"critic.txt\":\"x\\n\",\"src/b.txt\":\"y\\n\"},"
	    "\"json\":{\"verdict\":\"pass\",\"issues\":[],"
	    "\"feedback\":\"\"}}]");
	agent_job(job, sizeof(job), ",\"permission_mode\":\"read_only\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_ne(access(path_in("work/critic.txt"), F_OK), 0);
	ck_assert_int_ne(access(path_in("work/src"), F_OK), 0);
	ck_assert_int_eq(count_events(&r, "agent.permission_denied", &d), 2);
	ck_assert_str_eq(dstr(d, "tool"), "write");
	ck_assert_ptr_nonnull(strstr(dstr(d, "reason"), "read_only"));
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 2);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "success")));
	ck_assert_ptr_nonnull(strstr(dstr(d, "error"), "read-only"));
	h = cJSON_GetObjectItem(r.result, "health");
	ck_assert_int_eq(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(h, "permission_denials"), "write")
			->valueint,
		2);
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_calls")->valueint, 2);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(r.result, "output_json"));
	run_free(&r);

	/* the same reply in an ordinary job writes */
	put("scenario.json", "[{\"files\":{\"critic.txt\":\"x\\n\"}}]");
	unlink(path_in("scenario.json.cursor"));
	agent_job(job, sizeof(job), ",\"permission_mode\":\"auto\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(access(path_in("work/critic.txt"), F_OK), 0);
	ck_assert_int_eq(count_events(&r, "agent.permission_denied", NULL), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_script_fail_and_unsafe_paths_are_errors)
{
	struct run r;
	char job[1024];

	put("scenario.json", "[{\"fail\":\"model overloaded\"},"
			     "{\"files\":{\"../escape.txt\":\"x\"}}]");
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentError");
	ck_assert_str_eq(errfield(&r, "message"), "model overloaded");
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(errfield(&r, "type"), "ScriptInvalid");
	ck_assert_int_eq(access(path_in("escape.txt"), F_OK), -1);
	run_free(&r);
}
END_TEST

START_TEST(test_script_sleep_past_timeout_is_timeout)
{
	struct run r;
	char job[1024];

	put("scenario.json", "[{\"sleep_s\":30,\"text\":\"late\"}]");
	agent_job(job, sizeof(job), ",\"timeout_s\":0.3");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert(r.elapsed < 10);
	run_free(&r);
}
END_TEST

START_TEST(test_script_stopped_during_its_pause_takes_no_side_effect)
{
	char job[1024];
	pid_t worker;
	int status;

	put("scenario.json",
	    "[{\"sleep_s\":30,\"files\":{\"late.txt\":\"x\\n\"},"
	    "\"run\":[\"touch ran.txt\"],\"text\":\"late\"}]");
	agent_job(job, sizeof(job), "");
	put("job.json", "%s", job);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		exec_worker_quietly();
	}
	/* the worker is in its pause once it has taken the reply */
	while (access(path_in("scenario.json.cursor"), F_OK) < 0 &&
	       waitpid(worker, &status, WNOHANG) == 0)
		usleep(10000);
	usleep(200000);
	ck_assert_int_eq(kill(worker, SIGTERM), 0);
	ck_assert_int_eq(waitpid(worker, &status, 0), worker);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 70);
	ck_assert_int_eq(access(path_in("work/late.txt"), F_OK), -1);
	ck_assert_int_eq(access(path_in("work/ran.txt"), F_OK), -1);
	ck_assert_int_eq(access(path_in("res.json"), F_OK), -1);
}
END_TEST

START_TEST(test_script_backend_from_environment)
{
	struct run r;

	put("scenario.json", "[{\"text\":\"via env\"}]");
	setenv("SBXLOOP_WORKER_BACKEND", "script", 1);
	setenv("SBXLOOP_SCRIPT", path_in("scenario.json"), 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
			    "\"p\"}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "output_text"), "via env");
	run_free(&r);
	setenv("SBXLOOP_WORKER_BACKEND", "telepathy", 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
			    "\"p\"}",
		   NULL);
	ck_assert_str_eq(errfield(&r, "type"), "BackendUnavailable");
	run_free(&r);
}
END_TEST

/* expect=json: one scenario, one job per extraction case */
START_TEST(test_expect_json_extraction_cases)
{
	static const char *const cases[][2] = {
		{"a ```json\\n{\\\"x\\\":1}\\n``` b "
		 "```\\n{\\\"x\\\":2}\\n```",
		 "{\"x\":2}"},
		{"```json\\n{\\\"x\\\":1}\\n``` then "
		 "```json\\nnot json\\n```",
		 "{\"x\":1}"},
		{"  [1, 2, 3]  ", "[1,2,3]"},
		{"I think {\\\"a\\\":1} and finally {\\\"b\\\":[2]} ok",
		 "{\"b\":[2]}"},
		{"outer {\\\"a\\\":{\\\"inner\\\":true}} end",
		 "{\"a\":{\"inner\":true}}"},
	};
	struct run r;
	char job[1024], scen[2048] = "[";
	size_t i;

	for (i = 0; i < 5; i++) {
		strcat(scen, i ? ",{\"text\":\"" : "{\"text\":\"");
		strcat(scen, cases[i][0]);
		strcat(scen, "\"}");
	}
	strcat(scen, ",{\"text\":\"no json here {oops\"}]");
	put("scenario.json", "%s", scen);
	agent_job(job, sizeof(job), ",\"expect\":\"json\"");
	for (i = 0; i < 5; i++) {
		cJSON *want = cJSON_Parse(cases[i][1]);

		run_worker(&r, job, NULL);
		ck_assert_msg(r.result != NULL, "case %zu: no result", i);
		ck_assert_msg(cJSON_Compare(cJSON_GetObjectItem(r.result,
								"output_json"),
					    want, 1),
			      "case %zu", i);
		cJSON_Delete(want);
		run_free(&r);
	}
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ExpectedJsonMissing");
	ck_assert_str_eq(errfield(&r, "message"),
			 "agent response contained no parseable JSON");
	ck_assert_str_eq(errfield(&r, "detail"), "no json here {oops");
	run_free(&r);
}
END_TEST

/*
 * A megabyte of unclosed nesting as the answer (1 MB took 49 s before):
 * the job ends with ExpectedJsonMissing well inside its timeout, and an
 * answer behind the nesting is still found.
 */
START_TEST(test_expect_json_on_a_megabyte_of_unclosed_nesting)
{
	size_t n = 1024 * 1024;
	char *text = malloc(n + 64), job[1024];
	struct run r;
	FILE *f;

	memset(text, '[', n);
	text[n] = '\0';
	f = fopen(path_in("scenario.json"), "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[{\"text\":\"%s\"},{\"text\":\"%s {\\\"ok\\\":1}\"}]",
		text, text);
	fclose(f);
	free(text);
	agent_job(job, sizeof(job), ",\"expect\":\"json\",\"timeout_s\":20");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ExpectedJsonMissing");
	ck_assert_msg(r.elapsed < 5, "took %.1fs", r.elapsed);
	run_free(&r);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(r.result, "output_json"), "ok")
			->valueint,
		1);
	ck_assert_msg(r.elapsed < 5, "took %.1fs", r.elapsed);
	run_free(&r);
}
END_TEST

/*
 * A job's process (the same uid as the worker, not root: the test drops
 * to nobody when it runs as root) cannot open the worker's stdout through
 * /proc to forge event lines: the worker is not dumpable.
 */
START_TEST(test_job_processes_cannot_open_the_workers_stdout)
{
	char job[1024], *res;
	const char *argv[16];
	cJSON *result;
	int status, n = 0;
	pid_t pid;

	ck_assert_int_eq(chmod(dir, 0777), 0);
	ck_assert_int_eq(chmod(path_in("work"), 0777), 0);
	put("scenario.json",
	    "[{\"run\":[\"o=ENED r=FUSED; if printf x > /proc/$PPID/fd/1;"
	    " then echo OP$o; else echo RE$r; fi\"],\"text\":\"done\"}]");
	agent_job(job, sizeof(job), "");
	put("job.json", "%s", job);
	ck_assert_int_eq(chmod(path_in("scenario.json"), 0644), 0);
	ck_assert_int_eq(chmod(path_in("job.json"), 0644), 0);
	n = worker_argv(argv);
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int o = open("/dev/null", O_WRONLY);

		if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(126);
		dup2(o, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "worker status %d", status);
	res = slurp(path_in("res.json"));
	ck_assert_ptr_nonnull(res);
	result = cJSON_Parse(res);
	free(res);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(result, "status")),
		"ok");
	cJSON_Delete(result);
	res = slurp(path_in("ev.jsonl"));
	ck_assert_ptr_nonnull(res);
	ck_assert_msg(strstr(res, "REFUSED") && !strstr(res, "OPENED"),
		      "events: %s", res);
	free(res);
}
END_TEST

START_TEST(test_env_file_fills_only_unset_or_sentinel_vars)
{
	struct run r;

	mkdir(path_in(".sbxloop"), 0700);
	put(".sbxloop/env.sh",
	    "# secrets\nexport A_UNSET='from file'\n"
	    "B_REAL=file-b\nexport C_SENTINEL=\"real c\"\n"
	    "D_PROXY=real-d # trailing comment\n\nnot a line\n");
	put("persistent.sh", "export E_PERSIST=pe\nA_UNSET=persist-loses\n");
	setenv("B_REAL", "real-b", 1);
	setenv("C_SENTINEL", "sbx-cs-1234", 1);
	setenv("D_PROXY", "proxy-managed", 1);
	unsetenv("A_UNSET");
	unsetenv("E_PERSIST");
	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"shell.check\",\"argv\":[\"sh\","
		   "\"-c\",\"echo \\\"$A_UNSET|$B_REAL|$C_SENTINEL|$D_PROXY|"
		   "$E_PERSIST\\\"\"]}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"),
			 "from file|real-b|real c|real-d|pe\n");
	run_free(&r);
	/* an explicit --env-file replaces the default one */
	put("other.sh", "A_UNSET=other\n");
	run_worker(&r, NULL, "--env-file", path_in("other.sh"), NULL);
	ck_assert_str_eq(rstr(&r, "output_text"),
			 "other|real-b|sbx-cs-1234|proxy-managed|pe\n");
	run_free(&r);
}
END_TEST

/* ---------------------------------------------------------------- */

START_TEST(test_resource_sample_at_start_is_classified)
{
	struct run r;
	const cJSON *d;

	setenv("SBXLOOP_FAKE_DISK_PCT", "50", 1);
	setenv("SBXLOOP_FAKE_MEM_PCT", "20", 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"true\"]}",
		   "--heartbeat", "30", "--disk-warn", "40", "--disk-abort",
		   "90", "--mem-warn", "80", NULL);
	ck_assert_int_eq(count_events(&r, "sandbox.resources", &d), 1);
	ck_assert_str_eq(dstr(d, "level"), "warn");
	ck_assert(cJSON_GetObjectItem(d, "disk_used_pct")->valuedouble == 50);
	ck_assert(cJSON_GetObjectItem(d, "mem_used_pct")->valuedouble == 20);
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", &d), 1);
	ck_assert_str_eq(dstr(d, "message"),
			 "sandbox resources under "
			 "pressure: disk 50% used (disk_warn: 40%)");
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
	/* thresholds of 0 are disabled; real figures are reported */
	unsetenv("SBXLOOP_FAKE_DISK_PCT");
	unsetenv("SBXLOOP_FAKE_MEM_PCT");
	run_worker(&r, NULL, "--heartbeat", "30", NULL);
	ck_assert_int_eq(count_events(&r, "sandbox.resources", &d), 1);
	ck_assert_str_eq(dstr(d, "level"), "ok");
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "disk_total_bytes")));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "mem_total_kb")));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "load1")));
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", NULL),
			 0);
	run_free(&r);
}
END_TEST

START_TEST(test_memory_abort_names_memory)
{
	struct run r;
	char job[1024];
	const cJSON *d;

	put("scenario.json", "[{\"fail\":\"agent crashed\"}]");
	setenv("SBXLOOP_FAKE_MEM_PCT", "97.5", 1);
	agent_job(job, sizeof(job), "");
	run_worker(&r, job, "--heartbeat", "30", "--mem-abort", "95", NULL);
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", &d), 1);
	ck_assert_str_eq(dstr(d, "level"), "abort");
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "SandboxResourcesExhausted");
	ck_assert_str_eq(errfield(&r, "message"),
			 "sandbox memory exhausted: "
			 "97.5% of memory is used (mem_abort threshold: 95%)");
	ck_assert_str_eq(errfield(&r, "detail"),
			 "underlying failure: AgentError: agent crashed");
	run_free(&r);
}
END_TEST

START_TEST(test_heartbeat_escalation_and_abort_rewrite)
{
	struct run r;
	char job[1024];
	const cJSON *ev;
	int ok_seen = 0, abort_seen = 0;

	put("figures", "disk=10\nmem=10\n");
	setenv("SBXLOOP_FAKE_RESOURCES", path_in("figures"), 1);
	snprintf(job, sizeof(job),
		 JOB_HEAD
		 "\"kind\":\"shell.batch\","
		 "\"timeout_s\":1.2,\"commands\":[\"sleep 0.3\","
		 "\"printf 'disk=96\\\\nmem=10\\\\n' > %s\",\"sleep 30\"]}",
		 path_in("figures"));
	run_worker(&r, job, "--heartbeat", "0.2", "--disk-warn", "80",
		   "--disk-abort", "95", NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_ge(count_events(&r, "worker.heartbeat", NULL), 2);
	cJSON_ArrayForEach (ev, r.events_list) {
		const cJSON *d = cJSON_GetObjectItem(ev, "data");

		if (strcmp(cJSON_GetObjectItem(ev, "type")->valuestring,
			   "sandbox.resources"))
			continue;
		if (!strcmp(dstr(d, "level"), "ok"))
			ok_seen++;
		else if (!strcmp(dstr(d, "level"), "abort"))
			abort_seen++;
	}
	ck_assert_int_ge(ok_seen, 1);
	ck_assert_int_ge(abort_seen, 1);
	/* one warning for the one escalation, not one per sample */
	ck_assert_int_eq(count_events(&r, "sandbox.resources_warning", NULL),
			 1);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "SandboxResourcesExhausted");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "sandbox disk exhausted: 96%"));
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"),
				     "underlying failure: Timeout: job timed "
				     "out"));
	run_free(&r);
}
END_TEST

START_TEST(test_abort_level_leaves_ok_results_alone)
{
	struct run r;

	setenv("SBXLOOP_FAKE_DISK_PCT", "99", 1);
	run_worker(&r,
		   JOB_HEAD "\"kind\":\"shell.check\",\"argv\":"
			    "[\"true\"]}",
		   "--heartbeat", "30", "--disk-abort", "90", NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	run_free(&r);
}
END_TEST

/* ---------------------------------------------------------------- */

static Suite *worker_agents_suite(void)
{
	Suite *s = suite_create("worker agents");
	TCase *tc;

	tc = tcase_create("script");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_script_replies_in_order_across_processes);
	tcase_add_test(tc, test_script_turns_away_calls_past_the_ceiling);
	tcase_add_test(tc, test_script_cursor_holds_under_concurrent_workers);
	tcase_add_test(tc, test_script_reply_acts_on_the_workspace_first);
	tcase_add_test(tc, test_script_read_only_job_refuses_file_writes);
	tcase_add_test(tc, test_script_fail_and_unsafe_paths_are_errors);
	tcase_add_test(tc, test_script_sleep_past_timeout_is_timeout);
	tcase_add_test(
		tc, test_script_stopped_during_its_pause_takes_no_side_effect);
	tcase_add_test(tc, test_script_backend_from_environment);
	tcase_add_test(tc, test_expect_json_extraction_cases);
	tcase_add_test(tc, test_expect_json_on_a_megabyte_of_unclosed_nesting);
	tcase_add_test(tc, test_job_processes_cannot_open_the_workers_stdout);
	suite_add_tcase(s, tc);

	tc = tcase_create("environment");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_env_file_fills_only_unset_or_sentinel_vars);
	tcase_add_test(tc, test_resource_sample_at_start_is_classified);
	tcase_add_test(tc, test_memory_abort_names_memory);
	tcase_add_test(tc, test_heartbeat_escalation_and_abort_rewrite);
	tcase_add_test(tc, test_abort_level_leaves_ok_results_alone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(worker_agents_suite());
	int failed;

	if (!getenv("SBXLOOP_WORKER")) {
		fputs("test-worker-agents: SBXLOOP_WORKER is not set\n",
		      stderr);
		return 77; /* skipped */
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

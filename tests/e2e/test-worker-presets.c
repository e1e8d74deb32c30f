/*
 * sbxloop-worker's command backend under each preset: the argv each CLI
 * gets, its output mapped to events and the answer, and its failures
 * reported as typed errors in the CLI's own words. The CLIs are played
 * by tests/fakes/fake-agent, whose output imitates the real CLIs at the
 * versions the presets are verified with; tests/agents/ runs the same
 * argv against the real CLIs. Every test runs the real binary.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "worker-support.h"

static const char *const presets[] = {"claude", "codex", "gemini", "copilot"};

static char *argv_log(void)
{
	return slurp(path_in("argv.log"));
}

static void command_job(char *buf, size_t n, const char *preset,
			const char *extra)
{
	snprintf(buf, n,
		 JOB_HEAD
		 "\"kind\":\"agent.session\",\"prompt\":"
		 "\"fix it\",\"backend\":\"command\",\"preset\":\"%s\"%s}",
		 preset, extra);
	setenv("SBXLOOP_FAKE_AGENT_LOG", path_in("argv.log"), 1);
}

/* The worker's cached CLI versions (one probe per binary), gone. */
static void rm_version_cache(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/.cache/sbxloop'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The last line of the argv log: where every preset puts the prompt. */
static char *last_arg(void)
{
	char *log = argv_log(), *end, *start, *out;

	ck_assert_ptr_nonnull(log);
	end = log + strlen(log);
	if (end > log && end[-1] == '\n')
		end--;
	for (start = end; start > log && start[-1] != '\n'; start--)
		;
	out = strndup(start, (size_t)(end - start));
	free(log);
	return out;
}

START_TEST(test_copilot_preset_is_the_default_and_reads_json_lines)
{
	struct run r;
	char *log;
	const cJSON *d, *u;

	setenv("SBXLOOP_FAKE_AGENT_LOG", path_in("argv.log"), 1);
	setenv("SBXLOOP_FAKE_AGENT_REPLY", "plain answer", 1);
	run_worker(&r,
		   JOB_HEAD
		   "\"kind\":\"agent.session\",\"prompt\":"
		   "\"fix it\",\"model\":\"gpt-x\",\"resume_session_id\":"
		   "\"old\"}",
		   NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "plain answer");
	ck_assert_str_eq(rstr(&r, "session_id"), "copilot-sess-1");
	log = argv_log();
	ck_assert_str_eq(log, "copilot\n--output-format\njson\n--no-ask-user\n"
			      "--no-auto-update\n--no-color\n"
			      "--allow-all-tools\n--model=gpt-x\n"
			      "--resume=old\n--prompt=fix it\n");
	free(log);
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "content"), "plain answer");
	ck_assert_int_eq(count_events(&r, "agent.tool_start", &d), 1);
	ck_assert_str_eq(dstr(d, "tool"), "bash");
	ck_assert_str_eq(dstr(d, "args"), "ls");
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "tool"), "bash");
	ck_assert_str_eq(dstr(d, "output"), "README.md");
	u = cJSON_GetObjectItem(r.result, "usage");
	ck_assert_int_eq(cJSON_GetObjectItem(u, "input_tokens")->valueint, 12);
	ck_assert_int_eq(cJSON_GetObjectItem(u, "output_tokens")->valueint, 5);
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r.result, "health"),
				    "tool_calls")
			->valueint,
		1);
	run_free(&r);
}
END_TEST

/*
 * A CLI cannot be told no per call: past max_tool_calls the worker
 * stops the agent (here hanging for a minute) and says why.
 */
START_TEST(test_command_backend_stops_an_agent_past_its_tool_ceiling)
{
	struct run r;
	char job[1024];
	const cJSON *d;

	setenv("SBXLOOP_FAKE_AGENT_TOOLS", "5", 1);
	setenv("SBXLOOP_FAKE_AGENT_HANG", "60", 1);
	command_job(job, sizeof(job), "claude", ",\"max_tool_calls\":3");
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "ToolCallCeiling");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "tool-call ceiling of 3 "
				     "(budgets.max_tool_calls_per_phase)"));
	ck_assert_int_eq(count_events(&r, "agent.tool_cap", &d), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "cap")->valueint, 3);
	ck_assert_int_eq(cJSON_GetObjectItem(d, "calls")->valueint, 4);
	ck_assert_str_eq(dstr(d, "tool"), "Read");
	/* stopped, not waited for */
	ck_assert_msg(r.elapsed < 30, "took %.1f s", r.elapsed);
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_HANG");

	/* at the ceiling, not past it: a normal answer */
	command_job(job, sizeof(job), "claude", ",\"max_tool_calls\":6");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(count_events(&r, "agent.tool_cap", NULL), 0);
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_TOOLS");
}
END_TEST

/*
 * A critic gets no tool that writes or runs a command: copilot's "write"
 * kind does not cover shell, so both are denied; claude gets a read-only
 * tool list instead of the executor's bypassPermissions.
 */
START_TEST(test_read_only_jobs_get_no_writing_or_shell_tool)
{
	/* preset, flags a critic must get, a flag it must not */
	static const char *const want[][4] = {
		{"copilot", "--deny-tool=shell\n", "--deny-tool=write\n",
		 "--model"},
		{"claude", "--tools\nRead,Grep,Glob\n",
		 "--permission-mode\ndontAsk\n", "bypassPermissions"},
		{"codex", "--sandbox\nread-only\n", "--sandbox\nread-only\n",
		 "workspace-write"},
		{"gemini", "--approval-mode\nplan\n",
		 "--approval-mode\nplan\n", "yolo"},
	};
	struct run r;
	char job[1024], *log;
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		command_job(job, sizeof(job), want[i][0],
			    ",\"permission_mode\":\"read_only\"");
		run_worker(&r, job, NULL);
		log = argv_log();
		ck_assert_msg(strstr(log, want[i][1]) &&
				      strstr(log, want[i][2]),
			      "%s: %s", want[i][0], log);
		ck_assert_msg(!strstr(log, want[i][3]), "%s: %s", want[i][0],
			      log);
		free(log);
		run_free(&r);
	}
}
END_TEST

/* Every CLI parses "-p -rf" as options: the prompt must stay text. */
START_TEST(test_a_prompt_starting_with_a_dash_stays_the_prompt)
{
	static const char *const want[] = {"-rf /", "-rf /", "--prompt=-rf /",
					   "--prompt=-rf /"};
	struct run r;
	char job[1024], *last, *log;
	size_t i;

	for (i = 0; i < 4; i++) {
		snprintf(job, sizeof(job),
			 JOB_HEAD "\"kind\":\"agent.session\",\"prompt\":"
				  "\"-rf /\",\"backend\":\"command\","
				  "\"preset\":\"%s\"}",
			 presets[i]);
		setenv("SBXLOOP_FAKE_AGENT_LOG", path_in("argv.log"), 1);
		run_worker(&r, job, NULL);
		last = last_arg();
		ck_assert_str_eq(last, want[i]);
		if (i < 2) {
			log = argv_log();
			ck_assert_msg(strstr(log, "\n--\n-rf /\n"),
				      "%s: no -- before the prompt",
				      presets[i]);
			free(log);
		}
		free(last);
		run_free(&r);
	}
}
END_TEST

START_TEST(test_claude_preset_maps_stream_json)
{
	struct run r;
	char job[1024], *log, *env;
	const cJSON *d, *u, *h;

	setenv("SBXLOOP_FAKE_AGENT_REPLY", "all fixed", 1);
	setenv("SBXLOOP_FAKE_AGENT_ENV", path_in("agent.env"), 1);
	command_job(job, sizeof(job), "claude",
		    ",\"model\":\"opus\",\"resume_session_id\":\"s0\","
		    "\"system_message\":\"be brief\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "all fixed");
	ck_assert_str_eq(rstr(&r, "session_id"), "claude-sess-1");
	log = argv_log();
	ck_assert_ptr_nonnull(strstr(log, "claude\n-p\n--output-format\n"
					  "stream-json\n--verbose\n"
					  "--permission-mode\n"
					  "bypassPermissions\n"));
	ck_assert_ptr_nonnull(strstr(log, "--model\nopus\n"));
	ck_assert_ptr_nonnull(strstr(log, "--resume\ns0\n"));
	ck_assert_ptr_nonnull(strstr(log, "--append-system-prompt\n"
					  "be brief\n--\nfix it\n"));
	free(log);
	/* root in a sandbox VM: claude allows bypassPermissions only so */
	env = slurp(path_in("agent.env"));
	ck_assert_ptr_nonnull(strstr(env, "\nIS_SANDBOX=1\n"));
	free(env);
	unsetenv("SBXLOOP_FAKE_AGENT_ENV");
	ck_assert_int_eq(count_events(&r, "agent.tool_start", &d), 1);
	ck_assert_str_eq(dstr(d, "tool"), "Bash");
	ck_assert_str_eq(dstr(d, "args"), "ls -la");
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "tool"), "Bash");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "success")));
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "model"), "claude-test");
	ck_assert_int_eq(count_events(&r, "agent.usage", NULL), 1);
	u = cJSON_GetObjectItem(r.result, "usage");
	ck_assert_int_eq(cJSON_GetObjectItem(u, "input_tokens")->valueint, 10);
	ck_assert_int_eq(
		cJSON_GetObjectItem(u, "cache_write_tokens")->valueint, 2);
	ck_assert(cJSON_GetObjectItem(u, "cost")->valuedouble == 0.25);
	h = cJSON_GetObjectItem(r.result, "health");
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(h, "tool_failures"),
				    "Bash")
			->valueint,
		1);
	ck_assert_int_eq(cJSON_GetObjectItem(h, "tool_calls")->valueint, 1);
	ck_assert_int_eq(count_events(&r, "agent.cli_version", NULL), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_codex_preset_maps_exec_json_and_resume)
{
	struct run r;
	char job[1024], *log;
	const cJSON *d, *u;

	setenv("SBXLOOP_FAKE_AGENT_REPLY", "codex says {\"ok\":true}", 1);
	command_job(job, sizeof(job), "codex",
		    ",\"resume_session_id\":\"t-9\",\"expect\":\"json\","
		    "\"system_message\":\"SYS\"");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "session_id"), "codex-thread-1");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(r.result, "output_json"), "ok")));
	log = argv_log();
	ck_assert_str_eq(log, "codex\nexec\n--json\n--skip-git-repo-check\n"
			      "--color\nnever\n--sandbox\nworkspace-write\n"
			      "-c\nsandbox_workspace_write.network_access="
			      "true\nresume\nt-9\n--\nSYS\n\nfix it\n");
	free(log);
	ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
	ck_assert_str_eq(dstr(d, "args"), "bash -lc ls");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "success")));
	u = cJSON_GetObjectItem(r.result, "usage");
	ck_assert_int_eq(cJSON_GetObjectItem(u, "cache_read_tokens")->valueint,
			 4);
	run_free(&r);
}
END_TEST

/*
 * Real codex 0.171 output: a top-level "error" line is a reconnect
 * notice and the turn goes on to complete. file_change and mcp_tool_call
 * items are tool calls (so the tool ceiling counts them).
 */
START_TEST(test_codex_reconnect_notices_do_not_fail_a_turn)
{
	struct run r;
	char job[1024];
	const cJSON *d;

	put("codex.jsonl",
	    "{\"type\":\"thread.started\",\"thread_id\":\"th-2\"}\n"
	    "{\"type\":\"turn.started\"}\n"
	    "{\"type\":\"error\",\"message\":\"Reconnecting... 2/5 (stream "
	    "disconnected before completion)\"}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\","
	    "\"type\":\"error\",\"message\":\"Falling back from WebSockets "
	    "to HTTPS transport.\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\","
	    "\"type\":\"file_change\",\"changes\":[{\"path\":\"a.c\","
	    "\"kind\":\"add\"}],\"status\":\"completed\"}}\n"
	    "{\"type\":\"item.started\",\"item\":{\"id\":\"item_2\","
	    "\"type\":\"mcp_tool_call\",\"server\":\"docs\",\"tool\":"
	    "\"search\",\"arguments\":{\"query\":\"x\"},\"status\":"
	    "\"in_progress\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_2\","
	    "\"type\":\"mcp_tool_call\",\"server\":\"docs\",\"tool\":"
	    "\"search\",\"arguments\":{\"query\":\"x\"},\"status\":"
	    "\"failed\",\"error\":{\"message\":\"no server\"}}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_3\","
	    "\"type\":\"agent_message\",\"text\":\"done\"}}\n"
	    "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":5,"
	    "\"cached_input_tokens\":0,\"output_tokens\":2}}\n");
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("codex.jsonl"), 1);
	command_job(job, sizeof(job), "codex", "");
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_REPLAY");
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "done");
	ck_assert_int_eq(count_events(&r, "agent.notice", &d), 2);
	ck_assert_ptr_nonnull(strstr(dstr(d, "message"), "Reconnecting"));
	ck_assert_int_eq(count_events(&r, "agent.tool_start", &d), 2);
	ck_assert_str_eq(dstr(d, "tool"), "apply_patch");
	ck_assert_int_eq(count_events(&r, "agent.tool_end", NULL), 2);
	ck_assert_int_eq(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(r.result, "health"),
				"tool_failures"),
			"search")
			->valueint,
		1);
	run_free(&r);

	/* turn.failed is the failure, in codex's own words */
	put("codex.jsonl",
	    "{\"type\":\"thread.started\",\"thread_id\":\"th-3\"}\n"
	    "{\"type\":\"turn.failed\",\"error\":{\"message\":\"unexpected "
	    "status 401 Unauthorized: Missing bearer authentication\"}}\n");
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("codex.jsonl"), 1);
	setenv("SBXLOOP_FAKE_AGENT_EXIT", "1", 1);
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_REPLAY");
	unsetenv("SBXLOOP_FAKE_AGENT_EXIT");
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentAuthError");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"),
		       "agent CLI 'codex' failed (exit 1): unexpected status "
		       "401 Unauthorized"));
	ck_assert_str_eq(rstr(&r, "session_id"), "th-3");
	run_free(&r);
}
END_TEST

/* Codex waits for the network for ever; the worker does not. */
START_TEST(test_codex_waiting_for_the_network_is_stopped)
{
	struct run r;
	char job[1024];

	put("codex.jsonl",
	    "{\"type\":\"thread.started\",\"thread_id\":\"th-4\"}\n"
	    "{\"type\":\"error\",\"message\":\"Reconnecting... waiting "
	    "for network (Connection failed)\"}\n"
	    "{\"type\":\"error\",\"message\":\"Reconnecting... waiting "
	    "for network (Connection failed)\"}\n"
	    "{\"type\":\"error\",\"message\":\"Reconnecting... waiting "
	    "for network (Connection failed)\"}\n");
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("codex.jsonl"), 1);
	setenv("SBXLOOP_FAKE_AGENT_HANG", "60", 1);
	command_job(job, sizeof(job), "codex", "");
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_REPLAY");
	unsetenv("SBXLOOP_FAKE_AGENT_HANG");
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentNetworkError");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "waiting for network"));
	ck_assert_str_eq(rstr(&r, "session_id"), "th-4");
	ck_assert_int_eq(count_events(&r, "agent.notice", NULL), 3);
	ck_assert_msg(r.elapsed < 30, "took %.1f s", r.elapsed);
	run_free(&r);
}
END_TEST

START_TEST(test_gemini_preset_joins_message_deltas)
{
	struct run r;
	char job[1024], *log, *env;
	const cJSON *d;

	setenv("SBXLOOP_FAKE_AGENT_REPLY", "gemini answer", 1);
	setenv("SBXLOOP_FAKE_AGENT_ENV", path_in("agent.env"), 1);
	command_job(job, sizeof(job), "gemini", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_str_eq(rstr(&r, "output_text"), "gemini answer");
	ck_assert_str_eq(rstr(&r, "session_id"), "gemini-sess-1");
	ck_assert_int_eq(count_events(&r, "agent.message_delta", NULL), 2);
	ck_assert_int_eq(count_events(&r, "agent.message", &d), 1);
	ck_assert_str_eq(dstr(d, "content"), "gemini answer");
	ck_assert_int_eq(count_events(&r, "agent.tool_start", &d), 1);
	ck_assert_str_eq(dstr(d, "args"), "README.md");
	log = argv_log();
	ck_assert_ptr_nonnull(strstr(log, "--skip-trust\n"));
	ck_assert_ptr_nonnull(strstr(log, "--approval-mode\nyolo\n"));
	free(log);
	env = slurp(path_in("agent.env"));
	ck_assert_ptr_nonnull(strstr(env, "GEMINI_CLI_TRUST_WORKSPACE=true"));
	free(env);
	unsetenv("SBXLOOP_FAKE_AGENT_ENV");
	run_free(&r);
}
END_TEST

/* Error results the old presets read as success or lost the words of. */
START_TEST(test_error_results_fail_with_the_clis_own_text)
{
	struct run r;
	char job[1024];

	/* gemini: status error without an error member */
	put("g.jsonl", "{\"type\":\"init\",\"session_id\":\"g1\"}\n"
		       "{\"type\":\"message\",\"role\":\"assistant\","
		       "\"content\":\"half an ans\",\"delta\":true}\n"
		       "{\"type\":\"result\",\"status\":\"error\","
		       "\"stats\":{}}\n");
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("g.jsonl"), 1);
	command_job(job, sizeof(job), "gemini", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentError");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"), "'gemini'"));
	run_free(&r);

	/* gemini: a quota error names itself */
	put("g.jsonl", "{\"type\":\"result\",\"status\":\"error\",\"error\":{"
		       "\"type\":\"TerminalQuotaError\",\"message\":\"You "
		       "have exhausted your daily quota\"}}\n");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(errfield(&r, "type"), "AgentRateLimited");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "exhausted your daily quota"));
	run_free(&r);

	/* claude: an error result carries errors[], not result */
	put("c.jsonl",
	    "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":"
	    "\"c1\"}\n"
	    "{\"type\":\"result\",\"subtype\":\"error_during_execution\","
	    "\"is_error\":true,\"session_id\":\"c1\",\"errors\":["
	    "\"API Error: 404 model_not_found: claude-nope\"]}\n");
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("c.jsonl"), 1);
	command_job(job, sizeof(job), "claude", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentModelError");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "404 model_not_found: claude-nope"));
	ck_assert_str_eq(rstr(&r, "session_id"), "c1");
	run_free(&r);

	/* copilot: session.error with its category */
	put("p.jsonl", "{\"type\":\"session.error\",\"data\":{\"errorType\":"
		       "\"rate_limit\",\"message\":\"Too many requests\"}}\n");
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("p.jsonl"), 1);
	command_job(job, sizeof(job), "copilot", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(errfield(&r, "type"), "AgentRateLimited");
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "Too many requests"));
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_REPLAY");
}
END_TEST

/* A rejected flag is our preset against a different CLI: say so. */
/*
 * A critic's write refused by the CLI is the read-only mode working:
 * counted as a permission denial, not a tool failure (which the critic
 * guard would read as degraded tooling). Lines as the real CLIs print
 * them for a refused Write / write / shell call.
 */
START_TEST(test_a_refused_call_is_a_permission_denial)
{
	static const char *const lines[][2] = {
		{"claude",
		 "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":"
		 "\"tool_use\",\"id\":\"tu1\",\"name\":\"Write\",\"input\":{"
		 "\"file_path\":\"x\"}}]}}\n"
		 "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":"
		 "\"tool_result\",\"tool_use_id\":\"tu1\",\"content\":\"<tool_"
		 "use_error>Error: No such tool available: Write. Write is "
		 "disabled for this session, in subagents as well as here."
		 "</tool_use_error>\",\"is_error\":true}]}}\n"
		 "{\"type\":\"result\",\"is_error\":false,\"result\":\"clean\","
		 "\"session_id\":\"c\"}\n"},
		{"copilot",
		 "{\"type\":\"tool.execution_start\",\"data\":{\"toolCallId\":"
		 "\"t1\",\"toolName\":\"create\",\"arguments\":{}}}\n"
		 "{\"type\":\"tool.execution_complete\",\"data\":{\"toolCallId\":"
		 "\"t1\",\"success\":false,\"error\":{\"message\":\"Permission "
		 "to run this tool was denied due to the following rules: "
		 "`write`\"}}}\n"
		 "{\"type\":\"assistant.message\",\"data\":{\"messageId\":\"m\","
		 "\"content\":\"clean\"}}\n"
		 "{\"type\":\"result\",\"sessionId\":\"p\",\"exitCode\":0}\n"},
		{"gemini",
		 "{\"type\":\"init\",\"session_id\":\"g\"}\n"
		 "{\"type\":\"tool_use\",\"tool_name\":\"run_shell_command\","
		 "\"tool_id\":\"t1\",\"parameters\":{\"command\":\"touch x\"}}\n"
		 "{\"type\":\"tool_result\",\"tool_id\":\"t1\",\"status\":"
		 "\"error\",\"error\":{\"type\":\"tool_not_registered\","
		 "\"message\":\"Tool \\\"run_shell_command\\\" not found\"}}\n"
		 "{\"type\":\"message\",\"role\":\"assistant\",\"content\":"
		 "\"clean\",\"delta\":true}\n"
		 "{\"type\":\"result\",\"status\":\"success\",\"stats\":{}}\n"},
	};
	struct run r;
	char job[1024];
	const cJSON *h, *d;
	size_t i;

	for (i = 0; i < 3; i++) {
		put("refused.jsonl", "%s", lines[i][1]);
		setenv("SBXLOOP_FAKE_AGENT_REPLAY", path_in("refused.jsonl"),
		       1);
		command_job(job, sizeof(job), lines[i][0],
			    ",\"permission_mode\":\"read_only\"");
		run_worker(&r, job, NULL);
		ck_assert_msg(!strcmp(rstr(&r, "status"), "ok"), "%s: %s",
			      lines[i][0], errfield(&r, "message"));
		h = cJSON_GetObjectItem(r.result, "health");
		ck_assert_msg(cJSON_GetObjectItem(h, "tool_failures")->child ==
				      NULL,
			      "%s: counted as a tool failure", lines[i][0]);
		ck_assert_msg(
			cJSON_GetObjectItem(h, "permission_denials")->child !=
				NULL,
			"%s: no permission denial", lines[i][0]);
		ck_assert_int_eq(count_events(&r, "agent.tool_end", &d), 1);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "refused")));
		run_free(&r);
	}
	unsetenv("SBXLOOP_FAKE_AGENT_REPLAY");
}
END_TEST

START_TEST(test_a_rejected_flag_names_the_preset_and_the_version)
{
	struct run r;
	char job[1024];

	setenv("SBXLOOP_FAKE_AGENT_STDERR",
	       "error: unexpected argument '--full-auto' found", 1);
	setenv("SBXLOOP_FAKE_AGENT_EXIT", "2", 1);
	command_job(job, sizeof(job), "codex", "");
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_STDERR");
	unsetenv("SBXLOOP_FAKE_AGENT_EXIT");
	ck_assert_str_eq(errfield(&r, "type"), "AgentCliRejected");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "unexpected argument '--full-auto'"));
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"),
				     "codex 0.171.0 up to 0.172.0"));
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"), "sbxloop doctor"));
	ck_assert_int_eq(rint_(&r, "exit_code"), 2);
	run_free(&r);
}
END_TEST

START_TEST(test_a_cli_outside_its_verified_range_is_reported)
{
	struct run r;
	char job[1024];
	const cJSON *d;

	setenv("SBXLOOP_FAKE_AGENT_VERSION", "0.200.1", 1);
	command_job(job, sizeof(job), "gemini", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	ck_assert_int_eq(count_events(&r, "agent.cli_version", &d), 1);
	ck_assert_str_eq(dstr(d, "cli"), "gemini");
	ck_assert_str_eq(dstr(d, "version"), "0.200.1");
	ck_assert_str_eq(dstr(d, "verified_min"), "0.61.0");
	run_free(&r);

	/* a short version is x.0.0: "0.62." is past 0.61.x, "0.61" is in */
	rm_version_cache();
	setenv("SBXLOOP_FAKE_AGENT_VERSION", "0.62.", 1);
	run_worker(&r, job, NULL);
	ck_assert_int_eq(count_events(&r, "agent.cli_version", &d), 1);
	run_free(&r);
	rm_version_cache();
	setenv("SBXLOOP_FAKE_AGENT_VERSION", "0.61", 1);
	run_worker(&r, job, NULL);
	ck_assert_int_eq(count_events(&r, "agent.cli_version", NULL), 0);
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_VERSION");
}
END_TEST

START_TEST(test_unknown_session_falls_back_to_a_new_one)
{
	struct run r;
	char job[1024], *log;
	const cJSON *d;
	size_t i;

	setenv("SBXLOOP_FAKE_AGENT_NO_RESUME", "1", 1);
	for (i = 0; i < 4; i++) {
		command_job(job, sizeof(job), presets[i],
			    ",\"resume_session_id\":\"gone\"");
		run_worker(&r, job, NULL);
		ck_assert_msg(!strcmp(rstr(&r, "status"), "ok"), "%s: %s",
			      presets[i], rstr(&r, "status"));
		log = argv_log();
		ck_assert_ptr_null(strstr(log, "gone"));
		free(log);
		ck_assert_int_eq(count_events(&r, "agent.resume_dropped", &d),
				 1);
		ck_assert_str_eq(dstr(d, "session_id"), "gone");
		ck_assert_ptr_nonnull(strstr(dstr(d, "cli"), presets[i]));
		run_free(&r);
	}
	unsetenv("SBXLOOP_FAKE_AGENT_NO_RESUME");
}
END_TEST

/* Any other failure of a resume is reported as it is, not rerun. */
START_TEST(test_a_failed_resume_is_not_retried_fresh)
{
	struct run r;
	char job[1024], *log;

	setenv("SBXLOOP_FAKE_AGENT_STDERR", "Not logged in", 1);
	setenv("SBXLOOP_FAKE_AGENT_EXIT", "1", 1);
	command_job(job, sizeof(job), "claude",
		    ",\"resume_session_id\":\"s-1\"");
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_STDERR");
	unsetenv("SBXLOOP_FAKE_AGENT_EXIT");
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentAuthError");
	ck_assert_int_eq(count_events(&r, "agent.resume_dropped", NULL), 0);
	/* the one run was the resume */
	log = argv_log();
	ck_assert_ptr_nonnull(strstr(log, "--resume\ns-1\n"));
	free(log);
	run_free(&r);
}
END_TEST

/* A timed-out agent keeps its session, usage and last words. */
START_TEST(test_a_timed_out_agent_keeps_what_it_printed)
{
	struct run r;
	char job[1024];

	setenv("SBXLOOP_FAKE_AGENT_TOOLS", "2", 1);
	setenv("SBXLOOP_FAKE_AGENT_HANG", "60", 1);
	setenv("SBXLOOP_FAKE_AGENT_STDERR", "retrying the model", 1);
	command_job(job, sizeof(job), "claude", ",\"timeout_s\":2");
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_TOOLS");
	unsetenv("SBXLOOP_FAKE_AGENT_HANG");
	unsetenv("SBXLOOP_FAKE_AGENT_STDERR");
	ck_assert_str_eq(rstr(&r, "status"), "timeout");
	ck_assert_str_eq(errfield(&r, "type"), "Timeout");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"), "timed out"));
	ck_assert_str_eq(rstr(&r, "session_id"), "claude-sess-1");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "detail"), "toolu_3"));
	ck_assert_int_eq(count_events(&r, "agent.tool_start", NULL), 3);
	run_free(&r);
}
END_TEST

/*
 * Real output (tests/fakes/replay/, captured from the pinned CLIs driven
 * by tests/fakes/model-server): a tool-using success and the 401, 429,
 * 500 and cut-stream faults, replayed with the exit status each CLI gave.
 */
struct replay_case {
	const char *file;
	const char *exit; /* the real CLI's exit status */
	const char *type; /* NULL: success */
};

static const struct replay_case replays[] = {
	{"claude-success", "0", NULL},
	{"claude-401", "1", "AgentAuthError"},
	{"claude-429", "1", "AgentRateLimited"},
	{"claude-500", "1", "AgentServiceError"},
	{"claude-cut", "1", "AgentServiceError"},
	{"codex-success", "0", NULL},
	{"codex-401", "1", "AgentAuthError"},
	{"codex-429", "1", "AgentRateLimited"},
	{"codex-500", "1", "AgentServiceError"},
	{"codex-cut", "1", "AgentServiceError"},
	{"gemini-success", "0", NULL},
	{"gemini-401", "145", "AgentAuthError"},
	{"gemini-429", "173", "AgentRateLimited"},
	{"gemini-500", "244", "AgentServiceError"},
	{"gemini-cut", "1", "AgentServiceError"},
	{"copilot-success", "0", NULL},
	{"copilot-401", "1", "AgentAuthError"},
	{"copilot-429", "1", "AgentRateLimited"},
	{"copilot-500", "1", "AgentServiceError"},
	{"copilot-cut", "1", "AgentServiceError"},
};

START_TEST(test_real_cli_output_is_read_right)
{
	const struct replay_case *c = &replays[_i];
	char job[1024], file[700], preset[16];
	const char *src = getenv("SBXLOOP_SRCDIR");
	struct run r;
	const cJSON *u;

	snprintf(preset, sizeof(preset), "%.*s", (int)strcspn(c->file, "-"),
		 c->file);
	snprintf(file, sizeof(file), "%s/tests/fakes/replay/%s.jsonl",
		 src ? src : ".", c->file);
	setenv("SBXLOOP_FAKE_AGENT_REPLAY", file, 1);
	if (strcmp(c->exit, "0") != 0)
		setenv("SBXLOOP_FAKE_AGENT_EXIT", c->exit, 1);
	command_job(job, sizeof(job), preset, "");
	run_worker(&r, job, NULL);
	unsetenv("SBXLOOP_FAKE_AGENT_REPLAY");
	unsetenv("SBXLOOP_FAKE_AGENT_EXIT");
	ck_assert_ptr_nonnull(rstr(&r, "session_id"));
	if (!c->type) {
		ck_assert_msg(!strcmp(rstr(&r, "status"), "ok"), "%s: %s: %s",
			      c->file, errfield(&r, "type"),
			      errfield(&r, "message"));
		ck_assert_str_eq(rstr(&r, "output_text"), "DONE-MARKER");
		/* the file tool and the shell tool, started and ended */
		ck_assert_int_ge(count_events(&r, "agent.tool_start", NULL),
				 2);
		ck_assert_int_ge(count_events(&r, "agent.tool_end", NULL), 2);
		ck_assert_int_eq(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(r.result, "health"),
				"tool_calls")
				->valueint,
			count_events(&r, "agent.tool_start", NULL));
		/* copilot 1.0.102 prints no usage here (copilot-cli#4107) */
		u = cJSON_GetObjectItem(r.result, "usage");
		ck_assert_msg(!strcmp(preset, "copilot") ||
				      cJSON_IsNumber(cJSON_GetObjectItem(
					      u, "output_tokens")),
			      "%s: no usage", c->file);
	} else {
		ck_assert_msg(!strcmp(errfield(&r, "type"), c->type),
			      "%s: %s, want %s: %s", c->file,
			      errfield(&r, "type"), c->type,
			      errfield(&r, "message"));
		/* the message is the CLI's words, not "nonzero exit" */
		ck_assert_ptr_null(
			strstr(errfield(&r, "message"), "nonzero exit"));
		ck_assert_ptr_nonnull(strstr(errfield(&r, "message"), preset));
	}
	run_free(&r);
}
END_TEST

START_TEST(test_agent_command_failure_is_error_result)
{
	struct run r;
	char job[1024];

	setenv("SBXLOOP_FAKE_AGENT_EXIT", "3", 1);
	command_job(job, sizeof(job), "claude", "");
	run_worker(&r, job, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(rstr(&r, "status"), "error");
	ck_assert_str_eq(errfield(&r, "type"), "AgentError");
	ck_assert_int_eq(rint_(&r, "exit_code"), 3);
	/* the CLI's own words are the message, not hidden in detail */
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "message"),
		       "(exit 3): fake agent failing on request"));
	ck_assert_ptr_nonnull(
		strstr(errfield(&r, "detail"), "failing on request"));
	run_free(&r);
	unsetenv("SBXLOOP_FAKE_AGENT_EXIT");
	setenv("PATH", "/usr/bin:/bin", 1);
	run_worker(&r, job, NULL);
	ck_assert_str_eq(errfield(&r, "type"), "BackendUnavailable");
	ck_assert_ptr_nonnull(strstr(errfield(&r, "message"), "'claude'"));
	run_free(&r);
}
END_TEST

START_TEST(test_agent_sees_only_allowlisted_environment)
{
	struct run r;
	char job[1024], *env;

	setenv("SBXLOOP_FAKE_AGENT_ENV", path_in("agent.env"), 1);
	setenv("GH_TOKEN", "ghp_test", 1);
	setenv("LC_ALL", "C", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak", 1);
	setenv("LD_PRELOAD", "", 1);
	command_job(job, sizeof(job), "copilot", "");
	run_worker(&r, job, NULL);
	ck_assert_str_eq(rstr(&r, "status"), "ok");
	env = slurp(path_in("agent.env"));
	ck_assert_ptr_nonnull(env);
	ck_assert_ptr_nonnull(strstr(env, "GH_TOKEN=ghp_test\n"));
	ck_assert_ptr_nonnull(strstr(env, "LC_ALL=C\n"));
	ck_assert_ptr_nonnull(strstr(env, "SBXLOOP_FAKE_AGENT_ENV="));
	ck_assert_ptr_nonnull(strstr(env, "PATH="));
	ck_assert_ptr_null(strstr(env, "AWS_SECRET_ACCESS_KEY"));
	ck_assert_ptr_null(strstr(env, "LD_PRELOAD"));
	free(env);
	run_free(&r);
}
END_TEST

static Suite *worker_presets_suite(void)
{
	Suite *s = suite_create("worker-presets");
	TCase *tc = tcase_create("command");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(
		tc, test_copilot_preset_is_the_default_and_reads_json_lines);
	tcase_add_test(
		tc, test_command_backend_stops_an_agent_past_its_tool_ceiling);
	tcase_add_test(tc, test_read_only_jobs_get_no_writing_or_shell_tool);
	tcase_add_test(tc,
		       test_a_prompt_starting_with_a_dash_stays_the_prompt);
	tcase_add_test(tc, test_claude_preset_maps_stream_json);
	tcase_add_test(tc, test_codex_preset_maps_exec_json_and_resume);
	tcase_add_test(tc, test_codex_reconnect_notices_do_not_fail_a_turn);
	tcase_add_test(tc, test_codex_waiting_for_the_network_is_stopped);
	tcase_add_test(tc, test_gemini_preset_joins_message_deltas);
	tcase_add_test(tc, test_error_results_fail_with_the_clis_own_text);
	tcase_add_test(tc, test_a_refused_call_is_a_permission_denial);
	tcase_add_test(tc,
		       test_a_rejected_flag_names_the_preset_and_the_version);
	tcase_add_test(tc, test_a_cli_outside_its_verified_range_is_reported);
	tcase_add_test(tc, test_unknown_session_falls_back_to_a_new_one);
	tcase_add_test(tc, test_a_failed_resume_is_not_retried_fresh);
	tcase_add_test(tc, test_a_timed_out_agent_keeps_what_it_printed);
	tcase_add_loop_test(tc, test_real_cli_output_is_read_right, 0,
			    (int)(sizeof(replays) / sizeof(replays[0])));
	tcase_add_test(tc, test_agent_command_failure_is_error_result);
	tcase_add_test(tc, test_agent_sees_only_allowlisted_environment);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(worker_presets_suite());
	int failed;

	if (!getenv("SBXLOOP_WORKER")) {
		fputs("test-worker-presets: SBXLOOP_WORKER is not set\n",
		      stderr);
		return 77; /* skipped */
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

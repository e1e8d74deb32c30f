/*
 * fake-agent.c - stands in for the agent CLIs in the worker's tests, for
 * the cases the real CLIs cannot be made to produce on demand (a hang, a
 * tool storm, an exit status, a forged line).
 *
 * Installed under the name of a CLI via a symlink, it prints that CLI's
 * headless output for a canned session: one tool call and one answer.
 * The shapes imitate real output of the versions the presets are
 * verified with, captured from the real CLIs (tests/fakes/replay/):
 * claude = @anthropic-ai/claude-code 2.1.332 stream-json, codex =
 * @openai/codex 0.171.0 exec --json, gemini = @google/gemini-cli 0.61.0
 * stream-json, copilot = @github/copilot 1.0.102 --output-format json
 * (its schemas/session-events.schema.json). `--version` prints each
 * one's real version line (SBXLOOP_FAKE_AGENT_VERSION overrides the
 * number). Its argv goes to the file named by SBXLOOP_FAKE_AGENT_LOG
 * (one argument per line) so tests can check the flags a preset
 * produced; SBXLOOP_FAKE_AGENT_REPLY sets the answer,
 * SBXLOOP_FAKE_AGENT_EXIT the exit status, SBXLOOP_FAKE_AGENT_ENV a file
 * that receives the environment it was given, SBXLOOP_FAKE_AGENT_REPLAY
 * a file printed instead of the canned session (a captured real
 * stream), SBXLOOP_FAKE_AGENT_STDERR a line for stderr. With SBXLOOP_FAKE_AGENT_NO_RESUME set, a resume request fails
 * with that CLI's own "unknown session" message. As claude,
 * SBXLOOP_FAKE_AGENT_TOOLS=N makes N more tool calls after the first and
 * SBXLOOP_FAKE_AGENT_HANG=S then sleeps S seconds before answering (any
 * CLI: after a replay).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
	putchar('"');
}

static void claude(const char *reply)
{
	puts("{\"type\":\"system\",\"subtype\":\"init\","
	     "\"session_id\":\"claude-sess-1\",\"model\":\"claude-test\"}");
	puts("{\"type\":\"assistant\",\"message\":{\"content\":["
	     "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\","
	     "\"input\":{\"command\":\"ls -la\"}}]}}");
	puts("{\"type\":\"user\",\"message\":{\"content\":["
	     "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\","
	     "\"content\":\"README.md\",\"is_error\":true}]}}");
	if (getenv("SBXLOOP_FAKE_AGENT_TOOLS")) {
		int i, n = atoi(getenv("SBXLOOP_FAKE_AGENT_TOOLS"));

		for (i = 2; i < n + 2; i++)
			printf("{\"type\":\"assistant\",\"message\":{"
			       "\"content\":[{\"type\":\"tool_use\","
			       "\"id\":\"toolu_%d\",\"name\":\"Read\","
			       "\"input\":{\"file_path\":\"f%d\"}}]}}\n",
			       i, i);
		fflush(stdout);
	}
	if (getenv("SBXLOOP_FAKE_AGENT_HANG"))
		sleep((unsigned)atoi(getenv("SBXLOOP_FAKE_AGENT_HANG")));
	fputs("{\"type\":\"assistant\",\"message\":{\"content\":["
	      "{\"type\":\"text\",\"text\":",
	      stdout);
	print_json_string(reply);
	puts("}]}}");
	fputs("{\"type\":\"result\",\"subtype\":\"success\","
	      "\"is_error\":false,\"result\":",
	      stdout);
	print_json_string(reply);
	puts(",\"session_id\":\"claude-sess-1\",\"total_cost_usd\":0.25,"
	     "\"usage\":{\"input_tokens\":10,\"output_tokens\":5,"
	     "\"cache_read_input_tokens\":3,"
	     "\"cache_creation_input_tokens\":2}}");
}

static void codex(const char *reply)
{
	puts("{\"type\":\"thread.started\",\"thread_id\":\"codex-thread-1\"}");
	puts("{\"type\":\"turn.started\"}");
	puts("{\"type\":\"item.started\",\"item\":{\"id\":\"item_0\","
	     "\"type\":\"command_execution\",\"command\":\"bash -lc ls\","
	     "\"status\":\"in_progress\"}}");
	puts("{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\","
	     "\"type\":\"command_execution\",\"command\":\"bash -lc ls\","
	     "\"aggregated_output\":\"README.md\\n\",\"exit_code\":0,"
	     "\"status\":\"completed\"}}");
	fputs("{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\","
	      "\"type\":\"agent_message\",\"text\":",
	      stdout);
	print_json_string(reply);
	puts("}}");
	puts("{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":20,"
	     "\"cached_input_tokens\":4,\"output_tokens\":7}}");
}

static void gemini(const char *reply)
{
	size_t half = strlen(reply) / 2;
	char *first = strndup(reply, half);

	puts("{\"type\":\"init\",\"session_id\":\"gemini-sess-1\","
	     "\"model\":\"gemini-test\"}");
	puts("{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}");
	puts("{\"type\":\"tool_use\",\"tool_name\":\"read_file\","
	     "\"tool_id\":\"t1\",\"parameters\":{\"path\":\"README.md\"}}");
	puts("{\"type\":\"tool_result\",\"tool_id\":\"t1\","
	     "\"status\":\"success\",\"output\":\"hello\"}");
	fputs("{\"type\":\"message\",\"role\":\"assistant\",\"content\":",
	      stdout);
	print_json_string(first ? first : "");
	puts(",\"delta\":true}");
	fputs("{\"type\":\"message\",\"role\":\"assistant\",\"content\":",
	      stdout);
	print_json_string(reply + half);
	puts(",\"delta\":true}");
	puts("{\"type\":\"result\",\"status\":\"success\",\"stats\":"
	     "{\"total_tokens\":30,\"input_tokens\":21,\"output_tokens\":9}}");
	free(first);
}

static void copilot(const char *reply)
{
	puts("{\"type\":\"session.start\",\"data\":{\"sessionId\":"
	     "\"copilot-sess-1\",\"version\":1,\"producer\":"
	     "\"copilot-agent\",\"copilotVersion\":\"1.0.102\","
	     "\"startTime\":\"2026-12-04T00:00:00Z\",\"selectedModel\":"
	     "\"copilot-test\"}}");
	puts("{\"type\":\"tool.execution_start\",\"data\":{\"toolCallId\":"
	     "\"call_1\",\"toolName\":\"bash\",\"arguments\":{"
	     "\"command\":\"ls\"}}}");
	puts("{\"type\":\"tool.execution_complete\",\"data\":{"
	     "\"toolCallId\":\"call_1\",\"success\":true,\"result\":{"
	     "\"content\":\"README.md\"}}}");
	fputs("{\"type\":\"assistant.message\",\"data\":{\"messageId\":"
	      "\"m1\",\"content\":",
	      stdout);
	print_json_string(reply);
	puts("}}");
	puts("{\"type\":\"assistant.usage\",\"data\":{\"model\":"
	     "\"copilot-test\",\"inputTokens\":12,\"outputTokens\":5,"
	     "\"cacheReadTokens\":1,\"cacheWriteTokens\":0}}");
	puts("{\"type\":\"result\",\"sessionId\":\"copilot-sess-1\","
	     "\"exitCode\":0,\"usage\":{\"premiumRequests\":1}}");
}

/* Each CLI's own words for a session it does not know (real output). */
static int no_resume(const char *name, const char *id)
{
	if (!strcmp(name, "claude")) {
		fprintf(stderr, "No conversation found with session ID: %s\n",
			id);
		return 1;
	}
	if (!strcmp(name, "codex")) {
		fprintf(stderr,
			"Error: thread/resume: thread/resume failed: no "
			"rollout found for thread id %s (code -32600)\n",
			id);
		return 1;
	}
	if (!strcmp(name, "gemini")) {
		fputs("Error resuming session: No previous sessions found "
		      "for this project.\n",
		      stderr);
		return 42;
	}
	fprintf(stderr, "Error: No session, task, or name matched '%s'.\n",
		id);
	return 1;
}

static int version(const char *name)
{
	const char *v = getenv("SBXLOOP_FAKE_AGENT_VERSION");

	if (!strcmp(name, "claude"))
		printf("%s (Claude Code)\n", v ? v : "2.1.332");
	else if (!strcmp(name, "codex"))
		printf("codex-cli %s\n", v ? v : "0.171.0");
	else if (!strcmp(name, "gemini"))
		printf("%s\n", v ? v : "0.61.0");
	else
		printf("GitHub Copilot CLI %s.\nRun 'copilot update' to "
		       "check for updates.\n",
		       v ? v : "1.0.102");
	return 0;
}

static int replay(const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[4096];
	size_t n;

	if (!f) {
		perror(path);
		return 2;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/');
	const char *log = getenv("SBXLOOP_FAKE_AGENT_LOG");
	const char *envlog = getenv("SBXLOOP_FAKE_AGENT_ENV");
	const char *reply = getenv("SBXLOOP_FAKE_AGENT_REPLY");
	const char *code = getenv("SBXLOOP_FAKE_AGENT_EXIT");
	int i;

	name = name ? name + 1 : argv[0];
	if (!reply)
		reply = "fake answer";
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return version(name);
	if (log) {
		FILE *f = fopen(log, "w");

		for (i = 0; f && i < argc; i++)
			fprintf(f, "%s\n", argv[i]);
		if (f)
			fclose(f);
	}
	if (envlog) {
		FILE *f = fopen(envlog, "w");

		for (i = 0; f && environ[i]; i++)
			fprintf(f, "%s\n", environ[i]);
		if (f)
			fclose(f);
	}
	for (i = 1; i < argc && getenv("SBXLOOP_FAKE_AGENT_NO_RESUME"); i++) {
		if (!strncmp(argv[i], "--resume=", 9))
			return no_resume(name, argv[i] + 9);
		if ((!strcmp(argv[i], "--resume") ||
		     !strcmp(argv[i], "resume")) &&
		    i + 1 < argc)
			return no_resume(name, argv[i + 1]);
	}
	puts("not json: a banner line the worker must ignore");
	if (getenv("SBXLOOP_FAKE_AGENT_REPLAY")) {
		replay(getenv("SBXLOOP_FAKE_AGENT_REPLAY"));
		fflush(stdout);
		if (getenv("SBXLOOP_FAKE_AGENT_HANG"))
			sleep((unsigned)atoi(
				getenv("SBXLOOP_FAKE_AGENT_HANG")));
	} else if (!strcmp(name, "claude"))
		claude(reply);
	else if (!strcmp(name, "codex"))
		codex(reply);
	else if (!strcmp(name, "gemini"))
		gemini(reply);
	else
		copilot(reply);
	fflush(stdout);
	if (getenv("SBXLOOP_FAKE_AGENT_STDERR"))
		fprintf(stderr, "%s\n", getenv("SBXLOOP_FAKE_AGENT_STDERR"));
	if (code) {
		fputs("fake agent failing on request\n", stderr);
		return atoi(code);
	}
	return 0;
}

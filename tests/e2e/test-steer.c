/*
 * End-to-end suite of chat steering: the real `sbxloop` ($SBXLOOP_BIN)
 * on the local provider with the script backend (tests/scenarios/
 * steer_*.json), steered by `sbxloop steer RUN MESSAGE` from a second
 * process while the run goes on, or before a resume. Asserts on what
 * the scripted agent was asked (the script backend keeps each prompt
 * beside the scenario as scenario.json.prompt.N), the chat.* events,
 * the `steer` attempts, the task rows and the run's stored guidance.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtest.h"

static void scenario(const char *name)
{
	copy_scenario(name);
	rt_write_config("local", NULL, NULL);
}

/* The prompt the scripted agent's reply N answered (caller frees). */
static char *prompt(int n)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "scenario.json.prompt.%d", n);
	return read_file(rel);
}

static void assert_prompt_has(int n, const char *needle)
{
	char *p = prompt(n);

	ck_assert_msg(strstr(p, needle) != NULL,
		      "prompt %d lacks '%s':\n%.3000s", n, needle, p);
	free(p);
}

static void assert_prompt_lacks(int n, const char *needle)
{
	char *p = prompt(n);

	ck_assert_msg(strstr(p, needle) == NULL, "prompt %d has '%s'", n,
		      needle);
	free(p);
}

/*
 * The task row says executing before the boundary that precedes the
 * EXECUTE job (whose events the store may still hold in memory): give
 * the engine a moment past it, so the message lands during the job.
 */
static void into_execute(void)
{
	ck_assert(wait_until("task", "executing", 20));
	sleep_ms(300);
}

static void assert_statuses(const char *run, const char *task,
			    const char *phase, const char *want)
{
	char *got = rt_attempt_statuses(run, task, phase);

	ck_assert_msg(strcmp(got, want) == 0,
		      "%s %s attempts are '%s', not '%s'", task, phase, got,
		      want);
	free(got);
}

static void assert_guidance(const char *run, const char *want)
{
	struct rt_run r;

	rt_run_get(run, &r);
	ck_assert_msg(strcmp(r.guidance_json, want) == 0,
		      "run guidance is %s, not %s", r.guidance_json, want);
	rt_run_release(&r);
}

START_TEST(test_steer_task_from_another_shell_replans_without_budget)
{
	const char *args[] = {"run", "write one file", "--no-tui", NULL};
	char *run;
	pid_t pid;

	scenario("steer_task");
	pid = spawn_sbxloop(NULL, args);
	into_execute();
	run = last_run();
	ck_assert_int_eq(rt_steer(run, "please use capitals"), 0);
	assert_file_has("steer.txt", "queued for run");
	ck_assert_int_eq(wait_code(pid), 0);
	assert_run_state(run, "completed");
	/* the STEER session saw the message, the board and the task */
	assert_prompt_has(4, "please use capitals");
	assert_prompt_has(4, "- t1 [scrutinizing] task t1");
	assert_prompt_has(4, "state: scrutinizing");
	/* its first answer broke the schema and was asked again */
	assert_prompt_has(5, "action steer_task needs non-blank 'guidance'");
	/* the task planned again with the feedback, no budget spent */
	assert_prompt_has(
		6,
		"user steering (must be honored): write the file in capitals");
	{
		struct rt_task t;

		ck_assert_int_eq(rt_task_get(run, "t1", &t), 0);
		ck_assert_int_eq(t.replans, 0);
		ck_assert_int_eq(t.revisions, 0);
		rt_task_release(&t);
	}
	assert_statuses(run, "t1", "plan", "ok,ok");
	assert_statuses(run, "t1", "steer", "steer_task");
	ck_assert_int_eq(rt_event_count(run, "chat.message", "text",
					"please use capitals", NULL),
			 1);
	ck_assert_int_eq(rt_event_count(run, "chat.action", "action",
					"steer_task", "task_id", "t1", NULL),
			 1);
	ck_assert_int_eq(rt_event_count(run, "chat.reply", "reply", "will do",
					"action", "steer_task", NULL),
			 1);
	/* the message is answered once, then no longer pending */
	ck_assert_int_eq(q_int("SELECT count(*) FROM chat_inbox"
			       " WHERE taken_at IS NULL"),
			 0);
	free(run);
}
END_TEST

/*
 * `sbxloop run` on a terminal: a line typed at it is queued like
 * `sbxloop steer`'s, and the reader of the terminal lets the run end.
 * Standard input is the slave side of a pseudo-terminal.
 */
START_TEST(test_a_line_typed_at_the_terminal_steers_the_run)
{
	const char *args[] = {"run", "write one file", "--no-tui", NULL};
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	const char *line = "please use capitals\n";
	char *run, *slave;
	pid_t pid;

	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	slave = ptsname(master);
	ck_assert_ptr_nonnull(slave);
	scenario("steer_task");
	pid = spawn_sbxloop_in(slave, NULL, args);
	into_execute();
	ck_assert_int_eq(write(master, line, strlen(line)),
			 (ssize_t)strlen(line));
	ck_assert_int_eq(wait_code(pid), 0);
	close(master);
	assert_file_has("err.txt", "queued; it is answered at the next");
	run = last_run();
	assert_run_state(run, "completed");
	assert_prompt_has(4, "please use capitals");
	ck_assert_int_eq(rt_event_count(run, "chat.message", "text",
					"please use capitals", NULL),
			 1);
	assert_statuses(run, "t1", "steer", "steer_task");
	free(run);
}
END_TEST

START_TEST(test_message_queued_while_stopped_becomes_lasting_guidance)
{
	const char *args[] = {"run", "two files", "--no-tui", NULL};
	const char *kill_plan[] = {"SBXLOOP_TEST_KILL_AFTER=plan:1", NULL};
	const char *kill_validate[] = {"SBXLOOP_TEST_KILL_AFTER=validate:1",
				       NULL};
	const char *resume[] = {"resume", NULL, "--no-tui", NULL};
	const char *want = "[\"add a license header to every file\"]";
	char *run;

	scenario("steer_resume");
	ck_assert_int_eq(wait_code(spawn_sbxloop(kill_plan, args)),
			 128 + SIGKILL);
	run = last_run();
	ck_assert_int_eq(rt_steer(run, "every file needs a license header"),
			 0);
	assert_file_has("steer.txt", "queued for run");
	resume[1] = run;
	ck_assert_int_eq(wait_code(spawn_sbxloop(kill_validate, resume)),
			 128 + SIGKILL);
	assert_prompt_has(3, "every file needs a license header");
	assert_prompt_has(4, "add a license header to every file");
	assert_guidance(run, want);
	ck_assert_int_eq(rt_event_count(run, "chat.action", "action",
					"steer_run", NULL),
			 1);
	/* a second resume reads the guidance back from the run row */
	ck_assert_int_eq(wait_code(spawn_sbxloop(NULL, resume)), 0);
	assert_run_state(run, "completed");
	assert_prompt_has(7, "add a license header to every file");
	assert_prompt_has(8, "add a license header to every file");
	/* critics are not told to enforce it */
	assert_prompt_lacks(9, "add a license header");
	assert_guidance(run, want);
	ck_assert_int_eq(count_events(run, "chat.message"), 1);
	free(run);
}
END_TEST

START_TEST(test_failed_steer_session_is_reported_and_the_run_goes_on)
{
	const char *args[] = {"run", "write one file", "--no-tui", NULL};
	char *run, *err;
	pid_t pid;

	scenario("steer_fails");
	pid = spawn_sbxloop(NULL, args);
	into_execute();
	run = last_run();
	ck_assert_int_eq(rt_steer(run, "how is it going?"), 0);
	ck_assert_int_eq(wait_code(pid), 0);
	assert_run_state(run, "completed");
	assert_statuses(run, "t1", "steer", "error");
	err = rt_event_text(run, "error", "chat.reply", NULL);
	ck_assert_msg(strstr(err, "invalid output twice") ||
			      strstr(err, "no parseable JSON") ||
			      strstr(err, "JSON"),
		      "chat.reply error is '%s'", err);
	free(err);
	ck_assert_int_eq(count_events(run, "chat.action"), 0);
	assert_guidance(run, "[]");
	free(run);
}
END_TEST

START_TEST(test_steer_task_between_tasks_becomes_steer_run)
{
	const char *args[] = {"run", "one file", "--no-tui", NULL};
	const char *kill_validate[] = {"SBXLOOP_TEST_KILL_AFTER=validate:1",
				       NULL};
	char *run;

	scenario("steer_between");
	ck_assert_int_eq(wait_code(spawn_sbxloop(kill_validate, args)),
			 128 + SIGKILL);
	run = last_run();
	ck_assert_int_eq(rt_steer(run, "small commits please"), 0);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_prompt_has(6, "between tasks");
	ck_assert_int_eq(rt_event_count(run, "chat.action", "action",
					"steer_run", NULL),
			 1);
	assert_guidance(run, "[\"prefer small commits\"]");
	free(run);
}
END_TEST

START_TEST(test_steer_refuses_what_it_cannot_queue)
{
	char *run;

	scenario("happy1");
	ck_assert_int_eq(sbxloop("run", "once", "--no-tui"), 0);
	run = last_run();
	ck_assert_int_eq(rt_steer(run, "too late"), 2);
	assert_file_has("steer-err.txt", "already completed");
	ck_assert_int_eq(rt_steer("r-nosuchrun", "hello"), 2);
	ck_assert_int_eq(rt_steer(run, "   "), 2);
	assert_file_has("steer-err.txt", "empty");
	ck_assert_int_eq(q_int("SELECT count(*) FROM chat_inbox"), 0);
	free(run);
}
END_TEST

START_TEST(test_an_agent_cannot_forge_chat_events)
{
	char *run;

	scenario("steer_forge");
	ck_assert_int_eq(sbxloop("run", "one file", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	ck_assert_int_eq(count_events(run, "chat.action"), 0);
	ck_assert_int_eq(count_events(run, "chat.reply"), 0);
	ck_assert_int_eq(count_events(run, "chat.message"), 0);
	ck_assert_int_ge(rt_event_count(run, "worker.stdout", "line",
					"*chat.action*", NULL),
			 1);
	assert_guidance(run, "[]");
	free(run);
}
END_TEST

static Suite *steer_suite(void)
{
	Suite *s = suite_create("steer");
	TCase *tc = tcase_create("steer");

	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(
		tc, test_steer_task_from_another_shell_replans_without_budget);
	tcase_add_test(
		tc,
		test_message_queued_while_stopped_becomes_lasting_guidance);
	tcase_add_test(
		tc, test_failed_steer_session_is_reported_and_the_run_goes_on);
	tcase_add_test(tc, test_steer_task_between_tasks_becomes_steer_run);
	tcase_add_test(tc, test_a_line_typed_at_the_terminal_steers_the_run);
	tcase_add_test(tc, test_steer_refuses_what_it_cannot_queue);
	tcase_add_test(tc, test_an_agent_cannot_forge_chat_events);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(steer_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

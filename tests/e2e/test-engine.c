/*
 * End-to-end suites of the loop: the real `sbxloop` binary ($SBXLOOP_BIN)
 * runs in a scratch directory with the local (or mock) sandbox provider,
 * the real worker and the script backend replaying a scenario from
 * tests/scenarios/: happy paths, structured output, revisions, replans
 * and budgets, cancel, resume and kills (test-engine-faults has the
 * refusals and sandbox faults). Assertions read the store through its
 * vtable (runs, tasks, attempts, events), the workspace, exit codes and
 * messages.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runtest.h"
#include "testutil.h"

static void scenario(const char *name, const char *extra)
{
	copy_scenario(name);
	rt_write_config("local", NULL, extra);
}

/* ---- the store ---------------------------------------------------------- */

static void assert_task(const char *run, const char *task, const char *state,
			int revisions, int replans)
{
	struct rt_task t;
	char got[128], want[128];

	if (rt_task_get(run, task, &t) == 0)
		snprintf(got, sizeof(got), "%s %d %d", t.state, t.revisions,
			 t.replans);
	else
		got[0] = '\0';
	rt_task_release(&t);
	snprintf(want, sizeof(want), "%s %d %d", state, revisions, replans);
	ck_assert_msg(strcmp(got, want) == 0,
		      "task %s is '%s' (state rev replans), not '%s'", task,
		      got, want);
}

static void assert_attempts(const char *run, const char *task,
			    const char *phase, const char *want)
{
	char *got = rt_attempt_statuses(run, task, phase);

	ck_assert_msg(strcmp(got, want) == 0,
		      "%s %s attempts are '%s', not "
		      "'%s'",
		      task, phase, got, want);
	free(got);
}

/* The run's `reason` (or `kept_reason`), "" when NULL (caller frees). */
static char *run_reason(const char *run, int kept)
{
	struct rt_run r;
	char *s;

	rt_run_get(run, &r);
	s = strdup(kept ? r.kept_reason : r.reason);
	rt_run_release(&r);
	return s;
}

/* A text field of task t1, the scenario's only task (caller frees). */
static char *t1_field(const char *run, const char *which)
{
	return rt_task_field(run, "t1", which);
}

static int file_exists(const char *run, const char *rel)
{
	char *ws = rt_workspace(run);
	char path[8300];
	struct stat st;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	ok = stat(path, &st) == 0;
	free(ws);
	return ok;
}

/* ---- happy paths -------------------------------------------------------- */

START_TEST(test_one_task_completes)
{
	char *run;

	scenario("happy1", NULL);
	ck_assert_int_eq(sbxloop("run", "write one file", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_task(run, "t1", "done", 0, 0);
	assert_attempts(run, "", "decompose", "ok");
	assert_attempts(run, "t1", "plan", "ok");
	assert_attempts(run, "t1", "execute", "ok");
	assert_attempts(run, "t1", "scrutinize", "pass");
	assert_attempts(run, "t1", "verify", "ok");
	assert_attempts(run, "t1", "validate", "accept");
	ck_assert(file_exists(run, "out-t1.txt"));
	ck_assert_int_eq(count_events(run, "run.tasks"), 1);
	ck_assert_int_eq(count_events(run, "run.end"), 1);
	ck_assert_int_eq(count_events(run, "run.artifacts"), 1);
	ck_assert_int_eq(count_events(run, "sandbox.removed"), 1);
	{
		char *out = read_file("out.txt");

		ck_assert_ptr_nonnull(strstr(out, "finished: completed"));
		ck_assert_ptr_nonnull(strstr(out, "t1: done"));
		free(out);
	}
	free(run);
}
END_TEST

START_TEST(test_three_tasks_run_in_dependency_order)
{
	char *run, *order;

	scenario("happy3", NULL);
	ck_assert_int_eq(sbxloop("run", "three files", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	order = rt_task_ids(run);
	ck_assert_str_eq(order, "t1,t2,t3");
	free(order);
	/* the tasks started in that order too */
	order = rt_event_trail(run, "task.start", "task_id");
	ck_assert_str_eq(order, "t1,t2,t3");
	free(order);
	assert_task(run, "t1", "done", 0, 0);
	assert_task(run, "t2", "done", 0, 0);
	assert_task(run, "t3", "done", 0, 0);
	ck_assert(file_exists(run, "out-t3.txt"));
	free(run);
}
END_TEST

/* ---- structured output -------------------------------------------------- */

START_TEST(test_invalid_json_then_valid_is_retried_once)
{
	char *run;

	scenario("invalid_then_valid", NULL);
	ck_assert_int_eq(sbxloop("run", "retry", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_attempts(run, "", "decompose", "ok");
	assert_attempts(run, "t1", "plan", "ok");
	assert_task(run, "t1", "done", 0, 0);
	free(run);
}
END_TEST

START_TEST(test_invalid_json_twice_stops_the_run_resumable)
{
	char *run, *reason;

	scenario("invalid_twice", NULL);
	ck_assert_int_eq(sbxloop("run", "hopeless", "--no-tui"), 2);
	assert_file_has("err.txt", "decompose produced invalid output twice");
	run = last_run();
	assert_run_state(run, "decomposing");
	ck_assert_int_eq(rt_task_count(run), 0);
	assert_file_has("err.txt", "sbxloop resume");
	/* the run row says why it stopped, its state left to resume */
	reason = run_reason(run, 0);
	ck_assert_str_eq(reason, "stopped: decompose produced invalid "
				 "output twice: the response has an unknown "
				 "key 'extra'");
	free(reason);
	free(run);
}
END_TEST

START_TEST(test_verify_commands_that_change_the_machine_are_retried)
{
	char *run, *spec;

	scenario("lint", NULL);
	ck_assert_int_eq(sbxloop("run", "lint", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 0, 0);
	spec = t1_field(run, "spec_json");
	ck_assert_ptr_null(strstr(spec, "sudo"));
	free(spec);
	free(run);
}
END_TEST

START_TEST(test_plan_egress_outside_the_bounds_is_retried)
{
	char *run, *plan;

	scenario("egress_bounds", NULL);
	ck_assert_int_eq(sbxloop("run", "egress", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 0, 0);
	assert_attempts(run, "t1", "plan", "ok");
	plan = rt_attempt_trail(run, NULL, "plan", "output", "\n");
	ck_assert_ptr_null(strstr(plan, "example.org"));
	free(plan);
	free(run);
}
END_TEST

START_TEST(test_plan_egress_inside_the_bounds_is_kept_normalised)
{
	char *run, *plan;

	/* not egress_bounds, whose second plan is for the retry */
	scenario("egress_inside", "policy:\n  allow: [\"*.example.org\"]\n");
	ck_assert_int_eq(sbxloop("run", "egress", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 0, 0);
	assert_attempts(run, "t1", "plan", "ok");
	plan = rt_attempt_trail(run, NULL, "plan", "output", "\n");
	ck_assert_msg(strstr(plan, "\"data.example.org\""), "plan: %s", plan);
	free(plan);
	free(run);
}
END_TEST

/* ---- revisions and replans ---------------------------------------------- */

START_TEST(test_revise_then_pass_spends_one_revision)
{
	char *run, *sid;

	scenario("revise_then_pass", NULL);
	ck_assert_int_eq(sbxloop("run", "revise", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 1, 0);
	assert_attempts(run, "t1", "execute", "ok,ok");
	assert_attempts(run, "t1", "scrutinize", "revise,pass");
	assert_attempts(run, "t1", "verify", "ok");
	sid = t1_field(run, "session_id");
	ck_assert_str_eq(sid, "sess-t1");
	free(sid);
	/* the revision took the first session up again */
	sid = rt_attempt_trail(run, NULL, "execute", "resumed_session", ",");
	ck_assert_str_eq(sid, "-,sess-t1");
	free(sid);
	free(run);
}
END_TEST

START_TEST(test_verify_failures_exhaust_revisions_and_spend_a_replan)
{
	char *run, *msg;

	scenario("verify_replan", NULL);
	ck_assert_int_eq(sbxloop("run", "verify", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 0, 1);
	assert_attempts(run, "t1", "plan", "ok,ok");
	assert_attempts(run, "t1", "verify", "failed,failed,failed,ok");
	/* revisions resume the session; the replan starts a fresh one */
	msg = rt_attempt_trail(run, NULL, "execute", "resumed_session", ",");
	ck_assert_str_eq(msg, "-,sess-t1,sess-t1,-");
	free(msg);
	ck_assert_int_eq(rt_event_count(run, "phase.end", "",
					"*\"status\":\"failed\"*", NULL),
			 3);
	msg = rt_event_text(run, NULL, "phase.end", NULL);
	ck_assert_ptr_nonnull(strstr(msg, "verify command failed"));
	free(msg);
	free(run);
}
END_TEST

START_TEST(test_verify_failures_without_replan_budget_fail_the_task)
{
	char *run, *fb;

	scenario("verify_no_replan", "budgets:\n  max_replans_per_task: 0\n");
	ck_assert_int_eq(sbxloop("run", "verify", "--no-tui"), 1);
	run = last_run();
	assert_run_state(run, "failed");
	assert_task(run, "t1", "failed", 3, 0);
	assert_attempts(run, "t1", "verify", "failed,failed,failed");
	fb = t1_field(run, "last_feedback");
	ck_assert_ptr_nonnull(strstr(fb, "test -f out-t1.txt"));
	free(fb);
	{
		char *out = read_file("out.txt");

		ck_assert_ptr_nonnull(strstr(out, "finished: failed"));
		free(out);
	}
	free(run);
}
END_TEST

START_TEST(test_reject_replans_then_accept)
{
	char *run, *plan;

	scenario("reject_replan_accept", NULL);
	ck_assert_int_eq(sbxloop("run", "reject", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 0, 1);
	assert_attempts(run, "t1", "validate", "reject,accept");
	assert_attempts(run, "t1", "plan", "ok,ok");
	plan = rt_attempt_trail(run, NULL, "plan", "attempt", ",");
	/* the last plan is the second */
	ck_assert_str_eq(strrchr(plan, ',') ? strrchr(plan, ',') + 1 : plan,
			 "2");
	free(plan);
	free(run);
}
END_TEST

START_TEST(test_replan_exhaustion_skips_dependents_only)
{
	char *run;

	scenario("replan_exhaustion", NULL);
	ck_assert_int_eq(sbxloop("run", "mixed", "--no-tui"), 1);
	run = last_run();
	assert_run_state(run, "failed");
	assert_task(run, "t1", "failed", 0, 2);
	assert_task(run, "t2", "skipped", 0, 0);
	assert_task(run, "t3", "done", 0, 0);
	ck_assert(file_exists(run, "out-t3.txt"));
	ck_assert_int_eq(rt_attempt_count(run, "t2", NULL, NULL, NULL), 0);
	free(run);
}
END_TEST

START_TEST(test_degraded_critic_pass_is_downgraded_to_revise)
{
	char *run;

	scenario("degraded_critic", NULL);
	ck_assert_int_eq(sbxloop("run", "degraded", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 1, 0);
	assert_attempts(run, "t1", "scrutinize", "revise,pass");
	ck_assert_int_eq(rt_event_count(run, "phase.end", "",
					"*\"status\":\"degraded\"*", NULL),
			 1);
	free(run);
}
END_TEST

START_TEST(test_verify_suspect_after_a_failed_check_replans)
{
	char *run;

	scenario("verify_suspect", NULL);
	ck_assert_int_eq(sbxloop("run", "suspect", "--no-tui"), 0);
	run = last_run();
	assert_task(run, "t1", "done", 0, 1);
	assert_attempts(run, "t1", "verify", "failed,ok");
	assert_attempts(run, "t1", "plan", "ok,ok");
	ck_assert_int_eq(rt_event_count(run, "phase.end", "",
					"*\"honored\":true*", NULL),
			 1);
	free(run);
}
END_TEST

START_TEST(test_resource_abort_fails_the_task_with_a_diagnosis)
{
	char *run, *fb;

	scenario("resources", "limits:\n  disk_warn: 0\n  disk_abort: 99.5\n"
			      "  mem_warn: 0\n");
	ck_assert_int_eq(sbxloop("run", "full disk", "--no-tui"), 1);
	run = last_run();
	assert_run_state(run, "failed");
	assert_task(run, "t1", "failed", 0, 0);
	fb = t1_field(run, "last_feedback");
	ck_assert_msg(strstr(fb, "sandbox disk exhausted"), "feedback: %s",
		      fb);
	ck_assert_ptr_nonnull(strstr(fb, "99.7% of the workspace"));
	ck_assert_ptr_nonnull(strstr(fb, "limits.disk_abort=99.5%"));
	free(fb);
	free(run);
}
END_TEST

/* ---- budgets ------------------------------------------------------------ */

START_TEST(test_too_many_tasks_stops_the_run)
{
	char *run;

	scenario("too_many", "budgets:\n  max_tasks: 2\n");
	ck_assert_int_eq(sbxloop("run", "big", "--no-tui"), 2);
	assert_file_has("err.txt", "more than budgets.max_tasks=2");
	run = last_run();
	ck_assert_int_eq(rt_task_count(run), 0);
	free(run);
}
END_TEST

START_TEST(test_wall_clock_budget_fails_the_run)
{
	char *run, *reason;

	scenario("wall_clock", "budgets:\n  max_wall_clock_s: 1.5\n");
	ck_assert_int_eq(sbxloop("run", "slow", "--no-tui"), 2);
	assert_file_has("err.txt", "exceeded max_wall_clock_s=1.5");
	run = last_run();
	assert_run_state(run, "failed");
	reason = run_reason(run, 0);
	ck_assert_ptr_nonnull(strstr(reason, "max_wall_clock_s"));
	free(reason);
	free(run);
}
END_TEST

/* ---- cancel, resume ----------------------------------------------------- */

START_TEST(test_cancel_from_another_process_then_resume)
{
	const char *args[] = {"run", "cancel me", "--no-tui", NULL};
	pid_t pid;
	char *run;

	scenario("cancel_resume", NULL);
	pid = spawn_sbxloop(NULL, args);
	ck_assert(wait_until("task", "executing", 20));
	run = last_run();
	{
		/* cancel runs beside the engine, with its own output */
		pid_t c = fork();

		if (c == 0) {
			if (chdir(rt_dir()) < 0)
				_exit(126);
			if (!freopen("cancel.txt", "w", stdout))
				_exit(126);
			execl(env_or("SBXLOOP_BIN", "sbxloop"), "sbxloop",
			      "cancel", run, (char *)NULL);
			_exit(127);
		}
		ck_assert_int_eq(wait_code(c), 0);
	}
	ck_assert_int_eq(wait_code(pid), 2);
	assert_file_has("err.txt", "was cancelled");
	assert_run_state(run, "cancelled");
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_task(run, "t1", "done", 0, 0);
	/* the resumed run did not re-execute: verify resumed after review */
	assert_attempts(run, "t1", "execute", "ok");
	ck_assert_int_eq(count_events(run, "run.start"), 2);
	free(run);
}
END_TEST

/* Entries of directory `path` besides . and .., -1 when unreadable. */
static long dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	long n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/*
 * One process drives a run. A second `resume` of a run that another
 * sbxloop drives is refused with the driver's pid, and takes nothing
 * from it: the first run completes with each step done once (before,
 * the second drove the same run at once, took the first one's replies
 * and failed it).
 */
START_TEST(test_a_second_resume_of_a_driven_run_is_refused)
{
	const char *args[] = {"run", "drive me", "--no-tui", NULL};
	const char *resume[] = {"resume", NULL, "--no-tui", NULL};
	const char *status[] = {"status", NULL, NULL};
	struct tu_run r;
	char want[64], *run;
	pid_t pid;

	scenario("cancel_resume", NULL);
	pid = spawn_sbxloop(NULL, args);
	ck_assert(wait_until("task", "executing", 20));
	run = last_run();
	resume[1] = status[1] = run;
	/* a config that differs would be reported as drift, into the run */
	rt_write_config("local", NULL,
			"budgets:\n  max_revisions_per_task: 5\n");
	rt_capture(&r, resume);
	ck_assert_int_eq(r.status, 2);
	snprintf(want, sizeof(want), "is driven by another sbxloop (pid %d",
		 (int)pid);
	ck_assert_msg(strstr(r.err, want), "stderr: %s", r.err);
	tu_run_free(&r);
	rt_capture(&r, status);
	ck_assert_int_eq(r.status, 0);
	snprintf(want, sizeof(want), "driven by: pid %d (`sbxloop run`",
		 (int)pid);
	ck_assert_msg(strstr(r.out, want), "status: %s", r.out);
	tu_run_free(&r);
	ck_assert_int_eq(wait_code(pid), 0);
	assert_run_state(run, "completed");
	assert_attempts(run, "t1", "execute", "ok");
	ck_assert_int_eq(count_events(run, "run.start"), 1);
	ck_assert_int_eq(count_events(run, "run.config_drift"), 0);
	rt_capture(&r, status);
	ck_assert_msg(!strstr(r.out, "driven by") &&
			      !strstr(r.out, "interrupted"),
		      "status: %s", r.out);
	tu_run_free(&r);
	free(run);
}
END_TEST

/*
 * kill -9 lets go of the run at once: `status` calls the run
 * interrupted (text and JSON), `logs --follow` stops after its events,
 * and a resume started right away drives it to the end. A run refused before it was stored leaves nothing
 * under the state's runs/.
 */
START_TEST(test_a_killed_run_is_interrupted_and_resumes_at_once)
{
	const char *args[] = {"run", "kill me", "--no-tui", NULL};
	const char *env[] = {"SBXLOOP_TEST_KILL_AFTER=plan", NULL};
	const char *status[] = {"status", NULL, NULL};
	const char *json[] = {"status", "--json", NULL};
	const char *follow[] = {"logs", NULL, "--follow", NULL};
	struct tu_run r;
	char *run, *dir;

	scenario("cancel_resume", NULL);
	ck_assert_int_eq(wait_code(spawn_sbxloop(env, args)), 128 + SIGKILL);
	run = last_run();
	status[1] = follow[1] = run;
	rt_capture(&r, status);
	ck_assert_msg(strstr(r.out, "interrupted: no sbxloop drives it"),
		      "status: %s", r.out);
	tu_run_free(&r);
	rt_capture(&r, json);
	ck_assert_msg(strstr(r.out, "\"driver\":null") &&
			      strstr(r.out, "\"interrupted\":true"),
		      "status --json: %s", r.out);
	tu_run_free(&r);
	/* following it ends once its events are read (it waited for ten
	 * minutes of silence before) */
	rt_capture(&r, follow);
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(strstr(r.out, "task.state") &&
			      strstr(r.err, "is interrupted: no sbxloop"),
		      "logs --follow: %s%s", r.out, r.err);
	tu_run_free(&r);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	rt_capture(&r, json);
	ck_assert_msg(strstr(r.out, "\"interrupted\":false"),
		      "status --json: %s", r.out);
	tu_run_free(&r);
	/* refused before the store: no directory is left for it */
	dir = rt_path("state/runs");
	put_file("sbxloop.yaml", "plugins:\n  sandbox: no-such-provider\n"
				 "state_dir: state\n");
	ck_assert_int_eq(sbxloop("run", "never stored", "--no-tui"), 2);
	ck_assert_int_eq(dir_entries(dir), 1);
	free(dir);
	free(run);
}
END_TEST

START_TEST(test_resume_of_a_completed_run_is_refused)
{
	char *run;

	scenario("happy1", NULL);
	ck_assert_int_eq(sbxloop("run", "once", "--no-tui"), 0);
	run = last_run();
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 2);
	assert_file_has("err.txt", "already completed");
	ck_assert_int_eq(sbxloop("resume", "r00000000", "--no-tui"), 2);
	assert_file_has("err.txt", "unknown run r00000000");
	free(run);
}
END_TEST

START_TEST(test_config_change_before_resume_is_reported_as_drift)
{
	char *run, *msg;

	scenario("drift", NULL);
	ck_assert_int_eq(sbxloop("run", "drift", "--no-tui"), 2);
	run = last_run();
	rt_write_config("local", NULL,
			"budgets:\n  max_revisions_per_task: 5\n");
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	msg = rt_event_text(run, NULL, "run.config_drift", NULL);
	ck_assert_msg(strstr(msg, "budgets.max_revisions_per_task (run: 2, "
				  "current: 5)"),
		      "drift event: %s", msg);
	free(msg);
	free(run);
}
END_TEST

static int sandbox_exists(const char *run)
{
	char path[4300];

	snprintf(path, sizeof(path), "%s/state/sandboxes/sbxloop-%s-agent",
		 rt_dir(), run);
	return access(path, F_OK) == 0;
}

START_TEST(test_keep_sandboxes_keeps_the_sandbox)
{
	char *run, *kept;

	scenario("happy1", NULL);
	ck_assert_int_eq(sbxloop("run", "keep", "--keep-sandboxes"), 0);
	run = last_run();
	ck_assert(sandbox_exists(run));
	kept = run_reason(run, 1);
	ck_assert_str_eq(kept, "manual");
	free(kept);
	ck_assert_int_eq(count_events(run, "sandbox.removed"), 0);
	free(run);
}
END_TEST

START_TEST(test_keep_on_failure_keeps_a_failed_runs_sandbox)
{
	char *run, *kept;

	scenario("verify_no_replan", "budgets:\n  max_replans_per_task: 0\n");
	ck_assert_int_eq(sbxloop("run", "fail", "--keep-on-failure"), 1);
	run = last_run();
	ck_assert(sandbox_exists(run));
	kept = run_reason(run, 1);
	ck_assert_str_eq(kept, "debug");
	free(kept);
	ck_assert_int_eq(count_events(run, "run.keep"), 1);
	free(run);
}
END_TEST

START_TEST(test_resume_after_gc_removed_the_workspace_is_refused)
{
	char *run, sql[512];

	scenario("invalid_twice", NULL);
	ck_assert_int_eq(sbxloop("run", "gc", "--no-tui"), 2);
	run = last_run();
	snprintf(sql, sizeof(sql),
		 "INSERT INTO events(run_id, ts, type, data_json) VALUES "
		 "('%s', 0, 'daemon.gc', '{\"workspace_removed\":true}')",
		 run);
	q_exec(sql);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 2);
	assert_file_has("err.txt", "gc sweep removed its workspace");
	assert_run_state(run, "decomposing");
	free(run);
}
END_TEST

/* A workspace file of the run, "" when missing (caller frees). */
static char *workspace_file(const char *run, const char *rel)
{
	char *ws = rt_workspace(run);
	char path[8300], *text;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	free(ws);
	f = fopen(path, "r");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/* Every attempt of the run as phase:attempt:status, oldest first. */
static char *attempt_trail(const char *run)
{
	return rt_attempt_trail(run, NULL, NULL, "trail", " ");
}

/* Whether a phase's slow step is under way: `busy` is "replies:N" (N
 * scenario replies taken) or a workspace file the step creates. */
static int slow_step_started(const char *busy)
{
	char *run, *ws, path[8300];

	if (strncmp(busy, "replies:", 8) == 0)
		return rt_replies_taken() >= strtol(busy + 8, NULL, 10);
	run = last_run();
	ws = rt_workspace(run);
	snprintf(path, sizeof(path), "%s/%s", ws, busy);
	free(ws);
	free(run);
	return rt_exists(path);
}

/*
 * SIGKILL `sbxloop run` once its `what` (wait_until) is `state` and the
 * slow step `busy` is under way, then resume. Killing on the state
 * alone raced a loaded machine: the run was killed before its agent took
 * the slow reply, and the resumed run was one reply behind its script.
 */
static void kill_and_resume(const char *name, const char *what,
			    const char *state, const char *busy)
{
	const char *args[] = {"run", "kill me", "--no-tui", NULL};
	char *run, *log, *trail;
	pid_t pid;
	int rc, waited;

	scenario(name, NULL);
	pid = spawn_sbxloop(NULL, args);
	ck_assert_msg(wait_until(what, state, 20), "never reached: %s %s",
		      what, state);
	for (waited = 0; !slow_step_started(busy); waited++) {
		ck_assert_msg(waited < 400, "%s: never started: %s", name,
			      busy);
		sleep_ms(50);
	}
	sleep_ms(100);
	kill(pid, SIGKILL);
	ck_assert_int_eq(wait_code(pid), 128 + SIGKILL);
	run = last_run();
	rc = sbxloop("resume", run, "--no-tui");
	if (rc != 0) {
		char *err = read_file("err.txt");
		size_t n = strlen(err);

		/* the error is the last line; warnings come first */
		ck_abort_msg("%s: resume exited %d: %s", name, rc,
			     n > 200 ? err + n - 200 : err);
	}
	/* the same final state as an uninterrupted run */
	assert_run_state(run, "completed");
	assert_task(run, "t1", "done", 0, 0);
	ck_assert(file_exists(run, "out-t1.txt"));
	ck_assert_int_eq(rt_task_count(run), 1);
	/* and the same attempts: no committed phase ran twice */
	trail = attempt_trail(run);
	ck_assert_msg(strcmp(trail, "decompose:1:ok plan:1:ok execute:1:ok "
				    "scrutinize:1:pass verify:1:ok "
				    "validate:1:accept") == 0,
		      "attempts: %s", trail);
	free(trail);
	log = workspace_file(run, "executed.log");
	ck_assert_msg(strcmp(log, "executed\n") == 0, "the executor ran %s",
		      log);
	free(log);
	free(run);
}

START_TEST(test_sigkill_during_each_phase_then_resume)
{
	/* the slow reply is the n-th (generate.py); verify's slow command
	 * leaves .slow-once */
	static const char *const cases[][4] = {
		{"kill_decompose", "run", "decomposing", "replies:1"},
		{"kill_plan", "task", "planning", "replies:2"},
		{"kill_execute", "task", "executing", "replies:3"},
		{"kill_scrutinize", "task", "scrutinizing", "replies:4"},
		{"kill_verify", "task", "verifying", ".slow-once"},
		{"kill_validate", "task", "validating", "replies:5"},
	};

	kill_and_resume(cases[_i][0], cases[_i][1], cases[_i][2],
			cases[_i][3]);
}
END_TEST

/*
 * SIGKILL right after the commit of each phase's result (the n-th of
 * its kind), before the state change that follows it: the resumed run
 * takes the stored result and runs no committed phase again. The
 * scenario goes through a revision and a replan, so execute, scrutinize
 * and verify numbers repeat across plans.
 */
START_TEST(test_sigkill_after_each_committed_phase_runs_it_once)
{
	static const char *const points[] = {
		"decompose:1", "plan:1",       "execute:1",    "scrutinize:1",
		"execute:2",   "scrutinize:2", "verify:1",     "validate:1",
		"plan:2",      "execute:3",    "scrutinize:3", "verify:2",
		"validate:2",
	};
	const char *args[] = {"run", "kill me", "--no-tui", NULL};
	char env[64], *run, *log, *trail;
	const char *envs[] = {env, NULL};
	pid_t pid;

	snprintf(env, sizeof(env), "SBXLOOP_TEST_KILL_AFTER=%s", points[_i]);
	scenario("kill_committed", NULL);
	pid = spawn_sbxloop(envs, args);
	ck_assert_int_eq(wait_code(pid), 128 + SIGKILL);
	run = last_run();
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_task(run, "t1", "done", 0, 1);
	trail = attempt_trail(run);
	ck_assert_msg(strcmp(trail,
			     "decompose:1:ok plan:1:ok execute:1:ok "
			     "scrutinize:1:revise execute:2:ok "
			     "scrutinize:2:pass verify:2:ok validate:1:reject "
			     "plan:2:ok execute:1:ok scrutinize:1:pass "
			     "verify:1:ok validate:2:accept") == 0,
		      "killed after %s, attempts: %s", points[_i], trail);
	free(trail);
	log = workspace_file(run, "executed.log");
	ck_assert_msg(strcmp(log, "executed\nexecuted\nexecuted\n") == 0,
		      "killed after %s, the executor ran:\n%s", points[_i],
		      log);
	free(log);
	/* the stored verdicts' events were not repeated */
	ck_assert_int_eq(count_events(run, "phase.verdict"), 5);
	free(run);
}
END_TEST

START_TEST(test_ctrl_c_removes_sandboxes_and_leaves_the_run_resumable)
{
	const char *args[] = {"run", "interrupt me", "--no-tui", NULL};
	char path[4200], *run, *out;
	pid_t pid;

	scenario("kill_execute", NULL);
	pid = spawn_sbxloop(NULL, args);
	ck_assert(wait_until("task", "executing", 20));
	sleep_ms(300);
	kill(pid, _i ? SIGTERM : SIGINT);
	ck_assert_int_eq(wait_code(pid), 130);
	run = last_run();
	out = read_file("out.txt");
	ck_assert_msg(strstr(out, "sbxloop resume"), "stdout: %s", out);
	free(out);
	/* the persisted state is untouched and no sandbox is left */
	assert_run_state(run, "running");
	snprintf(path, sizeof(path), "%s/state/sandboxes/sbxloop-%s-agent",
		 rt_dir(), run);
	ck_assert_int_ne(access(path, F_OK), 0);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	free(run);
}
END_TEST

START_TEST(test_second_ctrl_c_forces_the_exit)
{
	const char *args[] = {"run", "interrupt me twice", "--no-tui", NULL};
	pid_t pid;
	char *run;

	scenario("kill_execute", NULL);
	pid = spawn_sbxloop(NULL, args);
	ck_assert(wait_until("task", "executing", 20));
	sleep_ms(300);
	kill(pid, SIGINT);
	sleep_ms(100);
	kill(pid, SIGINT);
	ck_assert_int_eq(wait_code(pid), 130);
	assert_file_has("err.txt", "forced exit");
	run = last_run();
	assert_run_state(run, "running");
	free(run);
}
END_TEST

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc;

	tc = tcase_create("happy");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, test_one_task_completes);
	tcase_add_test(tc, test_three_tasks_run_in_dependency_order);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, test_invalid_json_then_valid_is_retried_once);
	tcase_add_test(tc, test_invalid_json_twice_stops_the_run_resumable);
	tcase_add_test(
		tc, test_verify_commands_that_change_the_machine_are_retried);
	tcase_add_test(tc, test_plan_egress_outside_the_bounds_is_retried);
	tcase_add_test(tc,
		       test_plan_egress_inside_the_bounds_is_kept_normalised);
	suite_add_tcase(s, tc);

	tc = tcase_create("budgets");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, test_revise_then_pass_spends_one_revision);
	tcase_add_test(
		tc, test_verify_failures_exhaust_revisions_and_spend_a_replan);
	tcase_add_test(
		tc, test_verify_failures_without_replan_budget_fail_the_task);
	tcase_add_test(tc, test_reject_replans_then_accept);
	tcase_add_test(tc, test_replan_exhaustion_skips_dependents_only);
	tcase_add_test(tc, test_degraded_critic_pass_is_downgraded_to_revise);
	tcase_add_test(tc, test_verify_suspect_after_a_failed_check_replans);
	tcase_add_test(tc,
		       test_resource_abort_fails_the_task_with_a_diagnosis);
	tcase_add_test(tc, test_too_many_tasks_stops_the_run);
	tcase_add_test(tc, test_wall_clock_budget_fails_the_run);
	suite_add_tcase(s, tc);

	tc = tcase_create("resume");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_cancel_from_another_process_then_resume);
	tcase_add_test(tc, test_resume_of_a_completed_run_is_refused);
	tcase_add_test(tc, test_a_second_resume_of_a_driven_run_is_refused);
	tcase_add_test(tc,
		       test_a_killed_run_is_interrupted_and_resumes_at_once);
	tcase_add_test(tc, test_keep_sandboxes_keeps_the_sandbox);
	tcase_add_test(tc, test_keep_on_failure_keeps_a_failed_runs_sandbox);
	tcase_add_test(tc,
		       test_resume_after_gc_removed_the_workspace_is_refused);
	tcase_add_test(tc,
		       test_config_change_before_resume_is_reported_as_drift);
	tcase_add_loop_test(
		tc, test_ctrl_c_removes_sandboxes_and_leaves_the_run_resumable,
		0, 2);
	tcase_add_test(tc, test_second_ctrl_c_forces_the_exit);
	tcase_add_loop_test(tc, test_sigkill_during_each_phase_then_resume, 0,
			    6);
	tcase_add_loop_test(
		tc, test_sigkill_after_each_committed_phase_runs_it_once, 0,
		13);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(engine_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * End-to-end suite of the egress policy (issue 6): the real `sbxloop`
 * binary ($SBXLOOP_BIN) runs scripted scenarios (tests/scenarios/policy_*)
 * in a scratch directory with the local or mock provider, the real worker
 * and the test-only `recgranter` policy granter, which appends every call
 * it gets to a file. test-workspace-run has the resource guardrails, the
 * harvest and workspace isolation. Assertions read the store through its
 * vtable (events in seq order, task and run rows), `sbxloop logs --type
 * policy. --json`, the granter's record, the files and exit codes.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runtest.h"
#include "testutil.h"

/* The recording granter, and bounds that cover *.example.org. */
#define RECORDING                                                             \
	"recgranter:\n  log: grants.log\n"                                    \
	"policy:\n  allow: [\"*.example.org\"]\n"
/* The same granter unable to revoke. */
#define RECORDING_NO_REVOKE                                                   \
	"recgranter:\n  log: grants.log\n  revoke: false\n"                   \
	"policy:\n  allow: [\"*.example.org\"]\n"

/* ---- the store ---------------------------------------------------------- */

/* The types and domains of a run's policy events in seq order:
 * "allow:a.org,revoke:a.org" (caller frees). */
static char *policy_trail(const char *run)
{
	return rt_event_trail(run, "policy.", "domain");
}

static void assert_trail(const char *run, const char *want)
{
	char *got = policy_trail(run);

	ck_assert_msg(strcmp(got, want) == 0,
		      "policy events are '%s', not "
		      "'%s'",
		      got, want);
	free(got);
}

/* A seq: `agg` (min or max) over the run's events of `type` whose data
 * field `field` equals `value` (field NULL: any); 0 when none. */
static long seq_of(const char *run, const char *agg, const char *type,
		   const char *field, const char *value)
{
	return rt_event_seq(run, strcmp(agg, "max") == 0, type, field, value,
			    NULL);
}

/* ---- the granter's record ----------------------------------------------- */

/*
 * grants.log without the pid= fields, so a test can compare it whole;
 * the pids go to `pids` (space-separated, one per line) when non-NULL.
 */
static char *granter_calls(char *pids, size_t pids_len)
{
	char *text = read_file("grants.log"),
	     *out = calloc(1, strlen(text) + 1);
	char *line, *save = NULL, *o = out;

	if (pids)
		pids[0] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *pid = strstr(line, " pid=");

		if (pid) {
			if (pids)
				snprintf(pids + strlen(pids),
					 pids_len - strlen(pids), "%s%s",
					 *pids ? " " : "", pid + 5);
			*pid = '\0';
		}
		o += sprintf(o, "%s\n", line);
	}
	free(text);
	return out;
}

static void assert_granter_calls(const char *want)
{
	char *got = granter_calls(NULL, 0);

	ck_assert_msg(strcmp(got, want) == 0,
		      "the granter was called\n%s\nnot\n%s", got, want);
	free(got);
}

/* ---- egress: grants at EXECUTE entry, revokes at its exit --------------- */

/* The policy events of `sbxloop logs RUN --type policy. --json`. */
static cJSON *policy_log(const char *run)
{
	const char *args[] = {"logs",    run,      "--type",
			      "policy.", "--json", NULL};
	struct tu_run r;
	cJSON *list = cJSON_CreateArray();
	char *line, *save = NULL;

	rt_capture(&r, args);
	ck_assert_msg(r.status == 0, "logs exited %d: %s", r.status, r.err);
	for (line = strtok_r(r.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *ev = cJSON_Parse(line);

		ck_assert_msg(ev != NULL, "logs printed no JSON: %s", line);
		cJSON_AddItemToArray(list, ev);
	}
	tu_run_free(&r);
	return list;
}

static const char *jget(const cJSON *ev, const char *key)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

START_TEST(test_declared_domains_are_granted_at_execute_entry_and_revoked)
{
	char *run, box[64], want[1024];
	long executing, executor, scrutinizing;
	cJSON *log, *ev;
	int i = 0;

	copy_scenario("policy_grant");
	rt_write_config("local", "[recgranter]", RECORDING);
	ck_assert_int_eq(sbxloop("run", "grant", "--no-tui"), 0);
	run = last_run();
	snprintf(box, sizeof(box), "sbxloop-%s-agent", run);
	assert_task_state(run, "t1", "done");
	/* normalised, granted once each; the baseline pypi.org needs none */
	assert_trail(run, "allow:data.example.org,allow:astral.sh,"
			  "revoke:data.example.org,revoke:astral.sh");
	snprintf(want, sizeof(want),
		 "grant %s data.example.org task=t1 phase=execute\n"
		 "grant %s astral.sh task=t1 phase=execute\n"
		 "revoke %s data.example.org task=t1 phase=execute\n"
		 "revoke %s astral.sh task=t1 phase=execute\n",
		 box, box, box, box);
	assert_granter_calls(want);
	/* granted after EXECUTE was entered and before the executor ran;
	 * revoked after it and before SCRUTINIZE started */
	executing = seq_of(run, "min", "task.state", "state", "executing");
	executor = seq_of(run, "min", "agent.message", "agent", "executor");
	scrutinizing =
		seq_of(run, "min", "task.state", "state", "scrutinizing");
	ck_assert_int_gt(executing, 0);
	ck_assert_int_gt(seq_of(run, "min", "policy.allow", NULL, NULL),
			 executing);
	ck_assert_int_lt(seq_of(run, "max", "policy.allow", NULL, NULL),
			 executor);
	ck_assert_int_gt(seq_of(run, "min", "policy.revoke", NULL, NULL),
			 executor);
	ck_assert_int_lt(seq_of(run, "max", "policy.revoke", NULL, NULL),
			 scrutinizing);
	ck_assert_int_lt(scrutinizing, seq_of(run, "min", "agent.message",
					      "agent", "scrutinizer"));

	/* the audit trail the operator reads carries the whole context */
	log = policy_log(run);
	ck_assert_int_eq(cJSON_GetArraySize(log), 4);
	cJSON_ArrayForEach (ev, log) {
		const char *type =
			cJSON_GetObjectItem(ev, "type")->valuestring;

		ck_assert_str_eq(type,
				 i < 2 ? "policy.allow" : "policy.revoke");
		ck_assert_str_eq(jget(ev, "task_id"), "t1");
		ck_assert_str_eq(jget(ev, "phase"), "execute");
		ck_assert_str_eq(jget(ev, "sandbox"), box);
		ck_assert_str_eq(jget(ev, "granter"), "recgranter");
		ck_assert_str_eq(jget(ev, "domain"),
				 i % 2 ? "astral.sh" : "data.example.org");
		ck_assert_str_eq(jget(ev, "reason"),
				 i % 2 ? "install uv" : "fetch data");
		i++;
	}
	ck_assert_str_eq(jget(cJSON_GetArrayItem(log, 1), "message"),
			 "egress granted: astral.sh — install uv");
	ck_assert_str_eq(jget(cJSON_GetArrayItem(log, 2), "message"),
			 "egress revoked: data.example.org — EXECUTE ended");
	cJSON_Delete(log);
	free(run);
}
END_TEST

/*
 * A revision enters EXECUTE again. With a granter that revokes, the
 * grant is made again (allow, revoke, allow, revoke); with one that
 * cannot, the grant is still open and the ledger, idempotent per domain
 * within one sandbox, asks for nothing.
 */
START_TEST(test_a_revision_grants_again_unless_the_grant_is_still_open)
{
	char *run, box[64], want[1024];

	copy_scenario("policy_revise");
	rt_write_config("local", "[recgranter]",
			_i ? RECORDING_NO_REVOKE : RECORDING);
	ck_assert_int_eq(sbxloop("run", "revise", "--no-tui"), 0);
	run = last_run();
	snprintf(box, sizeof(box), "sbxloop-%s-agent", run);
	assert_task_state(run, "t1", "done");
	ck_assert_int_eq(rt_attempt_count(run, NULL, "execute", NULL, NULL),
			 2);
	if (_i == 0) {
		assert_trail(run, "allow:data.example.org,"
				  "revoke:data.example.org,"
				  "allow:data.example.org,"
				  "revoke:data.example.org");
		snprintf(want, sizeof(want),
			 "grant %s data.example.org task=t1 phase=execute\n"
			 "revoke %s data.example.org task=t1 phase=execute\n"
			 "grant %s data.example.org task=t1 phase=execute\n"
			 "revoke %s data.example.org task=t1 phase=execute\n",
			 box, box, box, box);
		/* the second grant came with the second EXECUTE entry */
		ck_assert_int_gt(
			seq_of(run, "max", "policy.allow", NULL, NULL),
			seq_of(run, "min", "phase.verdict", "verdict",
			       "revise"));
	} else {
		assert_trail(run, "allow:data.example.org");
		snprintf(want, sizeof(want),
			 "grant %s data.example.org task=t1 phase=execute\n",
			 box);
	}
	assert_granter_calls(want);
	free(run);
}
END_TEST

/*
 * policy_kill_execute: wait until EXECUTE holds its grant and has taken
 * its slow reply (the third). Killing on the grant alone raced a loaded
 * machine: killed before the reply was taken, the resumed run was one
 * reply behind its script.
 */
static void wait_in_slow_execute(void)
{
	int waited;

	ck_assert(wait_until("event", "policy.allow", 20));
	for (waited = 0; rt_replies_taken() < 3; waited++) {
		ck_assert_msg(waited < 400, "EXECUTE never took its reply");
		sleep_ms(50);
	}
	sleep_ms(100);
}

/*
 * SIGKILL (nothing is cleaned up) or Ctrl-C (the interrupted EXECUTE
 * still revokes) during EXECUTE; `sbxloop resume` provisions a fresh
 * sandbox and grants again at its EXECUTE entry, from another process.
 */
START_TEST(test_resume_grants_again_on_the_fresh_sandbox)
{
	const char *args[] = {"run", "kill me", "--no-tui", NULL};
	char *run, *got, *last, box[64], want[1024], pids[256];
	pid_t pid;

	copy_scenario("policy_kill_execute");
	rt_write_config("local", "[recgranter]", RECORDING);
	pid = spawn_sbxloop(NULL, args);
	wait_in_slow_execute();
	kill(pid, _i ? SIGINT : SIGKILL);
	ck_assert_int_eq(wait_code(pid), _i ? 130 : 128 + SIGKILL);
	run = last_run();
	snprintf(box, sizeof(box), "sbxloop-%s-agent", run);
	/* a killed process revokes nothing; an interrupted one does */
	assert_trail(run, _i ? "allow:astral.sh,revoke:astral.sh"
			     : "allow:astral.sh");

	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_trail(run, _i ? "allow:astral.sh,revoke:astral.sh,"
			       "allow:astral.sh,revoke:astral.sh"
			     : "allow:astral.sh,allow:astral.sh,"
			       "revoke:astral.sh");
	ck_assert_int_eq(count_events(run, "sandbox.ready"), 2);
	/* the second grant went to the sandbox the resume provisioned */
	ck_assert_int_gt(seq_of(run, "max", "policy.allow", NULL, NULL),
			 seq_of(run, "max", "sandbox.ready", NULL, NULL));
	ck_assert_int_lt(
		seq_of(run, "min", "policy.allow", NULL, NULL),
		seq_of(run, "max", "sandbox.provision_start", NULL, NULL));
	if (_i)
		snprintf(want, sizeof(want),
			 "grant %s astral.sh task=t1 phase=execute\n"
			 "revoke %s astral.sh task=t1 phase=execute\n"
			 "grant %s astral.sh task=t1 phase=execute\n"
			 "revoke %s astral.sh task=t1 phase=execute\n",
			 box, box, box, box);
	else
		snprintf(want, sizeof(want),
			 "grant %s astral.sh task=t1 phase=execute\n"
			 "grant %s astral.sh task=t1 phase=execute\n"
			 "revoke %s astral.sh task=t1 phase=execute\n",
			 box, box, box);
	got = granter_calls(pids, sizeof(pids));
	ck_assert_msg(strcmp(got, want) == 0,
		      "the granter was called\n%s\nnot\n%s", got, want);
	/* by the run's process first, then by the resume's */
	last = strrchr(pids, ' ');
	ck_assert_ptr_nonnull(last);
	*last++ = '\0';
	pids[strcspn(pids, " ")] = '\0';
	ck_assert_msg(strcmp(pids, last) != 0,
		      "one process (pid %s) made every call", last);
	free(got);
	free(run);
}
END_TEST

/*
 * A granter that cannot enforce egress (the local provider's) refuses,
 * and so does an empty chain: each declared domain gets a policy.deny
 * saying why, never a silent allow, and the run goes on without it.
 */
START_TEST(test_a_granter_that_cannot_enforce_egress_refuses_with_why)
{
	char *run, *msg, box[64], want[512];
	long executor;

	copy_scenario("policy_grant");
	rt_write_config("local", _i ? "[]" : "[local]",
			"policy:\n  allow: [\"*.example.org\"]\n");
	ck_assert_int_eq(sbxloop("run", "no egress here", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_task_state(run, "t1", "done");
	assert_trail(run, "deny:data.example.org,deny:astral.sh");
	msg = rt_event_text(run, "message", "policy.deny", "domain",
			    "astral.sh", NULL);
	if (_i)
		snprintf(want, sizeof(want),
			 "no granter can enforce it: no policy granter is "
			 "configured (plugins.policy is empty)");
	else
		snprintf(want, sizeof(want),
			 "no granter can enforce it: local: cannot grant "
			 "'astral.sh' to sandbox 'sbxloop-%s-agent': the "
			 "local provider cannot enforce per-domain egress",
			 run);
	ck_assert_msg(strncmp(msg, "egress refused: astral.sh — ", 29) == 0 &&
			      strstr(msg, want),
		      "policy.deny says '%s'", msg);
	free(msg);
	/* each refusal carries the context of a grant */
	snprintf(box, sizeof(box), "sbxloop-%s-agent", run);
	ck_assert_int_eq(rt_event_count(run, "policy.deny", "task_id", "t1",
					"phase", "execute", "sandbox", box,
					"reason", "fetch data", NULL) +
				 rt_event_count(run, "policy.deny", "task_id",
						"t1", "phase", "execute",
						"sandbox", box, "reason",
						"install uv", NULL),
			 2);
	executor = seq_of(run, "min", "agent.message", "agent", "executor");
	ck_assert_int_lt(seq_of(run, "max", "policy.deny", NULL, NULL),
			 executor);
	free(run);
}
END_TEST

/*
 * A grant that fails for another reason than being unsupported is an
 * infrastructure failure: audited, the run stops resumable, and what
 * this EXECUTE entry had already opened is taken back.
 */
START_TEST(test_a_failing_grant_stops_the_run_and_revokes_what_it_opened)
{
	char *run, *msg, box[64], want[512];

	copy_scenario("policy_grant");
	rt_write_config("local", "[recgranter]",
			"recgranter:\n  log: grants.log\n  fail: [astral.sh]\n"
			"policy:\n  allow: [\"*.example.org\"]\n");
	ck_assert_int_eq(sbxloop("run", "broken granter", "--no-tui"), 2);
	assert_file_has("err.txt", "injected failure granting 'astral.sh'");
	assert_file_has("err.txt", "sbxloop resume");
	run = last_run();
	snprintf(box, sizeof(box), "sbxloop-%s-agent", run);
	assert_task_state(run, "t1", "executing");
	ck_assert_int_eq(rt_attempt_count(run, NULL, "execute", NULL, NULL),
			 0);
	assert_trail(run, "allow:data.example.org,deny:astral.sh,"
			  "revoke:data.example.org");
	msg = rt_event_text(run, "message", "policy.deny", NULL);
	ck_assert_str_eq(msg, "egress grant failed: astral.sh — recgranter: "
			      "injected failure granting 'astral.sh'");
	free(msg);
	snprintf(want, sizeof(want),
		 "grant %s data.example.org task=t1 phase=execute\n"
		 "fail %s astral.sh task=t1 phase=execute\n"
		 "revoke %s data.example.org task=t1 phase=execute\n",
		 box, box, box);
	assert_granter_calls(want);
	free(run);
}
END_TEST

/*
 * Under bubblewrap, with /tmp private to the sandbox, the worker (copied
 * into this test's /tmp directory) still runs, and the scripted agent
 * reads its scenario there and keeps its cursor: the provider binds the
 * worker and the directory the core shares.
 */
START_TEST(test_a_scripted_run_works_under_bubblewrap)
{
	char *run, *cursor, *worker = rt_path("sbxloop-worker");
	const char *cp[] = {"cp",
			    env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"),
			    worker, NULL};
	struct tu_run r;

	/* the worker too lives under /tmp, hidden unless bound */
	tu_exec(&r, NULL, NULL, cp);
	ck_assert_int_eq(r.status, 0);
	tu_run_free(&r);
	setenv("SBXLOOP_WORKER", worker, 1); /* this forked test only */
	free(worker);
	copy_scenario("policy_grant");
	rt_write_config("local", "[local]",
			"local:\n  isolation: bwrap\n"
			"policy:\n  allow: [\"*.example.org\"]\n");
	ck_assert_int_eq(sbxloop("run", "confined", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	assert_trail(run, "deny:data.example.org,deny:astral.sh");
	/* the cursor moved on the host, past all five replies */
	cursor = read_file("scenario.json.cursor");
	ck_assert_msg(strtol(cursor, NULL, 10) == 5, "cursor is '%s'", cursor);
	free(cursor);
	free(run);
}
END_TEST

/*
 * The directory holding the scenario also holds the config and the state
 * dir: under bubblewrap only the scenario and its cursor are shared, so
 * an executor that appends `isolation: none` to ../../../../sbxloop.yaml
 * (what the next run would read) or plants a file there changes nothing.
 */
START_TEST(test_an_executor_cannot_reach_the_scenario_directory)
{
	char *run, *before, *after, *cursor, *path;

	copy_scenario("shared_reach");
	rt_write_config("local", "[local]", "local:\n  isolation: bwrap\n");
	before = read_file("sbxloop.yaml");
	ck_assert_int_eq(sbxloop("run", "reach", "--no-tui"), 0);
	run = last_run();
	assert_run_state(run, "completed");
	after = read_file("sbxloop.yaml");
	ck_assert_str_eq(after, before);
	path = rt_path("planted.txt");
	ck_assert_msg(!rt_exists(path), "the executor planted %s", path);
	cursor = read_file("scenario.json.cursor");
	ck_assert_msg(strtol(cursor, NULL, 10) == 5, "cursor is '%s'", cursor);
	free(cursor);
	free(path);
	free(before);
	free(after);
	free(run);
}
END_TEST

/* Does the workspace of `run` hold `rel`? */
static int in_workspace(const char *run, const char *rel)
{
	char *ws = rt_workspace(run);
	char *path;
	int yes;

	ck_assert_msg(*ws, "run %s recorded no workspace", run);
	if (asprintf(&path, "%s/%s", ws, rel) < 0)
		abort();
	yes = rt_exists(path);
	free(path);
	free(ws);
	return yes;
}

/* How often `needle` occurs in the scratch file `rel`. */
static int occurrences(const char *rel, const char *needle)
{
	char *text = read_file(rel);
	const char *p = text;
	int n = 0;

	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	free(text);
	return n;
}

/*
 * Critics that try to change the workspace (tests/scenarios/
 * critic_writes): SCRUTINIZE and VALIDATE each write a file through the
 * script backend and one through a shell command. The backend refuses
 * the first (agent.permission_denied); the shell write fails where the
 * provider binds the workspace read-only for a critic's job.
 */
static char *run_meddling_critics(const char *isolation)
{
	char extra[128];

	copy_scenario("critic_writes");
	snprintf(extra, sizeof(extra), "local:\n  isolation: %s\n", isolation);
	rt_write_config("local", "[local]", extra);
	ck_assert_int_eq(sbxloop("run", "meddle", "--no-tui"), 0);
	return last_run();
}

static void assert_file_writes_refused(const char *run)
{
	static const char *const phases[] = {"scrutinize", "validate"};
	char file[64];
	size_t i;

	assert_run_state(run, "completed");
	ck_assert(in_workspace(run, "out-t1.txt"));
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s-file.txt", phases[i]);
		ck_assert_msg(!in_workspace(run, file), "%s was written",
			      file);
		ck_assert_int_eq(rt_event_count(run, "agent.permission_denied",
						"path", file, "tool", "write",
						NULL),
				 1);
	}
}

START_TEST(test_critics_cannot_write_the_workspace_under_bubblewrap)
{
	char *run = run_meddling_critics("bwrap");

	assert_file_writes_refused(run);
	ck_assert_msg(!in_workspace(run, "scrutinize-shell.txt") &&
			      !in_workspace(run, "validate-shell.txt"),
		      "a critic's shell command wrote the workspace");
	/* both shell writes were run and failed inside the sandbox */
	ck_assert_int_eq(rt_event_count(run, "agent.tool_end", "tool", "shell",
					"success", "0", "args",
					"echo y > *-shell.txt", NULL),
			 2);
	ck_assert_int_eq(count_events(run, "sandbox.critics_unconfined"), 0);
	assert_file_lacks("err.txt", "critics are not confined");
	free(run);
}
END_TEST

START_TEST(test_unconfined_critics_are_warned_about_once)
{
	char *run = run_meddling_critics("none");

	assert_file_writes_refused(run);
	/* nothing stops a shell command: that is what the warning says */
	ck_assert(in_workspace(run, "scrutinize-shell.txt"));
	ck_assert_int_eq(count_events(run, "sandbox.critics_unconfined"), 1);
	ck_assert_int_eq(occurrences("err.txt", "critics are not confined"),
			 1);
	assert_file_has("err.txt", "(local.isolation: bwrap can)");
	free(run);
}
END_TEST

/* Is `line` one whole line of `text`? */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p;

	for (p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') &&
		    (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

/*
 * Deny beats the baseline: a denied registry is left out of the
 * allowlist the sandbox is created with, and a plan declaring it is
 * refused at PLAN, twice, which stops the run with the reason.
 */
START_TEST(test_a_denied_baseline_host_is_not_seeded_nor_declarable)
{
	char *run, *allow, *path;

	copy_scenario("policy_deny_baseline");
	rt_write_config("mock", "[recgranter]",
			"recgranter:\n  log: grants.log\n"
			"policy:\n  deny: [pypi.org, \"*.npmjs.org\"]\n");
	ck_assert_int_eq(sbxloop("run", "pip install", "--keep-sandboxes"), 2);
	assert_file_has("err.txt", "plan produced invalid output twice");
	assert_file_has("err.txt",
			"- pypi.org: matches policy.deny pattern 'pypi.org'");
	run = last_run();
	path = rt_path("state/sandboxes/sbxloop-%s-agent/allow", run);
	allow = tu_read(path);
	ck_assert_msg(allow != NULL, "the mock kept no allowlist at %s", path);
	ck_assert_msg(!has_line(allow, "pypi.org") &&
			      !has_line(allow, "registry.npmjs.org"),
		      "denied hosts were seeded:\n%s", allow);
	ck_assert(has_line(allow, "files.pythonhosted.org"));
	ck_assert(has_line(allow, "registry.yarnpkg.com"));
	ck_assert(has_line(allow, "api.githubcopilot.com"));
	ck_assert(has_line(allow, "deb.debian.org"));
	free(allow);
	free(path);
	/* nothing was granted or even offered */
	assert_trail(run, "");
	path = rt_path("grants.log");
	ck_assert(!rt_exists(path));
	free(path);
	assert_task_state(run, "t1", "planning");
	free(run);
}
END_TEST

/*
 * Bounds tightened while a run was down (its stored config edited, as
 * an operator fixing a run would): the resumed EXECUTE refuses the
 * stored plan's domain with a policy.deny and the granter is not asked.
 */
START_TEST(test_a_deny_added_before_resume_refuses_the_stored_grant)
{
	const char *args[] = {"run", "kill me", "--no-tui", NULL};
	char *run, *msg, sql[512], box[64], want[256];
	pid_t pid;

	copy_scenario("policy_kill_execute");
	rt_write_config("local", "[recgranter]", RECORDING);
	pid = spawn_sbxloop(NULL, args);
	wait_in_slow_execute();
	kill(pid, SIGKILL);
	ck_assert_int_eq(wait_code(pid), 128 + SIGKILL);
	run = last_run();
	snprintf(box, sizeof(box), "sbxloop-%s-agent", run);
	snprintf(sql, sizeof(sql),
		 "UPDATE runs SET config_json = json_set(config_json, "
		 "'$.\"policy.deny\"', json('[\"astral.sh\"]')) WHERE "
		 "run_id='%s'",
		 run);
	q_exec(sql);
	ck_assert_int_eq(sbxloop("resume", run, "--no-tui"), 0);
	assert_run_state(run, "completed");
	assert_trail(run, "allow:astral.sh,deny:astral.sh");
	msg = rt_event_text(run, "message", "policy.deny", NULL);
	ck_assert_str_eq(msg, "egress refused: astral.sh — matches "
			      "policy.deny pattern 'astral.sh'");
	free(msg);
	snprintf(want, sizeof(want),
		 "grant %s astral.sh task=t1 phase=execute\n", box);
	assert_granter_calls(want);
	free(run);
}
END_TEST

/*
 * A plan declaring a domain outside the bounds is sent back once with
 * the reasons and the hint; the same plan again stops the run (invalid
 * output twice is an infrastructure failure, UPSTREAM 3.9), resumable,
 * with nothing granted.
 */
START_TEST(test_an_out_of_bounds_plan_twice_stops_the_run_with_the_hint)
{
	char *run, *path;

	copy_scenario("policy_out_of_bounds");
	rt_write_config("local", "[recgranter]", RECORDING);
	ck_assert_int_eq(sbxloop("run", "exfiltrate", "--no-tui"), 2);
	assert_file_has("err.txt", "plan produced invalid output twice: "
				   "plan-declared egress is outside the "
				   "operator's bounds:\n"
				   "- evil.example.com: not covered by "
				   "policy.allow in sbxloop.yaml\n");
	assert_file_has("err.txt", "drop these domains from 'egress': use a "
				   "baseline host; only the operator can "
				   "widen the bounds in sbxloop.yaml");
	assert_file_has("err.txt", "sbxloop resume");
	run = last_run();
	assert_run_state(run, "running");
	assert_task_state(run, "t1", "planning");
	/* both plans were read; neither was accepted */
	ck_assert_int_eq(
		rt_event_count(run, "agent.message", "agent", "planner", NULL),
		2);
	ck_assert_int_eq(rt_attempt_count(run, NULL, "plan", NULL, NULL), 0);
	ck_assert_int_eq(count_events(run, "phase.plan"), 0);
	assert_trail(run, "");
	path = rt_path("grants.log");
	ck_assert(!rt_exists(path));
	free(path);
	free(run);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy-run");
	TCase *tc;

	tc = tcase_create("grants");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(
		tc,
		test_declared_domains_are_granted_at_execute_entry_and_revoked);
	tcase_add_loop_test(
		tc,
		test_a_revision_grants_again_unless_the_grant_is_still_open, 0,
		2);
	tcase_add_loop_test(tc, test_resume_grants_again_on_the_fresh_sandbox,
			    0, 2);
	tcase_add_loop_test(
		tc, test_a_granter_that_cannot_enforce_egress_refuses_with_why,
		0, 2);
	tcase_add_test(
		tc,
		test_a_failing_grant_stops_the_run_and_revokes_what_it_opened);
	tcase_add_test(tc, test_a_scripted_run_works_under_bubblewrap);
	tcase_add_test(tc,
		       test_an_executor_cannot_reach_the_scenario_directory);
	tcase_add_test(
		tc, test_critics_cannot_write_the_workspace_under_bubblewrap);
	tcase_add_test(tc, test_unconfined_critics_are_warned_about_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("bounds");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(
		tc, test_a_denied_baseline_host_is_not_seeded_nor_declarable);
	tcase_add_test(
		tc, test_a_deny_added_before_resume_refuses_the_stored_grant);
	tcase_add_test(
		tc,
		test_an_out_of_bounds_plan_twice_stops_the_run_with_the_hint);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(policy_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

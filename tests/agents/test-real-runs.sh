#!/bin/sh
# test-real-runs.sh - whole sbxloop runs with the REAL agent CLIs
# (claude, codex, gemini, copilot) on the local sandbox provider, their
# model API played by tests/fakes/model-server on loopback; wired as
# examples/demo/agent.sh does it for `scripts/demo --agent NAME`. Per
# CLI it checks, one line each (`ok claude demo`, ...):
#   demo     examples/demo/scenario.json served to the CLI completes:
#            `sbxloop status --json` says completed, the workspace's
#            `make test` prints "all fib tests passed";
#   resume   the demo's revision (reply 4, after SCRUTINIZE asked for
#            one) resumes the executor's own session: its first model
#            request carries the earlier EXECUTE turn (that answer's
#            text), which the first EXECUTE's request did not;
#   events   `sbxloop logs` shows agent.tool_start/agent.tool_end and
#            agent.usage (copilot 1.0.102 prints no usage in JSON mode:
#            for it, agent.message with its model instead);
#   critic refused
#            a SCRUTINIZE whose scripted model tries to write a file and
#            to run `touch` leaves the workspace byte-identical (hashed
#            while the model server holds the critic's first answer and
#            again while it holds the next job's, the revision), and the
#            CLI sent both refusals back to the model; gemini runs as
#            one Node process meanwhile (its preset sets
#            GEMINI_CLI_NO_RELAUNCH: no relaunched Node beside the first);
#   401, 429, 500, cut
#            a fault from the model service ends the run non-zero with
#            the worker's typed error (AgentAuthError, AgentRateLimited,
#            AgentServiceError) in its output and in `sbxloop logs`; the
#            run row keeps its state (decomposing: an infrastructure
#            error leaves a run resumable, docs/engine.md) with reason
#            "stopped: ... TYPE", `sbxloop status` still lists it, and
#            (the 401 case) `sbxloop resume` takes it up again and stops
#            the same way. Retries are off to keep this fast:
#            CLAUDE_CODE_MAX_RETRIES=1, codex's request_max_retries and
#            stream_max_retries 0, gemini's general.maxAttempts 1 (it
#            would retry a 429 or a 500 for minutes); copilot has no
#            such setting (its 500 takes ~20 s).
# Exit 77 (skip) when no CLI is installed, unless
# SBXLOOP_REQUIRE_AGENT_CLIS=1, which makes a missing CLI a failure.
# REAL_RUNS_ONLY picks CLIs, REAL_RUNS_CASES the checks (demo critic
# faults). Scratch space is under $REAL_RUNS_TMP (default /var/tmp): codex
# cannot sandbox commands with its home under /tmp.
set -u

src=${SBXLOOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SBXLOOP_BUILDDIR:-$(pwd)}
sbxloop=${SBXLOOP_BIN:-$build/sbxloop}
server=${MODEL_SERVER:-$build/tests/fakes/model-server}
required=${SBXLOOP_REQUIRE_AGENT_CLIS:-0}
cases=${REAL_RUNS_CASES:-demo critic faults}
SBXLOOP_WORKER=${SBXLOOP_WORKER:-$build/worker/sbxloop-worker}
SBXLOOP_PLUGIN_PATH=${SBXLOOP_PLUGIN_PATH:-$build/plugins}
SBXLOOP_PROMPTS_DIR=$src/prompts
SBXLOOP_PRESET_DIR=$src/worker/presets
SBXLOOP_LOCAL__ISOLATION=none
export SBXLOOP_WORKER SBXLOOP_PLUGIN_PATH SBXLOOP_PROMPTS_DIR \
	SBXLOOP_PRESET_DIR SBXLOOP_LOCAL__ISOLATION

# shellcheck source=../../examples/demo/agent.sh
. "$src/examples/demo/agent.sh"

if [ ! -x "$server" ]; then
	echo "skip: no $server (it is built with Check, by make check)"
	exit 77
fi
for f in "$sbxloop" "$SBXLOOP_WORKER"; do
	if [ ! -x "$f" ]; then
		echo "test-real-runs: $f is not built" >&2
		exit 99
	fi
done
clis=
for name in ${REAL_RUNS_ONLY:-claude codex gemini copilot}; do
	if [ -n "$(demo_agent_find "$name")" ]; then
		clis="$clis $name"
	elif [ "$required" = 1 ]; then
		echo "FAIL $name: not installed (npm ci --ignore-scripts" \
			"--prefix tests/agents), SBXLOOP_REQUIRE_AGENT_CLIS=1"
		exit 1
	else
		echo "skip $name: not installed"
	fi
done
[ -n "$clis" ] || exit 77

root=$(mktemp -d "${REAL_RUNS_TMP:-/var/tmp}/real-runs.XXXXXX") || exit 99
keep=${SBXLOOP_KEEP_TEST_DIRS:-}
trap 'demo_agent_stop; [ -n "$keep" ] || rm -rf "$root"' EXIT
trap 'exit 130' INT TERM
failed=0
outcome="Build a tested Fibonacci command-line tool in C"

ok() {
	echo "ok $1"
}

fail() {
	echo "FAIL $1: $2"
	[ -z "${3:-}" ] || sed 's/^/    /' "$3" | tail -n 15
	failed=1
}

# field JSON-FILE KEY: the first "KEY": "value" of a JSON file
field() {
	sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$1" | head -n 1
}

# turns DIR REPLY: the model-server's logged turn requests of a reply
turns() {
	grep "\"kind\":\"turn\"" "$1/model-log/requests.jsonl" |
		grep "\"reply\":$2[,}]"
}

# wait_reply DIR REPLY: wait (up to 60 s) for that reply's first request
wait_reply() {
	i=0
	while [ $i -lt 600 ]; do
		[ -z "$(turns "$1" "$2" 2>/dev/null | head -n 1)" ] || return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# tree_hash DIR: every file's path and sha256, sorted
tree_hash() {
	(cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum) |
		sha256sum | cut -d' ' -f1
}

# run_case CLI NAME SERVER-ARGS...: one sbxloop run in $root/CLI-NAME
# against a fresh server; sets dir, rc, run, ws. The run is in the
# background while $hook (if set) runs; $after runs after it, the
# server still up.
run_case() {
	cli=$1
	dir=$root/$1-$2
	shift 2
	mkdir -p "$dir"
	cp "$src/examples/demo/sbxloop.yaml" "$dir/"
	demo_agent_setup "$cli" "$dir" || return 1
	demo_agent_start "$server" "$dir" "$@" || return 1
	(cd "$dir" && exec timeout 300 "$sbxloop" run --no-tui "$outcome" \
		>"$dir/out" 2>&1)&
	runpid=$!
	[ -z "${hook:-}" ] || $hook
	wait "$runpid"
	rc=$?
	(cd "$dir" && "$sbxloop" status --json >"$dir/status.json" 2>&1)
	run=$(field "$dir/status.json" run_id)
	ws=$dir/.sbxloop-demo/runs/$run/workspace
	[ -z "${after:-}" ] || $after
	demo_agent_stop
	return 0
}

sbx() {
	(cd "$dir" && "$sbxloop" "$@")
}

check_demo() {
	name=$1
	hook=
	after=
	run_case "$name" demo \
		--from-script "$src/examples/demo/scenario.json" ||
		{ fail "$name demo" "could not start"; return; }
	state=$(field "$dir/status.json" state)
	if [ "$rc" != 0 ] || [ "$state" != completed ]; then
		fail "$name demo" "exit $rc, state '$state'" "$dir/out"
	elif ! (cd "$ws" && MAKEFLAGS= MAKELEVEL= make -s test \
		>"$dir/make-test" 2>&1) ||
		! grep -qx "all fib tests passed" "$dir/make-test"; then
		fail "$name demo" "the workspace's tests do not pass" \
			"$dir/make-test"
	else
		ok "$name demo"
	fi

	# reply 2 is t1's first EXECUTE, reply 4 its revision
	said="Created fib.h, fib.c, main.c and a Makefile"
	first=$(turns "$dir" 2 | head -n 1)
	again=$(turns "$dir" 4 | head -n 1)
	if [ -z "$again" ]; then
		fail "$name resume" "no request for the revision"
	elif echo "$first" | grep -q "$said"; then
		fail "$name resume" "the first EXECUTE holds its own answer"
	elif ! echo "$again" | grep -q "$said"; then
		fail "$name resume" "the revision's request lacks the turn"
	else
		ok "$name resume"
	fi

	sbx logs "$run" --type agent. --json >"$dir/agent-events" 2>&1
	starts=$(grep -c '"type":"agent.tool_start"' "$dir/agent-events")
	ends=$(grep -c '"type":"agent.tool_end"' "$dir/agent-events")
	usage=$(grep '"type":"agent.usage"' "$dir/agent-events" |
		grep -c '"output_tokens":[1-9]')
	msgs=$(grep '"type":"agent.message"' "$dir/agent-events" |
		grep -c '"model":"[^"]')
	# 7 writes and 3 commands in the executors' replies
	if [ "$starts" -lt 10 ] || [ "$ends" -lt 10 ]; then
		fail "$name events" "$starts tool starts, $ends tool ends"
	elif [ "$name" = copilot ] && [ "$msgs" -lt 11 ]; then
		fail "$name events" "$msgs agent.message events with a model"
	elif [ "$name" != copilot ] && [ "$usage" -lt 11 ]; then
		fail "$name events" "$usage agent.usage events, 11 jobs"
	else
		ok "$name events"
	fi
}

# The critic tries a write and a `touch`, then asks for a revision (a
# dirty verdict: a clean one given after failed tool calls is asked
# again by the degraded-tooling guard, and a CLI that counts refused
# calls as failures would then need another reply).
critic_scenario() {
	cat <<'EOF'
[
 {"json": {"tasks": [{"id": "t1", "title": "hello", "depends_on": [],
   "description": "write hello.txt",
   "acceptance_criteria": ["hello.txt says hello"],
   "verify_commands": ["grep -q hello hello.txt"]}]}},
 {"json": {"steps": ["write hello.txt"],
   "expected_artifacts": ["hello.txt"], "verify_commands": []}},
 {"files": {"hello.txt": "hello\n"}, "text": "wrote hello.txt"},
 {"sleep_s": 2, "files": {"critic-wrote.txt": "the critic was here\n"},
  "run": ["touch critic-touched"],
  "json": {"verdict": "revise", "issues": [{"severity": "low",
   "detail": "say hello louder"}], "feedback": "say hello louder"}},
 {"sleep_s": 2, "text": "hello is loud enough"},
 {"json": {"verdict": "pass", "issues": [], "feedback": ""}},
 {"json": {"verdict": "accept", "issues": [], "feedback": ""}}
]
EOF
}

# gemini_nodes: how many Node processes run the gemini CLI now (its
# script, .bin/gemini or gemini.js, among their arguments)
gemini_nodes() {
	n=0
	for f in $(grep -la gemini /proc/[0-9]*/cmdline 2>/dev/null); do
		args=$( (tr '\0' '\n' <"$f") 2>/dev/null) || continue
		case $(echo "$args" | head -n 1) in
		*/node | node) ;;
		*) continue ;;
		esac
		! echo "$args" | grep -Eq '/gemini(\.js)?$' || n=$((n + 1))
	done
	echo "$n"
}

# while the server holds the critics' first answers: hash the workspace
# (and, for gemini, count its Node processes: one, not a relaunched
# child beside its parent)
hash_critics() {
	if wait_reply "$dir" 3; then
		ws=$(ls -d "$dir"/.sbxloop-demo/runs/*/workspace)
		tree_hash "$ws" >"$dir/hash-before"
		[ "$name" != gemini ] || gemini_nodes >"$dir/gemini-nodes"
	fi
	if wait_reply "$dir" 4; then
		tree_hash "$ws" >"$dir/hash-after"
	fi
}

check_critic() {
	name=$1
	mkdir -p "$root/scenarios"
	critic_scenario >"$root/scenarios/critic.json"
	hook=hash_critics
	after=
	run_case "$name" critic \
		--from-script "$root/scenarios/critic.json" ||
		{ fail "$name critic refused" "could not start"; return; }
	what="$name critic refused"
	tries=$(turns "$dir" 3 | wc -l)
	state=$(field "$dir/status.json" state)
	if [ ! -s "$dir/hash-before" ] || [ ! -s "$dir/hash-after" ]; then
		fail "$what" "the critics never asked" "$dir/out"
	elif ! cmp -s "$dir/hash-before" "$dir/hash-after"; then
		fail "$what" "SCRUTINIZE changed the workspace"
	elif [ -e "$ws/critic-wrote.txt" ] || [ -e "$ws/critic-touched" ]; then
		fail "$what" "the critic's files exist"
	elif [ "$name" = gemini ] &&
		[ "$(cat "$dir/gemini-nodes" 2>/dev/null)" != 1 ]; then
		msg="gemini ran as '$(cat "$dir/gemini-nodes" 2>/dev/null)'"
		fail "$what" "$msg Node processes in SCRUTINIZE, not one"
	elif [ "$tries" -lt 3 ]; then
		msg="the critic made $tries requests, not the 3"
		fail "$what" "$msg that return its two refused tools"
	elif [ "$rc" != 0 ] || [ "$state" != completed ]; then
		fail "$what" "exit $rc, state '$state'" "$dir/out"
	else
		ok "$what"
	fi
}

resume_fault() {
	sbx resume "$run" >"$dir/resume" 2>&1
	resume_rc=$?
}

# check_fault CLI CASE TYPE: the run fails with error type TYPE
check_fault() {
	name=$1
	mkdir -p "$root/scenarios"
	case $2 in
	cut) step='{"fault": "cut", "times": 0}' ;;
	*) step="{\"fault\": \"http\", \"status\": $2, \"times\": 0}" ;;
	esac
	echo "{\"steps\": [$step]}" >"$root/scenarios/$2.json"
	start=$(date +%s)
	hook=
	after=
	[ "$2" != 401 ] || after=resume_fault
	run_case "$name" "$2" --scenario "$root/scenarios/$2.json" ||
		{ fail "$name $2" "could not start"; return; }
	took=$(($(date +%s) - start))
	sbx logs "$run" --json >"$dir/events" 2>&1
	sbx status >"$dir/runs" 2>&1
	runs_rc=$?
	state=$(field "$dir/status.json" state)
	reason=$(field "$dir/status.json" reason)
	if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
		fail "$name $2" "sbxloop run exited $rc" "$dir/out"
	elif ! grep -q "\"$3\"" "$dir/events"; then
		fail "$name $2" "no $3 in sbxloop logs" "$dir/out"
	elif ! grep -q "$3" "$dir/out"; then
		fail "$name $2" "sbxloop run does not name $3" "$dir/out"
	elif [ "$runs_rc" != 0 ] || ! grep -q "$run" "$dir/runs"; then
		fail "$name $2" "sbxloop status no longer lists the run" \
			"$dir/runs"
	elif [ "$state" != decomposing ] ||
		! echo "$reason" | grep -q "^stopped: .*$3"; then
		fail "$name $2" "run row: state '$state', reason '$reason'" \
			"$dir/status.json"
	elif [ -n "$after" ] && { [ "$resume_rc" = 0 ] ||
		! grep -q "run.state decomposing" "$dir/resume" ||
		! grep -q "$3" "$dir/resume"; }; then
		fail "$name $2" "resume: exit $resume_rc" "$dir/resume"
	else
		ok "$name $2 (${took}s)"
	fi
}

for name in $clis; do
	for c in $cases; do
		case $c in
		demo) check_demo "$name" ;;
		critic) check_critic "$name" ;;
		faults)
			check_fault "$name" 401 AgentAuthError
			check_fault "$name" 429 AgentRateLimited
			check_fault "$name" 500 AgentServiceError
			check_fault "$name" cut AgentServiceError
			;;
		esac
	done
done
exit $failed

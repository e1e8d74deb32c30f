#!/bin/sh
# Runs the REAL agent CLIs (claude, codex, gemini, copilot) against the
# scripted model server (tests/fakes/model-server) with no credentials
# and no network: each must write hello.txt with its file tool, run
# `echo ran > ran.txt` with its shell tool and print the final answer
# DONE-MARKER; then a 401 from the server must make it exit non-zero
# with its own auth error. One line per CLI: `ok NAME VERSION`,
# `skip NAME: why` or `FAIL NAME: why`; the exit status is 1 on any FAIL.
#
# The CLIs come from PATH or $SBXLOOP_AGENT_CLI_DIR/node_modules/.bin;
# MODEL_SERVER names the server binary (default: the build tree's).
# With SAMPLES=DIR it also runs the 429, 500 and cut faults and keeps
# every run's stdout/stderr/exit status in DIR/<cli>-<case>.* for the
# output parsers' fixtures (SAMPLE_CASES picks the faults, REAL_CLI_ONLY
# the CLIs; gemini retries a 429 or 500 for minutes). Scratch space is
# made under $REAL_CLI_TMP (default /var/tmp): codex refuses to install
# its sandbox helper when CODEX_HOME is under /tmp, and its
# workspace-write sandbox then fails every command. Claude retries even
# a 401 ten times with backoff (minutes), so it runs with
# CLAUDE_CODE_MAX_RETRIES=1; codex's provider has no retries.
set -u

here=$(cd "$(dirname "$0")" && pwd)
server=${MODEL_SERVER:-}
if [ -z "$server" ]; then
	for s in "$here/../fakes/model-server" \
		"${builddir:-.}/tests/fakes/model-server"; do
		[ -x "$s" ] && server=$s && break
	done
fi
if [ -z "$server" ] || [ ! -x "$server" ]; then
	echo "real-cli.sh: no model-server; build it with make check or" \
		"set MODEL_SERVER" >&2
	exit 2
fi
samples=${SAMPLES:-}
root=$(mktemp -d "${REAL_CLI_TMP:-/var/tmp}/real-cli.XXXXXX") || exit 2
trap 'stop_server; rm -rf "$root"' EXIT
trap 'exit 130' INT TERM
key=sk-mock-not-a-real-key
prompt="Write hello.txt, run the echo command, then say you are done."
hello="hello from the model"
spid=
port=
failed=0

# find_cli NAME: the CLI's path, or nothing
find_cli() {
	if [ -n "${SBXLOOP_AGENT_CLI_DIR:-}" ] &&
		[ -x "$SBXLOOP_AGENT_CLI_DIR/node_modules/.bin/$1" ]; then
		echo "$SBXLOOP_AGENT_CLI_DIR/node_modules/.bin/$1"
	else
		command -v "$1" 2>/dev/null
	fi
}

# scenario CASE: the server's script for that case, on stdout
scenario() {
	case $1 in
	success)
		cat <<EOF
{"steps": [
 {"tool": "write_file", "path": "hello.txt", "content": "$hello\n"},
 {"tool": "shell", "command": "echo ran > ran.txt"},
 {"text": "DONE-MARKER"}]}
EOF
		;;
	401) echo '{"steps": [{"fault": "http", "status": 401, "times": 0}]}' ;;
	429) echo '{"steps": [{"fault": "http", "status": 429, "times": 0}]}' ;;
	500) echo '{"steps": [{"fault": "http", "status": 500, "times": 0}]}' ;;
	cut)
		echo '{"steps": [{"fault": "cut", "times": 0,' \
			'"text": "this answer is cut off mid-sentence"}]}'
		;;
	esac
}

# start_server DIR: serve DIR/scenario.json, log to DIR/log; sets port
start_server() {
	mkdir -p "$1/log"
	"$server" --scenario "$1/scenario.json" --port-file "$1/port" \
		--log "$1/log" </dev/null 2>"$1/server.err" &
	spid=$!
	i=0
	while [ ! -s "$1/port" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	port=$(cat "$1/port" 2>/dev/null)
	[ -n "$port" ]
}

stop_server() {
	if [ -n "$spid" ]; then
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		spid=
	fi
}

# run_cli NAME PATH DIR: run the CLI headless in DIR/work; DIR/out,
# DIR/err and DIR/rc receive its output and exit status
run_cli() {
	d=$3
	mkdir -p "$d/work" "$d/home"
	cli=$2
	set -- "$1" env -i "PATH=$PATH" "HOME=$d/home" TERM=dumb NO_COLOR=1 \
		LANG=C.UTF-8
	case $1 in
	claude)
		shift
		set -- "$@" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
			ANTHROPIC_API_KEY=$key IS_SANDBOX=1 \
			CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
			CLAUDE_CODE_MAX_RETRIES=1 \
			"$cli" -p "$prompt" --output-format stream-json \
			--verbose --permission-mode bypassPermissions
		;;
	codex)
		mkdir -p "$d/codex-home"
		cat >"$d/codex-home/config.toml" <<EOF
model = "gpt-5-mock"
model_provider = "mock"

[model_providers.mock]
name = "model-server"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
EOF
		shift
		set -- "$@" CODEX_HOME="$d/codex-home" \
			MOCK_API_KEY=$key "$cli" exec --json \
			--skip-git-repo-check --sandbox workspace-write \
			"$prompt"
		;;
	gemini)
		# GOOGLE_GEMINI_BASE_URL alone selects the "gateway" auth
		# type, which the CLI rejects headless ("Invalid auth method
		# selected."); the API-key type honours the variable too.
		mkdir -p "$d/home/.gemini"
		echo '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' \
			>"$d/home/.gemini/settings.json"
		shift
		# TMPDIR: where it leaves gemini-client-error-*.json reports
		mkdir -p "$d/tmp"
		set -- "$@" GEMINI_API_KEY=$key TMPDIR="$d/tmp" \
			GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$port" \
			"$cli" -p "$prompt" --output-format stream-json \
			--approval-mode yolo --skip-trust
		;;
	copilot)
		shift
		set -- "$@" COPILOT_OFFLINE=true \
			COPILOT_AUTO_UPDATE=false \
			COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$port/v1" \
			COPILOT_PROVIDER_TYPE=openai \
			COPILOT_PROVIDER_WIRE_API=responses \
			COPILOT_PROVIDER_API_KEY=$key COPILOT_MODEL=gpt-5 \
			"$cli" -p "$prompt" --output-format json --allow-all-tools
		;;
	esac
	(cd "$d/work" && timeout "${REAL_CLI_TIMEOUT:-180}" "$@" \
		>"$d/out" 2>"$d/err" </dev/null)
	echo $? >"$d/rc"
}

# run_case NAME PATH CASE: one run against a fresh server; its directory
run_case() {
	d=$root/$1-$3
	mkdir -p "$d"
	scenario "$3" >"$d/scenario.json"
	if ! start_server "$d"; then
		echo "model-server did not start: $(cat "$d/server.err")" \
			>"$d/why"
		stop_server
		return
	fi
	run_cli "$1" "$2" "$d"
	stop_server
	if [ -n "$samples" ]; then
		mkdir -p "$samples"
		for f in out err rc; do
			cp "$d/$f" "$samples/$1-$3.$f"
		done
		cp "$d/log/requests.jsonl" "$samples/$1-$3.requests.jsonl" \
			2>/dev/null
	fi
}

# check_success NAME: why the success run failed, or nothing
check_success() {
	d=$root/$1-success
	[ -f "$d/why" ] && { cat "$d/why"; return; }
	rc=$(cat "$d/rc")
	[ "$rc" = 0 ] || { echo "exit status $rc: $(tail -c 300 "$d/err")"; return; }
	[ "$(cat "$d/work/hello.txt" 2>/dev/null)" = "$hello" ] ||
		{ echo "hello.txt missing or wrong"; return; }
	[ "$(cat "$d/work/ran.txt" 2>/dev/null)" = ran ] ||
		{ echo "ran.txt missing or wrong"; return; }
	grep -q DONE-MARKER "$d/out" ||
		echo "no DONE-MARKER in the output"
}

# The words each CLI uses for a rejected key (its stdout and stderr).
auth_text() {
	case $1 in
	claude) echo 'authentication_error|Invalid API key|API key' ;;
	codex) echo '401 Unauthorized' ;;
	gemini) echo 'UNAUTHENTICATED|invalid api key|401' ;;
	copilot) echo '401|[Uu]nauthorized|invalid api key' ;;
	esac
}

check_401() {
	d=$root/$1-401
	[ -f "$d/why" ] && { cat "$d/why"; return; }
	rc=$(cat "$d/rc")
	[ "$rc" != 0 ] || { echo "401: exit status 0"; return; }
	[ "$rc" != 124 ] || { echo "401: timed out"; return; }
	cat "$d/out" "$d/err" | grep -Eq "$(auth_text "$1")" ||
		echo "401: no auth error in the output"
}

for name in ${REAL_CLI_ONLY:-claude codex gemini copilot}; do
	cli=$(find_cli "$name")
	if [ -z "$cli" ]; then
		echo "skip $name: not found"
		continue
	fi
	version=$("$cli" --version 2>/dev/null | head -n 1 |
		grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1)
	run_case "$name" "$cli" success
	why=$(check_success "$name")
	if [ -z "$why" ]; then
		run_case "$name" "$cli" 401
		why=$(check_401 "$name")
	fi
	if [ -n "$samples" ]; then
		for c in ${SAMPLE_CASES:-429 500 cut}; do
			run_case "$name" "$cli" "$c"
		done
	fi
	if [ -n "$why" ]; then
		echo "FAIL $name: $why"
		failed=1
	else
		echo "ok $name ${version:-unknown}"
	fi
done
exit $failed

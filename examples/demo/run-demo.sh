#!/bin/sh
# Run the sbxloop demo end to end: a scripted agent builds a small C
# project in a fresh workspace while VERIFY runs its real build and test.
# Uses a build tree when there is one (BUILD_DIR, $SBXLOOP_BUILDDIR or
# the checkout itself), else the installed sbxloop. The demo runs in
# SCRATCH_DIR (default: a new directory under $TMPDIR).
#
# With --agent NAME (claude, codex, gemini or copilot) the real agent
# CLI does the work instead of the script backend: the build tree's
# tests/fakes/model-server serves the same scenario.json as that CLI's
# model API on loopback (--from-script), and sbxloop runs the CLI with
# agent.backend: command and agent.preset: NAME, pointed at the server
# with a fake key. The CLI comes from $SBXLOOP_AGENT_CLI_DIR/node_modules
# (see tests/agents/package.json) or PATH. The local sandbox then runs
# it bare (isolation none): under bubblewrap it could neither see a CLI
# installed outside /usr and /opt nor reach the host's loopback.
# Usage: examples/demo/run-demo.sh [--agent NAME] [BUILD_DIR] [SCRATCH_DIR]
set -eu

agent=
if [ $# -ge 2 ] && [ "$1" = --agent ]; then
	agent=$2
	shift 2
fi
case $agent in
'' | claude | codex | gemini | copilot) ;;
*)
	echo "run-demo: unknown agent '$agent' (claude, codex, gemini or" \
		"copilot)" >&2
	exit 2
	;;
esac

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${SBXLOOP_BUILDDIR:-$top}
if [ $# -ge 1 ] && [ -x "$1/sbxloop" ]; then
	build=$(cd "$1" && pwd)
	shift
fi
# codex's sandbox helper fails when CODEX_HOME is under /tmp
scratch=${1:-${TMPDIR:-/tmp}/sbxloop-demo.$$}
[ -z "$agent" ] || scratch=${1:-/var/tmp/sbxloop-demo.$$}

if [ -x "$build/sbxloop" ] && [ -x "$build/worker/sbxloop-worker" ]; then
	sbxloop="$build/sbxloop"
	SBXLOOP_WORKER="$build/worker/sbxloop-worker"
	SBXLOOP_PROMPTS_DIR="$top/prompts"
	SBXLOOP_PLUGIN_PATH="$build/plugins"
	SBXLOOP_PRESET_DIR="$top/worker/presets"
	export SBXLOOP_WORKER SBXLOOP_PROMPTS_DIR SBXLOOP_PLUGIN_PATH \
		SBXLOOP_PRESET_DIR
else
	sbxloop=$(command -v sbxloop) || {
		echo "run-demo: build sbxloop first (make) or install it" >&2
		exit 2
	}
fi

mkdir -p "$scratch"
cp "$here/sbxloop.yaml" "$here/scenario.json" "$scratch/"
rm -f "$scratch/scenario.json.cursor"
cd "$scratch"
echo "== demo directory: $scratch"

spid=
if [ -n "$agent" ]; then
	server=${MODEL_SERVER:-$build/tests/fakes/model-server}
	[ -x "$server" ] || {
		echo "run-demo: no model server at $server (make" \
			"tests/fakes/model-server, or set MODEL_SERVER)" >&2
		exit 2
	}
	# shellcheck source=agent.sh
	. "$here/agent.sh"
	demo_agent_setup "$agent" "$scratch" || exit 2
	trap 'demo_agent_stop' EXIT
	trap 'exit 130' INT TERM
	demo_agent_start "$server" "$scratch" \
		--from-script "$scratch/scenario.json" || exit 2
	echo "== agent: $agent $cli_version ($cli), model server on" \
		"127.0.0.1:$port"
fi

# Confine the agent with bubblewrap where this machine allows it (user
# namespaces on); else run it bare, as sbxloop.yaml says. DEMO_ISOLATION
# forces either.
isolation=${DEMO_ISOLATION:-}
[ -z "$agent" ] || isolation=${DEMO_ISOLATION:-none}
if [ -z "$isolation" ]; then
	isolation=none
	if command -v bwrap >/dev/null 2>&1 &&
		bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all \
			--die-with-parent true >/dev/null 2>&1; then
		isolation=bwrap
	fi
fi
SBXLOOP_LOCAL__ISOLATION=$isolation
export SBXLOOP_LOCAL__ISOLATION
echo "== local sandbox isolation: $isolation"

status=0
"$sbxloop" run --no-tui "Build a tested Fibonacci command-line tool in C" ||
	status=$?

run=$("$sbxloop" status --json 2>/dev/null |
	sed -n 's/.*"run_id"[ ]*:[ ]*"\(r[0-9a-z]*\)".*/\1/p' | head -n 1)
echo
echo "== sbxloop status"
"$sbxloop" status ${run:+"$run"} || true
if [ -n "$run" ]; then
	echo
	echo "== sbxloop logs $run --type phase."
	"$sbxloop" logs "$run" --type phase. || true
	ws=$(ls -d .sbxloop-demo/runs/"$run"/workspace 2>/dev/null || true)
	if [ -n "$ws" ]; then
		echo
		echo "== workspace $scratch/$ws"
		ls "$ws"
		(cd "$ws" && make -s test) || status=1
	fi
fi
exit "$status"

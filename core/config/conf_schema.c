/*
 * The core configuration schema: every key the single-run tool reads,
 * its type, default, one line of help (used by `sbxloop init`) and its
 * validator. Keys follow the upstream tool's sections as YAML mappings;
 * the daemon, Discord and concierge sections are not part of this tool.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/conf.h"
#include "common/policy_patterns.h"

static const char *check_nonneg_int(const struct sl_config_spec *spec,
				    const char *v, char *buf, size_t len)
{
	if (strtoll(v, NULL, 10) < 0)
		return "must be 0 or more";
	return NULL;
}

static const char *check_pos_int(const struct sl_config_spec *spec,
				 const char *v, char *buf, size_t len)
{
	if (strtoll(v, NULL, 10) < 1)
		return "must be 1 or more";
	return NULL;
}

static const char *check_pos_float(const struct sl_config_spec *spec,
				   const char *v, char *buf, size_t len)
{
	if (!(strtod(v, NULL) > 0))
		return "must be greater than 0";
	return NULL;
}

static const char *check_percent(const struct sl_config_spec *spec,
				 const char *v, char *buf, size_t len)
{
	double d = strtod(v, NULL);

	if (!(d >= 0 && d <= 100))
		return "must be a percentage between 0 and 100 (0 disables)";
	return NULL;
}

static const char *check_dir_path(const struct sl_config_spec *spec,
				  const char *v, char *buf, size_t len)
{
	if (!*v)
		return "must not be empty (that would mean the current "
		       "directory): unset it or give a path";
	return NULL;
}

static const char *check_repo(const struct sl_config_spec *spec, const char *v,
			      char *buf, size_t len)
{
	const char *p;
	int slashes = 0, seg = 0;

	for (p = v; *p; p++) {
		if (*p == '/') {
			if (seg == 0)
				return "must look like OWNER/NAME";
			slashes++;
			seg = 0;
			continue;
		}
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' &&
		    *p != '-')
			return "must look like OWNER/NAME (letters, digits, "
			       "'.', '_' and '-')";
		seg++;
	}
	if (slashes != 1 || seg == 0)
		return "must look like OWNER/NAME";
	return NULL;
}

static const char *check_operator_pattern(const struct sl_config_spec *spec,
					  const char *v, char *buf, size_t len)
{
	if (!sl_pattern_valid(v, 1)) {
		snprintf(buf, len,
			 "'%s' is not a domain pattern: use an exact domain "
			 "(pypi.org), '*.domain' (*.example.com) or '*'",
			 v);
		return buf;
	}
	return NULL;
}

static const char *check_domain(const struct sl_config_spec *spec,
				const char *v, char *buf, size_t len)
{
	if (!sl_pattern_valid(v, 0)) {
		snprintf(buf, len,
			 "'%s' is not a domain: use an exact domain or "
			 "'*.domain'",
			 v);
		return buf;
	}
	return NULL;
}

static const char *check_exclude(const struct sl_config_spec *spec,
				 const char *v, char *buf, size_t len)
{
	if (!*v || strchr(v, '/') || strchr(v, '\\') || !strcmp(v, ".") ||
	    !strcmp(v, "..")) {
		snprintf(buf, len,
			 "'%s' must be a bare file or directory name (no "
			 "'/', not '.' or '..')",
			 v);
		return buf;
	}
	return NULL;
}

static const char *check_language(const struct sl_config_spec *spec,
				  const char *v, char *buf, size_t len)
{
	if (!sl_language_canonical(v)) {
		snprintf(buf, len,
			 "unknown language '%s' (supported: python, cpp, "
			 "ruby, java, php, javascript, typescript, go, rust, "
			 "dotnet)",
			 v);
		return buf;
	}
	return NULL;
}

#define STR SBXLOOP_VALUE_STRING
#define INT SBXLOOP_VALUE_INT
#define FLT SBXLOOP_VALUE_FLOAT
#define BOOL SBXLOOP_VALUE_BOOL
#define LIST SBXLOOP_VALUE_LIST

const struct sl_config_spec sl_core_schema[] = {
	{"model", STR, "auto", NULL,
	 "model id the agents use; auto lets the agent CLI choose", NULL},
	{"state_dir", STR, "~/.sbxloop", NULL,
	 "where runs, the database and artifacts live (relative = project)",
	 check_dir_path},
	{"plugin_dir", STR, NULL, NULL,
	 "extra directory searched for plugins (after SBXLOOP_PLUGIN_PATH)",
	 NULL},
	{"prompts_dir", STR, NULL, NULL,
	 "directory of phase prompt templates overriding the installed ones",
	 NULL},
	{"app_name", STR, "", NULL,
	 "if set, every sbx call gets --app-name with this value", NULL},
	{"keep_sandboxes", BOOL, "false", NULL,
	 "never remove a run's sandboxes at the end", NULL},
	{"keep_on_failure", BOOL, "false", NULL,
	 "keep the sandboxes of a run that fails, for debugging", NULL},
	{"chat", BOOL, "true", NULL,
	 "take steering messages typed on this terminal: the dashboard's "
	 "input line, or stdin lines with --no-tui (`sbxloop steer` works "
	 "either way)",
	 NULL},
	{"worker_path", STR, NULL, NULL,
	 "host path of sbxloop-worker (default: the installed one)", NULL},

	{"plugins.sandbox", STR, "sbx", NULL,
	 "sandbox provider: sbx (Docker Sandboxes), local, or a third-party "
	 "plugin",
	 NULL},
	{"plugins.store", STR, "sqlite", NULL, "state store", NULL},
	/* left unset, these two apply only with the sbx provider */
	{"plugins.secrets", LIST, "[sbx-proxy, plain-env]", NULL,
	 "secret strategies, tried in order (unset: sbx's, with sbx only)",
	 NULL},
	{"plugins.policy", LIST, "[sbx, local]", NULL,
	 "egress policy granters, tried in order (unset: the active "
	 "provider's own)",
	 NULL},
	{"plugins.sinks", LIST, "[tui]", NULL,
	 "event sinks every event fans out to", NULL},
	{"plugins.reporters", LIST, "[]", NULL,
	 "reporters ([github] to report progress and deliver)", NULL},

	{"agent.backend", STR, "command", "command|script",
	 "how the worker runs agents: an agent CLI, or a replayed script",
	 NULL},
	{"agent.preset", STR, "copilot", NULL,
	 "agent CLI preset: copilot, claude, codex, gemini, or a file", NULL},
	{"agent.script", STR, NULL, NULL,
	 "scenario file replayed by the script backend", NULL},

	{"run.attest", STR, "quick", "off|quick|full",
	 "security probes at provisioning: quick (cheap subset), full (the "
	 "suite of `sbxloop doctor --deep`, less what needs a throwaway "
	 "pair) or off; a sandbox weaker than its provider claims fails the "
	 "run before any agent job",
	 NULL},

	{"sandbox.template", STR, NULL, NULL,
	 "sandbox template (image) to create sandboxes from", NULL},
	{"sandbox.workspace", STR, NULL, NULL,
	 "host directory the run works on (unset: a fresh directory)", NULL},
	{"sandbox.workspace_isolation", STR, "auto", "auto|clone|in-place",
	 "auto: clone a clean git checkout; clone: always; in-place: never",
	 NULL},
	{"sandbox.lanes", STR, "shared", "shared|per-lane",
	 "with budgets.max_parallel_tasks > 1: every lane in the run's "
	 "agent sandbox, or one agent sandbox per lane",
	 NULL},
	{"sandbox.extra_allow_domains", LIST, "[]", NULL,
	 "domains seeded into every sandbox's network allowlist",
	 check_domain},
	{"sandbox.languages", LIST, "[]", NULL,
	 "toolchains the project uses (empty means python)", check_language},

	{"policy.allow", LIST, "[]", NULL,
	 "patterns plan-declared egress may be granted within",
	 check_operator_pattern},
	{"policy.deny", LIST, "[]", NULL,
	 "patterns never granted; deny wins over everything",
	 check_operator_pattern},

	{"github.repo", STR, NULL, NULL,
	 "OWNER/NAME; unset disables GitHub entirely", check_repo},
	{"github.report", BOOL, "false", NULL,
	 "keep a tracking issue updated with the run's progress", NULL},
	{"github.deliver", BOOL, "false", NULL,
	 "open a pull request with the result of a completed run", NULL},
	{"github.deliver_base", STR, NULL, NULL,
	 "base branch of the pull request (unset: the default branch)", NULL},
	{"github.deliver_draft", BOOL, "false", NULL,
	 "open the pull request as a draft", NULL},
	{"github.create_repo", BOOL, "false", NULL,
	 "create the repository when it does not exist", NULL},
	{"github.create_public", BOOL, "false", NULL,
	 "make a created repository public", NULL},
	{"github.dry_run", BOOL, "false", NULL,
	 "print the delivery plan instead of delivering (deliver --dry-run)",
	 NULL},
	{"github.api_url", STR, "https://api.github.com", NULL,
	 "GitHub API base URL (GitHub Enterprise, or a test server)", NULL},

	{"artifacts.exclude", LIST,
	 "[.git, .sbxloop, .mypy_cache, .nox, .pytest_cache, .ruff_cache, "
	 ".tox, .venv, \"*.egg-info\", __pycache__, venv, node_modules, "
	 "target, .gradle, obj, .bundle, CMakeFiles]",
	 NULL, "names never harvested or delivered (replaces the default)",
	 check_exclude},
	{"artifacts.harvest_mode", STR, "per-task", "per-task|final",
	 "harvest unmounted workspaces after every task or once at the end",
	 NULL},

	{"budgets.max_revisions_per_task", INT, "2", NULL,
	 "re-executions a plan gets after scrutiny or verify failures",
	 check_nonneg_int},
	{"budgets.max_replans_per_task", INT, "1", NULL,
	 "fresh plans a task gets after validation rejects it",
	 check_nonneg_int},
	{"budgets.max_tasks", INT, "20", NULL,
	 "most tasks a decomposition may produce", check_pos_int},
	{"budgets.max_wall_clock_s", FLT, "7200.0", NULL,
	 "wall-clock budget of one run (or resume), seconds", check_pos_float},
	{"budgets.per_job_timeout_s", FLT, "1800.0", NULL,
	 "timeout of one agent or shell job, seconds", check_pos_float},
	{"budgets.max_tool_calls_per_phase", INT, "40", NULL,
	 "tool calls an agent may make in one phase (0: unbounded)",
	 check_nonneg_int},
	{"budgets.trim_system_message", BOOL, "false", NULL,
	 "drop system-prompt sections a phase does not need", NULL},
	{"budgets.max_parallel_tasks", INT, "1", NULL,
	 "tasks that may run at once", check_pos_int},

	{"limits.disk_warn", FLT, "85.0", NULL,
	 "sandbox disk use (%) that raises a warning (0 disables)",
	 check_percent},
	{"limits.disk_abort", FLT, "95.0", NULL,
	 "sandbox disk use (%) that fails the task (0 disables)",
	 check_percent},
	{"limits.mem_warn", FLT, "90.0", NULL,
	 "sandbox memory use (%) that raises a warning (0 disables)",
	 check_percent},
	{"limits.mem_abort", FLT, "0.0", NULL,
	 "sandbox memory use (%) that fails the task (0 disables)",
	 check_percent},
};

const size_t sl_core_schema_len =
	sizeof(sl_core_schema) / sizeof(sl_core_schema[0]);

/*
 * The SBXLOOP_ variables that are not config keys, in one place: a name
 * ending in '*' covers every name it starts. Add a variable here when
 * code starts reading one with getenv().
 */
static const char *const tool_variables[] = {
	/* the host */
	"SBXLOOP_DEBUG",
	"SBXLOOP_JOB_GRACE_S",
	"SBXLOOP_KEEP_MODULES",
	"SBXLOOP_LIBGIT2",
	"SBXLOOP_PLUGIN_PATH",
	"SBXLOOP_PROXY_RESOLVE",
	"SBXLOOP_WORKER",
	/* the worker, which inherits them from the host's environment */
	"SBXLOOP_AGENT_PRESET",
	"SBXLOOP_FAKE_DISK_PCT",
	"SBXLOOP_FAKE_MEM_PCT",
	"SBXLOOP_FAKE_RESOURCES",
	"SBXLOOP_PERSISTENT_ENV",
	"SBXLOOP_PRESET_DIR",
	"SBXLOOP_SCRIPT",
	"SBXLOOP_WORKER_BACKEND",
	"SBXLOOP_WORKER_FSYNC",
	"SBXLOOP_WORKER_FSYNC_EVENTS",
	"SBXLOOP_WORKER_LIBCURL",
	/* make check, the benchmarks and the test fakes */
	"SBXLOOP_AGENT_CLI_DIR",
	"SBXLOOP_BIN",
	"SBXLOOP_BUILDDIR",
	"SBXLOOP_FAKE_AGENT_*",
	"SBXLOOP_KEEP_TEST_DIRS",
	"SBXLOOP_REQUIRE_AGENT_CLIS",
	"SBXLOOP_SRCDIR",
	"SBXLOOP_TEST_*",
};

int sl_tool_variable(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(tool_variables) / sizeof(*tool_variables);
	     i++) {
		const char *t = tool_variables[i];
		size_t n = strlen(t);

		if (t[n - 1] == '*' ? strncmp(name, t, n - 1) == 0
				    : strcmp(name, t) == 0)
			return 1;
	}
	return 0;
}

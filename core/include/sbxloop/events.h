/*
 * sbxloop plugin SDK: the event vocabulary. The one place each event type
 * string is spelled, used by the core, the worker, every in-tree plugin
 * and third-party sinks and reporters alike: host-emitted types (the
 * engine, providers, the CLI) and the worker's types the host relays.
 * Consumers ignore types they do not know; new types are only ever
 * added. The envelope and each type's data are in docs/events.md.
 */
#ifndef SBXLOOP_EVENTS_H
#define SBXLOOP_EVENTS_H

#define SBXLOOP_EVENT_VERSION 1

/* The families: a type is "<family>.<name>"; sinks filter by these. */
#define SBXLOOP_EV_FAMILY_RUN "run."
#define SBXLOOP_EV_FAMILY_TASK "task."
#define SBXLOOP_EV_FAMILY_PHASE "phase."
#define SBXLOOP_EV_FAMILY_SANDBOX "sandbox."
#define SBXLOOP_EV_FAMILY_GH "gh."
#define SBXLOOP_EV_FAMILY_POLICY "policy."
#define SBXLOOP_EV_FAMILY_AGENT "agent."
#define SBXLOOP_EV_FAMILY_WORKER "worker."

/* run lifecycle */
#define SBXLOOP_EV_RUN_START "run.start"
#define SBXLOOP_EV_RUN_STATE "run.state"
#define SBXLOOP_EV_RUN_TASKS "run.tasks"
#define SBXLOOP_EV_RUN_CONFIG_DRIFT "run.config_drift"
#define SBXLOOP_EV_RUN_REPORT "run.report"
#define SBXLOOP_EV_RUN_DELIVER "run.deliver"
#define SBXLOOP_EV_RUN_ARTIFACTS "run.artifacts"
#define SBXLOOP_EV_RUN_KEEP "run.keep"
#define SBXLOOP_EV_RUN_END "run.end"
#define SBXLOOP_EV_RUN_RECONCILED "run.reconciled"

/* tasks and phases */
#define SBXLOOP_EV_TASK_START "task.start"
#define SBXLOOP_EV_TASK_STATE "task.state"
#define SBXLOOP_EV_TASK_END "task.end"
/* lanes: a task's changes collided with another's at merge */
#define SBXLOOP_EV_TASK_CONFLICT "task.conflict"
#define SBXLOOP_EV_PHASE_PLAN "phase.plan"
#define SBXLOOP_EV_PHASE_VERDICT "phase.verdict"
#define SBXLOOP_EV_PHASE_END "phase.end"

/* egress policy audit */
#define SBXLOOP_EV_POLICY_ALLOW "policy.allow"
#define SBXLOOP_EV_POLICY_DENY "policy.deny"
#define SBXLOOP_EV_POLICY_REVOKE "policy.revoke"
#define SBXLOOP_EV_POLICY_BLOCKED "policy.blocked"
/* allowed connections to one domain since the last report, counted */
#define SBXLOOP_EV_POLICY_CONNECT "policy.connect"
/* a substrate's own egress log, collected before teardown (sbx) */
#define SBXLOOP_EV_POLICY_OBSERVED "policy.observed"

/* sandboxes */
#define SBXLOOP_EV_SANDBOX_PROVISION_START "sandbox.provision_start"
#define SBXLOOP_EV_SANDBOX_READY "sandbox.ready"
#define SBXLOOP_EV_SANDBOX_PREBAKED "sandbox.prebaked"
#define SBXLOOP_EV_SANDBOX_REUSED "sandbox.reused"
#define SBXLOOP_EV_SANDBOX_REMOVED "sandbox.removed"
#define SBXLOOP_EV_SANDBOX_WORKSPACE_CLONE "sandbox.workspace_clone"
#define SBXLOOP_EV_SANDBOX_WORKSPACE_MOUNT "sandbox.workspace_mount"
/* a resumed unmounted run's fresh sandbox got the last harvest back */
#define SBXLOOP_EV_SANDBOX_WORKSPACE_SEED "sandbox.workspace_seed"
#define SBXLOOP_EV_SANDBOX_SECRET "sandbox.secret"
#define SBXLOOP_EV_SANDBOX_SECRET_REVOKED "sandbox.secret_revoked"
#define SBXLOOP_EV_SANDBOX_SECRET_FALLBACK "sandbox.secret_env_fallback"
#define SBXLOOP_EV_SANDBOX_SECRET_PROBE_ERROR "sandbox.secret_probe_error"
#define SBXLOOP_EV_SANDBOX_RESOURCES "sandbox.resources"
#define SBXLOOP_EV_SANDBOX_RESOURCES_WARNING "sandbox.resources_warning"
#define SBXLOOP_EV_SANDBOX_TOOLING_WARNING "sandbox.tooling_warning"
#define SBXLOOP_EV_SANDBOX_CRITICS_UNCONFINED "sandbox.critics_unconfined"
#define SBXLOOP_EV_SANDBOX_ATTESTED "sandbox.attested"

/* relayed from the worker */
#define SBXLOOP_EV_WORKER_START "worker.start"
#define SBXLOOP_EV_WORKER_HEARTBEAT "worker.heartbeat"
#define SBXLOOP_EV_WORKER_RESULT "worker.result"
#define SBXLOOP_EV_WORKER_ERROR "worker.error"
#define SBXLOOP_EV_WORKER_END "worker.end"
#define SBXLOOP_EV_WORKER_STDOUT "worker.stdout"
#define SBXLOOP_EV_AGENT_MESSAGE "agent.message"
#define SBXLOOP_EV_AGENT_MESSAGE_DELTA "agent.message_delta"
#define SBXLOOP_EV_AGENT_TOOL_START "agent.tool_start"
#define SBXLOOP_EV_AGENT_TOOL_END "agent.tool_end"
#define SBXLOOP_EV_AGENT_USAGE "agent.usage"
#define SBXLOOP_EV_AGENT_PERMISSION_DENIED "agent.permission_denied"
#define SBXLOOP_EV_AGENT_TOOL_CAP "agent.tool_cap"
#define SBXLOOP_EV_AGENT_TOOL_REQUEST "agent.tool_request"
#define SBXLOOP_EV_AGENT_TOOL_RESPONSE "agent.tool_response"
/* an agent CLI's warning or retry notice (it keeps going) */
#define SBXLOOP_EV_AGENT_NOTICE "agent.notice"
/* a resume the CLI did not know, started afresh */
#define SBXLOOP_EV_AGENT_RESUME_DROPPED "agent.resume_dropped"
/* an agent CLI outside the version range its preset was verified
 * against */
#define SBXLOOP_EV_AGENT_CLI_VERSION "agent.cli_version"
#define SBXLOOP_EV_GH_OP_START "gh.op_start"
#define SBXLOOP_EV_GH_OP_PROGRESS "gh.op_progress"
#define SBXLOOP_EV_GH_OP_END "gh.op_end"
/* a GitHub request about to be tried again after a wait */
#define SBXLOOP_EV_GH_RETRY "gh.retry"

/* chat (reserved for steering) */
#define SBXLOOP_EV_CHAT_MESSAGE "chat.message"
#define SBXLOOP_EV_CHAT_REPLY "chat.reply"
#define SBXLOOP_EV_CHAT_ACTION "chat.action"

/* maintenance */
#define SBXLOOP_EV_GC "daemon.gc"

#endif

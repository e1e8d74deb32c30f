/*
 * The one place each event type string is defined. Host-emitted types
 * (the engine, providers, the CLI) and the worker's types the host
 * recognises. Consumers ignore types they do not know.
 */
#ifndef SBX_EVENT_TYPES_H
#define SBX_EVENT_TYPES_H

#define SBX_EVENT_VERSION 1

/* run lifecycle */
#define SBX_EV_RUN_START "run.start"
#define SBX_EV_RUN_STATE "run.state"
#define SBX_EV_RUN_TASKS "run.tasks"
#define SBX_EV_RUN_CONFIG_DRIFT "run.config_drift"
#define SBX_EV_RUN_REPORT "run.report"
#define SBX_EV_RUN_DELIVER "run.deliver"
#define SBX_EV_RUN_ARTIFACTS "run.artifacts"
#define SBX_EV_RUN_KEEP "run.keep"
#define SBX_EV_RUN_END "run.end"
#define SBX_EV_RUN_RECONCILED "run.reconciled"

/* tasks and phases */
#define SBX_EV_TASK_START "task.start"
#define SBX_EV_TASK_STATE "task.state"
#define SBX_EV_TASK_END "task.end"
#define SBX_EV_PHASE_PLAN "phase.plan"
#define SBX_EV_PHASE_VERDICT "phase.verdict"
#define SBX_EV_PHASE_END "phase.end"

/* egress policy audit */
#define SBX_EV_POLICY_ALLOW "policy.allow"
#define SBX_EV_POLICY_DENY "policy.deny"
#define SBX_EV_POLICY_REVOKE "policy.revoke"

/* sandboxes */
#define SBX_EV_SANDBOX_PROVISION_START "sandbox.provision_start"
#define SBX_EV_SANDBOX_READY "sandbox.ready"
#define SBX_EV_SANDBOX_PREBAKED "sandbox.prebaked"
#define SBX_EV_SANDBOX_REUSED "sandbox.reused"
#define SBX_EV_SANDBOX_REMOVED "sandbox.removed"
#define SBX_EV_SANDBOX_WORKSPACE_CLONE "sandbox.workspace_clone"
#define SBX_EV_SANDBOX_WORKSPACE_MOUNT "sandbox.workspace_mount"
#define SBX_EV_SANDBOX_SECRET "sandbox.secret"
#define SBX_EV_SANDBOX_SECRET_REVOKED "sandbox.secret_revoked"
#define SBX_EV_SANDBOX_SECRET_FALLBACK "sandbox.secret_env_fallback"
#define SBX_EV_SANDBOX_SECRET_PROBE_ERROR "sandbox.secret_probe_error"
#define SBX_EV_SANDBOX_RESOURCES "sandbox.resources"
#define SBX_EV_SANDBOX_RESOURCES_WARNING "sandbox.resources_warning"
#define SBX_EV_SANDBOX_TOOLING_WARNING "sandbox.tooling_warning"
#define SBX_EV_SANDBOX_CRITICS_UNCONFINED "sandbox.critics_unconfined"

/* relayed from the worker */
#define SBX_EV_WORKER_START "worker.start"
#define SBX_EV_WORKER_HEARTBEAT "worker.heartbeat"
#define SBX_EV_WORKER_RESULT "worker.result"
#define SBX_EV_WORKER_ERROR "worker.error"
#define SBX_EV_WORKER_END "worker.end"
#define SBX_EV_WORKER_STDOUT "worker.stdout"
#define SBX_EV_AGENT_MESSAGE "agent.message"
#define SBX_EV_AGENT_MESSAGE_DELTA "agent.message_delta"
#define SBX_EV_AGENT_TOOL_START "agent.tool_start"
#define SBX_EV_AGENT_TOOL_END "agent.tool_end"
#define SBX_EV_AGENT_USAGE "agent.usage"
#define SBX_EV_AGENT_PERMISSION_DENIED "agent.permission_denied"
#define SBX_EV_AGENT_TOOL_CAP "agent.tool_cap"
#define SBX_EV_AGENT_TOOL_REQUEST "agent.tool_request"
#define SBX_EV_AGENT_TOOL_RESPONSE "agent.tool_response"
#define SBX_EV_GH_OP_START "gh.op_start"
#define SBX_EV_GH_OP_PROGRESS "gh.op_progress"
#define SBX_EV_GH_OP_END "gh.op_end"

/* chat (reserved for steering) */
#define SBX_EV_CHAT_MESSAGE "chat.message"
#define SBX_EV_CHAT_REPLY "chat.reply"
#define SBX_EV_CHAT_ACTION "chat.action"

/* maintenance */
#define SBX_EV_GC "daemon.gc"

#endif

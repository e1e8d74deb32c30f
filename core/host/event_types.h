/*
 * The one place each event type string is defined. Host-emitted types
 * (the engine, providers, the CLI) and the worker's types the host
 * recognises. Consumers ignore types they do not know.
 */
#ifndef SL_EVENT_TYPES_H
#define SL_EVENT_TYPES_H

#define SL_EVENT_VERSION 1

/* run lifecycle */
#define SL_EV_RUN_START "run.start"
#define SL_EV_RUN_STATE "run.state"
#define SL_EV_RUN_TASKS "run.tasks"
#define SL_EV_RUN_CONFIG_DRIFT "run.config_drift"
#define SL_EV_RUN_REPORT "run.report"
#define SL_EV_RUN_DELIVER "run.deliver"
#define SL_EV_RUN_ARTIFACTS "run.artifacts"
#define SL_EV_RUN_KEEP "run.keep"
#define SL_EV_RUN_END "run.end"
#define SL_EV_RUN_RECONCILED "run.reconciled"

/* tasks and phases */
#define SL_EV_TASK_START "task.start"
#define SL_EV_TASK_STATE "task.state"
#define SL_EV_TASK_END "task.end"
#define SL_EV_PHASE_PLAN "phase.plan"
#define SL_EV_PHASE_VERDICT "phase.verdict"
#define SL_EV_PHASE_END "phase.end"

/* egress policy audit */
#define SL_EV_POLICY_ALLOW "policy.allow"
#define SL_EV_POLICY_DENY "policy.deny"
#define SL_EV_POLICY_REVOKE "policy.revoke"

/* sandboxes */
#define SL_EV_SANDBOX_PROVISION_START "sandbox.provision_start"
#define SL_EV_SANDBOX_READY "sandbox.ready"
#define SL_EV_SANDBOX_PREBAKED "sandbox.prebaked"
#define SL_EV_SANDBOX_REUSED "sandbox.reused"
#define SL_EV_SANDBOX_REMOVED "sandbox.removed"
#define SL_EV_SANDBOX_WORKSPACE_CLONE "sandbox.workspace_clone"
#define SL_EV_SANDBOX_WORKSPACE_MOUNT "sandbox.workspace_mount"
#define SL_EV_SANDBOX_SECRET "sandbox.secret"
#define SL_EV_SANDBOX_SECRET_REVOKED "sandbox.secret_revoked"
#define SL_EV_SANDBOX_SECRET_FALLBACK "sandbox.secret_env_fallback"
#define SL_EV_SANDBOX_SECRET_PROBE_ERROR "sandbox.secret_probe_error"
#define SL_EV_SANDBOX_RESOURCES "sandbox.resources"
#define SL_EV_SANDBOX_RESOURCES_WARNING "sandbox.resources_warning"
#define SL_EV_SANDBOX_TOOLING_WARNING "sandbox.tooling_warning"
#define SL_EV_SANDBOX_CRITICS_UNCONFINED "sandbox.critics_unconfined"

/* relayed from the worker */
#define SL_EV_WORKER_START "worker.start"
#define SL_EV_WORKER_HEARTBEAT "worker.heartbeat"
#define SL_EV_WORKER_RESULT "worker.result"
#define SL_EV_WORKER_ERROR "worker.error"
#define SL_EV_WORKER_END "worker.end"
#define SL_EV_WORKER_STDOUT "worker.stdout"
#define SL_EV_AGENT_MESSAGE "agent.message"
#define SL_EV_AGENT_MESSAGE_DELTA "agent.message_delta"
#define SL_EV_AGENT_TOOL_START "agent.tool_start"
#define SL_EV_AGENT_TOOL_END "agent.tool_end"
#define SL_EV_AGENT_USAGE "agent.usage"
#define SL_EV_AGENT_PERMISSION_DENIED "agent.permission_denied"
#define SL_EV_AGENT_TOOL_CAP "agent.tool_cap"
#define SL_EV_AGENT_TOOL_REQUEST "agent.tool_request"
#define SL_EV_AGENT_TOOL_RESPONSE "agent.tool_response"
#define SL_EV_GH_OP_START "gh.op_start"
#define SL_EV_GH_OP_PROGRESS "gh.op_progress"
#define SL_EV_GH_OP_END "gh.op_end"

/* chat (reserved for steering) */
#define SL_EV_CHAT_MESSAGE "chat.message"
#define SL_EV_CHAT_REPLY "chat.reply"
#define SL_EV_CHAT_ACTION "chat.action"

/* maintenance */
#define SL_EV_GC "daemon.gc"

#endif

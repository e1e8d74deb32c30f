/*
 * The `sbx` module's descriptor: Docker Sandboxes as a sandbox provider
 * (`sbx`), two secret strategies (`sbx-proxy`, `plain-env`) and a policy
 * granter (`sbx`), and the keys users write under `sbx:`. The only
 * exported symbol of the module.
 */
#include "config.h"

#include "sbx.h"

const struct sbxloop_config_key sbxp_config_keys[] = {
	{"template", SBXLOOP_VALUE_STRING, NULL, NULL,
	 "sbx template to create sandboxes from (default: sandbox.template)"},
	{"call_timeout", SBXLOOP_VALUE_INT, "120", NULL,
	 "seconds before an sbx call (other than create and jobs) is killed"},
	{"create_timeout", SBXLOOP_VALUE_INT, "600", NULL,
	 "seconds before `sbx create` is killed"},
	{"install_runtime", SBXLOOP_VALUE_BOOL, "true", NULL,
	 "apt-get install the worker's runtime libraries (libcjson1; "
	 "libcurl4 in the github sandbox) where they are missing"},
	{NULL, 0, NULL, NULL, NULL}};

static const struct sbxloop_component sbx_components[] = {
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SANDBOX,
		.name = "sbx",
		.ops = &sbxp_sandbox_ops,
		.config_keys = sbxp_config_keys,
		.summary = "Docker Sandboxes microVMs through the sbx CLI",
	},
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SECRET,
		.name = "sbx-proxy",
		.ops = &sbxp_proxy_ops,
		.config_keys = NULL,
		.summary = "credentials registered with sbx's proxy, with a "
			   "visibility probe",
	},
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_SECRET,
		.name = "plain-env",
		.ops = &sbxp_plain_env_ops,
		.config_keys = NULL,
		.summary = "a 0600 env file inside the sandbox the worker "
			   "loads",
	},
	{
		.struct_size = sizeof(struct sbxloop_component),
		.kind = SBXLOOP_KIND_POLICY,
		.name = "sbx",
		.ops = &sbxp_policy_ops,
		.config_keys = sbxp_config_keys,
		.summary = "per-sandbox network egress rules through sbx "
			   "policy, revocable",
	},
};

SBXLOOP_EXPORT const struct sbxloop_plugin_descriptor
	sbxloop_plugin_descriptor = {
		SBXLOOP_DESCRIPTOR_HEADER,
		.name = "sbx",
		.version = PACKAGE_VERSION,
		.components = sbx_components,
		.n_components =
			sizeof(sbx_components) / sizeof(sbx_components[0]),
};

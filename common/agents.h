/*
 * The credential facts of the agent CLIs, in one table read by the host
 * (provisioning, redaction, doctor, `sbxloop secrets`) and by the worker
 * (the environment agents may see): which variable holds each preset's
 * model token, the host a secret proxy binds it to, the model API host
 * the agent sandbox must reach, and what to create when it is missing.
 * The presets in worker/presets/ say how each CLI is driven; this says
 * which credential it needs.
 */
#ifndef SL_AGENTS_H
#define SL_AGENTS_H

struct sl_model_token {
	const char *preset;    /* "copilot", the agent.preset value */
	const char *env;       /* "COPILOT_GITHUB_TOKEN" */
	const char *bind_host; /* where a proxy injects the token */
	const char *api_host;  /* the model service the agent calls */
	const char *advice;    /* what token to create, for errors */
};

/* Every preset's token, terminated by a row whose preset is NULL. */
extern const struct sl_model_token sl_model_tokens[];

/* The row of `preset`, or NULL for an unknown one. */
const struct sl_model_token *sl_model_token_for(const char *preset);
/* The row whose variable is `env`, or NULL. */
const struct sl_model_token *sl_model_token_by_env(const char *env);

/* The GitHub token of the github sandbox: gh and the API read either;
 * GH_TOKEN wins. */
#define SL_GH_TOKEN_ENV "GH_TOKEN"
#define SL_GH_TOKEN_ENV_ALT "GITHUB_TOKEN"

#endif

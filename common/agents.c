/*
 * The agent credential table (agents.h). Data only; compiled into the
 * core and into sbxloop-worker.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "common/agents.h"

const struct sl_model_token sl_model_tokens[] = {
	{"copilot", "COPILOT_GITHUB_TOKEN", "api.github.com",
	 "api.githubcopilot.com",
	 "a fine-grained personal access token with the \"Copilot "
	 "Requests\" permission"},
	{"claude", "ANTHROPIC_API_KEY", "api.anthropic.com",
	 "api.anthropic.com", "an Anthropic API key"},
	{"codex", "OPENAI_API_KEY", "api.openai.com", "api.openai.com",
	 "an OpenAI API key"},
	{"gemini", "GEMINI_API_KEY", "generativelanguage.googleapis.com",
	 "generativelanguage.googleapis.com", "a Gemini API key"},
	{NULL, NULL, NULL, NULL, NULL},
};

const struct sl_model_token *sl_model_token_for(const char *preset)
{
	const struct sl_model_token *t;

	for (t = sl_model_tokens; preset && t->preset; t++)
		if (!strcmp(t->preset, preset))
			return t;
	return NULL;
}

const struct sl_model_token *sl_model_token_by_env(const char *env)
{
	const struct sl_model_token *t;

	for (t = sl_model_tokens; env && t->preset; t++)
		if (!strcmp(t->env, env))
			return t;
	return NULL;
}

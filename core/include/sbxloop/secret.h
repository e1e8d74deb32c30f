/*
 * Secret strategy: makes a credential available to the agent inside one
 * sandbox. Strategies form an ordered chain (config `plugins.secrets`):
 * the first that returns 0 is in effect; SBXLOOP_EUNSUPPORTED passes to
 * the next one. The value is registered for redaction by the core before
 * any strategy sees it, and a strategy must never put it in argv where
 * the substrate accepts stdin.
 *
 * Required slots: create, destroy, provide, revoke.
 */
#ifndef SBXLOOP_SECRET_H
#define SBXLOOP_SECRET_H

#include <sbxloop/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbxloop_secret_req {
	uint32_t struct_size;
	const char *sandbox;   /* sandbox name */
	const char *role;      /* "agent" | "github" */
	const char *env_name;  /* "COPILOT_GITHUB_TOKEN", "GH_TOKEN" */
	const char *value;     /* the secret itself; never log it */
	const char *bind_host; /* host a proxy binds it to, or NULL */
	const char *service;   /* a substrate service name, or NULL */
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

/* How the secret took effect; strings are static or copied in. */
struct sbxloop_secret_outcome {
	uint32_t struct_size;
	char strategy[64];
	/* 1 when the value never enters the sandbox (proxy injection) */
	int never_in_sandbox;
	char detail[256];
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};

struct sbxloop_secret_ops {
	uint32_t struct_size;
	int (*create)(const struct sbxloop_host *host, void **ctx,
		      struct sbxloop_error *err);
	void (*destroy)(void *ctx);
	int (*provide)(void *ctx, const struct sbxloop_secret_req *req,
		       struct sbxloop_secret_outcome *out,
		       struct sbxloop_error *err);
	/* Remove what provide() registered; idempotent. */
	int (*revoke)(void *ctx, const struct sbxloop_secret_req *req,
		      struct sbxloop_error *err);
	/* Registrations this strategy owns (for `sbxloop secrets list`). */
	int (*list)(void *ctx,
		    void (*cb)(void *user, const char *env_name,
			       const char *scope, const char *detail),
		    void *user, struct sbxloop_error *err);
	/* ---- the members of ABI 1.0 end here; later minors append ---- */
};
SBXLOOP_OPS_HEAD_CHECK(struct sbxloop_secret_ops);

#ifdef __cplusplus
}
#endif
#endif

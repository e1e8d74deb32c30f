/*
 * The egress proxy of a `local.network: proxy` sandbox (proxy.c): a
 * filtering HTTP forward proxy (absolute-URI requests and CONNECT, no
 * TLS interception) on a unix socket in the sandbox's directory, run on
 * host threads, deciding every request on the sandbox's live policy.
 * Private to the local module: local.c starts and stops one per proxy
 * sandbox and routes the granter's grants and revokes to it.
 */
#ifndef SBXLOOP_LOCAL_PROXY_H
#define SBXLOOP_LOCAL_PROXY_H

#include <sbxloop/plugin.h>

/* Where the bridge listens inside the sandbox (its own netns). */
#define LPROXY_PORT 3128
#define LPROXY_PORT_STR "3128"
/* The proxy's socket: in the sandbox's directory, and seen inside. */
#define LPROXY_SOCKET "proxy.sock"
#define LPROXY_INNER_DIR "/run/sbxloop"
#define LPROXY_INNER_SOCKET LPROXY_INNER_DIR "/" LPROXY_SOCKET
/* The record of a sandbox's egress (lproxy_flush), beside home/. */
#define LPROXY_RECORD "egress-record"
/*
 * Test hosts: "name[:port]=ip:port,..." sends a name (on that port, or
 * any) to a loopback address instead of resolving it. Every decision is
 * still made on the name.
 */
#define LPROXY_RESOLVE_ENV "SBXLOOP_PROXY_RESOLVE"

struct lproxy;

/*
 * Start the proxy of sandbox `sandbox` listening on `sock_path` (made
 * afresh). `seed` (NULL-terminated, may be NULL) is the baseline the
 * core computed, trusted as given; `deny` (same) are the operator's
 * policy.deny patterns, applied to every grant. Strings are copied. On
 * 0 *out is running; free it with lproxy_stop.
 */
int lproxy_start(const struct sbxloop_host *host, const char *state_dir,
		 const char *sandbox, const char *sock_path,
		 const char *const *seed, const char *const *deny,
		 struct lproxy **out, struct sbxloop_error *err);

/*
 * Stop accepting, end every open connection, join the threads, report
 * what is pending (lproxy_flush), remove the socket and free `p`.
 */
void lproxy_stop(struct lproxy *p);

/*
 * The proxy of `sandbox` under `state_dir` running in this process, for
 * the granter: 0 with the change applied (the next request or CONNECT
 * sees it; a revoke also ends the open connections it no longer
 * allows), SBXLOOP_ENOTFOUND when this process runs no proxy for it,
 * SBXLOOP_ENOMEM. lproxy_seed replaces the baseline (copied).
 */
int lproxy_grant(const char *state_dir, const char *sandbox,
		 const char *pattern);
int lproxy_revoke(const char *state_dir, const char *sandbox,
		  const char *pattern);
int lproxy_seed(const char *state_dir, const char *sandbox,
		const char *const *domains);

/*
 * Report on the caller's thread what the proxy threads recorded: one
 * policy.blocked event per blocked attempt since the last flush, and
 * the sandbox's record file (LPROXY_RECORD: per domain, allowed and
 * blocked counts, first and last time). Proxy threads never emit: the
 * store is written only from the threads that call the provider.
 */
void lproxy_flush(struct lproxy *p);

#endif

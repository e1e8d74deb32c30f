/*
 * The security conformance suite (attest.h): the probes, the shell.batch
 * jobs that carry them into a sandbox pair through the ordinary worker,
 * and the host-side measurements that judge them (a file the host finds
 * or not, a connection its listener accepts or not, a process left in
 * its process table). Called by the engine at provisioning (setup.c)
 * and by `sbxloop doctor --deep` (cmd_doctor.c).
 *
 * Secrets: the probes never name a token. The canaries of doctor --deep
 * are a public half (prefix, role letter, nonce) and a random secret
 * half; a probe searches for the public half with a pattern that does
 * not match itself, so neither half's full value reaches argv, output,
 * an event or an error. Without canaries (a run) the secret probes only
 * check which variables are set.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>

#include "common/agents.h"
#include "common/json.h"
#include "common/util.h"
#include "engine/attest.h"
#include "engine/attest_cmds.h"
#include "host/loader.h"
#include "host/redact.h"
#include "phases/worker_client.h"

#define ROLE_AGENT 0
#define ROLE_GITHUB 1
#define JOB_TIMEOUT_S 60

/* ------------------------------------------------------------ names */

int sl_attest_level_parse(const char *text, enum sl_attest_level *out)
{
	if (text && !strcmp(text, "off"))
		*out = SL_ATTEST_OFF;
	else if (!text || !*text || !strcmp(text, "quick"))
		*out = SL_ATTEST_QUICK;
	else if (!strcmp(text, "full"))
		*out = SL_ATTEST_FULL;
	else
		return SBXLOOP_EINVAL;
	return 0;
}

const char *sl_attest_cap_name(uint32_t cap)
{
	static char names[SBXLOOP_CAP_COUNT][32];
	size_t i;

	for (i = 0; i < SBXLOOP_CAP_COUNT; i++)
		if (cap == (1u << i)) {
			if (!names[i][0])
				sl_caps_format(cap, names[i],
					       sizeof(names[i]));
			return names[i];
		}
	return "credential_split";
}

/* ------------------------------------------------------------ helpers */

static struct sl_probe *add(struct sl_attest *a, const char *name, int role,
			    uint32_t cap, int claimed)
{
	struct sl_probe *p;

	if (a->n == SL_PROBES_MAX)
		p = &a->probes[SL_PROBES_MAX - 1]; /* cannot happen */
	else
		p = &a->probes[a->n++];
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->role = role == ROLE_AGENT ? "agent" : "github";
	p->capability = cap;
	p->claimed = claimed;
	p->pass = 1;
	return p;
}

static void measure(struct sl_probe *p, int holds, const char *fmt, ...)
	SBXLOOP_PRINTF(3, 4);

static void measure(struct sl_probe *p, int holds, const char *fmt, ...)
{
	va_list ap;

	p->ran = 1;
	p->holds = holds;
	p->pass = holds || !p->claimed;
	va_start(ap, fmt);
	vsnprintf(p->measured, sizeof(p->measured), fmt, ap);
	va_end(ap);
	/* a measurement is shown and stored: never a token */
	sl_redact_inplace(p->measured, sizeof(p->measured));
}

static void not_run(struct sl_probe *p, const char *why)
{
	p->ran = 0;
	p->pass = 1;
	snprintf(p->measured, sizeof(p->measured), "%s", why);
}

/* The output of command `i` of a shell.batch result ("" when none). */
static const char *output_of(const cJSON *res, int i)
{
	const cJSON *list =
		cJSON_GetObjectItemCaseSensitive(res, "output_json");
	const cJSON *item = cJSON_GetArrayItem(list, i);

	return i < 0 ? "" : sl_json_str(item, "output", "");
}

static int has_line(const char *out, const char *line)
{
	size_t n = strlen(line);
	const char *s = out;

	while ((s = strstr(s, line)) != NULL) {
		if ((s == out || s[-1] == '\n') &&
		    (s[n] == '\n' || s[n] == '\0'))
			return 1;
		s += n;
	}
	return 0;
}

/*
 * Submit a shell.batch of `cmds` (n of them) to the sandbox `info`;
 * *res (caller frees) is the JobResult.
 */
static int batch(struct sl_core *core, const struct sbxloop_sandbox_info *info,
		 const char *role, char **cmds, size_t n, int read_only,
		 cJSON **res, struct sbxloop_error *err)
{
	struct sl_job_tags tags = {role, "attest", NULL, read_only};
	cJSON *job = cJSON_CreateObject(), *list = cJSON_CreateArray();
	size_t i;
	int rc;

	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(cmds[i]));
	cJSON_AddStringToObject(job, "kind", "shell.batch");
	cJSON_AddNumberToObject(job, "timeout_s", JOB_TIMEOUT_S);
	cJSON_AddItemToObject(job, "commands", list);
	rc = sl_worker_submit(core, info, job, &tags, res, err);
	cJSON_Delete(job);
	if (rc == 0 && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(
			       *res, "output_json"))) {
		const cJSON *e =
			cJSON_GetObjectItemCaseSensitive(*res, "error");

		rc = sl_error(err, SBXLOOP_EINFRA,
			      "the probe job in sandbox '%s' returned no "
			      "output (%s)",
			      info->name,
			      sl_json_str(e, "message", "no error given"));
		cJSON_Delete(*res);
		*res = NULL;
	}
	return rc;
}

/* ---------------------------------------------------- the listener */

/*
 * A loopback TCP listener on the host: a connection it accepts proves
 * that a sandbox reached the host's network. Answers 204 and closes.
 */
struct listener {
	int fd;
	unsigned port;
	volatile int stop;
	volatile int accepted;
	pthread_t thread;
	int running;
};

static void *listen_loop(void *arg)
{
	static const char reply[] = "HTTP/1.0 204 No Content\r\n"
				    "Connection: close\r\n\r\n";
	struct listener *l = arg;

	while (!l->stop) {
		struct pollfd pfd = {l->fd, POLLIN, 0};
		char buf[512];
		int c;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		c = accept(l->fd, NULL, NULL);
		if (c < 0)
			continue;
		l->accepted++;
		pfd.fd = c;
		if (poll(&pfd, 1, 500) > 0 && read(c, buf, sizeof(buf)) < 0)
			buf[0] = '\0';
		if (write(c, reply, sizeof(reply) - 1) < 0)
			buf[0] = '\0';
		close(c);
	}
	return NULL;
}

static int listener_start(struct listener *l)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	memset(l, 0, sizeof(*l));
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(l->fd, 16) < 0 ||
	    getsockname(l->fd, (struct sockaddr *)&sa, &len) < 0 ||
	    pthread_create(&l->thread, NULL, listen_loop, l) != 0) {
		close(l->fd);
		l->fd = -1;
		return -1;
	}
	l->port = ntohs(sa.sin_port);
	l->running = 1;
	return 0;
}

static void listener_stop(struct listener *l)
{
	if (!l->running)
		return;
	l->stop = 1;
	pthread_join(l->thread, NULL);
	close(l->fd);
	l->running = 0;
}

/* ------------------------------------------------------ the judging */

/* Which of `letters` ('m', 'g') the scan found, and where. */
static int canary_hits(const char *out, char letter, char *where, size_t size)
{
	const char *line = out;
	size_t plen = strlen(SL_CANARY_PREFIX);
	int hits = 0;

	where[0] = '\0';
	while (line && *line) {
		const char *sp = strchr(line, ' ');
		const char *nl = strchr(line, '\n');

		if (sp && (!nl || sp < nl) &&
		    !strncmp(sp + 1, SL_CANARY_PREFIX, plen) &&
		    sp[1 + plen] == letter) {
			char src[32];

			snprintf(src, sizeof(src), "%.*s",
				 (int)(sp - line < 31 ? sp - line : 31), line);
			if (!strstr(where, src))
				snprintf(where + strlen(where),
					 size - strlen(where), "%s%s",
					 *where ? ", " : "", src);
			hits++;
		}
		line = nl ? nl + 1 : NULL;
	}
	return hits;
}

static void judge_secret(struct sl_probe *p, const char *out, char letter,
			 const char *what, const char *nonce)
{
	char where[SL_MEASURED_MAX / 2];

	if (!nonce) {
		if (*out)
			measure(p, 0, "%s variable set (variable names only)",
				what);
		else
			measure(p, 1, "no %s variable (variable names only)",
				what);
		return;
	}
	if (canary_hits(out, letter, where, sizeof(where)))
		measure(p, 0, "%s canary found: %s", what, where);
	else
		measure(p, 1,
			"%s canary absent from env, home, workspace, "
			"/proc/*/environ and the process list",
			what);
}

static const char *const target_names[] = {"outside the workspace",
					   "in the state dir",
					   "in the sandbox's metadata"};

static void judge_targets(struct sl_attest *a, int role, const char *out,
			  char *const *targets, size_t n, uint32_t claimed)
{
	static const char *const probe_names[] = {
		"host_fs_write", "state_dir_write", "sandbox_meta_write"};
	size_t i;

	for (i = 0; i < n; i++) {
		struct sl_probe *p =
			add(a, probe_names[i], role,
			    SBXLOOP_CAP_FILESYSTEM_CONFINED,
			    !!(claimed & SBXLOOP_CAP_FILESYSTEM_CONFINED));
		char said[32];
		int on_host = access(targets[i], F_OK) == 0;

		snprintf(said, sizeof(said), "wrote %zu", i);
		if (on_host)
			measure(p, 0, "wrote a file %s on the host (%s)",
				target_names[i], targets[i]);
		else if (has_line(out, said))
			measure(p, 1,
				"a write %s stayed inside the sandbox (not "
				"on the host)",
				target_names[i]);
		else
			measure(p, 1, "cannot write %s", target_names[i]);
		unlink(targets[i]);
	}
}

static void judge_network(struct sl_probe *p, const char *out, int accepted)
{
	if (accepted)
		measure(p, 0,
			"reached the host's loopback listener (%d "
			"connection%s)",
			accepted, accepted == 1 ? "" : "s");
	else if (has_line(out, "nocurl"))
		not_run(p, "not measured: no curl inside the sandbox");
	else
		measure(p, 1, "no connection reached the host");
}

static int all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

static void judge_resources(struct sl_probe *p, const char *out)
{
	static const char *const keys[] = {
		"memory.max=", "pids.max=", "ulimit-v="};
	size_t i;
	int bounded = 0;

	for (i = 0; i < 3; i++) {
		const char *v = strstr(out, keys[i]);

		if (v) {
			v += strlen(keys[i]);
			bounded |= all_digits(v, strcspn(v, " \n"));
		}
	}
	measure(p, bounded, "%.*s%s", (int)strcspn(out, "\n"), out,
		bounded ? "" : " (no limit seen)");
}

/* The HTTP status the egress job saw for `host`, or "" when none. */
static void egress_code(const char *out, const char *host, char code[8])
{
	const char *s = strstr(out, host);

	code[0] = '\0';
	if (s && s[strlen(host)] == ' ')
		snprintf(code, 8, "%.3s", s + strlen(host) + 1);
}

static int blocked(const char *code)
{
	return !*code || !strcmp(code, "000") || !strcmp(code, "403");
}

/* ---------------------------------------------------- egress probes */

struct granters {
	struct sl_instance *inst;
	size_t n;
};

static void granters_open(struct sl_core *core, struct granters *g)
{
	const char **names;
	size_t n, i;

	names = sl_chain_names(core, "plugins.policy", SBXLOOP_KIND_POLICY, 0,
			       &n);
	g->inst = sl_xcalloc(n ? n : 1, sizeof(*g->inst));
	g->n = 0;
	for (i = 0; i < n; i++) {
		struct sbxloop_error err = {0, ""};

		if (sl_core_instantiate(core, SBXLOOP_KIND_POLICY, names[i],
					&g->inst[g->n], &err) == 0)
			g->n++;
	}
	free(names);
}

static void granters_close(struct granters *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		sl_instance_destroy(&g->inst[i]);
	free(g->inst);
}

static void grant_init(struct sbxloop_grant *gr, const char *box)
{
	memset(gr, 0, sizeof(*gr));
	gr->struct_size = sizeof(*gr);
	gr->sandbox = box;
	gr->domain = EGRESS_GRANTED;
	gr->reason = "sbxloop security probe";
	gr->phase = "attest";
}

static void egress_probes(struct sl_core *core, struct sl_attest *a,
			  const struct sbxloop_sandbox_info *info,
			  uint32_t claimed, struct sbxloop_error *err)
{
	struct sl_probe *den, *gra, *rev;
	struct granters g;
	struct sbxloop_grant gr;
	char *cmd = (char *)sl_attest_egress_script, code[8], code2[8];
	cJSON *res = NULL;
	size_t i, by = SIZE_MAX;

	den = add(a, "egress_denied", ROLE_AGENT, SBXLOOP_CAP_EGRESS_ENFORCED,
		  !!(claimed & SBXLOOP_CAP_EGRESS_ENFORCED));
	gra = add(a, "egress_granted", ROLE_AGENT, SBXLOOP_CAP_EGRESS_ENFORCED,
		  !!(claimed & SBXLOOP_CAP_EGRESS_ENFORCED));
	rev = add(a, "egress_revoked", ROLE_AGENT,
		  SBXLOOP_CAP_EGRESS_REVOCABLE,
		  !!(claimed & SBXLOOP_CAP_EGRESS_REVOCABLE));
	granters_open(core, &g);
	grant_init(&gr, info->name);
	for (i = 0; i < g.n && by == SIZE_MAX; i++) {
		const struct sbxloop_policy_ops *ops = g.inst[i].ops;
		struct sbxloop_error gerr = {0, ""};

		if (ops->grant(g.inst[i].ctx, &gr, &gerr) == 0)
			by = i;
	}
	if (batch(core, info, "agent", &cmd, 1, 0, &res, err) < 0) {
		not_run(den, "not measured: the probe job failed");
		not_run(gra, "not measured: the probe job failed");
		not_run(rev, "not measured: the probe job failed");
		goto out;
	}
	if (has_line(output_of(res, 0), "nocurl")) {
		not_run(den, "not measured: no curl inside the sandbox");
		not_run(gra, "not measured: no curl inside the sandbox");
		not_run(rev, "not measured: no curl inside the sandbox");
		goto out;
	}
	egress_code(output_of(res, 0), EGRESS_DENIED, code);
	if (by == SIZE_MAX && blocked(code) && strcmp(code, "403"))
		/* nothing granted: an unresolvable name proves nothing */
		not_run(den, "not measured: no answer for a host nothing "
			     "allows, and with nothing granted that cannot "
			     "tell a policy from a missing name");
	else
		measure(den, blocked(code), "a host nothing allows: %s (%s)",
			blocked(code) ? "blocked" : "reached",
			*code ? code : "000");
	egress_code(output_of(res, 0), EGRESS_GRANTED, code);
	if (by == SIZE_MAX) {
		not_run(gra, "not measured: no granter of plugins.policy "
			     "took a grant");
		not_run(rev, "not measured: nothing was granted");
		goto out;
	}
	measure(gra, !blocked(code), "a granted host: %s (%s)",
		blocked(code) ? "blocked" : "let through",
		*code ? code : "000");
	{
		const struct sbxloop_policy_ops *ops = g.inst[by].ops;
		struct sbxloop_error gerr = {0, ""};

		if (!ops->revoke || ops->revoke(g.inst[by].ctx, &gr, &gerr)) {
			measure(rev, 0, "the granter cannot revoke: %s",
				gerr.message);
			goto out;
		}
	}
	cJSON_Delete(res);
	res = NULL;
	if (batch(core, info, "agent", &cmd, 1, 0, &res, err) < 0) {
		not_run(rev, "not measured: the probe job failed");
		goto out;
	}
	egress_code(output_of(res, 0), EGRESS_GRANTED, code2);
	measure(rev, blocked(code2), "the host once revoked: %s (%s)",
		blocked(code2) ? "blocked" : "still reached",
		*code2 ? code2 : "000");
out:
	cJSON_Delete(res);
	granters_close(&g);
}

/* -------------------------------------------------------- the suite */

struct box_probe {
	int role;
	struct sbxloop_sandbox_info info;
	char *cmds[8];
	size_t n;
	int i_secret, i_fs, i_mount, i_net, i_res, i_git;
	char *targets[3];
	size_t n_targets;
	char *git[4]; /* the git probe's paths on the host */
	int git_made[4], git_there[4];
};

static int push(struct box_probe *bp, char *cmd)
{
	bp->cmds[bp->n] = cmd;
	return (int)bp->n++;
}

static void box_release(struct box_probe *bp)
{
	size_t i;

	for (i = 0; i < bp->n; i++)
		free(bp->cmds[i]);
	for (i = 0; i < bp->n_targets; i++)
		free(bp->targets[i]);
}

static char *dir_of(const char *path)
{
	char *d = sl_xstrdup(path);
	char *slash = strrchr(d, '/');

	if (slash && slash != d)
		*slash = '\0';
	return d;
}

static void fs_targets(struct sl_core *core, struct box_probe *bp,
		       const char *workspace, const char *tag)
{
	const char *state = sl_core_state_dir(core);
	char *ws_parent = dir_of(workspace);
	char *meta = dir_of(bp->info.home);

	bp->targets[bp->n_targets++] =
		sl_xasprintf("%s/.sbxloop-attest-%s-%s", ws_parent, tag,
			     bp->role == ROLE_AGENT ? "a" : "g");
	bp->targets[bp->n_targets++] = sl_xasprintf(
		"%s/.sbxloop-attest-%s-%s", state ? state : "/nonexistent",
		tag, bp->role == ROLE_AGENT ? "a" : "g");
	bp->targets[bp->n_targets++] =
		sl_xasprintf("%s/.sbxloop-attest-%s-%s", meta, tag,
			     bp->role == ROLE_AGENT ? "a" : "g");
	free(ws_parent);
	free(meta);
}

static void random_hex(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char buf[64];
	size_t i, got = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t r = read(fd, buf, n < sizeof(buf) ? n : sizeof(buf));

		got = r > 0 ? (size_t)r : 0;
		close(fd);
	}
	for (i = 0; i < n; i++)
		out[i] = hex[(i < got ? buf[i] : (unsigned char)rand()) & 15];
	out[n] = '\0';
}

int sl_attest_canaries(char *model, char *gh, char *nonce,
		       struct sbxloop_error *err)
{
	char secret[33];

	(void)err;
	random_hex(nonce, SL_CANARY_NONCE_LEN);
	random_hex(secret, 32);
	snprintf(model, 64, "%sm%s%s", SL_CANARY_PREFIX, nonce, secret);
	random_hex(secret, 32);
	snprintf(gh, 64, "%sg%s%s", SL_CANARY_PREFIX, nonce, secret);
	memset(secret, 0, sizeof(secret));
	return 0;
}

/*
 * Last, so that what it leaves behind cannot disturb another probe: a
 * detached process started in the agent sandbox, looked for after the
 * removal (sl_attest_after_removal).
 */
static int survivor_probe(struct sl_core *core, struct sl_attest *a,
			  const struct sbxloop_sandbox_info *info,
			  const char *tag, struct sbxloop_error *err)
{
	struct sl_probe *p =
		add(a, "process_after_removal", ROLE_AGENT,
		    SBXLOOP_CAP_DIES_WITH_PARENT,
		    !!(info->capabilities & SBXLOOP_CAP_DIES_WITH_PARENT));
	char *cmd;
	cJSON *res = NULL;
	int rc;

	snprintf(a->survivor_arg, sizeof(a->survivor_arg), "7777.%lu",
		 strtoul(tag, NULL, 16) % 1000000ul);
	cmd = sl_xasprintf("if command -v setsid >/dev/null; then setsid "
			   "sleep %s </dev/null >/dev/null 2>&1 & else "
			   "sleep %s </dev/null >/dev/null 2>&1 & fi; "
			   /* until it left the job's group */
			   "sleep 0.2; echo started",
			   a->survivor_arg, a->survivor_arg);
	rc = batch(core, info, "agent", &cmd, 1, 0, &res, err);
	a->survivor_row = rc == 0 ? (int)(p - a->probes) : -1;
	not_run(p, rc == 0 ? "measured after removal"
			   : "not measured: the probe job failed");
	cJSON_Delete(res);
	free(cmd);
	return rc;
}

/* The agent sandbox's critic job: may it write the workspace? */
static int ro_probe(struct sl_core *core, struct sl_attest *a,
		    const struct sbxloop_sandbox_info *info, const char *tag,
		    struct sbxloop_error *err)
{
	struct sl_probe *p =
		add(a, "critic_workspace_write", ROLE_AGENT,
		    SBXLOOP_CAP_WORKSPACE_READ_ONLY,
		    !!(info->capabilities & SBXLOOP_CAP_WORKSPACE_READ_ONLY));
	char *path =
		sl_xasprintf("%s/.sbxloop-attest-%s-ro", info->workdir, tag);
	char *q = sl_attest_quote(path);
	char *cmd = sl_xasprintf(
		"if (: > %s) 2>/dev/null; then echo wrote; rm -f %s; fi; exit 0",
		q, q);
	cJSON *res = NULL;
	int rc = batch(core, info, "agent", &cmd, 1, 1, &res, err);

	if (rc == 0) {
		if (has_line(output_of(res, 0), "wrote"))
			measure(p, 0, "a read-only job wrote the workspace");
		else
			measure(p, 1,
				"a read-only job cannot write the "
				"workspace");
	}
	cJSON_Delete(res);
	free(cmd);
	free(q);
	free(path);
	return rc;
}

/*
 * git_read_only: while lanes run in the workspace (it holds
 * .sbxloop/lanes), can a job write git's directories (.git, the lanes'
 * shadow repository .sbxloop/git) or rename .git or .sbxloop away?
 * The host makes what is missing (removed after), the job tries each
 * (sl_attest_git_script), the host looks, and puts back what moved.
 */
static const char *const git_dirs[] = {".sbxloop", ".sbxloop/lanes", ".git",
				       ".sbxloop/git"};

/*
 * .sbxloop/lanes is made where missing (it is what switches the guard
 * on); git's directories only in the probes' own workspace (`scratch`):
 * in a project one left by a kill would be taken for a repository.
 */
static void git_prepare(struct box_probe *bp, const char *workspace,
			int scratch)
{
	struct stat st;
	int i;

	for (i = 0; i < 4; i++) {
		bp->git[i] = sl_xasprintf("%s/%s", workspace, git_dirs[i]);
		bp->git_there[i] = lstat(bp->git[i], &st) == 0;
		if (!bp->git_there[i] && (i < 2 || scratch))
			bp->git_there[i] = bp->git_made[i] =
				mkdir(bp->git[i], 0700) == 0;
	}
}

static void git_judge(struct sl_attest *a, struct box_probe *bp,
		      const char *workspace, const char *tag, int ran)
{
	struct sl_probe *p = add(
		a, "lanes_git_write", ROLE_AGENT, SBXLOOP_CAP_GIT_READ_ONLY,
		!!(bp->info.capabilities & SBXLOOP_CAP_GIT_READ_ONLY));
	char got[192] = "", *f;
	int i;

	for (i = 0; i < 2; i++) { /* what moved goes back first */
		f = sl_xasprintf("%s/.sbxloop-attest-%s-%d", workspace, tag,
				 i);
		if (rename(f, bp->git[i ? 0 : 2]) == 0)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 "%srenamed %s away", *got ? ", " : "",
				 git_dirs[i ? 0 : 2]);
		free(f);
	}
	for (i = 2; i < 4; i++) {
		f = sl_xasprintf("%s/.sbxloop-attest-%s", bp->git[i], tag);
		if (unlink(f) == 0)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 "%swrote into %s", *got ? ", " : "",
				 git_dirs[i]);
		free(f);
	}
	for (i = 3; i >= 0; i--) {
		if (bp->git_made[i])
			rmdir(bp->git[i]);
		free(bp->git[i]);
		bp->git[i] = NULL;
	}
	if (!ran)
		not_run(p, "not measured: the probe job failed");
	else if (*got)
		measure(p, 0, "a job %s while lanes run", got);
	else if (!bp->git_there[2] && !bp->git_there[3])
		measure(p, 1,
			"a job cannot rename .sbxloop away while lanes run "
			"(no .git here to write)");
	else
		measure(p, 1,
			"a job cannot write %s%s%s, nor rename %s.sbxloop "
			"away, while lanes run",
			bp->git_there[2] ? ".git" : "",
			bp->git_there[2] && bp->git_there[3] ? " or " : "",
			bp->git_there[3] ? ".sbxloop/git" : "",
			bp->git_there[2] ? ".git or " : "");
}

static int probe_box(struct sl_core *core, struct sl_pair *pair,
		     struct sl_attest *a, struct box_probe *bp,
		     const char *workspace, const struct sl_attest_opts *o,
		     const char *tag, struct listener *l,
		     struct sbxloop_error *err)
{
	uint32_t claimed = bp->info.capabilities;
	const char *role = bp->role == ROLE_AGENT ? "agent" : "github";
	int full = o->level == SL_ATTEST_FULL, agent = bp->role == ROLE_AGENT;
	char *mount = NULL;
	const char *out;
	cJSON *res = NULL;
	struct sl_probe *p;
	int rc;

	bp->i_secret = bp->i_mount = bp->i_net = bp->i_res = bp->i_git = -1;
	if (o->nonce) {
		bp->i_secret = push(bp, sl_attest_canary_script(
						o->nonce, bp->info.workdir));
	} else {
		const char *model = sl_pair_model_env(pair);
		const char *gh_vars[] = {SL_GH_TOKEN_ENV, SL_GH_TOKEN_ENV_ALT,
					 NULL};
		const char *model_vars[] = {model, NULL};

		if (agent || model)
			bp->i_secret = push(
				bp, sl_attest_var_script(agent ? gh_vars
							       : model_vars));
	}
	/*
	 * Writes outside the workspace only where confinement is claimed,
	 * or in full: a quick check of a sandbox that claims none would
	 * only drop files beside the user's project.
	 */
	bp->i_fs = -1;
	if (full || (claimed & SBXLOOP_CAP_FILESYSTEM_CONFINED)) {
		fs_targets(core, bp, workspace, tag);
		bp->i_fs = push(bp, sl_attest_write_script(bp->targets,
							   bp->n_targets));
	}
	if (agent) {
		mount = sl_xasprintf("%s/.sbxloop-attest-%s-mount", workspace,
				     tag);
		sl_write_file_atomic(mount, "probe\n", 6, 0644);
		{
			char *inside =
				sl_xasprintf("%s/.sbxloop-attest-%s-mount",
					     bp->info.workdir, tag);

			bp->i_mount = push(bp, sl_attest_exists_script(
						       inside, "mounted"));
			free(inside);
		}
		if (l->running &&
		    (full || (claimed & SBXLOOP_CAP_NETWORK_DISABLED)))
			bp->i_net =
				push(bp, sl_attest_connect_script(l->port));
		if (full)
			bp->i_res = push(
				bp, sl_xstrdup(sl_attest_resources_script));
		/* quick: where claimed (where it fails it writes .git) */
		if (bp->info.mounted &&
		    (full || (claimed & SBXLOOP_CAP_GIT_READ_ONLY))) {
			git_prepare(bp, workspace, o->scratch);
			bp->i_git = push(bp, sl_attest_git_script(
						     bp->info.workdir, tag));
		}
	}
	rc = batch(core, &bp->info, role, bp->cmds, bp->n, 0, &res, err);
	if (mount) {
		unlink(mount);
		free(mount);
	}
	/* last in the table; what it moved goes back at once */
	if (bp->i_git >= 0 && rc < 0)
		git_judge(a, bp, workspace, tag, 0);
	if (rc < 0) {
		size_t i;

		for (i = 0; i < bp->n_targets; i++)
			unlink(bp->targets[i]);
		return rc;
	}
	if (bp->i_secret >= 0) {
		out = output_of(res, bp->i_secret);
		p = add(a,
			agent ? "github_token_not_in_agent"
			      : "model_token_not_in_github",
			bp->role, 0, 1);
		judge_secret(p, out, agent ? 'g' : 'm',
			     agent ? "GitHub token" : "model token", o->nonce);
		if (agent && o->nonce) {
			p = add(a, "model_token_not_in_agent", ROLE_AGENT,
				SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX,
				(claimed &
				 SBXLOOP_CAP_SECRET_NEVER_IN_SANDBOX) &&
					sl_pair_secret_outside(
						pair, o->agent_box
							      ? o->agent_box
							      : "agent"));
			judge_secret(p, out, 'm', "model token", o->nonce);
		}
	}
	if (bp->i_fs >= 0)
		judge_targets(a, bp->role, output_of(res, bp->i_fs),
			      bp->targets, bp->n_targets, claimed);
	if (bp->i_mount >= 0) {
		p = add(a, "workspace_mounted", ROLE_AGENT,
			SBXLOOP_CAP_WORKSPACE_MOUNTED,
			!!(claimed & SBXLOOP_CAP_WORKSPACE_MOUNTED));
		if (has_line(output_of(res, bp->i_mount), "mounted"))
			measure(p, 1, "a file the host wrote shows inside");
		else
			measure(p, 0,
				"a file the host wrote does not show inside");
	}
	if (bp->i_net >= 0) {
		p = add(a, "network_out", ROLE_AGENT,
			SBXLOOP_CAP_NETWORK_DISABLED,
			!!(claimed & SBXLOOP_CAP_NETWORK_DISABLED));
		judge_network(p, output_of(res, bp->i_net), l->accepted);
	}
	if (bp->i_res >= 0) {
		p = add(a, "resource_limits", ROLE_AGENT,
			SBXLOOP_CAP_RESOURCE_BOUNDED,
			!!(claimed & SBXLOOP_CAP_RESOURCE_BOUNDED));
		judge_resources(p, output_of(res, bp->i_res));
	}
	if (bp->i_git >= 0)
		git_judge(a, bp, workspace, tag, 1);
	cJSON_Delete(res);
	return 0;
}

static void masks(struct sl_attest *a)
{
	size_t i;
	int r;

	for (r = 0; r < 2; r++) {
		uint32_t failed = 0, seen = 0;

		for (i = 0; i < a->n; i++) {
			const struct sl_probe *p = &a->probes[i];

			if (strcmp(p->role,
				   r == ROLE_AGENT ? "agent" : "github") ||
			    !p->capability || !p->ran)
				continue;
			seen |= p->capability;
			if (!p->holds)
				failed |= p->capability;
		}
		a->measured[r] = seen & ~failed;
	}
}

int sl_attest_pair(struct sl_core *core, struct sl_pair *pair,
		   const char *workspace, const struct sl_attest_opts *o,
		   struct sl_attest *a, struct sbxloop_error *err)
{
	struct box_probe bps[2];
	struct listener l;
	char tag[16];
	size_t nb = 0, i;
	int rc = 0;

	memset(a, 0, sizeof(*a));
	memset(bps, 0, sizeof(bps));
	a->survivor_row = -1;
	if (o->level == SL_ATTEST_OFF)
		return 0;
	random_hex(tag, 8);
	memset(&l, 0, sizeof(l));
	l.fd = -1;
	if (!sl_pair_box(pair, o->agent_box ? o->agent_box : "agent",
			 &bps[0].info))
		return sl_error(err, SBXLOOP_ESTATE,
				"no agent sandbox to probe");
	bps[nb++].role = ROLE_AGENT;
	if (!o->agent_box && sl_pair_box(pair, "github", &bps[1].info)) {
		bps[nb++].role = ROLE_GITHUB;
		a->have_github = 1;
	}
	a->claimed[0] = bps[0].info.capabilities;
	a->claimed[1] = a->have_github ? bps[1].info.capabilities : 0;
	if (o->level == SL_ATTEST_FULL ||
	    (a->claimed[0] & SBXLOOP_CAP_NETWORK_DISABLED))
		listener_start(&l);
	for (i = 0; i < nb && rc == 0; i++)
		rc = probe_box(core, pair, a, &bps[i], workspace, o, tag, &l,
			       err);
	if (rc == 0)
		rc = ro_probe(core, a, &bps[0].info, tag, err);
	if (rc == 0 && o->level == SL_ATTEST_FULL)
		egress_probes(core, a, &bps[0].info, a->claimed[0], err);
	if (rc == 0 && o->level == SL_ATTEST_FULL && o->removal)
		rc = survivor_probe(core, a, &bps[0].info, tag, err);
	listener_stop(&l);
	for (i = 0; i < nb; i++)
		box_release(&bps[i]);
	masks(a);
	return rc;
}

/* ---------------------------------------------------- after removal */

/* pids of `sleep <arg>` processes on this host, into pids[] */
static size_t survivors(const char *arg, pid_t *pids, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)) != NULL && n < max) {
		char path[64], buf[256];
		ssize_t len;
		int fd;

		if (!all_digits(de->d_name, strlen(de->d_name)))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* argv[0] "...sleep", argv[1] the marker */
		if (strlen(buf) + 1 < (size_t)len && strlen(buf) >= 5 &&
		    !strcmp(buf + strlen(buf) - 5, "sleep") &&
		    !strcmp(buf + strlen(buf) + 1, arg))
			pids[n++] = (pid_t)atol(de->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

void sl_attest_after_removal(struct sl_attest *a)
{
	struct sl_probe *p;
	pid_t pids[8];
	size_t n = 0, i;
	int tries;

	if (a->survivor_row < 0)
		return;
	p = &a->probes[a->survivor_row];
	/* the substrate may take a moment to reap what it kills */
	for (tries = 0; tries < 10; tries++) {
		n = survivors(a->survivor_arg, pids, 8);
		if (!n)
			break;
		usleep(30 * 1000);
	}
	if (!n) {
		measure(p, 1, "no process of the sandbox is left");
		a->measured[0] |= SBXLOOP_CAP_DIES_WITH_PARENT;
		return;
	}
	for (i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	measure(p, 0,
		"a detached process outlived the sandbox (pid %ld, killed "
		"now)",
		(long)pids[0]);
	a->measured[0] &= ~(uint32_t)SBXLOOP_CAP_DIES_WITH_PARENT;
}

/* ---------------------------------------------------------- reports */

const struct sl_probe *sl_attest_failure(const struct sl_attest *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!a->probes[i].pass)
			return &a->probes[i];
	return NULL;
}

static cJSON *cap_list(uint32_t caps)
{
	cJSON *list = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < SBXLOOP_CAP_COUNT; i++)
		if (caps & (1u << i))
			cJSON_AddItemToArray(
				list, cJSON_CreateString(
					      sl_attest_cap_name(1u << i)));
	return list;
}

cJSON *sl_attest_event(const struct sl_attest *a, const char *role)
{
	int r = strcmp(role, "agent") ? ROLE_GITHUB : ROLE_AGENT;
	cJSON *d = cJSON_CreateObject(), *probes = cJSON_CreateArray();
	size_t i;
	int ok = 1;

	cJSON_AddStringToObject(d, "role", role);
	cJSON_AddItemToObject(d, "claimed", cap_list(a->claimed[r]));
	cJSON_AddItemToObject(d, "measured", cap_list(a->measured[r]));
	for (i = 0; i < a->n; i++) {
		const struct sl_probe *p = &a->probes[i];
		cJSON *o;

		if (strcmp(p->role, role))
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", p->name);
		cJSON_AddStringToObject(o, "capability",
					sl_attest_cap_name(p->capability));
		cJSON_AddBoolToObject(o, "claimed", p->claimed);
		cJSON_AddStringToObject(o, "measured", p->measured);
		cJSON_AddBoolToObject(o, "pass", p->pass);
		cJSON_AddItemToArray(probes, o);
		ok &= p->pass;
	}
	cJSON_AddItemToObject(d, "probes", probes);
	cJSON_AddBoolToObject(d, "pass", ok);
	return d;
}

char *sl_attest_reason(const struct sl_probe *p)
{
	return sl_xasprintf("sandbox attestation failed: the %s sandbox "
			    "claims %s but probe %s measured: %s",
			    p->role, sl_attest_cap_name(p->capability),
			    p->name, p->measured);
}

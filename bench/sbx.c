/*
 * bench/sbx: whole runs of the real `sbxloop` binary on the sbx provider
 * against the fake sbx (tests/fakes/bin/sbx, built by `make check` or
 * `make tests/fakes/bin/sbx`) with N independent tasks (N = 1, 5, 20
 * unless given) and the script backend. Prints per N: sbx invocations
 * per task, the host CPU sbxloop itself spent per task, the CPU of the
 * whole process tree per task (sbxloop, every sbx call and the workers
 * the fake runs on this host) and wall time per task. Figures only;
 * nothing is asserted. Upstream's target: at most 6 invocations a task.
 * With `--lanes K` (first) the tasks run K at a time in a git project:
 * the lanes' git runs in the sandbox there (the provider does not claim
 * git_read_only), so each worktree, commit, merge and removal is an
 * `sbx exec` of its own, and the figures show what they add.
 *
 * Environment: SBXLOOP_BIN, SBXLOOP_WORKER, SBXLOOP_SRCDIR (prompts),
 * SBXLOOP_BUILDDIR (the fake) and SBXLOOP_PLUGIN_PATH as in `make
 * check`; the defaults suit the top of the build tree.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "runs.h"

#define PLUGINS                                                               \
	"  sandbox: sbx\n  secrets: [sbx-proxy, plain-env]\n  policy: [sbx]\n  sinks: []\n"

static long count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int bench(int n, int lanes)
{
	char dir[] = "/tmp/sbxloop-bench-sbx-XXXXXX", path[256], cmd[300];
	char *fake_bin = NULL, *new_path = NULL, *fake_dir = NULL;
	char lanes_env[64], extra[128];
	const char *env[5] = {NULL, NULL, NULL, NULL, NULL};
	struct bench_proc m;
	double wall, cpu, tree;
	long calls;
	int rc = -1;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && mkdir repo && cd repo && git init -q && "
		 "echo hi > README && git add . && git -c user.name=b -c "
		 "user.email=b@b commit -qm init",
		 dir);
	if (lanes > 1 ? system(cmd) != 0 ||
				bench_write_keyed_scenario(path, n, 0) < 0
		      : bench_write_scenario(path, n, 0, 0) < 0)
		goto out;
	/* the fake cannot confine: see test-attest */
	snprintf(extra, sizeof(extra), "%srun:\n  attest: off\n",
		 lanes > 1 ? "sandbox:\n  workspace: repo\n" : "");
	snprintf(path, sizeof(path), "%s/sbxloop.yaml", dir);
	if (bench_write_config(path, n, PLUGINS, extra) < 0)
		goto out;
	snprintf(lanes_env, sizeof(lanes_env),
		 "SBXLOOP_BUDGETS__MAX_PARALLEL_TASKS=%d", lanes);
	if (asprintf(&fake_bin, "%s/tests/fakes/bin",
		     bench_env_or("SBXLOOP_BUILDDIR", ".")) < 0 ||
	    asprintf(&new_path, "PATH=%s:%s", fake_bin,
		     bench_env_or("PATH", "/bin")) < 0 ||
	    asprintf(&fake_dir, "SBX_FAKE_DIR=%s/fake", dir) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/sbx", fake_bin);
	if (access(path, X_OK) < 0) {
		fprintf(stderr,
			"bench: no fake sbx at %s; run `make "
			"tests/fakes/bin/sbx` first\n",
			path);
		goto out;
	}
	env[0] = new_path;
	env[1] = fake_dir;
	env[2] = lanes_env;
	if (!getenv("COPILOT_GITHUB_TOKEN"))
		env[3] = "COPILOT_GITHUB_TOKEN=ghp_benchTOKEN0123456789abcdef";
	if (bench_run_sbxloop(dir, env, &m) < 0) {
		fprintf(stderr,
			"bench: run with %d tasks failed (status %d); "
			"see %s\n",
			n, m.status, dir);
		free(fake_bin);
		free(new_path);
		free(fake_dir);
		return -1;
	}
	wall = m.wall_s;
	cpu = m.user_ms + m.sys_ms;
	tree = m.tree_ms;
	snprintf(path, sizeof(path), "%s/invocations.jsonl",
		 fake_dir + strlen("SBX_FAKE_DIR="));
	calls = count_lines(path);
	printf("N=%-3d lanes=%d sbx calls %4ld = %5.2f/task  sbxloop CPU "
	       "%6.2f ms/task (user %.2f + sys %.2f)  tree CPU %7.2f ms/task  "
	       "wall %7.2f ms/task\n",
	       n, lanes, calls, (double)calls / n, cpu / n, m.user_ms / n,
	       m.sys_ms / n, tree / n, wall * 1000.0 / n);
	rc = 0;
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: cannot remove %s\n", dir);
	free(fake_bin);
	free(new_path);
	free(fake_dir);
	return rc;
}

int main(int argc, char **argv)
{
	static const int dflt[] = {1, 5, 20};
	int i = 1, failed = 0, lanes = 1;

	if (argc > 2 && !strcmp(argv[1], "--lanes")) {
		lanes = atoi(argv[2]);
		i = 3;
	}
	if (lanes < 1 || lanes > 8) {
		fputs("usage: bench/sbx [--lanes 1..8] [N...]\n", stderr);
		return 2;
	}
	if (argc > i) {
		for (; i < argc; i++)
			failed |= bench(atoi(argv[i]), lanes) < 0;
	} else {
		for (i = 0; i < 3; i++)
			failed |= bench(dflt[i], lanes) < 0;
	}
	return failed ? 1 : 0;
}

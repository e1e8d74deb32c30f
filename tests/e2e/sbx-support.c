/*
 * The fixture and helpers shared by the sbx suites (test-sbx-*.c), run
 * against the fake sbx (tests/fakes/bin/sbx, put first on PATH). Each
 * test loads the module through the real core loader with its own
 * sbxloop.yaml and fake state directory.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/policy.h>
#include <sbxloop/sandbox.h>
#include <sbxloop/secret.h>
#include <sbxloop/store.h>

#include "host/core.h"
#include "common/proc.h"
#include "host/redact.h"
#include "common/util.h"

#include "testutil.h"

#include "sbx-support.h"

/* ------------------------------------------------------------ fixture */

char *dir;
char fake_dir[1024], ws[1024], cfg_path[1024];
struct sl_core *core;
struct sl_instance box;
struct sl_buf events = SL_BUF_INIT;

int capture_emit(struct sl_core *c, const char *type, const char *job_id,
		 const char *data_json)
{
	(void)c;
	(void)job_id;
	sl_buf_addf(&events, "%s %s\n", type, data_json ? data_json : "{}");
	return 0;
}

void write_config(const char *extra)
{
	char *text = sl_xasprintf("state_dir: %s/state\n"
				  "plugins:\n"
				  "  sandbox: sbx\n"
				  "  secrets: [sbx-proxy, plain-env]\n"
				  "  policy: [sbx]\n"
				  "%s",
				  dir, extra ? extra : "");

	tu_write(cfg_path, text);
	free(text);
}

void core_up(void)
{
	struct sl_config_opts opts;
	char *errors = NULL;

	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	opts.no_env = 1;
	ck_assert_msg(sl_core_open(&core, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	core->emit = capture_emit;
}

void box_up(void)
{
	struct sbxloop_error err = {0, ""};

	ck_assert_msg(sl_core_instantiate(core, SBXLOOP_KIND_SANDBOX, "sbx",
					  &box, &err) == 0,
		      "%s", err.message);
	/* the active provider, as the engine makes it */
	core->sandbox = box;
}

void setup(void)
{
	char *path, *real;

	dir = tu_tmpdir();
	snprintf(fake_dir, sizeof(fake_dir), "%s/fake", dir);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/sbxloop.yaml", dir);
	mkdir(ws, 0755);
	real = realpath(ws, NULL);
	snprintf(ws, sizeof(ws), "%s", real);
	free(real);
	path = sl_xasprintf("%s/tests/fakes/bin:%s",
			    tu_env("SBXLOOP_BUILDDIR"), getenv("PATH"));
	setenv("PATH", path, 1);
	free(path);
	setenv("SBX_FAKE_DIR", fake_dir, 1);
	unsetenv("SBX_FAKE_NO_MOUNT");
	unsetenv("SBX_FAKE_SECRET_LS");
	unsetenv("SBX_FAKE_SECRET_SCOPE");
	unsetenv("COPILOT_GITHUB_TOKEN");
	unsetenv("GH_TOKEN");
	unsetenv("GITHUB_TOKEN");
	sl_buf_reset(&events);
	write_config(NULL);
	core = NULL;
	memset(&box, 0, sizeof(box));
}

void teardown(void)
{
	if (core) {
		/* core_close destroys core->sandbox (the same instance) */
		sl_core_close(core);
		core = NULL;
	}
	memset(&box, 0, sizeof(box));
	sl_buf_release(&events);
	/* kept to be read when SBXLOOP_KEEP_TEST_DIRS is set, as rt_ does */
	if (!getenv("SBXLOOP_KEEP_TEST_DIRS"))
		tu_rmtree(dir);
	free(dir);
	dir = NULL;
}

/* ------------------------------------------------------------ helpers */

const struct sbxloop_sandbox_ops *ops(void)
{
	return box.ops;
}

/* Every recorded invocation, as a JSON array of records. */
cJSON *invocations(void)
{
	char *path = sl_xasprintf("%s/invocations.jsonl", fake_dir);
	char *text = tu_read(path), *line, *save;
	cJSON *all = cJSON_CreateArray();

	free(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		cJSON_AddItemToArray(all, cJSON_Parse(line));
	free(text);
	return all;
}

char *argv_joined(const cJSON *rec)
{
	const cJSON *a;
	struct sl_buf b = SL_BUF_INIT;

	cJSON_ArrayForEach (a, cJSON_GetObjectItem(rec, "argv")) {
		if (b.len)
			sl_buf_addc(&b, ' ');
		sl_buf_adds(&b, a->valuestring);
	}
	return sl_buf_detach(&b);
}

/* How many invocations start with `prefix` (space-joined argv). */
int count_calls(const char *prefix)
{
	cJSON *all = invocations(), *rec;
	int n = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		if (!prefix || sl_starts_with(j, prefix))
			n++;
		free(j);
	}
	cJSON_Delete(all);
	return n;
}

/* Does any recorded argv contain `needle` (outside `allowed_prefix`
 * invocations when that is non-NULL)? */
int argv_contains(const char *needle, const char *allowed_prefix)
{
	cJSON *all = invocations(), *rec;
	int hit = 0;

	cJSON_ArrayForEach (rec, all) {
		char *j = argv_joined(rec);

		if (strstr(j, needle) &&
		    !(allowed_prefix && sl_starts_with(j, allowed_prefix)))
			hit = 1;
		free(j);
	}
	cJSON_Delete(all);
	return hit;
}

void script(const char *json)
{
	char *path = sl_xasprintf("%s/responses.json", fake_dir);

	sl_mkdirs(fake_dir, 0755);
	tu_write(path, json);
	free(path);
}

char *fs_path(const char *name, const char *inside)
{
	return sl_xasprintf("%s/sandboxes/%s/fs%s", fake_dir, name, inside);
}

int box_exists(const char *name)
{
	char *p = sl_xasprintf("%s/sandboxes/%s/meta.json", fake_dir, name);
	int ok = access(p, F_OK) == 0;

	free(p);
	return ok;
}

int create_box(const char *name, const char *const *domains,
	       const char *worker, struct sbxloop_sandbox_info *info,
	       struct sbxloop_error *err)
{
	return create_box_as(name, "agent", domains, worker, info, err);
}

int create_box_as(const char *name, const char *role,
		  const char *const *domains, const char *worker,
		  struct sbxloop_sandbox_info *info, struct sbxloop_error *err)
{
	struct sbxloop_sandbox_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.name = name;
	spec.role = role;
	spec.run_id = "r1";
	spec.workspace = ws;
	spec.worker_path = worker ? worker : tu_env("SBXLOOP_WORKER");
	spec.allow_domains = domains;
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	return ops()->sandbox_create(box.ctx, &spec, info, err);
}

void must_create(const char *name)
{
	struct sbxloop_sandbox_info info;
	struct sbxloop_error err = {0, ""};

	ck_assert_msg(create_box(name, NULL, NULL, &info, &err) == 0, "%s",
		      err.message);
}

int run_in(const char *name, const char *script_text, const char *in,
	   double timeout, struct sbxloop_proc_result *res,
	   struct sbxloop_error *err)
{
	const char *argv[] = {"sh", "-c", script_text, NULL};
	struct sbxloop_exec_spec spec;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.stdin_data = in;
	spec.stdin_len = in ? strlen(in) : 0;
	spec.timeout_s = timeout;
	memset(res, 0, sizeof(*res));
	return ops()->exec(box.ctx, name, &spec, res, err);
}

cJSON *secrets_state(void)
{
	char *path = sl_xasprintf("%s/secrets-state.json", fake_dir);
	char *text = tu_read(path);
	cJSON *doc = text ? cJSON_Parse(text) : cJSON_CreateObject();

	free(text);
	free(path);
	return doc;
}

void sbxloop(struct tu_run *r, const char *const *args)
{
	const char *argv[16];
	size_t n = 0, i;

	argv[n++] = tu_env("SBXLOOP_BIN");
	argv[n++] = "--config";
	argv[n++] = cfg_path;
	for (i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tu_exec(r, dir, NULL, argv);
}

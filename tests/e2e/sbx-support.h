/*
 * The fixture and helpers shared by the sbx suites (test-sbx-*.c): a
 * core loading the sbx module with its own sbxloop.yaml, the fake sbx's
 * state directory, and readers of its recorded invocations and secrets.
 * Only those suites include it.
 */
#ifndef SBXLOOP_TESTS_SBX_SUPPORT_H
#define SBXLOOP_TESTS_SBX_SUPPORT_H

#include <cjson/cJSON.h>

#include <sbxloop/sandbox.h>

#include "host/core.h"
#include "common/util.h"

#define AGENT_TOKEN "ghp_agentTOKEN0123456789abcdef"
#define GH_TOKEN_VALUE "ghs_githubTOKEN9876543210fedcba"

extern char *dir;
extern char fake_dir[1024], ws[1024], cfg_path[1024];
extern struct sl_core *core;
extern struct sl_instance box;
extern struct sl_buf events;
int capture_emit(struct sl_core *c, const char *type, const char *job_id,
		 const char *data_json);
void write_config(const char *extra);
void core_up(void);
void box_up(void);
void setup(void);
void teardown(void);
const struct sbxloop_sandbox_ops *ops(void);
cJSON *invocations(void);
char *argv_joined(const cJSON *rec);
int count_calls(const char *prefix);
int argv_contains(const char *needle, const char *allowed_prefix);
void script(const char *json);
char *fs_path(const char *name, const char *inside);
int box_exists(const char *name);
int create_box(const char *name, const char *const *domains,
	       const char *worker, struct sbxloop_sandbox_info *info,
	       struct sbxloop_error *err);
/* create_box for a sandbox of `role` ("agent", "github") */
int create_box_as(const char *name, const char *role,
		  const char *const *domains, const char *worker,
		  struct sbxloop_sandbox_info *info,
		  struct sbxloop_error *err);
void must_create(const char *name);
int run_in(const char *name, const char *script_text, const char *in,
	   double timeout, struct sbxloop_proc_result *res,
	   struct sbxloop_error *err);
cJSON *secrets_state(void);
struct tu_run;
/* The real sbxloop binary with this suite's --config and ARGS, in dir. */
void sbxloop(struct tu_run *r, const char *const *args);

#endif

/*
 * The fixture of the egress suites (test-egress-*.c): a scratch
 * directory per test and the config loaded from its sbxloop.yaml.
 */
#include "config.h"

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sbxloop/policy.h>

#include "config/conf.h"
#include "host/core.h"
#include "engine/egress.h"
#include "engine/guard.h"
#include "common/policy_patterns.h"
#include "common/util.h"

#include "egress-support.h"

/* ------------------------------------------------------------ fixture */

char dir[256];
char cfg_path[512];
struct sl_config *cfg;

void setup(void)
{
	char tmpl[] = "/tmp/sbx-egress-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(cfg_path, sizeof(cfg_path), "%s/sbxloop.yaml", dir);
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("NO_COLOR", "1", 1);
	cfg = NULL;
}

void teardown(void)
{
	char *cmd = sl_xasprintf("rm -rf '%s'", dir);

	sl_config_free(cfg);
	cfg = NULL;
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove '%s'\n", dir);
	free(cmd);
}

/* Load a config made of `yaml` (plus a state_dir). */
void load(const char *yaml)
{
	struct sl_config_opts opts;
	char *errors = NULL;
	FILE *f = fopen(cfg_path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "state_dir: %s/state\n%s", dir, yaml);
	fclose(f);
	memset(&opts, 0, sizeof(opts));
	opts.config_file = cfg_path;
	opts.no_user_file = 1;
	opts.no_env = 1;
	sl_config_free(cfg);
	cfg = NULL;
	ck_assert_msg(sl_config_load(&cfg, &opts, &errors) == 0, "%s",
		      errors ? errors : "");
	free(errors);
}

int in_list(char **list, const char *s)
{
	size_t i;

	for (i = 0; list[i]; i++)
		if (!strcmp(list[i], s))
			return 1;
	return 0;
}

/*
 * libFuzzer target for the config loader (sl_config_load, core/config/conf.c):
 * the input is the text of an sbxloop.yaml, loaded as the project file
 * with no user file and no environment. It must not crash or leak; a
 * load that fails must say why, one that succeeds must render as JSON.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config/conf.h"
#include "common/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd;

	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "/tmp/fuzz-conf-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		abort();
	close(fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_config_opts opts;
	struct sl_config *cfg = NULL;
	char *errors = NULL;
	FILE *f = fopen(path, "w");

	if (!f || fwrite(data, 1, size, f) != size) {
		if (f)
			fclose(f);
		abort();
	}
	fclose(f);
	memset(&opts, 0, sizeof(opts));
	opts.config_file = path;
	opts.cwd = "/tmp";
	opts.no_user_file = 1;
	opts.no_env = 1;
	if (sl_config_load(&cfg, &opts, &errors) == 0) {
		char *json = sl_config_to_json(cfg);
		cJSON *j = json ? cJSON_Parse(json) : NULL;

		if (!cJSON_IsObject(j)) {
			fprintf(stderr, "fuzz-conf: config does not render "
					"as a JSON object\n");
			abort();
		}
		cJSON_Delete(j);
		free(json);
	} else if (!errors || !*errors) {
		fprintf(stderr, "fuzz-conf: load failed without a reason\n");
		abort();
	}
	free(errors);
	sl_config_free(cfg);
	return 0;
}

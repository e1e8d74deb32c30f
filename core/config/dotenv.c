/*
 * Loading a .env file into the environment, without overriding what is
 * already set. Called by main() with ./.env before the configuration is
 * loaded, so its variables count as the environment layer.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/conf.h"
#include "config/conf_internal.h"
#include "common/util.h"

int sl_dotenv_load(const char *path, char **error)
{
	size_t len;
	char *data = sl_read_file(path, &len, 1 << 20);
	char *line, *save = NULL;
	int lineno = 0;

	*error = NULL;
	if (!data)
		return errno == ENOENT ? 0 : -errno;
	for (line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *eq, *name, *val;
		size_t vl;

		lineno++;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		if (strncmp(p, "export ", 7) == 0)
			p += 7;
		eq = strchr(p, '=');
		if (!eq)
			continue;
		*eq = '\0';
		name = sl_conf_trim_dup(p);
		val = sl_conf_trim_dup(eq + 1);
		vl = strlen(val);
		if (vl >= 2 && (val[0] == '"' || val[0] == '\'') &&
		    val[vl - 1] == val[0]) {
			memmove(val, val + 1, vl - 2);
			val[vl - 2] = '\0';
		} else {
			char *hash = strstr(val, " #");

			if (hash) {
				*hash = '\0';
				vl = strlen(val);
				while (vl &&
				       isspace((unsigned char)val[vl - 1]))
					val[--vl] = '\0';
			}
		}
		if (*name && !getenv(name))
			setenv(name, val, 0);
		free(name);
		free(val);
	}
	free(data);
	return 0;
}

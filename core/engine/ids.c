/*
 * Random identifiers for runs and jobs. Entropy comes from getrandom();
 * when the kernel cannot provide it, a time-and-pid mix keeps ids unique
 * enough for a single host. Called by the engine and the run command.
 * Also the check of task ids (phases/decompose.c, DECOMPOSE).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine/ids.h"

static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";

static void fill_random(unsigned char *p, size_t n)
{
	ssize_t got = getrandom(p, n, 0);
	struct timespec ts;
	size_t i;

	if (got == (ssize_t)n)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((unsigned long)ts.tv_nsec >> (i % 24) ^
				       (unsigned long)getpid() * (i + 7));
}

void sl_id_new(char *buf, char prefix, size_t n)
{
	unsigned char raw[32];
	size_t i;

	if (n > sizeof(raw))
		n = sizeof(raw);
	fill_random(raw, n);
	buf[0] = prefix;
	for (i = 0; i < n; i++)
		buf[i + 1] = alphabet[raw[i] & 31];
	buf[n + 1] = '\0';
}

void sl_run_id_new(char buf[SL_RUN_ID_LEN + 1])
{
	sl_id_new(buf, 'r', SL_RUN_ID_LEN - 1);
}

void sl_job_id_new(char buf[SL_JOB_ID_LEN + 1])
{
	sl_id_new(buf, 'j', SL_JOB_ID_LEN - 1);
}

int sl_run_id_valid(const char *s)
{
	size_t i;

	if (!s || s[0] != 'r' || strlen(s) != SL_RUN_ID_LEN)
		return 0;
	for (i = 1; s[i]; i++)
		if (!strchr(alphabet, s[i]))
			return 0;
	return 1;
}

int sl_task_id_valid(const char *s)
{
	size_t i;

	if (!s || !*s || *s == '.' || *s == '-')
		return 0;
	for (i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i >= SL_TASK_ID_MAX)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

int sl_sandbox_name(char *buf, size_t size, const char *run, const char *role)
{
	int n = snprintf(buf, size, SL_SANDBOX_PREFIX "%s-%s", run, role);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int sl_sandbox_name_parse(const char *name, char *run_buf, size_t size,
			  const char **role)
{
	static const char *const roles[] = {"agent", "github"};
	const char *rest, *dash;
	size_t n, i;

	if (strncmp(name, SL_SANDBOX_PREFIX, strlen(SL_SANDBOX_PREFIX)))
		return -1;
	rest = name + strlen(SL_SANDBOX_PREFIX);
	dash = strrchr(rest, '-');
	if (!dash)
		return -1;
	for (i = 0; i < 2 && strcmp(dash + 1, roles[i]); i++)
		;
	/* a lane's agent sandbox (sandbox.lanes: per-lane): laneN */
	if (i == 2 && !strncmp(dash + 1, "lane", 4) && dash[5] &&
	    strspn(dash + 5, "0123456789") == strlen(dash + 5))
		i = 0;
	n = (size_t)(dash - rest);
	if (i == 2 || n + 1 > size)
		return -1;
	memcpy(run_buf, rest, n);
	run_buf[n] = '\0';
	if (!sl_run_id_valid(run_buf))
		return -1;
	*role = roles[i];
	return 0;
}

/* What the lanes' end-to-end suites share: see lanes-common.h. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lanes-common.h"
#include "runtest.h"

const char *const four[] = {"t1", "t2", "t3", "t4", NULL};
const char *const four_files[] = {"out-t1.txt", "out-t2.txt", "out-t3.txt",
				  "out-t4.txt", NULL};

void project(const char *scenario, int lanes)
{
	char extra[256];

	rt_git_repo();
	copy_scenario(scenario);
	snprintf(extra, sizeof(extra),
		 "sandbox:\n  workspace: repo\n"
		 "budgets:\n  max_parallel_tasks: %d\n",
		 lanes);
	rt_write_config("local", NULL, extra);
}

void assert_done(const char *run, const char *const *tasks)
{
	for (; *tasks; tasks++)
		assert_task_state(run, *tasks, "done");
}

void assert_files(const char *run, const char *const *files)
{
	char *ws = rt_workspace(run), path[8400];

	for (; *files; files++) {
		snprintf(path, sizeof(path), "%s/%s", ws, *files);
		ck_assert_msg(access(path, F_OK) == 0, "%s is missing",
			      *files);
	}
	free(ws);
}

void put_script(const char *rel, const char *text)
{
	char *p = rt_path("%s", rel), *slash = strrchr(p, '/');

	*slash = '\0';
	mkdir(p, 0755);
	*slash = '/';
	put_file(rel, text);
	ck_assert_int_eq(chmod(p, 0755), 0);
	free(p);
}

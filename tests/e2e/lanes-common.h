/*
 * What the lanes' end-to-end suites share (tests/e2e/test-lanes.c, the
 * runs; tests/e2e/test-lanes-guard.c, the attacks on the lanes' git).
 */
#ifndef SL_TEST_LANES_COMMON_H
#define SL_TEST_LANES_COMMON_H

/* A git project with one commit, and the config running on it. */
void project(const char *scenario, int lanes);

/* Each of `tasks` (NULL-terminated) is done in `run`. */
void assert_done(const char *run, const char *const *tasks);

/* Each of `files` (NULL-terminated) is in the run's workspace. */
void assert_files(const char *run, const char *const *files);

/* An executable file under the test directory. */
void put_script(const char *rel, const char *text);

/* The four tasks of tests/scenarios/lanes_wide.json and their files. */
extern const char *const four[];
extern const char *const four_files[];

#endif

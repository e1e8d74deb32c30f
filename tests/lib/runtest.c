/*
 * Helpers of the end-to-end suites that run the real sbxloop binary and
 * read its store (runtest.h).
 */
#include "config.h"

#include "runtest.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *scratch = ".";

void rt_set_dir(const char *dir)
{
	scratch = dir;
}

/* <scratch>/<rel> (caller frees). */
static char *scratch_path(const char *rel)
{
	size_t len = strlen(scratch) + strlen(rel) + 2;
	char *path = malloc(len);

	ck_assert_ptr_nonnull(path);
	snprintf(path, len, "%s/%s", scratch, rel);
	return path;
}

char *read_file(const char *rel)
{
	char *path = scratch_path(rel);
	char *text = tu_read(path);

	free(path);
	return text ? text : strdup("");
}

void put_file(const char *rel, const char *text)
{
	char *path = scratch_path(rel);

	tu_write(path, text);
	free(path);
}

void copy_scenario(const char *name)
{
	char path[4200];
	char *text;

	snprintf(path, sizeof(path), "%s/tests/scenarios/%s.json",
		 env_or("SBXLOOP_SRCDIR", "."), name);
	text = tu_read(path);
	ck_assert_msg(text && *text, "cannot read scenario %s", path);
	put_file("scenario.json", text);
	free(text);
}

const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

pid_t spawn_sbxloop(const char *const *env, const char *const *args)
{
	const char *argv[16];
	pid_t pid;
	size_t n = 0;

	argv[n++] = env_or("SBXLOOP_BIN", "sbxloop");
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int in, out, err;

		if (chdir(scratch) < 0)
			_exit(126);
		in = open("/dev/null", O_RDONLY);
		out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		err = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0 || err < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int wait_code(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int sbxloop(const char *a1, const char *a2, const char *a3)
{
	const char *args[] = {a1, a2, a3, NULL};

	return wait_code(spawn_sbxloop(NULL, args));
}

static void db_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/state/state.db", scratch);
}

static sqlite3 *db_open(void)
{
	char path[4200];
	sqlite3 *db = NULL;

	db_path(path, sizeof(path));
	ck_assert_int_eq(
		sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
		SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static char *vq_str(const char *fmt, va_list ap) RT_PRINTF(1, 0);

static char *vq_str(const char *fmt, va_list ap)
{
	sqlite3 *db = db_open();
	sqlite3_stmt *st = NULL;
	char sql[4096];
	char *res;

	vsnprintf(sql, sizeof(sql), fmt, ap);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
		      "bad query %s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		res = strdup((const char *)sqlite3_column_text(st, 0));
	else
		res = strdup("");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return res;
}

char *q_str(const char *fmt, ...)
{
	va_list ap;
	char *res;

	va_start(ap, fmt);
	res = vq_str(fmt, ap);
	va_end(ap);
	return res;
}

long q_int(const char *fmt, ...)
{
	va_list ap;
	char *s;
	long v;

	va_start(ap, fmt);
	s = vq_str(fmt, ap);
	va_end(ap);
	v = strtol(s, NULL, 10);
	free(s);
	return v;
}

void q_exec(const char *sql)
{
	sqlite3 *db = db_open();
	char *msg = NULL;

	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK,
		      "%s: %s", sql, msg ? msg : "");
	sqlite3_close(db);
}

long soft_count(const char *sql)
{
	char path[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long v = 0;

	db_path(path, sizeof(path));
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK) {
		sqlite3_busy_timeout(db, 2000);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

int wait_for(const char *sql, double secs)
{
	double waited;

	for (waited = 0; waited < secs; waited += 0.05) {
		if (soft_count(sql) > 0)
			return 1;
		sleep_ms(50);
	}
	return 0;
}

char *last_run(void)
{
	return q_str("SELECT run_id FROM runs ORDER BY created_at DESC "
		     "LIMIT 1");
}

void assert_run_state(const char *run, const char *state)
{
	char *got = q_str("SELECT state FROM runs WHERE run_id='%s'", run);

	ck_assert_msg(strcmp(got, state) == 0, "run %s is '%s', not '%s'", run,
		      got, state);
	free(got);
}

long count_events(const char *run, const char *type)
{
	return q_int("SELECT count(*) FROM events WHERE run_id='%s' AND "
		     "type='%s'",
		     run, type);
}

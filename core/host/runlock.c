/*
 * The run driver lock (runlock.h): flock(2) on a file of the run's
 * directory, held by the process that drives the run. flock, not fcntl
 * record locks: those belong to the process and drop when any of its
 * descriptors of the file closes. The descriptor is close-on-exec, so
 * no agent, worker or git the driver starts can keep a dead driver's
 * run locked. The file exists while it is held: the holder removes it
 * (and the run's directory, when that is left empty) as it lets go, so
 * a run that made nothing leaves nothing; a taker that locked a file
 * its holder removed meanwhile sees that the path no longer names it
 * and takes the path's new file instead. A holder killed -9 leaves the
 * file, unlocked; the next taker reuses it. Called by cmd_run.c and
 * cmd_deliver.c (take, release) and cmd_runs.c, cmd_sandbox.c (driver).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host/redact.h"
#include "host/runlock.h"
#include "common/util.h"

#define LOCK_NAME "driver.lock"

static char *lock_path(const char *state_dir, const char *run_id)
{
	return sl_xasprintf("%s/runs/%s/" LOCK_NAME, state_dir, run_id);
}

/* What the holder wrote: "PID COMMAND SINCE". 0, or -1 when unreadable. */
static int read_holder(int fd, struct sl_run_driver *who)
{
	char buf[128], cmd[16];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;
	double since;

	memset(who, 0, sizeof(*who));
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%ld %15s %lf", &pid, cmd, &since) != 3 || pid <= 0)
		return -1;
	who->pid = pid;
	snprintf(who->command, sizeof(who->command), "%s", cmd);
	who->since = since;
	return 0;
}

/*
 * The processes other than us that have the file open as `fd` open
 * (/proc/PID/fd), as " PID (NAME)" each, at most a few; "" when none
 * can be seen. Caller frees.
 */
static char *openers(int fd)
{
	struct sl_buf b = SL_BUF_INIT;
	struct stat want, st;
	struct dirent *p, *f;
	DIR *procs, *fds;
	char path[300], name[64];
	int n = 0;

	if (fstat(fd, &want) < 0 || !(procs = opendir("/proc")))
		return sl_xstrdup("");
	while ((p = readdir(procs)) != NULL && n < 8) {
		long pid = strtol(p->d_name, NULL, 10);
		int found = 0;

		if (pid <= 0 || pid == (long)getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		if (!(fds = opendir(path)))
			continue;
		while (!found && (f = readdir(fds)) != NULL) {
			snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid,
				 f->d_name);
			found = f->d_name[0] != '.' && stat(path, &st) == 0 &&
				st.st_dev == want.st_dev &&
				st.st_ino == want.st_ino;
		}
		closedir(fds);
		if (!found)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		name[0] = '\0';
		{
			FILE *c = fopen(path, "r");

			if (c) {
				if (!fgets(name, sizeof(name), c))
					name[0] = '\0';
				fclose(c);
			}
		}
		name[strcspn(name, "\n")] = '\0';
		sl_buf_addf(&b, " %ld (%s)", pid, name);
		n++;
	}
	closedir(procs);
	return sl_buf_detach(&b);
}

/*
 * Is the lock on `fd` held only by what a dead driver left (its git,
 * which inherits the lock: common/launch.c)? Then wait up to wait_s for
 * that to end: 0 once we hold the lock, -1 when it is still held.
 */
static int outwait_orphans(int fd, const struct sl_run_driver *who,
			   double wait_s)
{
	double until = sl_now() + wait_s;
	struct timespec nap = {0, 20 * 1000 * 1000};

	if (who->pid <= 0 || who->pid == (long)getpid() ||
	    kill((pid_t)who->pid, 0) == 0 || errno != ESRCH)
		return -1;
	sl_log(SBXLOOP_LOG_INFO,
	       "the run's last driver (pid %ld) is gone; waiting up to %g s "
	       "for the git it started to end",
	       who->pid, wait_s);
	while (sl_now() < until) {
		nanosleep(&nap, NULL);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
	}
	return -1;
}

/* The refusal: who holds it, and what to do. */
static int busy(int fd, const char *run_id, struct sbxloop_error *err)
{
	struct sl_run_driver who;
	char line[64] = "", *procs;
	int rc;

	if (read_holder(fd, &who) == 0 && kill((pid_t)who.pid, 0) < 0 &&
	    errno == ESRCH) {
		procs = openers(fd);
		rc = sl_error(err, SBXLOOP_ESTATE,
			      "run %s: its last driver (pid %ld) is gone, but "
			      "processes it started still hold the run%s%s; "
			      "they may still change its workspace: let them "
			      "end or stop them, then try again",
			      run_id, who.pid, *procs ? ":" : "", procs);
		free(procs);
		return rc;
	}
	if (who.pid > 0)
		snprintf(line, sizeof(line), " (pid %ld, `sbxloop %s`)",
			 who.pid, who.command);
	return sl_error(err, SBXLOOP_ESTATE,
			"run %s is driven by another sbxloop%s: one process "
			"acts on a run at a time; follow it with `sbxloop "
			"logs %s --follow` and try again when it ends "
			"(`sbxloop cancel %s` stops a run)",
			run_id, line, run_id, run_id);
}

/* Does `path` still name the file open as `fd`? */
static int still_named(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int sl_runlock_take(const char *state_dir, const char *run_id,
		    const char *command, struct sl_runlock *lk,
		    struct sbxloop_error *err)
{
	return sl_runlock_take_wait(state_dir, run_id, command,
				    SL_RUNLOCK_ORPHAN_WAIT_S, lk, err);
}

int sl_runlock_take_wait(const char *state_dir, const char *run_id,
			 const char *command, double orphan_wait_s,
			 struct sl_runlock *lk, struct sbxloop_error *err)
{
	char *dir, *path, line[96];
	int fd = -1, rc = 0, len, tries;

	lk->fd = -1;
	if (!state_dir)
		return sl_error(err, SBXLOOP_ERR, "no usable state_dir");
	dir = sl_xasprintf("%s/runs/%s", state_dir, run_id);
	path = lock_path(state_dir, run_id);
	/* a holder letting go removes the file and maybe the directory
	 * between our steps: start over then (a few times at most) */
	for (tries = 0;; tries++) {
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (tries == 8) {
			rc = sl_error(err, SBXLOOP_ERR,
				      "cannot lock '%s': it keeps being "
				      "removed",
				      path);
			goto out;
		}
		rc = sl_mkdirs(dir, 0700);
		if (rc < 0) {
			rc = sl_error(err, SBXLOOP_ERR,
				      "cannot create '%s': %s", dir,
				      strerror(-rc));
			goto out;
		}
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			  0600);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0) {
			rc = sl_error(err, SBXLOOP_ERR, "cannot open '%s': %s",
				      path, strerror(errno));
			goto out;
		}
		while ((rc = flock(fd, LOCK_EX | LOCK_NB)) < 0 &&
		       errno == EINTR)
			;
		if (rc < 0 && errno == EWOULDBLOCK) {
			struct sl_run_driver who;

			if (read_holder(fd, &who) == 0 &&
			    outwait_orphans(fd, &who, orphan_wait_s) == 0)
				rc = 0;
			else {
				rc = busy(fd, run_id, err);
				goto out;
			}
		}
		if (rc < 0) {
			rc = sl_error(err, SBXLOOP_ERR, "cannot lock '%s': %s",
				      path, strerror(errno));
			goto out;
		}
		if (still_named(fd, path))
			break;
	}
	/* who drives it, for `status` and for the refusal above */
	len = snprintf(line, sizeof(line), "%ld %s %.3f\n", (long)getpid(),
		       command, sl_now());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)len, 0) != len)
		sl_log(SBXLOOP_LOG_WARN,
		       "cannot record the driver in '%s': %s", path,
		       strerror(errno));
	lk->fd = fd;
	lk->path = path;
	lk->dir = dir;
	return 0;
out:
	if (fd >= 0)
		close(fd);
	free(dir);
	free(path);
	return rc;
}

void sl_runlock_release(struct sl_runlock *lk)
{
	if (lk->fd < 0)
		return;
	/* removed while still held: a taker of the old file sees it gone */
	unlink(lk->path);
	rmdir(lk->dir); /* only when nothing else of the run is there */
	close(lk->fd);
	free(lk->path);
	free(lk->dir);
	lk->fd = -1;
	lk->path = lk->dir = NULL;
}

int sl_runlock_driver(const char *state_dir, const char *run_id,
		      struct sl_run_driver *who)
{
	char *path = lock_path(state_dir, run_id);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), held = 0;

	memset(who, 0, sizeof(*who));
	free(path);
	if (fd < 0)
		return 0;
	/* a shared lock is refused exactly while a driver holds its own */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		flock(fd, LOCK_UN);
	else if (errno == EWOULDBLOCK) {
		held = 1;
		if (read_holder(fd, who) < 0)
			memset(who, 0, sizeof(*who));
	}
	close(fd);
	return held;
}

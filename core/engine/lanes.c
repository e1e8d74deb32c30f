/*
 * Parallel lanes (budgets.max_parallel_tasks > 1): ready tasks run at
 * once, each on a thread of its own and in a git worktree of its own,
 * so concurrent tasks never see each other's half-done files; a task
 * the validator accepted is committed in its worktree and merged back
 * into the run's workspace (three-way, git), and a conflict is never
 * resolved silently: task.conflict, and the task plans again on the
 * merged tree, spending a replan. Dependents start from the merged tree.
 *
 * The worktrees live under the workspace's excluded .sbxloop/lanes/,
 * where the sandbox sees them at the same relative path: on the host
 * when the sandbox mounts the workspace, inside the sandbox when it
 * does not (a harvested run; lanes_fs.c runs the git and file work
 * there, and a sandbox without git gets one task at a time, saying
 * why). A workspace that is no clean git top (not git, a subdirectory
 * of a checkout, uncommitted changes; always inside the sandbox) gets a
 * shadow repository, .sbxloop/git, whose work tree is the workspace:
 * the same worktrees and merges without touching the user's own git.
 *
 * sandbox.lanes: shared (default) runs every lane in the run's agent
 * sandbox, whose egress ledger counts holders (egress.c); per-lane
 * gives each lane an agent sandbox of its own (made when the lane first
 * starts a task, attested, with a ledger of its own, removed when the
 * lanes end). Scheduling happens on the engine thread; a lane thread
 * drives its task's steps, then commits and merges its work (merges one
 * at a time, under the scheduler's merge lock).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/events.h>

#include "engine/engine_internal.h"
#include "engine/artifacts.h"
#include "engine/lanes_fs.h"
#include "engine/lanes_git2.h"
#include "engine/workspace.h"
#include "host/redact.h"

#define LANES_MAX SL_PAIR_LANES_MAX

/*
 * git's worktree records are read and written unlocked by `worktree
 * remove`, `worktree prune` and `branch -D`: those calls take this
 * lock, whichever thread makes them (worktree_open writes only its own
 * worktree's records and needs none).
 */
static pthread_mutex_t worktrees_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The run branch's tip: a merge moves it (writer), a worktree starts
 * from it (reader). `git checkout -B <branch>` without a start point
 * fills the worktree from HEAD as it reads it first and makes the branch
 * at HEAD as it reads it again: a merge between the two reads would give
 * a branch whose tree lacks that merge's files, and the task's commit
 * would delete them. Taken before worktrees_lock where both are held.
 * libgit2's checkout (sl_g2_checkout) reads the tip once and takes no
 * lock: a lane need not wait for a merge under way.
 */
static pthread_rwlock_t tip_lock = PTHREAD_RWLOCK_INITIALIZER;

/* A lane's own agent sandbox (sandbox.lanes: per-lane); kept across
 * the tasks the lane runs. */
struct slot {
	int up;
	char label[16]; /* "laneN" */
	struct sbxloop_sandbox_info info;
	struct sl_egress_ledger *ledger;
};

struct sl_lane {
	struct sl_engine *e;
	struct task *t;
	struct slot *slot; /* NULL: the run's agent sandbox */
	size_t index;
	pthread_t th;
	int running;
	int finished;
	int rc;
	struct sbxloop_error err;
	struct sbxloop_sandbox_info info; /* workdir: the worktree inside */
	char *dir;                        /* the worktree on the host */
};

struct sched {
	struct sl_engine *e;
	struct sl_lane lanes[LANES_MAX];
	struct slot slots[LANES_MAX];
	size_t n;
	int per_lane;
	char *common;    /* git's common dir (absolute) */
	char *head_file; /* the workspace's HEAD file (absolute) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* merges into the run's workspace, one at a time */
	pthread_mutex_t merge_lock;
	/*
	 * The merge queue (under `lock`): an accepted task leaves its lane
	 * at once and is committed and merged here, in order, by one
	 * thread, while the lane takes its next task. merging[i]: task i
	 * is queued or being merged; committed[i]: its lane committed it
	 * (in process, where a commit costs about a millisecond, the lanes
	 * commit at once rather than one after another here); merged: one
	 * was done since the scheduler last looked; its errors, as a lane's.
	 */
	pthread_t merger;
	pthread_cond_t queued;
	struct task **queue;
	size_t q_head, q_len;
	unsigned char *merging, *committed;
	int merged, closing;
	int merge_rc;
	struct sbxloop_error merge_err;
};

const struct sbxloop_sandbox_info *sl_lane_info(const struct task *t)
{
	return t && t->lane ? &t->lane->info : NULL;
}

const char *sl_lane_dir(const struct task *t)
{
	return t && t->lane ? t->lane->dir : NULL;
}

struct sl_egress_ledger *sl_lane_ledger(const struct task *t)
{
	return t && t->lane && t->lane->slot ? t->lane->slot->ledger : NULL;
}

/* ---- git ---------------------------------------------------------------- */

/*
 * git in task t's worktree `dir`. On the host --git-dir and --work-tree
 * are named, never found through the worktree's .git file: that file is
 * the agents' to rewrite, and a gitdir of theirs would hand sbxloop's
 * git a config of theirs whose filter or merge driver runs on the host
 * (the records under the common dir are out of their reach: the local
 * sandbox keeps git's directories read-only while lanes run).
 */
static int lane_git(struct sl_git_out *g, struct sl_engine *e,
		    const struct task *t, const char *dir,
		    const char *const *argv)
{
	char *records = NULL;
	int rc;

	if (!sl_lanes_in_box(e) && e->lanes_common)
		records = sl_lanes_records(e, t);
	rc = sl_lanes_git_in(g, e, records, dir, argv);
	free(records);
	return rc;
}

int sl_lanes_evidence(struct sl_engine *e, const struct task *t, double since,
		      struct sl_evidence *ev)
{
	char *dir, *records, *msg = NULL;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if (!t->lane || !sl_lanes_in_process(e))
		return -1;
	dir = sl_lanes_dir(e, t);
	records = sl_lanes_records(e, t);
	rc = sl_g2_evidence(records, dir, since, &ev->status, &ev->diff,
			    &ev->recent, &msg);
	if (rc != 0) {
		sl_log(SBXLOOP_LOG_INFO,
		       "lanes: libgit2 cannot read the review's evidence of "
		       "task %s (%s): a job in the sandbox gathers it",
		       t->id, msg ? msg : "failed");
		sl_evidence_clear(ev);
	}
	free(msg);
	free(records);
	free(dir);
	return rc == 0 ? 0 : -1;
}

/*
 * A call of lanes_git2.c, `rc` its return: SL_G2_FALLBACK says why
 * (msg freed) and has the git command do it.
 */
static int g2_fallback(int rc, char **msg)
{
	if (rc != SL_G2_FALLBACK)
		return 0;
	sl_log(SBXLOOP_LOG_INFO, "lanes: libgit2: %s; the git command does it",
	       *msg ? *msg : "failed");
	free(*msg);
	*msg = NULL;
	return 1;
}

/*
 * The task's worktree from the run branch's tip, made on the lane's own
 * thread so lanes make theirs at once: `git worktree add` cannot run
 * concurrently, so the worktree's records are written here in git's
 * own layout (gitrepository-layout(5): worktrees/<id>/HEAD, commondir
 * and gitdir, and the worktree's .git file), HEAD where the workspace's
 * HEAD is (the run branch), and one `git checkout -f -B <lane branch>`
 * in it makes the lane branch at the tip and fills the worktree and its
 * index. A worktree already on its lane branch is kept (a resume); one
 * a kill cut off before that is made again.
 */
static int worktree_open(const struct sched *s, struct task *t,
			 struct sbxloop_error *err)
{
	struct sl_engine *e = s->e;
	struct sl_git_out g = {0, 0, NULL, NULL};
	char *dir = sl_lanes_dir(e, t), *branch = sl_lanes_branch(e, t);
	char *admin = sl_lanes_records(e, t);
	char *want = sl_xasprintf("ref: refs/heads/%s\n", branch);
	char *path = sl_xasprintf("%s/HEAD", admin), *dotgit, *text, *head;
	int rc = 0;

	if (sl_lanes_in_box(e)) {
		/* one job in the sandbox, not one per record: git's own
		 * `worktree add`, serialised; in a resume, a worktree of a
		 * mounted workspace already on its branch is kept (a
		 * harvested run never resumes into an old sandbox) */
		text = dotgit = NULL;
		if (e->resumed && !sl_lanes_harvested(e) &&
		    sl_lanes_git(&g, e, NULL,
				 (const char *const[]){"git", "-C", dir,
						       "symbolic-ref", "-q",
						       "HEAD", NULL}) == 0 &&
		    /* want: "ref: REF\n" */
		    strlen(g.out) + 6 == strlen(want) &&
		    !strncmp(g.out, want + 5, strlen(g.out))) {
			sl_git_out_clear(&g);
			goto out; /* kept */
		}
		sl_git_out_clear(&g);
		pthread_rwlock_rdlock(&tip_lock);
		pthread_mutex_lock(&worktrees_lock);
		if (WS_GIT(&g, e, NO_HOOKS, "worktree", "add", "-q", "-f",
			   "-B", branch, dir, "HEAD"))
			rc = sl_error(err, SBXLOOP_EINFRA,
				      "cannot make the worktree of task %s: "
				      "%s",
				      t->id, g.err);
		pthread_mutex_unlock(&worktrees_lock);
		pthread_rwlock_unlock(&tip_lock);
		sl_git_out_clear(&g);
		goto out;
	}
	text = sl_lanes_read(e, path, 4096);
	dotgit = sl_xasprintf("%s/.git", dir);
	if (text && !strcmp(text, want) && sl_lanes_isdir(e, dir))
		goto out; /* kept */
	sl_lanes_rmtree(e, dir);
	sl_lanes_rmtree(e, admin);
	head = sl_lanes_read(e, s->head_file, 4096);
	if (!head || sl_lanes_mkdirs(e, admin) < 0 ||
	    sl_lanes_mkdirs(e, dir) < 0 || sl_lanes_write(e, path, head) < 0) {
		free(head);
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot make the worktree of task %s in %s",
			      t->id, dir);
		goto out;
	}
	free(head);
	free(path);
	path = sl_xasprintf("%s/commondir", admin);
	rc = sl_lanes_write(e, path, "../..\n");
	free(path);
	path = sl_xasprintf("%s/gitdir", admin);
	free(text);
	text = sl_xasprintf("%s\n", dotgit);
	rc |= sl_lanes_write(e, path, text);
	free(text);
	text = sl_xasprintf("gitdir: %s\n", admin);
	rc |= sl_lanes_write(e, dotgit, text);
	if (rc < 0) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot make the worktree of task %s in %s",
			      t->id, dir);
		goto out;
	}
	if (sl_lanes_in_process(e)) {
		char *msg = NULL;

		/* no tip lock: libgit2's checkout reads the tip once, makes
		 * the branch at it and fills the worktree from it, so a merge
		 * meanwhile is not half seen (the lane starts before it) */
		rc = sl_g2_checkout(admin, dir, branch, &msg);
		if (!g2_fallback(rc, &msg) && rc < 0)
			rc = sl_error(
				err, SBXLOOP_EINFRA,
				"cannot make the worktree of task %s: %s",
				t->id, msg);
		free(msg);
		if (rc != SL_G2_FALLBACK)
			goto out;
		rc = 0;
	}
	pthread_rwlock_rdlock(&tip_lock);
	if (lane_git(&g, e, t, dir,
		     (const char *const[]){"git", NO_HOOKS, NO_REFLOG,
					   "checkout", "-q", "-f", "-B",
					   branch, NULL}))
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot make the worktree of task %s: %s", t->id,
			      g.err);
	pthread_rwlock_unlock(&tip_lock);
	sl_git_out_clear(&g);
out:
	free(text);
	free(dotgit);
	free(path);
	free(want);
	free(admin);
	free(dir);
	free(branch);
	return rc;
}

/*
 * Where the worktrees' records go and what their HEAD starts as: git's
 * common dir and the workspace's HEAD file, absolute; and .sbxloop/ is
 * excluded: as sl_lanes_mode found them on the workspace's own git, else
 * in one call of git. 0, or an error.
 */
static int worktree_paths(struct sched *s, struct sbxloop_error *err)
{
	struct sl_engine *e = s->e;
	struct sl_git_out g = {0, 0, NULL, NULL};
	char *found = NULL, *head, *exclude, *end;
	int rc = 0;

	if (!e->lanes_git && e->lanes_paths)
		found = sl_xstrdup(e->lanes_paths);
	else if (WS_GIT(&g, e, "rev-parse", "--path-format=absolute",
			"--git-common-dir", "--git-path", "HEAD", "--git-path",
			"info/exclude") == 0)
		found = sl_xstrdup(g.out);
	/* "COMMON\nHEAD\nEXCLUDE" */
	head = found ? strchr(found, '\n') : NULL;
	exclude = head ? strchr(head + 1, '\n') : NULL;
	if (exclude) {
		*head++ = '\0';
		*exclude++ = '\0';
		if ((end = strchr(exclude, '\n')) != NULL)
			*end = '\0';
		s->common = sl_xstrdup(found);
		free(e->lanes_common);
		e->lanes_common = sl_xstrdup(found);
		s->head_file = sl_xstrdup(head);
		sl_lanes_exclude(e, exclude);
	}
	free(found);
	if (!s->common)
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot find the workspace's git directory: %s",
			      g.err ? g.err : "");
	sl_git_out_clear(&g);
	if (rc == 0)
		rc = sl_lanes_config_check(e, s->common, err);
	return rc;
}

/* Remove the task's worktree and branch now (a conflict re-opens it). */
static void worktree_drop(struct sl_engine *e, struct task *t)
{
	struct sl_git_out g;
	char *dir = sl_lanes_dir(e, t), *branch = sl_lanes_branch(e, t);

	pthread_mutex_lock(&worktrees_lock);
	WS_GIT(&g, e, "worktree", "remove", "--force", dir);
	sl_git_out_clear(&g);
	WS_GIT(&g, e, "branch", "-q", "-D", branch);
	sl_git_out_clear(&g);
	pthread_mutex_unlock(&worktrees_lock);
	free(dir);
	free(branch);
}

/*
 * A merged task's worktree: its directory goes now, and with libgit2 its
 * branch and records too (in process, about a millisecond); with the git
 * command, those go in one call each when the lanes end (sl_lanes_tidy), so
 * the serial part of a task is its merge alone.
 */
static void worktree_retire(struct sl_engine *e, struct task *t)
{
	char *dir = sl_lanes_dir(e, t);

	pthread_mutex_lock(&worktrees_lock);
	sl_lanes_rmtree(e, dir);
	pthread_mutex_unlock(&worktrees_lock);
	free(dir);
	if (sl_lanes_in_process(e))
		sl_lanes_forget(e, t);
}

/*
 * Commit the task's work in its worktree (its lane's thread). 0, or an
 * error naming git's own: an accepted task whose work is not committed
 * is never merged as if it were (the worktree stays for resume).
 */
static int commit_task(struct sl_engine *e, struct task *t,
		       struct sbxloop_error *err)
{
	struct sl_git_out g;
	char *dir = sl_lanes_dir(e, t),
	     *msg = sl_xasprintf("sbxloop: task %s", t->id);
	int rc;

	if (sl_lanes_in_box(e)) {
		/* one job, not two: the commit only when the add worked
		 * (the arguments are git's, never shell source) */
		rc = sl_lanes_git(
			&g, e, dir,
			(const char *const[]){
				"sh", "-c", "git add -A && exec git \"$@\"",
				"sh", GIT_ID, NO_REFLOG, "commit", "-q",
				"--allow-empty", "-m", msg, NULL});
		goto done;
	}
	if (sl_lanes_in_process(e)) {
		char *admin = sl_lanes_records(e, t);
		char *why = NULL;

		rc = sl_g2_commit(admin, dir, msg, &why);
		free(admin);
		if (!g2_fallback(rc, &why)) {
			if (rc < 0)
				rc = sl_error(err, SBXLOOP_EINFRA,
					      "cannot commit the work of task "
					      "%s in %s: %s",
					      t->id, dir, why);
			free(why);
			free(msg);
			free(dir);
			return rc;
		}
	}
	rc = lane_git(&g, e, t, dir,
		      (const char *const[]){"git", "add", "-A", NULL});
	if (rc == 0) {
		sl_git_out_clear(&g);
		rc = lane_git(&g, e, t, dir,
			      (const char *const[]){
				      "git", GIT_ID, NO_REFLOG, "commit", "-q",
				      "--allow-empty", "-m", msg, NULL});
	}
done:
	if (rc != 0)
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot commit the work of task %s in %s: %s",
			      t->id, dir,
			      g.err && *g.err ? g.err : "git did not run");
	sl_git_out_clear(&g);
	free(msg);
	free(dir);
	return rc;
}

/*
 * Merge the task's committed work into the run's workspace (its lane's
 * thread under the merge lock, or the engine thread when recovering).
 * 0 merged, 1 a conflict (the merge is undone, *files lists the
 * conflicting paths; caller frees), <0 error.
 */
static int merge_task(struct sl_engine *e, struct task *t, char **files,
		      struct sbxloop_error *err)
{
	struct sl_git_out g;
	char *branch = sl_lanes_branch(e, t), *msg;
	int rc = 0;

	*files = NULL;
	msg = sl_xasprintf("sbxloop: merge task %s", t->id);
	pthread_rwlock_wrlock(&tip_lock);
	if (sl_lanes_in_process(e)) {
		char *why = NULL;

		rc = sl_g2_merge(e->lanes_git, sl_lanes_root(e), branch, msg,
				 files, &why);
		if (!g2_fallback(rc, &why)) {
			if (rc < 0)
				rc = sl_error(err, SBXLOOP_EINFRA,
					      "cannot merge task %s into the "
					      "workspace: %s",
					      t->id, why);
			free(why);
			goto out;
		}
		rc = 0;
	}
	if (WS_GIT(&g, e, GIT_ID, "merge", "-q", "--no-ff", "--no-edit", "-m",
		   msg, branch) == 0) {
		sl_git_out_clear(&g);
		goto out;
	}
	sl_git_out_clear(&g);
	if (WS_GIT(&g, e, "diff", "--name-only", "--diff-filter=U") == 0 &&
	    *g.out) {
		*files = sl_xstrdup(g.out);
		rc = 1;
	} else {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot merge task %s into the workspace: %s",
			      t->id, g.err);
	}
	sl_git_out_clear(&g);
	WS_GIT(&g, e, "merge", "--abort");
	sl_git_out_clear(&g);
out:
	pthread_rwlock_unlock(&tip_lock);
	free(msg);
	free(branch);
	return rc;
}

/* ---- a conflict --------------------------------------------------------- */

/*
 * The task's changes collide with what was merged meanwhile: it plans
 * again on the merged tree with the conflict as feedback, spending a
 * replan, and fails when none is left.
 */
static int conflicted(struct sl_engine *e, struct task *t, const char *files,
		      struct sbxloop_error *err)
{
	cJSON *d = cJSON_CreateObject(), *list;
	char *copy = sl_xstrdup(files), *line, *save = NULL, *fb;
	int rc;

	cJSON_AddStringToObject(d, "task_id", t->id);
	list = cJSON_AddArrayToObject(d, "files");
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		cJSON_AddItemToArray(list, cJSON_CreateString(line));
	free(copy);
	sl_engine_emit(e, SBXLOOP_EV_TASK_CONFLICT, d);
	worktree_drop(e, t);
	fb = sl_xasprintf("merge conflict: your changes collided with work "
			  "another task merged meanwhile, in: %s. Plan again "
			  "on the merged tree, keeping both.",
			  files);
	sl_task_set_feedback(t, fb);
	free(fb);
	t->replans++;
	if (t->replans >
	    sl_engine_budget(e, "budgets.max_replans_per_task", 1)) {
		rc = sl_engine_set_task_state(e, t, SL_TASK_FAILED, err);
		if (rc == 0)
			sl_engine_task_end(e, t, 0);
		return rc;
	}
	sl_task_discard_plan(t);
	return sl_engine_set_task_state(e, t, SL_TASK_PLANNING, err);
}

/* ---- the lanes ---------------------------------------------------------- */

struct lane_arg {
	struct sched *s;
	struct sl_lane *l;
};

/*
 * The lane's own agent sandbox, made when the lane first needs it:
 * created and handed the model token like the run's (provision.c),
 * attested (run.attest), with a grant ledger of its own.
 */
static int slot_up(struct sl_lane *l, struct sbxloop_error *err)
{
	struct sl_engine *e = l->e;
	struct slot *sl = l->slot;
	int rc;

	if (sl->up)
		return 0;
	snprintf(sl->label, sizeof(sl->label), "lane%zu", l->index + 1);
	rc = sl_pair_lane_up(e->pair, l->index, e->workspace, &e->cancel,
			     &sl->info, err);
	if (rc < 0)
		return rc;
	sl->up = 1;
	rc = sl_engine_attest(e, sl->label, err);
	if (rc < 0)
		return rc;
	sl->ledger = sl_engine_ledger_new(e, sl->info.name);
	return 0;
}

/* The lane's view: its sandbox, working in the task's worktree. */
static int lane_view(struct sl_lane *l, struct sbxloop_error *err)
{
	const struct sbxloop_sandbox_info *base =
		l->slot ? &l->slot->info : &l->e->info;
	char *inside =
		sl_xasprintf("%s/" LANES_DIR "/%s", base->workdir, l->t->id);
	size_t n = strlen(inside);

	l->info = *base;
	if (n >= sizeof(l->info.workdir)) {
		free(inside);
		return sl_error(err, SBXLOOP_EINVAL,
				"the worktree path of task %s is too long",
				l->t->id);
	}
	memcpy(l->info.workdir, inside, n + 1);
	free(inside);
	return 0;
}

static int settle(struct sl_engine *e, struct task *t, int resumed,
		  struct sbxloop_error *err);

static void *lane_thread(void *arg)
{
	struct lane_arg *a = arg;
	struct sched *s = a->s;
	struct sl_lane *l = a->l;
	int committed;

	free(a);
	/* the sandbox and the worktree on the lane's own thread, and in
	 * process the accepted task's commit; the merger merges it (one at
	 * a time) while the lane takes its next task */
	l->rc = l->slot ? slot_up(l, &l->err) : 0;
	if (l->rc == 0)
		l->rc = lane_view(l, &l->err);
	if (l->rc == 0)
		l->rc = worktree_open(s, l->t, &l->err);
	if (l->rc == 0)
		l->rc = sl_engine_run_task(l->e, l->t, &l->err);
	if (l->rc == 0 && l->t->state != SL_TASK_DONE) {
		pthread_mutex_lock(&s->merge_lock);
		l->rc = settle(l->e, l->t, 0, &l->err);
		pthread_mutex_unlock(&s->merge_lock);
	}
	committed = l->rc == 0 && l->t->state == SL_TASK_DONE &&
		    sl_lanes_in_process(l->e);
	if (committed)
		l->rc = commit_task(l->e, l->t, &l->err);
	pthread_mutex_lock(&s->lock);
	if (l->rc == 0 && l->t->state == SL_TASK_DONE) {
		/* accepted: the merger commits (unless the lane did) and
		 * merges it, the lane is free (set before `finished`: the
		 * task is never idle) */
		s->merging[l->t - l->e->tasks] = 1;
		s->committed[l->t - l->e->tasks] = (unsigned char)committed;
		s->queue[(s->q_head + s->q_len++) % l->e->n_tasks] = l->t;
		pthread_cond_signal(&s->queued);
	}
	l->finished = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int lane_start(struct sched *s, struct sl_lane *l, struct task *t,
		      struct sbxloop_error *err)
{
	struct sl_engine *e = s->e;
	struct lane_arg *a;

	memset(l, 0, sizeof(*l));
	l->e = e;
	l->t = t;
	l->index = (size_t)(l - s->lanes);
	l->slot = s->per_lane ? &s->slots[l->index] : NULL;
	l->dir = sl_lanes_dir(e, t);
	t->lane = l;
	a = sl_xcalloc(1, sizeof(*a));
	a->s = s;
	a->l = l;
	l->running = 1;
	if (pthread_create(&l->th, NULL, lane_thread, a) != 0) {
		free(a);
		t->lane = NULL;
		l->running = 0;
		free(l->dir);
		return sl_error(err, SBXLOOP_EINFRA,
				"cannot start a lane for task %s", t->id);
	}
	return 0;
}

/*
 * The lanes' own sandboxes at the end: every grant revoked; removed
 * unless the run failed (the pair's teardown, or keep_on_failure,
 * decides then, with the run's own).
 */
static void slots_down(struct sched *s, int failed)
{
	struct sl_engine *e = s->e;
	size_t k;

	for (k = 0; k < s->n; k++) {
		struct slot *sl = &s->slots[k];

		if (!sl->up)
			continue;
		if (sl->ledger) {
			pthread_mutex_lock(&e->ledger_lock);
			sl_engine_revoke_grants(e, sl->ledger, NULL);
			pthread_mutex_unlock(&e->ledger_lock);
			sl_egress_ledger_free(sl->ledger);
			sl->ledger = NULL;
		}
		if (!failed)
			sl_pair_lane_down(e->pair, k);
		sl->up = 0;
	}
}

/* Is `t` in a lane or in the merge queue? (the scheduler's thread) */
static int task_running(struct sched *s, const struct task *t)
{
	size_t i;
	int queued;

	for (i = 0; i < s->n; i++)
		if (s->lanes[i].running && s->lanes[i].t == t)
			return 1;
	pthread_mutex_lock(&s->lock);
	queued = s->merging[t - s->e->tasks];
	pthread_mutex_unlock(&s->lock);
	return queued;
}

/*
 * -1 blocked for good (a dependency failed or was skipped), 0 waits,
 * 1 ready. A running dependency's state belongs to its lane's thread:
 * it is not read, the task waits.
 */
static int readiness(struct sched *s, const struct task *t)
{
	struct sl_engine *e = s->e;
	const cJSON *dep;
	int ready = 1;

	cJSON_ArrayForEach (
		dep, cJSON_GetObjectItemCaseSensitive(t->spec, "depends_on")) {
		struct task *d = sl_engine_find_task(e, dep->valuestring);

		if (!d)
			continue;
		if (task_running(s, d)) {
			ready = 0;
			continue;
		}
		if (d->state == SL_TASK_FAILED || d->state == SL_TASK_SKIPPED)
			return -1;
		if (d->state != SL_TASK_DONE)
			ready = 0;
	}
	return ready;
}

/*
 * A task its lane left: an accepted one is merged (task.end then), or
 * plans again after a conflict; a terminal one's worktree goes.
 */
static int settle(struct sl_engine *e, struct task *t, int resumed,
		  struct sbxloop_error *err)
{
	char *files = NULL;
	int rc;

	/* accepted before a kill: maybe not committed yet */
	if (resumed && t->state == SL_TASK_DONE &&
	    (rc = commit_task(e, t, err)) < 0)
		return rc;
	if (t->state == SL_TASK_DONE) {
		rc = merge_task(e, t, &files, err);
		if (rc == 1) {
			rc = conflicted(e, t, files, err);
			free(files);
			return rc;
		}
		if (rc < 0)
			return rc; /* the worktree stays for resume */
		/* under the merge lock: the harvest holds this merge and
		 * no half of another (a resume starts from it) */
		sl_engine_task_end(e, t, sl_engine_harvest_task(e) > 0);
	}
	if (sl_task_terminal(t))
		worktree_retire(e, t);
	return 0;
}

/* A finished lane: join it, note the first error. */
static int lane_finish(struct sched *s, struct sl_lane *l,
		       struct sbxloop_error *first, int *failed)
{
	struct task *t = l->t;

	pthread_join(l->th, NULL);
	l->running = 0;
	t->lane = NULL;
	/* a failed step or merge: the worktree stays for resume */
	if (l->rc < 0 && !*failed) {
		*first = l->err;
		*failed = l->rc;
	}
	free(l->dir);
	return 0;
}

/*
 * The merger: each accepted task in turn is committed in its worktree
 * (unless its lane did, in process) and merged (settle: a conflict sends
 * it back to planning), until the scheduler closes the queue and it is
 * empty. An error is kept as a lane's is; later tasks are still merged
 * (their work is accepted).
 */
static void *merger_thread(void *arg)
{
	struct sched *s = arg;
	struct sl_engine *e = s->e;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct sbxloop_error err = {0, ""};
		struct task *t;
		int rc, committed;

		while (!s->q_len && !s->closing)
			pthread_cond_wait(&s->queued, &s->lock);
		if (!s->q_len)
			break;
		t = s->queue[s->q_head];
		s->q_head = (s->q_head + 1) % e->n_tasks;
		s->q_len--;
		committed = s->committed[t - e->tasks];
		pthread_mutex_unlock(&s->lock);
		rc = committed ? 0 : commit_task(e, t, &err);
		if (rc == 0) {
			pthread_mutex_lock(&s->merge_lock);
			rc = settle(e, t, 0, &err);
			pthread_mutex_unlock(&s->merge_lock);
		}
		pthread_mutex_lock(&s->lock);
		s->merging[t - e->tasks] = 0;
		if (rc < 0 && !s->merge_rc) {
			s->merge_rc = rc;
			s->merge_err = err;
		}
		s->merged = 1;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/*
 * A run that had lanes and was killed: a merge the kill cut off is
 * undone (the workspace goes back to its last merge), and a task
 * accepted in its worktree but never merged is merged now, whether or
 * not lanes run this time. Nothing to do without .sbxloop/lanes.
 * *own: lanes ran on the workspace's own git (they go on with it).
 */
static int recover(struct sl_engine *e, int *own, struct sbxloop_error *err)
{
	struct sl_git_out g;
	char *lanes, *shadow;
	size_t i;
	int rc = 0, is[2];

	/* nothing to recover but in a resume (a fresh run has no lanes of
	 * its own yet), and a harvested run resumes in a fresh sandbox */
	if (!e->resumed || !e->workspace || sl_lanes_harvested(e))
		return 0;
	/* lanes that ran on a shadow repository go on with it (one look
	 * at both in the sandbox) */
	shadow = sl_xasprintf("%s/" SHADOW_DIR, sl_lanes_root(e));
	lanes = sl_xasprintf("%s/" LANES_DIR, sl_lanes_root(e));
	sl_lanes_isdirs(e, (const char *const[]){shadow, lanes, NULL}, is);
	free(lanes);
	if (is[0]) {
		free(e->lanes_git);
		e->lanes_git = shadow;
	} else {
		free(shadow);
	}
	if (!is[1])
		return 0;
	*own = !e->lanes_git;
	/* a git command the kill cut off leaves its index locked */
	if (WS_GIT(&g, e, "rev-parse", "--path-format=absolute",
		   "--git-common-dir") == 0) {
		sl_lanes_clear_locks(e, g.out);
		free(e->lanes_common);
		e->lanes_common = sl_xstrdup(g.out);
		rc = sl_lanes_config_check(e, g.out, err);
	}
	sl_git_out_clear(&g);
	if (rc < 0)
		return rc; /* not even `merge --abort` with such a config */
	if (WS_GIT(&g, e, "rev-parse", "-q", "--verify", "MERGE_HEAD") == 0) {
		sl_git_out_clear(&g);
		WS_GIT(&g, e, "merge", "--abort");
		sl_log(SBXLOOP_LOG_INFO,
		       "lanes: a merge cut off by the last stop was undone");
	}
	sl_git_out_clear(&g);
	for (i = 0; i < e->n_tasks && rc == 0; i++) {
		struct task *t = &e->tasks[i];
		char *dir = sl_lanes_dir(e, t);

		if (t->state == SL_TASK_DONE && sl_lanes_isdir(e, dir))
			rc = settle(e, t, 1, err);
		free(dir);
	}
	if (rc == 0)
		sl_lanes_tidy(e);
	return rc;
}

static void *preload_g2(void *arg)
{
	(void)arg;
	sl_g2_available();
	return NULL;
}

int sl_engine_schedule_lanes(struct sl_engine *e, struct sbxloop_error *err)
{
	long long want =
		sl_config_int(e->core->cfg, "budgets.max_parallel_tasks", 1);
	struct sched *s;
	struct sbxloop_error first = {0, ""};
	char *why = NULL;
	pthread_t preload;
	size_t i;
	int failed = 0, stop = 0, rc, mode, own = 0, preloading;

	/* resumed after lanes: finish what a kill cut short first */
	rc = recover(e, &own, err);
	if (rc < 0)
		return rc;
	if (want <= 1 || e->n_tasks < 2) {
		sl_lanes_shadow_drop(e);
		return 1;
	}
	/* libgit2 loads while git says where the lanes go */
	preloading = !sl_lanes_in_box(e) &&
		     pthread_create(&preload, NULL, preload_g2, NULL) == 0;
	mode = sl_lanes_mode(e, &why, err);
	if (preloading)
		pthread_join(preload, NULL);
	if (mode == -2)
		return -1;
	if (mode < 0) {
		sl_log(SBXLOOP_LOG_WARN,
		       "budgets.max_parallel_tasks=%lld: running one task at "
		       "a time, because %s",
		       want, why);
		free(why);
		sl_lanes_shadow_drop(e);
		return 1;
	}
	if (mode == 2 && own) {
		/* the killed run's worktrees and branches are the
		 * workspace's git's: the lanes go on with it, as they ran
		 * (a shadow repository now would orphan them) */
		sl_log(SBXLOOP_LOG_INFO,
		       "lanes: resumed on the workspace's own git, as they "
		       "ran before the stop (%s)",
		       why);
		mode = 0;
	} else if (mode > 0 && !e->lanes_git)
		sl_log(SBXLOOP_LOG_WARN,
		       "lanes: %s, so the lanes work on a repository of their "
		       "own, %s/" SHADOW_DIR
		       " (the workspace's files as they stand; merges write "
		       "back into the workspace; removed at the end)%s",
		       why, sl_lanes_root(e),
		       sl_lanes_harvested(e) ? ", inside the sandbox" : "");
	free(why);
	if (mode > 0 || e->lanes_git) {
		rc = sl_lanes_shadow_open(e, err);
		if (rc < 0)
			return rc;
	}
	s = sl_xcalloc(1, sizeof(*s));
	s->e = e;
	s->n = (size_t)(want < LANES_MAX ? want : LANES_MAX);
	{
		const char *boxes =
			sl_config_str(e->core->cfg, "sandbox.lanes");

		s->per_lane = boxes && !strcmp(boxes, "per-lane");
		/* a lane's own sandbox could not see worktrees that live
		 * inside the run's */
		if (s->per_lane && sl_lanes_harvested(e)) {
			sl_log(SBXLOOP_LOG_WARN,
			       "sandbox.lanes: per-lane needs the workspace "
			       "mounted (the lanes' worktrees live in the "
			       "run's agent sandbox otherwise); every lane "
			       "runs in the run's agent sandbox");
			s->per_lane = 0;
		}
	}
	rc = worktree_paths(s, err);
	if (rc < 0) {
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->merge_lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_cond_init(&s->queued, NULL);
	s->queue = sl_xcalloc(e->n_tasks, sizeof(*s->queue));
	s->merging = sl_xcalloc(e->n_tasks, 1);
	s->committed = sl_xcalloc(e->n_tasks, 1);
	if (pthread_create(&s->merger, NULL, merger_thread, s) != 0) {
		rc = sl_error(err, SBXLOOP_EINFRA,
			      "cannot start the lanes' merge thread");
		goto out;
	}
	e->lanes_active = 1;
	for (;;) {
		size_t running = 0;
		int merges, crossed = 0;

		/* launch what is ready, in stored order */
		for (i = 0; !stop && i < e->n_tasks; i++) {
			struct task *t = &e->tasks[i];
			struct sl_lane *free_lane = NULL;
			size_t k;
			int r;

			if (task_running(s, t) || sl_task_terminal(t))
				continue;
			r = readiness(s, t);
			if (r < 0) {
				rc = sl_engine_boundary(e, err);
				if (rc == 0)
					rc = sl_engine_set_task_state(
						e, t, SL_TASK_SKIPPED, err);
				if (rc < 0) {
					first = *err;
					failed = rc;
					stop = 1;
				}
				continue;
			}
			if (r == 0)
				continue;
			for (k = 0; k < s->n && !free_lane; k++)
				if (!s->lanes[k].running)
					free_lane = &s->lanes[k];
			if (!free_lane)
				break;
			/* one boundary for the tasks a pass starts: they start
			 * together (each stops at its own next one) */
			rc = crossed ? 0 : sl_engine_boundary(e, err);
			crossed = 1;
			if (rc == 0)
				rc = lane_start(s, free_lane, t, err);
			if (rc < 0) {
				first = *err;
				failed = rc;
				stop = 1;
			}
		}
		for (i = 0; i < s->n; i++)
			running += s->lanes[i].running;
		pthread_mutex_lock(&s->lock);
		merges = s->q_len > 0 || memchr(s->merging, 1, e->n_tasks);
		if (!running && !merges) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		/* wait for a lane to finish or a merge to be done */
		for (;;) {
			int any = s->merged;

			for (i = 0; i < s->n; i++)
				any |= s->lanes[i].running &&
				       s->lanes[i].finished;
			if (any)
				break;
			pthread_cond_wait(&s->cond, &s->lock);
		}
		s->merged = 0;
		if (s->merge_rc < 0 && !failed) {
			first = s->merge_err;
			failed = s->merge_rc;
		}
		pthread_mutex_unlock(&s->lock);
		for (i = 0; i < s->n; i++)
			if (s->lanes[i].running && s->lanes[i].finished)
				lane_finish(s, &s->lanes[i], &first, &failed);
		if (failed) {
			/* running lanes stop at their next boundary, their
			 * last step committed */
			stop = 1;
			e->lanes_halt = 1;
		}
	}
	pthread_mutex_lock(&s->lock);
	s->closing = 1;
	pthread_cond_signal(&s->queued);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->merger, NULL);
	e->lanes_active = 0;
	e->lanes_halt = 0;
	slots_down(s, failed);
	sl_lanes_tidy(e);
	if (!failed && e->lanes_git) {
		sl_lanes_shadow_drop(e);
	} else if (!failed) {
		char *lanes = sl_xasprintf("%s/" LANES_DIR, sl_lanes_root(e));
		char *top = sl_xasprintf("%s/.sbxloop", sl_lanes_root(e));

		/* each only when empty */
		sl_lanes_rmdirs(e, (const char *const[]){lanes, top, NULL});
		free(lanes);
		free(top);
	}
out:
	pthread_cond_destroy(&s->queued);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->merge_lock);
	pthread_mutex_destroy(&s->lock);
	free(s->queue);
	free(s->merging);
	free(s->committed);
	free(s->common);
	free(s->head_file);
	free(s);
	if (rc < 0 && !failed)
		return rc;
	if (failed) {
		*err = first;
		return failed;
	}
	return 0;
}

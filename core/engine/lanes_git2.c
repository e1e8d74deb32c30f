/*
 * The lanes' git on the host, in process (libgit2). See lanes_git2.h;
 * lanes.c falls back to the git commands when a call says
 * SL_G2_FALLBACK.
 */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <git2.h>

#include "common/fifo.h"
#include "common/walk.h"
#include "common/util.h"
#include "engine/lanes_fs.h"
#include "engine/lanes_git2.h"
#include "host/redact.h"

/*
 * The entry points used, resolved by name when the lanes first need
 * them: sbxloop never links libgit2 (16 more shared objects to load at
 * every start, about 6 ms), and runs without it (the git command).
 */
#define G2_API(X)                                                             \
	X(git_checkout_options_init)                                          \
	X(git_checkout_tree)                                                  \
	X(git_commit_create)                                                  \
	X(git_commit_free)                                                    \
	X(git_commit_id)                                                      \
	X(git_commit_lookup)                                                  \
	X(git_commit_tree)                                                    \
	X(git_buf_dispose)                                                    \
	X(git_diff_find_options_init)                                         \
	X(git_diff_find_similar)                                              \
	X(git_diff_free)                                                      \
	X(git_diff_options_init)                                              \
	X(git_diff_to_buf)                                                    \
	X(git_diff_tree_to_workdir_with_index)                                \
	X(git_error_last)                                                     \
	X(git_graph_descendant_of)                                            \
	X(git_index_add_all)                                                  \
	X(git_index_conflict_iterator_free)                                   \
	X(git_index_conflict_iterator_new)                                    \
	X(git_index_conflict_next)                                            \
	X(git_index_free)                                                     \
	X(git_index_has_conflicts)                                            \
	X(git_index_read)                                                     \
	X(git_index_update_all)                                               \
	X(git_index_write)                                                    \
	X(git_index_write_tree)                                               \
	X(git_index_write_tree_to)                                            \
	X(git_libgit2_init)                                                   \
	X(git_merge_commits)                                                  \
	X(git_merge_options_init)                                             \
	X(git_oid_cmp)                                                        \
	X(git_reference_create)                                               \
	X(git_reference_create_matching)                                      \
	X(git_reference_delete)                                               \
	X(git_reference_free)                                                 \
	X(git_reference_lookup)                                               \
	X(git_reference_name)                                                 \
	X(git_reference_name_to_id)                                           \
	X(git_reference_peel)                                                 \
	X(git_repository_free)                                                \
	X(git_repository_head)                                                \
	X(git_repository_index)                                               \
	X(git_repository_open_ext)                                            \
	X(git_repository_path)                                                \
	X(git_repository_set_workdir)                                         \
	X(git_repository_workdir)                                             \
	X(git_reset)                                                          \
	X(git_signature_free)                                                 \
	X(git_signature_now)                                                  \
	X(git_status_byindex)                                                 \
	X(git_status_list_entrycount)                                         \
	X(git_status_list_free)                                               \
	X(git_status_list_new)                                                \
	X(git_status_options_init)                                            \
	X(git_tree_free)                                                      \
	X(git_tree_lookup)

static struct {
#define G2_FIELD(f) __typeof__(&f) f;
	G2_API(G2_FIELD)
#undef G2_FIELD
} G;

static const char *const g2_names[] = {
#define G2_NAME(f) #f,
	G2_API(G2_NAME)
#undef G2_NAME
};

/* load() fills G slot by slot, in g2_names' order */
_Static_assert(sizeof(G) == SL_ARRAY_SIZE(g2_names) * sizeof(void *),
	       "G holds one function pointer per name");

static pthread_once_t g2_once = PTHREAD_ONCE_INIT;
static int g2_loaded;

/*
 * The library stays loaded and initialised until the process exits (its
 * global state and thread-local errors must not outlive their code).
 */
static void load(void)
{
	const char *lib = getenv("SBXLOOP_LIBGIT2");
	void *dl;
	size_t i;

	if (!lib || !*lib)
		lib = SL_GIT2_SONAME;
	dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();

		sl_log(SBXLOOP_LOG_INFO,
		       "lanes: libgit2 (%s) cannot be loaded (%s): the lanes "
		       "commit and merge with the git command; to have them "
		       "in process, install it (on Debian, apt-get install "
		       "libgit2-dev brings it)",
		       lib, why ? why : "dlopen failed");
		return;
	}
	for (i = 0; i < SL_ARRAY_SIZE(g2_names); i++) {
		void *f = dlsym(dl, g2_names[i]);

		if (!f) {
			sl_log(SBXLOOP_LOG_INFO,
			       "lanes: libgit2 (%s) lacks %s: the lanes use "
			       "the git command",
			       lib, g2_names[i]);
			memset(&G, 0, sizeof(G));
			return;
		}
		/* every field is a function pointer, in g2_names' order;
		 * POSIX guarantees a data pointer can hold a function's */
		memcpy((char *)&G + i * sizeof(f), &f, sizeof(f));
	}
	G.git_libgit2_init();
	g2_loaded = 1;
}

int sl_g2_available(void)
{
	pthread_once(&g2_once, load);
	return g2_loaded;
}

/* ---- a call the caller can outwait --------------------------------------
 *
 * libgit2 opens what it reads without O_NONBLOCK, and reads a
 * .gitignore or .gitattributes whatever its type: an agent's `mkfifo
 * .gitignore` in a work tree (or a file it swaps for a FIFO between
 * libgit2's lstat and open) would block the call, and the run with it,
 * for good. So each call runs on a thread of its own while its caller
 * waits: after RELEASE_AFTER_S, and each second after that, the caller
 * opens for writing (without blocking) every FIFO under the work tree,
 * so that a read blocked in open() goes on and reads an empty file;
 * after give_up_s (the git command's limit, workspace.c) it stops
 * waiting and the call fails. A call given up starts no further change
 * (gave_up() before each step that changes a ref, HEAD, an index or a
 * work tree; a step under way finishes), and frees what it holds when
 * it ends, if ever.
 */
#define RELEASE_AFTER_S 1.0

struct call {
	int kind; /* CALL_CHECKOUT, ..., CALL_DELETE */
	char *git_dir, *work_tree, *branch, *message;
	double since; /* CALL_EVIDENCE */
	char *out[3]; /* CALL_EVIDENCE: status, diff, recent files */
	int rc, done, refs, abandoned;
	char *files, *msg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

enum {
	CALL_CHECKOUT,
	CALL_COMMIT,
	CALL_MERGE,
	CALL_EVIDENCE,
	CALL_DELETE,
	CALL_CLEAN
};

static double release_after_s = RELEASE_AFTER_S;
static double give_up_s = 600.0;
static unsigned calls_running;
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local struct call *this_call;

/*
 * Has the caller stopped waiting for the call this thread runs? (What
 * the call then says is read by no one.)
 */
static int gave_up(void)
{
	return this_call &&
	       __atomic_load_n(&this_call->abandoned, __ATOMIC_ACQUIRE);
}

/* -1, *msg: what failed and libgit2's own words. */
static int fail(char **msg, const char *what)
{
	const git_error *ge = G.git_error_last();

	*msg = sl_xasprintf("%s: %s", what,
			    ge && ge->message ? ge->message
					      : "libgit2 failed");
	return -1;
}

/*
 * Is `dir` the repository's work tree already (a worktree's, read from
 * its record)? Setting it again leaks in libgit2 1.5.
 */
static int is_workdir(git_repository *repo, const char *dir)
{
	const char *cur = G.git_repository_workdir(repo);
	char *real = cur ? realpath(dir, NULL) : NULL;
	size_t n = real ? strlen(real) : 0;
	int same;

	/* libgit2's ends in a slash */
	same = real && !strncmp(cur, real, n) && !strcmp(cur + n, "/");
	free(real);
	return same;
}

/*
 * The repository of git directory `git_dir` (NULL: found at
 * work_tree/.git, no search upwards) working on `work_tree`.
 */
static int open_repo(git_repository **repo, const char *git_dir,
		     const char *work_tree, char **msg)
{
	int rc;

	*repo = NULL;
	/* open_ext, not open_bare: it refuses a repository whose
	 * extensions it does not know, as git does */
	rc = G.git_repository_open_ext(repo, git_dir ? git_dir : work_tree,
				       GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc < 0) {
		const git_error *ge = G.git_error_last();

		*msg = sl_xasprintf("libgit2 cannot open %s: %s",
				    git_dir ? git_dir : work_tree,
				    ge && ge->message ? ge->message
						      : "unknown error");
		return SL_G2_FALLBACK;
	}
	if (git_dir && !is_workdir(*repo, work_tree) &&
	    G.git_repository_set_workdir(*repo, work_tree, 0) < 0) {
		rc = fail(msg, "cannot set the work tree");
		G.git_repository_free(*repo);
		*repo = NULL;
		return rc;
	}
	return 0;
}

static int head_commit(git_commit **out, git_repository *repo, char **msg)
{
	git_reference *head = NULL;
	git_object *obj = NULL;
	int rc = 0;

	*out = NULL;
	if (G.git_repository_head(&head, repo) < 0 ||
	    G.git_reference_peel(&obj, head, GIT_OBJECT_COMMIT) < 0)
		rc = fail(msg, "cannot read HEAD");
	else
		*out = (git_commit *)obj;
	G.git_reference_free(head);
	return rc;
}

static int checkout_body(const char *git_dir, const char *work_tree,
			 const char *branch, char **msg)
{
	git_repository *repo;
	git_commit *tip = NULL;
	git_reference *ref = NULL;
	git_checkout_options co;
	char *name = sl_xasprintf("refs/heads/%s", branch);
	char *head = NULL, *path = NULL;
	int rc;

	*msg = NULL;
	rc = open_repo(&repo, git_dir, work_tree, msg);
	if (rc < 0)
		goto out;
	rc = head_commit(&tip, repo, msg);
	if (rc < 0)
		goto out;
	if (gave_up()) {
		rc = -1;
		goto out;
	}
	if (G.git_reference_create(&ref, repo, name, G.git_commit_id(tip), 1,
				   "sbxloop: lane") < 0) {
		rc = fail(msg, "cannot make the lane's branch");
		goto out;
	}
	/* HEAD written as git's worktree records are: no look at every
	 * other worktree's HEAD, as git_repository_set_head takes, which
	 * races with lanes writing theirs */
	head = sl_xasprintf("ref: %s\n", name);
	path = sl_xasprintf("%s/HEAD", G.git_repository_path(repo));
	if (gave_up() ||
	    sl_write_file_replace(path, head, strlen(head), 0644) < 0) {
		*msg = sl_xasprintf("cannot write %s", path);
		rc = -1;
		goto out;
	}
	G.git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	if (gave_up())
		rc = -1;
	else if (G.git_reset(repo, (const git_object *)tip, GIT_RESET_HARD,
			     &co) < 0)
		rc = fail(msg, "cannot fill the worktree");
out:
	if (rc == -1)
		rc = SL_G2_FALLBACK; /* git's checkout -f -B redoes it all */
	G.git_reference_free(ref);
	G.git_commit_free(tip);
	G.git_repository_free(repo);
	free(path);
	free(head);
	free(name);
	return rc;
}

/* A commit of `tree` with `parents`; *id. update_ref: NULL or "HEAD". */
static int make_commit(git_oid *id, git_repository *repo,
		       const char *update_ref, const git_oid *tree_id,
		       const git_commit **parents, size_t n,
		       const char *message, char **msg)
{
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	int rc = 0;

	if (G.git_signature_now(&sig, LANES_GIT_NAME, LANES_GIT_EMAIL) < 0 ||
	    G.git_tree_lookup(&tree, repo, tree_id) < 0 ||
	    G.git_commit_create(id, repo, update_ref, sig, sig, NULL, message,
				tree, n, parents) < 0)
		rc = fail(msg, "cannot commit");
	G.git_tree_free(tree);
	G.git_signature_free(sig);
	return rc;
}

static int commit_body(const char *git_dir, const char *work_tree,
		       const char *message, char **msg)
{
	git_repository *repo;
	git_index *index = NULL;
	git_commit *parent = NULL;
	git_oid tree_id, id;
	int rc;

	*msg = NULL;
	rc = open_repo(&repo, git_dir, work_tree, msg);
	if (rc < 0)
		return rc;
	/* add -A: new and changed files (ignore rules as git's), then the
	 * ones gone from the work tree */
	if (G.git_repository_index(&index, repo) < 0 ||
	    G.git_index_read(index, 1) < 0 ||
	    G.git_index_add_all(index, NULL, GIT_INDEX_ADD_DEFAULT, NULL,
				NULL) < 0 ||
	    G.git_index_update_all(index, NULL, NULL, NULL) < 0 || gave_up() ||
	    G.git_index_write(index) < 0 ||
	    G.git_index_write_tree(&tree_id, index) < 0) {
		rc = fail(msg, "cannot add the work to the index");
		goto out;
	}
	rc = head_commit(&parent, repo, msg);
	if (rc == 0 && gave_up())
		rc = fail(msg, "given up");
	if (rc == 0)
		rc = make_commit(&id, repo, "HEAD", &tree_id,
				 (const git_commit **)&parent, 1, message,
				 msg);
out:
	if (rc == -1)
		rc = SL_G2_FALLBACK; /* git's add -A takes the index over */
	G.git_commit_free(parent);
	G.git_index_free(index);
	G.git_repository_free(repo);
	return rc;
}

/* Each conflicting path once, a line each. */
static char *conflict_paths(git_index *index)
{
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *anc, *ours, *theirs;
	struct sl_buf b = SL_BUF_INIT;
	char *last = NULL;

	if (G.git_index_conflict_iterator_new(&it, index) < 0)
		return sl_xstrdup("(the conflicting paths are unknown)\n");
	while (G.git_index_conflict_next(&anc, &ours, &theirs, it) == 0) {
		const git_index_entry *e = ours ? ours : theirs ? theirs : anc;

		if (!e || (last && !strcmp(last, e->path)))
			continue;
		sl_buf_adds(&b, e->path);
		sl_buf_addc(&b, '\n');
		free(last);
		last = sl_xstrdup(e->path);
	}
	free(last);
	G.git_index_conflict_iterator_free(it);
	return sl_buf_detach(&b);
}

static int merge_body(const char *git_dir, const char *work_tree,
		      const char *branch, const char *message, char **files,
		      char **msg)
{
	git_repository *repo;
	git_reference *head = NULL, *moved = NULL;
	git_commit *ours = NULL, *theirs = NULL, *merged = NULL;
	git_index *index = NULL, *ws_index = NULL;
	git_merge_options mo;
	git_checkout_options co;
	git_oid theirs_id, tree_id, id;
	char *name = sl_xasprintf("refs/heads/%s", branch);
	const git_commit *parents[2];
	int rc, touched = 0;

	*files = *msg = NULL;
	rc = open_repo(&repo, git_dir, work_tree, msg);
	if (rc < 0)
		goto out;
	/* HEAD's branch (git_repository_head resolves it) and its tip,
	 * read once */
	if (G.git_repository_head(&head, repo) < 0 ||
	    G.git_reference_peel((git_object **)&ours, head,
				 GIT_OBJECT_COMMIT) < 0) {
		rc = fail(msg, "cannot read HEAD");
		goto out;
	}
	if (G.git_reference_name_to_id(&theirs_id, repo, name) < 0 ||
	    G.git_commit_lookup(&theirs, repo, &theirs_id) < 0) {
		rc = fail(msg, "cannot read the task's branch");
		goto out;
	}
	/* the workspace's index now: one libgit2 cannot read (a split
	 * index the config did not announce) is the git command's, before
	 * anything is written */
	if (G.git_repository_index(&ws_index, repo) < 0) {
		rc = fail(msg, "cannot read the workspace's index");
		goto out;
	}
	/* merged already (a resume after the merge): nothing to do */
	if (!G.git_oid_cmp(&theirs_id, G.git_commit_id(ours)) ||
	    G.git_graph_descendant_of(repo, G.git_commit_id(ours),
				      &theirs_id) == 1)
		goto out;
	G.git_merge_options_init(&mo, GIT_MERGE_OPTIONS_VERSION);
	if (G.git_merge_commits(&index, repo, ours, theirs, &mo) < 0) {
		rc = fail(msg, "cannot merge");
		goto out;
	}
	if (G.git_index_has_conflicts(index)) {
		*files = conflict_paths(index);
		rc = 1;
		goto out;
	}
	parents[0] = ours;
	parents[1] = theirs;
	if (G.git_index_write_tree_to(&tree_id, index, repo) < 0) {
		rc = fail(msg, "cannot write the merged tree");
		goto out;
	}
	if ((rc = make_commit(&id, repo, NULL, &tree_id, parents, 2, message,
			      msg)) < 0)
		goto out;
	touched = 1;
	/* the work tree first, from HEAD's tree to the merge's, over what
	 * a merge a kill cut off left; then the branch, only from where
	 * this merge began */
	G.git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	if (gave_up() || G.git_commit_lookup(&merged, repo, &id) < 0 ||
	    G.git_checkout_tree(repo, (const git_object *)merged, &co) < 0) {
		rc = fail(msg, "cannot bring the workspace to the merge");
		goto out;
	}
	if (gave_up() || G.git_reference_create_matching(
				 &moved, repo, G.git_reference_name(head), &id,
				 1, G.git_commit_id(ours), message) < 0)
		rc = fail(msg, "cannot move the run's branch to the merge");
out:
	if (rc == -1 && !touched)
		rc = SL_G2_FALLBACK;
	G.git_index_free(ws_index);
	G.git_index_free(index);
	G.git_commit_free(merged);
	G.git_commit_free(theirs);
	G.git_commit_free(ours);
	G.git_reference_free(moved);
	G.git_reference_free(head);
	G.git_repository_free(repo);
	free(name);
	return rc;
}

/* ---- the review's evidence ---------------------------------------------- */

#define EVIDENCE_MAX_SIZE (4 * 1024 * 1024) /* larger: "Binary files" */
#define RECENT_MAX 1000u                    /* lines of recent files */
#define RECENT_DEPTH 64                     /* directories below the top */
#define RECENT_ENTRIES 200000u              /* entries looked at */

/* `path` as git's quotePath writes it: C-quoted if anything needs it. */
static void add_path(struct sl_buf *b, const char *path)
{
	static const char esc[] = "\a\b\t\n\v\f\r";
	static const char letter[] = "abtnvfr";
	const unsigned char *p;

	for (p = (const unsigned char *)path; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			break;
	if (!*p) {
		sl_buf_adds(b, path);
		return;
	}
	sl_buf_addc(b, '"');
	for (p = (const unsigned char *)path; *p; p++) {
		const char *e = *p ? strchr(esc, *p) : NULL;

		if (e)
			sl_buf_addf(b, "\\%c", letter[e - esc]);
		else if (*p == '"' || *p == '\\')
			sl_buf_addf(b, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			sl_buf_addf(b, "\\%03o", *p);
		else
			sl_buf_addc(b, (char)*p);
	}
	sl_buf_addc(b, '"');
}

static char status_letter(unsigned st, int index)
{
	if (index)
		return st & GIT_STATUS_INDEX_NEW          ? 'A'
		       : st & GIT_STATUS_INDEX_MODIFIED   ? 'M'
		       : st & GIT_STATUS_INDEX_DELETED    ? 'D'
		       : st & GIT_STATUS_INDEX_RENAMED    ? 'R'
		       : st & GIT_STATUS_INDEX_TYPECHANGE ? 'T'
							  : ' ';
	return st & GIT_STATUS_WT_MODIFIED     ? 'M'
	       : st & GIT_STATUS_WT_DELETED    ? 'D'
	       : st & GIT_STATUS_WT_RENAMED    ? 'R'
	       : st & GIT_STATUS_WT_TYPECHANGE ? 'T'
					       : ' ';
}

/* `git status --short`: changes, then untracked files, by path. */
static int evidence_status(git_repository *repo, char **out, char **msg)
{
	git_status_options so;
	git_status_list *list = NULL;
	struct sl_buf b = SL_BUF_INIT;
	size_t i, n;
	int pass;

	G.git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED |
		   GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX;
	if (G.git_status_list_new(&list, repo, &so) < 0)
		return fail(msg, "cannot read the status");
	n = G.git_status_list_entrycount(list);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n; i++) {
			const git_status_entry *e =
				G.git_status_byindex(list, i);
			const git_diff_delta *hi = e->head_to_index,
					     *iw = e->index_to_workdir;
			int untracked = (e->status & GIT_STATUS_WT_NEW) != 0;

			if (untracked != pass ||
			    (e->status & GIT_STATUS_IGNORED))
				continue;
			if (untracked) {
				sl_buf_adds(&b, "?? ");
				add_path(&b, iw->new_file.path);
				sl_buf_addc(&b, '\n');
				continue;
			}
			sl_buf_addc(&b, status_letter(e->status, 1));
			sl_buf_addc(&b, status_letter(e->status, 0));
			sl_buf_addc(&b, ' ');
			if (hi && (e->status & GIT_STATUS_INDEX_RENAMED)) {
				add_path(&b, hi->old_file.path);
				sl_buf_adds(&b, " -> ");
			}
			add_path(&b,
				 hi ? hi->new_file.path : iw->new_file.path);
			sl_buf_addc(&b, '\n');
		}
	G.git_status_list_free(list);
	*out = sl_buf_detach(&b);
	return 0;
}

/* `git diff HEAD`: HEAD's tree against the work tree, as a patch. */
static int evidence_diff(git_repository *repo, char **out, char **msg)
{
	git_commit *head = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	git_diff_options dopt;
	git_diff_find_options fopt;
	git_buf buf = {NULL, 0, 0};
	int rc;

	rc = head_commit(&head, repo, msg);
	if (rc < 0)
		return rc;
	G.git_diff_options_init(&dopt, GIT_DIFF_OPTIONS_VERSION);
	dopt.max_size = EVIDENCE_MAX_SIZE;
	/* renames, as git's diff.renames (true since git 2.9) has them */
	G.git_diff_find_options_init(&fopt, GIT_DIFF_FIND_OPTIONS_VERSION);
	fopt.flags = GIT_DIFF_FIND_RENAMES;
	if (G.git_commit_tree(&tree, head) < 0 ||
	    G.git_diff_tree_to_workdir_with_index(&diff, repo, tree, &dopt) <
		    0 ||
	    G.git_diff_find_similar(diff, &fopt) < 0 ||
	    G.git_diff_to_buf(&buf, diff, GIT_DIFF_FORMAT_PATCH) < 0)
		rc = fail(msg, "cannot diff the work tree");
	else
		*out = sl_xstrndup(buf.ptr ? buf.ptr : "", buf.size);
	G.git_buf_dispose(&buf);
	G.git_diff_free(diff);
	G.git_tree_free(tree);
	G.git_commit_free(head);
	return rc;
}

static int newer(const struct stat *st, double since)
{
	return (double)st->st_mtim.tv_sec + st->st_mtim.tv_nsec / 1e9 > since;
}

/* What recent_file() writes to, and how many lines more. */
struct recent {
	double since;
	unsigned lines;
	struct sl_buf b;
};

/*
 * A regular file changed after r->since, as a `./PATH` line; the top's
 * .git left out.
 */
static enum sl_walk_next recent_file(void *user, int dir_fd, const char *name,
				     const char *rel, const struct stat *st,
				     int depth)
{
	struct recent *r = user;

	(void)dir_fd;
	if (!depth && !strcmp(name, ".git"))
		return SL_WALK_SKIP;
	if (S_ISREG(st->st_mode) && newer(st, r->since)) {
		add_path(&r->b, rel);
		sl_buf_addc(&r->b, '\n');
		if (!--r->lines)
			return SL_WALK_STOP;
	}
	return SL_WALK_ON;
}

static int evidence_body(const char *git_dir, const char *work_tree,
			 double since, char *out[3], char **msg)
{
	git_repository *repo;
	struct recent r = {since, RECENT_MAX, SL_BUF_INIT};
	int rc;

	*msg = NULL;
	rc = open_repo(&repo, git_dir, work_tree, msg);
	if (rc < 0)
		return rc;
	rc = evidence_status(repo, &out[0], msg);
	if (rc == 0)
		rc = evidence_diff(repo, &out[1], msg);
	G.git_repository_free(repo);
	if (rc < 0)
		return rc;
	/* as `find -newer`, never through a symbolic link */
	sl_walk_tree(work_tree, RECENT_DEPTH, RECENT_ENTRIES, recent_file, &r);
	out[2] = sl_buf_detach(&r.b);
	return 0;
}

/*
 * Delete the branches named in `names` (a line each, "refs/heads/"
 * left out) that exist, their reflogs with them; the first failure is
 * said, the others still go.
 */
static int delete_body(const char *git_dir, const char *names, char **msg)
{
	git_repository *repo = NULL;
	char *list = sl_xstrdup(names), *name, *save = NULL;
	int rc = 0;

	if (G.git_repository_open_ext(
		    &repo, git_dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
		rc = fail(msg, "cannot open the repository");
		goto out;
	}
	for (name = strtok_r(list, "\n", &save); name && !gave_up();
	     name = strtok_r(NULL, "\n", &save)) {
		git_reference *ref = NULL;
		char *full = sl_xasprintf("refs/heads/%s", name);
		int r = G.git_reference_lookup(&ref, repo, full);

		if (r == 0)
			r = G.git_reference_delete(ref);
		if (r < 0 && r != GIT_ENOTFOUND && rc == 0)
			rc = fail(msg, "cannot delete a lane's branch");
		G.git_reference_free(ref);
		free(full);
	}
out:
	G.git_repository_free(repo);
	free(list);
	return rc < 0 ? -1 : 0;
}

/*
 * Is W clean as `git status --porcelain --untracked-files=all -- .
 * ':!.sbxloop'` sees it (prints nothing)? 0 clean, 1 not; the top's
 * .sbxloop/ (the lanes' own) left out.
 */
static int clean_body(const char *work_tree, char **msg)
{
	git_repository *repo;
	git_status_options so;
	git_status_list *list = NULL;
	size_t i, n;
	int rc;

	*msg = NULL;
	rc = open_repo(&repo, NULL, work_tree, msg);
	if (rc < 0)
		return rc;
	G.git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED |
		   GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
	if (G.git_status_list_new(&list, repo, &so) < 0) {
		rc = fail(msg, "cannot read the status");
		goto out;
	}
	n = G.git_status_list_entrycount(list);
	for (i = 0; i < n && rc == 0; i++) {
		const git_status_entry *e = G.git_status_byindex(list, i);
		const git_diff_delta *d = e->head_to_index
						  ? e->head_to_index
						  : e->index_to_workdir;
		const char *path = d ? d->new_file.path : "";

		if (e->status & GIT_STATUS_IGNORED)
			continue;
		if (!strcmp(path, ".sbxloop") ||
		    sl_starts_with(path, ".sbxloop/"))
			continue;
		rc = 1;
	}
out:
	G.git_status_list_free(list);
	G.git_repository_free(repo);
	return rc;
}

/* ---- the calls, outwaited ---------------------------------------------- */

static void call_release(struct call *c)
{
	int last;

	pthread_mutex_lock(&c->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (!last)
		return;
	pthread_mutex_lock(&calls_lock);
	calls_running--;
	pthread_mutex_unlock(&calls_lock);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->git_dir);
	free(c->work_tree);
	free(c->branch);
	free(c->message);
	free(c->files);
	free(c->msg);
	free(c->out[0]);
	free(c->out[1]);
	free(c->out[2]);
	free(c);
}

static int call_body(struct call *c)
{
	switch (c->kind) {
	case CALL_CHECKOUT:
		return checkout_body(c->git_dir, c->work_tree, c->branch,
				     &c->msg);
	case CALL_COMMIT:
		return commit_body(c->git_dir, c->work_tree, c->message,
				   &c->msg);
	case CALL_EVIDENCE:
		return evidence_body(c->git_dir, c->work_tree, c->since,
				     c->out, &c->msg);
	case CALL_DELETE:
		return delete_body(c->git_dir, c->message, &c->msg);
	case CALL_CLEAN:
		return clean_body(c->work_tree, &c->msg);
	default:
		return merge_body(c->git_dir, c->work_tree, c->branch,
				  c->message, &c->files, &c->msg);
	}
}

static void *call_thread(void *arg)
{
	struct call *c = arg;
	int rc;

	this_call = c;
	rc = call_body(c);
	pthread_mutex_lock(&c->lock);
	c->rc = rc;
	c->done = 1;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	call_release(c);
	return NULL;
}

static struct timespec abs_time(double s)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)s;
	ts.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Wait for `c` (see above); its result, or -1 when given up. */
static int call_wait(struct call *c, char **files, char *out[3], char **msg)
{
	double start = sl_monotonic(), next = start + release_after_s;
	int rc;

	pthread_mutex_lock(&c->lock);
	while (!c->done) {
		double now = sl_monotonic(), until;
		struct timespec ts;

		if (now - start >= give_up_s) {
			__atomic_store_n(&c->abandoned, 1, __ATOMIC_RELEASE);
			break;
		}
		if (now >= next) {
			pthread_mutex_unlock(&c->lock);
			sl_release_fifos(c->work_tree);
			pthread_mutex_lock(&c->lock);
			next = sl_monotonic() + 1.0;
			continue;
		}
		until = next < start + give_up_s ? next : start + give_up_s;
		ts = abs_time(until - now);
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
	if (c->done) {
		rc = c->rc;
		if (files) {
			*files = c->files;
			c->files = NULL;
		}
		if (out && rc == 0) {
			int i;

			for (i = 0; i < 3; i++) {
				out[i] = c->out[i];
				c->out[i] = NULL;
			}
		}
		*msg = c->msg;
		c->msg = NULL;
	} else {
		rc = -1;
		*msg = sl_xasprintf(
			"libgit2 did not finish in %.0f s in %s: something in "
			"the work tree blocks reading it (a FIFO a process "
			"holds open?); given up, it changes nothing more",
			give_up_s, c->work_tree);
	}
	pthread_mutex_unlock(&c->lock);
	call_release(c);
	return rc;
}

static int call(int kind, const char *git_dir, const char *work_tree,
		const char *branch, const char *message, double since,
		char **files, char *out[3], char **msg)
{
	struct call *c = sl_xcalloc(1, sizeof(*c));
	pthread_condattr_t ca;
	pthread_attr_t at;
	pthread_t th;
	int rc;

	c->kind = kind;
	c->git_dir = git_dir ? sl_xstrdup(git_dir) : NULL;
	c->work_tree = sl_xstrdup(work_tree);
	c->branch = branch ? sl_xstrdup(branch) : NULL;
	c->message = message ? sl_xstrdup(message) : NULL;
	c->since = since;
	c->refs = 2;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&calls_lock);
	calls_running++;
	pthread_mutex_unlock(&calls_lock);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &at, call_thread, c);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		/* no thread to spare: the call here, unguarded */
		c->rc = call_body(c);
		c->done = 1;
		c->refs = 1;
	}
	return call_wait(c, files, out, msg);
}

int sl_g2_checkout(const char *git_dir, const char *work_tree,
		   const char *branch, char **msg)
{
	return call(CALL_CHECKOUT, git_dir, work_tree, branch, NULL, 0, NULL,
		    NULL, msg);
}

int sl_g2_commit(const char *git_dir, const char *work_tree,
		 const char *message, char **msg)
{
	return call(CALL_COMMIT, git_dir, work_tree, NULL, message, 0, NULL,
		    NULL, msg);
}

int sl_g2_merge(const char *git_dir, const char *work_tree, const char *branch,
		const char *message, char **files, char **msg)
{
	*files = NULL;
	return call(CALL_MERGE, git_dir, work_tree, branch, message, 0, files,
		    NULL, msg);
}

int sl_g2_evidence(const char *git_dir, const char *work_tree, double since,
		   char **status, char **diff, char **recent, char **msg)
{
	char *out[3] = {NULL, NULL, NULL};
	int rc;

	rc = call(CALL_EVIDENCE, git_dir, work_tree, NULL, NULL, since, NULL,
		  out, msg);
	*status = out[0];
	*diff = out[1];
	*recent = out[2];
	return rc;
}

int sl_g2_delete_branches(const char *git_dir, const char *work_tree,
			  const char *names, char **msg)
{
	return call(CALL_DELETE, git_dir, work_tree, NULL, names, 0, NULL,
		    NULL, msg);
}

int sl_g2_clean(const char *work_tree, char **msg)
{
	return call(CALL_CLEAN, NULL, work_tree, NULL, NULL, 0, NULL, NULL,
		    msg);
}

void sl_g2_set_patience(double release_after, double give_up)
{
	release_after_s = release_after;
	give_up_s = give_up;
}

unsigned sl_g2_calls_running(void)
{
	unsigned n;

	pthread_mutex_lock(&calls_lock);
	n = calls_running;
	pthread_mutex_unlock(&calls_lock);
	return n;
}

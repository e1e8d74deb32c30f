/*
 * github.h - the shared declarations of tests/fakes/github-server, a fake
 * of the GitHub REST API version 2022-11-28, as documented at
 * docs.github.com/en/rest (git database, repos, issues, pulls, search,
 * statuses, users). Only the files of tests/fakes/github/ include it:
 * util.c (buffers, base64, SHA-1, errors), http.c (the HTTP/1.1 server),
 * git.c (real git objects), state.c (repositories and the state dump),
 * main.c (command line, auth, faults, the request log, dispatch) and
 * routes-*.c (the endpoints).
 */
#ifndef SBXLOOP_TESTS_GITHUB_H
#define SBXLOOP_TESTS_GITHUB_H

#include <signal.h>
#include <stddef.h>
#include <cjson/cJSON.h>

/* ---- util.c ------------------------------------------------------------ */

struct buf {
	char *p;
	size_t n, cap;
};

void gh_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void *gh_xmalloc(size_t n);
char *gh_xstrdup(const char *s);
char *gh_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void buf_add(struct buf *b, const void *s, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);
/* Base64: encode (caller frees; WRAP > 0 breaks lines every WRAP
 * characters, as GitHub's contents do) and decode (ignores newlines;
 * -1 on bad input, else 0 and a buffer the caller frees). */
char *gh_b64_encode(const unsigned char *p, size_t n, int wrap);
int gh_b64_decode(const char *s, unsigned char **out, size_t *n);
/* SHA-1 as 40 lowercase hex digits into HEX[41]. */
void gh_sha1_hex(const unsigned char *p, size_t n, char hex[41]);
int gh_is_sha(const char *s);
/* A JSON member as a string, or NULL when absent or not a string. */
const char *gh_str(const cJSON *o, const char *key);

/* ---- http.c ------------------------------------------------------------ */

struct request {
	char method[16];
	char *path;  /* percent-decoded, no query */
	char *query; /* raw, "" when none */
	char *auth;  /* the Authorization header, or NULL: never logged */
	char *host;  /* the Host header, or NULL */
	char *body;  /* NUL-terminated */
	size_t body_len;
	size_t bytes_in; /* head and body as received */
	int keep_alive;
	long conn; /* connection number, from 1 */
};

struct response {
	int status;
	struct buf body;
	struct buf headers; /* extra "Name: value\r\n" lines */
};

/* Answer one request; called by the server loop. */
typedef void (*gh_handler)(const struct request *rq, struct response *r);
/* Just before the answer is sent: its size on the wire, for the log. */
typedef void (*gh_sent)(const struct request *rq, const struct response *r,
			size_t bytes_out);
/* Serve on 127.0.0.1 (port 0) until *STOP; the port is written to
 * PORT_FILE once listening. */
void gh_http_serve(const char *port_file, gh_handler handle, gh_sent sent,
		   volatile sig_atomic_t *stop);
/* A query parameter, percent-decoded (caller frees), or NULL. */
char *gh_query(const struct request *rq, const char *name);

/* ---- responses (util.c) ------------------------------------------------ */

void gh_json(struct response *r, int status, const cJSON *body);
/* {"message","documentation_url","status"} */
void gh_error(struct response *r, int status, const char *message);
/* 422 {"message":"Validation Failed","errors":[{resource, code, field?,
 * message?}]} */
void gh_invalid(struct response *r, const char *resource, const char *field,
		const char *code, const char *message);
void gh_not_found(struct response *r);

/* ---- git.c ------------------------------------------------------------- */

enum gh_otype { GH_BLOB = 1, GH_TREE, GH_COMMIT };

struct gh_obj {
	char sha[41];
	enum gh_otype type;
	unsigned char *data; /* the object's content, without its header */
	size_t len;
	struct gh_obj *next;
};

#define GH_OBJ_BUCKETS 1024
struct gh_odb {
	struct gh_obj *bucket[GH_OBJ_BUCKETS];
	size_t count;
};

/* One entry of a tree object. */
struct gh_tentry {
	char *name;
	unsigned mode; /* octal value: 0100644, 040000, ... */
	char sha[41];
};

const char *gh_otype_name(enum gh_otype t);
/* Store an object (deduplicated); the stored object, owned by ODB. */
const struct gh_obj *gh_odb_put(struct gh_odb *odb, enum gh_otype type,
				const void *data, size_t len);
const struct gh_obj *gh_odb_get(const struct gh_odb *odb, const char *sha);
void gh_odb_free(struct gh_odb *odb);
/* The entries of tree SHA (caller frees with gh_tentries_free); -1 when
 * SHA is no tree. */
int gh_tree_read(const struct gh_odb *odb, const char *sha,
		 struct gh_tentry **ents, size_t *n);
void gh_tentries_free(struct gh_tentry *ents, size_t n);
/* Mode text as a tree object writes it ("40000") and as the API shows
 * it ("040000"). */
const char *gh_mode_api(unsigned mode);
const char *gh_mode_type(unsigned mode);

/* A tree under construction: base_tree plus edits. */
struct gh_dir;
struct gh_dir *gh_dir_load(const struct gh_odb *odb, const char *sha);
/* Set PATH (slashes make directories) to MODE/SHA; -1 on a bad path. */
int gh_dir_set(struct gh_dir *d, const struct gh_odb *odb, const char *path,
	       unsigned mode, const char *sha);
/* Remove PATH; -1 when it does not exist. */
int gh_dir_remove(struct gh_dir *d, const struct gh_odb *odb,
		  const char *path);
/* Write the tree objects; the root tree's sha into SHA. */
void gh_dir_write(struct gh_dir *d, struct gh_odb *odb, char sha[41]);
void gh_dir_free(struct gh_dir *d);

struct gh_person {
	char *name, *email;
	long long when; /* seconds since the epoch */
	int tz_minutes; /* offset east of UTC */
};
/* Write a commit object; its sha into SHA. */
void gh_commit_write(struct gh_odb *odb, const char *tree,
		     const char *const *parents, size_t nparents,
		     const struct gh_person *author,
		     const struct gh_person *committer, const char *message,
		     char sha[41]);
/* A commit's parts (caller frees with gh_commit_free); -1 when SHA is
 * no commit. */
struct gh_commit {
	char tree[41];
	char (*parents)[41];
	size_t nparents;
	struct gh_person author, committer;
	char *message;
};
int gh_commit_read(const struct gh_odb *odb, const char *sha,
		   struct gh_commit *c);
void gh_commit_free(struct gh_commit *c);
/* 1 when commit ANCESTOR is reachable from commit SHA (or equal). */
int gh_is_ancestor(const struct gh_odb *odb, const char *ancestor,
		   const char *sha);
/* "2011-04-14T16:00:49Z" / "...+02:00" <-> seconds and offset. */
int gh_parse_date(const char *s, long long *when, int *tz_minutes);
void gh_format_date(long long when, int tz_minutes, char out[32]);

/* ---- state.c ----------------------------------------------------------- */

struct gh_ref {
	char *name; /* "refs/heads/main" */
	char sha[41];
};

struct gh_repo {
	long id;
	char *owner, *name, *full_name;
	char *description;
	int private;
	char *default_branch;
	struct gh_odb odb;
	struct gh_ref *refs;
	size_t nrefs;
	/* issues and pull requests, one number sequence: objects
	 * {number,title,body,state,state_reason,labels:[names],
	 * comments:[{id,body}],pull:bool,head,base,draft} */
	cJSON *items;
	cJSON *statuses; /* [{id,sha,state,context,description,target_url}] */
	long next_number;
	struct gh_repo *next;
};

struct gh_state {
	char *login;
	struct gh_repo *repos;
	long next_id;
	long connections, requests;
};

extern struct gh_state gh;

/* The fixed identity of commits made without one. */
extern const struct gh_person gh_default_person;

struct gh_repo *gh_repo_find(const char *owner, const char *name);
/* A new repository (NULL when it exists); with INIT one commit of
 * README.md "# NAME\n" on main. */
struct gh_repo *gh_repo_create(const char *owner, const char *name,
			       int private, int init);
int gh_repo_empty(const struct gh_repo *repo);
struct gh_ref *gh_ref_find(struct gh_repo *repo, const char *name);
void gh_ref_set(struct gh_repo *repo, const char *name, const char *sha);
void gh_ref_delete(struct gh_repo *repo, const char *name);
/* http://HOST of the request, for "url" members. */
char *gh_api_base(const struct request *rq);
cJSON *gh_state_dump(void);
void gh_state_free(void);

/* ---- routes ------------------------------------------------------------ */

/* Each answers the requests of its area: 1 when it did, 0 when the path
 * is not one of its. JSON is the parsed body (NULL when empty). */
int gh_routes_repos(const struct request *rq, const cJSON *json,
		    struct response *r);
int gh_routes_git(const struct request *rq, const cJSON *json,
		  struct response *r);
int gh_routes_contents(const struct request *rq, const cJSON *json,
		       struct response *r);
int gh_routes_issues(const struct request *rq, const cJSON *json,
		     struct response *r);
int gh_routes_pulls(const struct request *rq, const cJSON *json,
		    struct response *r);

/* Split "/repos/O/R/rest" into the repo and "rest" ("" or "/..."):
 * NULL and 404 in R when the repo does not exist; 0 in *MATCHED when the
 * path is not under /repos/ at all. */
struct gh_repo *gh_route_repo(const struct request *rq, const char **rest,
			      struct response *r, int *matched);
/* An issue's or pull request's API shape. */
cJSON *gh_issue_json(const struct request *rq, const struct gh_repo *repo,
		     const cJSON *item);

#endif

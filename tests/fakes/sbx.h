/*
 * The private interface between the two halves of the fake sbx: its
 * state and IO helpers (sbx.c, which also dispatches) and its command
 * handlers (sbx-commands.c). Nothing else includes it.
 */
#ifndef SBXLOOP_TESTS_FAKE_SBX_H
#define SBXLOOP_TESTS_FAKE_SBX_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

extern char **environ;

/* The fake's state: $SBX_FAKE_DIR, the global lock, --app-name */
extern const char *state_dir;
extern int lock_fd;
extern const char *app_name;

/* Helpers: memory, files, JSON state, subprocesses, sandbox records */
void *xmalloc(size_t n);
char *xprintf(const char *fmt, ...);
char *read_all_fd(int fd, size_t *len);
char *read_file(const char *path);
void write_file(const char *path, const char *text);
void append_line(const char *name, cJSON *obj);
cJSON *load_json(const char *name, int array);
void save_json(const char *name, const cJSON *doc);
int run_argv(char *const *argv);
void rmtree(const char *path);
void mkdirs(const char *path);
int is_dir(const char *path);
extern const char *const services[];
int is_service(const char *s);
char *box_dir(const char *name);
cJSON *box_meta(const char *name);
void box_meta_save(const char *name, const cJSON *meta);
int not_found(const char *name);
const char *meta_str(const cJSON *meta, const char *key);

/* The commands, one per sbx verb; each returns the exit code */
int cmd_help(void);
int cmd_create(int argc, char **argv);
int cmd_exec(int argc, char **argv, const char *in, size_t in_len);
int cmd_cp(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_secret(int argc, char **argv, const char *in);
int cmd_template(int argc, char **argv);
int cmd_policy_log(int argc, char **argv);

/* The sandbox network (sbx-net.c): a proxy listener on 127.0.0.1 for an
 * exec, served until `child` exits (its wait status). */
int net_open(unsigned *port);
int net_serve(int lfd, const char *sandbox, pid_t child);

#endif

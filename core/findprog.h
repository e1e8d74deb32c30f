/*
 * The PATH search of execvp, done before a spawn. Shared by the host
 * (core/proc.c) and sbxloop-worker (worker/proc.c): libc only.
 */
#ifndef SBXLOOP_FINDPROG_H
#define SBXLOOP_FINDPROG_H

/*
 * The file `name` names: a copy of `name` when it holds a '/', else the
 * first executable regular file `name` in `path` (the caller's PATH;
 * NULL means "/bin:/usr/bin"; an empty entry is the current directory).
 * malloc'd; NULL with errno ENOENT, EACCES (only non-executable files
 * match) or ENOMEM.
 */
char *sbx_find_program(const char *name, const char *path);

#endif

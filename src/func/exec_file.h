/* What an execve names, found and read: the file of the function's, of /tmp's or open on a
 * descriptor. */
#ifndef EMBER_FUNC_EXEC_FILE_H
#define EMBER_FUNC_EXEC_FILE_H

#include "sys/sys.h"

#define EXEC_SHEBANG_MAX 256 /* a #! line's bytes, as Linux's BINPRM_BUF_SIZE */
#define EXEC_DEPTH	 5   /* interpreters of interpreters, as Linux's exec_binprm */

/* the file a program is loaded from */
struct exec_src {
	const uint8_t *data; /* its bytes: the bundle's (in place), /tmp's or the running program's
				(to be copied before the call returns) */
	size_t size;
	int from_tmp;	 /* not the function's files: read for this load, never cached */
	uint32_t node;	 /* the bundle's node (the cache's key) when !from_tmp */
	int cloexec;	 /* named by a close-on-exec descriptor: a script of it has no path */
	const char *exe; /* the running program's path (an open /proc/self/exe), else NULL */
	char name[BND_PATH_MAX + 16]; /* what a script's interpreter is given (Linux's filename) */
	char abs[BND_PATH_MAX];	      /* its absolute path, for /proc/self/exe ("" unknown) */
};

/* at (depth 0: execveat's dirfd and flags; deeper: an interpreter's path from the cwd) found,
 * a regular file with an execute bit: 0, or -ENOENT, -ENOTDIR, -ELOOP, -EACCES, -EBADF */
int exec_find(struct sys_state *from, const struct sys_exec_at *at, struct exec_src *src);

/* argv for the #! line of src (its first EXEC_SHEBANG_MAX bytes split as Linux's binfmt_script:
 * the interpreter into interp, the rest of the line, trimmed, its one argument in *arg), then
 * src's name (copied into *out's block, which the caller frees), then argv past argv[0]: 0,
 * -ENOEXEC, -ENOMEM */
int exec_shebang(const struct exec_src *src, char *const *argv, char *interp, char **arg,
		 char ***out);

#endif

/* Shared by the bundle's syscall files (sys_fs.c, sys_fs_path.c, sys_fs_dir.c). */
#ifndef EMBER_SYS_FS_H
#define EMBER_SYS_FS_H

#include "sys/sys.h"

/* the open file or folder on fd (its position taken back from the in-guest runtime), or NULL */
struct sys_obj *sys_fs_file(struct sys_state *st, uint64_t fd);
/* the guest's path at addr looked up from dirfd (AT_FDCWD: the cwd); empty_ok: "" is dirfd */
long sys_fs_resolve(struct sys_state *st, uint64_t dirfd, uint64_t addr, int follow, int empty_ok,
		    uint32_t *node, int *parent_ok);
/* the same with an *at call's AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH */
long sys_fs_lookup_at(struct sys_state *st, uint64_t dirfd, uint64_t path, int flags,
		      uint32_t *node);
/* the table's predicate: the function has files */
int sys_fs_has(const struct sys_state *st);

#endif

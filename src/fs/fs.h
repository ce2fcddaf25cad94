/* Shared by the bundle's syscall files (fs.c, fs_path.c, fs_dir.c). */
#ifndef EMBER_SYS_FS_H
#define EMBER_SYS_FS_H

#include <sys/stat.h>

#include "sys/sys.h"

/* the open file or folder on fd (its position taken back from the in-guest runtime), or NULL */
struct sys_obj *sys_fs_file(struct sys_state *st, uint64_t fd);
/* the guest's path at addr looked up from dirfd (AT_FDCWD: the cwd); empty_ok: "" is dirfd */
long sys_fs_resolve(struct sys_state *st, uint64_t dirfd, uint64_t addr, int follow, int empty_ok,
		    uint32_t *node, int *parent_ok);
/* the same with an *at call's AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH */
long sys_fs_lookup_at(struct sys_state *st, uint64_t dirfd, uint64_t path, int flags,
		      uint32_t *node);
/* the path argument at addr, NUL-terminated inside mapped guest memory, into buf (BND_PATH_MAX
 * bytes): 0, -EFAULT or -ENAMETOOLONG */
long sys_fs_get_path(struct sys_state *st, uint64_t addr, char *buf);
/* a path without files (none but the made ones): what the path is read for first (EFAULT,
 * ENAMETOOLONG), "" ENOENT (unless empty_ok), the rest EACCES as the host's own would be */
long sys_fs_none(struct sys_state *st, uint64_t addr, int empty_ok);
/* the table's predicate: the function has files */
int sys_fs_has(const struct sys_state *st);

/* fs_proc.c: the made /proc and /sys files. Which one the guest's path at addr names
 * exactly (an absolute path), or -1; then what the calls on a path do with it */
int sys_procfs_at(struct sys_state *st, uint64_t addr);
/* the same for an absolute path in host memory (where a link of /tmp's leads) */
int sys_procfs_find(struct sys_state *st, const char *abs);
long sys_procfs_open(struct sys_state *st, int i, int flags);
long sys_procfs_stat(struct sys_state *st, int i, int follow, struct stat *s);
long sys_procfs_readlink(struct sys_state *st, int i, uint64_t buf, uint64_t len);
long sys_procfs_access(struct sys_state *st, int i, int mode);
/* on an open one: pread, lseek; whether a saved object is one */
long sys_procfs_pread(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		      uint64_t pos);
long sys_procfs_lseek(struct sys_state *st, struct sys_obj *o, int64_t off, int whence);
int sys_procfs_valid(const struct sys_obj *o);
/* fs_dev.c: the devices. Which one the path at addr names exactly, or -1; its stat; opened */
int sys_dev_at(struct sys_state *st, uint64_t addr);
int sys_dev_find(const char *abs);
void sys_dev_stat(int i, struct stat *s);
const char *sys_dev_path(int i);
int sys_dev_count(void);
long sys_dev_open(struct sys_state *st, int i, int flags);
/* fd is /dev/zero (its mapping is anonymous memory); Linux's EACCES for a mapping of it */
int sys_dev_zero(struct sys_state *st, uint64_t fd);
/* pread and pwrite of a device (SYS_KIND_DEV): the offset means nothing, as on Linux */
long sys_dev_pread(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		   int64_t pos);
long sys_dev_pwrite(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		    int64_t pos);
long sys_dev_zero_check(struct sys_state *st, uint64_t fd, int prot, int flags);
int sys_dev_valid(const struct sys_obj *o);
/* the listing of an open /proc folder: entry pos's inode, type and name (at most cap bytes with
 * its NUL) and the position after it; 0 past the last (fs_dir.c's getdents) */
int sys_procfs_entry(struct sys_state *st, struct sys_obj *o, uint64_t pos, uint64_t *ino,
		     uint8_t *type, char *name, size_t cap, uint64_t *next);
int sys_procfs_is_dir(const struct sys_obj *o);
/* fs_proc_fd.c: what /proc/self/fd/N is of descriptor fd: the link's text into buf (cap
 * bytes with its NUL; its length or -errno), opened again with flags (a descriptor or -errno),
 * its fdinfo's text */
long sys_procfs_fd_link(struct sys_state *st, uint64_t fd, char *buf, size_t cap);
long sys_procfs_fd_reopen(struct sys_state *st, uint64_t fd, int flags);
size_t sys_procfs_fd_info(struct sys_state *st, uint64_t fd, char *buf, size_t cap);
/* the made file's path (a /proc/self/fd/N's with its number) into buf */
void sys_procfs_path(const struct sys_obj *o, char *buf, size_t cap);

/* fd's bytes when it is /proc/self/exe opened (it may be mapped, a private copy), else NULL */
const uint8_t *sys_procfs_exe(struct sys_state *st, uint64_t fd, size_t *len);

/* fs_stat.c: what the stat of the bundle's node holds (the tree's own: read-only, its owner the
 * process's) */
struct stat;
void sys_fs_stat_of(const struct bnd *b, uint32_t node, struct stat *s);

#endif

/* O_PATH descriptors: a place in the file tree and no more. The calls that refuse one with
 * EBADF, as Linux's fdget does (fstat, the *at calls, close, dup and fcntl take it). */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fd/fd.h"

/* by call: which argument is the descriptor, plus one (0: none to look at) */
static const signed char fd_arg[SYS_NR_MAX] = {
    [SYS_read] = 1,
    [SYS_write] = 1,
    [SYS_pread64] = 1,
    [SYS_pwrite64] = 1,
    [SYS_readv] = 1,
    [SYS_writev] = 1,
    [SYS_preadv] = 1,
    [SYS_pwritev] = 1,
    [SYS_preadv2] = 1,
    [SYS_pwritev2] = 1,
    [SYS_getdents] = 1,
    [SYS_getdents64] = 1,
    [SYS_ioctl] = 1,
    [SYS_lseek] = 1,
    [SYS_mmap] = 5,
    [SYS_fsync] = 1,
    [SYS_fdatasync] = 1,
    [SYS_ftruncate] = 1,
    [SYS_fchmod] = 1,
    [SYS_fchown] = 1,
    [SYS_fallocate] = 1,
    [SYS_flock] = 1,
    [SYS_fadvise64] = 1,
    [SYS_readahead] = 1,
    [SYS_sync_file_range] = 1,
    [SYS_sendfile] = 2,
    [SYS_copy_file_range] = 1,
    [SYS_splice] = 1,
    [SYS_tee] = 1,
    [SYS_fsetxattr] = 1,
    [SYS_fgetxattr] = 1,
    [SYS_flistxattr] = 1,
    [SYS_fremovexattr] = 1,
    [SYS_epoll_ctl] = 3,
};

/* the calls that take a second descriptor: the one written to */
static const signed char fd_arg2[SYS_NR_MAX] = {
    [SYS_sendfile] = 1,
    [SYS_copy_file_range] = 3,
    [SYS_splice] = 3,
    [SYS_tee] = 2,
};

static int is_path(struct sys_state *st, uint64_t fd)
{
	const struct sys_obj *o = sys_fd_obj(st, fd);
	return o && (o->flags & O_PATH);
}

int sys_opath_refused(struct sys_state *st, uint64_t nr, const uint64_t a[6])
{
	if (nr >= SYS_NR_MAX || !fd_arg[nr])
		return 0;
	if (nr == SYS_mmap && (a[3] & MAP_ANONYMOUS))
		return 0; /* its descriptor is no argument */
	return is_path(st, a[fd_arg[nr] - 1]) || (fd_arg2[nr] && is_path(st, a[fd_arg2[nr] - 1]));
}

/* Syscalls refused with the errno Linux gives when something is not permitted; all others ENOSYS.
 */
#include <errno.h>
#include <sys/syscall.h>

#include "sys/sys.h"

#define DENY(nr, name, err)                                                                        \
	{                                                                                          \
		nr, name, NULL, err, NULL                                                          \
	}

const struct sys_entry sys_deny_table[] = {
    /* the host's files (paths, and what would change them: fs.c, refused the same way when
     * the function has no files) */
    DENY(SYS_openat2, "openat2", EACCES),
    /* the network */
    DENY(SYS_socket, "socket", EACCES),
    /* connect, bind, getpeername and the other calls on a socket: fd.c (no descriptor is
     * one: ENOTSOCK on an open one) */
    /* other processes */
    DENY(SYS_ptrace, "ptrace", EPERM),
    DENY(SYS_process_vm_readv, "process_vm_readv", EPERM),
    DENY(SYS_process_vm_writev, "process_vm_writev", EPERM),
    DENY(SYS_mount, "mount", EPERM),
    DENY(SYS_reboot, "reboot", EPERM),
    DENY(SYS_memfd_create, "memfd_create", EACCES),
    {0, NULL, NULL, 0, NULL},
};

/* The emulation state a snapshot keeps (sys_snap.c): saved, restored, freed. */
#ifndef EMBER_SYS_SAVED_H
#define EMBER_SYS_SAVED_H

#include <stddef.h>
#include <stdint.h>

#include "sys/sys.h"

/* a descriptor and an object as a snapshot keeps them */
struct sys_saved_fd {
	uint32_t fd, obj, cloexec; /* obj: the object's slot */
};
struct sys_saved_obj {
	uint32_t slot;
	struct sys_obj o;
};
/* epoll entries an invocation may hold at most (ENOSPC past it) */
#define SYS_EPI_MAX 4096

/* The emulation state a snapshot keeps (sys_snap.c): everything but the request and outputs. */
struct sys_saved {
	uint64_t brk_cur;
	struct sys_vma *vmas;
	size_t nvma;
	struct sys_vma *far; /* reservations beyond guest memory */
	size_t nfar;
	size_t code_pos;
	uint32_t cwd;
	uint32_t umask; /* 0: SYS_UMASK (a snapshot from disk keeps none); else it | 01000 */
	/* the descriptor table, compact: the open descriptors, the objects they name (each with its
	 * slot), the epoll entries, and the pipes' bytes (each read end's len of them, in the order
	 * of the objects); a timer's at is the time left (fd_snap.c) */
	struct sys_saved_fd *fds;
	size_t nfd;
	struct sys_saved_obj *objs;
	size_t nobj;
	struct sys_epi *epi;
	size_t nepi;
	struct sys_buf pipes;
	/* the windows the in-guest runtime reads files from (not in a disk snapshot: its state
	 * has the positions, and the first run after loading forgets the windows) */
	uint64_t fs_win[SYS_FS_FILES];
	struct sys_sig sig[65];
	uint32_t rlim_set;
	struct sys_rlim rlim[SYS_RLIMITS];
	/* every thread but the one the snapshot's registers are (snap_tid's on vCPU 0 in the
	 * common case: proc_save keeps them all, and the snapshot layer the vCPU's) */
	struct proc_saved threads;
	int snap_tid;
	int pending;
	/* what init wrote: every invocation's output starts with it, as a process's would */
	struct sys_buf out, log;
	/* /tmp as init left it (a copy), NULL when empty; never on disk (func/disk.c) */
	struct sys_tmp *tmp;
	/* its files mapped shared, written back into it first (fs_tmp_map.c) */
	struct sys_shm *shm;
	size_t nshm;
};
int sys_save(const struct sys_state *st, struct sys_saved *out);
/* init left something in /tmp: a file or folder, or a descriptor on it (fs_tmp.c) */
int sys_tmp_saved_used(const struct sys_saved *s);
/* puts st back to the saved state and clears outputs and counters for a new invocation */
int sys_restore(struct sys_state *st, const struct sys_saved *s);
void sys_saved_free(struct sys_saved *s);

#endif

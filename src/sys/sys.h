/* Host-side syscall emulation: the state of one guest process and the run loop that serves it. */
#ifndef EMBER_SYS_H
#define EMBER_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/bnd.h"
#include "proc/proc.h"
#include "sys/sys_rt.h"
#include "vm/vm.h"

#define SYS_NR_MAX    512	  /* Linux x86-64 numbers below this are counted one by one */
#define SYS_GUEST_UID 1000	  /* the uid and gid a program sees for itself and its files */
#define SYS_RLIMITS   16	  /* RLIMIT_NLIMITS */
#define SYS_CWD_TMP   0x80000000u /* sys_state.cwd: a node of /tmp's, not of the bundle's */
#define SYS_UMASK     022	  /* a process's umask until it sets one */

/* a resource limit setrlimit set (sys_rlimit.c) */
struct sys_rlim {
	uint64_t cur, max;
};

struct sys_vma {
	uint64_t start, end;
	int prot;
};

/* a /tmp file's range mapped at [start, end) (sys_shm.c): MAP_SHARED, or private */
struct sys_shm {
	uint64_t start, end, off;
	uint32_t node;
	int priv;
};

/* anonymous memory mapped MAP_SHARED at [start, end): off into the memfd fd (sys_shmem.c) */
struct sys_shmem {
	uint64_t start, end, off;
	int fd;
};

struct sys_buf {
	uint8_t *data;
	size_t len, cap;
};

enum sys_outcome {
	SYS_RUNNING,
	SYS_EXITED,   /* the program called exit/exit_group: status */
	SYS_SIGNALED, /* a signal it sent itself with the default action, or a fault: sig */
	SYS_TIMEOUT,
	SYS_LIMIT,    /* output limit exceeded */
	SYS_ERROR,    /* the machine failed: msg */
	SYS_SNAPSHOT, /* the snapshot point: the first read of the request, or ember_snapshot() */
	SYS_EXECED,   /* execve: the process goes on as another program (sys_kin_ops.exec) */
};

/* What a guest may know about its process, set once at load. */
struct sys_process {
	uint64_t brk_start;
	uint64_t mmap_hi; /* the mmap area grows down from here */
	uint64_t stack_lo, stack_hi;
	uint64_t stack_size;
	uint64_t arg_start, arg_end; /* argv's strings on its stack: /proc/self/cmdline */
	int guest;	 /* the in-guest runtime serves the common syscalls: sys_rt_of(guest) */
	int cpus;	 /* vCPUs its threads run on (--cpus), 1 to VM_CPUS_MAX */
	int max_threads; /* threads at most (--threads): clone answers EAGAIN past it */
	int max_pids;	 /* processes of an invocation at most (--pids): fork answers EAGAIN */
};

#define SYS_STATS_WORDS ((SYS_NR_MAX + 1 + 63) / 64)
struct sys_stats {
	uint64_t served[SYS_NR_MAX + 1]; /* last slot: numbers >= SYS_NR_MAX */
	uint64_t denied[SYS_NR_MAX + 1];
	uint64_t in_guest[SYS_NR_MAX + 1]; /* of served: by the in-guest runtime */
	uint64_t exits[VM_EXIT_KINDS];
	/* the slots counted since the last sys_stats_clear, a bit each: reading and clearing
	 * cost what an invocation used, not 513 slots three times */
	uint64_t used[SYS_STATS_WORDS];
};

/* marks slot as counted (every change of served/denied/in_guest goes with one) */
static inline void sys_stats_mark(struct sys_stats *s, size_t slot)
{
	s->used[slot / 64] |= 1ULL << (slot % 64);
}

/* the next counted slot at or after from, or -1 */
static inline int sys_stats_next(const struct sys_stats *s, int from)
{
	for (int w = from / 64; from <= SYS_NR_MAX && w < SYS_STATS_WORDS; w++) {
		uint64_t bits = s->used[w] & (w == from / 64 ? ~0ULL << (from % 64) : ~0ULL);
		if (bits)
			return w * 64 + __builtin_ctzll(bits);
	}
	return -1;
}

/* every count zero again */
void sys_stats_clear(struct sys_stats *s);

/* Descriptors (sys_fd.c): fd n names obj[fd[n].obj - 1], an open file description, which dup
 * shares; what each kind does is one table of operations (sys_fd.h). SYS_FDS is RLIMIT_NOFILE:
 * a new descriptor past it is refused with EMFILE. */
#define SYS_FDS 256
enum sys_kind {
	SYS_KIND_NONE,	/* a free slot */
	SYS_KIND_STD,	/* Ember's: the request, stdout, stderr, code, metadata (sys_std.c) */
	SYS_KIND_FILE,	/* a file or folder of the bundle (sys_fs.c) */
	SYS_KIND_PIPE,	/* one end of a pipe (sys_pipe.c) */
	SYS_KIND_EVENT, /* an eventfd (sys_eventfd.c) */
	SYS_KIND_TIMER, /* a timerfd (sys_timerfd.c) */
	SYS_KIND_EPOLL, /* an epoll instance; its interest list is sys_state.epi (sys_epoll.c) */
	SYS_KIND_PROC,	/* a /proc or /sys file made from the virtine's state (sys_procfs.c) */
	SYS_KIND_TMP,	/* a file or folder of the scratch /tmp (sys_tmp.c) */
	SYS_KIND_DEV,	/* /dev/null, /dev/zero, /dev/urandom and the like (sys_dev.c) */
	SYS_KIND_SOCK,	/* one end of a connected pair of Unix stream sockets (sys_sock.c) */
	SYS_KIND_FIFO,	/* a named pipe of the scratch /tmp opened (sys_tmp_fifo.c) */
	SYS_KINDS,
};
/* an open file description; what the fields hold is the kind's:
 *   STD    id: which (its first fd: 0 request, 1 stdout, 2 stderr, 3 code, 4 metadata)
 *   FILE   id: the bundle's node; pos: the offset, or a folder's next entry
 *   PIPE   flags O_RDONLY (the read end) or O_WRONLY; id: the other end's slot + 1 (0: closed);
 *          the read end's bytes: len of them in sys_state.pipe_buf[its slot] from pos; its
 *          every: the ring's size when F_SETPIPE_SZ changed it (0: SYS_PIPE_SIZE)
 *   SOCK   as a pipe's read end, each end with its ring, flags O_RDWR; at: what is shut of it
 *          (1 receiving, 2 sending: Linux's sk_shutdown)
 *   FIFO   id: the /tmp node, whose ring every opener shares; flags O_RDONLY, O_WRONLY or O_RDWR
 *          (with O_LARGEFILE, as Linux's); pos: UINT64_MAX, or for a reader opened with
 *          O_NONBLOCK and no writer the node's opens for writing then (it hears the hang-up only
 *          of a writer that came after)
 *   EVENT  pos: the counter; id: 1 for EFD_SEMAPHORE
 *   TIMER  id: the clock; pos: expirations not read yet; at: the next one (CLOCK_MONOTONIC ns,
 *          0: disarmed), every: the interval (ns, 0: once)
 *   EPOLL  pos: the entry its next wait looks at first (each ready one gets its turn) */
struct sys_obj {
	uint32_t kind;	/* enum sys_kind */
	uint32_t refs;	/* the descriptors naming it */
	uint32_t flags; /* F_GETFL's: O_ACCMODE and O_NONBLOCK */
	uint32_t id;
	uint64_t pos, len, at, every;
	/* counts the changes of its readiness: edge-triggered epoll reports each once */
	uint32_t seq;
};
struct sys_fd {
	uint32_t obj;	  /* the object's slot + 1; 0: the descriptor is closed */
	uint32_t cloexec; /* FD_CLOEXEC (kept for F_GETFD: nothing is ever executed) */
};
/* an entry of an epoll's interest list: fd, naming obj when it was added */
struct sys_epi {
	uint32_t ep, obj; /* the slots of the epoll and of the object it watches */
	uint32_t fd;
	/* EPOLL*, with EPOLLERR and EPOLLHUP; after a one-shot report, its flags only */
	uint32_t events;
	uint64_t data;
	uint32_t seen; /* edge-triggered: the object's seq when it was last reported */
};
/* the wait key of every call that waits for a descriptor to change (sys_fd_changed): no futex
 * can wait on it (not a canonical address) */
#define SYS_KEY_FD 0xeb000000000fd000ULL

/* the bundle's files the in-guest runtime may read itself: fds SYS_FS_FD0 to 63 (sys_fs_rt.c) */
#define SYS_FS_FD0   5
#define SYS_FS_FILES 59

struct sys_sig {
	uint64_t handler, flags, restorer, mask;
};

/* the wait key of wait4 and waitid (a child ended), not a canonical address either */
#define SYS_KEY_CHILD 0xeb000000000c0000ULL
/* --pids: an invocation's processes at most by default, and the most it may ask for */
#define SYS_PIDS_DEFAULT 64
#define SYS_PIDS_MAX	 1024
/* children sharing a process's memory it may have at once (sys_kin_vmkid) */
#define SYS_VMKIDS 32

/* What the other processes of an invocation do for one of them (src/family/), called under the
 * process's lock, which every process of the invocation shares. NULL in sys_state.kin: the
 * program has no relatives, and fork is refused. */
struct sys_kin_ops {
	/* a new process, a copy of st made from its thread t (the child's registers t's, rax 0;
	 * its stack at sp, 0: t's; flags: clone's CLONE_CHILD_SETTID and _CLEARTID at ctid, in
	 * the child's memory, and CLONE_CLEAR_SIGHAND: sys_sig_default): the child's pid, or
	 * -EAGAIN (--pids) or -ENOMEM */
	long (*fork)(void *ctx, struct sys_state *st, struct proc_thread *t, uint64_t sp,
		     uint64_t flags, uint64_t ctid);
	/* execve of path (the function's files, or the program itself) with argv and envp (host
	 * copies, NULL-terminated): 0 when st ended (SYS_EXECED) and the process goes on as the
	 * new program, else -errno (-ENOENT, -EACCES, -ENOEXEC, -ENOMEM, ...) and st goes on */
	long (*exec)(void *ctx, struct sys_state *st, const char *path, char *const *argv,
		     char *const *envp);
	/* wait4/waitid: a child of st matching idtype (P_ALL, P_PID, P_PGID) and id that ended
	 * (with __WNOTHREAD in options, one the calling thread made): its pid, its wait status
	 * in *status, reaped unless WNOWAIT is in options; 0 when some match and none
	 * ended yet; -ECHILD when none match. Its CPU time (its children's it waited for
	 * included) in *cpu_ns, added to st->children_cpu when reaped. status NULL: 0 when one
	 * that matches is alive, else -ECHILD (a wait for stops has nothing to wait for in those
	 * that ended) */
	long (*wait)(void *ctx, struct sys_state *st, int idtype, int id, int options, int *status,
		     uint64_t *cpu_ns);
	/* kill(pid, sig) of anything but st alone: another process, a group, or all (-1) */
	long (*kill)(void *ctx, struct sys_state *st, int pid, int sig);
	/* setpgid(pid, pgid) with pid st's or a child's, and getpgid(pid) of another process */
	long (*setpgid)(void *ctx, struct sys_state *st, int pid, int pgid);
	long (*getpgid)(void *ctx, struct sys_state *st, int pid);
	/* an object other processes may share (a pipe, an eventfd) changed: their waiters look
	 * again */
	void (*changed)(void *ctx, struct sys_state *st);
};

/* The `syscall` instructions (0f 05) of a file, by file offset, each with whether it may take
 * the call form of the in-guest runtime (`call *%rax`: its function keeps nothing below its stack
 * pointer, see src/image/redzone.c) */
struct sys_file_sites {
	const uint64_t *off;
	const uint8_t *callable;
	size_t n;
};

struct sys_state {
	struct vm *vm;
	struct sys_process proc;
	const struct sys_rt_ops *rt; /* the syscall mode, sys_rt_of(proc.guest) */
	/* memory bookkeeping */
	uint64_t brk_cur;
	struct sys_vma *vmas;
	size_t nvma, vma_cap;
	/* PROT_NONE reservations beyond guest memory (sys_far.c), sorted: address space only */
	struct sys_vma *far;
	size_t nfar, far_cap;
	/* the request (fd 0), a runtime's code (fd 3) and the two outputs */
	const uint8_t *in;
	size_t in_len, in_pos;
	const uint8_t *code;
	size_t code_len, code_pos;
	const uint8_t *meta; /* the request's metadata (fd 4), set with the request */
	size_t meta_len, meta_pos;
	struct sys_buf out, log;
	struct sys_buf head; /* the response head written on fd 4 (EMBER_HEAD_MAX at most) */
	uint64_t out_limit;  /* bytes of stdout + stderr together */
	/* the descriptors, the objects they name, every epoll's interest list, and each pipe's
	 * buffer by its read end's slot (NULL until it is written to) */
	struct sys_fd fd[SYS_FDS];
	struct sys_epi *epi;
	size_t nepi, epi_cap;
	/* the objects and pipes' buffers (SYS_FDS each): its own, or, in a process made by fork
	 * or execve, the first process's, which every process of the invocation shares as Linux
	 * shares open file descriptions (positions, pipes' ends) between parent and child */
	struct sys_obj *obj;
	uint8_t **pipe_buf;
	struct sys_obj obj_own[SYS_FDS];
	uint8_t *pipe_own[SYS_FDS];
	int std_changed; /* fds 0 to 4 changed since the runtime was told (sys_rt_ops.fds) */
	/* the function's files (NULL: none; every path is refused) and the cwd: a folder there,
	 * or with SYS_CWD_TMP, a folder of the scratch /tmp (its node) */
	const struct bnd *bundle;
	uint32_t cwd;
	uint32_t umask; /* the mode bits a file or folder made in /tmp goes without */
	/* the scratch /tmp, made on first use (sys_tmp.c); NULL: none yet. Borrowed: the first
	 * process's, which every process of the invocation shares (sys_inherit) */
	struct sys_tmp *tmp;
	int tmp_borrowed;
	/* the program itself, for /proc/self/exe: its bytes and its path (NULL: none) */
	const uint8_t *exe;
	size_t exe_len;
	const char *exe_path;
	/* in guest mode on KVM: where the file on fd SYS_FS_FD0 + i has its read-only window, 0 if
	 * none (sys_fs_rt.c) */
	uint64_t fs_win[SYS_FS_FILES];
	/* process bookkeeping: the signal actions; the threads (each with its mask, alternate
	 * stack and clear-child-tid address) and their scheduler */
	struct sys_sig sig[65];
	int sigcode[65]; /* the si_code of each signal sent and not yet delivered */
	struct proc pr;
	/* the process among those of the invocation: its pid (1: the first), its parent's (0:
	 * none), its group; the others, and where its output goes (NULL: st->out and st->log,
	 * else the first process's) */
	int pid, ppid, pgid, sid;
	const struct sys_kin_ops *kin;
	void *kin_ctx;
	struct sys_state *out_to;
	/* the request on fd 0 is read by more than one process: its position is the first
	 * process's (sys_in_of), and every read goes through the host, exactly as asked, not
	 * through the in-guest runtime's buffer (sys_in_share) */
	int in_shared;
	int limit_hit; /* the invocation's output went past out_limit (sys_std.c) */
	/* init (snap_armed) forked or exec'd before its snapshot point: no snapshot can hold
	 * other processes, and their reads of the request would find none: init stops, and the
	 * function runs from its start at every invocation, with its request */
	int init_forked;
	int redo;      /* the call being served is made again after a wait (sys_retrying) */
	int snap_tid;  /* the thread that stopped at the snapshot point */
	int exit_code; /* of the process when its last thread calls exit */
	/* the limits setrlimit changed, a bit each by RLIMIT_*, and their values; the others are
	 * Ember's own (sys_rlimit.c). A fork and an execve keep them, as Linux's. */
	uint32_t rlim_set;
	struct sys_rlim rlim[SYS_RLIMITS];
	/* prctl's, per process (sys_prctl.c): PR_SET_DUMPABLE's (1 at the start, as a fork's parent
	 * had it), PR_SET_CHILD_SUBREAPER's (an execve keeps it, a fork's child has it not); a
	 * snapshot keeps neither: an invocation starts with Linux's defaults */
	int undumpable, subreaper;
	/* the CPU time of the children it waited for, theirs included (ns): RUSAGE_CHILDREN */
	uint64_t children_cpu;
	/* its children that share its memory (sys_kin_vmkid): their tids, the signal each sends
	 * at its end, its wait status once ended; none kept by a snapshot */
	struct sys_vmkid {
		int tid, sig, status, ended;
	} vmkid[SYS_VMKIDS];
	int nvmkid;
	uint64_t start_ns;
	/* ranges made writable since the snapshot: a page there may have been written even if it
	 * is read-only again by the end (the reset puts them back) */
	struct sys_vma wr[16];
	size_t nwr;
	/* the /tmp files mapped (sys_shm.c): this process's, the snapshot's after a reset */
	struct sys_shm *shm;
	size_t nshm, shm_cap;
	/* the shared anonymous mappings (sys_shmem.c): a fork child's are its parent's pages */
	struct sys_shmem *shmem;
	size_t nshmem, shmem_cap;
	/* snapshots */
	int snap_armed; /* stop at the snapshot point instead of serving it */
	int pending;	/* the hypercall (port) at the snapshot point still waits to be served */
	/* told of guest pages given back (munmap, madvise, fresh mappings) just before they go,
	 * reading as zero from then on: a cold start must not serve them the snapshot's content;
	 * may be NULL */
	void (*discarded)(void *ctx, uint64_t start, uint64_t len);
	void *discarded_ctx;
	/* madvise(MADV_MERGEABLE) of mapped [start, start+len): the pages merged with identical
	 * ones (UPM, src/mem/); NULL: the advice is taken and nothing done */
	int (*merge)(void *ctx, struct vm *vm, uint64_t start, uint64_t len);
	void *merge_ctx;
	/* the syscall sites of the bundle's file node, found once by the layer above (the image
	 * layer's disassembler) and kept by it while b is: rewritten where the program maps the
	 * file executable (sys_sites.c); NULL (the hook, or its answer): none */
	const struct sys_file_sites *(*file_sites)(void *ctx, const struct bnd *b, uint32_t node);
	void *file_sites_ctx;
	/* outcome */
	enum sys_outcome outcome;
	int status;	      /* exit status or signal number */
	struct vm_exit fault; /* the fault that ended the run, if any */
	char msg[EMBER_ERR_MAX];
	struct sys_stats stats;
};

/* Prepares st for a guest loaded into vm, in proc's syscall mode; in/code stay owned by the
 * caller. */
int sys_init(struct sys_state *st, struct vm *vm, const struct sys_process *proc);
void sys_free(struct sys_state *st);
void sys_set_input(struct sys_state *st, const void *in, size_t len);
void sys_set_code(struct sys_state *st, const void *code, size_t len);
/* the request's metadata on fd 4 (sys_io.c): opens fd 4, empty when len is 0; set with the
 * request, after the snapshot point */
void sys_set_meta(struct sys_state *st, const void *meta, size_t len);

/* the function's files, shared by its virtines and kept by the caller (sys_fs.c) */
void sys_set_bundle(struct sys_state *st, const struct bnd *b);
/* the program's bytes and absolute path, which /proc/self/exe shows (the caller's, kept) */
void sys_set_exe(struct sys_state *st, const uint8_t *bytes, size_t len, const char *path);
/* Maps guest [addr, addr+len) copy-on-write (vm_map_file) onto the pages of b's data from at
 * (page-aligned): from the page store where it holds them all (b->shared_off), in runs of
 * consecutive store pages, else from the bundle's block. 0 or what vm_map_file says. */
int sys_fs_map_pages(struct vm *vm, const struct bnd *b, uint64_t addr, uint64_t len, uint64_t at);

/* Runs the guest until it exits, crashes, times out or exceeds a limit. */
enum sys_outcome sys_run(struct sys_state *st);
/* What the run loop does with one exit of the machine: a hypercall served (a syscall, the
 * runtime's input), a fault or a timeout turned into the outcome. sys_run calls it after every
 * vm_run; the fuzzing harness (tests/fuzz/fuzz_sys.c) drives it with exits of its own. */
void sys_handle_exit(struct sys_state *st, const struct vm_exit *e);

/* The checked door for guest pointers given to syscalls: NULL unless [addr, addr+len) is mapped
 * in the guest with every bit of prot. */
void *sys_user(struct sys_state *st, uint64_t addr, uint64_t len, int prot);
/* A structure copied out to the guest or in from it through that door: 0 or -EFAULT. A guest
 * pointer may have any alignment, so the host never reads or writes a structure in place. */
int sys_put(struct sys_state *st, uint64_t addr, const void *src, size_t len);
int sys_get(struct sys_state *st, void *dst, uint64_t addr, size_t len);

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
	 * of the objects); a timer's at is the time left (sys_fd_snap.c) */
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
	/* its files mapped shared, written back into it first (sys_shm.c) */
	struct sys_shm *shm;
	size_t nshm;
};
int sys_save(const struct sys_state *st, struct sys_saved *out);
/* init left something in /tmp: a file or folder, or a descriptor on it (sys_tmp.c) */
int sys_tmp_saved_used(const struct sys_saved *s);
/* puts st back to the saved state and clears outputs and counters for a new invocation */
int sys_restore(struct sys_state *st, const struct sys_saved *s);
void sys_saved_free(struct sys_saved *s);

/* sys_inherit.c: what `to`, made by sys_init for a clean machine, takes of `from`: for a fork
 * (exec 0) its descriptors and their objects (a pipe shared, the rest copied), memory map,
 * signal actions, files, /tmp (the first process's), identity and relatives; for an execve
 * (exec 1) the same but the memory map, the descriptors with FD_CLOEXEC and the handlers
 * (back to their default). 0 or -ENOMEM. */
int sys_inherit(struct sys_state *to, struct sys_state *from, int exec);

/* every signal handler of st back to its default; those ignored stay so (execve,
 * CLONE_CLEAR_SIGHAND) */
void sys_sig_default(struct sys_state *st);

/* brk as the syscall does it (sys_mem.c): the break it has afterwards */
long sys_brk_to(struct sys_state *st, uint64_t want);
/* EMBER_SYS_POOL (sys_mem.c): fresh writable memory for the runtime's pool */
long sys_pool_grow(struct sys_state *st, uint64_t len);
/* shared with sys_rt.c: output appended within the limit */
long sys_append_out(struct sys_state *st, int fd, const void *p, size_t n);

/* the bundle's files behind descriptors (sys_fs.c), for the I/O and memory families: whether fd
 * is one, and its calls; offset < 0: at the file position, which moves */
int sys_fs_is(const struct sys_state *st, uint64_t fd);
long sys_fs_read(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, int64_t offset);
long sys_fs_lseek(struct sys_state *st, uint64_t fd, int64_t off, int whence);
long sys_fs_stat_at(struct sys_state *st, uint64_t dirfd, uint64_t path, uint64_t addr, int flags);
/* mmap of a file: 0 if it may be mapped so, or -errno; then its bytes copied into the range */
long sys_fs_map_check(struct sys_state *st, uint64_t fd, int prot, int flags, uint64_t off);
/* mmap of a descriptor that is none of the bundle's files: -EBADF, or what its kind answers */
long sys_fs_map_refused(struct sys_state *st, uint64_t fd);
int sys_fs_map_fill(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, uint64_t off);
/* a restored state's files name nodes of st's bundle: 0 or -EINVAL */
int sys_fs_check(const struct sys_state *st);
/* the files the in-guest runtime reads itself (sys_fs_rt.c), on fds SYS_FS_FD0 to 63 while one
 * descriptor alone names them: a window made for file f on fd (after the host served it a
 * read), f's position taken back from the runtime and given to it, fd's window gone (closed,
 * or its file shared by dup: the position taken back first), [start, end) of guest memory
 * unmapped or remapped (the windows there are forgotten); at the snapshot point every position
 * taken back (the state saved has them) and the files still open given windows; at the start
 * of a run, entries the host does not know of (a disk snapshot's) forgotten */
void sys_fs_rt_window(struct sys_state *st, uint64_t fd, struct sys_obj *f);
void sys_fs_rt_pull(struct sys_state *st, uint64_t fd, struct sys_obj *f);
void sys_fs_rt_push(struct sys_state *st, uint64_t fd, struct sys_obj *f);
void sys_fs_rt_close(struct sys_state *st, uint64_t fd);
void sys_fs_rt_unmapped(struct sys_state *st, uint64_t start, uint64_t end);
void sys_fs_rt_snapshot(struct sys_state *st);
void sys_fs_rt_begin(struct sys_state *st);
/* sys_mem.c: len bytes mapped where the program's next mmap would go, with prot (zero: made to
 * read as zero first); the address or -errno; and a range unmapped as munmap does */
long sys_map_fresh(struct sys_state *st, uint64_t len, int prot, int zero);
int sys_unmap_range(struct sys_state *st, uint64_t addr, uint64_t len);

/* sys_sites.c: the syscall sites of the bundle's file on fd, mapped executable at [addr,
 * addr+len) from file offset off, rewritten as the loader rewrites the program's (the call form
 * into the in-guest runtime where it may be, else the trapping one); and the runtime's record of
 * the sites in [start, end) forgotten, what is there being unmapped or replaced */
void sys_sites_mapped(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, uint64_t off);
void sys_sites_gone(struct sys_state *st, uint64_t start, uint64_t end);
/* mremap moved [from, from+len) to to: its sites are at their new place too */
void sys_sites_moved(struct sys_state *st, uint64_t from, uint64_t len, uint64_t to);

/* sys_far.c: reservations beyond guest memory, from SYS_FAR_BASE (1 TiB) to 2^47: a PROT_NONE
 * mapping that does not fit in guest RAM goes there, costing nothing; nothing there can be
 * made accessible (ENOMEM) */
#define SYS_FAR_BASE (1ULL << 40)
int sys_far_is(uint64_t addr, uint64_t len);
/* at addr (fixed, replacing what is reserved there) or, addr 0, the first free range: the
 * address or -ENOMEM */
long sys_far_map(struct sys_state *st, uint64_t addr, uint64_t len);
int sys_far_unmap(struct sys_state *st, uint64_t addr, uint64_t len);
int sys_far_taken(const struct sys_state *st, uint64_t addr, uint64_t len);

/* notes that [start, end) became writable (sys_vma.c) */
void sys_note_writable(struct sys_state *st, uint64_t start, uint64_t end);

/* /tmp files mapped MAP_SHARED (sys_shm.c): a record of [start, end) mapping node from off;
 * flush writes what the program wrote there into the file, refresh the file into the mappings;
 * cut writes back and forgets [lo, hi); names: node is mapped (it lives on while it is) */
int sys_shm_add(struct sys_state *st, uint64_t start, uint64_t end, uint32_t node, uint64_t off,
		int priv);
/* the pages past the end of the files mapped in [lo, hi) made to fault (SIGBUS), the others
 * not (after mprotect, which sets them alike) */
void sys_shm_bus_range(struct sys_state *st, uint64_t lo, uint64_t hi);
int sys_shm_names(const struct sys_state *st, uint32_t node);
void sys_shm_flush(struct sys_state *st, uint32_t node);
void sys_shm_refresh(struct sys_state *st, uint32_t node);
void sys_shm_flush_range(struct sys_state *st, uint64_t lo, uint64_t hi);
void sys_shm_refresh_range(struct sys_state *st, uint64_t lo, uint64_t hi);
void sys_shm_cut(struct sys_state *st, uint64_t lo, uint64_t hi);
void sys_shm_free(struct sys_state *st);

/* RLIMIT_DATA and RLIMIT_AS kept to (sys_rlim.c) where memory is mapped and the break moves:
 * may_map and may_brk 0 or -ENOMEM; the program's mapped bytes; the in-guest runtime told of a
 * new RLIMIT_DATA (it then asks for every page past the break) */
int sys_rlim_may_map(const struct sys_state *st, uint64_t len, int prot, int shared);
int sys_rlim_may_brk(const struct sys_state *st, uint64_t heap);
uint64_t sys_rlim_mapped(const struct sys_state *st);
void sys_rlim_data_set(struct sys_state *st);

/* MAP_SHARED anonymous memory (sys_shmem.c): map puts a new memfd's pages at the fresh mapping
 * [addr, addr+len) (KVM; elsewhere it stays private); cut forgets [lo, hi) (the machine's
 * unmapping puts private memory there); covers: addr is such memory; inherit: a fork child
 * holds the same; remap maps them into the child's machine; free closes them all */
int sys_shmem_map(struct sys_state *st, uint64_t addr, uint64_t len);
void sys_shmem_cut(struct sys_state *st, uint64_t lo, uint64_t hi);
int sys_shmem_covers(const struct sys_state *st, uint64_t addr);
int sys_shmem_inherit(struct sys_state *to, const struct sys_state *from);
int sys_shmem_remap(struct sys_state *st);
void sys_shmem_free(struct sys_state *st);

/* memory bookkeeping (sys_vma.c) */
int sys_vma_map(struct sys_state *st, uint64_t start, uint64_t end, int prot);
int sys_vma_unmap(struct sys_state *st, uint64_t start, uint64_t end);
int sys_vma_protect(struct sys_state *st, uint64_t start, uint64_t end, int prot);
const struct sys_vma *sys_vma_find(const struct sys_state *st, uint64_t addr);
int sys_vma_free_range(const struct sys_state *st, uint64_t start, uint64_t end);
int sys_vma_flag(struct sys_state *st, uint64_t start, uint64_t end, int bit, int on);
uint64_t sys_vma_find_gap(const struct sys_state *st, uint64_t len);

/* what a handler returns instead of a value: the thread waits (sys_wait) and the call is made
 * again when it is woken; the handler set every register itself (rt_sigreturn) */
#define SYS_WAITS (-4097L)
#define SYS_REGS  (-4098L)

/* the state whose request position is the invocation's: the first process's */
static inline struct sys_state *sys_in_of(struct sys_state *st)
{
	return st->out_to ? st->out_to : st;
}
/* sys_std.c: from a fork or an execve of st on, the request is read by several processes: what
 * st's runtime holds of it goes back to the one position, read from the host from now on */
void sys_in_share(struct sys_state *st);

/* the thread whose call is being served (under the process's lock) */
static inline struct proc_thread *sys_cur(struct sys_state *st)
{
	return st->pr.cur;
}
/* the call waits for a wake on key (with a futex bitset, else ~0), for deadline (CLOCK_MONOTONIC
 * ns, 0: none), or for a signal; it is made again then, sys_retrying saying so, with the
 * thread's woken or expired set. Returns SYS_WAITS, for the handler to return. */
long sys_wait(struct sys_state *st, uint64_t key, uint32_t bits, uint64_t deadline);
static inline int sys_retrying(const struct sys_state *st)
{
	return st->redo;
}
/* the deadline the first attempt of a waiting call set, or the one it sets now from a relative
 * timeout of ns (UINT64_MAX: none, 0 returned) */
uint64_t sys_deadline_in(struct sys_state *st, uint64_t ns);
/* a thread's signal mask: where it is kept (the in-guest runtime's area while it is on a vCPU
 * in guest mode), read and written */
uint64_t sys_sigmask(struct sys_state *st, struct proc_thread *t);
void sys_set_sigmask(struct sys_state *st, struct proc_thread *t, uint64_t mask);
/* sys_signal.c: a signal sent by the program (kill, tgkill, a timer): to thread t, or to the
 * process (t NULL); one whose action is to ignore it is dropped */
void sys_send(struct sys_state *st, struct proc_thread *t, int sig, int code);
/* before t runs: its pending signals delivered to their handlers, or the process killed by
 * one; a fault e of t's that its handler takes (1), or 0: the process dies of it */
void sys_deliver(struct sys_state *st, struct proc_thread *t);
int sys_fault_signal(struct sys_state *st, struct proc_thread *t, const struct vm_exit *e);
/* a call that waits was interrupted by a signal t is about to take: made again after the
 * handler (SA_RESTART, a call that may be), or -EINTR */
int sys_signal_ready(struct sys_state *st, struct proc_thread *t);
void sys_interrupt(struct sys_state *st, struct proc_thread *t);

/* sys_futex.c: thread t ends: the robust futexes it holds released (FUTEX_OWNER_DIED, a waiter
 * woken), its clear-child-tid word zeroed and woken (pthread_join) */
void sys_futex_exit(struct sys_state *st, struct proc_thread *t);

/* sys_thread.c: what a new thread (clone) or process (fork; execve when exec) takes of t's
 * settings: prctl's, its CPU affinity */
void sys_thread_inherit(struct proc_thread *to, const struct proc_thread *t, int exec);

/* sys_kin.c: a child sharing st's memory (clone with CLONE_VM, no CLONE_THREAD), run as thread
 * tid, which sends sig at its end: 0, or -EAGAIN past SYS_VMKIDS of them; and thread tid ended
 * with wait status status (nothing when it is no such child) */
int sys_kin_vmkid(struct sys_state *st, int tid, int sig);
void sys_kin_vmkid_exit(struct sys_state *st, int tid, int status);

/* sys_kin.c: clone of a new process (no CLONE_THREAD), for clone and clone3: the child's pid
 * or -errno; kill(pid, sig) as the call does it */
long sys_kin_clone(struct sys_state *st, uint64_t flags, uint64_t sp, uint64_t ptid, uint64_t ctid);
long sys_kin_kill(struct sys_state *st, int pid, int sig);

/* one syscall handler: arguments in a[0..5], returns the value or -errno for rax */
typedef long (*sys_fn)(struct sys_state *st, const uint64_t a[6]);
struct sys_entry {
	int nr;
	const char *name;
	sys_fn fn; /* NULL: refused with -err */
	int err;
	/* NULL: fn serves every call; else only while it says so, refused with -err otherwise */
	int (*when)(const struct sys_state *st);
};
extern const struct sys_entry sys_mem_table[], sys_io_table[], sys_time_table[], sys_proc_table[],
    sys_deny_table[], sys_fs_table[], sys_fs_path_table[], sys_fs_dir_table[], sys_thread_table[],
    sys_signal_table[], sys_timer_table[], sys_fd_table[], sys_pipe_table[], sys_eventfd_table[],
    sys_timerfd_table[], sys_poll_table[], sys_epoll_table[], sys_tmp_table[], sys_kin_table[],
    sys_ident_table[], sys_fs_attr_table[], sys_sigwait_table[], sys_sock_table[],
    sys_sched_table[], sys_vec_table[], sys_io_at_table[], sys_statfs_table[], sys_rlimit_table[],
    sys_shm_table[], sys_futex_table[], sys_prctl_table[];
/* sys_sched.c: pid names the caller (0), its process or one of its threads: 0, -EINVAL or -ESRCH */
int sys_sched_task(struct sys_state *st, uint64_t pid);

/* ends the run (from a handler): outcome with status, and a message */
void sys_stop(struct sys_state *st, enum sys_outcome o, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *sys_name(int nr);

#endif

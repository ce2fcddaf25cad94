/* Host-side syscall emulation: the state of one guest process and the run loop that serves it. */
#ifndef EMBER_SYS_H
#define EMBER_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/bnd.h"
#include "proc/proc.h"
#include "sys/sys_rt.h"
#include "vm/vm.h"

#define SYS_NR_MAX    512	      /* Linux x86-64 numbers below this are counted one by one */
#define SYS_GUEST_UID EMBER_GUEST_UID /* the program's uid and gid, its files' */
#define SYS_RLIMITS   16	      /* RLIMIT_NLIMITS */
#define SYS_ITIMERS   3		  /* setitimer's: the first of a process's timers (sys_timer.c) */
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

/* a /tmp file's range mapped at [start, end) (fs_tmp_map.c): MAP_SHARED, or private */
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

/* Descriptors (fd.c): fd n names obj[fd[n].obj - 1], an open file description, which dup
 * shares; what each kind does is one table of operations (fd.h). SYS_FDS is RLIMIT_NOFILE:
 * a new descriptor past it is refused with EMFILE. */
#define SYS_FDS 256
enum sys_kind {
	SYS_KIND_NONE,	/* a free slot */
	SYS_KIND_STD,	/* Ember's: the request, stdout, stderr, code, metadata (fd_std.c) */
	SYS_KIND_FILE,	/* a file or folder of the bundle (fs.c) */
	SYS_KIND_PIPE,	/* one end of a pipe (fd_pipe.c) */
	SYS_KIND_EVENT, /* an eventfd (fd_eventfd.c) */
	SYS_KIND_TIMER, /* a timerfd (fd_timerfd.c) */
	SYS_KIND_EPOLL, /* an epoll instance; its interest list is sys_state.epi (fd_epoll.c) */
	SYS_KIND_PROC,	/* a /proc or /sys file made from the virtine's state (fs_proc.c) */
	SYS_KIND_TMP,	/* a file or folder of the scratch /tmp (fs_tmp.c) */
	SYS_KIND_DEV,	/* /dev/null, /dev/zero, /dev/urandom and the like (fs_dev.c) */
	SYS_KIND_SOCK,	/* one end of a connected pair of Unix stream sockets (fd_sock.c) */
	SYS_KIND_FIFO,	/* a named pipe of the scratch /tmp opened (fs_tmp_fifo.c) */
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

/* the bundle's files the in-guest runtime may read itself: fds SYS_FS_FD0 to 63 (fs_rt.c) */
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
	/* the scratch /tmp, made on first use (fs_tmp.c); NULL: none yet. Borrowed: the first
	 * process's, which every process of the invocation shares (sys_inherit) */
	struct sys_tmp *tmp;
	int tmp_borrowed;
	/* the program itself, for /proc/self/exe: its bytes and its path (NULL: none) */
	const uint8_t *exe;
	size_t exe_len;
	const char *exe_path;
	/* in guest mode on KVM: where the file on fd SYS_FS_FD0 + i has its read-only window, 0 if
	 * none (fs_rt.c) */
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
	int limit_hit; /* the invocation's output went past out_limit (fd_std.c) */
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
	/* setpriority's nice value (sys_nice.c), -20 to 19: a fork and an execve keep it, every
	 * invocation starts at 0 */
	int nice;
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
	/* the /tmp files mapped (fs_tmp_map.c): this process's, the snapshot's after a reset */
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
	 * ones (UPM, src/share/); NULL: the advice is taken and nothing done */
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
/* the request's metadata on fd 4 (fd_io.c): opens fd 4, empty when len is 0; set with the
 * request, after the snapshot point */
void sys_set_meta(struct sys_state *st, const void *meta, size_t len);

/* the function's files, shared by its virtines and kept by the caller (fs.c) */
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

/* shared with sys_rt.c: output appended within the limit */
long sys_append_out(struct sys_state *st, int fd, const void *p, size_t n);

/* the bundle's files behind descriptors (fs.c), for the I/O and memory families: whether fd
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
/* the files the in-guest runtime reads itself (fs_rt.c), on fds SYS_FS_FD0 to 63 while one
 * descriptor alone names them: a window made for file f on fd (after the host served it a
 * read; at its open when it is small enough to keep one across the snapshot), f's position taken
 * back from the runtime and given to it, fd's window gone (closed, or its file shared by dup: the
 * position taken back first), [start, end) of guest memory unmapped or remapped (the windows there
 * are forgotten); at the snapshot point every position taken back (the state saved has them) and
 * the files still open given windows; at the start of a run, entries the host does not know of (a
 * disk snapshot's) forgotten */
void sys_fs_rt_window(struct sys_state *st, uint64_t fd, struct sys_obj *f);
void sys_fs_rt_opened(struct sys_state *st, uint64_t fd, struct sys_obj *f);
/* the files the runtime closed (ember_rt_ctl.closed) closed by the host too: before it serves
 * a call, which may look at the descriptors */
void sys_fs_rt_closed(struct sys_state *st);
void sys_fs_rt_pull(struct sys_state *st, uint64_t fd, struct sys_obj *f);
void sys_fs_rt_push(struct sys_state *st, uint64_t fd, struct sys_obj *f);
void sys_fs_rt_close(struct sys_state *st, uint64_t fd);
void sys_fs_rt_unmapped(struct sys_state *st, uint64_t start, uint64_t end);
void sys_fs_rt_snapshot(struct sys_state *st);
void sys_fs_rt_begin(struct sys_state *st);

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
    sys_deny_table[], sys_fs_table[], sys_fs_stat_table[], sys_fs_path_table[], sys_fs_dir_table[],
    sys_thread_table[], sys_signal_table[], sys_timer_table[], sys_fd_table[], sys_pipe_table[],
    sys_eventfd_table[], sys_timerfd_table[], sys_poll_table[], sys_epoll_table[], sys_tmp_table[],
    sys_kin_table[], sys_ident_table[], sys_fs_attr_table[], sys_sigwait_table[], sys_sock_table[],
    sys_sched_table[], sys_vec_table[], sys_io_at_table[], sys_statfs_table[], sys_rlimit_table[],
    sys_shm_table[], sys_futex_table[], sys_prctl_table[], sys_nice_table[];
/* sys_sched.c: pid names the caller (0), its process or one of its threads: 0, -EINVAL or -ESRCH */
int sys_sched_task(struct sys_state *st, uint64_t pid);

/* ends the run (from a handler): outcome with status, and a message */
void sys_stop(struct sys_state *st, enum sys_outcome o, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *sys_name(int nr);

/* the declarations of the families' shared pieces, in headers of their own: the snapshot's
 * emulation state, memory, threads and processes (each includes this one) */
#include "sys/sys_mem.h"
#include "sys/sys_saved.h"
#include "sys/sys_task.h"
#include "sys/sys_kin.h"

#endif

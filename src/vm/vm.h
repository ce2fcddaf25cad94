/* A virtine as a machine: guest memory, its vCPUs in 64-bit CPL3, their exits and deadline. */
#ifndef EMBER_VM_H
#define EMBER_VM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/base.h"
#include "ember/abi.h"
#include "ember/ember.h"

/* Which machine runs the guest. KVM is the real thing; ptrace is the fallback for hosts without
 * /dev/kvm: the same guest memory and exits, enforced by a seccomp-locked stub process. */
enum vm_backend {
	VM_BACKEND_KVM,
	VM_BACKEND_PTRACE,
	VM_BACKEND_AUTO, /* KVM when /dev/kvm opens, ptrace otherwise */
};

/* vm_create() returns VM_OK or a kind of failure of ember.h: EMBER_ERR_NOKVM, EMBER_ERR_CONFIG
 * (a memory size out of range), EMBER_ERR_NOMEM or EMBER_ERR_IO (the host's resources), or
 * EMBER_ERR. The two most used have names here. */
enum vm_err {
	VM_OK = 0,
	VM_ERR = EMBER_ERR,	     /* anything else, with a message */
	VM_ENOKVM = EMBER_ERR_NOKVM, /* /dev/kvm missing or unusable */
};

/* The kind of failure an errno stands for when it is about the host's resources (ENOMEM,
 * EAGAIN: EMBER_ERR_NOMEM; ENOSPC, EDQUOT, EIO, EFBIG, EROFS, EMFILE, ENFILE: EMBER_ERR_IO),
 * else `otherwise`: what the failing step means by itself. Every layer classifies with it. */
int vm_errno_kind(int errnum, int otherwise);

struct vm_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rsp, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip, rflags;
};

enum vm_exit_kind {
	VM_EXIT_HYPERCALL, /* `out %al,$port`: rip already points past the instruction */
	VM_EXIT_FAULT,	   /* the guest took an exception it cannot handle */
	VM_EXIT_TIMEOUT,   /* the deadline passed */
	VM_EXIT_ERROR,	   /* the machine itself failed; msg says why */
	VM_EXIT_INTERRUPT, /* the host stopped the run: its time slice ended, or a kick */
	VM_EXIT_KINDS,
};
_Static_assert(VM_EXIT_KINDS == EMBER_EXIT_KINDS, "ember.h counts the exit kinds of vm.h");

/* Guest exceptions, named after the signal a process would have died of. */
enum vm_fault {
	VM_FAULT_PAGE,	   /* #PF: addr is the faulting address (SIGSEGV) */
	VM_FAULT_GP,	   /* #GP, e.g. a privileged instruction (SIGSEGV) */
	VM_FAULT_DIVIDE,   /* #DE (SIGFPE) */
	VM_FAULT_INVALID,  /* #UD (SIGILL) */
	VM_FAULT_BREAK,	   /* #BP (SIGTRAP) */
	VM_FAULT_SYSCALL,  /* a `syscall` instruction that was not rewritten (SIGSYS) */
	VM_FAULT_FLOAT,	   /* #MF, #XM: an unmasked floating-point exception (SIGFPE) */
	VM_FAULT_ALIGN,	   /* #AC (SIGBUS) */
	VM_FAULT_INT80,	   /* `int $0x80`, the 32-bit system call, refused when run (SIGSYS) */
	VM_FAULT_SYSENTER, /* `sysenter`, likewise */
	VM_FAULT_UNKNOWN,  /* an exception we could not name, e.g. a triple fault (SIGSEGV) */
};

struct vm_exit {
	enum vm_exit_kind kind;
	int port;		 /* VM_EXIT_HYPERCALL */
	enum vm_fault fault;	 /* VM_EXIT_FAULT */
	uint64_t rip;		 /* VM_EXIT_FAULT: the faulting instruction */
	uint64_t addr;		 /* VM_FAULT_PAGE: the faulting address */
	int vector;		 /* VM_EXIT_FAULT on KVM: the exception vector, -1 if unknown */
	char msg[EMBER_ERR_MAX]; /* VM_EXIT_ERROR */
};

struct vm_config {
	uint64_t mem_size; /* bytes of guest RAM, a multiple of 2 MiB, EMBER_MEM_MIN to _MAX */
	enum vm_backend backend;
	int cpus; /* vCPUs made at once (0: 1), up to VM_CPUS_MAX */
};

struct vm;

/* Creates a machine with all guest memory unmapped for the program. Returns VM_OK or a kind of
 * failure (above) with a one-line message in err. */
int vm_create(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen);
void vm_destroy(struct vm *vm);
/* vm_empty.c: the machine made clean again, as vm_create leaves one (guest memory zero, its
 * own page tables, no runs mapped, every vCPU's registers, segments, FPU state and pending
 * events as at creation), for another program to use without the cost of making one: 0, or
 * -errno (-EOPNOTSUPP where the backend cannot, a vCPU broken): then it must be destroyed */
int vm_empty(struct vm *vm);
enum vm_backend vm_backend_of(const struct vm *vm);
const char *vm_backend_name(enum vm_backend b);
int vm_backend_parse(const char *s, enum vm_backend *out);
/* 1 when machines of backend b can map page 0 for the program, as the in-guest runtime needs
 * (--syscalls guest): always on KVM; on ptrace when this process may map below
 * vm.mmap_min_addr, as its stubs will (vm_low.c) */
int vm_low_ok(enum vm_backend b);

/* vm_dev.c: /dev/kvm, opened by the first caller and kept for the process (fd or -errno);
 * vm_dev_open opens it and /dev/userfaultfd ahead of a drop of privileges (what cannot be
 * opened is left: the backends say why when they need it); vm_uffd_new makes a userfaultfd
 * (O_CLOEXEC | O_NONBLOCK) by the syscall, else through the device kept open, -1 and errno */
int vm_dev_kvm(void);
void vm_dev_open(void);
/* vm_dev_open, and the ptrace backend's stub made: every descriptor a process makes once and
 * keeps, so that those it holds past it are a function's (ember run --stats counts them) */
void vm_dev_prepare(void);
int vm_uffd_new(void);

/* A machine starts with one vCPU, number 0; the calls without a vCPU number are about it. */
#define VM_CPUS_MAX EMBER_CPUS_MAX
/* vCPUs made so far */
int vm_cpus(const struct vm *vm);
/* Adds a vCPU sharing the machine's memory: its number, or -1 with err (EMBER_ERR_CONFIG where
 * the backend runs one vCPU only, as ptrace does, or past VM_CPUS_MAX). */
int vm_add_cpu(struct vm *vm, char *err, size_t errlen);

/* Runs the vCPU until its next exit. After a fault the machine stays usable where the backend
 * allows: setting the registers (a snapshot's) starts it afresh. */
void vm_run(struct vm *vm, struct vm_exit *exit);
/* Runs vCPU cpu, on the thread that drives it, until its next exit; slice_ns (absolute
 * CLOCK_MONOTONIC, 0: none) ends the run with VM_EXIT_INTERRUPT when it passes, as does
 * vm_cpu_kick. Different vCPUs may run at once on different threads. */
void vm_cpu_run(struct vm *vm, int cpu, uint64_t slice_ns, struct vm_exit *exit);
/* from any thread: vCPU cpu's current run, or its next, returns VM_EXIT_INTERRUPT soon */
void vm_cpu_kick(struct vm *vm, int cpu);
int vm_cpu_get_regs(struct vm *vm, int cpu, struct vm_regs *r);
int vm_cpu_set_regs(struct vm *vm, int cpu, const struct vm_regs *r);
int vm_cpu_set_fs_base(struct vm *vm, int cpu, uint64_t base);
int vm_cpu_get_fpu(struct vm *vm, int cpu, void *buf, size_t *len);
int vm_cpu_set_fpu(struct vm *vm, int cpu, const void *buf, size_t len);
/* 0 once the machine cannot be entered again (a KVM vCPU that shut down, a stub that died) */
int vm_usable(const struct vm *vm);
int vm_get_regs(struct vm *vm, struct vm_regs *r);
int vm_set_regs(struct vm *vm, const struct vm_regs *r);
int vm_set_fs_base(struct vm *vm, uint64_t base);
int vm_get_fs_base(struct vm *vm, uint64_t *base);

/* The guest's time-stamp counter now (it may differ from the host's by an offset). */
int vm_guest_tsc(struct vm *vm, uint64_t *tsc);

/* The extended FPU state (x87, SSE, AVX), opaque, in XSAVE layout. Room for the host's whole
 * XSAVE area, not only KVM's 4096 bytes: Linux takes a ptrace'd thread's state back only whole
 * (PTRACE_SETREGSET of NT_X86_XSTATE is EFAULT for any other length) and AMX makes it 11008
 * bytes. */
#define VM_FPU_MAX 16384
int vm_get_fpu(struct vm *vm, void *buf, size_t *len);
int vm_set_fpu(struct vm *vm, const void *buf, size_t len);

/* Runs fn(arg) on the thread that may drive this machine (the ptrace backend's vCPU thread; the
 * caller's own thread for KVM). Long sequences of runs should go through here. */
void vm_call(struct vm *vm, void (*fn)(void *), void *arg);

/* Which pages of [addr, addr+len) hold memory (were ever touched and not discarded): one byte per
 * page in vec, bit 0 set for resident. */
int vm_resident(struct vm *vm, uint64_t addr, uint64_t len, uint8_t *vec);
/* The first run of pages that hold data in [addr, end) (page-aligned): [*lo, *hi); 1 if there is
 * one, 0 if none, or -errno. One lookup per run, whatever the size of the range. A run mapped
 * copy-on-write holds data (the shared file's) whether or not it was touched. */
int vm_next_data(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);
/* As vm_next_data for the reset, which needs only the pages that may hold something other than
 * zeros: those used since they were last emptied. On KVM the guest's accessed bits and the host's
 * marks tell it without a system call (a superset: a page used and zeroed since counts); where
 * the backend cannot tell, it is vm_next_data. */
int vm_next_used(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);
/* 1 when the page at addr (aligned) certainly holds what it held at the end of the last reset
 * (or the restore): on KVM, the guest wrote nothing there (its PTE's dirty bit), the host
 * touched nothing (the accessor's marks) and made no hole of it; 0 when it may differ, or the
 * backend cannot tell. The reset compares only the pages for which it says 0. */
int vm_unwritten(struct vm *vm, uint64_t addr);

/* The userfaultfds through which accesses to guest memory fault, for serving memory on demand:
 * n of them (1 or 2), each with the offset from a guest address to the faulting address it
 * reports. Every access to guest memory, the guest's and the host's, goes through one of them. */
struct vm_uffds {
	int n;
	int fd[2];
	uint64_t off[2];
};
int vm_get_uffds(struct vm *vm, struct vm_uffds *u, char *err, size_t errlen);
/* the userfaultfds closed: a machine restored from a snapshot in memory serves no cold start,
 * and each is a descriptor held for nothing (vm_get_uffds makes them again when asked) */
void vm_drop_uffds(struct vm *vm);

/* Maps guest [addr, addr+len) copy-on-write onto [off, off+len) of fd, a snapshot's sealed
 * memfd: the guest and the host read the file's pages, one copy for every machine that maps
 * them, until a write gives the writer a private copy, which stays private (a reset copies into
 * it). -EOPNOTSUPP where the backend cannot (ptrace: its stub sees guest memory only through the
 * memfd). A run mapped so before is replaced where they overlap. fd -1: private anonymous memory
 * instead, zero, which KSM may merge (vm_mergeable). */
int vm_map_cow(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off);
size_t vm_cow_runs(const struct vm *vm);
/* A snapshot's image (fd: guest memory's content at its own offsets, sealed; the caller keeps
 * it open while vm lives) mapped copy-on-write over [0, user_top) with one mapping: a page
 * given back where the image has data is zeroed in place, elsewhere dropped (the image's hole
 * reads zero); a file's run dropped is the image's again. -EOPNOTSUPP on ptrace. The machine's
 * memfd, which holds the page tables alone from then on, is closed unless keep_memfd (a machine
 * to be emptied for another process later, vm_empty, needs it). */
int vm_map_image(struct vm *vm, int fd, int keep_memfd);
/* the runs of every machine of this process (the budget that keeps them under vm.max_map_count) */
long vm_cow_runs_total(void);
/* vm.max_map_count changed (ember bench memory --max-map-count): the budget follows it */
void vm_cow_budget_reset(void);
/* The same for a file's pages (fd: a sealed memfd, a bundle's): the program's MAP_PRIVATE
 * mapping of a file, one copy for every machine, a write making a private page. Such a run lasts
 * until vm_drop_files or vm_discard over it, which put private zero memory in its place. */
int vm_map_file(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off);
int vm_drop_files(struct vm *vm, uint64_t lo, uint64_t hi);
/* As vm_map_file, but shared: the guest's writes go to fd's pages, which every machine mapping
 * them sees (MAP_SHARED memory across fork); a file run as above, which vm_drop_files, a
 * discard and the reset replace with private zero memory. -EOPNOTSUPP on ptrace. */
int vm_map_shared(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off);
/* the file runs there are now become the snapshot's content (the snapshot point): a reset
 * keeps them, copying into what was written, as it does with the snapshot's own runs */
void vm_keep_files(struct vm *vm);
/* The pages written since the last call (or vm_forget_written): by the guest (KVM's dirty log)
 * or touched by the host through vm_guest, vm_copy_to, vm_discard or vm_zero; a bitmap of
 * *words 64-bit words, bit p for guest page p, valid until the next call. -EOPNOTSUPP when the
 * backend cannot record the guest's writes: then every page may have been written. */
int vm_take_written(struct vm *vm, const uint64_t **bits, size_t *words);
/* Starts recording the pages written from now on (KVM's dirty log; ~300 us, once): until then
 * vm_take_written answers -EOPNOTSUPP. Every first write to a page in a round then costs the
 * guest a write-protect fault, so it pays where comparing the snapshot's writable pages would
 * cost more than those faults. -EOPNOTSUPP on ptrace. */
int vm_log_writes(struct vm *vm);
/* ... and stops (the next reset compares) */
int vm_unlog_writes(struct vm *vm);
int vm_logging(const struct vm *vm);
/* after a vm_take_written and the host's own writes that put pages back: those are not the
 * next round's */
void vm_written_done(struct vm *vm);
/* the record starts again empty */
void vm_forget_written(struct vm *vm);
/* The memory this machine holds: bytes still shared with the snapshot's one copy (its file's
 * pages, mapped copy-on-write), and bytes of its own (its memfd's pages, and the copies it
 * made of the shared ones). Reads the host's page map: for reports, not for hot paths. */
int vm_memory(struct vm *vm, uint64_t *shared, uint64_t *priv);
/* out[i] 1 when guest page addrs[i] is in the host's page map (the guest or the host touched it
 * since it was mapped), from /proc/self/pagemap: for a cold start's accounting, not hot paths */
int vm_present(struct vm *vm, const uint64_t *addrs, size_t n, uint8_t *out);
/* What machines hold of the host besides memory, counted for density (each mapping counts
 * against vm.max_map_count, each descriptor against RLIMIT_NOFILE): the host's mappings read
 * once from /proc/self/maps, then per machine its guest memory's mappings and its vCPUs'
 * (kvm_run), and its descriptors (guest memory's, the VM's and each vCPU's, userfaultfds). For
 * reports, not hot paths. */
struct vm_maps {
	uint64_t (*r)[2];
	size_t n;
};
int vm_maps_read(struct vm_maps *m);
void vm_maps_free(struct vm_maps *m);
struct vm_hold {
	unsigned maps, fds;
	/* guest memory the hypervisor keeps per-page arrays for (KVM's memory slots); 0 where
	 * none (ptrace) */
	uint64_t slot_bytes;
};
void vm_host_hold(const struct vm *vm, const struct vm_maps *m, struct vm_hold *h);
/* madvise(MADV_MERGEABLE) on the private anonymous runs: KSM may merge their pages */
int vm_mergeable(struct vm *vm);

/* Sets program-visible permissions (PROT_* bits; 0 = unmapped) for whole pages in
 * [addr, addr+len). Both must be page-aligned and inside guest RAM above EMBER_SYS_END.
 * VM_PROT_FAULT with any of them: no access at all (the caller's books keep the rest: a
 * file's pages past its end, SIGBUS to the program). */
#define VM_PROT_FAULT 0x10000
int vm_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot);
/* The backend's room for [addr, addr+len) made now (KVM: its memory slots), so that a
 * vm_protect of it with any access that follows cannot fail for want of it: callers that
 * change their books first ask here before. 0, or -errno with nothing changed. */
int vm_reserve(struct vm *vm, uint64_t addr, uint64_t len);
/* Gives [addr, addr+len) back: the pages read as zero afterwards and cost no memory. */
int vm_discard(struct vm *vm, uint64_t addr, uint64_t len);
/* [addr, addr+len) reads as zero afterwards, like vm_discard; a small range is cleared in place
 * and keeps its pages, which the guest is likely to touch again */
int vm_zero(struct vm *vm, uint64_t addr, uint64_t len);

/* The one checked door: a host pointer to guest [addr, addr+len), or NULL when any byte of it
 * (or the sum itself) lies outside guest RAM. */
void *vm_guest(struct vm *vm, uint64_t addr, uint64_t len);
/* the port of the hypercall (`out %al,$port`, EMBER_HC_LEN bytes) at guest address at, or -1
 * when something else is there (vm.c): the one decoder both backends use */
int vm_hypercall_at(struct vm *vm, uint64_t at);
int vm_copy_to(struct vm *vm, uint64_t addr, const void *src, uint64_t len);
int vm_copy_from(struct vm *vm, void *dst, uint64_t addr, uint64_t len);
uint64_t vm_mem_size(const struct vm *vm);
/* the top of the program's usable memory (the page tables of the KVM backend live above it) */
uint64_t vm_user_top(const struct vm *vm);

/* CPU time, ns: the calling thread's, and what the backend runs the guest in besides it (the
 * ptrace stub and its tracer thread; 0 for KVM, whose guest runs on the calling thread) */
uint64_t vm_thread_cpu_ns(void);
uint64_t vm_machine_cpu_ns(struct vm *vm);

/* Arms a wall-clock deadline (CLOCK_MONOTONIC, ns) for the runs that follow on this thread; 0
 * disarms. A run past it returns VM_EXIT_TIMEOUT promptly. */
int vm_set_deadline(struct vm *vm, uint64_t deadline_ns);
/* the deadline last armed (0: none) */
uint64_t vm_deadline(const struct vm *vm);

/* clock_nanosleep(c, flags, want, left) on the host for the machine's program, cut short by its
 * deadline only: 0 when the time has passed, EINTR when the deadline came first (the next run
 * returns VM_EXIT_TIMEOUT), or clock_nanosleep's error */
int vm_sleep(struct vm *vm, clockid_t c, int flags, const struct timespec *want,
	     struct timespec *left);

#endif

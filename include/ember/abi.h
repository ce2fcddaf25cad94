/* The guest/host ABI: hypercall ports, the guest memory layout and the numbers both sides share. */
#ifndef EMBER_ABI_H
#define EMBER_ABI_H

/*
 * A rewritten `syscall` site (0f 05) becomes `out %al,$EMBER_HC_SYSCALL` (e6 10): two bytes, so
 * no instruction moves. The host reads the Linux syscall number from rax and the arguments from
 * rdi, rsi, rdx, r10, r8, r9, and writes the result to rax, exactly like the kernel would.
 */
#define EMBER_HC_SYSCALL 0x10
/* the hypercall instruction: `out %al,$port`, this opcode then the port (vm_hypercall_at) */
#define EMBER_HC_OPCODE 0xe6
#define EMBER_HC_LEN	2
/* the port a test guest uses to leave at once (the exit floor benchmark) */
#define EMBER_HC_NOP 0x11
/* from the in-guest runtime: it needs (more) request bytes in its input buffer; the first one is
 * the snapshot point */
#define EMBER_HC_INPUT 0x12
/* from the in-guest runtime: its output buffers are full; the host collects them (it does so at
 * every exit) */
#define EMBER_HC_FLUSH 0x13

/* Syscall numbers Ember adds above Linux's range; a native run gets ENOSYS from them. */
#define EMBER_SYS_BASE	   1000 /* below EMBER_TRAMP_SLED: the page-0 sled reaches it */
#define EMBER_SYS_SNAPSHOT (EMBER_SYS_BASE + 0)
/* from the in-guest runtime only: make a fresh range of at least a0 bytes writable for its arena
 * of memory; returns its address (a1: its length) or -ENOMEM */
#define EMBER_SYS_ARENA (EMBER_SYS_BASE + 1)

/*
 * Guest memory layout. Guest virtual addresses equal guest physical addresses.
 *   [0, EMBER_SYS_END)          host structures (page tables, GDT, TSS); never reachable at CPL3
 *   [EMBER_IMAGE_BASE, ...)     the program (static-PIE images are loaded here)
 *   brk heap after the image, mmap area top-down below the stack guard
 *   [stack_top - stack, stack_top)  the stack; stack_top is below the page-table pages at the top
 */
#define EMBER_PAGE_SIZE	  4096ULL
#define EMBER_SYS_END	  0x200000ULL
#define EMBER_IMAGE_BASE  0x400000ULL
#define EMBER_STACK_GUARD 0x10000ULL

/* fd 3 carries a runtime's source code (read once, before the snapshot) */
#define EMBER_CODE_FD 3
/* fd 4 carries the request's metadata, "NAME=value\n" lines (ember_invoke_meta); it is open, and
 * empty when there is none, in every invocation, and closed before the snapshot point. It is
 * also where the function writes its response head, at most EMBER_HEAD_MAX bytes of lines
 * "Status: 201" and "Name: value" (the HTTP status and headers ember serve answers with; see
 * docs/writing-functions.md); a write past that fails with EFBIG */
#define EMBER_META_FD  4
#define EMBER_HEAD_MAX 8192

/*
 * The in-guest runtime (syscalls=guest). A rewritten site is `call *%rax` (ff d0): rax holds the
 * syscall number, so the call lands in the no-op sled of page 0, which ends in a jump to the
 * runtime's entry. Page 0 is readable and executable, never writable.
 */
#define EMBER_TRAMP_SLED   4080 /* numbers below this land in the sled; the jump ends page 0 */
#define EMBER_RT_BASE	   0x100000ULL /* runtime code, 64 KiB */
#define EMBER_RT_CODE_SIZE 0x10000ULL
#define EMBER_RT_CTL	   (EMBER_RT_BASE + 0x10000ULL) /* struct ember_rt_ctl, one page */
#define EMBER_RT_DATA	   (EMBER_RT_BASE + 0x11000ULL) /* runtime data and stack, 60 KiB */
#define EMBER_RT_COUNTS	   (EMBER_RT_BASE + 0x1f000ULL) /* uint64_t[512]: calls served, by number */
#define EMBER_RT_IN	   (EMBER_RT_BASE + 0x20000ULL) /* request buffer */
#define EMBER_RT_IN_SIZE   0x40000ULL
#define EMBER_RT_OUT	   (EMBER_RT_BASE + 0x60000ULL) /* stdout buffer */
#define EMBER_RT_OUT_SIZE  0x40000ULL
#define EMBER_RT_LOG	   (EMBER_RT_BASE + 0xa0000ULL) /* stderr buffer */
#define EMBER_RT_LOG_SIZE  0x20000ULL
#define EMBER_RT_META	   (EMBER_RT_BASE + 0xc0000ULL) /* the request's metadata (fd 4) */
#define EMBER_RT_META_SIZE 0x10000ULL
#define EMBER_RT_MAP	   (EMBER_RT_BASE + 0xd0000ULL) /* struct ember_rt_seg[]: its arena */
#define EMBER_RT_MAP_SIZE  0x20000ULL
/* the function's FPU state, saved by the runtime around its input hypercall (XSAVE layout) */
#define EMBER_RT_XSAVE	    (EMBER_RT_BASE + 0xf0000ULL)
#define EMBER_RT_XSAVE_SIZE 0x8000ULL
/* Each vCPU's own area of the runtime (struct ember_rt_cpu, then its stack up to the area's end),
 * in user memory below the runtime's code; GS base points at it (the host sets it once per vCPU,
 * and the program cannot change it: ARCH_SET_GS is refused). A thread switches vCPU only outside
 * the runtime, so a call the runtime serves keeps its vCPU's area to the end. */
#define EMBER_CPUS_MAX	  16
#define EMBER_RT_CPUS	  0xc0000ULL
#define EMBER_RT_CPU_SIZE 0x4000ULL
#define EMBER_RT_CPU(i)	  (EMBER_RT_CPUS + (unsigned long long)(i)*EMBER_RT_CPU_SIZE)
/* uint32_t[EMBER_RT_SITES_MAX], ascending: the return address of every site rewritten to
 * `call *%rax`, written by the host at load and as the program maps libraries (while other vCPUs
 * may read it: ember_rt_ctl.sites_gen), read-only to the guest. A `call *%rax` that enters
 * the runtime from anywhere else (a null or small function pointer held in rax) is no system
 * call: the runtime ends it at EMBER_RT_BADCALL, which the host reports as the page fault a
 * call to that address would be. */
#define EMBER_RT_SITES	   (EMBER_RT_BASE + 0xf8000ULL)
#define EMBER_RT_SITES_MAX 0x2000ULL
#define EMBER_RT_END	   (EMBER_RT_BASE + 0x100000ULL)
/* where the host sends a system call made at a site left trapping (`out`) when the runtime owns
 * the state it changes (EMBER_RT_OWNED): the runtime serves it on its vCPU's stack and returns to
 * bounce[0] of its vCPU's area with rsp = bounce[1] and r11 = bounce[2] (the flags), all written
 * by the host */
#define EMBER_RT_BOUNCE_ENTRY (EMBER_RT_BASE + 0x100)
#define EMBER_RT_BOUNCE	      (EMBER_RT_CTL + 0xf00ULL) /* the end of the control page's tables */
/* where the host sends the runtime when its service of a call faulted on the program's memory
 * (a bad buffer or iovec pointer): the call returns -EFAULT to its site, as Linux's would */
#define EMBER_RT_EFAULT_ENTRY (EMBER_RT_BASE + 0x180)
/* the runtime's `ud2` for a call into page 0 that is no rewritten site (rax: its target) */
#define EMBER_RT_BADCALL (EMBER_RT_BASE + 0x1c0)
/* a call the runtime hands to the host as the program made it leaves from here, with the
 * program's registers and its stack pointer at the return address of its `call *%rax` site
 * (EMBER_HC_SYSCALL): the host serves it as if made at that site, so a call that waits, or
 * that a signal interrupts, never waits inside the runtime */
#define EMBER_RT_FORWARD_OUT (EMBER_RT_BASE + 0x200)
/* The entry of a site rewritten without page 0 (a Go program's: its nil checks must fault
 * there). The site's `syscall` becomes `jmp rel8` to 7 bytes of its function's int3 padding,
 * which hold `call rel32` to here and `jmp rel8` back to the site's end: the runtime takes the
 * site's end from that jump, and returns there, as from a `call *%rax` site. */
#define EMBER_RT_ENTRY_REL (EMBER_RT_BASE + 0x80)
#define EMBER_RT_PAD_LEN   7 /* call rel32, jmp rel8 */
/* [EMBER_RT_BASE, EMBER_RT_ENTRY_END): the entries and rt_serve, which never touch the program's
 * memory for a call (a fault there is the program's own, such as a smashed return address) */
#define EMBER_RT_ENTRY_END (EMBER_RT_BASE + 0x280)
/* struct ember_rt_file[EMBER_RT_NFILES], in the control block's page: the bundle's files open on
 * fds EMBER_RT_FD0 and up that the runtime reads itself (the host publishes them) */
#define EMBER_RT_FILES	(EMBER_RT_CTL + 0x200ULL)
#define EMBER_RT_FD0	5
#define EMBER_RT_NFILES 59
/* the calls whose state the runtime keeps in guest mode: the memory map and the signal mask */
#define EMBER_RT_OWNED                                                                             \
	{                                                                                          \
		9, 10, 11, 12, 14, 25, 28                                                          \
	} /* mmap mprotect munmap brk rt_sigprocmask                                               \
	   mremap madvise */
/* the madvise advice values Linux knows (0-4, 8-25): the host and the runtime refuse others */
#define EMBER_MADV_KNOWN(a) (((a) >= 0 && (a) <= 4) || ((a) >= 8 && (a) <= 25))
/* fresh arena memory is asked for in steps of this much at least; a guest starts with one */
#define EMBER_RT_ARENA_STEP 0x100000ULL
/* the heap is made writable in steps of this much beyond what brk asks for */
#define EMBER_RT_BRK_STEP     0x40000ULL
#define EMBER_RT_META_FORWARD (~0ULL) /* meta_len: too large for the buffer, read from the host */

#ifndef __ASSEMBLER__
#include <stdint.h>

/* shared by the host and the in-guest runtime; the host checks every value it reads from it */
struct ember_rt_ctl {
	uint64_t magic;
	/* the request: bytes [0, in_len) of the input buffer are valid; in_eof: nothing follows */
	uint64_t in_len, in_pos, in_eof;
	/* bytes waiting in the output buffers */
	uint64_t out_len, log_len;
	/* the request's metadata: bytes [0, meta_len) of its buffer */
	uint64_t meta_len, meta_pos;
	/* clocks: ns = base + ((tsc - tsc0) * mult >> shift), written at each invocation start */
	uint64_t tsc0, mono0, real0, mult;
	uint32_t shift;
	/* a bit for each of fds 0 to 4 that no longer names what Ember opened there (closed, or
	 * another descriptor dup2'd over it): the runtime hands its calls to the host */
	uint32_t fd_moved;
	/* entropy: a fresh key at each invocation start (key_gen changes with it) */
	uint64_t key_gen;
	uint8_t key[32];
	/* the program break: the host sets start = cur = its first value and top = the end of the
	 * writable heap at load; the runtime moves cur, and asks the host (brk) for a higher top */
	uint64_t brk_start, brk_cur, brk_top, brk_dirty;
	/* entries in use at EMBER_RT_MAP; the host writes the first at load */
	uint64_t nseg;
	/* EMBER_RT_FPU_SAVED while the runtime waits in its input hypercall with the function's FPU
	 * state at EMBER_RT_XSAVE, which it restores when the hypercall returns: a snapshot taken
	 * there needs no FPU state set by the host */
	uint64_t fpu_saved;
	/* 1 while the runtime makes a call of its own (more arena, zeroing, the heap's top): the
	 * host serves it without counting it as the program's */
	uint64_t internal;
	/* the program's calls the runtime forwarded to the host (it counts the others) */
	uint64_t forwarded;
	/* 0, or the lowest heap address below the break that a call forwarded to the host may have
	 * unmapped or remapped: while there is one, a break moved down is told to the host, so
	 * that growing it again gets fresh pages there (as Linux maps them) */
	uint64_t brk_hole;
	/* entries at EMBER_RT_SITES */
	uint64_t nsites;
	/* threads of the process: more than one makes sched_yield and gettid the host's */
	uint64_t nthreads;
	/* the runtime's shared state (arena, break, buffers, counts, files) is taken by one vCPU
	 * at a time: 0 free, 1 held; the host takes it too before it touches that state */
	uint64_t lock;
	/* the process's pid (getpid), written by the host at each run's start: 1, or a child's */
	uint64_t pid;
	/* odd while the host changes the sites' table (its entries, nsites): a lookup that found
	 * nothing, or that saw this change meanwhile, looks again */
	uint64_t sites_gen;
	/* bit i: the program closed fd EMBER_RT_FD0 + i, a file the runtime served (its entry
	 * cleared); the host closes it too before it serves the next call */
	uint64_t closed;
};

/* the start of each vCPU's area (EMBER_RT_CPU): what is per vCPU, or per the thread on it */
struct ember_rt_cpu {
	uint64_t self;	    /* the area's own address, for the entries: GS base is not readable */
	uint64_t saved_rsp; /* the program's stack pointer during a call */
	uint64_t site;	    /* the return address of the `call *%rax` being served; 0: bounced */
	uint64_t forward;   /* 1: hand the call to the host as the program made it, on leaving */
	uint64_t
	    bounce[3]; /* a bounced call returns to bounce[0], rsp bounce[1], flags bounce[2] */
	/* the call being served, as its number + 1, while the runtime serves one; 0 otherwise */
	uint64_t in_call;
	uint64_t tid;	  /* the thread on this vCPU (written by the host when it switches) */
	uint64_t sigmask; /* that thread's signal mask, which the runtime keeps (EMBER_RT_OWNED) */
	/* signals waiting for that thread (its own and the process's), written by the host: a
	 * mask change that would unblock one is handed to the host, which delivers it */
	uint64_t pending;
};
#define EMBER_RT_MAGIC	   0x454d4245525254ULL /* "EMBERRT" */
#define EMBER_RT_FPU_SAVED 0x4650555341564544ULL

/* The runtime's arena: ranges the host made writable for it, sorted, never overlapping. A USED
 * range is mapped as far as the program knows; a FREE one reads as zero; a DIRTY one was used
 * and is zeroed before it is handed out again. */
struct ember_rt_seg {
	uint64_t start, end, state;
};
enum { EMBER_RT_SEG_USED = 1, EMBER_RT_SEG_FREE = 2, EMBER_RT_SEG_DIRTY = 3 };

/* A file of the bundle open on fd EMBER_RT_FD0 + its index whose bytes are mapped read-only at
 * addr (its first byte) in the guest: the runtime serves read, pread64, readv and lseek there,
 * moving pos, and fstat (what differs between the bundle's files: ino, mode, mtime; the rest is
 * EMBER_RT_FILE_DEV's and the size's) and a terminal's ioctls (ENOTTY). addr 0: the host serves
 * it. The host publishes all but pos, takes pos back (checked) whenever it serves a call on the
 * file itself, and never reads the others back. */
struct ember_rt_file {
	uint64_t addr, size, pos;
	uint64_t ino;
	uint32_t mode, mtime_nsec;
	int64_t mtime_sec;
};
#define EMBER_RT_FILE_DEV 0xeb01 /* st_dev of every file of a bundle */
#define EMBER_GUEST_UID	  1000	 /* the uid and gid a program sees for itself and Ember's fds */
#endif

#endif

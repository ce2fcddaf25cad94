/* What the two machine backends share: the vm structure and the table of backend operations. */
#ifndef EMBER_VM_IMPL_H
#define EMBER_VM_IMPL_H

#include <pthread.h>
#include <signal.h>

#include "vm/vm.h"

/* The operations on one vCPU take its number; the others are the machine's. */
struct vm_ops {
	const char *name;
	int (*create)(struct vm *vm, char *err, size_t errlen);
	void (*destroy)(struct vm *vm);
	/* one more vCPU, number vm->ncpu; NULL where the backend runs one only */
	int (*add_cpu)(struct vm *vm, char *err, size_t errlen);
	void (*run)(struct vm *vm, int cpu, struct vm_exit *exit);
	int (*get_regs)(struct vm *vm, int cpu, struct vm_regs *r);
	int (*set_regs)(struct vm *vm, int cpu, const struct vm_regs *r);
	int (*set_fs_base)(struct vm *vm, int cpu, uint64_t base);
	int (*get_fs_base)(struct vm *vm, int cpu, uint64_t *base);
	int (*protect)(struct vm *vm, uint64_t addr, uint64_t len, int prot);
	/* room for a mapping of [addr, addr+len) (vm_reserve); NULL where none is needed */
	int (*reserve)(struct vm *vm, uint64_t addr, uint64_t len);
	/* the host is about to write [lo, hi) of the page tables (above user_top) through the
	 * accessor, with no vCPU running: what they map may be reached at the next run; NULL
	 * where nothing follows from that */
	void (*tables)(struct vm *vm, uint64_t lo, uint64_t hi);
	/* called from the timer's signal handler on the thread running cpu, or by a thread that
	 * signalled it: make the current run return soon */
	void (*kick)(struct vm *vm, int cpu);
	/* the extended FPU state (XSAVE layout), at most VM_FPU_MAX bytes */
	int (*get_fpu)(struct vm *vm, int cpu, void *buf, size_t *len);
	int (*set_fpu)(struct vm *vm, int cpu, const void *buf, size_t len);
	/* the guest's own userfaultfd, if its accesses do not go through vm->mem; -1 otherwise */
	int (*guest_uffd)(struct vm *vm);
	/* the guest's TSC; NULL when it is the host's own */
	int (*guest_tsc)(struct vm *vm, uint64_t *tsc);
	/* runs fn(arg) on the thread allowed to drive this machine's vCPU 0 */
	void (*call)(struct vm *vm, void (*fn)(void *), void *arg);
	int (*usable)(const struct vm *vm);
	/* CPU time of what runs the guest besides the caller's thread (ptrace: the stub and its
	 * tracer thread); NULL when that is the caller's thread itself (KVM) */
	uint64_t (*machine_cpu_ns)(struct vm *vm);
	/* the pages the guest wrote since the last call, one bit each, into bits (overwritten);
	 * NULL when the backend cannot tell */
	int (*dirty_log)(struct vm *vm, uint64_t *bits);
	/* dirty logging of guest memory on (1) or off (0) */
	int (*log_writes)(struct vm *vm, int on);
	/* the first run in [addr, end) of pages the guest may have used since they were last
	 * emptied (vm_next_used); NULL when the backend cannot tell (ptrace: the memfd is asked) */
	int (*next_used)(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);
	/* KVM's mappings of [lo, hi) gone: a hole now (not used any more), or new memory mapped
	 * there (written_too: nor written) */
	void (*forget_used)(struct vm *vm, uint64_t lo, uint64_t hi, int written_too);
	/* closes the guest's own userfaultfd if taken (vm_drop_uffds); NULL: none */
	void (*drop_uffd)(struct vm *vm);
	/* adds the backend's own mappings and descriptors (vm_host_hold) */
	void (*hold)(const struct vm *vm, struct vm_hold *h);
	/* 1 when the page certainly holds what it held at the last reset (vm_unwritten) */
	int (*unwritten)(struct vm *vm, uint64_t addr);
	/* every vCPU as at creation (vm_empty): 0 or -errno; NULL where it cannot be done */
	int (*empty)(struct vm *vm);
};

/* what every backend keeps per vCPU for the host's threads: who drives it, and its stops */
struct vm_cpu {
	pthread_t driver; /* the thread in vm_cpu_run, valid while driving */
	_Atomic int driving;
	_Atomic int kicked; /* vm_cpu_kick asked for the run to end */
	uint64_t slice;	    /* the run in progress ends at this time (0: no end but the deadline) */
};

enum { VM_RUN_SNAP, VM_RUN_FILE, VM_RUN_SHARED };
struct vm_range {
	uint64_t lo, hi;
	int file;  /* VM_RUN_*: a copy-on-write run, a snapshot's or a file's; or shared memory */
	int image; /* 1: of the image (vm->image_fd at the same offsets) */
};

struct vm_thread;
int vm_thread_start(struct vm_thread **out);
void vm_thread_call(struct vm_thread *t, void (*fn)(void *), void *arg);
void vm_thread_stop(struct vm_thread *t);

struct vm {
	const struct vm_ops *ops;
	enum vm_backend backend;
	int memfd;
	uint8_t *mem; /* host view of all guest RAM, MAP_SHARED from memfd */
	uint64_t mem_size;
	uint64_t user_top;
	uint64_t deadline;
	volatile sig_atomic_t expired;
	/* 1: the backend's run unblocks the deadline timer's signal (KVM_SET_SIGNAL_MASK) and
	 * takes it itself when its run is interrupted (vm_timer_fired); the thread keeps it
	 * blocked otherwise, so the timer may stay armed between runs (vm_timer.c) */
	int run_takes_timer;
	void *priv;    /* the backend's own state */
	int host_uffd; /* registered on vm->mem, made on first use */
	/* vm_cow.c: runs of guest memory mapped copy-on-write from a snapshot, sorted */
	struct vm_range *cow;
	size_t ncow, cow_cap;
	int files; /* some of them may be files' runs (vm_map_file) */
	/* a snapshot's image mapped over [0, user_top) (vm_map_image), the snapshot's descriptor,
	 * valid while the machine lives; -1: none */
	int image_fd;
	/* pages the host touched through the accessor since the last vm_take_written, and the
	 * bitmap that call returns; NULL when the backend cannot record the guest's writes */
	uint64_t *host_w, *written;
	/* pages made holes (vm_discard) since the last vm_written_done: changed without a write */
	uint64_t *holes;
	int logging; /* KVM's dirty log is on: vm_take_written can answer */
	int ncpu;    /* vCPUs made */
	struct vm_cpu cpu[VM_CPUS_MAX];
};

/* addr and len within guest RAM */
static inline int vm_in_ram(const struct vm *vm, uint64_t addr, uint64_t len)
{
	return addr <= vm->mem_size && len <= vm->mem_size - addr;
}

/* vm_cow.c */
/* [addr, addr + len) mapped from fd at off (fd -1: private anonymous memory), recorded as a run
 * of kind file (VM_RUN_*); budgeted: counted against the budget of mappings */
int vm_map_run(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off, int file,
	       int budgeted);
/* the index of the first copy-on-write run ending above addr */
size_t vm_cow_at(const struct vm *vm, uint64_t addr);
int vm_track_init(struct vm *vm);
void vm_track_free(struct vm *vm);
/* no copy-on-write run recorded, nothing marked written or a hole (vm_empty) */
void vm_track_clear(struct vm *vm);
void vm_mark_host(struct vm *vm, uint64_t addr, uint64_t len);
void vm_mark_hole(struct vm *vm, uint64_t lo, uint64_t hi);
/* fn over [lo, hi) cut where copy-on-write runs begin and end; cow says which a piece is */
typedef int (*vm_cow_fn)(struct vm *vm, uint64_t lo, uint64_t hi, int cow, void *ctx);
int vm_each_cow(struct vm *vm, uint64_t lo, uint64_t hi, vm_cow_fn fn, void *ctx);
/* the first copy-on-write run meeting [addr, end), clipped to it: 1, or 0 when none */
int vm_next_cow(const struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);
/* vm_next_data of the memfd alone (vm_data.c) */
int vm_memfd_next_data(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);
/* 1: the copy-on-write run at addr is the image's (vm_map_image); a discard of [lo, hi) in it */
int vm_image_piece(const struct vm *vm, uint64_t addr);
int vm_image_discard(struct vm *vm, uint64_t lo, uint64_t hi);

extern const struct vm_ops vm_kvm_ops;
extern const struct vm_ops vm_ptrace_ops;

/* page-table and descriptor-table set-up for the KVM backend (vm_x86.c) */
uint64_t vm_x86_pt_bytes(uint64_t mem_size);
void vm_x86_build(struct vm *vm);
/* sets the PTEs of [addr, addr+len); [*zap_lo, *zap_hi) grows to cover the pages that were
 * present and changed, which KVM may still hold cached */
int vm_x86_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot, uint64_t *zap_lo,
		   uint64_t *zap_hi);
/* the guest's accessed bits: the next run of used pages (with the host's marks), and forgetting */
int vm_x86_next_used(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);
void vm_x86_forget_used(struct vm *vm, uint64_t lo, uint64_t hi, int written_too);
int vm_x86_unwritten(struct vm *vm, uint64_t addr);

/* fills a VM_EXIT_FAULT for exception `vector` taken with the program's registers r (vm_fault.c) */
void vm_fault_name(struct vm *vm, unsigned vector, uint64_t cr2, const struct vm_regs *r,
		   struct vm_exit *e);

int vm_uffd_api(int fd);
/* this thread runs vCPU cpu of vm now, its run to end at slice (0: at the deadline only) */
void vm_timer_running(struct vm *vm, int cpu, uint64_t slice);
void vm_timer_forget(struct vm *vm);
/* the signal the deadline timer sends, and vm_cpu_kick too */
int vm_timer_signal(void);
/* what ends a run the timer's signal interrupted: 1 the deadline passed (vm->expired is set),
 * 2 the slice ended or the vCPU was kicked, 0 none: enter again */
enum { VM_STOP_NONE, VM_STOP_DEADLINE, VM_STOP_INTERRUPT };
/* why the run on cpu should stop now, without taking a signal (the backend's own check) */
int vm_stop_reason(struct vm *vm, int cpu);
/* for a machine whose run takes the timer (run_takes_timer): its run came back interrupted.
 * Takes the timer's signal if it is pending; then what vm_stop_reason says, the timer armed
 * again for what is left when it fired early */
int vm_timer_fired(struct vm *vm, int cpu);
int vm_fail(struct vm_exit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

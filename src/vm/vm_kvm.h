/* The KVM backend's shared pieces: its per-machine state and the register and run halves. */
#ifndef EMBER_VM_KVM_H
#define EMBER_VM_KVM_H

#include <linux/kvm.h>

#include "vm/vm_impl.h"

/* one vCPU: its file, its kvm_run, and the register cache of the thread driving it */
struct kvm_cpu {
	int fd;
	struct kvm_run *run;
	int sync_regs; /* KVM_CAP_SYNC_REGS: registers travel in kvm_run, no ioctl per exit */
	/* the program's registers, read once per exit and written back once before the next
	 * entry; after a fault they come from the exception frame, not the vCPU */
	struct vm_regs regs;
	int regs_valid, regs_dirty;
	/* 1: the vCPU is at CPL0 in Ember's handlers (vm_isr.S), after a fault report or stopped
	 * there by a signal: running it on finishes the handler; new registers enter CPL3 through
	 * its iretq. 0: at CPL3. -1: not known yet (read from RIP when needed) */
	int at_cpl0;
	/* VT-x/SVM: KVM completes the last `out` at the next entry by skipping it, if RIP is still
	 * out_rip then; new registers that happen to start there must not be skipped */
	int out_pending;
	uint64_t out_rip;
	uint64_t fs_base; /* MSR_FS_BASE as last written, valid when fs_known */
	int fs_known;
	int broken;   /* the vCPU shut down or failed: it is never entered again */
	int tss_type; /* of TR, as last set: X86_TSS_BUSY or X86_TSS_AVAIL */
	int index;    /* its number: which TSS, stacks and runtime area are its own */
	/* the guest's TSC is the host's plus tsc_off (KVM_VCPU_TSC_OFFSET, checked once against
	 * the MSR): 1 known, -1 not (read the MSR each time), 0 not asked yet */
	int tsc_known;
	uint64_t tsc_off;
};

/* the memory slots made so far (vm_kvm_slots.c), each a run of 2 MiB chunks of RAM */
struct kvm_slot {
	uint32_t lo, hi;
};
struct kvm_slots {
	uint8_t *in;	       /* per chunk: 1 when a slot covers it */
	uint8_t *want;	       /* per chunk: 1 when the page tables written since may map it */
	struct kvm_slot *slot; /* by slot number */
	uint32_t n, cap, nchunks, max;
	uint64_t bytes; /* of RAM the slots cover */
	int logging, init;
	_Atomic int pending; /* some chunk wants a slot */
	pthread_mutex_t lock;
};

struct kvm_vm {
	int kvm, vmfd;
	size_t run_size;
	struct kvm_cpu cpu[VM_CPUS_MAX];
	struct kvm_slots slots;
};

#define KV(vm)	  ((struct kvm_vm *)(vm)->priv)
#define KC(vm, i) (&KV(vm)->cpu[i])

/* vm_kvm_regs.c: a vCPU's general registers, raw (as KVM holds them now) or the program's */
int kvm_raw_get(struct kvm_cpu *c, struct kvm_regs *r);
int kvm_raw_set(struct kvm_cpu *c, const struct kvm_regs *r);
int kvm_get_regs(struct vm *vm, int cpu, struct vm_regs *r);
int kvm_set_regs(struct vm *vm, int cpu, const struct vm_regs *r);
/* before an entry: the cached registers to the vCPU; after an exit: the cache is stale */
int kvm_regs_flush(struct vm *vm, struct kvm_cpu *c);
void kvm_regs_exited(struct kvm_cpu *c);
/* KVM finishes the `out` it would skip at the next entry (out_pending), running nothing */
int kvm_retire_out(struct kvm_cpu *c);
/* the program's registers as an exception frame left them; the vCPU waits in the handler */
void kvm_regs_from_frame(struct kvm_cpu *c, const struct kvm_regs *raw, const uint64_t frame[8]);

/* vm_kvm_cpu.c: segments, control registers, GDT/IDT/TR (its own TSS), with TR of the given
 * type; CPUID as KVM supports it (the XCR0 it allows in *xcr0); XCR0; one MSR read or written
 * (set); the syscall entry's MSRs. 0, or -1 (kvm_msr: -errno) with err */
int kvm_set_sregs(struct kvm_cpu *c, int tss_type, char *err, size_t errlen);
int kvm_set_cpuid(struct kvm_vm *k, struct kvm_cpu *cpu, uint64_t *xcr0, char *err, size_t errlen);
int kvm_set_xcr0(struct kvm_cpu *k, uint64_t xcr0, char *err, size_t errlen);
int kvm_msr(struct kvm_cpu *c, uint32_t index, uint64_t *val, int set);
int kvm_set_lstar(struct kvm_cpu *c, char *err, size_t errlen);
/* the vCPU as open_cpu left it, for another program (vm_empty): no event pending, registers
 * zero, segments and control registers set again (FS base 0), the FPU in its initial state;
 * XCR0, CPUID and LSTAR stay, which CPL3 cannot change. 0 or -errno */
int kvm_cpu_empty(struct kvm_cpu *c);

/* vm_kvm_slots.c: slots for the chunks of the SYS area and the page tables (init); for every
 * chunk meeting [lo, hi) (cover, before a mapping is made there); the chunks the page tables
 * written in [lo, hi) describe, made at the next run (tables, then sync); dirty logging of every
 * slot on or off, and the log of all of them, one bit a page of RAM. 0 or -errno */
int kvm_slots_init(struct vm *vm);
void kvm_slots_free(struct kvm_vm *k);
int kvm_slots_cover(struct vm *vm, uint64_t lo, uint64_t hi);
void kvm_slots_tables(struct vm *vm, uint64_t lo, uint64_t hi);
int kvm_slots_sync(struct vm *vm);
int kvm_slots_log(struct vm *vm, int on);
int kvm_slots_dirty(struct vm *vm, uint64_t *bits);

/* vm_kvm_run.c */
void kvm_run(struct vm *vm, int cpu, struct vm_exit *e);
/* Two things found once per process by running one `out` at CPL3 on the first machine made,
 * and applied to every machine: whether KVM_EXIT_IO leaves RIP past the `out` (PVM) or at it
 * (VT-x, SVM), and which TSS type TR needs for the I/O bitmap to be honoured: busy, as LTR
 * leaves it and VT-x demands, or available, which QEMU's emulation of SVM insists on. */
int kvm_probe_out(struct vm *vm, struct kvm_cpu *c, char *err, size_t errlen);
/* the TSS type found so far (busy until a probe finds otherwise) */
int kvm_tss_type(void);

#endif

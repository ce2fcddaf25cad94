/* The KVM backend's run loop: its exits by table, hypercalls, and faults the handlers report. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "vm/vm_kvm.h"
#include "vm/vm_x86.h"

extern const uint8_t vm_isr_start[], vm_isr_out[];

/* 1 where KVM_EXIT_IO leaves RIP past the `out` (PVM completes it by emulation), 0 where it
 * stays at it until the next KVM_RUN (VT-x, SVM); -1 until kvm_probe_out ran */
static int out_past = -1;
static int tss_type = X86_TSS_BUSY;
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;

/* A fault with the program's registers as they are (no exception frame), for exits KVM has not
 * finished with: an `in`, a string or wide `out`, an MMIO access. KVM would complete the
 * instruction at the next entry, after the new registers, undoing the reset or writing guest
 * memory after it: such a vCPU is never entered again. */
static int fault_unfinished(struct vm *vm, struct kvm_cpu *c, struct vm_exit *e, unsigned vector)
{
	struct vm_regs r;
	int rc = kvm_get_regs(vm, c->index, &r);
	c->broken = 1;
	if (rc)
		return vm_fail(e, "KVM_GET_REGS: %s", strerror(-rc)), 1;
	vm_fault_name(vm, vector, 0, &r, e);
	return 1;
}

/* an exception handler's report: the frame on its stack, CR2 in rax (vm_isr.S) */
static int handler_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	const uint64_t out_at = X86_ISR + (uint64_t)(vm_isr_out - vm_isr_start);
	struct kvm_regs raw;
	uint64_t f[8];
	if (kvm_raw_get(k, &raw) || (raw.rip != out_at && raw.rip != out_at + 2) ||
	    vm_copy_from(vm, f, raw.rsp, sizeof(f))) {
		k->broken = 1;
		return vm_fail(e, "an exception report from outside the handlers (rip %#llx)",
			       (unsigned long long)raw.rip),
		       1;
	}
	if (raw.rip == out_at) { /* run on, the handler returns to the faulting instruction */
		raw.rip += EMBER_HC_LEN; /* the `out` to X86_PORT_FAULT */
		k->out_pending = 1;
		k->out_rip = out_at;
		int rc = kvm_raw_set(k, &raw);
		if (rc)
			return vm_fail(e, "KVM_SET_REGS: %s", strerror(-rc)), 1;
	}
	kvm_regs_from_frame(k, &raw, f);
	struct vm_regs r;
	kvm_get_regs(vm, k->index, &r);
	vm_fault_name(vm, (unsigned)f[1], raw.rax, &r, e);
	if ((f[4] & 3) != 3) {
		/* an exception in Ember's own CPL0 code: nothing of it is the program's */
		k->broken = 1;
		return vm_fail(e, "exception %u at CPL0, rip %#llx", (unsigned)f[1],
			       (unsigned long long)f[3]),
		       1;
	}
	return 1;
}

/* `out %al,$port` (e6 port) to one of Ember's ports is a hypercall; rip ends past it */
static int io_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	const struct kvm_run *run = k->run;
	if (run->io.port == X86_PORT_FAULT && run->io.direction == KVM_EXIT_IO_OUT)
		return handler_exit(vm, k, e);
	struct vm_regs r;
	int rc = kvm_get_regs(vm, k->index, &r);
	if (rc)
		return vm_fail(e, "KVM_GET_REGS: %s", strerror(-rc)), 1;
	uint64_t at = out_past == 1 ? r.rip - EMBER_HC_LEN : r.rip;
	if (run->io.direction != KVM_EXIT_IO_OUT || run->io.count != 1 || run->io.size != 1 ||
	    vm_hypercall_at(vm, at) != run->io.port)
		return fault_unfinished(vm, k, e, 13); /* `in`, a string or wider `out` */
	if (out_past != 1) {
		/* moved by us, so the state seen (and snapshotted) at a hypercall is the state
		 * after it, as on ptrace; KVM then skips nothing on the next entry unless RIP is
		 * set back to the `out` (kvm_regs_flush sees to that) */
		r.rip += EMBER_HC_LEN;
		kvm_set_regs(vm, k->index, &r);
		k->out_pending = 1;
		k->out_rip = at;
	}
	e->kind = VM_EXIT_HYPERCALL;
	e->port = run->io.port;
	e->rip = r.rip;
	return 1;
}

/* Where the handlers could not run. PVM keeps the first exception in the vCPU events; AMD SVM
 * re-initialises the vCPU after a triple fault (RIP 0xfff0, paging off), leaving nothing to
 * name. Either way the vCPU is not entered again. */
static int shutdown_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	k->broken = 1;
	struct vm_regs r;
	struct kvm_sregs sr;
	struct kvm_vcpu_events ev;
	if (kvm_get_regs(vm, k->index, &r) || ioctl(k->fd, KVM_GET_SREGS, &sr) < 0 ||
	    ioctl(k->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return vm_fail(e, "reading the vCPU after a shutdown failed"), 1;
	vm_fault_name(vm, 8, 0, &r, e); /* a triple fault */
	if ((sr.cr0 & X86_CR0_PG) && sr.cs.selector == X86_SEL_UCODE)
		vm_fault_name(vm, ev.exception.nr, sr.cr2, &r, e);
	return 1;
}

static int hlt_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	/* only CPL0 halts, and no code of the program's runs there */
	return fault_unfinished(vm, k, e, 13);
}

static int mmio_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	int done = fault_unfinished(vm, k, e, 14);
	e->addr = k->run->mmio.phys_addr;
	return done;
}

/* the vCPU is in an exception handler, before its report: the program's registers are half
 * on the handler's stack, and the report (one exit) is a few instructions away */
static int reporting(struct kvm_cpu *k)
{
	struct kvm_regs raw;
	const uint64_t out_at = X86_ISR + (uint64_t)(vm_isr_out - vm_isr_start);
	return kvm_raw_get(k, &raw) == 0 && raw.rip >= X86_ISR && raw.rip <= out_at;
}

/* An exception the vCPU was delivering when a signal stopped it (a fault of the host's page
 * tables on the way to the handler: SVM's exit_int_info) stays in KVM, which injects it at the
 * next entry into whatever registers the vCPU holds then: another thread's, or a reset's, which
 * would take the fault for its own (a page fault at the first thread's address, with the second
 * one's RIP). 1 while one is in flight (with drop: it was, and is dropped), 0, or -errno. */
static int in_flight(struct kvm_cpu *k, int drop)
{
	struct kvm_vcpu_events ev;
	if (ioctl(k->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return -errno;
	if (!ev.exception.injected && !ev.exception.pending)
		return 0;
	if (drop) {
		ev.exception.injected = ev.exception.pending = 0;
		ev.exception.has_error_code = 0;
		ev.exception.error_code = 0;
		ev.flags = 0; /* the NMI's pending state, SIPI, shadow and SMM as they are */
		if (ioctl(k->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
			return -errno;
	}
	return 1;
}

/* a signal interrupted the run: the deadline's, the end of a slice, a kick, or someone else's */
static int intr_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	int why = vm->run_takes_timer ? vm_timer_fired(vm, k->index) : vm_stop_reason(vm, k->index);
	if (why == VM_STOP_NONE)
		return 0; /* enter again */
	/* a slice's end or a kick waits for the report, which ends the run: stopped now, the
	 * thread's registers would be the handler's (a snapshot resumed it at CPL3 there); so
	 * does one stopped on its way to the handler. The deadline ends the run: what the vCPU
	 * was delivering is dropped, for the next registers it holds are a reset's */
	int flying = in_flight(k, why == VM_STOP_DEADLINE);
	if (flying < 0) {
		k->broken = 1;
		return vm_fail(e, "reading the vCPU's events: %s", strerror(-flying)), 1;
	}
	if (why == VM_STOP_INTERRUPT && (flying || reporting(k)))
		return 0;
	e->kind = why == VM_STOP_DEADLINE ? VM_EXIT_TIMEOUT : VM_EXIT_INTERRUPT;
	return 1;
}

static int fail_entry_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	(void)vm;
	k->broken = 1;
	return vm_fail(e, "KVM could not enter the guest (hardware reason %#llx)",
		       (unsigned long long)k->run->fail_entry.hardware_entry_failure_reason),
	       1;
}

static int internal_exit(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e)
{
	(void)vm;
	k->broken = 1;
	return vm_fail(e, "KVM internal error %u", k->run->internal.suberror), 1;
}

/* each returns 1 when the run ends with e filled, 0 to enter the guest again */
static const struct {
	uint32_t reason;
	int (*fn)(struct vm *vm, struct kvm_cpu *k, struct vm_exit *e);
} exits[] = {
    {KVM_EXIT_IO, io_exit},
    {KVM_EXIT_SHUTDOWN, shutdown_exit},
    {KVM_EXIT_HLT, hlt_exit},
    {KVM_EXIT_MMIO, mmio_exit},
    {KVM_EXIT_INTR, intr_exit},
    {KVM_EXIT_FAIL_ENTRY, fail_entry_exit},
    {KVM_EXIT_INTERNAL_ERROR, internal_exit},
};

void kvm_run(struct vm *vm, int cpu, struct vm_exit *e)
{
	struct kvm_cpu *k = KC(vm, cpu);
	if (k->broken) {
		vm_fail(e, "the vCPU shut down earlier and is not entered again");
		return;
	}
	int rc = kvm_regs_flush(vm, k);
	if (rc) {
		vm_fail(e, "setting the vCPU registers: %s", strerror(-rc));
		return;
	}
	if ((rc = kvm_slots_sync(vm))) {
		vm_fail(e, "a memory slot for the page tables put back: %s", strerror(-rc));
		return;
	}
	for (;;) {
		rc = ioctl(k->fd, KVM_RUN, 0);
		int err = errno;
		kvm_regs_exited(k);
		if (rc < 0 && (err == EINTR || err == EAGAIN)) {
			k->run->immediate_exit = 0;
			if (intr_exit(vm, k, e))
				return;
			continue;
		}
		if (rc < 0) {
			k->broken = 1;
			vm_fail(e, "KVM_RUN: %s", strerror(err));
			return;
		}
		size_t i = 0;
		while (i < sizeof(exits) / sizeof(exits[0]) &&
		       exits[i].reason != k->run->exit_reason)
			i++;
		if (i == sizeof(exits) / sizeof(exits[0])) {
			k->broken = 1;
			vm_fail(e, "unexpected KVM exit reason %u", k->run->exit_reason);
			return;
		}
		if (exits[i].fn(vm, k, e))
			return;
	}
}

/* One `out` at CPL3 from a scratch page of the fresh machine, which is then put back as it was:
 * 0 with out_past found, 1 when the `out` was refused (an exception handler reported it), -1 */
static int probe(struct vm *vm, struct kvm_cpu *k, char *err, size_t errlen)
{
	const uint64_t page = EMBER_IMAGE_BASE;
	const uint8_t code[] = {EMBER_HC_OPCODE, EMBER_HC_NOP}; /* out %al,$EMBER_HC_NOP */
	uint64_t lo = 0, hi = 0;
	int rc = kvm_slots_cover(vm, page, page + EMBER_PAGE_SIZE);
	if (rc)
		return snprintf(err, errlen, "a memory slot for the probe: %s", strerror(-rc)), -1;
	vm_x86_protect(vm, page, EMBER_PAGE_SIZE, PROT_READ | PROT_EXEC, &lo, &hi);
	memcpy(vm->mem + page, code, sizeof(code));
	struct kvm_regs saved, kr;
	rc = kvm_raw_get(k, &saved);
	kr = saved;
	kr.rip = page;
	kr.rflags = X86_RFLAGS_FIXED;
	if (!rc)
		rc = kvm_raw_set(k, &kr);
	while (!rc && (rc = ioctl(k->fd, KVM_RUN, 0) < 0 ? -errno : 0) == -EINTR)
		rc = 0; /* a signal meant for someone else */
	if (!rc)
		rc = kvm_raw_get(k, &kr);
	uint32_t reason = k->run->exit_reason;
	uint16_t port = k->run->io.port;
	/* VT-x and SVM complete the `out` at the next entry: let that happen now, not at the
	 * first real run, which might start at the same address */
	k->run->immediate_exit = 1;
	ioctl(k->fd, KVM_RUN, 0);
	k->run->immediate_exit = 0;
	vm_x86_protect(vm, page, EMBER_PAGE_SIZE, 0, &lo, &hi);
	vm_discard(vm, page, EMBER_PAGE_SIZE); /* zero again, and gone from KVM's mappings */
	if (rc)
		return snprintf(err, errlen, "probing KVM's I/O exits: %s", strerror(-rc)), -1;
	if (reason == KVM_EXIT_IO && port == X86_PORT_FAULT)
		return 1;
	if (reason != KVM_EXIT_IO || port != EMBER_HC_NOP ||
	    (kr.rip != page && kr.rip != page + EMBER_HC_LEN))
		return snprintf(err, errlen,
				"probing KVM's I/O exits: exit reason %u at rip %#llx, not an out",
				reason, (unsigned long long)kr.rip),
		       -1;
	out_past = kr.rip == page + EMBER_HC_LEN;
	kvm_regs_exited(k);
	return kvm_raw_set(k, &saved) ? (snprintf(err, errlen, "KVM_SET_REGS failed"), -1) : 0;
}

int kvm_tss_type(void)
{
	pthread_mutex_lock(&probe_mu);
	int t = tss_type;
	pthread_mutex_unlock(&probe_mu);
	return t;
}

int kvm_probe_out(struct vm *vm, struct kvm_cpu *k, char *err, size_t errlen)
{
	pthread_mutex_lock(&probe_mu);
	int rc = 0;
	if (out_past < 0 && (rc = probe(vm, k, err, errlen)) == 1) {
		tss_type = X86_TSS_AVAIL;
		if (!(rc = kvm_set_sregs(k, tss_type, err, errlen)) &&
		    (rc = probe(vm, k, err, errlen)) == 1) {
			snprintf(err, errlen,
				 "KVM refuses `out` at CPL3 through the TSS's I/O bitmap, "
				 "with either TSS type");
			rc = -1;
		}
	}
	/* a machine made while another probed may have the other type */
	if (!rc && k->tss_type != tss_type)
		rc = kvm_set_sregs(k, tss_type, err, errlen);
	pthread_mutex_unlock(&probe_mu);
	return rc;
}

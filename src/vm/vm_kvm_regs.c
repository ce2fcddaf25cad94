/* The KVM backend's registers: through kvm_run at each exit, and to CPL3 from a handler. */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm/vm_kvm.h"
#include "vm/vm_x86.h"

extern const uint8_t vm_isr_start[], vm_isr_iret[];

/* the flags a program may hold: those Linux restores from a signal frame, plus IF and ID. IOPL
 * stays 0, so the TSS bitmap alone decides which ports CPL3 may use, on every platform; a
 * VM flag from a damaged snapshot would make the entry fail */
#define USER_FLAGS 0x250fd5ULL

/* RIP in the handlers' page: the vCPU runs Ember's code at CPL0 (only CPL0 can run there) */
static int in_isr(uint64_t rip)
{
	return rip >= X86_ISR && rip < X86_ISR + EMBER_PAGE_SIZE;
}

int kvm_raw_get(struct kvm_cpu *c, struct kvm_regs *r)
{
	if (c->sync_regs) {
		*r = c->run->s.regs.regs;
		return 0;
	}
	return ioctl(c->fd, KVM_GET_REGS, r) < 0 ? -errno : 0;
}

/* with KVM_CAP_SYNC_REGS the registers are copied in at the next KVM_RUN: no ioctl */
int kvm_raw_set(struct kvm_cpu *c, const struct kvm_regs *r)
{
	if (c->sync_regs) {
		c->run->s.regs.regs = *r;
		c->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		return 0;
	}
	return ioctl(c->fd, KVM_SET_REGS, r) < 0 ? -errno : 0;
}

static void from_kvm(struct vm_regs *r, const struct kvm_regs *kr)
{
	*r = (struct vm_regs){kr->rax, kr->rbx, kr->rcx, kr->rdx, kr->rsi, kr->rdi,
			      kr->rsp, kr->rbp, kr->r8,	 kr->r9,  kr->r10, kr->r11,
			      kr->r12, kr->r13, kr->r14, kr->r15, kr->rip, kr->rflags};
}

static void to_kvm(struct kvm_regs *kr, const struct vm_regs *r)
{
	*kr = (struct kvm_regs){
	    .rax = r->rax,
	    .rbx = r->rbx,
	    .rcx = r->rcx,
	    .rdx = r->rdx,
	    .rsi = r->rsi,
	    .rdi = r->rdi,
	    .rsp = r->rsp,
	    .rbp = r->rbp,
	    .r8 = r->r8,
	    .r9 = r->r9,
	    .r10 = r->r10,
	    .r11 = r->r11,
	    .r12 = r->r12,
	    .r13 = r->r13,
	    .r14 = r->r14,
	    .r15 = r->r15,
	    .rip = r->rip,
	    .rflags = (r->rflags & USER_FLAGS) | X86_RFLAGS_FIXED,
	};
}

int kvm_get_regs(struct vm *vm, int cpu, struct vm_regs *r)
{
	struct kvm_cpu *c = KC(vm, cpu);
	if (!c->regs_valid) {
		struct kvm_regs kr;
		int rc = kvm_raw_get(c, &kr);
		if (rc)
			return rc;
		from_kvm(&c->regs, &kr);
		c->regs_valid = 1;
	}
	*r = c->regs;
	return 0;
}

int kvm_set_regs(struct vm *vm, int cpu, const struct vm_regs *r)
{
	struct kvm_cpu *c = KC(vm, cpu);
	c->regs = *r;
	c->regs_valid = 1;
	c->regs_dirty = 1;
	return 0;
}

/* Lets KVM finish the `out` it would skip at the next entry, so that the skip lands on the old
 * state and not on new registers that start at the same address. */
int kvm_retire_out(struct kvm_cpu *c)
{
	c->run->immediate_exit = 1;
	int rc = ioctl(c->fd, KVM_RUN, 0) < 0 && errno != EINTR ? -errno : 0;
	c->run->immediate_exit = 0;
	c->out_pending = 0;
	return rc;
}

int kvm_regs_flush(struct vm *vm, struct kvm_cpu *c)
{
	if (!c->regs_dirty)
		return 0;
	struct kvm_regs kr;
	int rc;
	if (c->at_cpl0 < 0) {
		if ((rc = kvm_raw_get(c, &kr)))
			return rc;
		c->at_cpl0 = in_isr(kr.rip);
	}
	to_kvm(&kr, &c->regs);
	if (c->at_cpl0) {
		/* the vCPU is at CPL0: the handler's iretq takes it to the new state at CPL3 */
		const uint64_t frame[5] = {kr.rip, X86_SEL_UCODE, kr.rflags, kr.rsp, X86_SEL_UDATA};
		const uint64_t top = X86_STACK0(c->index);
		if (vm_copy_to(vm, top - sizeof(frame), frame, sizeof(frame)))
			return -EFAULT;
		kr.rip = X86_ISR + (uint64_t)(vm_isr_iret - vm_isr_start);
		kr.rsp = top - sizeof(frame);
		kr.rflags = X86_RFLAGS_FIXED;
	}
	if (c->out_pending && kr.rip == c->out_rip && (rc = kvm_retire_out(c)))
		return rc;
	if ((rc = kvm_raw_set(c, &kr)))
		return rc;
	c->regs_dirty = 0;
	c->at_cpl0 = 0;
	return 0;
}

void kvm_regs_exited(struct kvm_cpu *c)
{
	c->out_pending = 0;
	/* stopped on the handlers' iretq that new registers go through (a kick came first):
	 * nothing ran, the registers the host set are the program's still; read from the vCPU
	 * they would be the handler's, which a thread taken off it, or a snapshot, would keep */
	if (c->regs_valid && c->sync_regs &&
	    c->run->s.regs.regs.rip == X86_ISR + (uint64_t)(vm_isr_iret - vm_isr_start)) {
		c->at_cpl0 = 1;
		return;
	}
	c->regs_valid = 0;
	/* a signal may stop the vCPU anywhere, the handlers included */
	c->at_cpl0 = c->sync_regs ? in_isr(c->run->s.regs.regs.rip) : -1;
}

void kvm_regs_from_frame(struct kvm_cpu *c, const struct kvm_regs *raw, const uint64_t frame[8])
{
	from_kvm(&c->regs, raw);
	c->regs.rax = frame[0];
	c->regs.rip = frame[3];
	c->regs.rflags = frame[5];
	c->regs.rsp = frame[6];
	c->regs_valid = 1;
	c->regs_dirty = 0;
	c->at_cpl0 = 1;
}

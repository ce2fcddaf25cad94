/* The KVM backend: a VM and one vCPU put straight into 64-bit mode at CPL3, no guest kernel. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm/vm_impl.h"
#include "vm/vm_x86.h"

struct kvm_vm {
	int kvm, vmfd, vcpufd;
	struct kvm_run *run;
	size_t run_size;
	int need_flush;	   /* a permission was taken away: reload CR3 before the next entry */
	uint64_t cr2_seen; /* CR2 before this run, to tell a page fault from other faults */
	/* register cache: read once per exit, written back once before the next entry */
	struct vm_regs regs;
	int regs_valid, regs_dirty;
};

#define KV(vm) ((struct kvm_vm *)(vm)->priv)

static int set_cpuid(struct kvm_vm *k, uint64_t *xcr0, char *err, size_t errlen)
{
	struct kvm_cpuid2 *c = NULL;
	/* the table size is not known in advance: grow until it fits (E2BIG) */
	for (int n = 128; n <= 4096; n *= 2) {
		free(c);
		c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->entries[0]));
		if (!c)
			return snprintf(err, errlen, "out of memory"), -1;
		c->nent = (uint32_t)n;
		if (ioctl(k->kvm, KVM_GET_SUPPORTED_CPUID, c) == 0)
			break;
		if (errno != E2BIG || n == 4096) {
			snprintf(err, errlen, "KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
			free(c);
			return -1;
		}
	}
	*xcr0 = 0x3; /* x87 and SSE always */
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == 0xd && c->entries[i].index == 0)
			*xcr0 = c->entries[i].eax & 0x7; /* x87, SSE, AVX where supported */
	int rc = ioctl(k->vcpufd, KVM_SET_CPUID2, c);
	if (rc < 0)
		snprintf(err, errlen, "KVM_SET_CPUID2: %s", strerror(errno));
	free(c);
	return rc < 0 ? -1 : 0;
}

static void user_seg(struct kvm_segment *s, uint16_t sel, int code)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = code ? 0xb : 0x3;
	s->present = 1;
	s->dpl = 3;
	s->s = 1;
	s->l = code ? 1 : 0;
	s->db = code ? 0 : 1;
	s->g = 1;
}

static int set_sregs(struct kvm_vm *k, char *err, size_t errlen)
{
	struct kvm_sregs sr;
	if (ioctl(k->vcpufd, KVM_GET_SREGS, &sr) < 0)
		return snprintf(err, errlen, "KVM_GET_SREGS: %s", strerror(errno)), -1;
	user_seg(&sr.cs, X86_SEL_UCODE, 1);
	user_seg(&sr.ds, X86_SEL_UDATA, 0);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	memset(&sr.tr, 0, sizeof(sr.tr));
	sr.tr.base = X86_TSS;
	sr.tr.limit = X86_TSS_LIMIT;
	sr.tr.selector = X86_SEL_TSS;
	sr.tr.type = 0xb;
	sr.tr.present = 1;
	memset(&sr.ldt, 0, sizeof(sr.ldt));
	sr.ldt.unusable = 1;
	sr.gdt.base = X86_GDT;
	sr.gdt.limit = 4095;
	sr.idt.base = X86_IDT;
	sr.idt.limit = 0; /* no handlers: any exception ends in a triple fault, seen as SHUTDOWN */
	sr.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_AM |
		 X86_CR0_PG;
	sr.cr3 = X86_PML4;
	sr.cr4 = X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT | X86_CR4_OSXSAVE;
	/* no EFER.SCE: a stray `syscall` raises #UD instead of entering a kernel that is not there
	 */
	sr.efer = X86_EFER_LME | X86_EFER_LMA | X86_EFER_NXE;
	if (ioctl(k->vcpufd, KVM_SET_SREGS, &sr) < 0)
		return snprintf(err, errlen, "KVM_SET_SREGS: %s", strerror(errno)), -1;
	return 0;
}

static int set_xcr0(struct kvm_vm *k, uint64_t xcr0, char *err, size_t errlen)
{
	struct kvm_xcrs x;
	memset(&x, 0, sizeof(x));
	x.nr_xcrs = 1;
	x.xcrs[0].xcr = 0;
	x.xcrs[0].value = xcr0;
	if (ioctl(k->vcpufd, KVM_SET_XCRS, &x) < 0)
		return snprintf(err, errlen, "KVM_SET_XCRS: %s", strerror(errno)), -1;
	return 0;
}

static int kvm_create(struct vm *vm, char *err, size_t errlen)
{
	struct kvm_vm *k = calloc(1, sizeof(*k));
	if (!k)
		return snprintf(err, errlen, "out of memory"), VM_ERR;
	k->kvm = k->vmfd = k->vcpufd = -1;
	vm->priv = k;
	k->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->kvm < 0) {
		snprintf(err, errlen, "no KVM: /dev/kvm: %s", strerror(errno));
		return VM_ENOKVM;
	}
	if (ioctl(k->kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		snprintf(err, errlen, "no KVM: unexpected KVM API version");
		return VM_ENOKVM;
	}
	k->vmfd = ioctl(k->kvm, KVM_CREATE_VM, 0);
	if (k->vmfd < 0) {
		snprintf(err, errlen, "no KVM: KVM_CREATE_VM: %s", strerror(errno));
		return VM_ENOKVM;
	}
	/* only used for real-mode emulation on Intel, which never happens here; set it anyway as
	 * every VMM does, out of the way above guest RAM */
	ioctl(k->vmfd, KVM_SET_TSS_ADDR, 0xfffbd000UL);
	struct kvm_userspace_memory_region r = {
	    .slot = 0,
	    .guest_phys_addr = 0,
	    .memory_size = vm->mem_size,
	    .userspace_addr = (uint64_t)(uintptr_t)vm->mem,
	};
	if (ioctl(k->vmfd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
		return snprintf(err, errlen, "KVM_SET_USER_MEMORY_REGION: %s", strerror(errno)),
		       VM_ERR;
	k->vcpufd = ioctl(k->vmfd, KVM_CREATE_VCPU, 0);
	if (k->vcpufd < 0)
		return snprintf(err, errlen, "KVM_CREATE_VCPU: %s", strerror(errno)), VM_ERR;
	int sz = ioctl(k->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz <= 0)
		return snprintf(err, errlen, "KVM_GET_VCPU_MMAP_SIZE failed"), VM_ERR;
	k->run_size = (size_t)sz;
	k->run = mmap(NULL, k->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->vcpufd, 0);
	if (k->run == MAP_FAILED) {
		k->run = NULL;
		return snprintf(err, errlen, "mmap kvm_run: %s", strerror(errno)), VM_ERR;
	}
	vm_x86_build(vm);
	uint64_t xcr0;
	if (set_cpuid(k, &xcr0, err, errlen) || set_sregs(k, err, errlen) ||
	    set_xcr0(k, xcr0, err, errlen))
		return VM_ERR;
	return VM_OK;
}

static void kvm_destroy(struct vm *vm)
{
	struct kvm_vm *k = KV(vm);
	if (!k)
		return;
	if (k->run)
		munmap(k->run, k->run_size);
	if (k->vcpufd >= 0)
		close(k->vcpufd);
	if (k->vmfd >= 0)
		close(k->vmfd);
	if (k->kvm >= 0)
		close(k->kvm);
	free(k);
	vm->priv = NULL;
}

static int raw_get_regs(struct vm *vm, struct vm_regs *r)
{
	struct kvm_regs kr;
	if (ioctl(KV(vm)->vcpufd, KVM_GET_REGS, &kr) < 0)
		return -errno;
	*r = (struct vm_regs){kr.rax, kr.rbx, kr.rcx, kr.rdx, kr.rsi, kr.rdi,
			      kr.rsp, kr.rbp, kr.r8,  kr.r9,  kr.r10, kr.r11,
			      kr.r12, kr.r13, kr.r14, kr.r15, kr.rip, kr.rflags};
	return 0;
}

static int raw_set_regs(struct vm *vm, const struct vm_regs *r)
{
	struct kvm_regs kr = {
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
	    /* IOPL 3 so `out` is allowed at CPL3 on VT-x/SVM (PVM exits either way) */
	    .rflags = (r->rflags & ~0x3000ULL) | X86_RFLAGS_FIXED | X86_RFLAGS_IOPL3,
	};
	return ioctl(KV(vm)->vcpufd, KVM_SET_REGS, &kr) < 0 ? -errno : 0;
}

static int kvm_get_regs(struct vm *vm, struct vm_regs *r)
{
	struct kvm_vm *k = KV(vm);
	if (!k->regs_valid) {
		int rc = raw_get_regs(vm, &k->regs);
		if (rc)
			return rc;
		k->regs_valid = 1;
	}
	*r = k->regs;
	return 0;
}

static int kvm_set_regs(struct vm *vm, const struct vm_regs *r)
{
	struct kvm_vm *k = KV(vm);
	k->regs = *r;
	k->regs_valid = 1;
	k->regs_dirty = 1;
	return 0;
}

static int flush_regs(struct vm *vm, struct vm_exit *e)
{
	struct kvm_vm *k = KV(vm);
	if (k->regs_dirty && raw_set_regs(vm, &k->regs) < 0)
		return vm_fail(e, "KVM_SET_REGS: %s", strerror(errno));
	k->regs_dirty = 0;
	k->regs_valid = 0;
	return 0;
}

static int kvm_msr(struct vm *vm, uint32_t index, uint64_t *val, int set)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m;
	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = 1;
	m.e.index = index;
	m.e.data = *val;
	int rc = ioctl(KV(vm)->vcpufd, set ? KVM_SET_MSRS : KVM_GET_MSRS, &m);
	if (rc != 1)
		return rc < 0 ? -errno : -EIO;
	*val = m.e.data;
	return 0;
}

/* FS base through the MSR, never KVM_SET_SREGS: that would drop the shadow page tables */
static int kvm_set_fs_base(struct vm *vm, uint64_t base)
{
	return kvm_msr(vm, X86_MSR_FS_BASE, &base, 1);
}

static int kvm_get_fs_base(struct vm *vm, uint64_t *base)
{
	*base = 0;
	return kvm_msr(vm, X86_MSR_FS_BASE, base, 0);
}

static int kvm_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot)
{
	return vm_x86_protect(vm, addr, len, prot, &KV(vm)->need_flush);
}

static void kvm_kick(struct vm *vm)
{
	struct kvm_vm *k = KV(vm);
	if (k && k->run)
		k->run->immediate_exit = 1;
}

static int flush_tlb(struct kvm_vm *k, struct vm_exit *e)
{
	struct kvm_sregs sr;
	if (ioctl(k->vcpufd, KVM_GET_SREGS, &sr) < 0 || ioctl(k->vcpufd, KVM_SET_SREGS, &sr) < 0)
		return vm_fail(e, "reloading CR3: %s", strerror(errno));
	k->cr2_seen = sr.cr2;
	k->need_flush = 0;
	return 0;
}

static void shutdown_exit(struct vm *vm, struct vm_exit *e)
{
	struct kvm_vm *k = KV(vm);
	struct kvm_sregs sr;
	struct vm_regs r;
	if (ioctl(k->vcpufd, KVM_GET_SREGS, &sr) < 0 || kvm_get_regs(vm, &r) < 0) {
		vm_fail(e, "reading state after a triple fault: %s", strerror(errno));
		return;
	}
	/* no handlers: the exception became a triple fault with RIP still at the instruction and,
	 * for a page fault, CR2 holding the address */
	int page_fault = sr.cr2 != k->cr2_seen;
	e->kind = VM_EXIT_FAULT;
	e->rip = r.rip;
	e->addr = sr.cr2;
	e->fault = vm_fault_classify(vm, r.rip, page_fault);
	k->cr2_seen = sr.cr2;
}

static void kvm_run_once(struct vm *vm, struct vm_exit *e)
{
	struct kvm_vm *k = KV(vm);
	if (flush_regs(vm, e) || (k->need_flush && flush_tlb(k, e)))
		return;
	for (;;) {
		int rc = ioctl(k->vcpufd, KVM_RUN, 0);
		if (rc < 0 && (errno == EINTR || errno == EAGAIN)) {
			k->run->immediate_exit = 0;
			if (vm->expired) {
				e->kind = VM_EXIT_TIMEOUT;
				return;
			}
			continue;
		}
		if (rc < 0) {
			vm_fail(e, "KVM_RUN: %s", strerror(errno));
			return;
		}
		struct kvm_run *run = k->run;
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			if (run->io.direction != KVM_EXIT_IO_OUT) {
				e->kind = VM_EXIT_FAULT;
				e->fault = VM_FAULT_GP;
				return;
			}
			e->kind = VM_EXIT_HYPERCALL;
			e->port = run->io.port;
			return;
		case KVM_EXIT_SHUTDOWN:
			shutdown_exit(vm, e);
			return;
		case KVM_EXIT_INTR:
			if (vm->expired) {
				e->kind = VM_EXIT_TIMEOUT;
				return;
			}
			continue;
		case KVM_EXIT_HLT:
			e->kind = VM_EXIT_FAULT;
			e->fault = VM_FAULT_GP;
			return;
		case KVM_EXIT_MMIO:
			e->kind = VM_EXIT_FAULT;
			e->fault = VM_FAULT_PAGE;
			e->addr = run->mmio.phys_addr;
			return;
		default:
			vm_fail(e, "unexpected KVM exit reason %u", run->exit_reason);
			return;
		}
	}
}

/* KVM completes an `out` on the next KVM_RUN by moving RIP past it, unless RIP was changed in
 * between. We move it ourselves at once, so that the state seen at a hypercall (and captured in a
 * snapshot there) is the state after the instruction, as with the ptrace backend. */
static void kvm_run(struct vm *vm, struct vm_exit *e)
{
	kvm_run_once(vm, e);
	if (e->kind != VM_EXIT_HYPERCALL)
		return;
	struct vm_regs r;
	if (kvm_get_regs(vm, &r) < 0) {
		vm_fail(e, "KVM_GET_REGS: %s", strerror(errno));
		return;
	}
	const uint8_t *insn = vm_guest(vm, r.rip, 2);
	if (insn && insn[0] == 0xe6 && insn[1] == (uint8_t)e->port) {
		r.rip += 2;
		kvm_set_regs(vm, &r);
	}
	e->rip = r.rip;
}

static int kvm_get_fpu(struct vm *vm, void *buf, size_t *len)
{
	struct kvm_xsave x;
	if (ioctl(KV(vm)->vcpufd, KVM_GET_XSAVE, &x) < 0)
		return -errno;
	size_t n = sizeof(x) < VM_FPU_MAX ? sizeof(x) : VM_FPU_MAX;
	memcpy(buf, &x, n);
	*len = n;
	return 0;
}

static int kvm_set_fpu(struct vm *vm, const void *buf, size_t len)
{
	struct kvm_xsave x;
	memset(&x, 0, sizeof(x));
	memcpy(&x, buf, len < sizeof(x) ? len : sizeof(x));
	return ioctl(KV(vm)->vcpufd, KVM_SET_XSAVE, &x) < 0 ? -errno : 0;
}

static int kvm_guest_tsc(struct vm *vm, uint64_t *tsc)
{
	*tsc = 0;
	return kvm_msr(vm, 0x10 /* IA32_TIME_STAMP_COUNTER */, tsc, 0);
}

/* any thread may drive a KVM vCPU (one at a time): run on the caller's */
static void kvm_call(struct vm *vm, void (*fn)(void *), void *arg)
{
	(void)vm;
	fn(arg);
}

const struct vm_ops vm_kvm_ops = {
    .name = "kvm",
    .create = kvm_create,
    .destroy = kvm_destroy,
    .run = kvm_run,
    .get_regs = kvm_get_regs,
    .set_regs = kvm_set_regs,
    .set_fs_base = kvm_set_fs_base,
    .get_fs_base = kvm_get_fs_base,
    .protect = kvm_protect,
    .kick = kvm_kick,
    .get_fpu = kvm_get_fpu,
    .set_fpu = kvm_set_fpu,
    .call = kvm_call,
    .guest_tsc = kvm_guest_tsc,
};

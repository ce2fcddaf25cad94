/* A KVM vCPU made ready for a program at CPL3: CPUID as KVM supports it, segments, control
 * registers and its own TSS, XCR0, and the MSRs (the syscall entry, FS base). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm/vm_kvm.h"
#include "vm/vm_x86.h"

/* KVM_GET_SUPPORTED_CPUID's table, asked once per process: it does not change, and under PVM
 * the host emulates each CPUID leaf it reads, a fifth of making a machine (a child virtine's
 * fork paid it every time). Kept for the process; NULL and errno when it cannot be had. */
static pthread_mutex_t cpuid_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kvm_cpuid2 *cpuid_table;
static size_t cpuid_bytes;

static const struct kvm_cpuid2 *supported_cpuid(int kvm, char *err, size_t errlen)
{
	pthread_mutex_lock(&cpuid_mu);
	struct kvm_cpuid2 *c = cpuid_table;
	/* the table size is not known in advance: grow until it fits (E2BIG) */
	for (int n = 128; !cpuid_table && n <= 4096; n *= 2) {
		size_t bytes = sizeof(*c) + (size_t)n * sizeof(c->entries[0]);
		if (!(c = calloc(1, bytes))) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		c->nent = (uint32_t)n;
		if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			cpuid_table = c;
			cpuid_bytes = bytes;
			break;
		}
		if (errno != E2BIG || n == 4096)
			snprintf(err, errlen, "KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
		free(c);
		c = NULL;
		if (errno != E2BIG)
			break;
	}
	pthread_mutex_unlock(&cpuid_mu);
	return c;
}

int kvm_set_cpuid(struct kvm_vm *k, struct kvm_cpu *cpu, uint64_t *xcr0, char *err, size_t errlen)
{
	const struct kvm_cpuid2 *table = supported_cpuid(k->kvm, err, errlen);
	if (!table)
		return -1;
	struct kvm_cpuid2 *c = malloc(cpuid_bytes); /* KVM_SET_CPUID2 takes a copy it may keep */
	if (!c)
		return snprintf(err, errlen, "out of memory"), -1;
	memcpy(c, table, cpuid_bytes);
	*xcr0 = 0x3; /* x87 and SSE always */
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == 0xd && c->entries[i].index == 0)
			*xcr0 = c->entries[i].eax & 0x7; /* x87, SSE, AVX where supported */
	int rc = ioctl(cpu->fd, KVM_SET_CPUID2, c);
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

int kvm_set_sregs(struct kvm_cpu *c, int tss_type, char *err, size_t errlen)
{
	struct kvm_sregs sr;
	if (ioctl(c->fd, KVM_GET_SREGS, &sr) < 0)
		return snprintf(err, errlen, "KVM_GET_SREGS: %s", strerror(errno)), -1;
	user_seg(&sr.cs, X86_SEL_UCODE, 1);
	user_seg(&sr.ds, X86_SEL_UDATA, 0);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	/* GS base: the in-guest runtime's area of this vCPU (abi.h), never changed afterwards */
	sr.gs.base = EMBER_RT_CPU(c->index);
	memset(&sr.tr, 0, sizeof(sr.tr));
	sr.tr.base = X86_TSS(c->index);
	sr.tr.limit = X86_TSS_LIMIT;
	sr.tr.selector = X86_SEL_TSS(c->index);
	sr.tr.type = (uint8_t)tss_type;
	sr.tr.present = 1;
	memset(&sr.ldt, 0, sizeof(sr.ldt));
	sr.ldt.unusable = 1;
	sr.gdt.base = X86_GDT;
	sr.gdt.limit = 4095;
	sr.idt.base = X86_IDT;
	sr.idt.limit = X86_IDT_VECTORS * 16 - 1;
	sr.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_AM |
		 X86_CR0_PG;
	sr.cr3 = X86_PML4;
	sr.cr4 = X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT | X86_CR4_OSXSAVE;
	/* no EFER.SCE: a stray `syscall` raises #UD instead of entering a kernel that is not there
	 * (PVM ignores it: see X86_SYSCALL_TRAP) */
	sr.efer = X86_EFER_LME | X86_EFER_LMA | X86_EFER_NXE;
	sr.cr2 = 0; /* a vCPU emptied for another program (vm_empty) keeps no fault address */
	if (ioctl(c->fd, KVM_SET_SREGS, &sr) < 0)
		return snprintf(err, errlen, "KVM_SET_SREGS: %s", strerror(errno)), -1;
	c->tss_type = tss_type;
	c->fs_known = 1; /* FS base 0 */
	c->fs_base = 0;
	return 0;
}

int kvm_set_xcr0(struct kvm_cpu *k, uint64_t xcr0, char *err, size_t errlen)
{
	struct kvm_xcrs x;
	memset(&x, 0, sizeof(x));
	x.nr_xcrs = 1;
	x.xcrs[0].xcr = 0;
	x.xcrs[0].value = xcr0;
	if (ioctl(k->fd, KVM_SET_XCRS, &x) < 0)
		return snprintf(err, errlen, "KVM_SET_XCRS: %s", strerror(errno)), -1;
	return 0;
}

int kvm_msr(struct kvm_cpu *c, uint32_t index, uint64_t *val, int set)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m;
	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = 1;
	m.e.index = index;
	m.e.data = *val;
	int rc = ioctl(c->fd, set ? KVM_SET_MSRS : KVM_GET_MSRS, &m);
	if (rc != 1)
		return rc < 0 ? -errno : -EIO;
	*val = m.e.data;
	return 0;
}

int kvm_set_lstar(struct kvm_cpu *c, char *err, size_t errlen)
{
	uint64_t trap = X86_SYSCALL_TRAP;
	int rc = kvm_msr(c, X86_MSR_LSTAR, &trap, 1);
	if (rc)
		snprintf(err, errlen, "KVM_SET_MSRS (LSTAR): %s", strerror(-rc));
	return rc;
}

int kvm_cpu_empty(struct kvm_cpu *c)
{
	char err[EMBER_ERR_MAX];
	if (c->broken)
		return -EIO;
	int rc = c->out_pending ? kvm_retire_out(c) : 0;
	if (rc)
		return rc;
	c->run->immediate_exit = 0;
	c->run->kvm_dirty_regs = 0;
	struct kvm_vcpu_events ev;
	memset(&ev, 0, sizeof(ev)); /* no exception, interrupt or NMI pending or being injected */
	/* without these flags KVM leaves the NMI queue and the interrupt shadow (an exit right
	 * after `sti` or `mov ss`) as the last program left them */
	ev.flags = KVM_VCPUEVENT_VALID_SHADOW | KVM_VCPUEVENT_VALID_NMI_PENDING;
	if (ioctl(c->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
		return -errno;
	struct kvm_regs r;
	memset(&r, 0, sizeof(r));
	r.rflags = X86_RFLAGS_FIXED;
	if (ioctl(c->fd, KVM_SET_REGS, &r) < 0)
		return -errno;
	if (c->sync_regs)
		c->run->s.regs.regs = r;
	if (kvm_set_sregs(c, kvm_tss_type(), err, sizeof(err)))
		return -EIO;
	/* x87 and SSE explicitly in their initial state (FCW 0x37f, MXCSR 0x1f80: XRSTOR loads
	 * MXCSR whatever XSTATE_BV says), the rest of XCR0's features (AVX) initial by omission */
	struct kvm_xsave x;
	memset(&x, 0, sizeof(x));
	x.region[0] = 0x37f;
	x.region[6] = 0x1f80;
	x.region[128] = 0x3; /* XSTATE_BV, at byte 512 */
	if (ioctl(c->fd, KVM_SET_XSAVE, &x) < 0)
		return -errno;
	c->regs_valid = c->regs_dirty = 0;
	c->at_cpl0 = 0;
	c->out_pending = 0;
	return 0;
}

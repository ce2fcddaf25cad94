/* The KVM backend: a VM and its vCPUs put straight into 64-bit mode at CPL3, no guest kernel. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include "vm/vm_kvm.h"
#include "vm/vm_x86.h"

/* registers through kvm_run where KVM offers it: an exit then costs no register ioctl */
static int sync_regs(struct kvm_vm *k, struct kvm_cpu *c, char *err, size_t errlen)
{
	int caps = ioctl(k->kvm, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	if (caps <= 0 || !(caps & KVM_SYNC_X86_REGS))
		return 0;
	/* the current registers seed the shared copy, which KVM refreshes at every exit */
	if (ioctl(c->fd, KVM_GET_REGS, &c->run->s.regs.regs) < 0)
		return snprintf(err, errlen, "KVM_GET_REGS: %s", strerror(errno)), -1;
	c->run->kvm_valid_regs = KVM_SYNC_X86_REGS;
	c->sync_regs = 1;
	return 0;
}

/* During KVM_RUN the deadline timer's signal is unblocked, and only then: the run comes back
 * interrupted and takes it (vm_timer_fired), and the thread keeps it blocked otherwise, so the
 * timer need not be disarmed between invocations. Every other signal stays as the creating
 * thread has it (ember serve blocks its shutdown signals in every thread). Without the ioctl
 * the timer is armed and disarmed around each run, as on ptrace. */
static int take_timer(struct kvm_cpu *c)
{
	sigset_t cur;
	if (pthread_sigmask(SIG_BLOCK, NULL, &cur))
		return 0;
	sigdelset(&cur, vm_timer_signal());
	struct {
		struct kvm_signal_mask m;
		uint8_t set[8]; /* the kernel's sigset: 64 signals, the first 8 bytes of glibc's */
	} mask = {.m.len = 8};
	memcpy(mask.set, &cur, sizeof(mask.set));
	return ioctl(c->fd, KVM_SET_SIGNAL_MASK, &mask) == 0;
}

/* vCPU i's file, kvm_run and registers: 0, or a kind of failure with err */
static int open_cpu(struct kvm_vm *k, int i, char *err, size_t errlen)
{
	struct kvm_cpu *c = &k->cpu[i];
	c->index = i;
	c->fd = ioctl(k->vmfd, KVM_CREATE_VCPU, (unsigned long)i);
	if (c->fd < 0)
		return snprintf(err, errlen, "KVM_CREATE_VCPU: %s", strerror(errno)),
		       vm_errno_kind(errno, VM_ERR);
	c->run = mmap(NULL, k->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (c->run == MAP_FAILED) {
		c->run = NULL;
		return snprintf(err, errlen, "mmap kvm_run: %s", strerror(errno)),
		       vm_errno_kind(errno, VM_ERR);
	}
	uint64_t xcr0;
	if (kvm_set_cpuid(k, c, &xcr0, err, errlen) ||
	    kvm_set_sregs(c, kvm_tss_type(), err, errlen) || kvm_set_xcr0(c, xcr0, err, errlen) ||
	    kvm_set_lstar(c, err, errlen) || sync_regs(k, c, err, errlen))
		return VM_ERR;
	return VM_OK;
}

static void close_cpu(struct kvm_vm *k, int i)
{
	struct kvm_cpu *c = &k->cpu[i];
	if (c->run)
		munmap(c->run, k->run_size);
	if (c->fd >= 0)
		close(c->fd);
	c->run = NULL;
	c->fd = -1;
}

/* a later vCPU keeps the first one's TSC (KVM usually matches it itself at creation): the
 * in-guest runtime's clocks read whichever vCPU they run on */
static void same_tsc(struct kvm_cpu *first, struct kvm_cpu *c)
{
	uint64_t off;
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
				    .attr = KVM_VCPU_TSC_OFFSET,
				    .addr = (uint64_t)(uintptr_t)&off};
	if (ioctl(first->fd, KVM_GET_DEVICE_ATTR, &a) == 0)
		ioctl(c->fd, KVM_SET_DEVICE_ATTR, &a);
}

static int kvm_add_cpu(struct vm *vm, char *err, size_t errlen)
{
	struct kvm_vm *k = KV(vm);
	int i = vm->ncpu, rc = open_cpu(k, i, err, errlen);
	if (rc == VM_OK && vm->run_takes_timer && !take_timer(&k->cpu[i])) {
		snprintf(err, errlen, "KVM_SET_SIGNAL_MASK failed on a vCPU that is not the first");
		rc = VM_ERR;
	}
	if (rc != VM_OK) {
		close_cpu(k, i);
		return rc;
	}
	same_tsc(&k->cpu[0], &k->cpu[i]);
	return VM_OK;
}

static int kvm_create(struct vm *vm, char *err, size_t errlen)
{
	struct kvm_vm *k = calloc(1, sizeof(*k));
	if (!k)
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	k->kvm = k->vmfd = -1;
	for (int i = 0; i < VM_CPUS_MAX; i++)
		k->cpu[i].fd = -1;
	vm->priv = k;
	/* shared by every machine, never closed (vm_dev.c); a full file table or no memory is
	 * the host's state, not a missing KVM: ptrace would not help */
	k->kvm = vm_dev_kvm();
	if (k->kvm < 0) {
		int kind = vm_errno_kind(-k->kvm, VM_ENOKVM);
		snprintf(err, errlen, "%s/dev/kvm: %s", kind == VM_ENOKVM ? "no KVM: " : "",
			 strerror(-k->kvm));
		return kind;
	}
	if (ioctl(k->kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		snprintf(err, errlen, "no KVM: /dev/kvm is not a KVM device of API version 12");
		return VM_ENOKVM;
	}
	k->vmfd = ioctl(k->kvm, KVM_CREATE_VM, 0);
	if (k->vmfd < 0) {
		int kind = vm_errno_kind(errno, VM_ENOKVM);
		snprintf(err, errlen, "%s/dev/kvm: KVM_CREATE_VM: %s",
			 kind == VM_ENOKVM ? "no KVM: " : "", strerror(errno));
		return kind;
	}
	/* only used for real-mode emulation on Intel, which never happens here; set it anyway as
	 * every VMM does, out of the way above guest RAM */
	ioctl(k->vmfd, KVM_SET_TSS_ADDR, 0xfffbd000UL);
	int rc = kvm_slots_init(vm);
	if (rc)
		return snprintf(err, errlen, "KVM_SET_USER_MEMORY_REGION: %s", strerror(-rc)),
		       vm_errno_kind(-rc, VM_ERR);
	int sz = ioctl(k->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz <= 0)
		return snprintf(err, errlen, "KVM_GET_VCPU_MMAP_SIZE failed"), VM_ERR;
	k->run_size = (size_t)sz;
	vm_x86_build(vm);
	rc = open_cpu(k, 0, err, errlen);
	if (rc != VM_OK)
		return rc;
	if (kvm_probe_out(vm, &k->cpu[0], err, errlen))
		return VM_ERR;
	vm->run_takes_timer = take_timer(&k->cpu[0]); /* after the probe's runs, which take no
							  signal */
	return VM_OK;
}

static void kvm_destroy(struct vm *vm)
{
	struct kvm_vm *k = KV(vm);
	if (!k)
		return;
	for (int i = 0; i < VM_CPUS_MAX; i++)
		close_cpu(k, i);
	if (k->vmfd >= 0)
		close(k->vmfd);
	kvm_slots_free(k);
	free(k);
	vm->priv = NULL;
}

/* FS base through the MSR, never KVM_SET_SREGS (~5 us, and slower entries after). Only the
 * host changes it (CR4.FSGSBASE is off), so a value already there is not written again. */
static int kvm_set_fs_base(struct vm *vm, int cpu, uint64_t base)
{
	struct kvm_cpu *c = KC(vm, cpu);
	if (c->fs_known && c->fs_base == base)
		return 0;
	int rc = kvm_msr(c, X86_MSR_FS_BASE, &base, 1);
	c->fs_known = rc == 0;
	c->fs_base = base;
	return rc;
}

static int kvm_get_fs_base(struct vm *vm, int cpu, uint64_t *base)
{
	struct kvm_cpu *c = KC(vm, cpu);
	if (c->fs_known) {
		*base = c->fs_base;
		return 0;
	}
	*base = 0;
	return kvm_msr(c, X86_MSR_FS_BASE, base, 0);
}

/* The host's writes to the page tables are invisible to KVM: its shadow MMU (PVM, no EPT/NPT)
 * keeps the old translation, and under EPT/NPT the guest TLB does. Dropping the host's mapping
 * of the pages whose PTE changed (the memfd keeps their data) makes KVM zap its own through the
 * MMU notifier, with a TLB flush; the next access walks the new PTE. */
static int zap_piece(struct vm *vm, uint64_t lo, uint64_t hi, int cow, void *ctx)
{
	(void)ctx;
	uint8_t *p = vm->mem + lo;
	size_t n = hi - lo;
	if (!cow)
		return madvise(p, n, MADV_DONTNEED) < 0 ? -errno : 0;
	/* MADV_DONTNEED would drop the private copies of a copy-on-write run (the guest would
	 * read the snapshot's page again): taking write access away and back changes the host's
	 * PTEs, which zaps KVM's just as well, and keeps the data */
	if (mprotect(p, n, PROT_READ) < 0 || mprotect(p, n, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	return 0;
}

static int kvm_reserve(struct vm *vm, uint64_t addr, uint64_t len)
{
	return kvm_slots_cover(vm, addr, addr + len);
}

static int kvm_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot)
{
	uint64_t lo = 0, hi = 0;
	/* memory the guest may reach is in a slot before its PTE says so: another vCPU may be
	 * running and reach it at once */
	int rc = prot & (PROT_READ | PROT_WRITE | PROT_EXEC) ? kvm_reserve(vm, addr, len) : 0;
	if (rc)
		return rc;
	vm_x86_protect(vm, addr, len, prot, &lo, &hi);
	return lo < hi ? vm_each_cow(vm, lo, hi, zap_piece, NULL) : 0;
}

/* every slot again with dirty logging on or off: its pages stay, KVM write-protects them */
static int kvm_log_writes(struct vm *vm, int on)
{
	return kvm_slots_log(vm, on);
}

static void kvm_kick(struct vm *vm, int cpu)
{
	struct kvm_vm *k = KV(vm);
	if (k && k->cpu[cpu].run)
		k->cpu[cpu].run->immediate_exit = 1;
}

static int kvm_get_fpu(struct vm *vm, int cpu, void *buf, size_t *len)
{
	struct kvm_xsave x;
	if (ioctl(KC(vm, cpu)->fd, KVM_GET_XSAVE, &x) < 0)
		return -errno;
	size_t n = sizeof(x) < VM_FPU_MAX ? sizeof(x) : VM_FPU_MAX;
	memcpy(buf, &x, n);
	*len = n;
	return 0;
}

static int kvm_set_fpu(struct vm *vm, int cpu, const void *buf, size_t len)
{
	struct kvm_xsave x;
	memset(&x, 0, sizeof(x));
	memcpy(&x, buf, len < sizeof(x) ? len : sizeof(x));
	return ioctl(KC(vm, cpu)->fd, KVM_SET_XSAVE, &x) < 0 ? -errno : 0;
}

/* the vCPU's TSC offset, if KVM tells it and the guest's TSC is the host's plus it (no scaling):
 * an MSR read between two host reads must land between them, shifted by the offset. Nothing in
 * Ember writes the guest's TSC and CPL3 code cannot, so it holds for the vCPU's life. */
static int tsc_offset_holds(struct kvm_cpu *c, uint64_t *off)
{
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
				    .attr = KVM_VCPU_TSC_OFFSET,
				    .addr = (uint64_t)(uintptr_t)off};
	uint64_t g = 0;
	if (ioctl(c->fd, KVM_GET_DEVICE_ATTR, &a) < 0)
		return 0;
	uint64_t h0 = __rdtsc();
	if (kvm_msr(c, X86_MSR_TSC, &g, 0))
		return 0;
	uint64_t h1 = __rdtsc();
	return g - *off >= h0 && g - *off <= h1;
}

/* per run of the in-guest runtime: from the host's TSC where the offset is known (saves a
 * KVM_GET_MSRS, ~5 us under PVM), else the MSR */
static int kvm_guest_tsc(struct vm *vm, uint64_t *tsc)
{
	struct kvm_cpu *c = KC(vm, 0);
	if (!c->tsc_known)
		c->tsc_known = tsc_offset_holds(c, &c->tsc_off) ? 1 : -1;
	if (c->tsc_known > 0) {
		*tsc = __rdtsc() + c->tsc_off;
		return 0;
	}
	*tsc = 0;
	return kvm_msr(c, X86_MSR_TSC, tsc, 0);
}

/* a machine one of whose vCPUs shut down or failed is not entered again */
static int kvm_usable(const struct vm *vm)
{
	for (int i = 0; i < vm->ncpu; i++)
		if (KV(vm)->cpu[i].broken)
			return 0;
	return 1;
}

/* any thread may drive a KVM vCPU (one at a time): run on the caller's */
static void kvm_call(struct vm *vm, void (*fn)(void *), void *arg)
{
	(void)vm;
	fn(arg);
}

static int kvm_empty(struct vm *vm)
{
	int rc = 0;
	for (int i = 0; i < vm->ncpu && !rc; i++)
		rc = kvm_cpu_empty(KC(vm, i));
	return rc;
}

/* the VM's descriptor, and each vCPU's with its kvm_run mapping */
static void kvm_hold(const struct vm *vm, struct vm_hold *h)
{
	const struct kvm_vm *k = KV(vm);
	if (!k)
		return;
	h->fds += k->vmfd >= 0;
	h->slot_bytes += k->slots.bytes;
	for (int i = 0; i < VM_CPUS_MAX; i++) {
		h->fds += k->cpu[i].fd >= 0;
		h->maps += k->cpu[i].fd >= 0 && k->cpu[i].run;
	}
}

const struct vm_ops vm_kvm_ops = {
    .name = "kvm",
    .create = kvm_create,
    .destroy = kvm_destroy,
    .add_cpu = kvm_add_cpu,
    .run = kvm_run,
    .get_regs = kvm_get_regs,
    .set_regs = kvm_set_regs,
    .set_fs_base = kvm_set_fs_base,
    .get_fs_base = kvm_get_fs_base,
    .protect = kvm_protect,
    .reserve = kvm_reserve,
    .tables = kvm_slots_tables,
    .kick = kvm_kick,
    .get_fpu = kvm_get_fpu,
    .set_fpu = kvm_set_fpu,
    .call = kvm_call,
    .guest_tsc = kvm_guest_tsc,
    .usable = kvm_usable,
    .dirty_log = kvm_slots_dirty,
    .log_writes = kvm_log_writes,
    .next_used = vm_x86_next_used,
    .forget_used = vm_x86_forget_used,
    .unwritten = vm_x86_unwritten,
    .hold = kvm_hold,
    .empty = kvm_empty,
};

/* The KVM backend's vCPU state across faults, signals and resets, with hand-written guest code. */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "pool/pool.h"
#include "vm/vm_kvm.h"
#include "vm/vm_x86.h"

#define CODE 0x400000ULL /* read and execute */
#define DATA 0x401000ULL /* read and write; the stack's top too */

/* the code pieces, at CODE + their offset */
static const struct {
	unsigned off;
	uint8_t bytes[20];
	unsigned len;
} code[] = {
    {0x000, {0xb0, 0x41, 0xe6, 0x11, 0xe4, 0x10, 0xe6, 0x12}, 8}, /* out 0x11; in al,0x10 */
    {0x100, {0xe6, 0x13}, 2},					  /* out 0x13 */
    {0x200, {0x0f, 0x0b}, 2},					  /* ud2 */
    {0x300, {0x0f, 0x20, 0xd8, 0xe6, 0x11}, 5},			  /* mov %cr3,%rax; out */
    {0x400,
     {0x48, 0xff, 0xc0, 0x48, 0x8b, 0x1c, 0x25, 0x00, 0x00, 0x00, 0x00, 0xe6, 0x11},
     13}, /* inc %rax; mov 0,%rbx (a null read); out 0x11 */
    /* mov DATA,%rbx; out 0x11 */
    {0x500, {0x48, 0x8b, 0x1c, 0x25, 0x00, 0x10, 0x40, 0x00, 0xe6, 0x11}, 10},
    /* mov 0x800000,%rbx: unmapped */
    {0x600, {0x48, 0x8b, 0x1c, 0x25, 0x00, 0x00, 0x80, 0x00}, 8},
};

/* the code and data pages mapped, the code in place */
static void load(struct vm *vm)
{
	assert_int_equal(vm_protect(vm, CODE, 4096, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(vm_protect(vm, DATA, 4096, PROT_READ | PROT_WRITE), 0);
	for (size_t i = 0; i < sizeof(code) / sizeof(code[0]); i++)
		assert_int_equal(vm_copy_to(vm, CODE + code[i].off, code[i].bytes, code[i].len), 0);
}

static struct vm *machine(void)
{
	struct vm_config c = {16ULL << 20, VM_BACKEND_KVM, 1};
	struct vm *vm = NULL;
	char err[200];
	if (vm_create(&c, &vm, err, sizeof(err)) != VM_OK)
		fail_msg("vm_create: %s (this test needs a working /dev/kvm)", err);
	load(vm);
	return vm;
}

/* a reset: every register new, as a snapshot restore sets them */
static void start(struct vm *vm, uint64_t rip, uint64_t rax)
{
	struct vm_regs r = {.rip = rip, .rsp = DATA + 4096, .rflags = 2, .rax = rax};
	assert_int_equal(vm_set_regs(vm, &r), 0);
}

static void expect(struct vm *vm, enum vm_exit_kind kind, int port_or_vector, uint64_t rip)
{
	struct vm_exit e;
	vm_run(vm, &e);
	if (e.kind != kind || (kind == VM_EXIT_HYPERCALL && e.port != port_or_vector) ||
	    (kind == VM_EXIT_FAULT && e.vector != port_or_vector) || e.rip != rip)
		fail_msg(
		    "exit kind %d port %#x vector %d rip %#llx (%s); want kind %d, %#x at %#llx",
		    (int)e.kind, e.port, e.vector, (unsigned long long)e.rip, e.msg, (int)kind,
		    port_or_vector, (unsigned long long)rip);
}

/* a fault leaves the machine usable: a reset starts it afresh at CPL3, many times over */
static void reset_after_fault(void **state)
{
	(void)state;
	struct vm *vm = machine();
	for (int i = 0; i < 100; i++) {
		start(vm, CODE + 0x200, 0);
		expect(vm, VM_EXIT_FAULT, 6, CODE + 0x200);
		assert_true(vm_usable(vm));
		start(vm, CODE + 0x100, 0);
		expect(vm, VM_EXIT_HYPERCALL, 0x13, CODE + 0x102);
	}
	vm_destroy(vm);
}

/* after a fault the program's registers are those of the faulting instruction, and running on
 * without new ones returns there with every register as it was */
static void registers_at_a_fault(void **state)
{
	(void)state;
	struct vm *vm = machine();
	start(vm, CODE + 0x400, 41);
	expect(vm, VM_EXIT_FAULT, 14, CODE + 0x403);
	struct vm_regs r;
	assert_int_equal(vm_get_regs(vm, &r), 0);
	assert_int_equal(r.rax, 42);
	assert_int_equal(r.rip, CODE + 0x403);
	assert_int_equal(r.rsp, DATA + 4096);
	expect(vm, VM_EXIT_FAULT, 14, CODE + 0x403); /* the same read faults again */
	vm_get_regs(vm, &r);
	assert_int_equal(r.rax, 42);
	vm_destroy(vm);
}

/* a signal that stops the vCPU inside the handlers (here: before the handler's iretq took it
 * back to CPL3) must not let the next registers run at CPL0: mov %cr3 is still a #GP */
static void signal_inside_the_handler(void **state)
{
	(void)state;
	struct vm *vm = machine();
	start(vm, CODE + 0x200, 0);
	expect(vm, VM_EXIT_FAULT, 6, CODE + 0x200);
	start(vm, CODE + 0x300, 0);
	KC(vm, 0)->run->immediate_exit = 1; /* as the deadline's signal handler does */
	vm->expired = 1;
	struct vm_exit e;
	kvm_run(vm, 0, &e);
	assert_int_equal(e.kind, VM_EXIT_TIMEOUT);
	vm->expired = 0;
	start(vm, CODE + 0x300, 0);
	expect(vm, VM_EXIT_FAULT, 13, CODE + 0x300);
	vm_destroy(vm);
}

/* a kick that stops the vCPU on its way from the handlers to new registers (a thread entered
 * after a fault of the last one, say), before it ran an instruction: the registers read then are
 * those set, not the handler's iretq (a thread taken off the vCPU, or a snapshot, kept those and
 * resumed at CPL3 in the handlers' page), and the next run goes on to them */
static void kick_on_the_way_out(void **state)
{
	(void)state;
	struct vm *vm = machine();
	start(vm, CODE + 0x200, 0);
	expect(vm, VM_EXIT_FAULT, 6, CODE + 0x200);
	start(vm, CODE + 0x100, 7);
	KC(vm, 0)->run->immediate_exit = 1; /* as a kick's signal does */
	atomic_store(&vm->cpu[0].kicked, 1);
	struct vm_exit e;
	kvm_run(vm, 0, &e);
	assert_int_equal(e.kind, VM_EXIT_INTERRUPT);
	atomic_store(&vm->cpu[0].kicked, 0);
	struct vm_regs r;
	assert_int_equal(vm_get_regs(vm, &r), 0);
	assert_int_equal(r.rip, CODE + 0x100);
	assert_int_equal(r.rax, 7);
	expect(vm, VM_EXIT_HYPERCALL, 0x13, CODE + 0x102);
	vm_get_regs(vm, &r);
	assert_int_equal(r.rax, 7);
	vm_destroy(vm);
}

/* new registers that start at the `out` of the last hypercall run it again: KVM's completion
 * of that `out` (VT-x, SVM) must not skip it */
static void reset_onto_the_last_out(void **state)
{
	(void)state;
	struct vm *vm = machine();
	for (int i = 0; i < 3; i++) {
		start(vm, CODE + 0x100, 0);
		expect(vm, VM_EXIT_HYPERCALL, 0x13, CODE + 0x102);
	}
	vm_destroy(vm);
}

/* KVM holds a page fault the vCPU was delivering when a signal stopped it (SVM's exit_int_info:
 * a fault of the host's tables on the way to the handler), as a nested guest met it: set here
 * as the vCPU would have it */
static void deliver_later(struct vm *vm)
{
	struct kvm_vcpu_events ev;
	assert_int_equal(ioctl(KC(vm, 0)->fd, KVM_GET_VCPU_EVENTS, &ev), 0);
	ev.exception.injected = 1;
	ev.exception.nr = 14;
	ev.exception.has_error_code = 1;
	ev.exception.error_code = 6; /* a write at CPL3 to a page not present */
	ev.flags = 0;
	assert_int_equal(ioctl(KC(vm, 0)->fd, KVM_SET_VCPU_EVENTS, &ev), 0);
}

/* a slice's end (a kick) while the vCPU delivers a fault: the run goes on to the fault's report,
 * for the thread that took it; left in KVM, it would be injected into the next thread's
 * registers (a page fault at the first one's address, with the second one's RIP) */
static void kick_while_delivering(void **state)
{
	(void)state;
	struct vm *vm = machine();
	start(vm, CODE + 0x100, 0);
	deliver_later(vm);
	KC(vm, 0)->run->immediate_exit = 1;
	atomic_store(&vm->cpu[0].kicked, 1);
	struct vm_exit e;
	kvm_run(vm, 0, &e);
	atomic_store(&vm->cpu[0].kicked, 0);
	assert_int_equal(e.kind, VM_EXIT_FAULT);
	assert_int_equal(e.vector, 14);
	assert_int_equal(e.rip, CODE + 0x100);
	start(vm, CODE + 0x100, 0); /* another thread */
	expect(vm, VM_EXIT_HYPERCALL, 0x13, CODE + 0x102);
	vm_destroy(vm);
}

/* the deadline while the vCPU delivers a fault: the run ends, and the fault goes with it; the
 * reset's registers run as they are */
static void deadline_while_delivering(void **state)
{
	(void)state;
	struct vm *vm = machine();
	start(vm, CODE + 0x100, 0);
	deliver_later(vm);
	KC(vm, 0)->run->immediate_exit = 1;
	vm->expired = 1;
	struct vm_exit e;
	kvm_run(vm, 0, &e);
	assert_int_equal(e.kind, VM_EXIT_TIMEOUT);
	vm->expired = 0;
	start(vm, CODE + 0x100, 0);
	expect(vm, VM_EXIT_HYPERCALL, 0x13, CODE + 0x102);
	vm_destroy(vm);
}

/* [p, p + len) is mapped in this process */
static int mapped(const void *p, size_t len)
{
	unsigned char vec[16];
	return mincore((void *)p, len < sizeof(vec) * 4096 ? len : sizeof(vec) * 4096, vec) == 0;
}

/* A fork of the process that holds virtines (a benchmark's peer, a helper) copies none of their
 * guest memory, a copy-on-write run included: copied, the run would be write-protected in the
 * parent, and KVM would drop its mapping of every such page (the next warm run faulted them all
 * in again, ~300 us a warm hello in `ember bench all`) */
static void guest_memory_not_forked(void **state)
{
	(void)state;
	struct vm *vm = machine();
	const uint64_t run = 0x600000ULL;
	assert_int_equal(vm_map_run(vm, run, 8 * 4096, -1, 0, VM_RUN_SNAP, 0), 0);
	memset(vm->mem + run, 7, 4096); /* a private page of the run's own */
	assert_true(mapped(vm->mem, 4096) && mapped(vm->mem + run, 4096));
	pid_t pid = fork();
	if (pid == 0)
		_exit((mapped(vm->mem, 4096) ? 1 : 0) | (mapped(vm->mem + run, 4096) ? 2 : 0));
	int status = -1;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* 1: guest memory copied, 2: the run */
	assert_int_equal(vm->mem[run], 7);
	vm_destroy(vm);
}

/* `in` on one of Ember's ports is a #GP; KVM would finish it at the next entry, after the
 * reset, so that machine is not used again */
static void unfinished_io(void **state)
{
	(void)state;
	struct vm *vm = machine();
	start(vm, CODE, 0);
	expect(vm, VM_EXIT_HYPERCALL, 0x11, CODE + 4);
	struct vm_exit e;
	vm_run(vm, &e);
	assert_int_equal(e.kind, VM_EXIT_FAULT);
	assert_int_equal(e.fault, VM_FAULT_GP);
	assert_false(vm_usable(vm));
	start(vm, CODE + 0x100, 0);
	vm_run(vm, &e);
	assert_int_equal(e.kind, VM_EXIT_ERROR);
	vm_destroy(vm);
}

/* A machine emptied (vm_empty, for the next fork or execve) holds nothing of the program before:
 * its memory reads zero to the host and to the guest (KVM's old mapping of the page is gone),
 * its registers, FS base, fault address and FPU state are a new vCPU's, and it runs again. The
 * program before left it stopped in Ember's fault handler at CPL0. */
static void emptied_like_new(void **state)
{
	(void)state;
	struct vm *vm = machine();
	const uint64_t marker = 0x5eed5eed5eed5eedULL;
	assert_int_equal(vm_copy_to(vm, DATA, &marker, sizeof(marker)), 0);
	start(vm, CODE + 0x500, 0);
	expect(vm, VM_EXIT_HYPERCALL, 0x11, CODE + 0x50a);
	struct vm_regs r;
	assert_int_equal(vm_get_regs(vm, &r), 0);
	assert_true(r.rbx == marker); /* KVM maps DATA now */
	uint8_t fpu[VM_FPU_MAX];
	size_t len = 0;
	assert_int_equal(vm_get_fpu(vm, fpu, &len), 0);
	const uint32_t mxcsr = 0xff80;
	memcpy(fpu + 24, &mxcsr, sizeof(mxcsr));
	assert_int_equal(vm_set_fpu(vm, fpu, len), 0);
	assert_int_equal(vm_set_fs_base(vm, 0x123000), 0);
	start(vm, CODE + 0x600, 0); /* stops in the fault handler, CR2 0x800000 */
	expect(vm, VM_EXIT_FAULT, 14, CODE + 0x600);

	assert_int_equal(vm_empty(vm), 0);
	uint64_t word = 1, fs = 1;
	assert_int_equal(vm_copy_from(vm, &word, DATA, sizeof(word)), 0);
	assert_true(word == 0);
	assert_int_equal(vm_get_regs(vm, &r), 0);
	assert_true(r.rax == 0 && r.rbx == 0 && r.rip == 0 && r.rsp == 0 && r.rflags == 2);
	assert_int_equal(kvm_msr(KC(vm, 0), X86_MSR_FS_BASE, &fs, 0), 0);
	assert_true(fs == 0);
	struct kvm_sregs sr;
	assert_int_equal(ioctl(KC(vm, 0)->fd, KVM_GET_SREGS, &sr), 0);
	assert_true(sr.cr2 == 0 && sr.cs.dpl == 3);
	uint16_t fcw;
	uint32_t m;
	assert_int_equal(vm_get_fpu(vm, fpu, &len), 0);
	memcpy(&fcw, fpu, sizeof(fcw));
	memcpy(&m, fpu + 24, sizeof(m));
	assert_int_equal(fcw, 0x37f);
	assert_int_equal(m, 0x1f80);
	/* the same program loaded again reads the page afresh: zero, not the marker */
	load(vm);
	start(vm, CODE + 0x500, 0);
	expect(vm, VM_EXIT_HYPERCALL, 0x11, CODE + 0x50a);
	assert_int_equal(vm_get_regs(vm, &r), 0);
	assert_true(r.rbx == 0);
	vm_destroy(vm);
}

/* function A's process leaves its machine dirty (memory, registers, FS base, MXCSR, an
 * interrupt shadow) and the cache hands it to function B, which finds none of it; a machine
 * of another size is not handed to a taker that asked for this one */
static void reused_by_another_function(void **state)
{
	(void)state;
	const struct vm_config a = {16ULL << 20, VM_BACKEND_KVM, 1}, b = a;
	const struct vm_config big = {32ULL << 20, VM_BACKEND_KVM, 1};
	struct vm *vm = NULL, *other = NULL;
	char err[200];
	assert_int_equal(pool_shell(&a, &vm, err, sizeof(err)), VM_OK);
	assert_int_equal(pool_shell(&big, &other, err, sizeof(err)), VM_OK);
	load(vm);
	const uint64_t marker = 0xa11ce5a11ce5ULL;
	assert_int_equal(vm_copy_to(vm, DATA, &marker, sizeof(marker)), 0);
	start(vm, CODE + 0x500, 0);
	expect(vm, VM_EXIT_HYPERCALL, 0x11, CODE + 0x50a);
	assert_int_equal(vm_set_fs_base(vm, 0x456000), 0);
	struct kvm_vcpu_events ev;
	assert_int_equal(ioctl(KC(vm, 0)->fd, KVM_GET_VCPU_EVENTS, &ev), 0);
	ev.flags = KVM_VCPUEVENT_VALID_SHADOW;
	ev.interrupt.shadow = KVM_X86_SHADOW_INT_MOV_SS;
	assert_int_equal(ioctl(KC(vm, 0)->fd, KVM_SET_VCPU_EVENTS, &ev), 0);
	pool_shell_return(other); /* 32 MiB: not of a's kind */
	pool_shell_return(vm);

	struct vm *got = NULL;
	assert_int_equal(pool_shell(&b, &got, err, sizeof(err)), VM_OK);
	assert_ptr_equal(got, vm);
	assert_int_equal(vm_mem_size(got), a.mem_size);
	assert_int_equal(ioctl(KC(got, 0)->fd, KVM_GET_VCPU_EVENTS, &ev), 0);
	assert_int_equal(ev.interrupt.shadow, 0);
	uint64_t fs = 1;
	assert_int_equal(kvm_msr(KC(got, 0), X86_MSR_FS_BASE, &fs, 0), 0);
	assert_true(fs == 0);
	struct vm_regs r;
	assert_int_equal(vm_get_regs(got, &r), 0);
	assert_true(r.rbx == 0 && r.rip == 0);
	load(got);
	start(got, CODE + 0x500, 0);
	expect(got, VM_EXIT_HYPERCALL, 0x11, CODE + 0x50a);
	assert_int_equal(vm_get_regs(got, &r), 0);
	assert_true(r.rbx == 0); /* the page B reads is zero, not A's marker */
	vm_destroy(got);
	pool_shell_drain();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reset_after_fault),
	    cmocka_unit_test(registers_at_a_fault),
	    cmocka_unit_test(signal_inside_the_handler),
	    cmocka_unit_test(kick_on_the_way_out),
	    cmocka_unit_test(reset_onto_the_last_out),
	    cmocka_unit_test(unfinished_io),
	    cmocka_unit_test(kick_while_delivering),
	    cmocka_unit_test(deadline_while_delivering),
	    cmocka_unit_test(guest_memory_not_forked),
	    cmocka_unit_test(emptied_like_new),
	    cmocka_unit_test(reused_by_another_function),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

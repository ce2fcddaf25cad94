/* KVM's memory slots: made only where the guest's page tables map, reached at once, logged. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "sys/sys.h"
#include "vm/vm_kvm.h"

#define MIB  (1ULL << 20)
#define CODE 0x400000ULL  /* chunk 2: read and execute */
#define DATA 0x401000ULL  /* chunk 2: read and write */
#define FAR  0x1400000ULL /* chunk 10: no slot until something maps it */
#define NEAR 0x1800000ULL /* chunk 12: beside it */
#define FAR2 0x2003000ULL /* chunk 16 */
#define FAR3 0x3003000ULL /* chunk 24 */
#define SPIN 0x2e	  /* offset of the code that waits for the flag */
#define HIGH 0x4d	  /* offset of the code that reads [rax] */
#define PUT3 0x52	  /* offset of the code that writes FAR3 */
#define FLAG (DATA + 8)
#define TICK (DATA + 16)

/* mov FAR,%rbx; out 0x11 | movq $7,FAR; movq $9,DATA; out 0x11 | mov FAR2,%rbx; out 0x11 |
 * 1: incq TICK; mov FLAG,%rax; test %rax,%rax; jz 1b; mov FAR,%rbx; out 0x11 |
 * mov (%rax),%rbx; out 0x11 | movq $5,FAR3; out 0x11 */
static const uint8_t code[] = {
    0x48, 0x8b, 0x1c, 0x25, 0x00, 0x00, 0x40, 0x01, 0xe6, 0x11,		    /* 0x00 */
    0x48, 0xc7, 0x04, 0x25, 0x00, 0x00, 0x40, 0x01, 0x07, 0x00, 0x00, 0x00, /* 0x0a */
    0x48, 0xc7, 0x04, 0x25, 0x00, 0x10, 0x40, 0x00, 0x09, 0x00, 0x00, 0x00, /* 0x16 */
    0xe6, 0x11,								    /* 0x22 */
    0x48, 0x8b, 0x1c, 0x25, 0x00, 0x30, 0x00, 0x02, 0xe6, 0x11,		    /* 0x24 */
    0x48, 0xff, 0x04, 0x25, 0x10, 0x10, 0x40, 0x00,			    /* 0x2e */
    0x48, 0x8b, 0x04, 0x25, 0x08, 0x10, 0x40, 0x00,			    /* 0x36 */
    0x48, 0x85, 0xc0, 0x74, 0xeb,					    /* 0x3e */
    0x48, 0x8b, 0x1c, 0x25, 0x00, 0x00, 0x40, 0x01, 0xe6, 0x11,		    /* 0x43 */
    0x48, 0x8b, 0x18, 0xe6, 0x11,					    /* 0x4d */
    0x48, 0xc7, 0x04, 0x25, 0x00, 0x30, 0x00, 0x03, 0x05, 0x00, 0x00, 0x00, /* 0x52 */
    0xe6, 0x11,								    /* 0x5e */
};

/* 1 when a slot covers the 2 MiB at addr */
static int in_slot(struct vm *vm, uint64_t addr)
{
	return KV(vm)->slots.in[addr >> 21];
}

static struct vm *machine_of(uint64_t mem, int cpus)
{
	struct vm_config c = {mem, VM_BACKEND_KVM, cpus};
	struct vm *vm = NULL;
	char err[200];
	if (vm_create(&c, &vm, err, sizeof(err)) != VM_OK)
		fail_msg("vm_create: %s (this test needs a working /dev/kvm)", err);
	assert_int_equal(vm_protect(vm, CODE, 4096, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(vm_protect(vm, DATA, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_copy_to(vm, CODE, code, sizeof(code)), 0);
	return vm;
}

static struct vm *machine(void)
{
	return machine_of(64 * MIB, 1);
}

static uint64_t slot_bytes(struct vm *vm)
{
	struct vm_maps m = {0};
	struct vm_hold h;
	vm_host_hold(vm, &m, &h);
	return h.slot_bytes;
}

static void expect_out(const struct vm_exit *e)
{
	if (e->kind != VM_EXIT_HYPERCALL || e->port != 0x11)
		fail_msg("exit kind %d port %#x vector %d at %#llx (%s)", (int)e->kind, e->port,
			 e->vector, (unsigned long long)e->rip, e->msg);
}

/* runs from CODE + off to the next out, with rax: rbx */
static uint64_t run_rax(struct vm *vm, uint64_t off, uint64_t rax)
{
	struct vm_regs r = {.rip = CODE + off, .rsp = DATA + 4096, .rflags = 2, .rax = rax};
	assert_int_equal(vm_set_regs(vm, &r), 0);
	struct vm_exit e;
	vm_run(vm, &e);
	expect_out(&e);
	assert_int_equal(vm_get_regs(vm, &r), 0);
	return r.rbx;
}

static uint64_t run_at(struct vm *vm, uint64_t off)
{
	return run_rax(vm, off, 0);
}

/* the PTE of addr, as the host wrote it */
static uint64_t pte_at(struct vm *vm, uint64_t addr)
{
	uint64_t pte = ~0ULL;
	assert_int_equal(vm_copy_from(vm, &pte, vm_user_top(vm) + addr / 4096 * 8, 8), 0);
	return pte;
}

/* a new machine has slots for its own structures, the program's code and its stack (the first
 * 8 MiB and the last 4 MiB, the page tables' own), in two; memory mapped later gets its slot as
 * it is mapped, with the chunks beside it, and the guest reads it at once */
static void slots_where_mapped(void **state)
{
	(void)state;
	struct vm *vm = machine();
	assert_int_equal(slot_bytes(vm), 12 * MIB);
	assert_int_equal(KV(vm)->slots.n, 2);
	assert_false(in_slot(vm, FAR));
	const uint64_t marker = 0x51075107ULL;
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_copy_to(vm, FAR, &marker, sizeof(marker)), 0);
	assert_true(in_slot(vm, FAR) && in_slot(vm, NEAR));
	assert_int_equal(KV(vm)->slots.n, 3);
	assert_true(slot_bytes(vm) < 64 * MIB);
	assert_true(run_at(vm, 0) == marker);
	/* beside it, taken away and given again: no more slots */
	assert_int_equal(vm_protect(vm, NEAR, 4096, PROT_READ), 0);
	assert_int_equal(vm_protect(vm, FAR, 4096, 0), 0);
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ), 0);
	assert_int_equal(KV(vm)->slots.n, 3);
	vm_destroy(vm);
}

/* Page tables the host puts back through the accessor (a snapshot's, into another machine) map
 * memory that machine has no slot for: the next run has one. A table page put back empty
 * maps nothing, and makes none. */
static void tables_put_back(void **state)
{
	(void)state;
	struct vm *a = machine(), *b = machine();
	const uint64_t marker = 0x7ab1e5ULL;
	assert_int_equal(vm_protect(a, FAR, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_copy_to(a, FAR, &marker, sizeof(marker)), 0);
	uint64_t top = vm_user_top(a);
	uint8_t page[4096];
	/* chunk 10's table page, then the page, as a restore copies them */
	assert_int_equal(vm_copy_from(a, page, top + 10 * 4096, sizeof(page)), 0);
	assert_int_equal(vm_copy_to(b, top + 10 * 4096, page, sizeof(page)), 0);
	assert_int_equal(vm_copy_from(a, page, FAR, sizeof(page)), 0);
	assert_int_equal(vm_copy_to(b, FAR, page, sizeof(page)), 0);
	/* chunk 16's table page, empty */
	memset(page, 0, sizeof(page));
	assert_int_equal(vm_copy_to(b, top + 16 * 4096, page, sizeof(page)), 0);
	assert_false(in_slot(b, FAR));
	/* no slot to be had (KVM_CAP_NR_MEMSLOTS reached): the run says so and enters nothing,
	 * and the tables stay marked for the next one */
	struct kvm_slots *s = &KV(b)->slots;
	uint32_t max = s->max;
	s->max = s->n;
	struct vm_regs r = {.rip = CODE, .rsp = DATA + 4096, .rflags = 2};
	assert_int_equal(vm_set_regs(b, &r), 0);
	struct vm_exit e;
	vm_run(b, &e);
	assert_int_equal(e.kind, VM_EXIT_ERROR);
	assert_non_null(strstr(e.msg, "memory slot"));
	assert_false(in_slot(b, FAR));
	s->max = max;
	assert_true(run_at(b, 0) == marker);
	assert_true(in_slot(b, FAR));
	assert_false(in_slot(b, FAR2));
	vm_destroy(a);
	vm_destroy(b);
}

/* With dirty logging on, a write to memory in a slot made before the log was switched on
 * (FAR) and one made after (FAR3) both show, each at its own page, and no page the guest never
 * touched (beside FAR2 and FAR3, in slots made after). A page it only read (FAR2) may show:
 * with EPT/NPT, KVM maps a page read in a logged slot writable and marks it (the log is a
 * superset of the writes; QEMU's nested SVM does), PVM's shadow paging does not. */
static void logged_across_slots(void **state)
{
	(void)state;
	struct vm *vm = machine();
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_log_writes(vm), 0);
	assert_int_equal(vm_protect(vm, FAR2, 4096, PROT_READ), 0);
	assert_int_equal(vm_protect(vm, FAR3, 4096, PROT_READ | PROT_WRITE), 0);
	assert_true(in_slot(vm, FAR2) && in_slot(vm, FAR3) && KV(vm)->slots.n == 5);
	const uint64_t *bits;
	size_t words;
	assert_int_equal(vm_take_written(vm, &bits, &words), 0);
	vm_written_done(vm);
	run_at(vm, 0x0a);
	run_at(vm, 0x24); /* a read in chunk 16 */
	run_at(vm, PUT3);
	assert_int_equal(vm_take_written(vm, &bits, &words), 0);
	assert_true(words == (64 * MIB / 4096) / 64);
	const uint64_t written[] = {FAR / 4096, DATA / 4096, FAR3 / 4096};
	for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++)
		assert_true(bits[written[i] / 64] >> (written[i] % 64) & 1);
	const uint64_t untouched[] = {FAR2 / 4096 + 1, FAR3 / 4096 + 1, FAR / 4096 + 1};
	for (size_t i = 0; i < sizeof(untouched) / sizeof(untouched[0]); i++)
		assert_false(bits[untouched[i] / 64] >> (untouched[i] % 64) & 1);
	uint64_t v = 0;
	assert_int_equal(vm_copy_from(vm, &v, FAR, sizeof(v)), 0);
	assert_true(v == 7);
	assert_int_equal(vm_unlog_writes(vm), 0);
	vm_destroy(vm);
}

/* Logging switched on where one slot refuses: the slots switched before it go back, so that no
 * slot logs while the machine says none does (KVM_GET_DIRTY_LOG: ENOENT on each), and the next
 * switch works for all. The refusal: a slot KVM does not have, over another (EEXIST). */
static void log_all_or_none(void **state)
{
	(void)state;
	struct vm *vm = machine();
	struct kvm_slots *s = &KV(vm)->slots;
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ | PROT_WRITE), 0);
	assert_true(s->n == 3 && s->cap > s->n);
	s->slot[s->n++] = (struct kvm_slot){0, 1};
	assert_true(vm_log_writes(vm) < 0);
	s->n--;
	assert_false(vm_logging(vm));
	assert_false(s->logging);
	static uint64_t dlog[64 * MIB / 4096 / 64];
	for (uint32_t i = 0; i < s->n; i++) {
		struct kvm_dirty_log d = {.slot = i, .dirty_bitmap = dlog};
		assert_int_equal(ioctl(KV(vm)->vmfd, KVM_GET_DIRTY_LOG, &d), -1);
		assert_int_equal(errno, ENOENT);
	}
	assert_int_equal(vm_log_writes(vm), 0);
	run_at(vm, 0x0a);
	const uint64_t *bits;
	size_t words;
	assert_int_equal(vm_take_written(vm, &bits, &words), 0);
	assert_true(bits[FAR / 4096 / 64] >> (FAR / 4096 % 64) & 1);
	vm_destroy(vm);
}

/* No slot to be had (KVM_CAP_NR_MEMSLOTS reached): the mapping fails with ENOSPC before any PTE
 * is written, and works once a slot can be made */
static void no_slot_left(void **state)
{
	(void)state;
	struct vm *vm = machine();
	struct kvm_slots *s = &KV(vm)->slots;
	uint32_t max = s->max;
	s->max = s->n;
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ | PROT_WRITE), -ENOSPC);
	assert_true(pte_at(vm, FAR) == 0);
	assert_false(in_slot(vm, FAR));
	assert_int_equal(slot_bytes(vm), 12 * MIB);
	s->max = max;
	const uint64_t marker = 0x5105ULL;
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_copy_to(vm, FAR, &marker, sizeof(marker)), 0);
	assert_true(run_at(vm, 0) == marker);
	vm_destroy(vm);
}

/* the emulation state of a process on vm, its break at brk */
static struct sys_state *process(struct vm *vm, uint64_t brk)
{
	struct sys_process proc = {.brk_start = brk, .mmap_hi = 48 * MIB, .cpus = 1};
	struct sys_state *st = calloc(1, sizeof(*st));
	assert_non_null(st);
	assert_int_equal(sys_init(st, vm, &proc), 0);
	return st;
}

/* A brk into memory with no slot to be had fails and leaves nothing mapped there, so that the
 * next one, once a slot can be made, grows the heap (a mapping left behind would stop it) */
static void brk_without_slot(void **state)
{
	(void)state;
	struct vm *vm = machine();
	struct sys_state *st = process(vm, FAR);
	struct kvm_slots *s = &KV(vm)->slots;
	uint32_t max = s->max;
	s->max = s->n;
	assert_true(sys_brk_to(st, FAR + 4096) == (long)FAR);
	assert_null(sys_vma_find(st, FAR));
	s->max = max;
	assert_true(sys_brk_to(st, FAR + 4096) == (long)(FAR + 4096));
	assert_non_null(sys_vma_find(st, FAR));
	assert_true(pte_at(vm, FAR) & 1);
	sys_free(st);
	free(st);
	vm_destroy(vm);
}

/* the memory call nr of sys_mem_table with a */
static long mem_call(struct sys_state *st, int nr, uint64_t a0, uint64_t a1, uint64_t a2,
		     uint64_t a3)
{
	const uint64_t a[6] = {a0, a1, a2, a3, (uint64_t)-1, 0};
	for (const struct sys_entry *e = sys_mem_table; e->name; e++)
		if (e->nr == nr)
			return e->fn(st, a);
	fail_msg("no memory call %d", nr);
	return 0;
}

/* mprotect of reserved memory (PROT_NONE: no PTE, no slot) to PROT_READ with no slot to be had:
 * ENOMEM, and the program's map still says PROT_NONE, as the PTEs do; once a slot can be made,
 * both say PROT_READ */
static void mprotect_without_slot(void **state)
{
	(void)state;
	struct vm *vm = machine();
	struct sys_state *st = process(vm, 32 * MIB);
	assert_true(mem_call(st, SYS_mmap, FAR, 8192, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED) == (long)FAR);
	struct kvm_slots *s = &KV(vm)->slots;
	uint32_t max = s->max;
	s->max = s->n;
	assert_int_equal(mem_call(st, SYS_mprotect, FAR, 4096, PROT_READ, 0), -ENOMEM);
	assert_int_equal(sys_vma_find(st, FAR)->prot, PROT_NONE);
	assert_true(pte_at(vm, FAR) == 0);
	s->max = max;
	assert_int_equal(mem_call(st, SYS_mprotect, FAR, 4096, PROT_READ, 0), 0);
	assert_int_equal(sys_vma_find(st, FAR)->prot, PROT_READ);
	assert_true(pte_at(vm, FAR) & 1);
	sys_free(st);
	free(st);
	vm_destroy(vm);
}

struct spinner {
	struct vm *vm;
	struct vm_exit e;
	uint64_t rbx;
};

static void *spin(void *p)
{
	struct spinner *t = p;
	vm_cpu_run(t->vm, 1, 0, &t->e);
	struct vm_regs r = {0};
	vm_cpu_get_regs(t->vm, 1, &r);
	t->rbx = r.rbx;
	return NULL;
}

/* One vCPU runs while another thread maps memory that has no slot yet (a thread's mmap while
 * its sibling runs): the slot is made under the running vCPU, which reads the memory at once */
static void slot_while_running(void **state)
{
	(void)state;
	struct vm *vm = machine_of(64 * MIB, 2);
	struct vm_regs r = {.rip = CODE + SPIN, .rsp = DATA + 2048, .rflags = 2};
	assert_int_equal(vm_cpu_set_regs(vm, 1, &r), 0);
	struct spinner t = {vm, {0}, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, spin, &t), 0);
	volatile uint64_t *tick = vm_guest(vm, TICK, 8), *flag = vm_guest(vm, FLAG, 8);
	while (!*tick) /* the vCPU is in the guest */
		sched_yield();
	const uint64_t marker = 0x2c9e5ULL;
	assert_false(in_slot(vm, FAR));
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ), 0);
	assert_int_equal(vm_copy_to(vm, FAR, &marker, sizeof(marker)), 0);
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	expect_out(&t.e);
	assert_true(t.rbx == marker);
	vm_destroy(vm);
}

/* The smallest machine is one slot, all of it; the largest has the first 8 MiB and its top
 * (the page tables' 128 MiB, 2 MiB below them) and reaches memory anywhere once mapped */
static void sizes(void **state)
{
	(void)state;
	struct vm *vm = machine_of(8 * MIB, 1);
	assert_int_equal(KV(vm)->slots.n, 1);
	assert_int_equal(slot_bytes(vm), 8 * MIB);
	vm_destroy(vm);
	vm = machine_of(64ULL << 30, 1);
	assert_int_equal(KV(vm)->slots.n, 2);
	assert_int_equal(slot_bytes(vm), (8 + 128 + 2) * MIB);
	const uint64_t at[] = {40ULL << 30, vm_user_top(vm) - 130 * MIB - 4096};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		assert_false(in_slot(vm, at[i]));
		assert_int_equal(vm_protect(vm, at[i], 4096, PROT_READ), 0);
		assert_int_equal(vm_copy_to(vm, at[i], &at[i], 8), 0);
		assert_true(run_rax(vm, HIGH, at[i]) == at[i]);
	}
	vm_destroy(vm);
}

/* A machine emptied for another program (a shell, a fork's child) keeps its slots and reaches
 * memory there and elsewhere again */
static void emptied(void **state)
{
	(void)state;
	struct vm *vm = machine();
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ), 0);
	assert_int_equal(vm_empty(vm), 0);
	assert_true(pte_at(vm, FAR) == 0);
	assert_int_equal(vm_protect(vm, CODE, 4096, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(vm_protect(vm, DATA, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_copy_to(vm, CODE, code, sizeof(code)), 0);
	const uint64_t marker = 0xe3b7ULL;
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ), 0);
	assert_int_equal(vm_copy_to(vm, FAR, &marker, sizeof(marker)), 0);
	assert_true(run_at(vm, 0) == marker);
	assert_int_equal(vm_protect(vm, FAR2, 4096, PROT_READ), 0);
	assert_int_equal(vm_copy_to(vm, FAR2, &marker, sizeof(marker)), 0);
	assert_true(run_at(vm, 0x24) == marker);
	vm_destroy(vm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(slots_where_mapped),
	    cmocka_unit_test(tables_put_back),
	    cmocka_unit_test(logged_across_slots),
	    cmocka_unit_test(log_all_or_none),
	    cmocka_unit_test(no_slot_left),
	    cmocka_unit_test(brk_without_slot),
	    cmocka_unit_test(mprotect_without_slot),
	    cmocka_unit_test(slot_while_running),
	    cmocka_unit_test(sizes),
	    cmocka_unit_test(emptied),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

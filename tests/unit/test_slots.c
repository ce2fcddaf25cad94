/* KVM's memory slots: made only where the guest's page tables map, reached at once, logged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "vm/vm_kvm.h"

#define MIB  (1ULL << 20)
#define CODE 0x400000ULL  /* chunk 2: read and execute */
#define DATA 0x401000ULL  /* chunk 2: read and write */
#define FAR  0x1400000ULL /* chunk 10: no slot until something maps it */
#define NEAR 0x1800000ULL /* chunk 12: beside it */
#define FAR2 0x2003000ULL /* chunk 16 */

/* mov FAR,%rbx; out 0x11 | movq $7,FAR; movq $9,DATA; out 0x11 | mov FAR2,%rbx; out 0x11 */
static const uint8_t code[] = {
    0x48, 0x8b, 0x1c, 0x25, 0x00, 0x00, 0x40, 0x01, 0xe6, 0x11,		    /* 0x00 */
    0x48, 0xc7, 0x04, 0x25, 0x00, 0x00, 0x40, 0x01, 0x07, 0x00, 0x00, 0x00, /* 0x0a */
    0x48, 0xc7, 0x04, 0x25, 0x00, 0x10, 0x40, 0x00, 0x09, 0x00, 0x00, 0x00, /* 0x16 */
    0xe6, 0x11,								    /* 0x22 */
    0x48, 0x8b, 0x1c, 0x25, 0x00, 0x30, 0x00, 0x02, 0xe6, 0x11,		    /* 0x24 */
};

/* 1 when a slot covers the 2 MiB at addr */
static int in_slot(struct vm *vm, uint64_t addr)
{
	return KV(vm)->slots.in[addr >> 21];
}

static struct vm *machine(void)
{
	struct vm_config c = {64ULL << 20, VM_BACKEND_KVM, 1};
	struct vm *vm = NULL;
	char err[200];
	if (vm_create(&c, &vm, err, sizeof(err)) != VM_OK)
		fail_msg("vm_create: %s (this test needs a working /dev/kvm)", err);
	assert_int_equal(vm_protect(vm, CODE, 4096, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(vm_protect(vm, DATA, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_copy_to(vm, CODE, code, sizeof(code)), 0);
	return vm;
}

static uint64_t slot_bytes(struct vm *vm)
{
	struct vm_maps m = {0};
	struct vm_hold h;
	vm_host_hold(vm, &m, &h);
	return h.slot_bytes;
}

/* runs from CODE + off to the next out: rbx */
static uint64_t run_at(struct vm *vm, uint64_t off)
{
	struct vm_regs r = {.rip = CODE + off, .rsp = DATA + 4096, .rflags = 2};
	assert_int_equal(vm_set_regs(vm, &r), 0);
	struct vm_exit e;
	vm_run(vm, &e);
	if (e.kind != VM_EXIT_HYPERCALL || e.port != 0x11)
		fail_msg("exit kind %d port %#x vector %d at %#llx (%s)", (int)e.kind, e.port,
			 e.vector, (unsigned long long)e.rip, e.msg);
	assert_int_equal(vm_get_regs(vm, &r), 0);
	return r.rbx;
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
	assert_true(run_at(b, 0) == marker);
	assert_true(in_slot(b, FAR));
	assert_false(in_slot(b, FAR2));
	vm_destroy(a);
	vm_destroy(b);
}

/* with dirty logging on, a write to memory in a slot made before and one made after the log
 * was switched on both show, each at its own page, and nothing else the guest did */
static void logged_across_slots(void **state)
{
	(void)state;
	struct vm *vm = machine();
	assert_int_equal(vm_log_writes(vm), 0);
	assert_int_equal(vm_protect(vm, FAR, 4096, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vm_protect(vm, FAR2, 4096, PROT_READ), 0);
	assert_true(in_slot(vm, FAR2) && KV(vm)->slots.n == 4);
	const uint64_t *bits;
	size_t words;
	assert_int_equal(vm_take_written(vm, &bits, &words), 0);
	vm_written_done(vm);
	run_at(vm, 0x0a);
	run_at(vm, 0x24); /* a read in chunk 16: not a write */
	assert_int_equal(vm_take_written(vm, &bits, &words), 0);
	assert_true(words == (64 * MIB / 4096) / 64);
	uint64_t far = FAR / 4096, data = DATA / 4096, far2 = FAR2 / 4096;
	assert_true(bits[far / 64] >> (far % 64) & 1);
	assert_true(bits[data / 64] >> (data % 64) & 1);
	assert_false(bits[far2 / 64] >> (far2 % 64) & 1);
	uint64_t v = 0;
	assert_int_equal(vm_copy_from(vm, &v, FAR, sizeof(v)), 0);
	assert_true(v == 7);
	assert_int_equal(vm_unlog_writes(vm), 0);
	vm_destroy(vm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(slots_where_mapped),
	    cmocka_unit_test(tables_put_back),
	    cmocka_unit_test(logged_across_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A site called through its function's padding (a Go program's, without page 0: abi.h's
 * EMBER_RT_ENTRY_REL): a thread stopped at the padding's call is put back on the site's jmp, one
 * at the jmp back goes on to the site's end (sys_rt_stopped), and nothing else moves: not a
 * padding whose site is not in the runtime's table, not a call elsewhere, not trap mode. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "machine.h"
#include "sys/sys.h"

#define SITE 0x400010ULL /* the site's `jmp rel8`, 2 bytes */
#define PAD  0x400040ULL /* its padding: call rel32, jmp rel8 */

struct fixture {
	struct vm *vm;
	struct sys_state st;
	struct proc_thread t;
};

/* the runtime's control block and table with the site's end; the site and its padding as the
 * loader writes them (image/load.c) */
static int setup(void **state)
{
	static struct fixture f;
	memset(&f, 0, sizeof(f));
	f.vm = test_machine();
	f.st.vm = f.vm;
	f.st.rt = sys_rt_of(1);
	struct ember_rt_ctl *c = vm_guest(f.vm, EMBER_RT_CTL, sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->magic = EMBER_RT_MAGIC;
	c->nsites = 1;
	*(uint32_t *)vm_guest(f.vm, EMBER_RT_SITES, 4) = (uint32_t)(SITE + 2);
	uint8_t *p = vm_guest(f.vm, SITE, 2), *q = vm_guest(f.vm, PAD, EMBER_RT_PAD_LEN);
	p[0] = 0xeb;
	p[1] = (uint8_t)(PAD - (SITE + 2));
	int32_t rel = (int32_t)((int64_t)EMBER_RT_ENTRY_REL - (int64_t)(PAD + 5));
	q[0] = 0xe8;
	memcpy(q + 1, &rel, 4);
	q[5] = 0xeb;
	q[6] = (uint8_t)(int8_t)((int64_t)(SITE + 2) - (int64_t)(PAD + 7));
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	vm_destroy(f->vm);
	return 0;
}

/* rip after sys_rt_stopped from `from`, and whether the registers were marked changed */
static uint64_t stopped_at(struct fixture *f, uint64_t from, int *dirty)
{
	memset(&f->t, 0, sizeof(f->t));
	f->t.regs.rip = from;
	f->st.rt->stopped(&f->st, &f->t);
	*dirty = f->t.regs_dirty;
	return f->t.regs.rip;
}

static void back_on_the_site(void **state)
{
	struct fixture *f = *state;
	int dirty;
	assert_int_equal(stopped_at(f, PAD, &dirty), SITE);
	assert_true(dirty);
	assert_int_equal(stopped_at(f, PAD + 5, &dirty), SITE + 2);
	assert_true(dirty);
	/* anywhere else, the site's jmp and its end included: nothing moves */
	static const uint64_t stay[] = {SITE, SITE + 2, PAD + 1, PAD + 7, 0x400000, 0};
	for (size_t i = 0; i < sizeof(stay) / sizeof(stay[0]); i++) {
		assert_int_equal(stopped_at(f, stay[i], &dirty), stay[i]);
		assert_false(dirty);
	}
}

static void not_a_site_of_the_table(void **state)
{
	struct fixture *f = *state;
	int dirty;
	uint32_t *tab = vm_guest(f->vm, EMBER_RT_SITES, 4);
	*tab = (uint32_t)(SITE + 4); /* another site's end */
	assert_int_equal(stopped_at(f, PAD, &dirty), PAD);
	assert_false(dirty);
	*tab = (uint32_t)(SITE + 2);
	/* a call rel32 that does not lead to the runtime's entry */
	uint8_t *q = vm_guest(f->vm, PAD + 1, 1);
	q[0] ^= 1;
	assert_int_equal(stopped_at(f, PAD, &dirty), PAD);
	q[0] ^= 1;
	assert_int_equal(stopped_at(f, PAD, &dirty), SITE);
}

static void trap_mode_moves_nothing(void **state)
{
	struct fixture *f = *state;
	int dirty;
	f->st.rt = sys_rt_of(0);
	assert_int_equal(stopped_at(f, PAD, &dirty), PAD);
	assert_false(dirty);
	f->st.rt = sys_rt_of(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(back_on_the_site),
	    cmocka_unit_test(not_a_site_of_the_table),
	    cmocka_unit_test(trap_mode_moves_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

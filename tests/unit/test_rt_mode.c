/* The syscall modes' table (src/sys/sys_rt_mode.c) without a machine: a mode is found by its
 * exact name or by a process's flag, the two agree, and the trap mode's row claims nothing of
 * the runtime's: no hypercall port, no bounce, no call of its own, no saved FPU state; and the
 * syscall counts' bitmap (sys.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sys/sys.h"

static void modes_by_name(void **state)
{
	(void)state;
	const struct sys_rt_ops *trap = sys_rt_named("trap"), *guest = sys_rt_named("guest");
	assert_non_null(trap);
	assert_non_null(guest);
	assert_ptr_not_equal(trap, guest);
	assert_string_equal(trap->name, "trap");
	assert_string_equal(guest->name, "guest");
	assert_int_equal(trap->guest, 0);
	assert_int_equal(guest->guest, 1);
	assert_ptr_equal(sys_rt_named(NULL), trap); /* no choice: the default */
	static const char *const bad[] = {"", "Guest", "TRAP", "guest ", "gues", "guests", "auto"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sys_rt_named(bad[i]))
			fail_msg("'%s' named a mode", bad[i]);
}

static void modes_by_flag(void **state)
{
	(void)state;
	/* what a snapshot keeps (sys_process.guest) gives back the mode it was made in */
	assert_ptr_equal(sys_rt_of(0), sys_rt_named("trap"));
	assert_ptr_equal(sys_rt_of(1), sys_rt_named("guest"));
	assert_ptr_equal(sys_rt_of(7), sys_rt_named("guest")); /* any true flag */
	assert_ptr_equal(sys_rt_of(-1), sys_rt_named("guest"));
}

static void every_entry_is_there(void **state)
{
	(void)state;
	const struct sys_rt_ops *m[] = {sys_rt_of(0), sys_rt_of(1)};
	for (size_t i = 0; i < 2; i++) /* the callers never test an entry before calling it */
		assert_true(m[i]->prepare && m[i]->setup && m[i]->begin && m[i]->exit &&
			    m[i]->hypercall && m[i]->bounce && m[i]->own_call && m[i]->read_input &&
			    m[i]->fpu_saved && m[i]->fds && m[i]->unread && m[i]->stopped);
}

static void trap_claims_nothing(void **state)
{
	(void)state;
	const struct sys_rt_ops *t = sys_rt_named("trap");
	struct sys_state st;
	memset(&st, 0, sizeof(st));
	st.rt = t;
	struct vm_regs r;
	memset(&r, 0, sizeof(r));
	r.rip = EMBER_RT_BASE + 16; /* even from the runtime's addresses */
	r.rax = 9;		    /* mmap: one the runtime owns in guest mode */
	st.pending = EMBER_HC_INPUT;
	assert_int_equal(t->setup(&st), 0);
	assert_int_equal(t->begin(&st), 0);
	assert_int_equal(t->hypercall(&st, EMBER_HC_INPUT), 0);
	assert_int_equal(t->hypercall(&st, EMBER_HC_FLUSH), 0);
	assert_int_equal(t->bounce(&st, &r), 0);
	assert_int_equal(r.rip, EMBER_RT_BASE + 16); /* and r is left alone */
	assert_int_equal(t->own_call(&st, &r), 0);
	assert_int_equal(t->fpu_saved(&st, &r), 0);
	t->exit(&st);
	assert_int_equal(st.outcome, SYS_RUNNING); /* no control block to find, none missed */
	/* read(0) into memory the guest has not mapped: EFAULT, and the request is not consumed */
	static const uint8_t req[] = "request";
	sys_set_input(&st, req, sizeof(req));
	assert_int_equal(t->read_input(&st, 0x10000, 4), -EFAULT);
	assert_int_equal(st.in_pos, 0);
}

/* the syscall counts' bitmap: the counted slots come back in order, edges of words included,
 * and a clear leaves every count zero */
static void stats_slots(void **state)
{
	(void)state;
	static struct sys_stats st;
	static const int slots[] = {0, 1, 63, 64, 200, 511, SYS_NR_MAX};
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		st.served[slots[i]] = i + 1;
		st.in_guest[slots[i]] = i;
		sys_stats_mark(&st, (size_t)slots[i]);
	}
	st.denied[64] = 3;
	st.exits[0] = 9;
	size_t k = 0;
	for (int i = sys_stats_next(&st, 0); i >= 0; i = sys_stats_next(&st, i + 1))
		assert_int_equal(i, slots[k++]);
	assert_int_equal(k, sizeof(slots) / sizeof(slots[0]));
	assert_int_equal(sys_stats_next(&st, SYS_NR_MAX + 1), -1);
	assert_int_equal(sys_stats_next(&st, 65), 200);
	sys_stats_clear(&st);
	static const struct sys_stats zero;
	assert_memory_equal(&st, &zero, sizeof(st));
	assert_int_equal(sys_stats_next(&st, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(modes_by_name),	    cmocka_unit_test(modes_by_flag),
	    cmocka_unit_test(every_entry_is_there), cmocka_unit_test(trap_claims_nothing),
	    cmocka_unit_test(stats_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The syscall modes: the trap mode's row of the runtime's table (no runtime: every syscall site
 * exits to the host), and the one place a mode is chosen, by name or by a process's flag. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "sys/sys.h"

static void trap_prepare(void)
{
}

static int trap_none(struct sys_state *st)
{
	(void)st;
	return 0;
}

static void trap_exit(struct sys_state *st)
{
	(void)st;
}

static int trap_hypercall(struct sys_state *st, int port)
{
	(void)st;
	(void)port;
	return 0;
}

static int trap_bounce(struct sys_state *st, struct vm_regs *r)
{
	(void)st;
	(void)r;
	return 0;
}

static int trap_own_call(struct sys_state *st, const struct vm_regs *r)
{
	(void)st;
	(void)r;
	return 0;
}

static long trap_read_input(struct sys_state *st, uint64_t addr, uint64_t len)
{
	struct sys_state *in = sys_in_of(st);
	size_t n = in->in_len - in->in_pos < len ? in->in_len - in->in_pos : len;
	uint8_t *dst = sys_user(st, addr, n, PROT_WRITE);
	if (!dst)
		return -EFAULT;
	if (n)
		memcpy(dst, in->in + in->in_pos, n);
	in->in_pos += n;
	return (long)n;
}

static size_t trap_unread(struct sys_state *st)
{
	struct sys_state *in = sys_in_of(st);
	return in->in_len - in->in_pos;
}

static void trap_give_back(struct sys_state *st)
{
	(void)st; /* no buffer: the host's position is the only one */
}

static int trap_fpu_saved(const struct sys_state *st, const struct vm_regs *r)
{
	(void)st;
	(void)r;
	return 0;
}

static int trap_fault(struct sys_state *st, struct vm_exit *e)
{
	(void)st;
	(void)e;
	return 0;
}

/* no site has a padding's call in trap mode */
static void trap_stopped(struct sys_state *st, struct proc_thread *t)
{
	(void)st, (void)t;
}

static int trap_site(struct sys_state *st, struct proc_thread *t)
{
	(void)st;
	(void)t;
	return 0;
}

static void trap_swap(struct sys_state *st, int cpu, struct proc_thread *t, struct proc_thread *u)
{
	(void)st, (void)cpu, (void)t, (void)u;
}

/* without the runtime the host keeps every thread's mask */
static uint64_t *trap_mask(struct sys_state *st, struct proc_thread *t)
{
	(void)st;
	return &t->sigmask;
}

static void trap_threads(struct sys_state *st, int n)
{
	(void)st, (void)n;
}

static void trap_signals(struct sys_state *st)
{
	(void)st;
}

static void trap_fds(struct sys_state *st, unsigned moved)
{
	(void)st, (void)moved;
}

static const struct sys_rt_ops sys_rt_trap = {
    .name = "trap",
    .guest = 0,
    .prepare = trap_prepare,
    .setup = trap_none,
    .begin = trap_none,
    .exit = trap_exit,
    .hypercall = trap_hypercall,
    .bounce = trap_bounce,
    .own_call = trap_own_call,
    .read_input = trap_read_input,
    .unread = trap_unread,
    .give_back = trap_give_back,
    .fpu_saved = trap_fpu_saved,
    .fault = trap_fault,
    .site = trap_site,
    .stopped = trap_stopped,
    .swap = trap_swap,
    .mask = trap_mask,
    .threads = trap_threads,
    .signals = trap_signals,
    .fds = trap_fds,
};

/* indexed by sys_process.guest */
static const struct sys_rt_ops *const modes[] = {&sys_rt_trap, &sys_rt_guest};

const struct sys_rt_ops *sys_rt_named(const char *name)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(name ? name : "trap", modes[i]->name))
			return modes[i];
	return NULL;
}

const struct sys_rt_ops *sys_rt_of(int guest)
{
	return modes[guest != 0];
}

/* Signals taken as a call's result instead of by a handler: rt_sigtimedwait (sigwait,
 * sigwaitinfo, sigtimedwait). While it waits the awaited signals are unblocked, as on Linux; the
 * one that comes makes the call again (sys.c's enter), which takes it. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "sys/sys.h"

#define SIG_BIT(s) (1ULL << ((s)-1))
#define NEVER	   (SIG_BIT(SIGKILL) | SIG_BIT(SIGSTOP))

/* the lowest signal of set pending for t or its process, taken off; 0 if none */
static int take(struct sys_state *st, struct proc_thread *t, uint64_t set)
{
	uint64_t ready = (t->pending | st->pr.pending) & set;
	for (int s = 1; s <= 64; s++) {
		if (!(ready & SIG_BIT(s)))
			continue;
		if (t->pending & SIG_BIT(s))
			t->pending &= ~SIG_BIT(s);
		else
			st->pr.pending &= ~SIG_BIT(s);
		st->rt->signals(st);
		return s;
	}
	return 0;
}

/* the siginfo of sig as the call gives it: its number and code, a sender of this process */
static long put_info(struct sys_state *st, uint64_t addr, int sig)
{
	int32_t info[32];
	memset(info, 0, sizeof(info));
	info[0] = sig;
	info[2] = st->sigcode[sig];
	if (st->sigcode[sig] <= 0) /* SI_USER, SI_TKILL, ...: the sender's pid and uid */
		info[4] = st->pid, info[5] = SYS_GUEST_UID;
	return addr && sys_put(st, addr, info, sizeof(info)) ? -EFAULT : sig;
}

static long sys_rt_sigtimedwait(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	uint64_t set;
	if (sys_retrying(st)) /* the mask it waited with goes */
		sys_set_sigmask(st, t, t->saved_mask);
	if (a[3] != 8)
		return -EINVAL;
	if (sys_get(st, &set, a[0], sizeof(set)))
		return -EFAULT;
	set &= ~NEVER;
	int sig = take(st, t, set);
	if (sig)
		return put_info(st, a[1], sig);
	if (sys_retrying(st)) /* the time passed, or another signal came: its handler runs */
		return t->expired ? -EAGAIN : -EINTR;
	uint64_t deadline = 0;
	if (a[2]) {
		struct timespec ts;
		if (sys_get(st, &ts, a[2], sizeof(ts)))
			return -EFAULT;
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L)
			return -EINVAL;
		uint64_t ns = (uint64_t)ts.tv_sec > UINT64_MAX / 1000000000ULL - 1
				  ? UINT64_MAX
				  : (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		if (!ns)
			return -EAGAIN;
		deadline = sys_deadline_in(st, ns);
	}
	t->saved_mask = sys_sigmask(st, t);
	sys_set_sigmask(st, t, t->saved_mask & ~set);
	return sys_wait(st, 0, 0, deadline);
}

const struct sys_entry sys_sigwait_table[] = {
    {SYS_rt_sigtimedwait, "rt_sigtimedwait", sys_rt_sigtimedwait, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};

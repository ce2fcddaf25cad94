/* What every syscall handler uses: the checked door for guest pointers (sys_user, sys_put,
 * sys_get), a wait and its deadline, a thread's signal mask, the end of the run (sys_stop), the
 * counts cleared. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "sys/sys.h"

void *sys_user(struct sys_state *st, uint64_t addr, uint64_t len, int prot)
{
	if (len == 0)
		return vm_guest(st->vm, addr, 0);
	/* page 0 is the in-guest runtime's sled in guest mode: a null pointer faults, as Linux's */
	if (addr > UINT64_MAX - len || addr < EMBER_PAGE_SIZE)
		return NULL;
	for (uint64_t a = addr; a < addr + len;) {
		const struct sys_vma *v = sys_vma_find(st, a);
		if (!v || (v->prot & prot) != prot || (v->prot & VM_PROT_FAULT))
			return NULL; /* a file's pages past its end too: EFAULT, as Linux */
		a = v->end;
	}
	return vm_guest(st->vm, addr, len);
}

int sys_put(struct sys_state *st, uint64_t addr, const void *src, size_t len)
{
	void *p = sys_user(st, addr, len, PROT_WRITE);
	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}

int sys_get(struct sys_state *st, void *dst, uint64_t addr, size_t len)
{
	const void *p = sys_user(st, addr, len, PROT_READ);
	if (!p)
		return -EFAULT;
	memcpy(dst, p, len);
	return 0;
}

void sys_stop(struct sys_state *st, enum sys_outcome o, int status, const char *fmt, ...)
{
	if (st->outcome != SYS_RUNNING)
		return; /* the first end is the one reported */
	if (o == SYS_SNAPSHOT)
		sys_fs_rt_snapshot(st);
	proc_stop(&st->pr);
	st->outcome = o;
	st->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
	va_end(ap);
}

void sys_stats_clear(struct sys_stats *s)
{
	for (int i = sys_stats_next(s, 0); i >= 0; i = sys_stats_next(s, i + 1))
		s->served[i] = s->denied[i] = s->in_guest[i] = 0;
	memset(s->used, 0, sizeof(s->used));
	memset(s->exits, 0, sizeof(s->exits));
}

long sys_wait(struct sys_state *st, uint64_t key, uint32_t bits, uint64_t deadline)
{
	struct proc_thread *t = sys_cur(st);
	proc_wait(&st->pr, t, key, bits, deadline);
	/* a signal that came while it ran, its kick too late to stop it before this call: the
	 * wait ends at once, as Linux's would not begin */
	if (sys_signal_ready(st, t))
		proc_rouse(&st->pr, t);
	return SYS_WAITS;
}

uint64_t sys_deadline_in(struct sys_state *st, uint64_t ns)
{
	if (st->redo)
		return sys_cur(st)->wdeadline;
	if (ns == UINT64_MAX)
		return 0;
	uint64_t now = base_now_ns();
	return ns > UINT64_MAX - now ? 0 : now + ns;
}

uint64_t sys_sigmask(struct sys_state *st, struct proc_thread *t)
{
	return *st->rt->mask(st, t);
}

void sys_set_sigmask(struct sys_state *st, struct proc_thread *t, uint64_t mask)
{
	const uint64_t never = (1ULL << (9 - 1)) | (1ULL << (19 - 1)); /* SIGKILL, SIGSTOP */
	*st->rt->mask(st, t) = mask & ~never;
}

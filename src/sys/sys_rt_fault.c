/* The in-guest runtime's faults, for the guest mode's row (sys_rt.c): a fault in its code while
 * it serves a call becomes that call's EFAULT, a call with no stack is served as a trapping
 * site's, and a call handed over from the runtime becomes its site's. */
#include <stdint.h>
#include <string.h>

#include "sys/sys.h"

/* A page or protection fault in the runtime's code while it serves a call (its control block
 * says which, its stack is in use), on an address outside its own area: it was copying from or
 * to a buffer the program named (read, write, their iovecs, a clock's result). Linux answers
 * such a call with EFAULT, so the runtime is sent to return that from the call
 * (EMBER_RT_EFAULT_ENTRY, rt_entry.S). Any other fault ends the run as a crash: in the entries
 * (a smashed return address into page 0), outside a call, on the runtime's own memory. A `call
 * *%rax` into page 0 that is no site ends at EMBER_RT_BADCALL, and a fault in the entries
 * outside a call came by the sled too: both are reported as the page fault at page 0 that the
 * jump there is on Linux. The registers are the guest's own, and what guest memory
 * says only decides whether the guest's RIP is moved. */
/* ret is the return address of a site rewritten to `call *%rax` (the table at EMBER_RT_SITES,
 * which the host wrote; the guest could change it, and gains nothing but its own call) */
static int known_site(struct sys_state *st, uint64_t ret)
{
	const struct ember_rt_ctl *c = sys_rt_ctl(st);
	const uint32_t *tab = vm_guest(st->vm, EMBER_RT_SITES, EMBER_RT_SITES_MAX * 4);
	uint64_t n = c && c->nsites < EMBER_RT_SITES_MAX ? c->nsites : 0, lo = 0, hi = n;
	while (tab && lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		if (tab[mid] < ret)
			lo = mid + 1;
		else
			hi = mid;
	}
	return tab && lo < n && tab[lo] == ret;
}

/* the end of the site whose padding's `call rel32` to EMBER_RT_ENTRY_REL is at rip (then the
 * `jmp rel8` back to the site's end), or 0 */
static uint64_t site_of_pad(struct sys_state *st, uint64_t rip)
{
	uint8_t b[EMBER_RT_PAD_LEN];
	int32_t rel;
	if (vm_copy_from(st->vm, b, rip, sizeof(b)) || b[0] != 0xe8 || b[5] != 0xeb)
		return 0;
	memcpy(&rel, b + 1, sizeof(rel));
	uint64_t end = rip + EMBER_RT_PAD_LEN + (uint64_t)(int64_t)(int8_t)b[6];
	return rip + 5 + (uint64_t)(int64_t)rel == EMBER_RT_ENTRY_REL && known_site(st, end) ? end
											     : 0;
}

/* the end of the site whose call to the runtime is at rip, or 0: `call *%rax` at the site, or
 * the call in its padding */
static uint64_t site_of_call(struct sys_state *st, uint64_t rip)
{
	uint8_t b[2];
	if (!vm_copy_from(st->vm, b, rip, 2) && b[0] == 0xff && b[1] == 0xd0)
		return known_site(st, rip + 2) ? rip + 2 : 0;
	return site_of_pad(st, rip);
}

/* Go's runtime finds the function of a signal's pc and its tables, which end before the
 * padding: a thread stopped at the padding's call goes back to the site's `jmp` (no effect of
 * its own, made again), at its `jmp` back on to the site's end */
void sys_rt_stopped(struct sys_state *st, struct proc_thread *t)
{
	uint64_t rip = t->regs.rip, end;
	if ((end = site_of_pad(st, rip)))
		t->regs.rip = end - 2;
	else if (rip >= 5 && (end = site_of_pad(st, rip - 5)))
		t->regs.rip = end;
	else
		return;
	t->regs_dirty = 1;
}

/* A page fault at a rewritten site's call to the runtime on the push of its return address:
 * the program made a system call with no stack (a `syscall` needs none). The thread goes past
 * the site and the call is served as a trapping site's. */
static int stackless_call(struct sys_state *st, struct proc_thread *t, const struct vm_exit *e)
{
	const struct vm_regs *r = &t->regs;
	uint64_t end;
	if (e->fault != VM_FAULT_PAGE || e->rip != r->rip || r->rsp < 8 ||
	    (e->addr & ~(EMBER_PAGE_SIZE - 1)) != ((r->rsp - 8) & ~(EMBER_PAGE_SIZE - 1)) ||
	    !(end = site_of_call(st, r->rip)))
		return 0;
	t->regs.rip = end;
	t->regs_dirty = 1;
	return 1;
}

int sys_rt_fault(struct sys_state *st, struct vm_exit *e)
{
	struct proc_thread *t = sys_cur(st);
	struct vm_regs r = t->regs;
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	struct ember_rt_cpu *a = sys_rt_area(st, st->pr.cur_cpu);
	uint64_t in_call = a ? a->in_call : 0, stack = EMBER_RT_CPU(st->pr.cur_cpu);
	if (stackless_call(st, t, e))
		return SYS_RT_CALL;
	if (e->fault == VM_FAULT_INVALID && e->rip == EMBER_RT_BADCALL) {
		uint64_t to = r.rax < EMBER_PAGE_SIZE ? r.rax : 0;
		e->fault = VM_FAULT_PAGE;
		e->addr = e->rip = to;
		return 0;
	}
	if (e->rip >= EMBER_RT_BASE && e->rip < EMBER_RT_ENTRY_END && (!c || !in_call)) {
		/* a jump into page 0 that the sled brought here (a return to a smashed address
		 * checked at rt_entry): on Linux the jump itself faults at page 0 */
		e->fault = VM_FAULT_PAGE;
		e->addr = e->rip = 0;
		return 0;
	}
	if ((e->fault != VM_FAULT_PAGE && e->fault != VM_FAULT_GP) || !c || !in_call ||
	    e->rip < EMBER_RT_ENTRY_END || e->rip >= EMBER_RT_BASE + EMBER_RT_CODE_SIZE ||
	    r.rsp < stack || r.rsp >= stack + EMBER_RT_CPU_SIZE ||
	    (e->fault == VM_FAULT_PAGE && ((e->addr >= EMBER_RT_BASE && e->addr < EMBER_RT_END) ||
					   (e->addr >= EMBER_RT_CPUS && e->addr < EMBER_RT_BASE))))
		return 0;
	t->regs.rip = EMBER_RT_EFAULT_ENTRY;
	t->regs_dirty = 1;
	return 1;
}

/* a call handed over at EMBER_RT_FORWARD_OUT: the program's stack pointer is at its site's
 * return address, which the host pops (the area's copy of it), so the call is served, waits,
 * restarts and is interrupted exactly as one made at a trapping site */
int sys_rt_site(struct sys_state *st, struct proc_thread *t)
{
	/* the return address as the entry saved it: the stack is not read (it may be gone) */
	const struct ember_rt_cpu *a = sys_rt_area(st, st->pr.cur_cpu);
	if (t->regs.rip != EMBER_RT_FORWARD_OUT + EMBER_HC_LEN || !a)
		return 0;
	t->regs.rip = a->site;
	t->regs.rsp += sizeof(uint64_t);
	t->regs_dirty = 1;
	return 1;
}

/* What the process layer's own files share: the ready queue and the vCPUs' host threads. */
#ifndef EMBER_PROC_IMPL_H
#define EMBER_PROC_IMPL_H

#include "proc/proc.h"

/* t leaves the ready queue (it is READY) */
void proc_unready(struct proc *p, struct proc_thread *t);
/* with more than one thread and vCPU, the other vCPUs' host threads take part */
void proc_spread(struct proc *p);
/* the workers of the vCPUs past the first end (proc_free) */
void proc_stop_workers(struct proc *p);

/* a thread inside the in-guest runtime (page 0's sled, the runtime's areas and code) holds
 * what the runtime keeps per vCPU: it stays on its vCPU until it leaves */
static inline int proc_in_runtime(const struct proc_thread *t)
{
	return t->regs.rip < EMBER_SYS_END;
}

#endif

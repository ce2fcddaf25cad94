/* Shared by the signal files: actions and delivery (sys_signal.c), the frame (sys_sigframe.c). */
#ifndef EMBER_SYS_SIG_H
#define EMBER_SYS_SIG_H

#include <stdint.h>

#include "sys/sys.h"

#define SA_RESTORER   0x04000000ULL /* the kernel's flags, beside glibc's */
#define SS_AUTODISARM (1U << 31)
#define GUEST_PID     1
#define SIG_BIT(s)    (1ULL << ((s)-1))
#define NEVER	      (SIG_BIT(SIGKILL) | SIG_BIT(SIGSTOP))

/* sp is on t's alternate stack */
static inline int sys_on_altstack(const struct proc_thread *t, uint64_t sp)
{
	return t->altstack[2] && sp > t->altstack[0] && sp <= t->altstack[0] + t->altstack[2];
}

/* sys_sigframe.c: builds the frame of sig for t (info: si_code, and a fault's address) and points
 * t at the handler; -1 when the frame cannot be written (the process then dies of SIGSEGV) */
int sys_push_frame(struct sys_state *st, struct proc_thread *t, int sig, int code, uint64_t addr,
		   int trapno);
/* rt_sigreturn: the frame read back, the thread's state restored from it */
long sys_rt_sigreturn(struct sys_state *st, const uint64_t a[6]);
/* sys_signal.c: the run ends, killed by sig */
void sys_killed(struct sys_state *st, int sig);

#endif

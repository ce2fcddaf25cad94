/* The in-guest runtime's host side as one table: the syscall mode (trap or guest), chosen once. */
#ifndef EMBER_SYS_RT_H
#define EMBER_SYS_RT_H

#include <stddef.h>
#include <stdint.h>

struct sys_state;
struct vm_exit;
struct vm_regs;
struct proc_thread;

#define SYS_RT_CALL 2 /* sys_rt_ops.fault: a system call after all */

/* What the host does for the in-guest runtime, per mode (sys_rt.c, sys_rt_mode.c). In "trap"
 * mode every syscall site exits to the host and each entry does what a machine without the
 * runtime needs (mostly nothing); in "guest" mode the runtime is mapped at EMBER_RT_BASE and
 * serves the common calls itself. The mode is chosen once per function (sys_rt_named, from its
 * configuration) and once per machine (sys_init, from sys_process.guest, which snapshots keep);
 * the callers call through the table and never test the mode. The image layer, which sys does
 * not reach, gets it as the one flag guest. */
struct sys_rt_ops {
	const char *name; /* "trap" or "guest", as --syscalls and ember_info name it */
	int guest;	  /* img_load maps the runtime and calls it from the sites proven safe */
	/* once per function, at configure: the TSC calibration runs then, not in a request */
	void (*prepare)(void);
	/* once per machine, after the image is loaded: the runtime's break and first arena */
	int (*setup)(struct sys_state *st);
	/* at the start of every run: clocks, entropy, metadata and the first piece of input */
	int (*begin)(struct sys_state *st);
	/* after every exit of the machine: the runtime's syscall counts and buffered output */
	void (*exit)(struct sys_state *st);
	/* a hypercall port other than EMBER_HC_SYSCALL: 1 if it is the runtime's and was served */
	int (*hypercall)(struct sys_state *st, int port);
	/* a call from a trapping site that the runtime serves (EMBER_RT_OWNED): 1 if r was sent
	 * there, to be served on the same exit */
	int (*bounce)(struct sys_state *st, struct vm_regs *r);
	/* 1 when the call in r is one the runtime makes for itself (not counted, may grow its
	 * arena) */
	int (*own_call)(struct sys_state *st, const struct vm_regs *r);
	/* read(0) served by the host into [addr, addr+len): the bytes read or -errno */
	long (*read_input)(struct sys_state *st, uint64_t addr, uint64_t len);
	/* the request's bytes not read yet, wherever they are (poll's answer for fd 0) */
	size_t (*unread)(struct sys_state *st);
	/* what the runtime's buffer holds of the request goes back to the host's position, and
	 * the buffer is left empty (before a fork or an execve: sys_in_share) */
	void (*give_back)(struct sys_state *st);
	/* stopped at the snapshot point with the function's FPU state saved in guest memory by
	 * the runtime: the snapshot needs no FPU state of its own */
	int (*fpu_saved)(const struct sys_state *st, const struct vm_regs *r);
	/* a fault: 1 when it was the runtime's, serving a call, on the program's memory, and the
	 * call was made to return -EFAULT (the run goes on); SYS_RT_CALL when it was a rewritten
	 * site's `call *%rax` that could not push its return address (the stack is gone, as
	 * after musl's __unmapself): the thread is past the site, and its call is to be served
	 * as a trapping site's; 0 when it ends the run, e then saying what the program did (a
	 * bad call into page 0 becomes the page fault it is) */
	int (*fault)(struct sys_state *st, struct vm_exit *e);
	/* a system call exit of t: one the runtime handed over from EMBER_RT_FORWARD_OUT becomes
	 * the call of the site it came from (its return address popped), as a trapping site's,
	 * and 1 is returned: the runtime gave it up, it is not sent back there (bounce) */
	int (*site)(struct sys_state *st, struct proc_thread *t);
	/* t's run stopped between two instructions (an interrupt: a slice's end, a signal, a
	 * kick): one stopped in a site's padding (EMBER_RT_ENTRY_REL) is put back on the site,
	 * so that no signal frame, traceback or snapshot sees it there */
	void (*stopped)(struct sys_state *st, struct proc_thread *t);
	/* t leaves vCPU cpu, or u comes to it: the runtime's per-vCPU copy of the thread's tid and
	 * signal mask follows (either may be NULL) */
	void (*swap)(struct sys_state *st, int cpu, struct proc_thread *t, struct proc_thread *u);
	/* where t's signal mask is kept now */
	uint64_t *(*mask)(struct sys_state *st, struct proc_thread *t);
	/* the process has n threads now */
	void (*threads)(struct sys_state *st, int n);
	/* the signals waiting for each vCPU's thread changed */
	void (*signals)(struct sys_state *st);
	/* fds 0 to 4 changed (told after the call that changed them; begin tells it too): moved
	 * has a bit for each that no longer names what Ember opened there (the runtime hands their
	 * calls to the host) */
	void (*fds)(struct sys_state *st, unsigned moved);
};

/* the guest mode's row (sys_rt.c); callers take a mode from the two below (sys_rt_mode.c) */
extern const struct sys_rt_ops sys_rt_guest;
/* its pieces, shared by sys_rt.c and sys_rt_fault.c: the runtime's control block and vCPU cpu's
 * area in guest memory (NULL when unmapped, or the block's magic is wrong), and its fault and
 * site entries */
struct ember_rt_ctl;
struct ember_rt_cpu;
struct vm_exit;
struct ember_rt_ctl *sys_rt_ctl(struct sys_state *st);
struct ember_rt_cpu *sys_rt_area(struct sys_state *st, int cpu);
int sys_rt_fault(struct sys_state *st, struct vm_exit *e);
int sys_rt_site(struct sys_state *st, struct proc_thread *t);
void sys_rt_stopped(struct sys_state *st, struct proc_thread *t);

/* the mode named so ("trap" when name is NULL); NULL when it is neither */
const struct sys_rt_ops *sys_rt_named(const char *name);
/* the mode of a machine whose sys_process.guest is guest */
const struct sys_rt_ops *sys_rt_of(int guest);

#endif

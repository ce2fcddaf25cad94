/* The syscall table, built from the family tables, the guest-pointer door and the run loop. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "sys/sys.h"

static struct sys_entry table[SYS_NR_MAX];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
	/* a later family's entry replaces an earlier one's: the bundle's calls the refusals */
	const struct sys_entry *families[] = {sys_deny_table,	sys_fs_table,  sys_fs_path_table,
					      sys_fs_dir_table, sys_mem_table, sys_io_table,
					      sys_time_table,	sys_proc_table};
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (const struct sys_entry *e = families[f]; e->name; e++)
			if (e->nr >= 0 && e->nr < SYS_NR_MAX)
				table[e->nr] = *e;
}

const char *sys_name(int nr)
{
	pthread_once(&table_once, build_table);
	return nr >= 0 && nr < SYS_NR_MAX && table[nr].name ? table[nr].name : NULL;
}

int sys_init(struct sys_state *st, struct vm *vm, const struct sys_process *proc)
{
	pthread_once(&table_once, build_table);
	memset(st, 0, sizeof(*st));
	st->vm = vm;
	st->proc = *proc;
	st->rt = sys_rt_of(proc->guest);
	st->brk_cur = proc->brk_start;
	st->out_limit = EMBER_OUTPUT_DEFAULT;
	st->open_fds = 0x7; /* 0, 1, 2; 3 only with code */
	return 0;
}

void sys_free(struct sys_state *st)
{
	free(st->vmas);
	free(st->out.data);
	free(st->log.data);
	st->vmas = NULL;
	st->out.data = st->log.data = NULL;
}

void sys_set_input(struct sys_state *st, const void *in, size_t len)
{
	st->in = in;
	st->in_len = len;
	st->in_pos = 0;
}

void sys_set_code(struct sys_state *st, const void *code, size_t len)
{
	st->code = code;
	st->code_len = len;
	st->code_pos = 0;
	st->open_fds |= 1u << EMBER_CODE_FD;
}

void *sys_user(struct sys_state *st, uint64_t addr, uint64_t len, int prot)
{
	if (len == 0)
		return vm_guest(st->vm, addr, 0);
	if (addr > UINT64_MAX - len)
		return NULL;
	for (uint64_t a = addr; a < addr + len;) {
		const struct sys_vma *v = sys_vma_find(st, a);
		if (!v || (v->prot & prot) != prot)
			return NULL;
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
	if (o == SYS_SNAPSHOT)
		sys_fs_rt_snapshot(st);
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

/* count: 0 for the in-guest runtime's calls of its own, which are not the program's */
static long dispatch(struct sys_state *st, uint64_t nr, const uint64_t a[6], int count)
{
	size_t slot = nr < SYS_NR_MAX ? nr : SYS_NR_MAX;
	const struct sys_entry *e = nr < SYS_NR_MAX ? &table[nr] : NULL;
	sys_stats_mark(&st->stats, slot);
	if (e && e->fn && (!e->when || e->when(st))) {
		st->stats.served[slot] += count;
		return e->fn(st, a);
	}
	st->stats.denied[slot] += count;
	return e && e->err ? -e->err : -ENOSYS;
}

/* the signal a process would have died of, per fault */
static const struct {
	enum vm_fault fault;
	int sig;
	const char *what;
} faults[] = {
    {VM_FAULT_PAGE, 11, "page fault"},
    {VM_FAULT_GP, 11, "general protection fault"},
    {VM_FAULT_DIVIDE, 8, "divide error"},
    {VM_FAULT_INVALID, 4, "invalid opcode"},
    {VM_FAULT_BREAK, 5, "breakpoint"},
    {VM_FAULT_SYSCALL, 31, "syscall instruction that was not rewritten"},
    {VM_FAULT_FLOAT, 8, "floating-point exception"},
    {VM_FAULT_ALIGN, 7, "alignment check"},
    {VM_FAULT_UNKNOWN, 11, "triple fault"},
};

static void crashed(struct sys_state *st, const struct vm_exit *e)
{
	st->fault = *e;
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		if (faults[i].fault != e->fault)
			continue;
		if (e->fault != VM_FAULT_PAGE) {
			sys_stop(st, SYS_SIGNALED, faults[i].sig, "%s at rip %#llx", faults[i].what,
				 (unsigned long long)e->rip);
			return;
		}
		uint64_t a = e->addr;
		const char *where =
		    a < EMBER_SYS_END ? " (null pointer)"
		    : a >= st->proc.stack_lo - EMBER_STACK_GUARD && a < st->proc.stack_lo
			? " (stack overflow)"
			: "";
		sys_stop(st, SYS_SIGNALED, faults[i].sig,
			 "page fault at address %#llx%s, rip %#llx", (unsigned long long)a, where,
			 (unsigned long long)e->rip);
		return;
	}
}

/* the first read of the request, or the explicit snapshot call, is where init ends */
static int at_snapshot_point(const struct vm_regs *r)
{
	if (r->rax == EMBER_SYS_SNAPSHOT)
		return 1;
	return (r->rax == SYS_read || r->rax == SYS_readv) && r->rdi == 0;
}

static int serve_syscall(struct sys_state *st)
{
	struct vm_regs r;
	if (vm_get_regs(st->vm, &r) < 0) {
		sys_stop(st, SYS_ERROR, 0, "cannot read the vCPU registers");
		return -1;
	}
	if (st->snap_armed && at_snapshot_point(&r)) {
		/* stop with the call unserved: every invocation restored from here serves it */
		st->pending = EMBER_HC_SYSCALL;
		sys_stop(st, SYS_SNAPSHOT, 0, "snapshot point");
		return 0;
	}
	st->pending = 0;
	if (st->rt->bounce(st, &r)) { /* the runtime serves it, on the same exit */
		if (vm_set_regs(st->vm, &r) < 0) {
			sys_stop(st, SYS_ERROR, 0, "cannot write the vCPU registers");
			return -1;
		}
		return 0;
	}
	const uint64_t a[6] = {r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9};
	long ret;
	int own = st->rt->own_call(st, &r); /* the runtime's own, not the program's */
	if (r.rax == EMBER_SYS_SNAPSHOT)
		ret = 0;
	else if (r.rax == EMBER_SYS_POOL && own)
		ret = sys_pool_grow(st, a[0]);
	else
		ret = dispatch(st, r.rax, a, !own);
	if (st->outcome != SYS_RUNNING)
		return 0;
	r.rax = (uint64_t)ret;
	/* the kernel clobbers rcx and r11 on syscall; programs expect nothing else to change */
	r.rcx = r.rip;
	r.r11 = r.rflags;
	if (vm_set_regs(st->vm, &r) < 0) {
		sys_stop(st, SYS_ERROR, 0, "cannot write the vCPU registers");
		return -1;
	}
	return 0;
}

void sys_handle_exit(struct sys_state *st, const struct vm_exit *e)
{
	st->stats.exits[e->kind]++;
	st->rt->exit(st); /* whatever the exit, the runtime's buffers are collected */
	if (st->outcome != SYS_RUNNING)
		return;
	switch (e->kind) {
	case VM_EXIT_HYPERCALL:
		if (e->port == EMBER_HC_SYSCALL)
			serve_syscall(st);
		else if (e->port != EMBER_HC_NOP && !st->rt->hypercall(st, e->port))
			sys_stop(st, SYS_SIGNALED, 11, "unknown hypercall port %#x", e->port);
		break;
	case VM_EXIT_FAULT: {
		struct vm_exit f = *e; /* the runtime's may say better what the program did */
		if (!st->rt->fault(st, &f))
			crashed(st, &f);
		break;
	}
	case VM_EXIT_TIMEOUT:
		sys_stop(st, SYS_TIMEOUT, 0, "timed out");
		break;
	default:
		sys_stop(st, SYS_ERROR, 0, "%s", e->msg);
		break;
	}
}

enum sys_outcome sys_run(struct sys_state *st)
{
	st->outcome = SYS_RUNNING;
	if (st->pending == EMBER_HC_SYSCALL)
		serve_syscall(st);
	else if (st->pending == EMBER_HC_INPUT)
		st->pending = 0; /* the runtime's begin put the request in its buffer already */
	while (st->outcome == SYS_RUNNING) {
		struct vm_exit e;
		vm_run(st->vm, &e);
		sys_handle_exit(st, &e);
	}
	return st->outcome;
}

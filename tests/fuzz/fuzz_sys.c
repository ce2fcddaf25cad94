/* The syscall emulation layer (src/sys) against a real virtine: a guest program initialised to
 * its snapshot point, then per input a few exits as the run loop sees them (syscalls with fuzzed
 * numbers, arguments, guest pointers and guest memory; other hypercalls; faults), the emulation
 * state and the page tables checked after each, and the reset back to the snapshot checked to
 * leave nothing of the input behind. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common.h"
#include "func/func.h"

#define PAGE	    EMBER_PAGE_SIZE
#define MAX_STEPS   8
#define DEADLINE_NS 2000000ULL /* a sleep is cut short here, as by an invocation's timeout */

/* the virtine of each syscall mode, [0] trap and [1] guest, loaded at first use */
static struct target {
	struct ember_function *fn;
	struct virtine *v;
} targets[2];

static struct target *target(int guest)
{
	struct target *t = &targets[guest];
	if (t->v)
		return t;
	const char *img = getenv("FUZZ_SYS_IMAGE");
	struct ember_config cfg = {.image = fz_guest(img && *img ? img : "counter.glibc"),
				   .backend = fz_backend(),
				   .syscalls = guest ? "guest" : "trap",
				   .pool_size = 1};
	char err[256];
	pool_shell_target(0); /* no machines made ahead in the background */
	FZ_CHECK(ember_load(&cfg, &t->fn, err, sizeof(err)) == 0, "ember_load: %s", err);
	FZ_CHECK(func_state(t->fn) == FUNC_WARM, "%s has no snapshot point", cfg.image);
	t->v = pool_take(&t->fn->pool);
	FZ_CHECK(t->v, "no virtine in the pool");
	return t;
}

/* a page of the stack the program never reaches: guest data the pointer arguments point into */
static uint64_t scratch(const struct sys_state *st)
{
	return st->proc.stack_lo;
}

static int writable(const struct sys_state *st, uint64_t a)
{
	const struct sys_vma *v = sys_vma_find(st, a);
	return v && (v->prot & PROT_WRITE);
}

/* The guest writes its own memory (only what it may write): the scratch page, the in-guest
 * runtime's control block, or any writable mapping. */
static void patch(struct sys_state *st, struct fz *f)
{
	uint8_t where = fz_u8(f) % 3, idx = fz_u8(f);
	uint32_t off = fz_u32(f);
	size_t len = fz_u8(f), got;
	uint64_t a = scratch(st) + off % PAGE, room = PAGE - off % PAGE;
	if (where == 1 && st->proc.guest) {
		a = EMBER_RT_CTL + off % sizeof(struct ember_rt_ctl);
		room = EMBER_RT_CTL + sizeof(struct ember_rt_ctl) - a;
	} else if (where == 2 && st->nvma) {
		const struct sys_vma *v = &st->vmas[idx % st->nvma];
		a = v->start + off % (v->end - v->start);
		room = v->end - a;
	}
	len = len < room ? len : room;
	const uint8_t *src = fz_bytes(f, len, &got);
	for (size_t i = 0; i < got; i++)
		if (writable(st, a + i))
			*(uint8_t *)vm_guest(st->vm, a + i, 1) = src[i];
}

/* One argument: a number of some kind, or a guest pointer into (or just past) a mapping. */
static uint64_t arg(const struct sys_state *st, struct fz *f)
{
	uint8_t k = fz_u8(f);
	const uint64_t top = vm_user_top(st->vm), mem = vm_mem_size(st->vm);
	const uint64_t special[] = {0,
				    EMBER_SYS_END - 8,
				    EMBER_RT_CTL,
				    EMBER_RT_IN,
				    st->proc.brk_start,
				    st->brk_cur,
				    st->proc.mmap_hi - PAGE,
				    st->proc.stack_lo - 8,
				    top - 8,
				    top,
				    mem - 8,
				    mem,
				    1ULL << 47,
				    UINT64_MAX - 7};
	switch (k % 8) {
	case 0:
		return fz_u64(f);
	case 1:
		return (uint64_t)(int64_t)(int8_t)fz_u8(f); /* small, and -1 .. -128 */
	case 2:
		return fz_u16(f);
	case 3:
	case 4: {
		if (!st->nvma)
			return 0;
		const struct sys_vma *v = &st->vmas[(k >> 3) % st->nvma];
		return v->start + fz_u32(f) % (v->end - v->start + 2 * PAGE);
	}
	case 5:
		return scratch(st) + fz_u16(f) % PAGE;
	case 6:
		return special[(k >> 3) % (sizeof(special) / sizeof(special[0]))];
	default:
		return (uint64_t)fz_u8(f) << 12; /* a page number: mmap lengths, addresses */
	}
}

/* A syscall number: any of Linux's and Ember's (1000 and up) below 0x8000, one the emulation
 * names (served or refused) above, or anything at all (the corpus's regress-* inputs keep the
 * meaning they were found with). */
static uint64_t number(uint16_t v, struct fz *f)
{
	static uint16_t known[SYS_NR_MAX + 2];
	static size_t nknown;
	if (!nknown) {
		for (int i = 0; i < SYS_NR_MAX; i++)
			if (sys_name(i))
				known[nknown++] = (uint16_t)i;
		known[nknown++] = EMBER_SYS_SNAPSHOT;
		known[nknown++] = EMBER_SYS_ARENA;
	}
	if (v == 0xffff)
		return fz_u64(f);
	return v & 0x8000 ? known[v % nknown] : v % 1100;
}

/* the registers of a syscall: the snapshot's, with the number, arguments and where it came
 * from (the program's site, the in-guest runtime's code, anywhere) */
static void syscall_regs(struct target *t, struct fz *f)
{
	struct sys_state *st = &t->v->st;
	struct vm_regs r = t->fn->snap.regs;
	r.rax = number(fz_u16(f), f);
	uint64_t *regs[6] = {&r.rdi, &r.rsi, &r.rdx, &r.r10, &r.r8, &r.r9};
	for (int i = 0; i < 6; i++)
		*regs[i] = arg(st, f);
	uint8_t from = fz_u8(f) % 4;
	if (from == 1)
		r.rip = EMBER_RT_BASE + 1 + fz_u16(f) % EMBER_RT_CODE_SIZE;
	else if (from == 2)
		r.rip = fz_u32(f);
	FZ_CHECK(vm_set_regs(t->v->vm, &r) == 0, "vm_set_regs");
}

static const int ports[] = {EMBER_HC_SYSCALL, EMBER_HC_SYSCALL, EMBER_HC_SYSCALL, EMBER_HC_SYSCALL,
			    EMBER_HC_INPUT,   EMBER_HC_FLUSH,	EMBER_HC_NOP,	  0x14};

/* one exit of the machine, as vm_run would have reported it */
static void step(struct target *t, struct fz *f)
{
	struct sys_state *st = &t->v->st;
	for (int n = fz_u8(f) % 4; n > 0; n--)
		patch(st, f);
	struct vm_exit e;
	memset(&e, 0, sizeof(e));
	uint8_t k = fz_u8(f);
	if (k < 0xf0) {
		e.kind = VM_EXIT_HYPERCALL;
		e.port = ports[k % (sizeof(ports) / sizeof(ports[0]))];
		if (e.port == EMBER_HC_SYSCALL)
			syscall_regs(t, f);
	} else if (k < 0xfc) {
		e.kind = VM_EXIT_FAULT;
		e.fault = (enum vm_fault)(fz_u8(f) % (VM_FAULT_UNKNOWN + 1));
		e.rip = fz_u64(f);
		e.addr = fz_u64(f);
	} else {
		e.kind = k & 1 ? VM_EXIT_TIMEOUT : VM_EXIT_ERROR;
		strcpy(e.msg, "fuzzed machine error");
	}
	sys_handle_exit(st, &e);
}

/* the emulation state is one the rest of Ember can trust */
FZ_UNTRACED static void check_state(const struct sys_state *st)
{
	const uint64_t top = vm_user_top(st->vm);
	for (size_t i = 0; i < st->nvma; i++) {
		const struct sys_vma *v = &st->vmas[i];
		FZ_CHECK(v->start < v->end && v->start % PAGE == 0 && v->end % PAGE == 0,
			 "mapping %zu: %#lx-%#lx", i, v->start, v->end);
		FZ_CHECK(v->end <= top && !(v->prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)),
			 "mapping %zu: %#lx-%#lx prot %d", i, v->start, v->end, v->prot);
		FZ_CHECK(v->start >= EMBER_SYS_END ||
			     (st->proc.guest && (v->start == 0 || v->start >= EMBER_RT_CPUS)),
			 "mapping %zu at %#lx, among the host's structures", i, v->start);
		FZ_CHECK(i == 0 || st->vmas[i - 1].end <= v->start, "mappings %zu and %zu overlap",
			 i - 1, i);
	}
	FZ_CHECK(st->brk_cur >= st->proc.brk_start, "break %#lx below its start", st->brk_cur);
	FZ_CHECK(st->out.len + st->log.len <= st->out_limit, "output past its limit");
	FZ_CHECK(st->nwr <= sizeof(st->wr) / sizeof(st->wr[0]), "nwr %zu", st->nwr);
	FZ_CHECK(st->in_pos <= st->in_len && st->meta_pos <= st->meta_len, "read past the input");
	FZ_CHECK(st->outcome >= SYS_RUNNING && st->outcome <= SYS_SNAPSHOT, "outcome %d",
		 st->outcome);
	FZ_CHECK(st->outcome != SYS_SIGNALED || (st->status >= 1 && st->status <= 64), "signal %d",
		 st->status);
	FZ_CHECK(st->outcome == SYS_RUNNING || st->msg[0], "an outcome without a message");
}

/* after the reset: the snapshot's map, its pages, and zeros wherever it had none */
FZ_UNTRACED static void check_reset(struct target *t)
{
	const struct snap *s = &t->fn->snap;
	struct sys_state *st = &t->v->st;
	struct vm *vm = t->v->vm;
	static const uint8_t zero[PAGE];
	FZ_CHECK(st->nvma == s->sys.nvma &&
		     !memcmp(st->vmas, s->sys.vmas, st->nvma * sizeof(st->vmas[0])),
		 "the map differs from the snapshot's (%zu mappings, %zu)", st->nvma, s->sys.nvma);
	for (size_t i = 0; i < s->npages; i++)
		FZ_CHECK(!memcmp(vm_guest(vm, s->pages[i], PAGE), s->data + i * PAGE, PAGE),
			 "page %#lx differs from the snapshot's", s->pages[i]);
	for (size_t i = 0; i < st->nvma; i++) {
		uint64_t lo, hi;
		for (uint64_t a = st->vmas[i].start;
		     a < st->vmas[i].end && vm_next_data(vm, a, st->vmas[i].end, &lo, &hi) > 0;
		     a = hi)
			for (uint64_t p = lo; p < hi; p += PAGE) {
				size_t k = snap_page_index(s, p);
				FZ_CHECK((k < s->npages && s->pages[k] == p) ||
					     !memcmp(vm_guest(vm, p, PAGE), zero, PAGE),
					 "page %#lx is not the snapshot's and not zero", p);
			}
	}
	fz_check_ptes(vm, st->vmas, st->nvma);
}

struct job {
	struct target *t;
	struct fz f;
};

/* an invocation's worth of exits, on the machine's thread */
static void run(void *p)
{
	struct job *j = p;
	struct sys_state *st = &j->t->v->st;
	struct vm *vm = j->t->v->vm;
	size_t n;
	const uint8_t *in = fz_bytes(&j->f, fz_u8(&j->f), &n);
	sys_set_input(st, in, n);
	const uint8_t *meta = fz_bytes(&j->f, fz_u8(&j->f), &n);
	sys_set_meta(st, meta, n);
	st->start_ns = base_now_ns();
	st->outcome = SYS_RUNNING;
	FZ_CHECK(vm_set_deadline(vm, st->start_ns + DEADLINE_NS) == 0, "deadline");
	FZ_CHECK(st->rt->begin(st) == 0, "the runtime's begin");
	for (int k = 0; k < MAX_STEPS && st->outcome == SYS_RUNNING && j->f.n; k++) {
		step(j->t, &j->f);
		check_state(st);
	}
	vm_set_deadline(vm, 0);
	fz_check_ptes(vm, st->vmas, st->nvma);
	size_t touched;
	FZ_CHECK(snap_reset(&j->t->fn->snap, vm, st, &touched) == 0, "snap_reset failed");
	check_reset(j->t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct job j = {NULL, {data, size}};
	j.t = target(fz_u8(&j.f) & 1);
	vm_call(j.t->v->vm, run, &j);
	return 0;
}

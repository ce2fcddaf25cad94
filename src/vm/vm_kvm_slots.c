/* KVM's memory slots over guest RAM, made only where the guest's page tables may map: 2 MiB
 * chunks, not the whole RAM at once, for KVM keeps per-page arrays of each slot. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm/vm_kvm.h"
#include "vm/vm_x86.h"

/* Under PVM's shadow paging a slot costs 10 bytes of kernel memory per 4 KiB page it covers
 * (its reverse map and write tracking, docs/memory.md): 160 KiB for 64 MiB of RAM, of which a
 * warm hello uses under 1 MiB. A slot per run of chunks the page tables reach costs what is
 * used. Slots are made, never removed (removing one drops KVM's mappings of it), and the
 * chunks they cover stay reachable for the machine's life, across resets and reuse. */
#define CHUNK_SHIFT 21
#define INIT_LOW    (8ULL << 20)
#define INIT_TOP    (2ULL << 20) /* below the page tables' own 2 MiB and more */

/* the bytes of RAM in chunks [lo, hi) */
static uint64_t span(const struct vm *vm, uint32_t lo, uint32_t hi)
{
	uint64_t end = (uint64_t)hi << CHUNK_SHIFT;
	return (end < vm->mem_size ? end : vm->mem_size) - ((uint64_t)lo << CHUNK_SHIFT);
}

/* slot id over chunks [lo, hi), made or registered again, with dirty logging on or off */
static int set_slot(struct vm *vm, uint32_t id, uint32_t lo, uint32_t hi, int log)
{
	uint64_t gpa = (uint64_t)lo << CHUNK_SHIFT;
	struct kvm_userspace_memory_region r = {
	    .slot = id,
	    .flags = log ? KVM_MEM_LOG_DIRTY_PAGES : 0,
	    .guest_phys_addr = gpa,
	    .memory_size = span(vm, lo, hi),
	    .userspace_addr = (uint64_t)(uintptr_t)(vm->mem + gpa),
	};
	return ioctl(KV(vm)->vmfd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno : 0;
}

/* chunks [lo, hi) into one new slot, dirty logging as the others have it */
static int make_slot(struct vm *vm, uint32_t lo, uint32_t hi)
{
	struct kvm_slots *s = &KV(vm)->slots;
	if (s->n >= s->max)
		return -ENOSPC;
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 8;
		struct kvm_slot *p = realloc(s->slot, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->slot = p;
		s->cap = cap;
	}
	int rc = set_slot(vm, s->n, lo, hi, s->logging);
	if (rc)
		return rc;
	s->slot[s->n++] = (struct kvm_slot){lo, hi};
	/* after the slot exists: a thread that reads 1 without the lock (kvm_slots_cover) may
	 * write a PTE there at once */
	for (uint32_t c = lo; c < hi; c++)
		__atomic_store_n(&s->in[c], 1, __ATOMIC_RELEASE);
	s->bytes += span(vm, lo, hi);
	return 0;
}

/* A slot's fixed cost is ~5 pages of the kernel's (the reverse maps of its 2 MiB and 1 GiB
 * pages, its write tracking, two large-page tables: each vmalloc'd, a page at least), its cost
 * per 2 MiB one page: a gap of up to this many chunks between two that want a slot costs less
 * covered than a second slot */
#define GAP_CHUNKS 4

/* the end of the run of chunks from c that want a slot and have none, across gaps of at most
 * GAP_CHUNKS chunks that have none either (want NULL: every chunk below hi wants one) */
static uint32_t run_end(const struct kvm_slots *s, uint32_t c, uint32_t hi, const uint8_t *want)
{
	uint32_t e = c + 1;
	for (;;) {
		uint32_t g = e;
		while (g < hi && g - e < GAP_CHUNKS && !s->in[g] && want && !want[g])
			g++;
		if (g >= hi || s->in[g] || (want && !want[g]))
			return e;
		e = g + 1;
	}
}

/* a slot for each run of chunks in [lo, hi) that want one and have none */
static int make_runs(struct vm *vm, uint32_t lo, uint32_t hi, const uint8_t *want)
{
	struct kvm_slots *s = &KV(vm)->slots;
	for (uint32_t c = lo; c < hi;) {
		if (s->in[c] || (want && !want[c])) {
			c++;
			continue;
		}
		uint32_t e = run_end(s, c, hi, want);
		int rc = make_slot(vm, c, e);
		if (rc)
			return rc;
		c = e;
	}
	return 0;
}

/* 1 when a slot covers chunk c; without the lock, as another vCPU's thread may be making one */
static int covered(const struct kvm_slots *s, uint32_t c)
{
	return __atomic_load_n(&s->in[c], __ATOMIC_ACQUIRE);
}

int kvm_slots_cover(struct vm *vm, uint64_t lo, uint64_t hi)
{
	struct kvm_slots *s = &KV(vm)->slots;
	if (lo >= hi || lo >= vm->mem_size)
		return 0;
	if (hi > vm->mem_size)
		hi = vm->mem_size;
	uint32_t a = (uint32_t)(lo >> CHUNK_SHIFT), b = (uint32_t)((hi - 1) >> CHUNK_SHIFT) + 1;
	uint32_t c = a;
	while (c < b && covered(s, c))
		c++;
	if (c == b)
		return 0; /* the common case, on every mapping the program makes: no lock */
	pthread_mutex_lock(&s->lock);
	/* memory grows where it was mapped last (a heap up, mappings down): the chunks next to it
	 * that have no slot go into the same one, up to a gap's worth each way */
	uint32_t lo_c = c, hi_c = b;
	while (lo_c > 0 && c - lo_c < GAP_CHUNKS - 1 && !s->in[lo_c - 1])
		lo_c--;
	while (hi_c < s->nchunks && hi_c - b < GAP_CHUNKS - 1 && !s->in[hi_c])
		hi_c++;
	int rc = make_runs(vm, lo_c, hi_c, NULL);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int kvm_slots_init(struct vm *vm)
{
	struct kvm_vm *k = KV(vm);
	struct kvm_slots *s = &k->slots;
	s->nchunks = (uint32_t)((vm->mem_size + (1ULL << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT);
	s->in = calloc(s->nchunks, 1);
	s->want = calloc(s->nchunks, 1);
	if (!s->in || !s->want)
		return -ENOMEM;
	int max = ioctl(k->kvm, KVM_CHECK_EXTENSION, KVM_CAP_NR_MEMSLOTS);
	s->max = max > 0 ? (uint32_t)max : 32; /* KVM's count when it came to tell it */
	pthread_mutex_init(&s->lock, NULL);
	s->init = 1;
	/* The host's structures (GDT, IDT, TSS, the top of the page tables) and the page tables
	 * themselves, which KVM reads for every walk; with them where every program has its code
	 * and its stack: the first 8 MiB (the runtime, the image at 4 MiB) and the last 4 MiB. */
	uint64_t top = vm->mem_size - vm_x86_pt_bytes(vm->mem_size) - INIT_TOP;
	for (uint32_t c = 0; c < s->nchunks; c++)
		s->want[c] =
		    (uint64_t)c << CHUNK_SHIFT < INIT_LOW || (uint64_t)(c + 1) << CHUNK_SHIFT > top;
	int rc = make_runs(vm, 0, s->nchunks, s->want);
	memset(s->want, 0, s->nchunks);
	return rc;
}

void kvm_slots_free(struct kvm_vm *k)
{
	struct kvm_slots *s = &k->slots;
	if (s->init)
		pthread_mutex_destroy(&s->lock);
	free(s->in);
	free(s->want);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* The host is about to write [lo, hi) above user_top, where the page tables are: the chunks
 * those tables describe may be mapped after. Marked only; the next run makes their slots
 * (kvm_slots_sync), which reads what the tables map then: so such a write is made while no
 * vCPU runs. No path of Ember's writes tables so today (restores, forks and cold starts set
 * PTEs through vm_protect, which makes the slot first); this keeps the rule for one that
 * would copy table pages. */
void kvm_slots_tables(struct vm *vm, uint64_t lo, uint64_t hi)
{
	struct kvm_slots *s = &KV(vm)->slots;
	uint64_t pt_base = vm->mem_size - vm_x86_pt_bytes(vm->mem_size);
	if (!s->init || hi <= pt_base)
		return;
	if (lo < pt_base)
		lo = pt_base;
	/* one table page of 512 entries per 2 MiB: its offset times 512 is the memory it maps */
	uint64_t a = (lo - pt_base) * 512, b = (hi - pt_base) * 512;
	int any = 0;
	/* under the lock: a sync on another vCPU's thread clears the marks it has seen */
	pthread_mutex_lock(&s->lock);
	for (uint64_t c = a >> CHUNK_SHIFT; c < s->nchunks && (c << CHUNK_SHIFT) < b; c++)
		if (!s->in[c] && !s->want[c])
			s->want[c] = any = 1;
	if (any)
		atomic_store(&s->pending, 1);
	pthread_mutex_unlock(&s->lock);
}

/* 1 when the table page of chunk c maps anything */
static int maps_any(struct vm *vm, uint32_t c)
{
	uint64_t pt_base = vm->mem_size - vm_x86_pt_bytes(vm->mem_size);
	const uint64_t *pte = (const uint64_t *)(vm->mem + pt_base + ((uint64_t)c << 12));
	uint64_t any = 0;
	for (int i = 0; i < 512; i++)
		any |= pte[i];
	return (any & X86_PTE_P) != 0;
}

int kvm_slots_sync(struct vm *vm)
{
	struct kvm_slots *s = &KV(vm)->slots;
	if (!atomic_load(&s->pending))
		return 0;
	pthread_mutex_lock(&s->lock);
	for (uint32_t c = 0; c < s->nchunks; c++)
		if (s->want[c] && !s->in[c] && !maps_any(vm, c))
			s->want[c] = 0; /* a table page put back empty: nothing to reach there */
	int rc = make_runs(vm, 0, s->nchunks, s->want);
	if (!rc) {
		memset(s->want, 0, s->nchunks);
		atomic_store(&s->pending, 0);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* All slots or none: where one refuses (no memory for its log), those switched before it go
 * back as they were, so that every slot logs as s->logging says (a slot left logging would
 * cost the guest a fault per page written for nothing; one left not logging would make the
 * next read of the log fail). */
int kvm_slots_log(struct vm *vm, int on)
{
	struct kvm_slots *s = &KV(vm)->slots;
	pthread_mutex_lock(&s->lock);
	int rc = 0;
	uint32_t i = 0;
	while (i < s->n && !(rc = set_slot(vm, i, s->slot[i].lo, s->slot[i].hi, on)))
		i++;
	if (rc)
		while (i-- > 0)
			set_slot(vm, i, s->slot[i].lo, s->slot[i].hi, !on);
	else
		s->logging = on;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* each slot's log into its place in bits, one bit a page of RAM; chunks with no slot: zero */
int kvm_slots_dirty(struct vm *vm, uint64_t *bits)
{
	struct kvm_vm *k = KV(vm);
	struct kvm_slots *s = &k->slots;
	const size_t words = (1ULL << CHUNK_SHIFT) / 4096 / 64;
	pthread_mutex_lock(&s->lock);
	int rc = 0;
	for (uint32_t c = 0; c < s->nchunks; c++)
		if (!s->in[c])
			memset(bits + c * words, 0, words * sizeof(*bits));
	for (uint32_t i = 0; i < s->n && !rc; i++) {
		struct kvm_dirty_log d = {.slot = i, .dirty_bitmap = bits + s->slot[i].lo * words};
		if (ioctl(k->vmfd, KVM_GET_DIRTY_LOG, &d) < 0)
			rc = -errno;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Guest memory shared copy-on-write with a snapshot's one copy, and the record of written pages. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm/vm_impl.h"

#define PAGE	  EMBER_PAGE_SIZE
#define WORDS(vm) ((vm)->mem_size / PAGE / 64)

/* Every run is a host mapping, and a run in the middle of another splits it: the runs of all
 * machines of this process together stay under a quarter of the kernel's vm.max_map_count, so
 * that a function whose memory is fragmented (a language runtime's heap, a store that
 * deduplicated it page by page) copies its pages instead, and the process keeps the mappings it
 * needs for everything else (a vCPU, a snapshot, a file). Read again when vm_cow_budget_reset
 * says the limit changed. */
static atomic_long cow_runs;
static long cow_budget;
static pthread_once_t budget_once = PTHREAD_ONCE_INIT;

static void read_budget(void)
{
	long n = 65530; /* the kernel's default */
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%ld", &n) != 1 || n < 1024)
			n = 65530;
		fclose(f);
	}
	cow_budget = n / 4;
}

void vm_cow_budget_reset(void)
{
	pthread_once(&budget_once, read_budget);
	read_budget();
}

static int within_budget(void)
{
	pthread_once(&budget_once, read_budget);
	return atomic_load(&cow_runs) + 2 <= cow_budget;
}

long vm_cow_runs_total(void)
{
	return atomic_load(&cow_runs);
}

int vm_track_init(struct vm *vm)
{
	vm->host_w = calloc(WORDS(vm), sizeof(uint64_t));
	vm->written = calloc(WORDS(vm), sizeof(uint64_t));
	vm->holes = calloc(WORDS(vm), sizeof(uint64_t));
	return vm->host_w && vm->written && vm->holes ? 0 : -ENOMEM;
}

void vm_track_free(struct vm *vm)
{
	free(vm->host_w);
	free(vm->written);
	free(vm->holes);
	free(vm->cow);
	atomic_fetch_sub(&cow_runs, (long)vm->ncow);
	vm->host_w = vm->written = vm->holes = NULL;
	vm->cow = NULL;
	vm->ncow = vm->cow_cap = 0;
}

void vm_track_clear(struct vm *vm)
{
	memset(vm->host_w, 0, WORDS(vm) * sizeof(uint64_t));
	memset(vm->written, 0, WORDS(vm) * sizeof(uint64_t));
	memset(vm->holes, 0, WORDS(vm) * sizeof(uint64_t));
	atomic_fetch_sub(&cow_runs, (long)vm->ncow);
	vm->ncow = 0;
	vm->files = 0;
}

/* the bits of pages [first, last] in the bitmap w, set (on) or cleared, a word at a time */
static void bits_set(uint64_t *w, uint64_t first, uint64_t last, int on)
{
	for (uint64_t p = first; p <= last;) {
		uint64_t n = 64 - p % 64 < last - p + 1 ? 64 - p % 64 : last - p + 1;
		uint64_t m = (n == 64 ? ~0ULL : ((1ULL << n) - 1)) << (p % 64);
		w[p / 64] = on ? w[p / 64] | m : w[p / 64] & ~m;
		p += n;
	}
}

/* read by the reset: a logging virtine's written pages, and on KVM the pages the host used
 * besides those the guest's accessed bits show (vm_next_used); vm_written_done empties them */
void vm_mark_host(struct vm *vm, uint64_t addr, uint64_t len)
{
	if (vm->host_w && len)
		bits_set(vm->host_w, addr / PAGE, (addr + len - 1) / PAGE, 1);
}

/* [lo, hi) is a hole: it reads zero, so the reset's walk for data need not look there (a
 * logging virtine keeps its marks: a snapshot's page given back must be put back), but its
 * content changed without a write the dirty bits would show */
void vm_mark_hole(struct vm *vm, uint64_t lo, uint64_t hi)
{
	if (!vm->host_w || hi <= lo)
		return;
	if (!vm->logging)
		bits_set(vm->host_w, lo / PAGE, (hi - 1) / PAGE, 0);
	bits_set(vm->holes, lo / PAGE, (hi - 1) / PAGE, 1);
}

int vm_take_written(struct vm *vm, const uint64_t **bits, size_t *words)
{
	if (!vm->logging)
		return -EOPNOTSUPP;
	int rc = vm->ops->dirty_log(vm, vm->written);
	if (rc)
		return rc;
	for (size_t i = 0; i < WORDS(vm); i++)
		vm->written[i] |= vm->host_w[i];
	*bits = vm->written;
	*words = WORDS(vm);
	return 0;
}

void vm_written_done(struct vm *vm)
{
	if (vm->host_w) {
		memset(vm->host_w, 0, WORDS(vm) * sizeof(uint64_t));
		memset(vm->holes, 0, WORDS(vm) * sizeof(uint64_t));
	}
}

void vm_forget_written(struct vm *vm)
{
	if (!vm->logging || vm->ops->dirty_log(vm, vm->written) == 0)
		vm_written_done(vm);
}

int vm_log_writes(struct vm *vm)
{
	if (vm->logging)
		return 0;
	if (!vm->host_w || !vm->ops->log_writes)
		return -EOPNOTSUPP;
	int rc = vm->ops->log_writes(vm, 1); /* the log starts empty: from now on */
	if (rc)
		return rc;
	vm_written_done(vm);
	vm->logging = 1;
	return 0;
}

int vm_unlog_writes(struct vm *vm)
{
	if (!vm->logging)
		return 0;
	int rc = vm->ops->log_writes(vm, 0);
	if (!rc)
		vm->logging = 0;
	return rc;
}

int vm_logging(const struct vm *vm)
{
	return vm->logging;
}

/* the index of the first copy-on-write run ending above addr */
size_t vm_cow_at(const struct vm *vm, uint64_t addr)
{
	size_t lo = 0, hi = vm->ncow;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (vm->cow[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [lo, hi) no longer a copy-on-write run of the record (the caller maps over it); a run it
 * cuts in the middle becomes two, for which the caller made room */
static void cow_cut(struct vm *vm, uint64_t lo, uint64_t hi)
{
	for (size_t i = vm_cow_at(vm, lo); i < vm->ncow && vm->cow[i].lo < hi;) {
		struct vm_range *c = &vm->cow[i];
		if (c->lo < lo && c->hi > hi) {
			memmove(c + 1, c, (vm->ncow - i) * sizeof(*c));
			vm->ncow++;
			c[0].hi = lo;
			c[1].lo = hi;
			return;
		}
		if (c->lo < lo) {
			c->hi = lo;
			i++;
		} else if (c->hi > hi) {
			c->lo = hi;
			return;
		} else {
			memmove(c, c + 1, (vm->ncow - i - 1) * sizeof(*c));
			vm->ncow--;
		}
	}
}

/* room in the record for a split and a new run */
static int cow_room(struct vm *vm)
{
	if (vm->ncow + 2 <= vm->cow_cap)
		return 0;
	size_t cap = vm->cow_cap ? vm->cow_cap * 2 : 16;
	struct vm_range *c = realloc(vm->cow, cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	vm->cow = c;
	vm->cow_cap = cap;
	return 0;
}

/* [addr, addr + len) recorded as one run (file: of a file's pages), counted in the budget */
static void cow_record(struct vm *vm, uint64_t addr, uint64_t len, int file, int image)
{
	size_t before = vm->ncow;
	cow_cut(vm, addr, addr + len);
	size_t i = vm_cow_at(vm, addr);
	memmove(&vm->cow[i + 1], &vm->cow[i], (vm->ncow - i) * sizeof(vm->cow[0]));
	vm->cow[i] = (struct vm_range){addr, addr + len, file, image};
	vm->ncow++;
	atomic_fetch_add(&cow_runs, (long)vm->ncow - (long)before);
}

/* budgeted: the run counts against the budget (anonymous memory put where a file's run was, for
 * a reset or a discard, must happen, and replaces a run) */
int vm_map_run(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off, int file,
	       int budgeted)
{
	if (!vm->host_w || vm->backend != VM_BACKEND_KVM)
		return -EOPNOTSUPP; /* the ptrace stub sees guest memory through the memfd only */
	int flags = (file == VM_RUN_SHARED ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED | MAP_NORESERVE |
		    (fd < 0 ? MAP_ANONYMOUS : 0);
	if (addr % PAGE || len % PAGE || off % PAGE || !len || !vm_guest(vm, addr, len) ||
	    addr + len > vm->user_top)
		return -EINVAL;
	if (budgeted && !within_budget())
		return -ENOSPC; /* a copy does instead: every such caller copies where it fails */
	if (cow_room(vm))
		return -ENOMEM;
	/* a failed mapping leaves the old one in place (the count of mappings is checked first) */
	if (mmap(vm->mem + addr, len, PROT_READ | PROT_WRITE, flags, fd, fd < 0 ? 0 : (off_t)off) ==
	    MAP_FAILED)
		return -errno;
	/* a fork of this process (a peer a benchmark starts, a helper) would write-protect a
	 * private run for copy-on-write, and KVM would drop its whole mapping of it through the
	 * MMU notifier: every warm virtine's next run faulted its pages in again (~300 us more a
	 * warm hello in `ember bench all`). The child has no use for guest memory: not copied. */
	madvise(vm->mem + addr, len, MADV_DONTFORK);
	/* the memfd's pages there are out of sight now: their memory goes back */
	if (vm->memfd >= 0)
		fallocate(vm->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)addr,
			  (off_t)len);
	if (vm->ops->forget_used) /* KVM maps the new memory afresh: its bits start clear */
		vm->ops->forget_used(vm, addr, addr + len, 1);
	if (!file) /* a file's run holds what the machine had nowhere: nothing to put back yet */
		vm_mark_host(vm, addr, len);
	cow_record(vm, addr, len, file, fd >= 0 && fd == vm->image_fd && off == addr);
	return 0;
}

int vm_map_cow(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off)
{
	return vm_map_run(vm, addr, len, fd, off, VM_RUN_SNAP, 1);
}

int vm_map_file(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off)
{
	if (fd < 0)
		return -EINVAL;
	int rc = vm_map_run(vm, addr, len, fd, off, VM_RUN_FILE, 1);
	vm->files |= !rc;
	return rc;
}

int vm_map_shared(struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off)
{
	if (fd < 0)
		return -EINVAL;
	/* a file's run: a discard, an unmapping and the reset put private memory in its place */
	int rc = vm_map_run(vm, addr, len, fd, off, VM_RUN_SHARED, 1);
	vm->files |= !rc;
	return rc;
}

/* the first file run in [lo, hi), cut to it: 1, or 0 when there is none */
static int next_file(const struct vm *vm, uint64_t lo, uint64_t hi, uint64_t *a, uint64_t *b)
{
	for (size_t i = vm_cow_at(vm, lo); i < vm->ncow && vm->cow[i].lo < hi; i++) {
		if (!vm->cow[i].file)
			continue;
		*a = vm->cow[i].lo > lo ? vm->cow[i].lo : lo;
		*b = vm->cow[i].hi < hi ? vm->cow[i].hi : hi;
		return 1;
	}
	return 0;
}

void vm_keep_files(struct vm *vm)
{
	vm->files = 0;
	for (size_t i = 0; i < vm->ncow; i++) {
		/* shared memory is never a snapshot's: the first reset gives it back, private */
		if (vm->cow[i].file == VM_RUN_SHARED)
			vm->files = 1;
		else
			vm->cow[i].file = VM_RUN_SNAP;
	}
}

int vm_drop_files(struct vm *vm, uint64_t lo, uint64_t hi)
{
	uint64_t a, b;
	if (!vm->files)
		return 0;
	while (next_file(vm, lo, hi, &a, &b)) {
		/* private anonymous memory in their place (it reads as zero), written as far as a
		 * reset knows: the snapshot's pages there are put back */
		int image = vm->image_fd >= 0 && b <= vm->user_top; /* the image's again */
		int rc = vm_map_run(vm, a, b - a, image ? vm->image_fd : -1, image ? a : 0,
				    VM_RUN_SNAP, 0);
		if (rc)
			return rc;
	}
	if (!lo && hi >= vm->mem_size)
		vm->files = 0; /* none left */
	return 0;
}

int vm_each_cow(struct vm *vm, uint64_t lo, uint64_t hi, vm_cow_fn fn, void *ctx)
{
	int rc;
	for (size_t i = vm_cow_at(vm, lo); lo < hi; i++) {
		uint64_t c_lo = i < vm->ncow ? vm->cow[i].lo : hi;
		uint64_t c_hi = i < vm->ncow ? vm->cow[i].hi : hi;
		if (c_lo > lo && (rc = fn(vm, lo, c_lo < hi ? c_lo : hi, 0, ctx)))
			return rc;
		if (c_lo >= hi)
			return 0;
		lo = c_lo > lo ? c_lo : lo;
		uint64_t e = c_hi < hi ? c_hi : hi;
		if ((rc = fn(vm, lo, e, 1, ctx)))
			return rc;
		lo = e;
	}
	return 0;
}

int vm_next_cow(const struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	size_t i = vm_cow_at(vm, addr);
	if (i == vm->ncow || vm->cow[i].lo >= end)
		return 0;
	*lo = vm->cow[i].lo > addr ? vm->cow[i].lo : addr;
	*hi = vm->cow[i].hi < end ? vm->cow[i].hi : end;
	return 1;
}

size_t vm_cow_runs(const struct vm *vm)
{
	return vm->ncow;
}

int vm_mergeable(struct vm *vm)
{
	for (size_t i = 0; i < vm->ncow; i++)
		if (madvise(vm->mem + vm->cow[i].lo, vm->cow[i].hi - vm->cow[i].lo,
			    MADV_MERGEABLE) < 0)
			return -errno;
	return 0;
}

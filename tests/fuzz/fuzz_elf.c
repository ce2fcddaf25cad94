/* The ELF validator and loader (src/image): the input as a function image, validated with its
 * syscall sites found (img_from_bytes: elf.c, sites.c, redzone.c) and, when accepted, loaded in
 * both syscall modes (load.c) into one machine, the layout and the page tables checked, the
 * host's structures unchanged; the machine is cleared for the next input. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#include "common.h"
#include "image/img.h"

#define PAGE EMBER_PAGE_SIZE
#define MEM  (64ULL << 20)

static int by_start(const void *a, const void *b)
{
	const struct sys_vma *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* the host's structures below the runtime's vCPU areas: GDT, TSS, IDT, page directories,
 * handlers */
static uint64_t host_hash(struct vm *vm)
{
	return XXH3_64bits(vm_guest(vm, PAGE, EMBER_RT_CPUS - PAGE), EMBER_RT_CPUS - PAGE);
}

/* an accepted image: its description holds together */
FZ_UNTRACED static void check_image(const struct img *img)
{
	const struct img_elf *e = &img->elf;
	FZ_CHECK(e->nsegs > 0 && e->nsegs <= IMG_MAX_SEGS, "%d segments", e->nsegs);
	for (int i = 0; i < e->nsegs; i++) {
		const struct img_seg *s = &e->segs[i];
		FZ_CHECK(s->filesz <= s->memsz && s->offset + s->filesz <= img->len,
			 "segment %d: %#lx bytes at %#lx of the file, %#lx in memory", i, s->filesz,
			 s->offset, s->memsz);
		FZ_CHECK(i == 0 || e->segs[i - 1].vaddr + e->segs[i - 1].memsz <= s->vaddr,
			 "segments %d and %d overlap", i - 1, i);
	}
	for (size_t i = 0; i < img->sites.n; i++)
		FZ_CHECK(i == 0 || img->sites.addr[i - 1] < img->sites.addr[i],
			 "sites not ascending at %zu", i);
}

/* a loaded image: its maps are sorted into v (at most IMG_MAX_MAPS), apart and in the program's
 * memory, the entry executable, the stack pointer on the stack with argc = 1 */
FZ_UNTRACED static size_t check_layout(struct vm *vm, const struct img *img,
				       const struct img_layout *l, struct sys_vma *v)
{
	const uint64_t top = vm_user_top(vm);
	FZ_CHECK(l->nmaps > 0 && l->nmaps <= IMG_MAX_MAPS, "%d maps", l->nmaps);
	for (int i = 0; i < l->nmaps; i++)
		v[i] = (struct sys_vma){l->maps[i].start, l->maps[i].end, l->maps[i].prot};
	qsort(v, (size_t)l->nmaps, sizeof(v[0]), by_start);
	int entry_ok = 0;
	for (int i = 0; i < l->nmaps; i++) {
		FZ_CHECK(v[i].start < v[i].end && v[i].start % PAGE == 0 && v[i].end % PAGE == 0 &&
			     v[i].end <= top,
			 "map %#lx-%#lx", v[i].start, v[i].end);
		FZ_CHECK(v[i].start >= EMBER_SYS_END ||
			     (l->guest && (v[i].start == 0 || v[i].start >= EMBER_RT_CPUS)),
			 "map %#lx-%#lx among the host's structures", v[i].start, v[i].end);
		FZ_CHECK(i == 0 || v[i - 1].end <= v[i].start, "maps overlap at %#lx", v[i].start);
		entry_ok |=
		    l->entry >= v[i].start && l->entry < v[i].end && (v[i].prot & PROT_EXEC);
	}
	FZ_CHECK(entry_ok, "entry %#lx is not executable", l->entry);
	FZ_CHECK(l->sp >= l->stack_lo && l->sp < l->stack_hi && l->sp % 16 == 0, "sp %#lx", l->sp);
	uint64_t argc = 0;
	vm_copy_from(vm, &argc, l->sp, 8);
	FZ_CHECK(argc == 1, "argc %lu", argc);
	FZ_CHECK(l->brk_start <= l->mmap_hi && l->mmap_hi < l->stack_lo, "brk %#lx, mmap %#lx",
		 l->brk_start, l->mmap_hi);
	/* the program's sites and the vDSO's, which every program gets */
	size_t vdso_sites = img_vdso() ? img_vdso()->sites.n : 0;
	FZ_CHECK(l->sites_call + l->sites_trap == l->rewritten &&
		     l->rewritten <= img->sites.n + vdso_sites && (l->guest || !l->sites_call),
		 "%zu sites rewritten: %zu call, %zu trap", l->rewritten, l->sites_call,
		 l->sites_trap);
	return (size_t)l->nmaps;
}

/* everything img_load may have touched, unmapped and given back */
static void clear(struct vm *vm)
{
	const uint64_t top = vm_user_top(vm);
	const uint64_t ranges[][2] = {
	    {0, PAGE}, {EMBER_RT_CPUS, EMBER_SYS_END}, {EMBER_SYS_END, top}};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		uint64_t len = ranges[i][1] - ranges[i][0];
		FZ_CHECK(vm_protect(vm, ranges[i][0], len, 0) == 0 &&
			     vm_discard(vm, ranges[i][0], len) == 0,
			 "clearing %#lx-%#lx", ranges[i][0], ranges[i][1]);
	}
}

static void load(struct vm *vm, const struct img *img, int guest, uint64_t host)
{
	static const char *const argv[] = {"function", NULL}, *const envp[] = {"A=1", NULL};
	struct img_layout l;
	struct sys_vma v[IMG_MAX_MAPS];
	char err[256] = "";
	if (img_load(img, NULL, vm, argv, envp, guest, &l, err, sizeof(err)) == 0)
		fz_check_ptes(vm, v, check_layout(vm, img, &l, v));
	else
		FZ_CHECK(err[0], "img_load failed without a reason");
	FZ_CHECK(host_hash(vm) == host, "the load wrote into the host's structures");
	clear(vm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm *vm = fz_vm(MEM);
	static uint64_t host;
	if (!host)
		host = host_hash(vm);
	struct img *img = NULL;
	char err[256] = "";
	if (img_from_bytes(data, size, &img, err, sizeof(err))) {
		FZ_CHECK(err[0], "refused without a reason");
		return 0;
	}
	check_image(img);
	load(vm, img, 0, host);
	load(vm, img, 1, host);
	img_close(img);
	return 0;
}

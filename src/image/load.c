/* Loading an image into a machine: segments, syscall-site rewriting, the SysV start stack. */
#include <cpuid.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "base/base.h"
#include "image/img.h"
#include "vm/vm.h"

#define PAGE	  EMBER_PAGE_SIZE
#define STACK_MAX (8ULL << 20)
#define HEAP_MIN  (1ULL << 20)
#define ARGS_MAX  (256ULL << 10)
#define GUEST_ID  1000

static uint64_t down(uint64_t x)
{
	return x & ~(PAGE - 1);
}

static uint64_t up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* Page ranges of the segments; a page two segments share gets the union of their permissions. */
static void plan_maps(const struct img *img, uint64_t base, struct img_layout *l, int first)
{
	l->nmaps = first;
	for (int i = 0; i < img->elf.nsegs; i++) {
		const struct img_seg *s = &img->elf.segs[i];
		uint64_t start = down(base + s->vaddr), end = up(base + s->vaddr + s->memsz);
		if (l->nmaps > first) {
			struct img_map *prev = &l->maps[l->nmaps - 1];
			if (start < prev->end) { /* shared boundary page */
				int prot = prev->prot | s->prot;
				prev->end -= PAGE;
				if (prev->end == prev->start)
					l->nmaps--;
				l->maps[l->nmaps++] = (struct img_map){start, start + PAGE, prot};
				start += PAGE;
			}
		}
		if (start < end)
			l->maps[l->nmaps++] = (struct img_map){start, end, s->prot};
	}
}

struct stack_builder {
	struct vm *vm;
	uint64_t sp, lo;
	int overflow;
};

static uint64_t push_bytes(struct stack_builder *b, const void *p, size_t n)
{
	if (b->sp - b->lo < n + 64) {
		b->overflow = 1;
		return 0;
	}
	b->sp -= n;
	vm_copy_to(b->vm, b->sp, p, n);
	return b->sp;
}

static uint64_t push_str(struct stack_builder *b, const char *s)
{
	return push_bytes(b, s, strlen(s) + 1);
}

static size_t count(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static int build_stack(const struct img *img, struct vm *vm, struct img_layout *l,
		       const char *const *argv, const char *const *envp, const char *name,
		       char *err, size_t errlen)
{
	size_t argc = count(argv), envc = count(envp);
	struct stack_builder b = {vm, l->stack_hi, l->stack_hi - ARGS_MAX, 0};
	uint8_t rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		memset(rnd, 0x5a, sizeof(rnd));
	uint64_t at_random = push_bytes(&b, rnd, sizeof(rnd));
	uint64_t platform = push_str(&b, "x86_64");
	uint64_t execfn = push_str(&b, name ? name : argc ? argv[0] : "function");
	uint64_t argp[argc + 1], envpp[envc + 1];
	/* as Linux lays them out: the environment's strings, and below them the arguments', one
	 * after the other from argv[0] up, which /proc/self/cmdline reads back */
	for (size_t i = envc; i-- > 0;)
		envpp[i] = push_str(&b, envp[i]);
	l->arg_end = b.sp;
	for (size_t i = argc; i-- > 0;)
		argp[i] = push_str(&b, argv[i]);
	l->arg_start = b.sp;
	argp[argc] = envpp[envc] = 0;
	if (b.overflow) {
		snprintf(err, errlen, "arguments and environment exceed %llu KiB",
			 (unsigned long long)(ARGS_MAX >> 10));
		return EMBER_ERR_CONFIG;
	}
	unsigned eax, ebx, ecx, edx = 0;
	__get_cpuid(1, &eax, &ebx, &ecx, &edx);
	const uint64_t auxv[][2] = {
	    {AT_PHDR, l->base + img->elf.phdr_vaddr},
	    {AT_PHENT, sizeof(Elf64_Phdr)},
	    {AT_PHNUM, img->elf.phnum},
	    {AT_PAGESZ, PAGE},
	    {AT_BASE, l->interp_base},
	    {AT_FLAGS, 0},
	    {AT_ENTRY, l->prog_entry},
	    {AT_UID, GUEST_ID},
	    {AT_EUID, GUEST_ID},
	    {AT_GID, GUEST_ID},
	    {AT_EGID, GUEST_ID},
	    {AT_SECURE, 0},
	    {AT_CLKTCK, 100},
	    {AT_HWCAP, edx},
	    {AT_HWCAP2, 0},
	    {AT_RANDOM, at_random},
	    {l->vdso_base ? AT_SYSINFO_EHDR : AT_IGNORE, l->vdso_base},
	    {AT_PLATFORM, platform},
	    {AT_EXECFN, execfn},
	    {AT_NULL, 0},
	};
	size_t words = 1 + (argc + 1) + (envc + 1) + 2 * (sizeof(auxv) / sizeof(auxv[0]));
	uint64_t sp = (b.sp - words * 8) & ~15ULL; /* rsp at argc is 16-byte aligned */
	uint64_t p = sp, v = argc;
	vm_copy_to(vm, p, &v, 8);
	p += 8;
	vm_copy_to(vm, p, argp, (argc + 1) * 8);
	p += (argc + 1) * 8;
	vm_copy_to(vm, p, envpp, (envc + 1) * 8);
	p += (envc + 1) * 8;
	vm_copy_to(vm, p, auxv, sizeof(auxv));
	l->sp = sp;
	return 0;
}

static int no_room(const char *what, uint64_t lo, uint64_t hi, const struct img_layout *l,
		   char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "the %s (%#llx-%#llx) does not fit in guest memory (%#llx-%#llx): "
		 "give it more memory or link it at 0x400000",
		 what, (unsigned long long)lo, (unsigned long long)hi,
		 (unsigned long long)EMBER_SYS_END, (unsigned long long)l->mmap_hi);
	return EMBER_ERR_CONFIG;
}

/* The program where it is linked (a PIE at EMBER_IMAGE_BASE), its interpreter at the top of
 * the mmap area, as Linux puts it among the mappings, the heap between them */
static int place(const struct img *img, const struct img *interp, struct vm *vm,
		 struct img_layout *l, char *err, size_t errlen)
{
	uint64_t top = vm_user_top(vm);
	l->stack_size = img->elf.stack_size > STACK_MAX ? img->elf.stack_size : STACK_MAX;
	/* a thirty-second of the memory at most: glibc gives every thread a stack of this size
	 * (RLIMIT_STACK), so a small virtine still holds a few dozen of them */
	if (l->stack_size > top / 32)
		l->stack_size = up(top / 32);
	l->stack_hi = top;
	l->stack_lo = top - l->stack_size;
	l->mmap_hi = l->stack_lo - EMBER_STACK_GUARD;
	l->base = img->elf.pie ? EMBER_IMAGE_BASE - img->elf.lo : 0;
	uint64_t lo = l->base + img->elf.lo, hi = l->base + img->elf.hi, room_hi = l->mmap_hi;
	/* the vDSO (img_vdso()) is given to Go programs only: on AMD SVM (the QEMU route) a cold
	 * start with it differed and Node.js died of #UD (2026-12-05), not understood yet. Go
	 * needs it most: without it every clock read of its runtime is a system call from a site
	 * with no room to reach the runtime (nanotime1: 6 bytes of padding), an exit each, ~200
	 * an invocation of a program with goroutines; the vDSO's sites have padding of their own */
	const struct img *vdso = img->elf.go ? img_vdso() : NULL;
	uint64_t span = interp ? interp->elf.hi - interp->elf.lo : 0;
	uint64_t vspan = vdso ? vdso->elf.hi - vdso->elf.lo : 0;
	/* the vDSO just below the program where there is room (below 4 GiB, where its sites may
	 * take the call form), else at the top of the mmap area */
	int below = vdso && lo >= EMBER_SYS_END + vspan;
	if (below)
		l->vdso_base = lo - vspan - vdso->elf.lo;
	if (below)
		vspan = 0;
	/* the program with its heap first, then its interpreter (and the vDSO) above them */
	if (lo < EMBER_SYS_END || hi > room_hi || room_hi - hi < HEAP_MIN + span + vspan)
		return no_room(interp ? "image with its interpreter" : "image", lo, hi + span, l,
			       err, errlen);
	if (vdso && !below) {
		room_hi -= vspan;
		l->vdso_base = room_hi - vdso->elf.lo;
	}
	if (interp) {
		room_hi -= span;
		l->interp_base = room_hi - interp->elf.lo;
	}
	l->prog_entry = l->base + img->elf.entry;
	l->entry = interp ? l->interp_base + interp->elf.entry : l->prog_entry;
	l->brk_start = hi;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

extern const uint8_t _binary_ember_rt_start[];
extern const uint8_t _binary_ember_rt_end[];

/* The in-guest runtime: its image at EMBER_RT_BASE, and page 0, a sled of no-ops that a
 * `call *%rax` lands in, ending in a jump to the runtime's entry. */
/* page0: the sled is mapped and sites may call through it; without, every site traps and the
 * runtime serves only the calls the host sends it (bounce) */
static int map_runtime(struct vm *vm, struct img_layout *l, int page0_ok, char *err, size_t errlen)
{
	size_t n = (size_t)(_binary_ember_rt_end - _binary_ember_rt_start);
	if (n > EMBER_RT_COUNTS - EMBER_RT_BASE ||
	    vm_copy_to(vm, EMBER_RT_BASE, _binary_ember_rt_start, n))
		return snprintf(err, errlen, "the in-guest runtime does not fit"), EMBER_ERR_CONFIG;
	uint8_t *page0 = vm_guest(vm, 0, PAGE);
	if (!page0_ok)
		page0 = NULL;
	if (page0)
		memset(page0, 0x90, EMBER_TRAMP_SLED);
	/* movabs $EMBER_RT_BASE, %r11; jmp *%r11 (a syscall clobbers r11 anyway); then ud2 */
	static const uint8_t jump[] = {0x49, 0xbb, 0,	 0,    0,    0,	   0,	0,
				       0,    0,	   0x41, 0xff, 0xe3, 0x0f, 0x0b};
	uint64_t entry = EMBER_RT_BASE;
	if (page0) {
		memcpy(page0 + EMBER_TRAMP_SLED, jump, sizeof(jump));
		memcpy(page0 + EMBER_TRAMP_SLED + 2, &entry, 8);
	}
	struct ember_rt_ctl *c = vm_guest(vm, EMBER_RT_CTL, sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->magic = EMBER_RT_MAGIC;
	/* the pages every invocation writes (counters, the first pages of each buffer) are made
	 * resident now, so the snapshot holds them and a reset copies them back rather than
	 * giving them up to be faulted in again by the next invocation */
	static const uint64_t hot[][2] = {{EMBER_RT_COUNTS, PAGE},
					  {EMBER_RT_IN, 4 * PAGE},
					  {EMBER_RT_OUT, 4 * PAGE},
					  {EMBER_RT_LOG, 2 * PAGE}};
	for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
		memset(vm_guest(vm, hot[i][0], hot[i][1]), 0, hot[i][1]);
	if (page0_ok)
		l->maps[l->nmaps++] = (struct img_map){0, PAGE, PROT_READ | PROT_EXEC};
	l->maps[l->nmaps++] = (struct img_map){EMBER_RT_BASE, EMBER_RT_BASE + EMBER_RT_CODE_SIZE,
					       PROT_READ | PROT_EXEC};
	l->maps[l->nmaps++] =
	    (struct img_map){EMBER_RT_CTL, EMBER_RT_SITES, PROT_READ | PROT_WRITE};
	l->maps[l->nmaps++] = (struct img_map){EMBER_RT_SITES, EMBER_RT_END, PROT_READ};
	/* each vCPU's area: its stack and what it keeps of the thread on it */
	l->maps[l->nmaps++] =
	    (struct img_map){EMBER_RT_CPUS, EMBER_RT_BASE, PROT_READ | PROT_WRITE};
	l->guest = 1;
	return 0;
}

/* A site of a program without page 0, through its function's padding (EMBER_RT_ENTRY_REL):
 * the `syscall` at `at` becomes `jmp rel8` to the padding, which becomes `call rel32` to the
 * runtime and `jmp rel8` back. 0 done; -1 when the padding is not there as the analysis found
 * it (int3 all through) or the runtime is out of a call's reach: the site then traps. */
static int via_padding(struct vm *vm, uint8_t *p, uint64_t at, uint8_t callable)
{
	uint64_t pad = at + 2 + (uint64_t)img_pad_of(callable);
	uint8_t *q = vm_guest(vm, pad, EMBER_RT_PAD_LEN);
	int64_t rel = (int64_t)EMBER_RT_ENTRY_REL - (int64_t)(pad + 5);
	if (!q || rel < INT32_MIN || rel > INT32_MAX)
		return -1;
	for (int k = 0; k < EMBER_RT_PAD_LEN; k++)
		if (q[k] != 0xcc)
			return -1;
	int32_t rel32 = (int32_t)rel;
	q[0] = 0xe8; /* call rel32 */
	memcpy(q + 1, &rel32, sizeof(rel32));
	q[5] = 0xeb; /* jmp rel8, back to the site's end */
	q[6] = (uint8_t)(int8_t)((int64_t)(at + 2) - (int64_t)(pad + 7));
	p[0] = 0xeb; /* jmp rel8, to the padding */
	p[1] = (uint8_t)(int8_t)img_pad_of(callable);
	return 0;
}

/* One image's segments copied in at base and its syscall sites rewritten; a site of a call
 * form goes into the runtime's table (sorted by the caller), whose length is *ntab. With page
 * 0 the call form is `call *%rax` into its sled; without (guest mode alone), a site with
 * padding calls through it; every other site traps. */
static int copy_in(const struct img *img, uint64_t base, struct vm *vm, struct img_layout *l,
		   int guest, int page0, uint64_t *ntab, char *err, size_t errlen)
{
	for (int i = 0; i < img->elf.nsegs; i++) {
		const struct img_seg *s = &img->elf.segs[i];
		/* borrowed bytes are a kept bundle's file (img_from_bytes_kept), whose mapping
		 * reads only the pages touched: the segment asked of the disk in one request */
		if (img->own == IMG_OWN_NONE)
			base_want(img->buf + s->offset, s->filesz);
		if (vm_copy_to(vm, base + s->vaddr, img->buf + s->offset, s->filesz)) {
			snprintf(err, errlen, "segment %d is outside guest memory", i);
			return EMBER_ERR_CONFIG;
		}
	}
	/* the call sites' return addresses, for the runtime to tell them from other calls into
	 * it; a site past the table's reach keeps the trapping form */
	uint32_t *tab = guest ? vm_guest(vm, EMBER_RT_SITES, EMBER_RT_SITES_MAX * 4) : NULL;
	for (size_t i = 0; i < img->sites.n; i++) {
		uint64_t at = base + img->sites.addr[i];
		uint8_t *p = vm_guest(vm, at, 2), c = img->sites.callable[i];
		if (!p || p[0] != 0x0f || p[1] != 0x05)
			continue;
		l->rewritten++;
		if (tab && c && *ntab < EMBER_RT_SITES_MAX && at + 2 <= UINT32_MAX &&
		    (page0 || (c >= IMG_PAD_MIN && !via_padding(vm, p, at, c)))) {
			tab[(*ntab)++] = (uint32_t)(at + 2);
			if (page0) { /* call *%rax: into the page-0 sled, on to the runtime */
				p[0] = 0xff;
				p[1] = 0xd0;
			}
			l->sites_call++;
			continue;
		}
		p[0] = EMBER_HC_OPCODE; /* out %al,$EMBER_HC_SYSCALL */
		p[1] = EMBER_HC_SYSCALL;
		l->sites_trap++;
	}
	return 0;
}

int img_load(const struct img *img, const struct img *interp, struct vm *vm,
	     const char *const *argv, const char *const *envp, int guest, struct img_layout *l,
	     char *err, size_t errlen)
{
	return img_load_as(img, interp, vm, argv, envp, NULL, guest, l, err, errlen);
}

int img_load_as(const struct img *img, const struct img *interp, struct vm *vm,
		const char *const *argv, const char *const *envp, const char *name, int guest,
		struct img_layout *l, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	int rc;
	/* sites left for later by a start from a snapshot: an init or an execve needs them now */
	if ((rc = img_sites_fill(img, err, errlen)) ||
	    (interp && (rc = img_sites_fill(interp, err, errlen))))
		return rc;
	/* a Go program's nil checks are loads that must fault at page 0, which the sled would
	 * answer with no-ops: page 0 stays unmapped, and its sites call through their
	 * functions' padding where there is some (Go's linker pads with int3), else trap */
	int page0 = guest && !img->elf.go;
	if ((guest && (rc = map_runtime(vm, l, page0, err, errlen))) ||
	    (rc = place(img, interp, vm, l, err, errlen)))
		return rc;
	uint64_t ntab = 0;
	if ((rc = copy_in(img, l->base, vm, l, guest, page0, &ntab, err, errlen)) ||
	    (interp &&
	     (rc = copy_in(interp, l->interp_base, vm, l, guest, page0, &ntab, err, errlen))) ||
	    (l->vdso_base &&
	     (rc = copy_in(img_vdso(), l->vdso_base, vm, l, guest, page0, &ntab, err, errlen))))
		return rc;
	uint32_t *tab = guest ? vm_guest(vm, EMBER_RT_SITES, EMBER_RT_SITES_MAX * 4) : NULL;
	if (tab || guest) {
		if (tab)
			qsort(tab, ntab, sizeof(*tab), cmp_u32);
		((struct ember_rt_ctl *)vm_guest(vm, EMBER_RT_CTL, sizeof(struct ember_rt_ctl)))
		    ->nsites = ntab;
	}
	int runtime_maps = l->nmaps;
	plan_maps(img, l->base, l, runtime_maps);
	if (interp)
		plan_maps(interp, l->interp_base, l, l->nmaps);
	if (l->vdso_base)
		plan_maps(img_vdso(), l->vdso_base, l, l->nmaps);
	l->maps[l->nmaps++] = (struct img_map){l->stack_lo, l->stack_hi, PROT_READ | PROT_WRITE};
	for (int i = 0; i < l->nmaps; i++) {
		if ((rc = vm_protect(vm, l->maps[i].start, l->maps[i].end - l->maps[i].start,
				     l->maps[i].prot))) {
			/* elsewhere the reason: no KVM memory slot to be had (ENOSPC, ENOMEM) */
			snprintf(err, errlen, "cannot map %#llx-%#llx%s%s",
				 (unsigned long long)l->maps[i].start,
				 (unsigned long long)l->maps[i].end,
				 l->maps[i].start == 0
				     ? " (page 0, for the in-guest runtime: needs the "
				       "privilege to map below vm.mmap_min_addr; "
				       "use --syscalls trap)"
				     : ": ",
				 l->maps[i].start == 0 ? "" : strerror(-rc));
			/* page 0 refused is the mode's requirement, never a lack of memory */
			return l->maps[i].start == 0 ? EMBER_ERR_CONFIG
						     : vm_errno_kind(-rc, EMBER_ERR);
		}
	}
	return build_stack(img, vm, l, argv, envp, name, err, errlen);
}

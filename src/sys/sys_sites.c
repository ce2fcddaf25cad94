/* The syscall sites of the libraries a program maps at run time, rewritten as the loader
 * rewrites the program's (src/image/load.c), and the in-guest runtime's table of them. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sys/sys.h"
#include "fs/fs.h"

enum { FORM_NONE, FORM_CALL, FORM_TRAP };

static uint64_t ctl_word(struct sys_state *st, size_t at)
{
	uint64_t v = 0;
	vm_copy_from(st->vm, &v, EMBER_RT_CTL + at, sizeof(v));
	return v;
}

/* the runtime is there with its table: guest mode, its control block made at load */
static int has_table(struct sys_state *st)
{
	return st->proc.guest &&
	       ctl_word(st, offsetof(struct ember_rt_ctl, magic)) == EMBER_RT_MAGIC;
}

/* ... and page 0 holds its sled (the loader leaves it out for a Go program, and in trap mode):
 * a site may become `call *%rax` */
static int call_form(struct sys_state *st)
{
	uint8_t jump[2];
	return has_table(st) && !vm_copy_from(st->vm, jump, EMBER_TRAMP_SLED, sizeof(jump)) &&
	       jump[0] == 0x49 && jump[1] == 0xbb; /* movabs $EMBER_RT_BASE, %r11 */
}

/* entries in use: the guest may write nsites (its control block is writable), never past the
 * table */
static uint64_t entries(struct sys_state *st)
{
	uint64_t n = ctl_word(st, offsetof(struct ember_rt_ctl, nsites));
	return n < EMBER_RT_SITES_MAX ? n : EMBER_RT_SITES_MAX;
}

/* the first of the n entries not below ret (read without marking the table's pages written) */
static uint64_t lower(struct sys_state *st, uint64_t n, uint64_t ret)
{
	uint64_t lo = 0, hi = n;
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		uint32_t v = 0;
		vm_copy_from(st->vm, &v, EMBER_RT_SITES + mid * sizeof(v), sizeof(v));
		if (v < ret)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A change of the table while threads on other vCPUs may search it (src/guest/rt.c known_site):
 * sites_gen is odd meanwhile, and a search that misses then looks again. The host's own
 * searches and changes are made under the process's lock. */
static struct ember_rt_ctl *change_begin(struct sys_state *st, uint32_t **tab)
{
	struct ember_rt_ctl *c = vm_guest(st->vm, EMBER_RT_CTL, sizeof(*c));
	*tab = vm_guest(st->vm, EMBER_RT_SITES, EMBER_RT_SITES_MAX * sizeof(**tab));
	if (!c || !*tab)
		return NULL;
	__atomic_store_n(&c->sites_gen, c->sites_gen | 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* odd before any entry changes */
	return c;
}

static void change_end(struct ember_rt_ctl *c, uint64_t n)
{
	c->nsites = n;
	__atomic_store_n(&c->sites_gen, c->sites_gen + 1, __ATOMIC_RELEASE);
}

/* add[0..m), ascending, merged into the table, which has room for them */
static void insert(struct sys_state *st, const uint32_t *add, size_t m)
{
	uint32_t *t;
	uint64_t n = entries(st);
	struct ember_rt_ctl *c = change_begin(st, &t);
	if (!c)
		return;
	for (uint64_t i = n, j = m, w = n + m; j > 0;)
		t[--w] = i > 0 && t[i - 1] > add[j - 1] ? t[--i] : add[--j];
	change_end(c, n + m);
}

/* An entry left for a site no longer there would let a `call *%rax` into page 0 from that
 * address be served as a system call, which the program could make anyway, rather than end as
 * the null call it is (EMBER_RT_BADCALL): harmless to the host, but wrong; so entries go with
 * what was mapped. */
void sys_sites_gone(struct sys_state *st, uint64_t start, uint64_t end)
{
	if (end <= start || !has_table(st))
		return;
	uint64_t n = entries(st);
	/* an entry is a return address: its site's two bytes end there */
	uint64_t a = lower(st, n, start + 2), b = lower(st, n, end + 2);
	if (a == b)
		return;
	uint32_t *t;
	struct ember_rt_ctl *c = change_begin(st, &t);
	if (!c)
		return;
	memmove(t + a, t + b, (n - b) * sizeof(*t));
	change_end(c, n - (b - a));
}

void sys_sites_moved(struct sys_state *st, uint64_t from, uint64_t len, uint64_t to)
{
	if (!len || !has_table(st))
		return;
	uint64_t n = entries(st), a = lower(st, n, from + 2), b = lower(st, n, from + len + 2);
	uint32_t *add = a < b ? malloc((b - a) * sizeof(*add)) : NULL;
	size_t m = 0;
	for (uint64_t i = a; i < b; i++) {
		uint32_t v = 0;
		vm_copy_from(st->vm, &v, EMBER_RT_SITES + i * sizeof(v), sizeof(v));
		uint64_t at = v - 2 - from + to;
		/* past the table's reach (or without memory for it) the call site traps instead */
		if (add && at + 2 <= UINT32_MAX && m < EMBER_RT_SITES_MAX - n)
			add[m++] = (uint32_t)(at + 2);
		else
			vm_copy_to(st->vm, at,
				   (const uint8_t[2]){EMBER_HC_OPCODE, EMBER_HC_SYSCALL}, 2);
	}
	if (m)
		insert(st, add, m); /* ascending still: all moved by one distance */
	free(add);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* the form each site of s mapped at addr from offset off (k bytes of the file) takes: none where
 * the bytes are no longer a `syscall` (or lie outside the mapping), the call form while the
 * table has room, else the trapping one; the call sites' return addresses into add */
static size_t choose(struct sys_state *st, const struct sys_file_sites *s, uint64_t addr,
		     uint64_t k, uint64_t off, uint8_t *form, uint32_t *add)
{
	uint64_t room = add ? EMBER_RT_SITES_MAX - entries(st) : 0;
	size_t m = 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t so = s->off[i], at = addr + (so - off);
		uint8_t b[2];
		form[i] = FORM_NONE;
		if (so < off || so - off > k - 2 || vm_copy_from(st->vm, b, at, 2) ||
		    b[0] != 0x0f || b[1] != 0x05)
			continue;
		form[i] = FORM_TRAP;
		if (add && s->callable[i] && m < room && at + 2 <= UINT32_MAX) {
			form[i] = FORM_CALL;
			add[m++] = (uint32_t)(at + 2);
		}
	}
	return m;
}

void sys_sites_mapped(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, uint64_t off)
{
	struct sys_obj *f = st->file_sites && st->bundle ? sys_fs_file(st, fd) : NULL;
	if (!f)
		return;
	uint64_t size = st->bundle->nodes[f->id].size, k = off < size ? size - off : 0;
	k = k < len ? k : len;
	const struct sys_file_sites *s =
	    k >= 2 ? st->file_sites(st->file_sites_ctx, st->bundle, f->id) : NULL;
	if (!s || !s->n)
		return;
	uint8_t *form = malloc(s->n);
	uint32_t *add = call_form(st) ? malloc(s->n * sizeof(*add)) : NULL;
	if (!form) { /* the sites stay `syscall`, served as stray calls */
		free(add);
		return;
	}
	size_t m = choose(st, s, addr, k, off, form, add);
	/* the table first: a call site is known before it can be run */
	if (m) {
		qsort(add, m, sizeof(*add), cmp_u32);
		insert(st, add, m);
	}
	for (size_t i = 0; i < s->n; i++) {
		static const uint8_t call[2] = {0xff, 0xd0}; /* call *%rax: the page-0 sled */
		static const uint8_t trap[2] = {EMBER_HC_OPCODE, EMBER_HC_SYSCALL};
		if (form[i] != FORM_NONE)
			vm_copy_to(st->vm, addr + (s->off[i] - off),
				   form[i] == FORM_CALL ? call : trap, 2);
	}
	free(form);
	free(add);
}

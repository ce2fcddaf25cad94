/* The made /proc and /sys files' contents, from the virtine's own state at each read: the
 * processors online, cpuinfo, the maps, statm, the program itself, its cmdline, pipe-max-size. */
#include <cpuid.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "fd/fd.h"
#include "fs/fs_proc.h"

/* appends a line to buf (k of cap bytes used) if all of it fits: a made file ends at a whole
 * line, never in the middle of one */
static size_t put_line(char *buf, size_t k, size_t cap, const char *line, size_t n)
{
	if (n >= cap - k)
		return k;
	memcpy(buf + k, line, n);
	return k + n;
}

const uint8_t *sys_procfs_gen_online(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	int n = st->proc.cpus > 1 ? st->proc.cpus : 1;
	*len = (size_t)(n > 1 ? snprintf(buf, cap, "0-%d\n", n - 1) : snprintf(buf, cap, "0\n"));
	return (const uint8_t *)buf;
}

/* one processor entry per vCPU, with the fields programs parse: the vendor and model CPUID gives
 * (a vCPU is the host's CPU as KVM presents it), the counts, a few flags */
const uint8_t *sys_procfs_gen_cpuinfo(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	int n = st->proc.cpus > 1 ? st->proc.cpus : 1;
	unsigned r[12] = {0};
	char vendor[13] = "", model[49] = "";
	__cpuid(0, r[0], r[1], r[2], r[3]);
	memcpy(vendor, &r[1], 4), memcpy(vendor + 4, &r[3], 4), memcpy(vendor + 8, &r[2], 4);
	for (unsigned i = 0; i < 3; i++)
		__cpuid(0x80000002 + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
	memcpy(model, r, 48);
	size_t k = 0;
	char line[512];
	for (int i = 0; i < n; i++) {
		int m = snprintf(line, sizeof(line),
				 "processor\t: %d\nvendor_id\t: %s\nmodel name\t: %s\n"
				 "physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\n"
				 "cpu cores\t: %d\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2\n\n",
				 i, vendor, model, n, i, n);
		k = put_line(buf, k, cap, line, m < (int)sizeof(line) ? (size_t)m : 0);
	}
	*len = k;
	return (const uint8_t *)buf;
}

/* the program's mappings as the virtine holds them: its stack and heap named */
const uint8_t *sys_procfs_gen_maps(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	size_t k = 0;
	char line[128];
	for (size_t i = 0; i < st->nvma; i++) {
		const struct sys_vma *v = &st->vmas[i];
		if (v->start < EMBER_SYS_END)
			continue; /* the runtime's, not the program's */
		const char *name =
		    v->start >= st->proc.stack_lo && v->end <= st->proc.stack_hi     ? "[stack]"
		    : v->start >= st->proc.brk_start && v->end <= st->brk_cur + 4096 ? "[heap]"
										     : "";
		int m = snprintf(line, sizeof(line),
				 "%08" PRIx64 "-%08" PRIx64 " %c%c%cp 00000000 00:00 0%s%s\n",
				 v->start, v->end, v->prot & PROT_READ ? 'r' : '-',
				 v->prot & PROT_WRITE ? 'w' : '-', v->prot & PROT_EXEC ? 'x' : '-',
				 name[0] ? "\t\t\t" : "", name);
		k = put_line(buf, k, cap, line, m < (int)sizeof(line) ? (size_t)m : 0);
	}
	*len = k;
	return (const uint8_t *)buf;
}

/* statm, in pages: the program's mappings (resident and data counted as mapped, shared and
 * text as none: a virtine does not tell them apart here) */
const uint8_t *sys_procfs_gen_statm(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	uint64_t pages = sys_rlim_mapped(st) / EMBER_PAGE_SIZE;
	int m = snprintf(buf, cap, "%" PRIu64 " %" PRIu64 " 0 0 0 %" PRIu64 " 0\n", pages, pages,
			 pages);
	*len = m > 0 && (size_t)m < cap ? (size_t)m : 0;
	return (const uint8_t *)buf;
}

const uint8_t *sys_procfs_gen_exe(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	(void)buf, (void)cap;
	*len = st->exe_len;
	return st->exe;
}

/* argv's strings as the program's stack holds them now, as Linux reads them from its memory */
const uint8_t *sys_procfs_gen_cmdline(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	uint64_t start = st->proc.arg_start, end = st->proc.arg_end;
	uint64_t n = end > start ? end - start : 0;
	const void *p = n ? sys_user(st, start, n < cap ? n : cap, PROT_READ) : NULL;
	*len = p ? (n < cap ? n : cap) : 0;
	if (p)
		memcpy(buf, p, *len);
	return (const uint8_t *)buf;
}

/* the largest pipe F_SETPIPE_SZ grants, as Linux's default (Go's os tests read it) */
const uint8_t *sys_procfs_gen_pipe_max(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	(void)st;
	*len = (size_t)snprintf(buf, cap, "%d\n", SYS_PIPE_MAX);
	return (const uint8_t *)buf;
}

/* The state file's layout, described once: each field's width on disk (little-endian) and its
 * place in memory. The writer and the parser walk the same tables, so what one writes the other
 * reads, whatever the compiler makes of the structs. */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "snap/snap_fmt.h"

/* a field: width bytes on disk (4 or 8: an integer, little-endian; 0: size bytes as they are),
 * size bytes in memory at off in its record */
struct field {
	const char *name;
	size_t off, size;
	unsigned width;
};
#define MEMBER(T, m) #m, offsetof(T, m), sizeof(((T *)0)->m)
#define INT(T, m, w)                                                                               \
	{                                                                                          \
		MEMBER(T, m), w                                                                    \
	}
#define RAW(T, m)                                                                                  \
	{                                                                                          \
		MEMBER(T, m), 0                                                                    \
	}

/* records of fields, in struct snap: count of them (or as many as the size_t at count_off
 * says, at most max), stride bytes apart at off, or behind the pointer at off (ptr); fields
 * NULL: bytes */
struct part {
	const char *name;
	size_t off;
	int ptr;
	const struct field *fields;
	size_t nfields, stride, count, count_off, max;
};
#define FIELDS(f) f, BASE_LEN(f)

#define HDR(m, w) INT(struct snap_hdr, m, w)
static const struct field hdr_fields[] = {
    RAW(struct snap_hdr, magic),
    HDR(version, 4),
    HDR(hdr_size, 4),
    RAW(struct snap_hdr, ember),
    HDR(image_digest, 8),
    HDR(mem_size, 8),
    HDR(config_hash, 8),
    HDR(npages, 8),
    HDR(nvma, 8),
    HDR(out_len, 8),
    HDR(log_len, 8),
    HDR(fpu_len, 8),
    HDR(nthreads, 8),
    HDR(nfar, 8),
    HDR(nfd, 8),
    HDR(nobj, 8),
    HDR(nepi, 8),
    HDR(pipe_len, 8),
    HDR(body_len, 8),
    HDR(body_hash, 8),
};

/* the fixed part of the body: the process, registers and emulation state */
#define S(m, w) INT(struct snap, m, w)
static const struct field snap_fields[] = {
    S(proc.brk_start, 8),
    S(proc.mmap_hi, 8),
    S(proc.stack_lo, 8),
    S(proc.stack_hi, 8),
    S(proc.stack_size, 8),
    S(proc.arg_start, 8),
    S(proc.arg_end, 8),
    S(proc.guest, 4),
    S(proc.cpus, 4),
    S(proc.max_threads, 4),
    S(regs.rax, 8),
    S(regs.rbx, 8),
    S(regs.rcx, 8),
    S(regs.rdx, 8),
    S(regs.rsi, 8),
    S(regs.rdi, 8),
    S(regs.rsp, 8),
    S(regs.rbp, 8),
    S(regs.r8, 8),
    S(regs.r9, 8),
    S(regs.r10, 8),
    S(regs.r11, 8),
    S(regs.r12, 8),
    S(regs.r13, 8),
    S(regs.r14, 8),
    S(regs.r15, 8),
    S(regs.rip, 8),
    S(regs.rflags, 8),
    S(fs_base, 8),
    S(sys.brk_cur, 8),
    S(sys.code_pos, 8),
    S(sys.cwd, 4),
    S(sys.pending, 4),
    S(sys.snap_tid, 4),
    S(sys.threads.next_tid, 4),
    S(sys.threads.pending, 8),
    S(sys.rlim_set, 4),
    RAW(struct snap, sys.rlim),
};
_Static_assert(sizeof(struct vm_regs) == 18 * 8, "every register has its field");

/* a thread (proc_saved_thread): its vCPU, registers, signal state and FPU image */
#define T(m, w) INT(struct proc_saved_thread, m, w)
static const struct field thread_fields[] = {
    T(tid, 4),	       T(cpu, 4),	  T(pin, 4),
    T(regs.rax, 8),    T(regs.rbx, 8),	  T(regs.rcx, 8),
    T(regs.rdx, 8),    T(regs.rsi, 8),	  T(regs.rdi, 8),
    T(regs.rsp, 8),    T(regs.rbp, 8),	  T(regs.r8, 8),
    T(regs.r9, 8),     T(regs.r10, 8),	  T(regs.r11, 8),
    T(regs.r12, 8),    T(regs.r13, 8),	  T(regs.r14, 8),
    T(regs.r15, 8),    T(regs.rip, 8),	  T(regs.rflags, 8),
    T(fs_base, 8),     T(sigmask, 8),	  T(pending, 8),
    T(clear_tid, 8),   T(altstack[0], 8), T(altstack[1], 8),
    T(altstack[2], 8), T(fpu_len, 8),	  RAW(struct proc_saved_thread, fpu),
};
#define TM(m, w) INT(struct proc_timer, m, w)
static const struct field timer_fields[] = {
    TM(at, 8), TM(every, 8), TM(sig, 4), TM(armed, 4), TM(used, 4), TM(thread, 4),
};
/* A member added to a struct saved here needs its field in these tables and a new
 * SNAP_FILE_VERSION: on x86-64 these sizes change with it, and the build says so. Not on disk,
 * by design: sys_saved.fs_win (the in-guest runtime's file windows, forgotten by the first run
 * after a load), sys_saved.umask and sys_saved.tmp (a umask init changed, a /tmp that init wrote
 * keep their snapshot in memory only: func/disk.c), sys_saved.shm (its files' shared mappings),
 * the pointers and capacities the parser sets itself. */
#if defined(__x86_64__) && defined(__LP64__)
_Static_assert(sizeof(struct sys_process) == 72 && sizeof(struct sys_saved) == 3312 &&
		   sizeof(struct proc_saved_thread) == 16608 && sizeof(struct proc_timer) == 32 &&
		   sizeof(struct sys_saved_fd) == 12 && sizeof(struct sys_saved_obj) == 64 &&
		   sizeof(struct sys_epi) == 32 && sizeof(struct sys_sig) == 32 &&
		   sizeof(struct sys_vma) == 24,
	       "a saved struct changed: its fields here, and SNAP_FILE_VERSION, must follow");
#endif

/* the descriptor table: descriptors, objects (each kind's use of the fields: sys.h), epoll's
 * entries */
#define FD(m)	  INT(struct sys_saved_fd, m, 4)
#define OBJ(m, w) INT(struct sys_saved_obj, m, w)
#define EPI(m, w) INT(struct sys_epi, m, w)
static const struct field fd_fields[] = {FD(fd), FD(obj), FD(cloexec)};
static const struct field obj_fields[] = {
    OBJ(slot, 4),  OBJ(o.kind, 4), OBJ(o.refs, 4), OBJ(o.flags, 4), OBJ(o.id, 4),
    OBJ(o.pos, 8), OBJ(o.len, 8),  OBJ(o.at, 8),   OBJ(o.every, 8), OBJ(o.seq, 4),
};
static const struct field epi_fields[] = {EPI(ep, 4),	  EPI(obj, 4),	EPI(fd, 4),
					  EPI(events, 4), EPI(data, 8), EPI(seen, 4)};
static const struct field sig_fields[] = {
    INT(struct sys_sig, handler, 8), INT(struct sys_sig, flags, 8),
    INT(struct sys_sig, restorer, 8), INT(struct sys_sig, mask, 8)};
static const struct field vma_fields[] = {
    INT(struct sys_vma, start, 8), INT(struct sys_vma, end, 8), INT(struct sys_vma, prot, 4)};
static const struct field u64_field[] = {{"", 0, 8, 8}};

#define AT(m)	  offsetof(struct snap, m)
#define COUNT(m)  0, AT(m)
#define FIXED(m)  sizeof(((struct snap *)0)->m) / sizeof(((struct snap *)0)->m[0]), 0
#define STRIDE(m) sizeof(((struct snap *)0)->m[0])
static const struct part parts[] = {
    {"state", 0, 0, FIELDS(snap_fields), sizeof(struct snap), 1, 0, 0},
    {"signals", AT(sys.sig), 0, FIELDS(sig_fields), STRIDE(sys.sig), FIXED(sys.sig), 0},
    {"fpu", AT(fpu), 0, NULL, 0, 1, COUNT(fpu_len), VM_FPU_MAX},
    {"threads", AT(sys.threads.t), 1, FIELDS(thread_fields), sizeof(struct proc_saved_thread),
     COUNT(sys.threads.nt), PROC_THREADS_MAX},
    {"timers", AT(sys.threads.timers), 0, FIELDS(timer_fields), STRIDE(sys.threads.timers),
     FIXED(sys.threads.timers), 0},
    {"descriptors", AT(sys.fds), 1, FIELDS(fd_fields), sizeof(struct sys_saved_fd), COUNT(sys.nfd),
     SYS_FDS},
    {"objects", AT(sys.objs), 1, FIELDS(obj_fields), sizeof(struct sys_saved_obj), COUNT(sys.nobj),
     SYS_FDS},
    {"epoll", AT(sys.epi), 1, FIELDS(epi_fields), sizeof(struct sys_epi), COUNT(sys.nepi),
     SYS_EPI_MAX},
    {"pipes", AT(sys.pipes.data), 1, NULL, 0, 1, COUNT(sys.pipes.len), SYS_FDS * 65536ULL},
    {"mappings", AT(sys.vmas), 1, FIELDS(vma_fields), sizeof(struct sys_vma), COUNT(sys.nvma), 0},
    {"reservations", AT(sys.far), 1, FIELDS(vma_fields), sizeof(struct sys_vma), COUNT(sys.nfar),
     0},
    {"pages", AT(pages), 1, FIELDS(u64_field), 8, COUNT(npages), 0},
    {"hashes", AT(hashes), 1, FIELDS(u64_field), 8, COUNT(npages), 0},
    {"stdout", AT(sys.out.data), 1, NULL, 0, 1, COUNT(sys.out.len), 0},
    {"stderr", AT(sys.log.data), 1, NULL, 0, 1, COUNT(sys.log.len), 0},
};

/* an unsigned member of 4 or 8 bytes (int members are stored as their 32 bits) */
static uint64_t load(const uint8_t *m, size_t size)
{
	uint32_t v4;
	uint64_t v8;
	if (size == 4)
		return memcpy(&v4, m, 4), v4;
	return memcpy(&v8, m, 8), v8;
}

static int store(uint8_t *m, size_t size, uint64_t v)
{
	uint32_t v4 = (uint32_t)v;
	if (size == 4 && v > UINT32_MAX)
		return -1;
	if (size == 4)
		memcpy(m, &v4, 4);
	else
		memcpy(m, &v, 8);
	return 0;
}

static size_t width_of(const struct field *f)
{
	return f->width ? f->width : f->size;
}

static size_t rec_len(const struct field *f, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += width_of(&f[i]);
	return len;
}

/* a record's fields to disk (get 0) or from it (get 1); -1: a value the member cannot hold */
static int walk(const struct field *f, size_t n, uint8_t *rec, uint8_t *disk, int get)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t *m = rec + f[i].off;
		if (!f[i].width)
			memcpy(get ? m : disk, get ? disk : m, f[i].size);
		else if (!get)
			base_put_le(disk, load(m, f[i].size), f[i].width);
		else if (store(m, f[i].size, base_get_le(disk, f[i].width)))
			return -1;
		disk += width_of(&f[i]);
	}
	return 0;
}

void snap_fmt_put_hdr(uint8_t *out, const struct snap_hdr *h)
{
	walk(hdr_fields, BASE_LEN(hdr_fields), (uint8_t *)h, out, 0);
}

void snap_fmt_get_hdr(const uint8_t *in, struct snap_hdr *h)
{
	memset(h, 0, sizeof(*h));
	walk(hdr_fields, BASE_LEN(hdr_fields), (uint8_t *)h, (uint8_t *)in, 1);
}
_Static_assert(SNAP_HDR_LEN == 8 + 4 + 4 + 16 + 16 * 8, "the header's fields fill SNAP_HDR_LEN");

void snap_fmt_counts(const struct snap *s, struct snap_hdr *h)
{
	h->npages = s->npages;
	h->nvma = s->sys.nvma;
	h->out_len = s->sys.out.len;
	h->log_len = s->sys.log.len;
	h->fpu_len = s->fpu_len;
	h->nthreads = s->sys.threads.nt;
	h->nfar = s->sys.nfar;
	h->nfd = s->sys.nfd;
	h->nobj = s->sys.nobj;
	h->nepi = s->sys.nepi;
	h->pipe_len = s->sys.pipes.len;
}

int snap_fmt_set_counts(struct snap *s, const struct snap_hdr *h)
{
	const uint64_t v[] = {h->npages, h->nvma, h->out_len, h->log_len, h->fpu_len, h->nthreads,
			      h->nfar,	 h->nfd,  h->nobj,    h->nepi,	  h->pipe_len};
	for (size_t i = 0; i < BASE_LEN(v); i++)
		if (v[i] > SIZE_MAX / 64)
			return -1;
	s->npages = h->npages;
	s->sys.nvma = h->nvma;
	s->sys.out.len = s->sys.out.cap = h->out_len;
	s->sys.log.len = s->sys.log.cap = h->log_len;
	s->fpu_len = h->fpu_len;
	s->sys.threads.nt = h->nthreads;
	s->sys.nfar = h->nfar;
	s->sys.nfd = h->nfd;
	s->sys.nobj = h->nobj;
	s->sys.nepi = h->nepi;
	s->sys.pipes.len = s->sys.pipes.cap = h->pipe_len;
	return 0;
}

static size_t count_of(const struct part *p, const struct snap *s)
{
	size_t n;
	if (!p->count_off)
		return p->count;
	memcpy(&n, (const uint8_t *)s + p->count_off, sizeof(n));
	return n;
}

int snap_fmt_body_len(const struct snap *s, uint64_t *len)
{
	uint64_t total = 0;
	for (size_t i = 0; i < BASE_LEN(parts); i++) {
		const struct part *p = &parts[i];
		uint64_t n = count_of(p, s), rec = p->fields ? rec_len(p->fields, p->nfields) : 1;
		if ((p->max && n > p->max) || n > (UINT64_MAX - total) / rec)
			return -1;
		total += n * rec;
	}
	*len = total;
	return 0;
}

/* where part p's records are in s: in place, or behind its pointer */
static uint8_t *records(const struct part *p, const struct snap *s)
{
	uint8_t *at = (uint8_t *)s + p->off, *ptr;
	if (!p->ptr)
		return at;
	memcpy(&ptr, at, sizeof(ptr));
	return ptr;
}

static int each_part(struct snap *s, uint8_t *disk, int get)
{
	for (size_t i = 0; i < BASE_LEN(parts); i++) {
		const struct part *p = &parts[i];
		size_t n = count_of(p, s);
		if (get && p->ptr) { /* one byte more: an empty part and a text end alike */
			uint8_t *mem = malloc(n * (p->fields ? p->stride : 1) + 1);
			if (!mem)
				return -1;
			memcpy((uint8_t *)s + p->off, &mem, sizeof(mem));
		}
		uint8_t *rec = records(p, s);
		if (!p->fields) {
			if (n)
				memcpy(get ? rec : disk, get ? disk : rec, n);
			disk += n;
			continue;
		}
		size_t len = rec_len(p->fields, p->nfields);
		for (size_t k = 0; k < n; k++, disk += len)
			if (walk(p->fields, p->nfields, rec + k * p->stride, disk, get))
				return -1;
	}
	return 0;
}

void snap_fmt_put_body(uint8_t *out, const struct snap *s)
{
	each_part((struct snap *)s, out, 0);
}

int snap_fmt_get_body(struct snap *s, const uint8_t *in, uint64_t len)
{
	uint64_t want;
	if (snap_fmt_body_len(s, &want) || want != len)
		return -1;
	return each_part(s, (uint8_t *)in, 1);
}

/* The snapshot state file (src/snap/snap_file.c, snap_fmt.c): a snapshot written and read back
 * whole; its layout pinned (fixed-width little-endian fields, whatever the compiler does); and
 * the parser on damaged files: every truncation, every single-bit flip (with the checksum left
 * as it is and made to match), absurd counts and page or mapping addresses. Each is refused with
 * a reason, never a crash or a read out of bounds (the sanitizer build checks the latter). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/base.h"
#include "snap/snap_file.h"
#include "snap/snap_fmt.h"

#define PAGE EMBER_PAGE_SIZE
#define MEM  (8ULL << 20)
#define FPU  512
/* the layout of version 9 (docs/architecture.md): the header, then the body's fixed part
 * (process 52 bytes, registers 144, fs_base 8, emulation state 40), the signals, the FPU state,
 * the threads (16604 bytes each), the timers (32 each), the descriptor table (descriptors 12
 * bytes each, objects 56, epoll entries 28, the pipes' bytes), then the memory's parts */
#define H_NPAGES   56
#define H_NVMA	   64
#define H_OUT	   72
#define H_LOG	   80
#define H_FPU	   88
#define H_THREADS  96
#define H_FAR	   104
#define H_NFD	   112
#define H_NOBJ	   120
#define H_NEPI	   128
#define H_PIPES	   136
#define H_BODY_LEN 144
#define H_HASH	   152
#define B_FIXED	   (68 + 144 + 8 + 40 + 4 + 16 * 16)
#define B_THREADS  (SNAP_HDR_LEN + B_FIXED + 65 * 32 + FPU)
#define THREAD_LEN (12 + 144 + 8 * 4 + 24 + 8 + VM_FPU_MAX)
#define B_FDS	   (B_THREADS + 2 * THREAD_LEN + PROC_TIMERS * 32)
#define B_OBJS	   (B_FDS + NFD * 12)
#define B_EPI	   (B_OBJS + NOBJ * 56)
#define B_BYTES	   (B_EPI + 28)
#define B_VMAS	   (B_BYTES + 5)
#define B_FAR	   (B_VMAS + 2 * 20)
#define B_PAGES	   (B_FAR + 1 * 20)
#define NFD	   6
#define NOBJ	   6

static char dir[64], snapdir[96];
static const struct snap_meta meta = {0x1122334455667788ULL, MEM, 0x99};
static uint8_t *file; /* the state file snap_save wrote */
static size_t file_len;

static const uint64_t addrs[] = {0x400000, 0x401000, 0x600000};

/* a snapshot as a capture would leave it, every field of a value of its own */
static void make(struct snap *s)
{
	memset(s, 0, sizeof(*s));
	uint64_t *r = (uint64_t *)&s->regs;
	for (size_t i = 0; i < sizeof(s->regs) / 8; i++)
		r[i] = 0x0101010101010101ULL * (i + 1);
	s->fs_base = 0x7fff0000;
	s->fpu_len = FPU;
	for (size_t i = 0; i < FPU; i++)
		s->fpu[i] = (uint8_t)(i ^ 0x5a);
	s->proc = (struct sys_process){0x500000, 0x700000, 0x780000, 0x7f0000, 0x70000, 0x7eff00,
				       0x7eff40, 1,	   2,	     77,       0};
	struct sys_saved *y = &s->sys;
	y->brk_cur = 0x501000;
	y->code_pos = 7;
	y->cwd = 3;
	/* fds 0 to 2, an epoll on 3 watching a pipe's read end on 5 (its write end on 6) that
	 * holds five bytes */
	static const struct sys_saved_fd fds[NFD] = {{0, 0, 0}, {1, 1, 0}, {2, 2, 0},
						     {3, 3, 1}, {5, 4, 1}, {6, 5, 1}};
	y->nfd = NFD;
	y->fds = malloc(sizeof(fds));
	memcpy(y->fds, fds, sizeof(fds));
	y->nobj = NOBJ;
	y->objs = calloc(NOBJ, sizeof(*y->objs));
	for (uint32_t i = 0; i < 3; i++)
		y->objs[i] = (struct sys_saved_obj){i, {.kind = SYS_KIND_STD, .refs = 1, .id = i}};
	y->objs[1].o.flags = y->objs[2].o.flags = 1; /* O_WRONLY */
	y->objs[3] = (struct sys_saved_obj){3, {.kind = SYS_KIND_EPOLL, .refs = 1, .flags = 2}};
	y->objs[4] = (struct sys_saved_obj){
	    4, {.kind = SYS_KIND_PIPE, .refs = 1, .id = 6, .pos = 0, .len = 5, .seq = 9}};
	y->objs[5] = (struct sys_saved_obj){
	    5, {.kind = SYS_KIND_PIPE, .refs = 1, .flags = 1 | 04000, .id = 5, .at = 1ULL << 50}};
	y->nepi = 1;
	y->epi = calloc(1, sizeof(*y->epi));
	y->epi[0] = (struct sys_epi){3, 4, 5, 0x80000019, 0x1122334455667788ULL, 8};
	y->pipes.data = (uint8_t *)strdup("hello");
	y->pipes.len = y->pipes.cap = 5;
	y->sig[64] = (struct sys_sig){0x401234, 4, 0x401300, 0xff};
	y->pending = 0x12;
	y->snap_tid = 3;
	/* two threads: vCPU 0's (its FPU state is the snapshot's) and one waiting off a vCPU */
	y->threads.nt = 2;
	y->threads.t = calloc(2, sizeof(*y->threads.t));
	y->threads.next_tid = 5;
	y->threads.pending = 1ULL << 40;
	y->threads.t[0] = (struct proc_saved_thread){.tid = 1, .cpu = 0, .pin = -1};
	y->threads.t[0].sigmask = 1ULL << 63;
	y->threads.t[0].clear_tid = 0x7f0100;
	y->threads.t[0].altstack[0] = 0x600000;
	y->threads.t[0].altstack[2] = 8192;
	y->threads.t[1] = (struct proc_saved_thread){.tid = 3, .cpu = -1, .pin = 1};
	y->threads.t[1].regs.rip = 0x401234;
	y->threads.t[1].fs_base = 0x7ff000;
	y->threads.t[1].fpu_len = 832;
	for (size_t i = 0; i < 832; i++)
		y->threads.t[1].fpu[i] = (uint8_t)(i * 7);
	y->threads.timers[0] = (struct proc_timer){5000000, 1000000, 14, 1, 0, 0};
	y->threads.timers[3] = (struct proc_timer){0, 0, 10, 0, 1, 3};
	y->nvma = 2;
	y->vmas = calloc(2, sizeof(*y->vmas));
	y->vmas[0] = (struct sys_vma){0x400000, 0x402000, 5};
	y->vmas[1] = (struct sys_vma){0x600000, 0x601000, 3};
	y->nfar = 1; /* a reservation beyond guest memory */
	y->far = calloc(1, sizeof(*y->far));
	y->far[0] = (struct sys_vma){1ULL << 40, (1ULL << 40) + (1ULL << 30), 0};
	y->out.data = (uint8_t *)strdup("init's stdout\n");
	y->out.len = y->out.cap = strlen("init's stdout\n");
	y->log.data = (uint8_t *)strdup("err");
	y->log.len = y->log.cap = 3;
	s->npages = BASE_LEN(addrs);
	s->pages = malloc(sizeof(addrs));
	memcpy(s->pages, addrs, sizeof(addrs));
	s->data = malloc(s->npages * PAGE);
	for (size_t i = 0; i < s->npages * PAGE; i++)
		s->data[i] = (uint8_t)(i * 13 + i / PAGE);
}

static void put_state(const uint8_t *buf, size_t len)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/" SNAP_STATE, snapdir);
	/* no fsync: thousands of these */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(base_write_all(fd, buf, len), 0);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	/* in memory where there is a tmpfs: thousands of state files are written */
	snprintf(dir, sizeof(dir), "/dev/shm/ember-test-snap-XXXXXX");
	if (!mkdtemp(dir)) {
		snprintf(dir, sizeof(dir), "/tmp/ember-test-snap-XXXXXX");
		if (!mkdtemp(dir))
			return -1;
	}
	snprintf(snapdir, sizeof(snapdir), "%s/snap", dir);
	struct snap s;
	char err[256], path[160];
	make(&s);
	int rc = snap_save(&s, &meta, snapdir, err, sizeof(err));
	snap_free(&s);
	snprintf(path, sizeof(path), "%s/" SNAP_STATE, snapdir);
	return rc || base_read_file(path, 1 << 20, &file, &file_len) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	free(file);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static uint64_t get64(const uint8_t *p)
{
	return base_get_le(p, 8);
}

static void put64(uint8_t *p, uint64_t v)
{
	base_put_le(p, v, 8);
}

/* the checksum made to match, as a writer would: the parser sees the damage itself */
static void fix_hash(uint8_t *buf, size_t len)
{
	put64(buf + H_HASH, 0);
	put64(buf + H_HASH, XXH64(buf, len, 0));
}

/* what the writer promises and a restore relies on */
static void check_sane(const struct snap *s)
{
	for (size_t i = 0; i < s->npages; i++)
		assert_true(s->pages[i] % PAGE == 0 && s->pages[i] < MEM &&
			    (i == 0 || s->pages[i - 1] < s->pages[i]));
	for (size_t i = 0; i < s->sys.nvma; i++)
		assert_true(s->sys.vmas[i].start < s->sys.vmas[i].end && s->sys.vmas[i].end <= MEM);
	assert_true(s->fpu_len <= VM_FPU_MAX);
}

/* buf as the state file: 0 when accepted (then sane), or SNAP_REFUSED with a reason */
static int load(const uint8_t *buf, size_t len, int pages)
{
	put_state(buf, len);
	struct snap s;
	char err[512] = "";
	int rc = snap_load(&s, &meta, snapdir, pages, err, sizeof(err));
	if (rc) {
		assert_int_equal(rc, SNAP_REFUSED);
		assert_true(strstr(err, "refused") != NULL);
		return rc;
	}
	check_sane(&s);
	snap_free(&s);
	return 0;
}

static void round_trip(void **state)
{
	(void)state;
	put_state(file, file_len);
	struct snap want, got;
	char err[256];
	make(&want);
	assert_int_equal(snap_load(&got, &meta, snapdir, 1, err, sizeof(err)), 0);
	assert_memory_equal(&got.regs, &want.regs, sizeof(want.regs));
	assert_int_equal(got.fs_base, want.fs_base);
	assert_int_equal(got.fpu_len, FPU);
	assert_memory_equal(got.fpu, want.fpu, FPU);
	assert_memory_equal(&got.proc, &want.proc, sizeof(want.proc));
	const struct sys_saved *a = &got.sys, *b = &want.sys;
	assert_int_equal(a->brk_cur, b->brk_cur);
	assert_int_equal(a->code_pos, b->code_pos);
	assert_int_equal(a->cwd, b->cwd);
	assert_int_equal(a->nfd, NFD);
	assert_memory_equal(a->fds, b->fds, NFD * sizeof(*b->fds));
	assert_int_equal(a->nobj, NOBJ);
	for (size_t i = 0; i < NOBJ; i++) { /* field by field: the structs have padding */
		const struct sys_saved_obj *x = &a->objs[i], *w = &b->objs[i];
		assert_int_equal(x->slot, w->slot);
		assert_true(x->o.kind == w->o.kind && x->o.refs == w->o.refs &&
			    x->o.flags == w->o.flags && x->o.id == w->o.id &&
			    x->o.pos == w->o.pos && x->o.len == w->o.len && x->o.at == w->o.at &&
			    x->o.every == w->o.every && x->o.seq == w->o.seq);
	}
	assert_int_equal(a->nepi, 1);
	assert_true(a->epi[0].ep == 3 && a->epi[0].obj == 4 && a->epi[0].fd == 5 &&
		    a->epi[0].events == 0x80000019 && a->epi[0].data == 0x1122334455667788ULL &&
		    a->epi[0].seen == 8);
	assert_int_equal(a->pipes.len, 5);
	assert_memory_equal(a->pipes.data, "hello", 5);
	assert_memory_equal(a->sig, b->sig, sizeof(b->sig));
	assert_int_equal(a->pending, b->pending);
	assert_int_equal(a->snap_tid, b->snap_tid);
	assert_int_equal(a->threads.nt, 2);
	assert_int_equal(a->threads.next_tid, b->threads.next_tid);
	assert_int_equal(a->threads.pending, b->threads.pending);
	assert_memory_equal(a->threads.t, b->threads.t, 2 * sizeof(*b->threads.t));
	assert_memory_equal(a->threads.timers, b->threads.timers, sizeof(b->threads.timers));
	assert_int_equal(a->nvma, 2);
	assert_int_equal(a->nfar, 1);
	assert_int_equal(a->far[0].start, b->far[0].start);
	assert_int_equal(a->far[0].end, b->far[0].end);
	assert_int_equal(a->far[0].prot, 0);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(a->vmas[i].start, b->vmas[i].start);
		assert_int_equal(a->vmas[i].end, b->vmas[i].end);
		assert_int_equal(a->vmas[i].prot, b->vmas[i].prot);
	}
	assert_int_equal(a->out.len, b->out.len);
	assert_memory_equal(a->out.data, b->out.data, b->out.len);
	assert_int_equal(a->log.len, 3);
	assert_memory_equal(a->log.data, "err", 3);
	assert_int_equal(got.npages, want.npages);
	assert_memory_equal(got.pages, want.pages, sizeof(addrs));
	assert_memory_equal(got.data, want.data, want.npages * PAGE);
	snap_free(&got);
	snap_free(&want);
}

/* the fields where the format says, little-endian, whatever the struct layout */
static void layout_is_pinned(void **state)
{
	(void)state;
	const uint8_t *b = file + SNAP_HDR_LEN;
	assert_memory_equal(file, "EMBERSNP", 8);
	assert_int_equal(file[8] | file[9] << 8, SNAP_FILE_VERSION);
	assert_int_equal(file[12], SNAP_HDR_LEN);
	assert_int_equal(get64(file + 32), meta.image_digest);
	assert_int_equal(get64(file + 40), MEM);
	assert_int_equal(get64(file + H_NPAGES), 3);
	assert_int_equal(get64(file + H_NVMA), 2);
	assert_int_equal(get64(file + H_FPU), FPU);
	assert_int_equal(get64(file + H_THREADS), 2);
	assert_int_equal(get64(file + H_FAR), 1);
	assert_int_equal(get64(file + B_FAR + 8), (1ULL << 40) + (1ULL << 30));
	assert_int_equal(get64(file + H_NFD), NFD);
	assert_int_equal(get64(file + H_NOBJ), NOBJ);
	assert_int_equal(get64(file + H_NEPI), 1);
	assert_int_equal(get64(file + H_PIPES), 5);
	assert_int_equal(get64(file + H_BODY_LEN), file_len - SNAP_HDR_LEN);
	assert_int_equal(get64(b), 0x500000);				 /* proc.brk_start */
	assert_int_equal(get64(b + 40), 0x7eff00);			 /* proc.arg_start */
	assert_int_equal(get64(b + 48), 0x7eff40);			 /* proc.arg_end */
	assert_int_equal(get64(b + 56) & 0xffffffff, 1);		 /* proc.guest, 4 bytes */
	assert_int_equal(get64(b + 60) & 0xffffffff, 2);		 /* proc.cpus */
	assert_int_equal(get64(b + 64) & 0xffffffff, 77);		 /* proc.max_threads */
	assert_int_equal(get64(b + 68), 0x0101010101010101ULL);		 /* rax */
	assert_int_equal(get64(b + 68 + 16 * 8), 0x1111111111111111ULL); /* rip */
	assert_int_equal(get64(b + 68 + 144), 0x7fff0000);		 /* fs_base */
	/* the second thread: its tid, its rip, its FPU state's length */
	const uint8_t *t = file + B_THREADS + THREAD_LEN;
	assert_int_equal(get64(t) & 0xffffffff, 3);
	assert_int_equal(get64(t + 12 + 16 * 8), 0x401234);
	assert_int_equal(get64(t + 12 + 144 + 32 + 24), 832);
	/* the descriptor table: fd 5's record, the write end's object (its O_NONBLOCK, its other
	 * end, the at of 2^50), the epoll entry's data, the pipe's bytes */
	assert_int_equal(get64(file + B_FDS + 4 * 12) & 0xffffffff, 5);
	assert_int_equal(get64(file + B_FDS + 4 * 12 + 4) & 0xffffffff, 4);
	const uint8_t *w = file + B_OBJS + 5 * 56;
	assert_int_equal(get64(w) & 0xffffffff, 5);
	assert_int_equal(get64(w + 4) & 0xffffffff, SYS_KIND_PIPE);
	assert_int_equal(get64(w + 12) & 0xffffffff, 04001);
	assert_int_equal(get64(w + 16) & 0xffffffff, 5);
	assert_int_equal(get64(w + 36), 1ULL << 50);
	assert_int_equal(get64(file + B_EPI + 16), 0x1122334455667788ULL);
	assert_memory_equal(file + B_BYTES, "hello", 5);
	assert_int_equal(get64(file + B_VMAS), 0x400000);
	assert_int_equal(get64(file + B_PAGES + 16), 0x600000);
}

static void every_truncation_refused(void **state)
{
	(void)state;
	for (size_t len = 0; len < file_len; len++)
		if (load(file, len, 0) != SNAP_REFUSED)
			fail_msg("accepted the first %zu of %zu bytes", len, file_len);
	assert_int_equal(load(file, file_len, 1), 0);
}

/* with the checksum as it was, every flip is caught; with it made to match, each flip is either
 * refused or gives a snapshot as sane as a writer's */
static void every_bit_flip(void **state)
{
	(void)state;
	uint8_t *buf = malloc(file_len);
	int fixed_refused = 0;
	for (size_t bit = 0; bit < file_len * 8; bit++) {
		memcpy(buf, file, file_len);
		buf[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		if (load(buf, file_len, 0) != SNAP_REFUSED)
			fail_msg("bit %zu flipped: accepted", bit);
		/* the header and the tables (mappings, pages, hashes) with a matching checksum */
		if (bit / 8 >= SNAP_HDR_LEN && bit / 8 < B_VMAS)
			continue;
		fix_hash(buf, file_len);
		fixed_refused += load(buf, file_len, 1) == SNAP_REFUSED;
	}
	assert_true(fixed_refused > 0);
	free(buf);
}

static void absurd_counts_refused(void **state)
{
	(void)state;
	static const size_t at[] = {H_NPAGES, H_NVMA, H_NFD, H_NOBJ, H_NEPI,
				    H_PIPES,  H_OUT,  H_LOG, H_FPU,  H_BODY_LEN};
	uint8_t *buf = malloc(file_len);
	for (size_t i = 0; i < BASE_LEN(at); i++) {
		const uint64_t v = get64(file + at[i]);
		const uint64_t bad[] = {UINT64_MAX,	 1ULL << 63,   1ULL << 62, 1ULL << 32,
					UINT64_MAX / 16, file_len * 2, v + 1,	   v ? v - 1 : 7};
		for (size_t k = 0; k < BASE_LEN(bad); k++) {
			memcpy(buf, file, file_len);
			put64(buf + at[i], bad[k]);
			fix_hash(buf, file_len);
			if (load(buf, file_len, 0) != SNAP_REFUSED)
				fail_msg("header field at %zu = %#llx: accepted", at[i],
					 (unsigned long long)bad[k]);
		}
	}
	free(buf);
}

/* pages unaligned, outside the machine, out of order; mappings empty or past its end */
static void absurd_addresses_refused(void **state)
{
	(void)state;
	static const struct {
		size_t at;
		uint64_t v;
	} bad[] = {
	    {B_PAGES, 0x400001},
	    {B_PAGES, MEM},
	    {B_PAGES, UINT64_MAX & ~(PAGE - 1)},
	    {B_PAGES + 8, 0x400000},
	    {B_PAGES + 8, 0x3ff000},
	    {B_PAGES + 16, 0x401000},
	    {B_VMAS, 0x402000},
	    {B_VMAS + 8, 0x400000},
	    {B_VMAS + 8, MEM + PAGE},
	    {B_VMAS + 20 + 8, UINT64_MAX},
	};
	uint8_t *buf = malloc(file_len);
	for (size_t i = 0; i < BASE_LEN(bad); i++) {
		memcpy(buf, file, file_len);
		put64(buf + bad[i].at, bad[i].v);
		fix_hash(buf, file_len);
		if (load(buf, file_len, 0) != SNAP_REFUSED)
			fail_msg("%#llx at %zu: accepted", (unsigned long long)bad[i].v, bad[i].at);
	}
	free(buf);
}

/* a state file an Ember run wrote for counter.musl (the fuzzing corpus's seed, after its flags
 * byte), each truncation of it refused */
static void real_file_truncations(void **state)
{
	(void)state;
	char exe[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	/* B/tests/unit/test_snap_file: the tree is three folders up */
	for (int i = 0; i < 4; i++)
		*strrchr(exe, '/') = 0;
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/snap/seed-trap", exe);
	uint8_t *seed;
	size_t len;
	assert_int_equal(base_read_file(path, 1 << 24, &seed, &len), 0);
	assert_true(len > SNAP_HDR_LEN + 1);
	const uint8_t *st = seed + 1;
	len--;
	struct snap_meta m = {get64(st + 32), get64(st + 40), get64(st + 48)};
	struct snap s;
	char err[512];
	put_state(st, len);
	assert_int_equal(snap_load(&s, &m, snapdir, 0, err, sizeof(err)), 0);
	snap_free(&s);
	for (size_t k = 0; k < len; k += k < 4096 ? 1 : 61) {
		put_state(st, k);
		err[0] = 0;
		if (snap_load(&s, &m, snapdir, 0, err, sizeof(err)) != SNAP_REFUSED || !err[0])
			fail_msg("accepted the first %zu of %zu bytes", k, len);
	}
	free(seed);
}

static void old_version_refused(void **state)
{
	(void)state;
	uint8_t *buf = malloc(file_len);
	memcpy(buf, file, file_len);
	buf[8] = 5;
	fix_hash(buf, file_len);
	put_state(buf, file_len);
	struct snap s;
	char err[512];
	assert_int_equal(snap_load(&s, &meta, snapdir, 0, err, sizeof(err)), SNAP_REFUSED);
	assert_non_null(strstr(err, "incompatible Ember version"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),
	    cmocka_unit_test(layout_is_pinned),
	    cmocka_unit_test(every_truncation_refused),
	    cmocka_unit_test(every_bit_flip),
	    cmocka_unit_test(absurd_counts_refused),
	    cmocka_unit_test(absurd_addresses_refused),
	    cmocka_unit_test(real_file_truncations),
	    cmocka_unit_test(old_version_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

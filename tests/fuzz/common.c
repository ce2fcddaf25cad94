/* The harnesses' shared pieces: the input reader, failures, the machine, paths and files. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>

#include "common.h"

#define PAGE EMBER_PAGE_SIZE

static uint64_t take(struct fz *f, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n && f->n; i++, f->n--)
		v |= (uint64_t)*f->p++ << (8 * i);
	return v;
}

uint8_t fz_u8(struct fz *f)
{
	return (uint8_t)take(f, 1);
}

uint16_t fz_u16(struct fz *f)
{
	return (uint16_t)take(f, 2);
}

uint32_t fz_u32(struct fz *f)
{
	return (uint32_t)take(f, 4);
}

uint64_t fz_u64(struct fz *f)
{
	return take(f, 8);
}

const uint8_t *fz_bytes(struct fz *f, size_t n, size_t *got)
{
	const uint8_t *p = f->p;
	*got = n < f->n ? n : f->n;
	f->p += *got;
	f->n -= *got;
	return p;
}

void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: invariant broken: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

const char *fz_backend(void)
{
	const char *b = getenv("EMBER_BACKEND");
	return b && *b ? b : "auto";
}

struct vm *fz_vm(uint64_t mem)
{
	static struct vm *vm;
	if (vm)
		return vm;
	enum vm_backend b;
	char err[200];
	FZ_CHECK(vm_backend_parse(fz_backend(), &b) == 0, "EMBER_BACKEND=%s", fz_backend());
	struct vm_config cfg = {.mem_size = mem, .backend = b};
	int rc = vm_create(&cfg, &vm, err, sizeof(err));
	FZ_CHECK(rc == VM_OK, "cannot create a machine (%s): %s", fz_backend(), err);
	return vm;
}

const char *fz_guest(const char *name)
{
	static char path[4096];
	const char *dir = getenv("EMBER_GUEST_DIR");
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "build/guest", name);
	FZ_CHECK(access(path, R_OK) == 0, "%s: %s (run `make all` first)", path, strerror(errno));
	return path;
}

static char tmp[4096];

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	remove(path);
	return 0;
}

static void remove_tmp(void)
{
	nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fz_tmpdir(void)
{
	if (tmp[0])
		return tmp;
	/* tmpfs when there is one: the harnesses write a file per input */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	snprintf(tmp, sizeof(tmp), "%s/ember-fuzz-XXXXXX", base && *base ? base : "/tmp");
	FZ_CHECK(mkdtemp(tmp), "mkdtemp %s: %s", tmp, strerror(errno));
	atexit(remove_tmp);
	return tmp;
}

void fz_write(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[8200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FZ_CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	const uint8_t *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		FZ_CHECK(w > 0, "writing %s: %s", path, strerror(errno));
		p += w;
		len -= (size_t)w;
	}
	close(fd);
}

/* the PTE of a page the program may use with prot: present, user; writable; no-execute unless
 * executable */
static uint64_t pte_for(uint64_t a, int prot)
{
	return a | 1 | 4 | (prot & PROT_WRITE ? 2 : 0) | (prot & PROT_EXEC ? 0 : 1ULL << 63);
}

FZ_UNTRACED void fz_check_ptes(struct vm *vm, const struct sys_vma *v, size_t n)
{
	if (vm_backend_of(vm) != VM_BACKEND_KVM)
		return;
	const uint64_t top = vm_user_top(vm), ad = 0x60; /* accessed, dirty: the CPU's */
	const uint64_t *pte = vm_guest(vm, top, top / 512);
	uint64_t a = 0;
	for (size_t i = 0; i <= n; i++) {
		uint64_t gap_end = i < n ? v[i].start : top, user = 0;
		for (; a < gap_end; a += PAGE)
			user |= pte[a / PAGE] & 4;
		FZ_CHECK(!user, "a page below %#lx is the program's, outside its map", gap_end);
		if (i == n)
			break;
		for (; a < v[i].end; a += PAGE) {
			uint64_t got = pte[a / PAGE] & ~ad;
			FZ_CHECK(v[i].prot ? got == pte_for(a, v[i].prot) : !(got & 4),
				 "page %#lx: PTE %#lx, the map says prot %d", a, got, v[i].prot);
		}
	}
}

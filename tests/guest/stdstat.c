/* fstat, newfstatat and statx of Ember's own descriptors (the request, stdout, stderr, the
 * metadata) and of a bundle's file, as bytes (tests/integration/test_files.sh): the in-guest
 * runtime's answers must be the host's, byte for byte, and so must its errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_STATX_FORCE_SYNC
#define AT_STATX_FORCE_SYNC 0x2000
#define AT_STATX_DONT_SYNC  0x4000
#endif

static unsigned char buf[256];

/* the call's result, and the bytes it wrote over a filled buffer: what it wrote and what not */
static void show(const char *what, int fd, long rc, size_t n)
{
	printf("%s %d: %ld", what, fd, rc < 0 ? -errno : rc);
	for (size_t i = 0; rc == 0 && i < n; i++)
		printf("%s%02x", i % 32 ? "" : "\n  ", buf[i]);
	printf("\n");
}

static void stats(int fd)
{
	memset(buf, 0xa5, sizeof(buf));
	show("fstat", fd, syscall(SYS_fstat, fd, buf), 144);
	memset(buf, 0x5a, sizeof(buf));
	show("newfstatat", fd, syscall(SYS_newfstatat, fd, "", buf, AT_EMPTY_PATH), 144);
	memset(buf, 0xa5, sizeof(buf));
	show("statx", fd, syscall(SYS_statx, fd, "", AT_EMPTY_PATH, 0xfff, buf), 256);
}

/* a buffer whose last bytes are on a read-only page: EFAULT, and not a byte written before it
 * (the host checks the whole buffer first) */
static void straddle(const char *what, int fd, int nr)
{
	unsigned char *p =
	    mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *b = p + 4096 - 10; /* one 8-byte store fits, the next does not */
	long rc;
	memset(p, 0xa5, 8192);
	mprotect(p + 4096, 4096, PROT_READ);
	if (nr == SYS_statx)
		rc = syscall(nr, fd, "", AT_EMPTY_PATH, 0xfff, b);
	else if (nr == SYS_read || nr == SYS_pread64)
		rc = syscall(nr, fd, b, 64, 0);
	else
		rc = syscall(nr, fd, b);
	int kept = 1;
	for (int i = 0; i < 64; i++)
		kept &= p[4096 - 64 + i] == 0xa5;
	printf("%s %d: %ld, bytes before the read-only page %s", what, fd, rc < 0 ? -errno : rc,
	       kept ? "kept" : "written");
	if (fd > 4) /* a file's position after it: nothing read */
		printf(", at %ld", (long)lseek(fd, 0, SEEK_CUR));
	printf("\n");
	munmap(p, 8192);
}

int main(int argc, char **argv)
{
	char req[64];
	int file = argc > 1 ? open(argv[1], O_RDONLY) : -1;
	if (read(0, req, 1) != 1)
		return 1;
	for (int fd = 0; fd <= 4; fd++)
		if (fd != 3) /* the source: a runtime's alone */
			stats(fd);
	if (file >= 0)
		stats(file);
	/* what Linux refuses, the same wherever it is answered */
	show("statx both sync types", 0,
	     syscall(SYS_statx, 0, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC,
		     0xfff, buf),
	     0);
	show("statx reserved mask", 0, syscall(SYS_statx, 0, "", AT_EMPTY_PATH, 0x80000000u, buf),
	     0);
	show("statx unknown flag", 0,
	     syscall(SYS_statx, 0, "", AT_EMPTY_PATH | 0x10000, 0xfff, buf), 0);
	show("statx no AT_EMPTY_PATH", 0, syscall(SYS_statx, 0, "", 0, 0xfff, buf), 0);
	show("fstat bad buffer", 0, syscall(SYS_fstat, 0, (void *)8), 0);
	show("statx bad buffer", 1, syscall(SYS_statx, 1, "", AT_EMPTY_PATH, 0xfff, (void *)8), 0);
	straddle("fstat straddling buffer", 0, SYS_fstat);
	straddle("statx straddling buffer", 1, SYS_statx);
	if (file >= 0) {
		straddle("read straddling buffer", file, SYS_read);
		straddle("pread straddling buffer", file, SYS_pread64);
	}
	/* page 0 (the runtime's sled, readable in a virtine, not a program's) ends in zero bytes:
	 * an empty path there is still a bad pointer, as the runtime's own area is a bad buffer */
	show("statx path in page 0", 0,
	     syscall(SYS_statx, 0, (char *)4095, AT_EMPTY_PATH, 0xfff, buf), 0);
	show("newfstatat path in page 0", 0,
	     syscall(SYS_newfstatat, 0, (char *)4095, buf, AT_EMPTY_PATH), 0);
	/* a descriptor with bits above its 32: the host's answer (never fd 1's by the runtime) */
	show("fstat fd 1 + 2^32", 1, syscall(SYS_fstat, 0x100000001L, buf), 144);
	show("newfstatat fd 1 + 2^32", 1,
	     syscall(SYS_newfstatat, 0x100000001L, "", buf, AT_EMPTY_PATH), 144);
	show("statx fd 1 + 2^32", 1,
	     syscall(SYS_statx, 0x100000001L, "", AT_EMPTY_PATH, 0xfff, buf), 256);
	show("fstat buffer at 0x1e8000", 1, syscall(SYS_fstat, 1, (void *)0x1e8000), 0);
	/* a bundle's file over fd 0: its stat, not the request's */
	if (file >= 0 && dup2(file, 0) == 0)
		stats(0);
	/* a forked child's own descriptors, the request shared with its parent */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		stats(1);
		stats(4);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	straddle("read straddling buffer", 4, SYS_read); /* the metadata: over HTTP, headers */
	/* fd 4's size is the metadata's length (a request's headers over HTTP), whoever answers */
	struct stat st;
	uint64_t xsize = 0;
	long n = 0, k, frc = fstat(4, &st);
	long xrc = syscall(SYS_statx, 4, "", AT_EMPTY_PATH, 0xfff, buf);
	memcpy(&xsize, buf + 40, sizeof(xsize)); /* stx_size */
	while ((k = read(4, req, sizeof(req))) > 0)
		n += k;
	printf("fd 4's size, its bytes: fstat %s, statx %s\n",
	       frc == 0 && st.st_size == n ? "yes" : "no",
	       xrc == 0 && xsize == (uint64_t)n ? "yes" : "no");
	/* closed, the metadata is gone for the runtime too */
	close(4);
	stats(4);
	return 0;
}

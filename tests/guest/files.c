/* Every file call on a bundle (tests/integration/test_files.sh): files and a folder opened during
 * init stay open across the snapshot; after the request, each call's result is printed, the same
 * in a virtine as natively over a read-only copy of the tree (argv[1]: chroot there first).
 * "emfile" as the request: opens until the table is full instead. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* the head of Linux's struct statx (musl has none) */
struct kstatx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, pad;
	uint64_t ino, size, blocks;
	uint8_t rest[256 - 56];
};

/* Linux's struct linux_dirent64 */
struct d64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static void res(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: errno %d (%s)\n", what, errno, strerror(errno));
	else
		printf("%s: %ld\n", what, rc);
}

static void bytes(const char *what, const char *buf, long n)
{
	printf("%s: %ld [%.*s]\n", what, n, n > 0 ? (int)n : 0, buf);
}

static void show_stat(const char *what, int rc, const struct stat *s)
{
	if (rc < 0) {
		res(what, rc);
		return;
	}
	int dir = S_ISDIR(s->st_mode);
	printf("%s: type %o perm %o size %lld mtime %lld\n", what, (unsigned)(s->st_mode & S_IFMT),
	       (unsigned)(s->st_mode & 07777), dir ? -1LL : (long long)s->st_size,
	       (long long)s->st_mtime);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the folder's entries, sorted, read through getdents64 with a small buffer */
static void listing(const char *what, int fd)
{
	static char buf[80] __attribute__((aligned(8)));
	char *names[256];
	int n = 0;
	long r;
	while ((r = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < r;) {
			struct d64 *d = (struct d64 *)(void *)(buf + off);
			char *s = malloc(300);
			snprintf(s, 300, "%s/%d", d->name, d->type);
			if (n < 256)
				names[n++] = s;
			off += d->reclen;
		}
	if (r < 0)
		res(what, r);
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	printf("%s:", what);
	for (int i = 0; i < n; i++)
		printf(" %s", names[i]);
	printf("\n");
}

static void sum_map(const char *what, int fd, size_t len, int prot, int flags)
{
	unsigned char *p = mmap(NULL, len, prot, flags, fd, 0);
	if (p == MAP_FAILED) {
		res(what, -1);
		return;
	}
	unsigned long sum = 0;
	for (size_t i = 0; i < len; i++)
		sum = sum * 31 + p[i];
	if (prot & PROT_WRITE)
		p[0] = 'X'; /* private: the file stays as it is */
	printf("%s: sum %lu first %c\n", what, sum, p[0]);
	munmap(p, len);
}

static void emfile(void)
{
	int n = 0, fd;
	while ((fd = open("/data/a.txt", O_RDONLY)) >= 0)
		n++;
	printf("opened %d more, then errno %d (%s)\n", n, errno, strerror(errno));
}

int main(int argc, char **argv)
{
	if (argc > 1 && (chroot(argv[1]) < 0 || chdir("/") < 0)) {
		perror("chroot");
		return 1;
	}
	/* init: kept open across the snapshot */
	int fa = open("/data/a.txt", O_RDONLY), fdir = open("/data", O_RDONLY | O_DIRECTORY);
	char buf[256];
	long n = read(fa, buf, 3);
	int cd = chdir("/sub");
	char req[64] = {0};
	long rn = read(0, req, sizeof(req) - 1);
	if (rn > 0 && !strncmp(req, "emfile", 6)) {
		emfile();
		return 0;
	}
	printf("init: fa %d fdir %d read %ld chdir %d\n", fa >= 0, fdir >= 0, n, cd);
	n = read(fa, buf, sizeof(buf));
	bytes("read rest", buf, n);
	bytes("read at end", buf, read(fa, buf, sizeof(buf)));
	bytes("pread64 4@1", buf, pread(fa, buf, 4, 1));
	res("lseek end", lseek(fa, 0, SEEK_END));
	res("lseek set 2", lseek(fa, 2, SEEK_SET));
	char v1[3], v2[4];
	struct iovec iov[2] = {{v1, sizeof(v1)}, {v2, sizeof(v2)}};
	n = readv(fa, iov, 2);
	printf("readv: %ld [%.3s|%.4s]\n", n, v1, v2);
	struct stat s;
	show_stat("fstat a", fstat(fa, &s), &s);
	show_stat("stat a", stat("/data/a.txt", &s), &s);
	show_stat("stat rel ../data/a.txt", fstatat(AT_FDCWD, "../data/a.txt", &s, 0), &s);
	/* glibc's fstat: the descriptor of a file itself, with an empty path */
	show_stat("fstatat a empty path", fstatat(fa, "", &s, AT_EMPTY_PATH), &s);
	show_stat("fstatat a empty, no flag", fstatat(fa, "", &s, 0), &s);
	show_stat("fstatat a rel from a file", fstatat(fa, "x", &s, 0), &s);
	show_stat("lstat link_a", lstat("/data/link_a", &s), &s);
	show_stat("stat link_a", stat("/data/link_a", &s), &s);
	show_stat("stat dir", stat("/data", &s), &s);
	show_stat("stat missing", stat("/data/nope", &s), &s);
	struct kstatx x;
	long xr = syscall(SYS_statx, AT_FDCWD, "/data/big.bin", 0, 0x7ffU, &x);
	if (xr < 0)
		res("statx big", xr);
	else
		printf("statx big: size %llu mode %o\n", (unsigned long long)x.size,
		       (unsigned)x.mode);
	listing("getdents /data", fdir);
	int froot = open("/", O_RDONLY | O_DIRECTORY);
	listing("getdents /", froot);
	res("lseek dir 0", lseek(fdir, 0, SEEK_SET));
	listing("getdents /data again", fdir);
	n = readlink("/data/link_a", buf, sizeof(buf));
	bytes("readlink link_a", buf, n);
	n = readlinkat(fdir, "up", buf, sizeof(buf));
	bytes("readlinkat up", buf, n);
	res("readlink of a file", readlink("/data/a.txt", buf, sizeof(buf)));
	res("access R", access("/data/a.txt", R_OK));
	res("access W", access("/data/a.txt", W_OK));
	res("access X script", access("/data/run.sh", X_OK));
	res("access X plain", access("/data/a.txt", X_OK));
	res("access missing", access("/nope", F_OK));
	res("faccessat rel", faccessat(fdir, "b/c.txt", R_OK, 0));
	char cwd[256];
	printf("getcwd: %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : strerror(errno));
	n = open("b.txt", O_RDONLY);
	res("open rel b.txt", n < 0 ? n : 0);
	bytes("read b.txt", buf, read((int)n, buf, sizeof(buf)));
	close((int)n);
	res("chdir ..", chdir(".."));
	printf("getcwd: %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : strerror(errno));
	res("chdir file", chdir("/data/a.txt"));
	res("chdir missing", chdir("/missing"));
	res("fchdir data", fchdir(fdir));
	printf("getcwd: %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : strerror(errno));
	res("getcwd small", getcwd(cwd, 3) ? 0 : -1);
	chdir("/");
	/* links */
	int fu = open("/data/up/b.txt", O_RDONLY);
	bytes("through up/", buf, read(fu, buf, sizeof(buf)));
	close(fu);
	int fi = open("/data/abs_in", O_RDONLY);
	bytes("through abs_in", buf, read(fi, buf, sizeof(buf)));
	close(fi);
	res("open loop", open("/data/loop", O_RDONLY));
	res("O_NOFOLLOW link", open("/data/link_a", O_RDONLY | O_NOFOLLOW));
	/* openat */
	int fc = openat(fdir, "b/c.txt", O_RDONLY);
	bytes("openat b/c.txt", buf, read(fc, buf, sizeof(buf)));
	close(fc);
	res("openat on a file fd", openat(fa, "x", O_RDONLY));
	res("openat bad fd", openat(57, "x", O_RDONLY));
	FILE *f = fopen("/data/b/c.txt", "r");
	printf("fopen+fgets: %s", f && fgets(buf, sizeof(buf), f) ? buf : "failed\n");
	if (f)
		fclose(f);
	/* memory maps */
	int fb = open("/data/big.bin", O_RDONLY);
	sum_map("mmap private ro", fb, 10000, PROT_READ, MAP_PRIVATE);
	sum_map("mmap private rw", fb, 10000, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	sum_map("mmap private ro again", fb, 10000, PROT_READ, MAP_PRIVATE);
	sum_map("mmap shared ro", fb, 10000, PROT_READ, MAP_SHARED);
	sum_map("mmap shared rw", fb, 4096, PROT_READ | PROT_WRITE, MAP_SHARED);
	sum_map("mmap of a folder", fdir, 4096, PROT_READ, MAP_PRIVATE);
	res("mmap unaligned offset", (long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fb, 100));
	/* writing is refused */
	res("open O_WRONLY", open("/data/a.txt", O_WRONLY));
	res("open O_RDWR", open("/data/a.txt", O_RDWR));
	res("open O_TRUNC", open("/data/a.txt", O_RDONLY | O_TRUNC));
	res("open O_CREAT new", open("/data/new.txt", O_CREAT | O_WRONLY, 0644));
	res("open O_CREAT no folder", open("/nodir/new.txt", O_CREAT | O_WRONLY, 0644));
	res("open O_CREAT|O_EXCL", open("/data/a.txt", O_CREAT | O_EXCL | O_RDONLY, 0644));
	res("open folder O_WRONLY", open("/data", O_WRONLY));
	res("open O_DIRECTORY file", open("/data/a.txt", O_RDONLY | O_DIRECTORY));
	res("open below a file", open("/data/a.txt/x", O_RDONLY));
	res("creat", creat("/data/c2.txt", 0644));
	res("mkdir", mkdir("/data/newdir", 0755));
	res("rmdir", rmdir("/sub"));
	res("unlink", unlink("/data/a.txt"));
	res("rename", rename("/data/a.txt", "/data/z.txt"));
	res("symlink", symlink("a.txt", "/data/s"));
	res("link", link("/data/a.txt", "/data/h"));
	res("truncate", truncate("/data/a.txt", 0));
	res("write to a file", write(fa, "x", 1));
	/* a fresh one: ext4 says EINVAL at the end of a listing (the position is its EOF mark) */
	int fs = open("/sub", O_RDONLY | O_DIRECTORY);
	res("read of a folder", read(fs, buf, 1));
	res("open missing", open("/data/nope", O_RDONLY));
	/* escapes */
	res("open /../../etc/passwd", open("/../../etc/passwd", O_RDONLY));
	res("open ../../../etc/passwd", open("../../../etc/passwd", O_RDONLY));
	res("open /etc/passwd", open("/etc/passwd", O_RDONLY));
	/* (the made /proc files, /proc/self/maps among them, are the virtine's: test_corpus.sh) */
	res("open /proc/1/environ", open("/proc/1/environ", O_RDONLY));
	res("open esc_abs link", open("/data/esc_abs", O_RDONLY));
	res("open esc_rel link", open("/data/esc_rel", O_RDONLY));
	res("stat esc_rel link", stat("/data/esc_rel", &s));
	res("readlink esc_rel", readlink("/data/esc_rel", buf, 0) < 0 ? -1 : 0);
	res("read fd 1000", read(1000, buf, 1));
	res("read fd 63", read(63, buf, 1));
	res("fstat fd 64", fstat(64, &s));
	res("close fd -1", close(-1));
	res("lseek fd 99", lseek(99, 0, SEEK_SET));
	res("close fa", close(fa));
	res("close fa twice", close(fa));
	res("read closed", read(fa, buf, 1));
	return 0;
}

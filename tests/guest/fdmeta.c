/* Descriptors, pipes and /proc as Linux has them (tests/integration/test_fdmeta.sh): each check
 * prints "NAME: ok" or "NAME: FAIL" with what it saw, the same in a virtine as natively. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int failed;

static void check(const char *name, int ok, long got)
{
	if (ok)
		printf("%s: ok\n", name);
	else
		printf("%s: FAIL (got %ld, errno %d)\n", name, got, errno);
	failed |= !ok;
}

/* rc is -1 with errno e */
static void fails(const char *name, long rc, int e)
{
	check(name, rc == -1 && errno == e, rc);
}

static void cmdline(int argc, char **argv)
{
	char want[4096], got[4096];
	size_t n = 0;
	for (int i = 0; i < argc; i++) {
		size_t k = strlen(argv[i]) + 1;
		memcpy(want + n, argv[i], k);
		n += k;
	}
	int fd = open("/proc/self/cmdline", O_RDONLY);
	check("cmdline open", fd >= 0, fd);
	ssize_t r = read(fd, got, sizeof(got));
	check("cmdline: argv, NUL-separated", r == (ssize_t)n && !memcmp(got, want, n), r);
	/* at an offset, by preadv: the second byte on */
	struct iovec v = {got, 3};
	r = preadv(fd, &v, 1, 1);
	check("cmdline preadv at 1", r == 3 && !memcmp(got, want + 1, 3), r);
	close(fd);
	fd = open("/proc/sys/fs/pipe-max-size", O_RDONLY);
	r = fd < 0 ? -1 : read(fd, got, sizeof(got));
	check("pipe-max-size", r == 8 && !memcmp(got, "1048576\n", 8), r);
	close(fd);
}

static void pipes(void)
{
	int p[2];
	char buf[16384];
	memset(buf, 'x', sizeof(buf));
	if (pipe2(p, O_NONBLOCK))
		return check("pipe2", 0, -1);
	check("F_GETPIPE_SZ", fcntl(p[0], F_GETPIPE_SZ) == 65536, fcntl(p[0], F_GETPIPE_SZ));
	check("F_SETPIPE_SZ 0: a page", fcntl(p[0], F_SETPIPE_SZ, 0) == 4096, 0);
	check("F_GETPIPE_SZ of the other end", fcntl(p[1], F_GETPIPE_SZ) == 4096,
	      fcntl(p[1], F_GETPIPE_SZ));
	check("F_SETPIPE_SZ 5000: rounded up", fcntl(p[1], F_SETPIPE_SZ, 5000) == 8192, 0);
	fails("F_SETPIPE_SZ huge", fcntl(p[1], F_SETPIPE_SZ, 0x7fffffffffffffffL), EINVAL);
	long w = write(p[1], buf, 3);
	int n = -1;
	check("FIONREAD", ioctl(p[0], FIONREAD, &n) == 0 && n == 3, n);
	check("FIONREAD on the write end", ioctl(p[1], FIONREAD, &n) == 0 && n == 3, n);
	long r = read(p[0], buf, 3);
	/* non-blocking: what fits, then EAGAIN */
	w = write(p[1], buf, sizeof(buf));
	check("write past the size: what fits", w == 8192, w);
	fails("write when full", write(p[1], buf, 1), EAGAIN);
	fails("F_SETPIPE_SZ below what it holds", fcntl(p[0], F_SETPIPE_SZ, 4096), EBUSY);
	r = read(p[0], buf, 4096);
	check("read after", r == 4096, r);
	check("F_SETPIPE_SZ up with bytes in", fcntl(p[0], F_SETPIPE_SZ, 65536) == 65536, 0);
	r = read(p[0], buf, sizeof(buf));
	check("the bytes kept across the change", r == 4096, r);
	struct iovec v = {buf, 1};
	fails("pread64 on a pipe", pread(p[0], buf, 1, 0), ESPIPE);
	fails("pwrite64 on a pipe", pwrite(p[1], buf, 1, 0), ESPIPE);
	fails("preadv on a pipe", preadv(p[0], &v, 1, 0), ESPIPE);
	fails("pwritev on a pipe", pwritev(p[1], &v, 1, 0), ESPIPE);
	fails("preadv on a pipe's write end", preadv(p[1], &v, 1, 0), ESPIPE);
	fails("pwritev on a pipe's read end", pwritev(p[0], &v, 1, 0), ESPIPE);
	w = syscall(SYS_pwritev2, p[1], &v, 1, -1L, 0L, 0);
	check("pwritev2 at -1: a write", w == 1, w);
	close(p[0]);
	close(p[1]);
}

/* Linux's struct linux_dirent (the old getdents) */
struct dent {
	unsigned long ino, off;
	unsigned short reclen;
	char name[];
};

static void getdents_old(void)
{
	char a[32768], b[32768];
	int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	long n64 = syscall(SYS_getdents64, fd, a, sizeof(a));
	lseek(fd, 0, SEEK_SET);
	long n = syscall(SYS_getdents, fd, b, sizeof(b));
	check("getdents", n > 0, n);
	/* the same names as getdents64's, each with its type in its record's last byte */
	int same = n > 0 && n64 > 0, dirs = 0;
	long i = 0, j = 0;
	for (; same && i < n && j < n64; i += ((struct dent *)(b + i))->reclen) {
		struct dent *d = (struct dent *)(b + i);
		struct dirent64 *e = (struct dirent64 *)(a + j);
		same = !strcmp(d->name, e->d_name) && b[i + d->reclen - 1] == e->d_type;
		dirs += !strcmp(d->name, ".") && b[i + d->reclen - 1] == DT_DIR;
		j += e->d_reclen;
	}
	check("getdents: getdents64's names and types", same && i == n && j == n64 && dirs == 1, i);
	lseek(fd, 0, SEEK_SET);
	fails("getdents with a count past INT_MAX", syscall(SYS_getdents, fd, b, 0x80000000UL),
	      EINVAL);
	close(fd);
}

/* a descriptor that only names a file: no reading, writing or listing through it */
static void opath(void)
{
	char path[64], buf[8];
	snprintf(path, sizeof(path), "/tmp/fdmeta-%d", (int)getpid());
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	fd = open(path, O_PATH | O_WRONLY | O_TRUNC);
	check("O_PATH open", fd >= 0, fd);
	check("O_PATH: F_GETFL says so", (fcntl(fd, F_GETFL) & O_PATH) != 0, fcntl(fd, F_GETFL));
	fails("O_PATH read", read(fd, buf, 1), EBADF);
	fails("O_PATH write", write(fd, buf, 1), EBADF);
	fails("O_PATH pread", pread(fd, buf, 1, 0), EBADF);
	fails("O_PATH lseek", lseek(fd, 0, SEEK_SET), EBADF);
	struct stat s;
	check("O_PATH fstat", fstat(fd, &s) == 0 && S_ISREG(s.st_mode), 0);
	close(fd);
	unlink(path);
	/* O_WRONLY | O_RDWR: Linux's access mode 3, open for neither */
	fd = open(path, O_CREAT | O_WRONLY | O_RDWR, 0600);
	check("access mode 3 open", fd >= 0, fd);
	fails("access mode 3 read", read(fd, buf, 1), EBADF);
	fails("access mode 3 write", write(fd, buf, 1), EBADF);
	close(fd);
	unlink(path);
	fd = open("/tmp", O_PATH | O_DIRECTORY);
	fails("O_PATH getdents64", syscall(SYS_getdents64, fd, path, sizeof(path)), EBADF);
	close(fd);
}

/* each descriptor's file system: pipefs, proc; /tmp's and the rest answered */
static void statfs_of(void)
{
	struct statfs s;
	int p[2];
	if (pipe(p))
		return check("pipe", 0, -1);
	check("fstatfs of a pipe: pipefs", !fstatfs(p[0], &s) && s.f_type == 0x50495045, 0);
	check("fstatfs of a pipe: page size, names", s.f_bsize == 4096 && s.f_namelen == 255, 0);
	close(p[0]);
	close(p[1]);
	check("statfs of /proc/self/cmdline: proc",
	      !statfs("/proc/self/cmdline", &s) && s.f_type == 0x9fa0, s.f_type);
	check("statfs of /tmp", !statfs("/tmp", &s) && s.f_bsize > 0, 0);
	fails("statfs of nothing", statfs("/tmp/fdmeta-none/x", &s), ENOENT);
}

/* name is among the entries of the folder at path */
static int listed(const char *path, const char *name)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_DIRECTORY), found = 0;
	long n;
	while (fd >= 0 && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long i = 0; i < n; i += ((struct dirent64 *)(buf + i))->d_reclen)
			found |= !strcmp(((struct dirent64 *)(buf + i))->d_name, name);
	close(fd);
	return found;
}

/* /proc/self/fd/N: a link saying what N is, opened again through it; its fdinfo; the folders */
static void procfd(void)
{
	char path[64], a[64], b[64], buf[8];
	int p[2];
	struct stat s;
	if (pipe(p))
		return check("pipe", 0, -1);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	long n = readlink(path, a, sizeof(a) - 1);
	a[n > 0 ? n : 0] = 0;
	check("readlink fd/N of a pipe: pipe:[ino]", n > 7 && !strncmp(a, "pipe:[", 6), n);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	n = readlink(path, b, sizeof(b) - 1);
	b[n > 0 ? n : 0] = 0;
	check("both ends one inode", n > 0 && !strcmp(a, b), n);
	check("lstat fd/N: a link", !lstat(path, &s) && S_ISLNK(s.st_mode), 0);
	check("stat fd/N: the pipe", !stat(path, &s) && S_ISFIFO(s.st_mode), 0);
	check("fd/N listed", (snprintf(b, sizeof(b), "%d", p[1]), listed("/proc/self/fd", b)), 0);
	check("fdinfo/N listed", listed("/proc/self/fdinfo", b), 0);
	n = write(p[1], "abc", 3);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	int r = open(path, O_RDONLY);
	check("open fd/N of a read end", r >= 0, r);
	n = read(r, buf, 3);
	check("read through it: the pipe's bytes", n == 3 && !memcmp(buf, "abc", 3), n);
	close(r);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", p[1]);
	r = open(path, O_RDONLY);
	n = r < 0 ? -1 : read(r, a, sizeof(a) - 1);
	a[n > 0 ? n : 0] = 0;
	check("fdinfo/N: pos and flags", n > 0 && !strncmp(a, "pos:\t0\nflags:\t01\n", 17), n);
	close(r);
	close(p[0]);
	close(p[1]);
	snprintf(path, sizeof(path), "/tmp/fdmeta-%d", (int)getpid());
	r = open(path, O_CREAT | O_RDWR, 0600);
	snprintf(a, sizeof(a), "/proc/self/fd/%d", r);
	n = readlink(a, b, sizeof(b) - 1);
	b[n > 0 ? n : 0] = 0;
	check("readlink fd/N of a /tmp file: its path", n > 0 && !strcmp(b, path), n);
	close(r);
	unlink(path);
	snprintf(b, sizeof(b), "%d", (int)getpid());
	n = readlink("/proc/self", a, sizeof(a) - 1);
	a[n > 0 ? n : 0] = 0;
	check("readlink /proc/self: the pid", n > 0 && !strcmp(a, b), n);
	check("stat /proc/self: a folder", !stat("/proc/self", &s) && S_ISDIR(s.st_mode), 0);
	check("lstat /proc/self: a link", !lstat("/proc/self", &s) && S_ISLNK(s.st_mode), 0);
	r = open("/proc/self", O_RDONLY | O_DIRECTORY);
	check("lseek SEEK_END on /proc/self", lseek(r, 0, SEEK_END) >= 0, 0);
	check("getdents after it", syscall(SYS_getdents64, r, a, sizeof(a)) >= 0, 0);
	close(r);
	check("/proc/self/cmdline listed", listed("/proc/self", "cmdline"), 0);
	snprintf(path, sizeof(path), "/proc/%d/", (int)getpid());
	check("/proc/PID/ is /proc/self/", listed(path, "cmdline"), 0);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)getpid());
	r = open(path, O_RDONLY);
	check("/proc/PID/cmdline opens", r >= 0, r);
	close(r);
}

/* statx's own checks, and the mount a file is on */
static void statx_of(void)
{
	uint64_t x[32], y[32];
	fails("statx with a reserved mask bit",
	      syscall(SYS_statx, AT_FDCWD, "/tmp", 0, 0x80000000U, x), EINVAL);
	fails("statx with unknown flags", syscall(SYS_statx, AT_FDCWD, "/tmp", 12345, 0, x),
	      EINVAL);
	long rc = syscall(SYS_statx, AT_FDCWD, "/tmp", 0, 0x1000U, x);
	check("statx: the mount id", !rc && (x[0] & 0x1000) && x[0x90 / 8], rc);
	rc = syscall(SYS_statx, AT_FDCWD, "/tmp/.", 0, 0x1000U, y);
	check("statx: the same mount in the same place", !rc && y[0x90 / 8] == x[0x90 / 8], rc);
}

/* the folders there are without files: /, /dev, /proc; the paths that are no file */
static void roots(void)
{
	check("/ lists proc", listed("/", "proc"), 0);
	check("/ lists tmp", listed("/", "tmp"), 0);
	check("/dev lists null", listed("/dev", "null"), 0);
	check("/proc lists self", listed("/proc", "self"), 0);
	check("/proc/self lists fd", listed("/proc/self", "fd"), 0);
	fails("open of \"\"", open("", O_RDONLY), ENOENT);
	fails("open of an unmapped path", (int)syscall(SYS_open, 1UL << 44, O_RDONLY), EFAULT);
	/* page 0 is the in-guest runtime's syscall sled in guest mode: no path, no bytes there */
	fails("open of NULL", (int)syscall(SYS_open, NULL, O_RDONLY), EFAULT);
	int p[2];
	if (pipe(p))
		return check("pipe", 0, -1);
	fails("write from NULL", (int)syscall(SYS_write, p[1], NULL, 1), EFAULT);
	close(p[0]);
	close(p[1]);
	struct stat s;
	fails("stat of \"\"", stat("", &s), ENOENT);
}

/* limits lowered and raised back: RLIMIT_FSIZE said back, RLIMIT_NOFILE kept to */
static void limits(void)
{
	struct rlimit old, lim, got;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = (struct rlimit){1024, old.rlim_max};
	check("setrlimit FSIZE lower", !setrlimit(RLIMIT_FSIZE, &lim), 0);
	check("getrlimit FSIZE: as set", !getrlimit(RLIMIT_FSIZE, &got) && got.rlim_cur == 1024, 0);
	check("setrlimit FSIZE back", !setrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){2048, 1024};
	fails("setrlimit soft above hard", setrlimit(RLIMIT_FSIZE, &lim), EINVAL);
	getrlimit(RLIMIT_NOFILE, &old);
	lim = (struct rlimit){16, old.rlim_max};
	check("setrlimit NOFILE 16", !setrlimit(RLIMIT_NOFILE, &lim), 0);
	int fd = 0, fds[64], n = 0;
	while (fd >= 0 && n < 64)
		if ((fd = dup(0)) >= 0)
			fds[n++] = fd;
	fails("dup past NOFILE", fd, EMFILE);
	check("the last one under it", n && fds[n - 1] == 15, n ? fds[n - 1] : -1);
	while (n > 0)
		close(fds[--n]);
	check("setrlimit NOFILE back", !setrlimit(RLIMIT_NOFILE, &old), 0);
	fd = dup(0);
	check("dup after", fd >= 0, fd);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) { /* the checks again in the program exec'd */
		char *args[] = {"fdmeta", "after", "an exec", NULL}, *env[] = {NULL};
		execve("/proc/self/exe", args, env);
		check("execve", 0, -1);
		return 1;
	}
	cmdline(argc, argv);
	pipes();
	getdents_old();
	opath();
	statfs_of();
	procfd();
	statx_of();
	roots();
	limits();
	return failed;
}

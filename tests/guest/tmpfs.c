/* tmpfs: the scratch /tmp as a program uses it, by mode (argv[1]):
 *   ops    files and folders made, written, read (O_TRUNC too), listed, renamed and removed under
 *          /tmp/ember-tmpfs, each result printed (compared with a native run)
 *   leave  prints whether /tmp/left is there, then writes it, a secret (the next invocation
 *          must not see it)
 *   fill   writes 1 MiB pieces to /tmp/big until the file system is full: prints how far
 *   edges  a folder hard-linked (EPERM, as Linux), /tmp itself removed (EBUSY)
 *   cwd    a cwd in /tmp: relative paths from it, chdir and fchdir, getcwd, out of /tmp by "..",
 *          the cwd removed (compared with a native run; /etc must be in the function's files)
 *   vec    pieces at an offset (preadv, pwritev; one that faults part way),
 * posix_fadvise, fallocate, copy_file_range, mknod of a regular file, and the scheduler's answers
 * (compared with a native run) attr   what an unprivileged user may do with its files and ids: the
 * umask, both times set, chown to its own ids only, statfs of /tmp and of the files (/etc), its ids
 * and groups, the clock (not its to set) and its thread's CPU clock, the modes of its files and
 *          folders obeyed (no root to pass them by)
 *   hostile what once harmed the host: a 4095-byte path of 2,048 components from a /tmp
 *          descriptor (ENOENT at its first name, as Linux), a rename over a folder open on a
 * descriptor then listed, files grown to the bound and truncated again and again (what a file held
 * is given back) dirfd  /tmp open on a descriptor since init (the snapshot point): usable at every
 *          invocation
 *   init   writes /tmp/init before the request (the snapshot point), then at each invocation
 *          appends the request to it and prints it: each sees only what init wrote */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define D "/tmp/ember-tmpfs"

static const struct {
	int e;
	const char *name;
} names[] = {{EEXIST, "EEXIST"}, {ENOENT, "ENOENT"}, {ENOTDIR, "ENOTDIR"},
	     {EISDIR, "EISDIR"}, {EBADF, "EBADF"},   {EINVAL, "EINVAL"},
	     {EBUSY, "EBUSY"},	 {EPERM, "EPERM"},   {ENOTEMPTY, "ENOTEMPTY"},
	     {ENOSPC, "ENOSPC"}, {EACCES, "EACCES"}, {EROFS, "EROFS"},
	     {EXDEV, "EXDEV"},	 {ESRCH, "ESRCH"},   {ENAMETOOLONG, "ENAMETOOLONG"},
	     {ERANGE, "ERANGE"}, {EFAULT, "EFAULT"}, {EFBIG, "EFBIG"}};

static const char *err_name(int e)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	return "another errno";
}

static void res(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", what, err_name(errno));
	else
		printf("%s: %ld\n", what, rc);
}

static void show_cwd(void)
{
	char buf[256];
	if (getcwd(buf, sizeof(buf)))
		printf("getcwd: %s\n", buf);
	else
		printf("getcwd: %s\n", err_name(errno));
}

static int cwd(void)
{
	char small[8];
	struct stat s;
	unlink(D "/a/f"), rmdir(D "/a"), rmdir(D);
	res("mkdir", mkdir(D, 0700) || mkdir(D "/a", 0700));
	res("chdir " D "/a", chdir(D "/a"));
	show_cwd();
	int fd = open("f", O_CREAT | O_WRONLY, 0600);
	res("open f", fd < 0 ? -1 : 0);
	res("write f", write(fd, "abc", 3));
	close(fd);
	res("stat ../a/f", stat("../a/f", &s));
	printf("size: %ld\n", (long)s.st_size);
	res("chdir ..", chdir(".."));
	show_cwd();
	res("open a", (fd = open("a", O_RDONLY | O_DIRECTORY)) < 0 ? -1 : 0);
	res("fchdir a", fchdir(fd));
	close(fd);
	show_cwd();
	res("stat ./f", stat("./f", &s));
	res("access ../../../etc", access("../../../etc", F_OK));
	res("open ../../../etc", (fd = open("../../../etc", O_RDONLY | O_DIRECTORY)) < 0 ? -1 : 0);
	close(fd);
	res("getcwd in 8 bytes", getcwd(small, sizeof(small)) ? 0 : -1);
	res("chdir f", chdir("f"));
	res("chdir none", chdir("none"));
	res("unlink f", unlink("f"));
	res("rmdir the cwd", rmdir(D "/a"));
	show_cwd();
	res("open g in the removed cwd", open("g", O_CREAT | O_WRONLY, 0600));
	res("chdir /tmp", chdir("/tmp"));
	show_cwd();
	res("rmdir " D, rmdir(D));
	return 0;
}

static int vec(void)
{
	char a[3] = "", b[3] = "";
	struct iovec out[2] = {{"ab", 2}, {"cd", 2}}, in[2] = {{a, 3}, {b, 3}};
	struct stat s;
	struct timespec rr;
	cpu_set_t set;
	unlink(D "/v"), unlink(D "/n"), rmdir(D);
	mkdir(D, 0700);
	int fd = open(D "/v", O_CREAT | O_RDWR, 0600);
	res("pwritev at 2", pwritev(fd, out, 2, 2));
	res("preadv at 1", preadv(fd, in, 2, 1));
	printf("read: %d %d %d | %.3s\n", a[0], a[1], a[2], b);
	res("the position still", lseek(fd, 0, SEEK_CUR));
	res("preadv at -1", preadv(fd, in, 2, -1));
	res("posix_fadvise", -posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED));
	res("fallocate to 100", fallocate(fd, 0, 50, 50));
	fstat(fd, &s);
	printf("size: %ld\n", (long)s.st_size);
	res("fallocate, keep size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 200));
	fstat(fd, &s);
	printf("size: %ld\n", (long)s.st_size);
	int w = open(D "/w", O_CREAT | O_RDWR | O_TRUNC, 0600);
	off_t from = 2, to = 1;
	char got[8] = "";
	res("copy_file_range 4 at 2 to 1", copy_file_range(fd, &from, w, &to, 4, 0));
	printf("offsets now %ld %ld\n", (long)from, (long)to);
	lseek(fd, 3, SEEK_SET);
	res("copy_file_range from the positions", copy_file_range(fd, NULL, w, NULL, 2, 0));
	res("the positions", lseek(fd, 0, SEEK_CUR) * 10 + lseek(w, 0, SEEK_CUR));
	res("pread", pread(w, got, sizeof(got), 0));
	printf("copied: %d %d %d %d %d\n", got[0], got[1], got[2], got[3], got[4]);
	res("copy_file_range, flags 1", copy_file_range(fd, NULL, w, NULL, 2, 1));
	/* a piece whose second page faults: the bytes before it are written (as Linux) */
	char *pg = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(pg + 4096, 4096, PROT_NONE);
	struct iovec part[2] = {{pg, 4096}, {pg, 8192}};
	res("pwritev, the second piece's second page faults", pwritev(w, part, 2, 0));
	res("pwrite of a page that faults", pwrite(w, pg + 4096, 10, 0));
	munmap(pg, 8192);
	close(w);
	close(fd);
	unlink(D "/w");
	res("mknod a regular file", mknod(D "/n", S_IFREG | 0600, 0));
	res("mknod it again", mknod(D "/n", S_IFREG | 0600, 0));
	res("stat", stat(D "/n", &s));
	printf("regular: %d\n", S_ISREG(s.st_mode));
	res("sched_get_priority_max(SCHED_RR)", sched_get_priority_max(SCHED_RR));
	res("sched_get_priority_min(SCHED_OTHER)", sched_get_priority_min(SCHED_OTHER));
	res("sched_getscheduler(0)", syscall(SYS_sched_getscheduler, 0)); /* musl: ENOSYS */
	res("sched_rr_get_interval(0)", sched_rr_get_interval(0, &rr));
	res("sched_getaffinity(-1)", sched_getaffinity(-1, sizeof(set), &set));
	unlink(D "/v"), unlink(D "/n"), rmdir(D);
	return 0;
}

static int attr(void)
{
	struct stat s;
	struct statfs f;
	unsigned ids[3];
	gid_t groups[4];
	printf("umask: %03o\n", umask(077));
	res("creat", close(open("/tmp/f", O_CREAT | O_WRONLY, 0666)));
	res("stat", stat("/tmp/f", &s));
	printf("mode: %03o, umask then: %03o\n", s.st_mode & 0777, umask(022));
	const struct timespec ts[2] = {{1, 500000000}, {4, 250000000}},
			      omit[2] = {{0, UTIME_OMIT}, {9, 0}};
	res("utimensat", utimensat(AT_FDCWD, "/tmp/f", ts, 0));
	res("stat", stat("/tmp/f", &s));
	printf("atime %ld.%09ld, mtime %ld.%09ld\n", (long)s.st_atim.tv_sec, s.st_atim.tv_nsec,
	       (long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
	res("utimensat, atime omitted", utimensat(AT_FDCWD, "/tmp/f", omit, 0));
	res("stat", stat("/tmp/f", &s));
	printf("atime %ld, mtime %ld\n", (long)s.st_atim.tv_sec, (long)s.st_mtim.tv_sec);
	res("chown to its own", chown("/tmp/f", getuid(), getgid()));
	res("chown to -1", chown("/tmp/f", -1, -1));
	res("chown to root", chown("/tmp/f", 0, 0));
	res("chown /etc", chown("/etc", -1, -1));
	res("fchown 99", fchown(99, -1, -1));
	res("statfs /tmp", statfs("/tmp", &f));
	printf("tmpfs: %d, bsize %ld, read-only %d\n", f.f_type == 0x01021994, (long)f.f_bsize,
	       (f.f_flags & ST_RDONLY) != 0);
	res("statfs /etc", statfs("/etc", &f));
	printf("read-only %d\n", (f.f_flags & ST_RDONLY) != 0);
	res("statfs /none", statfs("/none", &f));
	res("fstatfs 99", fstatfs(99, &f));
	res("getresuid", getresuid(&ids[0], &ids[1], &ids[2]));
	printf("ids: %u %u %u\n", ids[0], ids[1], ids[2]);
	int n = getgroups(4, groups);
	printf("groups: %d, the first its own: %d\n", n, n > 0 && groups[0] == getgid());
	res("setreuid -1 -1", setreuid(-1, -1));
	res("setresuid to its own", setresuid(getuid(), getuid(), -1));
	res("setuid 0", setuid(0));
	struct timespec now;
	clockid_t cpu;
	clock_gettime(CLOCK_REALTIME, &now);
	res("clock_settime", clock_settime(CLOCK_REALTIME, &now));
	res("clock_settime of the monotonic clock", clock_settime(CLOCK_MONOTONIC, &now));
	pthread_getcpuclockid(pthread_self(), &cpu);
	res("its thread's CPU clock read", clock_gettime(cpu, &now));
	res("chmod 0400", chmod("/tmp/f", 0400));
	res("open for writing", open("/tmp/f", O_WRONLY));
	res("open for reading", close(open("/tmp/f", O_RDONLY)));
	res("mkdir d", mkdir("/tmp/d", 0700));
	res("chmod d 0500", chmod("/tmp/d", 0500));
	res("create in d", open("/tmp/d/g", O_CREAT | O_WRONLY, 0600));
	res("mkdir in d", mkdir("/tmp/d/e", 0700));
	res("rename into d", rename("/tmp/f", "/tmp/d/f"));
	res("chmod d 0700", chmod("/tmp/d", 0700));
	res("rename into d", rename("/tmp/f", "/tmp/d/f"));
	res("chmod d 0500", chmod("/tmp/d", 0500));
	res("unlink in d", unlink("/tmp/d/f"));
	res("chmod d 0700", chmod("/tmp/d", 0700));
	res("unlink in d", unlink("/tmp/d/f"));
	res("rmdir d", rmdir("/tmp/d"));
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the folder's names, sorted (the order of a listing is the file system's) */
static void list(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		printf("list %s: %s\n", dir, err_name(errno));
		return;
	}
	char *names[64];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 64)
		names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	printf("list %s:", dir);
	for (int i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	printf("\n");
}

static int ops(void)
{
	char buf[64] = "";
	struct stat s;
	res("mkdir", mkdir(D, 0755));
	res("mkdir again", mkdir(D, 0755));
	int fd = open(D "/a", O_CREAT | O_RDWR | O_EXCL, 0644);
	res("create a", fd < 0 ? -1 : 0);
	res("create a again, O_EXCL", open(D "/a", O_CREAT | O_RDWR | O_EXCL, 0644));
	res("write", write(fd, "hello, tmp", 10));
	res("lseek end", lseek(fd, 0, SEEK_END));
	res("pwrite at 20 (a hole)", pwrite(fd, "end", 3, 20));
	res("fstat size", fstat(fd, &s) ? -1 : (long)s.st_size);
	res("regular, 0644", fstat(fd, &s) ? -1 : S_ISREG(s.st_mode) && (s.st_mode & 0777) == 0644);
	res("pread 0", pread(fd, buf, 10, 0));
	printf("read: %.10s\n", buf);
	memset(buf, 'x', sizeof(buf));
	res("pread hole", pread(fd, buf, 4, 10));
	res("hole is zeros", buf[0] == 0 && buf[3] == 0);
	char *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	res("mmap", m == MAP_FAILED ? -1 : 0);
	if (m != MAP_FAILED)
		printf("mapped: %.5s %.3s\n", m, m + 20), munmap(m, 4096);
	res("ftruncate 5", ftruncate(fd, 5));
	res("stat size", stat(D "/a", &s) ? -1 : (long)s.st_size);
	res("close", close(fd));
	fd = open(D "/a", O_WRONLY | O_APPEND);
	res("append", write(fd, "!", 1));
	close(fd);
	fd = open(D "/a", O_RDONLY);
	memset(buf, 0, sizeof(buf));
	res("read back", read(fd, buf, sizeof(buf)));
	printf("content: %s\n", buf);
	res("write to a read-only descriptor", write(fd, "x", 1));
	close(fd);
	res("O_TRUNC", (fd = open(D "/a", O_WRONLY | O_TRUNC)) < 0 ? -1 : 0);
	close(fd);
	res("truncated", stat(D "/a", &s) ? -1 : (long)s.st_size);
	fd = open(D "/a", O_WRONLY);
	res("refill", write(fd, "again", 5));
	close(fd);
	res("O_TRUNC read-only", (fd = open(D "/a", O_RDONLY | O_TRUNC)) < 0 ? -1 : 0);
	res("truncated read-only", fstat(fd, &s) ? -1 : (long)s.st_size);
	res("write to it", write(fd, "x", 1));
	close(fd);
	res("O_TRUNC of a folder", open(D, O_RDONLY | O_TRUNC));
	res("O_DIRECT of a folder", open(D, O_RDONLY | O_DIRECT));
	res("mkdir sub", mkdir(D "/sub", 0700));
	res("create sub/b", (fd = open(D "/sub/b", O_CREAT | O_WRONLY, 0600)) < 0 ? -1 : 0);
	close(fd);
	list(D);
	list(D "/sub");
	res("open a folder for writing", open(D "/sub", O_WRONLY));
	res("O_DIRECTORY on a file", open(D "/a", O_RDONLY | O_DIRECTORY));
	res("a file as a folder", open(D "/a/x", O_RDONLY));
	res("missing", open(D "/nope", O_RDONLY));
	res("missing folder", open(D "/nope/x", O_CREAT | O_WRONLY, 0600));
	res("access W_OK", access(D "/a", W_OK));
	res("access X_OK", access(D "/a", X_OK));
	res("chmod 0755", chmod(D "/a", 0755));
	res("access X_OK after", access(D "/a", X_OK));
	res("rename a to sub/c", rename(D "/a", D "/sub/c"));
	res("rename over sub/b", rename(D "/sub/c", D "/sub/b"));
	list(D "/sub");
	res("rename a folder into itself", rename(D "/sub", D "/sub/in"));
	res("rmdir, not empty", rmdir(D "/sub"));
	res("unlink a folder", unlink(D "/sub"));
	res("rmdir a file", rmdir(D "/sub/b"));
	/* unlinked while open: still read through the descriptor */
	fd = open(D "/sub/b", O_RDWR);
	res("unlink open file", unlink(D "/sub/b"));
	res("write unlinked", write(fd, "ghost", 5));
	res("read unlinked", pread(fd, buf, 5, 0));
	res("gone from the folder", stat(D "/sub/b", &s));
	close(fd);
	res("rmdir sub", rmdir(D "/sub"));
	fd = open(D, O_TMPFILE | O_RDWR, 0600);
	res("O_TMPFILE write", write(fd, "anon", 4));
	close(fd);
	list(D);
	res("rmdir", rmdir(D));
	return 0;
}

static int tmpfd = -1;

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ops";
	char req[256] = "";
	struct stat s;
	if (!strcmp(mode, "dirfd"))
		tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY);
	if (!strcmp(mode, "init")) {
		int fd = open("/tmp/init", O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (fd < 0 || write(fd, "from init;", 10) != 10)
			return 2;
		close(fd);
	}
	ssize_t n = read(0, req, sizeof(req) - 1); /* the snapshot point */
	req[n > 0 ? n : 0] = 0;
	if (!strcmp(mode, "ops"))
		return ops();
	if (!strcmp(mode, "edges")) { /* where Ember's /tmp says no and a tmpfs would not */
		res("link", link("/tmp", "/tmp/l")); /* a folder: EPERM as on Linux */
		res("rmdir /tmp", rmdir("/tmp"));
		return 0;
	}
	if (!strcmp(mode, "cwd"))
		return cwd();
	if (!strcmp(mode, "attr"))
		return attr();
	if (!strcmp(mode, "vec"))
		return vec();
	if (!strcmp(mode, "hostile")) {
		static char deep[4096];
		for (int i = 0; i < 2047; i++)
			memcpy(deep + 2 * i, "a/", 2);
		deep[4094] = 'a';
		int t = open("/tmp", O_RDONLY | O_DIRECTORY);
		res("a path of 2,048 components", openat(t, deep, O_CREAT | O_WRONLY, 0600));
		res("mkdir a", mkdir("/tmp/a", 0700));
		res("mkdir b", mkdir("/tmp/b", 0700));
		int b = open("/tmp/b", O_RDONLY | O_DIRECTORY);
		res("rename over the open b", rename("/tmp/a", "/tmp/b"));
		char buf[512];
		res("b listed", syscall(SYS_getdents64, b, buf, sizeof(buf)) > 0 ? 0 : -1);
		static char mib[1 << 20];
		long ok = 0;
		for (int i = 0; i < 40; i++) { /* 40 times 15 MiB through a 16 MiB bound */
			char name[32];
			snprintf(name, sizeof(name), "/tmp/f%d", i);
			int fd = open(name, O_CREAT | O_WRONLY, 0600);
			long w = 0;
			for (int k = 0; k < 15; k++)
				w += write(fd, mib, sizeof(mib));
			ok += w == 15L << 20 && ftruncate(fd, 0) == 0;
			close(fd);
		}
		printf("grown to 15 MiB and truncated: %ld of 40\n", ok);
		int f = open("/tmp/g", O_CREAT | O_WRONLY, 0600);
		res("15 MiB held by one", ftruncate(f, 15L << 20));
		res("and 2 more by another",
		    ftruncate(open("/tmp/h", O_CREAT | O_WRONLY, 0600), 2L << 20));
		return 0;
	}
	if (!strcmp(mode, "dirfd")) {
		res("fstat of /tmp's descriptor", fstat(tmpfd, &s) ? -1 : S_ISDIR(s.st_mode));
		res("a file made through it",
		    openat(tmpfd, "x", O_CREAT | O_WRONLY, 0600) >= 0 ? 0 : -1);
		return 0;
	}
	if (!strcmp(mode, "leave")) {
		printf("%s\n", stat("/tmp/left", &s) ? "absent" : "LEAK: /tmp/left is there");
		int fd = open("/tmp/left", O_CREAT | O_WRONLY, 0600);
		return fd < 0 || write(fd, "secret", 6) != 6;
	}
	if (!strcmp(mode, "fill")) {
		static char mib[1 << 20];
		int fd = open("/tmp/big", O_CREAT | O_WRONLY, 0600);
		long total = 0, k;
		while ((k = write(fd, mib, sizeof(mib))) > 0)
			total += k;
		printf("wrote %ld MiB, then %s\n", total >> 20, k < 0 ? err_name(errno) : "0");
		close(fd);
		res("unlink big", unlink("/tmp/big"));
		res("write after", write(open("/tmp/small", O_CREAT | O_WRONLY, 0600), "x", 1));
		return 0;
	}
	if (!strcmp(mode, "init")) {
		int fd = open("/tmp/init", O_RDWR | O_APPEND);
		char buf[512] = "";
		if (fd < 0 || write(fd, req, strlen(req)) < 0 ||
		    pread(fd, buf, sizeof(buf) - 1, 0) < 0)
			return 3;
		printf("%s\n", buf);
		return 0;
	}
	return 1;
}

/* shmap: MAP_SHARED mappings as a program uses them, by mode (argv[1]), each result printed:
 *   tmp    a /tmp file mapped shared: writes through the mapping seen by read() and the other
 *          way round, msync, a truncation seen by the mapping, two mappings of one file, the
 *          file unlinked while mapped, EACCES for a writable one on a read-only descriptor
 *   zero   /dev/zero mapped private and shared (zeros, writable, independent), its EACCES;
 *          MAP_SHARED_VALIDATE on anonymous memory (EINVAL), an offset past the largest
 *          (EOVERFLOW); pread and pwrite of the devices, a pipe's ends (ENODEV, EACCES);
 *          the program's own file mapped shared, read-only (EACCES writable)
 *   bus    a /tmp file's pages past its end, mapped shared and private: SIGBUS to a child
 *          touching them, EFAULT to a call, after mprotect too; its end moved up and down by
 *          ftruncate, a private copy of a page included
 *   fork   MAP_SHARED|MAP_ANONYMOUS and /dev/zero shared across fork: the child's write seen
 *          by the parent, the parent's by the child; a private mapping stays private
 *   leak   a shared anonymous mapping and a /tmp file mapped shared, made before the request
 *          (the snapshot point): each invocation prints what it finds there, then writes a
 *          secret; the next must find init's bytes only
 *   forkleak a shared anonymous mapping made by init, one made by each invocation, and one
 *          each invocation puts over init's private memory, which a fork child writes a
 *          secret into: each invocation finds init's bytes and zeros */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static void res(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", what, strerror(errno));
	else
		printf("%s: %ld\n", what, rc);
}

static long map(size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);
	return p == MAP_FAILED ? -1 : 0;
}

static int tmp(void)
{
	const char *path = "/tmp/ember-shmap";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	char buf[64] = {0};
	if (fd < 0 || write(fd, "hello, file", 11) != 11)
		return 1;
	char *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return printf("mmap shared: %s\n", strerror(errno)), 1;
	printf("mapping reads the file: %.11s\n", m);
	memcpy(m, "HELLO", 5);
	res("pread", pread(fd, buf, 11, 0));
	printf("read() sees the mapping's write: %.11s\n", buf);
	res("pwrite", pwrite(fd, "world", 5, 7));
	printf("the mapping sees write(): %.12s\n", m);
	res("msync", msync(m, PG, MS_SYNC));
	res("msync MS_SYNC|MS_ASYNC", msync(m, PG, MS_SYNC | MS_ASYNC));
	res("msync unaligned", msync(m + 1, PG, MS_SYNC));
	res("ftruncate 4", ftruncate(fd, 4));
	res("ftruncate 11", ftruncate(fd, 11));
	printf("past the truncation zeros: %d %d\n", m[3], m[4]);
	char *m2 = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
	if (m2 == MAP_FAILED)
		return printf("second mmap: %s\n", strerror(errno)), 1;
	m[0] = 'J';
	res("pread", pread(fd, buf, 1, 0));
	printf("a second mapping sees the first's write: %c\n", m2[0]);
	m[1] = 'K'; /* written back when the mapping goes */
	res("munmap", munmap(m, PG));
	res("pread", pread(fd, buf, 2, 0));
	printf("munmap wrote it back: %.2s\n", buf);
	res("unlink while mapped", unlink(path));
	res("close", close(fd));
	printf("the mapping still holds the file: %.2s\n", m2);
	munmap(m2, PG);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	res("write", write(fd, "x", 1));
	int ro = open(path, O_RDONLY);
	res("shared writable on O_RDONLY", map(PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0));
	res("shared read-only on O_RDONLY", map(PG, PROT_READ, MAP_SHARED, ro, 0));
	res("private writable on O_RDONLY", map(PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0));
	res("unlink", unlink(path));
	return 0;
}

static int zero(void)
{
	int z = open("/dev/zero", O_RDWR), wo = open("/dev/zero", O_WRONLY);
	int ro = open("/dev/zero", O_RDONLY);
	char *a = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, z, 0);
	char *b = mmap(NULL, PG + 100, PROT_READ | PROT_WRITE, MAP_PRIVATE, z, 0);
	if (a == MAP_FAILED || b == MAP_FAILED)
		return printf("mmap /dev/zero: %s\n", strerror(errno)), 1;
	printf("zeros: %d %d\n", a[PG + 5], b[PG + 99]);
	a[0] = 1;
	b[0] = 2;
	printf("independent: %d %d\n", a[0], b[0]);
	res("shared writable on O_WRONLY", map(PG, PROT_READ | PROT_WRITE, MAP_SHARED, wo, 0));
	res("private on O_WRONLY", map(PG, PROT_READ, MAP_PRIVATE, wo, 0));
	res("shared writable on O_RDONLY", map(PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0));
	res("shared read-only on O_RDONLY", map(PG, PROT_READ, MAP_SHARED, ro, 0));
	res("MAP_SHARED_VALIDATE anonymous",
	    map(PG, PROT_READ, MAP_SHARED_VALIDATE | MAP_ANONYMOUS, -1, 0));
	res("MAP_PRIVATE|MAP_SHARED anonymous",
	    map(PG, PROT_NONE, MAP_PRIVATE | MAP_SHARED | MAP_ANONYMOUS, -1, 0));
	int fd = open("/tmp/ember-shmap-z", O_RDWR | O_CREAT | O_TRUNC, 0600);
	res("offset at the last page", map(PG, PROT_READ, MAP_PRIVATE, fd, INT64_MAX & ~(PG - 1)));
	res("offset before it", map(PG, PROT_READ, MAP_PRIVATE, fd, (INT64_MAX - PG) & ~(PG - 1)));
	res("a negative offset", map(PG, PROT_READ, MAP_PRIVATE, fd, -PG));
	unlink("/tmp/ember-shmap-z");
	char buf[8] = "xxxxxxx";
	res("pread of /dev/zero", pread(z, buf, 4, 12345));
	printf("read zeros: %d %c\n", buf[0], buf[4]);
	res("pwrite of /dev/zero", pwrite(z, buf, 8, 99));
	int nul = open("/dev/null", O_WRONLY), full = open("/dev/full", O_WRONLY);
	res("pwrite of /dev/null", pwrite(nul, buf, 8, 0));
	res("pwrite of /dev/full", pwrite(full, buf, 8, 0));
	res("pread of /dev/null, write-only", pread(nul, buf, 8, 0));
	int p[2];
	if (pipe(p))
		return 1;
	res("a pipe's read end", map(PG, PROT_READ, MAP_PRIVATE, p[0], 0));
	res("a pipe's write end", map(PG, PROT_READ, MAP_PRIVATE, p[1], 0));
	int exe = open("/proc/self/exe", O_RDONLY);
	res("the program shared read-only", map(PG, PROT_READ, MAP_SHARED, exe, 0));
	res("the program shared writable", map(PG, PROT_READ | PROT_WRITE, MAP_SHARED, exe, 0));
	res("the program MAP_SHARED_VALIDATE writable",
	    map(PG, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE, exe, 0));
	return 0;
}

static int fork_(void)
{
	int z = open("/dev/zero", O_RDWR);
	volatile char *anon =
	    mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	volatile char *dz = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, z, 0);
	volatile char *priv =
	    mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED || dz == MAP_FAILED || priv == MAP_FAILED)
		return printf("mmap: %s\n", strerror(errno)), 1;
	anon[0] = 'p', dz[2 * PG] = 'p', priv[0] = 'p';
	pid_t pid = fork();
	if (pid == 0) {
		int ok = anon[0] == 'p' && dz[2 * PG] == 'p';
		anon[1] = 'c', dz[2 * PG + 1] = 'c', priv[1] = 'c';
		_exit(ok ? 0 : 3);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	printf("child saw the parent's bytes: %d\n", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	printf("shared anonymous: the child's write seen: %c\n", anon[1] ? anon[1] : '-');
	printf("/dev/zero shared: the child's write seen: %c\n",
	       dz[2 * PG + 1] ? dz[2 * PG + 1] : '-');
	printf("private: the child's write not seen: %c\n", priv[1] ? priv[1] : '-');
	return 0;
}

/* how a child touching p (reading, or writing) ends: "ok", or the signal that killed it */
static const char *touch(volatile char *p, int write)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (write)
			*p = 'w';
		else
			(void)*p;
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status)				    ? "ok"
	       : WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS  ? "SIGBUS"
	       : WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV ? "SIGSEGV"
								    : "another end";
}

static int bus(void)
{
	int fd = open("/tmp/ember-shmap-bus", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "half a page", 11) != 11)
		return 1;
	char *sh = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *pr = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	char *far = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 10 * PG);
	if (sh == MAP_FAILED || pr == MAP_FAILED || far == MAP_FAILED)
		return printf("mmap: %s\n", strerror(errno)), 1;
	printf("shared, its end's page: %s; the next: %s, written: %s\n", touch(sh + 5, 0),
	       touch(sh + PG, 0), touch(sh + PG, 1));
	printf("private, its end's page: %s; the next: %s, written: %s\n", touch(pr + 5, 1),
	       touch(pr + PG, 0), touch(pr + PG, 1));
	printf("a mapping wholly past the end: %s\n", touch(far, 0));
	int p[2], z = open("/dev/zero", O_RDONLY);
	if (pipe(p))
		return 1;
	res("write() from past the end", write(p[1], pr + PG, 16));
	res("read() into past the end", read(z, sh + PG, 16));
	res("mprotect", mprotect(sh, 2 * PG, PROT_READ));
	printf("after mprotect, past the end: %s\n", touch(sh + PG, 0));
	res("ftruncate to two pages", ftruncate(fd, 2 * PG));
	printf("then the second page: %s %s\n", touch(sh + PG, 0), touch(pr + PG, 1));
	pr[0] = 'c'; /* a private copy of the page: gone with the file's end all the same */
	res("ftruncate to 0", ftruncate(fd, 0));
	printf("then the first page: %s %s\n", touch(sh, 0), touch(pr, 0));
	unlink("/tmp/ember-shmap-bus");
	return 0;
}

static int leak(void)
{
	char *anon = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int fd = open("/tmp/ember-shmap-leak", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (anon == MAP_FAILED || fd < 0 || ftruncate(fd, PG))
		return 1;
	char *file = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (file == MAP_FAILED)
		return printf("mmap: %s\n", strerror(errno)), 1;
	strcpy(anon, "init");
	strcpy(file, "init");
	char req[16];
	if (read(0, req, sizeof(req)) < 0) /* the snapshot point */
		return 1;
	char buf[8] = {0};
	if (pread(fd, buf, 7, 0) < 0)
		return 1;
	printf("anon: %.7s, file: %.7s, read: %.7s\n", anon, file, buf);
	strcpy(anon, "secret");
	strcpy(file, "secret");
	return msync(file, PG, MS_SYNC) ? 1 : 0;
}

static int forkleak(void)
{
	char *init = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (init == MAP_FAILED)
		return 1;
	strcpy(init, "init");
	/* 8 MiB written by init and left alone: the reset soon records the writes instead of
	 * comparing, and the child's writes, made in another machine, are not among them */
	char *big = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (big == MAP_FAILED)
		return 1;
	memset(big, 1, 8 << 20);
	/* private memory of init's that each invocation maps shared memory over, for a child to
	 * write into: its own writes are not the parent's machine's, whatever it records */
	char *mine = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mine == MAP_FAILED)
		return 1;
	strcpy(mine, "mine");
	char req[16];
	if (read(0, req, sizeof(req)) < 0) /* the snapshot point */
		return 1;
	char *fresh = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		return 1;
	printf("at the start: init's %.7s, a new one's %d %d, %.7s\n", init, fresh[0], fresh[PG],
	       mine);
	if (mmap(mine, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
	    mine)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		strcpy(fresh, "secret");
		strcpy(fresh + PG, "secret");
		strcpy(init, "secret");
		strcpy(mine, "secret");
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	printf("the child's write seen: %.7s\n", fresh[0] ? fresh : "-");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "tmp"))
		return tmp();
	if (!strcmp(m, "zero"))
		return zero();
	if (!strcmp(m, "fork"))
		return fork_();
	if (!strcmp(m, "leak"))
		return leak();
	if (!strcmp(m, "bus"))
		return bus();
	if (!strcmp(m, "forkleak"))
		return forkleak();
	fprintf(stderr, "usage: shmap tmp|zero|fork|leak|forkleak|bus\n");
	return 2;
}

/* fifo: named pipes in the scratch /tmp, by mode (argv[1]):
 *   ops     made (mkfifo, mknod S_IFIFO), stat, opened as Linux opens them (O_RDONLY waits for a
 *           writer, O_WRONLY for a reader, O_NONBLOCK, O_RDWR), read, written, polled, ended
 *           (EOF, EPIPE), between threads and between processes (fork), unlinked while open, an
 *           open that waits interrupted by a signal, an O_PATH descriptor opened again through
 *           /proc/self/fd (the pipe, never its ring as a file); each result printed under
 *           /tmp/ember-fifo (compared with a native run)
 *   dev     mknod of a device (EPERM: no privilege; natively root may) and of a socket
 *   leave   prints whether /tmp/ff is there, then makes it and leaves "secret" in it, open
 *   init    makes /tmp/fi and opens it O_RDWR before the request (the snapshot point), then at
 *           each invocation prints what it holds, and leaves "leak" in it
 *   wait    prints whether /tmp/fw is there, makes it and opens it for reading: no writer ever
 *           comes (the invocation's timeout ends it) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define D "/tmp/ember-fifo"
#define F D "/f"

static const struct {
	int e;
	const char *name;
} names[] = {{EEXIST, "EEXIST"}, {ENOENT, "ENOENT"}, {ENXIO, "ENXIO"},	 {EAGAIN, "EAGAIN"},
	     {EPIPE, "EPIPE"},	 {EBADF, "EBADF"},   {EINVAL, "EINVAL"}, {EPERM, "EPERM"},
	     {ESPIPE, "ESPIPE"}, {EINTR, "EINTR"},   {EBUSY, "EBUSY"},	 {EACCES, "EACCES"}};

static void res(const char *what, long rc)
{
	const char *n = "another errno";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == errno)
			n = names[i].name;
	if (rc < 0)
		printf("%s: %s\n", what, n);
	else
		printf("%s: %ld\n", what, rc);
	fflush(stdout);
}

/* the poll bits of fd now */
static void polled(const char *what, int fd)
{
	struct pollfd p = {fd, POLLIN | POLLOUT, 0};
	int n = poll(&p, 1, 0);
	printf("%s: %d%s%s%s%s\n", what, n, p.revents & POLLIN ? " IN" : "",
	       p.revents & POLLOUT ? " OUT" : "", p.revents & POLLHUP ? " HUP" : "",
	       p.revents & POLLERR ? " ERR" : "");
}

static void *open_writer(void *arg)
{
	int fd = open(F, O_WRONLY);
	*(int *)arg = fd < 0 ? -1 : write(fd, "from a thread", 13) == 13 ? 0 : -2;
	close(fd);
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void made(void)
{
	struct stat s;
	res("mkfifo", mkfifo(F, 0640));
	res("mkfifo again", mkfifo(F, 0640));
	res("stat", stat(F, &s));
	printf("fifo %d, mode %o, size %ld, nlink %ld\n", S_ISFIFO(s.st_mode), s.st_mode & 07777,
	       (long)s.st_size, (long)s.st_nlink);
	res("mknod S_IFIFO", mknod(D "/m", S_IFIFO | 0600, 0));
	res("stat m", stat(D "/m", &s));
	printf("m fifo %d, mode %o\n", S_ISFIFO(s.st_mode), s.st_mode & 07777);
	res("mknodat S_IFIFO", mknodat(AT_FDCWD, D "/n", S_IFIFO | 0600, 0));
	res("unlink n", unlink(D "/n"));
	res("truncate", truncate(F, 0));
	res("open O_WRONLY|O_NONBLOCK, no reader", open(F, O_WRONLY | O_NONBLOCK));
}

/* the ends opened without waiting, then what each sees as the other comes and goes */
static void nonblocking(void)
{
	char buf[64] = "";
	struct stat a, b;
	int r = open(F, O_RDONLY | O_NONBLOCK);
	res("open O_RDONLY|O_NONBLOCK", r >= 0 ? 0 : -1);
	res("read, no writer ever", read(r, buf, sizeof(buf)));
	polled("poll reader, no writer ever", r);
	int w = open(F, O_WRONLY | O_NONBLOCK);
	res("open O_WRONLY|O_NONBLOCK", w >= 0 ? 0 : -1);
	printf("F_GETFL reader %o, writer %o\n", fcntl(r, F_GETFL), fcntl(w, F_GETFL));
	res("fstat both", fstat(r, &a) | fstat(w, &b));
	printf("one inode: %d, fifo %d\n", a.st_ino == b.st_ino, S_ISFIFO(a.st_mode));
	res("read, empty", read(r, buf, sizeof(buf)));
	polled("poll writer", w);
	res("write", write(w, "hello", 5));
	polled("poll reader", r);
	res("read", read(r, buf, sizeof(buf)));
	printf("read \"%.5s\"\n", buf);
	res("lseek", lseek(r, 0, SEEK_SET));
	res("F_GETPIPE_SZ", fcntl(w, F_GETPIPE_SZ));
	res("F_SETPIPE_SZ 8192", fcntl(r, F_SETPIPE_SZ, 8192));
	res("F_GETPIPE_SZ of the other", fcntl(w, F_GETPIPE_SZ));
	static char big[16384];
	res("write 16384 into 8192", write(w, big, sizeof(big)));
	res("write again", write(w, big, 1));
	res("F_SETPIPE_SZ 4096 while full", fcntl(r, F_SETPIPE_SZ, 4096));
	res("read it", read(r, big, sizeof(big)));
	res("write past the writer's close", write(w, "end", 3));
	res("close writer", close(w));
	polled("poll reader, writer gone", r);
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", r);
	int again = open(link, O_WRONLY | O_NONBLOCK);
	res("open the reader's /proc/self/fd link for writing", again >= 0 ? 0 : -1);
	res("write through it", write(again, "!", 1));
	close(again);
	res("read the rest", read(r, buf, sizeof(buf)));
	res("read, writer gone", read(r, buf, sizeof(buf)));
	int w2 = open(F, O_WRONLY | O_NONBLOCK);
	res("close reader", close(r));
	polled("poll writer, reader gone", w2);
	signal(SIGPIPE, SIG_IGN);
	res("write, reader gone", write(w2, "x", 1));
	close(w2);
	int rw = open(F, O_RDWR);
	res("open O_RDWR", rw >= 0 ? 0 : -1);
	res("write O_RDWR", write(rw, "both", 4));
	res("read O_RDWR", read(rw, buf, 4));
	res("write, then the last close", write(rw, "gone", 4));
	close(rw);
	rw = open(F, O_RDWR);
	int fl = fcntl(rw, F_GETFL);
	fcntl(rw, F_SETFL, fl | O_NONBLOCK);
	res("bytes left behind by the last close", read(rw, buf, sizeof(buf)));
	close(rw);
}

/* opens that wait for their partner: a thread's, a child process's */
static void waiting(void)
{
	char buf[64] = "";
	int wfd = -1;
	pthread_t th;
	pthread_create(&th, NULL, open_writer, &wfd);
	int r = open(F, O_RDONLY);
	res("open O_RDONLY, a thread the writer", r >= 0 ? 0 : -1);
	long n = 0, k;
	while ((k = read(r, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += k;
	pthread_join(th, NULL);
	res("thread's open O_WRONLY and write", wfd);
	polled("poll reader, the thread's writer gone", r);
	printf("read \"%.*s\"\n", (int)n, buf);
	close(r);

	pid_t pid = fork();
	if (!pid) {
		int fd = open(F, O_RDONLY);
		long got = 0;
		while ((k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += k;
		_exit(got == 12 && !memcmp(buf, "from the parent", 12) ? 7 : 1);
	}
	int w = open(F, O_WRONLY);
	res("open O_WRONLY, a child the reader", w >= 0 ? 0 : -1);
	res("write", write(w, "from the parent", 12));
	close(w);
	int st = 0;
	waitpid(pid, &st, 0);
	printf("child read it all: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

	/* a child writes, the parent reads until the end */
	pid = fork();
	if (!pid) {
		int fd = open(F, O_WRONLY);
		_exit(write(fd, "from the child", 14) == 14 ? 0 : 1);
	}
	r = open(F, O_RDONLY);
	n = 0;
	while ((k = read(r, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += k;
	printf("read from the child \"%.*s\", then %ld\n", (int)n, buf, k);
	close(r);
	waitpid(pid, &st, 0);

	/* an open that waits, interrupted: EINTR, and it is not counted as a reader after */
	struct sigaction sa = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 50000}, {0, 50000}}, off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &it, NULL); /* again and again: one may come before the open waits */
	res("open O_RDONLY, interrupted", open(F, O_RDONLY));
	setitimer(ITIMER_REAL, &off, NULL);
	res("open O_WRONLY|O_NONBLOCK after", open(F, O_WRONLY | O_NONBLOCK));
}

/* unlinked while open: the ends go on, the name is gone */
static void unlinked(void)
{
	char buf[16] = "";
	struct stat s;
	int r = open(F, O_RDONLY | O_NONBLOCK), w = open(F, O_WRONLY);
	res("unlink while open", unlink(F));
	res("stat after", stat(F, &s));
	res("write", write(w, "still", 5));
	res("read", read(r, buf, sizeof(buf)));
	res("fstat", fstat(r, &s));
	printf("nlink %ld, fifo %d\n", (long)s.st_nlink, S_ISFIFO(s.st_mode));
	close(w);
	close(r);
	res("unlink m", unlink(D "/m"));
}

/* an O_PATH descriptor of a named pipe opened again through /proc/self/fd: the pipe itself,
 * never its ring taken for a file's data (fallocate and ftruncate refused), a ring's worth
 * written and read back whole */
static void reopened(void)
{
	static char big[65536], back[65536];
	char path[64];
	struct stat s;
	res("mkfifo r", mkfifo(D "/r", 0600));
	int p = open(D "/r", O_PATH);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p);
	int w = open(path, O_RDWR);
	res("reopened O_RDWR", w < 0 ? -1 : 0);
	res("fstat", fstat(w, &s));
	printf("fifo %d\n", S_ISFIFO(s.st_mode));
	res("fallocate", fallocate(w, 0, 0, 1));
	res("ftruncate", ftruncate(w, 1));
	memset(big, 'x', sizeof(big));
	int r = open(D "/r", O_RDWR | O_NONBLOCK);
	res("write a ring's worth", write(r, big, sizeof(big)));
	res("read it back", read(w, back, sizeof(back)));
	printf("the same bytes: %d\n", !memcmp(big, back, sizeof(back)));
	close(r), close(w), close(p);
	res("unlink r", unlink(D "/r"));
}

static int ops(void)
{
	mkdir(D, 0700);
	made();
	nonblocking();
	waiting();
	reopened();
	unlinked();
	res("rmdir", rmdir(D));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ops";
	char req[64] = "", buf[64] = "";
	static int held = -1;
	struct stat s;
	if (!strcmp(mode, "init")) {
		if (mkfifo("/tmp/fi", 0600) || (held = open("/tmp/fi", O_RDWR | O_NONBLOCK)) < 0)
			return 2;
	}
	ssize_t n = read(0, req, sizeof(req) - 1); /* the snapshot point */
	req[n > 0 ? n : 0] = 0;
	if (!strcmp(mode, "ops"))
		return ops();
	if (!strcmp(mode, "dev")) {
		res("mknod a character device", mknod("/tmp/c", S_IFCHR | 0600, makedev(1, 3)));
		res("mknod a block device", mknod("/tmp/b", S_IFBLK | 0600, makedev(7, 0)));
		res("mknod a socket", mknod("/tmp/s", S_IFSOCK | 0600, 0));
		return 0;
	}
	if (!strcmp(mode, "leave")) {
		if (stat("/tmp/ff", &s)) {
			printf("absent\n");
		} else {
			int fd = open("/tmp/ff", O_RDONLY | O_NONBLOCK);
			printf("LEAK: /tmp/ff is there, holding \"%.*s\"\n",
			       (int)(fd < 0 ? 0 : read(fd, buf, sizeof(buf))), buf);
		}
		int fd = mkfifo("/tmp/ff", 0600) ? -1 : open("/tmp/ff", O_RDWR);
		return fd < 0 || write(fd, "secret", 6) != 6;
	}
	if (!strcmp(mode, "init")) {
		n = read(held, buf, sizeof(buf));
		if (n < 0)
			printf("init's fifo: %s\n", errno == EAGAIN ? "empty" : "error");
		else
			printf("LEAK: init's fifo holds \"%.*s\"\n", (int)n, buf);
		return write(held, "leak", 4) != 4;
	}
	if (!strcmp(mode, "wait")) {
		res("stat /tmp/fw", stat("/tmp/fw", &s)); /* the last invocation's is gone */
		mkfifo("/tmp/fw", 0600);
		printf("opened: %d\n", open("/tmp/fw", O_RDONLY));
		return 0;
	}
	return 1;
}

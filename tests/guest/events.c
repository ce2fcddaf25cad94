/* Readiness and event calls over the process's own descriptors, between threads: pipes (blocking,
 * non-blocking, EOF, EPIPE), eventfd, timerfd, poll, ppoll, select, epoll (level, edge, one-shot,
 * a timerfd inside), dup and fcntl, Unix stream socket pairs (both ways, shutdown, EOF, EPIPE,
 * peek, the socket calls); objects made during initialisation (a pipe and a socket pair holding
 * bytes, an eventfd, an epoll watching it, a timer of an hour) are in every invocation as init
 * left them,
 * and what an invocation makes is gone in the next. Prints only facts the same on every run, so
 * its output equals a native run's (tests/integration/test_guest.sh). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000LL

static int ip[2], ie, iep, itf, isp[2]; /* made during initialisation */
static char inherited[256];		/* open before it (a native run's shell may leave some) */

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nap(long ms)
{
	struct timespec ts = {0, ms * MS};
	nanosleep(&ts, NULL);
}

static const char *err(long rc)
{
	return rc < 0 ? strerror(errno) : "ok";
}

/* the descriptors below 256 open that this program did not make: none, in every invocation
 * (fd 4 is Ember's metadata where it is none of ours) */
static int leftovers(const int *ours, int n)
{
	int extra = 0;
	for (int fd = 0; fd < 256; fd++) {
		int known = inherited[fd];
		for (int i = 0; i < n; i++)
			known |= ours[i] == fd;
		if (!known && fd != 4 && fcntl(fd, F_GETFD) >= 0)
			extra++;
	}
	return extra;
}

static void init(void)
{
	for (int fd = 0; fd < 256; fd++)
		inherited[fd] = fcntl(fd, F_GETFD) >= 0;
	pipe2(ip, O_NONBLOCK);
	write(ip[1], "init-bytes", 10);
	ie = eventfd(5, EFD_NONBLOCK);
	iep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 77};
	epoll_ctl(iep, EPOLL_CTL_ADD, ie, &ev);
	itf = timerfd_create(CLOCK_MONOTONIC, 0);
	struct itimerspec hour = {{0, 0}, {3600, 0}};
	timerfd_settime(itf, 0, &hour, NULL);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, isp);
	send(isp[1], "init-sock", 9, 0);
}

/* what initialisation left, as it left it; then changed, for the next invocation not to see */
static void from_init(void)
{
	const int ours[] = {ip[0], ip[1], ie, iep, itf, isp[0], isp[1]};
	printf("leftover descriptors: %d\n", leftovers(ours, 7));
	struct epoll_event ev;
	int n = epoll_wait(iep, &ev, 1, 0);
	printf("init epoll: %d event, data %llu\n", n,
	       n == 1 ? (unsigned long long)ev.data.u64 : 0);
	char buf[64];
	long k = read(ip[0], buf, sizeof(buf));
	printf("init pipe: '%.*s'\n", k > 0 ? (int)k : 0, buf);
	k = read(ip[0], buf, sizeof(buf));
	printf("init pipe again: %ld %s\n", k, err(k));
	uint64_t v = 0;
	k = read(ie, &v, sizeof(v));
	printf("init eventfd: %llu\n", (unsigned long long)v);
	struct itimerspec left;
	timerfd_gettime(itf, &left);
	printf("init timer: between 59 and 60 minutes left: %s\n",
	       left.it_value.tv_sec >= 3540 && left.it_value.tv_sec < 3600 ? "yes" : "no");
	k = recv(isp[0], buf, sizeof(buf), 0);
	printf("init socket: '%.*s'\n", k > 0 ? (int)k : 0, buf);
	k = recv(isp[0], buf, sizeof(buf), 0);
	printf("init socket again: %ld %s\n", k, err(k));
	send(isp[1], "from-invocation", 15, 0);
	/* what the next invocation must not see */
	write(ip[1], "from-invocation", 15);
	v = 3;
	write(ie, &v, sizeof(v));
	int p[2];
	pipe(p);
	write(p[1], "leak", 4);
	int e = eventfd(1, 0);
	(void)e;
}

struct pump {
	int fd;
	long bytes;
	unsigned long sum;
};

static void *writer(void *arg)
{
	struct pump *w = arg;
	unsigned char chunk[7000];
	for (long done = 0; done < w->bytes;) {
		long n =
		    w->bytes - done < (long)sizeof(chunk) ? w->bytes - done : (long)sizeof(chunk);
		for (long i = 0; i < n; i++)
			chunk[i] = (unsigned char)((done + i) * 7);
		long k = write(w->fd, chunk, (size_t)n);
		if (k <= 0)
			break;
		done += k;
	}
	close(w->fd);
	return NULL;
}

/* 200000 bytes through a pipe of 64 KiB between two threads: both sides wait in turn */
static void pipe_threads(void)
{
	int p[2];
	pipe(p);
	struct pump w = {p[1], 200000, 0};
	pthread_t t;
	pthread_create(&t, NULL, writer, &w);
	unsigned char buf[5000];
	long total = 0, k;
	unsigned long sum = 0;
	while ((k = read(p[0], buf, sizeof(buf))) > 0) {
		for (long i = 0; i < k; i++)
			sum = sum * 31 + buf[i];
		total += k;
	}
	pthread_join(t, NULL);
	printf("pipe between threads: %ld bytes, sum %lu, then %ld at the end\n", total, sum, k);
	close(p[0]);
}

static void *late_write(void *arg)
{
	nap(20);
	write(*(int *)arg, "wake", 4);
	return NULL;
}

static void blocking_read(void)
{
	int p[2];
	pipe(p);
	pthread_t t;
	pthread_create(&t, NULL, late_write, &p[1]);
	char buf[8];
	long long t0 = now_ns();
	long k = read(p[0], buf, sizeof(buf));
	printf("blocking read woke after 20 ms: '%.*s' %s\n", k > 0 ? (int)k : 0, buf,
	       now_ns() - t0 >= 20 * MS ? "yes" : "no");
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
}

static void *post(void *arg)
{
	uint64_t one = 1;
	nap(5);
	write(*(int *)arg, &one, sizeof(one));
	return NULL;
}

static void eventfd_calls(void)
{
	int e = eventfd(0, 0);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, post, &e);
	uint64_t got = 0, v;
	while (got < 3 && read(e, &v, sizeof(v)) == sizeof(v))
		got += v;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("eventfd: three threads' posts read by a blocked reader: %llu\n",
	       (unsigned long long)got);
	close(e);
	int s = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK);
	long r[4];
	for (int i = 0; i < 4; i++)
		r[i] = read(s, &v, sizeof(v)) == sizeof(v) ? (long)v : -errno;
	printf("eventfd semaphore: %ld %ld %ld then %s\n", r[0], r[1], r[2], strerror((int)-r[3]));
	v = UINT64_MAX;
	long k = write(s, &v, sizeof(v));
	printf("eventfd write of 2^64-1: %s\n", err(k));
	v = UINT64_MAX - 1;
	k = write(s, &v, sizeof(v));
	printf("eventfd filled to 2^64-2: %s\n", err(k));
	v = 1;
	k = write(s, &v, sizeof(v));
	printf("eventfd one more: %s\n", err(k));
	uint32_t small;
	k = read(s, &small, sizeof(small));
	printf("eventfd read of 4 bytes: %s\n", err(k));
	printf("eventfd F_GETFL: %s\n",
	       (fcntl(s, F_GETFL) & (O_ACCMODE | O_NONBLOCK)) == (O_RDWR | O_NONBLOCK)
		   ? "O_RDWR|O_NONBLOCK"
		   : "other");
	struct stat st;
	fstat(s, &st);
	printf("eventfd fstat: type bits %o\n", st.st_mode & S_IFMT);
	close(s);
}

static void *arm_later(void *arg)
{
	nap(10);
	struct itimerspec soon = {{0, 0}, {0, 5 * MS}};
	timerfd_settime(*(int *)arg, 0, &soon, NULL);
	return NULL;
}

static void timerfd_calls(void)
{
	int tf = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	int ep = epoll_create(1);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 9};
	epoll_ctl(ep, EPOLL_CTL_ADD, tf, &ev);
	struct itimerspec it = {{0, 10 * MS}, {0, 10 * MS}}, cur;
	long long t0 = now_ns();
	timerfd_settime(tf, 0, &it, NULL);
	timerfd_gettime(tf, &cur);
	printf("timerfd armed: interval 10 ms %s, value within it %s\n",
	       cur.it_interval.tv_nsec == 10 * MS ? "yes" : "no",
	       cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 &&
		       cur.it_value.tv_nsec <= 10 * MS
		   ? "yes"
		   : "no");
	uint64_t ticks = 0;
	/* before its time: a timer an hour away (the 10 ms one may have fired already on a busy
	 * machine, natively too) */
	int far = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	struct itimerspec hour = {{0, 0}, {3600, 0}};
	timerfd_settime(far, 0, &hour, NULL);
	long k = read(far, &ticks, sizeof(ticks));
	printf("timerfd before its time: %s\n", err(k));
	close(far);
	int n = epoll_wait(ep, &ev, 1, 1000);
	printf("timerfd in epoll: %d event(s), data %u, after 10 ms %s\n", n, ev.data.u32,
	       now_ns() - t0 >= 10 * MS ? "yes" : "no");
	nap(25);
	k = read(tf, &ticks, sizeof(ticks));
	printf("timerfd periodic: %s, at least 3 expirations %s\n", err(k),
	       ticks >= 3 ? "yes" : "no");
	struct itimerspec off = {{0, 0}, {0, 0}};
	timerfd_settime(tf, 0, &off, NULL);
	n = epoll_wait(ep, &ev, 1, 30);
	printf("timerfd disarmed: epoll_wait %d after its timeout\n", n);
	close(ep);
	close(tf);
	/* a blocked read of a timer that another thread arms */
	int bt = timerfd_create(CLOCK_BOOTTIME, 0);
	pthread_t t;
	pthread_create(&t, NULL, arm_later, &bt);
	k = read(bt, &ticks, sizeof(ticks));
	printf("timerfd blocked read, armed by another thread: %llu\n", (unsigned long long)ticks);
	pthread_join(t, NULL);
	close(bt);
	/* an absolute time on CLOCK_REALTIME */
	int rt = timerfd_create(CLOCK_REALTIME, 0);
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	wall.tv_nsec += 15 * MS;
	if (wall.tv_nsec >= 1000000000L)
		wall.tv_sec++, wall.tv_nsec -= 1000000000L;
	struct itimerspec abs = {{0, 0}, wall};
	t0 = now_ns();
	timerfd_settime(rt, TFD_TIMER_ABSTIME, &abs, NULL);
	k = read(rt, &ticks, sizeof(ticks));
	printf("timerfd absolute realtime: %llu, after 14 ms %s\n", (unsigned long long)ticks,
	       now_ns() - t0 >= 14 * MS ? "yes" : "no");
	close(rt);
	printf("timerfd_create bad clock: %s, bad flags: %s\n", err(timerfd_create(12345, 0)),
	       err(timerfd_create(CLOCK_MONOTONIC, 1)));
}

static void poll_calls(void)
{
	int p[2];
	pipe(p);
	/* the request read whole: fd 0 hung up once its writer is gone (natively, when printf
	 * exits: hence a timeout) */
	struct pollfd f0 = {0, POLLIN, 0};
	int n = poll(&f0, 1, 1000);
	printf("poll fd 0 read to its end: %d, revents %#x\n", n, f0.revents);
	struct pollfd f[5] = {
	    {0, 0, 0}, {1, POLLOUT, 0}, {2, POLLOUT, 0}, {p[0], POLLIN, 0}, {p[1], POLLOUT, 0}};
	n = poll(f, 5, 0);
	printf("poll std: %d ready: out %d out %d, empty pipe in %d, its writer out %d\n", n,
	       !!(f[1].revents & POLLOUT), !!(f[2].revents & POLLOUT), f[3].revents,
	       !!(f[4].revents & POLLOUT));
	long long t0 = now_ns();
	n = poll(&f[3], 1, 30);
	printf("poll timeout: %d, waited 30 ms %s\n", n, now_ns() - t0 >= 30 * MS ? "yes" : "no");
	write(p[1], "x", 1);
	n = poll(&f[3], 1, -1);
	printf("poll data: %d, revents %#x\n", n, f[3].revents);
	struct pollfd bad[2] = {{1000, POLLIN, 0}, {-1, POLLIN, 0}};
	n = poll(bad, 2, 0);
	printf("poll closed fd: %d, revents %#x, negative fd %#x\n", n, bad[0].revents,
	       bad[1].revents);
	close(p[1]);
	n = poll(&f[3], 1, 0);
	printf("poll after the writer closed: revents %#x\n", f[3].revents);
	char c;
	read(p[0], &c, 1);
	n = poll(&f[3], 1, 0);
	printf("poll drained, writer gone: revents %#x\n", f[3].revents);
	close(p[0]);
	pipe(p);
	close(p[0]);
	struct pollfd w = {p[1], POLLOUT, 0};
	poll(&w, 1, 0);
	printf("poll writer, reader gone: revents %#x\n", w.revents);
	close(p[1]);

	/* select: a pipe with data, its writer, a timeout */
	pipe(p);
	write(p[1], "y", 1);
	fd_set r, wr;
	FD_ZERO(&r);
	FD_ZERO(&wr);
	FD_SET(p[0], &r);
	FD_SET(p[1], &wr);
	int hi = p[0] > p[1] ? p[0] : p[1];
	n = select(hi + 1, &r, &wr, NULL, NULL);
	printf("select: %d, readable %d, writable %d\n", n, FD_ISSET(p[0], &r),
	       FD_ISSET(p[1], &wr));
	read(p[0], &c, 1);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	struct timeval tv = {0, 20000};
	t0 = now_ns();
	n = select(p[0] + 1, &r, NULL, NULL, &tv);
	printf("select timeout: %d, waited 20 ms %s\n", n, now_ns() - t0 >= 20 * MS ? "yes" : "no");
	/* a closed descriptor below 64: Linux looks only at those its table holds (64 at least), so
	 * a closed one above them (200) may be ignored rather than EBADF, depending on the table */
	int q[2];
	pipe(q);
	close(q[0]);
	close(q[1]);
	FD_ZERO(&r);
	FD_SET(q[0], &r);
	n = select(q[0] + 1, &r, NULL, NULL, &tv);
	printf("select closed fd: %s\n", err(n));
	struct timespec ts = {0, 10 * MS};
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	n = pselect(p[0] + 1, &r, NULL, NULL, &ts, NULL);
	printf("pselect timeout: %d\n", n);
	close(p[0]);
	close(p[1]);
}

static volatile sig_atomic_t usr1, pipes;

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static void on_pipe(int sig)
{
	(void)sig;
	pipes++;
}

/* ppoll with a mask that lets a blocked, pending signal through: EINTR, the handler ran, the
 * old mask back */
static void ppoll_mask(void)
{
	signal(SIGUSR1, on_usr1);
	sigset_t block, open, now;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	kill(getpid(), SIGUSR1);
	sigemptyset(&open);
	struct timespec ts = {1, 0};
	long long t0 = now_ns();
	int n = ppoll(NULL, 0, &ts, &open);
	sigprocmask(SIG_BLOCK, NULL, &now);
	printf("ppoll with a mask: %s, handler ran %d, at once %s, blocked again %d\n", err(n),
	       (int)usr1, now_ns() - t0 < 500 * MS ? "yes" : "no", sigismember(&now, SIGUSR1));
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	int p[2];
	pipe(p);
	struct pollfd f = {p[0], POLLIN, 0};
	ts = (struct timespec){0, 10 * MS};
	n = ppoll(&f, 1, &ts, &open);
	printf("ppoll timeout: %d\n", n);
	close(p[0]);
	close(p[1]);
}

static void nonblocking_and_errors(void)
{
	int p[2];
	pipe2(p, O_NONBLOCK | O_CLOEXEC);
	char c;
	long k = read(p[0], &c, 1);
	printf("empty non-blocking read: %s\n", err(k));
	char page[4096];
	memset(page, 'p', sizeof(page));
	int writes = 0;
	while (write(p[1], page, sizeof(page)) == (long)sizeof(page))
		writes++;
	printf("non-blocking pipe full after %d writes of 4096: %s, F_GETPIPE_SZ %d\n", writes,
	       strerror(errno), fcntl(p[1], F_GETPIPE_SZ));
	printf("pipe2 F_GETFD %d, F_GETFL read %s write %s\n", fcntl(p[0], F_GETFD),
	       (fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK)) == (O_RDONLY | O_NONBLOCK) ? "ok"
											    : "bad",
	       (fcntl(p[1], F_GETFL) & (O_ACCMODE | O_NONBLOCK)) == (O_WRONLY | O_NONBLOCK)
		   ? "ok"
		   : "bad");
	k = write(p[0], "x", 1);
	printf("write to the read end: %s; read from the write end: %s\n", err(k),
	       err(read(p[1], &c, 1)));
	fcntl(p[0], F_SETFL, 0);
	printf("F_SETFL 0: %s\n", fcntl(p[0], F_GETFL) & O_NONBLOCK ? "non-blocking" : "blocking");
	struct stat st;
	fstat(p[0], &st);
	printf("pipe fstat: fifo %d\n", S_ISFIFO(st.st_mode));
	close(p[0]);
	close(p[1]);

	signal(SIGPIPE, SIG_IGN);
	pipe(p);
	close(p[0]);
	k = write(p[1], "x", 1);
	printf("write without a reader, SIGPIPE ignored: %s\n", err(k));
	signal(SIGPIPE, on_pipe);
	k = write(p[1], "x", 1);
	printf("write without a reader, SIGPIPE handled: %s, handler ran %d\n", err(k), (int)pipes);
	signal(SIGPIPE, SIG_DFL);
	close(p[1]);
	pipe(p);
	close(p[1]);
	printf("read without a writer: %ld\n", (long)read(p[0], &c, 1));
	close(p[0]);
	printf("pipe2 bad flags: %s; close of a closed fd: %s\n", err(pipe2(p, 1)),
	       err(close(200)));
}

static void dup_calls(void)
{
	int p[2];
	pipe(p);
	int d = dup(p[1]);
	write(d, "via dup", 7);
	int d3 = dup3(p[1], 100, O_CLOEXEC);
	int fd = fcntl(p[1], F_DUPFD_CLOEXEC, 150);
	printf("dup3 to 100: %d (cloexec %d), F_DUPFD_CLOEXEC from 150: %d (cloexec %d)\n", d3,
	       fcntl(100, F_GETFD), fd, fcntl(fd, F_GETFD));
	printf("dup2 onto itself: %s, dup3 onto itself: %s\n", dup2(d, d) == d ? "same" : "other",
	       err(dup3(d, d, 0)));
	close(p[1]);
	close(d);
	close(d3);
	char buf[16];
	long k = read(p[0], buf, sizeof(buf));
	printf("read through the original: '%.*s'; the writer still open by a dup: ", (int)k, buf);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	k = read(p[0], buf, sizeof(buf));
	printf("%s\n", err(k));
	close(fd);
	printf("all writers closed: %ld\n", (long)read(p[0], buf, sizeof(buf)));
	close(p[0]);

	/* stdout onto a pipe and back: what is written to fd 1 meanwhile goes to the pipe */
	fflush(stdout);
	int saved = dup(1);
	pipe(p);
	dup2(p[1], 1);
	write(1, "into the pipe", 13);
	dup2(saved, 1);
	close(saved);
	k = read(p[0], buf, sizeof(buf));
	printf("fd 1 dup2'd onto a pipe: '%.*s'\n", (int)k, buf);
	close(p[0]);
	close(p[1]);
}

/* level-triggered, edge-triggered and one-shot over one pipe */
static void epoll_modes(void)
{
	int p[2];
	pipe(p);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[0]}, out[4];
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	printf("epoll ADD twice: %s; DEL of another: %s; epfd itself: %s; not an epoll: %s\n",
	       err(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev)),
	       err(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL)),
	       err(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev)),
	       err(epoll_ctl(p[0], EPOLL_CTL_ADD, p[1], &ev)));
	write(p[1], "ab", 2);
	int a = epoll_wait(ep, out, 4, 0), b = epoll_wait(ep, out, 4, 0);
	printf("level-triggered: %d then %d, data is the fd %d\n", a, b, out[0].data.fd == p[0]);
	ev.events = EPOLLIN | EPOLLET;
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);
	a = epoll_wait(ep, out, 4, 0);
	b = epoll_wait(ep, out, 4, 0);
	write(p[1], "c", 1);
	int c = epoll_wait(ep, out, 4, 0);
	printf("edge-triggered: %d then %d, after a write %d\n", a, b, c);
	ev.events = EPOLLIN | EPOLLONESHOT;
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);
	a = epoll_wait(ep, out, 4, 0);
	write(p[1], "d", 1);
	b = epoll_wait(ep, out, 4, 0);
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);
	c = epoll_wait(ep, out, 4, 0);
	printf("one-shot: %d then %d, re-armed %d\n", a, b, c);
	ev.events = EPOLLOUT;
	ev.data.fd = p[1];
	epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev);
	epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL);
	a = epoll_wait(ep, out, 4, 0);
	printf("writer: %d event, EPOLLOUT %d\n", a, !!(out[0].events & EPOLLOUT));
	close(p[0]);
	a = epoll_wait(ep, out, 4, 0);
	printf("writer, reader gone: events %#x\n", out[0].events);
	close(p[1]);
	a = epoll_wait(ep, out, 4, 0);
	printf("closed: its entry gone, %d events\n", a);
	printf("epoll_wait maxevents 0: %s\n", err(epoll_wait(ep, out, 0, 0)));
	/* an epoll inside an epoll, and the loop that would make */
	int outer = epoll_create1(0), e = eventfd(1, 0);
	ev.events = EPOLLIN;
	epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev);
	epoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev);
	printf("nested: %d ready; a loop: %s\n", epoll_wait(outer, out, 4, 0),
	       err(epoll_ctl(ep, EPOLL_CTL_ADD, outer, &ev)));
	close(e);
	close(outer);
	close(ep);
}

/* a Unix stream socket pair: both ways, a thread waiting in recv, peek, poll's view of a
 * shutdown, EOF after the peer's shutdown and close, EPIPE (no SIGPIPE with MSG_NOSIGNAL), the
 * socket calls' answers */
static void *sock_echo(void *arg)
{
	int fd = *(int *)arg;
	char buf[64];
	long k = recv(fd, buf, sizeof(buf), 0);
	if (k > 0)
		send(fd, buf, (size_t)k, 0);
	return NULL;
}

static void socket_pairs(void)
{
	int sv[2], type = 0;
	char buf[64];
	socklen_t len = sizeof(type);
	pthread_t th;
	printf("socketpair: %s\n", err(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)));
	pthread_create(&th, NULL, sock_echo, &sv[1]);
	nap(20);
	long k = send(sv[0], "ping", 4, 0);
	k = recv(sv[0], buf, sizeof(buf), 0);
	pthread_join(th, NULL);
	printf("echoed by a thread: '%.*s'\n", k > 0 ? (int)k : 0, buf);
	write(sv[1], "abc", 3);
	k = recv(sv[0], buf, 2, MSG_PEEK);
	printf("peek: %ld '%.*s'; ", k, k > 0 ? (int)k : 0, buf);
	k = read(sv[0], buf, sizeof(buf));
	printf("then read: %ld '%.*s'\n", k, k > 0 ? (int)k : 0, buf);
	k = recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT);
	printf("nothing, MSG_DONTWAIT: %ld %s\n", k, err(k));
	struct stat s;
	fstat(sv[0], &s);
	getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &len);
	printf("a socket: %d, SO_TYPE stream: %d\n", S_ISSOCK(s.st_mode), type == SOCK_STREAM);
	struct pollfd p = {sv[0], POLLIN | POLLOUT | POLLRDHUP, 0};
	poll(&p, 1, 0);
	printf("poll: in %d out %d rdhup %d\n", !!(p.revents & POLLIN), !!(p.revents & POLLOUT),
	       !!(p.revents & POLLRDHUP));
	shutdown(sv[1], SHUT_WR);
	poll(&p, 1, 0);
	printf("after the peer's SHUT_WR: in %d out %d rdhup %d hup %d\n", !!(p.revents & POLLIN),
	       !!(p.revents & POLLOUT), !!(p.revents & POLLRDHUP), !!(p.revents & POLLHUP));
	k = recv(sv[0], buf, sizeof(buf), 0);
	printf("recv: %ld (the end)\n", k);
	k = send(sv[1], "x", 1, MSG_NOSIGNAL);
	printf("send after its SHUT_WR: %ld %s\n", k, err(k));
	k = send(sv[0], "still", 5, 0);
	printf("the other way still: %ld\n", k);
	close(sv[1]);
	poll(&p, 1, 0);
	printf("peer closed: hup %d\n", !!(p.revents & POLLHUP));
	k = send(sv[0], "x", 1, MSG_NOSIGNAL);
	printf("send to a closed peer: %ld %s\n", k, err(k));
	close(sv[0]);
}

int main(void)
{
	init();
	char req[256];
	long n = read(0, req, sizeof(req) - 1);
	req[n > 0 ? n : 0] = 0;
	printf("events: request '%s'\n", req);
	from_init();
	pipe_threads();
	blocking_read();
	eventfd_calls();
	timerfd_calls();
	poll_calls();
	ppoll_mask();
	nonblocking_and_errors();
	dup_calls();
	epoll_modes();
	socket_pairs();
	return 0;
}

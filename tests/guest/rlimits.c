/* rlimits: RLIMIT_FSIZE (a /tmp file written to it, then EFBIG and SIGXFSZ), RLIMIT_DATA and
 * RLIMIT_AS lowered by the program and held, each result printed: the heap refused past RLIMIT_DATA
 * (0: any growth), a mapping past RLIMIT_AS (what /proc/self/statm says is mapped, plus 1 MiB)
 * refused and one under it made, both limits back where they were; the request is read first (the
 * snapshot point), so an invocation that lowered them must leave the next one its own limits. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void res(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", what, strerror(errno));
	else
		printf("%s: %ld\n", what, rc);
}

static long mapped(void)
{
	long pages = -1;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld", &pages) != 1)
		pages = -1;
	if (f)
		fclose(f);
	return pages * 4096;
}

int main(void)
{
	char req[16];
	if (read(0, req, sizeof(req)) < 0)
		return 1;
	struct rlimit data, as, low;
	if (getrlimit(RLIMIT_DATA, &data) || getrlimit(RLIMIT_AS, &as))
		return 1;
	/* what the invocation before set is not this one's */
	printf("limits as they start (soft as hard): %d %d\n", data.rlim_cur == data.rlim_max,
	       as.rlim_cur == as.rlim_max);
	/* RLIMIT_FSIZE: a write up to it, then EFBIG with SIGXFSZ (blocked here, so pending) */
	struct rlimit was, fsz = {1024, RLIM_INFINITY};
	struct timespec now = {0, 0};
	sigset_t xfsz;
	sigemptyset(&xfsz), sigaddset(&xfsz, SIGXFSZ);
	sigprocmask(SIG_BLOCK, &xfsz, NULL);
	getrlimit(RLIMIT_FSIZE, &was);
	int fd = open("/tmp/ember-rlimits", O_CREAT | O_RDWR | O_TRUNC, 0600);
	static char buf[2000];
	res("RLIMIT_FSIZE 1024", setrlimit(RLIMIT_FSIZE, &fsz));
	res("write 2000 at 0", pwrite(fd, buf, 2000, 0));
	res("SIGXFSZ not sent", sigtimedwait(&xfsz, NULL, &now));
	res("write 1 at 1024", pwrite(fd, buf, 1, 1024));
	res("SIGXFSZ pending", sigtimedwait(&xfsz, NULL, &now));
	res("RLIMIT_FSIZE back", setrlimit(RLIMIT_FSIZE, &was));
	close(fd), unlink("/tmp/ember-rlimits");
	low = (struct rlimit){0, data.rlim_max};
	res("RLIMIT_DATA 0", setrlimit(RLIMIT_DATA, &low));
	void *brk0 = sbrk(0);
	res("brk past it", brk((char *)brk0 + 8192));
	res("RLIMIT_DATA back", setrlimit(RLIMIT_DATA, &data));
	/* infinite, the hard limit a process starts with, as Linux's */
	struct rlimit inf = {RLIM_INFINITY, RLIM_INFINITY};
	res("RLIMIT_DATA infinite", setrlimit(RLIMIT_DATA, &inf));
	long size = mapped();
	printf("statm says something is mapped: %d\n", size > 0);
	low = (struct rlimit){(rlim_t)size + (1 << 20), as.rlim_max};
	res("RLIMIT_AS", setrlimit(RLIMIT_AS, &low));
	void *p = mmap(NULL, 16 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	res("16 MiB past it", p == MAP_FAILED ? -1 : 0);
	p = mmap(NULL, 256 << 10, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	res("256 KiB under it", p == MAP_FAILED ? -1 : 0);
	low = (struct rlimit){2 << 20, 1 << 20};
	res("soft above hard", setrlimit(RLIMIT_AS, &low));
	return 0;
}

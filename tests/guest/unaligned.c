/* unaligned: system calls given structures at odd addresses, and calls whose new and old values
 * share one buffer; prints what a native run prints (tests/integration/test_guest.sh). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static _Alignas(64) unsigned char buf[8192];
static char stack[16384];

/* the kernel's struct sigaction */
struct k_sigaction {
	uint64_t handler, flags, restorer, mask;
};

static void on_usr1(int sig)
{
	(void)sig;
}

int main(void)
{
	unsigned char *odd = buf + 1;
	struct timespec ts = {0, 1000};
	printf("clock_gettime %ld\n", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, odd));
	printf("gettimeofday %ld\n", syscall(SYS_gettimeofday, odd, odd + 64));
	printf("fstat %ld\n", syscall(SYS_fstat, 1, odd));
	printf("prlimit64 %ld\n", syscall(SYS_prlimit64, 0, RLIMIT_STACK, NULL, odd));
	printf("sysinfo %ld\n", syscall(SYS_sysinfo, odd));
	long rc = syscall(SYS_uname, odd);
	printf("uname %ld %s\n", rc, ((struct utsname *)(void *)odd)->sysname);
	memcpy(odd, &ts, sizeof(ts));
	printf("nanosleep %ld\n", syscall(SYS_nanosleep, odd, NULL));

	/* readv through an iovec array at an odd address */
	char a[2] = {0}, b[64] = {0};
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b) - 1}};
	memcpy(odd, iov, sizeof(iov));
	rc = syscall(SYS_readv, 0, odd, 2);
	printf("readv %ld '%.2s' '%s'\n", rc, a, b);

	/* as Linux: the new action is taken before the old one is written over it */
	struct k_sigaction k = {(uint64_t)(uintptr_t)on_usr1, 0, 0, 0}, now;
	memcpy(odd, &k, sizeof(k));
	rc = syscall(SYS_rt_sigaction, SIGUSR1, odd, odd, 8);
	memcpy(&k, odd, sizeof(k));
	syscall(SYS_rt_sigaction, SIGUSR1, NULL, &now, 8);
	printf("rt_sigaction %ld: old %s, new %s\n", rc, k.handler == 0 ? "default" : "other",
	       now.handler == (uint64_t)(uintptr_t)on_usr1 ? "installed" : "lost");

	stack_t ss = {.ss_sp = stack, .ss_flags = 0, .ss_size = sizeof(stack)}, cur;
	memcpy(odd, &ss, sizeof(ss));
	rc = syscall(SYS_sigaltstack, odd, odd);
	memcpy(&ss, odd, sizeof(ss));
	syscall(SYS_sigaltstack, NULL, &cur);
	printf("sigaltstack %ld: old %s, new %s\n", rc, ss.ss_flags & SS_DISABLE ? "off" : "on",
	       cur.ss_sp == stack ? "installed" : "lost");
	return 0;
}

/* pt_signal: handlers for a fault (left by siglongjmp), raise, pthread_kill and an itimer. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

#include "req.h"

static sigjmp_buf jb;
static void *volatile fault_addr;
static volatile sig_atomic_t got_usr1, got_alrm;
static __thread int is_target;
static atomic_int target_ready, usr2_where; /* 1: in the target thread, 2: elsewhere */

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	fault_addr = si->si_addr;
	siglongjmp(jb, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	atomic_store(&usr2_where, is_target ? 1 : 2);
}

static void on_alrm(int sig)
{
	(void)sig;
	got_alrm = 1;
}

static int handle(int sig, void (*fn)(int), void (*act)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (act) {
		sa.sa_sigaction = act;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = fn;
	}
	return sigaction(sig, &sa, NULL);
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static void *target(void *arg)
{
	(void)arg;
	is_target = 1;
	atomic_store(&target_ready, 1);
	while (!atomic_load(&usr2_where))
		nap_ms(1);
	return NULL;
}

/* bad_read: reads the PROT_NONE page at p; 1 when the SIGSEGV came and was recovered there */
static int bad_read(volatile char *p)
{
	fault_addr = NULL;
	if (sigsetjmp(jb, 1) == 0) {
		(void)*p;
		return 0;
	}
	return fault_addr == (void *)p;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(void)
{
	char req[256];
	volatile char *page;
	pthread_t t;
	sigset_t alrm, old;
	struct itimerval it = {{0, 0}, {0, 20000}};
	struct timespec t0;
	int rc, first, second;

	/* the handlers and the guard page belong to the initialisation (the snapshot) */
	if (handle(SIGSEGV, NULL, on_segv) || handle(SIGUSR1, on_usr1, NULL) ||
	    handle(SIGUSR2, on_usr2, NULL) || handle(SIGALRM, on_alrm, NULL))
		return 1;
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	if (read_req(req, sizeof(req)) < 0)
		return 1;
	printf("pt_signal: request \"%s\"\n", req);

	first = bad_read(page);
	second = bad_read(page + 100); /* the mask was restored by siglongjmp: it comes again */
	printf("SIGSEGV from a bad read recovered at the faulting address: %s\n",
	       first ? "yes" : "no");
	printf("a second one recovered too: %s\n", second ? "yes" : "no");

	raise(SIGUSR1);
	printf("SIGUSR1 from raise handled before raise returned: %s\n", got_usr1 ? "yes" : "no");

	rc = pthread_create(&t, NULL, target, NULL);
	if (rc) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return 1;
	}
	while (!atomic_load(&target_ready))
		nap_ms(1);
	rc = pthread_kill(t, SIGUSR2);
	pthread_join(t, NULL);
	printf("SIGUSR2 from pthread_kill handled in the target thread: %s\n",
	       !rc && atomic_load(&usr2_where) == 1 ? "yes" : "no");

	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, &old);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (setitimer(ITIMER_REAL, &it, NULL))
		return 1;
	while (!got_alrm)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("SIGALRM from setitimer, at least 20 ms later: %s\n",
	       ms_since(&t0) >= 20 ? "yes" : "no");
	return 0;
}

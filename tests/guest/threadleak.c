/* threadleak: threads, waiters, signal state, timers and a thread's writes of one invocation
 * must not reach the next one; each invocation says what it found, then leaves all of it. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* musl-gcc has no kernel headers: the two futex operations used */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

static atomic_int alive;    /* a spinner left running would keep counting */
static int waitword;	    /* a thread left waiting on it would be woken */
static volatile int marker; /* a thread's write */

static void *spin(void *arg)
{
	(void)arg;
	for (;;)
		atomic_fetch_add(&alive, 1);
	return NULL;
}

static void *wait_forever(void *arg)
{
	(void)arg;
	for (;;)
		syscall(SYS_futex, &waitword, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

static void *write_marker(void *arg)
{
	(void)arg;
	marker = 42;
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
}

int main(void)
{
	char req[64];
	if (read(0, req, sizeof(req)) < 0)
		return 1;
	/* what this invocation finds, before it changes anything */
	struct sigaction sa;
	sigset_t mask;
	sigaction(SIGUSR1, NULL, &sa);
	sigprocmask(SIG_BLOCK, NULL, &mask);
	printf("handler %s, SIGUSR2 %s, marker %d\n", sa.sa_handler == SIG_DFL ? "default" : "set",
	       sigismember(&mask, SIGUSR2) ? "blocked" : "open", marker);
	int before = atomic_load(&alive);
	struct timespec nap = {0, 30 * 1000 * 1000};
	nanosleep(&nap, NULL);
	printf("a spinner ran: %s\n", atomic_load(&alive) != before ? "yes" : "no");
	long woken = syscall(SYS_futex, &waitword, FUTEX_WAKE_PRIVATE, 100, NULL, NULL, 0);
	printf("waiters woken: %ld\n", woken);
	/* and what it leaves behind (SIGUSR2 blocked first: every thread inherits the mask, so
	 * the signal stays pending, as natively) */
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	pthread_t t;
	pthread_create(&t, NULL, spin, NULL);
	pthread_create(&t, NULL, wait_forever, NULL);
	pthread_create(&t, NULL, write_marker, NULL);
	pthread_join(t, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	kill(getpid(), SIGUSR2); /* pending: would kill the next invocation if it stayed */
	struct itimerval it = {{0, 0}, {0, 20 * 1000}};
	setitimer(ITIMER_REAL, &it, NULL); /* SIGALRM: would kill the next one too */
	printf("left: a spinner, a waiter, a handler, a blocked SIGUSR2 pending, a timer, "
	       "marker %d\n",
	       marker);
	fflush(stdout);
	_exit(0);
}

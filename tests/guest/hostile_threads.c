/* Threads and signals as a hostile or careless program uses them, one case per mode (argv[1]).
 * Most modes read their request first, so that what they do happens in each invocation, after
 * the snapshot point; the snap* modes set up threads before it, so that every invocation starts
 * from their state. Most print only what Linux would make them print, to compare with a native
 * run (tests/integration/test_threads.sh says which may differ and how). */
#include <errno.h>
#include <sched.h>
#include <fenv.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* linux/futex.h, which musl-gcc does not see */
#define FUTEX_WAIT	   0
#define FUTEX_WAKE	   1
#define FUTEX_CMP_REQUEUE  4
#define FUTEX_WAKE_OP	   5
#define FUTEX_WAIT_BITSET  9
#define FUTEX_WAKE_BITSET  10
#define FUTEX_LOCK_PI2	   13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)
#define FUTEX_OP_SET	   0
#define FUTEX_OP_ADD	   1
#define FUTEX_OP_CMP_EQ	   0
#define FUTEX_OP_CMP_GT	   4
#define FUTEX_OP(op, oparg, cmp, cmparg)                                                           \
	((((op)&0xf) << 28) | (((cmp)&0xf) << 24) | (((oparg)&0xfff) << 12) | ((cmparg)&0xfff))

#define CLONE_THREAD_FLAGS                                                                         \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM)
/* unmapped in a virtine (above its memory) and natively (below a native mmap base) */
#define UNMAPPED 0x100000000ULL

/* clone(flags, stack): the child runs fn(arg) on stack, then exit(fn's value); the parent gets
 * the child's tid or -errno. stack must be writable (fn and arg go on it first). */
long raw_clone(unsigned long flags, void *stack, int (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl raw_clone\n"
	"raw_clone:\n"
	"	and $-16, %rsi\n"
	"	sub $16, %rsi\n"
	"	mov %rdx, 0(%rsi)\n"
	"	mov %rcx, 8(%rsi)\n"
	"	xor %edx, %edx\n"
	"	xor %r10d, %r10d\n"
	"	xor %r8d, %r8d\n"
	"	mov $56, %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	pop %rax\n"
	"	pop %rdi\n"
	"	call *%rax\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n"
	"	syscall\n"
	"	ud2\n"
	"1:	ret\n");

/* clone(flags, stack) whose child pushes one word on that stack and exits: the stack is the
 * program's to choose, bad or not */
long bare_clone(unsigned long flags, unsigned long stack);
__asm__(".text\n"
	".globl bare_clone\n"
	"bare_clone:\n"
	"	xor %edx, %edx\n"
	"	xor %r10d, %r10d\n"
	"	xor %r8d, %r8d\n"
	"	mov $56, %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	push %rax\n"
	"	xor %edi, %edi\n"
	"	mov $60, %eax\n"
	"	syscall\n"
	"	ud2\n"
	"1:	ret\n");

/* rt_sigreturn with rsp at frame + 8 (the handler's ret popped pretcode): the frame is the
 * program's to make */
void bare_sigreturn(void *frame);
__asm__(".text\n"
	".globl bare_sigreturn\n"
	"bare_sigreturn:\n"
	"	lea 8(%rdi), %rsp\n"
	"	mov $15, %eax\n"
	"	syscall\n"
	"	ud2\n");

static long futex(void *addr, int op, uint32_t val, const void *ts, void *addr2, uint32_t val3)
{
	return syscall(SYS_futex, addr, op, val, ts, addr2, val3);
}

static const char *err_name(long rc)
{
	if (rc >= 0)
		return "ok";
	switch (errno) {
	case EAGAIN:
		return "EAGAIN";
	case EFAULT:
		return "EFAULT";
	case EINVAL:
		return "EINVAL";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EINTR:
		return "EINTR";
	case ENOSYS:
		return "ENOSYS";
	case EPERM:
		return "EPERM";
	default:
		return strerror(errno);
	}
}

static void show(const char *what, long rc)
{
	if (rc >= 0)
		printf("%s: %ld\n", what, rc);
	else
		printf("%s: %s\n", what, err_name(rc));
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	handled++;
}

static void handle(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static uint32_t sleeper_word;

static int sleeper(void *arg)
{
	(void)arg;
	for (;;)
		futex(&sleeper_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return 0;
}

/* sigsuspend with a signal already pending that the new mask unblocks: it must return at once,
 * after the handler (the classic block, raise, sigsuspend), which runs with the signal blocked;
 * the mask from before the call is back after it */
static volatile int blocked_in_handler = -1;

static void on_suspend_signal(int sig)
{
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	blocked_in_handler = sigismember(&now, sig);
	handled++;
}

static int m_sigsuspend(void)
{
	sigset_t block, none, after;
	handle(SIGUSR1, on_suspend_signal, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &block, NULL);
	kill(getpid(), SIGUSR1);
	printf("pending, blocked: handled %d\n", (int)handled);
	long rc = sigsuspend(&none);
	sigprocmask(SIG_BLOCK, NULL, &after);
	printf("sigsuspend: %s, handled %d, blocked in the handler %d, after %d\n", err_name(rc),
	       (int)handled, blocked_in_handler, sigismember(&after, SIGUSR1));
	return 0;
}

/* a signal taken as sigtimedwait's result, not by its handler: one pending, none (a zero and a
 * short timeout), one that another thread sends while it waits (the awaited signal unblocked for
 * the wait only), and another signal's handler ending the wait with EINTR */
static void *send_later(void *arg)
{
	struct timespec ms20 = {0, 20000000};
	nanosleep(&ms20, NULL);
	kill(getpid(), (int)(intptr_t)arg);
	return NULL;
}

static int m_sigwait(void)
{
	sigset_t usr1, now;
	siginfo_t info;
	pthread_t th;
	struct timespec zero = {0, 0}, ms50 = {0, 50000000}, s5 = {5, 0};
	int sig = 0;
	handle(SIGUSR1, on_signal, 0);
	handle(SIGUSR2, on_signal, 0);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	raise(SIGUSR1);
	show("sigwaitinfo, one pending", sigwaitinfo(&usr1, &info));
	printf("si_signo %d, si_code %d\n", info.si_signo, info.si_code);
	show("sigtimedwait, none, zero timeout", sigtimedwait(&usr1, &info, &zero));
	show("sigtimedwait, none, 50 ms", sigtimedwait(&usr1, &info, &ms50));
	pthread_create(&th, NULL, send_later, (void *)(intptr_t)SIGUSR1);
	show("sigwait, sent while it waits", sigwait(&usr1, &sig));
	pthread_join(th, NULL);
	printf("its signal %d, handled %d\n", sig, (int)handled);
	pthread_create(&th, NULL, send_later, (void *)(intptr_t)SIGUSR2);
	/* the call itself: libc's sigtimedwait makes it again after EINTR */
	show("rt_sigtimedwait, another signal handled",
	     syscall(SYS_rt_sigtimedwait, &usr1, NULL, &s5, 8));
	pthread_join(th, NULL);
	sigprocmask(SIG_BLOCK, NULL, &now);
	printf("handled %d, SIGUSR1 still blocked %d\n", (int)handled, sigismember(&now, SIGUSR1));
	return 0;
}

/* clone in a loop: EAGAIN at --threads (256 with the first), never a crash or a hang */
static int m_bomb(void)
{
	static char stacks[300][1024] __attribute__((aligned(16)));
	int n = 0;
	long rc = 0;
	for (; n < 300; n++) {
		rc = raw_clone(CLONE_THREAD_FLAGS, stacks[n] + sizeof(stacks[n]), sleeper, NULL);
		if (rc < 0)
			break;
	}
	printf("threads made: %d, then %s\n", n, rc < 0 ? strerror((int)-rc) : "no error");
	fflush(stdout);
	_exit(0);
}

static const uint32_t ro_word = 7;

/* futex calls on bad addresses and with bad arguments: each fails as Linux's would */
static int m_futex(void)
{
	static uint32_t w = 7, w2;
	uint32_t *odd = (uint32_t *)((char *)&w2 + 1);
	struct timespec ms = {0, 1000000}, bad = {0, 1000000000L};
	show("wait unmapped", futex((void *)UNMAPPED, FUTEX_WAIT, 7, NULL, NULL, 0));
	show("wait misaligned", futex(odd, FUTEX_WAIT, 0, NULL, NULL, 0));
	show("wake misaligned", futex(odd, FUTEX_WAKE, 1, NULL, NULL, 0));
	show("wait read-only, other value", futex((void *)&ro_word, FUTEX_WAIT, 8, NULL, NULL, 0));
	show("wait read-only, 1 ms", futex((void *)&ro_word, FUTEX_WAIT, 7, &ms, NULL, 0));
	show("wait bad timeout", futex(&w, FUTEX_WAIT, 7, &bad, NULL, 0));
	show("wait unmapped timeout", futex(&w, FUTEX_WAIT, 7, (void *)UNMAPPED, NULL, 0));
	show("wait_bitset 0", futex(&w, FUTEX_WAIT_BITSET, 7, NULL, NULL, 0));
	show("wake_bitset 0", futex(&w, FUTEX_WAKE_BITSET, 1, NULL, NULL, 0));
	show("wake nobody", futex(&w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0));
	show("cmp_requeue other value", futex(&w, FUTEX_CMP_REQUEUE, 1, (void *)1, &w2, 8));
	show("cmp_requeue unmapped",
	     futex((void *)UNMAPPED, FUTEX_CMP_REQUEUE, 1, (void *)1, &w2, 7));
	show("wake_op read-only", futex(&w, FUTEX_WAKE_OP, 1, (void *)1, (void *)&ro_word,
					FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_EQ, 0)));
	show("wake_op unmapped", futex(&w, FUTEX_WAKE_OP, 1, (void *)1, (void *)UNMAPPED,
				       FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_EQ, 0)));
	/* FUTEX_OP's oparg and cmparg are signed 12-bit numbers: add -1, compare with -1 */
	w2 = 10;
	show("wake_op add -1", futex(&w, FUTEX_WAKE_OP, 1, (void *)1, &w2,
				     FUTEX_OP(FUTEX_OP_ADD, 0xfff, FUTEX_OP_CMP_GT, 0xfff)));
	printf("wake_op's word: %u\n", w2);
	show("wake_op bad op",
	     futex(&w, FUTEX_WAKE_OP, 1, (void *)1, &w2, FUTEX_OP(6, 0, FUTEX_OP_CMP_EQ, 0)));
	printf("wake_op's word: %u\n", w2);
	show("lock_pi", futex(&w, FUTEX_LOCK_PI2 + 100, 0, NULL, NULL, 0));
	return 0;
}

/* a waiter woken while a handler with SA_RESTART interrupts it goes on waiting (the call made
 * again); without SA_RESTART it returns EINTR */
static uint32_t rs_word;
static long rs_result;

static int rs_waiter(void *arg)
{
	(void)arg;
	rs_result = futex(&rs_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	rs_result = rs_result < 0 ? -errno : rs_result;
	__atomic_store_n(&rs_word, 2, __ATOMIC_SEQ_CST);
	futex(&rs_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

static int m_restart(int flags, const char *name)
{
	static char stack[65536] __attribute__((aligned(16)));
	handle(SIGUSR1, on_signal, flags);
	rs_word = 0;
	handled = 0;
	long tid = raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), rs_waiter, NULL);
	struct timespec d = {0, 50000000};
	nanosleep(&d, NULL);
	syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
	nanosleep(&d, NULL);
	if (__atomic_load_n(&rs_word, __ATOMIC_SEQ_CST) == 0) {
		__atomic_store_n(&rs_word, 1, __ATOMIC_SEQ_CST);
		futex(&rs_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	while (__atomic_load_n(&rs_word, __ATOMIC_SEQ_CST) != 2)
		futex(&rs_word, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
	errno = (int)-rs_result;
	printf("%s: handled %d, the wait returned %s\n", name, (int)handled,
	       err_name(rs_result < 0 ? -1 : rs_result));
	return 0;
}

/* a garbage frame given to rt_sigreturn: the process dies of SIGSEGV, as on Linux, and the
 * machine goes on */
static int m_sigreturn(const char *how)
{
	static uint64_t frame[64] __attribute__((aligned(16)));
	/* struct rt_sigframe: pretcode, then ucontext (uc_flags, uc_link, uc_stack 3 words),
	 * then sigcontext: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags, ... */
	uint64_t *sc = &frame[1 + 5];
	printf("sigreturn %s\n", how);
	fflush(stdout);
	memset(frame, 0, sizeof(frame));
	sc[15] = (uint64_t)(frame + 32); /* rsp */
	sc[17] = 0x202;			 /* eflags */
	if (!strcmp(how, "noncanonical"))
		sc[16] = 0x8000000000000000ULL;
	else if (!strcmp(how, "kernel"))
		sc[16] = 0xffffffff81000000ULL;
	else if (!strcmp(how, "runtime"))
		sc[16] = 0x100000; /* the in-guest runtime's entry, natively unmapped */
	else if (!strcmp(how, "isr"))
		sc[16] = 0x80000; /* Ember's exception handlers, natively unmapped */
	else if (!strcmp(how, "unmapped"))
		bare_sigreturn((void *)UNMAPPED);
	bare_sigreturn(frame);
	return 1;
}

/* a SIGSEGV handler that returns to the faulting load: Linux faults forever, Ember until the
 * invocation's timeout; the next invocation starts afresh */
static void segv_return(int sig)
{
	(void)sig;
	handled++;
}

static int m_segvloop(void)
{
	printf("handled before: %d\n", (int)handled);
	fflush(stdout);
	handle(SIGSEGV, segv_return, 0);
	return *(volatile int *)UNMAPPED;
}

/* a SIGSEGV handler (SA_NODEFER) that faults itself: frames pile up until the stack is gone,
 * then the process dies of SIGSEGV */
static void segv_again(int sig)
{
	(void)sig;
	handled++;
	(void)*(volatile int *)UNMAPPED;
}

static int m_segvnest(void)
{
	handle(SIGSEGV, segv_again, SA_NODEFER);
	return *(volatile int *)UNMAPPED;
}

/* a thread that spins forever while the main thread waits for it: the invocation times out,
 * and the next one has no trace of it (the same tid again) */
static int spin(void *arg)
{
	(void)arg;
	for (;;)
		__asm__ volatile("" ::: "memory");
	return 0;
}

static int m_spin(void)
{
	static char stack[16384] __attribute__((aligned(16)));
	long tid = raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), spin, NULL);
	printf("spinner's tid %ld\n", tid);
	fflush(stdout);
	for (;;)
		futex(&sleeper_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return 0;
}

/* clone with a stack the program must not have: 0 (the parent's own, on Linux), the in-guest
 * runtime's code or its per-vCPU areas, a non-canonical or unmapped address */
static int m_badstack(const char *how)
{
	unsigned long sp = strtoul(how, NULL, 0);
	long rc = bare_clone(CLONE_THREAD_FLAGS, sp);
	struct timespec d = {0, 20000000};
	nanosleep(&d, NULL);
	printf("clone with stack %s: %s\n", how, rc > 0 ? "made" : err_name(rc));
	return 0;
}

/* what one invocation leaves must not reach the next: a waiter, a handler, a mask, a pending
 * signal, a timer, an alternate stack */
static uint32_t left_word;

static int m_leftover(void)
{
	static char stack[16384] __attribute__((aligned(16)));
	static char alt[16384];
	struct sigaction old;
	sigset_t mask, pend;
	struct itimerval it;
	stack_t ss;
	sigaction(SIGUSR2, NULL, &old);
	sigprocmask(SIG_BLOCK, NULL, &mask);
	sigpending(&pend);
	getitimer(ITIMER_REAL, &it);
	sigaltstack(NULL, &ss);
	printf("waiters woken: %ld\n",
	       futex(&left_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0));
	printf("SIGUSR2 handler: %s\n", old.sa_handler == SIG_DFL ? "default" : "set");
	printf("SIGUSR1 blocked: %d, pending: %d\n", sigismember(&mask, SIGUSR1),
	       sigismember(&pend, SIGUSR1));
	printf("timer armed: %d\n", it.it_value.tv_sec || it.it_value.tv_usec);
	printf("altstack: %s\n", ss.ss_flags & SS_DISABLE ? "disabled" : "set");
	fflush(stdout);
	handle(SIGUSR2, on_signal, 0);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	kill(getpid(), SIGUSR1);
	it = (struct itimerval){{0, 0}, {30, 0}};
	setitimer(ITIMER_REAL, &it, NULL);
	ss = (stack_t){alt, 0, sizeof(alt)};
	sigaltstack(&ss, NULL);
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), sleeper, NULL);
	_exit(0);
}

/* signals sent, one at a time, to a thread that spends its time inside the in-guest runtime
 * (clock_gettime): each must reach its handler */
static volatile int rt_acked;
static volatile int rt_stop;

static void rt_ack(int sig)
{
	(void)sig;
	rt_acked++;
}

static int rt_busy(void *arg)
{
	(void)arg;
	struct timespec ts;
	while (!rt_stop)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return 0;
}

static int m_rtsignals(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	handle(SIGUSR1, rt_ack, 0);
	long tid = raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), rt_busy, NULL);
	int sent = 0;
	for (; sent < 200; sent++) {
		int before = rt_acked;
		syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
		while (rt_acked == before)
			sched_yield();
	}
	rt_stop = 1;
	printf("signals sent %d, handled %d\n", sent, (int)rt_acked);
	return 0;
}

/* the main thread waits for another with sched_yield: the other must get the vCPU (one only) */
static volatile int yield_flag;

static int set_flag(void *arg)
{
	(void)arg;
	yield_flag = 1;
	return 0;
}

static int m_yield(void)
{
	static char stack[16384] __attribute__((aligned(16)));
	long yields = 0;
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), set_flag, NULL);
	while (!yield_flag && yields < 100000000)
		sched_yield(), yields++;
	printf("the other thread ran: %s\n", yield_flag ? "yes" : "no");
	return 0;
}

/* threads (two, or argv[2]) that never leave their loops but by preemption: each must count
 * exactly its own increments, as if never interrupted (a thread taken off its vCPU goes on where
 * it was, on whichever vCPU takes it next) */
#define COUNT	     30000000L
#define COUNTERS_MAX 8
static volatile long counters[COUNTERS_MAX];
static uint32_t counted;

static int count_up(void *arg)
{
	volatile long *c = arg;
	double d = (double)(c - counters); /* in a vector register: the FPU state follows too */
	for (long i = 0; i < COUNT; i++) {
		(*c)++;
		d += 1.0;
	}
	if (d != (double)(COUNT + (c - counters)))
		*c = -1;
	__atomic_add_fetch(&counted, 1, __ATOMIC_SEQ_CST);
	futex(&counted, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

static int m_preempt(const char *arg)
{
	static char stacks[COUNTERS_MAX][16384] __attribute__((aligned(16)));
	int n = *arg ? atoi(arg) : 2, right = 0;
	n = n < 1 ? 1 : n > COUNTERS_MAX ? COUNTERS_MAX : n;
	for (int i = 0; i < n; i++)
		raw_clone(CLONE_THREAD_FLAGS, stacks[i] + sizeof(stacks[i]), count_up,
			  (void *)&counters[i]);
	for (uint32_t k; (k = __atomic_load_n(&counted, __ATOMIC_SEQ_CST)) < (uint32_t)n;)
		futex(&counted, FUTEX_WAIT_PRIVATE, k, NULL, NULL, 0);
	for (int i = 0; i < n; i++)
		right += counters[i] == COUNT;
	printf("threads that counted exactly %ld: %d of %d\n", COUNT, right, n);
	return 0;
}

/* FUTEX_WAKE_OP adds to a word while another thread adds to it with atomic instructions (on
 * another vCPU with --cpus 2) until it is done: no addition may be lost */
#define OPS 3000L
static uint32_t race_word, race_dummy, race_done, race_ops_done;
static long race_adds;

static int add_atomic(void *arg)
{
	(void)arg;
	long n = 0;
	while (!__atomic_load_n(&race_ops_done, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&race_word, 1, __ATOMIC_SEQ_CST);
		n++;
	}
	race_adds = n;
	__atomic_add_fetch(&race_done, 1, __ATOMIC_SEQ_CST);
	futex(&race_done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

static int add_wake_op(void *arg)
{
	(void)arg;
	for (long i = 0; i < OPS; i++)
		futex(&race_dummy, FUTEX_WAKE_OP, 0, (void *)0, &race_word,
		      FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0));
	__atomic_store_n(&race_ops_done, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&race_done, 1, __ATOMIC_SEQ_CST);
	futex(&race_done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

static int m_wakeop_race(void)
{
	static char stacks[2][16384] __attribute__((aligned(16)));
	raw_clone(CLONE_THREAD_FLAGS, stacks[0] + sizeof(stacks[0]), add_atomic, NULL);
	raw_clone(CLONE_THREAD_FLAGS, stacks[1] + sizeof(stacks[1]), add_wake_op, NULL);
	for (uint32_t n; (n = __atomic_load_n(&race_done, __ATOMIC_SEQ_CST)) < 2;)
		futex(&race_done, FUTEX_WAIT_PRIVATE, n, NULL, NULL, 0);
	printf("additions lost: %s\n", race_adds + OPS - (long)race_word ? "some" : "none");
	fprintf(stderr, "adds %ld, lost %ld\n", race_adds, race_adds + OPS - (long)race_word);
	return 0;
}

/* a waiter woken just before the snapshot point, which it reaches before the waiter runs again:
 * in every invocation its wait returns what a futex wait returns (woken, or EAGAIN as the word
 * changed), never the number of the call */
static uint32_t sw_word, sw_done;
static long sw_result;

static int sw_waiter(void *arg)
{
	(void)arg;
	long rc = futex(&sw_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	sw_result = rc < 0 ? -errno : rc;
	__atomic_store_n(&sw_done, 1, __ATOMIC_SEQ_CST);
	futex(&sw_done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

static void snapwake_before(void)
{
	static char stack[16384] __attribute__((aligned(16)));
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), sw_waiter, NULL);
	struct timespec d = {0, 20000000};
	nanosleep(&d, NULL);
	__atomic_store_n(&sw_word, 1, __ATOMIC_SEQ_CST);
	futex(&sw_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static int m_snapwake(void)
{
	while (!__atomic_load_n(&sw_done, __ATOMIC_SEQ_CST))
		futex(&sw_done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	printf("the woken wait returned %s\n",
	       sw_result == 0 || sw_result == -EAGAIN ? "0 or EAGAIN" : "something else");
	fprintf(stderr, "the woken wait returned %ld\n", sw_result);
	return 0;
}

/* a thread making calls the host serves, on another vCPU (--cpus 2), as the snapshot is taken:
 * each of its calls returns what the call returns, in every invocation, never its number */
static volatile int sc_stop, sc_bad;
static uint32_t sc_word, sc_started;

static int sc_caller(void *arg)
{
	(void)arg;
	__atomic_store_n(&sc_started, 1, __ATOMIC_SEQ_CST);
	while (!sc_stop)
		if (futex(&sc_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) != 0)
			sc_bad = 1;
	return 0;
}

static void snapcall_before(void)
{
	static char stack[16384] __attribute__((aligned(16)));
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), sc_caller, NULL);
	while (!__atomic_load_n(&sc_started, __ATOMIC_SEQ_CST))
		sched_yield();
}

static int m_snapcall(void)
{
	struct timespec d = {0, 20000000};
	nanosleep(&d, NULL);
	sc_stop = 1;
	printf("calls that returned something else: %s\n", sc_bad ? "some" : "none");
	return 0;
}

/* the snapshot point reached by another thread (on vCPU 1 with --cpus 2) while the main thread
 * waits, its state held by vCPU 0: in every invocation the main thread's wait returns what a
 * futex wait returns */
static uint32_t sv_done;
static volatile int sv_go;

static void spin_ms(long ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static int sv_reader(void *arg)
{
	(void)arg;
	char req[64];
	spin_ms(30);			       /* the main thread waits meanwhile */
	ssize_t n = read(0, req, sizeof(req)); /* the snapshot point */
	printf("request read by another thread: %s\n", n > 0 ? "yes" : "no");
	__atomic_store_n(&sv_done, 1, __ATOMIC_SEQ_CST);
	futex(&sv_done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

static int m_snapwait(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), sv_reader, NULL);
	spin_ms(10); /* another vCPU takes the reader meanwhile */
	long rc = futex(&sv_done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	long first = rc < 0 ? -errno : rc;
	while (!__atomic_load_n(&sv_done, __ATOMIC_SEQ_CST))
		futex(&sv_done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	printf("the main thread's wait returned %s\n",
	       first == 0 || first == -EAGAIN || first == -EINTR ? "0, EAGAIN or EINTR"
								 : "something else");
	fprintf(stderr, "the main thread's wait returned %ld\n", first);
	return 0;
}

/* the snapshot point reached by another thread (on vCPU 1 with --cpus 2) while the main thread,
 * on vCPU 0, is inside the in-guest runtime (its clock), its rounding mode set: in every
 * invocation it still has that rounding mode, though each one ends with another */
static volatile int sf_done;

static int sf_reader(void *arg)
{
	(void)arg;
	char req[64];
	struct timespec d = {0, 30000000};
	nanosleep(&d, NULL);		       /* the main thread reads its clock meanwhile */
	ssize_t n = read(0, req, sizeof(req)); /* the snapshot point */
	(void)n;
	sf_done = 1;
	return 0;
}

static int m_snapfpu(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	struct timespec ts;
	fesetround(FE_TOWARDZERO);
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), sf_reader, NULL);
	while (!sf_done)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("rounding toward zero still: %s\n", fegetround() == FE_TOWARDZERO ? "yes" : "no");
	fesetround(FE_UPWARD); /* what the vCPU holds at the end: not the snapshot's */
	return 0;
}

/* the request read by a thread on vCPU 1 (with --cpus 2) that is the only one left: the main
 * thread has ended (exit, not exit_group) */
static int sl_reader(void *arg)
{
	(void)arg;
	char req[64];
	spin_ms(60); /* on the other vCPU while the main thread spins, then alone */
	ssize_t n = read(0, req, sizeof(req)); /* the snapshot point */
	printf("request read by the last thread: %s\n", n > 0 ? "yes" : "no");
	fflush(stdout);
	syscall(SYS_exit_group, 0);
	return 0;
}

static int m_snaplone(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), sl_reader, NULL);
	spin_ms(20);
	syscall(SYS_exit, 0);
	return 1;
}

/* what a handler sees: its mask (sa_mask and the signal, unless SA_NODEFER), its siginfo, the
 * alternate stack with SA_ONSTACK; SA_RESETHAND; the mask back after it */
static volatile int in_usr1, in_usr2, nodefer_self, on_alt, alt_flags, info_ok;
static char altstack_mem[65536];

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	sigset_t now;
	stack_t ss;
	char here;
	sigprocmask(SIG_BLOCK, NULL, &now);
	in_usr1 = sigismember(&now, SIGUSR1);
	in_usr2 = sigismember(&now, SIGUSR2);
	on_alt = &here >= altstack_mem && &here < altstack_mem + sizeof(altstack_mem);
	sigaltstack(NULL, &ss);
	alt_flags = ss.ss_flags;
	info_ok = si->si_signo == sig && si->si_code == SI_TKILL && si->si_pid == getpid();
}

static void on_nodefer(int sig)
{
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	nodefer_self = sigismember(&now, sig);
}

static int m_sigmasks(void)
{
	struct sigaction sa, old;
	sigset_t now;
	stack_t ss = {altstack_mem, 0, sizeof(altstack_mem)};
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	sigaltstack(&ss, NULL);
	raise(SIGUSR1);
	sigaction(SIGUSR1, NULL, &old);
	sigprocmask(SIG_BLOCK, NULL, &now);
	sigaltstack(NULL, &ss);
	printf("in the handler: SIGUSR1 blocked %d, SIGUSR2 blocked %d, on the altstack %d, "
	       "SS_ONSTACK %d, siginfo right %d\n",
	       in_usr1, in_usr2, on_alt, (alt_flags & SS_ONSTACK) != 0, info_ok);
	printf("after it: handler reset %d, SIGUSR1 blocked %d, SIGUSR2 blocked %d, "
	       "altstack flags %d\n",
	       old.sa_handler == SIG_DFL, sigismember(&now, SIGUSR1), sigismember(&now, SIGUSR2),
	       ss.ss_flags);
	handle(SIGUSR2, on_nodefer, SA_NODEFER);
	raise(SIGUSR2);
	printf("SA_NODEFER: the signal blocked in its handler %d\n", nodefer_self);
	return 0;
}

/* a POSIX timer on CLOCK_MONOTONIC set for an absolute time: it fires then, not at once */
static int m_timerabs(void)
{
	struct sigevent ev;
	struct itimerspec its;
	struct timespec now, d = {0, 100000000};
	timer_t tm;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	handle(SIGUSR1, on_signal, 0);
	if (timer_create(CLOCK_MONOTONIC, &ev, &tm))
		return printf("timer_create: %s\n", err_name(-1)), 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = now.tv_sec + (now.tv_nsec >= 600000000L);
	its.it_value.tv_nsec = (now.tv_nsec + 400000000L) % 1000000000L;
	timer_settime(tm, TIMER_ABSTIME, &its, NULL);
	nanosleep(&d, NULL);
	int early = handled;
	for (int i = 0; i < 20 && !handled; i++)
		nanosleep(&d, NULL);
	printf("fired within 100 ms: %d, fired later: %d\n", early, (int)handled - early);
	return 0;
}

/* a thread taking exceptions in a loop (int3, its SIGTRAP handler returns) on vCPU 1 as the
 * main thread reads the request: in every invocation it goes on taking them */
static volatile long st_traps;
static uint32_t st_started;

static void on_trap(int sig)
{
	(void)sig;
	st_traps++;
}

static int st_trapper(void *arg)
{
	(void)arg;
	__atomic_store_n(&st_started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		__asm__ volatile("int3");
	return 0;
}

static void snaptrap_before(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	handle(SIGTRAP, on_trap, 0);
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), st_trapper, NULL);
	while (!__atomic_load_n(&st_started, __ATOMIC_SEQ_CST))
		sched_yield();
	spin_ms(20);
}

static int m_snaptrap(void)
{
	long before = st_traps;
	for (int i = 0; i < 200 && st_traps < before + 10; i++)
		spin_ms(5);
	printf("the trapping thread went on: %s\n", st_traps >= before + 10 ? "yes" : "no");
	fflush(stdout);
	_exit(0);
}

/* a signal to a waiter (SA_RESTART), then at once a wake that leaves the word as it was: on one
 * CPU the waiter has not run in between, so it waits still, as on Linux: the wake counts it,
 * its wait returns 0, and the handler runs */
static uint32_t ws_word;
static volatile long ws_result = 99;
static volatile int ws_tid;

static int ws_waiter(void *arg)
{
	(void)arg;
	ws_tid = (int)syscall(SYS_gettid);
	long rc = futex(&ws_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	ws_result = rc < 0 ? -errno : rc;
	return 0;
}

static int m_wakesig(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	struct timespec d = {0, 50000000};
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one); /* natively: one CPU, as a virtine's one vCPU */
	handle(SIGUSR1, on_signal, SA_RESTART);
	raw_clone(CLONE_THREAD_FLAGS, stack + sizeof(stack), ws_waiter, NULL);
	nanosleep(&d, NULL);
	syscall(SYS_tgkill, getpid(), ws_tid, SIGUSR1);
	long woke = futex(&ws_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	nanosleep(&d, NULL);
	if (ws_result == 99) /* it waits again: the wake was lost */
		futex(&ws_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), nanosleep(&d, NULL);
	printf("the wake counted %ld, the wait returned %ld, handled %d\n", woke, ws_result,
	       (int)handled);
	return 0;
}

/* SIGALRM from a timer 100 ms on, its handler with SA_RESTART, while the only thread waits on a
 * futex: a wait with a timeout fails with EINTR (Linux restarts it only through restart_syscall,
 * which a handler turns into EINTR), one without is made again, and finds the word the handler
 * changed (EAGAIN) */
static uint32_t tr_word;

static void on_alarm_set(int sig)
{
	(void)sig;
	handled++;
	__atomic_store_n(&tr_word, 1, __ATOMIC_SEQ_CST);
}

static int m_timedrestart(void)
{
	handle(SIGALRM, on_alarm_set, SA_RESTART);
	struct itimerval in100 = {{0, 0}, {0, 100000}};
	struct timespec five = {5, 0};
	const char *how[] = {"with a timeout", "without"};
	for (int i = 0; i < 2; i++) {
		tr_word = 0;
		handled = 0;
		setitimer(ITIMER_REAL, &in100, NULL);
		long rc = futex(&tr_word, FUTEX_WAIT_PRIVATE, 0, i ? NULL : &five, NULL, 0);
		printf("a futex wait %s, a SA_RESTART handler ran (%d): %s\n", how[i], (int)handled,
		       err_name(rc));
	}
	return 0;
}

int main(int argc, char **argv)
{
	char req[64];
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "snapwake"))
		snapwake_before();
	if (!strcmp(mode, "snapcall"))
		snapcall_before();
	if (!strcmp(mode, "snaptrap"))
		snaptrap_before();
	if (!strcmp(mode, "snapwait")) /* the request is another thread's to read */
		return m_snapwait();
	if (!strcmp(mode, "snaplone"))
		return m_snaplone();
	if (!strcmp(mode, "snapfpu"))
		return m_snapfpu();
	ssize_t n = read(0, req, sizeof(req));
	(void)n;
	const char *arg = argc > 2 ? argv[2] : "";
	setvbuf(stdout, NULL, _IOFBF, 4096);
	if (!strcmp(mode, "sigsuspend"))
		return m_sigsuspend();
	if (!strcmp(mode, "sigwait"))
		return m_sigwait();
	if (!strcmp(mode, "bomb"))
		return m_bomb();
	if (!strcmp(mode, "futex"))
		return m_futex();
	if (!strcmp(mode, "restart"))
		return m_restart(SA_RESTART, "SA_RESTART");
	if (!strcmp(mode, "norestart"))
		return m_restart(0, "no SA_RESTART");
	if (!strcmp(mode, "sigreturn"))
		return m_sigreturn(arg);
	if (!strcmp(mode, "segvloop"))
		return m_segvloop();
	if (!strcmp(mode, "segvnest"))
		return m_segvnest();
	if (!strcmp(mode, "spin"))
		return m_spin();
	if (!strcmp(mode, "badstack"))
		return m_badstack(arg);
	if (!strcmp(mode, "leftover"))
		return m_leftover();
	if (!strcmp(mode, "rtsignals"))
		return m_rtsignals();
	if (!strcmp(mode, "yield"))
		return m_yield();
	if (!strcmp(mode, "preempt"))
		return m_preempt(arg);
	if (!strcmp(mode, "wakeop_race"))
		return m_wakeop_race();
	if (!strcmp(mode, "sigmasks"))
		return m_sigmasks();
	if (!strcmp(mode, "timerabs"))
		return m_timerabs();
	if (!strcmp(mode, "wakesig"))
		return m_wakesig();
	if (!strcmp(mode, "timedrestart"))
		return m_timedrestart();
	if (!strcmp(mode, "snaptrap"))
		return m_snaptrap();
	if (!strcmp(mode, "snapwake"))
		return m_snapwake();
	if (!strcmp(mode, "snapcall"))
		return m_snapcall();
	fprintf(stderr, "usage: hostile_threads MODE [ARG]\n");
	return 2;
}

/* A vCPU thread: runs calls for a machine that must be driven from one thread (ptrace). */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vm/vm_impl.h"

/*
 * A call is handed over through one word: IDLE -> POSTED (the caller) -> DONE (the thread) ->
 * IDLE (the caller). Each side spins a little before it sleeps on a futex: an invocation is a
 * hop there and back, and two futex wake-ups cost more than the run itself here (~10 us each on
 * these machines). The caller spins while the call runs, up to CALLER_SPIN_NS; the thread spins
 * for the next call, up to THREAD_SPIN_NS, after each one. Both are short enough that an idle
 * virtine costs nothing: it sleeps. A spinning side yields the core every few rounds: on two
 * cores the thread and its stub process must not wait behind a spinning caller.
 */
#define CALLER_SPIN_NS 200000
#define THREAD_SPIN_NS 50000

enum { IDLE, POSTED, DONE };

struct vm_thread {
	pthread_t th;
	pthread_mutex_t callers; /* calls from several threads take turns */
	atomic_int state;
	/* each side's flag: it is (about to be) asleep on state, so the other must wake it */
	atomic_int caller_sleeps, thread_sleeps;
	void (*fn)(void *); /* NULL: the thread ends */
	void *arg;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* waits until state is `want`: spinning up to spin_ns, then asleep on the futex, with `sleeps`
 * (this side's flag) raised */
static void await(struct vm_thread *t, int want, uint64_t spin_ns, atomic_int *sleeps)
{
	uint64_t t0 = now_ns();
	for (unsigned i = 0; atomic_load(&t->state) != want; i++) {
		if ((i & 63) == 0 && now_ns() - t0 > spin_ns)
			break;
		if ((i & 7) == 7)
			sched_yield(); /* the other side may need this core */
		else
			__builtin_ia32_pause();
	}
	for (int s; (s = atomic_load(&t->state)) != want;) {
		atomic_store(sleeps, 1);
		if (atomic_load(&t->state) == s)
			syscall(SYS_futex, &t->state, FUTEX_WAIT_PRIVATE, s, NULL, NULL, 0);
		atomic_store(sleeps, 0);
	}
}

/* sets state and wakes the other side if it sleeps (`other`: its flag) */
static void set_state(struct vm_thread *t, int s, atomic_int *other)
{
	atomic_store(&t->state, s);
	if (atomic_load(other))
		syscall(SYS_futex, &t->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *loop(void *p)
{
	struct vm_thread *t = p;
	for (;;) {
		await(t, POSTED, THREAD_SPIN_NS, &t->thread_sleeps);
		if (!t->fn)
			break;
		t->fn(t->arg);
		set_state(t, DONE, &t->caller_sleeps);
	}
	set_state(t, DONE, &t->caller_sleeps);
	return NULL;
}

int vm_thread_start(struct vm_thread **out)
{
	struct vm_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->callers, NULL);
	atomic_init(&t->state, IDLE);
	atomic_init(&t->caller_sleeps, 0);
	atomic_init(&t->thread_sleeps, 0);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	int rc = pthread_create(&t->th, &attr, loop, t);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_destroy(&t->callers);
		free(t);
		return -rc;
	}
	*out = t;
	return 0;
}

static void post_and_wait(struct vm_thread *t, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&t->callers);
	t->fn = fn;
	t->arg = arg;
	set_state(t, POSTED, &t->thread_sleeps);
	await(t, DONE, CALLER_SPIN_NS, &t->caller_sleeps);
	atomic_store(&t->state, IDLE);
	pthread_mutex_unlock(&t->callers);
}

/* Runs fn(arg) on the thread and waits for it. */
void vm_thread_call(struct vm_thread *t, void (*fn)(void *), void *arg)
{
	post_and_wait(t, fn, arg);
}

void vm_thread_stop(struct vm_thread *t)
{
	if (!t)
		return;
	post_and_wait(t, NULL, NULL);
	pthread_join(t->th, NULL);
	pthread_mutex_destroy(&t->callers);
	free(t);
}

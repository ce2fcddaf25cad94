/* Per-thread deadline timer: a signal to the running thread makes the current run return, at the
 * invocation's deadline, at the end of a thread's time slice, or when another thread kicks. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "vm/vm_impl.h"

#define VM_TIMER_SIGNAL (SIGRTMIN + 3)

static __thread struct vm *tl_vm;
static __thread int tl_cpu;
static __thread timer_t tl_timer;
static __thread int tl_timer_ok;
static __thread uint64_t tl_armed; /* the timer's expiry as this file set it; 0: disarmed */
static __thread int tl_blocked;	   /* the timer's signal is blocked on this thread */
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
/* a thread's timer is deleted when the thread ends (every ptrace machine has its own thread;
 * callers on KVM come and go): without it, timers pile up until timer_create fails */
static pthread_key_t timer_key;

static void delete_timer(void *p)
{
	timer_t *t = p;
	timer_delete(*t);
	free(t);
}

int vm_stop_reason(struct vm *vm, int cpu)
{
	struct vm_cpu *c = &vm->cpu[cpu];
	if (vm->expired)
		return VM_STOP_DEADLINE;
	if (!vm->deadline && !c->slice && !c->kicked)
		return VM_STOP_NONE;
	uint64_t now = vm->deadline || c->slice ? base_now_ns() : 0;
	if (vm->deadline && now >= vm->deadline) {
		vm->expired = 1;
		return VM_STOP_DEADLINE;
	}
	if (c->kicked || (c->slice && now >= c->slice))
		return VM_STOP_INTERRUPT;
	return VM_STOP_NONE;
}

static int arm(uint64_t at_ns);

/* the first of the run's slice end and the deadline: when the timer must fire next */
static uint64_t next_stop(const struct vm *vm, int cpu)
{
	uint64_t next = vm->deadline, slice = vm->cpu[cpu].slice;
	return slice && (!next || slice < next) ? slice : next;
}

static void on_deadline(int sig)
{
	(void)sig;
	tl_armed = 0; /* one-shot: it fired */
	struct vm *vm = tl_vm;
	if (!vm)
		return;
	if (vm_stop_reason(vm, tl_cpu) != VM_STOP_NONE) {
		vm->ops->kick(vm, tl_cpu);
		return;
	}
	/* early, for an earlier run's slice or deadline: again for this run's (timer_settime
	 * may be called here) */
	uint64_t next = next_stop(vm, tl_cpu);
	if (next)
		arm(next);
}

static void install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_deadline;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked wait must come back with EINTR */
	sigaction(VM_TIMER_SIGNAL, &sa, NULL);
	pthread_key_create(&timer_key, delete_timer);
}

void vm_timer_running(struct vm *vm, int cpu, uint64_t slice)
{
	tl_vm = vm;
	tl_cpu = cpu;
	vm->cpu[cpu].slice = slice;
	if (!tl_timer_ok)
		return;
	/* The timer fires at the slice's end or the deadline, whichever comes first, whatever
	 * earlier runs left: a firing that ended a slice leaves it disarmed, and one for an earlier
	 * run's slice, which stops nothing, leaves it disarmed too where the run does not take the
	 * signal (the handler's is one-shot). A run entered so would never stop: a thread that
	 * spins alone outlived the deadline. Where the handler takes the signal, the timer is armed
	 * for exactly this run (a late firing for another is dropped by the stop reason). */
	uint64_t next = next_stop(vm, cpu);
	if (vm->run_takes_timer ? next && (!tl_armed || tl_armed > next) : next != tl_armed)
		arm(next);
}

void vm_timer_forget(struct vm *vm)
{
	if (tl_vm == vm)
		tl_vm = NULL;
}

int vm_timer_signal(void)
{
	return VM_TIMER_SIGNAL;
}

static int make_timer(void)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = VM_TIMER_SIGNAL;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t *box = malloc(sizeof(*box));
	if (!box)
		return -ENOMEM;
	if (timer_create(CLOCK_MONOTONIC, &sev, box) < 0) {
		free(box);
		return -errno;
	}
	tl_timer = *box;
	tl_timer_ok = 1;
	pthread_setspecific(timer_key, box);
	return 0;
}

/* the timer's expiry, absolute CLOCK_MONOTONIC ns; 0 disarms it */
static int arm(uint64_t at_ns)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(at_ns / 1000000000ULL);
	its.it_value.tv_nsec = (long)(at_ns % 1000000000ULL);
	if (timer_settime(tl_timer, TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	tl_armed = at_ns;
	return 0;
}

static sigset_t timer_set(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, VM_TIMER_SIGNAL);
	return set;
}

/* takes the timer's signal if it is pending (blocked): the one-shot timer is then disarmed */
static void take_pending(void)
{
	const sigset_t set = timer_set();
	const struct timespec now = {0, 0};
	while (sigtimedwait(&set, NULL, &now) == VM_TIMER_SIGNAL)
		tl_armed = 0;
}

/* the timer's signal blocked (1) or not (0) on this thread, once per change */
static void block_signal(int on)
{
	if (tl_blocked == on)
		return;
	const sigset_t set = timer_set();
	if (!on)
		take_pending(); /* dropped, not handled for whatever machine tl_vm last named */
	pthread_sigmask(on ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
	tl_blocked = on;
}

/* Two timer_settime calls per invocation cost about 3 us under PVM. Where the run takes the
 * signal itself, the timer is left armed when an invocation ends: the next one arms it only if
 * it would fire after its own deadline. An early expiry interrupts a run (or is pending, blocked,
 * until the next run starts), and vm_timer_fired arms it again for the deadline then. */
int vm_set_deadline(struct vm *vm, uint64_t deadline_ns)
{
	pthread_once(&handler_once, install_handler);
	int rc;
	if (!tl_timer_ok && (rc = make_timer()))
		return rc;
	block_signal(vm->run_takes_timer);
	tl_vm = deadline_ns ? vm : NULL;
	vm->deadline = deadline_ns;
	vm->expired = 0;
	if (vm->run_takes_timer && (!deadline_ns || (tl_armed && tl_armed <= deadline_ns)))
		return 0;
	return arm(deadline_ns);
}

uint64_t vm_deadline(const struct vm *vm)
{
	return vm->deadline;
}

int vm_timer_fired(struct vm *vm, int cpu)
{
	take_pending();
	int why = vm_stop_reason(vm, cpu);
	if (why != VM_STOP_NONE)
		return why;
	uint64_t next = next_stop(vm, cpu);
	if (next && (!tl_armed || tl_armed > next) && arm(next)) {
		vm->expired = 1; /* no timer to stop the run: better stopped now than never */
		return VM_STOP_DEADLINE;
	}
	return VM_STOP_NONE;
}

/* a valid timespec (tv_sec >= 0, tv_nsec < 1e9) in ns, UINT64_MAX past what 64 bits hold */
static uint64_t ns_of(const struct timespec *t)
{
	uint64_t s = (uint64_t)t->tv_sec;
	if (s > (UINT64_MAX - 999999999ULL) / 1000000000ULL)
		return UINT64_MAX;
	return s * 1000000000ULL + (uint64_t)t->tv_nsec;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return ns_of(&t);
}

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
}

/* The signal stays blocked and the sleep is a wait for it (sigtimedwait, no race with a firing
 * just before it): the deadline ends it; an early firing, for an earlier invocation's deadline,
 * arms the timer again and the sleep goes on. */
static int sleep_taking_timer(struct vm *vm, clockid_t c, int flags, const struct timespec *want,
			      struct timespec *left)
{
	const sigset_t set = timer_set();
	/* a clock the host's clock_nanosleep refuses is refused here too (a time in the past
	 * returns at once where it is taken) */
	const struct timespec past = {0, 0};
	int rc = clock_nanosleep(c, TIMER_ABSTIME, &past, NULL);
	if (rc)
		return rc;
	/* saturating: "sleep infinity" asks for LONG_MAX seconds */
	uint64_t start = flags & TIMER_ABSTIME ? 0 : clock_ns(c), len = ns_of(want);
	uint64_t end = len > UINT64_MAX - start ? UINT64_MAX : start + len;
	for (;;) {
		uint64_t now = clock_ns(c);
		if (vm->deadline && base_now_ns() >= vm->deadline)
			vm->expired = 1;
		if (vm->expired) {
			*left = ts_of(end > now ? end - now : 0);
			return EINTR;
		}
		if (now >= end)
			return 0;
		struct timespec wait = ts_of(end - now);
		int sig = sigtimedwait(&set, NULL, &wait);
		if (sig == VM_TIMER_SIGNAL) {
			tl_armed = 0;
			/* no timer to stop the run: better stopped now than never */
			if (vm->deadline && base_now_ns() < vm->deadline && arm(vm->deadline))
				vm->expired = 1;
		} else if (sig < 0 && errno != EAGAIN && errno != EINTR) {
			return errno;
		}
	}
}

/* A sleep on the host is the one wait of a run outside KVM_RUN that the deadline must cut
 * short. Where the run takes the timer, its signal is blocked here too (sleep_taking_timer);
 * elsewhere its handler stops the run and interrupts the sleep. */
int vm_sleep(struct vm *vm, clockid_t c, int flags, const struct timespec *want,
	     struct timespec *left)
{
	if (tl_blocked && tl_vm == vm)
		return sleep_taking_timer(vm, c, flags, want, left);
	if (vm->expired)
		return EINTR;
	return clock_nanosleep(c, flags, want, left);
}

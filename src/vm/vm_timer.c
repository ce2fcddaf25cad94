/* Per-thread deadline timer: a signal to the running thread makes the current run return. */
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
static __thread timer_t tl_timer;
static __thread int tl_timer_ok;
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

static void on_deadline(int sig)
{
	(void)sig;
	struct vm *vm = tl_vm;
	if (vm && vm->deadline && base_now_ns() >= vm->deadline) {
		vm->expired = 1;
		vm->ops->kick(vm);
	}
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

void vm_timer_running(struct vm *vm)
{
	tl_vm = vm;
}

void vm_timer_forget(struct vm *vm)
{
	if (tl_vm == vm)
		tl_vm = NULL;
}

int vm_set_deadline(struct vm *vm, uint64_t deadline_ns)
{
	pthread_once(&handler_once, install_handler);
	if (!tl_timer_ok) {
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
	}
	tl_vm = deadline_ns ? vm : NULL;
	vm->deadline = deadline_ns;
	vm->expired = 0;
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (deadline_ns) {
		its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ULL);
		its.it_value.tv_nsec = (long)(deadline_ns % 1000000000ULL);
	}
	if (timer_settime(tl_timer, TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	return 0;
}

/* pt_spin: a thread spins, never yielding, until another sets a flag: it needs preemption. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "req.h"

static atomic_int started, flag;
static unsigned long spins;

static void *spin(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	atomic_store(&started, 1);
	/* no system call and no pause: only a timer interrupt takes this CPU away */
	while (!atomic_load_explicit(&flag, memory_order_acquire))
		n++;
	spins = n;
	return NULL;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts))
		;
}

int main(void)
{
	char req[256];
	pthread_t t;
	int rc;

	if (read_req(req, sizeof(req)) < 0)
		return 1;
	rc = pthread_create(&t, NULL, spin, NULL);
	if (rc) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return 1;
	}
	while (!atomic_load(&started))
		nap_ms(1);
	nap_ms(20); /* the spinner has the CPU for a while: main gets it back only by preemption */
	atomic_store_explicit(&flag, 1, memory_order_release);
	pthread_join(t, NULL);
	printf("pt_spin: request \"%s\"\n", req);
	printf("the spinner started: yes\n");
	printf("the spinner saw the flag and ended: yes\n");
	printf("it spun: %s\n", spins > 0 ? "yes" : "no");
	return 0;
}

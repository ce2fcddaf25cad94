/* Costly functions: a loaded function whose invocations cost much (long ones, and failures:
 * crashes, timeouts, limits) runs them in a few shared slots, one at a time per slot, so that
 * however many such calls come in, the CPU time left to every other tenant stays the same. */
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_cpu.h"

uint64_t cpu_score(uint64_t score, uint64_t took_us, int failed, uint64_t limit_us)
{
	/* a failure is never cheap: a crash loop of quick crashes costs a new machine each */
	if (failed && took_us < CPU_FAILURE_WEIGHT * limit_us)
		took_us = CPU_FAILURE_WEIGHT * limit_us;
	return score - score / CPU_SCORE_DECAY + took_us / CPU_SCORE_DECAY;
}

void cpu_start(struct srv *s)
{
	pthread_mutex_init(&s->cpu_mu, NULL);
	base_cond_init(&s->cpu_cv);
	if (!s->opt.costly_slots) {
		long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
		s->opt.costly_slots = n > 1 ? (unsigned)n : 1;
	}
	if (!s->opt.costly_queue)
		s->opt.costly_queue = COSTLY_QUEUE_PER_SLOT * s->opt.costly_slots;
}

void cpu_account(struct srv *s, struct srv_inst *in, const struct ember_result *res)
{
	if (s->opt.costly_after_ms < 0)
		return;
	uint64_t limit = (uint64_t)s->opt.costly_after_ms * 1000;
	int failed = res->outcome == EMBER_CRASH || res->outcome == EMBER_TIMEOUT ||
		     res->outcome == EMBER_LIMIT;
	/* CPU time, not wall-clock: a cheap function slowed down by a busy machine (waiting for a
	 * CPU) must not be taken for a costly one, which would slow it down more */
	uint64_t took = res->cpu_us;
	uint64_t old = atomic_load(&in->cpu_score), score;
	do
		score = cpu_score(old, took, failed, limit);
	while (!atomic_compare_exchange_weak(&in->cpu_score, &old, score));
	int costly = score > limit;
	if (atomic_exchange(&in->costly, costly) != costly && costly)
		atomic_fetch_add(&s->costly_marked, 1);
}

int cpu_enter(struct srv *s, struct srv_inst *in, int patient)
{
	if (!atomic_load(&in->costly))
		return CPU_FREE;
	pthread_mutex_lock(&s->cpu_mu);
	if (!patient && s->cpu_busy >= s->opt.costly_slots &&
	    s->cpu_waiting >= s->opt.costly_queue) {
		pthread_mutex_unlock(&s->cpu_mu);
		atomic_fetch_add(&s->costly_refused, 1);
		return CPU_FULL;
	}
	s->cpu_waiting++;
	while (s->cpu_busy >= s->opt.costly_slots)
		pthread_cond_wait(&s->cpu_cv, &s->cpu_mu);
	s->cpu_waiting--;
	s->cpu_busy++;
	pthread_mutex_unlock(&s->cpu_mu);
	return CPU_SLOT;
}

void cpu_leave(struct srv *s, int entered)
{
	if (entered != CPU_SLOT)
		return;
	pthread_mutex_lock(&s->cpu_mu);
	s->cpu_busy--;
	pthread_cond_signal(&s->cpu_cv);
	pthread_mutex_unlock(&s->cpu_mu);
}

void cpu_gauges(struct srv *s, unsigned *busy, unsigned *waiting)
{
	pthread_mutex_lock(&s->cpu_mu);
	*busy = s->cpu_busy;
	*waiting = s->cpu_waiting;
	pthread_mutex_unlock(&s->cpu_mu);
}

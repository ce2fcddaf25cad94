/* Costly functions: a CPU score per loaded function, and the slots their calls wait for. */
#ifndef EMBER_SRV_CPU_H
#define EMBER_SRV_CPU_H

#include <stdint.h>

#include "server/srv_core.h"

/* srv_cpu.c: costly functions. A loaded function's score is a moving average of the CPU time
 * its invocations took (ember_result.cpu_us; each counts 1/CPU_SCORE_DECAY), a failure counting as
 * at least CPU_FAILURE_WEIGHT times costlyAfter; above costlyAfter it is costly, and its
 * invocations wait for one of the costlySlots (cpu_enter: CPU_SLOT, or CPU_FULL when costlyQueue
 * calls wait already, by default COSTLY_QUEUE_PER_SLOT per slot, and the caller is not patient;
 * CPU_FREE for the others), given back by cpu_leave. */
#define CPU_SCORE_DECAY	      4
#define CPU_FAILURE_WEIGHT    3
#define DEFAULT_COSTLY_MS     20
#define COSTLY_QUEUE_PER_SLOT 64
enum { CPU_FREE, CPU_SLOT, CPU_FULL };
uint64_t cpu_score(uint64_t score, uint64_t took_us, int failed, uint64_t limit_us);
void cpu_start(struct srv *s);
void cpu_account(struct srv *s, struct srv_inst *in, const struct ember_result *res);
int cpu_enter(struct srv *s, struct srv_inst *in, int patient);
void cpu_leave(struct srv *s, int entered);
void cpu_gauges(struct srv *s, unsigned *busy, unsigned *waiting);

#endif

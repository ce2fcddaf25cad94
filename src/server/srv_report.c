/* One REPORT line per invocation in the server's log, after Lambda's REPORT (see docs/server.md).
 */
#include <stdio.h>

#include "server/srv_impl.h"

#define PAGE_KIB 4

/* Fields are tab-separated "Key: value" pairs in this order; Init Duration only on a cold
 * start. The format is documented and kept stable: add fields at the end only. */
void srv_report(struct srv *s, const struct srv_call *c, const char *id,
		const struct ember_result *res, double took_s, double init_s)
{
	if (s->opt.no_report)
		return;
	struct ember_info info;
	ember_info(c->inst->fn, &info);
	char init[64] = "", took[32], ms[24];
	if (init_s >= 0) {
		srv_fixed(ms, sizeof(ms), init_s * 1e3, 3);
		snprintf(init, sizeof(init), "\tInit Duration: %s ms", ms);
	}
	srv_fixed(took, sizeof(took), took_s * 1e3, 3);
	srv_log(s, "info",
		"REPORT RequestId: %s\tFunction: %s\tDuration: %s ms%s\tExits: %llu\t"
		"Pages Written: %llu\tMemory Size: %llu MB\tMax Memory Used: %llu KiB\t"
		"Outcome: %s\tExit Code: %d",
		id, c->spec->name, took, init, (unsigned long long)res->exits,
		(unsigned long long)res->pages_touched,
		(unsigned long long)(c->inst->mem_bytes >> 20),
		(unsigned long long)((info.snapshot_pages + res->pages_touched) * PAGE_KIB),
		ember_outcome_name(res->outcome), res->exit_code);
}

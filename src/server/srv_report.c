/* One REPORT line per invocation in the server's log, after Lambda's REPORT (see docs/server.md).
 */
#include <stdint.h>
#include <stdio.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_registry.h"
#include "server/srv_invoke.h"

#define PAGE_KIB 4

/* "\tLoad Duration: N ms\tLoad Image: N ms (table)..." for a request that waited for its load */
static void load_parts(char *out, size_t len, uint64_t load_us, const struct ember_load_parts *p)
{
	const struct {
		const char *name;
		uint64_t us;
	} f[] = {{"Load Duration", load_us},   {"Load Image", p->image_us},
		 {"Load Sites", p->sites_us},  {"Load Interp", p->interp_us},
		 {"Load Files", p->bundle_us}, {"Load State", p->state_us},
		 {"Load Plan", p->plan_us}};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]) && n < len; i++) {
		char ms[32];
		srv_fixed(ms, sizeof(ms), (double)f[i].us / 1e3, 3);
		n += (size_t)snprintf(out + n, len - n, "\t%s: %s ms", f[i].name, ms);
	}
	if (n < len)
		snprintf(out + n, len - n, "\tImage From: %s\tFiles From: %s",
			 p->image_from ? p->image_from : "-",
			 p->bundle_from ? p->bundle_from : "-");
}

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
	char load[400] = "";
	if (c->load_us) /* this request waited for the load: where its time went */
		load_parts(load, sizeof(load), c->load_us, &info.load);
	srv_log(s, "info",
		"REPORT RequestId: %s\tFunction: %s\tDuration: %s ms%s\tExits: %llu\t"
		"Pages Written: %llu\tMemory Size: %llu MB\tMax Memory Used: %llu KiB\t"
		"Outcome: %s\tExit Code: %d%s",
		id, c->spec->name, took, init, (unsigned long long)res->exits,
		(unsigned long long)res->pages_touched,
		(unsigned long long)(c->inst->mem_bytes >> 20),
		(unsigned long long)((info.snapshot_pages + res->pages_touched) * PAGE_KIB),
		ember_outcome_name(res->outcome), res->exit_code, load);
}

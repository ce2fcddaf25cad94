/* `ember bench cold`'s second table: restores from memory next to cold starts, and where a cold
 * start's time goes. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/bench_cold.h"
#include "ember/ember.h"
#include "pool/pool.h"

#define SHELL_WAIT_MS 2000

/* the shells are kept per kind (memory, backend, vCPUs): wait for fn's own kind */
void cold_wait_shell(const struct ember_function *fn)
{
	struct ember_info info;
	ember_info(fn, &info);
	struct vm_config cfg = {.mem_size = info.mem_bytes, .cpus = (int)info.cpus};
	if (vm_backend_parse(info.backend, &cfg.backend))
		return;
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < SHELL_WAIT_MS && !pool_shell_ready(&cfg); i++)
		nanosleep(&ms, NULL);
}

static double start_ms(const struct ember_result *r)
{
	return (double)(r->wait_us + r->setup_us + r->run_us) / 1000;
}

int cold_restore_p50(struct ember_function *fn, const void *req, size_t len, int iters, double *ms,
		     double *p50)
{
	for (int i = -1; i < iters; i++) { /* one first, not counted */
		struct ember_result res;
		ember_trim(fn, 0);
		cold_wait_shell(fn);
		ember_invoke(fn, req, len, &res);
		int ok = res.outcome == EMBER_OK && res.start == EMBER_START_RESTORE;
		if (!ok)
			fprintf(stderr, "ember bench: restore: %s\n",
				res.outcome != EMBER_OK ? res.message : "did not restore");
		if (i >= 0)
			ms[i] = start_ms(&res);
		ember_result_free(&res);
		if (!ok)
			return -1;
	}
	*p50 = bench_quantile(ms, (size_t)iters, 0.5);
	return 0;
}

void cold_add_parts(struct cold_row *row, const struct ember_result *r, int reap, int iters,
		    struct ember_function *fn)
{
	double k = 1.0 / iters;
	if (!reap) {
		row->lazy_fault_us += (double)r->fault_us * k;
		return;
	}
	struct ember_info info;
	ember_info(fn, &info);
	const struct ember_load_parts *l = &info.load;
	row->l_total += (double)l->total_us * k;
	row->l_image += (double)l->image_us * k;
	row->l_sites += (double)l->sites_us * k;
	row->l_interp += (double)l->interp_us * k;
	row->l_bundle += (double)l->bundle_us * k;
	row->l_state += (double)l->state_us * k;
	row->l_plan += (double)l->plan_us * k;
	row->image_from = l->image_from; /* static names */
	row->bundle_from = l->bundle_from;
	row->p_shell += (double)r->wait_us * k;
	row->p_snapshot += (double)r->snapshot_us * k;
	row->p_open += (double)r->open_us * k;
	row->p_first += (double)r->first_chunk_us * k;
	row->p_read += (double)r->ws_read_us * k;
	row->p_install += (double)r->install_us * k;
	row->p_run += (double)r->run_us * k;
	row->p_fault += (double)r->fault_us * k;
	row->p_waits += (double)r->fault_waits * k;
	row->p_mis += (double)r->mispredicted * k;
}

void cold_print_parts(const char *const *names, double disk, const struct cold_row *rows, size_t n)
{
	printf(
	    "\nthe request's own start (a clean shell ready before it): restore from memory into "
	    "a fresh virtine next to cold starts, p50 ms; REAP's mean breakdown in µs\n");
	printf("%-12s %8s %8s %8s %7s %6s %7s %5s %6s %6s %6s %7s %7s %7s %6s %5s %7s %5s\n",
	       "name", "restore", "st_lazy", "st_reap", "reap/rs", "ws_MiB", "rd_MB/s", "rd/dk",
	       "shell", "snap", "open", "first", "read", "install", "fault", "waits", "run", "mis");
	for (size_t i = 0; i < n; i++) {
		const struct cold_row *r = &rows[i];
		printf(
		    "%-12s %8.2f %8.2f %8.2f %7.2f %6.2f %7.0f %5.2f %6.0f %6.0f %6.0f %7.0f %7.0f "
		    "%7.0f %6.0f %5.1f %7.0f %5.1f\n",
		    names[i], r->restore_p50_ms, r->lazy_start_ms, r->reap_start_ms,
		    r->reap_over_restore, r->ws_mib, r->read_mb_s, r->read_mb_s / disk, r->p_shell,
		    r->p_snapshot, r->p_open, r->p_first, r->p_read, r->p_install, r->p_fault,
		    r->p_waits, r->p_run, r->p_mis);
	}
}

void cold_json_parts(json_t *o, const struct cold_row *r, double disk)
{
	const struct {
		const char *key;
		double v;
	} f[] = {
	    {"restore_p50_ms", r->restore_p50_ms},
	    {"lazy_start_p50_ms", r->lazy_start_ms},
	    {"reap_start_p50_ms", r->reap_start_ms},
	    {"reap_over_restore", r->reap_over_restore},
	    {"ws_mib", r->ws_mib},
	    {"ws_read_mb_s", r->read_mb_s},
	    {"ws_read_over_disk", r->read_mb_s / disk},
	    {"faults_eliminated", r->faults_lazy > 0 ? 1 - r->faults_reap / r->faults_lazy : NAN},
	    {"lazy_fault_us", r->lazy_fault_us},
	    {"reap_mispredicted", r->p_mis},
	    {"cold_over_restore", r->cold_over_restore},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		json_object_set_new(o, f[i].key, bench_json_num(f[i].v));
	json_object_set_new(
	    o, "reap_parts_us",
	    json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "shell", bench_json_num(r->p_shell),
		      "snapshot", bench_json_num(r->p_snapshot), "open", bench_json_num(r->p_open),
		      "first_chunk", bench_json_num(r->p_first), "ws_read",
		      bench_json_num(r->p_read), "install", bench_json_num(r->p_install), "fault",
		      bench_json_num(r->p_fault), "fault_waits", bench_json_num(r->p_waits), "run",
		      bench_json_num(r->p_run)));
}

void cold_json_load(json_t *o, const struct cold_row *r)
{
	json_object_set_new(
	    o, "reap_load_us",
	    json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s?,s:s?}", "total",
		      bench_json_num(r->l_total), "image", bench_json_num(r->l_image), "sites",
		      bench_json_num(r->l_sites), "interp", bench_json_num(r->l_interp), "bundle",
		      bench_json_num(r->l_bundle), "state", bench_json_num(r->l_state), "plan",
		      bench_json_num(r->l_plan), "image_from", r->image_from, "bundle_from",
		      r->bundle_from));
}

void cold_print_load(const char *const *names, const struct cold_row *rows, size_t n)
{
	printf("\nthe load before a REAP start (ember_load, mean µs) and cold_over_restore "
	       "(reap_ms / restore: the whole cold start, load and all, over a restore)\n");
	printf("%-12s %7s %8s %7s %7s %7s %7s %7s %7s %8s %8s\n", "name", "c/rs", "load", "image",
	       "sites", "interp", "bundle", "state", "plan", "image_by", "files_by");
	for (size_t i = 0; i < n; i++) {
		const struct cold_row *r = &rows[i];
		printf("%-12s %7.2f %8.0f %7.0f %7.0f %7.0f %7.0f %7.0f %7.0f %8s %8s\n", names[i],
		       r->cold_over_restore, r->l_total, r->l_image, r->l_sites, r->l_interp,
		       r->l_bundle, r->l_state, r->l_plan, r->image_from ? r->image_from : "-",
		       r->bundle_from ? r->bundle_from : "-");
	}
}

/* ember bench memory: the PSS of N warm virtines per sharing mode, and how many fit. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_cold.h"
#include "bench/bench_knobs.h"
#include "bench/bench_memory.h"
#include "cli/cli.h"
#include "pool/pool.h"

static const char *const modes[] = {"off", "ksm", "upm"};
#define NMODES 3

/* Node.js's and CPython's snapshots are 94 and 14 MiB: 512 private copies (off) would not fit */
const struct bench_mem_fn bench_mem_fns[] = {
    {"hello", NULL, 0},	 {"hello-js", "duktape", 0}, {"model", NULL, 0},
    {"model2", NULL, 0}, {"hello-node", "js", 64},   {"hello-python", "python", 64},
};
#define NFNS   6
#define MODEL2 3 /* not measured on its own: only beside model */

/* a field of a /proc file in kB ("Pss:", "MemAvailable:"), or -1 */
long long bench_proc_kib(const char *path, const char *field)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[256];
	long long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && sscanf(line + n, "%lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

long long bench_pss_kib(void)
{
	return bench_proc_kib("/proc/self/smaps_rollup", "Pss:");
}

/* the used memory the kernel keeps outside the process's mappings too (KVM's own structures) */
long long bench_used_kib(void)
{
	return bench_proc_kib("/proc/meminfo", "MemTotal:") -
	       bench_proc_kib("/proc/meminfo", "MemAvailable:");
}

#define KSM "/sys/kernel/mm/ksm/"

/* KSM on, scanning fast, until two more full scans have passed (bounded); its settings back */
static int ksm_settle(void)
{
	static const char *const knobs[] = {KSM "run", KSM "pages_to_scan", KSM "sleep_millisecs"};
	struct bench_knobs k;
	long long start = bench_proc_kib(KSM "full_scans", ""), last = start;
	if (start < 0 || bench_knobs_hold(&k, knobs, 3))
		return -1;
	int rc = bench_knob_write(KSM "pages_to_scan", "20000") ||
		 bench_knob_write(KSM "sleep_millisecs", "0") || bench_knob_write(KSM "run", "1");
	/* a condition, bounded at about 60 s, and at 3 s without a scan: ksmd sleeps while no
	 * process has mergeable memory */
	for (int i = 0, still = 0; !rc && i < 6000 && still < 300; i++, still++) {
		long long scans = bench_proc_kib(KSM "full_scans", "");
		if (scans < 0)
			rc = -1;
		else if (scans >= start + 2)
			break;
		if (scans != last)
			last = scans, still = 0;
		usleep(10000);
	}
	bench_knobs_release(&k);
	return rc;
}

static int load_in(const struct mem_opts *o, int f, const char *mode, unsigned pool, unsigned max,
		   const char *domain, struct ember_function **fn)
{
	struct cli_program p = {0};
	char path[4400], why[300];
	if (bench_mem_fns[f].runtime)
		snprintf(path, sizeof(path), "%s/../functions/%s/handler.%s", o->build,
			 bench_mem_fns[f].name, cli_runtime_ext(bench_mem_fns[f].runtime));
	else
		snprintf(path, sizeof(path), "%s/functions/%s", o->build, bench_mem_fns[f].name);
	if (cli_program(bench_mem_fns[f].runtime, path, &p, why, sizeof(why))) {
		fprintf(stderr, "ember bench memory: %s\n", why);
		return -1;
	}
	/* a folder of its own for each load: one with the snapshot of an earlier row would
	 * start this one from disk */
	static unsigned loads;
	char state[sizeof(o->state) + 16];
	snprintf(state, sizeof(state), "%s/%u", o->state, loads++);
	if (o->state[0] && mkdir(state, 0700) < 0) {
		perror("ember bench memory: mkdir");
		return -1;
	}
	struct ember_config cfg = {.backend = o->backend,
				   .pool_size = pool,
				   .pool_max = max, /* keep_alive 0: never shrinks */
				   .sharing = mode,
				   .sharing_domain = domain,
				   .state_dir = o->state[0] ? state : NULL};
	cli_program_config(&p, &cfg, why, sizeof(why)); /* image, arguments, code, files */
	int rc = ember_load(&cfg, fn, why, sizeof(why));
	free(p.code);
	if (rc)
		fprintf(stderr, "ember bench memory: %s (%s): %s\n", bench_mem_fns[f].name, mode,
			why);
	return rc ? -1 : 0;
}

int bench_mem_load(const struct mem_opts *o, int f, const char *mode, unsigned pool, unsigned max,
		   struct ember_function **fn)
{
	return load_in(o, f, mode, pool, max, NULL, fn);
}

/* model merges 8 MiB at init: the time per MiB; model and model2 in one domain, and in two:
 * the store's bytes */
static json_t *merges(const struct mem_opts *o, int json)
{
	struct ember_function *a, *b, *c;
	struct ember_memory m;
	if (load_in(o, 2, "upm", 1, 0, "bench-pair", &a))
		return json_null();
	ember_memory(a, &m);
	double ms_per_mib =
	    m.merged_pages ? (double)m.merge_ns / 1e6 / ((double)m.merged_pages / 256) : -1;
	uint64_t one = m.domain_bytes, pair = 0, apart = 0, ns0 = m.merge_ns, pg0 = m.merged_pages;
	double second = -1; /* model2's merge: every page found in the store */
	if (!load_in(o, 3, "upm", 1, 0, "bench-pair", &b)) {
		ember_memory(b, &m);
		pair = m.domain_bytes;
		if (m.merged_pages > pg0)
			second = (double)(m.merge_ns - ns0) / 1e6 /
				 ((double)(m.merged_pages - pg0) / 256);
		ember_unload(b);
	}
	if (!load_in(o, 3, "upm", 1, 0, "bench-apart", &c)) {
		ember_memory(c, &m);
		apart = one + m.domain_bytes;
		ember_unload(c);
	}
	ember_unload(a);
	if (!json)
		printf("\nUPM merge: %.2f ms per MiB madvised, first (model's 8 MiB table at init, "
		       "all new), %.2f ms second (model2's, all found)\n"
		       "model + model2 (the same table): %llu KiB in one domain, %llu KiB in two\n",
		       ms_per_mib, second, (unsigned long long)pair >> 10,
		       (unsigned long long)apart >> 10);
	return json_pack("{s:o,s:o,s:I,s:I}", "merge_ms_per_mib", bench_json_num(ms_per_mib),
			 "merge_second_ms_per_mib", bench_json_num(second),
			 "model_pair_one_domain_kib", (json_int_t)(pair >> 10),
			 "model_pair_two_domains_kib", (json_int_t)(apart >> 10));
}

static const char request[] = "start=10 rows=100"; /* hello's name, model's rows */

/* the host's mappings (each counted against vm.max_map_count) and this process's descriptors */
long long bench_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	long long n = 0;
	for (int c; f && (c = getc(f)) != EOF;)
		n += c == '\n';
	if (f)
		fclose(f);
	return f ? n : -1;
}

long long bench_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long long n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return d ? n - 1 : -1; /* the directory's own */
}

/* one row: N primed virtines of function f in mode; per instance: PSS and kernel kB, host
 * mappings and descriptors (the growth of the process's, over N: everything the virtines need
 * counts, the store and the function's own are spread over them) */
static int row(const struct mem_opts *o, int f, int m, unsigned n, struct mem_row *r)
{
	long long p0 = bench_pss_kib(), u0 = bench_used_kib();
	long long maps0 = bench_maps(), fds0 = bench_fds();
	struct ember_function *fn;
	if (bench_mem_load(o, f, modes[m], n, 0, &fn))
		return -1;
	int rc = 0;
	if (ember_warm(fn, n) < 0 || ember_prime(fn, request, sizeof(request) - 1) < 0)
		rc = -1;
	struct ember_info info;
	ember_info(fn, &info);
	/* on ptrace the copies are in the machine's memfd, which KSM never scans: nothing to wait
	 * for */
	if (!rc && m == 1 && !strcmp(info.backend, "kvm") && ksm_settle())
		fprintf(stderr, "ember bench memory: KSM could not be switched on (root?)\n");
	if (!rc && info.ready < n) {
		fprintf(stderr, "ember bench memory: %s (%s): %u of %u virtines ready\n",
			bench_mem_fns[f].name, modes[m], info.ready, n);
		rc = -1;
	}
	r->pss = (double)(bench_pss_kib() - p0) / n;
	r->kern = (double)(bench_used_kib() - u0) / n;
	r->maps = (double)(bench_maps() - maps0) / n;
	r->fds = (double)(bench_fds() - fds0) / n;
	struct ember_memory mm;
	r->slot_kib = ember_memory(fn, &mm) || !mm.virtines
			  ? -1
			  : (double)mm.host_slot_bytes / 1024 / mm.virtines;
	ember_unload(fn);
	return rc;
}

int cli_bench_memory(int argc, char **argv)
{
	struct mem_args a = {.o = {.n = {1, 8, 64, 512}, .nn = 4, .max = 1, .processes = 1},
			     .child = -1};
	int rc = bench_mem_parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	struct mem_opts o = a.o;
	int json = a.json, child = a.child;
	snprintf(o.build, sizeof(o.build), "%s", bench_build_dir());
	pool_shell_target(0);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) { /* three descriptors per virtine */
		long long open_max =
		    bench_proc_kib("/proc/sys/fs/nr_open", ""); /* root may go up to it */
		struct rlimit up = {(rlim_t)open_max, (rlim_t)open_max};
		if (open_max <= 0 || setrlimit(RLIMIT_NOFILE, &up)) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (child >= 0) { /* one share of a split search: its count and limit on stdout */
		const char *why;
		if (child < NMAX_FNS && o.budget_kib)
			bench_max_warm(&o, child, &why); /* says its count itself, then holds */
		else
			printf("0 %s\n", child < NMAX_FNS ? "--max-child needs --budget-kib"
							  : "no such function");
		return 0;
	}
	if (!o.max_only) {
		snprintf(o.state, sizeof(o.state), "/tmp/ember-bench-memory-XXXXXX");
		if (!mkdtemp(o.state)) {
			perror("ember bench memory: mkdtemp");
			return CLI_EXIT_EMBER;
		}
	}
	json_t *results = json_array();
	if (!json)
		printf("%-10s %5s %12s %12s %12s   %17s   %14s\n%48s   %17s   %14s\n", "function",
		       "N", "off", "ksm", "upm", "VMAs off/ksm/upm", "fds off/ksm/upm",
		       "(PSS KiB per instance; kernel KiB in [])", "(per instance)",
		       "(per instance)");
	rc = 0;
	for (int f = 0; f < NFNS && !o.max_only; f++) {
		for (int k = 0; k < o.nn && f != MODEL2; k++) {
			if (bench_mem_fns[f].max_n && o.n[k] > bench_mem_fns[f].max_n)
				continue;
			struct mem_row r[NMODES];
			for (int m = 0; m < NMODES; m++) {
				fprintf(stderr, "ember bench memory: %s, %s, N=%u\n",
					bench_mem_fns[f].name, modes[m], o.n[k]);
				if (row(&o, f, m, o.n[k], &r[m]))
					rc = CLI_EXIT_EMBER;
				json_array_append_new(
				    results,
				    json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o}", "function",
					      bench_mem_fns[f].name, "mode", modes[m], "n",
					      (int)o.n[k], "pss_per_instance_kib",
					      bench_json_num(r[m].pss), "kernel_per_instance_kib",
					      bench_json_num(r[m].kern), "vmas_per_instance",
					      bench_json_num(r[m].maps), "fds_per_instance",
					      bench_json_num(r[m].fds), "slot_kib_per_instance",
					      bench_json_num(r[m].slot_kib)));
			}
			if (!json)
				printf("%-10s %5u %6.0f [%4.0f] %6.0f [%4.0f] %6.0f [%4.0f]   "
				       "%5.1f %5.1f %5.1f   %4.1f %4.1f %4.1f\n",
				       bench_mem_fns[f].name, o.n[k], r[0].pss, r[0].kern, r[1].pss,
				       r[1].kern, r[2].pss, r[2].kern, r[0].maps, r[1].maps,
				       r[2].maps, r[0].fds, r[1].fds, r[2].fds);
		}
	}
	if (!o.max_only)
		cold_rm_rf(o.state);
	o.state[0] = 0;
	json_t *max = json_object();
	const char *why = "not measured (--no-max)";
	static const char *const maps_knob[] = {"/proc/sys/vm/max_map_count"};
	long old_maps = bench_proc_kib(maps_knob[0], "");
	struct bench_knobs k = {.wfd = -1};
	char v[32];
	snprintf(v, sizeof(v), "%lld", o.map_count);
	if (o.max && o.map_count &&
	    (bench_knobs_hold(&k, maps_knob, 1) || bench_knob_write(maps_knob[0], v)))
		fprintf(stderr, "ember bench memory: cannot set vm.max_map_count (root?)\n");
	vm_cow_budget_reset(); /* the mappings' budget follows the limit */
	json_t *merge = o.max_only ? json_object() : merges(&o, json);
	json_t *resets = o.max_only ? json_array() : bench_resets(o.build, json, 1);
	for (int f = 0; (o.max || o.max_only) && f < NMAX_FNS; f++) {
		if (o.max_only && f != o.max_only - 1)
			continue;
		unsigned n = o.processes > 1 ? bench_max_warm_split(&o, f, &why)
					     : bench_max_warm(&o, f, &why);
		json_object_set_new(max, bench_mem_fns[f].name, json_integer(n));
		if (!json)
			printf("largest N of upm %s: %u (stopped by %s)\n", bench_mem_fns[f].name,
			       n, why);
	}
	if (k.wfd >= 0) {
		bench_knobs_release(&k);
		vm_cow_budget_reset();
	}
	if (json)
		cli_print_json(stdout,
			       json_pack("{s:o,s:o,s:s,s:I,s:o,s:o}", "results", results,
					 "max_warm", max, "max_warm_limit", why, "max_map_count",
					 (json_int_t)(o.map_count ? o.map_count : old_maps),
					 "merge", merge, "resets", resets));
	else
		json_decref(results), json_decref(max), json_decref(merge), json_decref(resets);
	return rc;
}

/* `ember bench memory`'s options: its table, its --help, the --n LIST it takes. */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_memory.h"
#include "cli/opt.h"

static const char mem_head[] =
    "usage: ember bench memory [--json] [--n LIST] [--no-max] [--max-map-count N]\n"
    "                          [--processes P] [--max-only FUNCTION] [--backend kvm|ptrace]\n"
    "\n"
    "Memory density: for N warm virtines (default N = 1,8,64,512) of hello (C), hello-js\n"
    "(Duktape), model (an 8 MiB read-only table it madvises, the same bytes as model2's),\n"
    "and hello-node and hello-python (Node.js and CPython, N up to 64),\n"
    "each primed with one request, the PSS per instance (/proc/self/smaps_rollup, its\n"
    "growth over N) in each sharing mode, side by side in one run: off (a private copy\n"
    "each), ksm (private copies, KSM on with a fast scan until two full scans passed; its\n"
    "settings are put back) and upm (one copy mapped copy-on-write). Then the largest N of\n"
    "upm virtines of hello and hello-js, found by making them 250 at a time until something\n"
    "runs out (a descriptor limit, the map count, a failed virtine), their PSS passes 20 GiB\n"
    "or the host has less than 2 GiB free (free pages and inactive page cache: KVM's own\n"
    "memory per VM counts), with the limit that stopped it named (--no-max skips it;\n"
    "--max-only F runs only it, for hello or hello-js; --max-map-count N sets\n"
    "vm.max_map_count for the search and puts it back; --processes P splits it over P\n"
    "processes at once, each with its own descriptor limit and page store, as P servers\n"
    "or `ember serve --workers P` would). Needs root for KSM's settings. The host's\n"
    "settings come back even when the bench is killed, SIGKILL included: a guard process\n"
    "holds them.\n"
    "Also: UPM's merge time per MiB; model and model2's store in one domain and in two;\n"
    "the reset after writing K of 4096 pages (K = 1, 10, 100, 1000) on KVM in the upm and\n"
    "off modes and on ptrace (which compares every page), next to a memcpy of K pages.\n"
    "Each row also counts the host mappings (VMAs, against vm.max_map_count) and the\n"
    "descriptors (against RLIMIT_NOFILE) the process gained per instance, and the\n"
    "guest memory under KVM's memory slots per instance (the kernel keeps ~10 bytes\n"
    "for each 4 KiB page of it; 0 on ptrace).\n"
    "--json prints {\"results\": [{\"function\", \"mode\", \"n\", \"pss_per_instance_kib\",\n"
    "\"kernel_per_instance_kib\", \"vmas_per_instance\", \"fds_per_instance\",\n"
    "  \"slot_kib_per_instance\"}...],\n"
    "\"max_warm\": {...}, \"max_warm_limit\": \"...\",\n"
    "\"max_map_count\", \"merge\": {...}, \"resets\": [...]}.\n\n"
    "options:\n";

/* --n LIST: counts of virtines, 1 to 4096 each */
static const char *parse_n(void *at, const char *s)
{
	struct mem_opts *o = at;
	o->nn = 0;
	for (char *end; *s && o->nn < MAX_N; s = *end ? end + 1 : end) {
		long v = strtol(s, &end, 10);
		if (v < 1 || v > 4096 || (*end && *end != ','))
			return "--n needs counts from 1 to 4096, such as 1,8,64";
		o->n[o->nn++] = (unsigned)v;
	}
	return o->nn ? NULL : "--n needs counts from 1 to 4096, such as 1,8,64";
}

/* --max-only F: hello or hello-js, the functions of the search */
static const char *parse_max_only(void *at, const char *s)
{
	for (int f = 0; f < NMAX_FNS; f++)
		if (!strcmp(s, bench_mem_fns[f].name))
			return *(int *)at = f + 1, NULL;
	return "--max-only needs hello or hello-js";
}

static const struct opt mem_opts[] = {
    OPT_FLAG("json", 0, struct mem_args, json, "JSON on stdout (above), not tables"),
    OPT_CALL("n", 0, struct mem_args, o, "LIST", parse_n,
	     "the counts of warm virtines measured (default 1,8,64,512)"),
    OPT_FLAG_SET("no-max", 0, struct mem_args, o.max, 0, "no search for the largest N"),
    OPT_LLONG("max-map-count", 0, struct mem_args, o.map_count, "N", 1, 2147483647,
	      "--max-map-count needs a count from 1 to 2147483647",
	      "vm.max_map_count during the search (put back after)"),
    OPT_INT("processes", 0, struct mem_args, o.processes, "P", 1, 16,
	    "--processes needs a count from 1 to 16", "the search split over P processes"),
    OPT_CALL("max-only", 0, struct mem_args, o.max_only, "F", parse_max_only,
	     "only the search for the largest N, of function F"),
    OPT_STRING("backend", 0, struct mem_args, o.backend, "B", "kvm or ptrace"),
    OPT_INT("max-child", 0, struct mem_args, child, "F", 0, 1000000,
	    "--max-child needs a function's number",
	    "inner: one process of a split search, for function F"),
    OPT_LLONG("budget-kib", 0, struct mem_args, o.budget_kib, "KIB", 1, 1LL << 40,
	      "--budget-kib needs a number of KiB", "inner: that process's share of the 20 GiB"),
    OPT_END(),
};

static const struct opt_cmd mem_cmd = BENCH_CMD("bench memory", mem_head, mem_opts);

int bench_mem_parse(int argc, char **argv, struct mem_args *a)
{
	int first;
	return opt_parse(&mem_cmd, a, argc, argv, &first);
}

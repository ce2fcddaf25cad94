/* `ember bench all`'s DIR/summary.md: the machine, the method, every part's rows, the goals. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_all.h"

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : -1;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* the row of a part named name on backend (NULL: any) */
static json_t *find(const struct all_ctx *c, const char *part, const char *name,
		    const char *backend)
{
	json_t *rows = json_object_get(c->summary, part), *r;
	size_t i;
	json_array_foreach(rows, i, r)
	{
		if (!strcmp(str(r, "name"), name) &&
		    (!backend || !strcmp(str(r, "backend"), backend)))
			return r;
	}
	return NULL;
}

static void latency_table(const struct all_ctx *c, FILE *f)
{
	json_t *rows = json_object_get(c->summary, "latency"), *r;
	size_t i;
	if (!rows)
		return;
	fprintf(f, "\n## Latency (one invocation, start to output)\n\n"
		   "Native peers' × exit floor is against the first backend's floor.\n\n"
		   "| row | backend | samples | p50 µs | p99 µs | × exit floor "
		   "|\n|---|---|---|---|---|---|\n");
	json_array_foreach(rows, i, r)
	{
		if (json_object_get(r, "reason"))
			fprintf(f, "| %s | %s | 0 | — | — | not run: %s |\n", str(r, "name"),
				str(r, "backend"), str(r, "reason"));
		else
			fprintf(f, "| %s | %s | %.0f | %.1f | %.1f | %.1f |\n", str(r, "name"),
				str(r, "backend"), num(r, "n"), num(r, "p50_us"), num(r, "p99_us"),
				num(r, "x_exit_floor"));
	}
}

static void suite_cold_http(const struct all_ctx *c, FILE *f)
{
	json_t *r;
	size_t i;
	if (json_object_get(c->summary, "suite"))
		fprintf(f,
			"\n## Suite (warm, %d samples per row after 3 to warm up)\n\n| function | "
			"backend | trap p50 µs | trap p99 µs | trap exits | guest p50 µs | guest "
			"p99 µs | guest exits |\n|---|---|---|---|---|---|---|---|\n",
			c->suite_iters);
	json_array_foreach(json_object_get(c->summary, "suite"), i, r) fprintf(
	    f, "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", str(r, "name"),
	    str(r, "backend"), num(r, "trap_p50_us"), num(r, "trap_p99_us"), num(r, "trap_exits"),
	    num(r, "guest_p50_us"), num(r, "guest_p99_us"), num(r, "guest_exits"));
	if (json_object_get(c->summary, "cold"))
		fprintf(
		    f,
		    "\n## Cold starts from disk (%d per mode, page cache dropped)\n\nThe disk: "
		    "%.0f "
		    "MB/s (a 256 MiB O_DIRECT read in 4 MiB chunks, this run).\n\n| function | "
		    "backend | lazy p50 ms | REAP p50 ms | speedup | working set KiB | prefetch "
		    "MB/s | × disk |\n|---|---|---|---|---|---|---|---|\n",
		    c->cold_iters,
		    num(json_array_get(json_object_get(c->summary, "cold"), 0), "disk_mb_s"));
	json_array_foreach(json_object_get(c->summary, "cold"), i, r)
	    fprintf(f, "| %s | %s | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f |\n", str(r, "name"),
		    str(r, "backend"), num(r, "lazy_p50_ms"), num(r, "reap_p50_ms"),
		    num(r, "speedup"), num(r, "ws_pages") * 4, num(r, "prefetch_mb_s"),
		    num(r, "prefetch_mb_s") / num(r, "disk_mb_s"));
	if (json_object_get(c->summary, "http"))
		fprintf(
		    f,
		    "\n## HTTP (hello, closed loop, %g s per point)\n\n| target | connections | "
		    "requests | req/s | p50 µs | p99 µs | errors "
		    "|\n|---|---|---|---|---|---|---|\n",
		    c->http_secs);
	json_array_foreach(json_object_get(c->summary, "http"), i, r)
	    fprintf(f, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", str(r, "name"),
		    num(r, "connections"), num(r, "n"), num(r, "requests_per_s"), num(r, "p50_us"),
		    num(r, "p99_us"), num(r, "errors"));
}

static void memory_table(const struct all_ctx *c, FILE *f)
{
	json_t *rows = json_object_get(c->summary, "memory"), *r;
	size_t i;
	if (!rows)
		return;
	fprintf(f,
		"\n## Memory density (backend %s; PSS per warm, primed virtine)\n\n| function "
		"| mode | virtines | PSS per virtine KiB |\n|---|---|---|---|\n",
		c->backends[0]);
	json_array_foreach(rows, i, r)
	{
		fprintf(f, "| %s | %s | %.0f | %.1f |\n", str(r, "function"), str(r, "mode"),
			num(r, "n"), num(r, "pss_per_instance_kib"));
	}
}

/* one goal line: ours / theirs against at most 1/limit */
static void goal(FILE *f, const char *what, json_t *ours, json_t *theirs, double limit)
{
	double a = num(ours, "p50_us"), b = num(theirs, "p50_us");
	if (!ours || !theirs || a <= 0 || b <= 0) {
		fprintf(f, "- %s: **not measured** (%s)\n", what,
			theirs && json_object_get(theirs, "reason") ? str(theirs, "reason")
								    : "a row is missing");
		return;
	}
	double ratio = b / a;
	if (ratio >= limit)
		fprintf(f, "- %s: %.0f µs against %.0f µs, 1/%.1f: **met** (goal 1/%.0f)\n", what,
			a, b, ratio, limit);
	else
		fprintf(
		    f,
		    "- %s: %.0f µs against %.0f µs, 1/%.1f: **missed** by a factor of %.1f (goal "
		    "1/%.0f)\n",
		    what, a, b, ratio, limit / ratio, limit);
}

static void goals(const struct all_ctx *c, FILE *f)
{
	const char *be = c->backends[0];
	fprintf(f, "\n## Goals of issue 16 (backend %s, hello; p50 against p50, one run)\n\n", be);
	json_t *warm = find(c, "latency", "ember_warm_guest_hello", be);
	json_t *trap = find(c, "latency", "ember_warm_trap_hello", be);
	if (!warm || (trap && num(trap, "p50_us") > 0 && num(trap, "p50_us") < num(warm, "p50_us")))
		warm = trap;
	json_t *cold = find(c, "latency", "ember_cold_reap_hello", be);
	json_t *vm = find(c, "latency", "microvm_kvm_hello", NULL);
	if (!vm || json_object_get(vm, "reason"))
		vm = find(c, "latency", "microvm_tcg_hello", NULL);
	goal(f, "warm Ember vs gVisor (runsc ptrace)", warm,
	     find(c, "latency", "runsc_ptrace_hello", NULL), 10);
	goal(f, "warm Ember vs bwrap", warm, find(c, "latency", "bwrap_hello", NULL), 10);
	goal(f, "cold Ember (REAP, from disk) vs runc run", cold,
	     find(c, "latency", "runc_hello", NULL), 20);
	goal(f,
	     vm && strstr(str(vm, "name"), "tcg")
		 ? "cold Ember vs microVM boot — against QEMU's TCG emulation, because the KVM "
		   "microVM did not boot here: not a fair stand-in for a Firecracker-class VM"
		 : "cold Ember vs microVM boot (KVM)",
	     cold, vm, 10);
	json_t *r;
	size_t i, big = 0;
	json_array_foreach(json_object_get(c->summary, "cold"), i, r)
	{
		if (strcmp(str(r, "backend"), be) || num(r, "ws_pages") * 4096 <= 4 << 20)
			continue;
		big++;
		double s = num(r, "speedup");
		fprintf(f,
			"- REAP over lazy, %s (working set %.1f MiB): %.2f×: **%s** (goal 3.7×)\n",
			str(r, "name"), num(r, "ws_pages") * 4096 / 1048576, s,
			s >= 3.7 ? "met" : "missed");
	}
	if (json_object_get(c->summary, "cold") && !big)
		fprintf(f, "- REAP over lazy: no function's working set exceeds 4 MiB here\n");
}

void all_loadavg(char *out, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	float a = -1, b = -1, c = -1;
	if (f && fscanf(f, "%f %f %f", &a, &b, &c) != 3)
		a = b = c = -1;
	if (f)
		fclose(f);
	snprintf(out, len, "%.2f %.2f %.2f", a, b, c);
}

void all_summary_md(struct all_ctx *c, double secs)
{
	char load[64];
	all_loadavg(load, sizeof(load));
	FILE *f = all_open(c, "summary.md");
	if (!f)
		return;
	struct utsname u;
	uname(&u);
	time_t now = time(NULL);
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	fprintf(f, "# ember bench all\n\n%s on %s %s, %ld CPUs, /dev/kvm %s; backends:", when,
		u.sysname, u.release, sysconf(_SC_NPROCESSORS_ONLN),
		access("/dev/kvm", R_OK | W_OK) ? "absent" : "present");
	for (int b = 0; b < c->nbackends; b++)
		fprintf(f, " %s", c->backends[b]);
	fprintf(f,
		"; %.0f s in all%s; load average %s at the start, %s at the end (other "
		"processes share the machine: read ratios within this run).\n\n",
		secs, c->quick ? " (--quick)" : "", c->load0, load);
	fprintf(f,
		"Method: Ember and its peers interleaved round by round in this one process; "
		"warm-up excluded (5 invocations per Ember row, one run per peer, 3 per suite "
		"function); cold rows drop the snapshot's files from the page cache "
		"(posix_fadvise DONTNEED) before each start; every peer run bounded by %d s; "
		"medians and p99 with their sample counts; ratios to the exit floor "
		"(latency) and to the disk's O_DIRECT bandwidth (cold). Raw samples: the JSON "
		"files next to this one.\n",
		c->peer_timeout_ms / 1000);
	latency_table(c, f);
	suite_cold_http(c, f);
	memory_table(c, f);
	goals(c, f);
	fclose(f);
}

/* `ember bench all`'s latency part: Ember's warm, shell and cold starts per backend and every peer
 * on the same two programs, interleaved round by round in one run, with raw samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_all.h"
#include "bench/bench_peer.h"
#include "bench/bench_samples.h"
#include "cli/cli.h"
#include "ember/ember.h"
#include "pool/pool.h"

#define MAX_ROWS     48
#define EMBER_WARMUP 5

/* the two programs every row runs: the static hello and one function of the suite */
struct prog {
	const char *tag;
	char path[4300];
	uint8_t *req;
	size_t len;
	char want[128]; /* the first line of the expected output */
};

enum kind { K_WARM, K_SHELL, K_COLD, K_FORK, K_PEER };

struct lrow {
	struct bench_set set;
	enum kind kind;
	const struct prog *p;
	int count; /* samples to take over the rounds */
	struct ember_function *fn;
	struct ember_config cfg;
	struct peer_cmd cmd;
	char state[4300];
};

static int ember_sample(struct lrow *r, double *us, char *err, size_t errlen)
{
	struct ember_function *fn = r->fn;
	double t = bench_now_us();
	if (r->kind == K_COLD && ember_load(&r->cfg, &fn, err, errlen))
		return -1;
	struct ember_result res;
	ember_invoke(fn, r->p->req, r->p->len, &res);
	*us = bench_now_us() - t;
	int ok = res.outcome == EMBER_OK && res.status == 0 && res.out_len &&
		 memmem(res.out, res.out_len, r->p->want, strlen(r->p->want));
	if (ok && r->kind == K_COLD && !res.cold)
		snprintf(err, errlen, "the start was not cold");
	else if (!ok)
		snprintf(err, errlen, "%s", res.message[0] ? res.message : "wrong output");
	ok = ok && !(r->kind == K_COLD && !res.cold);
	ember_result_free(&res);
	if (r->kind == K_COLD)
		ember_unload(fn);
	return ok ? 0 : -1;
}

/* fork from this warm process: the child answers the hello request itself (a zygote's model) */
static int fork_sample(struct lrow *r, double *us, char *err, size_t errlen)
{
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return snprintf(err, errlen, "pipe failed"), -1;
	double t = bench_now_us();
	pid_t pid = fork();
	if (pid == 0) {
		char buf[256] = "Hello, ";
		close(in[1]);
		ssize_t n = read(in[0], buf + 7, sizeof(buf) - 10);
		while (n > 0 && (buf[6 + n] == '\n' || buf[6 + n] == ' ')) /* as hello trims */
			n--;
		n = n < 0 ? 0 : n;
		memcpy(buf + 7 + n, "!\n", 2);
		_exit(base_write_all(out[1], buf, (size_t)n + 9) ? 1 : 0);
	}
	close(in[0]);
	close(out[1]);
	base_write_all(in[1], r->p->req, r->p->len);
	close(in[1]);
	char got[256] = "";
	size_t n = 0;
	ssize_t k;
	while ((k = read(out[0], got + n, sizeof(got) - 1 - n)) > 0)
		n += (size_t)k;
	close(out[0]);
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	*us = bench_now_us() - t;
	if (pid < 0 || st != 0 || !strstr(got, r->p->want))
		return snprintf(err, errlen, "the forked child failed"), -1;
	return 0;
}

static int sample(struct lrow *r, double *us, char *err, size_t errlen)
{
	if (r->kind == K_PEER)
		return (*us = peer_run(&r->cmd, r->p->req, r->p->len, err, errlen)) < 0 ? -1 : 0;
	return r->kind == K_FORK ? fork_sample(r, us, err, errlen)
				 : ember_sample(r, us, err, errlen);
}

static int load_prog(const struct all_ctx *c, struct prog *p, const char *tag, const char *path,
		     const char *src)
{
	char file[4400];
	p->tag = tag;
	snprintf(p->path, sizeof(p->path), "%s/%s", c->build, path);
	snprintf(file, sizeof(file), "%s/../functions/%s/small.req", c->build, src);
	char why[EMBER_ERR_MAX];
	uint8_t *want;
	size_t wl, n = 0;
	if (cli_read_file(file, 1 << 20, &p->req, &p->len, why, sizeof(why)))
		return fprintf(stderr, "ember bench all: %s\n", why), -1;
	snprintf(file, sizeof(file), "%s/../functions/%s/small.out", c->build, src);
	if (cli_read_file(file, 1 << 20, &want, &wl, why, sizeof(why)))
		return fprintf(stderr, "ember bench all: %s\n", why), -1;
	while (n < wl && n < sizeof(p->want) - 1 && want[n] != '\n' && want[n] != '\r')
		n++;
	memcpy(p->want, want, n);
	p->want[n] = 0;
	free(want);
	return 0;
}

struct lat {
	struct all_ctx *c;
	struct prog progs[2];
	struct lrow rows[MAX_ROWS];
	size_t n;
	struct bench_set floors[2];
};

static struct lrow *add_row(struct lat *l, const char *name, const char *backend, enum kind k,
			    const struct prog *p, int count)
{
	if (l->n == MAX_ROWS)
		return NULL;
	struct lrow *r = &l->rows[l->n++];
	memset(r, 0, sizeof(*r));
	char full[64];
	snprintf(full, sizeof(full), "%s_%s", name, p->tag);
	bench_set_init(&r->set, full, backend);
	r->kind = k;
	r->p = p;
	r->count = count;
	return r;
}

/* an Ember row: its function loaded (warm, shell) or its snapshot made and recorded (cold) */
static void ember_row(struct lat *l, const char *name, const char *backend, enum kind k,
		      const struct prog *p, const char *syscalls)
{
	struct lrow *r = add_row(l, name, backend, k, p, l->c->iters);
	if (!r)
		return;
	char err[EMBER_ERR_MAX] = "";
	r->cfg = (struct ember_config){.image = p->path,
				       .backend = backend,
				       .pool_size = 1,
				       .syscalls = syscalls,
				       .no_snapshot = k == K_SHELL};
	if (k == K_COLD) {
		snprintf(r->state, sizeof(r->state), "%s/cold-%s-%s", l->c->tmp, backend, p->tag);
		r->cfg.state_dir = r->state;
		r->cfg.restore = "reap";
	}
	if (ember_load(&r->cfg, &r->fn, err, sizeof(err)))
		return bench_set_fail(&r->set, "%s", err);
	r->cfg.cold = k == K_COLD;
	if (k == K_COLD) /* the snapshot is on disk: each sample loads it cold */
		ember_unload(r->fn), r->fn = NULL;
	double us;
	int warm =
	    k == K_COLD ? 1 : EMBER_WARMUP; /* cold: the first start records the working set */
	for (int i = 0; i < warm && !r->set.reason[0]; i++)
		if (sample(r, &us, err, sizeof(err)))
			bench_set_fail(&r->set, "%s", err);
}

/* a peer's rows on both programs; its first run (warm-up, excluded) tells whether it works */
static void peer_rows(struct lat *l, const struct peer *pe)
{
	const struct all_ctx *c = l->c;
	struct peer_env e = {.vmlinux = c->vmlinux[0] ? c->vmlinux : NULL,
			     .timeout_ms = c->peer_timeout_ms};
	snprintf(e.tmp, sizeof(e.tmp), "%s", c->tmp);
	snprintf(e.build, sizeof(e.build), "%s", c->build);
	int count = pe->slow == 2 ? 1 + c->iters / 25 : pe->slow ? 2 + c->iters / 5 : c->iters;
	char why[EMBER_ERR_MAX] = "";
	for (int k = 0; k < 2; k++) {
		const struct prog *p = &l->progs[k];
		struct lrow *r = add_row(l, pe->name, "native", K_PEER, p, count);
		if (!r)
			return;
		all_progress("latency", "preparing %s", r->set.name);
		r->cmd.timeout_ms = c->peer_timeout_ms;
		r->cmd.want = p->want;
		double us;
		if (!why[0] && !pe->prepare(&e, r->set.name, p->path, p->req, p->len, &r->cmd, why,
					    sizeof(why)))
			sample(r, &us, why, sizeof(why));
		if (why[0]) /* a peer that fails with hello is not tried again with the function */
			bench_set_fail(&r->set, "%s", why);
	}
}

static void build_rows(struct lat *l)
{
	const struct all_ctx *c = l->c;
	for (int b = 0; b < c->nbackends; b++) {
		const char *be = c->backends[b];
		for (int k = 0; k < 2; k++) {
			all_progress("latency", "loading Ember's rows on %s (%s)", be,
				     l->progs[k].tag);
			ember_row(l, "ember_warm_trap", be, K_WARM, &l->progs[k], "trap");
			ember_row(l, "ember_warm_guest", be, K_WARM, &l->progs[k], "guest");
			ember_row(l, "ember_shell", be, K_SHELL, &l->progs[k], "trap");
			ember_row(l, "ember_cold_reap", be, K_COLD, &l->progs[k], "trap");
		}
	}
	struct lrow *f = add_row(l, "fork_warm_parent", "native", K_FORK, &l->progs[0], c->iters);
	double us;
	char err[100];
	if (f && sample(f, &us, err, sizeof(err)))
		bench_set_fail(&f->set, "%s", err);
	f = add_row(l, "fork_warm_parent", "native", K_FORK, &l->progs[1], 0);
	if (f)
		bench_set_fail(&f->set, "a forked zygote runs code linked into its "
					"parent, and the suite's function is a separate binary");
	for (size_t i = 0; i < bench_npeers; i++)
		if (all_in_list(c->peers, bench_peers[i].name))
			peer_rows(l, &bench_peers[i]);
}

/* the rounds: in each, every live row whose turn it is takes one sample (a row with fewer
 * samples than rounds is spread evenly over them) */
static void run_rounds(struct lat *l)
{
	int n = l->c->iters;
	for (int i = 0; i < n; i++) {
		if (i % (n / 10 ? n / 10 : 1) == 0)
			all_progress("latency", "round %d of %d", i + 1, n);
		for (size_t k = 0; k < l->n; k++) {
			struct lrow *r = &l->rows[k];
			if (r->set.reason[0] || (i * r->count) / n == ((i + 1) * r->count) / n)
				continue;
			double us;
			char err[EMBER_ERR_MAX] = "";
			if (sample(r, &us, err, sizeof(err)))
				bench_set_fail(&r->set, "failed at sample %zu: %s", r->set.n + 1,
					       err);
			else
				bench_set_add(&r->set, us);
		}
	}
}

/* the exit floor of each backend, before and after the rounds */
static void measure_floors(struct lat *l, int first)
{
	const struct all_ctx *c = l->c;
	int n = c->iters * 5;
	double *us = calloc((size_t)n, sizeof(double));
	for (int b = 0; us && b < c->nbackends; b++) {
		struct bench_set *f = &l->floors[b];
		if (first)
			bench_set_init(f, "exit_floor", c->backends[b]);
		if (bench_exit_floor(c->build, c->backends[b], us, n)) {
			bench_set_fail(f, "the exit floor guest failed");
			continue;
		}
		for (int i = 0; i < n; i++)
			bench_set_add(f, us[i]);
	}
	free(us);
}

static double floor_of(const struct lat *l, const char *backend)
{
	struct bench_stats st;
	for (int b = 0; b < l->c->nbackends; b++)
		if (!strcmp(l->floors[b].backend, backend) && !bench_set_stats(&l->floors[b], &st))
			return st.p50;
	return bench_set_stats(&l->floors[0], &st) ? -1 : st.p50; /* a peer: the first backend's */
}

/* a row's JSON with its ratio to the exit floor; the summary row */
static json_t *row_json(const struct lat *l, const struct bench_set *s, json_t *summary)
{
	json_t *o = bench_set_json(s);
	struct bench_stats st;
	double fl = floor_of(l, s->backend);
	if (!bench_set_stats(s, &st) && fl > 0)
		json_object_set_new(o, "x_exit_floor", json_real(st.p50 / fl));
	json_t *r = json_deep_copy(o);
	json_object_del(r, "samples_us");
	json_array_append_new(summary, r);
	return o;
}

/* a colour per row (gnuplot's own eight repeat on a plot of sixteen lines) */
static const char *const colours[] = {
    "#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a65628", "#f781bf", "#555555",
    "#66c2a5", "#fc8d62", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#000000"};
#define NCOLOURS (sizeof(colours) / sizeof(colours[0]))

/* one CDF plot per program: every row that ran, log-scale x */
static void plot(const struct lat *l, const struct prog *p)
{
	char name[64], dat[128];
	snprintf(name, sizeof(name), "latency_cdf_%s", p->tag);
	snprintf(dat, sizeof(dat), "%s.gp", name);
	FILE *gp = all_open(l->c, dat);
	if (!gp)
		return;
	fprintf(gp,
		"set terminal pngcairo size 1000,600 noenhanced\nset output '%s/%s.png'\n"
		"set logscale x\nset xlabel 'start to output, microseconds (log)'\n"
		"set ylabel 'fraction of samples'\nset yrange [0:1]\nset key outside right\n"
		"set grid\n"
		"set title 'one invocation of %s: Ember and its peers, one run'\nplot ",
		l->c->out, name, p->tag);
	int first = 1;
	for (size_t k = 0; k < l->n; k++) {
		const struct bench_set *s = &l->rows[k].set;
		if (l->rows[k].p != p || s->reason[0] || !s->n)
			continue;
		snprintf(dat, sizeof(dat), "cdf/%s-%s.dat", s->name, s->backend);
		FILE *f = all_open(l->c, dat);
		if (!f)
			continue;
		bench_set_cdf(s, f);
		fclose(f);
		/* the backend as the dash: kvm solid, ptrace dashed, native peers dotted */
		int dt = !strcmp(s->backend, "kvm") ? 1 : !strcmp(s->backend, "ptrace") ? 2 : 3;
		fprintf(gp, "%s'%s/%s' using 1:2 with steps lw 2 dt %d lc rgb '%s' title '%s (%s)'",
			first ? "" : ", ", l->c->out, dat, dt, colours[k % NCOLOURS], s->name,
			s->backend);
		first = 0;
	}
	fprintf(gp, "\n");
	fclose(gp);
	all_gnuplot(l->c, name);
}

int all_latency(struct all_ctx *c)
{
	struct lat *l = calloc(1, sizeof(*l));
	if (!l)
		return -1;
	l->c = c;
	int rc = -1;
	if (load_prog(c, &l->progs[0], "hello", "guest/hello.musl", "hello") ||
	    load_prog(c, &l->progs[1], "sha256", "functions/sha256", "sha256"))
		goto out;
	pool_shell_target(2);
	measure_floors(l, 1);
	build_rows(l);
	run_rounds(l);
	measure_floors(l, 0);
	json_t *rows = json_array(), *floors = json_array(), *sum = json_array();
	for (int b = 0; b < c->nbackends; b++)
		json_array_append_new(floors, row_json(l, &l->floors[b], sum));
	for (size_t k = 0; k < l->n; k++)
		json_array_append_new(rows, row_json(l, &l->rows[k].set, sum));
	json_object_set_new(c->summary, "latency", sum);
	rc = all_write_json(c, "latency.json",
			    json_pack("{s:i,s:i,s:o,s:o}", "rounds", c->iters, "ember_warmup",
				      EMBER_WARMUP, "exit_floors", floors, "rows", rows));
	plot(l, &l->progs[0]);
	plot(l, &l->progs[1]);
out:
	for (size_t k = 0; k < l->n; k++) {
		struct lrow *r = &l->rows[k];
		if (r->fn)
			ember_unload(r->fn);
		for (char **a = r->cmd.argv; *a; a++)
			free(*a);
		bench_set_free(&r->set);
	}
	for (int b = 0; b < c->nbackends; b++)
		bench_set_free(&l->floors[b]);
	for (int k = 0; k < 2; k++)
		free(l->progs[k].req);
	free(l);
	return rc;
}

/* A loaded function and one invocation of it: machine, image, syscall emulation, result. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/ember.h"
#include "image/img.h"
#include "sys/sys.h"
#include "vm/vm.h"

#define DEFAULT_MEM     (64ULL << 20)
#define DEFAULT_TIMEOUT 10.0
#define DEFAULT_OUTPUT  (6ULL << 20)

struct ember_function {
	struct img *img;
	struct vm_config vmcfg;
	uint64_t timeout_ns;
	uint64_t output_limit;
	char **argv, **envp;
	uint8_t *code;
	size_t code_len;
	pthread_mutex_t lock;
	struct vm *spare; /* a clean machine made at load, for the first invocation */
};

static char **dup_vec(const char *const *v, const char *fallback)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **d = calloc(n + 2, sizeof(*d));
	if (!d)
		return NULL;
	if (!v && fallback) {
		d[0] = strdup(fallback);
		return d;
	}
	for (size_t i = 0; i < n; i++)
		d[i] = strdup(v[i]);
	return d;
}

static void free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static uint64_t us_since(uint64_t t0)
{
	return (vm_now_ns() - t0) / 1000;
}

int ember_load(const struct ember_config *cfg, struct ember_function **out, char *err,
	       size_t errlen)
{
	struct ember_function *fn = calloc(1, sizeof(*fn));
	if (!fn)
		return snprintf(err, errlen, "out of memory"), EMBER_ERR;
	pthread_mutex_init(&fn->lock, NULL);
	int rc = EMBER_ERR;
	fn->vmcfg.mem_size = cfg->mem_bytes ? cfg->mem_bytes : DEFAULT_MEM;
	fn->vmcfg.backend = VM_BACKEND_KVM;
	if (cfg->backend && vm_backend_parse(cfg->backend, &fn->vmcfg.backend)) {
		snprintf(err, errlen, "unknown backend '%s' (kvm, ptrace or auto)", cfg->backend);
		goto fail;
	}
	double t = cfg->timeout_s > 0 ? cfg->timeout_s : DEFAULT_TIMEOUT;
	if (t > 86400) {
		snprintf(err, errlen, "timeout must be at most 86400 seconds");
		goto fail;
	}
	fn->timeout_ns = (uint64_t)(t * 1e9);
	fn->output_limit = cfg->output_limit ? cfg->output_limit : DEFAULT_OUTPUT;
	if (!cfg->image) {
		snprintf(err, errlen, "no image given");
		goto fail;
	}
	if (img_open(cfg->image, &fn->img, err, errlen))
		goto fail;
	fn->argv = dup_vec(cfg->argv, cfg->image);
	fn->envp = dup_vec(cfg->envp, NULL);
	if (cfg->code_len) {
		fn->code = malloc(cfg->code_len);
		if (fn->code)
			memcpy(fn->code, cfg->code, cfg->code_len);
		fn->code_len = cfg->code_len;
	}
	if (!fn->argv || !fn->envp || (cfg->code_len && !fn->code)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	int vrc = vm_create(&fn->vmcfg, &fn->spare, err, errlen);
	if (vrc != VM_OK) {
		rc = vrc == VM_ENOKVM ? EMBER_ERR_NOKVM : EMBER_ERR;
		goto fail;
	}
	fn->vmcfg.backend = vm_backend_of(fn->spare); /* "auto" settles here */
	*out = fn;
	return 0;
fail:
	ember_unload(fn);
	return rc;
}

void ember_unload(struct ember_function *fn)
{
	if (!fn)
		return;
	vm_destroy(fn->spare);
	img_close(fn->img);
	free_vec(fn->argv);
	free_vec(fn->envp);
	free(fn->code);
	pthread_mutex_destroy(&fn->lock);
	free(fn);
}

void ember_info(const struct ember_function *fn, struct ember_info *info)
{
	info->backend = vm_backend_name(fn->vmcfg.backend);
	info->rewritten_sites = fn->img->sites.n;
	info->image_bytes = fn->img->len;
}

static const struct {
	enum sys_outcome sys;
	enum ember_outcome outcome;
} outcomes[] = {
	{SYS_EXITED, EMBER_OK},	      {SYS_SIGNALED, EMBER_CRASH}, {SYS_TIMEOUT, EMBER_TIMEOUT},
	{SYS_LIMIT, EMBER_LIMIT},     {SYS_ERROR, EMBER_ERROR},    {SYS_RUNNING, EMBER_ERROR},
};

static void fill_result(struct ember_result *res, struct sys_state *st)
{
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		if (outcomes[i].sys == st->outcome)
			res->outcome = outcomes[i].outcome;
	snprintf(res->message, sizeof(res->message), "%s", st->msg);
	const int codes[] = {[EMBER_OK] = 0, [EMBER_CRASH] = 0, [EMBER_TIMEOUT] = 124,
			     [EMBER_LIMIT] = 126, [EMBER_ERROR] = 125};
	res->exit_code = codes[res->outcome];
	if (res->outcome == EMBER_OK)
		res->status = res->exit_code = st->status;
	if (res->outcome == EMBER_CRASH) {
		res->signal = st->status;
		res->exit_code = 128 + st->status;
	}
	res->out = st->out.data;
	res->out_len = st->out.len;
	res->log = st->log.data;
	res->log_len = st->log.len;
	st->out.data = st->log.data = NULL;
	for (int k = 0; k < 4; k++) {
		res->exits_by_reason[k] = st->stats.exits[k];
		res->exits += st->stats.exits[k];
	}
	size_t n = 0;
	for (int i = 0; i <= SYS_NR_MAX; i++)
		n += st->stats.served[i] || st->stats.denied[i];
	res->syscalls = calloc(n ? n : 1, sizeof(*res->syscalls));
	for (int i = 0; res->syscalls && i <= SYS_NR_MAX; i++) {
		if (!st->stats.served[i] && !st->stats.denied[i])
			continue;
		res->syscalls[res->nsyscalls++] = (struct ember_syscall_count){
			i, sys_name(i), st->stats.served[i], st->stats.denied[i]};
	}
}

static int prepare(struct ember_function *fn, struct vm *vm, struct sys_state *st, char *err,
		   size_t errlen)
{
	struct img_layout l;
	if (img_load(fn->img, vm, (const char *const *)fn->argv, (const char *const *)fn->envp, &l,
		     err, errlen))
		return -1;
	struct sys_process proc = {.brk_start = l.brk_start,
				   .mmap_hi = l.mmap_hi,
				   .stack_lo = l.stack_lo,
				   .stack_hi = l.stack_hi,
				   .stack_size = l.stack_size};
	sys_init(st, vm, &proc);
	st->out_limit = fn->output_limit;
	for (int i = 0; i < l.nmaps; i++)
		if (sys_vma_map(st, l.maps[i].start, l.maps[i].end, l.maps[i].prot))
			return snprintf(err, errlen, "out of memory"), -1;
	if (fn->code)
		sys_set_code(st, fn->code, fn->code_len);
	struct vm_regs r;
	memset(&r, 0, sizeof(r));
	r.rip = l.entry;
	r.rsp = l.sp;
	r.rflags = 0x2;
	if (vm_set_regs(vm, &r) || vm_set_fs_base(vm, 0))
		return snprintf(err, errlen, "cannot set the vCPU registers"), -1;
	return 0;
}

int ember_invoke(struct ember_function *fn, const void *in, size_t len, struct ember_result *res)
{
	memset(res, 0, sizeof(*res));
	char err[200] = "";
	uint64_t t0 = vm_now_ns();
	pthread_mutex_lock(&fn->lock);
	struct vm *vm = fn->spare;
	fn->spare = NULL;
	pthread_mutex_unlock(&fn->lock);
	if (!vm && vm_create(&fn->vmcfg, &vm, err, sizeof(err)) != VM_OK) {
		res->outcome = EMBER_ERROR;
		res->exit_code = 125;
		snprintf(res->message, sizeof(res->message), "%s", err);
		return -1;
	}
	res->setup_us = us_since(t0);
	struct sys_state st;
	memset(&st, 0, sizeof(st));
	uint64_t t1 = vm_now_ns();
	if (prepare(fn, vm, &st, err, sizeof(err))) {
		sys_free(&st);
		vm_destroy(vm);
		res->outcome = EMBER_ERROR;
		res->exit_code = 125;
		snprintf(res->message, sizeof(res->message), "%s", err);
		return -1;
	}
	res->load_us = us_since(t1);
	sys_set_input(&st, in, len);
	uint64_t t2 = vm_now_ns();
	st.start_ns = t2;
	vm_set_deadline(vm, t2 + fn->timeout_ns);
	sys_run(&st);
	vm_set_deadline(vm, 0);
	res->run_us = us_since(t2);
	fill_result(res, &st);
	sys_free(&st);
	vm_destroy(vm);
	return 0;
}

void ember_result_free(struct ember_result *res)
{
	free(res->out);
	free(res->log);
	free(res->syscalls);
	memset(res, 0, sizeof(*res));
}

/* Loading a deployment with the public API: its image or runtime, environment and limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/img.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"
#include "server/srv_secrets.h"
#include "server/srv_workers.h"

#define DEFAULT_POOL	     2
#define POOL_FOR_CONCURRENCY 8
#define MAX_POOL	     64
#define MAX_DEMAND	     256 /* virtines a function without maxConcurrency may grow to */
#define NOKVM_HINT	     " (start the server with --backend auto or --backend ptrace)"

static void add_hint(int rc, char *err, size_t errlen)
{
	size_t n = strlen(err);
	if (rc == EMBER_ERR_NOKVM && n + sizeof(NOKVM_HINT) <= errlen)
		memcpy(err + n, NOKVM_HINT, sizeof(NOKVM_HINT));
}

/* The HTTP status of a failed load or store, by kind: who is at fault, said first in the
 * message. The deployment's own faults are 4xx; the server's are 5xx. */
static const struct {
	int kind;
	unsigned status;
	const char *who;
} load_statuses[] = {
    {EMBER_ERR_IMAGE, 400, "bad image"},
    {EMBER_ERR_CONFIG, 400, "bad deployment"},
    {EMBER_ERR_INIT, 400, "the function's initialisation failed"},
    {EMBER_ERR_NOKVM, 503, "the server cannot run virtines"},
    {EMBER_ERR_NOMEM, 503, "the server is out of memory"},
    {EMBER_ERR_IO, 507, "the server cannot write its state folder"},
    {EMBER_ERR, 500, "the server failed"},
};

enum MHD_Result srv_reply_load_error(struct srv_req *r, int kind, const char *err)
{
	size_t i = 0, n = sizeof(load_statuses) / sizeof(load_statuses[0]);
	while (i < n - 1 && load_statuses[i].kind != kind)
		i++; /* the last entry, EMBER_ERR, stands for any kind not listed */
	char msg[SRV_ERR_MAX + 64];
	snprintf(msg, sizeof(msg), "%s: %s", load_statuses[i].who, err);
	return srv_reply_json(
	    r, load_statuses[i].status,
	    json_pack("{s:s,s:s}", "error", msg, "kind", ember_error_name(load_statuses[i].kind)));
}

/* ready virtines made at load and always kept: minWarm, at least DEFAULT_POOL, and up to
 * maxConcurrency but no more than POOL_FOR_CONCURRENCY for it */
static unsigned pool_size(const struct srv_spec *sp)
{
	unsigned n = DEFAULT_POOL;
	if (sp->max_concurrency > n)
		n = sp->max_concurrency < POOL_FOR_CONCURRENCY ? sp->max_concurrency
							       : POOL_FOR_CONCURRENCY;
	if (n < sp->min_warm)
		n = sp->min_warm;
	return n > MAX_POOL ? MAX_POOL : n;
}

/* the most virtines demand may grow it to: maxConcurrency (one more is never used at once),
 * else MAX_DEMAND; the budget bounds it further */
static unsigned pool_max(const struct srv_spec *sp)
{
	unsigned n = sp->max_concurrency ? sp->max_concurrency : MAX_DEMAND;
	return n > MAX_DEMAND ? MAX_DEMAND : n;
}

int load_spec(struct srv *s, const struct srv_spec *sp, const char *image, struct srv_inst **out,
	      char *err, size_t errlen)
{
	char path[SRV_PATH_MAX];
	const char *argv[6] = {NULL};
	struct img_runtime lang;
	uint64_t lang_mem = 0;
	struct ember_config cfg = {0};
	if (sp->image[0] && image) {
		snprintf(path, sizeof(path), "%s", image);
		argv[0] = sp->image;
	} else if (sp->image[0] && sp->pin[0]) {
		/* its own copy, never what was uploaded since */
		if (pin_path(s, sp->pin, path, sizeof(path)) || access(path, R_OK))
			return snprintf(err, errlen,
					"the image of this version (functions/%s) is "
					"missing: deploy it again",
					sp->pin),
			       EMBER_ERR;
		argv[0] = sp->image;
	} else if (sp->image[0]) {
		if (store_path(s, "images", sp->image, "", path, sizeof(path)) ||
		    access(path, R_OK))
			return snprintf(err, errlen,
					"image '%s' has not been uploaded (PUT /system/images/%s)",
					sp->image, sp->image),
			       EMBER_ERR_IMAGE;
		argv[0] = sp->image;
	} else if (sp->process) { /* a root filesystem's own program */
		snprintf(path, sizeof(path), "%s", sp->process[0]);
		cfg.image_in_files = 1;
	} else {
		if (img_runtime_find(s->runtime_dir, sp->runtime, &lang, err, errlen))
			return EMBER_ERR; /* the server's installation, not the deployment */
		snprintf(path, sizeof(path), "%s", lang.image);
		memcpy(argv, lang.argv, sizeof(argv));
		argv[0] = path;
		cfg.code = sp->code;
		cfg.code_len = sp->code_len;
		cfg.runtime_files = lang.files[0] ? lang.files : NULL;
		lang_mem = lang.mem;
	}
	cfg.image = path;
	cfg.argv = sp->process ? (const char *const *)sp->process : argv;
	cfg.envp = (const char *const *)sp->envp;
	cfg.files_tar = sp->files;
	cfg.files_tar_len = sp->files_len;
	cfg.backend = s->backend;
	cfg.mem_bytes = BASE_ROUND_UP(sp->mem_bytes ? sp->mem_bytes : lang_mem, EMBER_MEM_ALIGN);
	cfg.timeout_s = sp->timeout_s;
	/* 0 when not given: ember_load's defaults. More than one vCPU on the ptrace backend is
	 * its EMBER_ERR_CONFIG, a 400 naming cpus */
	cfg.cpus = sp->cpus;
	cfg.threads = sp->threads;
	cfg.pids = sp->pids;
	cfg.syscalls = sp->syscalls[0] ? sp->syscalls : s->syscalls[0] ? s->syscalls : NULL;
	cfg.sharing = sp->sharing[0] ? sp->sharing : s->sharing;
	cfg.sharing_domain = sp->domain;
	cfg.pool_size = pool_size(sp);
	cfg.pool_max = pool_max(sp);
	cfg.no_ready = sp->no_ready;
	cfg.keep_alive_s = sp->keep_alive_s;
	cfg.budget = s->budget;
	/* snapshots persist beside the deployments: after a restart, or an unload for keep-alive,
	 * the next request starts cold from disk instead of running init again */
	cfg.state_dir = s->state;
	struct srv_secret_set *sec; /* read now: a secret updated since is seen */
	int rc = secrets_load(s, sp, &sec, err, errlen);
	if (rc)
		return rc;
	/* a snapshot holds what init read, a secret's value too: never written to disk, where an
	 * old value would outlive its update or removal (such a function runs init again after
	 * a restart or an unload) */
	if (sec && sec->n)
		cfg.state_dir = NULL;
	cfg.secret_files = sec ? sec->files : NULL;
	cfg.nsecret_files = sec ? sec->n : 0;
	struct srv_inst *in = calloc(1, sizeof(*in));
	rc = in ? ember_load(&cfg, &in->fn, err, errlen)
		: (snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM);
	secrets_free(sec); /* the function holds its own copy */
	if (rc) {
		add_hint(rc, err, errlen);
		free(in);
		return rc;
	}
	in->refs = 1;
	in->srv = s;
	snprintf(in->name, sizeof(in->name), "%s", sp->name);
	struct ember_info info;
	ember_info(in->fn, &info);
	in->mem_bytes = info.mem_bytes; /* a Go program's default is not EMBER_MEM_DEFAULT */
	*out = in;
	return 0;
}

/* validates an uploaded executable: loads it without running it */
int load_check_image(struct srv *s, const char *path, struct ember_info *info, char *err,
		     size_t errlen)
{
	struct ember_config cfg = {0};
	struct ember_function *fn;
	cfg.image = path;
	cfg.backend = s->backend;
	cfg.no_snapshot = 1;
	int rc = ember_load(&cfg, &fn, err, errlen);
	if (rc) {
		add_hint(rc, err, errlen);
		return rc;
	}
	ember_info(fn, info);
	ember_unload(fn);
	return 0;
}

/* another loaded version (of any function) uses the snapshot folder path (s->mu not held) */
static int snapshot_used(struct srv *s, const struct srv_inst *in, const char *path)
{
	int used = 0;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nfns && !used; i++) {
		struct srv_inst *o = s->fns[i]->inst;
		struct ember_info info;
		if (!o || o == in)
			continue;
		ember_info(o->fn, &info);
		used = info.snapshot_path && !strcmp(info.snapshot_path, path);
	}
	pthread_mutex_unlock(&s->mu);
	return used;
}

void inst_unload(struct srv_inst *in)
{
	if (!in)
		return;
	struct ember_info info;
	ember_info(in->fn, &info);
	/* a version that will not be loaded again: its snapshot would stay on disk for ever (an
	 * update of a runtime function's code makes a new one every time).
	 * --workers: a worker that ran another's function while its owner was down never removes
	 * it: the snapshot's key is the configuration's, and the owner's version may be the same */
	if (in->retired && info.snapshot_path && workers_here(in->srv, in->name) &&
	    !snapshot_used(in->srv, in, info.snapshot_path))
		ember_snapshot_remove(in->fn);
	ember_unload(in->fn);
	free(in);
}

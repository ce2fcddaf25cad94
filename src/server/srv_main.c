/* Starting the server (state, table, async queue, HTTP, reaper) and stopping it gracefully. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image/img.h"
#include "async/async.h"
#include "server/srv_cluster.h"
#include "server/srv_secrets.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_auth.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_cpu.h"
#include "server/srv_http.h"
#include "server/srv_logs.h"
#include "server/srv_workers.h"
#include "metrics/metrics.h"
#include "vm/vm.h"

#define DEFAULT_MAX_BODY   (6ULL << 20)
#define DEFAULT_MAX_IMAGE  (128ULL << 20)
#define DEFAULT_CONN_S	   30
#define DEFAULT_READ_S	   30
#define DEFAULT_MAX_CONNS  1000
#define DEFAULT_SHUTDOWN_S 10.0
#define REAP_INTERVAL_S	   1
#define DEFAULT_LOG_BYTES  (256ULL << 10)
#define DEFAULT_LOG_LINES  2000
#define MIN_LOG_BYTES	   (16ULL << 10)

/* loads what the state directory held, then unloads functions idle past their keepAlive */
static void *reaper(void *p)
{
	struct srv *s = p;
	if (!s->opt.cluster) /* a cluster's node loads what it owns, once it knows the ring */
		reg_preload(s);
	atomic_store(&s->ready, 1);
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		struct timespec ts;
		base_deadline(&ts, REAP_INTERVAL_S);
		pthread_cond_timedwait(&s->reaper_cv, &s->mu, &ts);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->mu);
		reg_evict(s);
		if (s->opt.workers > 1)
			workers_tidy(s);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* the configured folder, else where img_runtime_dir finds it */
static void find_runtimes(struct srv *s)
{
	if (s->opt.runtime_dir)
		snprintf(s->runtime_dir, sizeof(s->runtime_dir), "%s", s->opt.runtime_dir);
	else
		img_runtime_dir(s->runtime_dir, sizeof(s->runtime_dir));
}

static int set_options(struct srv *s, const struct srv_options *opt, char *err, size_t errlen)
{
	s->opt = *opt;
	if (!s->opt.listen)
		s->opt.listen = SRV_DEFAULT_LISTEN;
	if (!s->opt.state_dir)
		s->opt.state_dir = SRV_DEFAULT_STATE;
	if (!s->opt.max_body)
		s->opt.max_body = DEFAULT_MAX_BODY;
	if (!s->opt.max_image)
		s->opt.max_image = DEFAULT_MAX_IMAGE;
	if (!s->opt.conn_timeout_s)
		s->opt.conn_timeout_s = DEFAULT_CONN_S;
	if (!s->opt.read_timeout_s)
		s->opt.read_timeout_s = DEFAULT_READ_S;
	if (!s->opt.max_conns)
		s->opt.max_conns = DEFAULT_MAX_CONNS;
	if (!s->opt.max_conns_per_addr)
		s->opt.max_conns_per_addr = (s->opt.max_conns + 3) / 4;
	if (!(s->opt.shutdown_s > 0))
		s->opt.shutdown_s = DEFAULT_SHUTDOWN_S;
	if (!s->opt.costly_after_ms)
		s->opt.costly_after_ms = DEFAULT_COSTLY_MS;
	if (!s->opt.log_ring_bytes)
		s->opt.log_ring_bytes = DEFAULT_LOG_BYTES;
	if (!s->opt.log_ring_lines)
		s->opt.log_ring_lines = DEFAULT_LOG_LINES;
	if (s->opt.log_ring_bytes < MIN_LOG_BYTES)
		return snprintf(err, errlen, "logRingSize: a log ring needs at least %lluK",
				MIN_LOG_BYTES >> 10),
		       -1;
	const char *b = opt->backend ? opt->backend : getenv("EMBER_BACKEND");
	if (!b || !b[0])
		b = "kvm";
	if (strcmp(b, "kvm") && strcmp(b, "ptrace") && strcmp(b, "auto"))
		return snprintf(err, errlen, "unknown backend '%s' (kvm, ptrace or auto)", b), -1;
	snprintf(s->backend, sizeof(s->backend), "%s", b);
	const char *sh = opt->sharing && opt->sharing[0] ? opt->sharing : "upm";
	if (strcmp(sh, "upm") && strcmp(sh, "off") && strcmp(sh, "ksm"))
		return snprintf(err, errlen, "unknown sharing mode '%s' (upm, off or ksm)", sh), -1;
	snprintf(s->sharing, sizeof(s->sharing), "%s", sh);
	const char *sc = opt->syscalls ? opt->syscalls : getenv("EMBER_SYSCALLS");
	if (sc && sc[0] && strcmp(sc, "guest") && strcmp(sc, "trap"))
		return snprintf(err, errlen, "unknown syscalls mode '%s' (guest or trap)", sc), -1;
	snprintf(s->syscalls, sizeof(s->syscalls), "%s", sc ? sc : "");
	int kvm = strcmp(b, "kvm") ? 0 : vm_dev_kvm();
	if (kvm < 0)
		srv_log(s, "warning",
			"/dev/kvm is not usable (%s); deployments will fail "
			"(use --backend auto or ptrace)",
			strerror(-kvm));
	find_runtimes(s);
	s->opt.runtime_dir = s->runtime_dir;
	return 0;
}

int srv_start(const struct srv_options *opt, struct srv **out, char *err, size_t errlen)
{
	struct srv *s = calloc(1, sizeof(*s));
	if (!s || !(s->metrics = metrics_new())) {
		free(s);
		return snprintf(err, errlen, "out of memory"), -1;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->admin, NULL);
	pthread_mutex_init(&s->conn_mu, NULL);
	base_cond_init(&s->idle);
	base_cond_init(&s->reaper_cv);
	s->started = srv_now();
	if (set_options(s, opt, err, errlen) || store_init(s, err, errlen) ||
	    secrets_init(s, err, errlen) || store_seed(s, err, errlen) || auth_init(s, err, errlen))
		goto fail;
	cpu_start(s);
	s->budget =
	    ember_budget_new(s->opt.memory_budget ? s->opt.memory_budget : SRV_BUDGET_DEFAULT);
	if (!s->budget) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	store_restore(s);
	int unpinned =
	    s->opt.workers <= 1 || (!s->opt.worker && !s->opt.restarted) ? pin_sweep(s) : 0;
	if (unpinned)
		srv_log(s, "info", "removed %d images no deployment names", unpinned);
	if (async_init(s, err, errlen) || http_start(s, err, errlen))
		goto fail;
	if (pthread_create(&s->reaper, NULL, reaper, s)) {
		MHD_stop_daemon(s->mhd);
		if (s->mhd_peer)
			MHD_stop_daemon(s->mhd_peer);
		wk_stop(s);
		snprintf(err, errlen, "cannot start a thread");
		goto fail;
	}
	s->reaper_started = 1;
	if (cluster_start(s, err, errlen)) {
		srv_shutdown(s);
		return -1;
	}
	if (conn_watch_start(s)) {
		srv_shutdown(s);
		return snprintf(err, errlen, "cannot start a thread"), -1;
	}
	if (async_run(s, err, errlen)) {
		srv_shutdown(s);
		return -1;
	}
	*out = s;
	return 0;
fail:
	async_free(s);
	reg_free(s);
	metrics_free(s->metrics);
	ember_budget_free(s->budget);
	free(s);
	return -1;
}

const char *srv_address(const struct srv *s)
{
	return s->address;
}

unsigned srv_shutdown(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_broadcast(&s->reaper_cv);
	pthread_mutex_unlock(&s->mu);
	logs_shutdown(s); /* followers of /system/logs end now instead of holding the wait up */
	async_stop(s);	  /* the calls still queued stay on disk for the next start */
	MHD_socket lfd = MHD_quiesce_daemon(s->mhd);
	struct timespec ts;
	base_deadline(&ts, s->opt.shutdown_s);
	pthread_mutex_lock(&s->mu);
	while (s->active && pthread_cond_timedwait(&s->idle, &s->mu, &ts) != ETIMEDOUT)
		;
	unsigned left = s->active;
	pthread_mutex_unlock(&s->mu);
	left += async_wait(s, &ts); /* the async calls running finish, callbacks included */
	if (s->reaper_started)
		pthread_join(s->reaper, NULL);
	cluster_stop(s);
	conn_watch_stop(s);
	if (left)
		return left; /* their threads still use everything: the process exits instead */
	MHD_stop_daemon(s->mhd);
	if (s->mhd_peer)
		MHD_stop_daemon(s->mhd_peer);
	wk_stop(s);
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
	async_free(s);
	reg_free(s);
	metrics_free(s->metrics);
	ember_budget_free(s->budget);
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->reaper_cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->admin);
	pthread_mutex_destroy(&s->conn_mu);
	free(s);
	return 0;
}

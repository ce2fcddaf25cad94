/* The cluster's state inside a node: what it converged to, per function. */
#ifndef EMBER_SRV_CLUSTER_IMPL_H
#define EMBER_SRV_CLUSTER_IMPL_H

#include <pthread.h>

#include "server/srv_cluster.h"
#include "server/srv_core.h"

/* one function as this node last applied it from etcd */
struct cluster_fn {
	char name[SRV_NAME_MAX];
	int64_t revision;      /* the key's mod_revision applied (or tried) */
	int64_t version;       /* the key's version: its writes since it was created */
	char err[SRV_ERR_MAX]; /* "" when applied */
};

struct srv_cluster {
	struct etcd *ec;
	pthread_t th;
	int started;
	pthread_mutex_t mu; /* the fields below; a leaf: nothing is locked under it */
	struct cluster_fn *fns;
	size_t nfns, capfns;
	int64_t revision; /* etcd's revision this node has converged to */
	int connected;	  /* the watch is open */
	int synced;	  /* the first sync was tried (done, or etcd unreachable) */
	char last_err[SRV_ERR_MAX];
	uint64_t failures; /* deployments etcd holds that this node could not apply */
};

/* srv_cluster_status.c: the table (err NULL: applied) */
void cluster_record(struct srv_cluster *c, const char *name, int64_t rev, int64_t version,
		    const char *err);
void cluster_forget(struct srv_cluster *c, const char *name);

#endif

/* The cluster's state inside a node: what it converged to, per function. */
#ifndef EMBER_SRV_CLUSTER_IMPL_H
#define EMBER_SRV_CLUSTER_IMPL_H

#include <pthread.h>

#include "server/srv_cluster.h"
#include "server/srv_core.h"
#include "server/srv_ring.h"

#define CLUSTER_NODES	 "/ember/nodes/" /* one key per node (PREFIX ADDRESS), held by its lease */
#define CLUSTER_ADDR_MAX 96
/* what this node holds of a function: loaded and snapshotted as its owner or its next owner on
 * the ring, or nothing until a call comes (UNKNOWN: no ring yet) */
enum { ROLE_UNKNOWN, ROLE_NONE, ROLE_NEXT, ROLE_OWNER };
#define ROLE_HELD(r) ((r) >= ROLE_NEXT)

/* one function as this node last applied it from etcd */
struct cluster_fn {
	char name[SRV_NAME_MAX];
	int64_t revision;      /* the key's mod_revision applied (or tried) */
	int64_t version;       /* the key's version: its writes since it was created */
	char err[SRV_ERR_MAX]; /* "" when applied */
	int role;	       /* ROLE_*, as of the last ring */
	int prepared;	       /* loaded here since it was applied or became held */
	char owner[CLUSTER_ADDR_MAX], next[CLUSTER_ADDR_MAX];
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
	/* membership (srv_cluster_members.c): the nodes registered in etcd, this one included */
	char self[CLUSTER_ADDR_MAX];
	char (*members)[CLUSTER_ADDR_MAX];
	size_t nmembers;
	struct ring ring; /* of members, in their order */
	int ring_tried;	  /* membership was read (or etcd failed) once */
	uint64_t rebalances;
	pthread_t members_th; /* registers, keeps the lease, follows membership */
	pthread_t loader_th;  /* loads and drops what the ring gives and takes */
	int members_started, loader_started;
	int64_t lease; /* the members thread's own */
};

/* srv_cluster_status.c: the table (err NULL: applied; loaded: 1 or 0 as it is now, -1 as it
 * was) */
void cluster_record(struct srv_cluster *c, const char *name, int64_t rev, int64_t version,
		    const char *err, int loaded);
void cluster_forget(struct srv_cluster *c, const char *name);
/* srv_cluster_members.c */
void *cluster_members(void *p);
void *cluster_loader(void *p);
/* with c->mu held: the role of this node for name (owner and next: their addresses, or "") */
int cluster_role_locked(struct srv_cluster *c, const char *name, char *owner, char *next);
int cluster_role(struct srv_cluster *c, const char *name); /* takes c->mu */
void cluster_pause(struct srv *s, double secs); /* until secs passed or the server stops */
int cluster_stopping(void *ctx);		/* ctx: the srv */
/* srv_cstore_http.c: a blob of the store, from this node's folder, else from a peer over HTTP
 * (origin first: the node that took the deployment), checked against its digest and kept */
int cstore_fetch(struct srv *s, const char *digest, const char *origin, uint8_t **data, size_t *len,
		 char *err, size_t errlen);

#endif

/* The function table: loading deployments, acquiring and releasing them per call, the index. */
#ifndef EMBER_SRV_REGISTRY_H
#define EMBER_SRV_REGISTRY_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "server/srv_spec.h"

/* srv_load.c: these return 0 or a kind of failure of ember.h (EMBER_ERR_*) */
/* image: the executable to load (NULL: the deployment's pinned copy, else the uploaded one) */
int load_spec(struct srv *s, const struct srv_spec *sp, const char *image, struct srv_inst **out,
	      char *err, size_t errlen);
int load_check_image(struct srv *s, const char *path, struct ember_info *info, char *err,
		     size_t errlen);
void inst_unload(struct srv_inst *in);
struct srv_req;
/* the one table from a kind of failure (of a load, or of the state folder) to an HTTP status:
 * the deployment's faults are 400, the server's 5xx; the body is {"error", "kind"} */
enum MHD_Result srv_reply_load_error(struct srv_req *r, int kind, const char *err);

/* srv_registry.c: the function table */
enum { REG_OK, REG_NOTFOUND, REG_BUSY, REG_LOADERR, REG_EXISTS, REG_NOMEM };
struct srv_call {
	struct srv_entry *e;
	struct srv_inst *inst;
	struct srv_spec *spec; /* the deployment inst was loaded from */
	uint64_t load_us;      /* this call loaded the function first */
};
/* patient: wait for a place past the function's own queue (async calls, bounded by theirs) */
int reg_acquire(struct srv *s, const char *name, struct srv_call *c, int patient, char *err,
		size_t errlen);
void reg_release(struct srv *s, struct srv_call *c);
int reg_add(struct srv *s, struct srv_spec *sp, struct srv_inst *in);	  /* takes both */
int reg_replace(struct srv *s, struct srv_spec *sp, struct srv_inst *in); /* takes both */
int reg_remove(struct srv *s, const char *name);
struct srv_spec *reg_spec(struct srv *s, const char *name); /* a reference, or NULL */
json_t *reg_status(struct srv *s, const char *name);	    /* NULL: no such function */
json_t *reg_list(struct srv *s);
void reg_preload(struct srv *s);
int reg_load(struct srv *s, const char *name); /* one function loaded now: 0, or -1 (logged) */
void reg_evict(struct srv *s);
void reg_free(struct srv *s);
struct reg_gauges {
	size_t functions;
	uint64_t alive, ready;
};
void reg_gauges(struct srv *s, struct reg_gauges *g);
/* with s->mu held: */
struct srv_entry *reg_find(struct srv *s, const char *name, size_t *idx);
void index_rebuild(struct srv *s); /* after fns changed */
struct srv_entry *index_find(const struct srv *s, const char *name);
void index_free(struct srv *s);
struct srv_inst *reg_inst_put(struct srv_inst *in); /* drops a reference: the one to unload */
void reg_entry_put(struct srv_entry *e);

#endif

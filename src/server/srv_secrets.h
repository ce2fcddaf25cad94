/* OpenFaaS's secrets (/system/secrets, a deployment's secrets) and namespaces: the server's side.
 */
#ifndef EMBER_SRV_SECRETS_H
#define EMBER_SRV_SECRETS_H

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_http.h"

#define SECRETS_DIR	  "function-secrets" /* STATE/function-secrets/NAME, 0600 in a 0700 folder */
#define SECRETS_MOUNT	  "/var/openfaas/secrets/" /* where a function reads them, as in OpenFaaS */
#define SECRET_MAX	  (1u << 20)		   /* a value's bytes at most (Kubernetes' bound) */
#define SECRETS_PER_FN	  64
#define NAMESPACE_DEFAULT "openfaas-fn"

/* srv_secrets.c: the routes and the store */
int secrets_init(struct srv *s, char *err, size_t errlen); /* the folder made private */
enum MHD_Result h_secret_list(struct srv *s, struct srv_req *r);
enum MHD_Result h_secret_create(struct srv *s, struct srv_req *r);
enum MHD_Result h_secret_update(struct srv *s, struct srv_req *r);
enum MHD_Result h_secret_delete(struct srv *s, struct srv_req *r);
enum MHD_Result h_namespaces(struct srv *s, struct srv_req *r);

/* srv_secrets_use.c: a deployment's secrets */
/* "secrets" (names, each once) and "namespace" of the deployment in into sp->doc; 0 or -1 */
int secrets_spec(const json_t *in, struct srv_spec *sp, char *err, size_t errlen);
/* the values of sp's secrets, read now, as files at SECRETS_MOUNT/NAME (free with
 * secrets_free, which wipes them); 0 or a kind of failure of ember.h with err */
struct srv_secret_set {
	size_t n;
	struct ember_file files[SECRETS_PER_FN];
	char paths[SECRETS_PER_FN][sizeof(SECRETS_MOUNT) + SRV_NAME_MAX];
	uint8_t *data[SECRETS_PER_FN];
	size_t len[SECRETS_PER_FN];
};
int secrets_load(struct srv *s, const struct srv_spec *sp, struct srv_secret_set **out, char *err,
		 size_t errlen);
void secrets_free(struct srv_secret_set *set);
/* the functions given secret name, "a, b" into buf (with s->mu held): how many */
size_t secrets_users(struct srv *s, const char *name, char *buf, size_t len);
/* its value changed (s->admin held): every function given it that is loaded (or keeps warm
 * virtines) is loaded again with the new value, as a redeploy; the others, and one whose load
 * fails (logged), are dropped, so that their next call loads them. The versions replaced go
 * with their snapshots. How many were loaded again */
size_t secrets_changed(struct srv *s, const char *name);
/* the namespaces in use: OpenFaaS's default and those deployments named, sorted, each once */
json_t *secrets_namespaces(struct srv *s);

#endif

/* Deployments: a validated deployment (struct srv_spec), and the parsing helpers it is read with.
 */
#ifndef EMBER_SRV_SPEC_H
#define EMBER_SRV_SPEC_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/srv_core.h"

/* A deployment, validated. Immutable once made; shared by reference (refs). */
struct srv_spec {
	atomic_int refs;
	char name[SRV_NAME_MAX];
	char image[SRV_NAME_MAX]; /* an uploaded image, or "" */
	char runtime[16];	  /* a runtime's name (img_runtime_find), or "" */
	/* envProcess: a program of the function's files and its arguments (NULL-terminated,
	 * pointing into process_buf), or NULL */
	char **process;
	char *process_buf;
	char syscalls[8]; /* "trap" (every syscall exits), "guest" (the in-guest runtime) or "" (not
			     given: the server's default) */
	char sharing[8];  /* ember.sharing: "upm", "off", "ksm", or "" (the server's default) */
	/* ember.sharingDomain, else the deployment's namespace, else "default": the tenant whose
	 * functions' identical pages are held once (never across two domains) */
	char domain[SRV_NAME_MAX];
	const char *code; /* the runtime's source (points into doc) */
	size_t code_len;
	uint8_t *files; /* the function's files: a tar or zip archive, decoded from doc's base64 */
	size_t files_len;
	char files_sha256[65]; /* their digest, in hex (the console shows it) */
	char **envp;	       /* "K=V", NULL-terminated */
	const char *content_type;
	uint64_t mem_bytes; /* 0: Ember's default */
	double timeout_s;   /* 0: Ember's default */
	double keep_alive_s;
	unsigned min_warm, max_concurrency, queue;
	int no_ready; /* ember.ready 0: keeps no ready virtine (ember_config.no_ready) */
	/* ember.cpus, ember.threads: its virtines' vCPUs and an invocation's threads at most; 0
	 * when not given (ember_config's defaults, 1 and SRV_THREADS_DEFAULT) */
	unsigned cpus, threads;
	unsigned pids;	  /* ember.pids: an invocation's processes at most; 0: 64 */
	int require_auth; /* ember.auth: invocations need the management credentials too */
	char pin[SRV_NAME_MAX + 32]; /* functions/<pin>: this version's image ("" for none) */
	json_t *doc;		     /* the deployment as stored, createdAt included */
};

/* srv_spec.c (srv_name_ok, and srv_imgref.c's srv_image_name, are in srv_serve.h) */
/* Validates a deployment; created is its createdAt (NULL: now). */
int spec_parse(const json_t *in, const char *created, struct srv_spec **out, char *err,
	       size_t errlen);
struct srv_spec *spec_get(struct srv_spec *sp);
void spec_put(struct srv_spec *sp);
/* o's member key when it is there and not null, else NULL */
const json_t *spec_member(const json_t *o, const char *key);
/* srv_spec_ember.c: in's "ember" object into sp (its defaults when absent) and sp->doc; 0, or
 * -1 with err */
int spec_ember_fields(const json_t *in, struct srv_spec *sp, char *err, size_t errlen);
/* srv_parse.c */
int srv_parse_duration(const json_t *v, double *out);
double srv_now(void); /* monotonic seconds (base_now_ns) */
void srv_rfc3339(char *buf, size_t len);
void srv_call_id(char *buf, size_t len);		       /* a random UUID */
void srv_fixed(char *buf, size_t len, double v, int decimals); /* "%.*f" of v >= 0 */
void srv_copy(char *dst, size_t len, const char *src);	       /* bounded, terminated */
/* base64 of n bytes (a multiple of 4, padded) decoded into a new buffer *out of *len bytes: 0,
 * -1 when it is not base64, -2 when out of memory */
int srv_base64(const char *b64, size_t n, uint8_t **out, size_t *len);

#endif

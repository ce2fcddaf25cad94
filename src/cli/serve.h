/* ember serve: the command's parts (serve.c, serve_config.c) and its workers
 * (serve_workers.c). */
#ifndef EMBER_CLI_SERVE_H
#define EMBER_CLI_SERVE_H

#include <jansson.h>
#include <signal.h>

#include "server/srv_serve.h"

#define MAX_ASYNC_WORKERS 256
#define MAX_ASYNC_QUEUE	  1000000
#define MAX_CONNECTIONS	  100000
#define MAX_COSTLY_SLOTS  1024

#define SERVE_WORKERS_MAX 64 /* WORKERS_MAX of srv_workers.h */

/* what ember serve does around the server: who it becomes, whether it is sandboxed */
struct serve_host {
	const char *user;
	int no_sandbox;
};

/* serve_config.c: fills what the command line left unset; the strings stay in *cfgp */
int serve_read_config(const char *path, json_t **cfgp, struct srv_options *o, struct serve_host *h,
		      unsigned *workers);
/* serve.c: the server in this process until SIGTERM or SIGINT (blocked, in set): ember serve
 * itself, or one of its workers (o->workers > 1: its sockets made, its user become); the exit
 * status */
int serve_run(struct srv_options *o, const struct serve_host *h, const sigset_t *set);
/* serve_workers.c: the workers a configuration needs: 1, unless the virtines its memory budget
 * can hold need more descriptors than one process may have */
unsigned serve_workers_default(const struct srv_options *o);
/* ember serve --workers N (N > 1): binds, forks N workers and supervises them until SIGTERM or
 * SIGINT; the exit status */
int serve_workers(struct srv_options *o, const struct serve_host *h, unsigned n,
		  const sigset_t *set);

#endif

/* The function server behind `ember serve`: its options, starting it and shutting it down. */
#ifndef EMBER_SRV_SERVE_H
#define EMBER_SRV_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_log.h"

#define SRV_DEFAULT_LISTEN "127.0.0.1:8080"
#define SRV_DEFAULT_STATE  "./var"

struct srv_options {
	const char *listen; /* "ADDR:PORT" or "[V6ADDR]:PORT"; NULL = 127.0.0.1:8080 */
	int listen_fd;	    /* > 0: a socket already listening (srv_listen), used instead of binding
			       listen, which then only names it in messages */
	const char *state_dir; /* deployed functions and uploaded images; NULL = ./var */
	const char *seed_dir;  /* another node's state folder: the deployments and images state_dir
				  lacks are copied from it at start (srv_seed.c); NULL = none */
	const char *cluster;   /* "etcd://HOST:PORT[,...]": deployments kept in etcd, this node
				  converging to them (srv_cluster.c); NULL = none */
	const char *store_dir; /* with cluster: the shared store of images and files bundles */
	const char *advertise; /* with cluster: HOST:PORT the balancer knows it by; NULL = listen */
	const char *backend;   /* kvm, ptrace or auto; NULL = kvm */
	const char *sharing;   /* a deployment's default ember.sharing: upm, off, ksm; NULL = upm */
	const char
	    *syscalls;		     /* a deployment's default ember.syscalls: guest or trap; NULL =
					$EMBER_SYSCALLS, else libember's (guest where page 0 can be mapped) */
	const char *runtime_dir;     /* holds the js and lua runtimes; NULL = img_runtime_dir() */
	uint64_t max_body;	     /* invocation and deployment bodies; 0 = 6 MiB */
	uint64_t max_image;	     /* image uploads; 0 = 128 MiB */
	unsigned conn_timeout_s;     /* a connection idle this long is closed; 0 = 30 */
	unsigned read_timeout_s;     /* a request (headers and body) must be read within; 0 = 30 */
	unsigned max_conns;	     /* connections open at once; 0 = 1000 */
	unsigned max_conns_per_addr; /* ... from one client address; 0 = max_conns / 4 */
	double shutdown_s;	     /* a shutdown waits this long for requests in flight; 0 = 10 */
	uint64_t memory_budget;	     /* guest memory of all loaded functions; 0 = 8 GiB; past it the
					least recently used idle functions are unloaded */
	const char *secrets_dir; /* basic-auth-user and basic-auth-password; NULL = STATE/secrets */
	int no_auth;		 /* 1: the management routes are open to anyone who reaches them */
	int insecure;		 /* 1: allow no_auth on an address other than loopback */
	uint64_t log_ring_bytes; /* each function's kept stderr, in bytes; 0 = 256 KiB */
	unsigned log_ring_lines; /* ... and in lines; 0 = 2000 */
	int no_report;		 /* 1: no REPORT line per invocation */
	unsigned async_workers;	 /* threads running async calls; 0 = 4 */
	unsigned async_queue;	 /* async calls that may wait; 0 = 256; past it 429 */
	/* a function whose invocations average more than this many ms (a crash, timeout or limit
	 * counting as 3 times it) is costly: its invocations wait for one of costly_slots, run one
	 * at a time each; 0 = 20; -1: never */
	int costly_after_ms;
	unsigned costly_slots; /* 0 = half the CPUs, at least 1 */
	unsigned costly_queue; /* costly calls that may wait for a slot; 0 = 64 per slot */
	/* ember serve --workers N (srv_workers*.c): this process is worker `worker` (0..workers-1)
	 * of workers sharing the state folder, workers <= 1: alone. peer_fd: its own internal
	 * socket (listening on loopback), where the others forward and ask; peer_ports: every
	 * worker's internal port, by index; peer_up: shared by all the workers and ember serve,
	 * a worker's pid while it serves, 0 while it is down. restarted: not its first start, so
	 * it sweeps nothing (another worker may be writing a temporary file) */
	unsigned worker, workers;
	int peer_fd;
	const unsigned short *peer_ports;
	int *peer_up;
	/* peer_key: a random secret of this run of ember serve, carried by every request a worker
	 * sends another (the X-Ember-Worker-Key header); only such a request is the other's own
	 * (internal routes, never forwarded again), whoever else reaches the loopback socket */
	const char *peer_key;
	int restarted;
	srv_log_sink log; /* the server's messages; NULL: dropped */
	void *log_ctx;
};

struct srv;

/* a function or image name: [a-z0-9][a-z0-9-_.]{0,62}, no ".." */
int srv_name_ok(const char *s);
/* An image reference as faas-cli writes it ("hello", "hello:latest", "ghcr.io/org/hello:1.2",
 * "localhost:5000/hello@sha256:...") -> the Ember image it names: its last path component
 * without tag or digest ("hello"), in name (len bytes). -1 when the reference is malformed or
 * that component is not a valid name. */
int srv_image_name(const char *ref, char *name, size_t len);
/* A socket bound to listen ("ADDR:PORT"; NULL = the default) and listening, in *fd, for
 * srv_options.listen_fd: a caller that binds as root before giving root up. */
int srv_listen(const char *listen, int *fd, char *err, size_t errlen);
/* n sockets bound to the same address with SO_REUSEPORT (n > 1), the kernel spreading the
 * connections over them; port 0: the port the first one got, for all */
int srv_listen_many(const char *listen, int *fds, unsigned n, char *err, size_t errlen);

/* Opens the state directory, restores the functions deployed in it and starts listening. */
int srv_start(const struct srv_options *opt, struct srv **out, char *err, size_t errlen);
/* the address it listens on, e.g. "127.0.0.1:8080" (the real port when 0 was asked for) */
const char *srv_address(const struct srv *s);
/* Stops accepting, waits (bounded) for requests in flight, stops and frees everything. Returns
 * the number of requests still in flight when it gave up waiting (then nothing is freed). */
unsigned srv_shutdown(struct srv *s);

#endif

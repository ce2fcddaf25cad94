/* What bench/loadgen and bench/attack share: the clock, fatal errors, URLs, source addresses. */
#ifndef EMBER_BENCH_CLIENT_H
#define EMBER_BENCH_CLIENT_H

#include <netinet/in.h>

struct client_url {
	struct sockaddr_in dst;
	char host[64];
	unsigned port;
	const char *path; /* points into the URL given; "/" when it has none */
};

extern const char *client_name; /* the program, for messages */

double client_now(void);				    /* monotonic seconds */
_Noreturn void client_die(const char *msg);		    /* "NAME: msg", exit 2 */
void client_url(const char *url, struct client_url *u);	    /* http://A.B.C.D:PORT/PATH, or dies */
void client_src(const char *addr, struct sockaddr_in *src); /* -S's address, or dies */

/* an option that sets a variable: -C VALUE */
enum { OPT_DOUBLE, OPT_INT, OPT_U64, OPT_STR };
struct client_opt {
	int c, kind;
	void *dst;
};
/* getopt over argv with spec; an option of the table sets its variable, any other goes to
 * other(c, optarg) (which dies on one it does not know either) */
void client_opts(int argc, char **argv, const char *spec, const struct client_opt *t, int n,
		 void (*other)(int c, char *arg));

#endif

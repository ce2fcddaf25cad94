/* HTTP requests to a real `ember serve` (srv_start in this process, on a loopback port, with
 * authentication on and no deployments): the input is sent as the bytes of one connection. It
 * reaches what an unauthenticated client reaches: libmicrohttpd's parsing, the router (srv_route),
 * the credentials check (auth_ok), the body limits, an invocation's metadata (srv_meta, built
 * before the function is looked up) and the replies. The deployment JSON behind the credentials
 * has its own harness (fuzz_spec). Every connection must end with an answer that is not Ember's
 * own failure (500), and leave no request counted as active. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"

#define WAIT_MS 5000 /* a connection longer than this is a hang */

static struct srv *server;
static struct sockaddr_in addr;

static void start(void)
{
	const char *state = fz_tmpdir();
	char listen[] = "127.0.0.1:0", err[SRV_ERR_MAX];
	struct srv_options opt = {.listen = listen,
				  .state_dir = state,
				  .backend = fz_backend(),
				  .max_body = 64 << 10,
				  .max_image = 128 << 10,
				  .conn_timeout_s = 2};
	FZ_CHECK(srv_start(&opt, &server, err, sizeof(err)) == 0, "srv_start: %s", err);
	const char *a = srv_address(server), *colon = strrchr(a, ':');
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)atoi(colon + 1));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* the whole answer (up to n - 1 bytes kept) until the server closes; its length, -1 on a hang */
static ssize_t exchange(const uint8_t *data, size_t size, char *out, size_t n)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FZ_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0, "connect: %s",
		 strerror(errno));
	size_t sent = 0, got = 0;
	while (sent < size) { /* a server that answers early may stop reading: that is fine */
		ssize_t w = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	double t0 = srv_now();
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int left = WAIT_MS - (int)((srv_now() - t0) * 1000);
		if (left <= 0 || poll(&p, 1, left) <= 0) {
			close(fd);
			return -1;
		}
		char buf[4096];
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			break;
		size_t keep = got + (size_t)r < n - 1 ? (size_t)r : n - 1 - got;
		memcpy(out + got, buf, keep);
		got += keep;
	}
	out[got] = 0;
	close(fd);
	return (ssize_t)got;
}

/* requests in flight drop to none once the connection is done (on_done runs just after) */
static unsigned active_after(void)
{
	unsigned n = 0;
	for (int i = 0; i < 2000; i++) {
		pthread_mutex_lock(&server->mu);
		n = server->active;
		pthread_mutex_unlock(&server->mu);
		if (!n)
			break;
		usleep(1000);
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[1 << 16];
	if (!server)
		start();
	ssize_t n = exchange(data, size, out, sizeof(out));
	FZ_CHECK(n >= 0, "the connection did not end within %d ms", WAIT_MS);
	/* every answer on the connection: none is Ember's own failure */
	for (const char *p = out; (p = strstr(p, "HTTP/1.")); p++) {
		unsigned code = 0;
		if (sscanf(p, "HTTP/1.%*c %u", &code) == 1)
			FZ_CHECK(code != 500, "answered 500: %.200s", p);
	}
	FZ_CHECK(active_after() == 0, "a request is still counted as active");
	return 0;
}

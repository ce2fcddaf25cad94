/* Basic authentication: credentials kept as OpenFaaS keeps them, checked in constant time. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_auth.h"
#include "server/srv_http.h"

#define USER_FILE     "basic-auth-user"
#define PASSWORD_FILE "basic-auth-password"
#define DEFAULT_USER  "admin"
#define PASSWORD_LEN  32
#define REALM	      "Ember"

/* reads a credential file: its content without trailing white space (1: missing) */
static int read_secret(const char *dir, const char *file, char *buf, size_t len, char *err,
		       size_t errlen)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
	ssize_t n = read(fd, buf, len);
	close(fd);
	if (n < 0 || (size_t)n == len)
		return snprintf(err, errlen, "%s: %s", path,
				n < 0 ? strerror(errno) : "longer than 255 bytes"),
		       -1;
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
		n--;
	buf[n] = 0;
	if (!n || memchr(buf, 0, (size_t)n) || (!strcmp(file, USER_FILE) && strchr(buf, ':')))
		return snprintf(err, errlen, "%s: empty, or not a valid %s", path,
				strcmp(file, USER_FILE) ? "password" : "user name (no ':')"),
		       -1;
	return 0;
}

/* a new file, mode 0600, complete on disk before its name appears */
static int write_secret(const char *dir, const char *file, const char *value, char *err,
			size_t errlen)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int rc = base_replace(path, value, strlen(value), 0600);
	if (rc)
		return snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc)), -1;
	return 0;
}

static int random_password(char *buf, char *err, size_t errlen)
{
	static const char alphabet[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char b[PASSWORD_LEN];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return snprintf(err, errlen, "no random bytes for a password: %s", strerror(errno)),
		       -1;
	for (size_t i = 0; i < sizeof(b); i++)
		buf[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
	buf[PASSWORD_LEN] = 0;
	return 0;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int auth_init(struct srv *s, char *err, size_t errlen)
{
	if (s->opt.no_auth)
		return 0;
	char *dir = s->secrets;
	if (s->opt.secrets_dir)
		snprintf(dir, sizeof(s->secrets), "%s", s->opt.secrets_dir);
	else
		snprintf(dir, sizeof(s->secrets), "%s/secrets", s->state);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return snprintf(err, errlen, "secrets folder %s: %s", dir, strerror(errno)), -1;
	int u = read_secret(dir, USER_FILE, s->auth_user, sizeof(s->auth_user), err, errlen);
	int p = u < 0 ? -1
		      : read_secret(dir, PASSWORD_FILE, s->auth_pass, sizeof(s->auth_pass), err,
				    errlen);
	if (u < 0 || p < 0)
		return -1;
	if (u != p)
		return snprintf(err, errlen,
				"%s has %s but not %s: give both, or neither to have them "
				"generated",
				dir, u ? PASSWORD_FILE : USER_FILE, u ? USER_FILE : PASSWORD_FILE),
		       -1;
	if (u) {
		snprintf(s->auth_user, sizeof(s->auth_user), "%s", DEFAULT_USER);
		if (random_password(s->auth_pass, err, errlen) ||
		    write_secret(dir, USER_FILE, s->auth_user, err, errlen) ||
		    write_secret(dir, PASSWORD_FILE, s->auth_pass, err, errlen))
			return -1;
		sync_dir(dir);
		srv_log(s, "info",
			"generated credentials for the management API in %s (" USER_FILE
			", " PASSWORD_FILE ")",
			dir);
	}
	s->auth = 1;
	return 0;
}

/* equal in time that depends only on the length of the expected secret */
static int secret_eq(const char *got, const char *want)
{
	size_t gl = strlen(got), wl = strlen(want);
	unsigned char diff = gl != wl;
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(want[i] ^ (i < gl ? got[i] : 0));
	return diff == 0;
}

/* the length of what the Basic credentials decode to, (size_t)-1 when they are no base64 */
static size_t basic_len(struct MHD_Connection *conn)
{
	const char *h =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncmp(h, "Basic ", 6))
		return (size_t)-1;
	size_t n = strlen(h + 6), pad = 0;
	while (pad < 2 && pad < n && h[6 + n - 1 - pad] == '=')
		pad++;
	return n % 4 ? (size_t)-1 : n / 4 * 3 - pad;
}

int auth_ok(const struct srv *s, struct MHD_Connection *conn)
{
	char *pass = NULL;
	char *user = MHD_basic_auth_get_username_password(conn, &pass);
	int ok = user && pass;
	/* libmicrohttpd hands back C strings: "user:pass\0more" would read as "user:pass" */
	ok &= user && pass && basic_len(conn) == strlen(user) + 1 + strlen(pass);
	/* both compared, whatever the first says */
	ok &= secret_eq(user ? user : "", s->auth_user);
	ok &= secret_eq(pass ? pass : "", s->auth_pass);
	if (user)
		MHD_free(user);
	if (pass)
		MHD_free(pass);
	return ok;
}

/* A browser holds the management credentials once someone used the console, and adds them to
 * any request for this server, also one another site's page makes (a form that posts a
 * deployment). Such a request that would change something is refused: a browser says where it
 * comes from (Sec-Fetch-Site, else Origin), curl and faas-cli send neither. */
int auth_cross_site(struct MHD_Connection *conn, const char *method)
{
	if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		return 0;
	const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
	if (site)
		return strcmp(site, "same-origin") && strcmp(site, "none");
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	const char *o = origin ? strstr(origin, "://") : NULL;
	return origin && (!o || !host || strcmp(o + 3, host));
}

enum MHD_Result auth_deny(struct srv_req *r)
{
	static const char body[] = "{\"error\":\"authentication required\"}\n";
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	enum MHD_Result ret = MHD_queue_basic_auth_fail_response(r->conn, REALM, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		r->status = 401;
	return ret;
}

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 */
static int loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family != AF_INET6)
		return 0;
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

int auth_listen_ok(const struct srv *s, const struct sockaddr *sa, char *err, size_t errlen)
{
	if (s->auth || s->opt.insecure || loopback(sa))
		return 0;
	return snprintf(err, errlen,
			"refusing to serve %s without authentication: anyone who reaches it could "
			"deploy code (drop --no-auth, or add --insecure to do it anyway)",
			s->opt.listen),
	       -1;
}

/* A client of etcd's v3 JSON gateway: calls tried on each endpoint in turn, and the watch stream.
 */
#include <curl/curl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_cluster.h"
#include "server/srv_spec.h"

#define ETCD_MAX_ENDPOINTS 8
#define ETCD_CONNECT_S	   2
#define ETCD_CALL_S	   5
#define ETCD_REPLY_MAX	   (64u << 20)
#define ETCD_KEEPALIVE_S   5

struct etcd {
	char ep[ETCD_MAX_ENDPOINTS][128]; /* "http://HOST:PORT" */
	unsigned n;
};

struct etcd *etcd_new(const char *url, char *err, size_t errlen)
{
	static const char scheme[] = "etcd://";
	if (strncmp(url, scheme, sizeof(scheme) - 1))
		return snprintf(err, errlen, "--cluster: '%s' is not etcd://HOST:PORT[,...]", url),
		       NULL;
	struct etcd *ec = calloc(1, sizeof(*ec));
	if (!ec)
		return snprintf(err, errlen, "out of memory"), NULL;
	const char *p = url + sizeof(scheme) - 1;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (!n || n > 100 || ec->n == ETCD_MAX_ENDPOINTS || !memchr(p, ':', n)) {
			snprintf(err, errlen,
				 "--cluster: bad endpoint in '%s' (HOST:PORT, at most %d)", url,
				 ETCD_MAX_ENDPOINTS);
			free(ec);
			return NULL;
		}
		snprintf(ec->ep[ec->n++], sizeof(ec->ep[0]), "http://%.*s", (int)n, p);
		p += n + (p[n] == ',');
	}
	if (!ec->n) {
		free(ec);
		return snprintf(err, errlen, "--cluster: no endpoint in '%s'", url), NULL;
	}
	return ec;
}

void etcd_free(struct etcd *ec)
{
	free(ec);
}

json_t *etcd_b64(const char *s, size_t n)
{
	char *b = malloc(4 * ((n + 2) / 3) + 1);
	if (!b)
		return NULL;
	EVP_EncodeBlock((unsigned char *)b, (const unsigned char *)s, (int)n);
	json_t *j = json_string(b);
	free(b);
	return j;
}

char *etcd_unb64(const json_t *v, size_t *n)
{
	const char *s = json_string_value(v);
	uint8_t *out;
	if (!s)
		return NULL;
	if (!s[0]) {
		*n = 0;
		return calloc(1, 1);
	}
	if (srv_base64(s, strlen(s), &out, n))
		return NULL;
	char *t = realloc(out, *n + 1); /* terminated, for keys */
	if (!t) {
		free(out);
		return NULL;
	}
	t[*n] = 0;
	return t;
}

int64_t etcd_int(const json_t *v)
{
	const char *s = json_string_value(v);
	return s ? strtoll(s, NULL, 10) : json_is_integer(v) ? json_integer_value(v) : 0;
}

json_t *etcd_prefix_range(const char *prefix)
{
	size_t n = strlen(prefix);
	char end[256];
	if (!n || n >= sizeof(end))
		return NULL;
	memcpy(end, prefix, n);
	end[n - 1]++; /* the first key past every key with the prefix */
	return json_pack("{s:o,s:o}", "key", etcd_b64(prefix, n), "range_end", etcd_b64(end, n));
}

/* what a call reads: the whole reply, or the watch's messages line by line */
struct etcd_rx {
	char *buf;
	size_t len, cap;
	etcd_watch_fn fn;
	int (*stop)(void *ctx);
	void *ctx;
	int done; /* fn said stop, or a message was not JSON */
};

static int rx_line(struct etcd_rx *x, char *line)
{
	json_t *j = json_loads(line, 0, NULL);
	json_t *res = json_object_get(j, "result");
	int rc = res ? x->fn(x->ctx, res) : 1;
	json_decref(j);
	return rc;
}

int cluster_buf_add(char **buf, size_t *len, size_t *cap, const void *p, size_t n, size_t max)
{
	if (*len + n + 1 > *cap) {
		size_t want = (*len + n + 1) * 2;
		char *b = want <= max ? realloc(*buf, want) : NULL;
		if (!b)
			return -1;
		*buf = b;
		*cap = want;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = 0;
	return 0;
}

static size_t rx_write(char *p, size_t size, size_t nmemb, void *cls)
{
	struct etcd_rx *x = cls;
	size_t n = size * nmemb;
	if (cluster_buf_add(&x->buf, &x->len, &x->cap, p, n, ETCD_REPLY_MAX))
		return 0;
	char *nl;
	while (x->fn && !x->done && (nl = memchr(x->buf, '\n', x->len))) {
		*nl = 0;
		x->done = rx_line(x, x->buf);
		size_t used = (size_t)(nl + 1 - x->buf);
		memmove(x->buf, nl + 1, x->len - used + 1);
		x->len -= used;
	}
	return x->done ? 0 : n;
}

static int rx_progress(void *cls, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	struct etcd_rx *x = cls;
	return x->stop && x->stop(x->ctx);
}

/* one POST to one endpoint: 0, or the curl error / HTTP status (err set) */
static int post(const char *url, const char *body, long timeout_s, struct etcd_rx *x, char *err,
		size_t errlen)
{
	CURL *c = curl_easy_init();
	if (!c)
		return snprintf(err, errlen, "out of memory"), -1;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)ETCD_CONNECT_S);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, rx_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	/* a member gone without a word (a host down) ends the watch too, not only a refusal */
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, (long)ETCD_KEEPALIVE_S);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, (long)ETCD_KEEPALIVE_S);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, rx_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		return snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(rc)), (int)rc;
	if (code != 200)
		return snprintf(err, errlen, "%s: HTTP %ld: %.200s", url, code,
				x->buf ? x->buf : ""),
		       (int)code;
	return 0;
}

int etcd_call(struct etcd *ec, const char *path, json_t *body, json_t **reply, char *err,
	      size_t errlen)
{
	char *text = json_dumps(body, JSON_COMPACT);
	if (!text)
		return snprintf(err, errlen, "out of memory"), -1;
	int rc = -1;
	for (unsigned i = 0; i < ec->n && rc; i++) {
		char url[256];
		struct etcd_rx x = {0};
		snprintf(url, sizeof(url), "%s%s", ec->ep[i], path);
		rc = post(url, text, ETCD_CALL_S, &x, err, errlen);
		if (!rc && !(*reply = json_loads(x.buf ? x.buf : "", 0, NULL))) {
			snprintf(err, errlen, "%s: not JSON", url);
			rc = -1;
		}
		free(x.buf);
		if (rc > 0 && rc < 100) /* not reached: try the next endpoint */
			continue;
		if (rc)
			break; /* etcd answered with an error: the same on every member */
	}
	free(text);
	return rc ? -1 : 0;
}

int etcd_watch(struct etcd *ec, const char *prefix, int64_t rev, etcd_watch_fn fn,
	       int (*stop)(void *ctx), void *ctx, char *err, size_t errlen)
{
	json_t *req = etcd_prefix_range(prefix);
	if (!req)
		return snprintf(err, errlen, "out of memory"), -1;
	char revs[32];
	snprintf(revs, sizeof(revs), "%lld", (long long)rev);
	json_object_set_new(req, "start_revision", json_string(revs));
	json_t *body = json_pack("{s:o}", "create_request", req);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return snprintf(err, errlen, "out of memory"), -1;
	int rc = -1;
	for (unsigned i = 0; i < ec->n && rc; i++) {
		char url[256];
		struct etcd_rx x = {.fn = fn, .stop = stop, .ctx = ctx};
		snprintf(url, sizeof(url), "%s/v3/watch", ec->ep[i]);
		rc = post(url, text, 0, &x, err, errlen);
		free(x.buf);
		if (x.done || stop(ctx)) {
			rc = 0;
			break;
		}
		if (!rc) {
			snprintf(err, errlen, "%s: the watch ended", url);
			rc = -1;
		}
	}
	free(text);
	return rc ? -1 : 0;
}

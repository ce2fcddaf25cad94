/* An async call's result POSTed to its X-Callback-Url with libcurl, as OpenFaaS's queue worker
 * posts it: the sync reply's headers and body, with X-Call-Id, X-Function-Name,
 * X-Function-Status and X-Duration-Seconds set. A bounded number of tries, then it is dropped. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "async/async.h"
#include "server/srv_core.h"
#include "server/srv_http.h"
#include "server/srv_invoke.h"

#define CB_ATTEMPTS	     3
#define CB_TIMEOUT_S	     10L
#define CB_CONNECT_TIMEOUT_S 5L
#define CB_URL_MAX	     2048

static const double backoff_s[CB_ATTEMPTS - 1] = {1, 2}; /* before the second and third try */

int callback_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void callback_global_free(void)
{
	curl_global_cleanup();
}

int callback_url_check(const char *url, char *err, size_t errlen)
{
	size_t n = strlen(url);
	if (n == 0 || n > CB_URL_MAX)
		return snprintf(err, errlen, "a URL of 1 to %d bytes", CB_URL_MAX), -1;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
			return snprintf(err, errlen, "a URL has no spaces or bytes outside ASCII"),
			       -1;
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	if (!u)
		return snprintf(err, errlen, "out of memory"), -1;
	CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (!rc)
		rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	if (!rc)
		rc = curl_url_get(u, CURLUPART_HOST, &host, 0);
	int ret = -1;
	if (rc)
		snprintf(err, errlen, "'%s' is not a URL: %s", url, curl_url_strerror(rc));
	else if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))
		snprintf(err, errlen, "only http and https callbacks are made, not %s", scheme);
	else if (!host[0])
		snprintf(err, errlen, "'%s' has no host", url);
	else
		ret = 0;
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ret;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

static int add(struct curl_slist **l, const char *name, const char *value)
{
	char *line;
	/* "Name:" with nothing after it: curl sends no such header (Expect) */
	if (asprintf(&line, value[0] ? "%s: %s" : "%s:", name, value) < 0)
		return -1;
	struct curl_slist *n = curl_slist_append(*l, line);
	free(line);
	if (!n)
		return -1;
	*l = n;
	return 0;
}

/* a request's own framing, never taken from a function's answer */
static int framing(const char *name)
{
	static const char *const names[] = {"Host",	  "Content-Length", "Transfer-Encoding",
					    "Connection", "Expect",	    "Authorization"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(name, names[i]))
			return 1;
	return 0;
}

/* the answer's own headers, then the queue worker's, which replace any of the same name */
static struct curl_slist *headers(const struct srv_job *j, const struct srv_answer *a,
				  const char *ctype, const char *status, const char *dur)
{
	const struct srv_header mine[] = {
	    {"Content-Type", ctype},	  {"X-Call-Id", j->id},
	    {"X-Function-Name", j->name}, {"X-Function-Status", status},
	    {"X-Duration-Seconds", dur},  {"Expect", ""}, /* no 100-continue round trip */
	};
	struct curl_slist *l = NULL;
	int rc = 0;
	for (size_t i = 0; i < a->nh; i++) {
		size_t k;
		for (k = 0; k < sizeof(mine) / sizeof(mine[0]); k++)
			if (!strcasecmp(a->h[i].name, mine[k].name))
				break;
		if (k == sizeof(mine) / sizeof(mine[0]) && !framing(a->h[i].name))
			rc |= add(&l, a->h[i].name, a->h[i].value);
	}
	for (size_t k = 0; k < sizeof(mine) / sizeof(mine[0]); k++)
		rc |= add(&l, mine[k].name, mine[k].value);
	if (rc) {
		curl_slist_free_all(l);
		return NULL;
	}
	return l;
}

/* scheme://host[:port] of url: what the log names, never a path, query or password */
static void target(const char *url, char *buf, size_t len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	snprintf(buf, len, "?");
	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0)) {
		int has_port = !curl_url_get(u, CURLUPART_PORT, &port, 0);
		snprintf(buf, len, "%s://%s%s%s", scheme, host, has_port ? ":" : "",
			 has_port ? port : "");
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
}

/* one try: 0 delivered (a 2xx), 1 worth another try, -1 not; why says what went wrong */
static int try_once(CURL *c, const char *errbuf, char *why, size_t whylen)
{
	long code = 0;
	CURLcode cc = curl_easy_perform(c);
	if (cc != CURLE_OK)
		return snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc)), 1;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return 0;
	snprintf(why, whylen, "it answered %ld", code);
	return code >= 500 || code == 408 || code == 429 ? 1 : -1;
}

int callback_post(struct srv *s, const struct srv_job *j, const struct srv_answer *a,
		  double seconds)
{
	char status[16], dur[32], errbuf[CURL_ERROR_SIZE] = "", why[CURL_ERROR_SIZE + 32];
	char where[CB_URL_MAX];
	const char *ctype = a->ctype, *body = a->body;
	size_t len = a->len;
	char *err_body = NULL;
	if (a->error) {
		json_t *e = json_pack("{s:s}", "error", a->err);
		err_body = e ? json_dumps(e, JSON_COMPACT) : NULL;
		json_decref(e);
		ctype = "application/json";
		body = err_body;
		len = err_body ? strlen(err_body) : 0;
	}
	snprintf(status, sizeof(status), "%u", a->status);
	snprintf(dur, sizeof(dur), "%.6f", seconds);
	target(j->callback, where, sizeof(where));
	struct curl_slist *hs = headers(j, a, ctype, status, dur);
	CURL *c = curl_easy_init();
	int rc = CB_FAILED;
	if (!c || !hs || (a->error && !err_body)) {
		srv_log(s, "warning", "async call %s: callback to %s dropped: out of memory", j->id,
			where);
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, j->callback);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ember/" EMBER_VERSION);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, CB_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CB_CONNECT_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for name look-ups */
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	for (int i = 0;; i++) {
		errbuf[0] = 0;
		int t = try_once(c, errbuf, why, sizeof(why));
		if (t == 0) {
			rc = CB_DELIVERED;
			break;
		}
		if (t < 0 || i + 1 == CB_ATTEMPTS) {
			srv_log(s, "warning",
				"async call %s: callback to %s dropped after try %d of %d: %s",
				j->id, where, i + 1, CB_ATTEMPTS, why);
			break;
		}
		if (async_nap(s, backoff_s[i])) {
			srv_log(s, "info",
				"async call %s: callback to %s not sent (%s) before the shutdown; "
				"the call runs again at the next start",
				j->id, where, why);
			rc = CB_STOPPED;
			break;
		}
	}
out:
	curl_slist_free_all(hs);
	curl_easy_cleanup(c);
	free(err_body);
	return rc;
}

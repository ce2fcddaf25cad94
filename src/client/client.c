/* The HTTP client of ember deploy, invoke and list: the gateway, its credentials, libcurl calls. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "client/client.h"
#include "ember/ember.h"

#define MAX_HEADERS 64

/* a secret file's one line without trailing white space, as OpenFaaS keeps basic-auth-user and
 * basic-auth-password */
static int read_secret(const char *dir, const char *file, char *out, size_t len, char *why,
		       size_t whylen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	uint8_t *buf;
	size_t n;
	if (cli_read_file(path, len, &buf, &n, why, whylen))
		return -1;
	while (n > 0 && strchr(" \t\r\n", buf[n - 1])) /* as ember serve reads them */
		n--;
	int bad = n >= len || memchr(buf, '\n', n) || memchr(buf, 0, n);
	if (!bad) {
		memcpy(out, buf, n);
		out[n] = 0;
	}
	free(buf);
	if (bad)
		return snprintf(why, whylen, "%s is not one line of at most %zu bytes", path,
				len - 1),
		       -1;
	return 0;
}

static int credentials(struct cli_client *c, const char *dir, char *why, size_t whylen)
{
	if (dir)
		return read_secret(dir, "basic-auth-user", c->user, sizeof(c->user), why, whylen) ||
			       read_secret(dir, "basic-auth-password", c->pass, sizeof(c->pass),
					   why, whylen)
			   ? -1
			   : 0;
	const char *u = getenv("EMBER_GATEWAY_USER"), *p = getenv("EMBER_GATEWAY_PASSWORD");
	if (!u || !u[0])
		return 0;
	if (!p || strlen(u) >= sizeof(c->user) || strlen(p) >= sizeof(c->pass))
		return snprintf(why, whylen,
				"EMBER_GATEWAY_USER is set: EMBER_GATEWAY_PASSWORD must be too "
				"(each shorter than 256 bytes)"),
		       -1;
	strcpy(c->user, u);
	strcpy(c->pass, p);
	return 0;
}

int cli_client_open(struct cli_client *c, const char *url, const char *secrets_dir, char *why,
		    size_t whylen)
{
	memset(c, 0, sizeof(*c));
	if (!url || !url[0])
		url = getenv("OPENFAAS_URL");
	if (!url || !url[0])
		url = CLI_DEFAULT_GATEWAY;
	/* user:password@ in the URL: libcurl would send it, and every message names the URL */
	const char *host = strstr(url, "://");
	host = host ? host + 3 : url;
	if (memchr(host, '@', strcspn(host, "/?#")))
		return snprintf(
			   why, whylen,
			   "the gateway URL holds credentials (USER:PASSWORD@): give them with "
			   "--secrets DIR, or $EMBER_GATEWAY_USER and $EMBER_GATEWAY_PASSWORD"),
		       -1;
	size_t n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if ((strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || n >= sizeof(c->base))
		return snprintf(why, whylen,
				"the gateway must be an http:// or https:// URL, not '%s'", url),
		       -1;
	memcpy(c->base, url, n);
	c->base[n] = 0;
	if (credentials(c, secrets_dir, why, whylen))
		return -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || !(c->curl = curl_easy_init()))
		return snprintf(why, whylen, "cannot start libcurl"), -1;
	return 0;
}

void cli_client_close(struct cli_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
	memset(c->pass, 0, sizeof(c->pass));
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct cli_resp *r = ctx;
	size_t n = size * nmemb;
	char *b = realloc(r->body, r->len + n + 1);
	if (!b)
		return 0; /* libcurl fails the transfer: out of memory */
	memcpy(b + r->len, data, n);
	r->body = b;
	r->len += n;
	b[r->len] = 0;
	return n;
}

/* the options of one call on the reused handle */
static int set_call(CURL *h, const struct cli_client *c, const struct cli_call *call,
		    const char *url, struct curl_slist *hdrs, struct cli_resp *r, char *errbuf)
{
	int bad = curl_easy_setopt(h, CURLOPT_URL, url) ||
		  curl_easy_setopt(h, CURLOPT_USERAGENT, "ember/" EMBER_VERSION) ||
		  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L) ||
		  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) ||
		  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) ||
		  curl_easy_setopt(h, CURLOPT_WRITEDATA, r) ||
		  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs) ||
		  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, call->method);
	if (call->body)
		bad = bad || curl_easy_setopt(h, CURLOPT_POSTFIELDS, call->body) ||
		      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->len);
	else
		bad = bad || curl_easy_setopt(h, CURLOPT_HTTPGET, 1L) ||
		      curl_easy_setopt(h, CURLOPT_NOBODY, !strcmp(call->method, "HEAD") ? 1L : 0L);
	if (call->auth && c->user[0])
		bad = bad || curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC) ||
		      curl_easy_setopt(h, CURLOPT_USERNAME, c->user) ||
		      curl_easy_setopt(h, CURLOPT_PASSWORD, c->pass);
	return bad ? -1 : 0;
}

int cli_client_call(struct cli_client *c, const struct cli_call *call, struct cli_resp *r,
		    char *why, size_t whylen)
{
	char url[8192], errbuf[CURL_ERROR_SIZE] = "", ctype[256];
	struct curl_slist *hdrs = NULL, *t;
	int rc = -1;
	memset(r, 0, sizeof(*r));
	if ((size_t)snprintf(url, sizeof(url), "%s%s", c->base, call->path) >= sizeof(url))
		return snprintf(why, whylen, "the URL is too long"), -1;
	curl_easy_reset(c->curl);
	/* no "Expect: 100-continue" round trip before an upload */
	if (!(hdrs = curl_slist_append(NULL, "Expect:")))
		goto oom;
	if (call->ctype) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", call->ctype);
		if (!(t = curl_slist_append(hdrs, ctype)))
			goto oom;
	}
	for (size_t i = 0; call->headers && call->headers[i] && i < MAX_HEADERS; i++)
		if (!(t = curl_slist_append(hdrs, call->headers[i])))
			goto oom;
	if (set_call(c->curl, c, call, url, hdrs, r, errbuf)) {
		snprintf(why, whylen, "cannot set up the request to %s", url);
		goto out;
	}
	CURLcode cc = curl_easy_perform(c->curl);
	if (cc != CURLE_OK) {
		snprintf(why, whylen, "%s %s: %s", call->method, url,
			 errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
	if (!r->body && !(r->body = calloc(1, 1)))
		goto oom;
	rc = 0;
	goto out;
oom:
	snprintf(why, whylen, "out of memory");
out:
	curl_slist_free_all(hdrs);
	if (rc)
		cli_resp_free(r);
	return rc;
}

int cli_client_json(struct cli_client *c, const char *method, const char *path, const char *json,
		    struct cli_resp *r, char *why, size_t whylen)
{
	struct cli_call call = {.method = method,
				.path = path,
				.ctype = json ? "application/json" : NULL,
				.body = json,
				.len = json ? strlen(json) : 0,
				.auth = 1};
	return cli_client_call(c, &call, r, why, whylen);
}

void cli_resp_free(struct cli_resp *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

int cli_resp_ok(const struct cli_resp *r)
{
	return r->status >= 200 && r->status < 300;
}

const char *cli_resp_reason(const struct cli_resp *r, char *buf, size_t len)
{
	json_t *j = json_loadb(r->body, r->len, 0, NULL);
	const char *e = json_string_value(json_object_get(j, "error"));
	if (e)
		snprintf(buf, len, "%s", e);
	else if (r->len)
		snprintf(buf, len, "%.*s", (int)strcspn(r->body, "\r\n"), r->body);
	else
		snprintf(buf, len, "(no body)");
	json_decref(j);
	size_t n = strlen(buf);
	if (r->status == 401 && n < len)
		snprintf(
		    buf + n, len - n,
		    " (the server wants credentials: --secrets DIR, or $EMBER_GATEWAY_USER and "
		    "$EMBER_GATEWAY_PASSWORD)");
	return buf;
}

const struct opt cli_client_opts[] = {
    OPT_STRING("gateway", 'g', struct cli_client_args, gateway, "URL",
	       "the server (default $OPENFAAS_URL, else " CLI_DEFAULT_GATEWAY ")"),
    OPT_STRING("secrets", 0, struct cli_client_args, secrets, "DIR",
	       "credentials: DIR/basic-auth-user and DIR/basic-auth-password\n"
	       "(default $EMBER_GATEWAY_USER and $EMBER_GATEWAY_PASSWORD)"),
    OPT_END(),
};

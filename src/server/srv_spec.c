/* Deployments: validating the JSON a client sends (or the state dir holds) into a srv_spec. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "ember/abi.h"
#include "image/img.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_secrets.h"

#define MAX_ENV 1024

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		snprintf(err, errlen, __VA_ARGS__);                                                \
		goto fail;                                                                         \
	} while (0)

int srv_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= SRV_NAME_MAX || strstr(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '-' && c != '_' && c != '.')))
			return 0;
	}
	return 1;
}

const json_t *spec_member(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A copy of object m with its members in the order of their keys: the order a stored deployment
 * reads back in (it is written with sorted keys), so that the environment, and with it the
 * configuration a snapshot on disk was made with, is the same after a restart. */
static json_t *sorted_copy(const json_t *m)
{
	size_t n = json_object_size(m), i = 0;
	const char **keys = malloc((n ? n : 1) * sizeof(*keys)), *k;
	json_t *copy = json_object(), *v;
	if (!keys || !copy) {
		free(keys);
		json_decref(copy);
		return NULL;
	}
	json_object_foreach((json_t *)m, k, v)
	{
		keys[i++] = k;
	}
	qsort(keys, n, sizeof(*keys), by_key);
	for (i = 0; i < n; i++)
		json_object_set_new(copy, keys[i], json_deep_copy(json_object_get(m, keys[i])));
	free(keys);
	return copy;
}

/* an object of strings (envVars, labels, annotations), copied into doc */
static int string_map(const json_t *in, const char *key, json_t *doc, char *err, size_t errlen)
{
	const json_t *m = spec_member(in, key);
	if (!m)
		return json_object_set_new(doc, key, json_object());
	const char *k;
	json_t *v;
	if (!json_is_object(m))
		return snprintf(err, errlen, "%s must be an object of strings", key), -1;
	json_object_foreach((json_t *)m, k, v)
	{
		if (!json_is_string(v))
			return snprintf(err, errlen, "%s.%s must be a string", key, k), -1;
	}
	if (json_object_size(m) > MAX_ENV)
		return snprintf(err, errlen, "%s has more than %d entries", key, MAX_ENV), -1;
	return json_object_set_new(doc, key, sorted_copy(m));
}

static int build_env(struct srv_spec *sp, char *err, size_t errlen)
{
	json_t *env = json_object_get(sp->doc, "envVars"), *v;
	const char *k;
	sp->envp = calloc(json_object_size(env) + 1, sizeof(char *));
	if (!sp->envp)
		return snprintf(err, errlen, "out of memory"), -1;
	size_t n = 0;
	json_object_foreach(env, k, v)
	{
		if (!k[0] || strchr(k, '='))
			return snprintf(err, errlen, "envVars: '%s' is not a variable name", k), -1;
		if (!strcmp(k, "content_type"))
			sp->content_type = json_string_value(v);
		if (asprintf(&sp->envp[n++], "%s=%s", k, json_string_value(v)) < 0) {
			sp->envp[--n] = NULL;
			return snprintf(err, errlen, "out of memory"), -1;
		}
	}
	return 0;
}

/* "envProcess" (OpenFaaS's fprocess): the program of the function's files to run, and its
 * arguments, separated by spaces as the watchdog separates them (no shell, no quoting) */
static int process(const json_t *p, struct srv_spec *sp, char *err, size_t errlen)
{
	const char *s = json_string_value(p);
	size_t n = 0, len = json_string_length(p);
	if (!s || len == 0 || len > 4096 || strlen(s) != len)
		return snprintf(err, errlen,
				"envProcess must be a command line: a program of the "
				"function's files and its arguments"),
		       -1;
	if (!(sp->process = calloc(len / 2 + 2, sizeof(char *))) || !(sp->process_buf = strdup(s)))
		return snprintf(err, errlen, "out of memory"), -1;
	char *save = NULL;
	for (char *w = strtok_r(sp->process_buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		sp->process[n++] = w;
	if (!n || sp->process[0][0] != '/')
		return snprintf(err, errlen,
				"envProcess must start with the program's absolute path in the "
				"function's files, such as /usr/bin/python3"),
		       -1;
	return json_object_set_new(sp->doc, "envProcess", json_string(s));
}

static int source(const json_t *in, struct srv_spec *sp, char *err, size_t errlen)
{
	const json_t *img = spec_member(in, "image"), *lang = spec_member(in, "runtime");
	const json_t *code = spec_member(in, "code"), *proc = spec_member(in, "envProcess");
	if (img && lang)
		return snprintf(err, errlen, "give image or runtime, not both"), -1;
	/* envProcess is a root filesystem's command where neither image nor runtime is given; with
	 * either (faas-cli sends image and its fprocess together), or empty, it is ignored, as it
	 * always was */
	if (json_is_string(proc) && !json_string_length(proc))
		proc = NULL;
	if (proc && !img && !lang) {
		if (code)
			return snprintf(err, errlen, "code goes with runtime, not with envProcess"),
			       -1;
		if (!spec_member(in, "files"))
			return snprintf(err, errlen,
					"envProcess runs a program of the function's files: give "
					"files (a root filesystem, as a tar or zip archive)"),
			       -1;
		return process(proc, sp, err, errlen);
	}
	if (img) {
		if (!json_is_string(img) ||
		    srv_image_name(json_string_value(img), sp->image, sizeof(sp->image)))
			return snprintf(
				   err, errlen,
				   "image must name an uploaded image: NAME, or a reference "
				   "such as NAME:tag or registry/org/NAME:tag, where NAME "
				   "matches [a-z0-9][a-z0-9-_.]{0,62} (PUT /system/images/NAME)"),
			       -1;
		if (code)
			return snprintf(err, errlen, "code goes with runtime, not with image"), -1;
		return json_object_set_new(sp->doc, "image", json_string(sp->image));
	}
	if (!lang)
		return snprintf(err, errlen,
				"give image (an uploaded executable), runtime (%s) with code, or "
				"files (a root filesystem) with envProcess",
				img_runtime_names()),
		       -1;
	if (!json_is_string(lang) || !img_runtime_known(json_string_value(lang)))
		return snprintf(err, errlen, "runtime must be one of %s", img_runtime_names()), -1;
	strcpy(sp->runtime, json_string_value(lang));
	if (!json_is_string(code) || json_string_length(code) == 0)
		return snprintf(err, errlen,
				"code must be the handler's source, a non-empty string"),
		       -1;
	json_object_set_new(sp->doc, "runtime", json_string(sp->runtime));
	json_object_set_new(sp->doc, "code",
			    json_stringn(json_string_value(code), json_string_length(code)));
	return 0;
}

/* "files": a tar or zip archive of the function's files, in base64; checked when it is loaded */
static int files(const json_t *in, struct srv_spec *sp, char *err, size_t errlen)
{
	const json_t *f = spec_member(in, "files");
	if (!f)
		return 0;
	size_t n = json_is_string(f) ? json_string_length(f) : 0;
	const char *b64 = json_string_value(f);
	int rc = srv_base64(b64, n, &sp->files, &sp->files_len);
	if (rc)
		return snprintf(err, errlen, "%s",
				rc == -2 ? "out of memory"
					 : "files must be a tar or zip archive in base64"),
		       -1;
	unsigned char md[32];
	unsigned mdlen = 0;
	if (!EVP_Digest(sp->files, sp->files_len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return snprintf(err, errlen, "out of memory"), -1;
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(sp->files_sha256 + 2 * i, 3, "%02x", md[i]);
	return json_object_set_new(sp->doc, "files", json_stringn(b64, n));
}

static int limits(const json_t *in, struct srv_spec *sp, char *err, size_t errlen)
{
	const json_t *l = spec_member(in, "limits");
	json_t *out = json_object();
	json_object_set_new(sp->doc, "limits", out);
	if (!l)
		return 0;
	if (!json_is_object(l))
		return snprintf(err, errlen, "limits must be an object"), -1;
	const json_t *m = spec_member(l, "memory");
	if (!m)
		return 0;
	/* the virtine's own minimum: its page tables, the in-guest runtime, a stack and a heap */
	if (!json_is_string(m) || base_parse_size(json_string_value(m), &sp->mem_bytes) ||
	    sp->mem_bytes < EMBER_MEM_MIN || sp->mem_bytes > EMBER_MEM_MAX)
		return snprintf(err, errlen,
				"limits.memory must be a size from %lluM (a virtine's minimum) to "
				"%lluG, such as \"128M\"",
				EMBER_MEM_MIN >> 20, EMBER_MEM_MAX >> 30),
		       -1;
	return json_object_set_new(out, "memory", json_string(json_string_value(m)));
}

int spec_parse(const json_t *in, const char *created, struct srv_spec **out, char *err,
	       size_t errlen)
{
	struct srv_spec *sp = calloc(1, sizeof(*sp));
	if (!sp || !(sp->doc = json_object())) {
		free(sp);
		return snprintf(err, errlen, "out of memory"), -1;
	}
	atomic_init(&sp->refs, 1);
	if (!json_is_object(in))
		FAIL("the deployment must be a JSON object");
	const json_t *svc = spec_member(in, "service");
	if (!json_is_string(svc))
		FAIL("service must be a string, the function's name");
	if (!srv_name_ok(json_string_value(svc)))
		FAIL("service must match [a-z0-9][a-z0-9-_.]{0,62} and not contain '..'");
	strcpy(sp->name, json_string_value(svc));
	json_object_set_new(sp->doc, "service", json_string(sp->name));
	if (source(in, sp, err, errlen) || string_map(in, "envVars", sp->doc, err, errlen) ||
	    string_map(in, "labels", sp->doc, err, errlen) ||
	    string_map(in, "annotations", sp->doc, err, errlen) || limits(in, sp, err, errlen) ||
	    files(in, sp, err, errlen) || spec_ember_fields(in, sp, err, errlen) ||
	    secrets_spec(in, sp, err, errlen) || build_env(sp, err, errlen))
		goto fail;
	json_t *code = json_object_get(sp->doc, "code");
	sp->code = json_string_value(code);
	sp->code_len = json_string_length(code);
	char now[32];
	if (!created)
		srv_rfc3339(now, sizeof(now));
	json_object_set_new(sp->doc, "createdAt", json_string(created ? created : now));
	*out = sp;
	return 0;
fail:
	spec_put(sp);
	return -1;
}

struct srv_spec *spec_get(struct srv_spec *sp)
{
	atomic_fetch_add(&sp->refs, 1);
	return sp;
}

void spec_put(struct srv_spec *sp)
{
	if (!sp || atomic_fetch_sub(&sp->refs, 1) != 1)
		return;
	for (size_t i = 0; sp->envp && sp->envp[i]; i++)
		free(sp->envp[i]);
	free(sp->envp);
	free(sp->files);
	free(sp->process);
	free(sp->process_buf);
	json_decref(sp->doc);
	free(sp);
}

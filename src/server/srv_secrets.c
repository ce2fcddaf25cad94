/* /system/secrets (values kept in STATE/function-secrets, never listed back) and
 * /system/namespaces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/srv_secrets.h"
#include "server/srv_workers.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"

int secrets_init(struct srv *s, char *err, size_t errlen)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/" SECRETS_DIR, s->state);
	/* store_init made it (and swept it); whoever made it, only Ember reads it */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0700)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return snprintf(err, errlen, "%s: %s", path, strerror(e)), -1;
	}
	close(fd);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* GET: OpenFaaS's []types.Secret with names only */
enum MHD_Result h_secret_list(struct srv *s, struct srv_req *r)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/" SECRETS_DIR, s->state);
	json_t *list = json_array();
	/* without s->admin, which a deployment holds while it loads: a name is there, whole, or
	 * not (each is renamed into place) */
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && list && (de = readdir(d)))
		if (srv_name_ok(de->d_name)) /* not ".", "..", nor a .tmp- file */
			json_array_append_new(list, json_pack("{s:s}", "name", de->d_name));
	int e = d ? 0 : errno;
	if (d)
		closedir(d);
	if (!d || !list) {
		json_decref(list);
		return srv_reply_error(r, 500, "cannot read %s: %s", path,
				       strerror(e ? e : ENOMEM));
	}
	size_t n = json_array_size(list);
	json_t **v = calloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = json_incref(json_array_get(list, i));
	if (v)
		qsort(v, n, sizeof(*v), by_name);
	json_array_clear(list);
	for (size_t i = 0; v && i < n; i++)
		json_array_append_new(list, v[i]);
	free(v);
	return srv_reply_json(r, 200, list);
}

/* a request's secret: its name, and its value unless only the name is wanted */
struct secret_in {
	char name[SRV_NAME_MAX];
	uint8_t *value; /* owned, wiped by put_in */
	size_t len;
};

static void put_in(struct srv_req *r, struct secret_in *in)
{
	if (in->value)
		explicit_bzero(in->value, in->len);
	free(in->value);
	if (r->body) /* the request as it came, value included */
		explicit_bzero(r->body, r->len);
}

static void wipe(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);
	if (json_is_string(v))
		explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

/* what is wrong with the body, and its status; 0 when nothing */
static unsigned check(const json_t *j, int want_value, char *err, size_t errlen)
{
	const char *name = json_string_value(json_object_get(j, "name"));
	const json_t *raw = json_object_get(j, "rawValue"), *val = json_object_get(j, "value");
	if (!json_is_object(j))
		return snprintf(err, errlen,
				"the body must be a JSON object {\"name\", \"value\"}"),
		       400;
	/* a NUL in a name would end it early (JSON_ALLOW_NUL lets one through, for the values) */
	if (!name || !srv_name_ok(name) ||
	    strlen(name) != json_string_length(json_object_get(j, "name")))
		return snprintf(err, errlen,
				"name must match [a-z0-9][a-z0-9-_.]{0,62} and not contain '..'"),
		       400;
	if ((raw && !json_is_string(raw)) || (val && !json_is_string(val)))
		return snprintf(err, errlen, "value and rawValue must be strings"), 400;
	if (want_value && !json_string_length(raw) && !val)
		return snprintf(err, errlen,
				"give the secret's value (value, or rawValue in base64)"),
		       400;
	return 0;
}

/* the value: rawValue (base64: faas-cli's --from-file) when given, as in faasd, else value; 0,
 * or the status of the error put in err */
static unsigned value_of(const json_t *j, struct secret_in *in, char *err, size_t errlen)
{
	const json_t *raw = json_object_get(j, "rawValue"), *val = json_object_get(j, "value");
	int rc = 0;
	if (json_string_length(raw)) {
		rc = srv_base64(json_string_value(raw), json_string_length(raw), &in->value,
				&in->len);
	} else { /* its bytes, a NUL among them too */
		in->len = json_string_length(val);
		if ((in->value = malloc(in->len ? in->len : 1)))
			memcpy(in->value, json_string_value(val), in->len);
		rc = in->value ? 0 : -2;
	}
	if (rc == -2)
		return snprintf(err, errlen, "out of memory"), 500;
	if (rc)
		return snprintf(err, errlen, "rawValue must be base64"), 400;
	if (in->len > SECRET_MAX)
		return snprintf(err, errlen, "a secret holds at most %u bytes", SECRET_MAX), 413;
	return 0;
}

/* reads {"name", "value" or "rawValue"} (the value when want_value); 0, or the status of the
 * error put in err */
static unsigned read_in(struct srv_req *r, int want_value, struct secret_in *in, char *err,
			size_t errlen)
{
	json_error_t jerr;
	json_t *j = json_loadb((const char *)r->body, r->len,
			       JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	memset(in, 0, sizeof(*in));
	unsigned st = check(j, want_value, err, errlen);
	if (!st)
		srv_copy(in->name, sizeof(in->name), json_string_value(json_object_get(j, "name")));
	if (!st && want_value)
		st = value_of(j, in, err, errlen);
	wipe(j, "value"); /* jansson's copies */
	wipe(j, "rawValue");
	json_decref(j);
	return st;
}

static int exists(struct srv *s, const char *name)
{
	char path[SRV_PATH_MAX];
	return !store_path(s, SECRETS_DIR, name, "", path, sizeof(path)) && !access(path, F_OK);
}

/* POST (update = 0) and PUT (update = 1) */
static enum MHD_Result write_secret(struct srv *s, struct srv_req *r, int update)
{
	char err[SRV_ERR_MAX], tmp[SRV_PATH_MAX];
	struct secret_in in;
	unsigned st = read_in(r, 1, &in, err, sizeof(err));
	size_t reloaded = 0;
	int rc = 0;
	pthread_mutex_lock(&s->admin);
	if (!st && exists(s, in.name) != update) {
		st = update ? 404 : 409;
		snprintf(err, sizeof(err), "secret '%s' %s", in.name,
			 update ? "not found" : "exists (PUT updates it)");
	}
	/* whole on disk, readable by Ember only, before it gets its name */
	if (!st && !(rc = store_temp(s, SECRETS_DIR, in.value, in.len, 0600, tmp, sizeof(tmp), err,
				     sizeof(err))))
		rc = store_commit(s, SECRETS_DIR, tmp, in.name, "", err, sizeof(err));
	if (!st && !rc && update)
		reloaded = secrets_changed(s, in.name);
	pthread_mutex_unlock(&s->admin);
	if (!st && !rc && update && s->opt.workers > 1) /* the owners of its users too */
		workers_notify(s, "secret", in.name);
	put_in(r, &in);
	if (st)
		return srv_reply_error(r, st, "%s", err);
	if (rc)
		return srv_reply_load_error(r, rc, err);
	if (update)
		srv_log(s, "info", "secret %s updated: %zu function%s given it loaded again",
			in.name, reloaded, reloaded == 1 ? "" : "s");
	else
		srv_log(s, "info", "secret %s created", in.name);
	return srv_reply_json(r, update ? 200 : 201, json_pack("{s:s}", "name", in.name));
}

enum MHD_Result h_secret_create(struct srv *s, struct srv_req *r)
{
	return write_secret(s, r, 0);
}

enum MHD_Result h_secret_update(struct srv *s, struct srv_req *r)
{
	return write_secret(s, r, 1);
}

/* DELETE with s->admin held: 0, or the status of the error put in err */
static unsigned delete_locked(struct srv *s, const char *name, char *err, size_t errlen)
{
	char users[128];
	if (!exists(s, name))
		return snprintf(err, errlen, "secret '%s' not found", name), 404;
	pthread_mutex_lock(&s->mu);
	size_t n = secrets_users(s, name, users, sizeof(users));
	pthread_mutex_unlock(&s->mu);
	if (n)
		return snprintf(
			   err, errlen,
			   "secret '%s' is given to %zu function%s (%.80s): deploy them without "
			   "it first",
			   name, n, n > 1 ? "s" : "", users),
		       409;
	if (store_remove(s, SECRETS_DIR, name, ""))
		return snprintf(err, errlen, "cannot remove secret '%s': %s", name,
				strerror(errno)),
		       500;
	return 0;
}

enum MHD_Result h_secret_delete(struct srv *s, struct srv_req *r)
{
	char err[SRV_ERR_MAX];
	struct secret_in in;
	unsigned st = read_in(r, 0, &in, err, sizeof(err));
	pthread_mutex_lock(&s->admin);
	if (!st)
		st = delete_locked(s, in.name, err, sizeof(err));
	pthread_mutex_unlock(&s->admin);
	put_in(r, &in);
	if (st)
		return srv_reply_error(r, st, "%s", err);
	srv_log(s, "info", "secret %s deleted", in.name);
	return srv_reply_json(r, 200, json_pack("{s:s}", "deleted", in.name));
}

enum MHD_Result h_namespaces(struct srv *s, struct srv_req *r)
{
	json_t *j = secrets_namespaces(s);
	return j ? srv_reply_json(r, 200, j) : srv_reply_error(r, 500, "out of memory");
}

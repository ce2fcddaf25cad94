/* A deployment's secrets: named in its JSON, read at each load, dropped when one changes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_secrets.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_workers.h"

#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), -1)

int secrets_spec(const json_t *in, struct srv_spec *sp, char *err, size_t errlen)
{
	const json_t *v = json_object_get(in, "secrets"), *ns = json_object_get(in, "namespace");
	/* recorded for /system/namespaces (ember_fields made it the sharing domain already) */
	if (json_is_string(ns) && srv_name_ok(json_string_value(ns)))
		json_object_set_new(sp->doc, "namespace", json_string(json_string_value(ns)));
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > SECRETS_PER_FN)
		return BAD("secrets must be an array of at most %d secret names", SECRETS_PER_FN);
	for (size_t i = 0; i < json_array_size(v); i++) {
		const char *name = json_string_value(json_array_get(v, i));
		if (!name || !srv_name_ok(name))
			return BAD(
			    "secrets[%zu] must be a secret's name: [a-z0-9][a-z0-9-_.]{0,62}", i);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(name, json_string_value(json_array_get(v, k))))
				return BAD("secret '%s' is named twice in secrets", name);
	}
	if (json_array_size(v))
		json_object_set_new(sp->doc, "secrets", json_deep_copy(v));
	return 0;
}

void secrets_free(struct srv_secret_set *set)
{
	for (size_t i = 0; set && i < set->n; i++) {
		explicit_bzero(set->data[i], set->len[i]);
		free(set->data[i]);
	}
	free(set);
}

int secrets_load(struct srv *s, const struct srv_spec *sp, struct srv_secret_set **out, char *err,
		 size_t errlen)
{
	const json_t *v = json_object_get(sp->doc, "secrets");
	*out = NULL;
	if (!json_array_size(v))
		return 0;
	struct srv_secret_set *set = calloc(1, sizeof(*set));
	if (!set)
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	for (size_t i = 0; i < json_array_size(v) && i < SECRETS_PER_FN; i++) {
		const char *name = json_string_value(json_array_get(v, i));
		char path[SRV_PATH_MAX];
		int e = store_path(s, SECRETS_DIR, name, "", path, sizeof(path))
			    ? -EINVAL
			    : base_read_file(path, SECRET_MAX, &set->data[i], &set->len[i]);
		if (e) {
			secrets_free(set);
			if (e == -ENOENT)
				return snprintf(err, errlen,
						"secret '%s' does not exist (POST /system/secrets "
						"creates it)",
						name),
				       EMBER_ERR_CONFIG;
			snprintf(err, errlen, "secret '%s': %s", name, strerror(-e));
			return store_kind(-e);
		}
		snprintf(set->paths[i], sizeof(set->paths[i]), SECRETS_MOUNT "%s", name);
		set->files[i] = (struct ember_file){set->paths[i], set->data[i], set->len[i]};
		set->n = i + 1;
	}
	*out = set;
	return 0;
}

/* sp is given secret name */
static int given(const struct srv_spec *sp, const char *name)
{
	const json_t *v = json_object_get(sp->doc, "secrets");
	for (size_t i = 0; i < json_array_size(v); i++)
		if (!strcmp(json_string_value(json_array_get(v, i)), name))
			return 1;
	return 0;
}

size_t secrets_users(struct srv *s, const char *name, char *buf, size_t len)
{
	size_t n = 0, at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < s->nfns; i++) {
		if (!given(s->fns[i]->spec, name))
			continue;
		int w = snprintf(buf + at, len - at, "%s%s", n ? ", " : "", s->fns[i]->spec->name);
		at = w > 0 && at + (size_t)w < len ? at + (size_t)w : at;
		n++;
	}
	return n;
}

/* function name's loaded version dropped (with its snapshot), and its generation moved: a load
 * running now read the old value, sees the move and loads again (srv_registry.c's get_inst) */
static void drop(struct srv *s, const char *name)
{
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, NULL);
	struct srv_inst *dead = NULL;
	if (e) {
		e->gen++;
		e->failed = 0;
		if (e->inst)
			e->inst->retired = 1; /* its snapshot may hold the old value: it goes too */
		dead = reg_inst_put(e->inst);
		e->inst = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	inst_unload(dead); /* calls running hold their own references */
}

size_t secrets_changed(struct srv *s, const char *name)
{
	size_t loaded = 0;
	/* s->admin is held: no function is added or removed meanwhile, so an index stays its own */
	for (size_t i = 0;; i++) {
		char fn[SRV_NAME_MAX], err[SRV_ERR_MAX];
		pthread_mutex_lock(&s->mu);
		struct srv_entry *e = i < s->nfns ? s->fns[i] : NULL;
		int mine = e && given(e->spec, name);
		/* --workers: loaded again by the worker its calls go to, dropped by the others */
		int hot = mine && (e->inst || e->loading || e->spec->min_warm) &&
			  workers_here(s, e->spec->name);
		struct srv_spec *sp = mine ? spec_get(e->spec) : NULL;
		pthread_mutex_unlock(&s->mu);
		if (!e)
			break;
		if (!mine)
			continue;
		memcpy(fn, sp->name, sizeof(fn));
		/* loaded, or kept warm: loaded again now, as a redeploy of the same deployment */
		struct srv_inst *in = NULL;
		int rc = hot ? load_spec(s, sp, NULL, &in, err, sizeof(err)) : -1;
		if (!rc && reg_replace(s, spec_get(sp), in) == REG_OK) {
			loaded++;
		} else {
			/* the kind of failure only: init's message may quote the value */
			if (hot && rc)
				srv_log(s, "error",
					"cannot load %s with secret %s's new value: %s failed", fn,
					name, ember_error_name(rc));
			drop(s, fn); /* the next call loads it */
		}
		spec_put(sp);
	}
	return loaded;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *secrets_namespaces(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	const char **v = calloc(s->nfns + 1, sizeof(*v));
	size_t n = 0;
	if (v)
		v[n++] = NAMESPACE_DEFAULT;
	for (size_t i = 0; v && i < s->nfns; i++) {
		const char *ns =
		    json_string_value(json_object_get(s->fns[i]->spec->doc, "namespace"));
		if (ns)
			v[n++] = ns;
	}
	if (v)
		qsort(v, n, sizeof(*v), by_string);
	json_t *j = v ? json_array() : NULL;
	for (size_t i = 0; j && i < n; i++)
		if (!i || strcmp(v[i], v[i - 1]))
			json_array_append_new(j, json_string(v[i]));
	pthread_mutex_unlock(&s->mu); /* the names belong to the specs */
	free(v);
	return j;
}

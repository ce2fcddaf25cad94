/* The start-up restore: the deployments of the state folder back in the table, with their pins,
 * and the pins no deployment names swept away. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/srv_registry.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"

/* functions/NAME.json read: 0 and *out (its pin set), 1 when there is none, -1 (logged) */
static int read_one(struct srv *s, const char *name, struct srv_spec **out)
{
	char path[SRV_PATH_MAX], err[SRV_ERR_MAX];
	if (store_path(s, "functions", name, ".json", path, sizeof(path))) {
		srv_log(s, "warning", "skipping functions/%s.json: not a function name", name);
		return -1;
	}
	if (access(path, F_OK))
		return 1;
	json_error_t jerr;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	struct srv_spec *sp = NULL;
	if (!doc) {
		srv_log(s, "warning", "skipping %s: %s", path, jerr.text);
		return -1;
	}
	const char *created = json_string_value(json_object_get(doc, "createdAt"));
	if (spec_parse(doc, created, &sp, err, sizeof(err))) {
		srv_log(s, "warning", "skipping %s: %s", path, err);
		json_decref(doc);
		return -1;
	}
	pin_restore(s, doc, sp);
	json_decref(doc);
	if (strcmp(sp->name, name)) {
		srv_log(s, "warning", "skipping %s: it deploys '%s'", path, sp->name);
		spec_put(sp);
		return -1;
	}
	*out = sp;
	return 0;
}

static void restore_one(struct srv *s, const char *file)
{
	char name[SRV_NAME_MAX];
	struct srv_spec *sp;
	size_t n = strlen(file);
	int rc;
	if (n <= 5 || n - 5 >= sizeof(name) || strcmp(file + n - 5, ".json"))
		return;
	memcpy(name, file, n - 5);
	name[n - 5] = 0;
	if (read_one(s, name, &sp))
		return;
	if ((rc = reg_add(s, sp, NULL)))
		srv_log(s, "warning", "skipping functions/%s: %s", file,
			rc == REG_NOMEM ? "out of memory" : "a duplicate");
}

int store_reread(struct srv *s, const char *name)
{
	struct srv_spec *sp = NULL, *old;
	pthread_mutex_lock(&s->admin);
	int rc = read_one(s, name, &sp);
	if (rc == 1)
		rc = reg_remove(s, name) == REG_OK ? 0 : 1;
	else if (!rc && (old = reg_spec(s, name))) {
		spec_put(old);
		rc = reg_replace(s, sp, NULL) ? -1 : 0;
	} else if (!rc)
		rc = reg_add(s, sp, NULL) ? -1 : 0;
	pthread_mutex_unlock(&s->admin);
	return rc;
}

/* puts every function of the state directory back in the table (loaded later) */
int store_restore(struct srv *s)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/functions", s->state);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			restore_one(s, de->d_name);
	closedir(d);
	return 0;
}

/* the pin the stored deployment doc names (imageFile), or the older NAME.image */
void pin_restore(const struct srv *s, const json_t *doc, struct srv_spec *sp)
{
	char name[SRV_NAME_MAX], path[SRV_PATH_MAX];
	const char *pin = json_string_value(json_object_get(doc, "imageFile"));
	if (!sp->image[0])
		return;
	if (pin && !pin_owner(pin, name) && !strcmp(name, sp->name)) {
		snprintf(sp->pin, sizeof(sp->pin), "%s", pin);
		return;
	}
	snprintf(sp->pin, sizeof(sp->pin), "%s.image", sp->name);
	if (pin_path(s, sp->pin, path, sizeof(path)) || access(path, R_OK))
		sp->pin[0] = 0; /* none: the uploaded image is loaded, as older servers did */
}

/* after the restore: removes the pins no deployment names (a crash between a new version's pin
 * and its JSON, or between the JSON and the old pin's removal) */
int pin_sweep(struct srv *s)
{
	char path[SRV_PATH_MAX], name[SRV_NAME_MAX];
	snprintf(path, sizeof(path), "%s/functions", s->state);
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d))) {
		if (pin_owner(de->d_name, name))
			continue;
		struct srv_spec *sp = reg_spec(s, name);
		int named = sp && !strcmp(sp->pin, de->d_name);
		spec_put(sp);
		if (!named)
			n += unlinkat(dirfd(d), de->d_name, 0) == 0;
	}
	if (d)
		closedir(d);
	if (n)
		store_sync(s, "functions");
	return n;
}

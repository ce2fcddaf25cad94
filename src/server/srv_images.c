/* The /system/images routes: upload an executable (validated by loading it), list, delete. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"

/* the loader's message names the temporary file: name the image instead */
static void rename_in_message(char *err, size_t errlen, const char *tmp, const char *name)
{
	size_t n = strlen(tmp);
	if (strncmp(err, tmp, n))
		return;
	size_t nn = strlen(name), rest = strlen(err + n);
	if (nn + rest >= errlen)
		return;
	memmove(err + nn, err + n, rest + 1);
	memcpy(err, name, nn);
}

enum MHD_Result h_image_put(struct srv *s, struct srv_req *r)
{
	char tmp[SRV_PATH_MAX], err[SRV_ERR_MAX];
	if (!r->len)
		return srv_reply_error(r, 400, "the body must be a static x86-64 executable");
	int rc = store_temp(s, "images", r->body, r->len, 0755, tmp, sizeof(tmp), err, sizeof(err));
	if (rc)
		return srv_reply_load_error(r, rc, err);
	struct ember_info info;
	rc = load_check_image(s, tmp, &info, err, sizeof(err));
	if (rc) {
		unlink(tmp);
		rename_in_message(err, sizeof(err), tmp, r->name);
		return srv_reply_load_error(r, rc, err);
	}
	if ((rc = store_commit(s, "images", tmp, r->name, "", err, sizeof(err))))
		return srv_reply_load_error(r, rc, err);
	srv_log(s, "info", "uploaded image %s (%zu bytes)", r->name, r->len);
	return srv_reply_json(r, 201,
			      json_pack("{s:s,s:I,s:I,s:s}", "name", r->name, "bytes",
					(json_int_t)r->len, "rewrittenSites",
					(json_int_t)info.rewritten_sites, "backend", info.backend));
}

enum MHD_Result h_image_list(struct srv *s, struct srv_req *r)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/images", s->state);
	json_t *a = json_array();
	DIR *d = opendir(path);
	struct dirent *de;
	struct stat st;
	while (d && (de = readdir(d))) {
		if (!srv_name_ok(de->d_name) || fstatat(dirfd(d), de->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode))
			continue;
		json_array_append_new(
		    a, json_pack("{s:s,s:I}", "name", de->d_name, "bytes", (json_int_t)st.st_size));
	}
	if (d)
		closedir(d);
	return srv_reply_json(r, 200, a);
}

/* functions deployed from it keep their own link to the version they were deployed with */
enum MHD_Result h_image_delete(struct srv *s, struct srv_req *r)
{
	pthread_mutex_lock(&s->admin);
	int rc = store_remove(s, "images", r->name, "");
	pthread_mutex_unlock(&s->admin);
	if (rc)
		return srv_reply_error(r, 404, "image '%s' not found", r->name);
	return srv_reply_json(r, 202, json_pack("{s:s}", "deleted", r->name));
}

/* ember deploy: what each function of a stack file deploys (its handler, program or image, and
 * its files). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "client/stack.h"
#include "server/srv_serve.h"

#define MAX_FILE (256ULL << 20)

/* the handler's source: the handler itself when it is a file, else file in that folder */
static int handler_file(const struct cli_stack_fn *fn, const char *file, char *out, size_t len,
			char *why, size_t whylen)
{
	struct stat st;
	if (stat(fn->handler, &st))
		return snprintf(why, whylen, "%s: handler %s: %s", fn->name, fn->handler,
				strerror(errno)),
		       -1;
	if (S_ISREG(st.st_mode))
		return snprintf(out, len, "%s", fn->handler), 0;
	snprintf(out, len, "%s/%s", fn->handler, file);
	if (stat(out, &st) || !S_ISREG(st.st_mode))
		return snprintf(why, whylen, "%s: no %s in the handler folder %s", fn->name, file,
				fn->handler),
		       -1;
	return 0;
}

/* js, lua or python: the handler's source travels in the deployment as code */
static int runtime_source(const struct cli_stack_fn *fn, const char *runtime, const char *file,
			  struct cli_deploy_src *src, char *why, size_t whylen)
{
	char path[CLI_PATH_MAX + 64];
	uint8_t *code;
	size_t len;
	if (handler_file(fn, file, path, sizeof(path), why, whylen) ||
	    cli_read_file(path, MAX_FILE, &code, &len, why, whylen))
		return -1;
	json_t *s = json_stringn((const char *)code, len);
	free(code);
	if (!s)
		return snprintf(why, whylen, "%s: %s is not UTF-8 text", fn->name, path), -1;
	json_object_set_new(src->deployment, "runtime", json_string(runtime));
	json_object_set_new(src->deployment, "code", s);
	snprintf(src->what, sizeof(src->what), "%s handler %s (%zu bytes)", runtime, path, len);
	return 0;
}

/* uploaded under the function's name, then deployed from it */
static int upload(const struct cli_stack_fn *fn, struct cli_deploy_src *src)
{
	strcpy(src->upload_name, fn->name);
	return json_object_set_new(src->deployment, "image", json_string(fn->name));
}

static int c_source(const struct cli_stack_fn *fn, struct cli_deploy_src *src, char *why,
		    size_t whylen)
{
	if (cli_build_c(fn, &src->upload, &src->upload_len, src->what, sizeof(src->what), why,
			whylen))
		return -1;
	return upload(fn, src);
}

/* no lang: image is an executable file (uploaded), else the name of an image uploaded before */
static int image_source(const struct cli_stack_fn *fn, struct cli_deploy_src *src, char *why,
			size_t whylen)
{
	struct stat st;
	char name[64];
	if (!stat(fn->image_path, &st) && S_ISREG(st.st_mode)) {
		if (cli_read_file(fn->image_path, MAX_FILE, &src->upload, &src->upload_len, why,
				  whylen))
			return -1;
		snprintf(src->what, sizeof(src->what), "executable %s", fn->image_path);
		return upload(fn, src);
	}
	if (srv_image_name(fn->image, name, sizeof(name)))
		return snprintf(why, whylen,
				"%s: image '%s' is neither a file (%s) nor an image name such as "
				"hello or registry/org/hello:1.0",
				fn->name, fn->image, fn->image_path),
		       -1;
	snprintf(src->what, sizeof(src->what), "image %s, uploaded before", name);
	return json_object_set_new(src->deployment, "image", json_string(name));
}

/* a root filesystem's function: its command; its files travel as every function's do */
static int rootfs_source(const struct cli_stack_fn *fn, struct cli_deploy_src *src, char *why,
			 size_t whylen)
{
	snprintf(src->what, sizeof(src->what), "root filesystem, running %s", fn->fprocess);
	if (json_object_set_new(src->deployment, "envProcess", json_string(fn->fprocess)))
		return snprintf(why, whylen, "out of memory"), -1;
	return 0;
}

/* environment, labels, annotations, limits, Ember's own settings and the secrets' names */
static int settings(const struct cli_stack_fn *fn, json_t *d)
{
	int rc = json_object_set(d, "envVars", fn->env) ||
		 json_object_set(d, "labels", fn->labels) ||
		 json_object_set(d, "annotations", fn->annotations);
	if (fn->memory[0])
		rc = rc ||
		     json_object_set_new(d, "limits", json_pack("{s:s}", "memory", fn->memory));
	if (fn->ember)
		rc = rc || json_object_set(d, "ember", fn->ember);
	if (fn->secrets)
		rc = rc || json_object_set(d, "secrets", fn->secrets);
	return rc;
}

int cli_deploy_source(const struct cli_stack_fn *fn, struct cli_deploy_src *src, char *why,
		      size_t whylen)
{
	memset(src, 0, sizeof(*src));
	if (!(src->deployment = json_pack("{s:s}", "service", fn->name)) ||
	    settings(fn, src->deployment)) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	static const struct {
		const char *runtime, *file; /* js, lua, python: the source travels as code */
		int (*get)(const struct cli_stack_fn *fn, struct cli_deploy_src *src, char *why,
			   size_t whylen);
	} kinds[] = {
	    [CLI_FN_JS] = {"js", "handler.js", NULL},
	    [CLI_FN_LUA] = {"lua", "handler.lua", NULL},
	    [CLI_FN_PY] = {"python", "handler.py", NULL},
	    [CLI_FN_C] = {NULL, NULL, c_source},
	    [CLI_FN_IMAGE] = {NULL, NULL, image_source},
	    [CLI_FN_ROOTFS] = {NULL, NULL, rootfs_source},
	};
	int rc = kinds[fn->kind].get ? kinds[fn->kind].get(fn, src, why, whylen)
				     : runtime_source(fn, kinds[fn->kind].runtime,
						      kinds[fn->kind].file, src, why, whylen);
	if (!rc && fn->files[0])
		rc = cli_deploy_files(fn, src->deployment, src->what, sizeof(src->what), why,
				      whylen);
	if (!rc)
		return 0;
fail:
	cli_deploy_source_free(src);
	return -1;
}

void cli_deploy_source_free(struct cli_deploy_src *src)
{
	json_decref(src->deployment);
	free(src->upload);
	memset(src, 0, sizeof(*src));
}

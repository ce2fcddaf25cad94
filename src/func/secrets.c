/* A function's secret files (ember_config.secret_files): added to its tree from memory only. */
#include <stdio.h>

#include "bundle/bnd.h"
#include "func/func.h"

int func_secrets_add(struct bnd_builder *bb, const struct ember_config *cfg, char *err,
		     size_t errlen)
{
	for (size_t i = 0; i < cfg->nsecret_files; i++) {
		const struct ember_file *f = &cfg->secret_files[i];
		if (!f->path || f->path[0] != '/' || (!f->data && f->len))
			return snprintf(err, errlen,
					"secret file %zu: give an absolute path and its "
					"bytes",
					i),
			       -1;
		if (bnd_add(bb, f->path, 'f', 0444, f->data, f->len, err, errlen))
			return -1;
	}
	return 0;
}

struct bnd *func_secrets_build(const char *const *paths, size_t npaths,
			       const struct ember_config *cfg, char *err, size_t errlen)
{
	struct bnd_builder *bb = bnd_builder_new();
	if (!bb)
		return snprintf(err, errlen, "out of memory"), NULL;
	if (bnd_add_sources(bb, paths, npaths, cfg->files_tar, cfg->files_tar_len, err, errlen) ||
	    func_secrets_add(bb, cfg, err, errlen)) {
		bnd_builder_free(bb);
		return NULL;
	}
	return bnd_pack(bb, err, errlen);
}

int func_secrets_only(struct ember_function *fn, const struct ember_config *cfg, char *err,
		      size_t errlen)
{
	if (fn->bundle || !cfg->nsecret_files)
		return 0;
	char why[EMBER_ERR_MAX - 32] = "";
	fn->bundle = func_secrets_build(NULL, 0, cfg, why, sizeof(why));
	return fn->bundle ? 0 : (snprintf(err, errlen, "secrets: %s", why), EMBER_ERR_CONFIG);
}

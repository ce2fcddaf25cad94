/* Packed trees kept on disk: what proves one unchanged without reading its sources (bnd_cache.c,
 * bnd_manifest.c). Internal to src/bundle. */
#ifndef EMBER_BND_KEPT_H
#define EMBER_BND_KEPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* 2: sources proven unchanged by a manifest of their stat identities (1: a walk's hash) */
#define BND_KEPT_VERSION 2

/* what a manifest records of the packed file it goes with, as it was once written */
struct bnd_kept {
	uint64_t id[BASE_ID_WORDS]; /* its identity (base_stat_id) */
	uint64_t digest;	    /* of the packed block (its header's) */
	uint64_t index_digest;	    /* of the block's nodes and names */
};

/* the manifest body of the sources at paths (NULL ones skipped): each one and, for a folder,
 * every entry under it; 0, or -1 when one cannot be read. Taken before the sources are packed:
 * a source changed meanwhile is packed again next time. */
int bnd_manifest_make(const char *const *paths, size_t npaths, void **body, size_t *len);
/* STATE/bundles/KEY.man written (as a whole new file): 0 or -1 */
int bnd_manifest_save(const char *state, uint64_t key, const void *body, size_t len,
		      const struct bnd_kept *kept);
/* 0 with kept when KEY.man is there, sound (its digest) and every entry it lists is still what
 * it was (a stat of each: nothing opened, nothing read); -1 when not */
int bnd_manifest_check(const char *state, uint64_t key, const char *const *paths, size_t npaths,
		       struct bnd_kept *kept);

#endif

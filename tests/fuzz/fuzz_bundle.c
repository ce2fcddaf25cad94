/* A function's files from a tar or zip archive (src/bundle/): the input is the archive, as a tenant
 * deploys it. An accepted tree must be well formed (every folder's children in range, sorted,
 * their parent the folder; contents inside the block) and every entry found again by its path;
 * lookups of the input's own bytes as paths stay inside the tree. The input is also tried as a
 * packed block read back from the state folder: what bnd_check accepts is safe to use. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle/bnd.h"
#include "common.h"

FZ_UNTRACED static void check(const struct bnd *b)
{
	FZ_CHECK(b->nnodes >= 1 && bnd_is(b, 0, S_IFDIR), "the root is a folder");
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const struct bnd_node *n = &b->nodes[i];
		FZ_CHECK((const uint8_t *)b->data + n->data_off + n->size <= b->mem + b->mem_len,
			 "node %u's bytes are inside the block", i);
		if (!bnd_is(b, i, S_IFDIR)) {
			FZ_CHECK(n->count == 0, "node %u: no children", i);
			continue;
		}
		FZ_CHECK(n->first + (uint64_t)n->count <= b->nnodes, "node %u's children", i);
		for (uint32_t c = n->first; c < n->first + n->count; c++) {
			FZ_CHECK(b->nodes[c].parent == i, "node %u: its parent is %u", c, i);
			if (c > n->first)
				FZ_CHECK(strcmp(b->names + b->nodes[c - 1].name_off,
						b->names + b->nodes[c].name_off) < 0,
					 "folder %u's children are sorted", i);
		}
		char path[BND_PATH_MAX];
		uint32_t found = 0;
		FZ_CHECK(bnd_path_of(b, i, path, sizeof(path)) > 0, "folder %u has a path", i);
		FZ_CHECK(bnd_lookup(b, 0, path, 0, &found, NULL) == 0 && found == i,
			 "folder %u is found again by its path %s", i, path);
	}
}

/* The input as a packed block read back from the state folder (bnd_cache.c), its first 8 bytes
 * the node count and where the data start: what bnd_check accepts is safe to look paths up in
 * and to name folders of (ASan watches every access) */
FZ_UNTRACED static void as_block(const uint8_t *data, size_t size)
{
	if (size < 8)
		return;
	uint32_t hdr[2];
	memcpy(hdr, data, sizeof(hdr));
	uint8_t *mem = malloc(size - 8 ? size - 8 : 1);
	if (!mem)
		return;
	memcpy(mem, data + 8, size - 8);
	struct bnd b = {.mem = mem,
			.mem_len = size - 8,
			.fd = -1,
			.data_at = hdr[1] % (size - 8 + 1),
			.nodes = (const struct bnd_node *)mem,
			.nnodes = hdr[0] % 64,
			.names = (const char *)mem + (hdr[0] % 64) * sizeof(struct bnd_node),
			.data = mem + hdr[1] % (size - 8 + 1)};
	if (!bnd_check(&b)) {
		char path[BND_PATH_MAX];
		static const char *const paths[] = {"/", "a", "a/b", "../a/../b", "/a/b/c"};
		for (uint32_t i = 0; i < b.nnodes; i++)
			if (bnd_is(&b, i, S_IFDIR))
				bnd_path_of(&b, i, path, sizeof(path));
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			uint32_t node;
			if (bnd_lookup(&b, 0, paths[i], 1, &node, NULL) == 0)
				FZ_CHECK(node < b.nnodes, "a checked block's lookup stays in it");
		}
	}
	free(mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[300];
	as_block(data, size);
	struct bnd *b = bnd_from_tar(data, size, err, sizeof(err));
	if (!b)
		return 0;
	check(b);
	/* the input's bytes as paths, a NUL-separated list */
	char path[BND_PATH_MAX];
	for (size_t at = 0; at < size && at < 4096;) {
		size_t n = strnlen((const char *)data + at, size - at);
		size_t k = n < sizeof(path) - 1 ? n : sizeof(path) - 1;
		memcpy(path, data + at, k);
		path[k] = 0;
		uint32_t node;
		int rc = bnd_lookup(b, 0, path, 1, &node, NULL);
		FZ_CHECK(rc == 0 ? node < b->nnodes
				 : rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP ||
				       rc == -ENAMETOOLONG,
			 "a lookup gives a node or a known error (%d)", rc);
		at += n + 1;
	}
	bnd_free(b);
	return 0;
}

/* Page sharing across virtines: one page store per sharing domain, snapshots held in it, pages
 * merged into it on request. */
#ifndef EMBER_MEM_H
#define EMBER_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "snap/snap.h"
#include "vm/vm.h"

/* A content-addressed store of pages: one memfd holding one copy of each distinct page of a
 * sharing domain, mapped copy-on-write into the virtines that hold it. A page's content never
 * changes while anyone holds it; a page nobody holds is given back. */
struct share_store;

/* The store of the named domain, made on first use; every get is matched by a put. NULL, with
 * errno, when the host has no memory or descriptor for it. */
struct share_store *share_store_get(const char *domain);
void share_store_put(struct share_store *st);
int share_store_fd(const struct share_store *st);
const char *share_store_domain(const struct share_store *st);
/* the store's page at off, read-only */
const uint8_t *share_store_page(const struct share_store *st, uint64_t off);

uint64_t share_page_hash(const uint8_t *page);
/* A page of the store with this hash whose bytes equal page's: *off, held once more; -ENOENT when
 * there is none (a page changed since its hash was taken never matches). */
int share_store_match(struct share_store *st, uint64_t hash, const uint8_t *page, uint64_t *off);
/* page's offset in the store when it holds that content, no reference taken; -ENOENT if not */
int share_store_has(struct share_store *st, const uint8_t *page, uint64_t *off);
/* A page of the store equal to page, found or added: *off, held once more. */
int share_store_intern(struct share_store *st, const uint8_t *page, uint64_t *off);
void share_store_release(struct share_store *st, uint64_t off);
/* the holders of the page at off now */
uint32_t share_store_refs(struct share_store *st, uint64_t off);

struct share_store_stats {
	uint64_t pages;		   /* distinct pages held */
	uint64_t refs;		   /* holders of them, summed */
	uint64_t merged, merge_ns; /* pages merged by madvise, and the time spent */
};
void share_store_stats(struct share_store *st, struct share_store_stats *out);
void share_store_count_merge(struct share_store *st, uint64_t pages, uint64_t ns);

/* What one holder (a snapshot, a virtine) holds of a store, to give back at once. */
struct share_refs {
	struct share_store *st;
	uint64_t *offs;
	size_t n, cap;
};
int share_refs_add(struct share_refs *r, uint64_t off);
void share_refs_release(struct share_refs *r);

/* Moves the snapshot's pages into the store: identical pages of every snapshot and merge of the
 * domain held once; s then reads its pages from there and machines map them from there. The
 * references go into r. */
int share_snap_share(struct share_store *st, struct snap *s, struct share_refs *r);

/* The pages of b's files of a page or more (those guest memory maps: windows, the program's
 * mmaps) moved into the store (share_files.c): identical pages of every function of the domain held
 * once, and b then maps them from there (b->shared_off, sys_fs_map_pages). The references go
 * into r. On failure (-ENOMEM: no room) none are taken and b maps its own block. */
struct bnd;
int share_bnd_share(struct share_store *st, struct bnd *b, struct share_refs *r);
/* after every mapping of them is gone: b maps its own block again, r released */
void share_bnd_unshare(struct bnd *b, struct share_refs *r);

/* UPM: madvise(MADV_MERGEABLE) of [addr, addr+len) by a virtine's program, served at once:
 * each page that holds data hashed, compared byte for byte with the store's pages of that hash,
 * and mapped copy-on-write onto the identical one (added when new); r gets the references.
 * -EOPNOTSUPP where the backend cannot map (ptrace). */
int share_merge(struct share_refs *r, struct vm *vm, uint64_t addr, uint64_t len);

#endif

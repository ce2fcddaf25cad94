/* The page store of a sharing domain: one memfd, a page per distinct content, found by its hash. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "share/share.h"

#define PAGE	    EMBER_PAGE_SIZE
#define STORE_MAX   (256ULL << 30) /* the view's reservation: the most one domain may hold */
#define NONE	    UINT32_MAX
#define MIN_BUCKETS 1024

struct page_info {
	uint64_t hash;
	uint32_t refs;
	uint32_t next; /* the next page of its bucket, or NONE */
};

struct share_store {
	char domain[128];
	int users; /* gets not yet put, under reg_mu */
	struct share_store *next_store;
	pthread_mutex_t mu;
	int fd;
	uint8_t *view;			  /* the whole store, read-only */
	uint32_t npages, cap, file_pages; /* slots used, slots described, pages in the file */
	struct page_info *info;
	uint32_t *buckets; /* head page of each hash bucket, or NONE */
	size_t nbuckets;
	uint32_t *free; /* pages given back, to reuse */
	size_t nfree, free_cap;
	struct share_store_stats stats;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct share_store *stores;

uint64_t share_page_hash(const uint8_t *page)
{
	return XXH3_64bits(page, PAGE);
}

static void store_free(struct share_store *st)
{
	if (st->view)
		munmap(st->view, STORE_MAX);
	if (st->fd >= 0)
		close(st->fd);
	pthread_mutex_destroy(&st->mu);
	free(st->info);
	free(st->buckets);
	free(st->free);
	free(st);
}

static struct share_store *store_new(const char *domain)
{
	struct share_store *st = calloc(1, sizeof(*st));
	if (!st)
		return errno = ENOMEM, NULL;
	snprintf(st->domain, sizeof(st->domain), "%s", domain);
	pthread_mutex_init(&st->mu, NULL);
	st->fd = memfd_create("ember-pages", MFD_CLOEXEC);
	st->nbuckets = MIN_BUCKETS;
	st->buckets = malloc(st->nbuckets * sizeof(*st->buckets));
	if (st->fd < 0 || !st->buckets)
		goto fail;
	memset(st->buckets, 0xff, st->nbuckets * sizeof(*st->buckets));
	st->view = mmap(NULL, STORE_MAX, PROT_READ, MAP_SHARED | MAP_NORESERVE, st->fd, 0);
	if (st->view == MAP_FAILED) {
		st->view = NULL;
		goto fail;
	}
	return st;
fail:;
	int e = errno;
	store_free(st);
	errno = e;
	return NULL;
}

struct share_store *share_store_get(const char *domain)
{
	pthread_mutex_lock(&reg_mu);
	struct share_store *st = stores;
	while (st && strcmp(st->domain, domain))
		st = st->next_store;
	if (!st && (st = store_new(domain))) {
		st->next_store = stores;
		stores = st;
	}
	if (st)
		st->users++;
	pthread_mutex_unlock(&reg_mu);
	return st;
}

void share_store_put(struct share_store *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&reg_mu);
	if (--st->users == 0) {
		struct share_store **p = &stores;
		while (*p != st)
			p = &(*p)->next_store;
		*p = st->next_store;
		store_free(st);
	}
	pthread_mutex_unlock(&reg_mu);
}

int share_store_fd(const struct share_store *st)
{
	return st->fd;
}

const char *share_store_domain(const struct share_store *st)
{
	return st->domain;
}

const uint8_t *share_store_page(const struct share_store *st, uint64_t off)
{
	return st->view + off;
}

/* with mu held: the first page of hash's bucket equal to page, or NONE */
static uint32_t find(struct share_store *st, uint64_t hash, const uint8_t *page)
{
	for (uint32_t i = st->buckets[hash % st->nbuckets]; i != NONE; i = st->info[i].next)
		if (st->info[i].hash == hash && !memcmp(st->view + (uint64_t)i * PAGE, page, PAGE))
			return i;
	return NONE;
}

int share_store_match(struct share_store *st, uint64_t hash, const uint8_t *page, uint64_t *off)
{
	pthread_mutex_lock(&st->mu);
	uint32_t i = find(st, hash, page);
	if (i != NONE) {
		st->info[i].refs++;
		*off = (uint64_t)i * PAGE;
	}
	pthread_mutex_unlock(&st->mu);
	return i == NONE ? -ENOENT : 0;
}

int share_store_has(struct share_store *st, const uint8_t *page, uint64_t *off)
{
	uint64_t hash = share_page_hash(page);
	pthread_mutex_lock(&st->mu);
	uint32_t i = find(st, hash, page);
	if (i != NONE)
		*off = (uint64_t)i * PAGE;
	pthread_mutex_unlock(&st->mu);
	return i == NONE ? -ENOENT : 0;
}

/* with mu held: twice the buckets once pages outnumber them, every page linked again */
static void rehash(struct share_store *st)
{
	size_t n = st->nbuckets * 2;
	uint32_t *b = malloc(n * sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	memset(b, 0xff, n * sizeof(*b));
	for (size_t k = 0; k < st->nbuckets; k++) {
		for (uint32_t i = st->buckets[k], next; i != NONE; i = next) {
			next = st->info[i].next;
			st->info[i].next = b[st->info[i].hash % n];
			b[st->info[i].hash % n] = i;
		}
	}
	free(st->buckets);
	st->buckets = b;
	st->nbuckets = n;
}

/* with mu held: slot i to reuse later (nothing holds it); lost when there is no memory */
static void give_back(struct share_store *st, uint32_t i)
{
	if (st->nfree == st->free_cap) {
		size_t cap = st->free_cap ? st->free_cap * 2 : 256;
		uint32_t *f = realloc(st->free, cap * sizeof(*f));
		if (!f)
			return;
		st->free = f;
		st->free_cap = cap;
	}
	st->free[st->nfree++] = i;
}

/* with mu held: a page of the file for new content, reused or grown; NONE when full */
static uint32_t slot(struct share_store *st)
{
	if (st->nfree)
		return st->free[--st->nfree];
	if ((uint64_t)(st->npages + 1) * PAGE > STORE_MAX)
		return NONE;
	if (st->npages == st->cap) {
		uint32_t cap = st->cap ? st->cap * 2 : 1024;
		struct page_info *p = realloc(st->info, cap * sizeof(*p));
		if (!p)
			return NONE;
		st->info = p;
		st->cap = cap;
	}
	if (st->npages == st->file_pages) { /* grown a quarter at a time: one call per many pages */
		uint64_t n =
		    st->file_pages + (st->file_pages / 4 > 1024 ? st->file_pages / 4 : 1024);
		n = n * PAGE > STORE_MAX ? STORE_MAX / PAGE : n;
		if (ftruncate(st->fd, (off_t)(n * PAGE)) < 0)
			return NONE;
		st->file_pages = (uint32_t)n;
	}
	return st->npages++;
}

int share_store_intern(struct share_store *st, const uint8_t *page, uint64_t *off)
{
	uint64_t hash = share_page_hash(page);
	int rc = 0;
	pthread_mutex_lock(&st->mu);
	uint32_t i = find(st, hash, page);
	if (i == NONE) {
		if ((i = slot(st)) == NONE) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = base_pwrite_all(st->fd, page, PAGE, (off_t)i * PAGE))) {
			give_back(st, i);
			goto out;
		}
		st->info[i] = (struct page_info){hash, 0, st->buckets[hash % st->nbuckets]};
		st->buckets[hash % st->nbuckets] = i;
		st->stats.pages++;
		if (st->stats.pages > st->nbuckets)
			rehash(st);
	}
	st->info[i].refs++;
	st->stats.refs++;
	*off = (uint64_t)i * PAGE;
out:
	pthread_mutex_unlock(&st->mu);
	return rc;
}

uint32_t share_store_refs(struct share_store *st, uint64_t off)
{
	uint32_t i = (uint32_t)(off / PAGE), n = 0;
	pthread_mutex_lock(&st->mu);
	if (i < st->npages)
		n = st->info[i].refs;
	pthread_mutex_unlock(&st->mu);
	return n;
}

void share_store_release(struct share_store *st, uint64_t off)
{
	uint32_t i = (uint32_t)(off / PAGE);
	pthread_mutex_lock(&st->mu);
	if (i >= st->npages || st->info[i].refs == 0)
		goto out;
	st->stats.refs--;
	if (--st->info[i].refs)
		goto out;
	uint32_t *p = &st->buckets[st->info[i].hash % st->nbuckets];
	while (*p != i)
		p = &st->info[*p].next;
	*p = st->info[i].next;
	st->stats.pages--;
	/* nobody maps it any more: its memory goes back, its slot is reused */
	fallocate(st->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, PAGE);
	give_back(st, i);
out:
	pthread_mutex_unlock(&st->mu);
}

void share_store_stats(struct share_store *st, struct share_store_stats *out)
{
	pthread_mutex_lock(&st->mu);
	*out = st->stats;
	pthread_mutex_unlock(&st->mu);
}

void share_store_count_merge(struct share_store *st, uint64_t pages, uint64_t ns)
{
	pthread_mutex_lock(&st->mu);
	st->stats.merged += pages;
	st->stats.merge_ns += ns;
	pthread_mutex_unlock(&st->mu);
}

int share_refs_add(struct share_refs *r, uint64_t off)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		uint64_t *o = realloc(r->offs, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		r->offs = o;
		r->cap = cap;
	}
	r->offs[r->n++] = off;
	return 0;
}

void share_refs_release(struct share_refs *r)
{
	for (size_t i = 0; r->st && i < r->n; i++)
		share_store_release(r->st, r->offs[i]);
	free(r->offs);
	r->offs = NULL;
	r->n = r->cap = 0;
}

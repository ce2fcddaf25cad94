/* A start from disk's missing pages brought in at once: a fork copies the machine's memfd, which
 * holds only what the fault server and the prefetch installed. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "cold/cold.h"

#define PAGE EMBER_PAGE_SIZE
#define RUN  64 /* pages read and installed at once */

static int given_back(const struct cold *c, uint64_t addr)
{
	uint64_t pg = addr / PAGE;
	return __atomic_load_n(&c->zeroed[pg / 8], __ATOMIC_ACQUIRE) & (1 << (pg % 8));
}

/* the snapshot's pages i..i+n (consecutive in guest memory), all missing: read, checked and
 * installed; one that came meanwhile (a fault, the prefetch) is kept */
static int install(struct cold *c, size_t i, size_t n, uint8_t *buf)
{
	uint64_t addr = c->s->pages[i];
	ssize_t got = pread(c->memfd, buf, n * PAGE, (off_t)addr);
	for (size_t k = 0; k < n; k++)
		cold_check(c, i + k, buf + k * PAGE, got >= (ssize_t)((k + 1) * PAGE));
	if (!cold_install(c, addr, buf, n * PAGE))
		return 0;
	int rc = 0; /* one of them came meanwhile: the rest one by one */
	for (size_t k = 0; k < n && !rc; k++)
		rc = cold_install(c, addr + k * PAGE, buf + k * PAGE, PAGE);
	return rc;
}

int cold_fill(struct cold *c)
{
	const struct snap *s = c->s;
	uint8_t in[RUN];
	uint8_t *buf = malloc(RUN * PAGE);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < s->npages && !rc;) {
		size_t n = 1; /* a run of consecutive pages: one residency query */
		while (i + n < s->npages && n < RUN && s->pages[i + n] == s->pages[i] + n * PAGE)
			n++;
		if ((rc = vm_resident(c->vm, s->pages[i], n * PAGE, in)))
			break;
		for (size_t k = 0, m; k < n && !rc; k += m) {
			for (m = 0;
			     k + m < n && !(in[k + m] & 1) && !given_back(c, s->pages[i + k + m]);
			     m++)
				;
			if (m)
				rc = install(c, i + k, m, buf);
			m += !m;
		}
		i += n;
	}
	free(buf);
	return rc;
}

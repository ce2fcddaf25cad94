/* The virtine's vDSO (src/guest/vdso.S, embedded in the binary): read once, loaded with every
 * program at the top of its mmap area, its address in AT_SYSINFO_EHDR. */
#include <pthread.h>
#include <stdio.h>

#include "image/img.h"

extern const uint8_t _binary_ember_vdso_so_start[];
extern const uint8_t _binary_ember_vdso_so_end[];

static struct img *vdso;
static pthread_once_t vdso_once = PTHREAD_ONCE_INIT;

static void parse(void)
{
	char err[256];
	size_t n = (size_t)(_binary_ember_vdso_so_end - _binary_ember_vdso_so_start);
	if (img_from_bytes(_binary_ember_vdso_so_start, n, &vdso, err, sizeof(err)))
		vdso = NULL; /* a build's own file: make test says so (test_corpus) */
}

const struct img *img_vdso(void)
{
	pthread_once(&vdso_once, parse);
	return vdso;
}

/* The landing of a whole read (src/cold/cold_land.c): none before a read was asked, then made
 * ahead with its pages present, taken trimmed to exactly the read's size (as a fresh memfd would
 * be, sealable), made again after each take; a read larger than it, or much smaller, falls back to
 * a fresh memfd and the next is made its size; off, it is freed and never made. (test_ws.c: the
 * load's whole read takes it.) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cold/cold_land.h"
#include "snap/snap.h"

#define PAGE EMBER_PAGE_SIZE

/* how many of the n pages mapped at p are present in this process's page tables */
static size_t present(const uint8_t *p, size_t n)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t e = 0;
		off_t at = (off_t)(((uintptr_t)p / PAGE + i) * sizeof(e));
		assert_int_equal(pread(fd, &e, sizeof(e), at), sizeof(e));
		k += (e >> 63) & 1;
	}
	close(fd);
	return k;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* a take of len bytes: a memfd of exactly len, zero, sealable, writable; pages present counted */
static size_t take(uint64_t len)
{
	int fd = -1;
	uint8_t *m = cold_land_take(&fd, len);
	assert_non_null(m);
	assert_true(fd >= 0);
	size_t got = present(m, len / PAGE);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, len);
	assert_int_equal(sb.st_blocks * 512 <= (off_t)len, 1); /* the unused tail freed */
	for (uint64_t o = 0; o < len; o += PAGE)
		assert_int_equal(m[o] | m[o + PAGE - 1], 0);
	/* what a fresh one is, to the start that seals and maps it */
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	m[len - 1] = 1;
	munmap(m, len);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
	close(fd);
	return got;
}

static void landing(void **state)
{
	(void)state;
	int fds = open_fds();
	/* nothing asked yet: nothing made, the read gets a fresh memfd, its pages not made */
	cold_land_make();
	assert_int_equal(open_fds(), fds);
	assert_int_equal(take(40 * PAGE), 0);
	/* made for the read asked: its pages present, the tail past 40 pages gone */
	cold_land_make();
	assert_int_equal(open_fds(), fds + 1);
	assert_int_equal(take(40 * PAGE), 40);
	assert_int_equal(open_fds(), fds);
	/* taken: the next read falls back until the landing is made again */
	assert_int_equal(take(40 * PAGE), 0);
	cold_land_make();
	cold_land_make(); /* one is ready: not made twice */
	assert_int_equal(open_fds(), fds + 1);
	assert_int_equal(take(30 * PAGE), 30);
	/* a read larger than the landing: a fresh memfd; then one made large enough */
	cold_land_make();
	assert_int_equal(take(300 * PAGE), 0);
	assert_int_equal(open_fds(), fds + 1); /* the small one still there, made again next */
	cold_land_make();
	assert_int_equal(open_fds(), fds + 1);
	assert_int_equal(take(300 * PAGE), 300);
	/* a read much smaller than the landing: not taken (trimming would cost more than it
	 * saves), made again its size */
	cold_land_make();
	assert_int_equal(take(30 * PAGE), 0);
	cold_land_make();
	assert_int_equal(open_fds(), fds + 1);
	assert_int_equal(take(30 * PAGE), 30);
	/* past the largest whole read: never made */
	assert_int_equal(take(2048 * PAGE), 0);
	cold_land_make();
	assert_int_equal(open_fds(), fds);
	/* off: the one ready freed, none made again */
	take(40 * PAGE);
	cold_land_make();
	assert_int_equal(open_fds(), fds + 1);
	cold_land_keep(0);
	assert_int_equal(open_fds(), fds);
	cold_land_make();
	assert_int_equal(open_fds(), fds);
	assert_int_equal(take(40 * PAGE), 0);
	cold_land_keep(1);
	cold_land_make();
	assert_int_equal(take(40 * PAGE), 40);
}

/* this process's mappings of a landing's (or a snapshot's) memfd */
static int mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:ember-snapshot") != NULL;
	fclose(f);
	return n;
}

/* a landing a few pages larger than the read is taken, trimmed to it; a read that does not end
 * on a page too (its last page kept whole): nothing of the landing stays mapped once the read's
 * own mapping is gone (the unaligned tail was refused, and only len bytes of the landing were
 * let go: its last page stayed mapped, its memory with it) */
static void a_trimmed_landing_leaves_nothing_mapped(void **state)
{
	(void)state;
	cold_land_keep(1);
	int fd = -1;
	uint8_t *m = cold_land_take(&fd, 40 * PAGE);
	munmap(m, 40 * PAGE);
	close(fd);
	cold_land_make(); /* 40 pages ready */
	assert_int_equal(take(35 * PAGE), 35);
	m = cold_land_take(&fd, 3 * PAGE);
	munmap(m, 3 * PAGE);
	close(fd);
	cold_land_make(); /* 3 pages ready, mapped */
	int before = mapped();
	m = cold_land_take(&fd, PAGE + 1);
	assert_non_null(m);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, PAGE + 1);
	assert_int_equal(present(m, 2), 2); /* the landing's: its pages made ahead */
	munmap(m, PAGE + 1);
	close(fd);
	assert_int_equal(mapped(), before - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(landing), cmocka_unit_test(a_trimmed_landing_leaves_nothing_mapped)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* `ember bench cold`'s helpers: the disk's bandwidth, working-set files, clean-up, its output. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_cold.h"
#include "cli/cli.h"
#include "snap/snap_file.h"
#include "cold/cold_ws.h"

#define DISK_FILE  (256ULL << 20)
#define DISK_CHUNK (4ULL << 20)

double cold_disk_mb_s(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/disk-bandwidth", dir);
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, DISK_CHUNK))
		return -1;
	for (size_t i = 0; i < DISK_CHUNK; i++)
		((uint8_t *)buf)[i] = (uint8_t)(i * 131 + 7); /* not zeros: nothing to compress */
	double mb_s = -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ok = fd >= 0;
	for (uint64_t off = 0; ok && off < DISK_FILE; off += DISK_CHUNK)
		ok = !base_write_all(fd, buf, DISK_CHUNK);
	ok = ok && fsync(fd) == 0 && !posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (fd >= 0)
		close(fd);
	fd = ok ? open(path, O_RDONLY | O_DIRECT | O_CLOEXEC) : -1;
	if (fd >= 0) {
		uint64_t got = 0;
		double t = bench_now_us();
		for (;;) {
			ssize_t r = read(fd, buf, DISK_CHUNK);
			if (r <= 0)
				break;
			got += (uint64_t)r;
		}
		double us = bench_now_us() - t;
		if (got == DISK_FILE && us > 0)
			mb_s = (double)got / us; /* bytes per microsecond = MB/s */
		close(fd);
	}
	unlink(path);
	free(buf);
	return mb_s;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* the working set of the one snapshot under state, read by cold_ws_pages, sorted */
int bench_ws_pages(const char *state, uint64_t **pages, size_t *n)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/" SNAP_DIR, state);
	DIR *d = opendir(path);
	struct dirent *e;
	int rc = -1;
	while (d && rc && (e = readdir(d)))
		if (e->d_name[0] != '.' && !strchr(e->d_name, '.')) {
			snprintf(path, sizeof(path), "%s/" SNAP_DIR "/%.100s", state, e->d_name);
			rc = cold_ws_pages(path, pages, n);
		}
	if (d)
		closedir(d);
	if (!rc)
		qsort(*pages, *n, sizeof(uint64_t), cmp_u64);
	return rc;
}

double cold_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	size_t i = 0, j = 0, common = 0;
	while (i < na && j < nb) {
		if (a[i] == b[j])
			common++, i++, j++;
		else if (a[i] < b[j])
			i++;
		else
			j++;
	}
	size_t all = na + nb - common;
	return all ? (double)common / (double)all : 1.0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

void cold_rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int drop_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) { /* written back first: dirty pages are not dropped */
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return 0;
}

void cold_drop_cache(const char *state)
{
	nftw(state, drop_one, 16, FTW_PHYS);
}

json_t *cold_json(const char *const *names, double disk, const struct cold_row *rows, size_t n,
		  double mean)
{
	json_t *res = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct cold_row *r = &rows[i];
		json_array_append_new(
		    res,
		    json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name", names[i],
			      "lazy_p50_ms", bench_json_num(r->lazy_p50_ms), "reap_p50_ms",
			      bench_json_num(r->reap_p50_ms), "speedup", bench_json_num(r->speedup),
			      "faults_lazy", bench_json_num(r->faults_lazy), "faults_reap",
			      bench_json_num(r->faults_reap), "ws_pages",
			      bench_json_num(r->ws_pages), "record_overhead",
			      bench_json_num(r->record_overhead), "prefetch_mb_s",
			      bench_json_num(r->prefetch_mb_s), "warm_p50_ms",
			      bench_json_num(r->warm_p50_ms), "ws_common_fraction",
			      bench_json_num(r->ws_common)));
		cold_json_parts(json_array_get(res, i), r, disk);
		cold_json_load(json_array_get(res, i), r);
	}
	return json_pack("{s:o,s:o,s:o}", "disk_mb_s", bench_json_num(disk), "results", res,
			 "mean_speedup", bench_json_num(mean));
}

void cold_print_table(const char *const *names, const char *backend, int iters, double disk,
		      const struct cold_row *rows, size_t n, double mean)
{
	printf("backend %s, %d cold starts per mode (page cache dropped), %d warm; disk %.0f MB/s "
	       "(O_DIRECT, 4 MiB reads)\n"
	       "lazy/reap_ms: load to ember_invoke's return; resp: load to the response (without "
	       "the reset and snapshot read after the run)\n",
	       backend, iters, iters, disk);
	printf("%-12s %8s %8s %7s %9s %9s %7s %7s %8s %8s %6s %7s %8s %7s\n", "name", "lazy_ms",
	       "reap_ms", "speedup", "resp_lazy", "resp_reap", "f_lazy", "f_reap", "f_elim",
	       "ws_pages", "rec_x", "pf_MB/s", "warm_ms", "ws_jacc");
	for (size_t i = 0; i < n; i++) {
		const struct cold_row *r = &rows[i];
		double elim = r->faults_lazy > 0 ? 1 - r->faults_reap / r->faults_lazy : NAN;
		printf("%-12s %8.2f %8.2f %7.2f %9.2f %9.2f %7.1f %7.1f %7.1f%% %8.0f %6.2f %7.0f "
		       "%8.3f %7.2f\n",
		       names[i], r->lazy_p50_ms, r->reap_p50_ms, r->speedup, r->lazy_resp_ms,
		       r->reap_resp_ms, r->faults_lazy, r->faults_reap, elim * 100, r->ws_pages,
		       r->record_overhead, r->prefetch_mb_s, r->warm_p50_ms, r->ws_common);
	}
	printf("mean speedup (lazy p50 / REAP p50): %.2f\n", mean);
}

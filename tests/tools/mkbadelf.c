/* mkbadelf GOOD_ELF OUTDIR: writes one malformed variant of a valid static ELF per case. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "badelf.h"

static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		errno = EINVAL;
		return NULL;
	}
	uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		free(buf);
		fclose(f);
		errno = buf ? EIO : ENOMEM;
		return NULL;
	}
	fclose(f);
	*len = (size_t)st.st_size;
	return buf;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t put = len ? fwrite(buf, 1, len, f) : 0;
	int rc = fclose(f);
	return put == len && rc == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mkbadelf GOOD_ELF OUTDIR\n");
		return 2;
	}
	size_t len;
	uint8_t *good = read_file(argv[1], &len);
	if (!good) {
		fprintf(stderr, "mkbadelf: %s: %s\n", argv[1], strerror(errno ? errno : EIO));
		return 1;
	}
	if (mkdir(argv[2], 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mkbadelf: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}

	int written = 0, skipped = 0;
	for (size_t i = 0; i < badelf_count(); i++) {
		const char *name = badelf_case(i)->name;
		uint8_t *out;
		size_t outlen;
		int rc = badelf_make(i, good, len, &out, &outlen);
		if (rc < 0) {
			fprintf(stderr,
				"mkbadelf: %s: not a usable 64-bit ELF (or out of memory)\n",
				argv[1]);
			return 1;
		}
		if (rc > 0) {
			fprintf(stderr, "mkbadelf: skipping %s: the input lacks what it needs\n",
				name);
			skipped++;
			continue;
		}
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[2], name);
		if (write_file(path, out, outlen) < 0) {
			fprintf(stderr, "mkbadelf: %s: %s\n", path, strerror(errno));
			free(out);
			return 1;
		}
		free(out);
		written++;
	}
	free(good);
	printf("mkbadelf: wrote %d files to %s (%d skipped)\n", written, argv[2], skipped);
	return 0;
}

/* OpenFaaS's secrets as a function sees them (tests/integration/test_secrets.sh): the secret
 * $INIT_SECRET is read at init, before the request (so it is in the snapshot); the request
 * names another, read then; then whether it can be written, and the folder's listing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_PATH "/var/openfaas/secrets/"

static const char *err_name(int e)
{
	static const struct {
		int e;
		const char *name;
	} names[] = {{ENOENT, "ENOENT"}, {EACCES, "EACCES"},   {EROFS, "EROFS"},
		     {EPERM, "EPERM"},	 {ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"}};
	static char buf[32];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

/* the secret's bytes into out, or the error's name */
static void read_secret(const char *name, char *out, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), DIR_PATH "%s", name);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, out, len - 1);
	snprintf(n < 0 ? out : out + n, n < 0 ? len : len - (size_t)n, "%s",
		 n < 0 ? err_name(errno) : "");
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	static char init[4096], req[4096], name[256];
	const char *first = getenv("INIT_SECRET");
	if (first)
		read_secret(first, init, sizeof(init));
	ssize_t n = read(0, name, sizeof(name) - 1); /* the snapshot is taken here */
	if (n < 0)
		return 1;
	name[n] = 0;
	name[strcspn(name, "\n")] = 0;
	read_secret(name, req, sizeof(req));
	printf("init %s\n%s %s\n", first ? init : "-", name, req);
	char path[512];
	snprintf(path, sizeof(path), DIR_PATH "%s", name);
	int fd = open(path, O_WRONLY);
	printf("write %s\n", fd < 0 ? err_name(errno) : "allowed");
	/* all of it, and its sum: a secret of a page or more is served whole too */
	unsigned long bytes = 0, sum = 0;
	static unsigned char chunk[1000];
	ssize_t got;
	if ((fd = open(path, O_RDONLY)) >= 0) {
		while ((got = read(fd, chunk, sizeof(chunk))) > 0)
			for (ssize_t i = 0; i < got; i++)
				bytes++, sum += chunk[i] * (bytes % 251 + 1);
		close(fd);
		printf("bytes %lu sum %lu\n", bytes, sum);
	}
	struct stat st;
	if (!stat(path, &st))
		printf("mode %o\n", (unsigned)(st.st_mode & 07777));
	DIR *d = opendir(DIR_PATH);
	const char *why = d ? "" : err_name(errno);
	struct dirent *de;
	printf("list%s%s", d ? "" : " ", why);
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			printf(" %s", de->d_name);
	printf("\n");
	return 0;
}

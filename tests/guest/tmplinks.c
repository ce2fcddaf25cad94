/* tmplinks: symbolic links in the scratch /tmp, by mode (argv[1]):
 *   ops    made, read, listed, followed or not by each call, renamed and removed under
 *          /tmp/ember-tmplinks, hard links too, each result printed (compared with a native run);
 * with the hostile ones: loops, a chain of 41, a 4,000-byte target, links out of /tmp (to /dev,
 *          /proc, the files, the root and back), a link to a folder then ".."
 *   perm   a link made in a folder the guest may not write: EACCES (natively root passes); a
 *          hard link from /dev: EXDEV (natively the host's /tmp may share a file system)
 *   leave  prints where /tmp/ll leads (or "absent"), then makes it (the next invocation must not
 *          see it)
 *   exec   runs argv[2] (a program of the function's files) through a link in /tmp to it, with
 *          the mode "ran", which prints its argv[0]
 *   init   makes /tmp/linit -> /tmp/tinit and a hard link /tmp/hinit before the request (the
 *          snapshot point), then at each invocation prints what it reads through linit and the
 *          file's names, replaces linit, removes hinit: each sees init's */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define D "/tmp/ember-tmplinks"

static const struct {
	int e;
	const char *name;
} names[] = {{EEXIST, "EEXIST"}, {ENOENT, "ENOENT"},	     {ENOTDIR, "ENOTDIR"},
	     {EISDIR, "EISDIR"}, {EBADF, "EBADF"},	     {EINVAL, "EINVAL"},
	     {EPERM, "EPERM"},	 {EACCES, "EACCES"},	     {EROFS, "EROFS"},
	     {ELOOP, "ELOOP"},	 {EOPNOTSUPP, "EOPNOTSUPP"}, {ENAMETOOLONG, "ENAMETOOLONG"},
	     {EXDEV, "EXDEV"},	 {ENOTEMPTY, "ENOTEMPTY"},   {EBUSY, "EBUSY"},
	     {ENOSYS, "ENOSYS"}};

/* statx's answer as the kernel lays it out (musl has no statx of its own) */
struct sx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, pad;
	uint64_t ino, size, rest[27];
};

static long sx(int dirfd, const char *path, int flags, struct sx *x)
{
	return syscall(SYS_statx, dirfd, path, flags, 0x7ffU /* STATX_BASIC_STATS */, x);
}

static void res(const char *what, long rc)
{
	const char *n = "another errno";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == errno)
			n = names[i].name;
	if (rc < 0)
		printf("%s: %s\n", what, n);
	else
		printf("%s: %ld\n", what, rc);
}

/* readlink's answer, and the bytes when it gave some */
static void rl(const char *what, int dirfd, const char *path, size_t len)
{
	char buf[8192];
	ssize_t n = readlinkat(dirfd, path, buf, len);
	res(what, n);
	if (n > 0 && n <= 64)
		printf("  \"%.*s\"\n", (int)n, buf);
}

/* the type, the permission bits and the size of a path, by stat or lstat */
static void st(const char *what, const char *path, int follow)
{
	struct stat s;
	int rc = follow ? stat(path, &s) : lstat(path, &s);
	res(what, rc);
	if (rc)
		return;
	const char *type = S_ISLNK(s.st_mode)	? "link"
			   : S_ISDIR(s.st_mode) ? "dir"
			   : S_ISREG(s.st_mode) ? "file"
			   : S_ISCHR(s.st_mode) ? "chr"
						: "other";
	printf("  %s %o", type, (unsigned)(s.st_mode & 07777));
	if (!S_ISDIR(s.st_mode))
		printf(" size %lld", (long long)s.st_size);
	printf("\n");
}

static int put(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* D's entries with their types, sorted (the order is the file system's) */
static void list(void)
{
	DIR *d = opendir(D);
	char *lines[128];
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) && n < 128)
		if (e->d_name[0] != '.' && asprintf(&lines[n], "%s:%u", e->d_name, e->d_type) > 0)
			n++;
	if (d)
		closedir(d);
	qsort(lines, (size_t)n, sizeof(lines[0]), cmp_names);
	printf("listed:");
	for (int i = 0; i < n; i++)
		printf(" %s", lines[i]), free(lines[i]);
	printf("\n");
}

static void make_read_list(void)
{
	char buf[64];
	res("mkdir", mkdir(D, 0755));
	res("mkdir dir", mkdir(D "/dir", 0755));
	res("write dir/f", put(D "/dir/f", "hello"));
	res("symlink lf", symlink("dir/f", D "/lf"));
	res("symlink lf again", symlink("x", D "/lf"));
	res("symlink over a file", symlink("x", D "/dir/f"));
	res("symlink in a missing folder", symlink("x", D "/none/l"));
	res("symlink to \"\"", symlink("", D "/e"));
	res("symlink named with a '/'", symlink("x", D "/new/"));
	char longname[300];
	memset(longname, 'n', sizeof(longname));
	memcpy(longname, D "/", strlen(D "/"));
	longname[sizeof(longname) - 1] = 0;
	res("symlink of a 280-byte name", symlink("x", longname));
	rl("readlink lf", AT_FDCWD, D "/lf", 64);
	rl("readlink lf into 3 bytes", AT_FDCWD, D "/lf", 3);
	rl("readlink of a file", AT_FDCWD, D "/dir/f", 64);
	rl("readlink of a folder", AT_FDCWD, D "/dir", 64);
	rl("readlink of none", AT_FDCWD, D "/none", 64);
	res("readlink into 0 bytes", readlink(D "/lf", buf, 0));
	int dfd = open(D, O_RDONLY | O_DIRECTORY);
	rl("readlinkat lf from D", dfd, "lf", 64);
	st("lstat lf", D "/lf", 0);
	st("stat lf", D "/lf", 1);
	struct stat s;
	res("fstatat lf nofollow", fstatat(dfd, "lf", &s, AT_SYMLINK_NOFOLLOW));
	printf("  link %d\n", S_ISLNK(s.st_mode));
	struct sx x;
	res("statx lf nofollow", sx(dfd, "lf", AT_SYMLINK_NOFOLLOW, &x));
	printf("  link %d %o size %llu\n", S_ISLNK(x.mode), x.mode & 07777,
	       (unsigned long long)x.size);
	res("statx lf", sx(dfd, "lf", 0, &x));
	printf("  file %d size %llu\n", S_ISREG(x.mode), (unsigned long long)x.size);
	int fd = open(D "/lf", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	res("read through lf", n);
	close(fd);
	res("open lf O_NOFOLLOW", open(D "/lf", O_RDONLY | O_NOFOLLOW));
	res("open lf O_NOFOLLOW|O_CREAT", open(D "/lf", O_RDWR | O_NOFOLLOW | O_CREAT, 0600));
	res("open lf O_CREAT|O_EXCL", open(D "/lf", O_RDWR | O_CREAT | O_EXCL, 0600));
	fd = open(D "/lf", O_PATH | O_NOFOLLOW);
	res("open lf O_PATH|O_NOFOLLOW", fd >= 0 ? 0 : -1);
	res("fstat of it", fstat(fd, &s));
	printf("  link %d size %lld\n", S_ISLNK(s.st_mode), (long long)s.st_size);
	rl("readlinkat of it, \"\"", fd, "", 64);
	/* the link itself is never opened for writing through its descriptor (a host that let it
	 * truncated the link's target to nothing, and the next lookup crashed it) */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	res("open /proc/self/fd of it O_RDWR", open(self, O_RDWR));
	res("open /proc/self/fd of it O_RDONLY", open(self, O_RDONLY));
	res("stat lf after", stat(D "/lf", &s));
	close(fd);
	fd = open(D "/dir/f", O_RDONLY);
	rl("readlinkat of a file's descriptor, \"\"", fd, "", 64);
	close(fd);
	res("open lf O_PATH|O_NOFOLLOW|O_DIRECTORY",
	    open(D "/lf", O_PATH | O_NOFOLLOW | O_DIRECTORY));
	res("access lf R_OK", access(D "/lf", R_OK));
	list();
	close(dfd);
}

static void follow_calls(void)
{
	struct stat s, t;
	struct timespec ts[2] = {{100, 0}, {200, 0}};
	res("chmod lf 0600", chmod(D "/lf", 0600));
	st("  the file", D "/dir/f", 1);
	st("  the link", D "/lf", 0);
	res("fchmodat lf nofollow", fchmodat(AT_FDCWD, D "/lf", 0644, AT_SYMLINK_NOFOLLOW));
	res("fchmodat2 lf nofollow", syscall(452, AT_FDCWD, D "/lf", 0644, AT_SYMLINK_NOFOLLOW));
	res("truncate lf 2", truncate(D "/lf", 2));
	st("  the file", D "/dir/f", 1);
	res("utimensat lf", utimensat(AT_FDCWD, D "/lf", ts, 0));
	stat(D "/dir/f", &s);
	printf("  the file's mtime %lld\n", (long long)s.st_mtime);
	ts[1].tv_sec = 300;
	res("utimensat lf nofollow", utimensat(AT_FDCWD, D "/lf", ts, AT_SYMLINK_NOFOLLOW));
	stat(D "/dir/f", &s);
	lstat(D "/lf", &t);
	printf("  the file's mtime %lld, the link's %lld\n", (long long)s.st_mtime,
	       (long long)t.st_mtime);
	res("mkdir on lf", mkdir(D "/lf", 0755));
	res("mknod on lf", mknod(D "/lf", S_IFREG | 0600, 0));
	res("rmdir lf", rmdir(D "/lf"));
	/* a link to a folder: through it, "..", a trailing '/' */
	res("mkdir dir/sub", mkdir(D "/dir/sub", 0755));
	res("symlink ld -> dir", symlink("dir", D "/ld"));
	st("stat ld/f", D "/ld/f", 1);
	st("lstat ld/", D "/ld/", 0);
	res("symlink ls -> dir/sub", symlink("dir/sub", D "/ls"));
	stat(D "/ls/..", &s);
	stat(D "/dir", &t);
	printf("ls/.. is dir: %d\n", s.st_ino == t.st_ino);
	st("stat ls/../lf (lf is in D, not dir)", D "/ls/../lf", 1);
	st("stat /ember-none/../tmp/ember-tmplinks/dir", "/ember-none/../tmp/ember-tmplinks/dir",
	   1);
	st("stat /etc/../tmp/ember-tmplinks/dir", "/etc/../tmp/ember-tmplinks/dir", 1);
	st("stat dir/f/..", D "/dir/f/..", 1);
	st("stat dir/f/.", D "/dir/f/.", 1);
	stat(D "/dir", &s);
	printf("dir's links (one sub-folder): %d\n", (int)s.st_nlink);
	res("rmdir dir/sub/.", rmdir(D "/dir/sub/."));
	res("rmdir dir/sub/..", rmdir(D "/dir/sub/.."));
	res("unlink dir/sub/.", unlink(D "/dir/sub/."));
	res("rename dir/sub/. dir/s2", rename(D "/dir/sub/.", D "/dir/s2"));
	res("rename dir/sub dir/sub/..", rename(D "/dir/sub", D "/dir/.."));
	res("unlink ld/", unlink(D "/ld/"));
	res("rmdir ld", rmdir(D "/ld"));
	res("rmdir ld/", rmdir(D "/ld/"));
	res("chdir ld", chdir(D "/ld"));
	char cwd[256];
	printf("  getcwd %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "failed");
	st("  stat f from there", "f", 1);
	res("chdir /", chdir("/"));
	/* a dangling link: O_CREAT makes where it leads, O_EXCL does not follow it */
	res("symlink dang -> made", symlink("made", D "/dang"));
	st("stat dang", D "/dang", 1);
	st("lstat dang", D "/dang", 0);
	int fd = open(D "/dang", O_CREAT | O_WRONLY, 0600);
	res("open dang O_CREAT", fd >= 0 ? 0 : -1);
	close(fd);
	st("stat made", D "/made", 1);
	res("symlink dang2 -> made2", symlink("made2", D "/dang2"));
	res("open dang2 O_CREAT|O_EXCL", open(D "/dang2", O_CREAT | O_EXCL | O_WRONLY, 0600));
	res("mkdir on dang2", mkdir(D "/dang2", 0755));
	/* renamed and removed: the link, never where it leads */
	res("rename lf lf2", rename(D "/lf", D "/lf2"));
	rl("readlink lf2", AT_FDCWD, D "/lf2", 64);
	res("rename lf2 over dang", rename(D "/lf2", D "/dang"));
	rl("readlink dang", AT_FDCWD, D "/dang", 64);
	st("stat made (the old dang's target)", D "/made", 1);
	res("unlink dang", unlink(D "/dang"));
	st("stat dir/f", D "/dir/f", 1);
	res("rename dir/f over ls", rename(D "/dir/f", D "/ls"));
	st("lstat ls", D "/ls", 0);
	st("stat dir/sub", D "/dir/sub", 1);
	list();
}

static void hostile(void)
{
	char name[64], to[64];
	res("symlink la -> lb", symlink("lb", D "/la"));
	res("symlink lb -> la", symlink("la", D "/lb"));
	st("stat la", D "/la", 1);
	res("open la", open(D "/la", O_RDONLY));
	res("open la O_CREAT", open(D "/la", O_RDWR | O_CREAT, 0600));
	res("symlink self -> self", symlink("self", D "/self"));
	st("stat self", D "/self", 1);
	st("lstat self", D "/self", 0);
	st("stat self/x", D "/self/x", 1);
	res("mkdir self/x", mkdir(D "/self/x", 0755));
	/* c1 -> c2 -> ... -> c41 -> made: c2 passes 40 links, c1 41 */
	for (int i = 1; i <= 41; i++) {
		snprintf(name, sizeof(name), D "/c%d", i);
		snprintf(to, sizeof(to), i == 41 ? "made" : "c%d", i + 1);
		if (symlink(to, name))
			res("symlink chain", -1);
	}
	st("stat c2 (40 links)", D "/c2", 1);
	st("stat c1 (41 links)", D "/c1", 1);
	st("lstat c1", D "/c1", 0);
	static char big[4097];
	for (int i = 0; i < 2000; i++)
		memcpy(big + 2 * i, "a/", 2);
	res("symlink of a 4,000-byte target", symlink(big, D "/big"));
	rl("readlink big", AT_FDCWD, D "/big", sizeof(big));
	st("lstat big", D "/big", 0);
	st("stat big", D "/big", 1);
	st("stat big/x", D "/big/x", 1);
	memset(big, 'b', 4096);
	res("symlink of a 4,096-byte target", symlink(big, D "/big2"));
	memset(big, 'b', 300);
	big[300] = 0;
	res("symlink of a 300-byte name as target", symlink(big, D "/big3"));
	st("stat big3", D "/big3", 1);
	/* out of /tmp: the made files, the function's files, the root and back */
	res("symlink null -> /dev/null", symlink("/dev/null", D "/null"));
	int fd = open(D "/null", O_WRONLY);
	res("write through null", fd >= 0 ? write(fd, "abc", 3) : -1);
	close(fd);
	st("stat null", D "/null", 1);
	res("symlink cmd -> /proc/self/cmdline", symlink("/proc/self/cmdline", D "/cmd"));
	fd = open(D "/cmd", O_RDONLY);
	char buf[64];
	res("read through cmd, some", fd >= 0 && read(fd, buf, sizeof(buf)) > 0 ? 0 : -1);
	close(fd);
	res("symlink self2 -> /proc/self", symlink("/proc/self", D "/self2"));
	res("readlink self2/exe, some", readlink(D "/self2/exe", buf, sizeof(buf)) > 0 ? 0 : -1);
	res("symlink etc -> /etc", symlink("/etc", D "/etc"));
	st("stat etc", D "/etc", 1);
	st("stat etc/ember-none", D "/etc/ember-none", 1);
	res("symlink root -> /", symlink("/", D "/root"));
	st("stat root/tmp/ember-tmplinks/made", D "/root/tmp/ember-tmplinks/made", 1);
	res("symlink dir/up -> ../../..", symlink("../../..", D "/dir/up"));
	st("stat dir/up/etc", D "/dir/up/etc", 1);
	st("stat dir/up/tmp/ember-tmplinks/dir", D "/dir/up/tmp/ember-tmplinks/dir", 1);
	res("symlink rel -> ../../etc", symlink("../../etc", D "/rel"));
	st("stat rel", D "/rel", 1);
	res("symlink dotdot -> ..", symlink("..", D "/dotdot"));
	st("stat dotdot/ember-tmplinks/made", D "/dotdot/ember-tmplinks/made", 1);
}

/* hard links: names of one file */
static void hard(void)
{
	struct stat a, b;
	char buf[16] = "";
	res("write h1", put(D "/h1", "one"));
	res("link h1 h2", link(D "/h1", D "/h2"));
	stat(D "/h1", &a);
	stat(D "/h2", &b);
	printf("  nlink %d, same file %d\n", (int)a.st_nlink, a.st_ino == b.st_ino);
	res("link h1 h2 again", link(D "/h1", D "/h2"));
	res("link none h3", link(D "/none", D "/h3"));
	res("link dir h3", link(D "/dir", D "/h3"));
	res("link h1 into a missing folder", link(D "/h1", D "/none/h3"));
	res("write h2", put(D "/h2", "two"));
	int fd = open(D "/h1", O_RDONLY);
	res("read h1", read(fd, buf, sizeof(buf) - 1));
	printf("  \"%s\"\n", buf);
	res("rename h1 over h2 (one file)", rename(D "/h1", D "/h2"));
	st("stat h1", D "/h1", 1);
	res("unlink h1", unlink(D "/h1"));
	st("stat h2", D "/h2", 1);
	res("fstat of h1's descriptor", fstat(fd, &a));
	printf("  nlink %d\n", (int)a.st_nlink);
	close(fd);
	res("symlink hl -> h2", symlink("h2", D "/hl"));
	res("link hl hl2", link(D "/hl", D "/hl2"));
	st("lstat hl2", D "/hl2", 0);
	res("linkat hl hl3 follow",
	    linkat(AT_FDCWD, D "/hl", AT_FDCWD, D "/hl3", AT_SYMLINK_FOLLOW));
	st("lstat hl3", D "/hl3", 0);
	res("linkat bad flags", linkat(AT_FDCWD, D "/h2", AT_FDCWD, D "/h4", 0x8000));
	res("unlink h2", unlink(D "/h2"));
	st("stat hl3", D "/hl3", 1);
	list();
}

/* everything under D removed, D too */
static void clean(void)
{
	char path[300];
	DIR *d = opendir(D "/dir");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' || (e->d_name[1] && e->d_name[1] != '.'))
			snprintf(path, sizeof(path), D "/dir/%s", e->d_name),
			    rmdir(path) && unlink(path);
	if (d)
		closedir(d);
	rmdir(D "/dir");
	for (int round = 0; round < 2 && (d = opendir(D)); round++) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				snprintf(path, sizeof(path), D "/%s", e->d_name), unlink(path);
		closedir(d);
	}
	res("rmdir D", rmdir(D));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ops";
	char req[256] = "", buf[64];
	if (!strcmp(mode, "init") &&
	    (put("/tmp/tinit", "from init") || symlink("/tmp/tinit", "/tmp/linit") ||
	     link("/tmp/tinit", "/tmp/hinit")))
		return 2;
	ssize_t n = read(0, req, sizeof(req) - 1); /* the snapshot point */
	req[n > 0 ? n : 0] = 0;
	if (!strcmp(mode, "ops")) {
		make_read_list();
		follow_calls();
		hostile();
		hard();
		clean();
	} else if (!strcmp(mode, "perm")) {
		res("mkdir d", mkdir("/tmp/d", 0500));
		res("symlink in d", symlink("x", "/tmp/d/l"));
		res("chmod d 0700", chmod("/tmp/d", 0700));
		res("symlink in d", symlink("x", "/tmp/d/l"));
		res("symlink in d again", symlink("x", "/tmp/d/l"));
		res("link /dev/null into /tmp", link("/dev/null", "/tmp/n"));
	} else if (!strcmp(mode, "ran")) {
		printf("ran as %s\n", argv[0]);
	} else if (!strcmp(mode, "exec") && argc > 2) {
		res("symlink /tmp/prog", symlink(argv[2], "/tmp/prog"));
		res("symlink /tmp/hop -> prog", symlink("prog", "/tmp/hop"));
		fflush(stdout);
		char *args[] = {"/tmp/hop", "ran", NULL};
		res("execv /tmp/hop", execv("/tmp/hop", args));
	} else if (!strcmp(mode, "leave")) {
		n = readlink("/tmp/ll", buf, sizeof(buf));
		printf("%.*s\n", n > 0 ? (int)n : 6, n > 0 ? buf : "absent");
		if (symlink("secret", "/tmp/ll"))
			return 1;
	} else if (!strcmp(mode, "init")) {
		int fd = open("/tmp/linit", O_RDONLY);
		n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
		struct stat s;
		printf("through linit: %.*s, names %d\n", n > 0 ? (int)n : 0, buf,
		       stat("/tmp/hinit", &s) ? 0 : (int)s.st_nlink);
		if (unlink("/tmp/linit") || symlink("/tmp/other", "/tmp/linit") ||
		    unlink("/tmp/hinit"))
			return 1;
	}
	return 0;
}

/* execve and execveat of programs and #! scripts written to /tmp, checked against Linux's answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define D "/tmp/ember-tmpexec"

static const struct {
	int e;
	const char *name;
} names[] = {
    {ENOENT, "ENOENT"}, {EACCES, "EACCES"},   {ENOEXEC, "ENOEXEC"}, {ELOOP, "ELOOP"},
    {EINVAL, "EINVAL"}, {ENOTDIR, "ENOTDIR"}, {EBADF, "EBADF"},	    {EIO, "EIO"},
    {ENOSYS, "ENOSYS"}, {ELIBBAD, "ELIBBAD"}, {ETXTBSY, "ETXTBSY"}, {E2BIG, "E2BIG"},
};

static const char *err_name(int e)
{
	static char buf[16];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static char *files_prog; /* a program of the function's files (natively: this one) */

/* the mode every exec'd program runs: its arguments, then exit 7 */
static int child(int argc, char **argv)
{
	const char *fp = getenv("FILESPROG"), *fd = getenv("EXECFD");
	char dev[32];
	snprintf(dev, sizeof(dev), "/dev/fd/%s", fd ? fd : "");
	size_t dl = strlen(dev);
	char comm[17] = "";
	prctl(PR_GET_NAME, comm);
	const char *fn = (const char *)getauxval(AT_EXECFN);
	printf("  ran: argc %d", argc);
	for (int i = 0; i <= argc; i++) {
		const char *a = i < argc ? argv[i] : fn ? fn : "";
		if (i == argc)
			printf("; name %s, execfn", comm);
		/* the descriptor's number is the process's own (Ember keeps a few for itself) */
		if (!strncmp(a, dev, dl) && (a[dl] == '/' || !a[dl]))
			printf(" [/dev/fd/<fd>%s]", a + dl);
		else
			printf(" [%s]", fp && !strcmp(a, fp) ? "<files>" : a);
	}
	printf("\n");
	return 7;
}

/* fd's whole file into a new buffer (*len its size) */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	for (ssize_t r; b && (r = read(fd, b + n, cap - n)) > 0;) {
		n += (size_t)r;
		if (n == cap)
			b = realloc(b, cap *= 2);
	}
	close(fd);
	*len = n;
	return b;
}

static void put(const char *path, const void *data, size_t len, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		printf("write %s: %s\n", path, err_name(errno));
		exit(1);
	}
	close(fd);
	chmod(path, mode);
}

/* the running program copied to D/prog: 0, or -1 when it cannot be read */
static int copy_self(void)
{
	size_t len;
	char *self = slurp("/proc/self/exe", &len);
	if (!self)
		return -1;
	mkdir(D, 0755);
	put(D "/prog", self, len, 0755);
	free(self);
	return 0;
}

static void script(const char *path, const char *line)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%sexit 0\n", line);
	put(path, buf, (size_t)n, 0755);
}

enum how { EXECVE, EXECVEAT };

/* a child that execs (execveat(dirfd, path, ..., flags) or execve(path)): what the program
 * printed, or why the exec failed (malformed: a refusal or a crash are one answer, as what an
 * ELF's checks refuse and what they load to crash differ between Linux versions and Ember) */
static void run(const char *what, enum how how, int dirfd, const char *path, int flags,
		int malformed)
{
	char *argv[] = {"prog", "child", "one", "two", NULL};
	char env[4200], fdenv[32];
	snprintf(env, sizeof(env), "FILESPROG=%s", files_prog);
	snprintf(fdenv, sizeof(fdenv), "EXECFD=%d", dirfd);
	char *envp[] = {env, fdenv, NULL};
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return;
	printf("%s:", what);
	fflush(stdout);
	pid_t pid = fork();
	if (!pid) {
		if (how == EXECVE)
			execve(path, argv, envp);
		else
			syscall(SYS_execveat, dirfd, path, argv, envp, flags);
		int e = errno;
		if (write(p[1], &e, sizeof(e)) < 0)
			_exit(2);
		_exit(1);
	}
	close(p[1]);
	int e = 0, st = 0;
	ssize_t got = read(p[0], &e, sizeof(e));
	close(p[0]);
	waitpid(pid, &st, 0);
	if (malformed && (got == sizeof(e) || !WIFEXITED(st)))
		printf(" refused or killed\n");
	else if (got == sizeof(e))
		printf(" %s\n", err_name(e));
	else if (WIFEXITED(st))
		printf("  exit %d\n", WEXITSTATUS(st));
	else
		printf("  signal %d\n", WTERMSIG(st));
	fflush(stdout);
}

/* the copy's PT_INTERP made to name path (no longer than the old one) */
static int reinterp(char *elf, size_t len, const char *path)
{
	if (len < 64)
		return -1;
	uint64_t phoff;
	uint16_t phnum, phent;
	memcpy(&phoff, elf + 32, 8);
	memcpy(&phent, elf + 54, 2);
	memcpy(&phnum, elf + 56, 2);
	for (uint16_t i = 0; i < phnum; i++) {
		const char *ph = elf + phoff + (size_t)i * phent;
		uint32_t type;
		uint64_t off, sz;
		memcpy(&type, ph, 4);
		memcpy(&off, ph + 8, 8);
		memcpy(&sz, ph + 32, 8);
		if (type != 3 /* PT_INTERP */)
			continue;
		if (strlen(path) + 1 > sz)
			return -1;
		memset(elf + off, 0, sz);
		memcpy(elf + off, path, strlen(path));
		return 0;
	}
	return -1;
}

static int ops(void)
{
	size_t len;
	char *self = slurp("/proc/self/exe", &len);
	if (!self)
		return printf("read /proc/self/exe: %s\n", err_name(errno)), 1;
	mkdir(D, 0755);
	put(D "/prog", self, len, 0755);
	run("execve of an ELF in /tmp", EXECVE, 0, D "/prog", 0, 0);
	put(D "/noexec", self, len, 0644);
	run("no execute bit", EXECVE, 0, D "/noexec", 0, 0);
	put(D "/text", "hello\n", 6, 0755);
	run("neither ELF nor script", EXECVE, 0, D "/text", 0, 0);
	put(D "/empty", "", 0, 0755);
	run("empty file", EXECVE, 0, D "/empty", 0, 0);
	run("missing", EXECVE, 0, D "/missing", 0, 0);
	run("a folder", EXECVE, 0, D, 0, 0);
	run("trailing slash", EXECVE, 0, D "/prog/", 0, 0);
	/* hostile images */
	put(D "/trunc64", self, 64, 0755);
	run("ELF header only", EXECVE, 0, D "/trunc64", 0, 1);
	put(D "/trunc4k", self, 4096, 0755);
	run("ELF cut at 4096 bytes", EXECVE, 0, D "/trunc4k", 0, 1);
	put(D "/magic",
	    "\x7f"
	    "ELF",
	    4, 0755);
	run("the magic alone", EXECVE, 0, D "/magic", 0, 0);
	char *bad = malloc(len);
	memcpy(bad, self, len);
	memset(bad + 56, 0xff, 2); /* e_phnum 65535 */
	put(D "/phnum", bad, len, 0755);
	run("ELF with 65535 program headers", EXECVE, 0, D "/phnum", 0, 1);
	memcpy(bad, self, len);
	memset(bad + 32, 0x7f, 8); /* e_phoff far past the end */
	put(D "/phoff", bad, len, 0755);
	run("ELF with its headers past the end", EXECVE, 0, D "/phoff", 0, 1);
	/* symbolic links */
	symlink("prog", D "/link");
	run("through a link", EXECVE, 0, D "/link", 0, 0);
	symlink("loop", D "/loop");
	run("a link to itself", EXECVE, 0, D "/loop", 0, 0);
	/* #! scripts */
	script(D "/s1", "#!" D "/prog\n");
	run("#! without an argument", EXECVE, 0, D "/s1", 0, 0);
	script(D "/s2", "#!  " D "/prog   child  x  y \t \n");
	run("#! with an argument of spaces", EXECVE, 0, D "/s2", 0, 0);
	put(D "/s3", "#!" D "/prog", strlen("#!" D "/prog"), 0755);
	run("#! without a line's end", EXECVE, 0, D "/s3", 0, 0);
	script(D "/s4", "#!\n");
	run("#! and nothing", EXECVE, 0, D "/s4", 0, 0);
	script(D "/s5", "#!" D "/none\n");
	run("#! of a missing interpreter", EXECVE, 0, D "/s5", 0, 0);
	script(D "/s6", "#!" D "/noexec\n");
	run("#! of an interpreter without its execute bit", EXECVE, 0, D "/s6", 0, 0);
	char line[300];
	snprintf(line, sizeof(line), "#!%s child\n", files_prog);
	script(D "/s7", line);
	run("#! of the function's program", EXECVE, 0, D "/s7", 0, 0);
	char longl[400];
	memset(longl, 'a', sizeof(longl));
	memcpy(longl, "#!/", 3);
	longl[sizeof(longl) - 1] = 0;
	script(D "/s8", longl);
	run("#! line past 256 bytes", EXECVE, 0, D "/s8", 0, 0);
	script(D "/s9", "#!" D "/prog\tchild\r\n");
	run("#! with a tab and a carriage return", EXECVE, 0, D "/s9", 0, 0);
	/* #! of #!: a chain of n scripts to the program */
	for (int n = 1; n <= 7; n++) {
		char from[64], to[64], what[64];
		snprintf(to, sizeof(to), "%s", D "/prog");
		for (int i = 1; i <= n; i++) {
			snprintf(from, sizeof(from), D "/nest%d", i);
			snprintf(line, sizeof(line), "#!%s\n", to);
			script(from, line);
			snprintf(to, sizeof(to), "%s", from);
		}
		snprintf(what, sizeof(what), "%d scripts deep", n);
		run(what, EXECVE, 0, to, 0, 0);
	}
	/* execveat */
	int dir = open(D, O_RDONLY | O_DIRECTORY);
	run("execveat relative to a folder", EXECVEAT, dir, "prog", 0, 0);
	run("execveat of a script relative to a folder", EXECVEAT, dir, "s1", 0, 0);
	int cx = open(D, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* a script has no path: ENOENT */
	run("execveat of a script relative to a close-on-exec folder", EXECVEAT, cx, "s1", 0, 0);
	run("execveat relative to a close-on-exec folder", EXECVEAT, cx, "prog", 0, 0);
	close(cx);
	run("execveat absolute, dirfd ignored", EXECVEAT, 999, D "/prog", 0, 0);
	run("execveat AT_FDCWD", EXECVEAT, AT_FDCWD, D "/prog", 0, 0);
	int nf = AT_SYMLINK_NOFOLLOW;
	run("execveat AT_SYMLINK_NOFOLLOW of a link", EXECVEAT, dir, "link", nf, 0);
	run("execveat AT_SYMLINK_NOFOLLOW of a file", EXECVEAT, dir, "prog", nf, 0);
	run("execveat unknown flag", EXECVEAT, dir, "prog", 0x4, 0);
	run("execveat empty path without AT_EMPTY_PATH", EXECVEAT, dir, "", 0, 0);
	int f = open(D "/prog", O_RDONLY);
	run("execveat relative to a file", EXECVEAT, f, "prog", 0, 0);
	run("execveat relative to a closed descriptor", EXECVEAT, 999, "prog", 0, 0);
	run("fexecve of a /tmp program", EXECVEAT, f, "", AT_EMPTY_PATH, 0);
	close(f);
	f = open(D "/s1", O_RDONLY);
	run("fexecve of a /tmp script", EXECVEAT, f, "", AT_EMPTY_PATH, 0);
	close(f);
	f = open(D "/s1", O_RDONLY | O_CLOEXEC);
	run("fexecve of a script open close-on-exec", EXECVEAT, f, "", AT_EMPTY_PATH, 0);
	close(f);
	f = open(D "/prog", O_RDONLY | O_CLOEXEC);
	run("fexecve of a program open close-on-exec", EXECVEAT, f, "", AT_EMPTY_PATH, 0);
	close(f);
	f = open(D "/noexec", O_RDONLY);
	run("fexecve without the execute bit", EXECVEAT, f, "", AT_EMPTY_PATH, 0);
	close(f);
	f = open(files_prog, O_RDONLY);
	run("fexecve of the function's program", EXECVEAT, f, "", AT_EMPTY_PATH, 0);
	close(f);
	int pp[2];
	if (!pipe(pp)) {
		run("fexecve of a pipe", EXECVEAT, pp[0], "", AT_EMPTY_PATH, 0);
		close(pp[0]);
		close(pp[1]);
	}
	close(dir);
	const char *names_[] = {"prog",	 "noexec", "text", "empty", "trunc64", "trunc4k", "magic",
				"phnum", "phoff",  "link", "loop",  "s1",      "s2",	  "s3",
				"s4",	 "s5",	   "s6",   "s7",    "s8",      "s9"};
	char p[64];
	for (size_t i = 0; i < sizeof(names_) / sizeof(names_[0]); i++)
		snprintf(p, sizeof(p), D "/%s", names_[i]), unlink(p);
	for (int n = 1; n <= 7; n++)
		snprintf(p, sizeof(p), D "/nest%d", n), unlink(p);
	printf("rmdir: %d\n", rmdir(D));
	free(bad);
	free(self);
	return 0;
}

/* a dynamic program copied to /tmp, its interpreter the files' (the one it names) or a copy in
 * /tmp (its PT_INTERP rewritten) */
static int dyn(const char *prog, const char *ld)
{
	size_t len, ldlen;
	char *elf = slurp(prog, &len), *l = slurp(ld, &ldlen);
	if (!elf || !l)
		return printf("read: %s\n", err_name(errno)), 1;
	mkdir(D, 0755);
	put(D "/dyn", elf, len, 0755);
	run("a dynamic program in /tmp", EXECVE, 0, D "/dyn", 0, 0);
	put(D "/ld.so", l, ldlen, 0755);
	if (reinterp(elf, len, D "/ld.so"))
		return printf("no PT_INTERP to rewrite\n"), 1;
	put(D "/dyn2", elf, len, 0755);
	run("its interpreter in /tmp too", EXECVE, 0, D "/dyn2", 0, 0);
	unlink(D "/ld.so");
	run("its interpreter in /tmp removed", EXECVE, 0, D "/dyn2", 0, 0);
	unlink(D "/dyn");
	unlink(D "/dyn2");
	printf("rmdir: %d\n", rmdir(D));
	free(elf);
	free(l);
	return 0;
}

/* the program is read at the exec: a write to its file afterwards changes nothing it runs */
static int later(void)
{
	int go[2], ready[2];
	if (copy_self() || pipe(go) || pipe(ready))
		return 1;
	pid_t pid = fork();
	if (!pid) {
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", go[0]);
		dup2(ready[1], 9);
		char *argv[] = {"prog", "waiter", fd, NULL};
		execve(D "/prog", argv, (char *[]){NULL});
		_exit(1);
	}
	char c;
	if (read(ready[0], &c, 1) != 1)
		return printf("the program did not start\n"), 1;
	int fd = open(D "/prog", O_WRONLY | O_TRUNC);
	printf("its file rewritten: %s\n", fd < 0 ? err_name(errno) : "0");
	if (fd >= 0 && write(fd, "garbage", 7) == 7)
		close(fd);
	fflush(stdout);
	if (write(go[1], "g", 1) != 1)
		return 1;
	int st;
	waitpid(pid, &st, 0);
	printf("it ended: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	unlink(D "/prog");
	return 0;
}

/* exec'd by later: runs on once its file was rewritten, /proc/self/exe still the program's */
static int waiter(const char *fd)
{
	if (write(9, "r", 1) != 1)
		return 1;
	char c;
	if (read(atoi(fd), &c, 1) != 1)
		return 1;
	size_t len;
	char *exe = slurp("/proc/self/exe", &len);
	printf("still running; /proc/self/exe: %s\n", exe && len > 4 &&
							      !memcmp(exe,
								      "\x7f"
								      "ELF",
								      4)
							  ? "the program"
							  : "changed");
	return 5;
}

/* leave: what the invocation before left in /tmp (nothing), then a program written there, run,
 * and left */
static int leave(void)
{
	struct stat s;
	printf("%s\n", stat(D "/prog", &s) ? "absent" : "present");
	if (copy_self())
		return 1;
	run("execve of an ELF in /tmp", EXECVE, 0, D "/prog", 0, 0);
	return 0;
}

/* chain N: the program execs its /tmp copy N times over, each the one before's successor */
static int chain(int n)
{
	if (n <= 0)
		return printf("chain: done\n"), 0;
	struct stat s;
	if (stat(D "/prog", &s) && copy_self())
		return 1;
	char left[16];
	snprintf(left, sizeof(left), "%d", n - 1);
	char *argv[] = {"prog", "chain", left, NULL};
	execve(n % 2 ? D "/prog" : "/proc/self/exe", argv, (char *[]){NULL});
	return printf("chain %d: %s\n", n, err_name(errno)), 1;
}

int main(int argc, char **argv)
{
	files_prog = getenv("FILESPROG") ? getenv("FILESPROG") : argv[0];
	if (getenv("FILESPROG")) /* run by run(): directly or as a script's interpreter */
		return child(argc, argv);
	if (argc > 2 && !strcmp(argv[1], "waiter"))
		return waiter(argv[2]);
	if (argc > 2) /* ops and leave: a program of the function's files */
		files_prog = argv[2];
	if (argc > 2 && !strcmp(argv[1], "ops"))
		return ops();
	if (argc > 3 && !strcmp(argv[1], "dyn"))
		return dyn(argv[2], argv[3]);
	if (argc > 2 && !strcmp(argv[1], "chain"))
		return chain(atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "later"))
		return later();
	if (argc > 1 && !strcmp(argv[1], "leave"))
		return leave();
	fprintf(stderr, "usage: tmpexec ops FILESPROG|leave|dyn PROG LD|later|chain N\n");
	return 2;
}

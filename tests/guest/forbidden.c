/* forbidden: tries fork, socket, open and execve, printing the errno name each one fails with. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* errno names by value: strerror messages differ between libcs */
static const char *const names[] = {
    [EPERM] = "EPERM",
    [ENOENT] = "ENOENT",
    [EINTR] = "EINTR",
    [EIO] = "EIO",
    [ENOEXEC] = "ENOEXEC",
    [EBADF] = "EBADF",
    [ECHILD] = "ECHILD",
    [EAGAIN] = "EAGAIN",
    [ENOMEM] = "ENOMEM",
    [EACCES] = "EACCES",
    [EFAULT] = "EFAULT",
    [ENOTDIR] = "ENOTDIR",
    [EINVAL] = "EINVAL",
    [ENFILE] = "ENFILE",
    [EMFILE] = "EMFILE",
    [EROFS] = "EROFS",
    [ENOSYS] = "ENOSYS",
    [EOPNOTSUPP] = "EOPNOTSUPP",
    [EPROTONOSUPPORT] = "EPROTONOSUPPORT",
    [EAFNOSUPPORT] = "EAFNOSUPPORT",
};

static void report(const char *what, int failed)
{
	int e = errno;
	const char *name = e > 0 && e < (int)(sizeof(names) / sizeof(names[0])) ? names[e] : NULL;

	if (!failed)
		printf("%s: ok\n", what);
	else if (name)
		printf("%s: %s\n", what, name);
	else
		printf("%s: errno %d\n", what, e);
	fflush(stdout);
}

int main(void)
{
	char *sh_argv[] = {"sh", "-c", "echo execve: ok", NULL}, *sh_envp[] = {NULL};
	pid_t pid = fork();
	int fd;

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	report("fork", pid < 0);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	report("socket", fd < 0);
	if (fd >= 0)
		close(fd);

	fd = open("/etc/passwd", O_RDONLY);
	report("open", fd < 0);
	if (fd >= 0)
		close(fd);

	/* on success the shell prints the "execve: ok" line itself */
	execve("/bin/sh", sh_argv, sh_envp);
	report("execve", 1);
	return 0;
}

/* hello: the smallest request/response guest; greets the request read from stdin. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return 1;
	while ((n = read(0, buf + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap && !(buf = realloc(buf, cap *= 2)))
			return 1;
	}
	if (n < 0)
		return 1;
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	fputs("Hello, ", stdout);
	if (len)
		fwrite(buf, 1, len, stdout);
	else
		fputs("world", stdout);
	fputs("!\n", stdout);
	free(buf);
	return 0;
}

/* hello: answers "Hello, <request>!" (trailing whitespace trimmed), "Hello, world!" if empty. */
#include "fnio.h"

int main(void)
{
	size_t n;
	char *req = (char *)fn_read_all(&n);
	while (n > 0 && (req[n - 1] == ' ' || req[n - 1] == '\t' || req[n - 1] == '\r' ||
			 req[n - 1] == '\n'))
		n--;
	struct fnbuf out = {0};
	fnbuf_put(&out, "Hello, ", 7);
	if (n > 0)
		fnbuf_put(&out, req, n);
	else
		fnbuf_put(&out, "world", 5);
	fnbuf_put(&out, "!\n", 2);
	fnbuf_finish(&out);
}

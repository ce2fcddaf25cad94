/* sha256: answers the lowercase hex SHA-256 digest of the request bytes and a newline. */
#include "fnio.h"
#include "sha256.h"

int main(void)
{
	size_t n;
	unsigned char *req = fn_read_all(&n);
	char hex[66];
	sha256_hex(req, n, hex);
	hex[64] = '\n';
	return base_write_all(1, hex, 65) ? 1 : 0;
}

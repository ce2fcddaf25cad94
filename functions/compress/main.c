/* compress: gzips the request with zlib (level 6, no name, mtime 0) and answers the gzip bytes. */
#include "fnio.h"

#include <stdlib.h>
#include <zlib.h>

int main(void)
{
	size_t n;
	unsigned char *req = fn_read_all(&n);
	z_stream z = {0};
	/* windowBits 15 + 16 selects the gzip wrapper; zlib writes mtime 0 and no file name */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		fn_die("deflateInit2 failed");
	if (n > 0x7fffffff)
		fn_die("request too large");
	uLong cap = deflateBound(&z, (uLong)n);
	unsigned char *out = malloc(cap);
	if (!out)
		fn_die("out of memory");
	z.next_in = req;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		fn_die("deflate did not finish: %s", z.msg ? z.msg : "output buffer too small");
	size_t len = z.total_out;
	deflateEnd(&z);
	return base_write_all(1, out, len) ? 1 : 0;
}

/* image_rotate: rotates a binary PGM (P5) or PPM (P6) image 90 degrees clockwise. */
#include "fnio.h"

#include <stdlib.h>
#include <string.h>

/* Skips whitespace and '#' comments, then parses an unsigned decimal; -1 if there is none. */
static long header_number(const unsigned char *p, size_t n, size_t *pos)
{
	while (*pos < n && (strchr(" \t\r\n\v\f", p[*pos]) || p[*pos] == '#')) {
		if (p[*pos] == '#')
			while (*pos < n && p[*pos] != '\n')
				(*pos)++;
		else
			(*pos)++;
	}
	long v = -1;
	while (*pos < n && p[*pos] >= '0' && p[*pos] <= '9' && v < 1000000)
		v = (v < 0 ? 0 : v * 10) + (p[(*pos)++] - '0');
	return v;
}

int main(void)
{
	size_t n, pos = 2;
	unsigned char *img = fn_read_all(&n);
	if (n < 2 || img[0] != 'P' || (img[1] != '5' && img[1] != '6'))
		fn_die("expected a binary PGM (P5) or PPM (P6) image");
	long w = header_number(img, n, &pos), h = header_number(img, n, &pos);
	long maxval = header_number(img, n, &pos);
	if (w < 1 || h < 1 || w > 65535 || h > 65535 || maxval < 1 || maxval > 65535)
		fn_die("bad image header: width, height or maxval missing or out of range");
	if (pos >= n || !strchr(" \t\r\n\v\f", img[pos]))
		fn_die("bad image header: no whitespace after maxval");
	pos++;
	/* bytes per pixel: channels times bytes per sample */
	size_t px = (img[1] == '6' ? 3 : 1) * (maxval > 255 ? 2 : 1);
	size_t row = (size_t)w * px;
	if ((n - pos) / row < (size_t)h)
		fn_die("truncated image: %ldx%ld needs %zu bytes of pixels, have %zu", w, h,
		       row * (size_t)h, n - pos);
	const unsigned char *src = img + pos;

	struct fnbuf out = {0};
	fnbuf_printf(&out, "P%c\n%ld %ld\n%ld\n", img[1], h, w, maxval);
	size_t start = out.len;
	fnbuf_put(&out, src, row * (size_t)h); /* reserve room, then overwrite */
	unsigned char *dst = (unsigned char *)out.p + start;
	/* output row r, column c takes input row h-1-c, column r */
	for (size_t r = 0; r < (size_t)w; r++)
		for (size_t c = 0; c < (size_t)h; c++)
			memcpy(dst + (r * (size_t)h + c) * px,
			       src + ((size_t)h - 1 - c) * row + r * px, px);
	fnbuf_finish(&out);
}

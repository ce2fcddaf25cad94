/* Small parsers and clocks for the server: sizes, durations, timestamps, call ids, base64. */
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <uuid/uuid.h>

#include "server/srv_spec.h"

/* a number of seconds, or a string: "10", "10s", "500ms", "2m", "1h" */
int srv_parse_duration(const json_t *v, double *out)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {{"", 1}, {"s", 1}, {"ms", 1e-3}, {"m", 60}, {"h", 3600}};
	double d;
	if (json_is_number(v)) {
		d = json_number_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		if (!(s[0] >= '0' && s[0] <= '9') && s[0] != '.')
			return -1;
		d = strtod(s, &end);
		size_t i;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(end, units[i].suffix))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -1;
		d *= units[i].mult;
	} else {
		return -1;
	}
	if (!isfinite(d) || d < 0 || d > 86400 * 365)
		return -1;
	*out = d;
	return 0;
}

double srv_now(void)
{
	return (double)base_now_ns() / 1e9;
}

void srv_rfc3339(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* 16 random bytes from a per-thread buffer that one getrandom fills for 16 ids, rather than a
 * system call per request; 0, or -1 when the kernel gave none */
static int random16(uint8_t *b)
{
	static _Thread_local uint8_t bytes[256];
	static _Thread_local size_t used = sizeof(bytes);
	if (used == sizeof(bytes)) {
		if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
			return -1;
		used = 0;
	}
	memcpy(b, bytes + used, 16);
	memset(bytes + used, 0, 16); /* handed out once */
	used += 16;
	return 0;
}

void srv_call_id(char *buf, size_t len)
{
	uint8_t b[16];
	if (random16(b)) {
		/* not cryptographic, only unique enough to follow a request in logs */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x =
		    (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)buf;
		for (int i = 0; i < 16; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (uint8_t)x;
		}
	}
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	char text[37];
	uuid_unparse_lower(b, text); /* the standard 36-character form */
	if (len >= sizeof(text))
		memcpy(buf, text, sizeof(text));
	else if (len) {
		memcpy(buf, text, len - 1);
		buf[len - 1] = 0;
	}
}

/* v >= 0 with `decimals` (0 to 6) digits after the point, rounded half up, in integers: the text
 * of "%.*f" but for a tie, without formatting a float (the request path formats a few per call) */
void srv_fixed(char *buf, size_t len, double v, int decimals)
{
	static const unsigned long long scale[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
	int d = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;
	unsigned long long x = v > 0 ? (unsigned long long)(v * (double)scale[d] + 0.5) : 0;
	if (d)
		snprintf(buf, len, "%llu.%0*llu", x / scale[d], d, x % scale[d]);
	else
		snprintf(buf, len, "%llu", x);
}

/* a bounded copy: at most len - 1 bytes of src, always terminated */
void srv_copy(char *dst, size_t len, const char *src)
{
	if (!len)
		return;
	size_t n = strnlen(src, len - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

int srv_base64(const char *b64, size_t n, uint8_t **out, size_t *len)
{
	*out = NULL;
	if (!n || n % 4 || n > INT32_MAX)
		return -1;
	if (!(*out = malloc(n / 4 * 3)))
		return -2;
	int got = EVP_DecodeBlock(*out, (const unsigned char *)b64, (int)n);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	/* EVP_DecodeBlock counts the padding's bytes as data */
	*len = (size_t)got - (b64[n - 1] == '=') - (b64[n - 2] == '=');
	return 0;
}

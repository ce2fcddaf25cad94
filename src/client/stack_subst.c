/* Environment substitution in stack files ($VAR, ${VAR:-default}), as faas-cli's --envsubst. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/stack.h"

static int name_char(char c, int first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

static int put(char *out, size_t outlen, size_t *o, const char *s, size_t n)
{
	if (*o + n >= outlen)
		return -1;
	memcpy(out + *o, s, n);
	*o += n;
	return 0;
}

/* ${...} at in (after "${"): the value appended; the end of the expression in *end */
static int braced(const char *in, const char **end, char *out, size_t outlen, size_t *o, char *why,
		  size_t whylen)
{
	size_t n = 0;
	while (name_char(in[n], n == 0))
		n++;
	const char *close = strchr(in + n, '}');
	if (n == 0 || !close)
		return snprintf(why, whylen, "malformed ${...} in '%s'", in - 2), -1;
	char name[256];
	if (n >= sizeof(name))
		return snprintf(why, whylen, "variable name too long in '%s'", in - 2), -1;
	memcpy(name, in, n);
	name[n] = 0;
	const char *v = getenv(name), *op = in + n;
	size_t vlen = v ? strlen(v) : 0;
	int colon = op[0] == ':';
	if (op != close) {
		if (op[colon] != '-')
			return snprintf(why, whylen,
					"'%.*s}': only ${VAR}, ${VAR:-default} and ${VAR-default} "
					"are supported",
					(int)(close - in + 2), in - 2),
			       -1;
		/* the default: when unset, or (with ':') also when empty */
		if (!v || (colon && !vlen)) {
			v = op + colon + 1;
			vlen = (size_t)(close - v);
		}
	}
	*end = close + 1;
	if (put(out, outlen, o, v ? v : "", vlen))
		return snprintf(why, whylen, "value too long after substitution"), -1;
	return 0;
}

int cli_subst(const char *in, char *out, size_t outlen, char *why, size_t whylen)
{
	size_t o = 0;
	while (*in) {
		const char *dollar = strchr(in, '$');
		size_t lit = dollar ? (size_t)(dollar - in) : strlen(in);
		if (put(out, outlen, &o, in, lit))
			goto long_;
		in += lit;
		if (!dollar)
			break;
		if (in[1] == '$') { /* "$$": one '$' */
			if (put(out, outlen, &o, "$", 1))
				goto long_;
			in += 2;
		} else if (in[1] == '{') {
			if (braced(in + 2, &in, out, outlen, &o, why, whylen))
				return -1;
		} else if (name_char(in[1], 1)) {
			size_t n = 1;
			while (name_char(in[n], 0))
				n++;
			char name[256];
			if (n > sizeof(name))
				return snprintf(why, whylen, "variable name too long"), -1;
			memcpy(name, in + 1, n - 1);
			name[n - 1] = 0;
			const char *v = getenv(name);
			if (v && put(out, outlen, &o, v, strlen(v)))
				goto long_;
			in += n;
		} else { /* a '$' that starts nothing stays */
			if (put(out, outlen, &o, "$", 1))
				goto long_;
			in++;
		}
	}
	out[o] = 0;
	return 0;
long_:
	return snprintf(why, whylen, "value too long after substitution"), -1;
}

/* Image references as faas-cli writes them (registry/org/name:tag@digest) mapped to Ember names. */
#include <string.h>

#include "server/srv_core.h"

/* a tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, as Docker's reference grammar has it */
static int tag_ok(const char *t, size_t n)
{
	if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
			    t[i]))
			return 0;
	return 1;
}

static int alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* a registry, host[:port]: the first component when it has a '.' or ':' or is localhost */
static int registry_ok(const char *c, size_t n)
{
	const char *colon = memchr(c, ':', n);
	size_t host = colon ? (size_t)(colon - c) : n;
	if (host == 0 || !alnum(c[0]) || memmem(c, host, "..", 2))
		return 0;
	for (size_t i = 0; i < host; i++)
		if (!alnum(c[i]) && c[i] != '.' && c[i] != '-')
			return 0;
	if (colon && (n == host + 1 || strspn(colon + 1, "0123456789") < n - host - 1))
		return 0;
	return 1;
}

/* any other component: what a name may be ("org", "team"); never "." or ".." */
static int component_ok(const char *c, size_t n)
{
	char buf[SRV_NAME_MAX];
	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, c, n);
	buf[n] = 0;
	return srv_name_ok(buf);
}

int srv_image_name(const char *ref, char *name, size_t len)
{
	size_t n = strcspn(ref, "@"); /* a digest (@sha256:...) says nothing Ember keeps */
	if (ref[n] && !ref[n + 1])
		return -1;
	const char *last = ref, *slash;
	for (int first = 1; (slash = memchr(last, '/', n - (size_t)(last - ref)));
	     first = 0, last = slash + 1) {
		size_t cl = (size_t)(slash - last);
		int reg = first && (memchr(last, '.', cl) || memchr(last, ':', cl) ||
				    (cl == 9 && !strncmp(last, "localhost", 9)));
		if (reg ? !registry_ok(last, cl) : !component_ok(last, cl))
			return -1;
	}
	size_t base = n - (size_t)(last - ref);
	const char *colon = memchr(last, ':', base);
	if (colon) {
		if (!tag_ok(colon + 1, base - (size_t)(colon + 1 - last)))
			return -1;
		base = (size_t)(colon - last);
	}
	if (base == 0 || base >= len || base >= SRV_NAME_MAX)
		return -1;
	memcpy(name, last, base);
	name[base] = 0;
	return srv_name_ok(name) ? 0 : -1;
}

/* Parsing what several layers read alike: sizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* "128M", "128Mi", "128MB", "1G", "512K", "4096" -> bytes */
int base_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		char suffix;
		int shift;
	} units[] = {{'K', 10}, {'k', 10}, {'M', 20}, {'m', 20}, {'G', 30}, {'g', 30}};
	char *end;
	errno = 0;
	if (!s || s[0] < '0' || s[0] > '9')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	int shift = 0;
	if (*end) {
		size_t i;
		for (i = 0; i < BASE_LEN(units); i++)
			if (*end == units[i].suffix)
				break;
		if (i == BASE_LEN(units))
			return -1;
		shift = units[i].shift;
		end++;
		if (!strcmp(end, "i") || !strcmp(end, "B") || !strcmp(end, "iB"))
			end += strlen(end);
		if (*end)
			return -1;
	}
	if (v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

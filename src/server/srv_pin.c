/* A deployment's own copy of its image: a hard link under a name per version, NAME.image.N. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"

/* A new version's image gets a name no other version has, and the deployment's JSON names it:
 * the JSON's rename is the one step that switches versions, so a crash leaves the old version
 * whole (its JSON and its image) or the new one. NAME.image (no number) is the name older
 * servers gave the only pin a deployment had. */

/* the function a pin belongs to: PIN is NAME.image or NAME.image.DIGITS; 0 when it is a pin */
int pin_owner(const char *pin, char *name)
{
	size_t n = strlen(pin);
	const char *dot = strrchr(pin, '.');
	if (dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1))
		n = (size_t)(dot - pin);
	if (n <= 6 || n - 6 >= SRV_NAME_MAX || strncmp(pin + n - 6, ".image", 6))
		return -1;
	memcpy(name, pin, n - 6);
	name[n - 6] = 0;
	return srv_name_ok(name) ? 0 : -1;
}

int pin_path(const struct srv *s, const char *pin, char *buf, size_t len)
{
	char name[SRV_NAME_MAX];
	if (pin_owner(pin, name))
		return -1;
	int n = snprintf(buf, len, "%s/functions/%s", s->state, pin);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pin_link(const struct srv *s, const char *image, char *path, size_t pathlen, char *err,
	     size_t errlen)
{
	char src[SRV_PATH_MAX];
	if (store_path(s, "images", image, "", src, sizeof(src)))
		return snprintf(err, errlen, "bad image name"), EMBER_ERR_CONFIG;
	for (int tries = 0; tries < 16; tries++) {
		/* a fresh name: made by mkstemp, then replaced by the link */
		int fd = -1;
		if (snprintf(path, pathlen, "%s/functions/.tmp-XXXXXX", s->state) < (int)pathlen)
			fd = mkostemp(path, O_CLOEXEC);
		int e = errno;
		if (fd < 0)
			return snprintf(err, errlen, "%s: %s", path, strerror(e)), store_kind(e);
		close(fd);
		unlink(path);
		if (!link(src, path))
			return 0;
		e = errno;
		if (e == ENOENT) /* the deployment names an image nobody uploaded */
			return snprintf(err, errlen,
					"image '%s' has not been uploaded (PUT /system/images/%s)",
					image, image),
			       EMBER_ERR_IMAGE;
		if (e != EEXIST)
			return snprintf(err, errlen, "%s: %s", src, strerror(e)), store_kind(e);
	}
	return snprintf(err, errlen, "cannot pin image '%s'", image), EMBER_ERR;
}

int pin_commit(const struct srv *s, const char *tmp, struct srv_spec *sp, char *err, size_t errlen)
{
	char path[SRV_PATH_MAX];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned long long n = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned)ts.tv_nsec;
	for (int tries = 0; tries < 16; tries++, n++) {
		snprintf(sp->pin, sizeof(sp->pin), "%s.image.%llu", sp->name, n);
		if (pin_path(s, sp->pin, path, sizeof(path)))
			break;
		if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE)) {
			store_sync(s, "functions");
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	int e = errno;
	snprintf(err, errlen, "pinning the image of %s: %s", sp->name, strerror(e));
	sp->pin[0] = 0;
	unlink(tmp);
	return store_kind(e);
}

void pin_remove(const struct srv *s, const char *pin)
{
	char path[SRV_PATH_MAX];
	if (pin[0] && !pin_path(s, pin, path, sizeof(path)) && !unlink(path))
		store_sync(s, "functions");
}

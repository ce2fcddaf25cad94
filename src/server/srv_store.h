/* The state folder: deployments and images on disk, seeds, pins, the restore at start-up. */
#ifndef EMBER_SRV_STORE_H
#define EMBER_SRV_STORE_H

#include <jansson.h>
#include <stddef.h>

#include "server/srv_spec.h"

/* srv_store.c: the state directory. Writes return 0 or a kind of failure of ember.h
 * (EMBER_ERR_IO, EMBER_ERR_NOMEM; EMBER_ERR_IMAGE: pin_link of an image never uploaded). */
int store_init(struct srv *s, char *err, size_t errlen);
int store_path(const struct srv *s, const char *dir, const char *name, const char *ext, char *buf,
	       size_t len);
int store_write(const struct srv *s, const char *dir, const char *name, const char *ext,
		const void *data, size_t len, char *err, size_t errlen);
/* Writes data to a new temporary file in dir, fsynced, with the given mode; path receives it. */
int store_temp(const struct srv *s, const char *dir, const void *data, size_t len, int mode,
	       char *path, size_t pathlen, char *err, size_t errlen);
int store_commit(const struct srv *s, const char *dir, const char *tmp, const char *name,
		 const char *ext, char *err, size_t errlen);
int store_remove(const struct srv *s, const char *dir, const char *name, const char *ext);
int store_sync(const struct srv *s, const char *dir); /* fsync of the folder: its names */
/* a failure of the state folder: the server's, whatever errno says (no space, no file slot, a
 * read-only or failing disk), unless the host is out of memory */
int store_kind(int e);
/* srv_seed.c: what the state lacks of opt.seed_dir's deployments and images, copied (before
 * the restore); 0 (nothing to do, or done), -1 with err */
int store_seed(struct srv *s, char *err, size_t errlen);

/* srv_pin.c: a deployment's own copy of its image, functions/NAME.image.N */
/* Links images/<image> to a new temporary file in functions/ (path): a deployment keeps the
 * version it was deployed with, whatever is uploaded later. */
int pin_link(const struct srv *s, const char *image, char *path, size_t pathlen, char *err,
	     size_t errlen);
/* Moves the temporary link to a name no other version has, in sp->pin (unlinked on failure). */
int pin_commit(const struct srv *s, const char *tmp, struct srv_spec *sp, char *err, size_t errlen);
int pin_path(const struct srv *s, const char *pin, char *buf, size_t len);
void pin_remove(const struct srv *s, const char *pin);
/* the function a pin's file name (NAME.image.N, NAME.image) belongs to, in name (SRV_NAME_MAX):
 * 0, or -1 when it is no pin */
int pin_owner(const char *pin, char *name);

/* srv_restore.c: the start-up restore. store_restore puts every deployment of the state folder
 * back in the table (loaded later); pin_restore sets sp->pin from the stored deployment (doc, as
 * read from its file); pin_sweep, after the restore, removes the pins no deployment names and
 * returns how many */
int store_restore(struct srv *s);
/* functions/NAME.json read again, as another worker of ember serve --workers left it: the
 * table's entry replaced, added, or removed when the file is gone (not loaded: the next call
 * loads it). 0, 1 when neither had it, -1 when it cannot be read (logged) */
int store_reread(struct srv *s, const char *name);
void pin_restore(const struct srv *s, const json_t *doc, struct srv_spec *sp);
int pin_sweep(struct srv *s);

#endif

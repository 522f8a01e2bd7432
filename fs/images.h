/*
 * images.h - /images: the host's image cache (image/cache.h) as a tree.
 *
 *   /images/<i>/status  status.json   one directory per record of the cache
 *
 * The cache is on disk and jobfs-image processes change it, not the
 * daemon: everything here reads it when asked.  All of it is called with
 * the tree's lock held (serve.c), on a reader's thread or, for rmdir, on
 * the loop's; what may take long (reading every record, removing layers)
 * runs with the lock let go.
 */
#ifndef JF_FS_IMAGES_H
#define JF_FS_IMAGES_H

#include <stdint.h>

struct jf_fs;
struct jf_ino;
struct jf_obj_info;
struct json_t;

/* The number of the image called name while the cache has a record of
 * it: 0, or ENOENT. */
int jf_images_find(struct jf_fs *fs, const char *name, int64_t *id);

/* jf_obj_info of /images (always there) and /images/<i> (ENOENT once its
 * record is gone): owned by the daemon's user, with the times of the
 * cache's files. */
int jf_images_info(struct jf_fs *fs, const struct jf_ino *ino, struct jf_obj_info *in);

/* fn(ctx, id, name) for each record whose number is above after, in
 * number order (so a listing read in pages misses none that stay), until
 * fn returns nonzero. */
void jf_images_list(struct jf_fs *fs, int64_t after,
		    int (*fn)(void *ctx, int64_t id, const char *name), void *ctx);

/* The status object of image id (status.c prints it), NULL once gone;
 * the caller's (json_decref). */
struct json_t *jf_images_status(struct jf_fs *fs, int64_t id);

/* Would rmdir remove image id now?  0, EBUSY while a running or starting
 * node uses it, ENOENT.  Permissions are the caller's to check. */
int jf_images_removable(struct jf_fs *fs, int64_t id);

/* rmdir /images/<i>: the record and every blob and layer no other record
 * names.  0, or the errno (EBUSY, nothing removed, also while a pull
 * holds the image or writes into the cache: the loop never waits for
 * one). */
int jf_images_remove(struct jf_fs *fs, int64_t id);

void jf_images_release(struct jf_fs *fs);

#endif

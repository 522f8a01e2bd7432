/*
 * cache_int.h - what cache.c and cache_pull.c share: the cache's struct,
 * its paths, locks and records.  Not for other modules.
 */
#ifndef JF_CACHE_INT_H
#define JF_CACHE_INT_H

#include <stddef.h>

#include "image/cache.h"

#define PATHMAX         4096
#define DIRMAX          3072         /* the cache's own path: room for what goes under it */
#define LAYER_MAX_BYTES (64LL << 30) /* unpacked data of one layer */

struct jf_imgcache {
	char dir[DIRMAX];
	char host[64]; /* in temporary names: "tmp-<host>-<pid>-..." */
};

/* errno into a message "image cache: WHAT PATH: strerror" */
enum jf_err jf_ic_sys(struct jf_error *err, const char *what, const char *path);
enum jf_err jf_ic_mkdirs(const char *path, struct jf_error *err);
void jf_ic_rmtree(const char *path); /* never follows symlinks */
void jf_ic_blob_path(const struct jf_imgcache *c, const char *digest, char *buf, size_t n);
/* flock locks/<name> (LOCK_EX or LOCK_SH); the fd, or -1 with err set */
int jf_ic_lock(const struct jf_imgcache *c, const char *name, int how, struct jf_error *err);
void jf_ic_unlock(int fd);
enum jf_err jf_ic_record_write(const struct jf_imgcache *c, const struct jf_image *img,
			       struct jf_error *err);
enum jf_err jf_ic_record_read(const struct jf_imgcache *c, const char *name, struct jf_image **out,
			      struct jf_error *err);

#endif

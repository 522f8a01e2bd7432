/*
 * sync_int.h - what sync.c (the fetch phase) and sync_commit.c (the commit
 * phase, the cache directory's files) share.  Not an API.
 */
#ifndef JF_OBJSTORE_SYNC_INT_H
#define JF_OBJSTORE_SYNC_INT_H

#include <limits.h>

#include "objstore/keys.h"
#include "objstore/manifest.h"
#include "objstore/sync.h"
#include "objstore/tree.h"
#include "objstore/writer.h"

#define HASH_HEX  65 /* sha256 hex + NUL */
#define NEW_MF    "manifest.new"
#define FETCHLIST "fetch.list"

struct jf_sync {
	const struct jf_sync_opts *o;
	struct jf_sync_result *r;
	char dir[PATH_MAX];
	char prefix[JF_KEY_PREFIX_MAX + 1]; /* normalised */
	int dirfd, datafd, partfd;
	struct jf_tree tree;
	struct jf_s3 *s3;
	bool merge_old; /* the old manifest is of this prefix */
	bool full;      /* a write met a full disk */
	int64_t t0_ms;
};

/* The name of an object's download in partial/ (without its .part):
 * sha256 hex of its key, size, ETag and mtime.  The name says which
 * version of which object the bytes are of, so a leftover of an earlier
 * run is continued only when it is of the very same version (and nothing
 * needs a second file to say so). */
void jf_sync_obj_hash(const char *key, size_t keylen, int64_t size, const char *etag, int64_t mtime,
		      char out[HASH_HEX]);

/* The message for a full disk (ENOSPC or EDQUOT) met while doing what
 * (e.g. "fetching \"k\""); sets s->full.  touched: data/ changed already
 * (the commit phase). */
enum jf_err jf_sync_disk_full(struct jf_sync *s, int e, const char *what, bool touched,
			      struct jf_error *err);

/* Add a warning (the first JF_SYNC_WARN_MAX are kept). */
void jf_sync_warn(struct jf_sync *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Unlink every file in partial/ (only the manifest.new and fetch.list of
 * this run when all is false). */
void jf_sync_clean_partial(struct jf_sync *s, bool all);

/* The commit phase (sync.h): the fetch phase ended well, its writers are
 * closed; data/ becomes what partial/NEW_MF says. */
enum jf_err jf_sync_commit(struct jf_sync *s, struct jf_error *err);

#endif

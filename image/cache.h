/*
 * cache.h - the host's image cache: content-addressed blobs, unpacked
 * layers, and one record per pulled reference.
 *
 * Layout under the cache directory (STATE/images; on Slurm the shared
 * state directory's, so a cluster pulls each image once):
 *
 *   blobs/sha256/<hex>        verified blobs: manifests, configs, layers
 *   layers/sha256/<hex>/      a layer blob unpacked (layer.h's overlay form)
 *   refs/<name>.json          a pulled reference (struct jf_image), written
 *                             by rename: whole or absent
 *   locks/<name>              flock()ed while that reference is pulled
 *
 * What stays true: a file under blobs/ matches its name's digest; a
 * directory under layers/ is a whole unpacking of the blob of its name; a
 * record under refs/ names only blobs and layers that are present.  So a
 * crash at any point leaves at worst *.part files and tmp-* directories,
 * which jf_imgcache_open removes.  Blobs and layers are shared by every
 * record that names them and removed only when no record does
 * (jf_imgcache_remove).  Pulls of one reference are serialized by its
 * lock, across processes and hosts; pulls of others run at once.
 *
 * Pulls run in tools/jobfs-image, never in the daemon: libarchive's disk
 * writer sets the process's umask to 0 for a moment at every entry
 * (layer.c), which a multi-threaded process must not see.
 *
 * Ownership: records returned are the caller's (jf_image_free).
 */
#ifndef JF_CACHE_H
#define JF_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/imgref.h"
#include "image/manifest.h"
#include "image/registry.h"

struct jf_image {
	char reference[JF_IMGREF_MAX]; /* canonical text */
	char name[JF_IMGREF_NAMEMAX];  /* directory name under /images */
	char digest[JF_DIGEST_LEN];    /* what the reference named: an index or a manifest */
	char manifest[JF_DIGEST_LEN];  /* the image manifest (= digest without an index) */
	char config_digest[JF_DIGEST_LEN];
	int64_t size_bytes; /* config + layers as stored (compressed) */
	int64_t pulled_ms;
	int64_t last_used_ms;
	size_t nlayers;
	char (*layers)[JF_DIGEST_LEN]; /* layer blob digests, lowest first */
	struct jf_imgconfig config;
};

struct jf_pull_stats {
	int64_t fetched_bytes; /* downloaded now */
	int64_t blobs_fetched; /* blobs downloaded now */
	int64_t blobs_present; /* blobs the cache had */
	int64_t layers_unpacked;
};

struct jf_imgcache;

/* Open (making it when missing) the cache in dir; removes leftovers of an
 * interrupted pull. */
enum jf_err jf_imgcache_open(const char *dir, struct jf_imgcache **out, struct jf_error *err);
void jf_imgcache_free(struct jf_imgcache *c);
const char *jf_imgcache_dir(const struct jf_imgcache *c);

/* The record of ref, if pulled: JF_ENOENT when not. */
enum jf_err jf_imgcache_lookup(struct jf_imgcache *c, const struct jf_imgref *ref,
			       struct jf_image **out, struct jf_error *err);

/* The record called name (an /images name, jf_imgref_dirname): JF_ENOENT
 * when there is none. */
enum jf_err jf_imgcache_get(struct jf_imgcache *c, const char *name, struct jf_image **out,
			    struct jf_error *err);

/* Pull ref (a registry reference through o, or an oci: layout read in
 * place) into the cache and write its record with pulled = now_ms.  Blobs
 * and layers already present are reused.  Blocks: run it off the loop. */
enum jf_err jf_imgcache_pull(struct jf_imgcache *c, const struct jf_imgref *ref,
			     const struct jf_reg_opts *o, int64_t now_ms, struct jf_pull_stats *st,
			     struct jf_image **out, struct jf_error *err);

/* Every record, sorted by name; *n of them, the array and each the caller's
 * (jf_image_list_free). */
enum jf_err jf_imgcache_list(struct jf_imgcache *c, struct jf_image ***out, size_t *n,
			     struct jf_error *err);
void jf_image_list_free(struct jf_image **v, size_t n);

/* Record a use (a container started from it) at now_ms. */
enum jf_err jf_imgcache_touch(struct jf_imgcache *c, const char *name, int64_t now_ms,
			      struct jf_error *err);

/* Drop the record called name, then every blob and layer no remaining
 * record names.  JF_ENOENT when there is no such record. */
enum jf_err jf_imgcache_remove(struct jf_imgcache *c, const char *name, struct jf_error *err);

/* The same, never waiting for another process: JF_EBUSY, nothing removed,
 * while a pull holds name (or any pull writes blobs and layers: the
 * garbage collection waits for them all).  For the daemon, whose loop must
 * not wait for a pull of minutes. */
enum jf_err jf_imgcache_remove_nowait(struct jf_imgcache *c, const char *name,
				      struct jf_error *err);

/* The directory of a layer (for an overlay's lowerdir), into buf. */
void jf_imgcache_layer_dir(const struct jf_imgcache *c, const char *digest, char *buf, size_t n);

void jf_image_free(struct jf_image *img);

#endif

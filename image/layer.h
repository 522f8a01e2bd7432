/*
 * layer.h - unpack one image layer (a tar, maybe compressed) with libarchive.
 *
 * The layer is untrusted.  jf_layer_unpack writes it into a new directory
 * dest (which must not exist; it is made, and on any failure removed
 * again, so a layer directory is either whole or absent) and never writes
 * outside it: an entry whose path is absolute or has a ".." component, a
 * hard link whose target is absolute, has "..", or is not an earlier entry
 * of the same layer, and an entry whose path passes through a symbolic
 * link are refused, and the whole layer with them (JF_EINVAL, a message
 * naming the entry).  Symbolic links themselves may point anywhere: they
 * are resolved inside the container's root, and unpacking never follows
 * them.  Device nodes are skipped (counted in st->skipped); fifos kept.
 *
 * The result is in overlayfs' form, so that a container's root is an
 * overlay of the image's layer directories, lowest last, shared by every
 * container and image that has the layer: a whiteout ".wh.NAME" becomes
 * a 0/0 character device NAME, an opaque marker ".wh..wh..opq" becomes
 * the xattr trusted.overlay.opaque="y" on its directory.  Owners, modes,
 * mtimes and xattrs of the entries are kept (as root).
 *
 * Limits: st->bytes (file data) may not pass max_bytes (0 = none) and the
 * entries may not pass JF_LAYER_MAX_ENTRIES; a full disk fails with JF_EIO
 * and "no space left".  All reported as errors naming the layer.
 */
#ifndef JF_LAYER_H
#define JF_LAYER_H

#include <stdint.h>

#include "core/err.h"

#define JF_LAYER_MAX_ENTRIES 1000000

struct jf_layer_stats {
	int64_t entries;   /* entries written */
	int64_t bytes;     /* file data written */
	int64_t whiteouts; /* whiteouts and opaque markers */
	int64_t skipped;   /* device nodes not made */
};

enum jf_err jf_layer_unpack(const char *blob, const char *dest, int64_t max_bytes,
			    struct jf_layer_stats *st, struct jf_error *err);

#endif

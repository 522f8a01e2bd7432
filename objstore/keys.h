/*
 * keys.h - object keys of an S3 prefix as paths of a local mirror (pure).
 *
 * The prefix.  A source's prefix names a directory of the bucket: "models"
 * and "models/" both mean the S3 prefix "models/" (jf_key_prefix_norm adds
 * the '/'), so the object "models/a.bin" is the file "a.bin" of the mirror
 * and "models-old/x" is not part of it.  This is what a user who writes
 * `prefix: models` means, it makes every key's remainder a relative path
 * that starts at the mirror's root, and it is how `aws s3 sync
 * s3://b/models DIR` behaves.  "" is the whole bucket.
 *
 * A key's remainder (the key less its prefix) becomes a relative path only
 * when it is non-empty, not absolute, free of empty ("a//b"), "." and ".."
 * components, of NUL, C0 control characters and DEL, with each component
 * at most 255 bytes and the whole at most 1024; anything else is refused
 * (JF_KEY_UNSAFE with the reason).  A key that ends in '/' is a directory
 * marker (the consoles make them): skipped, neither a file nor an error.
 * UTF-8 (any byte >= 0x80) is kept as it is.
 *
 * The mirror's writer (tree.h) opens every directory of such a path from
 * the root with O_NOFOLLOW, so a symlink planted in the cache cannot
 * redirect a write either.
 */
#ifndef JF_OBJSTORE_KEYS_H
#define JF_OBJSTORE_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define JF_KEY_MAX        1024 /* bytes of a key's path in the mirror */
#define JF_KEY_COMPONENT  255  /* bytes of one component (NAME_MAX) */
#define JF_KEY_PREFIX_MAX 1024 /* bytes of a normalised prefix */

enum jf_key_kind {
	JF_KEY_FILE = 0, /* *rel is a safe relative path */
	JF_KEY_DIRMARK,  /* ends in '/': skipped */
	JF_KEY_UNSAFE,   /* refused: *why says why */
};

/* The S3 prefix of what the user wrote into out (n bytes): "" stays "",
 * anything else ends in '/'.  JF_EINVAL for a prefix that starts with '/',
 * holds a NUL or control character, or is longer than JF_KEY_PREFIX_MAX. */
enum jf_err jf_key_prefix_norm(const char *prefix, char *out, size_t n, struct jf_error *err);

/* Classify key (len bytes, NULs allowed) of a listing of prefix (a
 * normalised one).  JF_KEY_FILE: *rel points into key, past the prefix,
 * and *rel_len is its length.  JF_KEY_UNSAFE: *why is a static phrase
 * ("a \"..\" component", "not under the prefix", ...). */
enum jf_key_kind jf_key_classify(const char *prefix, const char *key, size_t len, const char **rel,
				 size_t *rel_len, const char **why);

/* Does key a (alen bytes) name a directory that holds key b: is b "a/..."?
 * (Two objects "a" and "a/b" cannot both be in a mirror: the first one
 * listed wins; sync.c uses this.) */
bool jf_key_is_parent(const char *a, size_t alen, const char *b, size_t blen);

/* Byte order of keys, as S3 lists them (memcmp, shorter first on a tie). */
int jf_key_cmp(const char *a, size_t alen, const char *b, size_t blen);

#endif

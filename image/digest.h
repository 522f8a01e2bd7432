/*
 * digest.h - streaming sha256 for content-addressed blobs (OpenSSL's EVP).
 *
 * jf_sha256_init/update/final over any number of chunks; final writes the
 * OCI form "sha256:<64 lower-case hex>".  jf_sha256_file hashes a file.
 */
#ifndef JF_DIGEST_H
#define JF_DIGEST_H

#include <stddef.h>

#include "core/err.h"

#define JF_DIGEST_LEN 72 /* "sha256:" + 64 + NUL */

struct jf_sha256 {
	void *ctx; /* EVP_MD_CTX */
};

enum jf_err jf_sha256_init(struct jf_sha256 *h);
void jf_sha256_update(struct jf_sha256 *h, const void *p, size_t n);
/* writes out and releases the context; also after a failed init: no-op */
void jf_sha256_final(struct jf_sha256 *h, char out[JF_DIGEST_LEN]);
/* release without a result (an abandoned download) */
void jf_sha256_release(struct jf_sha256 *h);
void jf_sha256_buf(const void *p, size_t n, char out[JF_DIGEST_LEN]);
enum jf_err jf_sha256_file(const char *path, char out[JF_DIGEST_LEN], struct jf_error *err);

#endif

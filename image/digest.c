/*
 * digest.c - sha256 in the OCI digest form, over OpenSSL's EVP interface.
 *
 * A struct jf_sha256 holds one EVP_MD_CTX from init to final (or
 * release); final and release free it and leave ctx NULL, so either may be
 * called twice.
 */
#include "image/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum jf_err jf_sha256_init(struct jf_sha256 *h)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	h->ctx = NULL;
	if (!ctx)
		return JF_ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return JF_EIO;
	}
	h->ctx = ctx;
	return JF_OK;
}

void jf_sha256_update(struct jf_sha256 *h, const void *p, size_t n)
{
	if (h->ctx && n)
		EVP_DigestUpdate(h->ctx, p, n);
}

void jf_sha256_final(struct jf_sha256 *h, char out[JF_DIGEST_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	out[0] = '\0';
	if (!h->ctx)
		return;
	if (EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 32) {
		static const char hex[] = "0123456789abcdef";
		memcpy(out, "sha256:", 7);
		for (unsigned int i = 0; i < 32; i++) {
			out[7 + 2 * i] = hex[md[i] >> 4];
			out[8 + 2 * i] = hex[md[i] & 15];
		}
		out[71] = '\0';
	}
	jf_sha256_release(h);
}

void jf_sha256_release(struct jf_sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

void jf_sha256_buf(const void *p, size_t n, char out[JF_DIGEST_LEN])
{
	struct jf_sha256 h;
	out[0] = '\0';
	if (jf_sha256_init(&h))
		return;
	jf_sha256_update(&h, p, n);
	jf_sha256_final(&h, out);
}

enum jf_err jf_sha256_file(const char *path, char out[JF_DIGEST_LEN], struct jf_error *err)
{
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return jf_error_set(err, errno == ENOENT ? JF_ENOENT : JF_EIO, 0, "%s: %s", path,
				    strerror(errno));
	struct jf_sha256 h;
	if (jf_sha256_init(&h)) {
		close(fd);
		return jf_error_set(err, JF_ENOMEM, 0, "%s: cannot start a sha256", path);
	}
	char buf[65536];
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			jf_sha256_release(&h);
			close(fd);
			return jf_error_set(err, JF_EIO, 0, "%s: %s", path, strerror(e));
		}
		if (k == 0)
			break;
		jf_sha256_update(&h, buf, (size_t)k);
	}
	close(fd);
	jf_sha256_final(&h, out);
	return out[0] ? JF_OK : jf_error_set(err, JF_EIO, 0, "%s: sha256 failed", path);
}

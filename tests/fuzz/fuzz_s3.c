/*
 * fuzz_s3.c - libFuzzer target: what the object-store cache parses from
 * the network and from files (objstore/): an S3 listing page fed in
 * chunks of the input's choosing, the same bytes as an error document,
 * every listed key as a mirror path, an AWS credentials file, a manifest.
 *
 * The first byte picks the part and the chunk size; the rest is the input.
 * Invariants checked (abort() on a breach):
 *   - a page parses to at most JF_S3_PAGE_LIMIT objects, a truncated one
 *     has a token, and fed whole or in chunks it gives the same result;
 *   - a key accepted as a file is a relative path inside the mirror: no
 *     empty, "." or ".." component, no control byte, within the limits;
 *   - an error message is NUL-terminated within its buffer;
 *   - no credentials message holds a secret of the input (a value of
 *     aws_secret_access_key with a letter and a digit, 8 bytes or more);
 *   - a manifest's keys come strictly increasing.
 * In scripts/fuzz.sh's list (the README's test command runs it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/creds.h"
#include "objstore/keys.h"
#include "objstore/manifest.h"
#include "objstore/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *rel, size_t n)
{
	if (n == 0 || n > JF_KEY_MAX || rel[0] == '/' || rel[n - 1] == '/')
		abort();
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && rel[i] != '/') {
			unsigned char c = (unsigned char)rel[i];
			if (c < 0x20 || c == 0x7f)
				abort();
			continue;
		}
		size_t cl = i - start;
		if (cl == 0 || cl > JF_KEY_COMPONENT || (cl == 1 && rel[start] == '.') ||
		    (cl == 2 && rel[start] == '.' && rel[start + 1] == '.'))
			abort();
		start = i + 1;
	}
}

static int parse(const char *p, size_t n, size_t step, struct jf_s3_page *pg)
{
	struct jf_s3_listparse *lp;
	if (jf_s3_listparse_new(&lp, NULL))
		return -1;
	int rc = 0;
	for (size_t at = 0; at < n && !rc; at += step)
		rc = jf_s3_listparse_feed(lp, p + at, n - at < step ? n - at : step, NULL) ? -1 : 0;
	if (!rc)
		rc = jf_s3_listparse_end(lp, pg, NULL) ? -1 : 0;
	jf_s3_listparse_free(lp);
	return rc;
}

static void listing(const char *p, size_t n, size_t step)
{
	struct jf_s3_page a, b;
	int ra = parse(p, n, n ? n : 1, &a), rb = parse(p, n, step, &b);
	if (ra != rb)
		abort();
	if (ra == 0) {
		if (a.n != b.n || a.n > JF_S3_PAGE_LIMIT || a.truncated != b.truncated)
			abort();
		if (a.truncated && (!a.next_token || !a.next_token[0]))
			abort();
		for (size_t i = 0; i < a.n; i++) {
			if (a.v[i].keylen != b.v[i].keylen ||
			    memcmp(a.v[i].key, b.v[i].key, a.v[i].keylen) != 0 ||
			    strcmp(a.v[i].etag, b.v[i].etag) != 0 || a.v[i].size != b.v[i].size)
				abort();
			const char *prefixes[] = { "", "a/" };
			for (int k = 0; k < 2; k++) {
				const char *rel, *why;
				size_t rl;
				if (jf_key_classify(prefixes[k], a.v[i].key, a.v[i].keylen, &rel,
						    &rl, &why) == JF_KEY_FILE)
					check_path(rel, rl);
			}
		}
		jf_s3_page_free(&a);
		jf_s3_page_free(&b);
	}
	char m[JF_S3_MSG];
	memset(m, 'x', sizeof(m));
	jf_s3_error_message(403, p, n, "b", m, sizeof(m));
	if (!memchr(m, '\0', sizeof(m)))
		abort();
}

/* the secrets of the input that a message could be checked for */
static void creds(const char *p, size_t n)
{
	struct jf_creds c;
	struct jf_error e;
	jf_error_clear(&e);
	if (jf_creds_parse(p, n, NULL, "fuzz", &c, &e) == JF_OK)
		return;
	const char *k = "aws_secret_access_key";
	for (const char *s = p; (s = memmem(s, n - (size_t)(s - p), k, strlen(k)));) {
		s += strlen(k);
		const char *v = s;
		while (v < p + n && (*v == ' ' || *v == '\t' || *v == '='))
			v++;
		size_t vl = 0;
		bool alpha = false, digit = false;
		while (v + vl < p + n && (unsigned char)v[vl] > 0x20 &&
		       (unsigned char)v[vl] < 0x7f) {
			alpha |= (v[vl] >= 'a' && v[vl] <= 'z') || (v[vl] >= 'A' && v[vl] <= 'Z');
			digit |= v[vl] >= '0' && v[vl] <= '9';
			vl++;
		}
		if (vl >= 8 && alpha && digit && memmem(e.msg, strlen(e.msg), v, vl))
			abort();
	}
}

static void manifest(const char *p, size_t n)
{
	struct jf_mf_reader *r;
	if (jf_mf_open_mem(p, n, &r, NULL))
		return;
	char *prev = NULL;
	size_t pl = 0;
	const struct jf_mf_entry *e;
	for (; (e = jf_mf_peek(r)); jf_mf_next(r)) {
		if (prev && jf_key_cmp(prev, pl, e->key, e->keylen) >= 0)
			abort();
		free(prev);
		prev = malloc(e->keylen + 1);
		memcpy(prev, e->key, e->keylen);
		pl = e->keylen;
	}
	free(prev);
	jf_mf_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	const char *p = (const char *)data + 1;
	size_t n = size - 1;
	size_t step = (size_t)(data[0] >> 2) + 1;
	switch (data[0] & 3) {
	case 0:
	case 1:
		listing(p, n, step);
		break;
	case 2:
		creds(p, n);
		break;
	default:
		manifest(p, n);
		break;
	}
	return 0;
}

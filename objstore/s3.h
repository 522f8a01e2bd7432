/*
 * s3.h - the pieces of an S3 client that objstore/sync.c drives in its own
 * curl multi: request set-up (path-style URLs, SigV4 through libcurl,
 * timeouts), the ListObjectsV2 parser, S3's error documents, the retry
 * policy and the ETag checks.
 *
 * Requests.  Path-style: ENDPOINT/BUCKET/KEY, the key percent-encoded as
 * SigV4 wants it (unreserved bytes and '/' kept, every other byte %XX in
 * upper case).  Listings are
 *   ENDPOINT/BUCKET?continuation-token=T&encoding-type=url&list-type=2&max-keys=1000&prefix=P
 * with the parameters already in SigV4's canonical form (sorted, values
 * encoded, '/' too): libcurl 7.88 signs the query string as it is in the
 * URL, so a token holding '=', '+' or '/' signs right only this way.
 * With credentials: CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3", the key pair as
 * CURLOPT_USERNAME/PASSWORD (never in a URL), and the header
 * x-amz-content-sha256 with the empty body's sha256 (libcurl 7.88 does not
 * send it, and S3, Ceph and MinIO refuse a SigV4 request without it); a
 * session token goes in x-amz-security-token (libcurl signs every header
 * set with CURLOPT_HTTPHEADER).  Without credentials: no signature.
 *
 * Errors.  An answer other than 2xx is "STATUS CODE: MESSAGE" from S3's
 * <Error> document ("403 SignatureDoesNotMatch: The request signature we
 * calculated does not match ...", "404 NoSuchBucket: bucket \"x\" does not
 * exist"), with a message of our own for the codes a server sends bare.
 * Retried (jf_s3_retryable): failures to connect, timeouts, broken
 * transfers, 5xx and 429; never another 4xx.
 *
 * Credentials never reach a message, a URL or a log.
 */
#ifndef JF_OBJSTORE_S3_H
#define JF_OBJSTORE_S3_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "objstore/creds.h"

#define JF_S3_ETAG_MAX   128 /* an ETag, quotes removed */
#define JF_S3_PAGE_KEYS  1000
#define JF_S3_PAGE_LIMIT 10000 /* entries a page may hold before it is refused */
#define JF_S3_TOKEN_MAX  4096  /* a continuation token */
#define JF_S3_ENDPOINT   1024
#define JF_S3_BUCKET     256
#define JF_S3_REGION     64
#define JF_S3_MSG        400 /* an error document as a message */

struct jf_s3_opts {
	const char *endpoint;         /* "http://127.0.0.1:17480" (http or https) */
	const char *bucket;           /* the bucket's name */
	const char *region;           /* NULL = "us-east-1" */
	const struct jf_creds *creds; /* NULL = anonymous */
	long connect_timeout_s;       /* 0 = 10 */
	long stall_s;                 /* below 1 KiB/s this long fails a transfer; 0 = 30 */
};

struct jf_s3;

/* libcurl's global init (TLS libraries and their config), once per
 * process; jf_s3_new does it too.  Early, it may overlap other work. */
void jf_s3_global_init(void);

/* Check o and keep a copy of it (the credentials too: wiped by free). */
enum jf_err jf_s3_new(const struct jf_s3_opts *o, struct jf_s3 **out, struct jf_error *err);
void jf_s3_free(struct jf_s3 *s);
const char *jf_s3_endpoint(const struct jf_s3 *s); /* without a trailing '/' */
const char *jf_s3_bucket(const struct jf_s3 *s);

/* The URL of a listing page (token NULL or "" for the first) and of an
 * object; *url is malloc'd. */
enum jf_err jf_s3_list_url(const struct jf_s3 *s, const char *prefix, const char *token, char **url,
			   struct jf_error *err);
enum jf_err jf_s3_object_url(const struct jf_s3 *s, const char *key, size_t keylen, char **url,
			     struct jf_error *err);

/* Ready h (reset first) for a GET of url: timeouts, signature, and the
 * headers of s plus extra (NULL-terminated "Name: value" lines, may be
 * NULL); *hdrs receives the list to free after the transfer.  errbuf is
 * CURL_ERROR_SIZE bytes. */
enum jf_err jf_s3_setup(struct jf_s3 *s, CURL *h, const char *url, const char *const *extra,
			struct curl_slist **hdrs, char *errbuf, struct jf_error *err);

/* Sockets of the requests of one curl multi, so that each end of a
 * response's headers can be ACKed at once.  A server that writes its
 * headers and its body apart with Nagle on (radosgw's beast does) holds a
 * body smaller than a segment until that ACK, and on a kept-alive
 * connection Linux delays it by 40 ms: every small GET would take 40 ms.
 * TCP_QUICKACK sends a pending ACK at once.  libcurl 7.88 does not say
 * which socket a transfer uses while it runs, so all of them get it (a
 * handful of setsockopt calls a response). */
struct jf_s3_socks {
	int fd[288]; /* --parallel is at most 256 */
	int n;
};
/* Have h open and close its sockets through t (before the transfer). */
void jf_s3_track_sockets(CURL *h, struct jf_s3_socks *t);
void jf_s3_quickack(const struct jf_s3_socks *t);

/* Percent-encoding as SigV4 canonicalises: unreserved bytes (A-Z a-z 0-9
 * - _ . ~) kept, '/' kept when keep_slash, the rest %XX.  Appends to out
 * (cap bytes, NUL-terminated); false when it does not fit. */
bool jf_s3_encode(const char *s, size_t n, bool keep_slash, char *out, size_t cap);

/* ---- ListObjectsV2 ------------------------------------------------------ */

struct jf_s3_object {
	char *key; /* malloc'd, NUL-terminated; may hold NULs (keylen) */
	size_t keylen;
	int64_t size;
	char etag[JF_S3_ETAG_MAX]; /* without its quotes */
	int64_t mtime;             /* LastModified, seconds since the epoch */
};

struct jf_s3_page {
	struct jf_s3_object *v;
	size_t n, cap;
	bool truncated;
	char *next_token; /* NULL when none */
};

/* A streaming parser of one response body: feed the chunks as they come,
 * then end.  Bounded: keys of JF_S3_PAGE_LIMIT objects of at most 64 KiB
 * each; DOCTYPEs are refused (no entities but XML's own). */
struct jf_s3_listparse;
enum jf_err jf_s3_listparse_new(struct jf_s3_listparse **out, struct jf_error *err);
enum jf_err jf_s3_listparse_feed(struct jf_s3_listparse *p, const char *buf, size_t n,
				 struct jf_error *err);
/* The page, once the document ended well; an <Error> document is JF_EIO
 * with its message. */
enum jf_err jf_s3_listparse_end(struct jf_s3_listparse *p, struct jf_s3_page *out,
				struct jf_error *err);
void jf_s3_listparse_free(struct jf_s3_listparse *p);
/* all of it at once */
enum jf_err jf_s3_parse_list(const char *xml, size_t n, struct jf_s3_page *out,
			     struct jf_error *err);
void jf_s3_page_free(struct jf_s3_page *pg);

/* "STATUS CODE: MESSAGE" of an error answer (body, n bytes, may be empty
 * or not XML) into out; bucket names the bucket in our own messages. */
void jf_s3_error_message(long status, const char *body, size_t n, const char *bucket, char *out,
			 size_t cap);

/* Is a failure worth another try: a transfer that ended with c (CURLE_OK
 * when it completed) and HTTP status (0 when none). */
bool jf_s3_retryable(CURLcode c, long status);

/* The back-off before try `attempt` (1 = the first retry): base_ms
 * doubled each time. */
long jf_s3_backoff_ms(int attempt, long base_ms);

/* ---- ETags and dates ---------------------------------------------------- */

/* Strip quotes and blanks of an ETag value (a header's or a listing's)
 * into out; bytes outside 0x21-0x7e become '?'.  */
void jf_s3_etag_norm(const char *v, size_t n, char out[JF_S3_ETAG_MAX]);
/* A single-part upload's ETag: 32 hex digits, the MD5 of the bytes. */
bool jf_s3_etag_is_md5(const char *etag);
/* Does the MD5 digest (16 bytes) equal the ETag. */
bool jf_s3_etag_matches(const char *etag, const unsigned char md5[16]);

/* MD5 of a body as it streams (OpenSSL's EVP). */
struct jf_md5 {
	void *ctx;
};
enum jf_err jf_md5_init(struct jf_md5 *m);
void jf_md5_update(struct jf_md5 *m, const void *p, size_t n);
void jf_md5_final(struct jf_md5 *m, unsigned char out[16]);
void jf_md5_release(struct jf_md5 *m);

/* "2024-01-02T03:04:05.000Z" (ISO 8601 in UTC, fraction optional) into
 * seconds since the epoch; false when it is not that. */
bool jf_s3_parse_time(const char *s, int64_t *out);

#endif

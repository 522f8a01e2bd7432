/*
 * s3.c - S3 requests, listings, error documents and ETags (s3.h).
 *
 * DESIGN.  This file owns no transfer loop: objstore/sync.c runs every
 * request (listing pages and GETs alike) in one curl multi, so a listing
 * page is fetched while the objects of the last one download.  What it
 * needs from here is stateless: a URL, a ready easy handle, a parser to
 * feed, a verdict on a failure.
 *
 * Signing with libcurl 7.88 (lib/http_aws_sigv4.c of that release): the
 * canonical request takes the URL's path and query exactly as they are in
 * the URL, signs host, x-amz-date and every header of CURLOPT_HTTPHEADER,
 * and takes the payload hash from an x-amz-content-sha256 header when one
 * is set (it does not send one itself).  So: every URL here is built in
 * canonical form (jf_s3_encode; query parameters sorted by name, each
 * "name=value" even when empty), the content-sha256 header is always sent,
 * and no header is ever set empty (libcurl would sign "name:" and not send
 * it).
 *
 * The listing parser is expat, streaming: character data is kept only for
 * the leaves it wants (Key, Size, ETag, LastModified, IsTruncated,
 * NextContinuationToken, EncodingType; Code and Message of an <Error>),
 * each capped; a page holds at most JF_S3_PAGE_LIMIT entries.  Keys are
 * asked for with encoding-type=url (a key may hold bytes XML 1.0 cannot
 * carry); when the answer says <EncodingType>url</EncodingType> they are
 * percent-decoded ('+' is a space, as AWS writes one), else taken as they
 * are.
 */
#include "objstore/s3.h"

#include <ctype.h>
#include <errno.h>
#include <expat.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define TEXT_MAX     (64 * 1024) /* one leaf's text */
#define URL_MAX      (JF_S3_ENDPOINT + JF_S3_BUCKET + 3 * (JF_S3_TOKEN_MAX + 1024) + 256)

struct jf_s3 {
	char endpoint[JF_S3_ENDPOINT];
	char bucket[JF_S3_BUCKET];
	char region[JF_S3_REGION];
	char sigv4[JF_S3_REGION + 16]; /* "aws:amz:REGION:s3" */
	bool anonymous;
	struct jf_creds creds;
	char *token_hdr; /* "x-amz-security-token: ..." or NULL */
	long connect_timeout_s, stall_s;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void jf_s3_global_init(void)
{
	pthread_once(&curl_once, curl_init_once);
}

/* ---- the client ---------------------------------------------------------- */

static enum jf_err check_endpoint(const char *e, struct jf_error *err)
{
	size_t n = strlen(e);
	char q[96];
	if (strchr(e, '@'))
		/* userinfo: never quote it, it may hold a password */
		return jf_error_set(err, JF_EINVAL, 0,
				    "endpoint: credentials do not go in the URL (give a "
				    "credentials file)");
	jf_err_quote(e, n, 64, q, sizeof(q));
	const char *rest = strncasecmp(e, "http://", 7) == 0    ? e + 7
			   : strncasecmp(e, "https://", 8) == 0 ? e + 8
								: NULL;
	if (!rest)
		return jf_error_set(err, JF_EINVAL, 0,
				    "endpoint \"%s\": want an http:// or https:// URL", q);
	if (n >= JF_S3_ENDPOINT)
		return jf_error_set(err, JF_EINVAL, 0, "endpoint \"%s\": longer than %d bytes", q,
				    JF_S3_ENDPOINT - 1);
	size_t hl = strcspn(rest, "/");
	if (hl == 0)
		return jf_error_set(err, JF_EINVAL, 0, "endpoint \"%s\": no host", q);
	for (const char *p = rest; *p; p++) {
		unsigned char c = (unsigned char)*p;
		bool ok = isalnum(c) || strchr("-._~/:[]", c);
		if (!ok)
			return jf_error_set(err, JF_EINVAL, 0,
					    "endpoint \"%s\": only a scheme, a host, a port and "
					    "a plain path",
					    q);
	}
	return JF_OK;
}

static enum jf_err check_bucket(const char *b, struct jf_error *err)
{
	size_t n = strlen(b);
	char q[96];
	jf_err_quote(b, n, 64, q, sizeof(q));
	if (n == 0 || n >= JF_S3_BUCKET)
		return jf_error_set(err, JF_EINVAL, 0, "bucket \"%s\": want 1 to %d bytes", q,
				    JF_S3_BUCKET - 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if (!isalnum(c) && c != '.' && c != '-' && c != '_')
			return jf_error_set(err, JF_EINVAL, 0,
					    "bucket \"%s\": letters, digits, '.', '-' and '_' "
					    "only",
					    q);
	}
	return JF_OK;
}

static enum jf_err check_region(const char *r, struct jf_error *err)
{
	size_t n = strlen(r);
	char q[96];
	jf_err_quote(r, n, 64, q, sizeof(q));
	if (n == 0 || n >= JF_S3_REGION)
		return jf_error_set(err, JF_EINVAL, 0, "region \"%s\": want 1 to %d bytes", q,
				    JF_S3_REGION - 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)r[i];
		if (!isalnum(c) && c != '-' && c != '_')
			return jf_error_set(err, JF_EINVAL, 0,
					    "region \"%s\": letters, digits, '-' and '_' only", q);
	}
	return JF_OK;
}

enum jf_err jf_s3_new(const struct jf_s3_opts *o, struct jf_s3 **out, struct jf_error *err)
{
	*out = NULL;
	enum jf_err rc;
	const char *region = o->region && *o->region ? o->region : "us-east-1";
	if (!o->endpoint || !o->bucket)
		return jf_error_set(err, JF_EINVAL, 0, "s3: an endpoint and a bucket are needed");
	if ((rc = check_endpoint(o->endpoint, err)) || (rc = check_bucket(o->bucket, err)) ||
	    (rc = check_region(region, err)))
		return rc;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK)
		return jf_error_set(err, JF_EIO, 0, "s3: libcurl would not start (%s)",
				    curl_easy_strerror(curl_init_rc));
	struct jf_s3 *s = calloc(1, sizeof(*s));
	if (!s)
		return jf_error_set(err, JF_ENOMEM, 0, "s3: out of memory");
	snprintf(s->endpoint, sizeof(s->endpoint), "%s", o->endpoint);
	size_t el = strlen(s->endpoint);
	while (el > 0 && s->endpoint[el - 1] == '/')
		s->endpoint[--el] = '\0';
	snprintf(s->bucket, sizeof(s->bucket), "%s", o->bucket);
	snprintf(s->region, sizeof(s->region), "%s", region);
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", s->region);
	s->anonymous = o->creds == NULL;
	if (o->creds) {
		s->creds = *o->creds;
		if (s->creds.session_token[0]) {
			size_t tl = strlen(s->creds.session_token) + 32;
			if (!(s->token_hdr = malloc(tl))) {
				jf_s3_free(s);
				return jf_error_set(err, JF_ENOMEM, 0, "s3: out of memory");
			}
			snprintf(s->token_hdr, tl, "x-amz-security-token: %s",
				 s->creds.session_token);
		}
	}
	s->connect_timeout_s = o->connect_timeout_s > 0 ? o->connect_timeout_s : 10;
	s->stall_s = o->stall_s > 0 ? o->stall_s : 30;
	*out = s;
	return JF_OK;
}

void jf_s3_free(struct jf_s3 *s)
{
	if (!s)
		return;
	if (s->token_hdr) {
		explicit_bzero(s->token_hdr, strlen(s->token_hdr));
		free(s->token_hdr);
	}
	explicit_bzero(s, sizeof(*s));
	free(s);
}

const char *jf_s3_endpoint(const struct jf_s3 *s)
{
	return s->endpoint;
}

const char *jf_s3_bucket(const struct jf_s3 *s)
{
	return s->bucket;
}

static curl_socket_t open_sock(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct jf_s3_socks *t = ud;
	(void)purpose;
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (fd >= 0 && t->n < (int)(sizeof(t->fd) / sizeof(t->fd[0])))
		t->fd[t->n++] = fd;
	return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static int close_sock(void *ud, curl_socket_t fd)
{
	struct jf_s3_socks *t = ud;
	for (int i = 0; i < t->n; i++)
		if (t->fd[i] == fd) {
			t->fd[i] = t->fd[--t->n];
			break;
		}
	return close(fd);
}

void jf_s3_track_sockets(CURL *h, struct jf_s3_socks *t)
{
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_sock);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, t);
	curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, close_sock);
	curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, t);
}

void jf_s3_quickack(const struct jf_s3_socks *t)
{
	int one = 1;
	for (int i = 0; i < t->n; i++)
		setsockopt(t->fd[i], IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

bool jf_s3_encode(const char *s, size_t n, bool keep_slash, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = strnlen(out, cap);
	if (o >= cap)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool keep = isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
			    (keep_slash && c == '/');
		if (keep) {
			if (o + 2 > cap)
				return false;
			out[o++] = (char)c;
		} else {
			if (o + 4 > cap)
				return false;
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return true;
}

enum jf_err jf_s3_list_url(const struct jf_s3 *s, const char *prefix, const char *token, char **url,
			   struct jf_error *err)
{
	*url = NULL;
	char *u = malloc(URL_MAX);
	if (!u)
		return jf_error_set(err, JF_ENOMEM, 0, "s3: out of memory");
	snprintf(u, URL_MAX, "%s/%s?", s->endpoint, s->bucket);
	bool ok = true;
	/* sorted by name: SigV4's canonical query, as the URL */
	if (token && *token) {
		strcat(u, "continuation-token=");
		ok = jf_s3_encode(token, strlen(token), false, u, URL_MAX - 1);
		if (ok)
			strcat(u, "&");
	}
	size_t o = strlen(u);
	int k = snprintf(u + o, URL_MAX - o, "encoding-type=url&list-type=2&max-keys=%d%s",
			 JF_S3_PAGE_KEYS, prefix && *prefix ? "&prefix=" : "");
	ok = ok && k > 0 && (size_t)k < URL_MAX - o;
	if (ok && prefix && *prefix)
		ok = jf_s3_encode(prefix, strlen(prefix), false, u, URL_MAX);
	if (!ok) {
		free(u);
		return jf_error_set(err, JF_EFBIG, 0, "s3: listing URL too long");
	}
	*url = u;
	return JF_OK;
}

enum jf_err jf_s3_object_url(const struct jf_s3 *s, const char *key, size_t keylen, char **url,
			     struct jf_error *err)
{
	*url = NULL;
	size_t cap = strlen(s->endpoint) + strlen(s->bucket) + 3 * keylen + 8;
	char *u = malloc(cap);
	if (!u)
		return jf_error_set(err, JF_ENOMEM, 0, "s3: out of memory");
	snprintf(u, cap, "%s/%s/", s->endpoint, s->bucket);
	if (!jf_s3_encode(key, keylen, true, u, cap)) {
		free(u);
		return jf_error_set(err, JF_EFBIG, 0, "s3: object URL too long");
	}
	*url = u;
	return JF_OK;
}

enum jf_err jf_s3_setup(struct jf_s3 *s, CURL *h, const char *url, const char *const *extra,
			struct curl_slist **hdrs, char *errbuf, struct jf_error *err)
{
	*hdrs = NULL;
	errbuf[0] = '\0';
	curl_easy_reset(h);
	if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK)
		return jf_error_set(err, JF_ENOMEM, 0, "s3: cannot set up a request");
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, s->connect_timeout_s);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, s->stall_s);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "jobfs-sync");
	struct curl_slist *l = NULL, *t;
	if (!s->anonymous) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, s->creds.access_key); /* libcurl copies */
		curl_easy_setopt(h, CURLOPT_PASSWORD, s->creds.secret_key);
		if (!(t = curl_slist_append(l, "x-amz-content-sha256: " EMPTY_SHA256)))
			goto nomem;
		l = t;
		if (s->token_hdr) {
			if (!(t = curl_slist_append(l, s->token_hdr)))
				goto nomem;
			l = t;
		}
	}
	for (size_t i = 0; extra && extra[i]; i++) {
		if (!(t = curl_slist_append(l, extra[i])))
			goto nomem;
		l = t;
	}
	if (l)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	*hdrs = l;
	return JF_OK;
nomem:
	curl_slist_free_all(l);
	return jf_error_set(err, JF_ENOMEM, 0, "s3: out of memory");
}

/* ---- the listing parser -------------------------------------------------- */

enum leaf {
	L_NONE,
	L_KEY,
	L_SIZE,
	L_ETAG,
	L_MTIME,
	L_TRUNC,
	L_NEXT,
	L_ENC,
	L_CODE,
	L_MSG,
};

struct jf_s3_listparse {
	XML_Parser x;
	int depth;
	bool root_list, root_error, in_contents;
	enum leaf leaf;
	char *txt;
	size_t tn, tcap;
	bool over;               /* a leaf over TEXT_MAX, or too many entries */
	const char *why;         /* set by a handler that stopped the parser */
	struct jf_s3_object cur; /* the Contents being read */
	bool cur_key, cur_size;
	struct jf_s3_page pg;
	bool url_encoded;
	char code[128];
	char msg[JF_S3_MSG];
};

static void stop(struct jf_s3_listparse *p, const char *why)
{
	if (!p->why)
		p->why = why;
	XML_StopParser(p->x, XML_FALSE);
}

static enum leaf leaf_of(const struct jf_s3_listparse *p, const char *name)
{
	if (p->root_list && p->in_contents && p->depth == 3) {
		if (!strcmp(name, "Key"))
			return L_KEY;
		if (!strcmp(name, "Size"))
			return L_SIZE;
		if (!strcmp(name, "ETag"))
			return L_ETAG;
		if (!strcmp(name, "LastModified"))
			return L_MTIME;
	}
	if (p->root_list && p->depth == 2) {
		if (!strcmp(name, "IsTruncated"))
			return L_TRUNC;
		if (!strcmp(name, "NextContinuationToken"))
			return L_NEXT;
		if (!strcmp(name, "EncodingType"))
			return L_ENC;
	}
	if (p->root_error && p->depth == 2) {
		if (!strcmp(name, "Code"))
			return L_CODE;
		if (!strcmp(name, "Message"))
			return L_MSG;
	}
	return L_NONE;
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct jf_s3_listparse *p = ud;
	(void)attrs;
	p->depth++;
	if (p->depth == 1) {
		p->root_list = !strcmp(name, "ListBucketResult");
		p->root_error = !strcmp(name, "Error");
		if (!p->root_list && !p->root_error)
			stop(p, "not a ListBucketResult");
		return;
	}
	if (p->root_list && p->depth == 2 && !strcmp(name, "Contents")) {
		p->in_contents = true;
		memset(&p->cur, 0, sizeof(p->cur));
		p->cur_key = p->cur_size = false;
		return;
	}
	p->leaf = leaf_of(p, name);
	p->tn = 0;
}

static bool parse_i64(const char *s, int64_t *out)
{
	if (!*s || strlen(s) > 18)
		return false;
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

static void end_contents(struct jf_s3_listparse *p)
{
	if (!p->cur_key || !p->cur_size) {
		free(p->cur.key);
		p->cur.key = NULL;
		stop(p, p->cur_key ? "a Contents without a Size" : "a Contents without a Key");
		return;
	}
	if (p->pg.n == JF_S3_PAGE_LIMIT) {
		free(p->cur.key);
		p->cur.key = NULL;
		stop(p, "more than 10000 objects in one page");
		return;
	}
	if (p->pg.n == p->pg.cap) {
		size_t nc = p->pg.cap ? p->pg.cap * 2 : 64;
		struct jf_s3_object *nv = realloc(p->pg.v, nc * sizeof(*nv));
		if (!nv) {
			free(p->cur.key);
			p->cur.key = NULL;
			stop(p, "out of memory");
			return;
		}
		p->pg.v = nv, p->pg.cap = nc;
	}
	p->pg.v[p->pg.n++] = p->cur;
	memset(&p->cur, 0, sizeof(p->cur));
}

static void on_end(void *ud, const XML_Char *name)
{
	struct jf_s3_listparse *p = ud;
	if (p->in_contents && p->depth == 2 && !strcmp(name, "Contents")) {
		p->in_contents = false;
		end_contents(p);
		p->depth--;
		return;
	}
	enum leaf lf = p->leaf;
	p->leaf = L_NONE;
	p->depth--;
	if (lf == L_NONE)
		return;
	const char *t = p->txt ? p->txt : "";
	if (p->txt)
		p->txt[p->tn] = '\0';
	switch (lf) {
	case L_KEY:
		if (p->cur_key) {
			stop(p, "a Contents with two Keys");
			return;
		}
		if (!(p->cur.key = malloc(p->tn + 1))) {
			stop(p, "out of memory");
			return;
		}
		memcpy(p->cur.key, t, p->tn + 1);
		p->cur.keylen = p->tn;
		p->cur_key = true;
		break;
	case L_SIZE:
		if (!parse_i64(t, &p->cur.size)) {
			stop(p, "a Size that is not a number");
			return;
		}
		p->cur_size = true;
		break;
	case L_ETAG:
		jf_s3_etag_norm(t, p->tn, p->cur.etag);
		break;
	case L_MTIME:
		if (!jf_s3_parse_time(t, &p->cur.mtime)) {
			stop(p, "a LastModified that is not a date");
			return;
		}
		break;
	case L_TRUNC:
		if (!strcmp(t, "true"))
			p->pg.truncated = true;
		else if (!strcmp(t, "false"))
			p->pg.truncated = false;
		else
			stop(p, "an IsTruncated neither true nor false");
		break;
	case L_NEXT:
		if (p->tn >= JF_S3_TOKEN_MAX) {
			stop(p, "a continuation token longer than 4096 bytes");
			return;
		}
		free(p->pg.next_token);
		if (!(p->pg.next_token = strdup(t)))
			stop(p, "out of memory");
		break;
	case L_ENC:
		p->url_encoded = !strcasecmp(t, "url");
		break;
	case L_CODE:
		snprintf(p->code, sizeof(p->code), "%s", t);
		break;
	case L_MSG:
		snprintf(p->msg, sizeof(p->msg), "%s", t);
		break;
	case L_NONE:
		break;
	}
}

static void on_text(void *ud, const XML_Char *s, int len)
{
	struct jf_s3_listparse *p = ud;
	if (p->leaf == L_NONE || len <= 0)
		return;
	size_t n = (size_t)len;
	if (p->tn + n > TEXT_MAX) {
		stop(p, "an element longer than 64 KiB");
		return;
	}
	if (p->tn + n + 1 > p->tcap) {
		size_t nc = p->tcap ? p->tcap : 256;
		while (nc < p->tn + n + 1)
			nc *= 2;
		char *nt = realloc(p->txt, nc);
		if (!nt) {
			stop(p, "out of memory");
			return;
		}
		p->txt = nt, p->tcap = nc;
	}
	memcpy(p->txt + p->tn, s, n);
	p->tn += n;
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
		       int has_internal)
{
	(void)name, (void)sysid, (void)pubid, (void)has_internal;
	stop(ud, "a DOCTYPE (not allowed)");
}

enum jf_err jf_s3_listparse_new(struct jf_s3_listparse **out, struct jf_error *err)
{
	*out = NULL;
	struct jf_s3_listparse *p = calloc(1, sizeof(*p));
	if (!p || !(p->x = XML_ParserCreate("UTF-8"))) {
		free(p);
		return jf_error_set(err, JF_ENOMEM, 0, "s3: out of memory");
	}
	XML_SetUserData(p->x, p);
	XML_SetElementHandler(p->x, on_start, on_end);
	XML_SetCharacterDataHandler(p->x, on_text);
	XML_SetStartDoctypeDeclHandler(p->x, on_doctype);
	XML_SetParamEntityParsing(p->x, XML_PARAM_ENTITY_PARSING_NEVER);
	*out = p;
	return JF_OK;
}

static enum jf_err parse_failed(struct jf_s3_listparse *p, struct jf_error *err)
{
	if (p->why)
		return jf_error_set(err, JF_EINVAL, 0, "listing: %s", p->why);
	return jf_error_set(err, JF_EINVAL, 0, "listing: not XML (%s at line %lu)",
			    XML_ErrorString(XML_GetErrorCode(p->x)),
			    (unsigned long)XML_GetCurrentLineNumber(p->x));
}

enum jf_err jf_s3_listparse_feed(struct jf_s3_listparse *p, const char *buf, size_t n,
				 struct jf_error *err)
{
	while (n) {
		int k = n > (1u << 30) ? 1 << 30 : (int)n;
		if (XML_Parse(p->x, buf, k, XML_FALSE) != XML_STATUS_OK)
			return parse_failed(p, err);
		buf += k, n -= (size_t)k;
	}
	return JF_OK;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* percent-decode s in place (never longer); its new length */
static size_t url_decode(char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
		    (lo = hexval(s[i + 2])) >= 0) {
			s[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (s[i] == '+') {
			s[o++] = ' ';
		} else {
			s[o++] = s[i];
		}
	}
	s[o] = '\0';
	return o;
}

enum jf_err jf_s3_listparse_end(struct jf_s3_listparse *p, struct jf_s3_page *out,
				struct jf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (XML_Parse(p->x, "", 0, XML_TRUE) != XML_STATUS_OK)
		return parse_failed(p, err);
	if (p->root_error) {
		char m[JF_S3_MSG + 160];
		snprintf(m, sizeof(m), "%s%s%s", p->code[0] ? p->code : "an error document",
			 p->msg[0] ? ": " : "", p->msg);
		return jf_error_set(err, JF_EIO, 0, "%s", m);
	}
	if (!p->root_list)
		return jf_error_set(err, JF_EINVAL, 0, "listing: empty document");
	if (p->pg.truncated && (!p->pg.next_token || !p->pg.next_token[0]))
		return jf_error_set(err, JF_EINVAL, 0,
				    "listing: truncated, but no NextContinuationToken");
	if (p->url_encoded)
		for (size_t i = 0; i < p->pg.n; i++)
			p->pg.v[i].keylen = url_decode(p->pg.v[i].key, p->pg.v[i].keylen);
	*out = p->pg;
	memset(&p->pg, 0, sizeof(p->pg));
	return JF_OK;
}

void jf_s3_listparse_free(struct jf_s3_listparse *p)
{
	if (!p)
		return;
	if (p->x)
		XML_ParserFree(p->x);
	free(p->cur.key);
	free(p->txt);
	jf_s3_page_free(&p->pg);
	free(p);
}

enum jf_err jf_s3_parse_list(const char *xml, size_t n, struct jf_s3_page *out,
			     struct jf_error *err)
{
	struct jf_s3_listparse *p;
	memset(out, 0, sizeof(*out));
	enum jf_err rc = jf_s3_listparse_new(&p, err);
	if (rc)
		return rc;
	if (!(rc = jf_s3_listparse_feed(p, xml, n, err)))
		rc = jf_s3_listparse_end(p, out, err);
	jf_s3_listparse_free(p);
	return rc;
}

void jf_s3_page_free(struct jf_s3_page *pg)
{
	for (size_t i = 0; i < pg->n; i++)
		free(pg->v[i].key);
	free(pg->v);
	free(pg->next_token);
	memset(pg, 0, sizeof(*pg));
}

/* ---- error documents ----------------------------------------------------- */

/* our words for codes a server may send without a Message */
static const char *default_message(const char *code)
{
	static const struct {
		const char *code, *msg;
	} t[] = {
		{ "SignatureDoesNotMatch",
		  "The request signature we calculated does not match the signature you "
		  "provided. Check your key and signing method." },
		{ "InvalidAccessKeyId",
		  "The AWS access key ID you provided does not exist in our records." },
		{ "AccessDenied", "Access Denied" },
		{ "NoSuchKey", "The specified key does not exist." },
		{ "SlowDown", "Please reduce your request rate." },
		{ "RequestTimeTooSkewed",
		  "The difference between the request time and the server's time is too "
		  "large." },
		{ "InternalError", "We encountered an internal error. Please try again." },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(code, t[i].code))
			return t[i].msg;
	return NULL;
}

void jf_s3_error_message(long status, const char *body, size_t n, const char *bucket, char *out,
			 size_t cap)
{
	struct jf_s3_listparse *p = NULL;
	char code[128] = "", msg[JF_S3_MSG] = "";
	if (n && jf_s3_listparse_new(&p, NULL) == JF_OK) {
		if (XML_Parse(p->x, body, (int)(n > TEXT_MAX ? TEXT_MAX : n), XML_TRUE) ==
			    XML_STATUS_OK &&
		    p->root_error) {
			snprintf(code, sizeof(code), "%s", p->code);
			snprintf(msg, sizeof(msg), "%s", p->msg);
		}
		jf_s3_listparse_free(p);
	}
	char bq[96];
	jf_err_quote(bucket ? bucket : "", bucket ? strlen(bucket) : 0, 64, bq, sizeof(bq));
	if (!code[0]) {
		snprintf(out, cap, "%ld (%s)", status,
			 status == 404   ? "not found, and no S3 error document"
			 : status == 403 ? "forbidden, and no S3 error document"
					 : "no S3 error document");
		return;
	}
	if (!strcmp(code, "NoSuchBucket")) {
		snprintf(out, cap, "%ld %s: bucket \"%s\" does not exist", status, code, bq);
		return;
	}
	const char *m = msg[0] ? msg : default_message(code);
	snprintf(out, cap, "%ld %s%s%s", status, code, m ? ": " : "", m ? m : "");
}

/* ---- retries ------------------------------------------------------------- */

bool jf_s3_retryable(CURLcode c, long status)
{
	switch (c) {
	case CURLE_OK:
		return status >= 500 || status == 429 || status == 408 || status == 0;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_WEIRD_SERVER_REPLY:
		return true;
	default:
		return false;
	}
}

long jf_s3_backoff_ms(int attempt, long base_ms)
{
	long v = base_ms;
	for (int i = 1; i < attempt && v < 60000; i++)
		v *= 2;
	return v > 60000 ? 60000 : v;
}

/* ---- ETags, MD5, dates --------------------------------------------------- */

void jf_s3_etag_norm(const char *v, size_t n, char out[JF_S3_ETAG_MAX])
{
	while (n && (*v == ' ' || *v == '\t' || *v == '"'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '"' || v[n - 1] == '\r' ||
		     v[n - 1] == '\n'))
		n--;
	if (n >= JF_S3_ETAG_MAX)
		n = JF_S3_ETAG_MAX - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		out[i] = c >= 0x21 && c <= 0x7e ? (char)c : '?';
	}
	out[n] = '\0';
}

bool jf_s3_etag_is_md5(const char *etag)
{
	if (strlen(etag) != 32)
		return false;
	for (int i = 0; i < 32; i++)
		if (hexval(etag[i]) < 0)
			return false;
	return true;
}

bool jf_s3_etag_matches(const char *etag, const unsigned char md5[16])
{
	if (!jf_s3_etag_is_md5(etag))
		return false;
	for (int i = 0; i < 16; i++)
		if ((hexval(etag[2 * i]) << 4 | hexval(etag[2 * i + 1])) != md5[i])
			return false;
	return true;
}

enum jf_err jf_md5_init(struct jf_md5 *m)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	m->ctx = NULL;
	if (!c || EVP_DigestInit_ex(c, EVP_md5(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		return JF_ENOMEM;
	}
	m->ctx = c;
	return JF_OK;
}

void jf_md5_update(struct jf_md5 *m, const void *p, size_t n)
{
	if (m->ctx)
		EVP_DigestUpdate(m->ctx, p, n);
}

void jf_md5_final(struct jf_md5 *m, unsigned char out[16])
{
	unsigned int n = 0;
	memset(out, 0, 16);
	if (m->ctx)
		EVP_DigestFinal_ex(m->ctx, out, &n);
	jf_md5_release(m);
}

void jf_md5_release(struct jf_md5 *m)
{
	EVP_MD_CTX_free(m->ctx);
	m->ctx = NULL;
}

static bool digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

bool jf_s3_parse_time(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, se;
	if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &h) ||
	    s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))
		return false;
	const char *p = s + 19;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (strcmp(p, "Z") != 0)
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return false;
	struct tm tm = { .tm_year = y - 1900,
			 .tm_mon = mo - 1,
			 .tm_mday = d,
			 .tm_hour = h,
			 .tm_min = mi,
			 .tm_sec = se };
	time_t t = timegm(&tm);
	if (t == (time_t)-1 && !(y == 1969))
		return false;
	*out = (int64_t)t;
	return true;
}

/*
 * sync.c - the fetch phase of a sync (sync.h) and jf_sync_run.
 *
 * DESIGN.  One thread runs every request in one curl multi (writer
 * threads only write, below).  The listing is one more transfer
 * in the multi: the next page is asked for as soon as fewer than a page
 * of objects wait to be fetched, so listing and downloading overlap while
 * memory stays at about two pages of objects plus `parallel` transfers.
 * Each page is merged at once with the old manifest (streamed in the same
 * order) and every decision is written out in listing order: a line of
 * the new manifest for each object the mirror will hold, and a line of
 * fetch.list for each one to download.  A download that fails in a way
 * that is not worth a retry fails the whole sync, so the new manifest may
 * name an object before it has arrived: it is only renamed into place
 * after every download succeeded.
 *
 * A transfer gathers its body into 256 KiB chunks and hands them to the
 * writer threads (writer.h), which make partial/<hash>.part, write each
 * chunk at its offset and feed it to the object's MD5 when its ETag is
 * one: the thread that runs libcurl only receives.  The MD5 context lives
 * with the object, not the transfer, so a retry that resumes with a Range
 * continues it; a .part from an earlier run is hashed from the disk first.
 * Retries (connection failures, timeouts, 5xx, 429) wait jf_s3_backoff_ms
 * on a small list of their own, so a waiting object does not hold up the
 * queue behind it.  Every socket of the multi is quick-ACKed at the end of
 * each response's headers (s3.h: a server with Nagle on would otherwise
 * hold each small body 40 ms).
 *
 * Durability: one syncfs() before the commit, not an fsync a file; each
 * finished download starts its writeback at once (sync_file_range), so the
 * syncfs has little left (measured: 0.6 s without, 3 ms with, for 1,000 x
 * 1 MiB).  On this project's test machine (virtio disk) --fsync-each costs
 * about the same (1,000 x 1 MiB: 2.8 s against 2.7 s; 6,000 x 1 byte: 5.5 s
 * against 4.9 to 5.9 s), but it blocks the transfer thread for each file
 * and makes one journal commit a file where the disk's flush is slow.
 *
 * Keys that conflict: a file key P and a later key P/x cannot both be in
 * the mirror.  In byte order every key between P and P/x starts with P,
 * so a stack of the file keys that are prefixes of the current key finds
 * every such conflict; it is never deeper than a key is long.
 */
#include "objstore/sync_int.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PARALLEL 16
#define DEFAULT_TRIES    4
#define DEFAULT_BACKOFF  500
#define DEFAULT_CHANGED  3
#define DEFAULT_BUFFER   (256 * 1024)
#define CHUNK            (256 * 1024) /* what a writer thread writes at once */
#define ERRBODY_MAX      (64 * 1024)
#define PROGRESS_MS      200
#define POLL_MS          200

struct obj {
	char *key; /* owned, NUL-terminated */
	size_t keylen;
	int64_t size, mtime;
	char etag[JF_S3_ETAG_MAX];
	char hash[HASH_HEX];
	int tries, changed;
	int64_t not_before;
	bool want_md5;
	struct jf_md5 md5; /* over the first md5_n bytes of the .part */
	int64_t md5_n;     /* -1: no context */
	bool counted;      /* counted in resumed */
};

enum abort_why {
	AB_NONE,
	AB_DISK,    /* ENOSPC, EDQUOT */
	AB_IO,      /* another write error */
	AB_CHANGED, /* the ETag is not the listing's, or the body is longer */
	AB_RANGE,   /* a 206 for another range */
};

struct xfer {
	struct fetch *f;
	CURL *h;
	struct curl_slist *hdrs;
	bool busy;
	struct obj *o;
	int fd;
	int64_t off;          /* bytes of the .part, those still in cur included */
	struct jf_wstream ws; /* the .part's writes (writer.h) */
	char *cur;            /* the chunk being filled, NULL when none */
	size_t curn;
	long status;
	bool got_etag, got_cr, started;
	char etag[JF_S3_ETAG_MAX];
	int64_t cr_start, cr_total;
	enum abort_why ab;
	int ab_errno;
	char *eb; /* an error answer's body */
	size_t ebn;
	char errbuf[CURL_ERROR_SIZE];
};

struct lister {
	struct fetch *f;
	CURL *h;
	struct curl_slist *hdrs;
	bool busy, done;
	struct jf_s3_listparse *p;
	bool pfailed;
	struct jf_error perr;
	long status;
	char *eb;
	size_t ebn;
	char errbuf[CURL_ERROR_SIZE];
	char *token;
	int tries;
	int64_t not_before;
};

struct fetch {
	struct jf_sync *s;
	CURLM *m;
	int parallel, tries, changed_tries;
	long backoff;
	struct xfer *x;
	int active;
	struct lister l;
	struct obj **q; /* waiting, FIFO [qh, qt) */
	size_t qh, qt, qcap;
	struct obj **rq; /* waiting for a retry */
	size_t nrq, rqcap;
	struct jf_s3_socks socks; /* of every request of m */
	struct jf_wpool *wp;
	struct jf_mf_reader *old;
	struct jf_mf_writer *mf, *fl;
	char *prev; /* the last listed key */
	size_t prevlen, prevcap;
	char **stk; /* file keys that prefix the current one */
	size_t *stkl, nstk, stkcap;
	int64_t listed, done, bytes_done, bytes_total;
	int64_t last_progress;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void quote_key(const char *k, size_t n, char *out, size_t cap)
{
	jf_err_quote(k, n, 120, out, cap);
}

void jf_sync_obj_hash(const char *key, size_t keylen, int64_t size, const char *etag, int64_t mtime,
		      char out[HASH_HEX])
{
	unsigned char md[32];
	unsigned int n = 0;
	static const char hex[] = "0123456789abcdef";
	char tail[JF_S3_ETAG_MAX + 64];
	int tl = snprintf(tail, sizeof(tail), "%c%lld%c%s%c%lld", 0, (long long)size, 0,
			  etag ? etag : "", 0, (long long)mtime);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(c, key, keylen) != 1 || EVP_DigestUpdate(c, tail, (size_t)tl) != 1 ||
	    EVP_DigestFinal_ex(c, md, &n) != 1 || n != 32)
		memset(md, 0, sizeof(md));
	EVP_MD_CTX_free(c);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

/* ---- objects and the queue ----------------------------------------------- */

static void obj_free(struct obj *o)
{
	if (!o)
		return;
	jf_md5_release(&o->md5);
	free(o->key);
	free(o);
}

static bool q_push(struct fetch *f, struct obj *o)
{
	if (f->qh == f->qt)
		f->qh = f->qt = 0;
	if (f->qt == f->qcap) {
		if (f->qh > 0) {
			memmove(f->q, f->q + f->qh, (f->qt - f->qh) * sizeof(*f->q));
			f->qt -= f->qh;
			f->qh = 0;
		} else {
			size_t nc = f->qcap ? f->qcap * 2 : 1024;
			struct obj **nq = realloc(f->q, nc * sizeof(*nq));
			if (!nq)
				return false;
			f->q = nq, f->qcap = nc;
		}
	}
	f->q[f->qt++] = o;
	return true;
}

static bool rq_push(struct fetch *f, struct obj *o)
{
	if (f->nrq == f->rqcap) {
		size_t nc = f->rqcap ? f->rqcap * 2 : 16;
		struct obj **n = realloc(f->rq, nc * sizeof(*n));
		if (!n)
			return false;
		f->rq = n, f->rqcap = nc;
	}
	f->rq[f->nrq++] = o;
	return true;
}

/* the next object to start now, or NULL; *wake: when one will be ready */
static struct obj *next_ready(struct fetch *f, int64_t now, int64_t *wake)
{
	for (size_t i = 0; i < f->nrq; i++) {
		struct obj *o = f->rq[i];
		if (o->not_before <= now) {
			f->rq[i] = f->rq[--f->nrq];
			return o;
		}
		if (o->not_before < *wake)
			*wake = o->not_before;
	}
	if (f->qh < f->qt)
		return f->q[f->qh++];
	return NULL;
}

static size_t waiting(const struct fetch *f)
{
	return f->qt - f->qh + f->nrq;
}

/* ---- progress ------------------------------------------------------------ */

static void progress(struct fetch *f, bool force)
{
	int64_t now = now_ms();
	if (!force && now - f->last_progress < PROGRESS_MS)
		return;
	f->last_progress = now;
	int64_t inflight = 0;
	for (int i = 0; i < f->parallel; i++)
		if (f->x[i].busy)
			inflight += f->x[i].off;
	char buf[256];
	int n = snprintf(buf, sizeof(buf),
			 "{\"objects_listed\":%lld,\"objects_done\":%lld,\"bytes_done\":%lld,"
			 "\"bytes_total_so_far\":%lld}\n",
			 (long long)f->listed, (long long)f->done,
			 (long long)(f->bytes_done + inflight), (long long)f->bytes_total);
	struct jf_sync *s = f->s;
	int fd = openat(s->dirfd, ".progress.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	bool ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	if (ok)
		renameat(s->dirfd, ".progress.tmp", s->dirfd, "progress");
	else
		unlinkat(s->dirfd, ".progress.tmp", 0);
}

/* ---- failures ------------------------------------------------------------ */

/* why a transfer failed below HTTP, naming the endpoint */
static void curl_why(struct fetch *f, CURLcode c, const char *errbuf, char *out, size_t n)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(c);
	const char *ep = jf_s3_endpoint(f->s->s3);
	if (c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST)
		snprintf(out, n, "endpoint %s is not reachable (%s)", ep, why);
	else if (c == CURLE_OPERATION_TIMEDOUT)
		snprintf(out, n, "endpoint %s did not answer in time (%s)", ep, why);
	else
		snprintf(out, n, "endpoint %s: %s", ep, why);
}

static size_t keep_errbody(char **eb, size_t *ebn, const char *p, size_t n)
{
	size_t room = ERRBODY_MAX - *ebn;
	size_t k = n < room ? n : room;
	if (k) {
		char *nb = realloc(*eb, *ebn + k + 1);
		if (nb) {
			memcpy(nb + *ebn, p, k);
			*ebn += k;
			nb[*ebn] = '\0';
			*eb = nb;
		}
	}
	return n;
}

/* ---- the listing --------------------------------------------------------- */

static size_t list_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct lister *l = ud;
	size_t n = size * nitems;
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		const char *sp = memchr(buf, ' ', n);
		l->status = sp ? strtol(sp + 1, NULL, 10) : 0;
	} else if (n <= 2 && (buf[0] == '\r' || buf[0] == '\n')) {
		jf_s3_quickack(&l->f->socks); /* the end of the headers */
	}
	return n;
}

static size_t list_body(char *p, size_t size, size_t nitems, void *ud)
{
	struct lister *l = ud;
	size_t n = size * nitems;
	if (l->status != 200)
		return keep_errbody(&l->eb, &l->ebn, p, n);
	if (jf_s3_listparse_feed(l->p, p, n, &l->perr) != JF_OK) {
		l->pfailed = true;
		return 0;
	}
	return n;
}

static enum jf_err list_start(struct fetch *f, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	struct lister *l = &f->l;
	enum jf_err rc;
	char *url = NULL;
	jf_s3_listparse_free(l->p);
	l->p = NULL;
	free(l->eb);
	l->eb = NULL;
	l->ebn = 0;
	l->pfailed = false;
	l->status = 0;
	jf_error_clear(&l->perr);
	curl_slist_free_all(l->hdrs);
	l->hdrs = NULL;
	if ((rc = jf_s3_listparse_new(&l->p, err)) ||
	    (rc = jf_s3_list_url(s->s3, s->prefix, l->token, &url, err)))
		return rc;
	if (!l->h && !(l->h = curl_easy_init())) {
		free(url);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	rc = jf_s3_setup(s->s3, l->h, url, NULL, &l->hdrs, l->errbuf, err);
	free(url);
	if (rc)
		return rc;
	jf_s3_track_sockets(l->h, &f->socks);
	curl_easy_setopt(l->h, CURLOPT_HEADERFUNCTION, list_header);
	curl_easy_setopt(l->h, CURLOPT_HEADERDATA, l);
	curl_easy_setopt(l->h, CURLOPT_WRITEFUNCTION, list_body);
	curl_easy_setopt(l->h, CURLOPT_WRITEDATA, l);
	if (curl_multi_add_handle(f->m, l->h) != CURLM_OK)
		return jf_error_set(err, JF_ENOMEM, 0, "cannot start a listing request");
	l->busy = true;
	return JF_OK;
}

/* where a listing failure happened, for its message */
static void list_where(struct fetch *f, char *out, size_t n)
{
	struct jf_sync *s = f->s;
	char pq[96];
	jf_err_quote(s->prefix, strlen(s->prefix), 64, pq, sizeof(pq));
	snprintf(out, n, "listing bucket %s%s%s%s at %s", jf_s3_bucket(s->s3),
		 s->prefix[0] ? " (prefix \"" : "", pq, s->prefix[0] ? "\")" : "",
		 jf_s3_endpoint(s->s3));
}

static void skip_key(struct fetch *f, const char *key, size_t keylen, const char *why)
{
	struct jf_sync_result *r = f->s->r;
	char q[160];
	quote_key(key, keylen, q, sizeof(q));
	r->skipped++;
	f->done++;
	if (r->nskipped_keys < JF_SYNC_WARN_MAX)
		snprintf(r->skipped_keys[r->nskipped_keys++], sizeof(r->skipped_keys[0]), "%s", q);
	jf_sync_warn(f->s, "skipped \"%s\": %s", q, why);
}

/* does a file key already listed claim rel's directory (see the top) */
static enum jf_err conflict_check(struct fetch *f, const char *rel, size_t len, bool *conflict,
				  struct jf_error *err)
{
	*conflict = false;
	while (f->nstk) {
		size_t tl = f->stkl[f->nstk - 1];
		if (tl < len && memcmp(f->stk[f->nstk - 1], rel, tl) == 0)
			break;
		free(f->stk[--f->nstk]);
	}
	for (size_t i = 0; i < f->nstk; i++)
		if (jf_key_is_parent(f->stk[i], f->stkl[i], rel, len))
			*conflict = true;
	if (*conflict)
		return JF_OK;
	if (f->nstk == f->stkcap) {
		size_t nc = f->stkcap ? f->stkcap * 2 : 16;
		char **ns = realloc(f->stk, nc * sizeof(*ns));
		if (ns)
			f->stk = ns;
		size_t *nl = ns ? realloc(f->stkl, nc * sizeof(*nl)) : NULL;
		if (!ns || !nl)
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		f->stkl = nl, f->stkcap = nc;
	}
	if (!(f->stk[f->nstk] = malloc(len + 1)))
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	memcpy(f->stk[f->nstk], rel, len);
	f->stk[f->nstk][len] = '\0';
	f->stkl[f->nstk++] = len;
	return JF_OK;
}

/* is rel in data/ as the listing describes it */
static bool file_ok(struct jf_sync *s, const char *rel, int64_t size, int64_t mtime)
{
	struct stat st;
	return jf_tree_stat(&s->tree, rel, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == size &&
	       (int64_t)st.st_mtim.tv_sec == mtime;
}

static enum jf_err write_line(struct fetch *f, struct jf_mf_writer *w, const struct obj *o,
			      const struct jf_s3_object *so, struct jf_error *err)
{
	const char *k = o ? o->key : so->key;
	size_t kl = o ? o->keylen : so->keylen;
	if (jf_mf_write(w, k, kl, so->size, so->etag, so->mtime, err) == JF_OK)
		return JF_OK;
	int e = jf_mf_errno(w);
	if (e == ENOSPC || e == EDQUOT)
		return jf_sync_disk_full(f->s, e, "writing the new manifest", false, err);
	return JF_EIO;
}

/* One listed object: skip, keep or queue. */
static enum jf_err decide(struct fetch *f, struct jf_s3_object *so, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	struct jf_sync_result *r = s->r;
	enum jf_err rc;
	if (f->prev && jf_key_cmp(f->prev, f->prevlen, so->key, so->keylen) >= 0) {
		char a[160], b[160];
		quote_key(f->prev, f->prevlen, a, sizeof(a));
		quote_key(so->key, so->keylen, b, sizeof(b));
		return jf_error_set(err, JF_EIO, 0,
				    "endpoint %s listed \"%s\" after \"%s\": not in byte order "
				    "(jobfs-sync needs S3's sorted listing)",
				    jf_s3_endpoint(s->s3), b, a);
	}
	if (so->keylen + 1 > f->prevcap) {
		size_t nc = so->keylen + 1 < 1024 ? 1024 : so->keylen + 1;
		char *np = realloc(f->prev, nc);
		if (!np)
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		f->prev = np, f->prevcap = nc;
	}
	memcpy(f->prev, so->key, so->keylen + 1);
	f->prevlen = so->keylen;

	const char *rel, *why;
	size_t rl;
	enum jf_key_kind kind = jf_key_classify(s->prefix, so->key, so->keylen, &rel, &rl, &why);
	if (kind == JF_KEY_DIRMARK)
		return JF_OK;
	f->listed++;
	if (kind == JF_KEY_UNSAFE) {
		skip_key(f, so->key, so->keylen, why);
		return JF_OK;
	}
	bool conflict;
	if ((rc = conflict_check(f, rel, rl, &conflict, err)))
		return rc;
	if (conflict) {
		skip_key(f, so->key, so->keylen,
			 "a file of the mirror has the name of a directory it needs");
		return JF_OK;
	}
	f->bytes_total += so->size;
	r->objects++;
	r->bytes += so->size;
	enum jf_mf_verdict v = s->merge_old ? jf_mf_merge(f->old, so->key, so->keylen, so->size,
							  so->etag, so->mtime, NULL, NULL)
					    : JF_MF_NEW;
	if (v == JF_MF_SAME && file_ok(s, rel, so->size, so->mtime)) {
		if ((rc = write_line(f, f->mf, NULL, so, err)))
			return rc;
		r->kept++;
		f->done++;
		f->bytes_done += so->size;
		return JF_OK;
	}
	struct obj *o = calloc(1, sizeof(*o));
	if (!o)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	o->key = so->key; /* taken from the page */
	so->key = NULL;
	o->keylen = so->keylen;
	o->size = so->size;
	o->mtime = so->mtime;
	memcpy(o->etag, so->etag, sizeof(o->etag));
	o->want_md5 = jf_s3_etag_is_md5(o->etag);
	o->md5_n = -1;
	jf_sync_obj_hash(o->key, o->keylen, o->size, o->etag, o->mtime, o->hash);
	if ((rc = write_line(f, f->mf, o, so, err)) || (rc = write_line(f, f->fl, o, so, err)) ||
	    !q_push(f, o)) {
		obj_free(o);
		return rc ? rc : jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	return JF_OK;
}

static enum jf_err list_done(struct fetch *f, CURLcode c, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	struct lister *l = &f->l;
	char where[JF_ERRMSG_MAX], why[JF_ERRMSG_MAX];
	enum jf_err rc = JF_OK;
	curl_multi_remove_handle(f->m, l->h);
	l->busy = false;
	list_where(f, where, sizeof(where));
	if (l->pfailed)
		return jf_error_set(err, JF_EIO, 0, "%s: %s", where, l->perr.msg);
	if (c != CURLE_OK || jf_s3_retryable(CURLE_OK, l->status)) {
		if (c != CURLE_OK)
			curl_why(f, c, l->errbuf, why, sizeof(why));
		else
			jf_s3_error_message(l->status, l->eb, l->ebn, jf_s3_bucket(s->s3), why,
					    sizeof(why));
		if (!jf_s3_retryable(c, l->status) || l->tries + 1 >= f->tries)
			return jf_error_set(err, JF_EIO, 0, "%s: %s (tried %d times)", where, why,
					    l->tries + 1);
		l->tries++;
		l->not_before = now_ms() + jf_s3_backoff_ms(l->tries, f->backoff);
		return JF_OK;
	}
	if (l->status != 200) {
		jf_s3_error_message(l->status, l->eb, l->ebn, jf_s3_bucket(s->s3), why,
				    sizeof(why));
		return jf_error_set(err, l->status == 404 ? JF_ENOENT : JF_EACCES, 0, "%s: %s",
				    where, why);
	}
	struct jf_s3_page pg;
	struct jf_error e2;
	jf_error_clear(&e2);
	if (jf_s3_listparse_end(l->p, &pg, &e2))
		return jf_error_set(err, JF_EIO, 0, "%s: %s", where, e2.msg);
	s->r->listing_pages++;
	l->tries = 0;
	for (size_t i = 0; i < pg.n && !rc; i++)
		rc = decide(f, &pg.v[i], err);
	if (!rc && pg.truncated) {
		free(l->token);
		l->token = pg.next_token;
		pg.next_token = NULL;
	} else {
		l->done = true;
	}
	jf_s3_page_free(&pg);
	return rc;
}

/* ---- transfers ----------------------------------------------------------- */

static size_t x_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nitems;
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		const char *sp = memchr(buf, ' ', n);
		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		x->got_etag = x->got_cr = false;
		return n;
	}
	if (n <= 2 && (buf[0] == '\r' || buf[0] == '\n')) {
		jf_s3_quickack(&x->f->socks); /* the end of the headers */
		return n;
	}
	if (n > 5 && strncasecmp(buf, "etag:", 5) == 0) {
		jf_s3_etag_norm(buf + 5, n - 5, x->etag);
		x->got_etag = true;
	} else if (n > 14 && strncasecmp(buf, "content-range:", 14) == 0) {
		char tmp[128];
		size_t k = n - 14 < sizeof(tmp) - 1 ? n - 14 : sizeof(tmp) - 1;
		memcpy(tmp, buf + 14, k);
		tmp[k] = '\0';
		long long a, b, t;
		if (sscanf(tmp, " bytes %lld-%lld/%lld", &a, &b, &t) == 3) {
			x->cr_start = a, x->cr_total = t;
			x->got_cr = true;
		}
	}
	return n;
}

static bool md5_restart(struct obj *o)
{
	jf_md5_release(&o->md5);
	o->md5_n = -1;
	if (!o->want_md5)
		return true;
	if (jf_md5_init(&o->md5) != JF_OK)
		return false;
	o->md5_n = 0;
	return true;
}

static size_t x_body(char *p, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	struct obj *o = x->o;
	size_t n = size * nitems;
	if (x->status != 200 && x->status != 206)
		return keep_errbody(&x->eb, &x->ebn, p, n);
	if (!x->started) {
		x->started = true;
		if (x->got_etag && o->etag[0] && strcmp(x->etag, o->etag) != 0) {
			x->ab = AB_CHANGED;
			return 0;
		}
		if (x->status == 206 &&
		    (!x->got_cr || x->cr_start != x->off || x->cr_total != o->size)) {
			x->ab = AB_RANGE;
			return 0;
		}
		if (x->status == 200 && x->off > 0) {
			/* the range was not honoured: this is the whole body (nothing
			 * of this transfer is queued yet) */
			if (ftruncate(x->fd, 0) != 0) {
				x->ab = AB_IO, x->ab_errno = errno;
				return 0;
			}
			x->off = 0;
			if (!md5_restart(o)) {
				x->ab = AB_IO, x->ab_errno = ENOMEM;
				return 0;
			}
			jf_wpool_open(x->f->wp, &x->ws, x->fd, 0, o->md5_n >= 0 ? &o->md5 : NULL,
				      &o->md5_n);
		}
	}
	if ((int64_t)n > o->size - x->off) {
		x->ab = AB_CHANGED;
		return 0;
	}
	struct jf_wpool *wp = x->f->wp;
	size_t chunk = jf_wpool_chunk(wp), done = 0;
	while (done < n) {
		if (!x->cur) {
			/* a write error of an earlier chunk ends the transfer */
			int e = jf_wpool_error(wp, &x->ws);
			if (e) {
				x->ab = e == ENOSPC || e == EDQUOT ? AB_DISK : AB_IO;
				x->ab_errno = e;
				return 0;
			}
			x->cur = jf_wpool_buf(wp);
			x->curn = 0;
		}
		size_t k = n - done < chunk - x->curn ? n - done : chunk - x->curn;
		memcpy(x->cur + x->curn, p + done, k);
		x->curn += k;
		done += k;
		if (x->curn == chunk) {
			jf_wpool_submit(wp, &x->ws, x->cur, x->curn);
			x->cur = NULL;
		}
	}
	x->off += (int64_t)n;
	x->f->s->r->fetched_bytes += (int64_t)n;
	return n;
}

/* Every byte x received is written (and hashed): its errno, 0 if none.
 * Then x->fd is the .part's, made or not (-1). */
static int x_drain(struct xfer *x)
{
	if (!x->o)
		return 0;
	if (x->cur) {
		jf_wpool_submit(x->f->wp, &x->ws, x->cur, x->curn);
		x->cur = NULL;
	}
	int e = jf_wpool_wait(x->f->wp, &x->ws);
	x->fd = x->ws.fd;
	return e;
}

/* hash the first n bytes of fd into o's MD5 */
static bool md5_from_disk(struct obj *o, int fd, int64_t n)
{
	if (!md5_restart(o))
		return false;
	if (o->md5_n < 0)
		return true;
	char *buf = malloc(1 << 20);
	if (!buf)
		return false;
	int64_t at = 0;
	while (at < n) {
		size_t want = n - at > (1 << 20) ? (1 << 20) : (size_t)(n - at);
		ssize_t k = pread(fd, buf, want, at);
		if (k <= 0) {
			free(buf);
			return false;
		}
		jf_md5_update(&o->md5, buf, (size_t)k);
		at += k;
	}
	o->md5_n = n;
	free(buf);
	return true;
}

static enum jf_err x_start(struct fetch *f, struct xfer *x, struct obj *o, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	enum jf_err rc;
	char part[HASH_HEX + 8], q[160];
	quote_key(o->key, o->keylen, q, sizeof(q));
	snprintf(part, sizeof(part), "%s.part", o->hash);
	/* a .part there (of this very version: its name says so) is
	 * continued, and opened here; a new one is made by the writer thread
	 * with the first chunk (see writer.h).  A whole one was made 0444: a
	 * sync that is not root could not open it to write. */
	struct stat st = { .st_size = 0 };
	x->fd = -1;
	if (fstatat(s->partfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISREG(st.st_mode) && !(st.st_mode & S_IWUSR))
			fchmodat(s->partfd, part, 0644, 0);
		x->fd = openat(s->partfd, part, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (x->fd < 0 || fstat(x->fd, &st) != 0)
			return jf_error_set(err, JF_EIO, 0,
					    "cannot open %s/partial/%s for \"%s\": %s", s->dir,
					    part, q, strerror(errno));
	} else if (errno != ENOENT) {
		return jf_error_set(err, JF_EIO, 0, "cannot look at %s/partial/%s for \"%s\": %s",
				    s->dir, part, q, strerror(errno));
	}
	int64_t off = st.st_size;
	if (off > o->size)
		off = 0;
	if (off == o->size && off > 0)
		off--; /* whole: ask for its last byte, to check the ETag again */
	if (x->fd >= 0 && off != st.st_size && ftruncate(x->fd, off) != 0)
		return jf_error_set(err, JF_EIO, 0, "cannot truncate %s/partial/%s: %s", s->dir,
				    part, strerror(errno));
	if (off > 0 && !o->counted) {
		o->counted = true;
		s->r->resumed++;
	}
	if (o->want_md5 && o->md5_n != off && !md5_from_disk(o, x->fd, off))
		return jf_error_set(err, JF_EIO, 0, "cannot read %s/partial/%s: %s", s->dir, part,
				    strerror(errno ? errno : EIO));
	x->o = o;
	x->off = off;
	x->cur = NULL;
	x->curn = 0;
	if (x->fd >= 0)
		jf_wpool_open(f->wp, &x->ws, x->fd, off, o->md5_n >= 0 ? &o->md5 : NULL, &o->md5_n);
	else
		jf_wpool_open_at(f->wp, &x->ws, s->partfd, part, o->md5_n >= 0 ? &o->md5 : NULL,
				 &o->md5_n);
	x->status = 0;
	x->got_etag = x->got_cr = x->started = false;
	x->ab = AB_NONE;
	x->ab_errno = 0;
	free(x->eb);
	x->eb = NULL;
	x->ebn = 0;
	char range[64], ifm[JF_S3_ETAG_MAX + 16];
	const char *extra[3] = { NULL, NULL, NULL };
	size_t ne = 0;
	if (off > 0) {
		snprintf(range, sizeof(range), "Range: bytes=%lld-", (long long)off);
		extra[ne++] = range;
	}
	if (o->etag[0]) {
		snprintf(ifm, sizeof(ifm), "If-Match: \"%s\"", o->etag);
		extra[ne++] = ifm;
	}
	char *url = NULL;
	if ((rc = jf_s3_object_url(s->s3, o->key, o->keylen, &url, err)))
		return rc;
	if (!x->h && !(x->h = curl_easy_init())) {
		free(url);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
	rc = jf_s3_setup(s->s3, x->h, url, extra, &x->hdrs, x->errbuf, err);
	free(url);
	if (rc)
		return rc;
	jf_s3_track_sockets(x->h, &f->socks);
	curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, x_header);
	curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, x_body);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->h, CURLOPT_BUFFERSIZE,
			 s->o->buffer_size > 0 ? s->o->buffer_size : (long)DEFAULT_BUFFER);
	if (curl_multi_add_handle(f->m, x->h) != CURLM_OK)
		return jf_error_set(err, JF_ENOMEM, 0, "cannot start a transfer");
	x->busy = true;
	f->active++;
	return JF_OK;
}

/* end x's use of its .part (kept for a resume unless drop) */
static void x_release(struct xfer *x, bool drop)
{
	x_drain(x); /* no write of it may be left when its fd closes */
	if (x->fd >= 0) {
		close(x->fd);
		x->fd = -1;
		x->ws.fd = -1;
	}
	if (drop && x->o) {
		char part[HASH_HEX + 8];
		snprintf(part, sizeof(part), "%s.part", x->o->hash);
		unlinkat(x->f->s->partfd, part, 0);
		jf_md5_release(&x->o->md5);
		x->o->md5_n = -1;
	}
	x->o = NULL;
}

/* try o again later (a retryable failure: what says why) */
static enum jf_err retry(struct fetch *f, struct obj *o, const char *why, struct jf_error *err)
{
	char q[160];
	if (++o->tries >= f->tries) {
		quote_key(o->key, o->keylen, q, sizeof(q));
		return jf_error_set(err, JF_EIO, 0, "fetching \"%s\": %s (tried %d times)", q, why,
				    o->tries);
	}
	o->not_before = now_ms() + jf_s3_backoff_ms(o->tries, f->backoff);
	if (!rq_push(f, o))
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	return JF_OK;
}

/* o is not what the listing said any more: fetch it again from scratch */
static enum jf_err changed(struct fetch *f, struct obj *o, const char *now_etag,
			   struct jf_error *err)
{
	char q[160];
	if (++o->changed >= f->changed_tries) {
		quote_key(o->key, o->keylen, q, sizeof(q));
		return jf_error_set(err, JF_EIO, 0,
				    "object \"%s\" changed during the sync (listed with ETag %s "
				    "and %lld bytes, now %s%s; tried %d times): sync again",
				    q, o->etag[0] ? o->etag : "-", (long long)o->size,
				    now_etag ? "served with ETag " : "gone or replaced",
				    now_etag ? now_etag : "", o->changed);
	}
	o->not_before = now_ms() + jf_s3_backoff_ms(o->changed, f->backoff);
	if (!rq_push(f, o))
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	return JF_OK;
}

/* x's body is whole: check it, and make the .part what data/ will hold
 * (0444, the object's mtime); the commit renames it into place */
static enum jf_err x_complete(struct fetch *f, struct xfer *x, bool *again, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	struct obj *o = x->o;
	char q[160], part[HASH_HEX + 8];
	*again = false;
	quote_key(o->key, o->keylen, q, sizeof(q));
	if (x->got_etag && o->etag[0] && strcmp(x->etag, o->etag) != 0) {
		*again = true;
		return JF_OK;
	}
	if (o->md5_n >= 0) {
		unsigned char md[16];
		jf_md5_final(&o->md5, md);
		o->md5_n = -1;
		if (!jf_s3_etag_matches(o->etag, md)) {
			x_release(x, true);
			return retry(f, o, "its bytes do not match its ETag (MD5)", err);
		}
	}
	struct timespec ts[2] = { { .tv_sec = o->mtime, .tv_nsec = 0 },
				  { .tv_sec = o->mtime, .tv_nsec = 0 } };
	snprintf(part, sizeof(part), "%s.part", o->hash);
	if (x->fd < 0) /* an empty object: no chunk made its file */
		x->fd = openat(s->partfd, part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (x->fd < 0) {
		int e = errno;
		if (e == ENOSPC || e == EDQUOT) {
			char what[256];
			snprintf(what, sizeof(what), "fetching \"%s\"", q);
			return jf_sync_disk_full(s, e, what, false, err);
		}
		return jf_error_set(err, JF_EIO, 0, "cannot create %s/partial/%s: %s", s->dir, part,
				    strerror(e));
	}
	/* start its writeback now: the syncfs before the commit then has
	 * little left to wait for */
	if (!s->o->fsync_each)
		jf_wpool_writeback(f->wp, x->fd);
	if (fchmod(x->fd, 0444) != 0 || futimens(x->fd, ts) != 0 ||
	    (s->o->fsync_each && fsync(x->fd) != 0) || close(x->fd) != 0) {
		int e = errno;
		x->fd = -1;
		if (e == ENOSPC || e == EDQUOT) {
			char what[256];
			snprintf(what, sizeof(what), "fetching \"%s\"", q);
			return jf_sync_disk_full(s, e, what, false, err);
		}
		return jf_error_set(err, JF_EIO, 0, "cannot write %s/partial/%s: %s", s->dir, part,
				    strerror(e));
	}
	x->fd = -1;
	x->ws.fd = -1;
	s->r->fetched++;
	f->done++;
	f->bytes_done += o->size;
	x->o = NULL;
	obj_free(o);
	return JF_OK;
}

static enum jf_err x_done(struct fetch *f, struct xfer *x, CURLcode c, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	struct obj *o = x->o;
	char why[JF_ERRMSG_MAX], q[160];
	curl_multi_remove_handle(f->m, x->h);
	x->busy = false;
	f->active--;
	quote_key(o->key, o->keylen, q, sizeof(q));
	int we = x_drain(x);
	if (we) {
		x->ab = we == ENOSPC || we == EDQUOT ? AB_DISK : AB_IO;
		x->ab_errno = we;
		c = CURLE_WRITE_ERROR;
	}
	if (c == CURLE_WRITE_ERROR && x->ab != AB_NONE) {
		switch (x->ab) {
		case AB_DISK: {
			char what[256];
			snprintf(what, sizeof(what), "fetching \"%s\"", q);
			x_release(x, true);
			return jf_sync_disk_full(s, x->ab_errno, what, false, err);
		}
		case AB_CHANGED: {
			char now[JF_S3_ETAG_MAX];
			snprintf(now, sizeof(now), "%s", x->got_etag ? x->etag : "");
			x_release(x, true);
			return changed(f, o, now[0] ? now : NULL, err);
		}
		case AB_RANGE:
			x_release(x, true);
			return retry(f, o, "the endpoint answered another range than asked", err);
		default:
			x_release(x, false);
			return jf_error_set(err, JF_EIO, 0, "cannot write %s/partial/%s.part: %s",
					    s->dir, o->hash, strerror(x->ab_errno));
		}
	}
	if (c != CURLE_OK) {
		curl_why(f, c, x->errbuf, why, sizeof(why));
		x_release(x, false);
		if (!jf_s3_retryable(c, 0))
			return jf_error_set(err, JF_EIO, 0, "fetching \"%s\": %s", q, why);
		return retry(f, o, why, err);
	}
	if (x->status == 200 || x->status == 206) {
		if (x->off != o->size) {
			snprintf(why, sizeof(why), "the endpoint sent %lld of %lld bytes",
				 (long long)x->off, (long long)o->size);
			x_release(x, false);
			return retry(f, o, why, err);
		}
		bool again;
		enum jf_err rc = x_complete(f, x, &again, err);
		if (rc || !again)
			return rc;
		char now[JF_S3_ETAG_MAX];
		snprintf(now, sizeof(now), "%s", x->etag);
		x_release(x, true);
		return changed(f, o, now, err);
	}
	if (x->status == 412 || x->status == 404) {
		x_release(x, true);
		return changed(f, o, NULL, err);
	}
	if (x->status == 416) {
		x_release(x, true);
		return retry(f, o, "the endpoint refused the range (416)", err);
	}
	jf_s3_error_message(x->status, x->eb, x->ebn, jf_s3_bucket(s->s3), why, sizeof(why));
	x_release(x, false);
	if (jf_s3_retryable(CURLE_OK, x->status))
		return retry(f, o, why, err);
	return jf_error_set(err, x->status == 403 ? JF_EACCES : JF_EIO, 0,
			    "fetching \"%s\" from bucket %s at %s: %s", q, jf_s3_bucket(s->s3),
			    jf_s3_endpoint(s->s3), why);
}

/* ---- the loop ------------------------------------------------------------ */

static enum jf_err fetch_loop(struct fetch *f, struct jf_error *err)
{
	struct jf_sync *s = f->s;
	enum jf_err rc;
	for (;;) {
		if (s->o->stop && *s->o->stop)
			return jf_error_set(err, JF_EBUSY, 0,
					    "stopped by a signal; what was downloaded is kept "
					    "for the next sync");
		int64_t now = now_ms(), wake = now + POLL_MS;
		struct lister *l = &f->l;
		if (!l->busy && !l->done && waiting(f) < JF_S3_PAGE_KEYS) {
			if (now >= l->not_before) {
				if ((rc = list_start(f, err)))
					return rc;
			} else if (l->not_before < wake) {
				wake = l->not_before;
			}
		}
		while (f->active < f->parallel) {
			struct obj *o = next_ready(f, now, &wake);
			if (!o)
				break;
			struct xfer *x = NULL;
			for (int i = 0; i < f->parallel && !x; i++)
				if (!f->x[i].busy)
					x = &f->x[i];
			if ((rc = x_start(f, x, o, err))) {
				x_release(x, false);
				obj_free(o);
				return rc;
			}
		}
		if (l->done && !l->busy && f->active == 0 && waiting(f) == 0)
			return JF_OK;
		int running = 0;
		CURLMcode mc = curl_multi_perform(f->m, &running);
		if (mc != CURLM_OK)
			return jf_error_set(err, JF_EIO, 0, "libcurl: %s", curl_multi_strerror(mc));
		CURLMsg *msg;
		int left;
		bool ended = false;
		while ((msg = curl_multi_info_read(f->m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			ended = true;
			CURL *h = msg->easy_handle;
			CURLcode c = msg->data.result; /* msg dies with remove_handle */
			if (h == l->h) {
				rc = list_done(f, c, err);
			} else {
				struct xfer *x = NULL;
				curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&x);
				struct obj *o = x->o;
				rc = x_done(f, x, c, err);
				if (rc && o && x->o == NULL) {
					/* o left the transfer and no queue took it */
					bool queued = false;
					for (size_t i = 0; i < f->nrq && !queued; i++)
						queued = f->rq[i] == o;
					if (!queued)
						obj_free(o);
				}
			}
			if (rc)
				return rc;
		}
		progress(f, false);
		now = now_ms();
		int wait = wake > now ? (int)(wake - now) : 0;
		if (wait > POLL_MS)
			wait = POLL_MS;
		/* a transfer that ended may have made room for the next one */
		if (!ended && (running || wait > 0))
			curl_multi_poll(f->m, NULL, 0, wait, NULL);
	}
}

static void fetch_free(struct fetch *f)
{
	for (int i = 0; f->x && i < f->parallel; i++) {
		struct xfer *x = &f->x[i];
		if (x->busy)
			curl_multi_remove_handle(f->m, x->h);
		struct obj *o = x->o;
		x_release(x, false);
		obj_free(o);
		if (x->h)
			curl_easy_cleanup(x->h);
		curl_slist_free_all(x->hdrs);
		free(x->eb);
	}
	free(f->x);
	struct lister *l = &f->l;
	if (l->busy)
		curl_multi_remove_handle(f->m, l->h);
	if (l->h)
		curl_easy_cleanup(l->h);
	curl_slist_free_all(l->hdrs);
	jf_s3_listparse_free(l->p);
	free(l->eb);
	free(l->token);
	for (size_t i = f->qh; i < f->qt; i++)
		obj_free(f->q[i]);
	free(f->q);
	for (size_t i = 0; i < f->nrq; i++)
		obj_free(f->rq[i]);
	free(f->rq);
	if (f->m)
		curl_multi_cleanup(f->m);
	jf_wpool_free(f->wp);
	jf_mf_close(f->old);
	jf_mf_abandon(f->mf);
	jf_mf_abandon(f->fl);
	free(f->prev);
	for (size_t i = 0; i < f->nstk; i++)
		free(f->stk[i]);
	free(f->stk);
	free(f->stkl);
}

/* close the writers of the fetch phase: a full disk shows here too */
static enum jf_err finish_writers(struct fetch *f, struct jf_error *err)
{
	int e1 = 0, e2 = 0;
	struct jf_error x;
	jf_mf_finish(f->mf, false, &e1, &x);
	jf_mf_finish(f->fl, false, &e2, &x);
	f->mf = f->fl = NULL;
	int e = e1 ? e1 : e2;
	if (!e)
		return JF_OK;
	if (e == ENOSPC || e == EDQUOT)
		return jf_sync_disk_full(f->s, e, "writing the new manifest", false, err);
	return jf_error_set(err, JF_EIO, 0, "cannot write %s/partial/%s: %s", f->s->dir, NEW_MF,
			    strerror(e));
}

static enum jf_err fetch_phase(struct jf_sync *s, struct jf_error *err)
{
	const struct jf_sync_opts *o = s->o;
	struct fetch f = { .s = s };
	enum jf_err rc;
	char path[PATH_MAX + 32];
	f.parallel = o->parallel > 0 ? o->parallel : DEFAULT_PARALLEL;
	f.tries = o->tries > 0 ? o->tries : DEFAULT_TRIES;
	f.changed_tries = o->changed_tries > 0 ? o->changed_tries : DEFAULT_CHANGED;
	f.backoff = o->backoff_ms > 0 ? o->backoff_ms : DEFAULT_BACKOFF;
	if (!(f.x = calloc((size_t)f.parallel, sizeof(*f.x))) || !(f.m = curl_multi_init())) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < f.parallel; i++)
		f.x[i].f = &f, f.x[i].fd = -1;
	int nw = o->writers;
	if (nw == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		nw = cpus < 2 ? 0 : cpus > 4 ? 4 : (int)cpus;
	}
	if ((rc = jf_wpool_new(nw < 0 ? 0 : nw, CHUNK, 4 * f.parallel + 2, &f.wp, err)))
		goto out;
	f.l.f = &f;
	curl_multi_setopt(f.m, CURLMOPT_MAXCONNECTS, (long)f.parallel + 2);
	snprintf(path, sizeof(path), "%s/manifest", s->dir);
	if ((rc = jf_mf_open(path, &f.old, err)))
		goto out;
	s->merge_old = jf_mf_has_header(f.old) && strcmp(jf_mf_prefix(f.old), s->prefix) == 0;
	if (jf_mf_damaged(f.old))
		jf_sync_warn(s, "%s is damaged at line %d: what follows is fetched again", path,
			     jf_mf_damaged(f.old));
	snprintf(path, sizeof(path), "%s/partial/%s", s->dir, NEW_MF);
	if ((rc = jf_mf_create(path, jf_s3_endpoint(s->s3), jf_s3_bucket(s->s3), s->prefix, &f.mf,
			       err)))
		goto out;
	snprintf(path, sizeof(path), "%s/partial/%s", s->dir, FETCHLIST);
	if ((rc = jf_mf_create(path, jf_s3_endpoint(s->s3), jf_s3_bucket(s->s3), s->prefix, &f.fl,
			       err)))
		goto out;
	if ((rc = fetch_loop(&f, err)))
		goto out;
	progress(&f, true);
	rc = finish_writers(&f, err);
out:
	if (rc && f.x)
		progress(&f, true);
	fetch_free(&f);
	return rc;
}

/* ---- the whole sync ------------------------------------------------------ */

static enum jf_err open_dirs(struct jf_sync *s, struct jf_error *err)
{
	s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0)
		return jf_error_set(err, JF_EIO, 0, "cannot open %s: %s", s->dir, strerror(errno));
	const char *subs[] = { "data", "partial" };
	int *fds[] = { &s->datafd, &s->partfd };
	for (int i = 0; i < 2; i++) {
		if (mkdirat(s->dirfd, subs[i], 0755) != 0 && errno != EEXIST) {
			int e = errno;
			if (e == ENOSPC || e == EDQUOT)
				return jf_sync_disk_full(s, e, "making the cache's directories",
							 false, err);
			return jf_error_set(err, JF_EIO, 0, "cannot make %s/%s: %s", s->dir,
					    subs[i], strerror(e));
		}
		*fds[i] =
			openat(s->dirfd, subs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (*fds[i] < 0)
			return jf_error_set(err, JF_EIO, 0,
					    "cannot open %s/%s (a directory, not a symlink): %s",
					    s->dir, subs[i], strerror(errno));
	}
	jf_tree_init(&s->tree, s->datafd);
	return JF_OK;
}

static void summary(struct jf_sync *s)
{
	struct jf_sync_result *r = s->r;
	char pq[96], where[256];
	jf_err_quote(s->prefix, strlen(s->prefix), 64, pq, sizeof(pq));
	if (s->prefix[0])
		snprintf(where, sizeof(where), "bucket %s, prefix \"%s\"", jf_s3_bucket(s->s3), pq);
	else
		snprintf(where, sizeof(where), "bucket %s", jf_s3_bucket(s->s3));
	if (r->objects == 0) {
		snprintf(r->message, sizeof(r->message),
			 "no objects in bucket %s%s%s%s: the mirror is empty (removed %lld, "
			 "skipped %lld)",
			 jf_s3_bucket(s->s3), s->prefix[0] ? " under prefix \"" : "", pq,
			 s->prefix[0] ? "\"" : "", (long long)r->removed, (long long)r->skipped);
		return;
	}
	snprintf(r->message, sizeof(r->message),
		 "synced %lld objects (%lld bytes) of %s: fetched %lld (%lld bytes received), "
		 "kept %lld, removed %lld, skipped %lld",
		 (long long)r->objects, (long long)r->bytes, where, (long long)r->fetched,
		 (long long)r->fetched_bytes, (long long)r->kept, (long long)r->removed,
		 (long long)r->skipped);
}

enum jf_err jf_sync_run(const struct jf_sync_opts *o, struct jf_sync_result *r,
			struct jf_error *err)
{
	struct jf_sync s = { .o = o, .r = r, .dirfd = -1, .datafd = -1, .partfd = -1 };
	struct jf_error e;
	enum jf_err rc;
	memset(r, 0, sizeof(*r));
	jf_error_clear(&e);
	jf_tree_init(&s.tree, -1);
	s.t0_ms = now_ms();
	if (snprintf(s.dir, sizeof(s.dir), "%s", o->dir) >= (int)sizeof(s.dir) - 64) {
		rc = jf_error_set(&e, JF_EINVAL, 0, "cache directory path too long");
		goto out;
	}
	if ((rc = jf_key_prefix_norm(o->prefix, s.prefix, sizeof(s.prefix), &e)) ||
	    (rc = jf_s3_new(&o->s3, &s.s3, &e)) || (rc = open_dirs(&s, &e)))
		goto out;
	unlinkat(s.partfd, NEW_MF, 0);
	unlinkat(s.partfd, FETCHLIST, 0);
	if ((rc = fetch_phase(&s, &e)))
		goto out;
	rc = jf_sync_commit(&s, &e);
out:
	if (rc && s.partfd >= 0)
		jf_sync_clean_partial(&s, s.full);
	r->ok = rc == JF_OK;
	r->seconds = (double)(now_ms() - s.t0_ms) / 1000.0;
	if (rc)
		snprintf(r->message, sizeof(r->message), "%s", e.msg);
	else if (s.s3)
		summary(&s);
	jf_tree_close(&s.tree);
	if (s.partfd >= 0)
		close(s.partfd);
	if (s.datafd >= 0)
		close(s.datafd);
	if (s.dirfd >= 0)
		close(s.dirfd);
	jf_s3_free(s.s3);
	if (err && rc)
		*err = e;
	return rc;
}

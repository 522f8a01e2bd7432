/*
 * manifest.c - the mirror's object list and the merge (manifest.h).
 *
 * DESIGN.  Plain stdio: getline() for reading (one line in memory), a
 * 256 KiB buffer for writing.  A writer keeps its first error and reports
 * it from jf_mf_finish, so a caller writes many lines and checks once; a
 * full disk (ENOSPC, EDQUOT) comes back with its errno so that sync.c can
 * say so.
 */
#include "objstore/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objstore/keys.h"

struct jf_mf_reader {
	FILE *f;
	char *line;
	size_t cap;
	int lineno;
	int damaged;
	bool header, have;
	char endpoint[JF_S3_ENDPOINT], bucket[JF_S3_BUCKET], prefix[JF_KEY_PREFIX_MAX + 1];
	struct jf_mf_entry cur;
	char *prev; /* the last key, for the order check */
	size_t prevlen, prevcap;
};

struct jf_mf_writer {
	FILE *f;
	char *buf;
	int err; /* the first errno */
};

/* ---- reading ------------------------------------------------------------- */

static bool parse_i64(const char *s, size_t n, int64_t *out)
{
	bool neg = n && s[0] == '-';
	if (neg)
		s++, n--;
	if (n == 0 || n > 18)
		return false;
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = neg ? -v : v;
	return true;
}

/* split line (n bytes, no newline) at its TABs into exactly max fields;
 * the number of fields there are (max when it is right) */
static size_t split(char *line, size_t n, char **f, size_t *fl, size_t max)
{
	size_t k = 0, start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && line[i] != '\t')
			continue;
		if (k == max)
			return max + 1;
		f[k] = line + start;
		fl[k] = i - start;
		k++;
		start = i + 1;
	}
	return k;
}

static bool read_header(struct jf_mf_reader *r)
{
	ssize_t n = getline(&r->line, &r->cap, r->f);
	if (n <= 0)
		return true; /* empty: no header, no entries */
	r->lineno = 1;
	if (r->line[n - 1] == '\n')
		r->line[--n] = '\0';
	char *f[4];
	size_t fl[4];
	if (split(r->line, (size_t)n, f, fl, 4) != 4 || fl[0] != strlen(JF_MF_MAGIC) ||
	    memcmp(f[0], JF_MF_MAGIC, fl[0]) != 0 || fl[1] >= sizeof(r->endpoint) ||
	    fl[2] >= sizeof(r->bucket) || fl[3] >= sizeof(r->prefix)) {
		r->damaged = 1;
		return false;
	}
	memcpy(r->endpoint, f[1], fl[1]);
	memcpy(r->bucket, f[2], fl[2]);
	memcpy(r->prefix, f[3], fl[3]);
	r->header = true;
	return true;
}

/* read the next entry into r->cur; r->have = false at the end */
static void advance(struct jf_mf_reader *r)
{
	r->have = false;
	if (!r->f || r->damaged)
		return;
	ssize_t n = getline(&r->line, &r->cap, r->f);
	if (n <= 0)
		return;
	r->lineno++;
	if (r->line[n - 1] == '\n')
		r->line[--n] = '\0';
	char *f[4];
	size_t fl[4];
	struct jf_mf_entry e = { 0 };
	if (split(r->line, (size_t)n, f, fl, 4) != 4 || fl[0] == 0 ||
	    !parse_i64(f[1], fl[1], &e.size) || e.size < 0 || fl[2] >= JF_S3_ETAG_MAX ||
	    fl[2] == 0 || !parse_i64(f[3], fl[3], &e.mtime))
		goto bad;
	f[0][fl[0]] = '\0';
	e.key = f[0];
	e.keylen = fl[0];
	if (!(fl[2] == 1 && f[2][0] == '-'))
		memcpy(e.etag, f[2], fl[2]);
	if (r->prev && jf_key_cmp(r->prev, r->prevlen, e.key, e.keylen) >= 0)
		goto bad;
	if (e.keylen + 1 > r->prevcap) {
		size_t nc = e.keylen + 1 < 256 ? 256 : e.keylen + 1;
		char *np = realloc(r->prev, nc);
		if (!np)
			goto bad;
		r->prev = np, r->prevcap = nc;
	}
	memcpy(r->prev, e.key, e.keylen + 1);
	r->prevlen = e.keylen;
	r->cur = e;
	r->have = true;
	return;
bad:
	r->damaged = r->lineno;
}

static enum jf_err open_stream(FILE *f, struct jf_mf_reader **out, struct jf_error *err)
{
	struct jf_mf_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		if (f)
			fclose(f);
		return jf_error_set(err, JF_ENOMEM, 0, "manifest: out of memory");
	}
	r->f = f;
	if (f && read_header(r))
		advance(r);
	*out = r;
	return JF_OK;
}

enum jf_err jf_mf_open(const char *path, struct jf_mf_reader **out, struct jf_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "re");
	if (!f && errno != ENOENT)
		return jf_error_set(err, JF_EIO, 0, "cannot read %s: %s", path, strerror(errno));
	return open_stream(f, out, err);
}

enum jf_err jf_mf_open_mem(const char *text, size_t n, struct jf_mf_reader **out,
			   struct jf_error *err)
{
	*out = NULL;
	FILE *f = n ? fmemopen((void *)text, n, "r") : NULL;
	if (n && !f)
		return jf_error_set(err, JF_ENOMEM, 0, "manifest: out of memory");
	return open_stream(f, out, err);
}

void jf_mf_close(struct jf_mf_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	free(r->line);
	free(r->prev);
	free(r);
}

const struct jf_mf_entry *jf_mf_peek(struct jf_mf_reader *r)
{
	return r->have ? &r->cur : NULL;
}

void jf_mf_next(struct jf_mf_reader *r)
{
	advance(r);
}

const char *jf_mf_endpoint(const struct jf_mf_reader *r)
{
	return r->endpoint;
}

const char *jf_mf_bucket(const struct jf_mf_reader *r)
{
	return r->bucket;
}

const char *jf_mf_prefix(const struct jf_mf_reader *r)
{
	return r->prefix;
}

bool jf_mf_has_header(const struct jf_mf_reader *r)
{
	return r->header;
}

int jf_mf_damaged(const struct jf_mf_reader *r)
{
	return r->damaged;
}

/* ---- writing ------------------------------------------------------------- */

#define WBUF (256 * 1024)

enum jf_err jf_mf_create(const char *path, const char *endpoint, const char *bucket,
			 const char *prefix, struct jf_mf_writer **out, struct jf_error *err)
{
	*out = NULL;
	struct jf_mf_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->buf = malloc(WBUF))) {
		free(w);
		return jf_error_set(err, JF_ENOMEM, 0, "manifest: out of memory");
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(w->f = fdopen(fd, "w"))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		free(w->buf);
		free(w);
		errno = e;
		return jf_error_set(err, JF_EIO, 0, "cannot create %s: %s", path, strerror(e));
	}
	setvbuf(w->f, w->buf, _IOFBF, WBUF);
	if (fprintf(w->f, "%s\t%s\t%s\t%s\n", JF_MF_MAGIC, endpoint, bucket, prefix) < 0)
		w->err = errno ? errno : EIO;
	*out = w;
	return JF_OK;
}

enum jf_err jf_mf_write(struct jf_mf_writer *w, const char *key, size_t keylen, int64_t size,
			const char *etag, int64_t mtime, struct jf_error *err)
{
	if (w->err)
		return jf_error_set(err, JF_EIO, 0, "manifest: %s", strerror(w->err));
	if (fwrite(key, 1, keylen, w->f) != keylen ||
	    fprintf(w->f, "\t%lld\t%s\t%lld\n", (long long)size, etag && *etag ? etag : "-",
		    (long long)mtime) < 0) {
		w->err = errno ? errno : EIO;
		return jf_error_set(err, JF_EIO, 0, "manifest: %s", strerror(w->err));
	}
	return JF_OK;
}

int jf_mf_errno(const struct jf_mf_writer *w)
{
	return w->err;
}

enum jf_err jf_mf_finish(struct jf_mf_writer *w, bool durable, int *errno_out, struct jf_error *err)
{
	int e = w->err;
	if (fflush(w->f) != 0 && !e)
		e = errno ? errno : EIO;
	if (durable && !e && fsync(fileno(w->f)) != 0)
		e = errno;
	if (fclose(w->f) != 0 && !e)
		e = errno ? errno : EIO;
	free(w->buf);
	free(w);
	if (errno_out)
		*errno_out = e;
	if (e)
		return jf_error_set(err, JF_EIO, 0, "manifest: %s", strerror(e));
	return JF_OK;
}

void jf_mf_abandon(struct jf_mf_writer *w)
{
	if (!w)
		return;
	fclose(w->f);
	free(w->buf);
	free(w);
}

/* ---- the merge ----------------------------------------------------------- */

enum jf_mf_verdict jf_mf_merge(struct jf_mf_reader *old, const char *key, size_t keylen,
			       int64_t size, const char *etag, int64_t mtime, jf_mf_gone_fn gone,
			       void *ud)
{
	const struct jf_mf_entry *e;
	while ((e = jf_mf_peek(old))) {
		int c = jf_key_cmp(e->key, e->keylen, key, keylen);
		if (c > 0)
			return JF_MF_NEW;
		if (c == 0) {
			bool same = e->size == size && e->mtime == mtime &&
				    strcmp(e->etag, etag ? etag : "") == 0;
			jf_mf_next(old);
			return same ? JF_MF_SAME : JF_MF_CHANGED;
		}
		if (gone)
			gone(ud, e);
		jf_mf_next(old);
	}
	return JF_MF_NEW;
}

void jf_mf_merge_rest(struct jf_mf_reader *old, jf_mf_gone_fn gone, void *ud)
{
	const struct jf_mf_entry *e;
	while ((e = jf_mf_peek(old))) {
		if (gone)
			gone(ud, e);
		jf_mf_next(old);
	}
}

/*
 * cache_pull.c - pull a reference into the image cache (cache.h): the
 * manifest (through an index to its linux/amd64 manifest), the config and
 * the layers, from a registry (registry.h) or read in place from an oci:
 * layout, each checked against its digest; then the layers unpacked
 * (layer.h) and the record written.  Locks and layout: cache.c's comment.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/cache_int.h"
#include "image/digest.h"
#include "image/layer.h"

static enum jf_err read_small(const char *path, int64_t cap, char **out, size_t *len,
			      struct jf_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return jf_ic_sys(err, "cannot open", path);
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size > cap) {
		close(fd);
		return jf_error_set(err, JF_EFBIG, 0, "image: %s is larger than %lld bytes", path,
				    (long long)cap);
	}
	char *b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return jf_error_set(err, JF_ENOMEM, 0, "image: out of memory reading %s", path);
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, b + got, (size_t)st.st_size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	b[got] = '\0';
	*out = b;
	*len = got;
	return JF_OK;
}

/* a blob read from a file and checked against its digest and size */
static enum jf_err read_blob(const char *path, const struct jf_desc *d, char **out, size_t *len,
			     struct jf_error *err)
{
	enum jf_err rc = read_small(path, JF_MF_MAX_BYTES, out, len, err);
	if (rc)
		return rc;
	char got[JF_DIGEST_LEN];
	jf_sha256_buf(*out, *len, got);
	if (strcmp(got, d->digest) != 0 || (d->size >= 0 && (int64_t)*len != d->size)) {
		free(*out);
		*out = NULL;
		return jf_error_set(err, JF_EINVAL, 0,
				    "blob %s does not match its digest (got %s, %zu bytes)",
				    d->digest, got, *len);
	}
	return JF_OK;
}

static enum jf_err write_blob(const struct jf_imgcache *c, const char *digest, const char *body,
			      size_t len, struct jf_error *err)
{
	char dst[PATHMAX], tmp[PATHMAX + 128];
	jf_ic_blob_path(c, digest, dst, sizeof(dst));
	if (access(dst, F_OK) == 0)
		return JF_OK;
	snprintf(tmp, sizeof(tmp), "%s.part-%s-%ld-m", dst, c->host, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return jf_ic_sys(err, "cannot write", tmp);
	size_t put = 0;
	while (put < len) {
		ssize_t k = write(fd, body + put, len - put);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			enum jf_err rc = jf_ic_sys(err, "cannot write", tmp);
			close(fd);
			unlink(tmp);
			return rc;
		}
		put += (size_t)k;
	}
	if (close(fd) != 0 || rename(tmp, dst) != 0) {
		enum jf_err rc = jf_ic_sys(err, "cannot write", tmp);
		unlink(tmp);
		return rc;
	}
	return JF_OK;
}

/* where a pull reads its blobs from: the cache, or an oci: layout */
struct source {
	const struct jf_imgref *ref;
	struct jf_reg *reg; /* NULL for oci: */
	char blobs[DIRMAX + 64];
};

static void src_blob(const struct source *s, const char *digest, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", s->blobs, digest + 7);
}

/* the manifest (after an index) and its digest, as the source gives it */
static enum jf_err get_manifest(struct jf_imgcache *c, struct source *s, struct jf_manifest *m,
				char top[JF_DIGEST_LEN], char image[JF_DIGEST_LEN],
				struct jf_error *err)
{
	char *body = NULL;
	size_t len = 0;
	char ctype[128] = "";
	enum jf_err rc;
	if (s->reg) {
		const char *what = s->ref->digest[0] ? s->ref->digest : s->ref->tag;
		rc = jf_reg_manifest(s->reg, what, &body, &len, ctype, top, err);
	} else {
		/* oci: the layout's index.json names the manifest by its tag */
		char p[PATHMAX];
		snprintf(p, sizeof(p), "%s/index.json", s->ref->path);
		char *idx;
		size_t ilen;
		if ((rc = read_small(p, JF_MF_MAX_BYTES, &idx, &ilen, err)))
			return rc == JF_ENOENT ? jf_error_set(err, JF_ENOENT, 0,
							      "oci:%s is not an OCI image layout "
							      "(no index.json)",
							      s->ref->path)
					       : rc;
		json_t *j = json_loadb(idx, ilen, 0, NULL);
		free(idx);
		json_t *ms = json_object_get(j, "manifests");
		json_t *pick = NULL;
		size_t i;
		json_t *e;
		json_array_foreach(ms, i, e)
		{
			const char *t = json_string_value(
				json_object_get(json_object_get(e, "annotations"),
						"org.opencontainers.image.ref.name"));
			if (t && !strcmp(t, s->ref->tag))
				pick = e;
		}
		if (!pick && json_array_size(ms) == 1 && !strcmp(s->ref->tag, "latest"))
			pick = json_array_get(ms, 0);
		struct jf_desc d;
		const char *dg = json_string_value(json_object_get(pick, "digest"));
		json_int_t sz = json_integer_value(json_object_get(pick, "size"));
		if (!pick || !dg || !jf_digest_valid(dg)) {
			json_decref(j);
			return jf_error_set(err, JF_ENOENT, 0, "oci:%s has no image tagged %s",
					    s->ref->path, s->ref->tag);
		}
		memset(&d, 0, sizeof(d));
		snprintf(d.digest, sizeof(d.digest), "%s", dg);
		d.size = sz;
		json_decref(j);
		src_blob(s, d.digest, p, sizeof(p));
		if ((rc = read_blob(p, &d, &body, &len, err)))
			return rc;
		snprintf(top, JF_DIGEST_LEN, "%s", d.digest);
	}
	if (rc)
		return rc;
	rc = jf_manifest_parse(body, len, ctype, m, err);
	if (!rc && s->reg)
		rc = write_blob(c, top, body, len, err);
	free(body);
	snprintf(image, JF_DIGEST_LEN, "%s", top);
	if (rc || m->kind == JF_MF_IMAGE)
		return rc;
	/* an index: the linux/amd64 manifest, by digest */
	struct jf_desc pick = m->pick;
	jf_manifest_release(m);
	char got[JF_DIGEST_LEN];
	if (s->reg) {
		rc = jf_reg_manifest(s->reg, pick.digest, &body, &len, ctype, got, err);
	} else {
		char p[PATHMAX];
		src_blob(s, pick.digest, p, sizeof(p));
		rc = read_blob(p, &pick, &body, &len, err);
	}
	if (rc)
		return rc;
	rc = jf_manifest_parse(body, len, ctype, m, err);
	if (!rc && m->kind != JF_MF_IMAGE)
		rc = jf_error_set(err, JF_EINVAL, 0, "image %s: an index points at another index",
				  pick.digest);
	if (!rc && s->reg)
		rc = write_blob(c, pick.digest, body, len, err);
	free(body);
	snprintf(image, JF_DIGEST_LEN, "%s", pick.digest);
	return rc;
}

static enum jf_err unpack(struct jf_imgcache *c, const struct source *s, const struct jf_desc *d,
			  struct jf_pull_stats *st, struct jf_error *err)
{
	char dst[PATHMAX], tmp[PATHMAX], blob[PATHMAX];
	jf_imgcache_layer_dir(c, d->digest, dst, sizeof(dst));
	struct stat sb;
	if (stat(dst, &sb) == 0 && S_ISDIR(sb.st_mode))
		return JF_OK;
	snprintf(tmp, sizeof(tmp), "%s/layers/sha256/tmp-%s-%ld-%.16s", c->dir, c->host,
		 (long)getpid(), d->digest + 7);
	jf_ic_rmtree(tmp);
	if (s->reg)
		jf_ic_blob_path(c, d->digest, blob, sizeof(blob));
	else {
		/* oci: layouts are read in place, but checked like a download */
		src_blob(s, d->digest, blob, sizeof(blob));
		char got[JF_DIGEST_LEN];
		enum jf_err rc = jf_sha256_file(blob, got, err);
		if (rc)
			return rc;
		if (strcmp(got, d->digest) != 0)
			return jf_error_set(err, JF_EINVAL, 0,
					    "oci:%s: blob %s does not match its digest (got %s)",
					    s->ref->path, d->digest, got);
	}
	struct jf_layer_stats ls;
	enum jf_err rc = jf_layer_unpack(blob, tmp, LAYER_MAX_BYTES, &ls, err);
	if (rc)
		return rc;
	if (rename(tmp, dst) != 0) {
		int e = errno;
		jf_ic_rmtree(tmp);
		/* another pull of a shared layer got there first: use its */
		if ((e == EEXIST || e == ENOTEMPTY) && stat(dst, &sb) == 0)
			return JF_OK;
		errno = e;
		return jf_ic_sys(err, "cannot rename", tmp);
	}
	st->layers_unpacked++;
	return JF_OK;
}

static enum jf_err pull_locked(struct jf_imgcache *c, const struct jf_imgref *ref,
			       const struct jf_reg_opts *o, int64_t now_ms,
			       struct jf_pull_stats *st, struct jf_image *img, struct jf_error *err)
{
	struct source s = { .ref = ref };
	enum jf_err rc;
	if (ref->oci)
		snprintf(s.blobs, sizeof(s.blobs), "%s/blobs/sha256", ref->path);
	else {
		snprintf(s.blobs, sizeof(s.blobs), "%s/blobs/sha256", c->dir);
		if ((rc = jf_reg_new(ref, o, &s.reg, err)))
			return rc;
	}
	struct jf_manifest m;
	memset(&m, 0, sizeof(m));
	char *cfg = NULL;
	size_t cfglen = 0;
	rc = get_manifest(c, &s, &m, img->digest, img->manifest, err);
	if (!rc)
		snprintf(img->config_digest, sizeof(img->config_digest), "%s", m.config.digest);
	/* the config, then the layers, each fetched only when missing */
	for (size_t i = 0; !rc && i < m.nlayers + 1; i++) {
		const struct jf_desc *d = i == 0 ? &m.config : &m.layers[i - 1];
		char p[PATHMAX];
		jf_ic_blob_path(c, d->digest, p, sizeof(p));
		if (s.reg && access(p, F_OK) == 0)
			st->blobs_present++;
	}
	if (!rc && s.reg) {
		int64_t got = 0;
		rc = jf_reg_blobs(s.reg, &m.config, 1, s.blobs, &got, err);
		st->fetched_bytes += got;
		if (!rc) {
			got = 0;
			rc = jf_reg_blobs(s.reg, m.layers, m.nlayers, s.blobs, &got, err);
			st->fetched_bytes += got;
		}
		st->blobs_fetched = (int64_t)m.nlayers + 1 - st->blobs_present;
	}
	if (!rc) {
		char p[PATHMAX];
		src_blob(&s, m.config.digest, p, sizeof(p));
		rc = read_blob(p, &m.config, &cfg, &cfglen, err);
	}
	if (!rc)
		rc = jf_imgconfig_parse(cfg, cfglen, &img->config, err);
	if (!rc && img->config.ndiff_ids && img->config.ndiff_ids != m.nlayers)
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "image %s: the config lists %zu layers, the manifest %zu",
				  img->reference, img->config.ndiff_ids, m.nlayers);
	for (size_t i = 0; !rc && i < m.nlayers; i++)
		rc = unpack(c, &s, &m.layers[i], st, err);
	if (!rc) {
		img->nlayers = m.nlayers;
		img->layers = calloc(m.nlayers ? m.nlayers : 1, sizeof(*img->layers));
		if (!img->layers)
			rc = jf_error_set(err, JF_ENOMEM, 0, "image cache: out of memory");
	}
	if (!rc) {
		for (size_t i = 0; i < m.nlayers; i++)
			snprintf(img->layers[i], JF_DIGEST_LEN, "%s", m.layers[i].digest);
		img->size_bytes = m.config.size + m.layers_bytes;
		img->pulled_ms = now_ms;
		img->last_used_ms = 0;
		rc = jf_ic_record_write(c, img, err);
	}
	free(cfg);
	jf_manifest_release(&m);
	jf_reg_free(s.reg);
	return rc;
}

enum jf_err jf_imgcache_pull(struct jf_imgcache *c, const struct jf_imgref *ref,
			     const struct jf_reg_opts *o, int64_t now_ms, struct jf_pull_stats *st,
			     struct jf_image **out, struct jf_error *err)
{
	*out = NULL;
	memset(st, 0, sizeof(*st));
	struct jf_image *img = calloc(1, sizeof(*img));
	if (!img)
		return jf_error_set(err, JF_ENOMEM, 0, "image cache: out of memory");
	jf_imgref_format(ref, img->reference, sizeof(img->reference));
	jf_imgref_dirname(ref, img->name);
	int lk = jf_ic_lock(c, img->name, LOCK_EX, err);
	if (lk < 0) {
		jf_image_free(img);
		return err ? err->code : JF_EIO;
	}
	int gc = jf_ic_lock(c, ".gc", LOCK_SH, err);
	enum jf_err rc = gc < 0 ? (err ? err->code : JF_EIO) : JF_OK;
	if (!rc) {
		/* a record of an earlier pull keeps its last use */
		struct jf_image *old = NULL;
		struct jf_error e2;
		int64_t last_used = 0;
		if (jf_ic_record_read(c, img->name, &old, &e2) == JF_OK)
			last_used = old->last_used_ms;
		jf_image_free(old);
		rc = pull_locked(c, ref, o, now_ms, st, img, err);
		if (!rc && last_used) {
			img->last_used_ms = last_used;
			rc = jf_ic_record_write(c, img, err);
		}
	}
	jf_ic_unlock(gc);
	jf_ic_unlock(lk);
	if (rc) {
		jf_image_free(img);
		return rc;
	}
	*out = img;
	return JF_OK;
}

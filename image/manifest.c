/*
 * manifest.c - read OCI and Docker manifests, indexes and image configs.
 *
 * Only what a pull and a container need is read: an index's manifests and
 * their platforms, a manifest's config and layers, a config's process
 * (Entrypoint, Cmd, Env, User, WorkingDir) and rootfs.diff_ids.  Every
 * descriptor's digest must be a valid sha256 and its size non-negative;
 * anything else in the documents is ignored, as the image spec asks.
 */
#include "image/manifest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/imgref.h"

static enum jf_err bad(struct jf_error *err, const char *what, const char *why)
{
	return jf_error_set(err, JF_EINVAL, 0, "%s: %s", what, why);
}

static enum jf_err load(const char *body, size_t len, const char *what, json_t **out,
			struct jf_error *err)
{
	if (len > JF_MF_MAX_BYTES)
		return jf_error_set(err, JF_EFBIG, 0, "%s: larger than %d bytes", what,
				    JF_MF_MAX_BYTES);
	json_error_t je;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return jf_error_set(err, JF_EINVAL, 0, "%s: not valid JSON (line %d: %s)", what,
				    je.line, je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return bad(err, what, "not a JSON object");
	}
	*out = j;
	return JF_OK;
}

static enum jf_layer_comp layer_comp(const char *mt, bool *ok)
{
	*ok = true;
	if (!strcmp(mt, "application/vnd.oci.image.layer.v1.tar") ||
	    !strcmp(mt, "application/vnd.docker.image.rootfs.diff.tar"))
		return JF_COMP_NONE;
	if (!strcmp(mt, "application/vnd.oci.image.layer.v1.tar+gzip") ||
	    !strcmp(mt, "application/vnd.docker.image.rootfs.diff.tar.gzip"))
		return JF_COMP_GZIP;
	if (!strcmp(mt, "application/vnd.oci.image.layer.v1.tar+zstd"))
		return JF_COMP_ZSTD;
	*ok = false;
	return JF_COMP_NONE;
}

static enum jf_err desc(json_t *d, const char *what, struct jf_desc *out, struct jf_error *err)
{
	json_t *mt = json_object_get(d, "mediaType");
	json_t *dg = json_object_get(d, "digest");
	json_t *sz = json_object_get(d, "size");
	if (!json_is_object(d))
		return bad(err, what, "a descriptor is not an object");
	if (!json_is_string(dg) || !jf_digest_valid(json_string_value(dg)))
		return bad(err, what, "a descriptor's digest is not sha256:<64 hex>");
	if (!json_is_integer(sz) || json_integer_value(sz) < 0)
		return bad(err, what, "a descriptor's size is not a non-negative integer");
	memset(out, 0, sizeof(*out));
	if (json_is_string(mt))
		snprintf(out->media_type, sizeof(out->media_type), "%s", json_string_value(mt));
	snprintf(out->digest, sizeof(out->digest), "%s", json_string_value(dg));
	out->size = json_integer_value(sz);
	return JF_OK;
}

static enum jf_err parse_index(json_t *j, struct jf_manifest *m, struct jf_error *err)
{
	json_t *ms = json_object_get(j, "manifests");
	if (!json_is_array(ms))
		return bad(err, "image index", "no \"manifests\" list");
	if (json_array_size(ms) > JF_MF_MAX_INDEX)
		return jf_error_set(err, JF_EFBIG, 0, "image index: more than %d manifests",
				    JF_MF_MAX_INDEX);
	char seen[256] = "";
	size_t ns = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ms, i, e)
	{
		json_t *p = json_object_get(e, "platform");
		const char *os = json_string_value(json_object_get(p, "os"));
		const char *arch = json_string_value(json_object_get(p, "architecture"));
		if (os && arch && !strcmp(os, "linux") && !strcmp(arch, "amd64")) {
			m->kind = JF_MF_INDEX;
			return desc(e, "image index", &m->pick, err);
		}
		if (os && arch && strlen(seen) < sizeof(seen) - 80) {
			ns += (size_t)snprintf(seen + ns, sizeof(seen) - ns, "%s%.32s/%.32s",
					       ns ? ", " : "", os, arch);
		}
	}
	return jf_error_set(err, JF_ENOTSUP, 0,
			    "the image has no linux/amd64 manifest (it has: %s)",
			    seen[0] ? seen : "none with a platform");
}

static enum jf_err parse_image(json_t *j, struct jf_manifest *m, struct jf_error *err)
{
	enum jf_err rc;
	json_t *cfg = json_object_get(j, "config");
	json_t *ls = json_object_get(j, "layers");
	if (!cfg)
		return bad(err, "image manifest", "no \"config\"");
	if ((rc = desc(cfg, "image manifest", &m->config, err)))
		return rc;
	if (!json_is_array(ls))
		return bad(err, "image manifest", "no \"layers\" list");
	size_t n = json_array_size(ls);
	if (n > JF_MF_MAX_LAYERS)
		return jf_error_set(err, JF_EFBIG, 0, "image manifest: more than %d layers",
				    JF_MF_MAX_LAYERS);
	m->layers = calloc(n ? n : 1, sizeof(*m->layers));
	if (!m->layers)
		return jf_error_set(err, JF_ENOMEM, 0, "image manifest: out of memory");
	m->kind = JF_MF_IMAGE;
	for (size_t i = 0; i < n; i++) {
		struct jf_desc *d = &m->layers[i];
		if ((rc = desc(json_array_get(ls, i), "image manifest", d, err)))
			return rc;
		bool ok;
		d->comp = layer_comp(d->media_type, &ok);
		if (!ok)
			return jf_error_set(
				err, JF_ENOTSUP, 0,
				"image manifest: layer %zu has media type \"%.100s\", "
				"which jobfs cannot unpack (tar, tar+gzip, tar+zstd only; "
				"non-distributable layers are not fetched)",
				i + 1, d->media_type[0] ? d->media_type : "(none)");
		m->nlayers++;
		m->layers_bytes += d->size;
	}
	return JF_OK;
}

enum jf_err jf_manifest_parse(const char *body, size_t len, const char *content_type,
			      struct jf_manifest *m, struct jf_error *err)
{
	memset(m, 0, sizeof(*m));
	json_t *j = NULL;
	enum jf_err rc = load(body, len, "manifest", &j, err);
	if (rc)
		return rc;
	const char *mt = json_string_value(json_object_get(j, "mediaType"));
	if (!mt && content_type && strncmp(content_type, "application/vnd.", 16) == 0)
		mt = content_type;
	bool index;
	if (mt && (!strcmp(mt, JF_MT_OCI_INDEX) || !strcmp(mt, JF_MT_DOCKER_LIST)))
		index = true;
	else if (mt && (!strcmp(mt, JF_MT_OCI_MANIFEST) || !strcmp(mt, JF_MT_DOCKER_MANIFEST)))
		index = false;
	else if (!mt)
		index = json_object_get(j, "manifests") != NULL; /* shape decides */
	else {
		char q[160];
		jf_err_quote(mt, strlen(mt), 100, q, sizeof(q));
		json_decref(j);
		return jf_error_set(err, JF_ENOTSUP, 0,
				    "manifest: media type \"%s\" is not an OCI or Docker schema 2 "
				    "manifest or index",
				    q);
	}
	json_t *sv = json_object_get(j, "schemaVersion");
	if (!json_is_integer(sv) || json_integer_value(sv) != 2)
		rc = bad(err, "manifest",
			 "schemaVersion is not 2 (schema 1 images are not supported)");
	else
		rc = index ? parse_index(j, m, err) : parse_image(j, m, err);
	json_decref(j);
	if (rc)
		jf_manifest_release(m);
	return rc;
}

void jf_manifest_release(struct jf_manifest *m)
{
	free(m->layers);
	memset(m, 0, sizeof(*m));
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* a JSON list of strings (or null) into a NULL-terminated copy */
static enum jf_err strv(json_t *a, const char *key, size_t max, char ***out, size_t *n,
			struct jf_error *err)
{
	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return JF_OK;
	if (!json_is_array(a))
		return jf_error_set(err, JF_EINVAL, 0, "image config: %s is not a list", key);
	size_t k = json_array_size(a);
	if (k > max)
		return jf_error_set(err, JF_EFBIG, 0, "image config: %s has more than %zu entries",
				    key, max);
	char **v = calloc(k + 1, sizeof(*v));
	if (!v)
		return jf_error_set(err, JF_ENOMEM, 0, "image config: out of memory");
	for (size_t i = 0; i < k; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s) {
			strv_free(v);
			return jf_error_set(err, JF_EINVAL, 0,
					    "image config: %s[%zu] is not a string", key, i);
		}
		if (!(v[i] = strdup(s))) {
			strv_free(v);
			return jf_error_set(err, JF_ENOMEM, 0, "image config: out of memory");
		}
	}
	*out = v;
	*n = k;
	return JF_OK;
}

enum jf_err jf_imgconfig_parse(const char *body, size_t len, struct jf_imgconfig *c,
			       struct jf_error *err)
{
	memset(c, 0, sizeof(*c));
	json_t *j = NULL;
	enum jf_err rc = load(body, len, "image config", &j, err);
	if (rc)
		return rc;
	json_t *cf = json_object_get(j, "config");
	json_t *rootfs = json_object_get(j, "rootfs");
	const char *os = json_string_value(json_object_get(j, "os"));
	const char *arch = json_string_value(json_object_get(j, "architecture"));
	snprintf(c->os, sizeof(c->os), "%s", os ? os : "");
	snprintf(c->arch, sizeof(c->arch), "%s", arch ? arch : "");
	if (cf && !json_is_null(cf) && !json_is_object(cf))
		rc = bad(err, "image config", "\"config\" is not an object");
	if (!rc)
		rc = strv(json_object_get(cf, "Entrypoint"), "Entrypoint", JF_MF_MAX_ARGV,
			  &c->entrypoint, &c->nentrypoint, err);
	if (!rc)
		rc = strv(json_object_get(cf, "Cmd"), "Cmd", JF_MF_MAX_ARGV, &c->cmd, &c->ncmd,
			  err);
	if (!rc)
		rc = strv(json_object_get(cf, "Env"), "Env", JF_MF_MAX_ENV, &c->env, &c->nenv, err);
	if (!rc)
		rc = strv(json_object_get(rootfs, "diff_ids"), "rootfs.diff_ids", JF_MF_MAX_LAYERS,
			  &c->diff_ids, &c->ndiff_ids, err);
	if (!rc) {
		const char *u = json_string_value(json_object_get(cf, "User"));
		const char *w = json_string_value(json_object_get(cf, "WorkingDir"));
		c->user = strdup(u ? u : "");
		c->workdir = strdup(w ? w : "");
		if (!c->user || !c->workdir)
			rc = jf_error_set(err, JF_ENOMEM, 0, "image config: out of memory");
	}
	if (!rc && c->os[0] && strcmp(c->os, "linux") != 0)
		rc = jf_error_set(err, JF_ENOTSUP, 0,
				  "image config: the image is for %s, not linux", c->os);
	json_decref(j);
	if (rc)
		jf_imgconfig_release(c);
	return rc;
}

void jf_imgconfig_release(struct jf_imgconfig *c)
{
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	strv_free(c->env);
	strv_free(c->diff_ids);
	free(c->user);
	free(c->workdir);
	memset(c, 0, sizeof(*c));
}

/*
 * storage_spec.c - the specs of volumes and object sources (storage.h).
 */
#include "core/storage.h"

#include <stdlib.h>
#include <string.h>

#include "core/quantity.h"
#include "core/yamltree.h"

static enum jf_err oom(struct jf_error *err)
{
	return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

/* Parse text's top level as a mapping (an empty text: NULL root). */
static enum jf_err doc_root(const char *text, size_t len, const char *what, struct jf_ydoc **doc,
			    const struct jf_ynode **root, struct jf_error *err)
{
	enum jf_err rc = jf_ydoc_parse(text, len, doc, err);
	if (rc)
		return rc;
	*root = jf_ydoc_root(*doc);
	if (jf_ynode_is_null(*root)) {
		*root = NULL;
		return JF_OK;
	}
	if ((*root)->type != JF_Y_MAP)
		return jf_yerror(err, JF_EINVAL, *root, "",
				 "the %s spec must be a mapping of keys, not %s", what,
				 jf_ynode_kind(*root));
	return JF_OK;
}

enum jf_err jf_volume_spec_parse(const char *text, size_t len, struct jf_volume_spec *out,
				 struct jf_error *err)
{
	static const char *const known[] = { "size", "private", NULL };
	struct jf_volume_spec v = { 0 };
	struct jf_ydoc *doc = NULL;
	const struct jf_ynode *root, *n;
	enum jf_err rc = doc_root(text, len, "volume", &doc, &root, err);
	if (rc || !root)
		goto out;
	if ((rc = jf_ymap_check_keys(root, "", known, err)))
		goto out;
	if ((n = jf_ymap_get(root, "size"))) {
		const char *t;
		if ((rc = jf_ynode_text(n, "size", 0, &t, err)))
			goto out;
		if (!jf_mem_parse(t, &v.size) || v.size <= 0) {
			rc = jf_yerror(err, JF_EINVAL, n, "size",
				       "bad size \"%.64s\": use a quantity such as 100Gi or 500M",
				       t);
			goto out;
		}
	}
	if ((n = jf_ymap_get(root, "private")) &&
	    (rc = jf_ynode_bool(n, "private", &v.private_, err)))
		goto out;
out:
	jf_ydoc_free(doc);
	if (!rc)
		*out = v;
	return rc;
}

bool jf_bucket_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 3 || n > 63 || strstr(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && ((i == 0 || i == n - 1) || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

/* http[s]://host[:port][/], nothing else: no user (credentials have
 * their own file), no path, no query. */
static bool endpoint_ok(const char *s, char **norm)
{
	const char *h;
	if (!strncmp(s, "http://", 7))
		h = s + 7;
	else if (!strncmp(s, "https://", 8))
		h = s + 8;
	else
		return false;
	size_t n = strlen(h);
	if (n && h[n - 1] == '/')
		n--;
	if (n == 0 || n > 255)
		return false;
	int colons = 0;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c == ':')
			colons++;
		else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '[' || c == ']'))
			return false;
	}
	if (h[0] == ':' || h[n - 1] == ':' || (colons > 1 && h[0] != '['))
		return false;
	*norm = strndup(s, (size_t)(h - s) + n);
	return true;
}

static bool prefix_ok(const char *s)
{
	if (strlen(s) > JF_OBJ_PREFIX_MAX || s[0] == '/')
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	/* a component ".." would name a place outside the prefix */
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return false;
	return true;
}

static bool region_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 32)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

void jf_objsrc_spec_release(struct jf_objsrc_spec *o)
{
	if (!o)
		return;
	free(o->endpoint);
	free(o->bucket);
	free(o->prefix);
	free(o->region);
	free(o->credentials);
	free(o->profile);
	memset(o, 0, sizeof(*o));
}

static enum jf_err text_key(const struct jf_ynode *root, const char *key, const char **t,
			    const struct jf_ynode **node, struct jf_error *err)
{
	*t = NULL;
	if (!(*node = jf_ymap_get(root, key)))
		return JF_OK;
	return jf_ynode_text(*node, key, JF_YSTR_STRICT, t, err);
}

enum jf_err jf_objsrc_spec_parse(const char *text, size_t len, struct jf_objsrc_spec *out,
				 struct jf_error *err)
{
	static const char *const known[] = { "endpoint",    "bucket",  "prefix", "region",
					     "credentials", "profile", NULL };
	struct jf_objsrc_spec o = { 0 };
	struct jf_ydoc *doc = NULL;
	const struct jf_ynode *root, *n;
	const char *t;
	enum jf_err rc = doc_root(text, len, "object source", &doc, &root, err);
	if (rc)
		goto out;
	if (!root) {
		rc = jf_error_set(err, JF_EINVAL, 1,
				  "an object source needs endpoint and bucket (e.g. endpoint: "
				  "http://127.0.0.1:7480, bucket: models)");
		goto out;
	}
	if ((rc = jf_ymap_check_keys(root, "", known, err)))
		goto out;
	if ((rc = text_key(root, "endpoint", &t, &n, err)))
		goto out;
	if (!t) {
		rc = jf_yerror(err, JF_EINVAL, root, "endpoint",
			       "an object source needs an endpoint (e.g. http://127.0.0.1:7480)");
		goto out;
	}
	if (!endpoint_ok(t, &o.endpoint)) {
		rc = jf_yerror(err, JF_EINVAL, n, "endpoint",
			       "\"%.80s\" is not an endpoint: use http://HOST[:PORT] or "
			       "https://HOST[:PORT], without a user, a path or a query (the bucket "
			       "and prefix have keys of their own, credentials a file)",
			       t);
		goto out;
	}
	if (!o.endpoint) {
		rc = oom(err);
		goto out;
	}
	if ((rc = text_key(root, "bucket", &t, &n, err)))
		goto out;
	if (!t) {
		rc = jf_yerror(err, JF_EINVAL, root, "bucket", "an object source needs a bucket");
		goto out;
	}
	if (!jf_bucket_name_ok(t)) {
		rc = jf_yerror(err, JF_EINVAL, n, "bucket",
			       "bad bucket name \"%.64s\": 3 to 63 of a-z, 0-9, '.' and '-', "
			       "starting and ending with a letter or digit",
			       t);
		goto out;
	}
	o.bucket = strdup(t);
	if ((rc = text_key(root, "prefix", &t, &n, err)))
		goto out;
	if (t && !prefix_ok(t)) {
		rc = jf_yerror(err, JF_EINVAL, n, "prefix",
			       "bad prefix \"%.64s\": at most %d bytes, no leading '/', no "
			       "control characters and no '..' component",
			       t, JF_OBJ_PREFIX_MAX);
		goto out;
	}
	o.prefix = strdup(t ? t : "");
	if ((rc = text_key(root, "region", &t, &n, err)))
		goto out;
	if (t && !region_ok(t)) {
		rc = jf_yerror(err, JF_EINVAL, n, "region",
			       "bad region \"%.64s\": a-z, 0-9 and '-', e.g. us-east-1", t);
		goto out;
	}
	o.region = strdup(t ? t : "us-east-1");
	if ((rc = text_key(root, "credentials", &t, &n, err)))
		goto out;
	if (t && (t[0] != '/' || strlen(t) > JF_OBJ_PATH_MAX)) {
		rc = jf_yerror(err, JF_EINVAL, n, "credentials",
			       "\"%.64s\" must be an absolute path (a file in the AWS "
			       "shared-credentials format)",
			       t);
		goto out;
	}
	if (t && !(o.credentials = strdup(t))) {
		rc = oom(err);
		goto out;
	}
	if ((rc = text_key(root, "profile", &t, &n, err)))
		goto out;
	if (t && (!t[0] || strlen(t) > 64 || strpbrk(t, "[]\n\r"))) {
		rc = jf_yerror(err, JF_EINVAL, n, "profile", "bad profile name \"%.64s\"", t);
		goto out;
	}
	if (t && !o.credentials) {
		rc = jf_yerror(err, JF_EINVAL, n, "profile",
			       "a profile names a section of the credentials file: give "
			       "credentials too");
		goto out;
	}
	if (t && !(o.profile = strdup(t))) {
		rc = oom(err);
		goto out;
	}
	if (!o.bucket || !o.prefix || !o.region)
		rc = oom(err);
out:
	jf_ydoc_free(doc);
	if (rc)
		jf_objsrc_spec_release(&o);
	else
		*out = o;
	return rc;
}

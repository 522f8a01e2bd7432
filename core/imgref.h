/*
 * imgref.h - image references, parsed and named.
 *
 * The forms a spec may give as `image` (reference 8.1):
 *
 *   host[:port]/repo[:tag][@sha256:<64 hex>]   pulled from a registry
 *   repo[:tag]                                  Docker's short form: host
 *                                               docker.io, "library/" for
 *                                               a one-part repo
 *   oci:PATH[:TAG]                              a local OCI image layout
 *
 * The first part of a registry reference is a host when it holds a '.' or
 * a ':' or is "localhost" (Docker's rule).  Without tag and digest the tag
 * is "latest".  Repos follow the distribution spec's grammar (lower-case
 * components separated by '.', '_', '__' or '-' runs, joined by '/'), tags
 * `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.  Pure: no I/O.
 */
#ifndef JF_IMGREF_H
#define JF_IMGREF_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define JF_IMGREF_MAX     1024 /* bytes of a reference as written */
#define JF_IMGREF_HOST    256
#define JF_IMGREF_REPO    256
#define JF_IMGREF_TAG     129
#define JF_IMGREF_DIGEST  72 /* "sha256:" + 64 hex + NUL */
#define JF_IMGREF_PATH    1024
#define JF_IMGREF_NAMEMAX 64 /* a directory name under /images, NUL included */

struct jf_imgref {
	bool oci;                      /* oci:PATH[:TAG] */
	char host[JF_IMGREF_HOST];     /* "127.0.0.1:5000"; "" for oci: */
	char repo[JF_IMGREF_REPO];     /* "demo/busybox"; "" for oci: */
	char tag[JF_IMGREF_TAG];       /* "" when only a digest was given */
	char digest[JF_IMGREF_DIGEST]; /* "sha256:..." or "" */
	char path[JF_IMGREF_PATH];     /* oci: layout directory, absolute */
};

/* Parse s into *r.  A bad reference fails with JF_EINVAL and a message that
 * quotes it and says what is wrong; *r is then unspecified. */
enum jf_err jf_imgref_parse(const char *s, struct jf_imgref *r, struct jf_error *err);

/* The canonical text: "host/repo:tag", "host/repo@sha256:..", both when
 * both were given, "oci:/path:tag".  Returns the length it needed. */
size_t jf_imgref_format(const struct jf_imgref *r, char *buf, size_t n);

/* The name of the reference's directory under /images: the canonical text
 * with every byte outside [A-Za-z0-9._-] made '_', a leading non-alnum
 * made 'x', and, past 63 bytes, cut to 54 and "-" plus 8 hex digits of a
 * hash of the whole text, so it is always a valid directory name. */
void jf_imgref_dirname(const struct jf_imgref *r, char buf[JF_IMGREF_NAMEMAX]);

/* Kubernetes' default pull policy: Always for ":latest" or no tag (and
 * no digest), else IfNotPresent. */
bool jf_imgref_default_always(const struct jf_imgref *r);

/* "sha256:<64 lower-case hex>" */
bool jf_digest_valid(const char *d);

#endif

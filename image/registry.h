/*
 * registry.h - a client of the OCI distribution API (registry v2), libcurl.
 *
 * One struct jf_reg speaks to one repository of one registry for one pull:
 * it keeps the Bearer token it was given, answers the registry's
 * WWW-Authenticate challenge (Basic with the credentials of auth.json, or
 * Bearer: a token fetched from the challenge's realm, with service and
 * scope, sent with those credentials when there are some), and speaks
 * https unless the host is listed as insecure (then plain http).
 *
 * Every body is capped: manifests at JF_MF_MAX_BYTES, each blob at its
 * descriptor's size (a longer or shorter download fails), and every blob
 * is checked against its digest while it is written; a blob that fails any
 * check is never renamed into place.  Blobs are fetched in parallel (curl
 * multi, up to o->parallel at once) into dir/<hex>.part and renamed to
 * dir/<hex> once whole and verified; a blob already in dir is not fetched.
 *
 * Errors name the registry, the repository and what answered: "registry
 * 127.0.0.1:5000 is not reachable (connection refused)", "... answered
 * 404 for manifest latest", "blob sha256:ab.. does not match its digest
 * (got sha256:cd..)".  Credentials never appear in a message.
 */
#ifndef JF_REGISTRY_H
#define JF_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/imgref.h"
#include "image/manifest.h"

struct jf_reg_opts {
	const char *auth_file;       /* auth.json (containers' format), NULL = none */
	const char *const *insecure; /* "host[:port]" spoken to over http */
	size_t ninsecure;
	int parallel;           /* blobs at once, 0 = 4 */
	long connect_timeout_s; /* 0 = 10 */
	long low_speed_time_s;  /* abort a transfer slower than 1 KiB/s this long; 0 = 30 */
};

struct jf_reg;

/* Ready a client for ref's registry and repository (no request yet). */
enum jf_err jf_reg_new(const struct jf_imgref *ref, const struct jf_reg_opts *o,
		       struct jf_reg **out, struct jf_error *err);
void jf_reg_free(struct jf_reg *r);

/* GET /v2/<repo>/manifests/<what> (a tag or a digest) with the manifest
 * media types accepted.  *body (the caller frees it), *len, the
 * Content-Type into ctype, and the body's sha256 into digest.  When what is
 * a digest the body must match it (JF_EINVAL otherwise). */
enum jf_err jf_reg_manifest(struct jf_reg *r, const char *what, char **body, size_t *len,
			    char ctype[128], char digest[JF_DIGEST_LEN], struct jf_error *err);

/* Fetch the n blobs into dir (see above).  *fetched: bytes downloaded. */
enum jf_err jf_reg_blobs(struct jf_reg *r, const struct jf_desc *d, size_t n, const char *dir,
			 int64_t *fetched, struct jf_error *err);

/* The parsers, for the tests: a WWW-Authenticate header into its scheme
 * ("Bearer", "Basic") and parameters; auth.json's entry for host into
 * "user:password" (decoded; *out the caller frees, NULL when none). */
struct jf_challenge {
	char scheme[16];
	char realm[1024];
	char service[256];
	char scope[512];
};
enum jf_err jf_reg_parse_challenge(const char *hdr, struct jf_challenge *c, struct jf_error *err);
enum jf_err jf_reg_auth_lookup(const char *auth_json_path, const char *host, char **out,
			       struct jf_error *err);

#endif

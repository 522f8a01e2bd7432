/*
 * manifest.h - OCI / Docker manifests, indexes and image configs (JSON).
 *
 * Understood media types: OCI image index and Docker manifest list (an
 * index: the entry for linux/amd64 is picked), OCI image manifest and
 * Docker schema 2 manifest.  Layers: tar, tar+gzip, tar+zstd in their OCI
 * and Docker spellings; non-distributable ("foreign") layers are refused.
 * The config gives what a container needs: entrypoint, cmd, env, user,
 * working dir, and the layers' diff_ids.  Parsing is strict about what it
 * uses and ignores the rest; every list has a cap (JF_MF_MAX_*).
 *
 * Ownership: *_parse fill a struct the caller releases with *_release;
 * every string inside belongs to it.
 */
#ifndef JF_MANIFEST_H
#define JF_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "image/digest.h"

#define JF_MF_MAX_BYTES  (4 * 1024 * 1024) /* a manifest, index or config */
#define JF_MF_MAX_LAYERS 256
#define JF_MF_MAX_INDEX  1024 /* entries of an index */
#define JF_MF_MAX_ARGV   4096
#define JF_MF_MAX_ENV    4096

#define JF_MT_OCI_INDEX       "application/vnd.oci.image.index.v1+json"
#define JF_MT_OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define JF_MT_OCI_CONFIG      "application/vnd.oci.image.config.v1+json"
#define JF_MT_DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
#define JF_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define JF_MT_DOCKER_CONFIG   "application/vnd.docker.container.image.v1+json"
/* the Accept header of a manifest request */
#define JF_MT_ACCEPT                                                                               \
	JF_MT_OCI_INDEX ", " JF_MT_OCI_MANIFEST ", " JF_MT_DOCKER_LIST ", " JF_MT_DOCKER_MANIFEST

enum jf_layer_comp { JF_COMP_NONE, JF_COMP_GZIP, JF_COMP_ZSTD };

struct jf_desc {
	char media_type[128];
	char digest[JF_DIGEST_LEN];
	int64_t size;
	enum jf_layer_comp comp; /* layers only */
};

/* what a manifest body is */
enum jf_mf_kind { JF_MF_INDEX, JF_MF_IMAGE };

struct jf_manifest {
	enum jf_mf_kind kind;
	struct jf_desc pick;   /* index: the linux/amd64 manifest */
	struct jf_desc config; /* image */
	struct jf_desc *layers;
	size_t nlayers;
	int64_t layers_bytes; /* sum of the layers' sizes */
};

/* Parse a manifest or index body.  content_type is the registry's
 * Content-Type (may be NULL or generic: the body's mediaType and shape
 * decide then).  An index without a linux/amd64 entry fails with
 * JF_ENOTSUP naming the platforms it has. */
enum jf_err jf_manifest_parse(const char *body, size_t len, const char *content_type,
			      struct jf_manifest *m, struct jf_error *err);
void jf_manifest_release(struct jf_manifest *m);

struct jf_imgconfig {
	char **entrypoint; /* NULL-terminated; NULL when none */
	size_t nentrypoint;
	char **cmd;
	size_t ncmd;
	char **env; /* "KEY=value" */
	size_t nenv;
	char *user;    /* "" when none */
	char *workdir; /* "" when none */
	char **diff_ids;
	size_t ndiff_ids;
	char os[32], arch[32];
};

enum jf_err jf_imgconfig_parse(const char *body, size_t len, struct jf_imgconfig *c,
			       struct jf_error *err);
void jf_imgconfig_release(struct jf_imgconfig *c);

#endif

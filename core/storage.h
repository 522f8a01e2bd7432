/*
 * storage.h - the specs of /volumes/<v> and /objects/<o> (reference 8.3):
 * pure parsing, with errors that name the key and the line.
 *
 *   volume:  size: 100Gi       a soft limit: a Warning when used passes it
 *            private: true     only its owner (and root) may use and see it
 *   object:  endpoint: http://127.0.0.1:7480   (http or https, host[:port],
 *                                               no user, no path)
 *            bucket: models                    (S3's bucket naming rules)
 *            prefix: llama/7b                  (optional; "" = the bucket)
 *            region: us-east-1                 (the default)
 *            credentials: /home/u/.aws/credentials   (absolute; read with
 *                                                     the writer's rights)
 *            profile: default                  (the credentials' section)
 *
 * An empty volume spec is all defaults; an object spec needs endpoint and
 * bucket.  Unknown keys are errors.
 */
#ifndef JF_CORE_STORAGE_H
#define JF_CORE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_OBJ_PREFIX_MAX 1024
#define JF_OBJ_PATH_MAX   1024

struct jf_volume_spec {
	int64_t size; /* bytes, 0 = no limit */
	bool private_;
};

struct jf_objsrc_spec {
	char *endpoint; /* "http://host:port", no trailing slash */
	char *bucket;
	char *prefix; /* "" = the whole bucket */
	char *region;
	char *credentials; /* NULL: anonymous */
	char *profile;     /* NULL: "default" */
};

enum jf_err jf_volume_spec_parse(const char *text, size_t len, struct jf_volume_spec *out,
				 struct jf_error *err);
/* *out is written only on success; the caller releases it. */
enum jf_err jf_objsrc_spec_parse(const char *text, size_t len, struct jf_objsrc_spec *out,
				 struct jf_error *err);
void jf_objsrc_spec_release(struct jf_objsrc_spec *o);

/* S3's bucket naming rules: 3-63 of a-z 0-9 . -, starting and ending with
 * a letter or digit, no "..". */
bool jf_bucket_name_ok(const char *s);

#endif

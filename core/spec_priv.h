/*
 * spec_priv.h - what spec.c, spec_native.c and spec_k8s.c share; not for
 * use outside core/spec*.c.
 *
 * A form parser (native or K8s) fills a zeroed struct jf_spec from the YAML
 * tree and notes in struct jf_spec_src where the keys that later checks
 * look at were written.  jf_spec_finish() then applies the rules both forms
 * share (defaults that depend on other keys, cross-key checks, what the
 * local backend cannot honour), naming the key and line it noted.
 */
#ifndef JF_SPEC_PRIV_H
#define JF_SPEC_PRIV_H

#include "core/spec.h"
#include "core/yamltree.h"

#define JF_SPEC_MAX_DURATION (366LL * 86400) /* timeout, unit_runtime */

/* Where a key was written: its path as the user wrote it and its node. */
struct jf_src_key {
	const struct jf_ynode *node; /* NULL: not written */
	char path[JF_YPATH_MAX];
};

struct jf_spec_src {
	const struct jf_ynode *root;
	struct jf_src_key gpu;  /* the model */
	struct jf_src_key gpus; /* the per-node count, when written */
	bool parallelism_set;
	char containers_path[JF_YPATH_MAX]; /* "containers", "spec.template.spec.containers" */
	const struct jf_ynode *cont[JF_SPEC_MAX_CONTAINERS];     /* each container */
	const struct jf_ynode *cont_gpu[JF_SPEC_MAX_CONTAINERS]; /* its nvidia.com/gpu */
	/* written but not honoured by the local backend */
	struct jf_src_key storage, shm_size, cpu_exclusive;
	const char *command_hint; /* where to put a command, for the message */
};

void jf_spec_src_set(struct jf_src_key *k, const struct jf_ynode *n, const char *path);

/* The form parsers. */
enum jf_err jf_spec_native(const struct jf_ynode *root, enum jf_spec_place place, struct jf_spec *s,
			   struct jf_spec_src *src, struct jf_error *err);
enum jf_err jf_spec_k8s(const struct jf_ynode *root, enum jf_spec_place place, struct jf_spec *s,
			struct jf_spec_src *src, struct jf_error *err);

/* Shared rules, after a form parser succeeded. */
enum jf_err jf_spec_finish(struct jf_spec *s, enum jf_spec_place place,
			   const struct jf_spec_src *src, struct jf_error *err);

/* Record a K8s path that is not modelled; key is its key node (the line
 * when there are more than JF_SPEC_MAX_IGNORED). */
enum jf_err jf_spec_ignore(struct jf_spec *s, const struct jf_ynode *key, const char *path,
			   struct jf_error *err);

/* Value readers that check and name the key. */
enum jf_err jf_spec_name(const struct jf_ynode *n, const char *path, char **out,
			 struct jf_error *err);
/* an image reference, checked (core/imgref.h) */
enum jf_err jf_spec_image(const struct jf_ynode *n, const char *path, char **out,
			  struct jf_error *err);
/* Always | IfNotPresent | Never */
enum jf_err jf_spec_pull_policy(const struct jf_ynode *n, const char *path,
				enum jf_pull_policy *out, struct jf_error *err);
enum jf_err jf_spec_container_name(const struct jf_ynode *n, const char *path, char **out,
				   struct jf_error *err);
enum jf_err jf_spec_duration(const struct jf_ynode *n, const char *path, int64_t lo, int64_t hi,
			     int64_t *out, struct jf_error *err);
enum jf_err jf_spec_cpu(const struct jf_ynode *n, const char *path, int64_t *out,
			struct jf_error *err);
enum jf_err jf_spec_mem(const struct jf_ynode *n, const char *path, int64_t *out,
			struct jf_error *err);
enum jf_err jf_spec_gpu(const struct jf_ynode *n, const char *path, char **out,
			struct jf_error *err);
enum jf_err jf_spec_billing(const struct jf_ynode *n, const char *path, enum jf_billing *out,
			    struct jf_error *err);
enum jf_err jf_spec_restart(const struct jf_ynode *n, const char *path, enum jf_restart *out,
			    struct jf_error *err);

/* Set env key=value in c (validating the key; a later value replaces an
 * earlier one in place).  n and path name the entry for messages. */
enum jf_err jf_spec_env_set(struct jf_container *c, const char *key, size_t klen, const char *val,
			    size_t vlen, const struct jf_ynode *n, const char *path,
			    struct jf_error *err);

/* resources: {limits, requests} into c.  With ignored non-NULL (K8s), keys
 * not modelled are recorded there; else they are errors.  *gpu_node is the
 * node of limits["nvidia.com/gpu"] when written. */
enum jf_err jf_spec_resources(const struct jf_ynode *res, const char *path, struct jf_container *c,
			      struct jf_spec *ignored, const struct jf_ynode **gpu_node,
			      struct jf_error *err);

#endif

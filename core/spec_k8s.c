/*
 * spec_k8s.c - import of a Kubernetes batch/v1 Job (reference 2.3).
 *
 * The Job keeps Kubernetes' meaning: completions and parallelism default
 * to 1; backoffLimit is the group's failure limit (default 6, unlimited
 * when backoffLimitPerIndex is set); backoffLimitPerIndex is the per-task
 * retries (absent: no per-task limit, -1); podFailurePolicy and
 * successPolicy rules are kept as written.  The Kubernetes API's own
 * validation rules that change what a Job means are applied too (Indexed
 * needs completions; backoffLimitPerIndex and successPolicy need Indexed;
 * podFailurePolicy needs restartPolicy Never; FailIndex needs
 * backoffLimitPerIndex), so a Job that a cluster refuses is refused here.
 *
 * Platform settings come from jobfs/ annotations; an unknown jobfs/
 * annotation is an error.  Every other field, anywhere, is not an error: it
 * goes into spec->ignored as a dotted path ("metadata.labels",
 * "spec.template.spec.containers[0].imagePullPolicy", "status"), except
 * env valueFrom, refused with JF_ENOTSUP because dropping it would run the
 * job with a different environment.  Wrong types in modelled fields are
 * errors naming the path and line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/deps.h"
#include "core/spec_priv.h"

#define K8S_MAX_RULES     20 /* as the Kubernetes API */
#define K8S_MAX_EXITCODES 255

struct k8s {
	struct jf_spec *s;
	struct jf_spec_src *src;
	struct jf_error *err;
	enum jf_spec_place place;
	bool completions_set, per_index_set, backoff_set, retries_annotated;
	const struct jf_ynode *mode, *per_index, *max_failed, *pfp, *success;
};

static enum jf_err oom(struct jf_error *err)
{
	return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

static bool in_list(const char *k, const char *const *known)
{
	for (; *known; known++)
		if (strcmp(k, *known) == 0)
			return true;
	return false;
}

/* map must be a mapping; its keys not in known go to ignored. */
static enum jf_err walk(struct k8s *k, const struct jf_ynode *map, const char *path,
			const char *const *known)
{
	enum jf_err rc = jf_ynode_expect(map, JF_Y_MAP, path, k->err);
	for (size_t i = 0; i < map->n && !rc; i++) {
		const char *key = jf_ymap_key(map, i)->str;
		if (in_list(key, known))
			continue;
		char kp[JF_YPATH_MAX];
		jf_ypath_key(kp, sizeof(kp), path, key);
		rc = jf_spec_ignore(k->s, jf_ymap_key(map, i), kp, k->err);
	}
	return rc;
}

/* The value of map[key] and its path; NULL when absent or null. */
static const struct jf_ynode *get(const struct jf_ynode *map, const char *path, const char *key,
				  char *kp)
{
	jf_ypath_key(kp, JF_YPATH_MAX, path, key);
	return jf_ymap_get(map, key);
}

static enum jf_err get_int(struct k8s *k, const struct jf_ynode *map, const char *path,
			   const char *key, int64_t lo, int64_t hi, int64_t *out,
			   const struct jf_ynode **node)
{
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n = get(map, path, key, kp);
	if (node)
		*node = n;
	return n ? jf_ynode_int(n, kp, lo, hi, out, k->err) : JF_OK;
}

/* ---- metadata ---- */

/*
 * jobfs/after: the native `after:` list, written as one YAML flow list in
 * the annotation's string ("[prep, {group: tasks/x, when: failed}]").  The
 * string is parsed as a document of its own, after as many newlines as
 * lines come before it, so that its nodes, and so every message, carry
 * the spec's line.
 */
static enum jf_err after_annotation(struct k8s *k, const struct jf_ynode *v, const char *kp)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(v, kp, 0, &t, k->err);
	if (rc)
		return rc;
	int line = v->line + (v->block ? 1 : 0);
	size_t pad = line > 1 ? (size_t)line - 1 : 0, len = strlen(t);
	char *text = malloc(pad + len + 1);
	if (!text)
		return jf_error_set(k->err, JF_ENOMEM, 0, "out of memory");
	memset(text, '\n', pad);
	memcpy(text + pad, t, len + 1);
	struct jf_ydoc *doc = NULL;
	struct jf_error e = { 0 };
	struct jf_yopts opts = { .no_aliases = true };
	rc = jf_ydoc_parse_opts(text, pad + len, &opts, &doc, &e);
	free(text);
	if (rc == JF_OK) {
		rc = jf_deps_parse(jf_ydoc_root(doc), kp, &k->s->after, &k->s->nafter, k->err);
		k->s->after_key = "metadata.annotations.jobfs/after";
	} else if (rc == JF_ENOMEM) {
		*k->err = e;
	} else {
		/* the document's own message, without its "line N: " */
		const char *m = e.msg;
		if (strncmp(m, "line ", 5) == 0 && strstr(m, ": "))
			m = strstr(m, ": ") + 2;
		/* a problem at the end of the text is one of its last line */
		int last = line;
		for (const char *c = t; *c; c++)
			last += *c == '\n';
		int at = e.line < line ? line : e.line > last ? last : e.line;
		rc = jf_error_set(k->err, JF_EINVAL, at,
				  "key '%s': not a YAML list of entries (e.g. \"[prep, {group: "
				  "tasks/x, when: failed}]\"): %s",
				  kp, m);
	}
	jf_ydoc_free(doc);
	return rc;
}

static enum jf_err annotation(struct k8s *k, const struct jf_ynode *key, const struct jf_ynode *v,
			      const char *kp)
{
	struct jf_spec *s = k->s;
	const char *name = key->str + strlen("jobfs/");
	enum jf_err rc;
	if (strcmp(name, "billing") == 0)
		return jf_spec_billing(v, kp, &s->billing, k->err);
	if (strcmp(name, "gpu") == 0) {
		free(s->gpu);
		s->gpu = NULL;
		if ((rc = jf_spec_gpu(v, kp, &s->gpu, k->err)))
			return rc;
		jf_spec_src_set(&k->src->gpu, v, kp);
		return JF_OK;
	}
	if (strcmp(name, "nodes") == 0)
		return jf_ynode_int(v, kp, 1, JF_SPEC_MAX_NODES_PER_TASK, &s->nodes, k->err);
	if (strcmp(name, "unit-runtime") == 0)
		return jf_spec_duration(v, kp, 1, JF_SPEC_MAX_DURATION, &s->unit_runtime, k->err);
	if (strcmp(name, "timeout") == 0)
		return jf_spec_duration(v, kp, 1, JF_SPEC_MAX_DURATION, &s->timeout, k->err);
	if (strcmp(name, "retries") == 0) {
		k->retries_annotated = true;
		return jf_ynode_int(v, kp, 0, INT32_MAX, &s->retries, k->err);
	}
	if (strcmp(name, "after") == 0)
		return after_annotation(k, v, kp);
	if (strcmp(name, "shm-size") == 0) {
		if ((rc = jf_spec_mem(v, kp, &s->shm_size, k->err)))
			return rc;
		jf_spec_src_set(&k->src->shm_size, v, kp);
		return JF_OK;
	}
	return jf_error_set(k->err, JF_EINVAL, key->line,
			    "unknown annotation '%s': jobfs reads jobfs/billing, jobfs/gpu, "
			    "jobfs/nodes, jobfs/unit-runtime, jobfs/shm-size, jobfs/timeout, "
			    "jobfs/retries and jobfs/after",
			    key->str);
}

static enum jf_err metadata(struct k8s *k, const struct jf_ynode *md)
{
	static const char *const known[] = { "name", "annotations", NULL };
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	enum jf_err rc = walk(k, md, "metadata", known);
	if (rc)
		return rc;
	if ((n = get(md, "metadata", "name", kp)) &&
	    (rc = jf_spec_name(n, kp, &k->s->name, k->err)))
		return rc;
	const struct jf_ynode *ann = get(md, "metadata", "annotations", kp);
	if (!ann)
		return JF_OK;
	if ((rc = jf_ynode_expect(ann, JF_Y_MAP, kp, k->err)))
		return rc;
	for (size_t i = 0; i < ann->n && !rc; i++) {
		const struct jf_ynode *key = jf_ymap_key(ann, i), *v = jf_ymap_value(ann, i);
		char ap[JF_YPATH_MAX];
		jf_ypath_key(ap, sizeof(ap), "metadata.annotations", key->str);
		if (strncmp(key->str, "jobfs/", 6) != 0)
			rc = jf_spec_ignore(k->s, key, ap, k->err);
		else if (jf_ynode_is_null(v))
			rc = jf_yerror(k->err, JF_EINVAL, key, ap, "the annotation has no value");
		else
			rc = annotation(k, key, v, ap);
	}
	return rc;
}

/* ---- containers ---- */

static enum jf_err env_list(struct k8s *k, const struct jf_ynode *list, const char *path,
			    struct jf_container *c)
{
	static const char *const known[] = { "name", "value", "valueFrom", NULL };
	enum jf_err rc = jf_ynode_expect(list, JF_Y_SEQ, path, k->err);
	if (rc)
		return rc;
	if (list->n > JF_SPEC_MAX_ENV)
		return jf_yerror(k->err, JF_EINVAL, list, path,
				 "more than %d environment variables", JF_SPEC_MAX_ENV);
	for (size_t i = 0; i < list->n; i++) {
		char ip[JF_YPATH_MAX], kp[JF_YPATH_MAX];
		const struct jf_ynode *e = list->items[i], *n, *v;
		const char *name, *value = "";
		jf_ypath_index(ip, sizeof(ip), path, i);
		if ((rc = walk(k, e, ip, known)))
			return rc;
		if (jf_ymap_find_key(e, "valueFrom")) {
			jf_ypath_key(kp, sizeof(kp), ip, "valueFrom");
			return jf_yerror(k->err, JF_ENOTSUP, jf_ymap_find_key(e, "valueFrom"), kp,
					 "valueFrom is not supported: jobfs has no ConfigMaps, "
					 "Secrets or Pod fields to read; give a value");
		}
		if (!(n = get(e, ip, "name", kp)))
			return jf_yerror(k->err, JF_EINVAL, e, kp, "an env entry needs a name");
		if ((rc = jf_ynode_text(n, kp, JF_YSTR_STRICT, &name, k->err)))
			return rc;
		if ((v = get(e, ip, "value", kp)) &&
		    (rc = jf_ynode_text(v, kp, JF_YSTR_STRICT, &value, k->err)))
			return rc;
		if ((rc = jf_spec_env_set(c, name, strlen(name), value, strlen(value), n, ip,
					  k->err)))
			return rc;
	}
	return JF_OK;
}

static enum jf_err container(struct k8s *k, const struct jf_ynode *m, const char *path, size_t idx,
			     struct jf_container *c)
{
	static const char *const known[] = { "name",      "image",        "imagePullPolicy",
					     "command",   "args",         "env",
					     "resources", "volumeMounts", NULL };
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	enum jf_err rc;

	c->gpus = -1;
	k->src->cont[idx] = m;
	if ((rc = walk(k, m, path, known)))
		return rc;
	if (!(n = get(m, path, "name", kp)))
		return jf_yerror(k->err, JF_EINVAL, m, kp, "a container needs a name");
	if ((rc = jf_spec_container_name(n, kp, &c->name, k->err)))
		return rc;
	if ((n = get(m, path, "image", kp)) && (rc = jf_spec_image(n, kp, &c->image, k->err)))
		return rc;
	if ((n = get(m, path, "imagePullPolicy", kp)) &&
	    (rc = jf_spec_pull_policy(n, kp, &c->pull_policy, k->err)))
		return rc;
	if ((n = get(m, path, "command", kp)) &&
	    (rc = jf_ynode_strlist(n, kp, 0, JF_SPEC_MAX_ARGV, &c->command, &c->ncommand, k->err)))
		return rc;
	if ((n = get(m, path, "args", kp)) &&
	    (rc = jf_ynode_strlist(n, kp, 0, JF_SPEC_MAX_ARGV, &c->args, &c->nargs, k->err)))
		return rc;
	if (c->ncommand + c->nargs > JF_SPEC_MAX_ARGV)
		return jf_yerror(k->err, JF_EINVAL, n, kp,
				 "command and args have more than %d entries together",
				 JF_SPEC_MAX_ARGV);
	if ((n = get(m, path, "env", kp)) && (rc = env_list(k, n, kp, c)))
		return rc;
	if ((n = get(m, path, "resources", kp)) &&
	    (rc = jf_spec_resources(n, kp, c, k->s, &k->src->cont_gpu[idx], k->err)))
		return rc;
	return JF_OK;
}

/* ---- volumes: emptyDir (reference 8.3), the rest ignored ---- */

/* The pod's emptyDir volumes that a container mounts become the node's
 * emptydirs, at the path they are mounted at (jobfs mounts a node's
 * storage in every container of it, so a volume mounted at two paths, or
 * with a subPath, is refused: it would not mean the same).  Other kinds of
 * volume, and their mounts, go to ignored. */
static enum jf_err pod_volumes(struct k8s *k, const struct jf_ynode *ps, const char *path)
{
	char vp[JF_YPATH_MAX], kp[JF_YPATH_MAX];
	const struct jf_ynode *vols = get(ps, path, "volumes", vp);
	enum jf_err rc;
	if (vols && (rc = jf_ynode_expect(vols, JF_Y_SEQ, vp, k->err)))
		return rc;
	size_t nv = vols ? vols->n : 0;
	if (nv > JF_SPEC_MAX_STORAGE)
		return jf_yerror(k->err, JF_EINVAL, vols, vp, "more than %d volumes",
				 JF_SPEC_MAX_STORAGE);
	const char *names[JF_SPEC_MAX_STORAGE];
	const struct jf_ynode *empty[JF_SPEC_MAX_STORAGE]; /* its emptyDir, or NULL */
	int used[JF_SPEC_MAX_STORAGE];                     /* its storage entry + 1, or 0 */
	for (size_t i = 0; i < nv; i++) {
		char ip[JF_YPATH_MAX];
		const struct jf_ynode *v = vols->items[i], *n;
		jf_ypath_index(ip, sizeof(ip), vp, i);
		if ((rc = jf_ynode_expect(v, JF_Y_MAP, ip, k->err)))
			return rc;
		if (!(n = get(v, ip, "name", kp)))
			return jf_yerror(k->err, JF_EINVAL, v, kp, "a volume needs a name");
		if ((rc = jf_ynode_text(n, kp, JF_YSTR_STRICT, &names[i], k->err)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(names[j], names[i]))
				return jf_yerror(k->err, JF_EINVAL, n, kp,
						 "volume name '%.64s' is used twice", names[i]);
		empty[i] = jf_ymap_get(v, "emptyDir");
		used[i] = 0;
		for (size_t f = 0; f < v->n; f++) {
			const struct jf_ynode *key = jf_ymap_key(v, f);
			if (!strcmp(key->str, "name") ||
			    (empty[i] && !strcmp(key->str, "emptyDir")))
				continue;
			char fp[JF_YPATH_MAX];
			jf_ypath_key(fp, sizeof(fp), ip, key->str);
			if ((rc = jf_spec_ignore(k->s, key, fp, k->err)))
				return rc;
		}
		if (empty[i] && !jf_ynode_is_null(empty[i])) {
			static const char *const ek[] = { "medium", "sizeLimit", NULL };
			jf_ypath_key(kp, sizeof(kp), ip, "emptyDir");
			if ((rc = walk(k, empty[i], kp, ek)))
				return rc;
		}
	}
	struct jf_spec *s = k->s;
	for (size_t c = 0; c < s->ncontainers; c++) {
		const struct jf_ynode *cm = k->src->cont[c];
		char cp[JF_YPATH_MAX], mp[JF_YPATH_MAX];
		jf_ypath_key(cp, sizeof(cp), path, "containers");
		jf_ypath_index(cp, sizeof(cp), cp, c);
		const struct jf_ynode *mounts = get(cm, cp, "volumeMounts", mp);
		if (!mounts)
			continue;
		if ((rc = jf_ynode_expect(mounts, JF_Y_SEQ, mp, k->err)))
			return rc;
		for (size_t m = 0; m < mounts->n; m++) {
			static const char *const mk[] = { "name", "mountPath", "readOnly", NULL };
			char ip[JF_YPATH_MAX];
			const struct jf_ynode *vm = mounts->items[m], *n;
			const char *name, *at;
			jf_ypath_index(ip, sizeof(ip), mp, m);
			if ((rc = jf_ynode_expect(vm, JF_Y_MAP, ip, k->err)))
				return rc;
			if (!(n = get(vm, ip, "name", kp)))
				return jf_yerror(k->err, JF_EINVAL, vm, kp,
						 "a volumeMount needs a name");
			if ((rc = jf_ynode_text(n, kp, JF_YSTR_STRICT, &name, k->err)))
				return rc;
			size_t v = 0;
			while (v < nv && strcmp(names[v], name))
				v++;
			if (v == nv)
				return jf_yerror(
					k->err, JF_EINVAL, n, kp,
					"no volume named '%.64s' in spec.template.spec.volumes",
					name);
			if (!empty[v]) {
				/* not an emptyDir: ignored with its volume */
				if ((rc = jf_spec_ignore(k->s, jf_ymap_find_key(cm, "volumeMounts"),
							 ip, k->err)))
					return rc;
				continue;
			}
			if (jf_ymap_get(vm, "subPath") || jf_ymap_get(vm, "subPathExpr")) {
				jf_ypath_key(kp, sizeof(kp), ip, "subPath");
				return jf_yerror(
					k->err, JF_ENOTSUP, vm, kp,
					"subPath is not supported: jobfs mounts an emptyDir "
					"whole, in every container of the node");
			}
			if ((rc = walk(k, vm, ip, mk)))
				return rc;
			if (!(n = get(vm, ip, "mountPath", kp)))
				return jf_yerror(k->err, JF_EINVAL, vm, kp,
						 "a volumeMount needs a mountPath");
			if ((rc = jf_ynode_text(n, kp, JF_YSTR_STRICT, &at, k->err)))
				return rc;
			if (used[v]) {
				if (strcmp(s->storage[used[v] - 1].path, at) != 0)
					return jf_yerror(k->err, JF_ENOTSUP, n, kp,
							 "emptyDir '%.64s' is mounted at %.200s "
							 "and at %.200s: "
							 "jobfs mounts a node's storage at one "
							 "path in every "
							 "container",
							 name, s->storage[used[v] - 1].path, at);
				continue;
			}
			/* a new emptydir: the entry a native spec would have */
			struct jf_storage *grown =
				realloc(s->storage, (s->nstorage + 1) * sizeof(*s->storage));
			if (!grown)
				return oom(k->err);
			s->storage = grown;
			struct jf_storage *st = &s->storage[s->nstorage];
			memset(st, 0, sizeof(*st));
			s->nstorage++;
			used[v] = (int)s->nstorage;
			if (at[0] != '/' || strstr(at, "/../") || !strcmp(at, "/") ||
			    strpbrk(at, ":,") ||
			    (strlen(at) >= 3 && !strcmp(at + strlen(at) - 3, "/..")))
				return jf_yerror(k->err, JF_EINVAL, n, kp,
						 "\"%.64s\" must be an absolute path without '..'",
						 at);
			if (!(st->path = strdup(at)) || !(st->name = strdup(name)))
				return oom(k->err);
			st->type = JF_STORE_EMPTYDIR;
			if (!k->src->storage.node)
				jf_spec_src_set(&k->src->storage, n, kp);
			const struct jf_ynode *e = empty[v], *x;
			char ep[JF_YPATH_MAX];
			jf_ypath_index(ep, sizeof(ep), vp, v);
			jf_ypath_key(ep, sizeof(ep), ep, "emptyDir");
			if (e && (x = jf_ymap_get(e, "sizeLimit"))) {
				jf_ypath_key(kp, sizeof(kp), ep, "sizeLimit");
				if ((rc = jf_spec_mem(x, kp, &st->size, k->err)))
					return rc;
			}
			if (e && (x = jf_ymap_get(e, "medium"))) {
				const char *med;
				jf_ypath_key(kp, sizeof(kp), ep, "medium");
				if ((rc = jf_ynode_text(x, kp, 0, &med, k->err)))
					return rc;
				if (!strcmp(med, "Memory"))
					st->memory = true;
				else if (med[0])
					return jf_yerror(k->err, JF_ENOTSUP, x, kp,
							 "medium %.32s is not supported: Memory or "
							 "\"\" (the node's disk)",
							 med);
			}
		}
	}
	/* an emptyDir no container mounts does nothing: say so */
	for (size_t i = 0; i < nv; i++)
		if (empty[i] && !used[i]) {
			char ip[JF_YPATH_MAX];
			jf_ypath_index(ip, sizeof(ip), vp, i);
			if ((rc = jf_spec_ignore(k->s, jf_ymap_find_key(vols->items[i], "emptyDir"),
						 ip, k->err)))
				return rc;
		}
	return JF_OK;
}

static enum jf_err pod_spec(struct k8s *k, const struct jf_ynode *ps, const char *path)
{
	static const char *const known[] = { "restartPolicy", "containers", "volumes", NULL };
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	enum jf_err rc = walk(k, ps, path, known);
	if (rc)
		return rc;
	if ((n = get(ps, path, "restartPolicy", kp)) &&
	    (rc = jf_spec_restart(n, kp, &k->s->restart_policy, k->err)))
		return rc;
	const struct jf_ynode *list = get(ps, path, "containers", kp);
	if (!list)
		return jf_yerror(k->err, JF_EINVAL, ps, kp, "a Job needs at least one container");
	if ((rc = jf_ynode_expect(list, JF_Y_SEQ, kp, k->err)))
		return rc;
	if (list->n == 0 || list->n > JF_SPEC_MAX_CONTAINERS)
		return jf_yerror(k->err, JF_EINVAL, list, kp, "%zu containers: must be 1 to %d",
				 list->n, JF_SPEC_MAX_CONTAINERS);
	k->s->containers = calloc(list->n, sizeof(*k->s->containers));
	if (!k->s->containers)
		return oom(k->err);
	k->s->ncontainers = list->n;
	for (size_t i = 0; i < list->n; i++) {
		char ip[JF_YPATH_MAX];
		jf_ypath_index(ip, sizeof(ip), kp, i);
		if ((rc = container(k, list->items[i], ip, i, &k->s->containers[i])))
			return rc;
	}
	return pod_volumes(k, ps, path);
}

/* ---- podFailurePolicy ---- */

static enum jf_err exit_codes(struct k8s *k, const struct jf_ynode *m, const char *path,
			      struct jf_pfp_rule *r)
{
	static const char *const known[] = { "containerName", "operator", "values", NULL };
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	const char *t;
	enum jf_err rc = walk(k, m, path, known);
	if (rc)
		return rc;
	r->on_exit_codes = true;
	if ((n = get(m, path, "containerName", kp))) {
		if ((rc = jf_ynode_str(n, kp, 0, &r->container, k->err)))
			return rc;
		size_t i;
		for (i = 0; i < k->s->ncontainers; i++)
			if (strcmp(k->s->containers[i].name, r->container) == 0)
				break;
		if (i == k->s->ncontainers)
			return jf_yerror(k->err, JF_EINVAL, n, kp, "no container is named '%.64s'",
					 r->container);
	}
	if (!(n = get(m, path, "operator", kp)))
		return jf_yerror(k->err, JF_EINVAL, m, kp, "operator is required: In or NotIn");
	if ((rc = jf_ynode_text(n, kp, 0, &t, k->err)))
		return rc;
	if (strcmp(t, "In") != 0 && strcmp(t, "NotIn") != 0)
		return jf_yerror(k->err, JF_EINVAL, n, kp, "must be In or NotIn, got \"%.64s\"", t);
	r->op_in = strcmp(t, "In") == 0;
	const struct jf_ynode *vals = get(m, path, "values", kp);
	if (!vals)
		return jf_yerror(k->err, JF_EINVAL, m, kp,
				 "values is required: a list of exit codes");
	if ((rc = jf_ynode_expect(vals, JF_Y_SEQ, kp, k->err)))
		return rc;
	if (vals->n == 0 || vals->n > K8S_MAX_EXITCODES)
		return jf_yerror(k->err, JF_EINVAL, vals, kp, "%zu exit codes: must be 1 to %d",
				 vals->n, K8S_MAX_EXITCODES);
	if (!(r->values = calloc(vals->n, sizeof(*r->values))))
		return oom(k->err);
	for (size_t i = 0; i < vals->n; i++) {
		char ip[JF_YPATH_MAX];
		int64_t v;
		jf_ypath_index(ip, sizeof(ip), kp, i);
		if ((rc = jf_ynode_int(vals->items[i], ip, INT32_MIN, INT32_MAX, &v, k->err)))
			return rc;
		if (v == 0 && r->op_in)
			return jf_yerror(k->err, JF_EINVAL, vals->items[i], ip,
					 "0 (success) cannot be used with the In operator");
		for (size_t j = 0; j < r->nvalues; j++)
			if (r->values[j] == v)
				return jf_yerror(k->err, JF_EINVAL, vals->items[i], ip,
						 "exit code %lld is listed twice", (long long)v);
		r->values[r->nvalues++] = (int)v;
	}
	return JF_OK;
}

static enum jf_err pod_conditions(struct k8s *k, const struct jf_ynode *list, const char *path,
				  struct jf_pfp_rule *r)
{
	static const char *const known[] = { "type", "status", NULL };
	enum jf_err rc = jf_ynode_expect(list, JF_Y_SEQ, path, k->err);
	if (rc)
		return rc;
	if (list->n == 0 || list->n > K8S_MAX_RULES)
		return jf_yerror(k->err, JF_EINVAL, list, path, "%zu conditions: must be 1 to %d",
				 list->n, K8S_MAX_RULES);
	for (size_t i = 0; i < list->n; i++) {
		char ip[JF_YPATH_MAX], kp[JF_YPATH_MAX];
		const struct jf_ynode *m = list->items[i], *n;
		const char *t;
		jf_ypath_index(ip, sizeof(ip), path, i);
		if ((rc = walk(k, m, ip, known)))
			return rc;
		if (!(n = get(m, ip, "type", kp)))
			return jf_yerror(k->err, JF_EINVAL, m, kp, "a condition needs a type");
		if ((rc = jf_ynode_text(n, kp, 0, &t, k->err)))
			return rc;
		if (strcmp(t, "DisruptionTarget") != 0)
			return jf_yerror(k->err, JF_ENOTSUP, n, kp,
					 "condition %.64s is not supported: jobfs knows "
					 "DisruptionTarget (a preemption)",
					 t);
		if ((n = get(m, ip, "status", kp))) {
			if ((rc = jf_ynode_text(n, kp, 0, &t, k->err)))
				return rc;
			if (strcmp(t, "True") != 0)
				return jf_yerror(k->err, JF_ENOTSUP, n, kp,
						 "status %.64s is not supported: jobfs matches "
						 "DisruptionTarget with status \"True\"",
						 t);
		}
	}
	r->on_disruption = true;
	return JF_OK;
}

static enum jf_err pod_failure_policy(struct k8s *k, const struct jf_ynode *m)
{
	static const char *const known[] = { "rules", NULL };
	static const char *const rule_keys[] = { "action", "onExitCodes", "onPodConditions", NULL };
	static const char *const actions[] = {
		[JF_PFP_FAILJOB] = "FailJob",
		[JF_PFP_FAILINDEX] = "FailIndex",
		[JF_PFP_IGNORE] = "Ignore",
		[JF_PFP_COUNT] = "Count",
	};
	const char *path = "spec.podFailurePolicy";
	char kp[JF_YPATH_MAX];
	enum jf_err rc = walk(k, m, path, known);
	if (rc)
		return rc;
	const struct jf_ynode *rules = get(m, path, "rules", kp);
	if (!rules)
		return jf_yerror(k->err, JF_EINVAL, m, kp, "a podFailurePolicy needs rules");
	if ((rc = jf_ynode_expect(rules, JF_Y_SEQ, kp, k->err)))
		return rc;
	if (rules->n > K8S_MAX_RULES)
		return jf_yerror(k->err, JF_EINVAL, rules, kp, "more than %d rules", K8S_MAX_RULES);
	if (rules->n == 0)
		return JF_OK;
	if (!(k->s->pfp = calloc(rules->n, sizeof(*k->s->pfp))))
		return oom(k->err);
	k->s->npfp = rules->n;
	for (size_t i = 0; i < rules->n; i++) {
		char ip[JF_YPATH_MAX], ap[JF_YPATH_MAX], cp[JF_YPATH_MAX];
		const struct jf_ynode *r = rules->items[i], *n, *codes, *conds;
		struct jf_pfp_rule *rule = &k->s->pfp[i];
		const char *t;
		jf_ypath_index(ip, sizeof(ip), kp, i);
		if ((rc = walk(k, r, ip, rule_keys)))
			return rc;
		if (!(n = get(r, ip, "action", ap)))
			return jf_yerror(
				k->err, JF_EINVAL, r, ap,
				"a rule needs an action: FailJob, FailIndex, Ignore or Count");
		if ((rc = jf_ynode_text(n, ap, 0, &t, k->err)))
			return rc;
		size_t a;
		for (a = 0; a < sizeof(actions) / sizeof(actions[0]); a++)
			if (strcmp(t, actions[a]) == 0)
				break;
		if (a == sizeof(actions) / sizeof(actions[0]))
			return jf_yerror(
				k->err, JF_EINVAL, n, ap,
				"must be FailJob, FailIndex, Ignore or Count, got \"%.64s\"", t);
		rule->action = (enum jf_pfp_action)a;
		if (rule->action == JF_PFP_FAILINDEX && !k->per_index_set)
			return jf_yerror(k->err, JF_EINVAL, n, ap,
					 "FailIndex needs spec.backoffLimitPerIndex");
		codes = get(r, ip, "onExitCodes", ap);
		conds = get(r, ip, "onPodConditions", cp);
		if ((codes != NULL) == (conds != NULL))
			return jf_yerror(
				k->err, JF_EINVAL, r, ip,
				"a rule needs exactly one of onExitCodes and onPodConditions");
		rc = codes ? exit_codes(k, codes, ap, rule) : pod_conditions(k, conds, cp, rule);
		if (rc)
			return rc;
	}
	return JF_OK;
}

/* ---- successPolicy ---- */

static enum jf_err parse_indexes(struct k8s *k, const struct jf_ynode *n, const char *path,
				 struct jf_success_rule *r)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, k->err);
	if (rc)
		return rc;
	size_t cap = 1;
	for (const char *p = t; *p; p++)
		cap += *p == ',';
	if (!(r->indexes = calloc(cap, sizeof(*r->indexes))))
		return oom(k->err);
	const char *p = t;
	int64_t prev = -1;
	for (;;) {
		int64_t lo = 0, hi;
		if (*p < '0' || *p > '9')
			goto bad;
		for (; *p >= '0' && *p <= '9'; p++) {
			lo = lo * 10 + (*p - '0');
			if (lo >= k->s->completions)
				goto range;
		}
		hi = lo;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				goto bad;
			for (hi = 0; *p >= '0' && *p <= '9'; p++) {
				hi = hi * 10 + (*p - '0');
				if (hi >= k->s->completions)
					goto range;
			}
		}
		if (hi < lo || lo <= prev)
			return jf_yerror(k->err, JF_EINVAL, n, path,
					 "\"%.64s\": intervals must be ascending and not overlap",
					 t);
		r->indexes[r->nindexes].lo = lo;
		r->indexes[r->nindexes].hi = hi;
		r->nindexes++;
		prev = hi;
		if (*p == '\0')
			return JF_OK;
		if (*p++ != ',')
			goto bad;
	}
bad:
	return jf_yerror(k->err, JF_EINVAL, n, path, "bad index list \"%.64s\" (e.g. \"0,2-3\")",
			 t);
range:
	return jf_yerror(k->err, JF_EINVAL, n, path,
			 "\"%.64s\": indexes must be below completions (%lld)", t,
			 (long long)k->s->completions);
}

static enum jf_err success_policy(struct k8s *k, const struct jf_ynode *m)
{
	static const char *const known[] = { "rules", NULL };
	static const char *const rule_keys[] = { "succeededIndexes", "succeededCount", NULL };
	const char *path = "spec.successPolicy";
	char kp[JF_YPATH_MAX];
	enum jf_err rc = walk(k, m, path, known);
	if (rc)
		return rc;
	const struct jf_ynode *rules = get(m, path, "rules", kp);
	if (!rules)
		return jf_yerror(k->err, JF_EINVAL, m, kp, "a successPolicy needs rules");
	if ((rc = jf_ynode_expect(rules, JF_Y_SEQ, kp, k->err)))
		return rc;
	if (rules->n == 0 || rules->n > K8S_MAX_RULES)
		return jf_yerror(k->err, JF_EINVAL, rules, kp, "%zu rules: must be 1 to %d",
				 rules->n, K8S_MAX_RULES);
	if (!(k->s->success = calloc(rules->n, sizeof(*k->s->success))))
		return oom(k->err);
	k->s->nsuccess = rules->n;
	for (size_t i = 0; i < rules->n; i++) {
		char ip[JF_YPATH_MAX], ap[JF_YPATH_MAX];
		const struct jf_ynode *r = rules->items[i], *idx, *cnt;
		struct jf_success_rule *rule = &k->s->success[i];
		jf_ypath_index(ip, sizeof(ip), kp, i);
		if ((rc = walk(k, r, ip, rule_keys)))
			return rc;
		idx = get(r, ip, "succeededIndexes", ap);
		if (idx && (rc = parse_indexes(k, idx, ap, rule)))
			return rc;
		int64_t total = k->s->completions;
		if (idx) {
			total = 0;
			for (size_t j = 0; j < rule->nindexes; j++)
				total += rule->indexes[j].hi - rule->indexes[j].lo + 1;
		}
		cnt = get(r, ip, "succeededCount", ap);
		if (!idx && !cnt)
			return jf_yerror(k->err, JF_EINVAL, r, ip,
					 "a rule needs succeededIndexes or succeededCount");
		if (cnt && (rc = jf_ynode_int(cnt, ap, 1, total, &rule->count, k->err)))
			return rc;
	}
	return JF_OK;
}

/* ---- spec ---- */

static enum jf_err job_spec(struct k8s *k, const struct jf_ynode *spec)
{
	static const char *const known[] = { "completions",
					     "parallelism",
					     "completionMode",
					     "backoffLimit",
					     "backoffLimitPerIndex",
					     "maxFailedIndexes",
					     "activeDeadlineSeconds",
					     "successPolicy",
					     "podFailurePolicy",
					     "template",
					     NULL };
	struct jf_spec *s = k->s;
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	enum jf_err rc = walk(k, spec, "spec", known);
	if (rc)
		return rc;
	if (k->place == JF_PLACE_BATCH) {
		static const char *const refused[] = { "completions", "parallelism", NULL };
		for (const char *const *r = refused; *r; r++)
			if ((n = jf_ymap_find_key(spec, *r)))
				return jf_error_set(
					k->err, JF_EINVAL, n->line,
					"key 'spec.%s': an independent task under /tasks "
					"has no %s (use a queue group)",
					*r, *r);
	}
	if ((rc = get_int(k, spec, "spec", "completions", 1, JF_SPEC_MAX_COMPLETIONS,
			  &s->completions, &n)))
		return rc;
	k->completions_set = n != NULL;
	if ((rc = get_int(k, spec, "spec", "parallelism", 1, JF_SPEC_MAX_COMPLETIONS,
			  &s->parallelism, NULL)) ||
	    (rc = get_int(k, spec, "spec", "backoffLimit", 0, INT32_MAX, &s->max_failures, &n)))
		return rc;
	k->backoff_set = n != NULL;
	if ((rc = get_int(k, spec, "spec", "backoffLimitPerIndex", 0, INT32_MAX, &s->retries,
			  &k->per_index)))
		return rc;
	k->per_index_set = k->per_index != NULL;
	if ((rc = get_int(k, spec, "spec", "maxFailedIndexes", 0, s->completions,
			  &s->max_failed_indexes, &k->max_failed)) ||
	    (rc = get_int(k, spec, "spec", "activeDeadlineSeconds", 1, INT32_MAX,
			  &s->active_deadline, NULL)))
		return rc;
	if ((n = get(spec, "spec", "completionMode", kp))) {
		const char *t;
		if ((rc = jf_ynode_text(n, kp, 0, &t, k->err)))
			return rc;
		if (strcmp(t, "Indexed") != 0 && strcmp(t, "NonIndexed") != 0)
			return jf_yerror(k->err, JF_EINVAL, n, kp,
					 "must be NonIndexed or Indexed, got \"%.64s\"", t);
		s->indexed = t[0] == 'I';
		k->mode = n;
	}
	const struct jf_ynode *tpl = get(spec, "spec", "template", kp);
	if (!tpl)
		return jf_yerror(k->err, JF_EINVAL, spec, kp, "a Job needs a pod template");
	static const char *const tpl_keys[] = { "spec", NULL };
	if ((rc = walk(k, tpl, kp, tpl_keys)))
		return rc;
	const struct jf_ynode *ps = get(tpl, kp, "spec", kp);
	if (!ps)
		return jf_yerror(k->err, JF_EINVAL, tpl, kp, "a pod template needs a spec");
	if ((rc = pod_spec(k, ps, kp)))
		return rc;
	if ((k->pfp = get(spec, "spec", "podFailurePolicy", kp)) &&
	    (rc = pod_failure_policy(k, k->pfp)))
		return rc;
	if ((k->success = get(spec, "spec", "successPolicy", kp)) &&
	    (rc = success_policy(k, k->success)))
		return rc;
	return JF_OK;
}

/* The Kubernetes API's rules that tie fields together. */
static enum jf_err job_rules(struct k8s *k, const struct jf_ynode *spec)
{
	struct jf_spec *s = k->s;
	struct jf_error *err = k->err;
	if (s->indexed && !k->completions_set)
		return jf_yerror(err, JF_EINVAL, k->mode, "spec.completionMode",
				 "an Indexed Job needs spec.completions");
	if (k->per_index_set && !s->indexed)
		return jf_yerror(err, JF_EINVAL, k->per_index, "spec.backoffLimitPerIndex",
				 "needs spec.completionMode: Indexed");
	if (k->max_failed && !k->per_index_set)
		return jf_yerror(err, JF_EINVAL, k->max_failed, "spec.maxFailedIndexes",
				 "needs spec.backoffLimitPerIndex");
	if (k->success && !s->indexed)
		return jf_yerror(err, JF_EINVAL, jf_ymap_find_key(spec, "successPolicy"),
				 "spec.successPolicy", "needs spec.completionMode: Indexed");
	if (k->pfp && s->restart_policy != JF_RESTART_NEVER)
		return jf_yerror(err, JF_EINVAL, jf_ymap_find_key(spec, "podFailurePolicy"),
				 "spec.podFailurePolicy",
				 "needs spec.template.spec.restartPolicy: Never");
	if (k->retries_annotated && k->per_index_set)
		return jf_yerror(err, JF_EINVAL, k->per_index, "spec.backoffLimitPerIndex",
				 "give either this or the annotation jobfs/retries, not both");
	if (k->per_index_set && !k->backoff_set)
		s->max_failures = -1; /* Kubernetes: unlimited with a per-index limit */
	return JF_OK;
}

enum jf_err jf_spec_k8s(const struct jf_ynode *root, enum jf_spec_place place, struct jf_spec *s,
			struct jf_spec_src *src, struct jf_error *err)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	struct k8s k = { .s = s, .src = src, .err = err, .place = place };
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	enum jf_err rc;

	s->form = JF_FORM_K8S;
	s->billing = JF_BILL_ONDEMAND;
	s->completions = 1;
	s->parallelism = 1;
	s->count = 1;
	s->nodes = 1;
	s->node_index = true;
	s->timeout = 1440 * 60;
	s->restart_policy = JF_RESTART_NEVER;
	s->retries = -1;
	s->max_failures = 6;
	s->max_failed_indexes = -1;
	src->parallelism_set = true;
	snprintf(src->containers_path, sizeof(src->containers_path),
		 "spec.template.spec.containers");
	src->command_hint = "'command' or 'args' in a container";

	if ((rc = walk(&k, root, "", known)))
		return rc;
	if ((n = get(root, "", "metadata", kp)) && (rc = metadata(&k, n)))
		return rc;
	if (!(n = get(root, "", "spec", kp)))
		return jf_yerror(err, JF_EINVAL, root, "spec", "a Job needs a spec");
	if ((rc = job_spec(&k, n)) || (rc = job_rules(&k, n)))
		return rc;
	return JF_OK;
}

/*
 * spec.c - jf_spec_parse(): size and text checks, choosing the form, and
 * the rules both forms share.
 *
 * Flow: reject oversize input (JF_EFBIG) and non-text; parse the YAML once;
 * a top level with apiVersion batch/v1 and kind Job is a Kubernetes Job:
 * substitute ${VAR} in the raw text and parse again (only then; native
 * specs are never substituted).  The form parser fills a zeroed spec and
 * notes where keys were written; jf_spec_finish() applies defaults that
 * depend on other keys and the cross-key checks, then refuses, with
 * JF_ENOTSUP, what the local backend cannot honour.  EINVAL problems are
 * reported before ENOTSUP ones, so a typo is never hidden behind them.
 *
 * A spec is built in one heap object and freed whole on any error: the
 * caller gets a complete spec or NULL.
 */
#include "core/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/imgref.h"
#include "core/quantity.h"
#include "core/spec_priv.h"

void jf_spec_free(struct jf_spec *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->gpu);
	free(s->registry_auth);
	for (size_t i = 0; i < s->nports; i++)
		free(s->ports[i].name);
	free(s->ports);
	for (size_t i = 0; i < s->ncontainers; i++) {
		struct jf_container *c = &s->containers[i];
		free(c->name);
		free(c->image);
		for (size_t j = 0; j < c->ncommand; j++)
			free(c->command[j]);
		free(c->command);
		for (size_t j = 0; j < c->nargs; j++)
			free(c->args[j]);
		free(c->args);
		for (size_t j = 0; j < c->nenv; j++) {
			free(c->env[j].key);
			free(c->env[j].value);
		}
		free(c->env);
	}
	free(s->containers);
	for (size_t i = 0; i < s->nstorage; i++) {
		free(s->storage[i].name);
		free(s->storage[i].path);
	}
	free(s->storage);
	for (size_t i = 0; i < s->npfp; i++) {
		free(s->pfp[i].container);
		free(s->pfp[i].values);
	}
	free(s->pfp);
	for (size_t i = 0; i < s->nsuccess; i++)
		free(s->success[i].indexes);
	free(s->success);
	free(s->after);
	for (size_t i = 0; i < s->nignored; i++)
		free(s->ignored[i]);
	free(s->ignored);
	free(s);
}

bool jf_spec_text_plausible(const char *text, size_t len, struct jf_error *err)
{
	if (len > JF_SPEC_MAX_BYTES) {
		jf_error_set(err, JF_EFBIG, 0, "the spec is %zu bytes, more than the limit of %d",
			     len, JF_SPEC_MAX_BYTES);
		return false;
	}
	return jf_ytext_check(text, len, true, err) == JF_OK;
}

/* ---- shared value readers ---- */

void jf_spec_src_set(struct jf_src_key *k, const struct jf_ynode *n, const char *path)
{
	k->node = n;
	snprintf(k->path, sizeof(k->path), "%s", path);
}

enum jf_err jf_spec_ignore(struct jf_spec *s, const struct jf_ynode *key, const char *path,
			   struct jf_error *err)
{
	/* capacity is the next power of two, so it need not be stored */
	size_t n = s->nignored;
	if (n >= JF_SPEC_MAX_IGNORED)
		return jf_yerror(err, JF_EINVAL, key, path,
				 "more than %d Kubernetes fields that jobfs does not model "
				 "(they would be listed under ignored:); remove what is not "
				 "needed",
				 JF_SPEC_MAX_IGNORED);
	if (n == 0 || (n & (n - 1)) == 0) {
		char **p = realloc(s->ignored, (n ? 2 * n : 4) * sizeof(*p));
		if (!p)
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		s->ignored = p;
	}
	s->ignored[n] = strdup(path);
	if (!s->ignored[n])
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	s->nignored++;
	return JF_OK;
}

enum jf_err jf_spec_name(const struct jf_ynode *n, const char *path, char **out,
			 struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	size_t chars = 0;
	const unsigned char *p = (const unsigned char *)t;
	bool bad = false;
	for (; *p; p++) {
		if ((*p & 0xc0) != 0x80)
			chars++;
		if (*p < 0x20 || *p == 0x7f || *p == '/')
			bad = true;
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			bad = true; /* C1 control characters */
	}
	if (bad || chars == 0 || chars > JF_SPEC_MAX_NAME)
		return jf_yerror(
			err, JF_EINVAL, n, path,
			"a name is 1 to %d printable characters without '/', got \"%.80s\"",
			JF_SPEC_MAX_NAME, t);
	*out = strdup(t);
	return *out ? JF_OK : jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

static bool dns_label(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > JF_SPEC_MAX_NAME || s[0] == '-' || s[len - 1] == '-')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

enum jf_err jf_spec_image(const struct jf_ynode *n, const char *path, char **out,
			  struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	struct jf_imgref ref;
	struct jf_error e2;
	jf_error_clear(&e2);
	if (jf_imgref_parse(t, &ref, &e2))
		return jf_yerror(err, JF_EINVAL, n, path, "%s", e2.msg);
	*out = strdup(t);
	return *out ? JF_OK : jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

enum jf_err jf_spec_pull_policy(const struct jf_ynode *n, const char *path,
				enum jf_pull_policy *out, struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (!strcmp(t, "Always"))
		*out = JF_PULL_ALWAYS;
	else if (!strcmp(t, "IfNotPresent"))
		*out = JF_PULL_IFNOTPRESENT;
	else if (!strcmp(t, "Never"))
		*out = JF_PULL_NEVER;
	else
		return jf_yerror(err, JF_EINVAL, n, path,
				 "\"%.40s\": must be Always, IfNotPresent or Never", t);
	return JF_OK;
}

enum jf_err jf_spec_container_name(const struct jf_ynode *n, const char *path, char **out,
				   struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (!dns_label(t))
		return jf_yerror(err, JF_EINVAL, n, path,
				 "container name \"%.80s\": use 1 to %d lowercase letters, "
				 "digits and '-', starting and ending with a letter or digit",
				 t, JF_SPEC_MAX_NAME);
	*out = strdup(t);
	return *out ? JF_OK : jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

enum jf_err jf_spec_duration(const struct jf_ynode *n, const char *path, int64_t lo, int64_t hi,
			     int64_t *out, struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	int64_t v;
	if (!jf_duration_parse(t, &v))
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad duration \"%.64s\": use e.g. 90s, 30m, 2h or 1h30m", t);
	if (v < lo || v > hi) {
		char a[32], b[32];
		jf_duration_format(lo, a, sizeof(a));
		jf_duration_format(hi, b, sizeof(b));
		return jf_yerror(err, JF_EINVAL, n, path,
				 "duration %.64s is out of range: must be %s to %s", t, a, b);
	}
	*out = v;
	return JF_OK;
}

enum jf_err jf_spec_cpu(const struct jf_ynode *n, const char *path, int64_t *out,
			struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (!jf_cpu_parse(t, out))
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad CPU quantity \"%.64s\" (e.g. 2, 0.5, 14000m)", t);
	if (*out == 0)
		return jf_yerror(err, JF_EINVAL, n, path, "CPU quantity must be more than 0");
	return JF_OK;
}

enum jf_err jf_spec_mem(const struct jf_ynode *n, const char *path, int64_t *out,
			struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (!jf_mem_parse(t, out))
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad memory quantity \"%.64s\" (e.g. 512Mi, 8Gi, 1e9)", t);
	if (*out == 0)
		return jf_yerror(err, JF_EINVAL, n, path, "memory quantity must be more than 0");
	return JF_OK;
}

enum jf_err jf_spec_gpu(const struct jf_ynode *n, const char *path, char **out,
			struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	size_t len = strlen(t);
	bool ok = len > 0 && len <= JF_SPEC_MAX_NAME;
	for (const char *p = t; *p && ok; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		     (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
	if (!ok)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad GPU model \"%.64s\" (e.g. \"4090\", \"H800\")", t);
	*out = strdup(t);
	return *out ? JF_OK : jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

enum jf_err jf_spec_billing(const struct jf_ynode *n, const char *path, enum jf_billing *out,
			    struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (strcmp(t, "spot") == 0)
		*out = JF_BILL_SPOT;
	else if (strcmp(t, "on-demand") == 0)
		*out = JF_BILL_ONDEMAND;
	else
		return jf_yerror(err, JF_EINVAL, n, path,
				 "must be spot or on-demand, got \"%.64s\"", t);
	return JF_OK;
}

enum jf_err jf_spec_restart(const struct jf_ynode *n, const char *path, enum jf_restart *out,
			    struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (strcmp(t, "Never") == 0)
		*out = JF_RESTART_NEVER;
	else if (strcmp(t, "OnFailure") == 0)
		*out = JF_RESTART_ONFAILURE;
	else if (strcmp(t, "Always") == 0)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "Always is not valid for a job, which must end: "
				 "use Never or OnFailure");
	else
		return jf_yerror(err, JF_EINVAL, n, path,
				 "must be Never or OnFailure, got \"%.64s\"", t);
	return JF_OK;
}

static bool env_name_ok(const char *k, size_t len)
{
	if (len == 0 || len > JF_SPEC_MAX_ENV_NAME || (k[0] >= '0' && k[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = k[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

enum jf_err jf_spec_env_set(struct jf_container *c, const char *key, size_t klen, const char *val,
			    size_t vlen, const struct jf_ynode *n, const char *path,
			    struct jf_error *err)
{
	if (klen > JF_SPEC_MAX_ENV_NAME)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "environment variable name \"%.32s...\" is %zu bytes, more "
				 "than the limit of %d",
				 key, klen, JF_SPEC_MAX_ENV_NAME);
	if (!env_name_ok(key, klen))
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad environment variable name \"%.*s\": use letters, "
				 "digits and '_', not starting with a digit",
				 (int)(klen > 64 ? 64 : klen), key);
	if (memchr(val, '\0', vlen))
		return jf_yerror(err, JF_EINVAL, n, path, "a NUL character in the value of %.*s",
				 (int)klen, key);
	char *v = strndup(val, vlen);
	if (!v)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < c->nenv; i++)
		if (strlen(c->env[i].key) == klen && memcmp(c->env[i].key, key, klen) == 0) {
			free(c->env[i].value);
			c->env[i].value = v;
			return JF_OK;
		}
	if (c->nenv >= JF_SPEC_MAX_ENV) {
		free(v);
		return jf_yerror(err, JF_EINVAL, n, path, "more than %d environment variables",
				 JF_SPEC_MAX_ENV);
	}
	size_t cnt = c->nenv;
	if (cnt == 0 || (cnt & (cnt - 1)) == 0) {
		struct jf_kv *p = realloc(c->env, (cnt ? 2 * cnt : 8) * sizeof(*p));
		if (!p) {
			free(v);
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		}
		c->env = p;
	}
	char *k = strndup(key, klen);
	if (!k) {
		free(v);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	c->env[cnt].key = k;
	c->env[cnt].value = v;
	c->nenv++;
	return JF_OK;
}

/* limits or requests */
static enum jf_err resource_list(const struct jf_ynode *m, const char *path, struct jf_container *c,
				 bool limits, int64_t *gpus, struct jf_spec *ignored,
				 struct jf_error *err)
{
	enum jf_err rc = jf_ynode_expect(m, JF_Y_MAP, path, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < m->n && !rc; i++) {
		const char *k = jf_ymap_key(m, i)->str;
		const struct jf_ynode *v = jf_ymap_value(m, i);
		char kp[JF_YPATH_MAX];
		jf_ypath_key(kp, sizeof(kp), path, k);
		if (strcmp(k, "cpu") == 0)
			rc = jf_spec_cpu(v, kp, limits ? &c->cpu_milli : &c->req_cpu_milli, err);
		else if (strcmp(k, "memory") == 0)
			rc = jf_spec_mem(v, kp, limits ? &c->mem_bytes : &c->req_mem_bytes, err);
		else if (strcmp(k, "nvidia.com/gpu") == 0)
			rc = jf_ynode_int(v, kp, 0, 8, gpus, err);
		else if (ignored)
			rc = jf_spec_ignore(ignored, jf_ymap_key(m, i), kp, err);
		else
			rc = jf_error_set(err, JF_EINVAL, jf_ymap_key(m, i)->line,
					  "unknown key '%s' (resources are cpu, memory "
					  "and nvidia.com/gpu)",
					  kp);
	}
	return rc;
}

enum jf_err jf_spec_resources(const struct jf_ynode *res, const char *path, struct jf_container *c,
			      struct jf_spec *ignored, const struct jf_ynode **gpu_node,
			      struct jf_error *err)
{
	*gpu_node = NULL;
	enum jf_err rc = jf_ynode_expect(res, JF_Y_MAP, path, err);
	if (rc)
		return rc;
	int64_t lim_gpus = -1, req_gpus = -1;
	const struct jf_ynode *lim = NULL, *req = NULL;
	for (size_t i = 0; i < res->n && !rc; i++) {
		const char *k = jf_ymap_key(res, i)->str;
		const struct jf_ynode *v = jf_ymap_value(res, i);
		char kp[JF_YPATH_MAX];
		jf_ypath_key(kp, sizeof(kp), path, k);
		if (strcmp(k, "limits") == 0 || strcmp(k, "requests") == 0) {
			bool is_lim = k[0] == 'l';
			if (jf_ynode_is_null(v))
				continue;
			if (is_lim)
				lim = v;
			else
				req = v;
			rc = resource_list(v, kp, c, is_lim, is_lim ? &lim_gpus : &req_gpus,
					   ignored, err);
		} else if (ignored) {
			rc = jf_spec_ignore(ignored, jf_ymap_key(res, i), kp, err);
		} else {
			rc = jf_error_set(err, JF_EINVAL, jf_ymap_key(res, i)->line,
					  "unknown key '%s' (resources has limits and requests)",
					  kp);
		}
	}
	if (rc)
		return rc;
	char gp[JF_YPATH_MAX];
	if (req_gpus >= 0 && lim_gpus < 0) {
		jf_ypath_key(gp, sizeof(gp), path, "requests.nvidia.com/gpu");
		return jf_yerror(err, JF_EINVAL, jf_ymap_get(req, "nvidia.com/gpu"), gp,
				 "GPUs are given in limits (requests alone are not enough)");
	}
	if (req_gpus >= 0 && req_gpus != lim_gpus) {
		jf_ypath_key(gp, sizeof(gp), path, "requests.nvidia.com/gpu");
		return jf_yerror(err, JF_EINVAL, jf_ymap_get(req, "nvidia.com/gpu"), gp,
				 "requests of nvidia.com/gpu must equal its limits (%lld)",
				 (long long)lim_gpus);
	}
	c->gpus = (int)lim_gpus;
	if (lim_gpus >= 0)
		*gpu_node = jf_ymap_get(lim, "nvidia.com/gpu");
	return JF_OK;
}

/* ---- shared rules ---- */

static bool gpus_ok(int64_t g)
{
	return g == 0 || g == 1 || g == 2 || g == 4 || g == 8;
}

/* The path of key in container i: "env", "containers[1].env" ... */
static void cont_key_path(const struct jf_spec_src *src, size_t i, const char *key, char *buf,
			  size_t n)
{
	if (src->cont[i] == src->root) { /* native shorthand */
		snprintf(buf, n, "%s", key);
	} else {
		jf_ypath_index(buf, n, src->containers_path, i);
		jf_ypath_key(buf, n, buf, key);
	}
}

static size_t strv_bytes(char *const *v, size_t n)
{
	size_t b = 0;
	for (size_t i = 0; i < n; i++)
		b += strlen(v[i]) + 1;
	return b;
}

/* Each container's environment and argv within their byte limits: what a
 * process can be given (execve's ARG_MAX), whatever aliases multiplied. */
static enum jf_err finish_sizes(const struct jf_spec *s, const struct jf_spec_src *src,
				struct jf_error *err)
{
	char p[JF_YPATH_MAX];
	for (size_t i = 0; i < s->ncontainers; i++) {
		const struct jf_container *c = &s->containers[i];
		size_t env = 0;
		for (size_t j = 0; j < c->nenv; j++)
			env += strlen(c->env[j].key) + strlen(c->env[j].value) + 2;
		if (env > JF_SPEC_MAX_ENV_BYTES) {
			cont_key_path(src, i, "env", p, sizeof(p));
			return jf_yerror(err, JF_EINVAL, jf_ymap_get(src->cont[i], "env"), p,
					 "the environment of container '%s' is %zu bytes "
					 "(KEY=value of each variable, summed), more than "
					 "the limit of %d",
					 c->name, env, JF_SPEC_MAX_ENV_BYTES);
		}
		size_t argv = strv_bytes(c->command, c->ncommand) + strv_bytes(c->args, c->nargs);
		if (argv > JF_SPEC_MAX_ARGV_BYTES) {
			const char *key = c->nargs ? "args" : "command";
			cont_key_path(src, i, key, p, sizeof(p));
			return jf_yerror(err, JF_EINVAL, jf_ymap_get(src->cont[i], key), p,
					 "command and args of container '%s' are %zu bytes "
					 "together, more than the limit of %d",
					 c->name, argv, JF_SPEC_MAX_ARGV_BYTES);
		}
	}
	return JF_OK;
}

/* The path of container i's nvidia.com/gpu limit. */
static void gpu_path(const struct jf_spec_src *src, size_t i, char *buf, size_t n)
{
	cont_key_path(src, i, "resources.limits.nvidia.com/gpu", buf, n);
}

static enum jf_err finish_gpus(struct jf_spec *s, const struct jf_spec_src *src,
			       struct jf_error *err)
{
	struct jf_src_key where = src->gpus;
	int maxc = -1;
	for (size_t i = 0; i < s->ncontainers; i++) {
		const struct jf_container *c = &s->containers[i];
		if (src->gpus.node && c->gpus > s->gpus) {
			char p[JF_YPATH_MAX];
			gpu_path(src, i, p, sizeof(p));
			return jf_yerror(err, JF_EINVAL, src->cont_gpu[i], p,
					 "%d GPUs for one container, more than the node's "
					 "gpus: %d",
					 c->gpus, s->gpus);
		}
		if (c->gpus > maxc) {
			maxc = c->gpus;
			where.node = src->cont_gpu[i];
			gpu_path(src, i, where.path, sizeof(where.path));
		}
	}
	if (!src->gpus.node)
		s->gpus = maxc >= 0 ? maxc : (s->gpu ? 1 : 0);
	if (!gpus_ok(s->gpus))
		return jf_yerror(err, JF_EINVAL, where.node, where.path,
				 "%d GPUs per node: must be 0, 1, 2, 4 or 8", s->gpus);
	if (s->gpus > 0 && !s->gpu) {
		if (!where.node) {
			where.node = src->root;
			where.path[0] = '\0';
		}
		return jf_yerror(err, JF_EINVAL, where.node, where.path,
				 "%d GPU%s per node but no GPU model: add %s", s->gpus,
				 s->gpus > 1 ? "s" : "",
				 s->form == JF_FORM_K8S
					 ? "the annotation jobfs/gpu (e.g. jobfs/gpu: \"4090\")"
					 : "gpu (e.g. gpu: \"4090\")");
	}
	return JF_OK;
}

enum jf_err jf_spec_finish(struct jf_spec *s, enum jf_spec_place place,
			   const struct jf_spec_src *src, struct jf_error *err)
{
	enum jf_err rc = finish_sizes(s, src, err);
	if (rc || (rc = finish_gpus(s, src, err)))
		return rc;
	if (place == JF_PLACE_BATCH) {
		s->completions = 1;
		s->parallelism = 1;
	}
	if (!src->parallelism_set || s->parallelism > s->completions)
		s->parallelism = s->completions;
	if (!s->has_count)
		s->count = 1;
	if (s->ncontainers == 0)
		return jf_yerror(err, JF_EINVAL, src->root, src->containers_path,
				 "at least one container is needed");
	for (size_t i = 1; i < s->ncontainers; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(s->containers[i].name, s->containers[j].name) == 0) {
				char p[JF_YPATH_MAX];
				jf_ypath_index(p, sizeof(p), src->containers_path, i);
				jf_ypath_key(p, sizeof(p), p, "name");
				return jf_yerror(err, JF_EINVAL, jf_ymap_get(src->cont[i], "name"),
						 p, "container name '%s' is used twice",
						 s->containers[i].name);
			}

	/* storage needs containers: the submission checks the runtime */
	s->storage_line = src->storage.node ? src->storage.node->line : 0;
	/* whether a command must be given depends on the runtime: the
	 * submission checks it (jf_spec_check_runtime) */
	s->no_command = true;
	for (size_t i = 0; i < s->ncontainers; i++)
		if (s->containers[i].ncommand || s->containers[i].nargs)
			s->no_command = false;
	s->no_command_line = src->cont[0] ? src->cont[0]->line : 0;
	s->command_hint = src->command_hint;
	return JF_OK;
}

enum jf_err jf_spec_check_runtime(const struct jf_spec *s, bool containers, struct jf_error *err)
{
	/* the plainest problem first: a container with nothing to run */
	for (size_t i = 0; containers && i < s->ncontainers; i++) {
		const struct jf_container *c = &s->containers[i];
		if (!c->image && !c->ncommand && !c->nargs)
			return jf_error_set(
				err, JF_EINVAL, s->no_command_line,
				"container '%s' has neither an image nor a command: give "
				"image or %s",
				c->name, s->command_hint ? s->command_hint : "a command");
	}
	if (s->nstorage && !containers)
		return jf_error_set(err, JF_ENOTSUP, s->storage_line,
				    "key 'storage': mounts need a container (an image), and this "
				    "jobfs runs a node's commands on this host (runtime host)");
	for (size_t i = 0; s->nstorage && i < s->ncontainers; i++)
		if (!s->containers[i].image)
			return jf_error_set(err, JF_ENOTSUP, s->storage_line,
					    "key 'storage': mounts need a container (an image), "
					    "and container '%s' has none: it would run on the host",
					    s->containers[i].name);
	if (!containers) {
		if (!s->no_command)
			return JF_OK;
		return jf_error_set(err, JF_ENOTSUP, s->no_command_line,
				    "no command: this jobfs runs a node's commands on this host "
				    "(runtime host); it does not pull images and has no image "
				    "entrypoint, so give %s",
				    s->command_hint ? s->command_hint : "a command");
	}
	return JF_OK;
}

/* ---- dispatch ---- */

static const char *scalar_or_null(const struct jf_ynode *n)
{
	return n && n->type == JF_Y_SCALAR ? n->str : NULL;
}

/* 1: a K8s Job, 0: native, else an error. */
static int detect_form(const struct jf_ynode *root, struct jf_error *err)
{
	const struct jf_ynode *api = jf_ymap_get(root, "apiVersion");
	const struct jf_ynode *kind = jf_ymap_get(root, "kind");
	if (!api && !kind)
		return 0;
	const char *a = scalar_or_null(api), *k = scalar_or_null(kind);
	if (a && k && strcmp(a, "batch/v1") == 0 && strcmp(k, "Job") == 0)
		return 1;
	jf_yerror(err, JF_EINVAL, api ? api : kind, api ? "apiVersion" : "kind",
		  "only Kubernetes 'apiVersion: batch/v1' with 'kind: Job' can be "
		  "imported (got %.40s %.40s); a native spec has neither key",
		  a ? a : "(no apiVersion)", k ? k : "(no kind)");
	return -1;
}

/* When the raw text does not parse, it may still be a K8s Job that only
 * parses after substitution: look for the two top-level lines. */
static bool raw_looks_k8s(const char *text, size_t len)
{
	bool api = false, kind = false, var = false;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t n = (size_t)(e - p);
		while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == strlen("apiVersion: batch/v1") && !memcmp(p, "apiVersion: batch/v1", n))
			api = true;
		if (n == strlen("kind: Job") && !memcmp(p, "kind: Job", n))
			kind = true;
		for (const char *q = p; q + 1 < e; q++)
			if (q[0] == '$' && q[1] == '{')
				var = true;
		p = e + 1;
	}
	return api && kind && var;
}

static enum jf_err parse_root(const char *text, size_t len, struct jf_ydoc **doc,
			      const struct jf_ynode **root, struct jf_error *err)
{
	enum jf_err rc = jf_ydoc_parse(text, len, doc, err);
	if (rc)
		return rc;
	*root = jf_ydoc_root(*doc);
	if (jf_ynode_is_null(*root))
		return jf_error_set(err, JF_EINVAL, *root ? (*root)->line : 0, "the spec is empty");
	if ((*root)->type != JF_Y_MAP)
		return jf_yerror(err, JF_EINVAL, *root, "",
				 "the spec must be a mapping of keys, not %s",
				 jf_ynode_kind(*root));
	return JF_OK;
}

/* The YAML tree of text, substituted first when it is a Job; on return
 * *doc holds whatever tree was built (the caller frees it). */
static enum jf_err load(const char *text, size_t len, const struct jf_subst *subst,
			struct jf_ydoc **doc, const struct jf_ynode **root, bool *k8s,
			struct jf_error *err)
{
	enum jf_err rc = parse_root(text, len, doc, root, err);
	if (rc == JF_OK) {
		int form = detect_form(*root, err);
		if (form <= 0)
			return form < 0 ? JF_EINVAL : JF_OK;
	} else if (rc != JF_EINVAL || !raw_looks_k8s(text, len)) {
		return rc;
	}
	/* A Job: substitute in the raw text and parse again.  A Job whose raw
	 * text is not YAML may still become YAML once substituted. */
	*k8s = true;
	jf_ydoc_free(*doc);
	*doc = NULL;
	char *subbed = jf_subst_apply(text, len, subst, err);
	if (!subbed)
		return err->code;
	rc = parse_root(subbed, strlen(subbed), doc, root, err);
	free(subbed); /* the tree holds copies */
	if (rc == JF_OK && detect_form(*root, err) != 1)
		rc = JF_EINVAL;
	return rc;
}

static enum jf_err parse(const char *text, size_t len, enum jf_spec_place place,
			 const struct jf_subst *subst, struct jf_spec **out, struct jf_error *err)
{
	struct jf_ydoc *doc = NULL;
	const struct jf_ynode *root = NULL;
	struct jf_spec *s = NULL;
	struct jf_spec_src *src = NULL;
	bool k8s = false;
	enum jf_err rc;

	if (len > JF_SPEC_MAX_BYTES)
		return jf_error_set(err, JF_EFBIG, 0,
				    "the spec is %zu bytes, more than the limit of %d", len,
				    JF_SPEC_MAX_BYTES);
	if ((rc = jf_ytext_check(text, len, false, err)))
		return rc;
	if ((rc = load(text, len, subst, &doc, &root, &k8s, err)))
		goto out;
	s = calloc(1, sizeof(*s));
	src = calloc(1, sizeof(*src));
	if (!s || !src) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto out;
	}
	src->root = root;
	rc = k8s ? jf_spec_k8s(root, place, s, src, err) : jf_spec_native(root, place, s, src, err);
	if (rc == JF_OK)
		rc = jf_spec_finish(s, place, src, err);
out:
	free(src);
	jf_ydoc_free(doc);
	if (rc) {
		jf_spec_free(s);
		return rc;
	}
	*out = s;
	return JF_OK;
}

static _Atomic uint64_t parses; /* the tree's reader threads parse too */

uint64_t jf_spec_parse_count(void)
{
	return parses;
}

enum jf_err jf_spec_parse(const char *text, size_t len, enum jf_spec_place place,
			  const struct jf_subst *subst, struct jf_spec **out, struct jf_error *err)
{
	struct jf_error e = { 0 };
	parses++;
	*out = NULL;
	enum jf_err rc = parse(text, len, place, subst, out, &e);
	if (rc && err)
		*err = e;
	return rc;
}

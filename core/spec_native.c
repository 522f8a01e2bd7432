/*
 * spec_native.c - the native group/task spec of reference 2.1.
 *
 * Every key of 2.1 is read here; anything else is an error naming the key
 * and line.  A spec has either the single-container shorthand (image,
 * command, args, env, resources at the top level; the container is "main")
 * or a `containers:` list, never both.  `command` and `args` take a list of
 * strings or one string (a list of one: it is not split into words).  `env`
 * takes a map, a list of "KEY=value", or one string holding a JSON object
 * or KEY=value lines; numbers and booleans become their text.
 *
 * This file checks each key on its own; jf_spec_finish() (spec.c) does
 * what spans keys and refuses what the local backend cannot honour.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/deps.h"
#include "core/spec_priv.h"

#define NATIVE_MAX_STORAGE JF_SPEC_MAX_STORAGE
#define NATIVE_MAX_PATH    4095

static enum jf_err oom(struct jf_error *err)
{
	return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

/* ---- env ---- */

/* One "KEY=value" at line; n gives the line when nothing better exists. */
static enum jf_err env_assign(struct jf_container *c, const char *t, size_t len, int line,
			      const char *path, struct jf_error *err)
{
	struct jf_ynode at = { .type = JF_Y_SCALAR, .line = line };
	const char *eq = memchr(t, '=', len);
	if (!eq)
		return jf_yerror(err, JF_EINVAL, &at, path, "expected KEY=value, got \"%.*s\"",
				 (int)(len > 64 ? 64 : len), t);
	return jf_spec_env_set(c, t, (size_t)(eq - t), eq + 1, len - (size_t)(eq - t) - 1, &at,
			       path, err);
}

static enum jf_err env_json(struct jf_container *c, const struct jf_ynode *n, const char *path,
			    struct jf_error *err)
{
	json_error_t je;
	json_t *o = json_loadb(n->str, n->len, JSON_REJECT_DUPLICATES, &je);
	/* jansson reports some allocation failures with no text at all */
	if (!o && (json_error_code(&je) == json_error_out_of_memory || !je.text[0]))
		return oom(err);
	if (!o)
		return jf_yerror(err, JF_EINVAL, n, path, "bad JSON object: %s (JSON line %d)",
				 je.text, je.line);
	enum jf_err rc = JF_OK;
	if (!json_is_object(o)) {
		rc = jf_yerror(err, JF_EINVAL, n, path, "the JSON must be an object");
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		char num[64];
		char *dumped = NULL;
		const char *s;
		size_t slen;
		if (json_is_string(v)) {
			s = json_string_value(v);
			slen = json_string_length(v);
		} else if (json_is_integer(v)) {
			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			s = num;
			slen = strlen(num);
		} else if (json_is_boolean(v)) {
			s = json_is_true(v) ? "true" : "false";
			slen = strlen(s);
		} else if (json_is_real(v)) {
			dumped = json_dumps(v, JSON_ENCODE_ANY);
			if (!dumped) {
				rc = oom(err);
				goto out;
			}
			s = dumped;
			slen = strlen(s);
		} else {
			rc = jf_yerror(err, JF_EINVAL, n, path,
				       "the value of %.64s must be a string, number or boolean", k);
			goto out;
		}
		rc = jf_spec_env_set(c, k, strlen(k), s, slen, n, path, err);
		free(dumped);
		if (rc)
			goto out;
	}
out:
	json_decref(o);
	return rc;
}

static enum jf_err env_lines(struct jf_container *c, const struct jf_ynode *n, const char *path,
			     struct jf_error *err)
{
	int line = n->line + (n->block ? 1 : 0);
	const char *p = n->str, *end = n->str + n->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *q = p;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		size_t len = (size_t)(e - q);
		if (len && q[len - 1] == '\r')
			len--;
		if (len && *q != '#') {
			enum jf_err rc = env_assign(c, q, len, line, path, err);
			if (rc)
				return rc;
		}
		line++;
		p = e + 1;
	}
	return JF_OK;
}

static enum jf_err native_env(const struct jf_ynode *n, const char *path, struct jf_container *c,
			      struct jf_error *err)
{
	enum jf_err rc = JF_OK;
	if (n->type == JF_Y_MAP) {
		for (size_t i = 0; i < n->n && !rc; i++) {
			const struct jf_ynode *k = jf_ymap_key(n, i), *v = jf_ymap_value(n, i);
			char kp[JF_YPATH_MAX];
			const char *t = "";
			jf_ypath_key(kp, sizeof(kp), path, k->str);
			if (!jf_ynode_is_null(v) && (rc = jf_ynode_text(v, kp, 0, &t, err)))
				break;
			rc = jf_spec_env_set(c, k->str, k->len, t, strlen(t), k, kp, err);
		}
		return rc;
	}
	if (n->type == JF_Y_SEQ) {
		if (n->n > JF_SPEC_MAX_ENV)
			return jf_yerror(err, JF_EINVAL, n, path,
					 "more than %d environment variables", JF_SPEC_MAX_ENV);
		for (size_t i = 0; i < n->n && !rc; i++) {
			char ip[JF_YPATH_MAX];
			const char *t;
			jf_ypath_index(ip, sizeof(ip), path, i);
			if ((rc = jf_ynode_text(n->items[i], ip, 0, &t, err)))
				break;
			rc = env_assign(c, t, strlen(t), n->items[i]->line, ip, err);
		}
		return rc;
	}
	const char *t = n->str;
	while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
		t++;
	if (*t == '{')
		return env_json(c, n, path, err);
	return env_lines(c, n, path, err);
}

/* ---- containers ---- */

static enum jf_err argv_list(const struct jf_ynode *map, const char *key, const char *prefix,
			     char ***out, size_t *nout, struct jf_error *err)
{
	const struct jf_ynode *n = jf_ymap_get(map, key);
	if (!n)
		return JF_OK;
	char kp[JF_YPATH_MAX];
	jf_ypath_key(kp, sizeof(kp), prefix, key);
	return jf_ynode_strlist(n, kp, JF_YLIST_SCALAR, JF_SPEC_MAX_ARGV, out, nout, err);
}

/* One container from map m; prefix is "" for the shorthand. */
static enum jf_err native_container(const struct jf_ynode *m, const char *prefix, size_t idx,
				    struct jf_container *c, struct jf_spec_src *src,
				    struct jf_error *err)
{
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	enum jf_err rc;

	c->gpus = -1;
	src->cont[idx] = m;
	if (!*prefix) {
		c->name = strdup("main");
		if (!c->name)
			return oom(err);
	} else {
		jf_ypath_key(kp, sizeof(kp), prefix, "name");
		if (!(n = jf_ymap_get(m, "name")))
			return jf_yerror(err, JF_EINVAL, m, kp, "a container needs a name");
		if ((rc = jf_spec_container_name(n, kp, &c->name, err)))
			return rc;
	}
	if ((n = jf_ymap_get(m, "image"))) {
		jf_ypath_key(kp, sizeof(kp), prefix, "image");
		if ((rc = jf_spec_image(n, kp, &c->image, err)))
			return rc;
	}
	if ((n = jf_ymap_get(m, "image_pull_policy"))) {
		jf_ypath_key(kp, sizeof(kp), prefix, "image_pull_policy");
		if ((rc = jf_spec_pull_policy(n, kp, &c->pull_policy, err)))
			return rc;
	}
	if ((rc = argv_list(m, "command", prefix, &c->command, &c->ncommand, err)) ||
	    (rc = argv_list(m, "args", prefix, &c->args, &c->nargs, err)))
		return rc;
	if (c->ncommand + c->nargs > JF_SPEC_MAX_ARGV) {
		jf_ypath_key(kp, sizeof(kp), prefix, "args");
		return jf_yerror(err, JF_EINVAL, jf_ymap_get(m, "args"), kp,
				 "command and args have more than %d entries together",
				 JF_SPEC_MAX_ARGV);
	}
	if ((n = jf_ymap_get(m, "env"))) {
		jf_ypath_key(kp, sizeof(kp), prefix, "env");
		if ((rc = native_env(n, kp, c, err)))
			return rc;
	}
	if ((n = jf_ymap_get(m, "resources"))) {
		jf_ypath_key(kp, sizeof(kp), prefix, "resources");
		if ((rc = jf_spec_resources(n, kp, c, NULL, &src->cont_gpu[idx], err)))
			return rc;
	}
	return JF_OK;
}

static const char *const shorthand_keys[] = { "image", "image_pull_policy", "command", "args",
					      "env",   "resources",         NULL };

static enum jf_err native_containers(const struct jf_ynode *root, struct jf_spec *s,
				     struct jf_spec_src *src, struct jf_error *err)
{
	static const char *const keys[] = { "name", "image", "image_pull_policy", "command",
					    "args", "env",   "resources",         NULL };
	const struct jf_ynode *list = jf_ymap_get(root, "containers");
	enum jf_err rc;

	if (!list) {
		s->containers = calloc(1, sizeof(*s->containers));
		if (!s->containers)
			return oom(err);
		s->ncontainers = 1;
		return native_container(root, "", 0, &s->containers[0], src, err);
	}
	for (const char *const *k = shorthand_keys; *k; k++) {
		const struct jf_ynode *kn = jf_ymap_find_key(root, *k);
		if (kn)
			return jf_error_set(err, JF_EINVAL, kn->line,
					    "key '%s': the top-level '%s' is the single-container "
					    "shorthand; with 'containers:' (line %d) put it inside "
					    "each container",
					    *k, *k, jf_ymap_find_key(root, "containers")->line);
	}
	if ((rc = jf_ynode_expect(list, JF_Y_SEQ, "containers", err)))
		return rc;
	if (list->n == 0 || list->n > JF_SPEC_MAX_CONTAINERS)
		return jf_yerror(err, JF_EINVAL, list, "containers",
				 "%zu containers: must be 1 to %d", list->n,
				 JF_SPEC_MAX_CONTAINERS);
	s->containers = calloc(list->n, sizeof(*s->containers));
	if (!s->containers)
		return oom(err);
	s->ncontainers = list->n;
	for (size_t i = 0; i < list->n; i++) {
		char ip[JF_YPATH_MAX];
		const struct jf_ynode *m = list->items[i];
		jf_ypath_index(ip, sizeof(ip), "containers", i);
		if ((rc = jf_ynode_expect(m, JF_Y_MAP, ip, err)) ||
		    (rc = jf_ymap_check_keys(m, ip, keys, err)) ||
		    (rc = native_container(m, ip, i, &s->containers[i], src, err)))
			return rc;
	}
	return JF_OK;
}

/* ---- storage ---- */

static bool path_ok(const char *p)
{
	if (p[0] != '/' || strlen(p) > NATIVE_MAX_PATH)
		return false;
	for (const char *q = p; (q = strstr(q, "/..")); q += 3)
		if (q[3] == '/' || q[3] == '\0')
			return false;
	return true;
}

static bool volume_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JF_SPEC_MAX_NAME || s[0] == '.' || s[0] == '-' || s[0] == '_')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* Mount points that the runtime owns: a storage entry may not cover them. */
static bool path_reserved(const char *p)
{
	static const char *const own[] = { "/",        "/proc",    "/dev",        "/sys",
					   "/dev/shm", "/dev/pts", "/dev/mqueue", NULL };
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		n--;
	for (size_t i = 0; own[i]; i++)
		if (strlen(own[i]) == n && strncmp(own[i], p, n) == 0)
			return true;
	return strncmp(p, "/proc/", 6) == 0 || strncmp(p, "/sys/", 5) == 0;
}

static enum jf_err storage_entry(const struct jf_ynode *m, const char *path, struct jf_storage *st,
				 struct jf_error *err)
{
	static const char *const keys[3][6] = {
		[JF_STORE_EMPTYDIR] = { "type", "path", "size", "medium", "name", NULL },
		[JF_STORE_VOLUME] = { "type", "name", "path", "read_only", NULL },
		[JF_STORE_OBJECT] = { "type", "name", "path", "source", NULL },
	};
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *n;
	const char *t;
	enum jf_err rc;

	if ((rc = jf_ynode_expect(m, JF_Y_MAP, path, err)))
		return rc;
	jf_ypath_key(kp, sizeof(kp), path, "type");
	if (!(n = jf_ymap_get(m, "type")))
		return jf_yerror(err, JF_EINVAL, m, kp,
				 "a storage entry needs a type: emptydir, volume or object");
	if ((rc = jf_ynode_text(n, kp, 0, &t, err)))
		return rc;
	if (strcmp(t, "emptydir") == 0 || strcmp(t, "emptyDir") == 0)
		st->type = JF_STORE_EMPTYDIR;
	else if (strcmp(t, "volume") == 0)
		st->type = JF_STORE_VOLUME;
	else if (strcmp(t, "object") == 0)
		st->type = JF_STORE_OBJECT;
	else
		return jf_yerror(err, JF_EINVAL, n, kp,
				 "must be emptydir, volume or object, got \"%.64s\"", t);
	if ((rc = jf_ymap_check_keys(m, path, keys[st->type], err)))
		return rc;

	jf_ypath_key(kp, sizeof(kp), path, "path");
	if (!(n = jf_ymap_get(m, "path")))
		return jf_yerror(err, JF_EINVAL, m, kp, "a storage entry needs a path");
	if ((rc = jf_ynode_text(n, kp, 0, &t, err)))
		return rc;
	if (!path_ok(t))
		return jf_yerror(err, JF_EINVAL, n, kp,
				 "\"%.64s\" must be an absolute path without '..'", t);
	if (strpbrk(t, ":,") || strcmp(t, "/") == 0)
		return jf_yerror(err, JF_EINVAL, n, kp,
				 "\"%.64s\": a mount path may not be / or hold ':' or ','", t);
	if (path_reserved(t))
		return jf_yerror(err, JF_EINVAL, n, kp,
				 "\"%.64s\" is the runtime's own mount: choose another path", t);
	if (!(st->path = strdup(t)))
		return oom(err);

	if (st->type == JF_STORE_EMPTYDIR) {
		if ((n = jf_ymap_get(m, "size"))) {
			jf_ypath_key(kp, sizeof(kp), path, "size");
			if ((rc = jf_spec_mem(n, kp, &st->size, err)))
				return rc;
		}
		if ((n = jf_ymap_get(m, "medium"))) {
			jf_ypath_key(kp, sizeof(kp), path, "medium");
			if ((rc = jf_ynode_text(n, kp, 0, &t, err)))
				return rc;
			if (strcmp(t, "Memory") == 0)
				st->memory = true;
			else if (t[0] != '\0')
				return jf_yerror(err, JF_EINVAL, n, kp,
						 "must be Memory or \"\" (the node's disk), got "
						 "\"%.64s\"",
						 t);
		}
		if ((n = jf_ymap_get(m, "name"))) {
			jf_ypath_key(kp, sizeof(kp), path, "name");
			if ((rc = jf_ynode_text(n, kp, 0, &t, err)))
				return rc;
			if (!volume_name_ok(t))
				return jf_yerror(err, JF_EINVAL, n, kp,
						 "bad name \"%.64s\": use "
						 "[A-Za-z0-9][A-Za-z0-9._-]{0,62}",
						 t);
			if (!(st->name = strdup(t)))
				return oom(err);
		}
		return JF_OK;
	}
	if (st->type == JF_STORE_VOLUME && (n = jf_ymap_get(m, "read_only"))) {
		jf_ypath_key(kp, sizeof(kp), path, "read_only");
		if ((rc = jf_ynode_bool(n, kp, &st->read_only, err)))
			return rc;
	}
	if (st->type == JF_STORE_OBJECT) {
		st->read_only = true;
		if ((n = jf_ymap_get(m, "source"))) {
			jf_ypath_key(kp, sizeof(kp), path, "source");
			return jf_yerror(err, JF_ENOTSUP, n, kp,
					 "an object source is not named by URL: make "
					 "/objects/NAME with a spec.yaml (endpoint, bucket, "
					 "prefix) and write name: NAME here");
		}
	}
	jf_ypath_key(kp, sizeof(kp), path, "name");
	if (!(n = jf_ymap_get(m, "name")))
		return jf_yerror(err, JF_EINVAL, m, kp, "a %s entry needs a name (%s)",
				 st->type == JF_STORE_VOLUME ? "volume" : "object",
				 st->type == JF_STORE_VOLUME ? "a directory of /volumes"
							     : "a directory of /objects");
	if ((rc = jf_ynode_text(n, kp, 0, &t, err)))
		return rc;
	if (!volume_name_ok(t))
		return jf_yerror(err, JF_EINVAL, n, kp,
				 "bad %s name \"%.64s\": use [A-Za-z0-9][A-Za-z0-9._-]{0,62}",
				 st->type == JF_STORE_VOLUME ? "volume" : "object source", t);
	if (!(st->name = strdup(t)))
		return oom(err);
	return JF_OK;
}

static enum jf_err native_storage(const struct jf_ynode *list, struct jf_spec *s,
				  struct jf_error *err)
{
	enum jf_err rc = jf_ynode_expect(list, JF_Y_SEQ, "storage", err);
	if (rc)
		return rc;
	if (list->n > NATIVE_MAX_STORAGE)
		return jf_yerror(err, JF_EINVAL, list, "storage", "more than %d storage entries",
				 NATIVE_MAX_STORAGE);
	if (list->n == 0)
		return JF_OK;
	s->storage = calloc(list->n, sizeof(*s->storage));
	if (!s->storage)
		return oom(err);
	s->nstorage = list->n;
	for (size_t i = 0; i < list->n; i++) {
		char ip[JF_YPATH_MAX];
		jf_ypath_index(ip, sizeof(ip), "storage", i);
		if ((rc = storage_entry(list->items[i], ip, &s->storage[i], err)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(s->storage[j].path, s->storage[i].path) == 0) {
				jf_ypath_key(ip, sizeof(ip), ip, "path");
				return jf_yerror(err, JF_EINVAL,
						 jf_ymap_get(list->items[i], "path"), ip,
						 "path %s is mounted twice", s->storage[i].path);
			}
	}
	return JF_OK;
}

/* ---- ports (reference 8.2) ---- */

static enum jf_err native_ports(const struct jf_ynode *list, struct jf_spec *s,
				struct jf_error *err)
{
	static const char *const keys[] = { "container_port", "name", NULL };
	enum jf_err rc = jf_ynode_expect(list, JF_Y_SEQ, "ports", err);
	if (rc)
		return rc;
	if (list->n > JF_SPEC_MAX_PORTS)
		return jf_yerror(err, JF_EINVAL, list, "ports", "more than %d ports",
				 JF_SPEC_MAX_PORTS);
	if (list->n == 0)
		return JF_OK;
	s->ports = calloc(list->n, sizeof(*s->ports));
	if (!s->ports)
		return oom(err);
	for (size_t i = 0; i < list->n; i++) {
		char ip[JF_YPATH_MAX], kp[JF_YPATH_MAX];
		const struct jf_ynode *e = list->items[i], *pn = e;
		jf_ypath_index(ip, sizeof(ip), "ports", i);
		snprintf(kp, sizeof(kp), "%s", ip);
		int64_t v = 0;
		if (e->type == JF_Y_MAP) {
			if ((rc = jf_ymap_check_keys(e, ip, keys, err)))
				return rc;
			jf_ypath_key(kp, sizeof(kp), ip, "container_port");
			if (!(pn = jf_ymap_get(e, "container_port")))
				return jf_yerror(err, JF_EINVAL, e, kp,
						 "a port needs container_port");
			const struct jf_ynode *nn = jf_ymap_get(e, "name");
			if (nn) {
				char np[JF_YPATH_MAX];
				jf_ypath_key(np, sizeof(np), ip, "name");
				if ((rc = jf_spec_container_name(nn, np, &s->ports[i].name, err)))
					return rc;
			}
		}
		s->nports = i + 1;
		if ((rc = jf_ynode_int(pn, kp, 1, 65535, &v, err)))
			return rc;
		s->ports[i].port = (int)v;
		for (size_t j = 0; j < i; j++)
			if (s->ports[j].port == s->ports[i].port)
				return jf_yerror(err, JF_EINVAL, pn, kp, "port %d is listed twice",
						 s->ports[i].port);
	}
	return JF_OK;
}

/* ---- top level ---- */

static enum jf_err int_key(const struct jf_ynode *root, const char *key, int64_t lo, int64_t hi,
			   int64_t *out, struct jf_error *err)
{
	const struct jf_ynode *n = jf_ymap_get(root, key);
	return n ? jf_ynode_int(n, key, lo, hi, out, err) : JF_OK;
}

static enum jf_err place_checks(const struct jf_ynode *root, enum jf_spec_place place,
				struct jf_error *err)
{
	const struct jf_ynode *k;
	if (place == JF_PLACE_GROUP && (k = jf_ymap_find_key(root, "count")))
		return jf_error_set(err, JF_EINVAL, k->line,
				    "key 'count': only an independent task under /tasks has a "
				    "count; a group runs 'completions' tasks");
	if (place == JF_PLACE_BATCH) {
		static const char *const refused[] = { "completions", "parallelism", NULL };
		for (const char *const *r = refused; *r; r++)
			if ((k = jf_ymap_find_key(root, *r)))
				return jf_error_set(err, JF_EINVAL, k->line,
						    "key '%s': an independent task under /tasks "
						    "is 'count' independent tasks; it has no %s "
						    "(use count, or a queue group)",
						    *r, *r);
	}
	return JF_OK;
}

enum jf_err jf_spec_native(const struct jf_ynode *root, enum jf_spec_place place, struct jf_spec *s,
			   struct jf_spec_src *src, struct jf_error *err)
{
	static const char *const keys[] = { "name",          "billing",
					    "gpu",           "gpus",
					    "completions",   "parallelism",
					    "count",         "nodes",
					    "node_index",    "unit_runtime",
					    "timeout",       "restart_policy",
					    "retries",       "max_failures",
					    "shm_size",      "cpu_exclusive",
					    "image",         "image_pull_policy",
					    "registry_auth", "command",
					    "args",          "env",
					    "resources",     "containers",
					    "storage",       "ports",
					    "after",         NULL };
	const struct jf_ynode *n;
	enum jf_err rc;

	s->form = JF_FORM_NATIVE;
	s->billing = JF_BILL_ONDEMAND;
	s->completions = 1;
	s->count = 1;
	s->nodes = 1;
	s->node_index = true;
	s->timeout = 1440 * 60;
	s->restart_policy = JF_RESTART_NEVER;
	s->retries = 3;
	s->max_failures = -1;
	s->max_failed_indexes = -1;
	snprintf(src->containers_path, sizeof(src->containers_path), "containers");
	src->command_hint = "'command' or 'args' (e.g. command: [\"/bin/sh\", \"-c\", \"...\"])";

	if ((rc = jf_ymap_check_keys(root, "", keys, err)) || (rc = place_checks(root, place, err)))
		return rc;
	if ((n = jf_ymap_get(root, "name")) && (rc = jf_spec_name(n, "name", &s->name, err)))
		return rc;
	if ((n = jf_ymap_get(root, "billing")) &&
	    (rc = jf_spec_billing(n, "billing", &s->billing, err)))
		return rc;
	if ((n = jf_ymap_get(root, "gpu"))) {
		if ((rc = jf_spec_gpu(n, "gpu", &s->gpu, err)))
			return rc;
		jf_spec_src_set(&src->gpu, n, "gpu");
	}
	if ((n = jf_ymap_get(root, "gpus"))) {
		int64_t g;
		if ((rc = jf_ynode_int(n, "gpus", 0, 8, &g, err)))
			return rc;
		s->gpus = (int)g;
		jf_spec_src_set(&src->gpus, n, "gpus");
	}
	if ((rc = int_key(root, "completions", 1, JF_SPEC_MAX_COMPLETIONS, &s->completions, err)) ||
	    (rc = int_key(root, "parallelism", 1, JF_SPEC_MAX_COMPLETIONS, &s->parallelism, err)) ||
	    (rc = int_key(root, "count", 1, JF_SPEC_MAX_COUNT, &s->count, err)) ||
	    (rc = int_key(root, "nodes", 1, JF_SPEC_MAX_NODES_PER_TASK, &s->nodes, err)) ||
	    (rc = int_key(root, "retries", 0, INT32_MAX, &s->retries, err)) ||
	    (rc = int_key(root, "max_failures", 0, INT32_MAX, &s->max_failures, err)))
		return rc;
	src->parallelism_set = jf_ymap_get(root, "parallelism") != NULL;
	s->has_count = jf_ymap_get(root, "count") != NULL;
	if ((n = jf_ymap_get(root, "node_index")) &&
	    (rc = jf_ynode_bool(n, "node_index", &s->node_index, err)))
		return rc;
	if ((n = jf_ymap_get(root, "unit_runtime")) &&
	    (rc = jf_spec_duration(n, "unit_runtime", 1, JF_SPEC_MAX_DURATION, &s->unit_runtime,
				   err)))
		return rc;
	if ((n = jf_ymap_get(root, "timeout")) &&
	    (rc = jf_spec_duration(n, "timeout", 1, JF_SPEC_MAX_DURATION, &s->timeout, err)))
		return rc;
	if ((n = jf_ymap_get(root, "restart_policy")) &&
	    (rc = jf_spec_restart(n, "restart_policy", &s->restart_policy, err)))
		return rc;
	if ((n = jf_ymap_get(root, "registry_auth"))) {
		if ((rc = jf_ynode_str(n, "registry_auth", 0, &s->registry_auth, err)))
			return rc;
		if (s->registry_auth[0] != '/')
			return jf_yerror(err, JF_EINVAL, n, "registry_auth",
					 "\"%.80s\": must be an absolute path (an auth.json file)",
					 s->registry_auth);
	}
	if ((n = jf_ymap_get(root, "shm_size"))) {
		if ((rc = jf_spec_mem(n, "shm_size", &s->shm_size, err)))
			return rc;
		jf_spec_src_set(&src->shm_size, n, "shm_size");
	}
	if ((n = jf_ymap_get(root, "cpu_exclusive"))) {
		if ((rc = jf_ynode_bool(n, "cpu_exclusive", &s->cpu_exclusive, err)))
			return rc;
		if (s->cpu_exclusive)
			jf_spec_src_set(&src->cpu_exclusive, n, "cpu_exclusive");
	}
	if ((rc = native_containers(root, s, src, err)))
		return rc;
	if ((n = jf_ymap_get(root, "ports")) && (rc = native_ports(n, s, err)))
		return rc;
	if ((n = jf_ymap_get(root, "after")) &&
	    (rc = jf_deps_parse(n, "after", &s->after, &s->nafter, err)))
		return rc;
	s->after_key = "after";
	if ((n = jf_ymap_get(root, "storage"))) {
		if ((rc = native_storage(n, s, err)))
			return rc;
		if (s->nstorage)
			jf_spec_src_set(&src->storage, jf_ymap_find_key(root, "storage"),
					"storage");
	}
	return JF_OK;
}

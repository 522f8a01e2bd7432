/*
 * shimproto.c - launch.json both ways and the shim's records read back
 * (see shimproto.h for the formats, tools/shim.c for the writer's side).
 */
#include "backends/shimproto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const jf_shim_log_names[JF_SHIM_LOG_FILES] = { "stdout", "stderr", "logs" };

/* ---- launch.json ---- */

static json_t *strv(char *const *v, bool *bad)
{
	json_t *a = json_array();
	if (!a) {
		*bad = true;
		return NULL;
	}
	for (size_t i = 0; v && v[i]; i++) {
		json_t *s = json_string(v[i]); /* NULL: not UTF-8 */
		if (!s || json_array_append_new(a, s) < 0)
			*bad = true;
	}
	return a;
}

/* Each *_new takes its value, on failure too: nothing leaks. */
static void put(json_t *o, const char *key, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(o, key, v) < 0)
		*bad = true;
}

json_t *jf_shim_launch_encode(const struct jf_shim_launch *l)
{
	bool bad = false;
	json_t *root = json_object();
	json_t *cpus = json_array();
	json_t *procs = json_array();
	if (!root || !cpus || !procs) {
		json_decref(root);
		json_decref(cpus);
		json_decref(procs);
		return NULL;
	}
	for (size_t i = 0; i < l->ncpus; i++)
		bad |= json_array_append_new(cpus, json_integer(l->cpus[i])) < 0;
	for (size_t i = 0; i < l->nprocs; i++) {
		const struct jf_shim_proc *p = &l->procs[i];
		json_t *o = json_object();
		if (!o) {
			bad = true;
			continue;
		}
		put(o, "name", json_string(p->name ? p->name : "main"), &bad);
		put(o, "argv", strv(p->argv, &bad), &bad);
		put(o, "envp", strv(p->envp, &bad), &bad);
		if (p->mem_bytes > 0)
			put(o, "mem_bytes", json_integer(p->mem_bytes), &bad);
		if (p->cpu_milli > 0)
			put(o, "cpu_milli", json_integer(p->cpu_milli), &bad);
		if (p->image) {
			const struct jf_proc_image *im = p->image;
			json_t *io = json_object();
			bad |= !io;
			if (io) {
				put(io, "reference", json_string(im->reference), &bad);
				put(io, "pull_policy", json_string(im->pull_policy), &bad);
				if (im->command)
					put(io, "command", strv(im->command, &bad), &bad);
				if (im->args)
					put(io, "args", strv(im->args, &bad), &bad);
				put(io, "env", strv(im->env, &bad), &bad);
				put(o, "image", io, &bad);
			}
		}
		if (json_array_append_new(procs, o) < 0)
			bad = true;
	}
	put(root, "uid", json_integer(l->uid), &bad);
	put(root, "gid", json_integer(l->gid), &bad);
	if (l->has_groups) {
		json_t *g = json_array();
		bad |= !g;
		for (size_t i = 0; g && i < l->ngroups; i++)
			bad |= json_array_append_new(g, json_integer(l->groups[i])) < 0;
		put(root, "groups", g, &bad);
	}
	put(root, "cwd", json_string(l->cwd ? l->cwd : ""), &bad);
	put(root, "log_cap", json_integer(l->log_cap), &bad);
	put(root, "cpus", cpus, &bad);
	put(root, "procs", procs, &bad);
	if (l->rt) {
		const struct jf_runtime_conf *rt = l->rt;
		json_t *r = json_object(), *ins = json_array();
		bad |= !r || !ins;
		for (size_t i = 0; ins && i < rt->ninsecure; i++)
			bad |= json_array_append_new(ins, json_string(rt->insecure[i])) < 0;
		if (r) {
			put(r, "oci", json_string(rt->oci_runtime ? rt->oci_runtime : ""), &bad);
			put(r, "image_tool", json_string(rt->image_tool ? rt->image_tool : ""),
			    &bad);
			put(r, "cache", json_string(rt->cache_dir ? rt->cache_dir : ""), &bad);
			put(r, "insecure", ins, &bad);
			ins = NULL;
			if (rt->auth_file)
				put(r, "auth_file", json_string(rt->auth_file), &bad);
			if (rt->pull_timeout_ms > 0)
				put(r, "pull_timeout_ms", json_integer(rt->pull_timeout_ms), &bad);
			if (rt->expose_address)
				put(r, "expose_address", json_string(rt->expose_address), &bad);
			put(root, "runtime", r, &bad);
		}
		json_decref(ins);
	}
	if (l->registry_auth)
		put(root, "registry_auth", json_string(l->registry_auth), &bad);
	if (l->shm_bytes > 0)
		put(root, "shm_bytes", json_integer(l->shm_bytes), &bad);
	if (l->nports) {
		json_t *pa = json_array();
		bad |= !pa;
		for (size_t i = 0; pa && i < l->nports; i++)
			bad |= json_array_append_new(pa, json_integer(l->ports[i])) < 0;
		put(root, "ports", pa, &bad);
	}
	if (l->nmounts) {
		json_t *ma = json_array();
		bad |= !ma;
		for (size_t i = 0; ma && i < l->nmounts; i++) {
			const struct jf_mount *m = &l->mounts[i];
			const char *type = jf_shim_mount_type_name(m->type);
			json_t *o = type ? json_object() : NULL;
			if (!o) {
				bad = true;
				continue;
			}
			put(o, "type", json_string(type), &bad);
			put(o, "name", json_string(m->name ? m->name : ""), &bad);
			if (m->source)
				put(o, "source", json_string(m->source), &bad);
			put(o, "path", json_string(m->path ? m->path : ""), &bad);
			if (m->size_bytes > 0)
				put(o, "size", json_integer(m->size_bytes), &bad);
			put(o, "memory", json_boolean(m->memory), &bad);
			put(o, "read_only",
			    json_boolean(m->read_only || m->type == JF_MOUNT_OBJECT), &bad);
			bad |= json_array_append_new(ma, o) < 0;
		}
		put(root, "mounts", ma, &bad);
	}
	if (l->evict_check_ms > 0)
		put(root, "evict_check_ms", json_integer(l->evict_check_ms), &bad);
	if (bad) {
		json_decref(root);
		return NULL;
	}
	return root;
}

bool jf_shim_get_int(json_t *o, const char *key, json_int_t max, json_int_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return false;
	json_int_t x = json_integer_value(v);
	if (x < 0 || x > max)
		return false;
	*out = x;
	return true;
}

/* The strings of a JSON array, borrowed from it, NULL-terminated. */
static char **str_array(json_t *a, bool nonempty)
{
	if (!json_is_array(a) || (nonempty && json_array_size(a) == 0))
		return NULL;
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *str = json_string_value(json_array_get(a, i));
		if (!str) {
			free(v);
			return NULL;
		}
		v[i] = (char *)str;
	}
	return v;
}

static int decode_image(json_t *io, struct jf_proc_image *im, size_t i, char *err, size_t errlen)
{
	im->reference = json_string_value(json_object_get(io, "reference"));
	im->pull_policy = json_string_value(json_object_get(io, "pull_policy"));
	if (!im->reference || !im->reference[0] || !im->pull_policy) {
		snprintf(err, errlen,
			 "launch.json: procs[%zu].image: needs a reference and a "
			 "pull_policy",
			 i);
		return -1;
	}
	json_t *c = json_object_get(io, "command"), *a = json_object_get(io, "args");
	json_t *e = json_object_get(io, "env");
	im->command = c ? str_array(c, false) : NULL;
	im->args = a ? str_array(a, false) : NULL;
	im->env = e ? str_array(e, false) : calloc(1, sizeof(char *));
	if ((c && !im->command) || (a && !im->args) || !im->env) {
		snprintf(err, errlen,
			 "launch.json: procs[%zu].image: command, args and env must "
			 "be arrays of strings",
			 i);
		return -1;
	}
	return 0;
}

static int decode_runtime(json_t *r, struct jf_runtime_conf *rt, char *err, size_t errlen)
{
	json_int_t x;
	rt->oci_runtime = json_string_value(json_object_get(r, "oci"));
	rt->image_tool = json_string_value(json_object_get(r, "image_tool"));
	rt->cache_dir = json_string_value(json_object_get(r, "cache"));
	rt->auth_file = json_string_value(json_object_get(r, "auth_file"));
	json_t *ins = json_object_get(r, "insecure");
	if (!rt->oci_runtime || !rt->image_tool || !rt->cache_dir || (ins && !json_is_array(ins))) {
		snprintf(err, errlen,
			 "launch.json: runtime: needs oci, image_tool and cache paths");
		return -1;
	}
	if (ins) {
		char **v = str_array(ins, false);
		if (!v) {
			snprintf(err, errlen, "launch.json: runtime.insecure: must be strings");
			return -1;
		}
		rt->insecure = (const char *const *)v;
		rt->ninsecure = json_array_size(ins);
	}
	if (jf_shim_get_int(r, "pull_timeout_ms", INT64_MAX / 2, &x))
		rt->pull_timeout_ms = x;
	rt->expose_address = json_string_value(json_object_get(r, "expose_address"));
	return 0;
}

/* A mount's path or source: absolute, not the root, at most
 * JF_SHIM_PATH_MAX bytes; no ".." component (a path that leaves where it
 * names, in the container or on the host); no ":" or ",", the separators
 * of the runtimes' and mount(8)'s lists, nor a control character. */
static bool mount_path_ok(const char *p)
{
	if (!p || p[0] != '/' || strlen(p) > JF_SHIM_PATH_MAX || strpbrk(p, ":,") ||
	    strspn(p, "/") == strlen(p))
		return false;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	for (const char *c = p; (c = strstr(c, "..")) != NULL; c += 2)
		if (c[-1] == '/' && (c[2] == '/' || c[2] == '\0'))
			return false;
	return true;
}

/* The same path but for trailing slashes ("/data" and "/data/"). */
static bool same_path(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && memcmp(a, b, la) == 0;
}

/* 1 to JF_SHIM_NAME_MAX bytes, no control character; an emptydir's is
 * its directory's name in RUN_DIR/emptydir: a file name too */
static bool mount_name_ok(const char *n, bool file)
{
	size_t len = n ? strlen(n) : 0;
	if (len == 0 || len > JF_SHIM_NAME_MAX)
		return false;
	for (const char *c = n; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || (file && *c == '/'))
			return false;
	return !file || (strcmp(n, ".") != 0 && strcmp(n, "..") != 0);
}

static int decode_mount(struct jf_shim_launch *l, json_t *o, size_t i, char *err, size_t errlen)
{
	struct jf_mount *m = &l->mount_store[i];
	const char *type = json_string_value(json_object_get(o, "type"));
	json_int_t x = 0;
	if (type && !strcmp(type, "emptydir"))
		m->type = JF_MOUNT_EMPTYDIR;
	else if (type && !strcmp(type, "volume"))
		m->type = JF_MOUNT_VOLUME;
	else if (type && !strcmp(type, "object"))
		m->type = JF_MOUNT_OBJECT;
	else {
		snprintf(err, errlen,
			 "launch.json: mounts[%zu].type: must be emptydir, volume or object", i);
		return -1;
	}
	bool ed = m->type == JF_MOUNT_EMPTYDIR;
	m->name = json_string_value(json_object_get(o, "name"));
	if (!mount_name_ok(m->name, ed)) {
		snprintf(err, errlen, "launch.json: mounts[%zu].name: must be 1 to %d characters%s",
			 i, JF_SHIM_NAME_MAX, ed ? ", a file name" : "");
		return -1;
	}
	m->path = json_string_value(json_object_get(o, "path"));
	if (!mount_path_ok(m->path)) {
		snprintf(err, errlen,
			 "launch.json: mounts[%zu].path: must be an absolute path of at most %d "
			 "bytes, not /, without a \"..\" component, \":\" or \",\"",
			 i, JF_SHIM_PATH_MAX);
		return -1;
	}
	json_t *src = json_object_get(o, "source");
	m->source = json_string_value(src);
	if (ed && src && !json_is_null(src)) {
		snprintf(err, errlen, "launch.json: mounts[%zu].source: an emptydir has none", i);
		return -1;
	}
	if (!ed && !mount_path_ok(m->source)) {
		snprintf(err, errlen,
			 "launch.json: mounts[%zu].source: must be the host directory, an absolute "
			 "path as path is",
			 i);
		return -1;
	}
	if (json_object_get(o, "size") && !jf_shim_get_int(o, "size", INT64_MAX / 2, &x)) {
		snprintf(err, errlen, "launch.json: mounts[%zu].size: must be a byte count", i);
		return -1;
	}
	m->size_bytes = x;
	static const char *const flags[] = { "memory", "read_only" };
	bool *vals[] = { &m->memory, &m->read_only };
	for (size_t k = 0; k < 2; k++) {
		json_t *b = json_object_get(o, flags[k]);
		if (b && !json_is_boolean(b)) {
			snprintf(err, errlen, "launch.json: mounts[%zu].%s: must be true or false",
				 i, flags[k]);
			return -1;
		}
		*vals[k] = json_is_true(b);
	}
	if (!ed && (m->size_bytes > 0 || m->memory)) {
		snprintf(err, errlen, "launch.json: mounts[%zu]: size and memory are an emptydir's",
			 i);
		return -1;
	}
	if (ed && m->read_only) {
		snprintf(err, errlen,
			 "launch.json: mounts[%zu].read_only: an emptydir is there to be written",
			 i);
		return -1;
	}
	if (m->type == JF_MOUNT_OBJECT)
		m->read_only = true; /* a cache of the source: never written in a container */
	for (size_t k = 0; k < i; k++) {
		const struct jf_mount *o2 = &l->mount_store[k];
		if (same_path(o2->path, m->path)) {
			snprintf(err, errlen, "launch.json: mounts[%zu].path: %s is mounts[%zu]'s",
				 i, m->path, k);
			return -1;
		}
		if (ed && o2->type == JF_MOUNT_EMPTYDIR && !strcmp(o2->name, m->name)) {
			snprintf(err, errlen,
				 "launch.json: mounts[%zu].name: mounts[%zu] is an emptydir %s "
				 "too",
				 i, k, m->name);
			return -1;
		}
	}
	return 0;
}

void jf_shim_launch_release(struct jf_shim_launch *l)
{
	for (size_t i = 0; i < l->nprocs; i++) {
		free((void *)l->procs[i].argv);
		free((void *)l->procs[i].envp);
		free((void *)l->images[i].command);
		free((void *)l->images[i].args);
		free((void *)l->images[i].env);
	}
	free((void *)l->rt_store.insecure);
	free((void *)l->ports);
	free((void *)l->cpus);
	free((void *)l->groups);
	json_decref(l->root);
	memset(l, 0, sizeof(*l));
}

int jf_shim_launch_decode(struct jf_shim_launch *l, const char *buf, size_t len, bool cwd_optional,
			  char *err, size_t errlen)
{
	json_error_t je;
	json_int_t x;

	l->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!l->root) {
		snprintf(err, errlen, "launch.json: line %d: %s", je.line, je.text);
		return -1;
	}
	json_t *root = l->root;
	if (!json_is_object(root)) {
		snprintf(err, errlen, "launch.json: not an object");
		return -1;
	}
	if (!jf_shim_get_int(root, "uid", (json_int_t)UINT32_MAX - 1, &x)) {
		snprintf(err, errlen, "launch.json: uid: must be a user id");
		return -1;
	}
	l->uid = (uid_t)x;
	if (!jf_shim_get_int(root, "gid", (json_int_t)UINT32_MAX - 1, &x)) {
		snprintf(err, errlen, "launch.json: gid: must be a group id");
		return -1;
	}
	l->gid = (gid_t)x;
	json_t *groups = json_object_get(root, "groups");
	if (groups) {
		size_t n = json_array_size(groups);
		if (!json_is_array(groups) || n > JF_SHIM_MAX_GROUPS) {
			snprintf(err, errlen,
				 "launch.json: groups: must be an array of at most %d "
				 "group ids",
				 JF_SHIM_MAX_GROUPS);
			return -1;
		}
		gid_t *g = calloc(n + 1, sizeof(*g));
		if (!g) {
			snprintf(err, errlen, "launch.json: out of memory");
			return -1;
		}
		l->groups = g;
		l->ngroups = n;
		l->has_groups = true;
		for (size_t i = 0; i < n; i++) {
			json_t *v = json_array_get(groups, i);
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > (json_int_t)UINT32_MAX - 1) {
				snprintf(err, errlen,
					 "launch.json: groups[%zu]: must be a group id", i);
				return -1;
			}
			g[i] = (gid_t)json_integer_value(v);
		}
	}
	json_t *cwd = json_object_get(root, "cwd");
	l->cwd = json_string_value(cwd);
	if (cwd_optional && (!cwd || (l->cwd && !l->cwd[0]))) {
		l->cwd = NULL; /* RUN_DIR/work */
	} else if (!l->cwd || !l->cwd[0]) {
		snprintf(err, errlen, "launch.json: cwd: must be a path");
		return -1;
	}
	if (json_object_get(root, "log_cap")) {
		if (!jf_shim_get_int(root, "log_cap", INT64_MAX / 2, &x)) {
			snprintf(err, errlen, "launch.json: log_cap: must be a byte count");
			return -1;
		}
		l->log_cap = x;
	}
	json_t *cpus = json_object_get(root, "cpus");
	if (cpus && !json_is_null(cpus)) {
		if (!json_is_array(cpus)) {
			snprintf(err, errlen, "launch.json: cpus: must be an array");
			return -1;
		}
		l->ncpus = json_array_size(cpus);
		int *ids = calloc(l->ncpus + 1, sizeof(int));
		l->cpus = ids;
		if (!ids) {
			snprintf(err, errlen, "launch.json: out of memory");
			return -1;
		}
		for (size_t i = 0; i < l->ncpus; i++) {
			json_t *c = json_array_get(cpus, i);
			if (!json_is_integer(c) || json_integer_value(c) < 0 ||
			    json_integer_value(c) > INT_MAX) {
				snprintf(err, errlen, "launch.json: cpus[%zu]: must be a CPU id",
					 i);
				return -1;
			}
			ids[i] = (int)json_integer_value(c);
		}
	}
	json_t *procs = json_object_get(root, "procs");
	size_t n = json_array_size(procs);
	if (!json_is_array(procs) || n < 1 || n > JF_SHIM_MAX_PROCS) {
		snprintf(err, errlen, "launch.json: procs: must be 1 to %d processes",
			 JF_SHIM_MAX_PROCS);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(procs, i);
		struct jf_shim_proc *lp = &l->procs[i];
		lp->name = json_string_value(json_object_get(p, "name"));
		if (!lp->name || !lp->name[0] || strlen(lp->name) > JF_SHIM_NAME_MAX ||
		    strpbrk(lp->name, "\n\r")) {
			snprintf(err, errlen,
				 "launch.json: procs[%zu].name: must be 1 to %d characters", i,
				 JF_SHIM_NAME_MAX);
			return -1;
		}
		/* a container's argv may be empty: its image gives the command */
		json_t *io = json_object_get(p, "image");
		char **argv = str_array(json_object_get(p, "argv"), !io);
		lp->argv = argv;
		l->nprocs = i + 1; /* from here release frees this entry */
		if (!argv || (!io && !argv[0][0])) {
			snprintf(err, errlen,
				 "launch.json: procs[%zu].argv: must be a non-empty array of "
				 "strings",
				 i);
			return -1;
		}
		json_t *envp = json_object_get(p, "envp");
		lp->envp = envp ? str_array(envp, false) : calloc(1, sizeof(char *));
		if (!lp->envp) {
			snprintf(err, errlen,
				 "launch.json: procs[%zu].envp: must be an array of strings", i);
			return -1;
		}
		if ((json_object_get(p, "mem_bytes") &&
		     !jf_shim_get_int(p, "mem_bytes", INT64_MAX / 2, &x)) ||
		    (json_object_get(p, "cpu_milli") &&
		     !jf_shim_get_int(p, "cpu_milli", INT64_MAX / 2, &x))) {
			snprintf(err, errlen, "launch.json: procs[%zu]: a limit is not a count", i);
			return -1;
		}
		if (jf_shim_get_int(p, "mem_bytes", INT64_MAX / 2, &x))
			lp->mem_bytes = x;
		if (jf_shim_get_int(p, "cpu_milli", INT64_MAX / 2, &x))
			lp->cpu_milli = x;
		if (io && decode_image(io, &l->images[i], i, err, errlen) < 0)
			return -1;
		if (io)
			lp->image = &l->images[i];
	}
	json_t *rt = json_object_get(root, "runtime");
	if (rt && decode_runtime(rt, &l->rt_store, err, errlen) < 0)
		return -1;
	if (rt)
		l->rt = &l->rt_store;
	json_t *ra = json_object_get(root, "registry_auth");
	if (ra && !(l->registry_auth = json_string_value(ra))) {
		snprintf(err, errlen, "launch.json: registry_auth: must be a path");
		return -1;
	}
	json_t *ports = json_object_get(root, "ports");
	if (ports) {
		size_t np = json_array_size(ports);
		int *pv = calloc(np + 1, sizeof(*pv));
		if (!json_is_array(ports) || np > 64 || !pv) {
			free(pv);
			snprintf(err, errlen, "launch.json: ports: must be at most 64 ports");
			return -1;
		}
		l->ports = pv;
		l->nports = np;
		for (size_t i = 0; i < np; i++) {
			json_t *v = json_array_get(ports, i);
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > 65535) {
				snprintf(err, errlen, "launch.json: ports[%zu]: must be a port", i);
				return -1;
			}
			pv[i] = (int)json_integer_value(v);
		}
	}
	if (json_object_get(root, "shm_bytes")) {
		if (!jf_shim_get_int(root, "shm_bytes", INT64_MAX / 2, &x)) {
			snprintf(err, errlen, "launch.json: shm_bytes: must be a byte count");
			return -1;
		}
		l->shm_bytes = x;
	}
	json_t *mounts = json_object_get(root, "mounts");
	if (mounts) {
		size_t nm = json_array_size(mounts);
		if (!json_is_array(mounts) || nm > JF_SHIM_MAX_MOUNTS) {
			snprintf(err, errlen, "launch.json: mounts: must be at most %d mounts",
				 JF_SHIM_MAX_MOUNTS);
			return -1;
		}
		for (size_t i = 0; i < nm; i++) {
			json_t *o = json_array_get(mounts, i);
			if (!json_is_object(o)) {
				snprintf(err, errlen, "launch.json: mounts[%zu]: must be an object",
					 i);
				return -1;
			}
			if (decode_mount(l, o, i, err, errlen) < 0)
				return -1;
		}
		l->mounts = l->mount_store;
		l->nmounts = nm;
	}
	if (json_object_get(root, "evict_check_ms")) {
		if (!jf_shim_get_int(root, "evict_check_ms", 86400000, &x)) {
			snprintf(
				err, errlen,
				"launch.json: evict_check_ms: must be milliseconds, at most a day");
			return -1;
		}
		l->evict_check_ms = x;
	}
	return 0;
}

/* ---- storage ---- */

const char *jf_shim_mount_type_name(enum jf_mount_type t)
{
	switch (t) {
	case JF_MOUNT_EMPTYDIR:
		return "emptydir";
	case JF_MOUNT_VOLUME:
		return "volume";
	case JF_MOUNT_OBJECT:
		return "object";
	}
	return NULL;
}

/* fd's tree (fd is taken) added to used; see jf_shim_tree_usage.  A file
 * of several names is counted once per name: only ever more, not less. */
static int64_t tree_usage(int fd, int64_t used, int64_t limit, dev_t dev, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return used;
	}
	struct dirent *de;
	while (used <= limit && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		/* gone since readdir, or a mount in the tree: not its bytes */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		used += (int64_t)st.st_blocks * 512;
		if (!S_ISDIR(st.st_mode) || depth >= JF_SHIM_DU_DEPTH || used > limit)
			continue;
		int sub = openat(dirfd(d), de->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			used = tree_usage(sub, used, limit, dev, depth + 1);
	}
	closedir(d);
	return used;
}

int64_t jf_shim_tree_usage(int dirfd, int64_t limit)
{
	struct stat st;
	if (limit <= 0)
		limit = INT64_MAX / 2;
	if (fstat(dirfd, &st) < 0)
		return 0;
	/* a descriptor of our own: fdopendir takes it, and its offset */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	return tree_usage(fd, (int64_t)st.st_blocks * 512, limit, st.st_dev, 0);
}

void jf_shim_quantity(int64_t bytes, char *buf, size_t n)
{
	static const char *const bin[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	static const char *const dec[] = { "k", "M", "G", "T", "P", "E" };
	int b = -1, d = -1;
	int64_t vb = bytes, vd = bytes;
	while (bytes > 0 && b < 5 && vb % 1024 == 0) {
		vb /= 1024;
		b++;
	}
	while (bytes > 0 && d < 5 && vd % 1000 == 0) {
		vd /= 1000;
		d++;
	}
	/* the shorter of the two exact forms (the spec's is not known here):
	 * 10Gi, not 10737418240; 1T, not 976562500Ki */
	if (b >= 0 && (d < 0 || vb <= vd))
		snprintf(buf, n, "%" PRId64 "%s", vb, bin[b]);
	else if (d >= 0)
		snprintf(buf, n, "%" PRId64 "%s", vd, dec[d]);
	else
		snprintf(buf, n, "%" PRId64, bytes);
}

void jf_shim_evict_message(const char *name, int64_t limit, char *buf, size_t n)
{
	char q[32];
	jf_shim_quantity(limit, q, sizeof(q));
	/* the kubelet's emptyDirMessageFmt, less its trailing space */
	snprintf(buf, n, "Usage of EmptyDir volume \"%s\" exceeds the limit \"%s\".", name, q);
}

/* ---- rotation ---- */

bool jf_shim_rotation_parse(const char *text, size_t len, struct jf_shim_rotation *out)
{
	memset(out, 0, sizeof(*out));
	json_t *root = json_loadb(text, len, 0, NULL);
	json_t *cap = json_object_get(root, "cap");
	bool ok = json_is_integer(cap);
	if (ok)
		out->cap = json_integer_value(cap);
	for (int k = 0; ok && k < JF_SHIM_LOG_FILES; k++) {
		json_t *f = json_object_get(root, jf_shim_log_names[k]);
		json_t *r = json_object_get(f, "rotations"), *d = json_object_get(f, "dropped");
		if (!f)
			continue; /* a file the shim never rotated */
		ok = json_is_integer(r) && json_is_integer(d);
		if (ok) {
			out->rotations[k] = json_integer_value(r);
			out->dropped[k] = json_integer_value(d);
		}
	}
	json_decref(root);
	return ok;
}

/* ---- result and started ---- */

int jf_shim_read(const char *path, size_t cap, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char *buf = malloc(cap + 1);
	size_t n = 0;
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, cap + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > cap) {
			free(buf);
			close(fd);
			errno = EFBIG;
			return -1;
		}
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

static int path_in(char *buf, size_t n, const char *dir, const char *name)
{
	int w = snprintf(buf, n, "%s/%s", dir, name);
	if (w < 0 || (size_t)w >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int64_t jf_shim_started_ms(const char *run_dir)
{
	char path[PATH_MAX], *text = NULL;
	long long ms = 0;
	if (path_in(path, sizeof(path), run_dir, "started") < 0 ||
	    jf_shim_read(path, JF_SHIM_FILE_MAX, &text, NULL) < 0)
		return 0;
	if (sscanf(text, "started %lld", &ms) != 1 && sscanf(text, "failed %lld", &ms) != 1)
		ms = 0;
	free(text);
	return ms;
}

bool jf_shim_gpus_valid(const char *text)
{
	size_t len = strlen(text);
	if (len == 0 || len >= JF_SHIM_GPUS_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool digit = text[i] >= '0' && text[i] <= '9';
		bool comma = text[i] == ',' && i > 0 && i + 1 < len && text[i + 1] != ',';
		if (!digit && !comma)
			return false;
	}
	return true;
}

void jf_shim_gpus(const char *run_dir, char *buf, size_t n)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	if (n)
		buf[0] = '\0';
	if (path_in(path, sizeof(path), run_dir, "gpus") < 0 ||
	    jf_shim_read(path, JF_SHIM_GPUS_MAX + 1, &text, &len) < 0)
		return;
	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	if (jf_shim_gpus_valid(text) && len < n)
		memcpy(buf, text, len + 1);
	free(text);
}

static bool int_field(json_t *o, const char *key, json_int_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return false;
	*out = json_integer_value(v);
	return true;
}

int jf_shim_result(const char *run_dir, struct jf_run_result *out, char *why, size_t whylen)
{
	char path[PATH_MAX], *text = NULL;
	size_t len;
	json_error_t je;
	json_int_t v;
	int rc = -1;

	if (path_in(path, sizeof(path), run_dir, "result") < 0) {
		snprintf(why, whylen, "run directory path too long");
		return -1;
	}
	if (jf_shim_read(path, JF_SHIM_FILE_MAX, &text, &len) < 0) {
		int e = errno;
		snprintf(why, whylen, "result: %s", strerror(e));
		errno = e;
		return -1;
	}
	json_t *root = json_loadb(text, len, 0, &je);
	free(text);
	errno = EINVAL;
	if (!json_is_object(root)) {
		snprintf(why, whylen, "result: not a JSON object");
		goto out;
	}
	if (!int_field(root, "exit_code", &v)) {
		snprintf(why, whylen, "result: no exit_code");
		goto out;
	}
	out->exit_code = (int)v;
	if (int_field(root, "signal", &v))
		out->term_signal = (int)v;
	if (int_field(root, "start_ms", &v))
		out->start_ms = v;
	if (int_field(root, "end_ms", &v))
		out->end_ms = v;
	const char *msg = json_string_value(json_object_get(root, "message"));
	snprintf(out->message, sizeof(out->message), "%s", msg ? msg : "");
	out->start_failed = json_is_true(json_object_get(root, "start_failed"));
	out->timed_out = json_is_true(json_object_get(root, "timed_out"));
	out->pull_failed = json_is_true(json_object_get(root, "pull_failed"));
	out->evicted = json_is_true(json_object_get(root, "evicted"));
	out->signalled = json_string_value(json_object_get(root, "signalled")) != NULL;
	json_t *procs = json_object_get(root, "procs");
	for (size_t i = 0; i < json_array_size(procs) && i < JF_RUN_MAX_PROCS; i++) {
		json_t *p = json_array_get(procs, i);
		struct jf_proc_result *pr = &out->procs[i];
		const char *name = json_string_value(json_object_get(p, "name"));
		snprintf(pr->name, sizeof(pr->name), "%s", name ? name : "");
		if (int_field(p, "exit_code", &v))
			pr->exit_code = (int)v;
		if (int_field(p, "signal", &v))
			pr->term_signal = (int)v;
		pr->oom_killed = json_is_true(json_object_get(p, "oom_killed"));
		const char *dg = json_string_value(json_object_get(p, "image_digest"));
		snprintf(pr->image_digest, sizeof(pr->image_digest), "%s", dg ? dg : "");
		out->nprocs = i + 1;
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

bool jf_shim_note_parse(const char *line, struct jf_run_result *res)
{
	char type[8], reason[JF_NOTE_REASON_MAX];
	int off = 0;
	if (strncmp(line, "note ", 5) != 0 ||
	    sscanf(line + 5, "%7s %31s %n", type, reason, &off) < 2 || off <= 0)
		return false;
	off += 5;
	res->note = true;
	snprintf(res->note_type, sizeof(res->note_type), "%s",
		 strcmp(type, "Warning") == 0 ? "Warning" : "Normal");
	snprintf(res->note_reason, sizeof(res->note_reason), "%s", reason);
	size_t len = strcspn(line + off, "\n");
	if (len >= sizeof(res->message))
		len = sizeof(res->message) - 1;
	memcpy(res->message, line + off, len);
	res->message[len] = '\0';
	return true;
}

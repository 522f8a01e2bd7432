/*
 * cache.c - the host's image cache (cache.h): pull into it, look up, list,
 * touch, remove.
 *
 * Locks, taken in this order and always with flock() on files under
 * locks/ so that they hold across processes and, on a shared state
 * directory, across the hosts of a cluster:
 *   locks/<name>  exclusive while a reference is pulled, touched or removed
 *   locks/.gc     shared while a pull writes or reuses blobs and layers,
 *                 exclusive while jf_imgcache_remove deletes unnamed ones
 * so a blob is never deleted between the moment a pull finds it present
 * and the moment the pull's record names it.  jf_imgcache_remove_nowait
 * asks for both without waiting (the daemon's rmdir: EBUSY instead).
 *
 * Whole or absent: blobs arrive by rename (registry.c), layers are
 * unpacked into layers/sha256/tmp-<host>-<pid>-<hex> and renamed, records
 * are written to refs/.<name>.<pid>.tmp and renamed.  jf_imgcache_open
 * removes temporaries of this host whose process is gone.
 */
#include "image/cache_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/digest.h"

const char *jf_imgcache_dir(const struct jf_imgcache *c)
{
	return c->dir;
}

enum jf_err jf_ic_sys(struct jf_error *err, const char *what, const char *path)
{
	int e = errno;
	return jf_error_set(err,
			    e == ENOSPC   ? JF_EIO
			    : e == ENOENT ? JF_ENOENT
					  : JF_EIO,
			    0, "image cache: %s %s: %s", what, path, strerror(e));
}

enum jf_err jf_ic_mkdirs(const char *path, struct jf_error *err)
{
	char p[PATHMAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return jf_ic_sys(err, "cannot make", p);
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return jf_ic_sys(err, "cannot make", p);
	return JF_OK;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void jf_ic_rmtree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* "tmp-<host>-<pid>-..." or "...part-<host>-<pid>-...": ours and dead? */
static bool leftover(const struct jf_imgcache *c, const char *name, const char *tag)
{
	const char *p = strstr(name, tag);
	if (!p)
		return false;
	p += strlen(tag);
	size_t hl = strlen(c->host);
	if (strncmp(p, c->host, hl) != 0 || p[hl] != '-')
		return false;
	long pid = strtol(p + hl + 1, NULL, 10);
	return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static void sweep(const struct jf_imgcache *c, const char *sub, const char *tag)
{
	char d[DIRMAX + 64];
	snprintf(d, sizeof(d), "%s/%s", c->dir, sub);
	DIR *dp = opendir(d);
	if (!dp)
		return;
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (!leftover(c, de->d_name, tag))
			continue;
		char p[PATHMAX];
		snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
		jf_ic_rmtree(p);
	}
	closedir(dp);
}

enum jf_err jf_imgcache_open(const char *dir, struct jf_imgcache **out, struct jf_error *err)
{
	*out = NULL;
	if (strlen(dir) >= DIRMAX)
		return jf_error_set(err, JF_EINVAL, 0, "image cache: path too long: %s", dir);
	struct jf_imgcache *c = calloc(1, sizeof(*c));
	if (!c)
		return jf_error_set(err, JF_ENOMEM, 0, "image cache: out of memory");
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	if (gethostname(c->host, sizeof(c->host) - 1))
		snprintf(c->host, sizeof(c->host), "host");
	for (char *h = c->host; *h; h++)
		if (*h == '-' || *h == '/')
			*h = '_';
	static const char *const subs[] = { "blobs/sha256", "layers/sha256", "refs", "locks" };
	for (size_t i = 0; i < 4; i++) {
		char p[PATHMAX];
		snprintf(p, sizeof(p), "%s/%s", dir, subs[i]);
		enum jf_err rc = jf_ic_mkdirs(p, err);
		if (rc) {
			free(c);
			return rc;
		}
	}
	sweep(c, "blobs/sha256", "part-");
	sweep(c, "layers/sha256", "tmp-");
	*out = c;
	return JF_OK;
}

void jf_imgcache_free(struct jf_imgcache *c)
{
	free(c);
}

void jf_imgcache_layer_dir(const struct jf_imgcache *c, const char *digest, char *buf, size_t n)
{
	const char *hex = strncmp(digest, "sha256:", 7) == 0 ? digest + 7 : digest;
	snprintf(buf, n, "%s/layers/sha256/%s", c->dir, hex);
}

void jf_ic_blob_path(const struct jf_imgcache *c, const char *digest, char *buf, size_t n)
{
	snprintf(buf, n, "%s/blobs/sha256/%s", c->dir, digest + 7);
}

/* flock the file locks/<name>; returns the fd or -1 (err set) */
int jf_ic_lock(const struct jf_imgcache *c, const char *name, int how, struct jf_error *err)
{
	char p[PATHMAX];
	snprintf(p, sizeof(p), "%s/locks/%s", c->dir, name);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		jf_ic_sys(err, "cannot open the lock", p);
		return -1;
	}
	while (flock(fd, how) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK) {
			/* LOCK_NB: another process holds it */
			if (name[0] == '.')
				jf_error_set(err, JF_EBUSY, 0,
					     "image cache: a pull is writing into it; try again");
			else
				jf_error_set(err, JF_EBUSY, 0,
					     "image %s is being pulled or touched; try again",
					     name);
			close(fd);
			return -1;
		}
		jf_ic_sys(err, "cannot lock", p);
		close(fd);
		return -1;
	}
	return fd;
}

void jf_ic_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* ---- records ---- */

void jf_image_free(struct jf_image *img)
{
	if (!img)
		return;
	free(img->layers);
	jf_imgconfig_release(&img->config);
	free(img);
}

void jf_image_list_free(struct jf_image **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		jf_image_free(v[i]);
	free(v);
}

static json_t *strv_json(char **v)
{
	json_t *a = json_array();
	for (char **p = v; p && *p; p++)
		json_array_append_new(a, json_string(*p));
	return a;
}

enum jf_err jf_ic_record_write(const struct jf_imgcache *c, const struct jf_image *img,
			       struct jf_error *err)
{
	json_t *layers = json_array();
	for (size_t i = 0; i < img->nlayers; i++)
		json_array_append_new(layers, json_string(img->layers[i]));
	json_t *cfg =
		json_pack("{s:o,s:o,s:o,s:s,s:s}", "entrypoint", strv_json(img->config.entrypoint),
			  "cmd", strv_json(img->config.cmd), "env", strv_json(img->config.env),
			  "user", img->config.user, "workdir", img->config.workdir);
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:o,s:o}", "reference",
			      img->reference, "name", img->name, "digest", img->digest, "manifest",
			      img->manifest, "config_digest", img->config_digest, "size_bytes",
			      (json_int_t)img->size_bytes, "pulled_ms", (json_int_t)img->pulled_ms,
			      "last_used_ms", (json_int_t)img->last_used_ms, "layers", layers,
			      "config", cfg);
	if (!j)
		return jf_error_set(err, JF_ENOMEM, 0, "image cache: cannot build the record of %s",
				    img->reference);
	char tmp[PATHMAX], dst[PATHMAX];
	snprintf(tmp, sizeof(tmp), "%s/refs/.%s.%ld.tmp", c->dir, img->name, (long)getpid());
	snprintf(dst, sizeof(dst), "%s/refs/%s.json", c->dir, img->name);
	enum jf_err rc = JF_OK;
	if (json_dump_file(j, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) != 0)
		rc = jf_error_set(err, JF_EIO, 0, "image cache: cannot write %s (disk full?)", tmp);
	else if (rename(tmp, dst) != 0)
		rc = jf_ic_sys(err, "cannot rename", tmp);
	if (rc)
		unlink(tmp);
	json_decref(j);
	return rc;
}

static enum jf_err json_strv(json_t *a, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t k = json_array_size(a);
	if (!k)
		return JF_OK;
	char **v = calloc(k + 1, sizeof(*v));
	if (!v)
		return JF_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!(v[i] = strdup(s ? s : ""))) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return JF_ENOMEM;
		}
	}
	*out = v;
	*n = k;
	return JF_OK;
}

enum jf_err jf_ic_record_read(const struct jf_imgcache *c, const char *name, struct jf_image **out,
			      struct jf_error *err)
{
	char p[PATHMAX];
	snprintf(p, sizeof(p), "%s/refs/%s.json", c->dir, name);
	json_error_t je;
	json_t *j = json_load_file(p, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		if (access(p, F_OK) != 0)
			return jf_error_set(err, JF_ENOENT, 0, "image %s is not in the cache",
					    name);
		return jf_error_set(err, JF_EIO, 0, "image cache: %s is damaged (%s)", p, je.text);
	}
	struct jf_image *img = calloc(1, sizeof(*img));
	enum jf_err rc = img ? JF_OK : JF_ENOMEM;
	json_t *cfg = json_object_get(j, "config");
	json_t *layers = json_object_get(j, "layers");
	const char *ref = json_string_value(json_object_get(j, "reference"));
	const char *dg = json_string_value(json_object_get(j, "digest"));
	if (!rc && (!ref || !dg || !json_is_array(layers) || !json_is_object(cfg) ||
		    json_array_size(layers) > JF_MF_MAX_LAYERS))
		rc = JF_EIO;
	if (!rc) {
		snprintf(img->reference, sizeof(img->reference), "%s", ref);
		snprintf(img->name, sizeof(img->name), "%s", name);
		snprintf(img->digest, sizeof(img->digest), "%s", dg);
		const char *md = json_string_value(json_object_get(j, "manifest"));
		const char *cd = json_string_value(json_object_get(j, "config_digest"));
		snprintf(img->manifest, sizeof(img->manifest), "%s", md ? md : dg);
		snprintf(img->config_digest, sizeof(img->config_digest), "%s", cd ? cd : "");
		img->size_bytes = json_integer_value(json_object_get(j, "size_bytes"));
		img->pulled_ms = json_integer_value(json_object_get(j, "pulled_ms"));
		img->last_used_ms = json_integer_value(json_object_get(j, "last_used_ms"));
		img->nlayers = json_array_size(layers);
		img->layers = calloc(img->nlayers ? img->nlayers : 1, sizeof(*img->layers));
		if (!img->layers)
			rc = JF_ENOMEM;
	}
	for (size_t i = 0; !rc && i < img->nlayers; i++) {
		const char *l = json_string_value(json_array_get(layers, i));
		if (!l || !jf_digest_valid(l))
			rc = JF_EIO;
		else
			snprintf(img->layers[i], JF_DIGEST_LEN, "%s", l);
	}
	if (!rc)
		rc = json_strv(json_object_get(cfg, "entrypoint"), &img->config.entrypoint,
			       &img->config.nentrypoint);
	if (!rc)
		rc = json_strv(json_object_get(cfg, "cmd"), &img->config.cmd, &img->config.ncmd);
	if (!rc)
		rc = json_strv(json_object_get(cfg, "env"), &img->config.env, &img->config.nenv);
	if (!rc) {
		const char *u = json_string_value(json_object_get(cfg, "user"));
		const char *w = json_string_value(json_object_get(cfg, "workdir"));
		img->config.user = strdup(u ? u : "");
		img->config.workdir = strdup(w ? w : "");
		if (!img->config.user || !img->config.workdir)
			rc = JF_ENOMEM;
	}
	json_decref(j);
	if (rc) {
		jf_image_free(img);
		return rc == JF_ENOMEM
			       ? jf_error_set(err, JF_ENOMEM, 0, "image cache: out of memory")
			       : jf_error_set(err, JF_EIO, 0, "image cache: %s is damaged", p);
	}
	*out = img;
	return JF_OK;
}

enum jf_err jf_imgcache_get(struct jf_imgcache *c, const char *name, struct jf_image **out,
			    struct jf_error *err)
{
	*out = NULL;
	size_t n = strlen(name);
	if (!n || n >= JF_IMGREF_NAMEMAX || name[0] == '.' || strchr(name, '/'))
		return jf_error_set(err, JF_ENOENT, 0, "image %s is not in the cache", name);
	return jf_ic_record_read(c, name, out, err);
}

enum jf_err jf_imgcache_lookup(struct jf_imgcache *c, const struct jf_imgref *ref,
			       struct jf_image **out, struct jf_error *err)
{
	char name[JF_IMGREF_NAMEMAX];
	*out = NULL;
	jf_imgref_dirname(ref, name);
	struct jf_image *img;
	enum jf_err rc = jf_ic_record_read(c, name, &img, err);
	if (rc)
		return rc;
	/* a record whose layers went missing (removed by hand) is no record */
	for (size_t i = 0; i < img->nlayers; i++) {
		char d[PATHMAX];
		jf_imgcache_layer_dir(c, img->layers[i], d, sizeof(d));
		struct stat st;
		if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) {
			jf_image_free(img);
			return jf_error_set(err, JF_ENOENT, 0,
					    "image %s: layer %.19s is missing from the cache", name,
					    img->layers[i]);
		}
	}
	*out = img;
	return JF_OK;
}

/* ---- list, touch, remove ---- */

static int by_name(const void *a, const void *b)
{
	const struct jf_image *x = *(struct jf_image *const *)a, *y = *(struct jf_image *const *)b;
	return strcmp(x->name, y->name);
}

enum jf_err jf_imgcache_list(struct jf_imgcache *c, struct jf_image ***out, size_t *n,
			     struct jf_error *err)
{
	*out = NULL;
	*n = 0;
	char d[DIRMAX + 64];
	snprintf(d, sizeof(d), "%s/refs", c->dir);
	DIR *dp = opendir(d);
	if (!dp)
		return jf_ic_sys(err, "cannot read", d);
	struct jf_image **v = NULL;
	size_t nv = 0, cap = 0;
	struct dirent *de;
	enum jf_err rc = JF_OK;
	while (!rc && (de = readdir(dp))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || l < 6 || l - 5 >= JF_IMGREF_NAMEMAX ||
		    strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		char name[JF_IMGREF_NAMEMAX];
		memcpy(name, de->d_name, l - 5);
		name[l - 5] = '\0';
		struct jf_image *img;
		struct jf_error e2;
		if (jf_ic_record_read(c, name, &img, &e2) != JF_OK)
			continue; /* removed meanwhile, or damaged: not listed */
		if (nv == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct jf_image **nvp = realloc(v, nc * sizeof(*v));
			if (!nvp) {
				jf_image_free(img);
				rc = jf_error_set(err, JF_ENOMEM, 0, "image cache: out of memory");
				break;
			}
			v = nvp;
			cap = nc;
		}
		v[nv++] = img;
	}
	closedir(dp);
	if (rc) {
		jf_image_list_free(v, nv);
		return rc;
	}
	if (nv)
		qsort(v, nv, sizeof(*v), by_name);
	*out = v;
	*n = nv;
	return JF_OK;
}

enum jf_err jf_imgcache_touch(struct jf_imgcache *c, const char *name, int64_t now_ms,
			      struct jf_error *err)
{
	int lk = jf_ic_lock(c, name, LOCK_EX, err);
	if (lk < 0)
		return err ? err->code : JF_EIO;
	struct jf_image *img;
	enum jf_err rc = jf_ic_record_read(c, name, &img, err);
	if (!rc) {
		img->last_used_ms = now_ms;
		rc = jf_ic_record_write(c, img, err);
		jf_image_free(img);
	}
	jf_ic_unlock(lk);
	return rc;
}

/* names[] of every layer some record names, then delete the rest */
static bool named(char (*v)[JF_DIGEST_LEN], size_t n, const char *hex)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i] + 7, hex))
			return true;
	return false;
}

/* nb: 0, or LOCK_NB for JF_EBUSY instead of waiting for a lock */
static enum jf_err remove_ref(struct jf_imgcache *c, const char *name, int nb, struct jf_error *err)
{
	int lk = jf_ic_lock(c, name, LOCK_EX | nb, err);
	if (lk < 0)
		return err ? err->code : JF_EIO;
	int gc = jf_ic_lock(c, ".gc", LOCK_EX | nb, err);
	enum jf_err rc = gc < 0 ? (err ? err->code : JF_EIO) : JF_OK;
	char p[PATHMAX];
	snprintf(p, sizeof(p), "%s/refs/%s.json", c->dir, name);
	if (!rc && unlink(p) != 0)
		rc = errno == ENOENT
			     ? jf_error_set(err, JF_ENOENT, 0, "image %s is not in the cache", name)
			     : jf_ic_sys(err, "cannot remove", p);
	/* what the remaining records name: their manifests, configs and
	 * layers (a layer's blob and its directory have the same name) */
	struct jf_image **v = NULL;
	size_t nv = 0;
	if (!rc)
		rc = jf_imgcache_list(c, &v, &nv, err);
	char(*keep)[JF_DIGEST_LEN] = NULL;
	size_t nkeep = 0;
	if (!rc) {
		size_t total = 0;
		for (size_t i = 0; i < nv; i++)
			total += v[i]->nlayers + 3;
		keep = calloc(total ? total : 1, sizeof(*keep));
		if (!keep)
			rc = jf_error_set(err, JF_ENOMEM, 0, "image cache: out of memory");
		for (size_t i = 0; !rc && i < nv; i++) {
			memcpy(keep[nkeep++], v[i]->digest, JF_DIGEST_LEN);
			memcpy(keep[nkeep++], v[i]->manifest, JF_DIGEST_LEN);
			memcpy(keep[nkeep++], v[i]->config_digest, JF_DIGEST_LEN);
			for (size_t k = 0; k < v[i]->nlayers; k++)
				memcpy(keep[nkeep++], v[i]->layers[k], JF_DIGEST_LEN);
		}
	}
	/* layers first, then blobs */
	static const char *const subs[] = { "layers/sha256", "blobs/sha256" };
	for (size_t s = 0; !rc && s < 2; s++) {
		char d[DIRMAX + 64];
		snprintf(d, sizeof(d), "%s/%s", c->dir, subs[s]);
		DIR *dp = opendir(d);
		if (!dp)
			continue;
		struct dirent *de;
		while ((de = readdir(dp))) {
			if (strlen(de->d_name) != 64 || named(keep, nkeep, de->d_name))
				continue;
			char q[PATHMAX];
			snprintf(q, sizeof(q), "%s/%s", d, de->d_name);
			jf_ic_rmtree(q);
		}
		closedir(dp);
	}
	free(keep);
	jf_image_list_free(v, nv);
	jf_ic_unlock(gc);
	jf_ic_unlock(lk);
	return rc;
}

enum jf_err jf_imgcache_remove(struct jf_imgcache *c, const char *name, struct jf_error *err)
{
	return remove_ref(c, name, 0, err);
}

enum jf_err jf_imgcache_remove_nowait(struct jf_imgcache *c, const char *name, struct jf_error *err)
{
	return remove_ref(c, name, LOCK_NB, err);
}

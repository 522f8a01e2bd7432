/*
 * images.c - /images: the host's image cache as directories (images.h).
 *
 * The cache (image/cache.h, STATE/images) is written by jobfs-image
 * processes - the shims pull before a container starts - never by the
 * daemon, so nothing of it is kept here: a listing reads the records, a
 * lookup or a stat looks at the record's file, a status reads it.  What
 * the kernel caches lasts the tree's usual attr_timeout.  The daemon never
 * makes the cache either: with no STATE/images, /images is empty.
 *
 * What stays true:
 * - An image's inode number holds a number for its name (inode.h), given
 *   the first time this daemon sees the name and kept for its life, so
 *   inode numbers never name two images.  names[id - 1] is the name; the
 *   table only grows, by the names of records that existed (tens).
 * - The table and the opened cache are under the map lock (serve.c): only
 *   memory is touched while it is held.
 * - Reading every record (a listing) and removing an image's layers run
 *   with the tree's lock let go (jf_fs_leave): readers do not wait for the
 *   disk, and a write waiting for the lock does not hold them back
 *   meanwhile.  rmdir runs on the loop's thread, so the check that no
 *   running or starting node uses the image and the removal of its record
 *   cannot cross a node's start (the engine records a node's images in
 *   the same step that starts it).
 * - The times: a record file's mtime is its image's last change (a pull,
 *   a use); the refs/ directory's is that of /images' entries.
 */
#include "fs/images.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/imgref.h"
#include "core/names.h"
#include "core/timefmt.h"
#include "fs/fs_int.h"
#include "image/cache.h"

#define USERS_ON_STACK 32

struct jf_fs_images {
	struct jf_imgcache *cache;        /* opened at first use; NULL until the cache is there */
	char (*names)[JF_IMGREF_NAMEMAX]; /* names[id - 1] */
	size_t n, cap;
};

/* Under the map lock: the table, made at first use (NULL: no memory). */
static struct jf_fs_images *table(struct jf_fs *fs)
{
	if (!fs->images)
		fs->images = calloc(1, sizeof(*fs->images));
	return fs->images;
}

/* The number of name, given now if it has none (0: no memory). */
static int64_t id_of(struct jf_fs *fs, const char *name)
{
	int64_t id = 0;
	jf_fs_maps_lock(fs);
	struct jf_fs_images *im = table(fs);
	for (size_t i = 0; im && i < im->n && !id; i++)
		if (!strcmp(im->names[i], name))
			id = (int64_t)i + 1;
	if (im && !id) {
		if (im->n == im->cap) {
			size_t ncap = im->cap ? im->cap * 2 : 16;
			void *p = realloc(im->names, ncap * sizeof(*im->names));
			if (p) {
				im->names = p;
				im->cap = ncap;
			}
		}
		if (im->n < im->cap) {
			snprintf(im->names[im->n], JF_IMGREF_NAMEMAX, "%s", name);
			id = (int64_t)++im->n;
		}
	}
	jf_fs_maps_unlock(fs);
	return id;
}

/* The name numbered id into buf; false if none is. */
static bool name_of(struct jf_fs *fs, int64_t id, char buf[JF_IMGREF_NAMEMAX])
{
	bool ok = false;
	jf_fs_maps_lock(fs);
	struct jf_fs_images *im = fs->images;
	if (im && id >= 1 && (size_t)id <= im->n) {
		memcpy(buf, im->names[id - 1], JF_IMGREF_NAMEMAX);
		ok = true;
	}
	jf_fs_maps_unlock(fs);
	return ok;
}

/* The cache, opened the first time it is there (opening sweeps what dead
 * pulls left, once); NULL while STATE/images does not exist. */
static struct jf_imgcache *cache_of(struct jf_fs *fs)
{
	jf_fs_maps_lock(fs);
	struct jf_imgcache *c = fs->images ? fs->images->cache : NULL;
	jf_fs_maps_unlock(fs);
	if (c)
		return c;
	char dir[4096];
	struct stat sb;
	snprintf(dir, sizeof(dir), "%s/images", jf_engine_state_dir(fs->e));
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return NULL;
	struct jf_error err;
	jf_error_clear(&err);
	if (jf_imgcache_open(dir, &c, &err) != JF_OK) {
		fprintf(stderr, "jobfs: /images: %s\n", err.msg);
		return NULL;
	}
	jf_fs_maps_lock(fs);
	struct jf_fs_images *im = table(fs);
	struct jf_imgcache *kept = NULL;
	if (im && !im->cache)
		im->cache = c;
	if (im)
		kept = im->cache; /* another thread's, if it came first */
	jf_fs_maps_unlock(fs);
	if (kept != c)
		jf_imgcache_free(c);
	return kept;
}

/* The mtime of the cache's file below its directory, in ms; 0 if none. */
static int64_t file_ms(struct jf_imgcache *c, const char *rel)
{
	char p[4400];
	struct stat sb;
	snprintf(p, sizeof(p), "%s/%s", jf_imgcache_dir(c), rel);
	if (stat(p, &sb) != 0)
		return 0;
	int64_t ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
	return ms > 0 ? ms : 1;
}

/* When the record of name last changed; 0 when there is none. */
static int64_t record_ms(struct jf_imgcache *c, const char *name)
{
	char rel[JF_IMGREF_NAMEMAX + 16];
	snprintf(rel, sizeof(rel), "refs/%s.json", name);
	return file_ms(c, rel);
}

int jf_images_find(struct jf_fs *fs, const char *name, int64_t *id)
{
	if (!jf_name_valid(name, NULL) || strlen(name) >= JF_IMGREF_NAMEMAX)
		return ENOENT;
	struct jf_imgcache *c = cache_of(fs);
	struct jf_image *img = NULL;
	struct jf_error err;
	/* a record that cannot be read is not listed either (jf_imgcache_list) */
	if (!c || jf_imgcache_get(c, name, &img, &err) != JF_OK)
		return ENOENT;
	jf_image_free(img);
	*id = id_of(fs, name);
	return *id ? 0 : ENOMEM;
}

int jf_images_info(struct jf_fs *fs, const struct jf_ino *ino, struct jf_obj_info *in)
{
	struct jf_imgcache *c = cache_of(fs);
	if (ino->obj == JF_O_IMAGES) {
		/* its entries came or went when refs/ last changed */
		in->born_ms = c ? file_ms(c, "refs") : 0;
		return 0;
	}
	char name[JF_IMGREF_NAMEMAX];
	int64_t ms = c && name_of(fs, ino->id, name) ? record_ms(c, name) : 0;
	if (!ms)
		return ENOENT;
	in->born_ms = ms;
	in->changed_ms = ms;
	return 0;
}

struct listed {
	int64_t id;
	char name[JF_IMGREF_NAMEMAX];
};

static int by_id(const void *a, const void *b)
{
	int64_t x = ((const struct listed *)a)->id, y = ((const struct listed *)b)->id;
	return (x > y) - (x < y);
}

void jf_images_list(struct jf_fs *fs, int64_t after,
		    int (*fn)(void *ctx, int64_t id, const char *name), void *ctx)
{
	struct jf_imgcache *c = cache_of(fs);
	if (!c)
		return;
	struct jf_image **v = NULL;
	size_t n = 0;
	struct jf_error err;
	jf_error_clear(&err);
	unsigned held = jf_fs_leave(fs); /* reads every record */
	enum jf_err rc = jf_imgcache_list(c, &v, &n, &err);
	jf_fs_enter(fs, held);
	if (rc) {
		fprintf(stderr, "jobfs: /images: %s\n", err.msg);
		return;
	}
	struct listed *l = calloc(n ? n : 1, sizeof(*l));
	size_t k = 0;
	for (size_t i = 0; l && i < n; i++) {
		int64_t id = id_of(fs, v[i]->name);
		if (id > after) {
			l[k].id = id;
			memcpy(l[k++].name, v[i]->name, JF_IMGREF_NAMEMAX);
		}
	}
	jf_image_list_free(v, n);
	if (k)
		qsort(l, k, sizeof(*l), by_id);
	for (size_t i = 0; i < k; i++)
		if (fn(ctx, l[i].id, l[i].name))
			break;
	free(l);
}

/* The tree path of node row id (a private queue's node: the queue's path
 * alone, as its insides are its owner's to see); "" if gone. */
static void node_path(struct jf_fs *fs, int64_t node_id, char *buf, size_t n)
{
	buf[0] = '\0';
	struct jf_node_rec nr;
	if (jf_node_get(ST(fs), node_id, &nr) != JF_OK)
		return;
	int64_t nid = (nr.task_id << JF_NODE_BITS) | nr.idx;
	jf_node_release(&nr);
	struct jf_ino ino = { JF_O_NODE, nid, JF_F_DIR };
	struct jf_obj_info in;
	if (jf_obj_info(fs, &ino, &in) != 0 || !jf_obj_path(fs, JF_O_NODE, nid, buf, n)) {
		buf[0] = '\0';
		return;
	}
	if (in.perm.in_queue && in.perm.private_) {
		/* "queues/<q>/groups/..." cut after <q> */
		char *slash = strchr(buf, '/');
		slash = slash ? strchr(slash + 1, '/') : NULL;
		if (slash)
			*slash = '\0';
	}
}

/* used_by: the paths of the running and starting nodes that use the
 * image of reference (canonical: nodes record their images so) */
static json_t *users_json(struct jf_fs *fs, const char *reference)
{
	int64_t some[USERS_ON_STACK], *ids = some;
	size_t n = jf_node_image_users(ST(fs), reference, some, USERS_ON_STACK);
	if (n > USERS_ON_STACK) {
		int64_t *more = calloc(n, sizeof(*more));
		if (more) {
			size_t got = jf_node_image_users(ST(fs), reference, more, n);
			ids = more;
			n = got < n ? got : n;
		} else {
			n = USERS_ON_STACK;
		}
	}
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		char path[1200];
		node_path(fs, ids[i], path, sizeof(path));
		if (path[0])
			json_array_append_new(a, json_string(path));
	}
	if (ids != some)
		free(ids);
	return a;
}

static void put_time(json_t *o, const char *k, int64_t ms)
{
	char buf[JF_TIME_BUF];
	jf_time_rfc3339(ms, buf, sizeof(buf));
	json_object_set_new(o, k, json_string(buf));
}

struct json_t *jf_images_status(struct jf_fs *fs, int64_t id)
{
	char name[JF_IMGREF_NAMEMAX];
	struct jf_imgcache *c = cache_of(fs);
	struct jf_image *img = NULL;
	struct jf_error err;
	if (!c || !name_of(fs, id, name) || jf_imgcache_get(c, name, &img, &err) != JF_OK)
		return NULL;
	json_t *o = json_object();
	if (o) {
		json_object_set_new(o, "name", json_string(img->name));
		json_object_set_new(o, "reference", json_string(img->reference));
		json_object_set_new(o, "digest", json_string(img->digest));
		json_object_set_new(o, "size_bytes", json_integer(img->size_bytes));
		json_object_set_new(o, "layers", json_integer((json_int_t)img->nlayers));
		put_time(o, "pulled", img->pulled_ms);
		put_time(o, "last_used", img->last_used_ms);
		json_object_set_new(o, "used_by", users_json(fs, img->reference));
	}
	jf_image_free(img);
	return o;
}

int jf_images_removable(struct jf_fs *fs, int64_t id)
{
	char name[JF_IMGREF_NAMEMAX];
	struct jf_imgcache *c = cache_of(fs);
	struct jf_image *img = NULL;
	struct jf_error err;
	if (!c || !name_of(fs, id, name))
		return ENOENT;
	enum jf_err e = jf_imgcache_get(c, name, &img, &err);
	if (e != JF_OK)
		return jf_errno(e);
	int rc = jf_node_image_users(ST(fs), img->reference, NULL, 0) ? EBUSY : 0;
	jf_image_free(img);
	return rc;
}

int jf_images_remove(struct jf_fs *fs, int64_t id)
{
	int rc = jf_images_removable(fs, id);
	if (rc)
		return rc;
	char name[JF_IMGREF_NAMEMAX];
	struct jf_imgcache *c = cache_of(fs);
	if (!c || !name_of(fs, id, name))
		return ENOENT;
	struct jf_error err;
	jf_error_clear(&err);
	/* the layers' files may be many: readers go on meanwhile */
	unsigned held = jf_fs_leave(fs);
	enum jf_err e = jf_imgcache_remove_nowait(c, name, &err);
	jf_fs_enter(fs, held);
	if (e != JF_OK && e != JF_EBUSY && e != JF_ENOENT)
		fprintf(stderr, "jobfs: rmdir images/%s: %s\n", name, err.msg);
	return jf_errno(e);
}

void jf_images_release(struct jf_fs *fs)
{
	if (!fs->images)
		return;
	jf_imgcache_free(fs->images->cache);
	free(fs->images->names);
	free(fs->images);
	fs->images = NULL;
}

/*
 * stores.c - /volumes/<v> and /objects/<o> (reference 8.3) as files: the
 * status of each, rendered from its row (store.h) and, for what lives on
 * disk, from the disk: a volume's used bytes (its directory walked, at
 * most STORES_WALK_MAX entries), a running sync's progress (the file
 * jobfs-sync replaces as it goes).  Called on a reader's thread with the
 * tree's lock shared; nothing here enters the engine.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/quantity.h"
#include "core/storage.h"
#include "core/timefmt.h"

#define STORES_WALK_MAX 1000000

static const char *const obj_states[] = { "Pending", "Syncing", "Ready", "Failed" };

void jf_link_target(struct jf_fs *fs, const struct jf_ino *ino, char *buf, size_t n)
{
	buf[0] = '\0';
	struct jf_store_rec r;
	if (jf_stor_get(ST(fs), ino->id, &r) != JF_OK)
		return;
	jf_engine_store_dir(fs->e, r.kind, r.name, buf, n);
	jf_stor_release(&r);
}

/* nftw has no context argument: one walk at a time per thread */
static _Thread_local int64_t walk_bytes, walk_entries;

static int walk_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	walk_bytes += (int64_t)sb->st_blocks * 512;
	return ++walk_entries >= STORES_WALK_MAX;
}

/* What dir takes on disk (blocks, as du); *complete false when the walk
 * stopped at its bound. */
static int64_t used_bytes(const char *dir, bool *complete)
{
	walk_bytes = walk_entries = 0;
	int rc = nftw(dir, walk_one, 32, FTW_PHYS | FTW_MOUNT);
	*complete = rc == 0;
	return walk_bytes;
}

static int add_user(void *ctx, const char *path)
{
	json_array_append_new(ctx, json_string(path));
	return 0;
}

static void put_time(json_t *o, const char *key, int64_t ms)
{
	char t[40] = "";
	if (ms > 0)
		jf_time_rfc3339(ms, t, sizeof(t));
	json_object_set_new(o, key, json_string(t));
}

static json_t *volume_status(struct jf_fs *fs, const struct jf_store_rec *r)
{
	json_t *o = json_object();
	struct jf_volume_spec v = { 0 };
	struct jf_error err;
	if (r->spec[0])
		jf_volume_spec_parse(r->spec, strlen(r->spec), &v, &err);
	char dir[4096];
	jf_engine_store_dir(fs->e, JF_SK_VOLUME, r->name, dir, sizeof(dir));
	bool complete = true;
	int64_t used = used_bytes(dir, &complete);
	json_object_set_new(o, "state", json_string("Ready"));
	json_object_set_new(o, "name", json_string(r->name));
	char msg[1200];
	snprintf(msg, sizeof(msg), "%s", r->message);
	if (!msg[0] && v.size && used > v.size) {
		char a[32], b[32];
		jf_mem_format(used, a, sizeof(a));
		jf_mem_format(v.size, b, sizeof(b));
		snprintf(msg, sizeof(msg), "used %s is past its size %s", a, b);
	}
	json_object_set_new(o, "message", json_string(msg));
	put_time(o, "created", r->created_ms);
	json_object_set_new(o, "size", json_integer(v.size));
	json_object_set_new(o, "used_bytes", json_integer(used));
	if (!complete)
		json_object_set_new(o, "used_bytes_partial", json_true());
	json_object_set_new(o, "private", json_boolean(v.private_));
	json_object_set_new(o, "path", json_string(dir));
	json_t *users = json_array();
	jf_stor_users(ST(fs), r->id, add_user, users);
	json_object_set_new(o, "used_by", users);
	return o;
}

static json_t *objsrc_status(struct jf_fs *fs, const struct jf_store_rec *r)
{
	json_t *o = json_object();
	struct jf_objsrc_spec s = { 0 };
	struct jf_error err;
	bool have = r->spec[0] && jf_objsrc_spec_parse(r->spec, strlen(r->spec), &s, &err) == JF_OK;
	int st = r->state >= 0 && r->state < 4 ? r->state : 0;
	json_object_set_new(o, "state", json_string(obj_states[st]));
	json_object_set_new(o, "name", json_string(r->name));
	json_object_set_new(o, "message", json_string(r->message));
	put_time(o, "created", r->created_ms);
	json_object_set_new(o, "endpoint", json_string(have ? s.endpoint : ""));
	json_object_set_new(o, "bucket", json_string(have ? s.bucket : ""));
	json_object_set_new(o, "prefix", json_string(have ? s.prefix : ""));
	json_object_set_new(o, "region", json_string(have ? s.region : ""));
	json_object_set_new(o, "credentials", json_string(have && s.credentials ? "file" : "none"));
	json_error_t je;
	json_t *info = r->info[0] ? json_loads(r->info, 0, &je) : NULL;
	json_int_t objects = 0, bytes = 0, synced = 0;
	if (info) {
		objects = json_integer_value(json_object_get(info, "objects"));
		bytes = json_integer_value(json_object_get(info, "bytes"));
		synced = json_integer_value(json_object_get(info, "synced_ms"));
	}
	json_object_set_new(o, "objects", json_integer(objects));
	json_object_set_new(o, "bytes", json_integer(bytes));
	put_time(o, "synced", synced);
	if (info) {
		json_t *last = json_object();
		static const char *const keys[] = { "fetched", "fetched_bytes", "removed",
						    "skipped", "listing_pages", NULL };
		for (size_t i = 0; keys[i]; i++)
			json_object_set_new(
				last, keys[i],
				json_integer(json_integer_value(json_object_get(info, keys[i]))));
		json_object_set_new(last, "seconds",
				    json_real(json_number_value(json_object_get(info, "seconds"))));
		json_t *sk = json_object_get(info, "skipped_keys");
		if (json_is_array(sk) && json_array_size(sk))
			json_object_set(last, "skipped_keys", sk);
		json_object_set_new(o, "last_sync", last);
	}
	json_decref(info);
	char dir[4096];
	jf_engine_store_dir(fs->e, JF_SK_OBJECT, r->name, dir, sizeof(dir));
	if (st == 1) {
		/* the running sync's figures, as jobfs-sync last wrote them */
		char p[4200];
		snprintf(p, sizeof(p), "%s/progress", dir);
		json_t *pr = json_load_file(p, 0, &je);
		if (json_is_object(pr))
			json_object_set(o, "progress", pr);
		json_decref(pr);
	}
	char data[4200];
	snprintf(data, sizeof(data), "%s/data", dir);
	json_object_set_new(o, "path", json_string(data));
	json_t *users = json_array();
	jf_stor_users(ST(fs), r->id, add_user, users);
	json_object_set_new(o, "used_by", users);
	if (have)
		jf_objsrc_spec_release(&s);
	return o;
}

struct json_t *jf_stores_status(struct jf_fs *fs, const struct jf_ino *ino)
{
	struct jf_store_rec r;
	if (jf_stor_get(ST(fs), ino->id, &r) != JF_OK)
		return NULL;
	json_t *o = r.kind == JF_SK_VOLUME ? volume_status(fs, &r) : objsrc_status(fs, &r);
	jf_stor_release(&r);
	return o;
}

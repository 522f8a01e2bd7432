/*
 * mtime.c - each file's own time of last change.
 *
 * `find -newer`, `make` and `rsync -a` trust a file's mtime, so it must
 * move when the file's content does and not otherwise:
 *
 * - a rendered file (status, status.json, cost, spec.yaml, the cluster's
 *   and the billing files) keeps the time its content last differed: each
 *   stat hashes what it renders, and a new hash is a change: dated when
 *   the engine said its object changed (jf_mtime_hint, from the change
 *   notifications), or when the stat saw it (a running object's duration
 *   ticks with no notification).  The first time this daemon measures it,
 *   or a change that a known time after the last look explains, the time
 *   is its object's end if
 *   the object is finished (a finished task's files keep the second it
 *   ended, whatever its group did after), a group's acceptance for its
 *   accepted spec.yaml, and otherwise now: the content of a live object may
 *   have changed at any time before, and a time earlier than the change
 *   would hide it from `find -newer`.
 *   An object that says when it last changed (an image: its record file's
 *   mtime, jf_obj_info.changed_ms) starts from that time and moves to a later
 *   one of its; a change it does not explain (an image's used_by) is dated
 *   when seen.
 * - `events` the same, by its size (it only grows);
 * - logs, stdout, stderr: the files on disk, which the shim writes;
 * - a node's attempts/: the making of its newest attempt; an attempt's
 *   directory its own making, its rendered files as above (an ended
 *   attempt's: its end);
 * - a directory: its object's making, or for the directories whose
 *   entries come and go (queues/, groups/, tasks/, /tasks) the last time
 *   they did in this daemon's life, else the daemon's start; /images and
 *   an image's directory: the image cache's files' own times;
 * - README: the daemon's start; the cluster's files as rendered files.
 *
 * What is remembered per file (fs->mtimes) goes when the kernel forgets
 * the file (jf_mtime_forget), so it is bounded by what the kernel holds.
 */
#include "fs/fs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct mt {
	uint64_t sig;
	int64_t ms;
	int64_t hint_ms; /* the engine said it changed then (jf_mtime_hint), 0 none */
};

/* FNV-1a: a change detector, not a defence */
static uint64_t hash(const char *p, size_t n)
{
	uint64_t h = UINT64_C(1469598103934665603);
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

static bool listing_varies(enum jf_obj obj)
{
	return obj == JF_O_QUEUES || obj == JF_O_GROUPS || obj == JF_O_TASKS ||
	       obj == JF_O_BATCHES || obj == JF_O_VOLUMES || obj == JF_O_OBJECTS;
}

void jf_mtime_listing_changed(struct jf_fs *fs, enum jf_obj obj, int64_t id)
{
	if (!listing_varies(obj))
		return;
	int64_t now = jf_engine_now(fs->e);
	jf_fs_maps_lock(fs);
	jf_idmap_put(&fs->listed, (int64_t)jf_ino_make(obj, id, JF_F_DIR),
		     (void *)(uintptr_t)(now + 1));
	jf_fs_maps_unlock(fs);
}

static int64_t log_mtime(struct jf_fs *fs, const struct jf_ino *ino)
{
	char path[4096], old[4200];
	jf_log_path(fs, ino, path, sizeof(path));
	if (!path[0])
		return 0;
	struct stat sb;
	int64_t ms = 0;
	/* an empty file counts as none: its content never changed since the
	 * node was made, and an ended attempt's empty logs are removed
	 * (engine/retain.c) without their files' times moving */
	snprintf(old, sizeof(old), "%s.1", path);
	if (stat(old, &sb) == 0 && sb.st_size > 0)
		ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
	if (stat(path, &sb) == 0 && sb.st_size > 0) {
		int64_t m = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
		if (m > ms)
			ms = m;
	}
	return ms;
}

/* A file measured for the first time: when it may have changed last. */
static int64_t first_sight(struct jf_fs *fs, const struct jf_ino *ino, const struct jf_obj_info *in)
{
	if (ino->obj == JF_O_GROUP && ino->file == JF_F_SPEC && in->accepted_ms > 0)
		return in->accepted_ms; /* an accepted spec never changes */
	if (in->changed_ms > 0)
		return in->changed_ms;
	if (in->own_done_ms > 0)
		return in->own_done_ms;
	switch (ino->obj) {
	case JF_O_ROOT:
	case JF_O_CLUSTER:
	case JF_O_QUEUES:
	case JF_O_BATCHES:
		if (ino->file == JF_F_README)
			return fs->start_ms; /* fixed for the daemon's life */
		break;
	default:
		break;
	}
	return jf_engine_now(fs->e);
}

int64_t jf_mtime(struct jf_fs *fs, const struct jf_ino *ino, const struct jf_obj_info *in,
		 uid_t reader, const char *data, size_t len, int64_t size)
{
	switch (ino->file) {
	case JF_F_DIR: {
		if (listing_varies(ino->obj)) {
			jf_fs_maps_lock(fs);
			uintptr_t at = (uintptr_t)jf_idmap_get(
				&fs->listed, (int64_t)jf_ino_make(ino->obj, ino->id, JF_F_DIR));
			jf_fs_maps_unlock(fs);
			if (at)
				return (int64_t)at - 1;
			if (in->own_done_ms > 0)
				return in->own_done_ms; /* a finished group's tasks/ */
			return in->born_ms > fs->start_ms ? in->born_ms : fs->start_ms;
		}
		if (in->born_ms > 0)
			return in->born_ms; /* its entries are fixed from its making */
		return fs->start_ms;
	}
	case JF_F_LOGS:
	case JF_F_STDOUT:
	case JF_F_STDERR:
	case JF_F_LOGS_PREV: {
		int64_t ms = log_mtime(fs, ino);
		if (ms > 0)
			return ms;
		return in->born_ms > 0 ? in->born_ms : fs->start_ms;
	}
	case JF_F_WATCH:
		return fs->start_ms;
	default:
		break;
	}
	uint64_t sig = data ? hash(data, len) : (uint64_t)size;
	int64_t key = (int64_t)jf_ino_make(ino->obj, ino->id, ino->file);
	if (jf_render_per_reader(fs, ino, reader))
		key = (int64_t)jf_ino_make(ino->obj, (int64_t)reader + 1, ino->file);
	int64_t first = first_sight(fs, ino, in), now = jf_engine_now(fs->e), ms;
	jf_fs_maps_lock(fs);
	struct mt *m = jf_idmap_get(&fs->mtimes, key);
	if (!m) {
		m = malloc(sizeof(*m));
		if (!m || !jf_idmap_put(&fs->mtimes, key, m)) {
			free(m);
			jf_fs_maps_unlock(fs);
			return now;
		}
		m->sig = sig;
		m->ms = first;
		m->hint_ms = 0;
		jf_fs_maps_unlock(fs);
		return first;
	}
	if (m->sig != sig) {
		/* changed since the last look: at a known time after that look
		 * (its acceptance, its end), or else now, when it was seen */
		int64_t at = first;
		if (m->hint_ms > at)
			at = m->hint_ms;
		m->sig = sig;
		m->ms = at > m->ms || (at == m->ms && !in->changed_ms) ? at : now;
	}
	m->hint_ms = 0;
	ms = m->ms;
	jf_fs_maps_unlock(fs);
	return ms;
}

void jf_mtime_hint(struct jf_fs *fs, uint64_t ino)
{
	jf_fs_maps_lock(fs);
	struct mt *m = jf_idmap_get(&fs->mtimes, (int64_t)ino);
	if (m && !m->hint_ms)
		m->hint_ms = jf_engine_now(fs->e);
	jf_fs_maps_unlock(fs);
}

void jf_mtime_forget(struct jf_fs *fs, uint64_t ino)
{
	struct jf_ino i;
	if (!jf_ino_split(ino, &i) || i.file == JF_F_DIR)
		return;
	jf_fs_maps_lock(fs);
	free(jf_idmap_del(&fs->mtimes, (int64_t)ino));
	/* a per-reader file's entries: the kernel keeps one inode for them all */
	if (jf_file_per_reader(&i)) {
		size_t k = 0;
		int64_t key;
		void *v;
		while (jf_idmap_next(&fs->mtimes, &k, &key, &v)) {
			struct jf_ino j;
			if (jf_ino_split((uint64_t)key, &j) && j.obj == i.obj && j.file == i.file)
				free(jf_idmap_del(&fs->mtimes, key));
		}
	}
	jf_fs_maps_unlock(fs);
}

void jf_mtime_release(struct jf_fs *fs)
{
	size_t k = 0;
	int64_t key;
	void *v;
	while (jf_idmap_next(&fs->mtimes, &k, &key, &v))
		free(v);
	jf_idmap_release(&fs->mtimes);
	jf_idmap_release(&fs->listed);
}

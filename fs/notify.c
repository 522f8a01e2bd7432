/*
 * notify.c - telling the kernel, inotify watchers and `watch` readers that
 * something changed inside the daemon.
 *
 * The kernel raises no inotify event for changes it did not see, and it
 * caches attributes for attr_timeout.  So on every change the loop queues,
 * per affected file, an attribute invalidation and a "touch" with the
 * toucher (toucher.h: invalidations from the loop, one-byte writes through
 * the mount from a helper process that holds no /dev/fuse, so that a
 * daemon killed while a touch waits never wedges its mount).
 *
 * Only what the kernel holds is touched (fs->looked: every entry we
 * handed out, less what it forgot): a file it holds, or any changed file
 * of a directory it holds (a watch on the directory reports its files).
 * An object nobody looked up has no cached attributes and no inotify
 * watch, and touching it would make the kernel look up its whole path -
 * under load, thousands of requests a second that every reader waits
 * behind.  So the touches only walk directories the kernel already holds.
 *
 * `watch` readers are woken here too: a read blocks (the request is kept)
 * until the object's events grow, then gets the new lines.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/lifecycle.h"

/* ---- what the kernel holds ---- */

bool jf_ino_known(struct jf_fs *fs, uint64_t ino)
{
	jf_fs_maps_lock(fs);
	bool known = jf_idmap_get(&fs->looked, (int64_t)ino) != NULL;
	jf_fs_maps_unlock(fs);
	return known;
}

/* Task rows of a group made so far (those not made yet are not listed). */
static int64_t tasks_made(struct jf_fs *fs, int64_t group_id)
{
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), group_id, &g) != JF_OK)
		return -1;
	int64_t made = g.spec && g.completions > g.unmade ? g.completions - g.unmade : 0;
	jf_group_release(&g);
	return made;
}

void jf_ino_looked(struct jf_fs *fs, uint64_t ino)
{
	jf_fs_maps_lock(fs);
	uintptr_t n = (uintptr_t)jf_idmap_get(&fs->looked, (int64_t)ino);
	jf_idmap_put(&fs->looked, (int64_t)ino, (void *)(n + 1));
	struct jf_ino i;
	if (n == 0 && jf_ino_split(ino, &i) && i.obj == JF_O_TASKS && i.file == JF_F_DIR &&
	    !jf_idmap_get(&fs->made, i.id)) {
		/* what the kernel may list from now on: tasks made after this
		 * get an IN_CREATE (announce_tasks) */
		int64_t made = tasks_made(fs, i.id);
		if (made >= 0)
			jf_idmap_put(&fs->made, i.id, (void *)(uintptr_t)(made + 1));
	}
	jf_fs_maps_unlock(fs);
}

void jf_ino_forget(struct jf_fs *fs, uint64_t ino, uint64_t nlookup)
{
	jf_fs_maps_lock(fs);
	uintptr_t n = (uintptr_t)jf_idmap_get(&fs->looked, (int64_t)ino);
	if (!n || n > nlookup) {
		if (n)
			jf_idmap_put(&fs->looked, (int64_t)ino, (void *)(n - nlookup));
		jf_fs_maps_unlock(fs);
		return;
	}
	jf_idmap_del(&fs->looked, (int64_t)ino);
	jf_idmap_del(&fs->logsize, (int64_t)ino);
	jf_mtime_forget(fs, ino);
	struct jf_ino i;
	if (jf_ino_split(ino, &i) && i.obj == JF_O_TASKS && i.file == JF_F_DIR)
		jf_idmap_del(&fs->made, i.id);
	jf_fs_maps_unlock(fs);
}

/* ---- task directories the daemon makes: IN_CREATE through the toucher ---- */

#define CREATING_MS 10000 /* a create the toucher did not make by then never comes */

static int64_t creating_key(int64_t group_id, const char *name)
{
	char *end;
	errno = 0;
	long long idx = strtoll(name, &end, 10);
	if (errno || end == name || *end || idx < 0 || idx > UINT32_MAX ||
	    (name[0] == '0' && name[1]))
		return 0;
	return (group_id << 32) | idx;
}

bool jf_ino_creating(struct jf_fs *fs, int64_t group_id, const char *name, bool take)
{
	int64_t key = creating_key(group_id, name);
	if (!key)
		return false;
	jf_fs_maps_lock(fs);
	uintptr_t at = (uintptr_t)jf_idmap_get(&fs->creating, key);
	bool live = at && jf_engine_now(fs->e) - (int64_t)(at - 1) < CREATING_MS;
	if (at && (take || !live))
		jf_idmap_del(&fs->creating, key);
	jf_fs_maps_unlock(fs);
	return live;
}

/* Creates the toucher never made (the kernel held the entry already, or
 * the helper died): forgotten after CREATING_MS. */
static void creating_sweep(struct jf_fs *fs, int64_t now)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&fs->creating, &i, &k, &v))
		if (now - (int64_t)((uintptr_t)v - 1) >= CREATING_MS)
			jf_idmap_del(&fs->creating, k);
}

/*
 * A group's tasks/ that the kernel holds (a watcher may watch it) got
 * task rows: raise IN_CREATE for each new task directory.  Bounded by the
 * toucher (JF_TOUCH_CREATES a round); tasks past that are listed all the
 * same, without an event.
 */
static void announce_tasks(struct jf_fs *fs, int64_t group_id)
{
	if (!fs->nt)
		return;
	jf_fs_maps_lock(fs);
	bool held = jf_idmap_get(&fs->made, group_id) != NULL;
	jf_fs_maps_unlock(fs);
	if (!held)
		return;
	int64_t made = tasks_made(fs, group_id);
	char base[600];
	if (made < 0 || !jf_obj_path(fs, JF_O_GROUP, group_id, base, sizeof(base)))
		return;
	jf_fs_maps_lock(fs);
	uintptr_t was = (uintptr_t)jf_idmap_get(&fs->made, group_id);
	int64_t from = (int64_t)was - 1;
	if (!was || made <= from) {
		jf_fs_maps_unlock(fs);
		return;
	}
	jf_idmap_put(&fs->made, group_id, (void *)(uintptr_t)(made + 1));
	int64_t now = jf_engine_now(fs->e);
	if (fs->creating.live > 4 * JF_TOUCH_CREATES)
		creating_sweep(fs, now);
	for (int64_t idx = from; idx < made; idx++) {
		char path[700];
		snprintf(path, sizeof(path), "%s/tasks/%lld", base, (long long)idx);
		if (!jf_toucher_create(fs->nt, path))
			break;
		jf_idmap_put(&fs->creating, (group_id << 32) | idx, (void *)(uintptr_t)(now + 1));
	}
	jf_fs_maps_unlock(fs);
}

/* ---- changes ---- */

/* Does the kernel hold the directory of obj or one of these files of it? */
static bool any_known(struct jf_fs *fs, enum jf_obj obj, int64_t id, const enum jf_file *files)
{
	if (jf_ino_known(fs, jf_ino_make(obj, id, JF_F_DIR)))
		return true;
	for (; *files != JF_F_DIR; files++)
		if (jf_ino_known(fs, jf_ino_make(obj, id, *files)))
			return true;
	return false;
}

static void touch_files(struct jf_fs *fs, enum jf_obj obj, int64_t id, const char *base,
			const enum jf_file *files)
{
	/* the directory's own attributes (its mtime follows the object's end)
	 * now, before anyone can read the change: attribute-only invalidation
	 * takes no page lock, so the loop may do it itself */
	uint64_t dir = jf_ino_make(obj, id, JF_F_DIR);
	jf_fs_maps_lock(fs);
	bool dir_known = jf_ino_known(fs, dir);
	if (fs->se && dir_known)
		fuse_lowlevel_notify_inval_inode(fs->se, dir, -1, 0);
	for (; *files != JF_F_DIR; files++) {
		uint64_t ino = jf_ino_make(obj, id, *files);
		jf_mtime_hint(fs, ino);
		if (!dir_known && !jf_ino_known(fs, ino))
			continue;
		char path[600];
		snprintf(path, sizeof(path), "%s/%s", base, jf_file_name(*files));
		jf_toucher_queue(fs->nt, ino, base[0] ? path : NULL);
	}
	jf_fs_maps_unlock(fs);
}

/* Log polling (jf_fs_poll_logs) passes over a node's logs while it does not
 * run: nothing writes them then.  Only logs the kernel holds are polled. */
static void logs_idle(struct jf_fs *fs, enum jf_obj obj, int64_t id, bool idle)
{
	static const enum jf_file logs[] = { JF_F_LOGS, JF_F_STDOUT, JF_F_STDERR };
	jf_fs_maps_lock(fs);
	for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
		int64_t ino = (int64_t)jf_ino_make(obj, id, logs[i]);
		if (!jf_ino_known(fs, (uint64_t)ino))
			continue;
		uintptr_t v = (uintptr_t)jf_idmap_get(&fs->logsize, ino);
		uintptr_t nv = idle ? v | JF_LOG_IDLE : v & ~JF_LOG_IDLE;
		if (nv == v)
			continue;
		if (nv)
			jf_idmap_put(&fs->logsize, ino, (void *)nv);
		else
			jf_idmap_del(&fs->logsize, ino);
	}
	jf_fs_maps_unlock(fs);
}

static const enum jf_file obj_changed_files[] = {
	JF_F_STATUS, JF_F_STATUS_JSON, JF_F_COST, JF_F_EVENTS, JF_F_DIR,
};
static const enum jf_file node_changed_files[] = {
	JF_F_STATUS, JF_F_STATUS_JSON, JF_F_COST,      JF_F_EVENTS,     JF_F_LOGS,
	JF_F_STDOUT, JF_F_STDERR,      JF_F_LOGS_PREV, JF_F_ALLOCATION, JF_F_DIR,
};
static const enum jf_file attempt_changed_files[] = {
	JF_F_STATUS, JF_F_STATUS_JSON, JF_F_LOGS, JF_F_STDOUT, JF_F_STDERR, JF_F_DIR,
};
static const enum jf_file billing_files[] = { JF_F_LEDGER, JF_F_SUMMARY, JF_F_COST_SVG, JF_F_DIR };

/*
 * The render cache (jf_cached_render) forgets what a change may have
 * changed: a node's or a task's change, the files of that node, task and
 * their group and queue, and every file outside the queues (cluster
 * figures, billing); a group's or a queue's change (a state set on all of
 * its tasks at once, a new name), everything.
 */
static void cache_clear_map(struct jf_fs *fs, struct jf_idmap *map)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(map, &i, &k, &v))
		jf_fs_retire(fs, v);
	jf_idmap_release(map);
}

static void cache_drop(struct jf_fs *fs, enum jf_obj obj, int64_t id)
{
	for (const enum jf_file *f = jf_obj_files(obj); *f != JF_F_DIR; f++) {
		if (!jf_file_rendered(*f))
			continue;
		struct cached *c = jf_idmap_del(&fs->cache, (int64_t)jf_ino_make(obj, id, *f));
		if (c)
			jf_fs_retire(fs, c);
	}
}

static void cache_forget(struct jf_fs *fs, const struct jf_change *ch, int64_t nid)
{
	jf_fs_maps_lock(fs);
	cache_clear_map(fs, &fs->gcache);
	if (ch->kind != JF_CH_NODE && ch->kind != JF_CH_TASK && ch->kind != JF_CH_BILLING) {
		cache_clear_map(fs, &fs->cache);
		jf_fs_maps_unlock(fs);
		return;
	}
	if (nid)
		cache_drop(fs, JF_O_NODE, nid);
	if (ch->task_id)
		cache_drop(fs, JF_O_TASK, ch->task_id);
	if (ch->group_id)
		cache_drop(fs, JF_O_GROUP, ch->group_id);
	if (ch->queue_id)
		cache_drop(fs, JF_O_QUEUE, ch->queue_id);
	jf_fs_maps_unlock(fs);
}

static void on_change(struct jf_fs *fs, const struct jf_change *ch);

/*
 * The engine committed a change (its thread): under the tree's lock,
 * shared (readers go on meanwhile).  The count of changes moves first:
 * a rendering from a snapshot that may be older than this commit is not
 * kept (jf_cached_render); one kept before is dropped below.
 */
void jf_fs_on_change(void *ctx, const struct jf_change *ch)
{
	struct jf_fs *fs = ctx;
	atomic_fetch_add(&fs->gen, 1);
	jf_fs_lock_shared(fs);
	on_change(fs, ch);
	jf_fs_unlock(fs);
}

static void on_change(struct jf_fs *fs, const struct jf_change *ch)
{
	char path[1024];
	if (ch->kind == JF_CH_STORE) {
		/* a volume or object source (its id in queue_id): what is
		 * rendered of it lives in the general cache */
		jf_fs_maps_lock(fs);
		cache_clear_map(fs, &fs->gcache);
		jf_fs_maps_unlock(fs);
		if (ch->structure) {
			jf_mtime_listing_changed(fs, JF_O_VOLUMES, 0);
			jf_mtime_listing_changed(fs, JF_O_OBJECTS, 0);
		}
		jf_watch_wake(fs);
		return;
	}
	if (ch->kind != JF_CH_NODE || !ch->node_id)
		cache_forget(fs, ch, 0);
	if (ch->kind == JF_CH_BILLING) {
		touch_files(fs, JF_O_BILLING, 0, "billing", billing_files);
		return;
	}
	if (ch->kind == JF_CH_NODE && ch->node_id) {
		struct jf_node_rec n;
		if (jf_node_get(ST(fs), ch->node_id, &n) != JF_OK) {
			jf_fs_maps_lock(fs);
			cache_clear_map(fs, &fs->gcache);
			cache_clear_map(fs, &fs->cache);
			jf_fs_maps_unlock(fs);
		} else {
			int64_t nid = (n.task_id << JF_NODE_BITS) | n.idx;
			cache_forget(fs, ch, nid);
			bool idle = n.state != JF_ST_INITIALIZING && n.state != JF_ST_RUNNING;
			logs_idle(fs, JF_O_NODE, nid, idle);
			/* its current attempt's logs are the same files; an ended
			 * attempt's stay passed over */
			if (n.attempt_id)
				logs_idle(fs, JF_O_ATTEMPT, n.attempt_id, idle);
			if (any_known(fs, JF_O_NODE, nid, node_changed_files) &&
			    jf_obj_path(fs, JF_O_NODE, nid, path, sizeof(path)))
				touch_files(fs, JF_O_NODE, nid, path, node_changed_files);
			/* its current attempt (attempts/<a>) changed with it, and a
			 * new one is a new entry of attempts/ (its mtime moves) */
			if (n.attempt_id &&
			    any_known(fs, JF_O_ATTEMPT, n.attempt_id, attempt_changed_files) &&
			    jf_obj_path(fs, JF_O_ATTEMPT, n.attempt_id, path, sizeof(path)))
				touch_files(fs, JF_O_ATTEMPT, n.attempt_id, path,
					    attempt_changed_files);
			uint64_t adir = jf_ino_make(JF_O_ATTEMPTS, nid, JF_F_DIR);
			if (fs->se && jf_ino_known(fs, adir))
				fuse_lowlevel_notify_inval_inode(fs->se, adir, -1, 0);
			jf_node_release(&n);
		}
	}
	if ((ch->kind == JF_CH_NODE || ch->kind == JF_CH_TASK) && ch->task_id &&
	    any_known(fs, JF_O_TASK, ch->task_id, obj_changed_files) &&
	    jf_obj_path(fs, JF_O_TASK, ch->task_id, path, sizeof(path)))
		touch_files(fs, JF_O_TASK, ch->task_id, path, obj_changed_files);
	if (ch->structure) {
		/* a directory's entries came or went: its mtime moves (mtime.c) */
		if (ch->kind == JF_CH_QUEUE)
			jf_mtime_listing_changed(fs, JF_O_QUEUES, 0);
		if (ch->kind == JF_CH_GROUP)
			jf_mtime_listing_changed(fs, ch->queue_id ? JF_O_GROUPS : JF_O_BATCHES,
						 ch->queue_id);
		if (ch->group_id && (ch->kind == JF_CH_GROUP || ch->kind == JF_CH_TASK))
			jf_mtime_listing_changed(fs, JF_O_TASKS, ch->group_id);
	}
	if (ch->kind == JF_CH_GROUP && ch->structure && ch->group_id)
		announce_tasks(fs, ch->group_id);
	if (ch->group_id && any_known(fs, JF_O_GROUP, ch->group_id, obj_changed_files) &&
	    jf_obj_path(fs, JF_O_GROUP, ch->group_id, path, sizeof(path)))
		touch_files(fs, JF_O_GROUP, ch->group_id, path, obj_changed_files);
	if (ch->queue_id && any_known(fs, JF_O_QUEUE, ch->queue_id, obj_changed_files) &&
	    jf_obj_path(fs, JF_O_QUEUE, ch->queue_id, path, sizeof(path)))
		touch_files(fs, JF_O_QUEUE, ch->queue_id, path, obj_changed_files);
	jf_watch_wake(fs);
}

/* ---- watch ---- */

static void watch_interrupt(fuse_req_t req, void *data)
{
	struct watcher *w = data;
	struct jf_fs *fs = FS(req);
	jf_fs_maps_lock(fs);
	if (w->pending == req) {
		w->pending = NULL;
		fuse_reply_err(req, EINTR);
	}
	jf_fs_maps_unlock(fs);
}

/* ---- where a watch starts ---- */

#define SEEN_MAX 65536 /* remembered (scope, object, user) triples; past it, all forgotten */

static int64_t seen_key(enum jf_scope sc, int64_t id, uid_t uid)
{
	if (id <= 0 || id >= (INT64_C(1) << 38))
		return 0;
	return ((int64_t)sc << 58) | (id << 20) | (int64_t)(uid & 0xfffff);
}

void jf_watch_seen(struct jf_fs *fs, enum jf_scope sc, int64_t id, uid_t uid, int64_t off)
{
	int64_t key = seen_key(sc, id, uid);
	if (!key)
		return;
	if (off < 0 && jf_event_size(ST(fs), sc, id, &off) != JF_OK)
		return;
	jf_fs_maps_lock(fs);
	if (fs->seen.live >= SEEN_MAX && !jf_idmap_get(&fs->seen, key)) {
		jf_idmap_release(&fs->seen);
		jf_idmap_init(&fs->seen);
	}
	jf_idmap_put(&fs->seen, key, (void *)(uintptr_t)(off + 1));
	jf_fs_maps_unlock(fs);
}

int64_t jf_watch_start(struct jf_fs *fs, enum jf_scope sc, int64_t id, uid_t uid)
{
	int64_t size = 0;
	jf_event_size(ST(fs), sc, id, &size);
	int64_t key = seen_key(sc, id, uid);
	jf_fs_maps_lock(fs);
	uintptr_t seen = key ? (uintptr_t)jf_idmap_get(&fs->seen, key) : 0;
	jf_fs_maps_unlock(fs);
	if (seen && (int64_t)seen - 1 < size)
		return (int64_t)seen - 1;
	return size;
}

static bool deliver(struct jf_fs *fs, fuse_req_t req, struct watcher *w, size_t size)
{
	int64_t total = 0;
	jf_event_size(ST(fs), w->scope, w->id, &total);
	if (total <= w->off)
		return false;
	size_t want = (size_t)(total - w->off);
	if (want > size)
		want = size;
	char *buf = malloc(want ? want : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return true;
	}
	size_t got = 0;
	jf_event_read(ST(fs), w->scope, w->id, w->off, buf, want, &got);
	/* whole lines only, unless one line is longer than the reader's buffer */
	size_t cut = got;
	while (cut > 0 && buf[cut - 1] != '\n')
		cut--;
	if (cut == 0)
		cut = got;
	w->off += (int64_t)cut;
	jf_watch_seen(fs, w->scope, w->id, w->uid, w->off);
	fuse_reply_buf(req, buf, cut);
	free(buf);
	return true;
}

/*
 * A finished object changes no more (until a restart): once its watch has
 * said everything, a read gets end-of-file.  `cat watch` then returns when
 * the object finishes, and `cp -r`, `grep -r` or `tar` of a finished
 * directory do not block for ever on it.
 */
bool jf_watch_finished(struct jf_fs *fs, const struct watcher *w)
{
	int state = -1;
	int64_t task_id = w->id;
	switch (w->scope) {
	case JF_SCOPE_GROUP: {
		struct jf_group_rec g;
		if (jf_group_get(ST(fs), w->id, &g) == JF_OK) {
			state = g.state;
			jf_group_release(&g);
		}
		return state >= 0 && jf_state_final(state);
	}
	case JF_SCOPE_NODE: {
		/* a failed node may run again: what counts is its task */
		struct jf_node_rec n;
		if (jf_node_get(ST(fs), w->id, &n) != JF_OK)
			return false;
		task_id = n.task_id;
		jf_node_release(&n);
	}
	/* fall through */
	case JF_SCOPE_TASK: {
		struct jf_task_rec t;
		if (jf_task_get(ST(fs), task_id, &t) == JF_OK) {
			state = t.state;
			jf_task_release(&t);
		}
		return state >= 0 && jf_state_final(state);
	}
	default:
		return false;
	}
}

/*
 * Under the map lock: a watcher's state is the loop's (jf_watch_wake) and
 * the readers' alike.  The interrupt handler is set before, outside it
 * (libfuse calls the handler holding the request's own lock, and the
 * handler takes the map lock); an interrupt that came before the request
 * is pending is seen below.
 */
void jf_watch_read(struct jf_fs *fs, fuse_req_t req, struct watcher *w, size_t size)
{
	fuse_req_interrupt_func(req, watch_interrupt, w);
	jf_fs_maps_lock(fs);
	if (deliver(fs, req, w, size)) {
		/* answered */
	} else if (jf_watch_finished(fs, w)) {
		fuse_reply_buf(req, NULL, 0);
	} else if (w->pending) {
		/* one reader at a time per open file */
		fuse_reply_err(req, EBUSY);
	} else if (fuse_req_interrupted(req)) {
		fuse_reply_err(req, EINTR);
	} else {
		w->pending = req;
		w->pending_size = size;
	}
	jf_fs_maps_unlock(fs);
}

void jf_watch_wake(struct jf_fs *fs)
{
	jf_fs_maps_lock(fs);
	for (struct watcher *w = fs->watchers; w; w = w->next) {
		int64_t total = 0;
		if (!w->pending && !w->ph)
			continue;
		jf_event_size(ST(fs), w->scope, w->id, &total);
		if (total <= w->off) {
			if (!jf_watch_finished(fs, w))
				continue;
			/* finished with nothing more to say: end-of-file */
			if (w->pending) {
				fuse_reply_buf(w->pending, NULL, 0);
				w->pending = NULL;
			}
			if (w->ph) {
				fuse_lowlevel_notify_poll(w->ph);
				fuse_pollhandle_destroy(w->ph);
				w->ph = NULL;
			}
			continue;
		}
		if (w->pending) {
			fuse_req_t req = w->pending;
			w->pending = NULL;
			if (!deliver(fs, req, w, w->pending_size))
				w->pending = req;
		}
		if (w->ph) {
			fuse_lowlevel_notify_poll(w->ph);
			fuse_pollhandle_destroy(w->ph);
			w->ph = NULL;
		}
	}
	jf_fs_maps_unlock(fs);
}

/* ---- logs: the shim writes them, so look for growth ---- */

/* Is something writing the log ino is of: its node runs, or the attempt
 * has not ended? */
static bool log_live(struct jf_fs *fs, const struct jf_ino *ino)
{
	if (ino->obj == JF_O_ATTEMPT) {
		struct jf_attempt_rec a;
		if (jf_attempt_get(ST(fs), ino->id, &a) != JF_OK)
			return false;
		bool live = a.end_ms == 0;
		jf_attempt_release(&a);
		return live;
	}
	struct jf_node_rec nr;
	int state = -1;
	if (jf_node_find(ST(fs), ino->id >> JF_NODE_BITS, ino->id & JF_NODE_MASK, &nr) == JF_OK) {
		state = nr.state;
		jf_node_release(&nr);
	}
	return state == JF_ST_INITIALIZING || state == JF_ST_RUNNING;
}

void jf_fs_poll_logs(struct jf_fs *fs)
{
	size_t i = 0;
	int64_t k;
	void *v;
	jf_fs_maps_lock(fs);
	while (jf_idmap_next(&fs->looked, &i, &k, &v)) {
		struct jf_ino ino;
		if (!jf_ino_split((uint64_t)k, &ino) ||
		    (ino.obj != JF_O_NODE && ino.obj != JF_O_ATTEMPT) ||
		    (ino.file != JF_F_LOGS && ino.file != JF_F_STDOUT && ino.file != JF_F_STDERR))
			continue;
		uintptr_t last = (uintptr_t)jf_idmap_get(&fs->logsize, k);
		if (last & JF_LOG_IDLE)
			continue; /* its node does not run: nothing writes it */
		if (!last && !log_live(fs, &ino)) {
			/* first look: a node that ended before anyone looked stays
			 * idle until it changes (jf_fs_on_change); an attempt
			 * that ended, for good */
			jf_idmap_put(&fs->logsize, k, (void *)JF_LOG_IDLE);
			continue;
		}
		char path[4096];
		jf_log_path(fs, &ino, path, sizeof(path));
		int64_t size = jf_log_size(path); /* X.1 and X: it drops at a rotation */
		if (last == (uintptr_t)size + 1)
			continue;
		jf_idmap_put(&fs->logsize, k, (void *)((uintptr_t)size + 1));
		if (!last)
			continue; /* first look: nothing to announce */
		char base[1024], full[1100];
		if (!jf_obj_path(fs, ino.obj, ino.id, base, sizeof(base)))
			continue;
		snprintf(full, sizeof(full), "%s/%s", base, jf_file_name(ino.file));
		jf_toucher_queue(fs->nt, (uint64_t)k, full);
	}
	jf_fs_maps_unlock(fs);
}

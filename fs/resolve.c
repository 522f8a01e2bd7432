/*
 * resolve.c - names to inodes, inodes to attributes and paths, and the
 * permission rules (perm.h) applied to a request.
 *
 * Everything is answered from the store (and the cluster for machines):
 * no inode is remembered between requests.  jf_obj_info() describes an
 * object once for both stat (owner, mode) and the rules (owner, queue,
 * private), so the two cannot disagree.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lifecycle.h"
#include "core/names.h"
#include "fs/images.h"

static bool parse_index(const char *s, int64_t *out)
{
	if (!*s || (s[0] == '0' && s[1]) || strlen(s) > 15)
		return false;
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

static void set(struct jf_ino *c, enum jf_obj obj, int64_t id, enum jf_file f)
{
	c->obj = obj;
	c->id = id;
	c->file = f;
}

struct scratch *jf_scratch_find(struct jf_fs *fs, enum jf_obj pobj, int64_t pid, const char *name)
{
	for (int i = 0; i < JF_SCRATCH_MAX; i++) {
		struct scratch *s = &fs->scratch[i];
		if (s->id && s->parent_obj == pobj && s->parent_id == pid &&
		    strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

struct scratch *jf_scratch_get(struct jf_fs *fs, int64_t id)
{
	for (int i = 0; i < JF_SCRATCH_MAX; i++)
		if (fs->scratch[i].id == id)
			return &fs->scratch[i];
	return NULL;
}

static int group_nodes(struct jf_fs *fs, int64_t task_id, int64_t *nodes)
{
	struct jf_task_rec t;
	if (jf_task_get(ST(fs), task_id, &t) != JF_OK)
		return ENOENT;
	struct jf_group_rec g;
	enum jf_err rc = jf_group_get(ST(fs), t.group_id, &g);
	jf_task_release(&t);
	if (rc)
		return ENOENT;
	*nodes = g.nodes;
	jf_group_release(&g);
	return 0;
}

bool jf_attempt_node(struct jf_fs *fs, int64_t attempt_id, int64_t *node_ino,
		     struct jf_attempt_rec *out)
{
	struct jf_attempt_rec a;
	struct jf_node_rec n;
	*node_ino = 0;
	if (jf_attempt_get(ST(fs), attempt_id, &a) != JF_OK)
		return false;
	if (jf_node_get(ST(fs), a.node_id, &n) == JF_OK) {
		if (n.idx >= 0 && n.idx <= JF_NODE_MASK)
			*node_ino = (n.task_id << JF_NODE_BITS) | n.idx;
		jf_node_release(&n);
	}
	if (out && *node_ino)
		*out = a;
	else
		jf_attempt_release(&a);
	return *node_ino != 0;
}

int jf_resolve(struct jf_fs *fs, const struct jf_ino *p, const char *name, struct jf_ino *c)
{
	if (p->file != JF_F_DIR)
		return ENOTDIR;
	enum jf_file f = jf_file_lookup(p->obj, name);
	if (f != JF_F_DIR) {
		if (p->obj == JF_O_GROUP && f == JF_F_CTL) {
			/* every group and batch has ctl */
		}
		set(c, p->obj, p->id, f);
		return 0;
	}
	switch (p->obj) {
	case JF_O_ROOT:
		if (!strcmp(name, "cluster"))
			set(c, JF_O_CLUSTER, 0, JF_F_DIR);
		else if (!strcmp(name, "queues"))
			set(c, JF_O_QUEUES, 0, JF_F_DIR);
		else if (!strcmp(name, "tasks"))
			set(c, JF_O_BATCHES, 0, JF_F_DIR);
		else if (!strcmp(name, "billing"))
			set(c, JF_O_BILLING, 0, JF_F_DIR);
		else if (!strcmp(name, "images"))
			set(c, JF_O_IMAGES, 0, JF_F_DIR);
		else if (!strcmp(name, "volumes"))
			set(c, JF_O_VOLUMES, 0, JF_F_DIR);
		else if (!strcmp(name, "objects"))
			set(c, JF_O_OBJECTS, 0, JF_F_DIR);
		else
			return ENOENT;
		return 0;
	case JF_O_CLUSTER:
		if (strcmp(name, "machines"))
			return ENOENT;
		set(c, JF_O_MACHINES, 0, JF_F_DIR);
		return 0;
	case JF_O_MACHINES: {
		/* the machines a scheduling backend reports change (engine.h: view) */
		jf_engine_view_lock(fs->e);
		const struct jf_cluster *cl = jf_engine_cluster(fs->e);
		int rc = ENOENT;
		for (size_t i = 0; i < cl->nmachines && rc; i++)
			if (!strcmp(cl->machines[i].name, name)) {
				set(c, JF_O_MACHINE, (int64_t)i + 1, JF_F_DIR);
				rc = 0;
			}
		jf_engine_view_unlock(fs->e);
		return rc;
	}
	case JF_O_QUEUES: {
		struct jf_queue_rec q;
		if (jf_queue_find(ST(fs), name, &q) != JF_OK)
			return ENOENT;
		set(c, JF_O_QUEUE, q.id, JF_F_DIR);
		jf_queue_release(&q);
		return 0;
	}
	case JF_O_QUEUE: {
		if (!strcmp(name, "groups")) {
			set(c, JF_O_GROUPS, p->id, JF_F_DIR);
			return 0;
		}
		struct scratch *s = jf_scratch_find(fs, JF_O_QUEUE, p->id, name);
		if (!s)
			return ENOENT;
		set(c, JF_O_SCRATCH, s->id, JF_F_DATA);
		return 0;
	}
	case JF_O_GROUPS:
	case JF_O_BATCHES: {
		struct jf_group_rec g;
		if (jf_group_find(ST(fs), p->obj == JF_O_GROUPS ? p->id : 0,
				  p->obj == JF_O_GROUPS ? JF_KIND_GROUP : JF_KIND_BATCH, name,
				  &g) != JF_OK)
			return ENOENT;
		set(c, JF_O_GROUP, g.id, JF_F_DIR);
		jf_group_release(&g);
		return 0;
	}
	case JF_O_GROUP: {
		struct scratch *s = jf_scratch_find(fs, JF_O_GROUP, p->id, name);
		if (s) {
			set(c, JF_O_SCRATCH, s->id, JF_F_DATA);
			return 0;
		}
		struct jf_group_rec g;
		if (jf_group_get(ST(fs), p->id, &g) != JF_OK)
			return ENOENT;
		int rc = ENOENT;
		if (g.kind == JF_KIND_GROUP && !strcmp(name, "tasks")) {
			set(c, JF_O_TASKS, p->id, JF_F_DIR);
			rc = 0;
		} else if (g.kind == JF_KIND_BATCH) {
			int64_t i;
			struct jf_task_rec t;
			if (jf_task_find_display(ST(fs), g.id, name, &t) == JF_OK ||
			    (jf_batch_child_name(name, g.dirname, &i) &&
			     jf_task_find(ST(fs), g.id, i - 1, &t) == JF_OK && !t.display)) {
				set(c, JF_O_TASK, t.id, JF_F_DIR);
				rc = 0;
			}
			jf_task_release(&t);
		}
		jf_group_release(&g);
		return rc;
	}
	case JF_O_TASKS: {
		int64_t i;
		struct jf_task_rec t;
		/* a renamed task answers to its new name only */
		if (jf_task_find_display(ST(fs), p->id, name, &t) != JF_OK &&
		    (!parse_index(name, &i) || jf_task_find(ST(fs), p->id, i, &t) != JF_OK ||
		     t.display)) {
			jf_task_release(&t);
			return ENOENT;
		}
		set(c, JF_O_TASK, t.id, JF_F_DIR);
		jf_task_release(&t);
		return 0;
	}
	case JF_O_TASK:
		if (strcmp(name, "nodes"))
			return ENOENT;
		set(c, JF_O_NODES, p->id, JF_F_DIR);
		return 0;
	case JF_O_VOLUMES:
	case JF_O_OBJECTS: {
		struct jf_store_rec r;
		if (jf_stor_find(ST(fs), p->obj == JF_O_VOLUMES ? JF_SK_VOLUME : JF_SK_OBJECT, name,
				 &r) != JF_OK)
			return ENOENT;
		set(c, p->obj == JF_O_VOLUMES ? JF_O_VOLUME : JF_O_OBJSRC, r.id, JF_F_DIR);
		jf_stor_release(&r);
		return 0;
	}
	case JF_O_VOLUME:
	case JF_O_OBJSRC: {
		struct scratch *s = jf_scratch_find(fs, p->obj, p->id, name);
		if (!s)
			return ENOENT;
		set(c, JF_O_SCRATCH, s->id, JF_F_DATA);
		return 0;
	}
	case JF_O_IMAGES: {
		int64_t id;
		int rc = jf_images_find(fs, name, &id);
		if (!rc)
			set(c, JF_O_IMAGE, id, JF_F_DIR);
		return rc;
	}
	case JF_O_NODE:
		if (strcmp(name, "attempts"))
			return ENOENT;
		set(c, JF_O_ATTEMPTS, p->id, JF_F_DIR);
		return 0;
	case JF_O_ATTEMPTS: {
		/* 1 .. the node's attempt: each one it has a record of */
		int64_t a = jf_attempt_name(name);
		struct jf_node_rec n;
		struct jf_attempt_rec ar;
		if (!a ||
		    jf_node_find(ST(fs), p->id >> JF_NODE_BITS, p->id & JF_NODE_MASK, &n) != JF_OK)
			return ENOENT;
		int64_t node_id = n.id;
		jf_node_release(&n);
		if (jf_attempt_find(ST(fs), node_id, a, &ar) != JF_OK)
			return ENOENT;
		set(c, JF_O_ATTEMPT, ar.id, JF_F_DIR);
		jf_attempt_release(&ar);
		return 0;
	}
	case JF_O_NODES: {
		int64_t i, nodes = 0;
		if (!parse_index(name, &i) || group_nodes(fs, p->id, &nodes) || i >= nodes ||
		    i > JF_NODE_MASK)
			return ENOENT;
		set(c, JF_O_NODE, (p->id << JF_NODE_BITS) | i, JF_F_DIR);
		return 0;
	}
	default:
		return ENOENT;
	}
}

/* The queue an object is in: its owner and whether it is private; also
 * the object's owner when the object is the queue's own (own). */
static int queue_info(struct jf_fs *fs, int64_t queue_id, bool own, struct jf_obj_info *in)
{
	struct jf_queue_rec q;
	if (jf_queue_get(ST(fs), queue_id, &q) != JF_OK)
		return ENOENT;
	in->perm.in_queue = true;
	in->perm.queue_owner = q.uid;
	in->perm.private_ = jf_perm_queue_private(q.spec);
	if (own) {
		in->uid = q.uid;
		in->gid = q.gid;
		in->perm.owner = q.uid;
		in->born_ms = q.created_ms;
	}
	jf_queue_release(&q);
	return 0;
}

/* A group (or batch) and the queue it is in. */
static int group_info(struct jf_fs *fs, int64_t group_id, struct jf_obj_info *in)
{
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), group_id, &g) != JF_OK)
		return ENOENT;
	in->uid = g.uid;
	in->gid = g.gid;
	in->perm.owner = g.uid;
	in->gstate = g.state;
	if (jf_state_final(g.state))
		in->own_done_ms = g.finished_ms;
	in->born_ms = g.created_ms;
	if (g.spec)
		in->accepted_ms = g.submitted_ms;
	int64_t queue_id = g.queue_id;
	jf_group_release(&g);
	return queue_id ? queue_info(fs, queue_id, false, in) : 0;
}

/*
 * A node's attempts/ and one attempt: their node's owner and queue (perm.h:
 * as the node's files), and their own times.  attempts/ was last changed
 * when its newest attempt was made (the task's acceptance while it has
 * none); an attempt directory when it was made, its files when it ended.
 */
static int attempt_info(struct jf_fs *fs, const struct jf_ino *ino, struct jf_obj_info *in)
{
	int64_t node_ino = ino->id, newest = 0;
	struct jf_attempt_rec a;
	bool have = false;
	if (ino->obj == JF_O_ATTEMPT) {
		if (!jf_attempt_node(fs, ino->id, &node_ino, &a))
			return ENOENT;
		have = true;
	} else {
		struct jf_node_rec n;
		if (jf_node_find(ST(fs), node_ino >> JF_NODE_BITS, node_ino & JF_NODE_MASK, &n) ==
		    JF_OK) {
			newest = n.attempt_id;
			jf_node_release(&n);
		}
		have = newest && jf_attempt_get(ST(fs), newest, &a) == JF_OK;
	}
	struct jf_ino node = { JF_O_NODE, node_ino, JF_F_DIR };
	int rc = jf_obj_info(fs, &node, in);
	in->perm.obj = ino->obj;
	in->perm.file = ino->file;
	if (!rc && have) {
		int64_t made = a.created_ms > 0 ? a.created_ms : a.start_ms;
		if (made > 0)
			in->born_ms = made;
		in->own_done_ms = ino->obj == JF_O_ATTEMPT ? a.end_ms : 0;
	} else if (!rc) {
		in->own_done_ms = 0;
	}
	if (have)
		jf_attempt_release(&a);
	return rc;
}

/*
 * Does the object still exist?  Its owner, the queue it is in, the state
 * of its group, and done_ms: when the group finished, if it has (0
 * otherwise).  A finished group's directories and files keep that time
 * instead of "now", so `tar` sees nothing change while it reads them
 * ("file changed as we read it").
 */
int jf_obj_info(struct jf_fs *fs, const struct jf_ino *ino, struct jf_obj_info *in)
{
	memset(in, 0, sizeof(*in));
	in->perm.obj = ino->obj;
	in->perm.file = ino->file;
	in->perm.owner = fs->perm.uid;
	in->uid = fs->uid;
	in->gid = fs->gid;
	in->gstate = -1;
	int rc = 0;
	switch (ino->obj) {
	case JF_O_QUEUE:
	case JF_O_GROUPS:
		return queue_info(fs, ino->id, true, in);
	case JF_O_GROUP:
	case JF_O_TASKS:
		rc = group_info(fs, ino->id, in);
		if (!rc && ino->obj == JF_O_GROUP && ino->file == JF_F_SPEC)
			in->perm.spec_locked =
				in->gstate != JF_ST_DRAFT && in->gstate != JF_ST_INVALID;
		return rc;
	case JF_O_ATTEMPTS:
	case JF_O_ATTEMPT:
		return attempt_info(fs, ino, in);
	case JF_O_TASK:
	case JF_O_NODES:
	case JF_O_NODE: {
		struct jf_task_rec t;
		int64_t tid = ino->obj == JF_O_NODE ? ino->id >> JF_NODE_BITS : ino->id;
		if (jf_task_get(ST(fs), tid, &t) != JF_OK)
			return ENOENT;
		int64_t group_id = t.group_id;
		int64_t done = jf_state_final(t.state) ? t.finished_ms : 0;
		jf_task_release(&t);
		rc = group_info(fs, group_id, in);
		in->gstate = -1;
		/* a task's own times, not its group's: made at the acceptance */
		in->born_ms = in->accepted_ms;
		in->own_done_ms = done;
		if (!rc && ino->obj == JF_O_NODE) {
			struct jf_node_rec n;
			in->own_done_ms = 0;
			if (jf_node_find(ST(fs), tid, ino->id & JF_NODE_MASK, &n) == JF_OK) {
				if (jf_state_final(n.state))
					in->own_done_ms = n.finished_ms;
				jf_node_release(&n);
			}
		}
		return rc;
	}
	case JF_O_MACHINE: {
		jf_engine_view_lock(fs->e);
		size_t n = jf_engine_cluster(fs->e)->nmachines;
		jf_engine_view_unlock(fs->e);
		return (size_t)ino->id >= 1 && (size_t)ino->id <= n ? 0 : ENOENT;
	}
	case JF_O_IMAGES:
	case JF_O_IMAGE:
		return jf_images_info(fs, ino, in);
	case JF_O_VOLUME:
	case JF_O_OBJSRC: {
		struct jf_store_rec r;
		if (jf_stor_get(ST(fs), ino->id, &r) != JF_OK ||
		    r.kind != (ino->obj == JF_O_VOLUME ? JF_SK_VOLUME : JF_SK_OBJECT)) {
			jf_stor_release(&r);
			return ENOENT;
		}
		in->uid = r.uid;
		in->gid = r.gid;
		in->perm.owner = r.uid;
		in->born_ms = r.created_ms;
		in->changed_ms = r.changed_ms;
		jf_stor_release(&r);
		return 0;
	}
	case JF_O_SCRATCH: {
		/* an editor's temp file is its directory's owner's */
		struct scratch *s = jf_scratch_get(fs, ino->id);
		if (!s)
			return ENOENT;
		struct jf_ino dir = { s->parent_obj, s->parent_id, JF_F_DIR };
		mode_t mode = s->mode;
		rc = jf_obj_info(fs, &dir, in);
		in->perm.obj = ino->obj;
		in->perm.file = ino->file;
		in->perm.scratch_mode = mode;
		in->gstate = -1;
		return rc;
	}
	default:
		return 0;
	}
}

static int perm_uid(struct jf_fs *fs, uid_t uid, const struct jf_ino *ino, enum jf_perm_act act)
{
	if (jf_perm_admin(&fs->perm, uid))
		return 0;
	struct jf_obj_info in;
	int rc = jf_obj_info(fs, ino, &in);
	return rc ? rc : jf_perm_check(&fs->perm, &in.perm, uid, act);
}

int jf_perm_req(struct jf_fs *fs, fuse_req_t req, const struct jf_ino *ino, enum jf_perm_act act)
{
	return perm_uid(fs, fuse_req_ctx(req)->uid, ino, act);
}

static int64_t file_size(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader)
{
	switch (ino->file) {
	case JF_F_EVENTS: {
		static const enum jf_scope scopes[JF_O__COUNT] = {
			[JF_O_QUEUE] = JF_SCOPE_QUEUE,  [JF_O_GROUP] = JF_SCOPE_GROUP,
			[JF_O_TASK] = JF_SCOPE_TASK,    [JF_O_NODE] = JF_SCOPE_NODE,
			[JF_O_VOLUME] = JF_SCOPE_STORE, [JF_O_OBJSRC] = JF_SCOPE_STORE,
		};
		int64_t bytes = 0;
		int64_t id = ino->id;
		if (ino->obj == JF_O_NODE) {
			struct jf_node_rec n;
			if (jf_node_find(ST(fs), id >> JF_NODE_BITS, id & JF_NODE_MASK, &n) !=
			    JF_OK)
				return 0;
			id = n.id;
			jf_node_release(&n);
		}
		jf_event_size(ST(fs), scopes[ino->obj], id, &bytes);
		return bytes;
	}
	case JF_F_LOGS:
	case JF_F_STDOUT:
	case JF_F_STDERR:
	case JF_F_LOGS_PREV: {
		char path[4096];
		jf_log_path(fs, ino, path, sizeof(path));
		return jf_log_size(path); /* X.1 and X: the shim rotates at its cap */
	}
	case JF_F_WATCH:
		return 0;
	case JF_F_DATA: {
		struct scratch *s = jf_scratch_get(fs, ino->id);
		return s ? (int64_t)s->len : 0;
	}
	default: {
		const struct cached *c = jf_cached_render(fs, ino, reader, NULL);
		return c ? (int64_t)c->len : 0;
	}
	}
}

/*
 * A rendered file, measured and kept for attr_timeout (or until a change
 * that may touch it: notify.c): stat and the open right after it see
 * the same bytes, and repeated reads within the same second cost no
 * rendering.  Content that moves with time alone (duration, running cost)
 * moves in whole seconds anyway.
 *
 * The rendering runs without the map lock, from the request's snapshot;
 * it is kept only if no change was notified since the request began (one
 * that was may be newer than the snapshot, and its notification may
 * already have dropped what it touched).  An entry is never changed once
 * kept: a newer one replaces it, and the old one is retired (serve.c), so
 * what this returns stays valid while the tree's lock is held.
 */
const struct cached *jf_cached_render(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader,
				      int *err)
{
	/* a rendering that depends on the reader is kept per reader: the
	 * billing object's id is always 0, so reader + 1 there names none */
	uint64_t key = jf_ino_make(ino->obj, ino->id, ino->file);
	if (jf_render_per_reader(fs, ino, reader))
		key = jf_ino_make(ino->obj, (int64_t)reader + 1, ino->file);
	bool own = ino->obj == JF_O_QUEUE || ino->obj == JF_O_GROUP || ino->obj == JF_O_TASK ||
		   ino->obj == JF_O_NODE;
	struct jf_idmap *map = own ? &fs->cache : &fs->gcache;
	uint64_t gen = jf_fs_req_gen(fs);
	int64_t now = jf_engine_now(fs->e);
	jf_fs_maps_lock(fs);
	struct cached *c = jf_idmap_get(map, (int64_t)key);
	jf_fs_maps_unlock(fs);
	if (c && now - c->at_ms < (int64_t)(fs->attr_timeout * 1000))
		return c;
	char *data = NULL;
	size_t len = 0;
	int rc = jf_render(fs, ino, reader, &data, &len);
	if (rc) {
		if (err)
			*err = rc;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		free(data);
		if (err)
			*err = ENOMEM;
		return NULL;
	}
	c->data = data;
	c->len = len;
	c->at_ms = now;
	jf_fs_maps_lock(fs);
	struct cached *old = jf_idmap_get(map, (int64_t)key);
	if (atomic_load(&fs->gen) == gen && jf_idmap_put(map, (int64_t)key, c)) {
		if (old)
			jf_fs_retire(fs, old);
	} else {
		jf_fs_retire(fs, c); /* this request's alone */
	}
	jf_fs_maps_unlock(fs);
	return c;
}

int jf_stat_info(struct jf_fs *fs, const struct jf_ino *ino, const struct jf_obj_info *in,
		 uid_t reader, struct stat *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->st_ino = jf_ino_make(ino->obj, ino->id, ino->file);
	sb->st_uid = in->uid;
	sb->st_gid = in->gid;
	sb->st_blksize = 4096;
	mode_t mode = jf_perm_mode(&fs->perm, &in->perm);
	int64_t ms;
	if (ino->file == JF_F_DIR) {
		sb->st_mode = S_IFDIR | mode;
		sb->st_nlink = 2;
		ms = jf_mtime(fs, ino, in, reader, NULL, 0, 0);
	} else if (ino->file == JF_F_LINK) {
		/* a volume's data: a symlink to its directory (readlink) */
		char target[4096];
		jf_link_target(fs, ino, target, sizeof(target));
		sb->st_mode = S_IFLNK | 0777;
		sb->st_nlink = 1;
		sb->st_size = (off_t)strlen(target);
		ms = in->born_ms;
	} else {
		sb->st_nlink = 1;
		sb->st_mode = S_IFREG | mode;
		const struct cached *c = NULL;
		if (ino->file == JF_F_DATA) {
			struct scratch *s = jf_scratch_get(fs, ino->id);
			sb->st_size = s ? (int64_t)s->len : 0;
			ms = s ? s->mtime_ms : 0;
		} else if (jf_file_rendered(ino->file) &&
			   (c = jf_cached_render(fs, ino, reader, NULL))) {
			sb->st_size = (off_t)c->len;
			ms = jf_mtime(fs, ino, in, reader, c->data, c->len, 0);
		} else {
			sb->st_size = file_size(fs, ino, reader);
			ms = jf_mtime(fs, ino, in, reader, NULL, 0, sb->st_size);
		}
		sb->st_blocks = (sb->st_size + 511) / 512;
	}
	sb->st_mtim.tv_sec = ms / 1000;
	sb->st_mtim.tv_nsec = (ms % 1000) * 1000000;
	sb->st_atim = sb->st_ctim = sb->st_mtim;
	return 0;
}

int jf_stat(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, struct stat *sb)
{
	struct jf_obj_info in;
	int rc = jf_obj_info(fs, ino, &in);
	if (rc) {
		memset(sb, 0, sizeof(*sb));
		return rc;
	}
	return jf_stat_info(fs, ino, &in, reader, sb);
}

bool jf_obj_path(struct jf_fs *fs, enum jf_obj obj, int64_t id, char *buf, size_t n)
{
	buf[0] = '\0';
	switch (obj) {
	case JF_O_QUEUE: {
		struct jf_queue_rec q;
		if (jf_queue_get(ST(fs), id, &q) != JF_OK)
			return false;
		snprintf(buf, n, "queues/%s", q.name);
		jf_queue_release(&q);
		return true;
	}
	case JF_O_GROUP: {
		struct jf_group_rec g;
		if (jf_group_get(ST(fs), id, &g) != JF_OK)
			return false;
		if (g.kind == JF_KIND_BATCH) {
			snprintf(buf, n, "tasks/%s", g.dirname);
		} else {
			char q[300];
			if (!jf_obj_path(fs, JF_O_QUEUE, g.queue_id, q, sizeof(q))) {
				jf_group_release(&g);
				return false;
			}
			snprintf(buf, n, "%s/groups/%s", q, g.dirname);
		}
		jf_group_release(&g);
		return true;
	}
	case JF_O_TASK: {
		struct jf_task_rec t;
		if (jf_task_get(ST(fs), id, &t) != JF_OK)
			return false;
		struct jf_group_rec g;
		char gp[600];
		bool ok = jf_group_get(ST(fs), t.group_id, &g) == JF_OK &&
			  jf_obj_path(fs, JF_O_GROUP, t.group_id, gp, sizeof(gp));
		if (ok && t.display) {
			snprintf(buf, n, g.kind == JF_KIND_BATCH ? "%s/%s" : "%s/tasks/%s", gp,
				 t.display);
		} else if (ok) {
			if (g.kind == JF_KIND_BATCH)
				snprintf(buf, n, "%s/%lld-%s", gp, (long long)t.idx + 1, g.dirname);
			else
				snprintf(buf, n, "%s/tasks/%lld", gp, (long long)t.idx);
		}
		jf_group_release(&g);
		jf_task_release(&t);
		return ok;
	}
	case JF_O_NODE: {
		char tp[900];
		if (!jf_obj_path(fs, JF_O_TASK, id >> JF_NODE_BITS, tp, sizeof(tp)))
			return false;
		snprintf(buf, n, "%s/nodes/%lld", tp, (long long)(id & JF_NODE_MASK));
		return true;
	}
	case JF_O_ATTEMPTS: {
		char np[950];
		if (!jf_obj_path(fs, JF_O_NODE, id, np, sizeof(np)))
			return false;
		snprintf(buf, n, "%s/attempts", np);
		return true;
	}
	case JF_O_ATTEMPT: {
		char np[950];
		int64_t node_ino;
		struct jf_attempt_rec a;
		if (!jf_attempt_node(fs, id, &node_ino, &a))
			return false;
		bool ok = jf_obj_path(fs, JF_O_NODE, node_ino, np, sizeof(np));
		if (ok)
			snprintf(buf, n, "%s/attempts/%lld", np, (long long)a.attempt);
		jf_attempt_release(&a);
		return ok;
	}
	default:
		return false;
	}
}

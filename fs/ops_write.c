/*
 * ops_write.c - the operations that change the tree's shape: mkdir makes
 * queues, groups and batches; rmdir and rename act on them; create, unlink
 * and rename of editors' temporary files (an in-memory scratch per group
 * or queue) let `sed -i` and editors submit a spec by renaming onto
 * spec.yaml.  Every callback replies exactly once.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <poll.h>

#include "core/lifecycle.h"
#include "core/names.h"
#include "core/spec.h"
#include "fs/images.h"

#define CTL_MAX           256
#define SCRATCH_MAX_BYTES JF_SPEC_MAX_BYTES
#define DIR_BASE          64 /* readdir offsets below this are fixed entries */

/* ---- mkdir, rmdir, rename, create, unlink ---- */

void jf_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)mode;
	struct jf_fs *fs = FS(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct jf_ino p;
	struct jf_error err;
	jf_error_clear(&err);
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* the toucher raising IN_CREATE for a task directory the daemon made:
	 * answered with the directory that is there (toucher.h) */
	if (p.obj == JF_O_TASKS && jf_from_toucher(req)) {
		struct jf_ino t;
		if (!jf_ino_creating(fs, p.id, name, true) || jf_resolve(fs, &p, name, &t)) {
			fuse_reply_err(req, EEXIST);
			return;
		}
		jf_reply_entry(req, fs, &t);
		return;
	}
	/* the new queue, group or batch is its maker's (engine records ctx uid) */
	int prc = jf_perm_req(fs, req, &p, JF_PERM_WRITE);
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	enum jf_err rc;
	int64_t id = 0;
	struct jf_ino c;
	switch (p.obj) {
	case JF_O_QUEUES:
		rc = jf_engine_mkqueue(fs->e, name, ctx->uid, ctx->gid, &id, &err);
		c = (struct jf_ino){ JF_O_QUEUE, id, JF_F_DIR };
		break;
	case JF_O_VOLUMES:
	case JF_O_OBJECTS:
		rc = jf_engine_mkstore(fs->e, p.obj == JF_O_VOLUMES ? JF_SK_VOLUME : JF_SK_OBJECT,
				       name, ctx->uid, ctx->gid, &id, &err);
		c = (struct jf_ino){ p.obj == JF_O_VOLUMES ? JF_O_VOLUME : JF_O_OBJSRC, id,
				     JF_F_DIR };
		break;
	case JF_O_GROUPS:
	case JF_O_BATCHES:
		rc = jf_engine_mkgroup(fs->e, p.obj == JF_O_GROUPS ? p.id : 0,
				       p.obj == JF_O_GROUPS ? JF_KIND_GROUP : JF_KIND_BATCH, name,
				       ctx->uid, ctx->gid, &id, &err);
		c = (struct jf_ino){ JF_O_GROUP, id, JF_F_DIR };
		break;
	default:
		fuse_reply_err(req, EACCES);
		return;
	}
	if (rc) {
		fuse_reply_err(req, jf_errno(rc));
		return;
	}
	jf_reply_entry(req, fs, &c);
}

/* The group an object of a group's tree belongs to, 0 if none. */
static int64_t owning_group(struct jf_fs *fs, const struct jf_ino *c)
{
	switch (c->obj) {
	case JF_O_GROUP:
	case JF_O_TASKS:
		return c->id;
	case JF_O_TASK:
	case JF_O_NODES:
	case JF_O_NODE:
	case JF_O_ATTEMPTS:
	case JF_O_ATTEMPT: {
		struct jf_task_rec t;
		int64_t tid = c->id, node_ino = c->id;
		if (c->obj == JF_O_ATTEMPT && !jf_attempt_node(fs, c->id, &node_ino, NULL))
			return 0;
		if (c->obj == JF_O_NODE || c->obj == JF_O_ATTEMPTS || c->obj == JF_O_ATTEMPT)
			tid = node_ino >> JF_NODE_BITS;
		if (jf_task_get(ST(fs), tid, &t) != JF_OK)
			return 0;
		int64_t g = t.group_id;
		jf_task_release(&t);
		return g;
	}
	default:
		return 0;
	}
}

/*
 * What `rm -rf` of a group (or of a queue) does on its way to the rmdir
 * that removes it: unlink every file, rmdir every directory below.  Those
 * remove nothing by themselves (a group's files are its state, shown, and
 * go with it) but succeed where the rmdir that follows would: 0 when the
 * group is finished or a draft (the queue has no live group), EBUSY while
 * it is live, EPERM for files that are no group's or queue's (README,
 * cluster/, billing/).
 */
static int removable(struct jf_fs *fs, const struct jf_ino *c)
{
	if (c->obj == JF_O_IMAGE) /* its status files: as its rmdir would */
		return jf_images_removable(fs, c->id);
	if (c->obj == JF_O_QUEUE || c->obj == JF_O_GROUPS) {
		int64_t all = 0, live = 0;
		if (jf_queue_group_counts(ST(fs), c->id, &all, &live) != JF_OK)
			return EIO;
		if (live)
			return EBUSY;
		/* groups/ itself: empty once rm has removed every group */
		return c->obj == JF_O_GROUPS && all ? ENOTEMPTY : 0;
	}
	int64_t gid = owning_group(fs, c);
	if (!gid)
		return c->obj == JF_O_NONE ? ENOENT : EPERM;
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), gid, &g) != JF_OK)
		return ENOENT;
	int rc = jf_state_final(g.state) || g.state == JF_ST_DRAFT || g.state == JF_ST_INVALID
			 ? 0
			 : EBUSY;
	jf_group_release(&g);
	return rc;
}

/* The queue (or group) directory p is: where a Warning about what was
 * refused in it goes. */
static void warn_in(struct jf_fs *fs, const struct jf_ino *p, const char *reason, const char *msg)
{
	if (p->obj == JF_O_QUEUE || p->obj == JF_O_GROUPS)
		jf_engine_warn(fs->e, p->id, 0, reason, msg);
	else if (p->obj == JF_O_GROUP || p->obj == JF_O_TASKS)
		jf_engine_warn(fs->e, 0, p->id, reason, msg);
	else if (p->obj == JF_O_TASK || p->obj == JF_O_NODES || p->obj == JF_O_NODE ||
		 p->obj == JF_O_ATTEMPTS || p->obj == JF_O_ATTEMPT)
		jf_engine_warn(fs->e, 0, owning_group(fs, p), reason, msg);
}

void jf_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	struct jf_error err;
	jf_error_clear(&err);
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int prc = jf_perm_req(fs, req, &p, JF_PERM_WRITE);
	if (!prc && jf_resolve(fs, &p, name, &c))
		prc = ENOENT;
	if (!prc)
		prc = jf_perm_req(fs, req, &c, JF_PERM_OWN);
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	enum jf_err rc;
	if (c.obj == JF_O_QUEUE && c.file == JF_F_DIR && p.obj == JF_O_QUEUES)
		rc = jf_engine_rmqueue(fs->e, c.id, &err);
	else if (c.obj == JF_O_GROUP && c.file == JF_F_DIR)
		rc = jf_engine_rmgroup(fs->e, c.id, &err);
	else if ((c.obj == JF_O_VOLUME || c.obj == JF_O_OBJSRC) && c.file == JF_F_DIR)
		rc = jf_engine_rmstore(fs->e, c.id, &err);
	else if (c.obj == JF_O_IMAGE && c.file == JF_F_DIR) {
		fuse_reply_err(req, jf_images_remove(fs, c.id));
		return;
	} else if (c.file == JF_F_DIR && c.obj != JF_O_SCRATCH) {
		/* a directory inside a group (or a queue's groups/): rm -rf */
		int r = removable(fs, &c);
		fuse_reply_err(req, r == EPERM ? EACCES : r);
		return;
	} else
		rc = JF_EINVAL;
	fuse_reply_err(req, rc == JF_EINVAL ? ENOTDIR : jf_errno(rc));
}

enum jf_err jf_submit_text(struct jf_fs *fs, const struct jf_ino *spec_ino, const char *text,
			   size_t len, uid_t uid, gid_t gid)
{
	struct jf_error err;
	jf_error_clear(&err);
	/* the writer's next watch shows what the spec did (Accepted, ...) */
	jf_watch_seen(fs, spec_ino->obj == JF_O_QUEUE ? JF_SCOPE_QUEUE : JF_SCOPE_GROUP,
		      spec_ino->id, uid, -1);
	if (spec_ino->obj == JF_O_QUEUE)
		return jf_engine_queue_spec(fs->e, spec_ino->id, text, len, &err);
	if (spec_ino->obj == JF_O_VOLUME || spec_ino->obj == JF_O_OBJSRC)
		return jf_engine_store_spec(fs->e, spec_ino->id, text, len, &err);
	return jf_engine_submit(fs->e, spec_ino->id, text, len, uid, gid, &err);
}

void jf_scratch_free(struct scratch *s)
{
	free(s->data);
	memset(s, 0, sizeof(*s));
}

/* A group or task directory renamed out of where it lives. */
static void moved_out(struct jf_fs *fs, const struct jf_ino *c, const char *name, const char *what,
		      const char *home)
{
	char q[JF_NAME_QUOTE_MAX], msg[512];
	jf_name_quote(name, q, sizeof(q));
	snprintf(msg, sizeof(msg),
		 "mv of %s %s elsewhere refused (EPERM): a %s stays in %s; its spec, events "
		 "and cost are kept there. To run it elsewhere, make a new %s there and "
		 "write its spec.yaml",
		 what, q, what, home, what);
	warn_in(fs, c, "Refused", msg);
}

/* A file that would not be kept: only editors' temporary files are made. */
static void refuse_name(struct jf_fs *fs, const struct jf_ino *p, const char *name, const char *how)
{
	char q[JF_NAME_QUOTE_MAX], msg[640];
	jf_name_quote(name, q, sizeof(q));
	snprintf(msg, sizeof(msg),
		 "file %s not %s (EPERM): a %s directory holds only what jobfs makes, "
		 "and editors' temporary files (hidden names, names with spec.yaml in them, "
		 "*~, *.tmp, *.swp, sedXXXXXX, tmp*), kept in memory until renamed onto "
		 "spec.yaml; keep other files outside the mount",
		 q, how, p->obj == JF_O_QUEUE ? "queue" : "group");
	warn_in(fs, p, "Refused", msg);
}

void jf_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		  const char *newname, unsigned int flags)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, np, c;
	struct jf_error err;
	jf_error_clear(&err);
	if (!split(parent, &p) || !split(newparent, &np)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int prc = jf_perm_req(fs, req, &p, JF_PERM_WRITE);
	if (!prc)
		prc = jf_perm_req(fs, req, &np, JF_PERM_WRITE);
	if (!prc && jf_resolve(fs, &p, name, &c))
		prc = ENOENT;
	if (!prc)
		prc = jf_perm_req(fs, req, &c, JF_PERM_OWN);
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	if (flags & RENAME_EXCHANGE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* an editor's temp file renamed onto spec.yaml submits it */
	if (c.obj == JF_O_SCRATCH) {
		struct scratch *s = jf_scratch_get(fs, c.id);
		if (!s || np.obj != p.obj || np.id != p.id) {
			fuse_reply_err(req, EXDEV);
			return;
		}
		if (!strcmp(newname, "spec.yaml")) {
			struct jf_ino spec = { p.obj, p.id, JF_F_SPEC };
			const struct fuse_ctx *ctx = fuse_req_ctx(req);
			enum jf_err rc = jf_submit_text(fs, &spec, s->data ? s->data : "", s->len,
							ctx->uid, ctx->gid);
			if (rc == JF_OK)
				jf_scratch_free(s);
			fuse_reply_err(req, jf_errno(rc));
			return;
		}
		if (jf_file_lookup(p.obj, newname) != JF_F_DIR || !strcmp(newname, "tasks") ||
		    !strcmp(newname, "groups")) {
			fuse_reply_err(req, EACCES);
			return;
		}
		if (!jf_name_editor_temp(newname)) {
			refuse_name(fs, &p, newname, "renamed to");
			fuse_reply_err(req, EPERM);
			return;
		}
		struct scratch *other = jf_scratch_find(fs, p.obj, p.id, newname);
		if (other && other != s)
			jf_scratch_free(other);
		snprintf(s->name, sizeof(s->name), "%s", newname);
		fuse_reply_err(req, 0);
		return;
	}
	if (c.obj == JF_O_TASK && c.file == JF_F_DIR &&
	    (p.obj == JF_O_TASKS || p.obj == JF_O_GROUP)) {
		if (np.obj != p.obj || np.id != p.id) {
			/* not EXDEV: mv would copy file by file into a new place */
			moved_out(fs, &c, name, "task", "its group");
			fuse_reply_err(req, EPERM);
			return;
		}
		struct jf_ino other;
		if (jf_resolve(fs, &np, newname, &other) == 0) {
			fuse_reply_err(req,
				       other.obj == JF_O_TASK && other.id == c.id ? 0 : EEXIST);
			return;
		}
		enum jf_err rc = jf_engine_rename_task(fs->e, c.id, newname, &err);
		fuse_reply_err(req, jf_errno(rc));
		return;
	}
	if (c.obj == JF_O_GROUP && c.file == JF_F_DIR &&
	    (p.obj == JF_O_GROUPS || p.obj == JF_O_BATCHES)) {
		if (np.obj != p.obj || np.id != p.id) {
			/* refused whole, and not with EXDEV, at which mv falls back
			 * to mkdir and copying file by file: that made a stray
			 * draft group in the target */
			moved_out(fs, &c, name, "group",
				  p.obj == JF_O_GROUPS ? "the queue it was made in" : "/tasks");
			fuse_reply_err(req, EPERM);
			return;
		}
		struct jf_ino other;
		if (jf_resolve(fs, &np, newname, &other) == 0) {
			fuse_reply_err(req, EEXIST);
			return;
		}
		enum jf_err rc = jf_engine_rename_group(fs->e, c.id, newname, &err);
		fuse_reply_err(req, jf_errno(rc));
		return;
	}
	fuse_reply_err(req, EACCES);
}

static bool scratch_parent_ok(const struct jf_ino *p)
{
	return p->file == JF_F_DIR && (p->obj == JF_O_GROUP || p->obj == JF_O_QUEUE);
}

void jf_fh_track(struct jf_fs *fs, struct fh *h)
{
	jf_fs_maps_lock(fs);
	h->prev = NULL;
	h->next = fs->fhs;
	if (fs->fhs)
		fs->fhs->prev = h;
	fs->fhs = h;
	jf_fs_maps_unlock(fs);
}

void jf_fh_untrack(struct jf_fs *fs, struct fh *h)
{
	jf_fs_maps_lock(fs);
	if (h->prev)
		h->prev->next = h->next;
	else if (fs->fhs == h)
		fs->fhs = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
	jf_fs_maps_unlock(fs);
}

struct fh *jf_fh_new(enum fh_kind kind, const struct jf_ino *ino)
{
	struct fh *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->kind = kind;
	h->ino = *ino;
	h->fd = -1;
	return h;
}

void jf_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int prc = jf_perm_req(fs, req, &p, JF_PERM_WRITE);
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	if (jf_resolve(fs, &p, name, &c) == 0) {
		/* exists: O_CREAT without O_EXCL opens it (the kernel checks EXCL) */
		fuse_reply_err(req, EEXIST);
		return;
	}
	if (!scratch_parent_ok(&p)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (!jf_name_editor_temp(name)) {
		/* "notes" would be listed, then gone at the next mount */
		refuse_name(fs, &p, name, "made");
		fuse_reply_err(req, EPERM);
		return;
	}
	struct scratch *s = NULL;
	for (int i = 0; i < JF_SCRATCH_MAX && !s; i++)
		if (!fs->scratch[i].id)
			s = &fs->scratch[i];
	if (!s) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	s->id = ++fs->scratch_next;
	s->parent_obj = p.obj;
	s->parent_id = p.id;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->mode = mode & 0777;
	s->mtime_ms = jf_engine_now(fs->e);
	c = (struct jf_ino){ JF_O_SCRATCH, s->id, JF_F_DATA };
	struct fh *h = jf_fh_new(FH_SCRATCH, &c);
	if (!h) {
		jf_scratch_free(s);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	jf_stat(fs, &c, fuse_req_ctx(req)->uid, &e.attr);
	e.ino = e.attr.st_ino;
	e.attr_timeout = 0;
	e.entry_timeout = 0;
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) != 0) {
		free(h);
	} else {
		jf_ino_looked(fs, e.ino);
		jf_fh_track(fs, h);
	}
}

void jf_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int prc = jf_perm_req(fs, req, &p, JF_PERM_WRITE);
	if (!prc && jf_resolve(fs, &p, name, &c))
		prc = ENOENT;
	if (!prc)
		prc = jf_perm_req(fs, req, &c, JF_PERM_OWN);
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	if (c.obj != JF_O_SCRATCH) {
		int r = c.file == JF_F_DIR ? EISDIR : removable(fs, &c);
		fuse_reply_err(req, r == EPERM ? EACCES : r);
		return;
	}
	struct scratch *s = jf_scratch_get(fs, c.id);
	if (s)
		jf_scratch_free(s);
	fuse_reply_err(req, 0);
}

/*
 * ops.c - the FUSE low-level operations.
 *
 * Every callback replies exactly once.  Reads of rendered files serve the
 * snapshot taken at open (the same bytes stat measured moments before);
 * events and logs are read fresh at their offset, so `tail -f` sees growth.
 * Writes to spec.yaml and ctl are buffered per open and acted on at flush
 * (close); what no later write could fix is refused at write() already.
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

#define CTL_MAX 256
#define SCRATCH_MAX_BYTES JF_SPEC_MAX_BYTES
#define DIR_BASE 64            /* readdir offsets below this are fixed entries */

static struct jf_fs *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static bool split(fuse_ino_t ino, struct jf_ino *out)
{
	return jf_ino_split(ino, out);
}

static void reply_entry(fuse_req_t req, struct jf_fs *fs, const struct jf_ino *c)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	int rc = jf_stat(fs, c, &e.attr);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	e.ino = e.attr.st_ino;
	e.attr_timeout = fs->attr_timeout;
	e.entry_timeout = fs->attr_timeout;
	if (c->obj == JF_O_SCRATCH) {
		/*
		 * An editor's temp file is renamed onto spec.yaml: the kernel then
		 * keeps the temp file's dentry under the new name.  Not caching it
		 * makes the next lookup find the real spec.yaml at once.
		 */
		e.attr_timeout = 0;
		e.entry_timeout = 0;
	}
	if (c->obj == JF_O_NODE && (c->file == JF_F_LOGS || c->file == JF_F_STDOUT ||
				    c->file == JF_F_STDERR)) {
		uintptr_t n = (uintptr_t)jf_idmap_get(&fs->looked, (int64_t)e.ino);
		jf_idmap_put(&fs->looked, (int64_t)e.ino, (void *)(n + 1));
	}
	fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int rc = jf_resolve(fs, &p, name, &c);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	reply_entry(req, fs, &c);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct jf_fs *fs = FS(req);
	uintptr_t n = (uintptr_t)jf_idmap_get(&fs->looked, (int64_t)ino);
	if (n) {
		if (n <= nlookup) {
			jf_idmap_del(&fs->looked, (int64_t)ino);
			jf_idmap_del(&fs->logsize, (int64_t)ino);
		} else {
			jf_idmap_put(&fs->looked, (int64_t)ino, (void *)(n - nlookup));
		}
	}
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	struct stat sb;
	if (!split(ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int rc = jf_stat(fs, &i, &sb);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_attr(req, &sb, fs->attr_timeout);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	if (!split(ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (i.file == JF_F_DATA) {
			struct scratch *s = jf_scratch_get(fs, i.id);
			if (!s || attr->st_size > SCRATCH_MAX_BYTES) {
				fuse_reply_err(req, s ? EFBIG : ENOENT);
				return;
			}
			if ((size_t)attr->st_size < s->len)
				s->len = (size_t)attr->st_size;
		} else if (fi && fi->fh) {
			struct fh *h = (struct fh *)(uintptr_t)fi->fh;
			if ((h->kind == FH_SPEC || h->kind == FH_CTL) &&
			    (size_t)attr->st_size < h->len)
				h->len = (size_t)attr->st_size;
		} else if (i.file != JF_F_SPEC && i.file != JF_F_CTL) {
			fuse_reply_err(req, EACCES);
			return;
		}
	}
	if ((to_set & FUSE_SET_ATTR_MODE) && i.file == JF_F_DATA) {
		struct scratch *s = jf_scratch_get(fs, i.id);
		if (s)
			s->mode = attr->st_mode & 0777;
	}
	/* times and owners: accepted and ignored (touch, cp -p, sed -i work) */
	struct stat sb;
	int rc = jf_stat(fs, &i, &sb);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_attr(req, &sb, fs->attr_timeout);
}

/* ---- directories ---- */

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool full;
};

static bool add(struct dirbuf *d, const char *name, uint64_t ino, mode_t mode, off_t next)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = mode;
	size_t need = fuse_add_direntry(d->req, NULL, 0, name, NULL, 0);
	if (d->used + need > d->size) {
		d->full = true;
		return false;
	}
	fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, &st, next);
	d->used += need;
	return true;
}

struct listing {
	struct dirbuf *d;
	enum jf_obj obj;
	const char *suffix;      /* batch children: "-<name>" */
	int64_t last;
};

static int list_named(void *ctx, int64_t id, const char *name)
{
	struct listing *l = ctx;
	if (!add(l->d, name, jf_ino_make(l->obj, id, JF_F_DIR), S_IFDIR, DIR_BASE + id))
		return 1;
	l->last = id;
	return 0;
}

static int list_tasks(void *ctx, int64_t id, int64_t idx)
{
	struct listing *l = ctx;
	char name[128];
	if (l->suffix)
		snprintf(name, sizeof(name), "%lld-%s", (long long)idx + 1, l->suffix);
	else
		snprintf(name, sizeof(name), "%lld", (long long)idx);
	if (!add(l->d, name, jf_ino_make(JF_O_TASK, id, JF_F_DIR), S_IFDIR, DIR_BASE + idx + 1))
		return 1;
	l->last = idx;
	return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	if (!split(ino, &i) || i.file != JF_F_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	struct stat sb;
	int rc = jf_stat(fs, &i, &sb);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	struct dirbuf d = { req, malloc(size), size, 0, false };
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* fixed entries: ".", "..", files, fixed subdirectories, scratch files */
	const char *subdirs[4] = { 0 };
	enum jf_obj subobj[4] = { 0 };
	int nsub = 0;
	struct jf_group_rec g;
	bool have_g = false;
	switch (i.obj) {
	case JF_O_ROOT:
		subdirs[0] = "cluster"; subobj[0] = JF_O_CLUSTER;
		subdirs[1] = "queues"; subobj[1] = JF_O_QUEUES;
		subdirs[2] = "tasks"; subobj[2] = JF_O_BATCHES;
		subdirs[3] = "billing"; subobj[3] = JF_O_BILLING;
		nsub = 4;
		break;
	case JF_O_CLUSTER:
		subdirs[0] = "machines"; subobj[0] = JF_O_MACHINES;
		nsub = 1;
		break;
	case JF_O_QUEUE:
		subdirs[0] = "groups"; subobj[0] = JF_O_GROUPS;
		nsub = 1;
		break;
	case JF_O_GROUP:
		have_g = jf_group_get(fs->st, i.id, &g) == JF_OK;
		if (have_g && g.kind == JF_KIND_GROUP) {
			subdirs[0] = "tasks"; subobj[0] = JF_O_TASKS;
			nsub = 1;
		}
		break;
	case JF_O_TASK:
		subdirs[0] = "nodes"; subobj[0] = JF_O_NODES;
		nsub = 1;
		break;
	default:
		break;
	}
	off_t k = 0;
	if (off <= k && !add(&d, ".", ino, S_IFDIR, k + 1))
		goto done;
	k++;
	if (off <= k && !add(&d, "..", FUSE_ROOT_ID, S_IFDIR, k + 1))
		goto done;
	k++;
	for (const enum jf_file *f = jf_obj_files(i.obj); *f != JF_F_DIR; f++, k++)
		if (off <= k && !add(&d, jf_file_name(*f), jf_ino_make(i.obj, i.id, *f), S_IFREG,
				     k + 1))
			goto done;
	for (int s = 0; s < nsub; s++, k++)
		if (off <= k && !add(&d, subdirs[s], jf_ino_make(subobj[s], i.id, JF_F_DIR),
				     S_IFDIR, k + 1))
			goto done;
	for (int s = 0; s < JF_SCRATCH_MAX; s++, k++) {
		struct scratch *sc = &fs->scratch[s];
		if (off <= k && sc->id && sc->parent_id == i.id &&
		    ((i.obj == JF_O_GROUP && sc->parent_obj == JF_O_GROUP) ||
		     (i.obj == JF_O_QUEUE && sc->parent_obj == JF_O_QUEUE)) &&
		    !add(&d, sc->name, jf_ino_make(JF_O_SCRATCH, sc->id, JF_F_DATA), S_IFREG, k + 1))
			goto done;
	}
	/* listed from the store, a page at a time */
	int64_t after = off > DIR_BASE ? off - DIR_BASE : 0;
	struct listing l = { &d, JF_O_NONE, NULL, after };
	switch (i.obj) {
	case JF_O_MACHINES: {
		const struct jf_cluster *c = jf_engine_cluster(fs->e);
		for (size_t m = (size_t)after; m < c->nmachines; m++)
			if (!add(&d, c->machines[m].name, jf_ino_make(JF_O_MACHINE, (int64_t)m + 1,
								       JF_F_DIR),
				 S_IFDIR, DIR_BASE + (off_t)m + 1))
				break;
		break;
	}
	case JF_O_QUEUES:
		l.obj = JF_O_QUEUE;
		while (!d.full) {
			int64_t before = l.last;
			jf_queue_list(fs->st, l.last, 256, list_named, &l);
			if (l.last == before)
				break;
		}
		break;
	case JF_O_GROUPS:
	case JF_O_BATCHES:
		l.obj = JF_O_GROUP;
		while (!d.full) {
			int64_t before = l.last;
			jf_group_list(fs->st, i.obj == JF_O_GROUPS ? i.id : 0,
				      i.obj == JF_O_GROUPS ? JF_KIND_GROUP : JF_KIND_BATCH, l.last, 256,
				      list_named, &l);
			if (l.last == before)
				break;
		}
		break;
	case JF_O_TASKS:
	case JF_O_GROUP:
		if (i.obj == JF_O_GROUP && !(have_g && g.kind == JF_KIND_BATCH))
			break;
		l.suffix = i.obj == JF_O_GROUP ? g.dirname : NULL;
		l.last = after - 1;
		while (!d.full) {
			int64_t before = l.last;
			jf_task_list(fs->st, i.id, l.last, 256, list_tasks, &l);
			if (l.last == before)
				break;
		}
		break;
	case JF_O_NODES: {
		struct jf_task_rec t;
		if (jf_task_get(fs->st, i.id, &t) != JF_OK)
			break;
		struct jf_group_rec tg;
		if (jf_group_get(fs->st, t.group_id, &tg) == JF_OK) {
			for (int64_t n = after; n < tg.nodes && n <= JF_NODE_MASK; n++) {
				char name[32];
				snprintf(name, sizeof(name), "%lld", (long long)n);
				if (!add(&d, name,
					 jf_ino_make(JF_O_NODE, (i.id << JF_NODE_BITS) | n, JF_F_DIR),
					 S_IFDIR, DIR_BASE + n + 1))
					break;
			}
			jf_group_release(&tg);
		}
		jf_task_release(&t);
		break;
	}
	default:
		break;
	}
done:
	if (have_g)
		jf_group_release(&g);
	fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

/* ---- mkdir, rmdir, rename, create, unlink ---- */

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
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
	enum jf_err rc;
	int64_t id = 0;
	struct jf_ino c;
	switch (p.obj) {
	case JF_O_QUEUES:
		rc = jf_engine_mkqueue(fs->e, name, ctx->uid, ctx->gid, &id, &err);
		c = (struct jf_ino){ JF_O_QUEUE, id, JF_F_DIR };
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
	reply_entry(req, fs, &c);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	struct jf_error err;
	jf_error_clear(&err);
	if (!split(parent, &p) || jf_resolve(fs, &p, name, &c)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	enum jf_err rc;
	if (c.obj == JF_O_QUEUE && c.file == JF_F_DIR && p.obj == JF_O_QUEUES)
		rc = jf_engine_rmqueue(fs->e, c.id, &err);
	else if (c.obj == JF_O_GROUP && c.file == JF_F_DIR)
		rc = jf_engine_rmgroup(fs->e, c.id, &err);
	else
		rc = c.file == JF_F_DIR ? JF_EACCES : JF_EINVAL;
	fuse_reply_err(req, rc == JF_EINVAL ? ENOTDIR : jf_errno(rc));
}

static enum jf_err submit_text(struct jf_fs *fs, const struct jf_ino *spec_ino,
			       const char *text, size_t len, uid_t uid, gid_t gid)
{
	struct jf_error err;
	jf_error_clear(&err);
	if (spec_ino->obj == JF_O_QUEUE)
		return jf_engine_queue_spec(fs->e, spec_ino->id, text, len, &err);
	return jf_engine_submit(fs->e, spec_ino->id, text, len, uid, gid, &err);
}

static void scratch_free(struct scratch *s)
{
	free(s->data);
	memset(s, 0, sizeof(*s));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, np, c;
	struct jf_error err;
	jf_error_clear(&err);
	if (!split(parent, &p) || !split(newparent, &np) || jf_resolve(fs, &p, name, &c)) {
		fuse_reply_err(req, ENOENT);
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
			enum jf_err rc = submit_text(fs, &spec, s->data ? s->data : "", s->len,
						     ctx->uid, ctx->gid);
			if (rc == JF_OK)
				scratch_free(s);
			fuse_reply_err(req, jf_errno(rc));
			return;
		}
		if (jf_file_lookup(p.obj, newname) != JF_F_DIR || !strcmp(newname, "tasks") ||
		    !strcmp(newname, "groups")) {
			fuse_reply_err(req, EACCES);
			return;
		}
		struct scratch *other = jf_scratch_find(fs, p.obj, p.id, newname);
		if (other && other != s)
			scratch_free(other);
		snprintf(s->name, sizeof(s->name), "%s", newname);
		fuse_reply_err(req, 0);
		return;
	}
	if (c.obj == JF_O_GROUP && c.file == JF_F_DIR &&
	    (p.obj == JF_O_GROUPS || p.obj == JF_O_BATCHES)) {
		if (np.obj != p.obj || np.id != p.id) {
			fuse_reply_err(req, EXDEV);
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

static struct fh *fh_new(enum fh_kind kind, const struct jf_ino *ino)
{
	struct fh *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->kind = kind;
	h->ino = *ino;
	h->fd = -1;
	return h;
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
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
	struct jf_error err;
	if (strlen(name) > 200 || (!jf_name_valid(name, &err) && name[0] != '.')) {
		fuse_reply_err(req, EINVAL);
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
	struct fh *h = fh_new(FH_SCRATCH, &c);
	if (!h) {
		scratch_free(s);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	jf_stat(fs, &c, &e.attr);
	e.ino = e.attr.st_ino;
	e.attr_timeout = 0;
	e.entry_timeout = 0;
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) != 0)
		free(h);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	if (!split(parent, &p) || jf_resolve(fs, &p, name, &c)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (c.obj != JF_O_SCRATCH) {
		fuse_reply_err(req, c.file == JF_F_DIR ? EISDIR : EACCES);
		return;
	}
	struct scratch *s = jf_scratch_get(fs, c.id);
	if (s)
		scratch_free(s);
	fuse_reply_err(req, 0);
}

/* ---- open, read, write, flush, release ---- */

static enum jf_scope events_scope(struct jf_fs *fs, const struct jf_ino *i, int64_t *id)
{
	*id = i->id;
	switch (i->obj) {
	case JF_O_QUEUE: return JF_SCOPE_QUEUE;
	case JF_O_GROUP: return JF_SCOPE_GROUP;
	case JF_O_TASK: return JF_SCOPE_TASK;
	case JF_O_NODE: {
		struct jf_node_rec n;
		if (jf_node_find(fs->st, i->id >> JF_NODE_BITS, i->id & JF_NODE_MASK, &n) != JF_OK) {
			*id = 0;
		} else {
			*id = n.id;
			jf_node_release(&n);
		}
		return JF_SCOPE_NODE;
	}
	default:
		*id = 0;
		return JF_SCOPE_ALL;
	}
}

static int spec_writable(struct jf_fs *fs, const struct jf_ino *i)
{
	if (i->obj == JF_O_QUEUE)
		return 0;
	struct jf_group_rec g;
	if (jf_group_get(fs->st, i->id, &g) != JF_OK)
		return ENOENT;
	int rc = (g.state == JF_ST_DRAFT || g.state == JF_ST_INVALID) ? 0 : EROFS;
	jf_group_release(&g);
	return rc;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	if (!split(ino, &i) || i.file == JF_F_DIR) {
		fuse_reply_err(req, i.file == JF_F_DIR ? EISDIR : ENOENT);
		return;
	}
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int acc = fi->flags & O_ACCMODE;
	bool writing = acc != O_RDONLY;
	struct fh *h = NULL;
	if (writing && fs->nt && ctx->pid == jf_notifier_tid(fs->nt)) {
		h = fh_new(FH_TOUCH, &i);
		goto opened;
	}
	if (writing) {
		int rc = 0;
		if (i.file == JF_F_SPEC)
			rc = spec_writable(fs, &i);
		else if (i.file != JF_F_CTL && i.file != JF_F_DATA)
			rc = EACCES;
		if (rc) {
			fuse_reply_err(req, rc);
			return;
		}
		enum fh_kind k = i.file == JF_F_SPEC ? FH_SPEC
				 : i.file == JF_F_CTL ? FH_CTL
						      : FH_SCRATCH;
		h = fh_new(k, &i);
		if (!h)
			goto nomem;
		h->uid = ctx->uid;
		h->gid = ctx->gid;
		if (k == FH_SPEC && !(fi->flags & O_TRUNC)) {
			/* O_APPEND or in-place edits start from what is there */
			char *cur = NULL;
			size_t n = 0;
			if (jf_render(fs, &i, &cur, &n) == 0) {
				h->buf = cur;
				h->len = h->cap = n;
			}
		}
		goto opened;
	}
	switch (i.file) {
	case JF_F_EVENTS:
		h = fh_new(FH_EVENTS, &i);
		break;
	case JF_F_LOGS:
	case JF_F_STDOUT:
	case JF_F_STDERR:
	case JF_F_LOGS_PREV: {
		char path[4096];
		jf_log_path(fs, &i, path, sizeof(path));
		int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		h = fh_new(fd >= 0 ? FH_FILE : FH_EMPTY, &i);
		if (h)
			h->fd = fd;
		else if (fd >= 0)
			close(fd);
		break;
	}
	case JF_F_WATCH: {
		h = fh_new(FH_WATCH, &i);
		if (!h)
			break;
		h->w = calloc(1, sizeof(*h->w));
		if (!h->w) {
			free(h);
			h = NULL;
			break;
		}
		h->w->scope = events_scope(fs, &i, &h->w->id);
		if (i.obj == JF_O_NODE && !h->w->id) {
			/* a node that never ran: watch its task, the node appears there */
			h->w->scope = JF_SCOPE_TASK;
			h->w->id = i.id >> JF_NODE_BITS;
		}
		jf_event_size(fs->st, h->w->scope, h->w->id, &h->w->off);
		h->w->next = fs->watchers;
		fs->watchers = h->w;
		fi->nonseekable = 1;
		break;
	}
	case JF_F_DATA:
		h = fh_new(FH_SCRATCH, &i);
		break;
	default: {
		h = fh_new(FH_SNAPSHOT, &i);
		if (!h)
			break;
		/* serve what getattr just measured (see jf_cached_render) */
		int rc = ENOMEM;
		const struct cached *c = jf_cached_render(fs, &i, &rc);
		h->buf = c ? malloc(c->len + 1) : NULL;
		if (!h->buf) {
			free(h);
			fuse_reply_err(req, rc);
			return;
		}
		memcpy(h->buf, c->data, c->len);
		h->len = c->len;
		break;
	}
	}
opened:
	if (!h)
		goto nomem;
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) != 0) {
		/* the opener went away: release will not come */
		if (h->w) {
			for (struct watcher **pp = &fs->watchers; *pp; pp = &(*pp)->next)
				if (*pp == h->w) {
					*pp = h->w->next;
					break;
				}
			free(h->w);
		}
		if (h->fd >= 0)
			close(h->fd);
		free(h->buf);
		free(h);
	}
	return;
nomem:
	fuse_reply_err(req, ENOMEM);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	switch (h->kind) {
	case FH_SNAPSHOT:
	case FH_SPEC:
	case FH_CTL:
		if ((size_t)off >= h->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, h->buf + off,
				       size < h->len - (size_t)off ? size : h->len - (size_t)off);
		return;
	case FH_SCRATCH: {
		struct scratch *s = jf_scratch_get(fs, h->ino.id);
		if (!s || (size_t)off >= s->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, s->data + off,
				       size < s->len - (size_t)off ? size : s->len - (size_t)off);
		return;
	}
	case FH_EVENTS: {
		int64_t id;
		enum jf_scope sc = events_scope(fs, &h->ino, &id);
		char *buf = malloc(size ? size : 1);
		size_t got = 0;
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		if (id)
			jf_event_read(fs->st, sc, id, off, buf, size, &got);
		fuse_reply_buf(req, buf, got);
		free(buf);
		return;
	}
	case FH_FILE: {
		char *buf = malloc(size ? size : 1);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		ssize_t n = pread(h->fd, buf, size, off);
		if (n < 0)
			fuse_reply_err(req, errno);
		else
			fuse_reply_buf(req, buf, (size_t)n);
		free(buf);
		return;
	}
	case FH_WATCH:
		jf_watch_read(fs, req, h->w, size);
		return;
	case FH_EMPTY:
	case FH_TOUCH:
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_err(req, EIO);
}

static int grow(char **buf, size_t *cap, size_t need, size_t limit)
{
	if (need > limit)
		return EFBIG;
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 4096;
	while (ncap < need)
		ncap *= 2;
	if (ncap > limit)
		ncap = limit;
	char *p = realloc(*buf, ncap + 1);
	if (!p)
		return ENOMEM;
	*buf = p;
	*cap = ncap;
	return 0;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	if (h->kind == FH_TOUCH) {
		fuse_reply_write(req, size);
		return;
	}
	if (h->kind == FH_SCRATCH) {
		struct scratch *s = jf_scratch_get(fs, h->ino.id);
		if (!s) {
			fuse_reply_err(req, ENOENT);
			return;
		}
		size_t cap = s->data ? s->len : 0;
		char *buf = s->data;
		size_t end = (size_t)off + size;
		size_t have = s->len;
		/* scratch buffers are sized exactly: grow to end */
		if (end > have) {
			if (end > SCRATCH_MAX_BYTES) {
				fuse_reply_err(req, EFBIG);
				return;
			}
			char *p = realloc(buf, end + 1);
			if (!p) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
			memset(p + have, 0, end - have);
			s->data = p;
			s->len = end;
		}
		(void)cap;
		memcpy(s->data + off, data, size);
		s->mtime_ms = jf_engine_now(fs->e);
		fuse_reply_write(req, size);
		return;
	}
	if (h->kind != FH_SPEC && h->kind != FH_CTL) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (h->poisoned) {
		fuse_reply_err(req, h->poison_errno);
		return;
	}
	size_t limit = h->kind == FH_SPEC ? JF_SPEC_MAX_BYTES : CTL_MAX;
	size_t end = (size_t)off + size;
	int rc = grow(&h->buf, &h->cap, end, limit);
	if (rc) {
		if (h->kind == FH_SPEC && rc == EFBIG && h->ino.obj == JF_O_GROUP) {
			struct jf_error why;
			jf_error_set(&why, JF_EFBIG, 0,
				     "spec is larger than %d bytes: refused while writing",
				     JF_SPEC_MAX_BYTES);
			jf_engine_refuse(fs->e, h->ino.id, h->buf ? h->buf : "",
					 h->len < 4096 ? h->len : 4096, &why);
			h->poisoned = true;
			h->poison_errno = EFBIG;
		}
		fuse_reply_err(req, rc);
		return;
	}
	if ((size_t)off > h->len)
		memset(h->buf + h->len, 0, (size_t)off - h->len);
	memcpy(h->buf + off, data, size);
	if (end > h->len)
		h->len = end;
	h->dirty = true;
	if (h->kind == FH_SPEC) {
		struct jf_error why;
		jf_error_clear(&why);
		if (!jf_spec_text_plausible(h->buf, h->len, &why)) {
			if (h->ino.obj == JF_O_GROUP)
				jf_engine_refuse(fs->e, h->ino.id, "", 0, &why);
			h->poisoned = true;
			h->poison_errno = EINVAL;
			fuse_reply_err(req, EINVAL);
			return;
		}
	}
	fuse_reply_write(req, size);
}

static int act(struct jf_fs *fs, struct fh *h)
{
	if (h->poisoned)
		return h->poison_errno;
	if (!h->dirty)
		return 0;
	h->dirty = false;
	struct jf_error err;
	jf_error_clear(&err);
	if (h->kind == FH_SPEC)
		return jf_errno(submit_text(fs, &h->ino, h->buf ? h->buf : "", h->len, h->uid, h->gid));
	if (h->kind == FH_CTL) {
		char verb[CTL_MAX + 1];
		size_t n = h->len < CTL_MAX ? h->len : CTL_MAX;
		memcpy(verb, h->buf, n);
		verb[n] = '\0';
		/* one verb, surrounding blanks ignored */
		char *s = verb;
		while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
			s++;
		char *e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
			*--e = '\0';
		int64_t group_id = h->ino.obj == JF_O_GROUP ? h->ino.id : 0;
		int64_t task_id = 0;
		if (h->ino.obj == JF_O_TASK) {
			struct jf_task_rec t;
			if (jf_task_get(fs->st, h->ino.id, &t) != JF_OK)
				return ENOENT;
			group_id = t.group_id;
			task_id = t.id;
			jf_task_release(&t);
		}
		enum jf_err rc = jf_engine_ctl(fs->e, group_id, task_id, s, &err);
		h->len = 0;
		return jf_errno(rc);
	}
	return 0;
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	fuse_reply_err(req, act(FS(req), h));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	act(fs, h);
	if (h->w) {
		for (struct watcher **pp = &fs->watchers; *pp; pp = &(*pp)->next)
			if (*pp == h->w) {
				*pp = h->w->next;
				break;
			}
		if (h->w->pending)
			fuse_reply_err(h->w->pending, EINTR);
		if (h->w->ph)
			fuse_pollhandle_destroy(h->w->ph);
		free(h->w);
	}
	if (h->fd >= 0)
		close(h->fd);
	free(h->buf);
	free(h);
	fuse_reply_err(req, 0);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	if (h->kind != FH_WATCH) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, POLLIN | POLLOUT);
		return;
	}
	int64_t size = 0;
	jf_event_size(fs->st, h->w->scope, h->w->id, &size);
	if (ph) {
		if (h->w->ph)
			fuse_pollhandle_destroy(h->w->ph);
		h->w->ph = ph;
	}
	fuse_reply_poll(req, size > h->w->off || jf_watch_finished(fs, h->w) ? POLLIN : 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs s;
	memset(&s, 0, sizeof(s));
	s.f_bsize = 4096;
	s.f_frsize = 4096;
	s.f_namemax = 255;
	fuse_reply_statfs(req, &s);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* keep the kernel from caching reads past what we say */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
}

const struct fuse_lowlevel_ops jf_fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.unlink = op_unlink,
	.rename = op_rename,
	.create = op_create,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.readdir = op_readdir,
	.statfs = op_statfs,
	.poll = op_poll,
};

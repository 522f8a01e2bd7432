/*
 * ops.c - the FUSE low-level operations: lookup, attributes, directory
 * listings, and the table that names every operation.
 *
 * ops_write.c has mkdir, rmdir, rename, create and unlink; ops_file.c has
 * open, read, write, flush, release and poll.
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
#include "fs/images.h"

#define CTL_MAX           256
#define SCRATCH_MAX_BYTES JF_SPEC_MAX_BYTES
#define DIR_BASE          64 /* readdir offsets below this are fixed entries */

/*
 * The entry the kernel is handed for c, as reader: 0 or an errno.  Its
 * timeouts are 0 where the kernel must ask again each time (below).
 */
static int entry_param(struct jf_fs *fs, const struct jf_ino *c, uid_t reader,
		       struct fuse_entry_param *e)
{
	struct jf_obj_info in;
	memset(e, 0, sizeof(*e));
	int rc = jf_obj_info(fs, c, &in);
	if (!rc)
		rc = jf_stat_info(fs, c, &in, reader, &e->attr);
	if (rc)
		return rc;
	e->ino = e->attr.st_ino;
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->attr_timeout;
	if (jf_file_per_reader(c))
		e->attr_timeout = 0; /* its size is the asker's */
	if (c->obj == JF_O_SCRATCH ||
	    (in.perm.private_ && !(c->obj == JF_O_QUEUE && c->file == JF_F_DIR))) {
		/*
		 * An editor's temp file is renamed onto spec.yaml: the kernel then
		 * keeps the temp file's dentry under the new name.  Not caching it
		 * makes the next lookup find the real spec.yaml at once.
		 *
		 * Inside a private queue: the kernel walks cached entries without
		 * asking us, for any user; uncached, every walk comes to lookup,
		 * which refuses the users who may not see in.
		 */
		e->attr_timeout = 0;
		e->entry_timeout = 0;
	}
	return 0;
}

void jf_reply_entry(fuse_req_t req, struct jf_fs *fs, const struct jf_ino *c)
{
	struct fuse_entry_param e;
	int rc = entry_param(fs, c, fuse_req_ctx(req)->uid, &e);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	jf_ino_looked(fs, e.ino);
	fuse_reply_entry(req, &e);
}

static void jf_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino p, c;
	if (!split(parent, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* a task directory whose IN_CREATE the toucher raises: it is not
	 * there for the toucher until its mkdir (toucher.h) */
	if (p.obj == JF_O_TASKS && jf_from_toucher(req) && jf_ino_creating(fs, p.id, name, false)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int rc = jf_perm_req(fs, req, &p, JF_PERM_READ);
	if (!rc)
		rc = jf_resolve(fs, &p, name, &c);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	jf_reply_entry(req, fs, &c);
}

static void jf_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	jf_ino_forget(FS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void jf_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	struct stat sb;
	if (!split(ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int rc = jf_perm_req(fs, req, &i, JF_PERM_LOOKUP);
	if (!rc)
		rc = jf_stat(fs, &i, fuse_req_ctx(req)->uid, &sb);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_attr(req, &sb, jf_file_per_reader(&i) ? 0 : fs->attr_timeout);
}

/*
 * setattr by someone other than the owner: a size is a write (EACCES), a
 * mode, an owner or a given time is the owner's alone (EPERM, as chmod
 * says), "now" needs write access (EACCES, as touch says).
 */
static int setattr_allowed(fuse_req_t req, struct jf_fs *fs, const struct jf_ino *i, int to_set,
			   struct fuse_file_info *fi)
{
	int rc = jf_perm_req(fs, req, i, JF_PERM_LOOKUP);
	if (rc)
		return rc;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = jf_perm_req(fs, req, i, JF_PERM_WRITE);
		if (!rc && i->file == JF_F_SPEC && !(fi && fi->fh))
			rc = jf_spec_writable(fs, i);
		/* an open spec accepted meanwhile: its flush says so */
		if (rc == EROFS && fi && fi->fh)
			rc = 0;
		if (rc == EROFS) {
			jf_warn_spec_locked(fs, i, "truncated");
			rc = EACCES;
		}
		if (rc)
			return rc;
	}
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |
		      FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_CTIME)) {
		rc = jf_perm_req(fs, req, i, JF_PERM_OWN);
		int given = to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
		if ((to_set & FUSE_SET_ATTR_ATIME) && !(to_set & FUSE_SET_ATTR_ATIME_NOW))
			given = 1;
		if ((to_set & FUSE_SET_ATTR_MTIME) && !(to_set & FUSE_SET_ATTR_MTIME_NOW))
			given = 1;
		if (rc == EACCES && given)
			rc = EPERM;
	}
	return rc;
}

void jf_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	if (!split(ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int prc = setattr_allowed(req, fs, &i, to_set, fi);
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	/* a mode or an owner other than the one shown cannot be kept: say so
	 * (EPERM, as on a file one may not chmod), but let cp -p and rsync
	 * -a give a file the mode and owner it has */
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		struct stat cur;
		int rc = jf_stat(fs, &i, fuse_req_ctx(req)->uid, &cur);
		if (rc) {
			fuse_reply_err(req, rc);
			return;
		}
		bool same = true;
		if ((to_set & FUSE_SET_ATTR_MODE) && i.file != JF_F_DATA)
			same = (attr->st_mode & 07777) == (cur.st_mode & 07777);
		if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != cur.st_uid)
			same = false;
		if ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != cur.st_gid)
			same = false;
		if (!same) {
			fuse_reply_err(req, EPERM);
			return;
		}
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && i.file == JF_F_SPEC && !(fi && fi->fh)) {
		/* truncate(1) of a draft: the draft becomes its first size bytes */
		int rc = jf_spec_truncate(fs, &i, attr->st_size, fuse_req_ctx(req));
		if (rc) {
			fuse_reply_err(req, rc);
			return;
		}
	} else if (to_set & FUSE_SET_ATTR_SIZE) {
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
			if (h->kind == FH_SPEC && (size_t)attr->st_size > h->len) {
				/* what would follow is NUL bytes, never a spec */
				fuse_reply_err(req, EINVAL);
				return;
			}
			if ((h->kind == FH_SPEC || h->kind == FH_CTL) &&
			    (size_t)attr->st_size < h->len) {
				h->len = (size_t)attr->st_size;
				/* ftruncate(fd, 0) and nothing written: an empty spec */
				h->dirty = h->kind == FH_SPEC ? true : h->dirty;
			}
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
	/* times: accepted and ignored (touch, cp -p, sed -i work) */
	struct stat sb;
	int rc = jf_stat(fs, &i, fuse_req_ctx(req)->uid, &sb);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	double timeout = jf_file_per_reader(&i) ? 0 : fs->attr_timeout;
	if ((to_set & FUSE_SET_ATTR_SIZE) && fi && fi->fh) {
		/* an open spec or ctl holds its text until close: its size is
		 * the handle's, and not for the cache (the close submits it) */
		struct fh *h = (struct fh *)(uintptr_t)fi->fh;
		if (h->kind == FH_SPEC || h->kind == FH_CTL) {
			sb.st_size = (off_t)h->len;
			timeout = 0;
		}
	}
	fuse_reply_attr(req, &sb, timeout);
}

/* ---- directories ---- */

struct dirbuf {
	fuse_req_t req;
	struct jf_fs *fs;
	char *buf;
	size_t size, used;
	bool full;
	bool plus;     /* readdirplus: each entry with its attributes */
	int64_t tasks; /* JF_O_TASKS: the group's id (creating, notify.c) */
};

/*
 * The attributes of an entry of a readdirplus, which the kernel then
 * holds as if looked up: ino 0 where it must not (the entry is gone, or
 * is never cached, or the toucher is about to raise its IN_CREATE: a
 * dentry made now would make the toucher's mkdir EEXIST).
 */
static void plus_param(struct dirbuf *d, const char *name, uint64_t ino, mode_t mode,
		       struct fuse_entry_param *e)
{
	struct jf_ino c;
	bool dots = name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
	if (dots || !jf_ino_split(ino, &c) ||
	    (d->tasks && jf_ino_creating(d->fs, d->tasks, name, false)) ||
	    entry_param(d->fs, &c, fuse_req_ctx(d->req)->uid, e) != 0 || e->entry_timeout == 0) {
		memset(e, 0, sizeof(*e));
		e->attr.st_ino = ino;
		e->attr.st_mode = mode;
	}
}

static bool add(struct dirbuf *d, const char *name, uint64_t ino, mode_t mode, off_t next)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	size_t need;
	if (d->plus) {
		plus_param(d, name, ino, mode, &e);
		need = fuse_add_direntry_plus(d->req, NULL, 0, name, NULL, 0);
	} else {
		e.attr.st_ino = ino;
		e.attr.st_mode = mode;
		need = fuse_add_direntry(d->req, NULL, 0, name, NULL, 0);
	}
	if (d->used + need > d->size) {
		d->full = true;
		return false;
	}
	if (d->plus)
		fuse_add_direntry_plus(d->req, d->buf + d->used, d->size - d->used, name, &e, next);
	else
		fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, &e.attr, next);
	d->used += need;
	/* the kernel counts a lookup of every entry readdirplus gave it an inode of */
	if (d->plus && e.ino)
		jf_ino_looked(d->fs, e.ino);
	return true;
}

struct listing {
	struct dirbuf *d;
	enum jf_obj obj;
	const char *suffix; /* batch children: "-<name>" */
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

static int list_tasks(void *ctx, int64_t id, int64_t idx, const char *display)
{
	struct listing *l = ctx;
	char name[128];
	if (display)
		snprintf(name, sizeof(name), "%s", display);
	else if (l->suffix)
		snprintf(name, sizeof(name), "%lld-%s", (long long)idx + 1, l->suffix);
	else
		snprintf(name, sizeof(name), "%lld", (long long)idx);
	if (!add(l->d, name, jf_ino_make(JF_O_TASK, id, JF_F_DIR), S_IFDIR, DIR_BASE + idx + 1))
		return 1;
	l->last = idx;
	return 0;
}

/* attempts/: each attempt by its number (offsets follow the numbers) */
static int list_attempts(void *ctx, int64_t id, int64_t attempt)
{
	struct listing *l = ctx;
	char name[32];
	snprintf(name, sizeof(name), "%lld", (long long)attempt);
	if (!add(l->d, name, jf_ino_make(JF_O_ATTEMPT, id, JF_F_DIR), S_IFDIR, DIR_BASE + attempt))
		return 1;
	l->last = attempt;
	return 0;
}

static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	if (!split(ino, &i) || i.file != JF_F_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	struct stat sb;
	int rc = jf_perm_req(fs, req, &i, JF_PERM_READ);
	if (!rc)
		rc = jf_stat(fs, &i, fuse_req_ctx(req)->uid, &sb);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	struct dirbuf d = { req, fs,    malloc(size), size,
			    0,   false, plus,         i.obj == JF_O_TASKS ? i.id : 0 };
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* fixed entries: ".", "..", files, fixed subdirectories, scratch files */
	const char *subdirs[7] = { 0 };
	enum jf_obj subobj[7] = { 0 };
	int nsub = 0;
	struct jf_group_rec g;
	bool have_g = false;
	switch (i.obj) {
	case JF_O_ROOT:
		subdirs[0] = "cluster";
		subobj[0] = JF_O_CLUSTER;
		subdirs[1] = "queues";
		subobj[1] = JF_O_QUEUES;
		subdirs[2] = "tasks";
		subobj[2] = JF_O_BATCHES;
		subdirs[3] = "billing";
		subobj[3] = JF_O_BILLING;
		subdirs[4] = "images";
		subobj[4] = JF_O_IMAGES;
		subdirs[5] = "volumes";
		subobj[5] = JF_O_VOLUMES;
		subdirs[6] = "objects";
		subobj[6] = JF_O_OBJECTS;
		nsub = 7;
		break;
	case JF_O_CLUSTER:
		subdirs[0] = "machines";
		subobj[0] = JF_O_MACHINES;
		nsub = 1;
		break;
	case JF_O_QUEUE:
		subdirs[0] = "groups";
		subobj[0] = JF_O_GROUPS;
		nsub = 1;
		break;
	case JF_O_GROUP:
		have_g = jf_group_get(ST(fs), i.id, &g) == JF_OK;
		if (have_g && g.kind == JF_KIND_GROUP) {
			subdirs[0] = "tasks";
			subobj[0] = JF_O_TASKS;
			nsub = 1;
		}
		break;
	case JF_O_TASK:
		subdirs[0] = "nodes";
		subobj[0] = JF_O_NODES;
		nsub = 1;
		break;
	case JF_O_NODE:
		subdirs[0] = "attempts";
		subobj[0] = JF_O_ATTEMPTS;
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
	/* an unlisted file keeps its offset, so offsets mean the same either way */
	for (const enum jf_file *f = jf_obj_files(i.obj); *f != JF_F_DIR; f++, k++)
		if (off <= k && jf_file_listed(*f) &&
		    !add(&d, jf_file_name(*f), jf_ino_make(i.obj, i.id, *f),
			 *f == JF_F_LINK ? S_IFLNK : S_IFREG, k + 1))
			goto done;
	for (int s = 0; s < nsub; s++, k++)
		if (off <= k &&
		    !add(&d, subdirs[s], jf_ino_make(subobj[s], i.id, JF_F_DIR), S_IFDIR, k + 1))
			goto done;
	for (int s = 0; s < JF_SCRATCH_MAX; s++, k++) {
		struct scratch *sc = &fs->scratch[s];
		if (off <= k && sc->id && sc->parent_id == i.id &&
		    ((i.obj == JF_O_GROUP && sc->parent_obj == JF_O_GROUP) ||
		     (i.obj == JF_O_QUEUE && sc->parent_obj == JF_O_QUEUE)) &&
		    !add(&d, sc->name, jf_ino_make(JF_O_SCRATCH, sc->id, JF_F_DATA), S_IFREG,
			 k + 1))
			goto done;
	}
	/* listed from the store, a page at a time */
	int64_t after = off > DIR_BASE ? off - DIR_BASE : 0;
	struct listing l = { &d, JF_O_NONE, NULL, after };
	switch (i.obj) {
	case JF_O_MACHINES: {
		/* held across the page: names and count change under Slurm (engine.h) */
		jf_engine_view_lock(fs->e);
		const struct jf_cluster *c = jf_engine_cluster(fs->e);
		for (size_t m = (size_t)after; m < c->nmachines; m++)
			if (!add(&d, c->machines[m].name,
				 jf_ino_make(JF_O_MACHINE, (int64_t)m + 1, JF_F_DIR), S_IFDIR,
				 DIR_BASE + (off_t)m + 1))
				break;
		jf_engine_view_unlock(fs->e);
		break;
	}
	case JF_O_IMAGES:
		/* read from the cache on disk, which other processes change */
		l.obj = JF_O_IMAGE;
		jf_images_list(fs, after, list_named, &l);
		break;
	case JF_O_VOLUMES:
	case JF_O_OBJECTS:
		l.obj = i.obj == JF_O_VOLUMES ? JF_O_VOLUME : JF_O_OBJSRC;
		while (!d.full) {
			int64_t before = l.last;
			jf_stor_list(ST(fs), i.obj == JF_O_VOLUMES ? JF_SK_VOLUME : JF_SK_OBJECT,
				     l.last, 256, list_named, &l);
			if (l.last == before)
				break;
		}
		break;
	case JF_O_QUEUES:
		l.obj = JF_O_QUEUE;
		while (!d.full) {
			int64_t before = l.last;
			jf_queue_list(ST(fs), l.last, 256, list_named, &l);
			if (l.last == before)
				break;
		}
		break;
	case JF_O_GROUPS:
	case JF_O_BATCHES:
		l.obj = JF_O_GROUP;
		while (!d.full) {
			int64_t before = l.last;
			jf_group_list(ST(fs), i.obj == JF_O_GROUPS ? i.id : 0,
				      i.obj == JF_O_GROUPS ? JF_KIND_GROUP : JF_KIND_BATCH, l.last,
				      256, list_named, &l);
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
			jf_task_list_named(ST(fs), i.id, l.last, 256, list_tasks, &l);
			if (l.last == before)
				break;
		}
		break;
	case JF_O_ATTEMPTS: {
		struct jf_node_rec n;
		if (jf_node_find(ST(fs), i.id >> JF_NODE_BITS, i.id & JF_NODE_MASK, &n) != JF_OK)
			break; /* never ran: none */
		while (!d.full) {
			int64_t before = l.last;
			jf_attempt_list(ST(fs), n.id, l.last, 256, list_attempts, &l);
			if (l.last == before)
				break;
		}
		jf_node_release(&n);
		break;
	}
	case JF_O_NODES: {
		struct jf_task_rec t;
		if (jf_task_get(ST(fs), i.id, &t) != JF_OK)
			break;
		struct jf_group_rec tg;
		if (jf_group_get(ST(fs), t.group_id, &tg) == JF_OK) {
			for (int64_t n = after; n < tg.nodes && n <= JF_NODE_MASK; n++) {
				char name[32];
				snprintf(name, sizeof(name), "%lld", (long long)n);
				if (!add(&d, name,
					 jf_ino_make(JF_O_NODE, (i.id << JF_NODE_BITS) | n,
						     JF_F_DIR),
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

static void jf_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, false);
}

/* A listing with every entry's attributes: `ls -l` of N entries is one
 * request a page of entries, not one lookup each besides. */
static void jf_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			      struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, true);
}

/* access(2), `test -r`, `[ -w ]`, chdir: the rules of perm.h, admins included
 * (no one writes a status file or an accepted spec, no file is executable). */
static void jf_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	struct jf_obj_info in;
	if (!split(ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int rc = jf_obj_info(fs, &i, &in);
	if (!rc)
		rc = jf_perm_access(&fs->perm, &in.perm, fuse_req_ctx(req)->uid, mask);
	/* an accepted spec is not writable, like any file one may not write */
	fuse_reply_err(req, rc == EROFS ? EACCES : rc);
}

/* Links, symlinks and device nodes: the tree holds only what jobfs makes.
 * EPERM, as a filesystem says that does not allow the kind of file
 * (ENOSYS would read as a missing feature). */
static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EPERM);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
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
	/*
	 * Every listing comes with its entries' attributes (readdirplus), not
	 * only the first page of it: what lists a directory of the tree then
	 * looks into it (ls -l, a glob then open, find), and each entry would
	 * otherwise cost a LOOKUP round trip of its own.
	 */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
}

/* A volume's data: the path of its directory on this host. */
static void jf_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct jf_fs *fs = FS(req);
	struct jf_ino i;
	if (!split(ino, &i) || i.file != JF_F_LINK) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	int rc = jf_perm_req(fs, req, &i, JF_PERM_LOOKUP);
	struct jf_obj_info in;
	if (!rc)
		rc = jf_obj_info(fs, &i, &in);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	char target[4096];
	jf_link_target(fs, &i, target, sizeof(target));
	fuse_reply_readlink(req, target);
}

const struct fuse_lowlevel_ops jf_fs_ops = {
	.init = op_init,
	.lookup = jf_op_lookup,
	.forget = jf_op_forget,
	.getattr = jf_op_getattr,
	.readlink = jf_op_readlink,
	.setattr = jf_fwd_setattr,
	.mkdir = jf_fwd_mkdir,
	.rmdir = jf_fwd_rmdir,
	.unlink = jf_fwd_unlink,
	.rename = jf_fwd_rename,
	.create = jf_fwd_create,
	.symlink = op_symlink,
	.link = op_link,
	.mknod = op_mknod,
	.open = jf_fwd_open,
	.read = jf_op_read,
	.write = jf_fwd_write,
	.flush = jf_fwd_flush,
	.release = jf_fwd_release,
	.readdir = jf_op_readdir,
	.readdirplus = jf_op_readdirplus,
	.statfs = op_statfs,
	.access = jf_op_access,
	.poll = jf_op_poll,
};

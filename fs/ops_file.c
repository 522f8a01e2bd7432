/*
 * ops_file.c - open, read, write, flush, release and poll.
 *
 * Reads of rendered files serve the snapshot taken at open (the same bytes
 * stat measured moments before); events and logs are read fresh at their
 * offset, so `tail -f` sees growth.  Writes to spec.yaml and ctl are
 * buffered per open and acted on at flush (close); what no later write
 * could fix is refused at write() already.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <poll.h>

#include "backends/fault.h"
#include "core/ctl.h"
#include "core/lifecycle.h"
#include "core/names.h"
#include "core/spec.h"

#define CTL_MAX           256
#define SCRATCH_MAX_BYTES JF_SPEC_MAX_BYTES
#define DIR_BASE          64 /* readdir offsets below this are fixed entries */

/*
 * ---- log files: X.1 followed by X ----
 *
 * The shim rotates a log file X at its cap: X becomes X.1 (replacing the
 * one before) and a new, empty X is begun (tools/shim.c).  The tree shows
 * X.1 followed by X, and stat measures both (jf_log_size), so a read at
 * offset o comes from X.1 while o < size(X.1), then from X at o - size(X.1).
 * A handle holds both open (fd1, fd) and the inode X had when it opened
 * it.  Before each read it looks at X's path again: the same inode, nothing
 * happened; gone, a rotation is half done and the X it holds is X.1 now;
 * another inode, X was rotated since, and the pair is opened anew.  After
 * a rotation the file is shorter: `tail -f` says "file truncated" and goes
 * on from the start of what is kept.
 */

static bool same_file(int fd, const char *path)
{
	struct stat a, b;
	bool there = stat(path, &b) == 0;
	if (fd < 0)
		return !there;
	return there && fstat(fd, &a) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* Open X and X.1 as a pair: the two files the paths name at one instant
 * (a rotation in between is seen, and the pair opened again). */
static void log_reopen(struct fh *h)
{
	char old[4200];
	snprintf(old, sizeof(old), "%s.1", h->buf);
	for (int tries = 0; tries < 4; tries++) {
		if (h->fd >= 0)
			close(h->fd);
		if (h->fd1 >= 0)
			close(h->fd1);
		h->fd = open(h->buf, O_RDONLY | O_CLOEXEC);
		h->fd1 = open(old, O_RDONLY | O_CLOEXEC);
		struct stat sb;
		h->fino = h->fd >= 0 && fstat(h->fd, &sb) == 0 ? sb.st_ino : 0;
		if (same_file(h->fd, h->buf) && same_file(h->fd1, old))
			break;
	}
}

/* Catch up with the rotations since the last read. */
static void log_follow(struct fh *h)
{
	struct stat sb;
	if (stat(h->buf, &sb) == 0) {
		if (h->fd < 0 || sb.st_ino != h->fino)
			log_reopen(h);
		return;
	}
	/* X is gone: half-way through a rotation (ours is X.1 now), or the
	 * run directory was removed (keep serving what is open) */
	char old[4200];
	snprintf(old, sizeof(old), "%s.1", h->buf);
	if (h->fd >= 0 && same_file(h->fd, old)) {
		if (h->fd1 >= 0)
			close(h->fd1);
		h->fd1 = h->fd;
		h->fd = -1;
		h->fino = 0;
	} else if (h->fd < 0 && h->fd1 < 0) {
		h->fd1 = open(old, O_RDONLY | O_CLOEXEC);
	}
}

/* Up to size bytes of X.1 + X at off; -1 with errno on an error. */
static ssize_t log_read(struct fh *h, char *buf, size_t size, off_t off)
{
	struct stat sb;
	off_t size1 = h->fd1 >= 0 && fstat(h->fd1, &sb) == 0 ? sb.st_size : 0;
	size_t got = 0;
	if (off < size1) {
		size_t want = (size_t)(size1 - off) < size ? (size_t)(size1 - off) : size;
		ssize_t n = pread(h->fd1, buf, want, off);
		if (n < 0)
			return -1;
		got = (size_t)n;
		if (got < want)
			return (ssize_t)got;
	}
	if (got < size && h->fd >= 0) {
		ssize_t n = pread(h->fd, buf + got, size - got, off + (off_t)got - size1);
		if (n < 0)
			return got ? (ssize_t)got : -1;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* ---- open, read, write, flush, release ---- */

static enum jf_scope events_scope(struct jf_fs *fs, const struct jf_ino *i, int64_t *id)
{
	*id = i->id;
	switch (i->obj) {
	case JF_O_QUEUE:
		return JF_SCOPE_QUEUE;
	case JF_O_GROUP:
		return JF_SCOPE_GROUP;
	case JF_O_TASK:
		return JF_SCOPE_TASK;
	case JF_O_VOLUME:
	case JF_O_OBJSRC:
		return JF_SCOPE_STORE;
	case JF_O_NODE: {
		struct jf_node_rec n;
		if (jf_node_find(ST(fs), i->id >> JF_NODE_BITS, i->id & JF_NODE_MASK, &n) !=
		    JF_OK) {
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

int jf_spec_writable(struct jf_fs *fs, const struct jf_ino *i)
{
	if (i->obj == JF_O_QUEUE || i->obj == JF_O_VOLUME || i->obj == JF_O_OBJSRC)
		return 0;
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), i->id, &g) != JF_OK)
		return ENOENT;
	int rc = (g.state == JF_ST_DRAFT || g.state == JF_ST_INVALID) ? 0 : EROFS;
	jf_group_release(&g);
	return rc;
}

void jf_warn_spec_locked(struct jf_fs *fs, const struct jf_ino *i, const char *how)
{
	struct jf_group_rec g;
	if (i->obj != JF_O_GROUP || jf_group_get(ST(fs), i->id, &g) != JF_OK)
		return;
	char msg[320];
	snprintf(msg, sizeof(msg),
		 "spec.yaml not %s (EACCES): it is read-only once accepted (state %s); write "
		 "ctl (restart, stop) or make a new %s for a new spec",
		 how, jf_state_name(g.state), g.kind == JF_KIND_BATCH ? "batch" : "group");
	jf_group_release(&g);
	jf_engine_warn(fs->e, 0, i->id, "ReadOnly", msg);
}

int jf_spec_truncate(struct jf_fs *fs, const struct jf_ino *i, off_t size,
		     const struct fuse_ctx *ctx)
{
	char *cur = NULL;
	size_t n = 0;
	int rc = jf_render(fs, i, ctx->uid, &cur, &n);
	if (rc)
		return rc;
	if (size < 0 || (size_t)size > n) {
		/* what would follow is NUL bytes, never a spec */
		free(cur);
		return EINVAL;
	}
	if ((size_t)size < n)
		rc = jf_errno(jf_submit_text(fs, i, cur, (size_t)size, ctx->uid, ctx->gid));
	free(cur);
	return rc;
}

void jf_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
	if (writing && jf_from_toucher(req)) {
		/* the toucher's helper (toucher.h): no FLUSH at its close(), one
		 * round trip fewer per touch */
		fi->noflush = 1;
		if (jf_fault_hit("touch-hold")) {
			/* the crash test's moment: the notifier inside an open of
			 * ours, unanswered, when the daemon is killed */
			fprintf(stderr,
				"jobfs: fault touch-hold: the notifier's open of "
				"inode %" PRIu64 " is held\n",
				(uint64_t)ino);
			return;
		}
		h = jf_fh_new(FH_TOUCH, &i);
		goto opened;
	}
	/* perm.h: private queues for reading, the owner for writing */
	int prc = jf_perm_req(fs, req, &i, writing ? JF_PERM_WRITE : JF_PERM_READ);
	if (!prc && writing) {
		if (i.file == JF_F_SPEC)
			prc = jf_spec_writable(fs, &i);
		else if (i.file != JF_F_CTL && i.file != JF_F_DATA)
			prc = EACCES;
	}
	if (prc == EROFS) {
		/* EACCES, not EROFS: "Read-only file system" reads as if the
		 * whole mount were; the events say why */
		jf_warn_spec_locked(fs, &i, "written");
		prc = EACCES;
	}
	if (prc) {
		fuse_reply_err(req, prc);
		return;
	}
	if (writing) {
		enum fh_kind k = i.file == JF_F_SPEC  ? FH_SPEC
				 : i.file == JF_F_CTL ? FH_CTL
						      : FH_SCRATCH;
		h = jf_fh_new(k, &i);
		if (!h)
			goto nomem;
		h->uid = ctx->uid;
		h->gid = ctx->gid;
		/* `: > spec.yaml` writes nothing: it still empties a draft */
		h->dirty = k == FH_SPEC && (fi->flags & O_TRUNC);
		if (k == FH_SPEC && !(fi->flags & O_TRUNC)) {
			/* O_APPEND or in-place edits start from what is there */
			char *cur = NULL;
			size_t n = 0;
			if (jf_render(fs, &i, ctx->uid, &cur, &n) == 0) {
				h->buf = cur;
				h->len = h->cap = n;
			}
		}
		goto opened;
	}
	switch (i.file) {
	case JF_F_EVENTS:
		h = jf_fh_new(FH_EVENTS, &i);
		break;
	case JF_F_LOGS:
	case JF_F_STDOUT:
	case JF_F_STDERR:
	case JF_F_LOGS_PREV: {
		char path[4096];
		jf_log_path(fs, &i, path, sizeof(path));
		h = jf_fh_new(path[0] ? FH_FILE : FH_EMPTY, &i);
		if (h && path[0]) {
			h->fd1 = -1;
			h->buf = strdup(path);
			if (!h->buf) {
				free(h);
				h = NULL;
				break;
			}
			log_reopen(h); /* none there yet: the shim has not begun */
		}
		break;
	}
	case JF_F_WATCH: {
		h = jf_fh_new(FH_WATCH, &i);
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
		h->w->uid = fuse_req_ctx(req)->uid;
		h->w->off = jf_watch_start(fs, h->w->scope, h->w->id, h->w->uid);
		jf_fs_maps_lock(fs);
		h->w->next = fs->watchers;
		fs->watchers = h->w;
		jf_fs_maps_unlock(fs);
		fi->nonseekable = 1;
		break;
	}
	case JF_F_DATA:
		h = jf_fh_new(FH_SCRATCH, &i);
		break;
	default: {
		h = jf_fh_new(FH_SNAPSHOT, &i);
		if (!h)
			break;
		/* serve what getattr just measured (see jf_cached_render) */
		int rc = ENOMEM;
		const struct cached *c = jf_cached_render(fs, &i, fuse_req_ctx(req)->uid, &rc);
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
	/* a reading handle has nothing to act on at close: no FLUSH round trip */
	if (!writing)
		fi->noflush = 1;
	/* tracked first: once the reply is out, its release may come at once,
	 * on another reader */
	jf_fh_track(fs, h);
	if (fuse_reply_open(req, fi) != 0) {
		/* the opener went away: release will not come */
		jf_fh_untrack(fs, h);
		if (h->w) {
			jf_fs_maps_lock(fs);
			for (struct watcher **pp = &fs->watchers; *pp; pp = &(*pp)->next)
				if (*pp == h->w) {
					*pp = h->w->next;
					break;
				}
			jf_fs_maps_unlock(fs);
			free(h->w);
		}
		if (h->fd >= 0)
			close(h->fd);
		if (h->kind == FH_FILE && h->fd1 >= 0)
			close(h->fd1);
		free(h->buf);
		free(h);
		return;
	}
	return;
nomem:
	fuse_reply_err(req, ENOMEM);
}

void jf_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	enum fh_kind kind = h->kind;
	if (kind == FH_EMPTY) {
		/* it may be becoming FH_FILE in another read */
		pthread_mutex_lock(jf_fh_mu(fs, h));
		kind = h->kind;
		pthread_mutex_unlock(jf_fh_mu(fs, h));
	}
	switch (kind) {
	case FH_SNAPSHOT:
	case FH_SPEC:
	case FH_CTL: {
		/* the reply ends the reader's read(2) before it returns here: its
		 * close, and the release on another reader, must wait for that */
		pthread_mutex_t *mu = jf_fh_mu(fs, h);
		pthread_mutex_lock(mu);
		if ((size_t)off >= h->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, h->buf + off,
				       size < h->len - (size_t)off ? size : h->len - (size_t)off);
		pthread_mutex_unlock(mu);
		return;
	}
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
			jf_event_read(ST(fs), sc, id, off, buf, size, &got);
		if (got)
			jf_watch_seen(fs, sc, id, fuse_req_ctx(req)->uid, off + (int64_t)got);
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
		/* two reads of one handle at once (threads of one process)
		 * would both move its descriptors */
		pthread_mutex_t *mu = jf_fh_mu(fs, h);
		pthread_mutex_lock(mu);
		log_follow(h);
		ssize_t n = log_read(h, buf, size, off);
		int e = errno;
		pthread_mutex_unlock(mu);
		if (n < 0)
			fuse_reply_err(req, e);
		else
			fuse_reply_buf(req, buf, (size_t)n);
		free(buf);
		return;
	}
	case FH_WATCH:
		jf_watch_read(fs, req, h->w, size);
		return;
	case FH_EMPTY:
		if (h->ino.obj == JF_O_NODE && h->ino.file != JF_F_LOGS_PREV) {
			/* opened before the node first ran (tail -f of a waiting
			 * task): its first attempt's file, once there is one */
			char path[4096];
			jf_log_path(fs, &h->ino, path, sizeof(path));
			char *dup = path[0] ? strdup(path) : NULL;
			pthread_mutex_t *mu = jf_fh_mu(fs, h);
			pthread_mutex_lock(mu);
			if (dup && h->kind == FH_EMPTY) {
				h->kind = FH_FILE;
				h->fd1 = -1;
				h->buf = dup;
				log_reopen(h);
				dup = NULL;
			}
			bool file = h->kind == FH_FILE;
			pthread_mutex_unlock(mu);
			free(dup);
			if (file) {
				jf_op_read(req, ino, size, off, fi);
				return;
			}
		}
		fuse_reply_buf(req, NULL, 0);
		return;
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

static int act(struct jf_fs *fs, struct fh *h);

void jf_op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	if (h->kind == FH_TOUCH) {
		fuse_reply_write(req, size);
		return;
	}
	/* checked at open and again here: an fd can be passed to another user;
	 * a spec accepted meanwhile is the flush's to report (EROFS) */
	int prc = jf_perm_req(fs, req, &h->ino, JF_PERM_WRITE);
	if (prc && prc != EROFS) {
		fuse_reply_err(req, prc);
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
	if (h->kind == FH_CTL) {
		/* offsets count from the end of the last line acted on */
		if ((size_t)off < h->base) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		off -= (off_t)h->base;
	}
	size_t end = (size_t)off + size;
	/* a read of the same handle (opened O_RDWR) may be serving h->buf */
	pthread_mutex_t *mu = jf_fh_mu(fs, h);
	pthread_mutex_lock(mu);
	int rc = grow(&h->buf, &h->cap, end, limit);
	if (!rc) {
		if ((size_t)off > h->len)
			memset(h->buf + h->len, 0, (size_t)off - h->len);
		memcpy(h->buf + off, data, size);
		if (end > h->len)
			h->len = end;
	}
	pthread_mutex_unlock(mu);
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
	if (h->kind == FH_CTL && h->len > 0 && h->buf[h->len - 1] == '\n') {
		/* a whole line: act on it now, so that write() itself reports a
		 * refusal - a shell drops close()'s error, but `echo stop > ctl`
		 * then says "write error: Device or resource busy" */
		h->base += h->len;
		int e = act(fs, h);
		if (e) {
			fuse_reply_err(req, e);
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
		return jf_errno(
			jf_submit_text(fs, &h->ino, h->buf ? h->buf : "", h->len, h->uid, h->gid));
	if (h->kind == FH_CTL && h->ino.obj == JF_O_OBJSRC) {
		/* an object source's one verb: resync */
		char verb[48];
		size_t n = h->len;
		while (n && (h->buf[n - 1] == '\n' || h->buf[n - 1] == ' '))
			n--;
		snprintf(verb, sizeof(verb), "%.*s", (int)(n < 40 ? n : 40), h->buf ? h->buf : "");
		h->len = 0;
		return jf_errno(jf_engine_store_ctl(fs->e, h->ino.id, verb, &err));
	}
	if (h->kind == FH_CTL) {
		/* one verb (core/ctl.h); the engine gets its canonical name, or,
		 * refused, the written text escaped so that it records why in
		 * events (shells drop close()'s error) */
		enum jf_ctl_verb v;
		char q[4 * 40 + 8];
		enum jf_err prc = jf_ctl_parse(h->buf, h->len, &v, &err);
		if (prc) {
			size_t n = h->len && h->buf[h->len - 1] == '\n' ? h->len - 1 : h->len;
			jf_err_quote(h->buf, n, 40, q, sizeof(q));
		}
		const char *s = prc ? q : jf_ctl_verb_name(v);
		int64_t group_id = h->ino.obj == JF_O_GROUP ? h->ino.id : 0;
		int64_t task_id = 0;
		if (h->ino.obj == JF_O_TASK) {
			struct jf_task_rec t;
			if (jf_task_get(ST(fs), h->ino.id, &t) != JF_OK)
				return ENOENT;
			group_id = t.group_id;
			task_id = t.id;
			jf_task_release(&t);
		}
		/* the writer's next watch shows what its verb did */
		if (task_id)
			jf_watch_seen(fs, JF_SCOPE_TASK, task_id, h->uid, -1);
		else
			jf_watch_seen(fs, JF_SCOPE_GROUP, group_id, h->uid, -1);
		enum jf_err rc = jf_engine_ctl(fs->e, group_id, task_id, s, &err);
		h->len = 0;
		return jf_errno(prc && rc != JF_ENOENT ? prc : rc);
	}
	return 0;
}

void jf_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	fuse_reply_err(req, act(FS(req), h));
}

void jf_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct jf_fs *fs = FS(req);
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	act(fs, h);
	jf_fh_untrack(fs, h);
	/* a read of it may still be inside its reply (jf_op_read) */
	pthread_mutex_lock(jf_fh_mu(fs, h));
	pthread_mutex_unlock(jf_fh_mu(fs, h));
	if (h->w) {
		jf_fs_maps_lock(fs);
		for (struct watcher **pp = &fs->watchers; *pp; pp = &(*pp)->next)
			if (*pp == h->w) {
				*pp = h->w->next;
				break;
			}
		if (h->w->pending)
			fuse_reply_err(h->w->pending, EINTR);
		if (h->w->ph)
			fuse_pollhandle_destroy(h->w->ph);
		jf_fs_maps_unlock(fs);
		free(h->w);
	}
	if (h->fd >= 0)
		close(h->fd);
	if (h->kind == FH_FILE && h->fd1 >= 0)
		close(h->fd1);
	free(h->buf);
	free(h);
	fuse_reply_err(req, 0);
}

void jf_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
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
	jf_event_size(ST(fs), h->w->scope, h->w->id, &size);
	jf_fs_maps_lock(fs);
	if (ph) {
		if (h->w->ph)
			fuse_pollhandle_destroy(h->w->ph);
		h->w->ph = ph;
	}
	bool ready = size > h->w->off || jf_watch_finished(fs, h->w);
	jf_fs_maps_unlock(fs);
	fuse_reply_poll(req, ready ? POLLIN : 0);
}

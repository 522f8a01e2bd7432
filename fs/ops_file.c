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
	if (writing && fs->nt && ctx->pid == jf_notifier_tid(fs->nt)) {
		h = jf_fh_new(FH_TOUCH, &i);
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
		h = jf_fh_new(k, &i);
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
		h = jf_fh_new(FH_EVENTS, &i);
		break;
	case JF_F_LOGS:
	case JF_F_STDOUT:
	case JF_F_STDERR:
	case JF_F_LOGS_PREV: {
		char path[4096];
		jf_log_path(fs, &i, path, sizeof(path));
		int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		h = jf_fh_new(fd >= 0 ? FH_FILE : FH_EMPTY, &i);
		if (h)
			h->fd = fd;
		else if (fd >= 0)
			close(fd);
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
		jf_event_size(fs->st, h->w->scope, h->w->id, &h->w->off);
		h->w->next = fs->watchers;
		fs->watchers = h->w;
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
		return;
	}
	jf_fh_track(fs, h);
	return;
nomem:
	fuse_reply_err(req, ENOMEM);
}

void jf_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
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
		return jf_errno(jf_submit_text(fs, &h->ino, h->buf ? h->buf : "", h->len, h->uid, h->gid));
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
	jf_event_size(fs->st, h->w->scope, h->w->id, &size);
	if (ph) {
		if (h->w->ph)
			fuse_pollhandle_destroy(h->w->ph);
		h->w->ph = ph;
	}
	fuse_reply_poll(req, size > h->w->off || jf_watch_finished(fs, h->w) ? POLLIN : 0);
}


/*
 * serve.c - the tree's requests on reader threads; writes on the loop's.
 *
 * JF_FS_READERS threads take every request from /dev/fuse.  A read
 * (lookup, getattr, readdir, open to read, read, release of a reading
 * handle, events, logs, poll) is answered there at once, from the
 * reader's own read-only connection to the store: inside one read
 * transaction, so it sees one committed snapshot of the store, never a
 * step half-way.  What lives only in the engine's memory it reads through
 * the engine's view (engine.h), under the view lock.  So no read waits
 * for the engine: not for a scheduling pass, a commit's fsync, a burst of
 * starts or a backend's answer.
 *
 * A write (mkdir, rmdir, unlink, rename, create, setattr, open to write,
 * write, flush, release of a writing handle) is handed to the loop's
 * thread - queued, and an eventfd the loop polls first - which runs it as
 * before: every change still goes through the engine's step, store first.
 * The engine yields its passes to that eventfd (jf_loop_first_waiting).
 *
 * The tree's own memory (struct jf_fs: the render cache, what the kernel
 * holds, mtimes, editors' files, open handles, watchers, the toucher's
 * queue) is under one recursive lock, fs->mu: a reader holds it for its
 * whole request; the loop's thread holds it while it runs a write, a
 * change notification or the log poll, and lets it go while the engine
 * runs a step for a write (jf_fs_leave/jf_fs_enter), so readers do not
 * wait for that step either.  Order: fs->mu, then the view lock.
 *
 * A render and the change notification that follows a commit cannot
 * cross: the reader renders under fs->mu from a snapshot; the loop takes
 * fs->mu after the commit to drop what the change made stale.  Either the
 * render came first and is dropped, or it came after and saw the commit.
 */
#include "fs/fs_int.h"

#include "backends/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

_Thread_local struct jf_store *jf_fs_reader_st;
static _Thread_local bool on_reader;
static _Thread_local int64_t got_us; /* when this reader read its request */

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

enum fwd_op {
	FWD_SETATTR,
	FWD_MKDIR,
	FWD_RMDIR,
	FWD_UNLINK,
	FWD_RENAME,
	FWD_CREATE,
	FWD_OPEN,
	FWD_WRITE,
	FWD_FLUSH,
	FWD_RELEASE,
};

struct fwd {
	struct fwd *next;
	enum fwd_op op;
	fuse_req_t req;
	fuse_ino_t ino, parent, newparent;
	char *name, *newname;
	char *data;
	size_t size;
	off_t off;
	mode_t mode;
	unsigned flags;
	int to_set;
	struct stat attr;
	struct fuse_file_info fi;
	bool has_fi;
	int64_t got_us; /* when the reader read it */
};

/* ---- the tree's lock ---- */

/* How deep this thread holds the lock (a thread that does not hold it
 * has nothing to let go: the engine's tick runs while a reader holds it) */
static _Thread_local unsigned lock_held;

void jf_fs_lock(struct jf_fs *fs)
{
	pthread_mutex_lock(&fs->mu);
	lock_held++;
}

void jf_fs_unlock(struct jf_fs *fs)
{
	lock_held--;
	pthread_mutex_unlock(&fs->mu);
}

unsigned jf_fs_leave(struct jf_fs *fs)
{
	unsigned d = lock_held;
	for (unsigned k = 0; k < d; k++)
		jf_fs_unlock(fs);
	return d;
}

void jf_fs_enter(struct jf_fs *fs, unsigned depth)
{
	for (unsigned k = 0; k < depth; k++)
		jf_fs_lock(fs);
}

/* The engine's step hooks: a write's step runs without the lock.  Only
 * the loop's thread may run the engine. */
static unsigned step_leave(void *ctx)
{
	if (on_reader) {
		fputs("jobfs: BUG: a reader thread called into the engine\n", stderr);
		abort();
	}
	return jf_fs_leave(ctx);
}

static void step_enter(void *ctx, unsigned held)
{
	jf_fs_enter(ctx, held);
}

/* ---- writes, handed to the loop ---- */

static void run_fwd(struct jf_fs *fs, struct fwd *f)
{
	struct fuse_file_info *fi = f->has_fi ? &f->fi : NULL;
	switch (f->op) {
	case FWD_SETATTR:
		jf_op_setattr(f->req, f->ino, &f->attr, f->to_set, fi);
		break;
	case FWD_MKDIR:
		jf_op_mkdir(f->req, f->parent, f->name, f->mode);
		break;
	case FWD_RMDIR:
		jf_op_rmdir(f->req, f->parent, f->name);
		break;
	case FWD_UNLINK:
		jf_op_unlink(f->req, f->parent, f->name);
		break;
	case FWD_RENAME:
		jf_op_rename(f->req, f->parent, f->name, f->newparent, f->newname, f->flags);
		break;
	case FWD_CREATE:
		jf_op_create(f->req, f->parent, f->name, f->mode, fi);
		break;
	case FWD_OPEN:
		jf_op_open(f->req, f->ino, fi);
		break;
	case FWD_WRITE:
		jf_op_write(f->req, f->ino, f->data, f->size, f->off, fi);
		break;
	case FWD_FLUSH:
		jf_op_flush(f->req, f->ino, fi);
		break;
	case FWD_RELEASE:
		jf_op_release(f->req, f->ino, fi);
		break;
	}
	(void)fs;
	free(f->name);
	free(f->newname);
	free(f->data);
	free(f);
}

/* Queue f for the loop (a reader's) or run it now (the loop's own thread,
 * or no readers: at exit). */
static void hand(struct fwd *f)
{
	struct jf_fs *fs = FS(f->req);
	if (!on_reader) {
		run_fwd(fs, f);
		return;
	}
	f->got_us = got_us;
	pthread_mutex_lock(&fs->fwd_mu);
	*fs->fwd_tail = f;
	fs->fwd_tail = &f->next;
	pthread_mutex_unlock(&fs->fwd_mu);
	uint64_t one = 1;
	if (write(fs->fwd_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		perror("jobfs: waking the loop");
}

static struct fwd *fwd_new(fuse_req_t req, enum fwd_op op, const struct fuse_file_info *fi)
{
	struct fwd *f = calloc(1, sizeof(*f));
	if (!f) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	f->op = op;
	f->req = req;
	if (fi) {
		f->fi = *fi;
		f->has_fi = true;
	}
	return f;
}

static bool dup_name(struct fwd *f, char **to, const char *name)
{
	*to = strdup(name);
	if (*to)
		return true;
	fuse_reply_err(f->req, ENOMEM);
	free(f->name);
	free(f);
	return false;
}

/*
 * Fault point hold-loop (the test that reads never wait for the loop):
 * a write that starts "hold-the-loop" (to a ctl file: it holds no
 * directory's lock in the kernel, as a mkdir would) holds the loop's
 * thread, the tree's lock not held, until STATE/release-loop exists - as
 * a long step would.
 */
static void hold_loop(struct jf_fs *fs, const struct fwd *f)
{
	static const char word[] = "hold-the-loop";
	if (f->op != FWD_WRITE || f->size < sizeof(word) - 1 ||
	    memcmp(f->data, word, sizeof(word) - 1) || !jf_fault_hit("hold-loop"))
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/release-loop", jf_engine_state_dir(fs->e));
	fprintf(stderr, "jobfs: fault hold-loop: the loop is held until %s exists\n", path);
	while (access(path, F_OK) != 0)
		usleep(10000);
	fprintf(stderr, "jobfs: fault hold-loop: the loop goes on\n");
}

/* Runs what readers queued: a JF_LOOP_FIRST source of the loop. */
static void on_forwarded(struct jf_loop *l, void *ctx)
{
	struct jf_fs *fs = ctx;
	uint64_t n;
	if (read(fs->fwd_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		perror("jobfs: the readers' queue");
	pthread_mutex_lock(&fs->fwd_mu);
	struct fwd *f = fs->fwd_head;
	fs->fwd_head = NULL;
	fs->fwd_tail = &fs->fwd_head;
	pthread_mutex_unlock(&fs->fwd_mu);
	while (f) {
		struct fwd *next = f->next;
		hold_loop(fs, f);
		jf_fs_lock(fs);
		int64_t waited = mono_us() - f->got_us;
		if (waited > fs->write_wait_us)
			fs->write_wait_us = waited;
		run_fwd(fs, f);
		jf_fs_unlock(fs);
		f = next;
	}
	if (atomic_load(&fs->stop) || fuse_session_exited(fs->se))
		jf_loop_stop(l);
}

void jf_fwd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi)
{
	struct fwd *f = fwd_new(req, FWD_SETATTR, fi);
	if (!f)
		return;
	f->ino = ino;
	f->attr = *attr;
	f->to_set = to_set;
	hand(f);
}

void jf_fwd_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fwd *f = fwd_new(req, FWD_MKDIR, NULL);
	if (!f || !dup_name(f, &f->name, name))
		return;
	f->parent = parent;
	f->mode = mode;
	hand(f);
}

void jf_fwd_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fwd *f = fwd_new(req, FWD_RMDIR, NULL);
	if (!f || !dup_name(f, &f->name, name))
		return;
	f->parent = parent;
	hand(f);
}

void jf_fwd_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fwd *f = fwd_new(req, FWD_UNLINK, NULL);
	if (!f || !dup_name(f, &f->name, name))
		return;
	f->parent = parent;
	hand(f);
}

void jf_fwd_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		   const char *newname, unsigned int flags)
{
	struct fwd *f = fwd_new(req, FWD_RENAME, NULL);
	if (!f || !dup_name(f, &f->name, name) || !dup_name(f, &f->newname, newname))
		return;
	f->parent = parent;
	f->newparent = newparent;
	f->flags = flags;
	hand(f);
}

void jf_fwd_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi)
{
	struct fwd *f = fwd_new(req, FWD_CREATE, fi);
	if (!f || !dup_name(f, &f->name, name))
		return;
	f->parent = parent;
	f->mode = mode;
	hand(f);
}

void jf_fwd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC)) {
		jf_op_open(req, ino, fi); /* a read: answered here */
		return;
	}
	struct fwd *f = fwd_new(req, FWD_OPEN, fi);
	if (!f)
		return;
	f->ino = ino;
	hand(f);
}

void jf_fwd_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct fwd *f = fwd_new(req, FWD_WRITE, fi);
	if (!f)
		return;
	f->data = malloc(size ? size : 1);
	if (!f->data) {
		fuse_reply_err(req, ENOMEM);
		free(f);
		return;
	}
	memcpy(f->data, data, size);
	f->ino = ino;
	f->size = size;
	f->off = off;
	hand(f);
}

void jf_fwd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fwd *f = fwd_new(req, FWD_FLUSH, fi);
	if (!f)
		return;
	f->ino = ino;
	hand(f);
}

void jf_fwd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct fh *h = (const struct fh *)(uintptr_t)fi->fh;
	if (h->kind != FH_SPEC && h->kind != FH_CTL && h->kind != FH_SCRATCH) {
		jf_op_release(req, ino, fi); /* a reading handle: freed here */
		return;
	}
	struct fwd *f = fwd_new(req, FWD_RELEASE, fi);
	if (!f)
		return;
	f->ino = ino;
	hand(f);
}

/* ---- readers ---- */

struct fs_reader {
	struct jf_fs *fs;
	struct jf_store *st;
	pthread_t tid;
	bool started;
};

/* The mount is gone (unmounted, or the channel failed): the loop stops. */
static void channel_gone(struct jf_fs *fs, int r)
{
	jf_fs_lock(fs);
	if (!atomic_load(&fs->stop))
		fs->mounted = r != 0 && r != -ENODEV;
	atomic_store(&fs->stop, true);
	jf_fs_unlock(fs);
	uint64_t one = 1;
	if (write(fs->fwd_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		perror("jobfs: waking the loop");
}

static void *reader_main(void *arg)
{
	struct fs_reader *r = arg;
	struct jf_fs *fs = r->fs;
	jf_fs_reader_st = r->st;
	on_reader = true;
	struct fuse_buf buf = { .mem = NULL };
	int dev = fuse_session_fd(fs->se);
	while (!atomic_load(&fs->stop)) {
		struct pollfd p[2] = { { .fd = dev, .events = POLLIN },
				       { .fd = fs->stop_fd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			channel_gone(fs, -errno);
			break;
		}
		if (p[1].revents)
			break;
		int rc = fuse_session_receive_buf(fs->se, &buf);
		if (rc == -EINTR || rc == -EAGAIN)
			continue; /* another reader took it */
		if (rc <= 0) {
			channel_gone(fs, rc);
			break;
		}
		got_us = mono_us();
		jf_fs_lock(fs);
		int64_t waited = mono_us() - got_us;
		if (waited > fs->read_wait_us)
			fs->read_wait_us = waited;
		jf_store_read_begin(r->st);
		fuse_session_process_buf(fs->se, &buf);
		jf_store_read_end(r->st);
		jf_fs_unlock(fs);
		if (fuse_session_exited(fs->se)) {
			channel_gone(fs, 0);
			break;
		}
	}
	free(buf.mem);
	return NULL;
}

enum jf_err jf_serve_start(struct jf_fs *fs, int nreaders, struct jf_error *err)
{
	fs->fwd_tail = &fs->fwd_head;
	fs->fwd_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fs->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fs->fwd_fd < 0 || fs->stop_fd < 0)
		return jf_error_set(err, JF_EIO, 0, "readers: %s", strerror(errno));
	if (jf_loop_add_fd(fs->loop, fs->fwd_fd, JF_LOOP_FIRST, on_forwarded, fs) < 0)
		return jf_error_set(err, JF_EIO, 0, "event loop: %s", strerror(errno));
	jf_engine_share_view(fs->e);
	jf_engine_set_step_hooks(fs->e, step_leave, step_enter, fs);
	fs->readers = calloc((size_t)nreaders, sizeof(*fs->readers));
	if (!fs->readers)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	fs->nreaders = nreaders;
	const char *db = jf_store_path(fs->st);
	for (int k = 0; k < nreaders; k++) {
		struct fs_reader *r = &fs->readers[k];
		r->fs = fs;
		if (jf_store_open_reader(db, &r->st, err) != JF_OK)
			return err ? err->code : JF_EIO;
		int rc = pthread_create(&r->tid, NULL, reader_main, r);
		if (rc)
			return jf_error_set(err, JF_EIO, 0, "readers: %s", strerror(rc));
		r->started = true;
	}
	return JF_OK;
}

void jf_serve_stop(struct jf_fs *fs)
{
	atomic_store(&fs->stop, true);
	if (fs->stop_fd >= 0) {
		uint64_t one = 1;
		if (write(fs->stop_fd, &one, sizeof(one)) < 0)
			perror("jobfs: stopping the readers");
	}
	for (int k = 0; k < fs->nreaders; k++) {
		struct fs_reader *r = &fs->readers[k];
		if (r->started)
			pthread_join(r->tid, NULL);
		jf_store_close(r->st);
	}
	free(fs->readers);
	fs->readers = NULL;
	fs->nreaders = 0;
	/* what they handed over and the loop did not run: now, on this thread */
	struct fwd *f = fs->fwd_head;
	fs->fwd_head = NULL;
	fs->fwd_tail = &fs->fwd_head;
	while (f) {
		struct fwd *next = f->next;
		run_fwd(fs, f);
		f = next;
	}
	if (fs->fwd_fd >= 0)
		close(fs->fwd_fd);
	if (fs->stop_fd >= 0)
		close(fs->stop_fd);
	fs->fwd_fd = fs->stop_fd = -1;
}

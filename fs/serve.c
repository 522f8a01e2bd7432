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
 * The tree's own memory (struct jf_fs) is under two locks.  fs->rw, a
 * reader-writer lock: a reader holds it shared for its whole request, and
 * so does the loop's thread around a change notification, the log poll
 * and most writes (a mkdir, a spec or ctl verb written and closed); it
 * holds it exclusively around a write to editors' temporary files, which
 * live in the tree's memory, and a setattr or rmdir (needs_excl).  Around
 * a write's step it lets it go (jf_fs_leave/jf_fs_enter), so readers do
 * not wait for that step either.  A waiting exclusive hold holds back new
 * readers, so reads never starve the loop.  Inside it, the maps and
 * lists that readers and notifications both change (the render cache,
 * what the kernel holds, mtimes, seen offsets, parsed specs, watchers,
 * handles) are under fs->mapmu, a leaf lock held only around the map
 * work itself: never across a rendering, a query or an engine call.  So
 * two readers, or a reader and a notification, do not wait for each
 * other, and one that the kernel descheduled holds nobody up.  Order:
 * rw, then the engine's view lock, then mapmu.
 *
 * What a reader may still be holding (a rendering from the cache, a
 * parsed spec) is never freed under it: what goes is retired to a list
 * and freed when the loop's thread next takes rw exclusively (a write, or
 * an instant each tick), when no reader can hold any.
 *
 * A render and the change notification that follows a commit cannot
 * cross: the notification counts the change (fs->gen) before it drops
 * what the change made stale; a reader notes the count before its
 * snapshot, and keeps its rendering only if the count has not moved (see
 * jf_cached_render).  Either the rendering was kept first and is dropped,
 * or it saw the commit, or it is not kept.
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
#include <sys/resource.h>
#include <sys/syscall.h>
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

/* How this thread holds the lock: how deep, and whether exclusively (a
 * thread that does not hold it has nothing to let go: the engine's tick
 * runs while a reader holds it) */
static _Thread_local unsigned lock_held;
static _Thread_local bool lock_excl;
static _Thread_local unsigned maps_held;
static _Thread_local uint64_t req_gen; /* a reader's: before its snapshot */

static void reclaim(struct jf_fs *fs)
{
	struct cached *c = fs->retired;
	fs->retired = NULL;
	while (c) {
		struct cached *next = c->retired_next;
		free(c->data);
		free(c);
		c = next;
	}
	jf_fs_specs_reclaim(fs);
}

static void acquire(struct jf_fs *fs, bool excl, unsigned depth)
{
	if (excl)
		pthread_rwlock_wrlock(&fs->rw);
	else
		pthread_rwlock_rdlock(&fs->rw);
	lock_held = depth;
	lock_excl = excl;
}

static void take(struct jf_fs *fs, bool excl)
{
	if (lock_held) {
		if (excl && !lock_excl) {
			fputs("jobfs: BUG: the tree's lock taken exclusively under a shared hold\n",
			      stderr);
			abort();
		}
		lock_held++;
		return;
	}
	if (maps_held) {
		fputs("jobfs: BUG: the tree's lock taken under the map lock\n", stderr);
		abort();
	}
	acquire(fs, excl, 1);
	if (excl)
		reclaim(fs); /* no reader holds what was retired: it can go */
}

void jf_fs_lock(struct jf_fs *fs)
{
	take(fs, true);
}

void jf_fs_lock_shared(struct jf_fs *fs)
{
	take(fs, false);
}

void jf_fs_unlock(struct jf_fs *fs)
{
	if (--lock_held == 0) {
		lock_excl = false;
		pthread_rwlock_unlock(&fs->rw);
	}
}

/* held: the depth, and 1u << 31 when exclusive */
unsigned jf_fs_leave(struct jf_fs *fs)
{
	unsigned d = lock_held;
	if (!d)
		return 0;
	unsigned held = d | (lock_excl ? 1u << 31 : 0);
	lock_held = 1;
	jf_fs_unlock(fs);
	return held;
}

void jf_fs_enter(struct jf_fs *fs, unsigned held)
{
	unsigned d = held & ~(1u << 31);
	/* not take(): what the caller borrowed before the step stays */
	if (d)
		acquire(fs, held & (1u << 31), d);
}

void jf_fs_maps_lock(struct jf_fs *fs)
{
	pthread_mutex_lock(&fs->mapmu);
	maps_held++;
}

void jf_fs_maps_unlock(struct jf_fs *fs)
{
	maps_held--;
	pthread_mutex_unlock(&fs->mapmu);
}

pthread_mutex_t *jf_fh_mu(struct jf_fs *fs, const struct fh *h)
{
	uintptr_t a = (uintptr_t)h;
	return &fs->fhmu[(a >> 6) % (sizeof(fs->fhmu) / sizeof(fs->fhmu[0]))];
}

uint64_t jf_fs_req_gen(struct jf_fs *fs)
{
	return on_reader ? req_gen : atomic_load(&fs->gen);
}

void jf_fs_retire(struct jf_fs *fs, struct cached *c)
{
	c->retired_next = fs->retired;
	fs->retired = c;
}

static void wait_max(_Atomic int64_t *at, int64_t v)
{
	int64_t cur = atomic_load(at);
	while (v > cur && !atomic_compare_exchange_weak(at, &cur, v))
		;
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

/*
 * Does f need the tree to itself?  Editors' temporary files (create,
 * rename, unlink, their writes) live in the tree's memory, not in maps,
 * and readers read them; so do setattr and rmdir, rare enough.  The rest
 * - a mkdir, a spec or a ctl verb written, its close - changes only the
 * store, through the engine, and the maps, under their own lock: it runs
 * with the lock shared, and readers go on meanwhile, also during a burst
 * of submissions.
 */
static bool needs_excl(const struct fwd *f)
{
	struct jf_ino i;
	switch (f->op) {
	case FWD_MKDIR:
		return false;
	case FWD_OPEN:
		return !jf_ino_split(f->ino, &i) || i.obj == JF_O_SCRATCH;
	case FWD_WRITE:
	case FWD_FLUSH:
	case FWD_RELEASE: {
		const struct fh *h = (const struct fh *)(uintptr_t)f->fi.fh;
		return h->kind != FH_SPEC && h->kind != FH_CTL;
	}
	default:
		return true;
	}
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
		if (needs_excl(f))
			jf_fs_lock(fs);
		else
			jf_fs_lock_shared(fs);
		wait_max(&fs->write_wait_us, mono_us() - f->got_us);
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
	struct jf_ino p;
	if (jf_from_toucher(req) && jf_ino_split(parent, &p) && p.obj == JF_O_TASKS) {
		jf_op_mkdir(req, parent, name, mode); /* its IN_CREATE: answered here */
		return;
	}
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
	if (((fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC)) ||
	    jf_from_toucher(req)) {
		jf_op_open(req, ino, fi); /* a read, or a touch: answered here */
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
	const struct fh *h = (const struct fh *)(uintptr_t)fi->fh;
	if (h->kind == FH_TOUCH) {
		jf_op_write(req, ino, data, size, off, fi); /* a touch: answered here */
		return;
	}
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
	int nice;
	bool asked;
	pthread_t tid;
	bool started;
};

/* The mount is gone (unmounted, or the channel failed): the loop stops. */
static void channel_gone(struct jf_fs *fs, int r)
{
	jf_fs_maps_lock(fs);
	if (!atomic_load(&fs->stop))
		fs->mounted = r != 0 && r != -ENODEV;
	atomic_store(&fs->stop, true);
	jf_fs_maps_unlock(fs);
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
	/* a nice value is a thread's own: the loop, and what it spawns (the
	 * shims, the tasks), keep the daemon's */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), r->nice) < 0 && r->asked)
		fprintf(stderr, "jobfs: --reader-nice %d: %s; the readers stay at nice %d\n",
			r->nice, strerror(errno), getpriority(PRIO_PROCESS, 0));
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
		jf_fs_lock_shared(fs);
		wait_max(&fs->read_wait_us, mono_us() - got_us);
		/* before the snapshot: a change notified after this may not be
		 * in it (jf_cached_render) */
		req_gen = atomic_load(&fs->gen);
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

enum jf_err jf_serve_start(struct jf_fs *fs, int nreaders, int nice, bool asked,
			   struct jf_error *err)
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
		r->nice = nice;
		r->asked = asked && k == 0; /* said once */
		if (jf_store_open_reader(db, &r->st, err) != JF_OK)
			return err ? err->code : JF_EIO;
		int rc = pthread_create(&r->tid, NULL, reader_main, r);
		if (rc)
			return jf_error_set(err, JF_EIO, 0, "readers: %s", strerror(rc));
		pthread_setname_np(r->tid, "jobfs-reader"); /* in ps -L, top -H */
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

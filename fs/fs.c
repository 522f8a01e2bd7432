/*
 * fs.c - mounting, the tree's sources in the daemon's loop, unmounting.
 *
 * One thread serves everything, in the loop of engine/loop.h: FUSE
 * requests (a JF_LOOP_FIRST source: they come first), ended runs from the
 * backend and the engine's tick (the engine adds those, engine.h), a
 * 250 ms timer for log growth, signals (SIGINT, SIGTERM, SIGHUP: unmount
 * and return), and the toucher's coalescing timer (toucher.h).  No thread
 * or process that holds /dev/fuse ever waits on the mount: the inotify
 * touches come from a helper process that has no descriptor of it.
 *
 * Requests come first.  The engine yields (engine.h): a submission or an
 * ended run only asks for a scheduling pass, and the loop runs it when no
 * request waits, or once it has waited JF_ENGINE_PASS_DELAY_MS under a
 * steady stream of them; ended runs are taken a batch at a time between
 * requests.  A request then waits for the requests ahead of it, not for
 * the passes and starts that a burst of submissions causes.
 */
#include "fs/fs_int.h"

#include "backends/fault.h"
#include "fs/images.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define REQUEST_BURST 64 /* requests served before anything else is looked at */

/*
 * Fault point keep-device (the watchdog's test): a child that keeps this
 * mount's /dev/fuse open, and nothing else, after the daemon dies - a
 * connection the kernel then cannot abort, which only the next daemon's
 * watchdog (fs/mountrec.c) can.
 */
static void keep_device(struct jf_fs *fs)
{
	int dev = fuse_session_fd(fs->se);
	pid_t pid = fork();
	if (pid != 0) {
		fprintf(stderr, "jobfs: fault keep-device: pid %d keeps /dev/fuse\n", (int)pid);
		return;
	}
	if (dev != 3 && dup2(dev, 3) < 0)
		_exit(1);
	close_range(0, 2, 0);
	close_range(4, ~0U, 0);
	for (;;)
		pause();
}

static void on_signal(struct jf_loop *l, void *ctx);
static void on_touch(struct jf_loop *l, void *ctx);
static void on_logs_timer(struct jf_loop *l, void *ctx);

enum jf_err jf_fs_new(struct jf_engine *e, struct jf_loop *l, const struct jf_fs_options *opt,
		      struct jf_fs **out, struct jf_error *err)
{
	*out = NULL;
	struct jf_fs *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		jf_engine_free(e);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	fs->e = e;
	fs->start_ms = jf_engine_now(e);
	fs->loop = l;
	fs->logs_timer = -1;
	fs->st = jf_engine_store(e);
	fs->mountpoint = realpath(opt->mountpoint, NULL);
	fs->attr_timeout = opt->attr_timeout > 0 ? opt->attr_timeout : 1.0;
	/* the daemon's identity is its effective one: what it can do */
	fs->uid = geteuid();
	fs->gid = getegid();
	fs->perm.uid = fs->uid;
	fs->perm.root = fs->uid == 0;
	fs->sfd = -1;
	fs->fwd_fd = fs->stop_fd = -1;
	/* a write waiting for the lock holds back new readers: a steady
	 * stream of reads never starves the loop (no thread takes it shared
	 * twice: serve.c counts its own depth) */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&fs->mapmu, &ma);
	pthread_mutexattr_destroy(&ma);
	for (size_t k = 0; k < sizeof(fs->fhmu) / sizeof(fs->fhmu[0]); k++)
		pthread_mutex_init(&fs->fhmu[k], NULL);
	pthread_mutex_init(&fs->fwd_mu, NULL);
	jf_idmap_init(&fs->specs);
	jf_idmap_init(&fs->cache);
	jf_idmap_init(&fs->gcache);
	jf_idmap_init(&fs->looked);
	jf_idmap_init(&fs->logsize);
	jf_idmap_init(&fs->made);
	jf_idmap_init(&fs->creating);
	jf_idmap_init(&fs->mtimes);
	jf_idmap_init(&fs->seen);
	jf_idmap_init(&fs->listed);
	if (!fs->mountpoint) {
		jf_error_set(err, JF_EINVAL, 0, "mount point %s: %s", opt->mountpoint,
			     strerror(errno));
		goto fail;
	}
	char fsopts[256];
	snprintf(fsopts, sizeof(fsopts), "fsname=jobfs,subtype=jobfs%s",
		 opt->allow_other ? ",allow_other" : "");
	char *argv[] = { "jobfs", "-o", fsopts, opt->debug ? "-d" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(opt->debug ? 4 : 3, argv);
	fs->se = fuse_session_new(&args, &jf_fs_ops, sizeof(jf_fs_ops), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		jf_error_set(err, JF_EIO, 0, "cannot create the FUSE session");
		goto fail;
	}
	/* before the mount, so that it never holds /dev/fuse (toucher.h) */
	fs->nt = jf_toucher_new(fs->mountpoint);
	if (!fs->nt) {
		jf_error_set(err, JF_EIO, 0, "cannot start the touch helper: %s", strerror(errno));
		goto fail;
	}
	if (fuse_session_mount(fs->se, fs->mountpoint) != 0) {
		jf_error_set(err, JF_EIO, 0,
			     "cannot mount on %s (is /dev/fuse usable? is "
			     "fusermount3 installed?)",
			     fs->mountpoint);
		goto fail;
	}
	fs->mounted = true;
	jf_engine_set_notify(e, jf_fs_on_change, fs);
	if (jf_fault_hit("keep-device"))
		keep_device(fs);

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	fs->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fs->sfd < 0) {
		jf_error_set(err, JF_EIO, 0, "event loop: %s", strerror(errno));
		goto fail;
	}
	/* readers poll the device and take a request each; the one that loses
	 * the race gets EAGAIN */
	int ffl = fcntl(fuse_session_fd(fs->se), F_GETFL);
	if (ffl < 0 || fcntl(fuse_session_fd(fs->se), F_SETFL, ffl | O_NONBLOCK) < 0) {
		jf_error_set(err, JF_EIO, 0, "event loop: %s", strerror(errno));
		goto fail;
	}
	fs->logs_timer = jf_loop_add_timer(l, on_logs_timer, fs);
	if (jf_loop_add_fd(l, fs->sfd, JF_LOOP_NEXT, on_signal, fs) < 0 ||
	    jf_loop_add_fd(l, jf_toucher_fd(fs->nt), JF_LOOP_NEXT, on_touch, fs) < 0 ||
	    fs->logs_timer < 0) {
		jf_error_set(err, JF_EIO, 0, "event loop: %s", strerror(errno));
		goto fail;
	}
	jf_loop_arm(l, fs->logs_timer, jf_loop_now(l) + JF_ENGINE_TICK_MS);
	/* last: the readers inherit the blocked signals (the signalfd's) */
	if (jf_serve_start(fs, JF_FS_READERS, opt->reader_nice, opt->reader_nice_given, err) !=
	    JF_OK)
		goto fail;
	*out = fs;
	return JF_OK;
fail:
	jf_fs_free(fs);
	return err ? err->code : JF_EIO;
}

static void on_signal(struct jf_loop *l, void *ctx)
{
	struct jf_fs *fs = ctx;
	struct signalfd_siginfo si;
	if (read(fs->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		fs->stop = true;
		jf_loop_stop(l);
	}
}

static void on_touch(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct jf_fs *fs = ctx;
	/* the toucher is the loop thread's alone: no lock */
	jf_toucher_flush(fs->nt, fs->se);
}

/* The longest a request waited, said on stderr (the daemon's log) each time
 * it grows by a quarter past 10 ms: a read, from the moment a reader took it
 * off /dev/fuse until it was served; a write, until the loop ran it. */
#define WAIT_SAY_US 10000

static void say_waits(struct jf_fs *fs)
{
	int64_t r = fs->read_wait_us, w = fs->write_wait_us;
	int64_t turn = jf_loop_longest_turn_us(fs->loop);
	if ((r < WAIT_SAY_US || r * 4 < fs->read_said_us * 5) &&
	    (w < WAIT_SAY_US || w * 4 < fs->write_said_us * 5))
		return;
	fs->read_said_us = r > fs->read_said_us ? r : fs->read_said_us;
	fs->write_said_us = w > fs->write_said_us ? w : fs->write_said_us;
	fprintf(stderr,
		"jobfs: longest wait so far: a read %.1f ms, a write %.1f ms (the loop's longest "
		"turn %.1f ms)\n",
		(double)r / 1000.0, (double)w / 1000.0, (double)turn / 1000.0);
}

static void on_logs_timer(struct jf_loop *l, void *ctx)
{
	struct jf_fs *fs = ctx;
	/* an instant alone with the tree: what readers retired goes */
	jf_fs_lock(fs);
	jf_fs_unlock(fs);
	jf_fs_lock_shared(fs);
	jf_fs_poll_logs(fs);
	say_waits(fs);
	jf_fs_unlock(fs);
	jf_loop_arm(l, fs->logs_timer, jf_loop_now(l) + JF_ENGINE_TICK_MS);
}

void jf_fs_free(struct jf_fs *fs)
{
	if (!fs)
		return;
	/* the readers first: what follows runs on this thread alone */
	jf_serve_stop(fs);
	/* the touch helper may be inside a request of ours: answer until it ends */
	jf_toucher_stop(fs->nt);
	struct fuse_buf buf = { .mem = NULL };
	for (int spins = 0; fs->se && fs->mounted && !jf_toucher_gone(fs->nt) && spins < 500;
	     spins++) {
		struct pollfd pfd = { .fd = fuse_session_fd(fs->se), .events = POLLIN };
		if (poll(&pfd, 1, 10) == 1 && fuse_session_receive_buf(fs->se, &buf) > 0)
			fuse_session_process_buf(fs->se, &buf);
	}
	free(buf.mem);
	for (struct watcher *w = fs->watchers; w; w = w->next) {
		if (w->pending)
			fuse_reply_err(w->pending, EINTR);
		w->pending = NULL;
	}
	if (fs->se) {
		/*
		 * Also when the kernel already unmounted us (fusermount3 -u): the
		 * device then polls POLLERR and libfuse runs no umount, it only
		 * closes the fd and frees its copy of the mount point (which
		 * fuse_session_destroy would leak).
		 */
		fuse_session_unmount(fs->se);
		fuse_session_destroy(fs->se);
	}
	/* the device is closed: a request of the helper's has failed by now */
	jf_toucher_free(fs->nt);
	/* handles whose background release the unmount dropped */
	while (fs->fhs) {
		struct fh *h = fs->fhs;
		jf_fh_untrack(fs, h);
		if (h->w) {
			if (h->w->ph)
				fuse_pollhandle_destroy(h->w->ph);
			free(h->w);
		}
		if (h->fd >= 0)
			close(h->fd);
		if (h->kind == FH_FILE && h->fd1 >= 0)
			close(h->fd1);
		free(h->buf);
		free(h);
	}
	fs->watchers = NULL;
	for (int i = 0; i < JF_SCRATCH_MAX; i++)
		free(fs->scratch[i].data);
	jf_fs_lock(fs); /* frees what was retired */
	jf_fs_unlock(fs);
	struct jf_idmap *caches[] = { &fs->cache, &fs->gcache };
	for (size_t c = 0; c < 2; c++) {
		size_t i = 0;
		int64_t k;
		void *v;
		while (jf_idmap_next(caches[c], &i, &k, &v)) {
			free(((struct cached *)v)->data);
			free(v);
		}
		jf_idmap_release(caches[c]);
	}
	jf_idmap_release(&fs->looked);
	jf_idmap_release(&fs->logsize);
	jf_idmap_release(&fs->made);
	jf_idmap_release(&fs->creating);
	jf_mtime_release(fs);
	jf_images_release(fs);
	jf_idmap_release(&fs->seen);
	jf_fs_specs_release(fs);
	if (fs->sfd >= 0)
		close(fs->sfd);
	if (fs->e)
		jf_engine_stop_billing(fs->e);
	jf_engine_free(fs->e);
	free(fs->mountpoint);
	pthread_rwlock_destroy(&fs->rw);
	pthread_mutex_destroy(&fs->mapmu);
	for (size_t k = 0; k < sizeof(fs->fhmu) / sizeof(fs->fhmu[0]); k++)
		pthread_mutex_destroy(&fs->fhmu[k]);
	pthread_mutex_destroy(&fs->fwd_mu);
	free(fs);
}

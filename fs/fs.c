/*
 * fs.c - mounting, the event loop, unmounting.
 *
 * One thread serves everything: FUSE requests, ended runs from the
 * backend, a 250 ms timer (deadlines, kill grace, log growth) and signals
 * (SIGINT, SIGTERM, SIGHUP: unmount and return), and the toucher's
 * coalescing timer (toucher.h).  No thread or process that holds
 * /dev/fuse ever waits on the mount: the inotify touches come from a
 * helper process that has no descriptor of it.
 *
 * Requests come first.  The engine yields (engine.h): a submission or an
 * ended run only asks for a scheduling pass, and the loop runs it when no
 * request waits, or once it has waited SCHED_MAX_DELAY_MS under a steady
 * stream of them; ended runs are taken a batch at a time between
 * requests.  A request then waits for the requests ahead of it, not for
 * the passes and starts that a burst of submissions causes.
 */
#include "fs/fs_int.h"

#include "backends/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS            250
#define SCHED_MAX_DELAY_MS 50
#define REQUEST_BURST      64 /* requests served before anything else is looked at */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum { SRC_FUSE = 1, SRC_BACKEND, SRC_TIMER, SRC_SIGNAL, SRC_TOUCH };

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

/* The engine's question while it works through ended runs and starts. */
static bool request_waiting(void *ctx)
{
	struct jf_fs *fs = ctx;
	struct pollfd p = { .fd = fuse_session_fd(fs->se), .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

enum jf_err jf_fs_new(struct jf_engine *e, const struct jf_fs_options *opt, struct jf_fs **out,
		      struct jf_error *err)
{
	*out = NULL;
	struct jf_fs *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		jf_engine_free(e);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	fs->e = e;
	fs->st = jf_engine_store(e);
	fs->mountpoint = realpath(opt->mountpoint, NULL);
	fs->attr_timeout = opt->attr_timeout > 0 ? opt->attr_timeout : 1.0;
	/* the daemon's identity is its effective one: what it can do */
	fs->uid = geteuid();
	fs->gid = getegid();
	fs->perm.uid = fs->uid;
	fs->perm.root = fs->uid == 0;
	fs->epfd = fs->tfd = fs->sfd = -1;
	jf_idmap_init(&fs->cache);
	jf_idmap_init(&fs->gcache);
	jf_idmap_init(&fs->looked);
	jf_idmap_init(&fs->logsize);
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
	jf_engine_set_yielding(e, true, request_waiting, fs);
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
	fs->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	fs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (fs->sfd < 0 || fs->tfd < 0 || fs->epfd < 0) {
		jf_error_set(err, JF_EIO, 0, "event loop: %s", strerror(errno));
		goto fail;
	}
	struct itimerspec its = {
		.it_interval = { 0, TICK_MS * 1000000L },
		.it_value = { 0, TICK_MS * 1000000L },
	};
	timerfd_settime(fs->tfd, 0, &its, NULL);
	/* the loop reads every request that waits, then goes on */
	int ffl = fcntl(fuse_session_fd(fs->se), F_GETFL);
	if (ffl < 0 || fcntl(fuse_session_fd(fs->se), F_SETFL, ffl | O_NONBLOCK) < 0) {
		jf_error_set(err, JF_EIO, 0, "event loop: %s", strerror(errno));
		goto fail;
	}
	struct {
		int fd;
		int src;
	} srcs[] = {
		{ fuse_session_fd(fs->se), SRC_FUSE },
		{ jf_engine_backend_fd(e), SRC_BACKEND },
		{ fs->tfd, SRC_TIMER },
		{ fs->sfd, SRC_SIGNAL },
		{ jf_toucher_fd(fs->nt), SRC_TOUCH },
	};
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)srcs[i].src };
		if (srcs[i].fd >= 0 && epoll_ctl(fs->epfd, EPOLL_CTL_ADD, srcs[i].fd, &ev) < 0) {
			jf_error_set(err, JF_EIO, 0, "epoll: %s", strerror(errno));
			goto fail;
		}
	}
	*out = fs;
	return JF_OK;
fail:
	jf_fs_free(fs);
	return err ? err->code : JF_EIO;
}

/* Every request that waits (the device is non-blocking), REQUEST_BURST at most. */
static void serve_requests(struct jf_fs *fs, struct fuse_buf *buf)
{
	for (int k = 0; k < REQUEST_BURST && !fs->stop; k++) {
		int r = fuse_session_receive_buf(fs->se, buf);
		if (r == -EINTR || r == -EAGAIN)
			return;
		if (r <= 0) {
			/* unmounted (ENODEV) or the channel failed */
			fs->stop = true;
			fs->mounted = r != 0 && r != -ENODEV;
			return;
		}
		fuse_session_process_buf(fs->se, buf);
	}
}

int jf_fs_run(struct jf_fs *fs)
{
	struct fuse_buf buf = { .mem = NULL };
	int rc = 0;
	int64_t sched_asked = 0; /* when the pending pass was first seen, 0 none */
	while (!fs->stop && !fuse_session_exited(fs->se)) {
		struct epoll_event evs[8];
		bool pending = jf_engine_schedule_pending(fs->e);
		if (pending && !sched_asked)
			sched_asked = mono_ms();
		/* with a pass to run, only look: run it if nothing waits */
		int n = epoll_wait(fs->epfd, evs, 8, pending ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		/* requests first, then ended runs and timers, then the pass */
		for (int i = 0; i < n; i++)
			if (evs[i].data.u32 == SRC_FUSE)
				serve_requests(fs, &buf);
		for (int i = 0; i < n && !fs->stop; i++) {
			switch (evs[i].data.u32) {
			case SRC_FUSE:
				break;
			case SRC_BACKEND:
				jf_engine_on_backend(fs->e);
				break;
			case SRC_TIMER: {
				uint64_t ticks;
				if (read(fs->tfd, &ticks, sizeof(ticks)) < 0) {
					/* spurious wake-up */
				}
				jf_engine_tick(fs->e);
				jf_fs_poll_logs(fs);
				break;
			}
			case SRC_TOUCH:
				jf_toucher_flush(fs->nt, fs->se);
				break;
			case SRC_SIGNAL: {
				struct signalfd_siginfo si;
				if (read(fs->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					fs->stop = true;
				break;
			}
			}
		}
		/* the pass waits for requests only: ended runs and ready lines
		 * that keep coming must not hold back the starts they free */
		bool overdue = pending && mono_ms() - sched_asked >= SCHED_MAX_DELAY_MS;
		if (pending && !fs->stop && (n == 0 || overdue || !request_waiting(fs))) {
			jf_engine_schedule_run(fs->e, overdue);
			sched_asked = 0;
		}
	}
	free(buf.mem);
	return rc;
}

void jf_fs_free(struct jf_fs *fs)
{
	if (!fs)
		return;
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
	if (fs->epfd >= 0)
		close(fs->epfd);
	if (fs->tfd >= 0)
		close(fs->tfd);
	if (fs->sfd >= 0)
		close(fs->sfd);
	if (fs->e)
		jf_engine_stop_billing(fs->e);
	jf_engine_free(fs->e);
	free(fs->mountpoint);
	free(fs);
}

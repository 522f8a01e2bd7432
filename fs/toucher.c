/*
 * toucher.c - invalidations from the loop, touches from a helper process
 * that holds no /dev/fuse (toucher.h says why).
 *
 * What stays true:
 * - The helper's only descriptors are 0-2 (/dev/null) and its end of a socket
 *   pair (fd 3).  It closes everything else before it does anything on the
 *   mount, so it may be forked at any time, even after the mount.
 * - fuse_lowlevel_notify_inval_inode() is called by the loop's thread
 *   only, with offset -1 (attributes only: no page lock, nothing that
 *   waits for the loop).
 * - items[0..n) are distinct inodes (queued maps ino -> 1); out[off..len)
 *   are touch lines not yet taken by the socket.
 *
 * The helper is forked, not exec'd, by a process that may have threads, so
 * the child does nothing but system calls on memory it already has.
 */
#include "fs/toucher.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/idmap.h"

#define TOUCH_MAX   4096 /* queued inodes */
#define TOUCH_PATH  512
#define OUT_CAP     (1024 * 1024) /* touch lines the socket has not taken */
#define COALESCE_MS 100
#define RESPAWN_MS  1000 /* a helper that died is replaced at most this often */
#define HELPER_FD   3

struct item {
	uint64_t ino;
	char path[TOUCH_PATH];
};

struct jf_toucher {
	char *mnt;
	size_t mntlen;
	_Atomic pid_t pid; /* the helper, 0 when there is none (readers look at it) */
	int wfd;           /* our end of its socket, -1 when there is none */
	int tfd;
	bool armed;
	bool stopped;
	int64_t spawned_ms;
	struct item *items;
	size_t n;
	struct jf_idmap queued;
	char *cre; /* "+path\n" lines of creates queued since the last flush */
	size_t crelen, ncre;
	char *out;
	size_t off, len;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the helper (the child: system calls only) ---- */

static void touch_one(const char *mnt, size_t mntlen, const char *rel, size_t rellen)
{
	bool create = rel[0] == '+';
	if (create) {
		rel++;
		rellen--;
	}
	char full[4096 + TOUCH_PATH];
	if (mntlen + 1 + rellen + 1 > sizeof(full))
		return;
	memcpy(full, mnt, mntlen);
	full[mntlen] = '/';
	memcpy(full + mntlen + 1, rel, rellen);
	full[mntlen + 1 + rellen] = '\0';
	if (create) {
		/* answered with the entry that exists: see jf_toucher_create */
		if (mkdir(full, 0755) < 0) {
			/* EEXIST: the kernel held it already, and a watcher saw it then */
		}
		return;
	}
	int fd = open(full, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "\n", 1) < 0) {
		/* the touch is a courtesy */
	}
	close(fd);
}

static void close_all_but(int keep)
{
	if (close_range(0, (unsigned)keep - 1, 0) == 0 &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
	/* a kernel before 5.9: one by one */
	struct rlimit rl;
	int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur
										 : 1 << 20;
	for (int fd = 0; fd < max; fd++)
		if (fd != keep)
			close(fd);
}

static void helper_main(int rfd, const char *mnt, size_t mntlen, pid_t parent)
{
	/* first of all: hold nothing of the daemon's, /dev/fuse above all */
	if (rfd != HELPER_FD && dup2(rfd, HELPER_FD) < 0)
		_exit(1);
	close_all_but(HELPER_FD);
	int null = open("/dev/null", O_RDWR);
	if (null != 0)
		_exit(1);
	if (dup2(0, 1) < 0 || dup2(0, 2) < 0)
		_exit(1);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "jobfs-touch");
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir("/") < 0)
		_exit(1);
	char buf[64 * 1024];
	size_t have = 0;
	for (;;) {
		ssize_t r = read(HELPER_FD, buf + have, sizeof(buf) - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(0);
		have += (size_t)r;
		size_t start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			if (i > start)
				touch_one(mnt, mntlen, buf + start, i - start);
			start = i + 1;
		}
		if (start == 0 && have == sizeof(buf))
			have = 0; /* a line longer than the buffer: not ours */
		else {
			memmove(buf, buf + start, have - start);
			have -= start;
		}
	}
}

static int spawn(struct jf_toucher *t)
{
	/* a socket, not a pipe: send(MSG_NOSIGNAL) to a helper that died is
	 * EPIPE whatever this process does with SIGPIPE */
	int p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return -1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (pid == 0)
		helper_main(p[0], t->mnt, t->mntlen, parent);
	close(p[0]);
	int fl = fcntl(p[1], F_GETFL);
	if (fl >= 0)
		fcntl(p[1], F_SETFL, fl | O_NONBLOCK);
	int buf = OUT_CAP; /* best effort: fewer rounds under load */
	setsockopt(p[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	shutdown(p[1], SHUT_RD);
	t->pid = pid;
	t->wfd = p[1];
	t->spawned_ms = mono_ms();
	return 0;
}

/* The helper is gone (EPIPE) or being given up: reap it if it has ended. */
static void drop_helper(struct jf_toucher *t, bool wait)
{
	if (t->wfd >= 0) {
		close(t->wfd);
		t->wfd = -1;
	}
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		if (waitpid(t->pid, NULL, wait ? 0 : WNOHANG) == t->pid)
			t->pid = 0;
	}
}

/* ---- the daemon's side ---- */

struct jf_toucher *jf_toucher_new(const char *mnt)
{
	struct jf_toucher *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->wfd = -1;
	t->mnt = strdup(mnt);
	t->mntlen = t->mnt ? strlen(t->mnt) : 0;
	t->items = malloc(TOUCH_MAX * sizeof(*t->items));
	t->out = malloc(OUT_CAP);
	t->cre = malloc(OUT_CAP);
	t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	jf_idmap_init(&t->queued);
	if (!t->mnt || !t->items || !t->out || !t->cre || t->tfd < 0 || spawn(t) < 0) {
		int e = errno;
		jf_toucher_free(t);
		errno = e;
		return NULL;
	}
	return t;
}

void jf_toucher_stop(struct jf_toucher *t)
{
	if (!t)
		return;
	t->stopped = true;
	drop_helper(t, false);
}

bool jf_toucher_gone(struct jf_toucher *t)
{
	if (!t || t->pid <= 0)
		return true;
	if (waitpid(t->pid, NULL, WNOHANG) == t->pid)
		t->pid = 0;
	return t->pid <= 0;
}

void jf_toucher_free(struct jf_toucher *t)
{
	if (!t)
		return;
	t->stopped = true;
	drop_helper(t, false);
	/* a helper still inside a request of a connection someone else keeps
	 * alive cannot be reaped: give it a moment, then leave it */
	for (int i = 0; t->pid > 0 && i < 100; i++) {
		usleep(10 * 1000);
		jf_toucher_gone(t);
	}
	if (t->tfd >= 0)
		close(t->tfd);
	jf_idmap_release(&t->queued);
	free(t->items);
	free(t->out);
	free(t->cre);
	free(t->mnt);
	free(t);
}

pid_t jf_toucher_pid(const struct jf_toucher *t)
{
	return t ? t->pid : 0;
}

int jf_toucher_fd(const struct jf_toucher *t)
{
	return t ? t->tfd : -1;
}

static void arm(struct jf_toucher *t)
{
	if (t->armed)
		return;
	struct itimerspec its = { .it_value = { 0, COALESCE_MS * 1000000L } };
	if (timerfd_settime(t->tfd, 0, &its, NULL) == 0)
		t->armed = true;
}

void jf_toucher_queue(struct jf_toucher *t, uint64_t ino, const char *path)
{
	if (!t || t->stopped || ino == 0 || ino > INT64_MAX)
		return;
	if (jf_idmap_get(&t->queued, (int64_t)ino) || t->n >= TOUCH_MAX)
		return;
	if (!jf_idmap_put(&t->queued, (int64_t)ino, (void *)1))
		return;
	struct item *it = &t->items[t->n++];
	it->ino = ino;
	size_t l = path ? strlen(path) : 0;
	if (l >= sizeof(it->path))
		l = 0; /* too long to be ours: invalidate only */
	memcpy(it->path, path ? path : "", l);
	it->path[l] = '\0';
	arm(t);
}

bool jf_toucher_create(struct jf_toucher *t, const char *path)
{
	if (!t || t->stopped || !path)
		return false;
	size_t l = strlen(path);
	if (l == 0 || l >= TOUCH_PATH || t->ncre >= JF_TOUCH_CREATES || t->crelen + l + 2 > OUT_CAP)
		return false;
	t->cre[t->crelen++] = '+';
	memcpy(t->cre + t->crelen, path, l);
	t->crelen += l;
	t->cre[t->crelen++] = '\n';
	t->ncre++;
	arm(t);
	return true;
}

void jf_toucher_flush(struct jf_toucher *t, struct fuse_session *se)
{
	if (!t)
		return;
	uint64_t ticks;
	if (read(t->tfd, &ticks, sizeof(ticks)) < 0) {
		/* not expired yet, or already read: flush all the same */
	}
	t->armed = false;
	if (t->stopped)
		return;
	if (t->off > 0) {
		memmove(t->out, t->out + t->off, t->len - t->off);
		t->len -= t->off;
		t->off = 0;
	}
	for (size_t i = 0; i < t->n; i++) {
		struct item *it = &t->items[i];
		if (se)
			fuse_lowlevel_notify_inval_inode(se, it->ino, -1, 0);
		size_t l = strlen(it->path);
		if (l && t->len + l + 1 <= OUT_CAP) {
			memcpy(t->out + t->len, it->path, l);
			t->out[t->len + l] = '\n';
			t->len += l + 1;
		}
	}
	/* creates after the touches: a directory's own files were touched
	 * first, while no watcher could watch them yet */
	size_t take = t->crelen <= OUT_CAP - t->len ? t->crelen : 0;
	if (take) {
		memcpy(t->out + t->len, t->cre, take);
		t->len += take;
	}
	t->crelen = t->ncre = 0;
	t->n = 0;
	jf_idmap_release(&t->queued);
	jf_idmap_init(&t->queued);
	if (t->wfd < 0) {
		/* the helper died: a new one, not too often */
		jf_toucher_gone(t);
		if (t->pid > 0 || mono_ms() - t->spawned_ms < RESPAWN_MS || spawn(t) < 0) {
			if (t->len)
				arm(t);
			return;
		}
	}
	while (t->off < t->len) {
		ssize_t w = send(t->wfd, t->out + t->off, t->len - t->off, MSG_NOSIGNAL);
		if (w > 0) {
			t->off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			drop_helper(t, false);
		break;
	}
	if (t->off == t->len)
		t->off = t->len = 0;
	else
		arm(t);
}

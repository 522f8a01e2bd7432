/*
 * toucher.h - kernel invalidations and inotify touches for changes made
 * inside the daemon, without ever waiting on the mount while holding it.
 *
 * The kernel raises no inotify event for a change it did not see, so after
 * a change each affected file is invalidated (fuse_lowlevel_notify_inval_
 * inode, from the loop's own thread) and "touched": opened for writing
 * and written one byte through the mount, which the write handler knows by
 * the opener's pid and ignores (a reader thread answers it: serve.c).  The
 * touch needs the daemon to answer it, so it cannot come from the
 * daemon's own threads; and whoever makes it must not hold
 * /dev/fuse, or a daemon killed while a touch waits leaves a process that
 * keeps the connection alive waiting for an answer only the dead daemon
 * could give: the kernel never aborts the connection, and every process
 * that touches the mount hangs for ever.  So touches come from a helper
 * process ("jobfs-touch") that holds no descriptor but its end of a socket:
 * when the daemon dies, the kernel aborts the connection, the helper's
 * request fails, and it dies of its parent-death signal.
 *
 * Changes are coalesced: the first queued one arms a 100 ms timer (the fd
 * the loop polls); jf_toucher_flush() then sends everything queued.
 */
#ifndef JF_TOUCHER_H
#define JF_TOUCHER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct fuse_session;
struct jf_toucher;

/*
 * Starts the helper for the mount at mnt (absolute; copied).  Call it
 * before the mount: the helper is forked with none of the daemon's
 * descriptors (it closes them all first, whenever it is forked).  NULL on
 * failure (errno set).
 */
struct jf_toucher *jf_toucher_new(const char *mnt);
/* Gives the helper up: it is killed, and reaped once its request is answered. */
void jf_toucher_stop(struct jf_toucher *t);
/* Has the helper ended and been reaped (jf_toucher_stop)?  Serve requests until it has. */
bool jf_toucher_gone(struct jf_toucher *t);
/* Reaps (waiting at most a moment) and frees.  NULL does nothing. */
void jf_toucher_free(struct jf_toucher *t);

/* The pid whose opens and writes are touches. */
pid_t jf_toucher_pid(const struct jf_toucher *t);
/* The timer the loop polls; when readable, call jf_toucher_flush(). */
int jf_toucher_fd(const struct jf_toucher *t);

/* Queue an attribute invalidation of ino and, path non-NULL (relative to
 * the mount), a touch of it.  Deduplicated by ino; at most 4096 queued. */
void jf_toucher_queue(struct jf_toucher *t, uint64_t ino, const char *path);
/*
 * Queue an IN_CREATE for a directory the daemon made itself (a task's
 * directory when its row is made): the helper mkdir()s path (relative to
 * the mount), which the daemon answers with the entry that exists - the
 * lookup before it must answer ENOENT to the helper (fs: `creating`), or
 * the kernel refuses the mkdir itself, EEXIST, and raises nothing.  So
 * the kernel instantiates the dentry and raises IN_CREATE | IN_ISDIR in
 * the parent, which recursive watchers (inotifywait -r, watchdog) take
 * to add a watch there.  At most JF_TOUCH_CREATES queued between two
 * flushes; false when this one was not queued.
 */
#define JF_TOUCH_CREATES 16384
bool jf_toucher_create(struct jf_toucher *t, const char *path);
/* The timer fired: invalidate what is queued (se may be NULL: no
 * invalidation) and hand its paths to the helper; what its socket cannot
 * take now waits for the next round. */
void jf_toucher_flush(struct jf_toucher *t, struct fuse_session *se);

#endif

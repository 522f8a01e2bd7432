/*
 * perm.h - who may do what to which object of the tree.
 *
 * The rules alone, with no FUSE request and no store: the caller describes
 * the object (struct jf_perm_obj: what it is, who owns it, the queue it is
 * in and whether that queue is private) and the daemon (struct
 * jf_perm_daemon), and asks whether uid may act on it.  fs/resolve.c fills
 * the description from the store; every FUSE operation asks before it acts;
 * the mode bits stat shows come from the same rules, so `ls -l`, `test -w`
 * and what the operations allow agree.
 *
 * The rules:
 *   - Owner: the uid that made the queue, group or batch.  A group's tasks,
 *     nodes and files belong to the group's owner; /, /cluster, /billing,
 *     /queues and /tasks belong to the daemon's user.
 *   - Admins (root, and the daemon's own user) pass every rule; what no one
 *     may do (write a status file, rewrite an accepted spec) stays refused.
 *   - Everyone who can reach the mount may look and read, except inside a
 *     private queue (spec `private: true`): there only the queue's owner and
 *     the admins see anything.  The private queue's directory itself still
 *     shows in /queues (mode 0700, like a Unix directory of that mode);
 *     listing it, looking up a name in it, opening or stat-ing anything in
 *     it is EACCES for the others.
 *   - Only the owner (and the admins) write spec.yaml and ctl, rename, rmdir,
 *     truncate, chmod or touch an object, or put an editor's temporary file
 *     beside its spec.
 *   - Anyone may make a queue in /queues, a batch in /tasks and a group in a
 *     queue that is not private (queues are shared): the new object is its
 *     maker's.  A daemon that is not root cannot run tasks as anyone but
 *     itself, so there only the admins may make anything (no other user may
 *     have work run with the daemon user's rights).
 *   - /images is the host's, the daemon user's: everyone reads it, only the
 *     admins remove an image (rmdir), and no one makes anything in it.
 */
#ifndef JF_PERM_H
#define JF_PERM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/inode.h"

/* The daemon, as the rules see it. */
struct jf_perm_daemon {
	uint32_t uid; /* its user: an admin */
	bool root;    /* runs as root: starts tasks as their owners */
};

/* One object (inode) of the tree. */
struct jf_perm_obj {
	enum jf_obj obj;
	enum jf_file file;
	uint32_t owner;       /* queue, group or batch owner; else the daemon's user */
	uint32_t queue_owner; /* owner of the queue it is in (in_queue) */
	bool in_queue;        /* a queue, or something inside one */
	bool private_;        /* ... and that queue is private */
	bool spec_locked;     /* a group's spec.yaml once accepted: EROFS */
	mode_t scratch_mode;  /* an editor's temporary file: the mode it was given */
};

enum jf_perm_act {
	JF_PERM_LOOKUP, /* see the object itself: lookup of its name, stat */
	JF_PERM_READ,   /* read a file; list or search a directory */
	JF_PERM_WRITE,  /* write or truncate a file; make, remove or rename
			 * entries of a directory */
	JF_PERM_OWN,    /* act on the object as its owner: rmdir, rename,
			 * unlink it; chmod, chown, utimes */
};

/* Is uid an admin (root or the daemon's user)? */
bool jf_perm_admin(const struct jf_perm_daemon *d, uint32_t uid);

/* 0 when uid may do act on o; else EACCES (or EROFS: an accepted spec,
 * which no one may write). */
int jf_perm_check(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, uint32_t uid,
		  enum jf_perm_act act);

/* The FUSE access op: mask of R_OK, W_OK, X_OK (0 = F_OK).  X on a
 * directory is READ (search); no file is executable.  0 or an errno. */
int jf_perm_access(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, uint32_t uid,
		   int mask);

/* Permission bits (07777) that tell what the rules allow: the owner class
 * is o->owner, group and other are any user who is neither the owner, the
 * queue's owner nor an admin.  Directories that anyone may make entries in
 * but only an entry's owner remove (/queues, /tasks, a queue's groups/)
 * carry the sticky bit, as /tmp does. */
mode_t jf_perm_mode(const struct jf_perm_daemon *d, const struct jf_perm_obj *o);

/* Does an accepted queue spec (text as stored) make the queue private?  A
 * text that mentions `private` but cannot be parsed counts as private. */
bool jf_perm_queue_private(const char *spec);

#endif

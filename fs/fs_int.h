/*
 * fs_int.h - what the tree's .c files share.
 *
 * struct jf_fs is the daemon context passed as FUSE userdata: the only
 * mutable global.  Per-open state lives in struct fh, stored in fi->fh and
 * freed in release.
 */
#ifndef JF_FS_INT_H
#define JF_FS_INT_H


#include <fuse_lowlevel.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/stat.h>

#include "engine/engine.h"
#include "engine/idmap.h"
#include "fs/fs.h"
#include "fs/inode.h"
#include "fs/perm.h"
#include "fs/toucher.h"
#include "store/store.h"

#define JF_SCRATCH_MAX 64 /* editor temp files at once */

struct scratch {
	int64_t id;             /* > 0 while used */
	enum jf_obj parent_obj; /* JF_O_QUEUE or JF_O_GROUP */
	int64_t parent_id;
	char name[256];
	char *data;
	size_t len;
	mode_t mode;
	int64_t mtime_ms;
};

struct watcher {
	struct watcher *next;
	enum jf_scope scope;
	int64_t id;
	int64_t off;        /* next byte of the events text to deliver */
	fuse_req_t pending; /* a read waiting for a change */
	size_t pending_size;
	struct fuse_pollhandle *ph;
	bool interrupted;
	uid_t uid; /* the opener: what it has seen moves with what it is given */
};

enum fh_kind {
	FH_SNAPSHOT, /* rendered at open; reads serve the snapshot */
	FH_EVENTS,   /* reads go to the store at their offset */
	FH_FILE,     /* a log file on disk */
	FH_EMPTY,    /* logs of a node that never ran, logs.prev with none */
	FH_WATCH,
	FH_SPEC,    /* writing a spec */
	FH_CTL,     /* writing a verb */
	FH_SCRATCH, /* an editor's temp file */
	FH_TOUCH,   /* our own notifier's touch: ignored */
};

struct fh {
	enum fh_kind kind;
	struct jf_ino ino;
	char *buf; /* snapshot, or bytes written so far; FH_FILE: the path */
	size_t len, cap;
	int fd;        /* FH_FILE: the log file X, -1 while there is none */
	int fd1;       /* FH_FILE: X.1, the part rotated out last, or -1
			* (other kinds: unused, 0) */
	ino_t fino;    /* FH_FILE: the inode of X when fd was opened */
	bool dirty;    /* written since the last submit */
	size_t base;   /* FH_CTL: bytes of earlier lines, already acted on */
	bool poisoned; /* refused at write(): close reports it again */
	int poison_errno;
	uid_t uid;
	gid_t gid;
	struct watcher *w;
	struct fh *prev, *next; /* in jf_fs.fhs while the kernel holds it open */
};

/* A rendering in the render cache: never changed once put there (a newer
 * one replaces it), and retired, not freed, when it goes (serve.c) */
struct cached {
	char *data;
	size_t len;
	int64_t at_ms;
	struct cached *retired_next;
};


struct jf_fs {
	struct jf_engine *e;
	struct jf_store *st;
	struct fuse_session *se;
	char *mountpoint;
	bool mounted;
	double attr_timeout;
	uid_t uid; /* the daemon's user: owner of the fixed tree */
	gid_t gid;
	struct jf_perm_daemon perm; /* the daemon, as the permission rules see it */
	struct jf_idmap cache;      /* ino -> struct cached: what getattr measured, for
				     * the files of queues, groups, tasks and nodes */
	struct jf_idmap gcache;     /* the same for every other file (cluster, billing) */
	struct jf_idmap looked;     /* ino -> (void *)(kernel lookups): what the kernel
				     * holds, all it can cache or watch (notify.c) */
	struct jf_idmap logsize;    /* log-file ino -> (void *)(last size + 1), with
				     * JF_LOG_IDLE while its node does not run */
	struct jf_idmap made;       /* group id -> (void *)(task rows made + 1), for the
				     * tasks/ directories the kernel holds (notify.c) */
	struct jf_idmap creating;   /* (group id << 32 | task index) -> (void *)(when
				     * queued, ms + 1): task directories whose
				     * IN_CREATE the toucher is raising */
	struct jf_idmap mtimes;     /* file ino -> struct mt (mtime.c) */
	struct jf_idmap seen;       /* (scope, object, uid) -> (void *)(events offset
				     * + 1) that user has seen (notify.c: a watch's start) */
	struct jf_idmap specs;      /* group id -> parsed spec (specs.c) */
	struct jf_idmap listed;     /* directory ino -> (void *)(ms + 1): its entries
				     * last came or went */
	int64_t start_ms;           /* the daemon's start, engine clock */
	struct scratch scratch[JF_SCRATCH_MAX];
	int64_t scratch_next;
	struct watcher *watchers;
	struct fh *fhs;        /* open handles: freed at exit if no release came */
	struct jf_toucher *nt; /* invalidations and inotify touches */
	struct jf_loop *loop;  /* the daemon's (engine/loop.h), not owned */
	int logs_timer;
	int64_t read_said_us, write_said_us; /* the longest waits last said on stderr */
	int sfd;
	_Atomic bool stop;
	/* serve.c */
	pthread_rwlock_t rw;     /* the tree's memory above (see serve.c) */
	pthread_mutex_t mapmu;   /* its maps and lists (recursive; see serve.c) */
	pthread_mutex_t fhmu[8]; /* a reading handle's own state, by its address */
	_Atomic uint64_t gen;    /* changes notified so far (the render cache) */
	struct cached *retired;  /* renderings gone from the cache, freed by jf_fs_lock */
	void *retired_specs;     /* the same for parsed specs (specs.c) */
	pthread_mutex_t fwd_mu;
	struct fwd *fwd_head, **fwd_tail; /* writes readers handed to the loop */
	int fwd_fd;                       /* eventfd: the loop looks at fwd_head */
	int stop_fd;                      /* eventfd: readers end */
	struct fs_reader *readers;
	int nreaders;
	_Atomic int64_t read_wait_us;  /* the longest a read waited for the lock */
	_Atomic int64_t write_wait_us; /* the longest a write waited, read to run by the loop */
	/* images.c: the numbers of /images' names, the cache */
	struct jf_fs_images *images;
};

/*
 * The store a request reads: on a reader thread its own connection
 * (serve.c), which shows the last commit; on the loop's thread the
 * engine's.
 */
extern _Thread_local struct jf_store *jf_fs_reader_st;
static inline struct jf_store *ST(struct jf_fs *fs)
{
	return jf_fs_reader_st ? jf_fs_reader_st : fs->st;
}

/* specs.c: the parsed accepted spec of group g (borrowed: valid while the
 * tree's lock is held), NULL if none. */
const struct jf_spec *jf_fs_spec(struct jf_fs *fs, const struct jf_group_rec *g);
void jf_fs_specs_release(struct jf_fs *fs);
/* Free the parsed specs that went (under the lock held exclusively). */
void jf_fs_specs_reclaim(struct jf_fs *fs);

/* errno.c */
int jf_errno(enum jf_err e);

/* render.c: a snapshot of a rendered file as reader sees it (the billing
 * files leave out what reader may not see); *out is malloc'd.  Returns 0
 * or an errno. */
int jf_render(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, char **out, size_t *len);
/* May ino's content differ from reader to reader (the billing files)?  Its
 * attributes are then never cached by the kernel, which keeps one copy for
 * every user. */
bool jf_file_per_reader(const struct jf_ino *ino);
/* ... and is reader's view of it its own (not an admin's, who sees all)? */
bool jf_render_per_reader(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader);
/* The path of a node's log file for ino (logs, stdout, stderr, logs.prev),
 * or "" when there is none. */
void jf_log_path(struct jf_fs *fs, const struct jf_ino *ino, char *buf, size_t n);
/* The size the tree shows for the log file at path (from jf_log_path):
 * path.1, the part the shim rotated out last, and path together; 0 for "". */
int64_t jf_log_size(const char *path);
/* coststat.c: cost as it goes (reference 9.3), into a status object */
void jf_put_cost_rate(struct jf_fs *fs, json_t *o, int64_t rate);
void jf_put_spot_savings(struct jf_fs *fs, json_t *o, enum jf_scope scope, int64_t id, bool maybe);
void jf_put_group_estimate(struct jf_fs *fs, json_t *o, const struct jf_group_rec *g,
			   int64_t so_far, int64_t open, const int64_t *counts);
void jf_put_queue_estimate(struct jf_fs *fs, json_t *o, int64_t queue_id, int64_t so_far,
			   int64_t open, const int64_t *counts);
/* status.c: status (json false) or status.json of an object. */
int jf_render_status(struct jf_fs *fs, const struct jf_ino *ino, bool json, char **out,
		     size_t *len);
/* plots.c (reference 11): a group's or batch's timeline.svg,
 * /cluster/usage.svg (call with the view lock held), /billing/cost.svg of
 * the rows view v shows (NULL: all). */
int jf_render_timeline(struct jf_fs *fs, int64_t group_id, char **out, size_t *len);
int jf_render_usage(struct jf_fs *fs, char **out, size_t *len);
int jf_render_cost_svg(struct jf_fs *fs, const struct jf_ledger_view *v, char **out, size_t *len);
/* Is this file rendered (snapshot) rather than streamed? */
bool jf_file_rendered(enum jf_file f);

/* resolve.c */
const struct cached *jf_cached_render(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader,
				      int *err);
int jf_resolve(struct jf_fs *fs, const struct jf_ino *parent, const char *name,
	       struct jf_ino *child);
/* The attributes reader sees (a rendered file's size is of reader's rendering). */
int jf_stat(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, struct stat *stbuf);

/* What the tree knows of an object: the permission rules' view of it
 * (perm.h), the owner stat shows, and its group's state and finish time. */
struct jf_obj_info {
	struct jf_perm_obj perm;
	uid_t uid;
	gid_t gid;
	int gstate;          /* its group's state, -1 if not a group's own */
	int64_t own_done_ms; /* when the object itself (group, task, node) finished,
			      * 0 while it has not */
	int64_t born_ms;     /* when it was made (a task: its group's acceptance), 0
			      * for the fixed tree */
	int64_t accepted_ms; /* its group's acceptance, 0 for a draft */
	int64_t changed_ms;  /* an object that says itself when it last changed (an
			      * image: its record's mtime), 0 if none: a change of
			      * its files at no later time is dated when seen */
};
/* 0, or ENOENT when the object is gone. */
int jf_obj_info(struct jf_fs *fs, const struct jf_ino *ino, struct jf_obj_info *in);
int jf_stat_info(struct jf_fs *fs, const struct jf_ino *ino, const struct jf_obj_info *in,
		 uid_t reader, struct stat *stbuf);
/*
 * May the request's caller do act on ino?  0, or the errno to reply
 * (EACCES, EROFS, ENOENT).  Admins pass at once, without a look at the
 * store; the operations' own checks (read-only files, specs once accepted,
 * what may be made where) still apply to them.
 */
int jf_perm_req(struct jf_fs *fs, fuse_req_t req, const struct jf_ino *ino, enum jf_perm_act act);
/* ops_file.c: 0 when a spec.yaml may be written (a queue's, a draft's),
 * EROFS once accepted (the tree answers EACCES), ENOENT. */
int jf_spec_writable(struct jf_fs *fs, const struct jf_ino *i);
/* A Warning in the group's events: its accepted spec.yaml was not how'd. */
void jf_warn_spec_locked(struct jf_fs *fs, const struct jf_ino *i, const char *how);
/* truncate(2) of a draft's spec.yaml to size: submits its first size bytes
 * (a longer size is EINVAL: NUL bytes are no spec).  0 or an errno. */
int jf_spec_truncate(struct jf_fs *fs, const struct jf_ino *i, off_t size,
		     const struct fuse_ctx *ctx);
/* stores.c: a volume's `data` link: the host path of its directory. */
void jf_link_target(struct jf_fs *fs, const struct jf_ino *ino, char *buf, size_t n);
/* stores.c: the status object of a volume or object source, NULL once
 * gone; the caller's (json_decref). */
struct json_t *jf_stores_status(struct jf_fs *fs, const struct jf_ino *ino);

/* resolve.c: the node (its inode id: task id << 10 | index) whose
 * attempt is attempts row attempt_id, and the row into *a when a is not
 * NULL (the caller's to jf_attempt_release); false (and 0) when there is
 * none. */
bool jf_attempt_node(struct jf_fs *fs, int64_t attempt_id, int64_t *node_ino,
		     struct jf_attempt_rec *a);
/* The object's path below the mount, "" for root; false if gone. */
bool jf_obj_path(struct jf_fs *fs, enum jf_obj obj, int64_t id, char *buf, size_t n);
struct scratch *jf_scratch_find(struct jf_fs *fs, enum jf_obj pobj, int64_t pid, const char *name);
struct scratch *jf_scratch_get(struct jf_fs *fs, int64_t id);

/* mtime.c: the time stat shows for ino (README "Times"), in ms.  data/len:
 * a rendered file's content as reader sees it; size: an events file's. */
int64_t jf_mtime(struct jf_fs *fs, const struct jf_ino *ino, const struct jf_obj_info *in,
		 uid_t reader, const char *data, size_t len, int64_t size);
/* The entries of this directory came or went now (queues/, groups/, tasks/, /tasks). */
void jf_mtime_listing_changed(struct jf_fs *fs, enum jf_obj obj, int64_t id);
/* The engine changed what ino shows, now (the first hint since the last stat counts). */
void jf_mtime_hint(struct jf_fs *fs, uint64_t ino);
/* The kernel forgot ino: what was remembered of it goes. */
void jf_mtime_forget(struct jf_fs *fs, uint64_t ino);
void jf_mtime_release(struct jf_fs *fs);

/* serve.c: the tree's lock.  Shared: readers for a request, the loop's
 * thread around a change notification and the log poll; exclusive: the
 * loop's thread around a write (at the outermost level it also frees what
 * was retired).  A thread holding it exclusively may take it shared. */
void jf_fs_lock(struct jf_fs *fs);
void jf_fs_lock_shared(struct jf_fs *fs);
void jf_fs_unlock(struct jf_fs *fs);
/* Let the lock go wholly while the engine runs a step (what was read of
 * the tree's memory before may change meanwhile); returns how it was
 * held, for jf_fs_enter. */
unsigned jf_fs_leave(struct jf_fs *fs);
void jf_fs_enter(struct jf_fs *fs, unsigned held);
/* The maps and lists of struct jf_fs (the render cache, what the kernel
 * holds, mtimes, seen, specs, watchers, handles): a leaf lock, recursive;
 * nothing that takes another lock runs under it. */
void jf_fs_maps_lock(struct jf_fs *fs);
void jf_fs_maps_unlock(struct jf_fs *fs);
/* A reading handle's own state (a log's descriptors), against two reads of
 * it at once. */
pthread_mutex_t *jf_fh_mu(struct jf_fs *fs, const struct fh *h);
/* The changes notified before this request began (readers: before its
 * snapshot; the loop's thread: now). */
uint64_t jf_fs_req_gen(struct jf_fs *fs);
/* c has gone from the render cache (under the map lock): freed by the next
 * exclusive jf_fs_lock, when no reader can hold it. */
void jf_fs_retire(struct jf_fs *fs, struct cached *c);
#define JF_FS_READERS 2
/* Start nreaders reader threads (after the mount, with signals blocked), at
 * nice value nice where the daemon may (said on stderr if not and asked). */
enum jf_err jf_serve_start(struct jf_fs *fs, int nreaders, int nice, bool asked,
			   struct jf_error *err);
/* Stop and join them; run what they handed over and the loop did not. */
void jf_serve_stop(struct jf_fs *fs);
/* The ops table's writes: handed to the loop's thread from a reader. */
void jf_fwd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi);
void jf_fwd_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void jf_fwd_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void jf_fwd_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void jf_fwd_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		   const char *newname, unsigned int flags);
void jf_fwd_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi);
void jf_fwd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void jf_fwd_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		  struct fuse_file_info *fi);
void jf_fwd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void jf_fwd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void jf_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);

/* ops.c, ops_write.c, ops_file.c */
extern const struct fuse_lowlevel_ops jf_fs_ops;

static inline struct jf_fs *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline bool split(fuse_ino_t ino, struct jf_ino *out)
{
	return jf_ino_split(ino, out);
}

/* Does req come from the toucher's helper (toucher.h)?  Its opens, writes
 * and mkdirs change nothing: they are answered with what is there. */
static inline bool jf_from_toucher(fuse_req_t req)
{
	struct jf_fs *fs = FS(req);
	return fs->nt && fuse_req_ctx(req)->pid == jf_toucher_pid(fs->nt);
}

void jf_reply_entry(fuse_req_t req, struct jf_fs *fs, const struct jf_ino *c);
enum jf_err jf_submit_text(struct jf_fs *fs, const struct jf_ino *spec_ino, const char *text,
			   size_t len, uid_t uid, gid_t gid);
void jf_scratch_free(struct scratch *s);
struct fh *jf_fh_new(enum fh_kind kind, const struct jf_ino *ino);
/* An opened handle is tracked until its release.  The kernel sends release
 * in the background after close(); an unmount right after drops it, so the
 * handles still listed at exit are freed then. */
void jf_fh_track(struct jf_fs *fs, struct fh *h);
void jf_fh_untrack(struct jf_fs *fs, struct fh *h);
void jf_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void jf_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void jf_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		  const char *newname, unsigned int flags);
void jf_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi);
void jf_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void jf_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void jf_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void jf_op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		 struct fuse_file_info *fi);
void jf_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void jf_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void jf_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph);

/* notify.c */
#define JF_LOG_IDLE ((uintptr_t)1 << 62) /* in logsize: nothing writes the log now */
/* Does the kernel hold ino (looked up and not forgotten)? */
bool jf_ino_known(struct jf_fs *fs, uint64_t ino);
/* The kernel was handed ino (an entry reply): count it. */
void jf_ino_looked(struct jf_fs *fs, uint64_t ino);
/* The kernel forgot nlookup of its lookups of ino. */
void jf_ino_forget(struct jf_fs *fs, uint64_t ino, uint64_t nlookup);
/* Is name in the group's tasks/ a directory whose IN_CREATE the toucher is
 * raising (its lookup then answers the toucher ENOENT)?  take: and it is
 * raised now (the toucher's mkdir), so forget it. */
bool jf_ino_creating(struct jf_fs *fs, int64_t group_id, const char *name, bool take);
void jf_fs_on_change(void *ctx, const struct jf_change *ch);
void jf_fs_poll_logs(struct jf_fs *fs);
void jf_watch_wake(struct jf_fs *fs);
/* uid has seen the object's events up to off: it read them there, or a
 * write of its acted on the object (off < 0: up to what they hold now). */
void jf_watch_seen(struct jf_fs *fs, enum jf_scope sc, int64_t id, uid_t uid, int64_t off);
/* Where a watch uid opens on the object starts: after what uid has seen of
 * it, if that is not all there is, else at the end. */
int64_t jf_watch_start(struct jf_fs *fs, enum jf_scope sc, int64_t id, uid_t uid);
void jf_watch_read(struct jf_fs *fs, fuse_req_t req, struct watcher *w, size_t size);
/* The watched object is finished (Succeeded, Failed, Stopped): no change will come. */
bool jf_watch_finished(struct jf_fs *fs, const struct watcher *w);

#endif

/*
 * backend.h - where nodes run.
 *
 * A backend starts a node's processes, signals them, and reports when they
 * have ended.  It knows nothing of the tree, the store or the scheduler:
 * the engine hands it a struct jf_launch and an opaque 64-bit cookie (the
 * engine's attempt id) and later gets back a struct jf_run_result carrying
 * the same cookie.
 *
 * Every run has a handle, a short string the engine stores in SQLite, from
 * which a restarted daemon adopts the run again (jf_backend_adopt): a run's
 * processes outlive the daemon, and its end is never lost.
 *
 * The backend exposes one pollable fd; when it is readable the engine calls
 * jf_backend_reap() until it returns 0.
 *
 * A start may be confirmed later: start() then returns at once with the
 * run's handle (good for signal() from that moment) and `pending` set, and
 * reap() later hands back one result with `started` set, carrying the real
 * start time and pid, before the run's end.  A run that never got going
 * may end with no `started` result before it (then `start_failed` is set).
 * A backend whose start() knows the start time at once leaves `pending`
 * false and never reports `started`.
 *
 * backends/local: processes on this host, each node under a small
 * supervisor, tools/jobfs-shim, that records the exit status and the real
 * start and end times in the run directory.  backends/slurm (later): jobs
 * on a Slurm cluster.
 */
#ifndef JF_BACKEND_H
#define JF_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

#define JF_HANDLE_MAX 64
#define JF_RUN_MAX_PROCS 16
#define JF_RUN_MSG_MAX 256

/* One container: a process (tree) started from argv with its own env. */
struct jf_proc {
	const char *name;          /* container name, "main" */
	char *const *argv;         /* NULL-terminated; argv[0] searched in PATH of envp */
	char *const *envp;         /* NULL-terminated, complete environment */
};

struct jf_launch {
	const char *run_dir;       /* exists; the backend writes stdout, stderr, logs
				      and its own records here */
	const char *cwd;           /* working directory of the processes */
	uid_t uid;                 /* run as this user (only when the daemon is root; */
	gid_t gid;                 /*   otherwise processes run as the daemon's user) */
	const struct jf_proc *procs;
	size_t nprocs;             /* 1 .. JF_RUN_MAX_PROCS */
	int64_t log_cap_bytes;     /* 0 = no cap */
	const int *cpus;           /* CPU ids to pin to, NULL = no pinning */
	size_t ncpus;
};

struct jf_run_started {
	char handle[JF_HANDLE_MAX];
	pid_t pid;                 /* the first container's process */
	int64_t start_ms;          /* wall clock, ms since the epoch, when it started */
	bool pending;              /* the start is not confirmed yet: pid and start_ms
				      are 0 and come later in a `started` result
				      (the caller zeroes the struct before start()) */
};

struct jf_proc_result {
	char name[64];
	int exit_code;             /* 0..255; 128+sig when killed by a signal */
	int term_signal;           /* 0 or the signal that killed it */
};

struct jf_run_result {
	uint64_t cookie;
	int exit_code;             /* the node's: first container that failed, else 0 */
	int term_signal;           /* of that container, 0 if none */
	int64_t start_ms;
	int64_t end_ms;
	bool lost;                 /* supervisor vanished without a record; end_ms = when noticed */
	bool start_failed;         /* a command could not be executed (exit_code 127/126) */
	char message[JF_RUN_MSG_MAX];  /* human words: "exit 1", "killed by SIGKILL", "exec foo: No such file" */
	size_t nprocs;
	struct jf_proc_result procs[JF_RUN_MAX_PROCS];
	/* Not an end: a pending start is confirmed (its processes run since
	 * start_ms; pid is the first container's); the end comes later.  Only
	 * cookie, start_ms, pid and this are set.  Backends zero every result. */
	bool started;
	pid_t pid;
};

/* Signals the engine sends; backends map them to what they can do. */
enum jf_run_signal {
	JF_RUN_TERM,               /* polite: SIGTERM to every process */
	JF_RUN_KILL,               /* SIGKILL to every process */
};

struct jf_backend;

struct jf_backend_ops {
	const char *name;
	enum jf_err (*start)(struct jf_backend *be, const struct jf_launch *l,
			     uint64_t cookie, struct jf_run_started *out,
			     struct jf_error *err);
	enum jf_err (*adopt)(struct jf_backend *be, const char *handle,
			     const char *run_dir, uint64_t cookie, struct jf_error *err);
	enum jf_err (*signal)(struct jf_backend *be, const char *handle,
			      enum jf_run_signal sig);
	/* A start whose result the engine never recorded (it died inside
	 * start(), or before a pending start was confirmed): JF_OK with the run's handle and start time when the run got
	 * going (the engine adopts it), JF_ENOENT when nothing ran and, from now
	 * on, nothing will.  NULL: the backend cannot tell (JF_ENOENT). */
	enum jf_err (*recover)(struct jf_backend *be, const char *run_dir, char *handle,
			       size_t n, int64_t *start_ms, struct jf_error *err);
	int (*fd)(struct jf_backend *be);
	size_t (*reap)(struct jf_backend *be, struct jf_run_result *out, size_t max);
	void (*free)(struct jf_backend *be);
};

struct jf_backend {
	const struct jf_backend_ops *ops;
};

static inline enum jf_err jf_backend_start(struct jf_backend *be, const struct jf_launch *l,
					   uint64_t cookie, struct jf_run_started *out,
					   struct jf_error *err)
{
	return be->ops->start(be, l, cookie, out, err);
}

static inline enum jf_err jf_backend_adopt(struct jf_backend *be, const char *handle,
					   const char *run_dir, uint64_t cookie,
					   struct jf_error *err)
{
	return be->ops->adopt(be, handle, run_dir, cookie, err);
}

static inline enum jf_err jf_backend_recover(struct jf_backend *be, const char *run_dir,
					     char *handle, size_t n, int64_t *start_ms,
					     struct jf_error *err)
{
	if (!be->ops->recover)
		return JF_ENOENT;
	return be->ops->recover(be, run_dir, handle, n, start_ms, err);
}

static inline enum jf_err jf_backend_signal(struct jf_backend *be, const char *handle,
					    enum jf_run_signal sig)
{
	return be->ops->signal(be, handle, sig);
}

static inline int jf_backend_fd(struct jf_backend *be)
{
	return be->ops->fd(be);
}

static inline size_t jf_backend_reap(struct jf_backend *be, struct jf_run_result *out,
				     size_t max)
{
	return be->ops->reap(be, out, max);
}

static inline void jf_backend_free(struct jf_backend *be)
{
	if (be)
		be->ops->free(be);
}

#endif

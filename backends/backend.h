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
#include <time.h>

#include "core/err.h"

#define JF_HANDLE_MAX    64
#define JF_RUN_MAX_PROCS 16
#define JF_RUN_MSG_MAX   256

/* One container: a process (tree) started from argv with its own env. */
struct jf_proc {
	const char *name;  /* container name, "main" */
	char *const *argv; /* NULL-terminated; argv[0] searched in PATH of envp */
	char *const *envp; /* NULL-terminated, complete environment */
};

struct jf_launch {
	const char *run_dir; /* exists; the backend writes stdout, stderr, logs
				and its own records here */
	const char *cwd;     /* working directory of the processes */
	uid_t uid;           /* run as this user (only when the daemon is root; */
	gid_t gid;           /*   otherwise processes run as the daemon's user) */
	const struct jf_proc *procs;
	size_t nprocs;         /* 1 .. JF_RUN_MAX_PROCS */
	int64_t log_cap_bytes; /* 0 = no cap */
	const int *cpus;       /* CPU ids to pin to, NULL = no pinning */
	size_t ncpus;
};

struct jf_run_started {
	char handle[JF_HANDLE_MAX];
	pid_t pid;        /* the first container's process */
	int64_t start_ms; /* wall clock, ms since the epoch, when it started */
	bool pending;     /* the start is not confirmed yet: pid and start_ms
			     are 0 and come later in a `started` result
			     (the caller zeroes the struct before start()) */
};

struct jf_proc_result {
	char name[64];
	int exit_code;   /* 0..255; 128+sig when killed by a signal */
	int term_signal; /* 0 or the signal that killed it */
};

struct jf_run_result {
	uint64_t cookie;
	int exit_code;   /* the node's: first container that failed, else 0 */
	int term_signal; /* of that container, 0 if none */
	int64_t start_ms;
	int64_t end_ms;
	bool lost;         /* supervisor vanished without a record; end_ms = when noticed */
	bool start_failed; /* a command could not be executed (exit_code 127/126) */
	char message[JF_RUN_MSG_MAX]; /* human words: "exit 1", "killed by SIGKILL", "exec foo: No
					 such file" */
	size_t nprocs;
	struct jf_proc_result procs[JF_RUN_MAX_PROCS];
	bool timed_out; /* the supervisor ended it at its timeout (slurm) */
	bool signalled; /* it was told to stop from outside (SIGTERM) */
	/* Not an end: a pending start is confirmed (its processes run since
	 * start_ms; pid is the first container's); the end comes later.  Only
	 * cookie, start_ms, pid and this are set.  Backends zero every result. */
	bool started;
	pid_t pid;
};

/* Signals the engine sends; backends map them to what they can do. */
enum jf_run_signal {
	JF_RUN_TERM, /* polite: SIGTERM to every process */
	JF_RUN_KILL, /* SIGKILL to every process */
};

/*
 * ---- backends that schedule for themselves (slurm) ----
 *
 * Such a backend takes whole sets of a group's tasks at once (struct
 * jf_batch: one Slurm job array) and decides itself when and where each
 * runs; the engine does not place its nodes.  Everything it learns comes
 * back through its fd as notes (struct jf_note), read with notes():
 * whether a batch was accepted (the backend's id for it) or refused, when
 * an element (one task) started and on which hosts, when it ended and how
 * each of its nodes did, and whether the backend can be reached at all.
 *
 * A batch carries the engine's key (its row in the outbox of submissions).
 * The backend puts the key into the job it makes, so that a batch sent
 * again after an answer was lost is found, not submitted twice; a batch is
 * sent again (by the engine, after a restart, or by the backend while it
 * is unreachable) until it is accepted or refused.
 *
 * The engine numbers attempts as the backend does: the run r of an
 * element (0 first, one more per requeue) is attempt attempt_base + r.
 */
struct jf_batch {
	uint64_t key;     /* the engine's submission id */
	const char *dir;  /* exists; the element's node i of run r keeps its
			     files in DIR/<idx>/<r>/<i> */
	const char *name; /* for people: "queue/group" or the batch name */
	const char *user; /* who the job runs as (a user name) */
	uid_t uid;
	gid_t gid;
	const char *partition;
	const int64_t *idx; /* task indexes, increasing */
	size_t nidx;
	int64_t throttle;      /* most elements running at once, 0 = no limit */
	int64_t nodes;         /* per element: all at once (gang) */
	const char *gpu_model; /* NULL: no GPUs; "": untyped GPUs */
	int gpus;              /* per node */
	int64_t cpu_milli;     /* per node */
	int64_t mem_bytes;     /* per node */
	int64_t timeout_ms;    /* per attempt, 0 = none */
	int64_t kill_grace_ms; /* TERM -> KILL at the timeout */
	int64_t attempt_base;
	int64_t tasks; /* JOB_TASK_COUNT */
	bool node_index;
	bool spot;                   /* may be preempted (and requeued) */
	const char *ckpt_root;       /* JOB_CHECKPOINT_DIR = CKPT_ROOT/<idx> */
	const struct jf_proc *procs; /* envp without the per-element variables, */
	size_t nprocs;               /* which the node's supervisor adds */
	const int *const *gpu_slots; /* per proc: positions in the node's GPUs, -1 ends;
					NULL: every proc sees them all */
	int64_t log_cap_bytes;
	const char *cwd; /* NULL: the run directory's work/ */
	bool resend;     /* handed over before, the answer not recorded: look
			    for it before sending it again */
};

enum jf_note_kind {
	JF_NOTE_ACCEPTED,    /* key: the backend's id for it (job) */
	JF_NOTE_REFUSED,     /* key: refused for good (message); not sent again */
	JF_NOTE_UNREACHABLE, /* the backend cannot be reached (message): batches
				wait, what runs is shown as last seen */
	JF_NOTE_REACHABLE,   /* it can again */
	JF_NOTE_STARTED,     /* key idx run: started at start_ms on hosts */
	JF_NOTE_PREEMPTING,  /* key idx run: the backend is preempting it */
	JF_NOTE_ENDED,       /* key idx run: ended (state, times, per-node results) */
	JF_NOTE_DONE,        /* key: nothing of it is left to run */
	JF_NOTE_PENDING,     /* key: what of it waits, waits for this reason
			      * (message, the backend's word; "" none) */
	JF_NOTE_NODES,       /* the backend's machines changed (read them with
				machines()) */
};

enum jf_elem_end {
	JF_END_COMPLETED, /* ran to its end: the node results say how */
	JF_END_FAILED,
	JF_END_CANCELLED, /* cancelled (by the engine, or someone else) */
	JF_END_TIMEOUT,   /* the backend's own time limit */
	JF_END_REQUEUED,  /* preempted (or failed over) and queued again by the
			     backend: another run follows */
	JF_END_PREEMPTED, /* preempted and not queued again */
	JF_END_NODE_FAIL, /* a machine failed */
	JF_END_NEVER_RAN, /* ended without starting (cancelled while waiting) */
	JF_END_LOST,      /* the backend forgot it before its end was seen */
};

#define JF_NOTE_HOSTS_MAX   1024
#define JF_NOTE_GPU_IDS_MAX 96 /* a node's "0,1,..." (the store keeps as much) */

struct jf_note {
	enum jf_note_kind kind;
	uint64_t key;
	int64_t job_id;           /* ACCEPTED, STARTED, ENDED: the backend's job id */
	int64_t idx;              /* task index */
	int64_t run;              /* 0, then one more per requeue */
	int64_t start_ms, end_ms; /* STARTED, ENDED: the backend's own times */
	enum jf_elem_end end;
	int exit_code;                 /* ENDED: the element's, from the backend */
	char handle[JF_HANDLE_MAX];    /* STARTED: how to signal the element */
	size_t nhosts;                 /* STARTED: node i ran on hosts[i] */
	char **hosts;                  /* owned by the note: jf_note_release() */
	char **gpu_ids;                /* STARTED, NULL or nhosts entries: the GPUs
					  node i was given ("0,1"; "" unknown), owned */
	size_t nresults;               /* ENDED: node i's record (nodes without one: lost) */
	struct jf_run_result *results; /* owned by the note */
	char message[JF_RUN_MSG_MAX];
};

void jf_note_release(struct jf_note *n);

/* A machine as the backend sees it (NODES), for /cluster. */
struct jf_be_machine {
	char name[64];
	char model[64]; /* GPU model, "" for none */
	int gpus, gpus_used;
	int64_t cpu_milli, cpu_used_milli;
	int64_t mem_bytes, mem_used_bytes;
	char state[64]; /* "idle", "mixed", "down+drain", ... */
	char partitions[256];
};

struct jf_backend;

struct jf_backend_ops {
	const char *name;
	enum jf_err (*start)(struct jf_backend *be, const struct jf_launch *l, uint64_t cookie,
			     struct jf_run_started *out, struct jf_error *err);
	enum jf_err (*adopt)(struct jf_backend *be, const char *handle, const char *run_dir,
			     uint64_t cookie, struct jf_error *err);
	enum jf_err (*signal)(struct jf_backend *be, const char *handle, enum jf_run_signal sig);
	/* A start whose result the engine never recorded (it died inside
	 * start(), or before a pending start was confirmed): JF_OK with the run's handle and start
	 * time when the run got going (the engine adopts it), JF_ENOENT when nothing ran and, from
	 * now on, nothing will.  NULL: the backend cannot tell (JF_ENOENT). */
	enum jf_err (*recover)(struct jf_backend *be, const char *run_dir, char *handle, size_t n,
			       int64_t *start_ms, struct jf_error *err);
	int (*fd)(struct jf_backend *be);
	size_t (*reap)(struct jf_backend *be, struct jf_run_result *out, size_t max);
	void (*free)(struct jf_backend *be);

	/* ---- scheduling backends only (NULL for local and sim) ---- */
	/* Queue b for sending (asynchronous: the answer is a note).  The
	 * backend copies what it needs; b is borrowed. */
	enum jf_err (*submit)(struct jf_backend *be, const struct jf_batch *b,
			      struct jf_error *err);
	/* After a restart: key was accepted as job_id; follow it again.  dir
	 * as in its batch; first index and run numbering as submitted. */
	void (*follow)(struct jf_backend *be, uint64_t key, int64_t job_id, const char *dir,
		       int64_t first_idx, const char *user);
	/* After a restart: element idx of key was running (run, as job elem_job). */
	void (*running)(struct jf_backend *be, uint64_t key, int64_t idx, int64_t run,
			int64_t elem_job);
	/* Change how many elements of key may run at once. */
	void (*throttle)(struct jf_backend *be, uint64_t key, int64_t throttle);
	/* Hold (true) or release the elements of key not started yet. */
	void (*hold)(struct jf_backend *be, uint64_t key, bool hold);
	/* Cancel key: every element, waiting or running (idx < 0), or one. */
	void (*cancel)(struct jf_backend *be, uint64_t key, int64_t idx);
	size_t (*notes)(struct jf_backend *be, struct jf_note *out, size_t max);
	/* The machines as last seen; *n of them, borrowed until the next notes(). */
	const struct jf_be_machine *(*machines)(struct jf_backend *be, size_t *n);
};


struct jf_backend {
	const struct jf_backend_ops *ops;
};

/* A backend that schedules for itself (submit and notes, not start). */
static inline bool jf_backend_schedules(const struct jf_backend *be)
{
	return be->ops->submit != NULL;
}

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

static inline size_t jf_backend_reap(struct jf_backend *be, struct jf_run_result *out, size_t max)
{
	return be->ops->reap(be, out, max);
}

static inline void jf_backend_free(struct jf_backend *be)
{
	if (be)
		be->ops->free(be);
}

/* The clocks the backends read: wall (what results carry) and monotonic
 * (deadlines), in ms. */
static inline int64_t jf_be_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t jf_be_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif

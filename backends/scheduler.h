/*
 * scheduler.h - a backend that schedules for itself (backends/slurm).
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
#ifndef JF_SCHEDULER_H
#define JF_SCHEDULER_H

#include "backends/backend.h"

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
	/* containers (reference 8.1), as struct jf_launch says them: procs'
	 * images and limits, and for every node of the batch */
	const struct jf_runtime_conf *rt; /* needed when a proc has an image */
	const char *registry_auth;        /* the spec's auth.json; NULL = none */
	int64_t shm_bytes;                /* /dev/shm size, 0 = the default */
	const int *ports;
	size_t nports;
	const struct jf_mount *mounts; /* storage (reference 8.3), as struct jf_launch */
	size_t nmounts;
	int64_t evict_check_ms;
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
	int64_t start_ms, end_ms; /* STARTED, ENDED: the backend's own times; PENDING:
				     when it expects the first waiting element to start, 0 none */
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

struct jf_scheduler;

struct jf_scheduler_ops {
	const char *name;
	/* Queue b for sending (asynchronous: the answer is a note).  The
	 * backend copies what it needs; b is borrowed. */
	enum jf_err (*submit)(struct jf_scheduler *s, const struct jf_batch *b,
			      struct jf_error *err);
	/* After a restart: key was accepted as job_id; follow it again.  dir
	 * as in its batch; first index and run numbering as submitted. */
	void (*follow)(struct jf_scheduler *s, uint64_t key, int64_t job_id, const char *dir,
		       int64_t first_idx, const char *user);
	/* After a restart: element idx of key was running (run, as job elem_job). */
	void (*running)(struct jf_scheduler *s, uint64_t key, int64_t idx, int64_t run,
			int64_t elem_job);
	/* Change how many elements of key may run at once. */
	void (*throttle)(struct jf_scheduler *s, uint64_t key, int64_t throttle);
	/* Hold (true) or release the elements of key not started yet. */
	void (*hold)(struct jf_scheduler *s, uint64_t key, bool hold);
	/* Cancel key: every element, waiting or running (idx < 0), or one. */
	void (*cancel)(struct jf_scheduler *s, uint64_t key, int64_t idx);
	/* End the running element whose STARTED note carried handle. */
	enum jf_err (*signal)(struct jf_scheduler *s, const char *handle, enum jf_run_signal sig);
	/* Readable while notes() has something. */
	int (*fd)(struct jf_scheduler *s);
	size_t (*notes)(struct jf_scheduler *s, struct jf_note *out, size_t max);
	/* The machines as last seen; *n of them, borrowed until the next notes(). */
	const struct jf_be_machine *(*machines)(struct jf_scheduler *s, size_t *n);
	void (*free)(struct jf_scheduler *s);
};

struct jf_scheduler {
	const struct jf_scheduler_ops *ops;
};

static inline const char *jf_scheduler_name(const struct jf_scheduler *s)
{
	return s->ops->name;
}

static inline enum jf_err jf_scheduler_submit(struct jf_scheduler *s, const struct jf_batch *b,
					      struct jf_error *err)
{
	return s->ops->submit(s, b, err);
}

static inline void jf_scheduler_follow(struct jf_scheduler *s, uint64_t key, int64_t job_id,
				       const char *dir, int64_t first_idx, const char *user)
{
	s->ops->follow(s, key, job_id, dir, first_idx, user);
}

static inline void jf_scheduler_running(struct jf_scheduler *s, uint64_t key, int64_t idx,
					int64_t run, int64_t elem_job)
{
	s->ops->running(s, key, idx, run, elem_job);
}

static inline void jf_scheduler_throttle(struct jf_scheduler *s, uint64_t key, int64_t throttle)
{
	s->ops->throttle(s, key, throttle);
}

static inline void jf_scheduler_hold(struct jf_scheduler *s, uint64_t key, bool hold)
{
	s->ops->hold(s, key, hold);
}

static inline void jf_scheduler_cancel(struct jf_scheduler *s, uint64_t key, int64_t idx)
{
	s->ops->cancel(s, key, idx);
}

static inline enum jf_err jf_scheduler_signal(struct jf_scheduler *s, const char *handle,
					      enum jf_run_signal sig)
{
	return s->ops->signal(s, handle, sig);
}

static inline int jf_scheduler_fd(struct jf_scheduler *s)
{
	return s->ops->fd(s);
}

static inline size_t jf_scheduler_notes(struct jf_scheduler *s, struct jf_note *out, size_t max)
{
	return s->ops->notes(s, out, max);
}

static inline const struct jf_be_machine *jf_scheduler_machines(struct jf_scheduler *s, size_t *n)
{
	return s->ops->machines(s, n);
}

static inline void jf_scheduler_free(struct jf_scheduler *s)
{
	if (s)
		s->ops->free(s);
}

#endif

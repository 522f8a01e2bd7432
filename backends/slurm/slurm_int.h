/*
 * slurm_int.h - what the slurm backend's two sides share (slurm.c, the
 * loop's side and the backend's life; slurm_poll.c, the thread's side).
 * Not for use outside backends/slurm.
 */
#ifndef JF_SLURM_INT_H
#define JF_SLURM_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "backends/slurm/rest.h"
#include "backends/slurm/slurm.h"

#define POLL_MS_DEFAULT  1000
#define NODES_EVERY_MS   10000
#define BACKOFF_MAX_MS   10000
#define BULK_COST_FACTOR 10
#define NOTE_MAX_QUEUE   100000

enum req_kind {
	RQ_SUBMIT,   /* body: send it (look for it first when maybe_sent) */
	RQ_FOLLOW,   /* follow key as job a */
	RQ_RUNNING,  /* element a run b of key is running as job c */
	RQ_THROTTLE, /* a */
	RQ_HOLD,     /* a: 1 hold, 0 release */
	RQ_CANCEL,   /* a: index, < 0 every element */
};

struct req {
	enum req_kind kind;
	uint64_t key;
	int64_t a, b, c;
	char *dir, *user;
	json_t *body;
	bool maybe_sent;
	int64_t first_idx;
	size_t count;
	struct req *next;
};

struct elem {
	int64_t idx;
	int64_t job_id;  /* the element's own job id, 0 unknown */
	int64_t run;     /* the run told STARTED, -1 none */
	bool ended;      /* that run told ENDED */
	bool preempting; /* PREEMPTING told for that run */
	int64_t start_ms;
	size_t nhosts;
	char **hosts;
};

struct sub {
	uint64_t key;
	int64_t job_id; /* the array job, 0 before it is accepted */
	char *dir, *user;
	int64_t first_idx;
	size_t count;
	json_t *body;    /* waiting to be sent, NULL once accepted */
	bool maybe_sent; /* it may have gone out: look for it before sending */
	bool done;
	/* what the engine wants done to it, not done yet */
	int64_t want_throttle; /* -1 none */
	int want_hold;         /* -1 none */
	bool want_cancel;
	int64_t *cancel_idx;
	size_t ncancel, capcancel;
	/* elements seen, open addressing by idx */
	struct elem *elems;
	size_t cap, n;
	int64_t next_bulk_ms;
	int64_t starts_mtime_ns;
	char pending_reason[64];  /* Slurm's reason for its waiting part, as last told */
	int64_t pending_start_ms; /* ... and Slurm's expected start of it, 0 none */
	struct sub *next;
};

struct slurm {
	struct jf_scheduler be; /* first: the engine holds &be */
	struct jf_slurm_config cfg;
	char *url, *token, *shim, *uuid;
	pthread_t thread;
	bool thread_up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int evfd;
	/* shared, under mu */
	struct req *rq_head, *rq_tail;
	struct jf_note *notes;
	size_t nnotes, capnotes;
	struct jf_be_machine *next_machines; /* from the thread, not taken yet */
	size_t nnext_machines;
	bool have_next_machines;
	bool stop;
	atomic_bool quit; /* the backend is being freed: give HTTP up */
	/* the loop's */
	struct jf_be_machine *machines;
	size_t nmachines;
	/* the thread's */
	struct jf_slurm_rest *rest;
	struct sub *subs;
	bool down;
	int64_t backoff_ms, next_try_ms, next_nodes_ms;
	char down_msg[JF_RUN_MSG_MAX];
	struct jf_be_machine *seen_machines;
	size_t nseen_machines;
	struct jobcomp { /* Slurm's record of every run segment */
		char *path;
		off_t off; /* read up to here */
		struct seg {
			int64_t job_id, start_s, end_s;
		} * v;
		size_t n, cap;
	} jc;
};


/* slurm.c */
void jf_sl_req_free(struct req *r);
/* Under mu: the machines the thread saw last become the loop's. */
void jf_sl_take_machines(struct slurm *s);

/* slurm_poll.c */
void jf_sl_sub_free(struct sub *b);
void jf_sl_note_simple(struct slurm *s, enum jf_note_kind kind, uint64_t key, int64_t job_id,
		       const char *msg);
/* GET /nodes: the machines as Slurm has them, for the loop (NODES). */
bool jf_sl_poll_nodes(struct slurm *s);
void *jf_sl_thread_main(void *arg);

/* slurm_jobcomp.c: Slurm's end of the run of job_id that started at
 * start_s (seconds), from config.jobcomp; 0 when unknown. */
int64_t jf_sl_jobcomp_end(struct slurm *s, int64_t job_id, int64_t start_s);

#endif

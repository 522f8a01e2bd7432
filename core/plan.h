/*
 * plan.h - one scheduling pass: which waiting tasks start now, and what is
 * reserved for those that must wait (FIFO with backfill, reference 5.1-5.3).
 *
 * The engine fills a struct jf_plan_in snapshot (running allocations, queue
 * capacities, groups in submission order, the time now) and hands a machine
 * array with what is free now.  jf_plan_pass() decides; it subtracts every
 * start from the machines (pass a copy to keep the original) and fills a
 * struct jf_plan: the starts in decision order, one slot per node each, the
 * reservations it made, and the groups it skipped because they can never
 * run.  The rules are at the top of plan.c.
 *
 * Pure: no I/O, no clock, no globals.  Ownership: everything in `in` is
 * borrowed; `out` is the caller's (jf_plan_init() before the first pass,
 * jf_plan_release() after the last); a pass replaces what out held.
 */
#ifndef JF_PLAN_H
#define JF_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/sched.h"

/* One running task.  Every resource not free in the machines must belong
 * to one (a node being killed too: its end is the kill's deadline), or a
 * gang that needs it is reported as never fitting. */
struct jf_plan_running {
	const struct jf_sched_slot *slots; /* one per node */
	size_t nslots;
	int queue;      /* index into queues; -1 = none */
	int64_t end_ms; /* upper bound of its end */
};

struct jf_plan_queue {
	int64_t capacity; /* nodes; 0 = unlimited */
	int64_t held;     /* nodes its groups hold now */
};

struct jf_plan_group { /* in submission order */
	int64_t id;
	int queue;               /* index into queues; -1 = independent batch */
	struct jf_sched_req req; /* per node; req.nodes = gang size */
	int64_t waiting, running, parallelism;
	int64_t timeout_ms; /* bound of a task started now; <= 0: none */
	bool paused;        /* starts nothing, reserves nothing */
};

struct jf_plan_in {
	int64_t now_ms;
	const struct jf_plan_running *running;
	size_t nrunning;
	const struct jf_plan_queue *queues;
	size_t nqueues;
	const struct jf_plan_group *groups;
	size_t ngroups;
};

enum jf_plan_why {
	JF_PLAN_OVER_CAPACITY = 1, /* nodes > its queue's capacity */
	JF_PLAN_OVER_CLUSTER,      /* does not fit even when all known work has ended */
	JF_PLAN_BAD_REQUEST,       /* nodes, gpus or an amount out of range */
};

/* What kept a reserving head from starting now (reference 9.1). */
enum jf_plan_block {
	JF_PLAN_BLOCK_RESOURCES = 1, /* the free machines cannot take it */
	JF_PLAN_BLOCK_CAPACITY,      /* its queue holds its capacity */
	JF_PLAN_BLOCK_RESERVATION,   /* it would fit, but on what an earlier head
					(or the queue's room for it) is reserved for */
};

struct jf_plan {
	struct jf_plan_start {
		int64_t group_id;
		size_t group; /* index into in->groups */
		size_t slot;  /* its req.nodes slots begin at slots[slot] */
	} * starts;
	size_t nstarts;
	struct jf_plan_resv { /* a blocked group's head */
		int64_t group_id;
		size_t group;
		int64_t at_ms;    /* shadow time: it fits then at the latest */
		int64_t until_ms; /* at_ms + its timeout (INT64_MAX: none) */
		size_t slot;      /* reserved resources, as for starts */
		enum jf_plan_block block;
	} * resv;
	size_t nresv;
	struct jf_plan_skip {
		int64_t group_id;
		size_t group;
		enum jf_plan_why why;
	} * skips;
	size_t nskips;
	struct jf_sched_slot *slots;
	size_t nslots;
	size_t cap_starts, cap_resv, cap_skips, cap_slots; /* private */
};

void jf_plan_init(struct jf_plan *p);
void jf_plan_release(struct jf_plan *p);

/* One pass over nm machines m (free now; starts are subtracted).  JF_EINVAL
 * with *err when `in` is inconsistent (a queue or machine index out of
 * range, a machine model outside 0 .. JF_CLUSTER_MAX_MODELS-1); JF_ENOMEM.
 * On error m is unchanged and out is empty. */
enum jf_err jf_plan_pass(struct jf_plan *out, struct jf_sched_machine *m, size_t nm,
			 const struct jf_plan_in *in, struct jf_error *err);

#endif

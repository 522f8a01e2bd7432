/*
 * why.h - why waiting work waits, where it stands, and when the planner's
 * reservations say it starts at the latest (reference 9.1).
 *
 * The engine runs a planning pass (plan.h) and lists every group that has
 * waiting tasks in the order the pass takes them, gated ones included (a
 * group the engine kept from the planner says why: a low-risk window, a
 * failed pull, a sync, a dependency, a budget).  jf_why_compute() gives
 * each of them a reason, a position and the reservation-based ETA, and
 * jf_why_message() words the reason with its numbers:
 *
 *   needs 2 nodes x 8 H800 GPUs; 0 of 16 free; queue q holds 8 of 8 nodes
 *
 * Pure: no I/O, no clock.  Everything passed in is borrowed.
 */
#ifndef JF_WHY_H
#define JF_WHY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/plan.h"
#include "core/sched.h"

enum jf_reason {
	JF_REASON_NONE = 0,
	JF_REASON_RESOURCES,      /* the free machines cannot take its next task */
	JF_REASON_QUEUE_CAPACITY, /* its queue holds its capacity */
	JF_REASON_PARALLELISM,    /* as many of its tasks run as its parallelism allows */
	JF_REASON_RESERVATION,    /* what is free is held for earlier work */
	JF_REASON_WINDOW,         /* spot: waiting for a low-risk window */
	JF_REASON_DEPENDENCY,     /* its `after:` entries do not all hold yet */
	JF_REASON_BUDGET,         /* its queue's budget is spent */
	JF_REASON_PAUSED,
	JF_REASON_UNSCHEDULABLE, /* it can never run as asked */
	JF_REASON_IMAGEPULL,     /* backing off after a failed pull */
	JF_REASON_SYNCING,       /* its object sources sync first */
	JF_REASON__COUNT
};

/* The word of the tree ("Resources", "QueueCapacity", ...); "" for NONE. */
const char *jf_reason_name(enum jf_reason r);
/* The reason named s, or JF_REASON_NONE. */
enum jf_reason jf_reason_lookup(const char *s);

/* One group with waiting tasks, in the order the pass takes them. */
struct jf_why_group {
	int64_t id;
	int64_t queue_id;    /* 0: an independent batch */
	enum jf_reason gate; /* kept from the planner for this reason; NONE: planned */
	size_t plan;         /* gate == NONE: its index in the plan's groups */
	int64_t next_end_ms; /* the earliest end bound of its running tasks (0: none) */
};

struct jf_wait {
	enum jf_reason reason; /* NONE: nothing of it waits after the pass */
	int64_t position;      /* 1 = next; 0 when nothing waits */
	int64_t eta_ms;        /* the planner's bound of its next start; 0 = none */
	enum jf_plan_block block;
};

/*
 * Fill out[i] for groups[i], i < n, from the pass in/plan (the planner's
 * input and output).  position counts, in order, the groups of the same
 * queue that still wait; an independent batch counts every group before
 * it, cluster-wide (it bypasses the queues, not the machines).  Nothing
 * after a pass waits of a planned group whose waiting tasks all started.
 */
void jf_why_compute(const struct jf_plan_in *in, const struct jf_plan *plan,
		    const struct jf_why_group *groups, size_t n, struct jf_wait *out);

/* What the message needs to know of the cluster after the pass. */
struct jf_why_cluster {
	const struct jf_sched_machine *m; /* free after the pass's starts */
	size_t nm;
	const char *const *model_names; /* per model */
	size_t nmodels;
	const char *queue_name; /* the group's queue, "" for a batch */
	const char *holders;    /* who holds what it needs ("queues/q/groups/a: 8 GPUs"), or "" */
};

/*
 * Word w for group g of the pass into buf (n bytes, truncated, always
 * terminated): what it needs, what is free, who holds it.  Gated reasons
 * and Paused get "" (their own message says it).
 */
void jf_why_message(const struct jf_wait *w, const struct jf_plan_in *in,
		    const struct jf_plan_group *g, const struct jf_plan *plan,
		    const struct jf_why_cluster *c, char *buf, size_t n);

#endif
